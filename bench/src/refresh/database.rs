//! Everything measured on one database: the loaded answers (the model's sums), a warm-up pair,
//! then per run the queries alone, the refresh loop alone, and the queries beside the loop.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use nvpage::{Database, Layer, ReadOps};

use super::functions::Lookup;
use super::model::{History, Model, Partial};
use super::records::{DatabaseRecord, QueryRun, RefreshRun};
use super::sets::RefreshSets;
use super::writer::{Function, Timed, Until, Writer};
use crate::BoxError;
use crate::cputime::{CpuTimes, OthersClock, OthersLoad};
use crate::tpch::Medium;
use crate::tpch::queries::{Query, QueryResult};
use crate::tpch::runner::{Checker, diff};

/// The tables the refresh functions change.
pub const REFRESHED: [&str; 2] = ["orders", "lineitem"];

/// What every database adds to the report.
#[derive(Debug, Default)]
pub struct Sink {
    /// The first answer of each query: every database's loaded answers must equal it.
    pub checker: Checker,
    /// Every measured query.
    pub queries: Vec<QueryRun>,
    /// Every refresh transaction.
    pub refreshes: Vec<RefreshRun>,
    /// One line per database.
    pub databases: Vec<DatabaseRecord>,
}

/// One query, measured and checked against its snapshot's state.
#[derive(Debug)]
struct Measured {
    wall_ms: f64,
    cpu: CpuTimes,
    snapshot: u64,
    sets: Vec<u64>,
    commits_during: u64,
    version_reads: u64,
    latch_waits: u64,
    latch_wait_ns: u64,
    versions_at_end: u64,
    version_bytes_at_end: u64,
    others: OthersLoad,
    start_ms: f64,
    end_ms: f64,
}

/// Runs `q` once in a fresh read transaction on this thread (one scan thread), measures it, and
/// checks its answer against the state of its snapshot; `epoch` is the phase's clock origin.
fn measure(
    db: &Database,
    q: Query,
    model: &mut Model,
    history: &History,
    epoch: Instant,
) -> Result<Measured, BoxError> {
    let c0 = db.counters();
    let others = OthersClock::start()?;
    let cpu0 = CpuTimes::thread_now()?;
    let t0 = Instant::now();
    let rx = db.begin_read()?;
    let res = q.run(&rx, 1)?;
    // Read while the snapshot is live: what the versions cost while a query needs them.
    let stats = db.stats();
    let snapshot = rx.snapshot();
    drop(rx);
    let end = Instant::now();
    let cpu = CpuTimes::thread_now()?.since(cpu0);
    let others = others.stop(end.duration_since(t0).as_secs_f64())?;
    let c1 = db.counters();
    let sets = history.sets_at(snapshot);
    let want = model.expected(q, &sets)?;
    check_snapshot(q, snapshot, &sets, &want, &res)?;
    Ok(Measured {
        wall_ms: end.duration_since(t0).as_secs_f64() * 1e3,
        cpu,
        snapshot,
        sets,
        commits_during: stats.commits - snapshot,
        version_reads: c1.version_reads - c0.version_reads,
        latch_waits: c1.latch_waits - c0.latch_waits,
        latch_wait_ns: c1.latch_wait_ns - c0.latch_wait_ns,
        versions_at_end: stats.versions,
        version_bytes_at_end: stats.version_bytes,
        others,
        start_ms: t0.duration_since(epoch).as_secs_f64() * 1e3,
        end_ms: end.duration_since(epoch).as_secs_f64() * 1e3,
    })
}

/// Fails unless `got` is the answer of the state of `snapshot`.
fn check_snapshot(
    q: Query,
    snapshot: u64,
    sets: &[u64],
    want: &QueryResult,
    got: &QueryResult,
) -> Result<(), BoxError> {
    if want == got {
        return Ok(());
    }
    Err(format!(
        "{q}: a reader of snapshot {snapshot} (refresh sets {} present) got an answer that is \
         not that snapshot's: {}",
        list(sets),
        diff(want, got)
    )
    .into())
}

/// Row counts of the refreshed tables in a fresh snapshot.
/// `items` for a message: "1, 2, 3", or "none".
fn list(items: &[u64]) -> String {
    if items.is_empty() {
        return "none".into();
    }
    items.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
}

/// Row counts by table for a message: "lineitem 60175, orders 15000".
pub fn counts_text(counts: &BTreeMap<String, u64>) -> String {
    counts.iter().map(|(t, n)| format!("{t} {n}")).collect::<Vec<_>>().join(", ")
}

pub fn row_counts(db: &Database) -> Result<BTreeMap<String, u64>, BoxError> {
    let rx = db.begin_read()?;
    let mut out = BTreeMap::new();
    for t in REFRESHED {
        out.insert(t.to_string(), rx.row_count(&rx.table(t)?)?);
    }
    Ok(out)
}

/// Names the layer, medium and durability of every record of one database.
#[derive(Clone, Copy, Debug)]
struct Label<'a> {
    layer: Layer,
    medium: Medium,
    durability: &'a str,
}

impl Label<'_> {
    fn query(&self, q: Query, mode: &str, run: u32, m: &Measured) -> QueryRun {
        QueryRun {
            query: q.name(),
            layer: self.layer.name().into(),
            medium: self.medium.name().into(),
            durability: self.durability.into(),
            mode: mode.into(),
            run,
            wall_ms: m.wall_ms,
            user_ms: m.cpu.user_ms(),
            sys_ms: m.cpu.sys_ms(),
            snapshot: m.snapshot,
            sets_in_snapshot: m.sets.clone(),
            commits_during: m.commits_during,
            version_reads: m.version_reads,
            latch_waits: m.latch_waits,
            latch_wait_ns: m.latch_wait_ns,
            versions_at_end: m.versions_at_end,
            version_bytes_at_end: m.version_bytes_at_end,
            others_cores: m.others.cores,
            others_niced_cores: m.others.niced_cores,
        }
    }

    fn refresh(&self, t: &Timed, mode: &str, run: u32) -> RefreshRun {
        RefreshRun {
            function: match t.function {
                Function::Rf1 => "rf1",
                Function::Rf2 => "rf2",
            }
            .into(),
            set: t.set,
            layer: self.layer.name().into(),
            medium: self.medium.name().into(),
            durability: self.durability.into(),
            mode: mode.into(),
            run,
            commit: t.commit,
            start_ms: t.start_ms,
            ms: t.ms,
            user_ms: t.cpu.user_ms(),
            sys_ms: t.cpu.sys_ms(),
            orders: t.changed.orders,
            lineitems: t.changed.lineitems,
            version_bytes_after: t.version_bytes_after,
            others_cores: t.others.cores,
            others_niced_cores: t.others.niced_cores,
        }
    }
}

/// One database under measurement.
#[derive(Debug)]
pub struct OneDatabase<'a> {
    db: &'a Database,
    label: Label<'a>,
    queries: &'a [Query],
    model: Model,
    history: &'a History,
    sets: &'a RefreshSets,
    lookup: Lookup,
    /// The next refresh set.
    next: u64,
    checks: u64,
    checks_with_sets: u64,
    peak_version_bytes: u64,
}

impl<'a> OneDatabase<'a> {
    /// Takes the loaded database's sums and answers (checked against the answers of the
    /// databases before it in `sink`, and at SF 1 against TPC-H's answer set), then runs one
    /// refresh pair to warm the writer up.
    #[allow(clippy::too_many_arguments)]
    pub fn warm_up(
        db: &'a Database,
        layer: Layer,
        medium: Medium,
        durability: &'a str,
        queries: &'a [Query],
        sets: &'a RefreshSets,
        lookup: Lookup,
        history: &'a History,
        sf: f64,
        sink: &mut Sink,
    ) -> Result<Self, BoxError> {
        let label = Label { layer, medium, durability };
        let mut model = Model::new(*sets);
        for &q in queries {
            let rx = db.begin_read()?;
            let sums = Partial::of_db(q, &rx)?;
            let answer = q.run(&rx, 1)?;
            drop(rx);
            if answer != sums.answer() {
                return Err(format!("{q}: the query's answer differs from its own sums'").into());
            }
            if sf == 1.0
                && let Some(d) = crate::tpch::answers::check_sf1(q, &answer)
            {
                return Err(format!("{q}: differs from TPC-H's SF 1 answer set: {d}").into());
            }
            sink.checker.check(q, &answer, &format!("{layer}/{}, loaded", medium.name()))?;
            model.set_base(q, sums);
        }
        let mut me = Self {
            db,
            label,
            queries,
            model,
            history,
            sets,
            lookup,
            next: 0,
            checks: 0,
            checks_with_sets: 0,
            peak_version_bytes: 0,
        };
        let timed = me.writer().pairs(&mut me.next, Until::Pairs(1), Instant::now(), None)?;
        me.record_refreshes(sink, &timed, 0, |_| "warm-up");
        Ok(me)
    }

    fn writer(&self) -> Writer<'a> {
        Writer { db: self.db, sets: self.sets, history: self.history, lookup: self.lookup }
    }

    fn record_refreshes(
        &mut self,
        sink: &mut Sink,
        timed: &[Timed],
        run: u32,
        mode: impl Fn(&Timed) -> &'static str,
    ) {
        for t in timed {
            self.peak_version_bytes = self.peak_version_bytes.max(t.version_bytes_after);
            sink.refreshes.push(self.label.refresh(t, mode(t), run));
        }
    }

    fn record_query(&mut self, sink: &mut Sink, q: Query, mode: &str, run: u32, m: &Measured) {
        self.peak_version_bytes = self.peak_version_bytes.max(m.version_bytes_at_end);
        self.checks += 1;
        self.checks_with_sets += u64::from(!m.sets.is_empty());
        sink.queries.push(self.label.query(q, mode, run, m));
    }

    /// One run: every query alone, the loop alone for as long, every query beside the loop.
    pub fn run(&mut self, sink: &mut Sink, run: u32) -> Result<(), BoxError> {
        let epoch = Instant::now();
        for &q in self.queries {
            let m = measure(self.db, q, &mut self.model, self.history, epoch)?;
            self.record_query(sink, q, "alone", run, &m);
        }
        let took = epoch.elapsed();
        let timed =
            self.writer().pairs(&mut self.next, Until::Elapsed(took), Instant::now(), None)?;
        self.record_refreshes(sink, &timed, run, |_| "alone");
        self.beside(sink, run)
    }

    /// Every query on this thread while the refresh loop runs on another; the loop stops after
    /// the pair it is in when the last query ends.
    fn beside(&mut self, sink: &mut Sink, run: u32) -> Result<(), BoxError> {
        let stop = AtomicBool::new(false);
        let (started_tx, started_rx) = mpsc::channel();
        let epoch = Instant::now();
        let (writer, first) = (self.writer(), self.next);
        let (db, history, model, queries) = (self.db, self.history, &mut self.model, self.queries);
        let (measured, looped) = std::thread::scope(|s| {
            let stop = &stop;
            let looper = s.spawn(move || {
                let mut next = first;
                let r = writer.pairs(&mut next, Until::Stopped(stop), epoch, Some(started_tx));
                r.map(|t| (t, next))
            });
            // The loop is about to begin its first transaction (or has failed).
            let _ = started_rx.recv();
            let mut measured = Vec::new();
            let r = queries.iter().try_for_each(|&q| -> Result<(), BoxError> {
                measured.push((q, measure(db, q, model, history, epoch)?));
                Ok(())
            });
            stop.store(true, Ordering::Release);
            let looped = looper.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            (r.map(|()| measured), looped)
        });
        let measured = measured?;
        let (timed, next) = looped?;
        self.next = next;
        for (q, m) in &measured {
            self.record_query(sink, *q, "beside", run, m);
        }
        // Counted beside the queries: the functions that began and committed while they ran.
        let from = measured.first().map_or(0.0, |(_, m)| m.start_ms);
        let to = measured.last().map_or(0.0, |(_, m)| m.end_ms);
        self.record_refreshes(sink, &timed, run, |t| {
            if t.start_ms >= from && t.start_ms + t.ms <= to { "beside" } else { "edge" }
        });
        Ok(())
    }

    /// Checks the loaded answers once more (every set is deleted by now) and the row counts,
    /// and returns the database's line.
    pub fn finish(
        mut self,
        rows_loaded: &BTreeMap<String, u64>,
        pool_bytes: u64,
        data_bytes_start: u64,
    ) -> Result<DatabaseRecord, BoxError> {
        for &q in self.queries {
            measure(self.db, q, &mut self.model, self.history, Instant::now())?;
            self.checks += 1;
        }
        let l = self.label;
        Ok(DatabaseRecord {
            layer: l.layer.name().into(),
            medium: l.medium.name().into(),
            durability: l.durability.into(),
            pool_bytes,
            rows_loaded: rows_loaded.clone(),
            rows_after: row_counts(self.db)?,
            rf2: self.lookup.name().into(),
            data_bytes_start,
            data_bytes_after: self.db.page_count() * self.db.page_size() as u64,
            refresh_pairs: self.next,
            snapshot_checks: self.checks,
            snapshot_checks_with_sets: self.checks_with_sets,
            peak_version_bytes: self.peak_version_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_sets_read_as_words() {
        let counts: BTreeMap<String, u64> =
            [("lineitem".to_string(), 60), ("orders".to_string(), 15)].into();
        assert_eq!(counts_text(&counts), "lineitem 60, orders 15");
        assert_eq!(list(&[1, 2]), "1, 2");
        assert_eq!(list(&[]), "none");
    }
}
