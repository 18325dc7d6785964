//! `nvpage-bench engine`: the engine's durable commit rate, bulk-load rate and recovery time,
//! per layer and medium (issue 5). Every figure names its durability.
//!
//! - **commit**: write transactions of one inserted row each, committed one by one: each commit
//!   forces the changed pages and rewinds the log before it returns (durable at return).
//! - **load**: one write transaction inserting many rows, then its commit; rows per second
//!   including the commit's force.
//! - **recovery**: a transaction that changes pages already in the file through a small pool, so
//!   their before-images are stolen into the log, is left unfinished (the process "crashes":
//!   the handle is dropped with the transaction never ended); the next open rolls it back. Open
//!   time against the log bytes it had to apply, next to an open with an empty log.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, Table};
use nvpage::{Column, ColumnType, Database, Layer, PersistRequest, ReadOps, Schema, Value, kind};
use serde::Serialize;

use crate::BoxError;
use crate::dirs::{MediaDirs, check_dir};
use crate::machine::Machine;
use crate::stats::summarize;

/// Options of `nvpage-bench engine`.
#[derive(Debug, Args)]
pub struct EngineArgs {
    /// File layers, comma-separated [default: every layer compiled in].
    #[arg(long, value_delimiter = ',')]
    pub layers: Vec<Layer>,
    /// Media, comma-separated: `disk`, `tmpfs` (emulated NVM: cache-line persistence forced).
    #[arg(long, value_delimiter = ',', default_value = "disk,tmpfs")]
    pub media: Vec<String>,
    /// Where the databases live.
    #[command(flatten)]
    pub dirs: MediaDirs,
    /// Single-row transactions per run (on disk each costs a device flush or two).
    #[arg(long, default_value_t = 200)]
    pub commits: usize,
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

#[derive(Debug, Clone, Serialize)]
struct Sample {
    test: String,
    layer: String,
    medium: String,
    durability: String,
    param: String,
    run: usize,
    value: f64,
    unit: &'static str,
}

fn schema() -> Result<Schema, nvpage::Error> {
    Schema::new(vec![
        Column::new("id", ColumnType::I64),
        Column::new("amount", ColumnType::Decimal { scale: 2 }),
        Column::new("note", ColumnType::VarChar { max_len: 64 }),
    ])
}

fn open(
    dir: &Path,
    layer: Layer,
    tmpfs: bool,
    pool_bytes: u64,
    log_bytes: u64,
) -> Result<Database, BoxError> {
    let persistence = if tmpfs { PersistRequest::CacheLine } else { PersistRequest::Auto };
    let db = Database::builder()
        .layer(layer)
        .persistence(persistence)
        .pool_bytes(pool_bytes)
        .log_bytes(log_bytes)
        .open(dir)?;
    // A figure labelled "disk" must not come from memory.
    let medium = db.durability().medium;
    if medium.is_memory() != tmpfs {
        let (want, flag) = if tmpfs { ("tmpfs", "--dir-tmpfs") } else { ("disk", "--dir-disk") };
        return Err(format!(
            "{} is on {}, not on {want}: choose another directory with {flag}",
            dir.display(),
            medium.name()
        )
        .into());
    }
    Ok(db)
}

fn insert_row(
    tx: &mut nvpage::WriteTxn<'_>,
    t: &nvpage::Table,
    i: i64,
) -> Result<(), nvpage::Error> {
    let note = format!("row {i}");
    tx.insert(
        t,
        &[Value::I64(i), Value::Decimal(nvpage::Decimal::new(i % 100_000, 2)), Value::Str(&note)],
    )?;
    Ok(())
}

/// Durable single-row commits: commits per second.
fn commits(dir: &Path, layer: Layer, tmpfs: bool, n: usize) -> Result<(f64, String), BoxError> {
    let db = open(dir, layer, tmpfs, 16 << 20, 64 << 20)?;
    let mut tx = db.begin_write()?;
    let t = tx.create_table("c", schema()?)?;
    tx.commit()?;
    let start = Instant::now();
    for i in 0..n {
        let mut tx = db.begin_write()?;
        insert_row(&mut tx, &t, i as i64)?;
        tx.commit()?;
    }
    let secs = start.elapsed().as_secs_f64();
    Ok((n as f64 / secs, db.durability().to_string()))
}

/// One big insert transaction and its commit: rows per second.
fn load(dir: &Path, layer: Layer, tmpfs: bool, n: usize) -> Result<f64, BoxError> {
    let db = open(dir, layer, tmpfs, 64 << 20, 64 << 20)?;
    let start = Instant::now();
    let mut tx = db.begin_write()?;
    let t = tx.create_table("l", schema()?)?;
    for i in 0..n {
        insert_row(&mut tx, &t, i as i64)?;
    }
    tx.commit()?;
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

/// Open time of a database whose log holds `mib` MiB of before-images (0: an empty log), in ms.
fn recovery(dir: &Path, layer: Layer, tmpfs: bool, mib: u64) -> Result<f64, BoxError> {
    let page = 8192u64;
    let pages = (mib << 20) / (page + 64);
    let rows_per_page = 40;
    {
        let db = open(dir, layer, tmpfs, 64 << 20, (mib + 8) << 20)?;
        let mut tx = db.begin_write()?;
        let t = tx.create_table("r", schema()?)?;
        for i in 0..(pages.max(1) * rows_per_page) as i64 {
            insert_row(&mut tx, &t, i)?;
        }
        tx.commit()?;
    }
    if mib > 0 {
        // Reopen with a pool of a few pages, so changing every page steals (and logs) them.
        let db = open(dir, layer, tmpfs, 32 * page, (mib + 8) << 20)?;
        let mut tx = db.begin_write()?;
        let t = tx.table("r")?;
        let id = t.col::<kind::I64>("id")?;
        let mut rows = Vec::new();
        for p in tx.scan(&t)? {
            let p = p?;
            if let Some(r) = p.rows().next() {
                let row = r?;
                rows.push((row.id(), row.get(id)?));
            }
        }
        for (rid, i) in rows {
            let note = format!("changed {i}");
            tx.update(
                &t,
                rid,
                &[Value::I64(i), Value::Decimal(nvpage::Decimal::new(0, 2)), Value::Str(&note)],
            )?;
        }
        // The process dies here: the transaction never commits or aborts.
        std::mem::forget(tx);
    }
    let start = Instant::now();
    let db = open(dir, layer, tmpfs, 64 << 20, 64 << 20)?;
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    drop(db);
    Ok(ms)
}

fn medium_dir(args: &EngineArgs, medium: &str) -> Result<PathBuf, BoxError> {
    match medium {
        "disk" => check_dir(&args.dirs.dir_disk, "--dir-disk").map(|()| args.dirs.dir_disk.clone()),
        "tmpfs" => {
            check_dir(&args.dirs.dir_tmpfs, "--dir-tmpfs").map(|()| args.dirs.dir_tmpfs.clone())
        }
        m => Err(format!("unknown medium {m:?}: expected disk or tmpfs").into()),
    }
}

/// Runs the engine benchmark.
pub fn run(args: &EngineArgs) -> Result<(), BoxError> {
    let layers = if args.layers.is_empty() { Layer::compiled() } else { args.layers.clone() };
    if args.runs == 0 || args.commits == 0 || args.rows == 0 {
        return Err("--runs, --commits and --rows must be at least 1".into());
    }
    let machine = Machine::detect();
    println!("{}", machine.summary());
    let mut samples = Vec::new();
    for medium in &args.media {
        let base = medium_dir(args, medium)?;
        let tmpfs = medium == "tmpfs";
        for &layer in &layers {
            for run in 0..args.runs {
                let scratch =
                    tempfile::Builder::new().prefix("nvpage-engine-bench").tempdir_in(&base)?;
                let mut push = |test: &str,
                                param: String,
                                value: f64,
                                unit: &'static str,
                                durability: &str| {
                    samples.push(Sample {
                        test: test.into(),
                        layer: layer.name().into(),
                        medium: medium.clone(),
                        durability: durability.into(),
                        param,
                        run,
                        value,
                        unit,
                    })
                };
                let (rate, durability) =
                    commits(&scratch.path().join("c"), layer, tmpfs, args.commits)?;
                push("commit (1 row)", String::new(), rate, "commits/s", &durability);
                let rate = load(&scratch.path().join("l"), layer, tmpfs, args.rows)?;
                push("load", format!("{} rows", args.rows), rate, "rows/s", &durability);
                for (i, &mib) in std::iter::once(&0).chain(&args.recovery_mib).enumerate() {
                    let ms = recovery(&scratch.path().join(format!("r{i}")), layer, tmpfs, mib)?;
                    push("recovery (open)", format!("{mib} MiB log"), ms, "ms", &durability);
                }
            }
        }
    }
    print_table(&samples);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(
            &serde_json::json!({ "machine": machine, "runs": samples }),
        )?;
        std::fs::write(path, text + "\n")?;
        println!("JSON written to {}", path.display());
    }
    Ok(())
}

fn print_table(samples: &[Sample]) {
    let mut keys: Vec<(String, String, String, String, String, &'static str)> = Vec::new();
    for s in samples {
        let k = (
            s.test.clone(),
            s.param.clone(),
            s.layer.clone(),
            s.medium.clone(),
            s.durability.clone(),
            s.unit,
        );
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(["test", "size", "layer", "medium", "median", "min–max", "unit", "durability"]);
    for k in keys {
        let vals: Vec<f64> = samples
            .iter()
            .filter(|s| (&s.test, &s.param, &s.layer, &s.medium) == (&k.0, &k.1, &k.2, &k.3))
            .map(|s| s.value)
            .collect();
        let Some(sum) = summarize(&vals) else { continue };
        t.add_row([
            Cell::new(&k.0),
            Cell::new(&k.1),
            Cell::new(&k.2),
            Cell::new(&k.3),
            Cell::new(format!("{:.0}", sum.median)).set_alignment(CellAlignment::Right),
            Cell::new(format!("{:.0}–{:.0}", sum.min, sum.max)).set_alignment(CellAlignment::Right),
            Cell::new(k.5),
            Cell::new(&k.4),
        ]);
    }
    println!("{t}");
    println!(
        "commit: each transaction inserts one row and returns from commit only when it is durable in the mode shown (the forced pages, then the log's rewind)."
    );
    println!(
        "recovery: open time of a database whose log holds that many before-images of an unfinished transaction (0 MiB: a clean open)."
    );
}
