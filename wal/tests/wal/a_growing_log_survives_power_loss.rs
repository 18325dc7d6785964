//! Goal: a log that grows while appends run keeps every acknowledged append, and only whole
//! appends, through a power loss at any point of a growth. On the storage simulator, a log
//! created with one page of data area and allowed to grow to 64 pages takes a seeded run of
//! durable and buffered appends, syncs and rewinds, growing several times; a fault stops the run
//! at a chosen step — the growth's `fallocate` (a full disk), its `fsync`, the capacity word's
//! persist, or any persist of an append — then the machine crashes (every unpersisted 8 B
//! word, 64 B line or 512 B sector kept, dropped or torn; a growth not synced kept or lost), and
//! the reopened log, allowed to grow again, is compared with a model and appended to, twice.

use crate::common;

use common::model::{Model, contents, run_sized};
use common::{media, open_growing};
use nvpage_storage::SimOp;
use nvpage_storage::sim::{Fault, FaultMode, Sim, Tear};
use nvpage_wal::layout::DATA_OFFSET;
use nvpage_wal::{CreateOptions, Framing, Log};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use uuid::Uuid;

const START_BYTES: u64 = DATA_OFFSET as u64 + 4096;
const MAX_BYTES: u64 = DATA_OFFSET as u64 + 64 * 4096;

/// The fault a case arms, by seed: none, a full disk at the `n`-th growth, or a failure of the
/// `n`-th persist (a growth's `fsync` or capacity word, or an append's).
fn arm(sim: &Sim, rng: &mut StdRng) {
    match rng.random_range(0..4) {
        0 => {}
        1 => sim.fail(Fault {
            op: Some(SimOp::Grow),
            after: rng.random_range(0..5),
            mode: FaultMode::Once,
            errno: libc::ENOSPC,
        }),
        _ => sim.fail(Fault::once(Some(SimOp::Persist), rng.random_range(0..60))),
    }
}

/// One seeded case: two rounds of a run, a crash and a check. Returns whether the log grew.
fn one_case(m: &common::Medium, framing: Framing, tear: Tear, seed: u64) -> bool {
    let dir = tempfile::tempdir_in(m.dir.path()).unwrap();
    let path = dir.path().join("wal.log");
    let opts = CreateOptions {
        framing,
        persistence: m.persistence,
        ..CreateOptions::new(Uuid::from_u128(7))
    };
    drop(Log::create(&path, START_BYTES, &opts).unwrap());
    let sim = Sim::attach(dir.path(), seed);
    let mut rng = StdRng::seed_from_u64(seed);
    let ctx = format!("{} {framing} {tear:?} seed {seed}", m.name);
    let size = |rng: &mut StdRng| match rng.random_range(0..8) {
        0 => rng.random_range(3000..9000),
        _ => rng.random_range(1..1500),
    };
    let mut model = Model::default();
    let mut grew = false;
    for round in 0..2 {
        let mut log = open_growing(&path, m.persistence, MAX_BYTES)
            .unwrap_or_else(|e| panic!("{ctx} round {round}: {e}"));
        arm(&sim, &mut rng);
        let ops = rng.random_range(1..80);
        run_sized(&mut log, &mut model, &mut rng, ops, size);
        drop(log);
        sim.crash(tear);
        let log = open_growing(&path, m.persistence, MAX_BYTES)
            .unwrap_or_else(|e| panic!("{ctx} round {round}: reopen failed: {e}"));
        let got = contents(&log);
        model.check(framing, &got, &format!("{ctx} round {round}"));
        assert!(log.nbyte() >= START_BYTES - DATA_OFFSET as u64, "{ctx}: never shrinks");
        let file_bytes = std::fs::metadata(&path).unwrap().len();
        assert!(file_bytes >= DATA_OFFSET as u64 + log.nbyte(), "{ctx}: holds its capacity");
        grew |= log.nbyte() > START_BYTES - DATA_OFFSET as u64;
        model = Model::recovered(got);
    }
    grew
}

#[test]
fn power_loss_at_any_step_of_a_growth_keeps_acknowledged_whole_appends() {
    for m in media() {
        let seeds = if m.name == "msync" { 16 } else { 80 };
        let (mut cases, mut grew) = (0, 0);
        for tear in Tear::ALL {
            for seed in 0..seeds {
                let mut case = |framing, seed| {
                    cases += 1;
                    grew += u32::from(one_case(&m, framing, tear, seed));
                };
                case(Framing::Records, seed);
                if seed % 4 == 0 {
                    case(Framing::Raw, seed + 10_000);
                }
            }
        }
        assert!(grew * 2 > cases, "{}: only {grew} of {cases} cases grew the log", m.name);
    }
}
