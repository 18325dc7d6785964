//! `nvpage-bench engine`: the engine's small durable transactions beside SQLite's, its bulk-load
//! rate and its recovery time, per layer and medium. Every figure names its durability.
//!
//! - **txn** ([`txn`]): small durable transactions — one row inserted, 1, 10, 100 and 1,000
//!   rows updated in place (same size, so each keeps its place), and loads of 1,000 rows with
//!   scattered keys into tables with 0, 1 and 2 secondary indexes — on every layer, and in the same run
//!   on the same rows SQLite (bundled, through `rusqlite`) with a rollback journal
//!   (`journal_mode=DELETE`) and with `WAL`, both `synchronous=FULL` ([`sqlite`]). Commits per
//!   second and the p50 and p99 latency of a transaction (begin to durable commit); then each
//!   layer's rate divided by SQLite's for the same workload, medium and run (medians of the
//!   per-run ratios), and the project's targets for durable single-row inserts against SQLite.
//! - **load**: one write transaction inserting many rows, then its commit; rows per second
//!   including the commit's force.
//! - **recovery**: open time of a database whose log holds before-images of an unfinished
//!   transaction, against an open with an empty log.
//!
//! Media: `disk` (`--dir-disk`), `tmpfs` (`--dir-tmpfs`, cache-line persistence: emulated NVM,
//! a process crash only), and `disk-log-tmpfs`: the data on the disk, the log on tmpfs with
//! cache-line persistence ([`nvpage::Builder::log_dir`]), a model of a log on NVM beside a data
//! disk (a process crash only here, since the log is DRAM). SQLite cannot put its journal or WAL
//! in another directory, so it has no row there; that medium's ratios are to SQLite on disk.
//!
//! SQLite is in the build only with the bench's `sqlite` feature; without it the small
//! transactions run on nvpage alone, and the report says how to add SQLite.
//!
//! Fairness: each run goes through every medium; in each, every system's database is created and
//! preloaded, then each workload runs on every system in turn (the order rotated from workload
//! to workload and run to run), so the figures a ratio divides are taken minutes apart at most.

mod nvpage_db;
mod oneshot;
mod report;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod txn;

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use nvpage::Layer;
use serde::Serialize;
use tempfile::TempDir;

pub use nvpage_db::{NvpageSystem, Place, Sizes};

use crate::BoxError;
use crate::dirs::{MediaDirs, check_dir, check_medium};
use crate::features::{Comparison, not_compiled};
use crate::machine::Machine;
#[cfg(feature = "sqlite")]
use sqlite::{JournalMode, SqliteSystem};
use txn::{Rng, System, WARMUP, Workload, measure, plan};

/// Options of `nvpage-bench engine`.
#[derive(Debug, Args)]
pub struct EngineArgs {
    /// File layers, comma-separated [default: every layer compiled in].
    #[arg(long, value_delimiter = ',')]
    pub layers: Vec<Layer>,
    /// Media, comma-separated: `disk`, `tmpfs` (emulated NVM: cache-line persistence forced),
    /// `disk-log-tmpfs` (data on the disk, the log on tmpfs with cache-line persistence).
    #[arg(long, value_delimiter = ',', default_value = "disk,tmpfs,disk-log-tmpfs")]
    pub media: Vec<Medium>,
    /// Parts, comma-separated: `txn` (small transactions beside SQLite), `load`, `recovery`.
    #[arg(long, value_delimiter = ',', default_value = "txn,load,recovery")]
    pub parts: Vec<Part>,
    /// Where the databases live.
    #[command(flatten)]
    pub dirs: MediaDirs,
    /// Timed transactions per workload, system and run (after two untimed ones).
    #[arg(long, default_value_t = 200)]
    pub commits: usize,
    /// Rows preloaded into every system's table; updates pick theirs among them.
    #[arg(long, default_value_t = 100_000)]
    pub table_rows: usize,
    /// Rows updated per transaction, one workload each, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,10,100,1000")]
    pub updates: Vec<usize>,
    /// Loads into tables with this many secondary indexes (0 to 2), one workload each,
    /// comma-separated; `--load-indexes` with no value runs none.
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "0,1,2")]
    pub load_indexes: Vec<usize>,
    /// Rows each load transaction inserts.
    #[arg(long, default_value_t = 1000)]
    pub load_rows: usize,
    /// Timed transactions of each load workload (after two untimed ones).
    #[arg(long, default_value_t = 50)]
    pub load_txns: usize,
    /// Page size of every database, nvpage's and SQLite's alike.
    #[arg(long, default_value_t = 8192)]
    pub page_size: u64,
    /// nvpage's buffer pool and SQLite's page cache, in MiB.
    #[arg(long, default_value_t = 64)]
    pub cache_mib: u64,
    /// Seed of the rows the updates pick.
    #[arg(long, default_value_t = 17)]
    pub seed: u64,
    /// Rows in the bulk load.
    #[arg(long, default_value_t = 500_000)]
    pub rows: usize,
    /// Log bytes of before-images to recover, in MiB, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32")]
    pub recovery_mib: Vec<u64>,
    /// Runs per measurement (medians and ranges are over runs).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Write every measurement as JSON to PATH.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

impl EngineArgs {
    fn sizes(&self) -> Sizes {
        Sizes { page_bytes: self.page_size, pool_bytes: self.cache_mib << 20, log_bytes: 64 << 20 }
    }

    fn workloads(&self) -> Vec<Workload> {
        let rows = self.load_rows;
        std::iter::once(Workload::Insert)
            .chain(self.updates.iter().map(|&k| Workload::Update(k)))
            .chain(self.load_indexes.iter().map(|&indexes| Workload::Load { indexes, rows }))
            .collect()
    }
}

/// Where a database's files lie.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Medium {
    /// Data and log in `--dir-disk`.
    Disk,
    /// Data and log in `--dir-tmpfs`, with cache-line persistence (emulated NVM).
    Tmpfs,
    /// Data in `--dir-disk`, the log in `--dir-tmpfs` with cache-line persistence.
    DiskLogTmpfs,
}

impl Medium {
    /// The name in tables and JSON, as the option spells it.
    pub fn name(self) -> &'static str {
        match self {
            Medium::Disk => "disk",
            Medium::Tmpfs => "tmpfs",
            Medium::DiskLogTmpfs => "disk-log-tmpfs",
        }
    }
}

/// A part of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Part {
    /// Small durable transactions, nvpage beside SQLite.
    Txn,
    /// A bulk load.
    Load,
    /// Recovery time against the log's size.
    Recovery,
}

/// One measurement in one run.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// `insert 1 row`, `update 10 rows`, `load`, `recovery (open)`.
    pub test: String,
    /// `nvpage` or `sqlite`.
    pub system: &'static str,
    /// The nvpage layer, or SQLite's journal mode.
    pub config: String,
    /// Where the files were.
    pub medium: Medium,
    /// What a commit survives, and how it is made durable.
    pub durability: String,
    /// The load's rows, the recovered log's size; empty for transactions.
    pub param: String,
    /// The run, from 0.
    pub run: usize,
    /// The measurement, in `unit`.
    pub value: f64,
    /// `commits/s`, `rows/s`, `ms`.
    pub unit: &'static str,
    /// Median latency of a transaction, begin to durable commit (transactions only), µs.
    pub p50_us: Option<f64>,
    /// The same, 99th percentile, µs.
    pub p99_us: Option<f64>,
}

/// One run's scratch directories on one medium, deleted when dropped.
struct Scratch {
    data: TempDir,
    log: Option<TempDir>,
}

impl Scratch {
    fn new(dirs: &MediaDirs, medium: Medium) -> std::io::Result<Self> {
        let make = |base: &PathBuf| {
            tempfile::Builder::new().prefix("nvpage-engine-bench").tempdir_in(base)
        };
        let data = make(if medium == Medium::Tmpfs { &dirs.dir_tmpfs } else { &dirs.dir_disk })?;
        let log = if medium == Medium::DiskLogTmpfs { Some(make(&dirs.dir_tmpfs)?) } else { None };
        Ok(Self { data, log })
    }

    fn place(&self, name: &str) -> Place {
        Place {
            data: self.data.path().join(name),
            log: self.log.as_ref().map(|l| l.path().join(name)),
        }
    }
}

/// Runs the engine benchmark.
pub fn run(args: &EngineArgs) -> Result<(), BoxError> {
    let layers = if args.layers.is_empty() { Layer::compiled() } else { args.layers.clone() };
    if args.runs == 0 || args.commits == 0 || args.rows == 0 || args.table_rows == 0 {
        return Err("--runs, --commits, --rows and --table-rows must be at least 1".into());
    }
    if let Some(&k) = args.updates.iter().find(|&&k| k == 0 || k > args.table_rows) {
        return Err(format!("--updates {k}: each must be 1 to --table-rows").into());
    }
    if let Some(&k) = args.load_indexes.iter().find(|&&k| k >= txn::LOAD_TABLES.len()) {
        return Err(format!("--load-indexes {k}: each must be 0, 1 or 2").into());
    }
    if args.load_rows == 0 || args.load_txns == 0 {
        return Err("--load-rows and --load-txns must be at least 1".into());
    }
    if args.media.iter().any(|&m| m != Medium::Tmpfs) {
        check_dir(&args.dirs.dir_disk, "--dir-disk")?;
        check_medium(&args.dirs.dir_disk, false, "--dir-disk")?;
    }
    if args.media.iter().any(|&m| m != Medium::Disk) {
        check_dir(&args.dirs.dir_tmpfs, "--dir-tmpfs")?;
        check_medium(&args.dirs.dir_tmpfs, true, "--dir-tmpfs")?;
    }
    let machine = Machine::detect();
    println!("{}", machine.summary());
    match sqlite_version() {
        Some(v) => println!("SQLite {v} (bundled with rusqlite)"),
        None => println!("SQLite: not compared, {}", not_compiled(&[Comparison::Sqlite], "engine")),
    }
    let mut samples = Vec::new();
    for run in 0..args.runs {
        for &medium in &args.media {
            eprintln!("engine bench: run {} of {}, {}", run + 1, args.runs, medium.name());
            let scratch = Scratch::new(&args.dirs, medium)?;
            if args.parts.contains(&Part::Txn) {
                txn_part(args, &layers, medium, run, &scratch, &mut samples)?;
            }
            for &layer in &layers {
                oneshot_part(args, layer, medium, run, &scratch, &mut samples)?;
            }
        }
    }
    let ratios = report::ratios(&samples);
    let targets = report::targets(&ratios);
    report::print(&samples, &ratios, &targets, args.media.contains(&Medium::DiskLogTmpfs));
    if let Some(path) = &args.json {
        let config = serde_json::json!({
            "layers": layers.iter().map(|l| l.name()).collect::<Vec<_>>(),
            "media": args.media,
            "commits": args.commits,
            "warmup": WARMUP,
            "table_rows": args.table_rows,
            "updates": args.updates,
            "load_indexes": args.load_indexes,
            "load_rows": args.load_rows,
            "load_txns": args.load_txns,
            "page_bytes": args.page_size,
            "cache_bytes": args.cache_mib << 20,
            "seed": args.seed,
            "load_rows": args.rows,
            "recovery_mib": args.recovery_mib,
            "runs": args.runs,
            "sqlite_version": sqlite_version(),
        });
        let doc = serde_json::json!({
            "machine": machine,
            "config": config,
            "runs": samples,
            "ratios": ratios,
            "targets": targets,
        });
        std::fs::write(path, serde_json::to_string_pretty(&doc)? + "\n")?;
        println!("JSON written to {}", path.display());
    }
    Ok(())
}

/// The version of the SQLite beside nvpage, if this build has it (the bench's `sqlite` feature).
fn sqlite_version() -> Option<&'static str> {
    #[cfg(feature = "sqlite")]
    return Some(sqlite::version());
    #[cfg(not(feature = "sqlite"))]
    None
}

/// The small transactions on every system that has a row on `medium`, side by side.
fn txn_part(
    args: &EngineArgs,
    layers: &[Layer],
    medium: Medium,
    run: usize,
    scratch: &Scratch,
    samples: &mut Vec<Sample>,
) -> Result<(), BoxError> {
    let sizes = args.sizes();
    let mut systems: Vec<Box<dyn System>> = Vec::new();
    for &layer in layers {
        let sys = NvpageSystem::open(&scratch.place(&format!("t-{layer}")), layer, medium, sizes)?;
        nvpage_db::check_medium(sys.db(), medium)?;
        systems.push(Box::new(sys));
    }
    // SQLite's journal and WAL always lie beside its database: no row for a log apart.
    #[cfg(feature = "sqlite")]
    if medium != Medium::DiskLogTmpfs {
        for mode in JournalMode::ALL {
            let path = scratch.data.path().join(format!("t-{}.sqlite", mode.pragma()));
            let on_memory = medium == Medium::Tmpfs;
            let sys =
                SqliteSystem::create(&path, mode, sizes.page_bytes, sizes.pool_bytes, on_memory)?;
            systems.push(Box::new(sys));
        }
    }
    let table_rows = args.table_rows as i64;
    for sys in &mut systems {
        sys.preload(table_rows)?;
    }
    let mut next_id = table_rows;
    for (w, workload) in args.workloads().into_iter().enumerate() {
        let mut rng = Rng::new(args.seed ^ ((run as u64) << 32) ^ w as u64);
        let plan = match workload {
            // Each load table starts empty in every run: its ids from the first on.
            Workload::Load { .. } => {
                plan(workload, WARMUP + args.load_txns, table_rows, 0, &mut rng)
            }
            _ => plan(workload, WARMUP + args.commits, table_rows, next_id, &mut rng),
        };
        if workload == Workload::Insert {
            next_id += plan.len() as i64;
        }
        let n = systems.len();
        for k in 0..n {
            let sys = &mut systems[(k + run + w) % n];
            let m = measure(sys.as_mut(), &plan)?;
            samples.push(Sample {
                test: workload.name(),
                system: sys.system(),
                config: sys.config(),
                medium,
                durability: sys.durability(),
                param: String::new(),
                run,
                value: m.per_s,
                unit: "commits/s",
                p50_us: Some(m.p50_us),
                p99_us: Some(m.p99_us),
            });
        }
    }
    // Every system ran the same transactions: each must end with the same rows.
    let first = systems[0].totals()?;
    for sys in &mut systems[1..] {
        let t = sys.totals()?;
        if t != first {
            return Err(format!(
                "{} {} ends with {t} but {} {} with {first}: they did not do the same work",
                sys.system(),
                sys.config(),
                systems[0].system(),
                systems[0].config()
            )
            .into());
        }
    }
    Ok(())
}

/// The bulk load and the recovery times of `layer` on `medium`, as asked.
fn oneshot_part(
    args: &EngineArgs,
    layer: Layer,
    medium: Medium,
    run: usize,
    scratch: &Scratch,
    samples: &mut Vec<Sample>,
) -> Result<(), BoxError> {
    let sizes = args.sizes();
    let mut push = |test: &str, param: String, (value, durability): (f64, String), unit| {
        samples.push(Sample {
            test: test.into(),
            system: "nvpage",
            config: layer.name().into(),
            medium,
            durability,
            param,
            run,
            value,
            unit,
            p50_us: None,
            p99_us: None,
        })
    };
    if args.parts.contains(&Part::Load) {
        let place = scratch.place(&format!("l-{layer}"));
        let measured = oneshot::load(&place, layer, medium, sizes, args.rows)?;
        push("load", format!("{} rows", args.rows), measured, "rows/s");
    }
    if args.parts.contains(&Part::Recovery) {
        for (i, &mib) in std::iter::once(&0).chain(&args.recovery_mib).enumerate() {
            let place = scratch.place(&format!("r{i}-{layer}"));
            let measured = oneshot::recovery(&place, layer, medium, sizes, mib)?;
            push("recovery (open)", format!("{mib} MiB log"), measured, "ms");
        }
    }
    Ok(())
}
