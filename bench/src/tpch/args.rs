//! The `tpch` subcommand's options, and their validation into a [`Config`].

use std::path::PathBuf;

use clap::ValueEnum;
use nvpage::Layer;
use serde::Serialize;

use super::queries::Query;
use crate::BoxError;
use crate::dirs::MediaDirs;
use crate::features::{Comparison, not_compiled};

/// Where a database lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Medium {
    /// A directory on a real disk, behind the OS page cache.
    Disk,
    /// A directory on tmpfs, used as emulated NVM: the mapped layers persist with cache-line
    /// flushes there. DRAM: nothing on it survives a power loss.
    Tmpfs,
}

impl Medium {
    /// The name on the command line, in tables and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Medium::Disk => "disk",
            Medium::Tmpfs => "tmpfs",
        }
    }
}

/// Options of `nvpage-bench tpch`.
#[derive(Clone, Debug, clap::Args)]
pub struct TpchArgs {
    /// TPC-H scale factor (1 is about 1 GB of data; fractions allowed)
    #[arg(long, value_name = "SF", default_value_t = 0.1, value_parser = parse_sf,
          allow_negative_numbers = true)]
    pub sf: f64,
    /// File layers, comma-separated [default: every layer compiled in]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_layer)]
    pub layers: Vec<Layer>,
    /// Media, comma-separated: disk, tmpfs (emulated NVM)
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "disk,tmpfs")]
    pub media: Vec<Medium>,
    /// Where the databases (and `--with-postgres`'s server, on the disk) live.
    #[command(flatten)]
    pub dirs: MediaDirs,
    /// Buffer pool sizes as fractions of the data file, comma-separated (each in (0, 4])
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "1.0,0.1",
          value_parser = parse_fraction)]
    pub pool_fraction: Vec<f64>,
    /// Measured runs per query and configuration
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Scan worker threads [default: every core]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// Queries, comma-separated (q1, q06, 19, ...) [default: all 22]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_query)]
    pub queries: Vec<Query>,
    /// Cold runs only (empty pool, fresh mappings, the file evicted from the OS cache)
    #[arg(long, conflicts_with = "warm")]
    pub cold: bool,
    /// Warm runs only (again, without reopening)
    #[arg(long)]
    pub warm: bool,
    /// Write every run and every answer as JSON to PATH
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Draw the query times as an SVG chart to PATH
    #[arg(long, value_name = "PATH")]
    pub svg: Option<PathBuf>,
    /// Write the detail (every query in every configuration, system CPU shares, the durability
    /// of every file, notes) to PATH; `-` prints it after the summary [default: tpch-detail.txt
    /// beside --json's file, else beside --svg's, else in the working directory]
    #[arg(long, value_name = "PATH")]
    pub detail: Option<PathBuf>,
    /// Also print the summary as a Markdown table (the one in docs/benchmarks.md)
    #[arg(long)]
    pub markdown: bool,
    /// Also run PostgreSQL on the same data, on each medium (a throwaway server with its data
    /// directory in --dir-disk and --dir-tmpfs, run as an unprivileged user)
    #[arg(long)]
    pub with_postgres: bool,
    /// Also run the 22 queries' SQL on every layer, medium and pool size through nvpage-sql
    /// (DataFusion over nvpage tables), and DataFusion over in-memory copies of the same tables
    /// once (warm, beside the first layer); needs the bench feature `sql`
    #[arg(long)]
    pub sql: bool,
    /// Instead of the layer matrix: the queries' SQL through a coordinator and N worker
    /// processes on this machine, for each N given (e.g. 1,2,4), every answer checked against
    /// the plans' over one database; needs the bench feature `cluster`
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub workers: Vec<usize>,
    /// No progress on stderr: neither bars (on a terminal) nor a line per finished load and
    /// configuration
    #[arg(long)]
    pub quiet: bool,
    /// The reduced matrix for large scale factors, where the full one runs for hours: Q1, Q3,
    /// Q6, Q12; pread and SE2; on disk; a pool holding a tenth of the data; cold and warm
    #[arg(long, conflicts_with_all = ["layers", "media", "pool_fraction", "queries"])]
    pub reduced: bool,
    /// Load lineitem and orders as clustered tables, their rows in the leaves of their primary
    /// keys' B+trees ((l_orderkey, l_linenumber) and o_orderkey) instead of on heap pages with a
    /// primary-key index; every answer is the same
    #[arg(long)]
    pub clustered: bool,
    /// Run the matrix at each of these scale factors in turn, comma-separated, and end with the
    /// scaling table: load and query time against the data's size
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_sf,
          conflicts_with = "sf")]
    pub scaling: Vec<f64>,
}

/// The reduced matrix's queries (`--reduced`): the two single-table scans and two joins.
pub const REDUCED_QUERIES: [Query; 4] = [Query::Q01, Query::Q03, Query::Q06, Query::Q12];

/// The reduced matrix's pool size (`--reduced`): a tenth of the data.
pub const REDUCED_POOL_FRACTION: f64 = 0.1;

pub(crate) fn parse_sf(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if !(v.is_finite() && v > 0.0 && v <= 1000.0) {
        return Err(format!("the scale factor must be in (0, 1000], not {s}"));
    }
    Ok(v)
}

pub(crate) fn parse_layer(s: &str) -> Result<Layer, String> {
    let l: Layer = s.trim().parse()?;
    if !l.is_compiled() {
        return Err(format!("layer {l} is not compiled into this build"));
    }
    Ok(l)
}

/// A pool fraction from the command line: a number in (0, 4].
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("'{s}' is not a number"))?;
    if !(v.is_finite() && v > 0.0 && v <= 4.0) {
        return Err(format!("a pool fraction must be in (0, 4], not {s}"));
    }
    Ok(v)
}

pub(crate) fn parse_query(s: &str) -> Result<Query, String> {
    Query::parse(s).ok_or_else(|| {
        let names: Vec<String> = Query::ALL.iter().map(|q| q.name()).collect();
        format!("unknown query '{s}': expected one of {}", names.join(", "))
    })
}

/// The validated configuration of a run, as saved in the JSON.
#[derive(Clone, Debug, Serialize)]
pub struct Config {
    /// Scale factor.
    pub sf: f64,
    /// Layers, in order.
    #[serde(serialize_with = "layer_names")]
    pub layers: Vec<Layer>,
    /// Media, in order.
    pub media: Vec<Medium>,
    /// Directory for disk databases.
    pub dir_disk: PathBuf,
    /// Directory for tmpfs databases.
    pub dir_tmpfs: PathBuf,
    /// Pool sizes as fractions of the data file.
    pub pool_fractions: Vec<f64>,
    /// Measured runs per configuration.
    pub runs: u32,
    /// Scan worker threads.
    pub threads: usize,
    /// Queries.
    #[serde(serialize_with = "query_names")]
    pub queries: Vec<Query>,
    /// Whether cold runs are made.
    pub cold: bool,
    /// Whether warm runs are made.
    pub warm: bool,
    /// Whether PostgreSQL runs too, on each medium.
    pub with_postgres: bool,
    /// Whether the queries' SQL runs too (nvpage-sql on every layer, DataFusion in memory once).
    pub sql: bool,
    /// Whether this is `--reduced`'s matrix.
    pub reduced: bool,
    /// Whether lineitem and orders are loaded as clustered tables.
    pub clustered: bool,
    /// No progress on stderr.
    #[serde(skip)]
    pub quiet: bool,
}

pub(crate) fn layer_names<S: serde::Serializer>(v: &[Layer], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|l| l.name()))
}

pub(crate) fn query_names<S: serde::Serializer>(v: &[Query], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|q| q.name()))
}

/// `v` without repeats, in order of first appearance.
pub fn dedup<T: PartialEq + Clone>(v: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for x in v {
        if !out.contains(x) {
            out.push(x.clone());
        }
    }
    out
}

impl Config {
    /// Validates `args` (what clap cannot check alone) and fills in the defaults.
    pub fn from_args(args: &TpchArgs) -> Result<Config, BoxError> {
        let (layers, media, pool_fractions, queries) = if args.reduced {
            let layers: Vec<Layer> =
                [Layer::Pread, Layer::Se2].into_iter().filter(|l| l.is_compiled()).collect();
            if layers.is_empty() {
                return Err("--reduced runs pread and SE2: neither is compiled in".into());
            }
            (layers, vec![Medium::Disk], vec![REDUCED_POOL_FRACTION], REDUCED_QUERIES.to_vec())
        } else {
            let layers =
                if args.layers.is_empty() { Layer::compiled() } else { dedup(&args.layers) };
            let queries =
                if args.queries.is_empty() { Query::ALL.to_vec() } else { dedup(&args.queries) };
            (layers, dedup(&args.media), dedup(&args.pool_fraction), queries)
        };
        if args.sql && !Comparison::Sql.is_compiled() {
            return Err(not_compiled(&[Comparison::Sql], "tpch --sql").into());
        }
        if media.is_empty() {
            return Err("--media needs at least one of disk, tmpfs".into());
        }
        if pool_fractions.is_empty() {
            return Err("--pool-fraction needs at least one fraction".into());
        }
        args.dirs.check(&media)?;
        let MediaDirs { dir_disk, dir_tmpfs } = args.dirs.clone();
        let threads = match args.threads {
            Some(n) => n as usize,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let (cold, warm) = match (args.cold, args.warm) {
            (false, false) => (true, true),
            (c, w) => (c, w),
        };
        Ok(Config {
            sf: args.scaling.first().copied().unwrap_or(args.sf),
            layers,
            media,
            dir_disk,
            dir_tmpfs,
            pool_fractions,
            runs: args.runs,
            threads,
            queries,
            cold,
            warm,
            with_postgres: args.with_postgres,
            sql: args.sql,
            reduced: args.reduced,
            clustered: args.clustered,
            quiet: args.quiet,
        })
    }
}
