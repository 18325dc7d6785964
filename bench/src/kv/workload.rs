//! What a measured run does: the workloads, their operation streams (drawn from a seed, so every
//! engine gets the very same keys), and the model that says what each read must return.

use std::collections::HashMap;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use super::data::{digest, key, value};
use super::zipf::{THETA, Zipf};

/// Operations per transaction: reads take a fresh read transaction every `BATCH` lookups or
/// scans, and the mix commits (durably) after every `BATCH` updates.
pub const BATCH: usize = 100;

/// Entries one range scan reads.
pub const SCAN_LEN: usize = 100;

/// A measured workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Workload {
    /// Every entry inserted in key order, in one write transaction, then its durable commit.
    #[serde(rename = "load-sorted")]
    LoadSorted,
    /// Every entry inserted in a random order, in one write transaction, then its commit.
    #[serde(rename = "load-random")]
    LoadRandom,
    /// Point lookups of uniformly drawn keys.
    #[serde(rename = "lookup-uniform")]
    LookupUniform,
    /// Point lookups of Zipfian (θ = 0.99, scrambled) keys.
    #[serde(rename = "lookup-zipf")]
    LookupZipf,
    /// Range scans of [`SCAN_LEN`] entries from a uniformly drawn key.
    #[serde(rename = "scan-100")]
    Scan,
    /// Half lookups, half updates of Zipfian keys (YCSB's workload A), a durable commit per
    /// [`BATCH`] updates.
    #[serde(rename = "mix-50/50")]
    Mix,
}

impl Workload {
    /// The measured workloads after the loads, in the order they run (the mix last: it changes
    /// values, and every read before it checks the loaded ones).
    pub const AFTER_LOAD: [Workload; 4] =
        [Workload::LookupUniform, Workload::LookupZipf, Workload::Scan, Workload::Mix];

    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Workload::LoadSorted => "load-sorted",
            Workload::LoadRandom => "load-random",
            Workload::LookupUniform => "lookup-uniform",
            Workload::LookupZipf => "lookup-zipf",
            Workload::Scan => "scan-100",
            Workload::Mix => "mix-50/50",
        }
    }

    /// Whether it writes (its figures then name a durability).
    pub fn writes(self) -> bool {
        matches!(self, Workload::LoadSorted | Workload::LoadRandom | Workload::Mix)
    }

    fn seed(self) -> u64 {
        self as u64 + 1
    }
}

/// One operation of the mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Read the value of this key.
    Get(u64),
    /// Give this key the value of this version.
    Put(u64, u32),
}

/// The operations of one run: which run (`run`, or `u32::MAX` for the warm-up) picks the seed.
#[derive(Clone, Debug)]
pub enum Stream {
    /// Keys to look up.
    Lookups(Vec<u64>),
    /// Keys each scan starts at.
    Scans(Vec<u64>),
    /// The mix's operations.
    Mix(Vec<Op>),
}

/// Draws the operations of `workload`'s run `run` over `n` items: `ops` lookups, scans or mix
/// operations. The mix's versions are left 0: [`Model::number`] gives them theirs.
pub fn stream(workload: Workload, run: u32, n: u64, ops: usize, zipf: &Zipf) -> Stream {
    let mut rng = SmallRng::seed_from_u64(workload.seed() << 32 | u64::from(run));
    let mut uniform = || key(rng.random_range(0..n));
    match workload {
        Workload::LookupUniform => Stream::Lookups((0..ops).map(|_| uniform()).collect()),
        Workload::Scan => Stream::Scans((0..ops).map(|_| uniform()).collect()),
        Workload::LookupZipf => {
            Stream::Lookups((0..ops).map(|_| key(zipf.sample(&mut rng))).collect())
        }
        Workload::Mix => Stream::Mix(
            (0..ops)
                .map(|_| {
                    let k = key(zipf.sample(&mut rng));
                    if rng.random_bool(0.5) { Op::Get(k) } else { Op::Put(k, 0) }
                })
                .collect(),
        ),
        Workload::LoadSorted | Workload::LoadRandom => Stream::Lookups(Vec::new()),
    }
}

/// The key order of a load: every key once, sorted or shuffled.
pub fn load_order(n: u64, sorted: bool) -> Vec<u64> {
    let mut ks = super::data::keys(n);
    if sorted {
        ks.sort_unstable();
    } else {
        let mut rng = SmallRng::seed_from_u64(0x6b76);
        for i in (1..ks.len()).rev() {
            ks.swap(i, rng.random_range(0..=i));
        }
    }
    ks
}

/// The mix's operations in transactions: each slice ends with its [`BATCH`]-th update (the
/// last may hold fewer).
pub fn batches(ops: &[Op]) -> impl Iterator<Item = &[Op]> {
    let mut rest = ops;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut puts = 0;
        let end = rest
            .iter()
            .position(|op| {
                puts += usize::from(matches!(op, Op::Put(..)));
                puts == BATCH
            })
            .map_or(rest.len(), |i| i + 1);
        let (batch, tail) = rest.split_at(end);
        rest = tail;
        Some(batch)
    })
}

/// What one database holds, as its history of updates says: each key's version (0 unless
/// updated), and the keys in order for scans.
#[derive(Debug)]
pub struct Model {
    sorted: Vec<u64>,
    versions: HashMap<u64, u32>,
    next: u32,
}

impl Model {
    /// The loaded database over `n` items.
    pub fn new(n: u64) -> Model {
        Model { sorted: load_order(n, true), versions: HashMap::new(), next: 1 }
    }

    /// The version `key` holds.
    pub fn version(&self, key: u64) -> u32 {
        self.versions.get(&key).copied().unwrap_or(0)
    }

    /// Gives each update of `ops` the next version number, in order.
    pub fn number(&mut self, ops: &mut [Op]) {
        for op in ops {
            if let Op::Put(_, v) = op {
                *v = self.next;
                self.next += 1;
            }
        }
    }

    /// The checksum a run of `stream` must return, applying its updates to the model; `None`
    /// where it cannot be known (a mix on two threads: what its reader sees depends on timing).
    pub fn run(&mut self, stream: &Stream, threads: usize) -> Option<u64> {
        let read = |m: &Model, k: u64| digest(&value(k, m.version(k)));
        match stream {
            Stream::Lookups(keys) => {
                Some(keys.iter().fold(0, |a, &k| a.wrapping_add(read(self, k))))
            }
            Stream::Scans(starts) => Some(starts.iter().fold(0u64, |a, &s| {
                let from = self.sorted.partition_point(|&k| k < s);
                let end = (from + SCAN_LEN).min(self.sorted.len());
                self.sorted[from..end].iter().fold(a, |a, &k| a.wrapping_add(read(self, k)))
            })),
            Stream::Mix(ops) => {
                let mut sum = 0u64;
                for op in ops {
                    match *op {
                        Op::Get(k) => sum = sum.wrapping_add(read(self, k)),
                        Op::Put(k, v) => {
                            self.versions.insert(k, v);
                        }
                    }
                }
                (threads == 1).then_some(sum)
            }
        }
    }

    /// Keys the updates changed, with their versions.
    pub fn updated(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.versions.iter().map(|(&k, &v)| (k, v))
    }
}

/// A scan's share of the checksum: the digests of the entries it read.
pub fn fold_scan<'v>(acc: u64, values: impl Iterator<Item = &'v [u8]>) -> u64 {
    values.fold(acc, |a, v| a.wrapping_add(digest(v)))
}

/// The zipf generator for `n` items.
pub fn zipf(n: u64) -> Zipf {
    Zipf::new(n, THETA)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_end_at_every_hundredth_update() {
        let mut ops = Vec::new();
        for i in 0..250u64 {
            ops.push(Op::Get(i));
            ops.push(Op::Put(i, 0));
        }
        let b: Vec<&[Op]> = batches(&ops).collect();
        assert_eq!(b.iter().map(|b| b.len()).collect::<Vec<_>>(), [200, 200, 100]);
        assert!(b.iter().all(|b| matches!(b.last(), Some(Op::Put(..)))));
        assert_eq!(batches(&[Op::Get(1)]).count(), 1);
        assert_eq!(batches(&[]).count(), 0);
    }

    #[test]
    fn streams_repeat_for_a_run_and_differ_between_runs() {
        let z = zipf(1000);
        let a = stream(Workload::LookupZipf, 0, 1000, 100, &z);
        let b = stream(Workload::LookupZipf, 0, 1000, 100, &z);
        let c = stream(Workload::LookupZipf, 1, 1000, 100, &z);
        let keys = |s: Stream| match s {
            Stream::Lookups(k) => k,
            _ => unreachable!(),
        };
        let (a, b, c) = (keys(a), keys(b), keys(c));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn the_model_reads_what_the_updates_wrote() {
        let mut m = Model::new(10);
        let k = key(3);
        let mut ops = vec![Op::Get(k), Op::Put(k, 0), Op::Get(k)];
        m.number(&mut ops);
        let want = digest(&value(k, 0)).wrapping_add(digest(&value(k, 1)));
        assert_eq!(m.run(&Stream::Mix(ops.clone()), 1), Some(want));
        assert_eq!(m.version(k), 1);
        assert_eq!(m.run(&Stream::Mix(ops), 2), None);
        // A scan from the last key reads one entry.
        let last = *m.sorted.last().unwrap();
        assert_eq!(m.run(&Stream::Scans(vec![last]), 1), Some(digest(&value(last, 0))));
    }
}
