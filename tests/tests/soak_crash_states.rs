//! Goal: count simulated power-loss states the engine survives, across seeds and all three
//! layers, with figures: distinct crash states, states with a committed transaction lost, states
//! with an uncommitted effect visible, states with a checksum failure after recovery, panics —
//! every one but the first must be 0.
//!
//! Per seed: a seeded workload (inserts, updates that grow and move rows, deletes, table
//! creation, aborts, drops; a 4-frame pool so pages are stolen mid-transaction) runs on the
//! storage simulator, on one of the three layers, with cache-line or msync persistence on tmpfs.
//! Each crash point stops it one of two ways:
//!
//! - **a fault**: the k-th persist fails, once or for good. The failed transaction is rolled
//!   back in process (or its rollback fails and poisons the database), the database is closed,
//!   and the power goes after that;
//! - **a power cut inside a transaction with stolen pages**: at a moment of the fault-free run
//!   when the open transaction has written pages back in place and their before-images are in
//!   the log, the files are taken — live bytes and the simulator's durable images — with the
//!   transaction still open, so no rollback runs before the cut (the process rolls back after
//!   it, but nothing it does then reaches the states built). Points 1 and 3 of every five are
//!   of this kind — 40% of the points, where the seed's run has such moments (most do: a
//!   4-frame pool, and a transaction in three of ten runs 20 to 90 operations) — and the test
//!   checks that more than a quarter of all points are such cuts.
//!
//! From each point's files, power-loss states are built (`nvpage_tests::survivor`: every sector,
//! line or word where the live file and the durable image differ kept old, taken new or torn,
//! growth kept or lost, by seed) and hashed: a state whose files were built already at that
//! point is skipped and another drawn, so every state counted is **distinct**. A point yields
//! `NVPAGE_SOAK_STATES` distinct states, or, when its files differ in so few words that fewer
//! exist, every one of them (the point is then *exhausted*: `survivor::Space` counts and lists
//! them). Each state is opened fresh, recovered, compared with the model of committed
//! transactions and checked with `Database::check`.
//!
//! States of different points are different databases (each point creates its own, with its own
//! UUID), and no two points of a seed share a plan.
//!
//! Knobs (defaults are the CI tier's): `NVPAGE_SOAK_SEEDS` (6), `NVPAGE_SOAK_SEED_BASE` (0, to
//! split a soak into parts), `NVPAGE_SOAK_POINTS` crash points per seed (3),
//! `NVPAGE_SOAK_STATES` distinct states per point (6). A million distinct states:
//! `scripts/soak crash`.

use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use nvpage::{Database, Error, Layer, PersistRequest, ReadOps, RowId, WriteTxn};
use nvpage_storage::sim::{Fault, FaultMode, Sim, Tear};
use nvpage_storage::{SimOp, StorageError};
use nvpage_tests::model::{Row, Tables, contents, log_generation, schema};
use nvpage_tests::survivor::{Space, survivor};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
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
        .pool_bytes(16 << 10)
        .log_bytes(512 << 10)
        .max_file_bytes(1 << 30);
    if s.cache_line { b.persistence(PersistRequest::CacheLine) } else { b }.open(path)
}

/// A moment of the workload: transaction `txn` open, `op` of its operations done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Moment {
    txn: usize,
    op: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    /// Inject this fault, counted from the open after the create.
    Fault(Fault),
    /// Cut the power at this moment, the transaction open.
    Cut(Moment),
}

/// The two files of a database at a crash: name, the simulator's durable image, the live bytes.
type Files = [(&'static str, Vec<u8>, Vec<u8>); 2];

/// The files of the database at `path` as a power loss would find them now: what the simulator
/// holds as durable and what the files hold live (stores into a mapping and `pwrite`s included;
/// frames not yet written back are not in them). The handles may be open.
fn take_files(sim: &Sim, path: &Path) -> Files {
    [nvpage::DATA_FILE, nvpage::LOG_FILE].map(|name| {
        let p = path.join(name);
        (name, sim.durable_image(&p).expect("followed"), std::fs::read(&p).expect("live"))
    })
}

/// The before-images in a log file's bytes (records of the current generation: the open
/// transaction's stolen pages).
fn log_images(log: &[u8]) -> u64 {
    nvpage_wal::layout::decode_log(log, None).ok().and_then(|d| d.scan).map_or(0, |s| s.records)
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
        1..4 => Some("G".repeat(r.random_range(300..2000))),
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

/// Runs the workload of `seed` until a fault stops it or `at` asks for a power cut. `at` is
/// called at every moment with the transaction open — before each operation and before the
/// transaction ends — and returns true to cut the power there: the workload then stops, and
/// the transaction is dropped only after `at` has taken what it needs.
fn workload(
    db: &Database,
    sim: &Sim,
    path: &Path,
    seed: u64,
    at: &mut dyn FnMut(Moment) -> bool,
) -> Expect {
    let mut r = StdRng::seed_from_u64(seed);
    let mut m = Model::default();
    let log_path = path.join(nvpage::LOG_FILE);
    for txn in 0..TXNS {
        let Ok(mut tx) = db.begin_write() else { break };
        let mut tent = m.committed.clone();
        let n = if r.random_bool(0.3) { r.random_range(20..90) } else { r.random_range(1..15) };
        for i in 0..=n {
            if at(Moment { txn, op: i }) {
                return Expect { before: m.committed, in_doubt: None };
            }
            if i < n && op(&mut tx, &mut r, &mut m, &mut tent).is_err() {
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
    fault_points: u64,
    cut_points: u64,
    /// Cuts whose transaction had stolen pages (before-images in the log) at the cut.
    cuts_with_stolen_pages: u64,
    /// The before-images those cuts' logs held, summed.
    stolen_images: u64,
    /// Distinct states built, recovered and judged.
    distinct_states: u64,
    /// Drawn states skipped because the point had built the same files already.
    duplicates_skipped: u64,
    /// Points that reached the asked number of distinct states.
    points_full: u64,
    /// Points with fewer distinct states than asked, every one of them built.
    points_exhausted: u64,
    /// The states of the exhausted points.
    exhausted_states: u64,
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

/// A 128-bit hash of a state's two files, to tell states apart.
fn state_hash(files: &[Vec<u8>; 2]) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for f in files {
        h.update(&(f.len() as u64).to_le_bytes());
        h.update(f);
    }
    h.digest128()
}

/// Runs one crash point of `seed`, then recovers and judges up to `states` distinct power-loss
/// states of it.
fn point(seed: u64, s: Setup, plan: Plan, states: u64, c: &mut Counts, point_no: u64) {
    let dir = tempfile::tempdir_in(shm()).unwrap();
    let sim = Sim::attach(dir.path(), seed);
    let path = dir.path().join("db");
    drop(open(&path, s).expect("create"));
    if let Plan::Fault(f) = plan {
        sim.fail(f);
    }
    let mut at_cut = None;
    let expect = match open(&path, s) {
        Ok(db) => {
            let e = workload(&db, &sim, &path, seed, &mut |m| {
                let cut = plan == Plan::Cut(m);
                if cut {
                    at_cut = Some(take_files(&sim, &path));
                }
                cut
            });
            drop(db);
            e
        }
        Err(_) => Expect { before: Tables::new(), in_doubt: None },
    };
    let files = match plan {
        Plan::Cut(m) => {
            let files = at_cut.unwrap_or_else(|| {
                panic!("seed {seed} {s:?}: the workload never reached {m:?}, as measured")
            });
            c.cut_points += 1;
            let images = log_images(&files[1].2);
            c.cuts_with_stolen_pages += u64::from(images > 0);
            c.stolen_images += images;
            files
        }
        _ => {
            c.fault_points += 1;
            take_files(&sim, &path)
        }
    };
    drop(sim);
    c.points += 1;
    let spaces = files.each_ref().map(|(_, durable, live)| Space::new(durable, live));
    let space = spaces[0].count().saturating_mul(spaces[1].count());
    let want = space.min(states);
    // State `index` of the point's whole space (data file's index varying fastest).
    let nth = |index: u64| -> [Vec<u8>; 2] {
        let n0 = spaces[0].count();
        [spaces[0].nth(index % n0), spaces[1].nth(index / n0)]
    };
    // Random draws until the point has `want` distinct states; past a bound (a space barely
    // larger than asked, whose last unseen states the tears rarely draw), the space in order.
    let draw_bound = 16 * states + 64;
    let state_dir = tempfile::tempdir_in(shm()).unwrap();
    let mut seen = HashSet::new();
    let (mut draws, mut listed) = (0u64, 0u64);
    while (seen.len() as u64) < want {
        let (how, bytes) = if space <= states || draws >= draw_bound {
            let index = listed;
            listed += 1;
            if index >= space {
                break;
            }
            (format!("state {index} of {space}"), nth(index))
        } else {
            let i = draws;
            draws += 1;
            let tear = Tear::ALL[(i % 3) as usize];
            let state_seed = mix(seed, point_no, i);
            let bytes = [0, 1].map(|k| {
                let (_, durable, live) = &files[k];
                survivor(durable, live, tear, state_seed ^ k as u64)
            });
            (format!("draw {i} ({tear:?})"), bytes)
        };
        if !seen.insert(state_hash(&bytes)) {
            c.duplicates_skipped += 1;
            continue;
        }
        let db_path = state_dir.path().join(format!("s{}", seen.len()));
        std::fs::create_dir_all(&db_path).unwrap();
        for ((name, _, _), b) in files.iter().zip(&bytes) {
            std::fs::write(db_path.join(name), b).unwrap();
        }
        c.distinct_states += 1;
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
            Ok(Err(e)) => eprintln!("FAIL seed {seed} {s:?} {plan:?} {how}: {e}"),
            Err(_) => {
                c.panics += 1;
                eprintln!("PANIC seed {seed} {s:?} {plan:?} {how}");
            }
        }
        let _ = std::fs::remove_dir_all(&db_path);
    }
    let built = seen.len() as u64;
    assert_eq!(built, want, "seed {seed} {plan:?}: {built} distinct states of {want}");
    if built == states {
        c.points_full += 1;
    } else {
        c.points_exhausted += 1;
        c.exhausted_states += built;
    }
}

fn shm() -> &'static Path {
    if Path::new("/dev/shm").is_dir() { Path::new("/dev/shm") } else { Path::new("/tmp") }
}

/// What the fault-free workload of `seed` does: its persists, and its moments — those when the
/// open transaction had stolen pages (before-images in the log), and the others.
struct Run {
    persists: u64,
    stolen: Vec<Moment>,
    other: Vec<Moment>,
}

fn measure(seed: u64, s: Setup) -> Run {
    let dir = tempfile::tempdir_in(shm()).unwrap();
    let sim = Sim::attach(dir.path(), seed);
    let path = dir.path().join("db");
    drop(open(&path, s).expect("create"));
    let before = sim.counts().persists;
    let db = open(&path, s).expect("open");
    let (mut stolen, mut other) = (Vec::new(), Vec::new());
    let log_path = path.join(nvpage::LOG_FILE);
    workload(&db, &sim, &path, seed, &mut |m| {
        let images = log_images(&std::fs::read(&log_path).expect("the log"));
        if images > 0 { &mut stolen } else { &mut other }.push(m);
        false
    });
    drop(db);
    Run { persists: sim.counts().persists - before, stolen, other }
}

/// The crash points of a seed: `points` distinct plans; points 1 and 3 of every five are power
/// cuts at moments with stolen pages (while such moments last), the others persist faults.
fn plans(seed: u64, run: &Run, points: u64) -> Vec<Plan> {
    let mut pick = StdRng::seed_from_u64(seed ^ 0x50AC);
    let mut faults: Vec<Plan> = (0..run.persists)
        .flat_map(|after| {
            [FaultMode::Once, FaultMode::Forever].map(|mode| {
                Plan::Fault(Fault { op: Some(SimOp::Persist), after, mode, errno: libc::EIO })
            })
        })
        .collect();
    let mut stolen: Vec<Plan> = run.stolen.iter().copied().map(Plan::Cut).collect();
    let mut other: Vec<Plan> = run.other.iter().copied().map(Plan::Cut).collect();
    faults.shuffle(&mut pick);
    stolen.shuffle(&mut pick);
    other.shuffle(&mut pick);
    // Each kind is tried in order of preference; one that runs out gives way to the next.
    let (mut faults, mut stolen, mut other) =
        (faults.into_iter(), stolen.into_iter(), other.into_iter());
    (0..points)
        .filter_map(|k| {
            if matches!(k % 5, 1 | 3) {
                stolen.next().or_else(|| faults.next()).or_else(|| other.next())
            } else {
                faults.next().or_else(|| stolen.next()).or_else(|| other.next())
            }
        })
        .collect()
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
        let run = measure(seed, s);
        for (k, plan) in plans(seed, &run, points).into_iter().enumerate() {
            point(seed, s, plan, states, &mut c, k as u64);
        }
        c.seeds += 1;
    }
    println!(
        "soak_crash_states: seeds {}..{} ({} seeds, all three layers), {} crash points ({} persist \
         faults, {} power cuts in a transaction, {} of them with stolen pages: {} before-images \
         in their logs); {} distinct crash states ({} points gave the {} asked, {} points had only \
         {} distinct states in all, every one built; {} duplicate draws skipped); committed \
         transactions lost in {} states, uncommitted effects visible in {}, checksum failures \
         after recovery {}, other failures {}, panics {}; {:.1} s",
        base,
        base + seeds,
        c.seeds,
        c.points,
        c.fault_points,
        c.cut_points,
        c.cuts_with_stolen_pages,
        c.stolen_images,
        c.distinct_states,
        c.points_full,
        states,
        c.points_exhausted,
        c.exhausted_states,
        c.duplicates_skipped,
        c.committed_lost,
        c.uncommitted_visible,
        c.checksum_failures,
        c.other_failures,
        c.panics,
        started.elapsed().as_secs_f64()
    );
    // One line for scripts/soak to add up.
    println!(
        "soak_crash_states totals: points={} cut_points_with_stolen_pages={} distinct_states={}",
        c.points, c.cuts_with_stolen_pages, c.distinct_states
    );
    assert_eq!(
        (c.committed_lost, c.uncommitted_visible, c.checksum_failures, c.other_failures, c.panics),
        (0, 0, 0, 0, 0),
        "{c:?}"
    );
    if points >= 2 {
        assert!(
            4 * c.cuts_with_stolen_pages > c.points,
            "more than a quarter of the crash points are power cuts with stolen pages: {c:?}"
        );
    }
}
