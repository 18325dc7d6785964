//! Goal: a power loss at any point keeps every acknowledged append and only whole appends of the
//! current generation, in order. On the storage simulator, a seeded workload of durable and
//! buffered appends, syncs and rewinds (the log is small, so it fills and is rewound over older
//! records often) runs for k operations, or until an injected persist failure stops it in the
//! middle of one; then the log is dropped, the machine crashes (every unpersisted 8 B word,
//! 64 B line or 512 B sector kept, dropped or torn), and the reopened log is compared with a
//! model. A second round on the recovered log checks that nothing left past the tail comes back.

use crate::common;

use common::model::{Model, contents, run_sized};
use common::{media, open};
use nvpage_storage::SimOp;
use nvpage_storage::file::KERNEL_COPY_MIN;
use nvpage_storage::sim::{Fault, Sim, Tear};
use nvpage_wal::layout::{DATA_OFFSET, RECORD_HEADER_LEN};
use nvpage_wal::{CreateOptions, Framing, Log};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use uuid::Uuid;

const LOG_BYTES: u64 = DATA_OFFSET as u64 + 8192;

fn one_case(m: &common::Medium, framing: Framing, tear: Tear, seed: u64) {
    let small = |rng: &mut StdRng| match rng.random_range(0..10) {
        0 => 0,
        1 => rng.random_range(1000..3000),
        _ => rng.random_range(1..300),
    };
    crash_case(m, framing, tear, seed, LOG_BYTES, 60, small);
}

/// Appends of `KERNEL_COPY_MIN` bytes or more, which a file that is memory takes through
/// `pwrite` rather than the mapping (`RawFile::copies_in_kernel`), among small ones.
fn large_case(m: &common::Medium, framing: Framing, tear: Tear, seed: u64) {
    let large = |rng: &mut StdRng| match rng.random_range(0..3) {
        0 => KERNEL_COPY_MIN - RECORD_HEADER_LEN + rng.random_range(0..5000),
        _ => rng.random_range(1..300),
    };
    let bytes = DATA_OFFSET as u64 + 3 * KERNEL_COPY_MIN as u64 + 20_000;
    crash_case(m, framing, tear, seed, bytes, 12, large);
}

/// One seeded case: `ops` random operations with lengths drawn by `size` on a log of `bytes`
/// bytes, a crash, a check against the model; twice.
fn crash_case(
    m: &common::Medium,
    framing: Framing,
    tear: Tear,
    seed: u64,
    bytes: u64,
    max_ops: usize,
    size: impl Fn(&mut StdRng) -> usize + Copy,
) {
    let dir = tempfile::tempdir_in(m.dir.path()).unwrap();
    let path = dir.path().join("wal.log");
    let opts = CreateOptions {
        framing,
        persistence: m.persistence,
        ..CreateOptions::new(Uuid::from_u128(7))
    };
    drop(Log::create(&path, bytes, &opts).unwrap());
    let sim = Sim::attach(dir.path(), seed);
    let mut rng = StdRng::seed_from_u64(seed);
    let ctx = format!("{} {framing} {tear:?} seed {seed}", m.name);
    let mut model = Model::default();
    for round in 0..2 {
        let mut log = open(&path, m.persistence).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        if rng.random_bool(0.6) {
            sim.fail(Fault::once(Some(SimOp::Persist), rng.random_range(0..40)));
        }
        let ops = rng.random_range(1..max_ops);
        run_sized(&mut log, &mut model, &mut rng, ops, size);
        drop(log);
        sim.crash(tear);
        let log = open(&path, m.persistence)
            .unwrap_or_else(|e| panic!("{ctx} round {round}: reopen failed: {e}"));
        let got = contents(&log);
        model.check(framing, &got, &format!("{ctx} round {round}"));
        model = Model::recovered(got);
    }
}

#[test]
fn crash_at_many_points_keeps_acknowledged_whole_appends() {
    for m in media() {
        let seeds = if m.name == "msync" { 24 } else { 120 };
        for tear in Tear::ALL {
            for seed in 0..seeds {
                one_case(&m, Framing::Records, tear, seed);
                if seed % 4 == 0 {
                    one_case(&m, Framing::Raw, tear, seed + 10_000);
                }
            }
        }
    }
}

#[test]
fn crash_during_appends_the_kernel_copies() {
    for m in media() {
        for tear in Tear::ALL {
            for seed in 0..16 {
                large_case(&m, Framing::Records, tear, seed);
                if seed % 4 == 0 {
                    large_case(&m, Framing::Raw, tear, seed + 10_000);
                }
            }
        }
    }
}

#[test]
fn crash_right_after_a_rewind_over_a_full_log() {
    for m in media() {
        for tear in Tear::ALL {
            for seed in 0..20u64 {
                let dir = tempfile::tempdir_in(m.dir.path()).unwrap();
                let path = dir.path().join("full.log");
                let opts = CreateOptions::new(Uuid::from_u128(9));
                let opts = CreateOptions { persistence: m.persistence, ..opts };
                drop(Log::create(&path, LOG_BYTES, &opts).unwrap());
                let sim = Sim::attach(dir.path(), seed);
                let mut log = open(&path, m.persistence).unwrap();
                let mut i = 0u64;
                while log.append(&common::payload(i, 100 + (i as usize % 50))).is_ok() {
                    i += 1;
                }
                log.rewind().unwrap();
                let rewound = log.generation();
                let fresh = seed % 3;
                for j in 0..fresh {
                    log.append(&common::payload(1000 + j, 120)).unwrap();
                }
                drop(log);
                sim.crash(tear);
                let log = open(&path, m.persistence).unwrap();
                let want: Vec<Vec<u8>> =
                    (0..fresh).map(|j| common::payload(1000 + j, 120)).collect();
                assert_eq!(contents(&log), want, "{} {tear:?} seed {seed}", m.name);
                assert!(log.generation() > rewound, "a writable open starts a new generation");
            }
        }
    }
}
