//! The `kv` subcommand's options, and their validation into a [`Config`].

use std::path::PathBuf;

use clap::ValueEnum;
use nvpage::Layer;
use serde::Serialize;

use super::engines::{Engine, EngineName};
use super::workload::Workload;
use crate::BoxError;
use crate::dirs::MediaDirs;
use crate::features::{Comparison, not_compiled};
use crate::storage::args::parse_layer;
use crate::tpch::Medium;
use crate::tpch::args::{dedup, parse_fraction};

/// A load order, as `--loads` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadOrder {
    /// Keys in ascending order.
    Sorted,
    /// Keys in a random order (a fixed seed).
    Random,
}

impl LoadOrder {
    /// Its name, as `--loads` takes it.
    pub fn name(self) -> &'static str {
        match self {
            LoadOrder::Sorted => "sorted",
            LoadOrder::Random => "random",
        }
    }
}

/// A workload after the load, as `--workloads` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum WorkloadName {
    /// Point lookups of uniformly drawn keys.
    #[value(name = "lookup-uniform")]
    LookupUniform,
    /// Point lookups of Zipfian keys (θ = 0.99, scrambled).
    #[value(name = "lookup-zipf")]
    LookupZipf,
    /// Range scans of 100 entries.
    #[value(name = "scan")]
    Scan,
    /// 50/50 lookups and updates of Zipfian keys, a durable commit per 100 updates.
    #[value(name = "mix")]
    Mix,
}

impl WorkloadName {
    fn workload(self) -> Workload {
        match self {
            WorkloadName::LookupUniform => Workload::LookupUniform,
            WorkloadName::LookupZipf => Workload::LookupZipf,
            WorkloadName::Scan => Workload::Scan,
            WorkloadName::Mix => Workload::Mix,
        }
    }
}

/// Options of `nvpage-bench kv`.
#[derive(Clone, Debug, clap::Args)]
pub struct KvArgs {
    /// Entries (8-byte keys, 100-byte values); the README's figures use 10 M
    #[arg(long, value_name = "N", default_value_t = 10_000_000,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub entries: u64,
    /// Engines, comma-separated: nvpage (each of --layers), lmdb, redb, sqlite; each but nvpage
    /// needs the bench's Cargo feature of its name (`compare`: all three) [default: nvpage and
    /// every engine this build has]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub engines: Vec<EngineName>,
    /// nvpage's file layers, comma-separated [default: every layer compiled in]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_layer)]
    pub layers: Vec<Layer>,
    /// Media, comma-separated: disk, tmpfs (emulated NVM)
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "disk,tmpfs")]
    pub media: Vec<Medium>,
    /// Where the databases live.
    #[command(flatten)]
    pub dirs: MediaDirs,
    /// nvpage's buffer pool as fractions of its data file, comma-separated (the other engines
    /// keep their own caches and the OS page cache)
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "1.0,0.1",
          value_parser = parse_fraction)]
    pub pool_fraction: Vec<f64>,
    /// Thread counts, comma-separated: readers each in their own read transactions; the mix
    /// has one writer thread and the other threads read
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "1,2",
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: Vec<u32>,
    /// Load orders measured, comma-separated; the workloads run on the database loaded in
    /// random order (in sorted order if random is not listed)
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "sorted,random")]
    pub loads: Vec<LoadOrder>,
    /// Workloads after the load, comma-separated
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "lookup-uniform,lookup-zipf,scan,mix"
    )]
    pub workloads: Vec<WorkloadName>,
    /// Point lookups per run (split among the threads)
    #[arg(long, value_name = "N", default_value_t = 1_000_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub lookups: u64,
    /// Range scans of 100 entries per run
    #[arg(long, value_name = "N", default_value_t = 100_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub scans: u64,
    /// Operations of the 50/50 mix per run (half of them updates: a durable commit per 100)
    #[arg(long, value_name = "N", default_value_t = 100_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub mix_ops: u64,
    /// Measured runs per configuration (tables show the median)
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Cold runs too: before each, the database is closed, its files evicted from the OS page
    /// cache (on disk), and reopened with an empty pool
    #[arg(long)]
    pub cold: bool,
    /// Keys whose values are checked against the model after the load and after the mix (every
    /// updated key is checked too)
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub verify: u64,
    /// Write every run as JSON to PATH
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Draw the medians as an SVG chart to PATH
    #[arg(long, value_name = "PATH")]
    pub svg: Option<PathBuf>,
    /// No progress bars
    #[arg(long)]
    pub quiet: bool,
}

/// The validated configuration of a run, as saved in the JSON.
#[derive(Clone, Debug, Serialize)]
pub struct Config {
    /// Entries.
    pub entries: u64,
    /// Engine configurations, in order (nvpage once per layer).
    #[serde(serialize_with = "engine_labels")]
    pub engines: Vec<Engine>,
    /// Media, in order.
    pub media: Vec<Medium>,
    /// Directory for disk databases.
    pub dir_disk: PathBuf,
    /// Directory for tmpfs databases.
    pub dir_tmpfs: PathBuf,
    /// nvpage's pool sizes as fractions of its data file.
    pub pool_fractions: Vec<f64>,
    /// Thread counts.
    pub threads: Vec<u32>,
    /// Load orders measured.
    pub loads: Vec<LoadOrder>,
    /// Workloads after the load.
    #[serde(serialize_with = "workload_names")]
    pub workloads: Vec<Workload>,
    /// Point lookups per run.
    pub lookups: u64,
    /// Scans per run.
    pub scans: u64,
    /// Mix operations per run.
    pub mix_ops: u64,
    /// Measured runs per configuration.
    pub runs: u32,
    /// Whether cold runs are made (warm runs always are).
    pub cold: bool,
    /// Keys checked against the model after the load and the mix.
    pub verify: u64,
    /// No progress bars.
    #[serde(skip)]
    pub quiet: bool,
}

fn engine_labels<S: serde::Serializer>(v: &[Engine], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|e| e.label()))
}

fn workload_names<S: serde::Serializer>(v: &[Workload], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|w| w.name()))
}

impl Config {
    /// Validates `args` and fills in the defaults.
    pub fn from_args(args: &KvArgs) -> Result<Config, BoxError> {
        let layers = if args.layers.is_empty() { Layer::compiled() } else { dedup(&args.layers) };
        let names = if args.engines.is_empty() {
            EngineName::value_variants().iter().copied().filter(|e| e.is_compiled()).collect()
        } else {
            dedup(&args.engines)
        };
        let missing: Vec<Comparison> =
            names.iter().filter_map(|e| e.comparison()).filter(|c| !c.is_compiled()).collect();
        if !missing.is_empty() {
            return Err(not_compiled(&missing, "kv").into());
        }
        let mut engines = Vec::new();
        for name in names {
            match name {
                EngineName::Nvpage => engines.extend(layers.iter().map(|&l| Engine::Nvpage(l))),
                EngineName::NvpageClustered => {
                    engines.extend(layers.iter().map(|&l| Engine::NvpageClustered(l)))
                }
                EngineName::Lmdb => engines.push(Engine::Lmdb),
                EngineName::Redb => engines.push(Engine::Redb),
                EngineName::Sqlite => engines.push(Engine::Sqlite),
            }
        }
        let media = dedup(&args.media);
        let (pool_fractions, threads) = (dedup(&args.pool_fraction), dedup(&args.threads));
        let loads = dedup(&args.loads);
        let workloads: Vec<Workload> =
            dedup(&args.workloads).iter().map(|w| w.workload()).collect();
        for (empty, what) in [
            (engines.is_empty(), "--engines"),
            (media.is_empty(), "--media"),
            (pool_fractions.is_empty(), "--pool-fraction"),
            (threads.is_empty(), "--threads"),
            (loads.is_empty(), "--loads"),
        ] {
            if empty {
                return Err(format!("{what} needs at least one value").into());
            }
        }
        args.dirs.check(&media)?;
        let MediaDirs { dir_disk, dir_tmpfs } = args.dirs.clone();
        // Keep the workloads in their running order, whatever order they were named in.
        let workloads =
            Workload::AFTER_LOAD.iter().copied().filter(|w| workloads.contains(w)).collect();
        Ok(Config {
            entries: args.entries,
            engines,
            media,
            dir_disk,
            dir_tmpfs,
            pool_fractions,
            threads,
            loads,
            workloads,
            lookups: args.lookups,
            scans: args.scans,
            mix_ops: args.mix_ops,
            runs: args.runs,
            cold: args.cold,
            verify: args.verify,
            quiet: args.quiet,
        })
    }

    /// The directory for databases on `medium`.
    pub fn dir(&self, medium: Medium) -> &PathBuf {
        match medium {
            Medium::Disk => &self.dir_disk,
            Medium::Tmpfs => &self.dir_tmpfs,
        }
    }

    /// The load order whose database the workloads run on.
    pub fn kept_load(&self) -> LoadOrder {
        if self.loads.contains(&LoadOrder::Random) { LoadOrder::Random } else { LoadOrder::Sorted }
    }

    /// Operations per run of `workload`.
    pub fn ops(&self, workload: Workload) -> usize {
        (match workload {
            Workload::LookupUniform | Workload::LookupZipf => self.lookups,
            Workload::Scan => self.scans,
            Workload::Mix => self.mix_ops,
            Workload::LoadSorted | Workload::LoadRandom => self.entries,
        }) as usize
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        kv: KvArgs,
    }

    fn config(argv: &[&str]) -> Result<Config, BoxError> {
        Config::from_args(
            &Cli::try_parse_from(std::iter::once("kv").chain(argv.iter().copied()))?.kv,
        )
    }

    #[test]
    fn an_engine_the_build_left_out_is_an_error_naming_its_feature() {
        let lmdb = config(&["--engines", "nvpage,lmdb", "--dir-disk", "/", "--dir-tmpfs", "/"]);
        if Comparison::Lmdb.is_compiled() {
            assert!(lmdb.unwrap().engines.contains(&Engine::Lmdb));
        } else {
            let e = lmdb.unwrap_err().to_string();
            assert!(e.starts_with("built without the `lmdb` feature: "), "{e}");
            assert!(e.contains("cargo run --release -p nvpage-bench --features lmdb -- kv"), "{e}");
        }
        // By default: nvpage on every layer, and every other engine the build has.
        let engines = config(&["--dir-disk", "/", "--dir-tmpfs", "/"]).unwrap().engines;
        assert_eq!(engines.len(), 2 * Layer::compiled().len() + compiled_comparisons());
    }

    fn compiled_comparisons() -> usize {
        [Comparison::Lmdb, Comparison::Redb, Comparison::Sqlite]
            .iter()
            .filter(|c| c.is_compiled())
            .count()
    }
}
