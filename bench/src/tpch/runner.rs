//! The matrix: per medium and layer, one database loaded once; per pool fraction, cold runs
//! (drop the database, evict the data file from the OS cache, reopen) and warm runs (a warm-up,
//! then the measured runs, without reopening). Every answer is checked against the first one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use nvpage::{Builder, DATA_FILE, Database, Layer, PersistRequest, ReadOps};
use serde::{Deserialize, Serialize};

use super::args::{Config, Medium};
use super::load::{self, TableLoad};
use super::output::pool_label;
use super::pg_matrix;
use super::progress::Progress;
use super::queries::{Query, QueryResult};
use crate::BoxError;
use crate::cputime::CpuTimes;
use crate::dirs::check_room;
use crate::machine::Machine;
use crate::memlimit::MemoryLimit;

/// The smallest pool, whatever the fraction: 64 pages of 8 KiB.
const MIN_POOL_BYTES: u64 = 64 * 8192;

const GIB: f64 = (1u64 << 30) as f64;

/// The room one nvpage database takes at scale factor `sf`, with a margin: its data file was
/// 177 MiB at SF 0.1 with the primary-key indexes (1.73 GiB per unit of SF; 2.0 counted), and
/// its log is 64 MiB. The matrix holds one database at a time.
pub fn room_for_database(sf: f64) -> u64 {
    (2.0 * GIB * sf) as u64 + (64 << 20)
}

/// The room PostgreSQL's database takes at scale factor `sf`, with a margin: 170 MiB at SF 0.1
/// with the primary keys (2.0 GiB per unit of SF counted), and its WAL, recycled at checkpoints
/// (`max_wal_size` is 1 GiB; 1.5 GiB counted).
pub fn room_for_postgres(sf: f64) -> u64 {
    (2.0 * GIB * sf) as u64 + (3 << 29)
}

/// One measured run of one query in one configuration: a line of the JSON's `runs`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// `q01`, `q06`, ...
    pub query: String,
    /// `pread`, `se1`, `se2` (the hand-written plans), `pread+sql`, `se1+sql`, `se2+sql` (the
    /// queries' SQL through nvpage-sql), `datafusion` (DataFusion over in-memory tables),
    /// `postgres`, `postgres-1w`.
    pub layer: String,
    /// `disk` or `tmpfs`.
    pub medium: String,
    /// The data file's persistence mode and what it survives.
    pub durability: String,
    /// The pool's size as a fraction of the data file.
    pub pool_fraction: f64,
    /// Cold (empty pool, fresh mappings, OS cache evicted on disk) or warm.
    pub cold: bool,
    /// The run, from 0.
    pub run: u32,
    /// Wall time of the query: for nvpage measured in the process around the query; for
    /// PostgreSQL the duration its server logs for the statement (from the query's arrival to
    /// the end of its execution, parse and plan included, the client's round trip not).
    pub wall_ms: f64,
    /// User CPU time over the query: for nvpage the whole process's, from `getrusage` (in
    /// microseconds); for PostgreSQL the backend's and its parallel workers', from their
    /// `/proc/<pid>/stat` (in 10 ms ticks).
    pub user_ms: f64,
    /// System CPU time over the query, as `user_ms`.
    pub sys_ms: f64,
    /// Pages read from the file: pool misses, copy-on-write copies and redirected reads (0 for
    /// PostgreSQL, which is not counted).
    pub pages_read: u64,
    /// Bytes copied between the file (or its mapping) and frames (0 for PostgreSQL).
    pub bytes_copied: u64,
    /// Pages served in place from the mapping (SE2), no copy (0 for PostgreSQL).
    pub redirected_reads: u64,
}

/// One query's answer: a line of the JSON's `results`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerRecord {
    /// `q01`, ...
    pub query: String,
    /// Column names.
    pub columns: Vec<String>,
    /// Rows, as strings.
    pub rows: Vec<Vec<String>>,
}

/// How one database was loaded.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LoadRecord {
    /// The layer the database was loaded with.
    pub layer: String,
    /// The medium.
    pub medium: String,
    /// The data file's durability.
    pub durability: String,
    /// Rows in all eight tables.
    pub rows: u64,
    /// Wall time of generation and insertion.
    pub seconds: f64,
    /// Rows per second.
    pub rows_per_s: f64,
    /// User CPU time of the process (`None` for PostgreSQL's load, whose CPU is spread over
    /// psql, backends and the server's background processes and is not measured).
    pub user_ms: Option<f64>,
    /// System CPU time, as `user_ms`.
    pub sys_ms: Option<f64>,
    /// Size of the data file.
    pub data_bytes: u64,
    /// Rows per table.
    pub tables: BTreeMap<String, u64>,
    /// Bytes of each table's heap pages.
    pub table_bytes: BTreeMap<String, u64>,
}

/// The configuration, as the JSON's `config`: the options, how the data was loaded, and the
/// caveats a reader needs.
#[derive(Debug, Serialize)]
pub struct ConfigOut {
    /// The validated options.
    #[serde(flatten)]
    pub options: Config,
    /// One entry per database loaded.
    pub loads: Vec<LoadRecord>,
    /// The machine's single-threaded memory read bandwidth (best of three passes over 256 MiB,
    /// the storage benchmark's summing loop), measured before the matrix: the floor under a
    /// warm scan.
    pub mem_read_gb_per_s: f64,
    /// The memory this run could use (RAM, cgroup limit) and whether the data fit in it.
    pub memory: Vec<String>,
    /// Caveats.
    pub notes: Vec<String>,
}

/// Everything a `tpch` run produced: the JSON file's content.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Where it ran.
    pub machine: Machine,
    /// How it was configured.
    pub config: ConfigOut,
    /// Every measured run.
    pub runs: Vec<RunRecord>,
    /// Every query's answer (identical in every configuration: checked).
    pub results: Vec<AnswerRecord>,
}

/// The first answer of each query, and where it came from: every later answer must equal it.
#[derive(Debug, Default)]
pub struct Checker {
    first: BTreeMap<Query, (QueryResult, String)>,
}

impl Checker {
    /// Records `res` if it is the first answer to `q`, else fails unless it equals the first.
    pub fn check(&mut self, q: Query, res: &QueryResult, label: &str) -> Result<(), BoxError> {
        match self.first.get(&q) {
            None => {
                self.first.insert(q, (res.clone(), label.to_string()));
                Ok(())
            }
            Some((want, from)) if want != res => Err(format!(
                "{q}: the answer of {label} differs from that of {from}:\n{}",
                diff(want, res)
            )
            .into()),
            Some(_) => Ok(()),
        }
    }

    /// Fails unless `rows`, an answer of `q`'s SQL as text, equals the plans' first answer as
    /// PostgreSQL's must (`postgres::compare`: SQL prints averages and ratios with more places).
    pub fn check_sql(&self, q: Query, rows: &[Vec<String>], label: &str) -> Result<(), BoxError> {
        let Some((want, from)) = self.first.get(&q) else {
            return Err(format!("{q}: {label} ran before any plan gave an answer").into());
        };
        match super::postgres::compare_text(want, rows, "the SQL's") {
            None => Ok(()),
            Some(d) => {
                Err(format!("{q}: the answer of {label} differs from that of {from}: {d}").into())
            }
        }
    }

    /// The first answer to `q`.
    pub fn get(&self, q: Query) -> Option<&QueryResult> {
        self.first.get(&q).map(|(r, _)| r)
    }

    /// The answers, by query.
    pub fn answers(&self) -> Vec<AnswerRecord> {
        self.first
            .iter()
            .map(|(q, (r, _))| AnswerRecord {
                query: q.name(),
                columns: r.columns.clone(),
                rows: r.rows.clone(),
            })
            .collect()
    }
}

/// The first difference between two answers, for the error message.
pub fn diff(a: &QueryResult, b: &QueryResult) -> String {
    if a.columns != b.columns {
        return format!("columns {} vs {}", row_text(&a.columns), row_text(&b.columns));
    }
    for i in 0..a.rows.len().max(b.rows.len()) {
        if a.rows.get(i) != b.rows.get(i) {
            let row = |r: Option<&Vec<String>>| r.map_or("no row".into(), |r| row_text(r));
            return format!("row {i}: {} vs {}", row(a.rows.get(i)), row(b.rows.get(i)));
        }
    }
    "equal".into()
}

/// A row of an answer for a message, as psql prints one: `1998-09-02 | 1.00 | R`.
pub fn row_text(row: &[impl AsRef<str>]) -> String {
    row.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(" | ")
}

/// How to open the databases of one medium: the mapped layers on tmpfs persist with cache-line
/// flushes (emulated NVM).
pub fn builder(layer: Layer, medium: Medium) -> Builder {
    let b = Database::builder().layer(layer);
    match medium {
        Medium::Tmpfs => b.persistence(PersistRequest::CacheLine),
        Medium::Disk => b,
    }
}

/// A progress bar of `len` steps drawn with `template`, or a hidden one when `quiet` (the
/// refresh benchmark's bars).
pub fn bar(quiet: bool, len: u64, template: &str) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        pb.set_style(style.progress_chars("=> "));
    }
    pb
}

/// Loads one database at `dir` and checks that it lies on `medium`.
/// `clustered`: lineitem and orders as clustered tables ([`load::load_all`]).
pub fn load_database(
    dir: &Path,
    layer: Layer,
    medium: Medium,
    sf: f64,
    clustered: bool,
    progress: &ProgressBar,
) -> Result<(LoadRecord, Vec<TableLoad>), BoxError> {
    let db = builder(layer, medium).open(dir)?;
    let durability = db.durability();
    if durability.medium.is_memory() != (medium == Medium::Tmpfs) {
        return Err(format!(
            "{} is on {}, not on {}: choose another directory with --dir-{}",
            dir.display(),
            durability.medium.name(),
            medium.name(),
            medium.name()
        )
        .into());
    }
    let t0 = Instant::now();
    let cpu0 = CpuTimes::now()?;
    let tables = load::load_all(&db, sf, clustered, progress)?;
    let seconds = t0.elapsed().as_secs_f64();
    let cpu = CpuTimes::now()?.since(cpu0);
    let rows: u64 = tables.iter().map(|t| t.rows).sum();
    let data_bytes = db.page_count() * db.page_size() as u64;
    let mut table_bytes = BTreeMap::new();
    {
        let rx = db.begin_read()?;
        for t in &tables {
            let pages = rx.page_count(&rx.table(t.table)?)?;
            table_bytes.insert(t.table.to_string(), pages * db.page_size() as u64);
        }
    }
    let rec = LoadRecord {
        layer: layer.name().into(),
        medium: medium.name().into(),
        durability: durability.to_string(),
        rows,
        seconds,
        rows_per_s: rows as f64 / seconds.max(1e-9),
        user_ms: Some(cpu.user_ms()),
        sys_ms: Some(cpu.sys_ms()),
        data_bytes,
        tables: tables.iter().map(|t| (t.table.to_string(), t.rows)).collect(),
        table_bytes,
    };
    Ok((rec, tables))
}

/// One run of `q`'s hand-written plan, measured.
pub fn measure(
    db: &Database,
    q: Query,
    threads: usize,
) -> Result<(QueryResult, Measured), BoxError> {
    measure_with(db, || {
        let rx = db.begin_read()?;
        Ok(q.run(&rx, threads)?)
    })
}

/// `run` (a query over `db`), measured: wall and CPU time, and `db`'s counters.
pub fn measure_with<T>(
    db: &Database,
    run: impl FnOnce() -> Result<T, BoxError>,
) -> Result<(T, Measured), BoxError> {
    let c0 = db.counters();
    let cpu0 = CpuTimes::now()?;
    let t0 = Instant::now();
    let res = run()?;
    let wall = t0.elapsed();
    let cpu = CpuTimes::now()?.since(cpu0);
    let c1 = db.counters();
    let redirected = c1.redirected_reads - c0.redirected_reads;
    Ok((
        res,
        Measured {
            wall_ms: wall.as_secs_f64() * 1e3,
            user_ms: cpu.user_ms(),
            sys_ms: cpu.sys_ms(),
            pages_read: (c1.misses - c0.misses) + (c1.cow_copies - c0.cow_copies) + redirected,
            bytes_copied: (c1.bytes_copied_in - c0.bytes_copied_in)
                + (c1.bytes_copied_out - c0.bytes_copied_out),
            redirected_reads: redirected,
        },
    ))
}

/// What [`measure`] measured.
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    /// Wall time.
    pub wall_ms: f64,
    /// User CPU time.
    pub user_ms: f64,
    /// System CPU time.
    pub sys_ms: f64,
    /// Pages read from the file.
    pub pages_read: u64,
    /// Bytes copied.
    pub bytes_copied: u64,
    /// Redirected reads.
    pub redirected_reads: u64,
}

/// The directory for databases (and PostgreSQL's server) on `medium`.
pub(super) fn medium_dir(cfg: &Config, medium: Medium) -> &PathBuf {
    match medium {
        Medium::Disk => &cfg.dir_disk,
        Medium::Tmpfs => &cfg.dir_tmpfs,
    }
}

/// The matrix's state: its options, the answers so far, the measured runs, the progress.
pub(super) struct Ctx<'a> {
    pub(super) cfg: &'a Config,
    pub(super) checker: Checker,
    pub(super) runs: Vec<RunRecord>,
    pub(super) progress: Progress,
    /// The bar over the query runs of one database, while they run.
    pub(super) bar: ProgressBar,
    /// Whether DataFusion over in-memory tables is still to run (`--sql`: once, warm, beside
    /// the first layer).
    #[cfg(feature = "sql")]
    pub(super) in_memory_pending: bool,
}

impl Ctx<'_> {
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        q: Query,
        layer: &str,
        medium: Medium,
        durability: &str,
        fraction: f64,
        cold: bool,
        run: u32,
        m: Measured,
    ) {
        self.runs.push(RunRecord {
            query: q.name(),
            layer: layer.into(),
            medium: medium.name().into(),
            durability: durability.into(),
            pool_fraction: fraction,
            cold,
            run,
            wall_ms: m.wall_ms,
            user_ms: m.user_ms,
            sys_ms: m.sys_ms,
            pages_read: m.pages_read,
            bytes_copied: m.bytes_copied,
            redirected_reads: m.redirected_reads,
        });
    }
}

/// Runs the whole matrix of `cfg` and returns the report (nothing printed but progress).
pub fn execute(cfg: &Config) -> Result<Report, BoxError> {
    // Read before anything runs: its load average is labelled as the one at the start.
    let machine = Machine::detect();
    let mut notes = vec![
        "cold on disk: empty pool, mappings dropped (database closed and reopened), data file \
         evicted from the OS page cache (fsync + POSIX_FADV_DONTNEED)"
            .to_string(),
        "warm: a warm-up run, then the measured runs, without reopening".to_string(),
        "pages_read = pool misses + copy-on-write copies + redirected reads (SE2, no copy)"
            .to_string(),
        "user/sys CPU of nvpage's runs is the whole process's, from getrusage (microseconds; \
         the kernel splits the exact total between user and system by its 10 ms samples)"
            .to_string(),
    ];
    if cfg.media.contains(&Medium::Tmpfs) {
        notes.push(
            "tmpfs is emulated NVM: the mapped layers persist with cache-line flushes, but the \
             medium is DRAM and survives a process crash only; cold on tmpfs means an empty pool \
             and fresh mappings only (the file is memory, there is no cache to evict)"
                .to_string(),
        );
    }
    let passes = usize::from(cfg.cold) + usize::from(cfg.warm);
    let (media, layers, pools) = (cfg.media.len(), cfg.layers.len(), cfg.pool_fractions.len());
    let pg_configs = if cfg.with_postgres { media * pools * 2 * passes } else { 0 };
    let pg_loads = if cfg.with_postgres { media } else { 0 };
    // With `--sql`, each configuration runs twice (the plans, then the SQL), and DataFusion
    // over in-memory tables once.
    let engines = if cfg.sql { 2 } else { 1 };
    let in_memory = usize::from(cfg.sql && cfg.warm);
    let progress = Progress::new(
        cfg.quiet,
        media * layers + pg_loads,
        media * layers * pools * passes * engines + in_memory + pg_configs,
    );
    // Query runs per database: measured runs, and a warm-up per query before the warm ones.
    let per_pool =
        (u64::from(cfg.cold) + u64::from(cfg.warm)) * u64::from(cfg.runs) + u64::from(cfg.warm);
    let total = (media * layers * pools * engines * cfg.queries.len()) as u64 * per_pool
        + (in_memory * cfg.queries.len()) as u64 * (u64::from(cfg.runs) + 1);
    let mut ctx = Ctx {
        cfg,
        checker: Checker::default(),
        runs: Vec::new(),
        progress,
        bar: ProgressBar::hidden(),
        #[cfg(feature = "sql")]
        in_memory_pending: in_memory > 0,
    };
    let mem_read_gb_per_s = mem_read_bandwidth();
    let mut loads = Vec::new();
    let mut done_runs = 0u64;
    for &medium in &cfg.media {
        let base = tempfile::Builder::new()
            .prefix("nvpage-tpch-")
            .tempdir_in(medium_dir(cfg, medium))
            .map_err(|e| format!("{}: {e}", medium_dir(cfg, medium).display()))?;
        for &layer in &cfg.layers {
            let dir = base.path().join(layer.name());
            let what = format!("{layer}/{}", medium.name());
            check_room(
                base.path(),
                room_for_database(cfg.sf),
                &format!("an nvpage database at SF {}", cfg.sf),
                &format!("--dir-{}", medium.name()),
            )?;
            let pb = ctx.progress.load_bar(load::row_count(cfg.sf), &what);
            let (rec, _) = load_database(&dir, layer, medium, cfg.sf, cfg.clustered, &pb)?;
            ctx.progress.clear_bar();
            ctx.progress.load_done(
                &format!("{layer} on {}", medium.name()),
                rec.rows,
                Duration::from_secs_f64(rec.seconds),
                rec.data_bytes,
            );
            let data_bytes = rec.data_bytes;
            let durability = rec.durability.clone();
            loads.push(rec);
            ctx.bar = ctx.progress.query_bar(total, done_runs, &what);
            for &fraction in &cfg.pool_fractions {
                run_pool(&mut ctx, &dir, layer, medium, &durability, fraction, data_bytes)?;
            }
            done_runs = ctx.bar.position();
            ctx.progress.clear_bar();
            ctx.bar = ProgressBar::hidden();
            std::fs::remove_dir_all(&dir)?;
        }
    }
    if cfg.with_postgres {
        notes.push(pg_matrix::run(&mut ctx, &mut loads)?);
    }
    if cfg.reduced {
        notes.push(format!(
            "the reduced matrix (--reduced), for large scale factors: queries {}; pread and SE2; \
             disk; a pool holding a tenth of the data",
            cfg.queries.iter().map(|q| q.name()).collect::<Vec<_>>().join(", ")
        ));
    }
    let results = ctx.checker.answers();
    let data_bytes = loads.iter().map(|l| l.data_bytes).max().unwrap_or(0);
    let memory = vec![MemoryLimit::detect().describe(data_bytes)];
    Ok(Report {
        machine,
        config: ConfigOut { options: cfg.clone(), loads, mem_read_gb_per_s, memory, notes },
        runs: ctx.runs,
        results,
    })
}

/// Single-threaded memory read bandwidth in GB/s: best of three passes over 256 MiB.
pub fn mem_read_bandwidth() -> f64 {
    let buf = crate::memory::MemBuffers::new(256 << 20, 8192);
    (0..3)
        .map(|_| {
            let t0 = Instant::now();
            buf.read_pass();
            buf.len() as f64 / t0.elapsed().as_secs_f64() / 1e9
        })
        .fold(0.0, f64::max)
}

/// Cold and warm runs of every query with one pool size.
fn run_pool(
    ctx: &mut Ctx<'_>,
    dir: &Path,
    layer: Layer,
    medium: Medium,
    durability: &str,
    fraction: f64,
    data_bytes: u64,
) -> Result<(), BoxError> {
    let cfg = ctx.cfg;
    let pool = ((data_bytes as f64 * fraction) as u64).max(MIN_POOL_BYTES);
    let open = || builder(layer, medium).pool_bytes(pool).open(dir);
    let pool_holds = pool_label(fraction);
    let label = |cold: bool, run: u32| {
        format!(
            "{layer}/{}, pool holds {pool_holds}, {} run {run}",
            medium.name(),
            if cold { "cold" } else { "warm" }
        )
    };
    let config = |cold: bool| {
        format!(
            "{layer} on {}, pool holds {pool_holds}, {}",
            medium.name(),
            if cold { "cold" } else { "warm" }
        )
    };
    let detail = format!("{} queries × {} run(s)", cfg.queries.len(), cfg.runs);
    #[cfg(feature = "sql")]
    let sql_name = format!("{layer}+sql");
    if cfg.cold {
        let t0 = Instant::now();
        for run in 0..cfg.runs {
            for &q in &cfg.queries {
                ctx.bar.set_message(format!("pool {pool_holds} cold {q}"));
                if medium == Medium::Disk {
                    nvpage_storage::file::evict_os_cache(&dir.join(DATA_FILE))?;
                }
                let db = open()?;
                let (res, m) = measure(&db, q, cfg.threads)?;
                drop(db);
                ctx.checker.check(q, &res, &label(true, run))?;
                ctx.record(q, layer.name(), medium, durability, fraction, true, run, m);
                ctx.bar.inc(1);
            }
        }
        ctx.progress.config_done(&config(true), &detail, t0.elapsed());
        #[cfg(feature = "sql")]
        if cfg.sql {
            let t0 = Instant::now();
            for run in 0..cfg.runs {
                for &q in &cfg.queries {
                    ctx.bar.set_message(format!("pool {pool_holds} cold {q} SQL"));
                    if medium == Medium::Disk {
                        nvpage_storage::file::evict_os_cache(&dir.join(DATA_FILE))?;
                    }
                    let db = std::sync::Arc::new(open()?);
                    let engine = super::sql::NvpageSql::new(db.clone(), cfg.threads)?;
                    let (rows, m) = measure_with(&db, || engine.run(q, cfg.sf))?;
                    engine.close();
                    drop(db);
                    ctx.checker.check_sql(q, &rows, &format!("{} (SQL)", label(true, run)))?;
                    ctx.record(q, &sql_name, medium, durability, fraction, true, run, m);
                    ctx.bar.inc(1);
                }
            }
            ctx.progress.config_done(&format!("{} (SQL)", config(true)), &detail, t0.elapsed());
        }
    }
    if cfg.warm {
        let t0 = Instant::now();
        let db = std::sync::Arc::new(open()?);
        for &q in &cfg.queries {
            ctx.bar.set_message(format!("pool {pool_holds} warm {q}"));
            // The warm-up, unmeasured.
            let (res, _) = measure(&db, q, cfg.threads)?;
            ctx.checker.check(q, &res, &format!("{} warm-up", label(false, 0)))?;
            ctx.bar.inc(1);
            for run in 0..cfg.runs {
                let (res, m) = measure(&db, q, cfg.threads)?;
                ctx.checker.check(q, &res, &label(false, run))?;
                ctx.record(q, layer.name(), medium, durability, fraction, false, run, m);
                ctx.bar.inc(1);
            }
        }
        ctx.progress.config_done(
            &config(false),
            &format!("{detail} after a warm-up"),
            t0.elapsed(),
        );
        #[cfg(feature = "sql")]
        if cfg.sql {
            let engine = super::sql::NvpageSql::new(db.clone(), cfg.threads)?;
            let what = format!("{} (SQL)", config(false));
            let rec = Rec { name: &sql_name, medium, durability, fraction };
            warm_sql(ctx, &db, &what, rec, |q| engine.run(q, cfg.sf))?;
            engine.close();
        }
        #[cfg(feature = "sql")]
        if std::mem::take(&mut ctx.in_memory_pending) {
            let engine = super::sql::InMemory::copy_of(db.clone(), cfg.threads)?;
            let rec = Rec { name: IN_MEMORY, medium, durability: "in memory", fraction };
            warm_sql(ctx, &db, "DataFusion over in-memory tables, warm", rec, |q| {
                engine.run(q, cfg.sf)
            })?;
        }
    }
    Ok(())
}

/// How a SQL engine's runs are recorded: under `name`, with the medium, the durability and the
/// pool size they ran with.
#[cfg(feature = "sql")]
struct Rec<'a> {
    name: &'a str,
    medium: Medium,
    durability: &'a str,
    fraction: f64,
}

/// Warm runs of every query's SQL through `run` (a warm-up, then the measured runs, `db`'s
/// counters read around each), every answer checked against the plans'; `what` names the
/// configuration in progress lines and errors.
#[cfg(feature = "sql")]
fn warm_sql(
    ctx: &mut Ctx<'_>,
    db: &Database,
    what: &str,
    rec: Rec<'_>,
    run: impl Fn(Query) -> Result<Vec<Vec<String>>, BoxError>,
) -> Result<(), BoxError> {
    let t0 = Instant::now();
    let cfg = ctx.cfg;
    for &q in &cfg.queries {
        ctx.bar.set_message(format!("{what}: {q}"));
        let (rows, _) = measure_with(db, || run(q))?;
        ctx.checker.check_sql(q, &rows, &format!("{what}, warm-up"))?;
        ctx.bar.inc(1);
        for i in 0..cfg.runs {
            let (rows, m) = measure_with(db, || run(q))?;
            ctx.checker.check_sql(q, &rows, &format!("{what}, run {i}"))?;
            ctx.record(q, rec.name, rec.medium, rec.durability, rec.fraction, false, i, m);
            ctx.bar.inc(1);
        }
    }
    let detail = format!("{} queries × {} run(s) after a warm-up", cfg.queries.len(), cfg.runs);
    ctx.progress.config_done(what, &detail, t0.elapsed());
    Ok(())
}

/// The layer name of DataFusion's runs over its in-memory tables (`--sql`).
pub const IN_MEMORY: &str = "datafusion";

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(columns: &[&str], rows: &[&[&str]]) -> QueryResult {
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        QueryResult { columns: own(columns), rows: rows.iter().map(|r| own(r)).collect() }
    }

    #[test]
    fn a_difference_is_shown_as_rows_are_printed() {
        let a = answer(&["flag", "sum"], &[&["A", "1.00"], &["R", "2.00"]]);
        let b = answer(&["flag", "sum"], &[&["A", "1.00"]]);
        assert_eq!(diff(&a, &b), "row 1: R | 2.00 vs no row");
        let c = answer(&["flag"], &[]);
        assert_eq!(diff(&a, &c), "columns flag | sum vs flag");
        assert_eq!(diff(&a, &a), "equal");
    }
}
