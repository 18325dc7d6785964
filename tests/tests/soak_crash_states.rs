//! Goal: count simulated power-loss states the engine survives, across seeds and all three
//! layers, with figures: crash states, states with a committed transaction lost, states with an
//! uncommitted effect visible, states with a checksum failure after recovery, panics — every one
//! but the first must be 0.
//!
//! Per seed: a seeded workload (inserts, updates that grow and move rows, deletes, table
//! creation, aborts, drops; an 8-frame pool so pages are stolen mid-transaction) runs on the
//! storage simulator, on one of the three layers, with cache-line or msync persistence on tmpfs.
//! Each crash point stops it — the k-th persist fails (once or for good), or the transaction is
//! forgotten mid-way — and the database is dropped. From that one point, many power-loss states
//! are built (`nvpage_tests::survivor`: every sector, line or word where the live file and the
//! simulator's durable image differ kept old, taken new or torn, growth kept or lost, by seed),
//! and each is opened fresh, recovered, compared with the model of committed transactions and
//! checked with `Database::check`.
//!
//! Knobs (defaults are the CI tier's): `NVPAGE_SOAK_SEEDS` (6), `NVPAGE_SOAK_SEED_BASE` (0, to
//! split a soak into parts), `NVPAGE_SOAK_POINTS` crash points per seed (3),
//! `NVPAGE_SOAK_STATES` states per point (6). A million states: `scripts/soak crash`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use nvpage::{Database, Error, Layer, PersistRequest, ReadOps, RowId, WriteTxn};
use nvpage_storage::sim::{Fault, FaultMode, Sim, Tear};
use nvpage_storage::{SimOp, StorageError};
use nvpage_tests::model::{Row, Tables, contents, log_generation, schema};
use nvpage_tests::survivor::survivor;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

#[derive(Clone, Copy, Debug)]
struct Setup {
    layer: Layer,
    cache_line: bool,
}

fn open(path: &Path, s: Setup) -> nvpage::Result<Database> {
    let b = Database::builder()
        .layer(s.layer)
        .page_size(4096)
        .pool_bytes(32 << 10)
        .log_bytes(512 << 10)
        .max_file_bytes(1 << 30);
    if s.cache_line { b.persistence(PersistRequest::CacheLine) } else { b }.open(path)
}

#[derive(Clone, Copy, Debug)]
enum Plan {
    None,
    Fault(Fault),
    Forget { txn: usize, op: usize },
}

/// The workload's model: committed tables, keys and names handed out.
#[derive(Default)]
struct Model {
    committed: Tables,
    next_key: i64,
    next_table: u32,
}

fn note(r: &mut StdRng) -> Option<String> {
    match r.random_range(0..10) {
        0 => None,
        1 => Some("G".repeat(r.random_range(300..2000))),
        _ => Some("n".repeat(r.random_range(0..80))),
    }
}

fn op(
    tx: &mut WriteTxn<'_>,
    r: &mut StdRng,
    m: &mut Model,
    tent: &mut Tables,
) -> nvpage::Result<()> {
    let c = r.random_range(0..100);
    if tent.is_empty() || (c < 4 && tent.len() < 3) {
        let name = format!("t{}", m.next_table);
        m.next_table += 1;
        tx.create_table(&name, schema())?;
        tent.insert(name, Default::default());
        return Ok(());
    }
    let i = r.random_range(0..tent.len());
    let (name, rows) = tent.iter_mut().nth(i).expect("in range");
    let t = tx.table(name)?;
    let existing =
        (!rows.is_empty()).then(|| *rows.keys().nth(r.random_range(0..rows.len())).unwrap());
    match (c, existing) {
        (0..65, _) | (_, None) => {
            let key = m.next_key;
            m.next_key += 1;
            let mut row = Row { id: RowId { page: 0, slot: 0 }, qty: r.random(), note: note(r) };
            row.id = tx.insert(&t, &row.values(key))?;
            rows.insert(key, row);
        }
        (65..85, Some(key)) => {
            let mut row = Row { id: rows[&key].id, qty: r.random(), note: note(r) };
            row.id = tx.update(&t, row.id, &row.values(key))?;
            rows.insert(key, row);
        }
        (_, Some(key)) => {
            tx.delete(&t, rows[&key].id)?;
            rows.remove(&key);
        }
    }
    Ok(())
}

/// What must hold after a crash: `before`, or `in_doubt` when a commit failed at its commit
/// point and the log's state word differs between the live file and the durable image.
struct Expect {
    before: Tables,
    in_doubt: Option<Tables>,
}

const TXNS: usize = 8;

/// Runs the workload of `seed` until `plan` stops it.
fn workload(db: &Database, sim: &Sim, path: &Path, seed: u64, plan: Plan) -> Expect {
    let mut r = StdRng::seed_from_u64(seed);
    let mut m = Model::default();
    let log_path = path.join(nvpage::LOG_FILE);
    for txn in 0..TXNS {
        let Ok(mut tx) = db.begin_write() else { break };
        let mut tent = m.committed.clone();
        let n = if r.random_bool(0.2) { r.random_range(20..60) } else { r.random_range(1..15) };
        for i in 0..n {
            if matches!(plan, Plan::Forget { txn: t, op } if t == txn && op == i) {
                std::mem::forget(tx);
                return Expect { before: m.committed, in_doubt: None };
            }
            if op(&mut tx, &mut r, &mut m, &mut tent).is_err() {
                return Expect { before: m.committed, in_doubt: None };
            }
        }
        match r.random_range(0..20) {
            0 => drop(tx),
            1 => {
                if tx.abort().is_err() {
                    break;
                }
            }
            _ => {
                if tx.commit().is_ok() {
                    m.committed = tent;
                } else {
                    let live = log_generation(&std::fs::read(&log_path).unwrap());
                    let durable = log_generation(&sim.durable_image(&log_path).unwrap());
                    let in_doubt = (live != durable).then_some(tent);
                    return Expect { before: m.committed, in_doubt };
                }
            }
        }
        if db.is_poisoned() {
            break;
        }
    }
    Expect { before: m.committed, in_doubt: None }
}

#[derive(Debug, Default)]
struct Counts {
    seeds: u64,
    points: u64,
    states: u64,
    distinct_states: u64,
    committed_lost: u64,
    uncommitted_visible: u64,
    checksum_failures: u64,
    other_failures: u64,
    panics: u64,
}

/// Classifies one recovered state against the expectation; `Err` describes a failure.
fn judge(db: &Database, e: &Expect, c: &mut Counts) -> Result<(), String> {
    let got = match contents(db) {
        Ok(g) => g,
        Err(msg) => {
            if msg.contains("checksum") || msg.contains("page id") {
                c.checksum_failures += 1;
            } else {
                c.other_failures += 1;
            }
            return Err(msg);
        }
    };
    if got != e.before && e.in_doubt.as_ref() != Some(&got) {
        let want = &e.before;
        let lost = want.iter().any(|(t, rows)| {
            rows.iter().any(|(k, v)| got.get(t).and_then(|g| g.get(k)) != Some(v))
        });
        let extra = got
            .iter()
            .any(|(t, rows)| rows.keys().any(|k| !want.get(t).is_some_and(|w| w.contains_key(k))));
        c.committed_lost += u64::from(lost);
        c.uncommitted_visible += u64::from(extra || !lost);
        return Err(format!("contents differ (committed lost: {lost}, extra rows: {extra})"));
    }
    let report = db.check().map_err(|e| format!("check: {e}"))?;
    if !report.is_sound() {
        c.checksum_failures += 1;
        return Err(format!("check: {:?}", report.damage));
    }
    if report.log_used_bytes != 0 {
        c.other_failures += 1;
        return Err("the log is not empty after recovery".into());
    }
    Ok(())
}

fn mix(a: u64, b: u64, c: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ c.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^ (z >> 31)
}

/// Runs one crash point of `seed` and judges `states` power-loss states of it.
fn point(seed: u64, s: Setup, plan: Plan, states: u64, c: &mut Counts, point_no: u64) {
    let dir = tempfile::tempdir_in(shm()).unwrap();
    let sim = Sim::attach(dir.path(), seed);
    let path = dir.path().join("db");
    drop(open(&path, s).expect("create"));
    if let Plan::Fault(f) = plan {
        sim.fail(f);
    }
    let expect = match open(&path, s) {
        Ok(db) => {
            let e = workload(&db, &sim, &path, seed, plan);
            drop(db);
            e
        }
        Err(_) => Expect { before: Tables::new(), in_doubt: None },
    };
    let files = [nvpage::DATA_FILE, nvpage::LOG_FILE].map(|name| {
        let p = path.join(name);
        (name, sim.durable_image(&p).expect("followed"), std::fs::read(&p).expect("live"))
    });
    drop(sim);
    c.points += 1;
    let state_dir = tempfile::tempdir_in(shm()).unwrap();
    let mut distinct = std::collections::HashSet::new();
    for i in 0..states {
        let tear = Tear::ALL[(i % 3) as usize];
        let state_seed = mix(seed, point_no, i);
        let db_path = state_dir.path().join(format!("s{i}"));
        std::fs::create_dir_all(&db_path).unwrap();
        let mut key = 0u64;
        for (k, (name, durable, live)) in files.iter().enumerate() {
            let bytes = survivor(durable, live, tear, state_seed ^ k as u64);
            key = key << 32 | u64::from(crc32c::crc32c(&bytes));
            std::fs::write(db_path.join(name), bytes).unwrap();
        }
        c.states += 1;
        c.distinct_states += u64::from(distinct.insert(key));
        let r = catch_unwind(AssertUnwindSafe(|| match open(&db_path, s) {
            Ok(db) => judge(&db, &expect, c),
            Err(e) => {
                if matches!(e, Error::Storage(StorageError::ChecksumMismatch { .. })) {
                    c.checksum_failures += 1;
                } else {
                    c.other_failures += 1;
                }
                Err(format!("reopen: {e}"))
            }
        }));
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("FAIL seed {seed} {s:?} {plan:?} state {i} ({tear:?}): {e}"),
            Err(_) => {
                c.panics += 1;
                eprintln!("PANIC seed {seed} {s:?} {plan:?} state {i} ({tear:?})");
            }
        }
        let _ = std::fs::remove_dir_all(&db_path);
    }
}

fn shm() -> &'static Path {
    if Path::new("/dev/shm").is_dir() { Path::new("/dev/shm") } else { Path::new("/tmp") }
}

/// Persists made by the fault-free workload of `seed`.
fn persists(seed: u64, s: Setup) -> u64 {
    let dir = tempfile::tempdir_in(shm()).unwrap();
    let sim = Sim::attach(dir.path(), seed);
    let path = dir.path().join("db");
    drop(open(&path, s).expect("create"));
    let before = sim.counts().persists;
    let db = open(&path, s).expect("open");
    workload(&db, &sim, &path, seed, Plan::None);
    drop(db);
    sim.counts().persists - before
}

#[test]
fn crash_states_recover_to_the_committed_model() {
    let seeds = knob("NVPAGE_SOAK_SEEDS", 6);
    let base = knob("NVPAGE_SOAK_SEED_BASE", 0);
    let points = knob("NVPAGE_SOAK_POINTS", 3);
    let states = knob("NVPAGE_SOAK_STATES", 6);
    let started = std::time::Instant::now();
    let mut c = Counts::default();
    for seed in base..base + seeds {
        let s = Setup { layer: Layer::ALL[(seed % 3) as usize], cache_line: (seed / 3) % 2 == 0 };
        let p = persists(seed, s).max(1);
        let mut pick = StdRng::seed_from_u64(seed ^ 0x50AC);
        for k in 0..points {
            let plan = if k % 4 == 3 {
                Plan::Forget { txn: pick.random_range(0..TXNS), op: pick.random_range(0..20) }
            } else {
                let mode = if pick.random_bool(0.5) { FaultMode::Once } else { FaultMode::Forever };
                let after = pick.random_range(0..p);
                Plan::Fault(Fault { op: Some(SimOp::Persist), after, mode, errno: libc::EIO })
            };
            point(seed, s, plan, states, &mut c, k);
        }
        c.seeds += 1;
    }
    println!(
        "soak_crash_states: seeds {}..{} ({} seeds, all three layers), {} crash points, {} crash \
         states ({} distinct per crash point, summed); committed transactions lost in {} states, uncommitted effects visible in {}, \
         checksum failures after recovery {}, other failures {}, panics {}; {:.1} s",
        base,
        base + seeds,
        c.seeds,
        c.points,
        c.states,
        c.distinct_states,
        c.committed_lost,
        c.uncommitted_visible,
        c.checksum_failures,
        c.other_failures,
        c.panics,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(c.states, seeds * points * states);
    assert_eq!(
        (c.committed_lost, c.uncommitted_visible, c.checksum_failures, c.other_failures, c.panics),
        (0, 0, 0, 0, 0),
        "{c:?}"
    );
}
