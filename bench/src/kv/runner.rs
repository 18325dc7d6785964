//! The matrix: per medium and engine, the loads (each order into a database of its own), then
//! on the database loaded in random order, per pool size (nvpage) the reads — lookups and scans
//! on each thread count, cold and warm — and last the mix, which changes values. Every run's
//! answer is checked: reads and the one-thread mix against the checksum the model predicts,
//! every loaded and updated key against the model after the load and after the mix.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use indicatif::ProgressBar;
use nvpage::{DATA_FILE, LOG_FILE};
use serde::Serialize;

use super::args::{Config, LoadOrder};
use super::data::{key, value};
use super::engines::{Engine, Store};
use super::workload::{Model, Op, Stream, Workload, load_order, stream, zipf};
use super::zipf::Zipf;
use crate::BoxError;
use crate::cputime::CpuTimes;
use crate::dirs::check_medium;
use crate::machine::Machine;
use crate::tpch::Medium;
use crate::tpch::runner::bar;

/// The smallest pool, whatever the fraction: 64 pages of 8 KiB.
const MIN_POOL_BYTES: u64 = 64 * 8192;

/// The run number of the unmeasured warm-up run (its own seed).
const WARM_UP: u32 = u32::MAX;

/// One measured run: a line of the JSON's `runs`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Record {
    /// `load-sorted`, `lookup-uniform`, ...
    pub workload: String,
    /// `nvpage`, `lmdb`, `redb`, `sqlite`.
    pub engine: String,
    /// nvpage's layer, `-` for the others.
    pub layer: String,
    /// `disk` or `tmpfs`.
    pub medium: String,
    /// What the engine reads through: nvpage's pool, or the others' caches.
    pub cache: String,
    /// nvpage's pool as a fraction of its data file (`None` for the others, and for loads).
    pub pool_fraction: Option<f64>,
    /// Threads.
    pub threads: u32,
    /// `cold` or `warm`.
    pub pass: String,
    /// The run, from 0.
    pub run: u32,
    /// Operations: entries loaded, lookups, scans, or mix operations.
    pub ops: u64,
    /// Wall time of the run.
    pub wall_ms: f64,
    /// Operations per second.
    pub ops_per_s: f64,
    /// User CPU time of the process over the run (10 ms ticks).
    pub user_ms: f64,
    /// System CPU time of the process over the run.
    pub sys_ms: f64,
    /// Pages read from the file (nvpage: pool misses, copies on write, redirected reads).
    pub pages_read: Option<u64>,
    /// How the engine's commits are made durable and what they survive.
    pub durability: String,
}

/// What every run of one configuration shares.
struct Cell<'a> {
    engine: Engine,
    medium: Medium,
    pool: Option<f64>,
    dir: &'a Path,
    pool_bytes: u64,
}

/// The state of a run of the matrix.
struct Runner<'a> {
    cfg: &'a Config,
    zipf: Zipf,
    /// Reads' streams and the checksums they must give (the data is as loaded when they run).
    reads: HashMap<(Workload, u32), (Stream, u64)>,
    records: Vec<Record>,
    durabilities: Vec<String>,
    progress: ProgressBar,
}

/// Runs the whole matrix of `cfg`; returns the records, the durability of each engine and
/// medium, and the machine (read before anything ran).
pub fn execute(cfg: &Config) -> Result<(Machine, Vec<Record>, Vec<String>), BoxError> {
    let machine = Machine::detect();
    for &medium in &cfg.media {
        let flag = format!("--dir-{}", medium.name());
        check_medium(cfg.dir(medium), medium == Medium::Tmpfs, &flag)?;
    }
    let mut r = Runner {
        cfg,
        zipf: zipf(cfg.entries),
        reads: HashMap::new(),
        records: Vec::new(),
        durabilities: Vec::new(),
        progress: bar(
            cfg.quiet,
            total_runs(cfg),
            "kv {prefix:>18} {msg:28} [{bar:30}] {pos}/{len} {eta}",
        ),
    };
    let orders: Vec<(LoadOrder, Vec<u64>)> =
        cfg.loads.iter().map(|&o| (o, load_order(cfg.entries, o == LoadOrder::Sorted))).collect();
    for &medium in &cfg.media {
        let base = tempfile::Builder::new()
            .prefix("nvpage-kv-")
            .tempdir_in(cfg.dir(medium))
            .map_err(|e| format!("{}: {e}", cfg.dir(medium).display()))?;
        for &engine in &cfg.engines {
            r.progress.set_prefix(format!("{}/{}", engine.label(), medium.name()));
            let dir = base.path().join(engine.label().replace('/', "-"));
            r.engine(engine, medium, &dir, &orders)?;
            std::fs::remove_dir_all(&dir)?;
        }
    }
    r.progress.finish_and_clear();
    Ok((machine, r.records, r.durabilities))
}

/// Progress steps: every load and every run, warm-ups included.
fn total_runs(cfg: &Config) -> u64 {
    let per_pass = u64::from(cfg.runs) * (1 + u64::from(cfg.cold)) + 1;
    let cells: u64 = cfg
        .engines
        .iter()
        .map(|e| if e.has_pool() { cfg.pool_fractions.len() as u64 } else { 1 })
        .sum();
    let per_medium = cfg.engines.len() as u64 * cfg.loads.len() as u64
        + cells * cfg.workloads.len() as u64 * cfg.threads.len() as u64 * per_pass;
    per_medium * cfg.media.len() as u64
}

/// Bytes of the database in `dir`: its files, nvpage's log aside.
fn data_bytes(dir: &Path) -> Result<u64, BoxError> {
    let mut total = 0;
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if e.file_name() != LOG_FILE && e.file_type()?.is_file() {
            total += e.metadata()?.len();
        }
    }
    Ok(total)
}

/// Drops every file of `dir` from the OS page cache (a cold run on disk).
fn evict(dir: &Path) -> Result<(), BoxError> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if e.file_type()?.is_file() {
            nvpage_storage::file::evict_os_cache(&e.path())?;
        }
    }
    Ok(())
}

/// A stored value for a message: its text in quotes (the values are ASCII; anything else is
/// shown as the replacement character).
fn value_text(v: &[u8]) -> String {
    format!("'{}'", String::from_utf8_lossy(v))
}

/// Fails unless `store` holds what `model` says for a sample of `verify` keys (every key of a
/// small data set), for every updated key, and holds nothing for a key never loaded.
pub fn verify(
    store: &dyn Store,
    model: &Model,
    n: u64,
    verify: u64,
    label: &str,
) -> Result<(), BoxError> {
    let step = (n / verify.max(1)).max(1);
    let sample = (0..n).step_by(step as usize).map(key).chain(std::iter::once(key(n - 1)));
    let updated: Vec<u64> = model.updated().map(|(k, _)| k).collect();
    for k in sample.chain(updated) {
        let want = value(k, model.version(k));
        match store.get(k)? {
            Some(v) if v == want => {}
            got => {
                let held = got.map_or("nothing".into(), |v| value_text(&v));
                return Err(format!(
                    "{label}: key {k:#x} holds {held}, the model says {}",
                    value_text(&want)
                )
                .into());
            }
        }
    }
    // Item n was never loaded, and `key` is a bijection: its key is no loaded key's.
    if let Some(v) = store.get(key(n))? {
        let held = value_text(&v);
        return Err(format!("{label}: key {:#x} was never loaded, yet holds {held}", key(n)).into());
    }
    Ok(())
}

impl Runner<'_> {
    /// One engine on one medium: loads, reads per pool, mixes per pool, the final check.
    fn engine(
        &mut self,
        engine: Engine,
        medium: Medium,
        dir: &Path,
        orders: &[(LoadOrder, Vec<u64>)],
    ) -> Result<(), BoxError> {
        let cfg = self.cfg;
        let n = cfg.entries;
        let mut model = Model::new(n);
        std::fs::create_dir_all(dir)?;
        let kept = cfg.kept_load();
        // Loads run with a pool as large as the data (about 200 bytes an entry with the index).
        let load_pool = (n * 256).max(MIN_POOL_BYTES);
        for (order, keys) in orders {
            let sub = dir.join(order.name());
            let workload = if *order == LoadOrder::Sorted {
                Workload::LoadSorted
            } else {
                Workload::LoadRandom
            };
            self.progress.set_message(workload.name());
            let cell = Cell { engine, medium, pool: None, dir: &sub, pool_bytes: load_pool };
            let store = engine.open(&sub, medium, load_pool, n)?;
            self.note_durability(&*store, engine, medium);
            let (wall, cpu, pages) = timed(&*store, || store.load(keys))?;
            self.record(&cell, workload, 1, "warm", 0, n, wall, cpu, pages, &*store);
            verify(
                &*store,
                &model,
                n,
                cfg.verify,
                &format!("{} after {}", engine.label(), workload.name()),
            )?;
            drop(store);
            if *order != kept {
                std::fs::remove_dir_all(&sub)?;
            }
            self.progress.inc(1);
        }
        let db = dir.join(kept.name());
        let data =
            if engine.has_pool() { db.join(DATA_FILE).metadata()?.len() } else { data_bytes(&db)? };
        let pools: Vec<Option<f64>> = if engine.has_pool() {
            cfg.pool_fractions.iter().map(|&f| Some(f)).collect()
        } else {
            vec![None]
        };
        let (reads, mixes): (Vec<Workload>, Vec<Workload>) =
            cfg.workloads.iter().partition(|&&w| w != Workload::Mix);
        for phase in [reads, mixes] {
            for &pool in &pools {
                let pool_bytes = pool.map_or(0, |f| ((data as f64 * f) as u64).max(MIN_POOL_BYTES));
                let cell = Cell { engine, medium, pool, dir: &db, pool_bytes };
                for &w in &phase {
                    for &threads in &cfg.threads {
                        self.workload(&cell, w, threads as usize, &mut model)?;
                    }
                }
            }
        }
        let store = engine.open(&db, medium, MIN_POOL_BYTES, n)?;
        verify(&*store, &model, n, cfg.verify, &format!("{} at the end", engine.label()))
    }

    fn note_durability(&mut self, store: &dyn Store, engine: Engine, medium: Medium) {
        let d = format!("{} on {}: {}", engine.label(), medium.name(), store.durability());
        if !self.durabilities.contains(&d) {
            self.durabilities.push(d);
        }
    }

    /// Cold runs (if asked), then a warm-up and the warm runs, of `w` on `threads` threads.
    fn workload(
        &mut self,
        cell: &Cell<'_>,
        w: Workload,
        threads: usize,
        model: &mut Model,
    ) -> Result<(), BoxError> {
        let cfg = self.cfg;
        let open = || cell.engine.open(cell.dir, cell.medium, cell.pool_bytes, cfg.entries);
        let pool = cell.pool.map_or(String::new(), |f| format!(" pool {f}"));
        if cfg.cold {
            for run in 0..cfg.runs {
                self.progress.set_message(format!("{}{pool} ×{threads} cold", w.name()));
                if cell.medium == Medium::Disk {
                    evict(cell.dir)?;
                }
                let store = open()?;
                self.one(cell, &*store, w, threads, "cold", run, model)?;
            }
        }
        let store = open()?;
        self.progress.set_message(format!("{}{pool} ×{threads} warm", w.name()));
        self.one(cell, &*store, w, threads, "warm-up", WARM_UP, model)?;
        for run in 0..cfg.runs {
            self.one(cell, &*store, w, threads, "warm", run, model)?;
        }
        Ok(())
    }

    /// One run: its stream, the checksum it must give, the measurement, the record.
    #[allow(clippy::too_many_arguments)]
    fn one(
        &mut self,
        cell: &Cell<'_>,
        store: &dyn Store,
        w: Workload,
        threads: usize,
        pass: &str,
        run: u32,
        model: &mut Model,
    ) -> Result<(), BoxError> {
        let cfg = self.cfg;
        let (s, want) = if w == Workload::Mix {
            let mut s = stream(w, run, cfg.entries, cfg.ops(w), &self.zipf);
            if let Stream::Mix(ops) = &mut s {
                model.number(ops);
            }
            let want = model.run(&s, threads);
            (s, want)
        } else {
            let (zipf, n, ops) = (&self.zipf, cfg.entries, cfg.ops(w));
            let (s, want) = self.reads.entry((w, run)).or_insert_with(|| {
                let s = stream(w, run, n, ops, zipf);
                let want = model.run(&s, threads).unwrap_or_default();
                (s, want)
            });
            (s.clone(), Some(*want))
        };
        let (wall, cpu, pages, got) = measure(store, &s, threads)?;
        if let Some(want) = want.filter(|&want| want != got) {
            return Err(format!(
                "{} on {}, {} ×{threads} {pass} run {run}: checksum {got:#x}, the model says \
                 {want:#x}: the engine returned wrong values",
                cell.engine.label(),
                cell.medium.name(),
                w.name()
            )
            .into());
        }
        if run != WARM_UP {
            self.record(
                cell,
                w,
                threads as u32,
                pass,
                run,
                cfg.ops(w) as u64,
                wall,
                cpu,
                pages,
                store,
            );
        }
        self.progress.inc(1);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        cell: &Cell<'_>,
        w: Workload,
        threads: u32,
        pass: &str,
        run: u32,
        ops: u64,
        wall_s: f64,
        cpu: CpuTimes,
        pages_read: Option<u64>,
        store: &dyn Store,
    ) {
        self.records.push(Record {
            workload: w.name().into(),
            engine: cell.engine.name().into(),
            layer: cell.engine.layer().into(),
            medium: cell.medium.name().into(),
            cache: cell.engine.cache(cell.pool),
            pool_fraction: cell.pool,
            threads,
            pass: pass.into(),
            run,
            ops,
            wall_ms: wall_s * 1e3,
            ops_per_s: ops as f64 / wall_s.max(1e-9),
            user_ms: cpu.user_ms(),
            sys_ms: cpu.sys_ms(),
            pages_read,
            durability: store.durability(),
        });
    }
}

/// Times `f`: wall seconds, CPU time, and the pages `store` read meanwhile.
fn timed(
    store: &dyn Store,
    f: impl FnOnce() -> Result<(), BoxError>,
) -> Result<(f64, CpuTimes, Option<u64>), BoxError> {
    let (p0, c0, t0) = (store.pages_read(), CpuTimes::now()?, Instant::now());
    f()?;
    let wall = t0.elapsed().as_secs_f64();
    let cpu = CpuTimes::now()?.since(c0);
    let pages = store.pages_read().zip(p0).map(|(a, b)| a - b);
    Ok((wall, cpu, pages))
}

/// Runs `s` on `threads` threads: reads split evenly among them; the mix on one thread runs in
/// order, on more has one writer doing the updates and the other threads the lookups. Returns
/// the time, the CPU, pages read and the checksum (the sum of every thread's).
fn measure(
    store: &dyn Store,
    s: &Stream,
    threads: usize,
) -> Result<(f64, CpuTimes, Option<u64>, u64), BoxError> {
    let mut sum = 0u64;
    let (wall, cpu, pages) = timed(store, || {
        sum = match s {
            Stream::Lookups(keys) => split(keys, threads, |part| store.lookups(part))?,
            Stream::Scans(starts) => split(starts, threads, |part| store.scans(part))?,
            Stream::Mix(ops) if threads == 1 => store.mix(ops)?,
            Stream::Mix(ops) => {
                let puts: Vec<Op> =
                    ops.iter().copied().filter(|o| matches!(o, Op::Put(..))).collect();
                let gets: Vec<u64> = ops
                    .iter()
                    .filter_map(|o| if let Op::Get(k) = o { Some(*k) } else { None })
                    .collect();
                std::thread::scope(|sc| {
                    let writer = sc.spawn(|| store.mix(&puts));
                    let read = split(&gets, threads - 1, |part| store.lookups(part));
                    let wrote = writer.join().map_err(|_| "the mix's writer thread panicked")?;
                    Ok::<u64, BoxError>(read?.wrapping_add(wrote?))
                })?
            }
        };
        Ok(())
    })?;
    Ok((wall, cpu, pages, sum))
}

/// Runs `f` on `threads` contiguous shares of `items`, one thread each (the calling thread
/// takes the first), and sums the results.
fn split<T: Sync>(
    items: &[T],
    threads: usize,
    f: impl Fn(&[T]) -> Result<u64, BoxError> + Sync,
) -> Result<u64, BoxError> {
    let per = items.len().div_ceil(threads.max(1)).max(1);
    let mut parts = items.chunks(per);
    let first = parts.next().unwrap_or(&[]);
    std::thread::scope(|sc| {
        let others: Vec<_> = parts.map(|p| sc.spawn(|| f(p))).collect();
        let mut sum = f(first)?;
        for h in others {
            sum = sum.wrapping_add(h.join().map_err(|_| "a reader thread panicked")??);
        }
        Ok(sum)
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use super::*;
    use crate::kv::data::digest;
    use crate::kv::workload::{SCAN_LEN, batches};

    /// An engine in memory, right but for one key whose value it gets wrong (if any).
    #[derive(Default)]
    struct Fake {
        map: Mutex<BTreeMap<u64, Vec<u8>>>,
        wrong: Option<u64>,
    }

    impl Fake {
        fn read(&self, k: u64) -> Vec<u8> {
            let mut v = self.map.lock().unwrap()[&k].clone();
            if Some(k) == self.wrong {
                v[30] ^= 1;
            }
            v
        }
    }

    impl Store for Fake {
        fn load(&self, keys: &[u64]) -> Result<(), BoxError> {
            let mut m = self.map.lock().unwrap();
            m.extend(keys.iter().map(|&k| (k, value(k, 0).to_vec())));
            Ok(())
        }
        fn lookups(&self, keys: &[u64]) -> Result<u64, BoxError> {
            Ok(keys.iter().fold(0, |a, &k| a.wrapping_add(digest(&self.read(k)))))
        }
        fn scans(&self, starts: &[u64]) -> Result<u64, BoxError> {
            let keys: Vec<Vec<u64>> = {
                let m = self.map.lock().unwrap();
                starts
                    .iter()
                    .map(|&s| m.range(s..).take(SCAN_LEN).map(|(&k, _)| k).collect())
                    .collect()
            };
            Ok(keys.iter().flatten().fold(0, |a, &k| a.wrapping_add(digest(&self.read(k)))))
        }
        fn mix(&self, ops: &[Op]) -> Result<u64, BoxError> {
            let mut sum = 0u64;
            for batch in batches(ops) {
                for op in batch {
                    match *op {
                        Op::Get(k) => sum = sum.wrapping_add(digest(&self.read(k))),
                        Op::Put(k, v) => {
                            self.map.lock().unwrap().insert(k, value(k, v).to_vec());
                        }
                    }
                }
            }
            Ok(sum)
        }
        fn durability(&self) -> String {
            "none: memory".into()
        }
        fn get(&self, key: u64) -> Result<Option<Vec<u8>>, BoxError> {
            let there = self.map.lock().unwrap().contains_key(&key);
            Ok(there.then(|| self.read(key)))
        }
    }

    fn loaded(n: u64, wrong: Option<u64>) -> Fake {
        let f = Fake { wrong, ..Fake::default() };
        f.load(&load_order(n, false)).unwrap();
        f
    }

    #[test]
    fn a_wrong_value_fails_the_check_and_names_its_key() {
        let n = 500;
        let model = Model::new(n);
        verify(&loaded(n, None), &model, n, n, "fake").unwrap();
        let bad = key(123);
        let e = verify(&loaded(n, Some(bad)), &model, n, n, "fake").unwrap_err().to_string();
        assert!(e.contains(&format!("{bad:#x}")), "{e}");
        // The values are quoted text, not a Rust `Some("…")`.
        assert!(e.contains("holds '") && !e.contains("Some("), "{e}");
    }

    #[test]
    fn checksums_equal_the_model_only_for_right_answers() {
        let n = 500;
        let z = zipf(n);
        for w in Workload::AFTER_LOAD {
            for threads in [1, 2] {
                let mut model = Model::new(n);
                let mut s = stream(w, 0, n, 300, &z);
                if let Stream::Mix(ops) = &mut s {
                    model.number(ops);
                }
                let want = model.run(&s, threads);
                let (_, _, _, got) = measure(&loaded(n, None), &s, threads).unwrap();
                if let Some(want) = want {
                    assert_eq!(got, want, "{w:?} ×{threads}");
                }
                // An engine that gets every key wrong that the stream reads first is caught.
                let first = match &s {
                    Stream::Lookups(k) | Stream::Scans(k) => k[0],
                    Stream::Mix(ops) => ops
                        .iter()
                        .find_map(|o| match o {
                            Op::Get(k) => Some(*k),
                            Op::Put(..) => None,
                        })
                        .unwrap(),
                };
                let (_, _, _, bad) = measure(&loaded(n, Some(first)), &s, threads).unwrap();
                if let Some(want) = want {
                    assert_ne!(bad, want, "{w:?} ×{threads}");
                }
            }
        }
    }
}
