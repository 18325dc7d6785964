//! The `storage` subcommand's options and their validation.

use std::path::PathBuf;

use clap::ValueEnum;
use nvpage_storage::{Layer, PageSize};
use serde::Serialize;

use crate::dirs::MediaDirs;

/// Where a file under test lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MediumKind {
    /// A directory on a real disk (the page cache in front of it).
    Disk,
    /// A directory on tmpfs: memory, used as emulated NVM for the mapped layers.
    Tmpfs,
}

impl MediumKind {
    /// The name used on the command line, in tables and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            MediumKind::Disk => "disk",
            MediumKind::Tmpfs => "tmpfs",
        }
    }
}

/// When the mapped layers advise pages ahead of a sequential pass (`will_need`: on tmpfs
/// `MADV_POPULATE_READ`, on a disk `MADV_WILLNEED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Prefault {
    /// In the first pass after open only; later passes run over the page tables it filled.
    FirstPass,
    /// In every pass, as a scan that does not know what is mapped would.
    EveryPass,
    /// Never: pages are faulted in by the reads themselves (with the kernel's fault-around).
    Off,
}

/// Options of `nvpage-bench storage`.
#[derive(Clone, Debug, clap::Args)]
pub struct StorageArgs {
    /// Where the files under test live (a missing tmpfs directory skips the tmpfs runs, with a
    /// note).
    #[command(flatten)]
    pub dirs: MediaDirs,
    /// Size of the file for the sequential passes, in MiB
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub size_mib: u64,
    /// Page size in bytes (a power of two from 4096 to 65536)
    #[arg(long, value_name = "BYTES", default_value_t = 8192)]
    pub page_size: u64,
    /// File layers to measure, comma-separated [default: every layer compiled in]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_layer)]
    pub layers: Vec<Layer>,
    /// Media to measure on, comma-separated
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "disk,tmpfs")]
    pub media: Vec<MediumKind>,
    /// Runs of every measurement; tables show the median and the min–max over runs
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub runs: usize,
    /// Also write the results as JSON to this file
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Size of the file for the random single-page tests, in MiB
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub random_mib: u64,
    /// Random reads, and random writes without sync, per layer, medium and run
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub random_ops: u64,
    /// Most random write+sync operations per layer, medium and run (also capped at 2 s)
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    pub sync_ops: u64,
    /// Pages the mapped layers advise ahead of a sequential pass (will_need)
    #[arg(long, value_name = "PAGES", default_value_t = 256)]
    pub window_pages: u64,
    /// Which sequential passes of the mapped layers pre-fault ahead
    #[arg(long, value_enum, default_value = "first-pass")]
    pub prefault: Prefault,
}

/// A layer name from the command line, which must be compiled into this build.
pub fn parse_layer(s: &str) -> Result<Layer, String> {
    let layer: Layer = s.trim().parse()?;
    if !layer.is_compiled() {
        return Err(format!(
            "layer {layer} is not compiled into this build (compiled: {})",
            names(&Layer::compiled())
        ));
    }
    Ok(layer)
}

fn names(layers: &[Layer]) -> String {
    layers.iter().map(|l| l.name()).collect::<Vec<_>>().join(", ")
}

/// Validated options.
#[derive(Clone, Debug, Serialize)]
pub struct Config {
    /// Directory for the disk runs.
    pub dir_disk: PathBuf,
    /// Directory for the tmpfs runs.
    pub dir_tmpfs: PathBuf,
    /// Bytes of the sequential file (whole pages).
    pub seq_bytes: u64,
    /// Bytes of the random-access file (whole pages).
    pub random_bytes: u64,
    /// The page size.
    #[serde(serialize_with = "ser_page_size")]
    pub page_size: PageSize,
    /// Layers, in the order given, without repeats.
    #[serde(serialize_with = "ser_layers")]
    pub layers: Vec<Layer>,
    /// Media, in the order given, without repeats.
    pub media: Vec<MediumKind>,
    /// Runs per measurement.
    pub runs: usize,
    /// Random reads and writes per run.
    pub random_ops: u64,
    /// Most write+sync operations per run.
    pub sync_ops: u64,
    /// Pre-fault window of the mapped layers, in pages.
    pub window_pages: u64,
    /// Which passes pre-fault.
    pub prefault: Prefault,
    /// Where to write the JSON report.
    pub json: Option<PathBuf>,
}

fn ser_page_size<S: serde::Serializer>(p: &PageSize, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(p.bytes() as u64)
}

fn ser_layers<S: serde::Serializer>(l: &[Layer], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(l.iter().map(|l| l.name()))
}

fn dedup<T: PartialEq + Copy>(items: &[T]) -> Vec<T> {
    let mut out = Vec::new();
    for &i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

impl Config {
    /// Checks the options and fills in defaults.
    pub fn from_args(a: &StorageArgs) -> Result<Self, String> {
        let page_size = PageSize::new(a.page_size).map_err(|e| format!("--page-size: {e}"))?;
        let ps = page_size.bytes() as u64;
        let whole = |mib: u64, flag: &str| -> Result<u64, String> {
            let bytes = mib.checked_mul(1 << 20).ok_or(format!("{flag} {mib} is too large"))?;
            // A header page and at least one data page.
            if bytes < 2 * ps {
                return Err(format!("{flag} {mib} MiB holds fewer than two pages of {ps} bytes"));
            }
            Ok(bytes / ps * ps)
        };
        if a.runs == 0 {
            return Err("--runs must be at least 1".into());
        }
        if a.random_ops == 0 || a.sync_ops == 0 || a.window_pages == 0 {
            return Err("--random-ops, --sync-ops and --window-pages must be at least 1".into());
        }
        let layers = if a.layers.is_empty() { Layer::compiled() } else { dedup(&a.layers) };
        let media = dedup(&a.media);
        if media.is_empty() {
            return Err("--media names no medium: expected disk, tmpfs or both".into());
        }
        Ok(Self {
            dir_disk: a.dirs.dir_disk.clone(),
            dir_tmpfs: a.dirs.dir_tmpfs.clone(),
            seq_bytes: whole(a.size_mib, "--size-mib")?,
            random_bytes: whole(a.random_mib, "--random-mib")?,
            page_size,
            layers,
            media,
            runs: a.runs,
            random_ops: a.random_ops,
            sync_ops: a.sync_ops,
            window_pages: a.window_pages,
            prefault: a.prefault,
            json: a.json.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: StorageArgs,
    }

    fn parse(argv: &[&str]) -> Result<Config, String> {
        let cli = Cli::try_parse_from(std::iter::once("storage").chain(argv.iter().copied()))
            .map_err(|e| e.to_string())?;
        Config::from_args(&cli.args)
    }

    #[test]
    fn defaults() {
        let c = parse(&[]).unwrap();
        assert_eq!(c.layers, Layer::compiled());
        assert_eq!(c.media, [MediumKind::Disk, MediumKind::Tmpfs]);
        assert_eq!((c.seq_bytes, c.page_size.bytes(), c.runs), (1 << 30, 8192, 3));
    }

    #[test]
    fn layers_and_media_lists() {
        let c = parse(&["--layers", "se2,PREAD,se2", "--media", "tmpfs"]).unwrap();
        assert_eq!(c.layers, [Layer::Se2, Layer::Pread]);
        assert_eq!(c.media, [MediumKind::Tmpfs]);
    }

    #[test]
    fn a_bad_layer_is_a_clear_error() {
        let e = parse(&["--layers", "pread,mmap"]).unwrap_err();
        assert!(e.contains("--layers") && e.contains("unknown layer 'mmap'"), "{e}");
        assert!(e.contains("pread, se1 or se2"), "{e}");
    }

    #[test]
    fn bad_numbers_are_refused() {
        assert!(parse(&["--page-size", "5000"]).unwrap_err().contains("--page-size"));
        assert!(parse(&["--runs", "0"]).unwrap_err().contains("--runs"));
        assert!(parse(&["--size-mib", "0"]).unwrap_err().contains("--size-mib"));
        assert!(parse(&["--media", "nvme"]).unwrap_err().contains("--media"));
    }
}
