//! `nvpage-bench kv`: a key-value benchmark. 8-byte keys and 100-byte values,
//! loaded in sorted and in random order; then uniform and Zipfian point lookups, 100-entry
//! range scans, and a 50/50 lookup/update mix with a durable commit per 100 updates, on one
//! and more threads — nvpage per layer and pool size beside LMDB (heed), redb and SQLite
//! (rusqlite), on disk and on tmpfs, on the same keys in the same run. LMDB, redb and SQLite
//! are in the build only with the bench's features `lmdb`, `redb` and `sqlite` (`compare`: all
//! three); by default the benchmark runs every engine the build has.
//!
//! - [`data`]: keys, values, checksums. [`zipf`]: YCSB's Zipfian generator.
//! - [`workload`]: the workloads, their operation streams, and the model of what each read
//!   must return.
//! - [`engines`]: one [`engines::Store`] per engine (the table there says how each stores an
//!   entry, what it reads through, and what its commit guarantees).
//! - [`runner`]: the matrix, every answer checked against the model.
//! - [`output`]: the table, the targets, the chart's bars; the JSON is a
//!   [`crate::report::Report`].
//!
//! Threads: reads are split evenly among the threads, each in read transactions of its own
//! (one per 100 lookups or scans). The mix on one thread runs its operations in order in
//! write transactions (its lookups read through the open write transaction); on two or more,
//! one writer thread does the updates (every engine here takes one writer at a time) while the
//! others do the lookups in read transactions. Operations per second count every thread's.
//!
//! What it is not: YCSB (no client/server, no latency distribution), nor a tuned comparison:
//! every engine runs with its defaults but for what makes the comparison fair (a durable
//! commit, WAL mode for SQLite), and each says what its commits survive.

pub mod args;
pub mod data;
pub mod engines;
pub mod output;
pub mod runner;
pub mod workload;
pub mod zipf;

pub use args::{Config, KvArgs};

use clap::ValueEnum as _;

use crate::BoxError;
use crate::features::{Comparison, not_compiled};
use crate::report::Report;
use engines::{Engine, EngineName};

/// The JSON report: the configuration, the lines of the table, every run.
pub type KvReport = Report<Config, output::Line, runner::Record>;

/// What each engine of `cfg` reads through.
fn caches_note(cfg: &Config) -> String {
    let mut caches = vec!["nvpage's pool is a fraction of its data file".to_string()];
    let others: Vec<&str> = [
        (Engine::Lmdb, "LMDB reads through the OS page cache (mmap)"),
        (Engine::Redb, "redb through its 1 GiB cache and the OS page cache"),
        (Engine::Sqlite, "SQLite through its 2 MiB page cache and the OS page cache"),
    ]
    .into_iter()
    .filter(|(e, _)| cfg.engines.contains(e))
    .map(|(_, how)| how)
    .collect();
    if !others.is_empty() {
        caches.push(format!("{}: their defaults", others.join(", ")));
    }
    caches.join("; ")
}

/// Caveats printed under the table and saved in the JSON.
pub fn notes(cfg: &Config) -> Vec<String> {
    let ran = |e: Engine| cfg.engines.contains(&e);
    let mut notes = vec![
        "ops/s: operations (entries loaded, lookups, scans of 100 entries, mix operations) per \
         second of wall time over all threads; median over runs"
            .to_string(),
        format!(
            "loads: every entry in one write transaction, then its durable commit{}; nvpage loads \
             with a pool as large as the data",
            if ran(Engine::Sqlite) {
                " (SQLite's also checkpoints its WAL into the database file)"
            } else {
                ""
            }
        ),
        format!(
            "lookups, scans and the mix run on the database loaded in {} order",
            cfg.kept_load().name()
        ),
        "reads take a read transaction per 100 operations; the mix commits (durably) every 100 \
         updates; on 2+ threads the mix has one writer (updates) and the other threads read"
            .to_string(),
        "warm: a warm-up run, then the measured runs, without reopening".to_string(),
        caches_note(cfg),
        "Zipfian keys: YCSB's generator, θ = 0.99, ranks mapped to keys by a bijection so hot \
         keys are spread over the key space; the mix's keys are Zipfian (YCSB workload A)"
            .to_string(),
        "every read is checked: the sum of the values' hashes must equal the model's, and \
         sampled and updated keys are compared after the load and at the end"
            .to_string(),
        "pages/op: nvpage's pages read from the file per operation (pool misses, copies on \
         write, SE2's redirected reads)"
            .to_string(),
    ];
    if cfg.cold {
        notes.push(
            "cold: the database closed, its files evicted from the OS page cache \
             (POSIX_FADV_DONTNEED) on disk, reopened with an empty pool; on tmpfs the files are \
             memory and only the pool and mappings are fresh"
                .to_string(),
        );
    }
    if cfg.media.contains(&crate::tpch::Medium::Tmpfs) {
        notes.push(
            "tmpfs is emulated NVM: nvpage's mapped layers persist with cache-line flushes, but \
             the medium is DRAM and a commit there survives a process crash only, for every \
             engine"
                .to_string(),
        );
    }
    notes
}

/// Runs the matrix of `cfg` and returns its report (nothing printed but progress).
pub fn execute(cfg: &Config) -> Result<KvReport, BoxError> {
    let (machine, records, durabilities) = runner::execute(cfg)?;
    Ok(Report {
        machine,
        config: cfg.clone(),
        durabilities,
        notes: notes(cfg),
        rows: output::lines(&records),
        runs: records,
    })
}

/// Prints `report`.
pub fn print(report: &KvReport) {
    let c = &report.config;
    println!("{}", report.machine.summary());
    println!(
        "kv: {} entries (8-byte keys, 100-byte values), {} runs per configuration",
        c.entries, c.runs
    );
    println!("{}", output::table(&report.rows));
    println!("\nDurability of the commits (every write figure's):");
    for d in &report.durabilities {
        println!("  {d}");
    }
    let targets = output::targets(&report.rows);
    if targets.iter().any(|t| t.1.is_some()) {
        println!(
            "\nTargets: warm uniform lookups on tmpfs, 1 thread, SE2 against pread, redb and LMDB:"
        );
        for (what, r, met) in targets {
            let verdict = match met {
                Some(true) => "met",
                Some(false) => "not met",
                None => "not measured",
            };
            println!("  {what}: {} — {verdict}", r.map_or("-".into(), |r| format!("{r:.2}×")));
        }
    }
    println!("\nNotes:");
    for n in &report.notes {
        println!("  - {n}");
    }
}

/// Runs the subcommand: the matrix, the table, and the files asked for.
pub fn run(args: &KvArgs) -> Result<(), BoxError> {
    let cfg = Config::from_args(args)?;
    let left_out: Vec<Comparison> = EngineName::value_variants()
        .iter()
        .filter_map(|e| e.comparison())
        .filter(|c| !c.is_compiled())
        .collect();
    if args.engines.is_empty() && !left_out.is_empty() && !cfg.quiet {
        let names: Vec<&str> = left_out.iter().map(|c| c.feature()).collect();
        eprintln!("kv: {} left out: {}", names.join(", "), not_compiled(&left_out, "kv"));
    }
    let report = execute(&cfg)?;
    print(&report);
    if let Some(path) = &args.json {
        report.write_json(path).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("\nJSON written to {}", path.display());
    }
    if let Some(path) = &args.svg {
        let title =
            format!("nvpage-bench kv, {} entries: median operations per second", cfg.entries);
        crate::chart::draw(&output::bars(&report.rows), &title, "operations/s", path)?;
        println!("SVG chart written to {}", path.display());
    }
    Ok(())
}
