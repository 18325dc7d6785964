//! The matrix. Per medium, one database is loaded and copied byte for byte for each layer, so
//! every layer starts from the same file. Per layer, the database is opened with a pool that
//! holds all of it, the loaded database's answers are taken (the model's sums, and a warm-up),
//! one refresh pair warms the writer up (the first RF1 builds the tables' free-space maps), and
//! each run then measures, in this order (see `database`):
//!
//! 1. **queries alone**: each query once, no writer;
//! 2. **the refresh loop alone**: RF1, RF2 pairs, for as long as step 1 took (at least one pair);
//! 3. **queries beside the loop**: the loop starts on another thread; each query runs once on
//!    this thread; the loop stops after its current pair.
//!
//! Every query's answer, alone or beside the loop, is checked against the state of its own
//! snapshot (see `model`); after every run the row counts are the loaded ones again.

use std::collections::BTreeMap;
use std::path::Path;

use nvpage::Layer;

use super::args::Config;
use super::database::{OneDatabase, REFRESHED, Sink, counts_text, row_counts};
use super::functions::Lookup;
use super::model::History;
use super::output;
use super::records::{ConfigOut, Report};
use super::sets::RefreshSets;
use crate::BoxError;
use crate::machine::Machine;
use crate::tpch::Medium;
use crate::tpch::runner::{bar, builder, load_database};

/// The pool holds the whole data file and a quarter more, for the writer's private copies and
/// the file's growth: reads never evict, in any layer.
pub const POOL_PER_DATA_BYTE: f64 = 1.25;

/// Runs the whole matrix of `cfg` and returns the report (nothing printed but progress).
pub fn execute(cfg: &Config) -> Result<Report, BoxError> {
    // Read before anything runs: its load average is labelled as the one at the start.
    let machine = Machine::detect();
    let sets = RefreshSets::new(cfg.sf)?;
    let mut sink = Sink::default();
    let mut loads = Vec::new();
    for &medium in &cfg.media {
        let dir = match medium {
            Medium::Disk => &cfg.dir_disk,
            Medium::Tmpfs => &cfg.dir_tmpfs,
        };
        let base = tempfile::Builder::new()
            .prefix("nvpage-refresh-")
            .tempdir_in(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        let loaded = base.path().join("loaded");
        let pb = bar(
            cfg.quiet,
            crate::tpch::load::row_count(cfg.sf),
            "load {prefix:>14} {msg:9} [{bar:30}] {human_pos}/{human_len} rows {per_sec} {eta}",
        );
        pb.set_prefix(format!("{}/{}", cfg.layers[0], medium.name()));
        // The refresh functions delete rows by id, so its tables are heap tables.
        let (rec, _) = load_database(&loaded, cfg.layers[0], medium, cfg.sf, false, &pb)?;
        pb.finish_and_clear();
        let data_bytes = rec.data_bytes;
        let rows_loaded: BTreeMap<String, u64> = REFRESHED
            .iter()
            .map(|t| (t.to_string(), rec.tables.get(*t).copied().unwrap_or(0)))
            .collect();
        loads.push(rec);
        for &layer in &cfg.layers {
            let work = base.path().join(layer.name());
            copy_database(&loaded, &work)?;
            run_database(cfg, &sets, &mut sink, &work, layer, medium, data_bytes, &rows_loaded)?;
            std::fs::remove_dir_all(&work)?;
        }
    }
    let mut notes = vec![
        format!(
            "refresh sets: RF1 inserts {} orders with their 1-7 lineitems each (keys above the \
             loaded maximum, columns drawn by tpchgen's own generators), RF2 deletes the orders \
             and lineitems of the set the RF1 before it inserted, found by key {}; each \
             function is one write transaction, and a commit returns only when durable in the \
             mode named",
            sets.orders_per_set(),
            match cfg.rf2 {
                Lookup::Scan => {
                    "with a scan of both tables (the primary-key indexes are kept up to date \
                     by RF1 and RF2, not read)"
                }
                Lookup::Index => {
                    "through the primary-key indexes (orders by o_orderkey, lineitem by its \
                     key's first column, l_orderkey), kept up to date by RF1 and RF2"
                }
            }
        ),
        "each run: every query alone, then the refresh loop alone for as long as the queries \
         took, then every query beside the refresh loop (on another thread); one scan thread \
         per query; warm: the pool holds the whole data file and a quarter more"
            .to_string(),
        "refresh throughput = 1000 / (median RF1 ms + median RF2 ms) pairs per second; beside: \
         the functions that began and committed while the run's queries ran"
            .to_string(),
        "every query's answer, alone or beside the loop, is checked against the state of its \
         own snapshot (the loaded answer plus the refresh sets its snapshot holds, summed from \
         the generator's rows)"
            .to_string(),
        "CPU times are the query's or the loop's own thread's, in 10 ms ticks; latch waits are \
         the readers' (the query is the only reader)"
            .to_string(),
        "each layer ran on a byte-for-byte copy of one load per medium".to_string(),
        "others' cores: how many cores other processes kept busy at normal priority during \
         each measurement, on average (the machine's /proc/stat less this process's time); \
         niced work is recorded apart in the JSON"
            .to_string(),
    ];
    if cfg.media.contains(&Medium::Tmpfs) {
        notes.push(
            "tmpfs is emulated NVM: the mapped layers and the log persist with cache-line \
             flushes, but the medium is DRAM and survives a process crash only"
                .to_string(),
        );
    }
    let summary = output::summarize_runs(&sink.queries, &sink.refreshes);
    let results = sink.checker.answers();
    Ok(Report {
        machine,
        config: ConfigOut {
            options: cfg.clone(),
            orders_per_refresh: sets.orders_per_set(),
            loads,
            notes,
        },
        databases: sink.databases,
        summary,
        queries: sink.queries,
        refreshes: sink.refreshes,
        results,
    })
}

/// Everything measured on one database, a copy of the loaded one in `dir`.
#[allow(clippy::too_many_arguments)]
fn run_database(
    cfg: &Config,
    sets: &RefreshSets,
    sink: &mut Sink,
    dir: &Path,
    layer: Layer,
    medium: Medium,
    data_bytes: u64,
    rows_loaded: &BTreeMap<String, u64>,
) -> Result<(), BoxError> {
    let pool_bytes = (data_bytes as f64 * POOL_PER_DATA_BYTE) as u64;
    let db = builder(layer, medium).pool_bytes(pool_bytes).open(dir)?;
    let durability = db.durability().to_string();
    let name = format!("{layer}/{}", medium.name());
    if row_counts(&db)? != *rows_loaded {
        return Err(
            format!("{name}: the copied database's row counts are not the loaded ones").into()
        );
    }
    let progress = bar(
        cfg.quiet,
        u64::from(cfg.runs),
        "refresh {prefix:>14} [{bar:30}] {pos}/{len} runs {eta}",
    );
    progress.set_prefix(name.clone());
    let data_bytes_start = db.page_count() * db.page_size() as u64;
    let history = History::default();
    let mut one = OneDatabase::warm_up(
        &db,
        layer,
        medium,
        &durability,
        &cfg.queries,
        sets,
        cfg.rf2,
        &history,
        cfg.sf,
        sink,
    )?;
    for run in 0..cfg.runs {
        one.run(sink, run)?;
        let rows = row_counts(&db)?;
        if rows != *rows_loaded {
            return Err(format!(
                "{name}, run {run}: after whole refresh pairs the row counts are {}, not the \
                 loaded {}",
                counts_text(&rows),
                counts_text(rows_loaded)
            )
            .into());
        }
        progress.inc(1);
    }
    progress.finish_and_clear();
    sink.databases.push(one.finish(rows_loaded, pool_bytes, data_bytes_start)?);
    Ok(())
}

/// Copies the database in `from` to the new directory `to` and makes the copy durable, so the
/// measured commits do not pay for writing it back.
fn copy_database(from: &Path, to: &Path) -> Result<(), BoxError> {
    std::fs::create_dir(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for entry in std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let entry = entry?;
        if !entry.file_type()?.is_file() {
            continue;
        }
        let dst = to.join(entry.file_name());
        std::fs::copy(entry.path(), &dst)
            .map_err(|e| format!("copying {}: {e}", entry.path().display()))?;
        std::fs::File::open(&dst)?.sync_all()?;
    }
    std::fs::File::open(to)?.sync_all()?;
    Ok(())
}
