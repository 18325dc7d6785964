//! The snapshot registry: the commit sequence `C`, the state each commit published (the engine's
//! catalog and page count, generic here as `T`), and the live readers' snapshots (DESIGN.md R5).
//!
//! Three steps are atomic with respect to one another, under one lock: a reader taking
//! `s = C` and registering ([`Snapshots::begin`]); the commit step, which publishes the new
//! state and raises `C` ([`Snapshots::commit`]); and freeing the versions no live reader can
//! need ([`Versions::collect`], run under the same lock at each commit step and each reader's
//! end). So a version a registered reader needs is never freed (except by the byte limit, which
//! the reader then learns through its horizon), and a reader that registers after a commit step
//! never needs a version freed before it.
//!
//! Lock order: a page latch, then this registry, then the version store. Nothing here waits
//! for a page latch.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::sync::Mutex;
use crate::versions::Versions;

#[derive(Debug)]
struct State<T> {
    /// Commit points passed since open.
    seq: u64,
    /// What the last commit published.
    current: Arc<T>,
    /// Live readers per snapshot.
    readers: BTreeMap<u64, usize>,
}

/// What the registry holds right now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SnapshotStats {
    /// Commit points passed since open.
    pub commits: u64,
    /// Live read transactions.
    pub readers: u64,
    /// How many commits the oldest live snapshot is behind the last one (0 with no reader).
    pub oldest_age: u64,
}

/// The snapshot registry (see the module's notes).
#[derive(Debug)]
pub struct Snapshots<T> {
    state: Mutex<State<T>>,
}

impl<T> Snapshots<T> {
    /// A registry at commit 0 whose state is `initial`.
    pub fn new(initial: T) -> Self {
        Self {
            state: Mutex::new(State {
                seq: 0,
                current: Arc::new(initial),
                readers: BTreeMap::new(),
            }),
        }
    }

    /// Takes a snapshot: `(s, the state as of commit s)`, registered until [`Self::end`].
    pub fn begin(&self) -> (u64, Arc<T>) {
        let mut g = self.state.lock();
        let s = g.seq;
        *g.readers.entry(s).or_default() += 1;
        (s, g.current.clone())
    }

    /// Ends snapshot `s` (taken by [`Self::begin`]) and frees the versions nobody needs now.
    pub fn end(&self, s: u64, versions: &Versions) {
        let mut g = self.state.lock();
        match g.readers.get_mut(&s) {
            Some(n) if *n > 1 => *n -= 1,
            Some(_) => {
                g.readers.remove(&s);
            }
            None => debug_assert!(false, "snapshot {s} ended twice"),
        }
        Self::collect(&g, versions);
    }

    /// The commit step: publishes `next` as commit `C + 1`, raises `C`, and frees the versions
    /// nobody needs now. The caller is the one writer, past its commit point.
    pub fn commit(&self, next: T, versions: &Versions) {
        let mut g = self.state.lock();
        g.seq += 1;
        g.current = Arc::new(next);
        Self::collect(&g, versions);
    }

    /// Frees under the registry's lock: every version of a commit no live reader's snapshot is
    /// below.
    fn collect(g: &State<T>, versions: &Versions) {
        let oldest = g.readers.first_key_value().map_or(g.seq, |(&s, _)| s);
        versions.collect(oldest, g.seq);
    }

    /// Commit points passed since open (`C`).
    pub fn seq(&self) -> u64 {
        self.state.lock().seq
    }

    /// The state the last commit published.
    pub fn current(&self) -> Arc<T> {
        self.state.lock().current.clone()
    }

    /// [`Self::current`], [`Self::seq`] and [`Self::oldest`] read together, under one lock
    /// (what a write transaction begins from).
    pub fn writer_view(&self) -> (Arc<T>, u64, Option<u64>) {
        let g = self.state.lock();
        (g.current.clone(), g.seq, g.readers.first_key_value().map(|(&s, _)| s))
    }

    /// The oldest live snapshot, if a reader is live.
    pub fn oldest(&self) -> Option<u64> {
        self.state.lock().readers.first_key_value().map(|(&s, _)| s)
    }

    /// What the registry holds.
    pub fn stats(&self) -> SnapshotStats {
        let g = self.state.lock();
        let oldest = g.readers.first_key_value().map_or(g.seq, |(&s, _)| s);
        SnapshotStats {
            commits: g.seq,
            readers: g.readers.values().map(|&n| n as u64).sum(),
            oldest_age: g.seq - oldest,
        }
    }
}
