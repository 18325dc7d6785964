//! The refresh loop: pairs of refresh functions, RF1 then RF2 of the same set, run back to back
//! on one thread, each commit announced in the [`History`] before its transaction begins.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nvpage::Database;

use super::functions::{Changed, Lookup, rf1, rf2};
use super::model::{Change, History};
use super::sets::{RefreshSet, RefreshSets};
use crate::BoxError;
use crate::cputime::{CpuTimes, OthersClock, OthersLoad};

/// When the refresh loop stops: always after a whole pair, so the database is back at its
/// loaded state.
#[derive(Clone, Copy, Debug)]
pub enum Until<'a> {
    /// After this many pairs.
    Pairs(u64),
    /// After the pair in progress when this much time has passed since the loop's epoch.
    Elapsed(Duration),
    /// After the pair in progress when the flag is set.
    Stopped(&'a AtomicBool),
}

/// The refresh loop's side: the database it writes, its sets, and where it announces commits.
#[derive(Clone, Copy, Debug)]
pub struct Writer<'a> {
    /// The database, whose only writer this is.
    pub db: &'a Database,
    /// Where the refresh sets come from.
    pub sets: &'a RefreshSets,
    /// Where each commit's change is announced.
    pub history: &'a History,
    /// How RF2 finds its rows.
    pub lookup: Lookup,
}

/// Which refresh function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    /// Insert a set.
    Rf1,
    /// Delete a set.
    Rf2,
}

/// One refresh function as the loop measured it.
#[derive(Clone, Copy, Debug)]
pub struct Timed {
    /// Which function.
    pub function: Function,
    /// The refresh set it inserted or deleted.
    pub set: u64,
    /// Its commit's number.
    pub commit: u64,
    /// When it began, in ms since the loop's epoch.
    pub start_ms: f64,
    /// Wall time from `begin_write` to the return of the durable commit.
    pub ms: f64,
    /// The loop thread's CPU time over it.
    pub cpu: CpuTimes,
    /// Rows it changed.
    pub changed: Changed,
    /// Memory held by old versions just after the commit.
    pub version_bytes_after: u64,
    /// Other processes' CPU meanwhile.
    pub others: OthersLoad,
}

impl Writer<'_> {
    /// Runs one refresh function on `set` as the next commit, announced first.
    fn function(&self, f: Function, set: &RefreshSet, epoch: Instant) -> Result<Timed, BoxError> {
        let commit = self.db.stats().commits + 1;
        let change = match f {
            Function::Rf1 => Change::Insert(set.index),
            Function::Rf2 => Change::Delete(set.index),
        };
        self.history.announce(commit, change);
        let others = OthersClock::start()?;
        let cpu0 = CpuTimes::thread_now()?;
        let start = Instant::now();
        let changed = match f {
            Function::Rf1 => rf1(self.db, set)?,
            Function::Rf2 => rf2(self.db, set, self.lookup)?,
        };
        let elapsed = start.elapsed();
        let cpu = CpuTimes::thread_now()?.since(cpu0);
        let others = others.stop(elapsed.as_secs_f64())?;
        let ms = elapsed.as_secs_f64() * 1e3;
        let after = self.db.stats();
        if after.commits != commit {
            return Err(format!(
                "refresh commit {commit} became {}: another writer committed",
                after.commits
            )
            .into());
        }
        Ok(Timed {
            function: f,
            set: set.index,
            commit,
            start_ms: start.duration_since(epoch).as_secs_f64() * 1e3,
            ms,
            cpu,
            changed,
            version_bytes_after: after.version_bytes,
            others,
        })
    }

    /// Runs pairs RF1(j), RF2(j) for j = `*next`, `*next + 1`, … until `until`; `started` is
    /// told just before the first transaction begins.
    pub fn pairs(
        &self,
        next: &mut u64,
        until: Until<'_>,
        epoch: Instant,
        started: Option<mpsc::Sender<()>>,
    ) -> Result<Vec<Timed>, BoxError> {
        let mut out = Vec::new();
        let mut started = started;
        let mut pairs = 0u64;
        loop {
            // Generated before the clock starts: the generator is not the engine's work.
            let set = self.sets.set(*next)?;
            if let Some(tx) = started.take() {
                let _ = tx.send(());
            }
            out.push(self.function(Function::Rf1, &set, epoch)?);
            out.push(self.function(Function::Rf2, &set, epoch)?);
            *next += 1;
            pairs += 1;
            let done = match until {
                Until::Pairs(n) => pairs >= n,
                Until::Elapsed(d) => epoch.elapsed() >= d,
                Until::Stopped(stop) => stop.load(Ordering::Acquire),
            };
            if done {
                return Ok(out);
            }
        }
    }
}
