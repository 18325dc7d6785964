//! Where the benchmarks put their files: one pair of options, `--dir-disk` and `--dir-tmpfs`,
//! with one default each, shared by every subcommand that has a disk and a tmpfs medium
//! (`storage`, `log`, `tpch`, `engine`, `refresh`, `kv`).
//!
//! The disk default is `/var/tmp`: the directory the FHS and systemd set aside for temporary
//! files too large for memory, on a disk file system on any ordinary Linux installation. The
//! system temp dir is no such promise — `/tmp` is tmpfs on many distributions, and `$TMPDIR` is
//! often pointed at memory — and a directory under the working directory (`./target`) moves with
//! wherever the command is run. A TPC-H database at SF 1 is over a gigabyte, so memory is the
//! wrong place by accident. Each benchmark still checks, where it can, that the directory lies on
//! the medium it is named for.
//!
//! The tmpfs default is `/dev/shm`, the tmpfs every Linux system mounts.

use std::path::{Path, PathBuf};

use nvpage_storage::{Layer, Medium, OpenOptions};

use crate::BoxError;

/// The default directory for the disk runs.
pub const DEFAULT_DIR_DISK: &str = "/var/tmp";

/// The default directory for the tmpfs (emulated NVM) runs.
pub const DEFAULT_DIR_TMPFS: &str = "/dev/shm";

/// The two directories, as every subcommand takes them.
#[derive(Clone, Debug, clap::Args)]
pub struct MediaDirs {
    /// Directory on a disk file system for the disk runs (must not be tmpfs)
    // `--disk-dir` was the log benchmark's spelling; kept as a hidden alias.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_DIR_DISK, alias = "disk-dir")]
    pub dir_disk: PathBuf,
    /// Directory on tmpfs for the tmpfs runs (emulated NVM; must be tmpfs or ramfs)
    // `--tmpfs-dir` was the log benchmark's spelling; kept as a hidden alias.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_DIR_TMPFS, alias = "tmpfs-dir")]
    pub dir_tmpfs: PathBuf,
}

impl MediaDirs {
    /// Fails unless the directory of each medium in `media` exists, naming the option that sets
    /// it (the check every subcommand that runs per medium makes before it starts).
    pub fn check(&self, media: &[crate::tpch::Medium]) -> Result<(), BoxError> {
        use crate::tpch::Medium as M;
        if media.contains(&M::Disk) {
            check_dir(&self.dir_disk, "--dir-disk")?;
        }
        if media.contains(&M::Tmpfs) {
            check_dir(&self.dir_tmpfs, "--dir-tmpfs")?;
        }
        Ok(())
    }
}

/// Fails unless files in `dir` land on memory (tmpfs, ramfs) when `memory`, or on a disk when
/// not, as a probe page file created there finds; the error names `dir` and the option `flag`
/// that sets it. A figure labelled with a medium must come from that medium.
pub fn check_medium(dir: &Path, memory: bool, flag: &str) -> Result<(), BoxError> {
    let probe = tempfile::Builder::new()
        .prefix("nvpage-probe-")
        .tempdir_in(dir)
        .map_err(|e| format!("{}: {e} (the directory given with {flag})", dir.display()))?;
    let path = probe.path().join("probe");
    let found = OpenOptions::new(Layer::compiled()[0]).create(&path)?.file().durability().medium;
    let ok = if memory { found.is_memory() } else { found == Medium::Disk };
    if !ok {
        let want = if memory { "tmpfs" } else { "disk" };
        return Err(format!(
            "{} is on {}, not on {want}: choose another directory with {flag}",
            dir.display(),
            found.name()
        )
        .into());
    }
    Ok(())
}

/// Fails unless `dir` is an existing directory, naming it and the option `flag` that sets it.
pub fn check_dir(dir: &Path, flag: &str) -> Result<(), BoxError> {
    if dir.is_dir() {
        return Ok(());
    }
    Err(format!("{} is not an existing directory: choose another with {flag}", dir.display())
        .into())
}

/// The bytes an unprivileged user may still write in `dir`'s file system (`statvfs`).
pub fn free_bytes(dir: &Path) -> Result<u64, BoxError> {
    let st =
        nix::sys::statvfs::statvfs(dir).map_err(|e| format!("{}: statvfs: {e}", dir.display()))?;
    Ok(st.blocks_available() * st.fragment_size())
}

/// Fails, before anything is written, unless `dir` has room for `need_bytes` (`what` says for
/// what, in the message).
pub fn check_room(dir: &Path, need_bytes: u64, what: &str, flag: &str) -> Result<(), BoxError> {
    let free = free_bytes(dir)?;
    if free < need_bytes {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        return Err(format!(
            "{} has {:.1} GiB free, and {what} needs about {:.1} GiB: free some space or choose \
             another directory with {flag}",
            dir.display(),
            gib(free),
            gib(need_bytes)
        )
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        dirs: MediaDirs,
    }

    #[test]
    fn defaults_and_the_old_log_spelling() {
        let c = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(c.dirs.dir_disk, Path::new("/var/tmp"));
        assert_eq!(c.dirs.dir_tmpfs, Path::new("/dev/shm"));
        let c = Cli::try_parse_from(["x", "--disk-dir", "/a", "--tmpfs-dir", "/b"]).unwrap();
        assert_eq!(
            (c.dirs.dir_disk.as_path(), c.dirs.dir_tmpfs.as_path()),
            (Path::new("/a"), Path::new("/b"))
        );
    }

    #[test]
    fn a_missing_directory_names_itself_and_the_option() {
        let e = check_dir(Path::new("/no/such/nvpage"), "--dir-disk").unwrap_err().to_string();
        assert!(e.contains("/no/such/nvpage") && e.contains("--dir-disk"), "{e}");
    }

    #[test]
    fn room_is_checked_and_a_shortfall_names_the_directory_and_the_option() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_bytes(dir.path()).unwrap() > 0);
        check_room(dir.path(), 1, "a byte", "--dir-disk").unwrap();
        let err = check_room(dir.path(), u64::MAX, "an nvpage database", "--dir-disk")
            .unwrap_err()
            .to_string();
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
        assert!(err.contains("an nvpage database") && err.contains("--dir-disk"), "{err}");
    }
}
