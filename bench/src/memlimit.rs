//! How much memory this process may use: the machine's RAM, and the limit of the cgroup it runs
//! in (cgroup v2 `memory.max`, or v1 `memory.limit_in_bytes`), the smallest along the cgroup's
//! path. A benchmark reports it beside the data's size, so a reader knows whether "disk" meant
//! the disk or the page cache: data larger than the limit cannot stay cached (page cache is
//! charged to the cgroup that reads it).
//!
//! The bench does not set a limit itself (creating a cgroup and moving into it needs a delegated
//! hierarchy, which `systemd-run --scope -p MemoryMax=...` or `cgexec` provide;
//! `docs/benchmarks.md`, "Larger scale factors", says how); it reads the one it runs under.

use std::path::{Path, PathBuf};

/// The memory available to this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryLimit {
    /// The machine's RAM (`MemTotal` of `/proc/meminfo`), in bytes.
    pub ram_bytes: Option<u64>,
    /// The tightest cgroup memory limit over this process's cgroup and its ancestors, and the
    /// file that sets it.
    pub cgroup: Option<(u64, PathBuf)>,
}

impl MemoryLimit {
    /// Reads the limits in force for this process.
    pub fn detect() -> MemoryLimit {
        let ram_bytes =
            std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| parse_meminfo_total(&m));
        let cgroup = std::fs::read_to_string("/proc/self/cgroup")
            .ok()
            .map(|c| limit_files(&c, Path::new("/sys/fs/cgroup")))
            .unwrap_or_default()
            .into_iter()
            .filter_map(|f| {
                let v = parse_limit(&std::fs::read_to_string(&f).ok()?)?;
                Some((v, f))
            })
            .min_by_key(|(v, _)| *v);
        MemoryLimit { ram_bytes, cgroup }
    }

    /// The bytes this process may use: the cgroup's limit, else the RAM.
    pub fn bytes(&self) -> Option<u64> {
        match (&self.cgroup, self.ram_bytes) {
            (Some((c, _)), Some(r)) => Some((*c).min(r)),
            (Some((c, _)), None) => Some(*c),
            (None, r) => r,
        }
    }

    /// One line for a report: the limit, and whether `data_bytes` of data fits under it.
    pub fn describe(&self, data_bytes: u64) -> String {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let limit = match (&self.cgroup, self.ram_bytes) {
            (Some((c, f)), _) => format!("limited to {:.1} GiB by {}", gib(*c), f.display()),
            (None, Some(r)) => format!("{:.1} GiB of RAM, no cgroup memory limit", gib(r)),
            (None, None) => "unknown (no /proc/meminfo)".into(),
        };
        let fits = match self.bytes() {
            Some(b) if data_bytes < b => format!(
                "the {:.2} GiB data file fits, so runs on disk that are not cold read it from the \
                 page cache",
                gib(data_bytes)
            ),
            Some(_) => format!(
                "the {:.2} GiB data file does not fit: runs on disk read the disk",
                gib(data_bytes)
            ),
            None => String::new(),
        };
        format!("Memory: {limit}; {fits}.")
    }
}

/// `MemTotal` in bytes from the contents of `/proc/meminfo`.
pub fn parse_meminfo_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// A limit file's value: `None` for no limit (`max`, or v1's page-rounded `i64::MAX`).
pub fn parse_limit(text: &str) -> Option<u64> {
    let t = text.trim();
    if t == "max" {
        return None;
    }
    let v: u64 = t.parse().ok()?;
    (v < 1 << 60).then_some(v)
}

/// The files that may limit this process's memory, given `/proc/self/cgroup`'s contents and the
/// cgroup file systems' root: for the v2 hierarchy (`0::/path`) each `memory.max` from the
/// cgroup up to the root's child, under `root` or, on a hybrid system, `root/unified`; for the
/// v1 memory controller (`N:memory:/path`, or a list holding `memory`) each
/// `memory.limit_in_bytes` up to the root.
pub fn limit_files(proc_cgroup: &str, root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for line in proc_cgroup.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let (bases, file): (Vec<PathBuf>, &str) = if controllers.is_empty() {
            (vec![root.to_path_buf(), root.join("unified")], "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            (vec![root.join(controllers)], "memory.limit_in_bytes")
        } else {
            continue;
        };
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        for base in bases {
            // The root cgroup has no limit file in v2; v1's root has one (unlimited).
            for n in (0..=parts.len()).rev() {
                let dir = parts[..n].iter().fold(base.clone(), |d, p| d.join(p));
                out.push(dir.join(file));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_meminfo_and_limits() {
        let m = "MemTotal:       24576000 kB\nMemFree:  100 kB\n";
        assert_eq!(parse_meminfo_total(m), Some(24_576_000 * 1024));
        assert_eq!(parse_limit("max\n"), None);
        assert_eq!(parse_limit("9223372036854771712\n"), None);
        assert_eq!(parse_limit("4294967296\n"), Some(4 << 30));
        assert_eq!(parse_limit("garbage"), None);
    }

    #[test]
    fn finds_v2_and_v1_limit_files_along_the_path() {
        let root = Path::new("/sys/fs/cgroup");
        let v2 = limit_files("0::/user.slice/bench.scope\n", root);
        assert!(v2.contains(&root.join("user.slice/bench.scope/memory.max")));
        assert!(v2.contains(&root.join("user.slice/memory.max")));
        assert!(v2.contains(&root.join("unified/user.slice/bench.scope/memory.max")));
        let v1 = limit_files("4:memory:/a/b\n3:cpu,cpuacct:/\n", root);
        assert_eq!(
            v1,
            vec![
                root.join("memory/a/b/memory.limit_in_bytes"),
                root.join("memory/a/memory.limit_in_bytes"),
                root.join("memory/memory.limit_in_bytes"),
            ]
        );
    }

    #[test]
    fn says_whether_the_data_fits() {
        let m = MemoryLimit { ram_bytes: Some(16 << 30), cgroup: Some((4 << 30, "/x".into())) };
        assert_eq!(m.bytes(), Some(4 << 30));
        assert!(m.describe(14 << 30).contains("does not fit"), "{}", m.describe(14 << 30));
        assert!(m.describe(1 << 30).contains("limited to 4.0 GiB by /x"));
        let m = MemoryLimit { ram_bytes: Some(16 << 30), cgroup: None };
        assert!(m.describe(1 << 30).contains("no cgroup memory limit"));
    }
}
