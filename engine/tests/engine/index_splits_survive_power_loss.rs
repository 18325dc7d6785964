//! Goal: an index is as atomic and durable as the table it indexes. A workload of
//! long keys — so that leaves and inner nodes split, empty and are freed within each
//! transaction, through a pool of 8 frames that steals index pages mid-transaction — runs on
//! the storage simulator and is cut at every persist it makes (the fault once, or for good),
//! with torn writes of each kind; after recovery, `check` finds the tree sound and in agreement
//! with the table both ways, and the index holds exactly the keys of the last commit (or of
//! the failed one, when its failure came after the commit point's store). All three layers,
//! on /dev/shm with cache-line persistence and on disk; and the same workload on a clustered
//! table, whose rows are its primary key's leaf values (the rows split, move and are freed
//! with the leaves), one row in eight too long for a leaf (spilled to an overflow page, freed
//! with its row); after recovery each row holds the note its key was written with.

use std::collections::BTreeSet;
use std::path::Path;

use nvpage::{
    Column, ColumnType, Database, Layer, PersistRequest, ReadOps, Schema, Storage, Value,
};
use nvpage_storage::SimOp;
use nvpage_storage::sim::{Fault, FaultMode, Sim, Tear};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

type Keys = BTreeSet<String>;

/// A log of 256 KiB: each cut point creates a database, and creating a larger log was most of a
/// point's time on disk.
fn open(path: &Path, shm: bool, layer: Layer) -> nvpage::Result<Database> {
    let b =
        Database::builder().layer(layer).page_size(4096).pool_bytes(8 * 4096).log_bytes(256 << 10);
    if shm { b.persistence(PersistRequest::CacheLine) } else { b }.open(path)
}

fn key(n: u32) -> String {
    format!("{}{n:06}", "k".repeat(400))
}

/// The note a clustered table's row of key `n` holds: one in eight too long for a leaf entry.
fn note(k: &str) -> String {
    let n: u32 = k[400..].parse().unwrap();
    let len = if n.is_multiple_of(8) { 1200 + n as usize % 1000 } else { n as usize % 50 };
    (0..len).map(|i| char::from(b'a' + ((n as usize + i) % 26) as u8)).collect()
}

/// The index the workload keeps: a unique index of a heap table, or a clustered table's key.
fn index_name(clustered: bool) -> &'static str {
    if clustered { "t_pkey" } else { "t_k" }
}

/// The keys the index holds, read through it in both directions (they must agree).
fn contents(db: &Database, clustered: bool) -> Result<Keys, String> {
    let rx = db.begin_read().map_err(|e| e.to_string())?;
    let ix = match rx.index(index_name(clustered)) {
        Ok(ix) => ix,
        // The first commit, which creates the index, did not survive.
        Err(nvpage::Error::UnknownIndex(_)) => return Ok(Keys::new()),
        Err(e) => return Err(e.to_string()),
    };
    let col = rx.table("t").unwrap().col::<nvpage::kind::Str>("k").unwrap();
    let mut forward = Vec::new();
    for g in rx.lookup(&ix, &[]).map_err(|e| e.to_string())? {
        let g = g.map_err(|e| e.to_string())?;
        let row = g.row().unwrap();
        let k = row.get(col).unwrap().to_owned();
        if clustered && row.get_named::<nvpage::kind::Str>("note").unwrap() != note(&k) {
            return Err(format!("the row of key …{} holds another note", &k[400..]));
        }
        forward.push(k);
    }
    let backward: Vec<String> = rx
        .lookup(&ix, &[])
        .map_err(|e| e.to_string())?
        .rev()
        .map(|g| g.map(|g| g.row().unwrap().get(col).unwrap().to_owned()))
        .collect::<nvpage::Result<_>>()
        .map_err(|e| e.to_string())?;
    if forward.iter().rev().ne(backward.iter()) {
        return Err("forward and backward scans differ".into());
    }
    Ok(forward.into_iter().collect())
}

/// The log's generation, live and durable: they differ when a commit point's store may have
/// reached the medium although its persist failed.
fn generations(sim: &Sim, db: &Path) -> (u32, u32) {
    use nvpage_wal::layout::{STATE_OFFSET, State};
    let log = db.join(nvpage::LOG_FILE);
    let word = |b: &[u8]| {
        State::decode(u64::from_le_bytes(b[STATE_OFFSET..STATE_OFFSET + 8].try_into().unwrap()))
            .unwrap()
            .generation
    };
    (word(&std::fs::read(&log).unwrap()), word(&sim.durable_image(&log).unwrap()))
}

/// Runs the workload; returns the committed keys, and the keys of a commit that failed after
/// its commit point's store (either may survive).
fn workload(db: &Database, sim: &Sim, path: &Path, clustered: bool) -> (Keys, Option<Keys>) {
    let mut r = StdRng::seed_from_u64(7);
    let mut committed = Keys::new();
    for txn in 0..5 {
        let Ok(mut tx) = db.begin_write() else { return (committed, None) };
        let t = match tx.table("t") {
            Ok(t) => t,
            Err(_) => {
                let schema =
                    Schema::new(vec![Column::new("k", ColumnType::VarChar { max_len: 420 })])
                        .unwrap();
                if clustered {
                    let note = Column::new("note", ColumnType::VarChar { max_len: 2200 });
                    let schema = Schema::new(vec![schema.columns()[0].clone(), note])
                        .unwrap()
                        .with_primary_key(&["k"])
                        .unwrap();
                    match tx.create_table_with("t", schema, Storage::Clustered) {
                        Ok(t) => t,
                        Err(_) => return (committed, None),
                    }
                } else {
                    let t = tx.create_table("t", schema).unwrap();
                    if tx.create_unique_index("t_k", &t, &["k"]).is_err() {
                        return (committed, None);
                    }
                    t
                }
            }
        };
        let mut keys = committed.clone();
        for _ in 0..100 {
            let ok = if keys.is_empty() || r.random_bool(0.65) {
                let k = key(r.random_range(0..100_000));
                if keys.contains(&k) {
                    continue;
                }
                keys.insert(k.clone());
                if clustered {
                    tx.insert(&t, &[Value::Str(&k), Value::Str(&note(&k))]).is_ok()
                } else {
                    tx.insert(&t, &[Value::Str(&k)]).is_ok()
                }
            } else {
                let k = keys.iter().nth(r.random_range(0..keys.len())).unwrap().clone();
                keys.remove(&k);
                let ix = tx.index(index_name(clustered)).unwrap();
                if clustered {
                    matches!(tx.delete_by(&ix, &[Value::Str(&k)]), Ok(true))
                } else {
                    let id = match tx.get_by(&ix, &[Value::Str(&k)]) {
                        Ok(Some(g)) => g.row().unwrap().id(),
                        _ => return (committed, None),
                    };
                    tx.delete(&t, id).is_ok()
                }
            };
            if !ok {
                // A failed statement (a steal's write-back): the transaction is rolled back.
                return (committed, None);
            }
        }
        if txn == 3 {
            // One transaction aborts after its splits and frees reached the file.
            if tx.abort().is_err() {
                return (committed, None);
            }
            continue;
        }
        match tx.commit() {
            Ok(()) => committed = keys,
            Err(_) => {
                let (live, durable) = generations(sim, path);
                return (committed, (live != durable).then_some(keys));
            }
        }
    }
    (committed, None)
}

fn point(
    layer: Layer,
    clustered: bool,
    shm: bool,
    fault: Option<Fault>,
    tear: Tear,
) -> Result<(), String> {
    let dir = if shm { tempfile::tempdir_in("/dev/shm") } else { tempfile::tempdir() }.unwrap();
    let sim = Sim::attach(dir.path(), 18);
    let path = dir.path().join("db");
    drop(open(&path, shm, layer).map_err(|e| e.to_string())?);
    if let Some(f) = fault {
        sim.fail(f);
    }
    let (before, maybe) = match open(&path, shm, layer) {
        Ok(db) => workload(&db, &sim, &path, clustered),
        Err(_) => (Keys::new(), None),
    };
    sim.crash(tear);
    sim.clear_faults();
    let db = open(&path, shm, layer).map_err(|e| format!("reopen: {e}"))?;
    let report = db.check().map_err(|e| e.to_string())?;
    if !report.is_sound() {
        return Err(format!("check: {:?}", report.damage));
    }
    let got = contents(&db, clustered)?;
    if got != before && Some(&got) != maybe.as_ref() {
        return Err(format!("{} keys recovered, {} committed", got.len(), before.len()));
    }
    Ok(())
}

fn campaign(layer: Layer, clustered: bool) {
    for shm in [true, false] {
        let dir = if shm { tempfile::tempdir_in("/dev/shm") } else { tempfile::tempdir() }.unwrap();
        let sim = Sim::attach(dir.path(), 18);
        let path = dir.path().join("db");
        drop(open(&path, shm, layer).unwrap());
        let start = sim.counts().persists;
        let db = open(&path, shm, layer).unwrap();
        let (keys, maybe) = workload(&db, &sim, &path, clustered);
        assert!(maybe.is_none() && keys.len() > 50, "{maybe:?} {}", keys.len());
        drop(db);
        let persists = sim.counts().persists - start;
        // Every persist on /dev/shm; every third on disk (each costs fsyncs). The fault's mode and
        // the tear turn with the point's ordinal: on disk too, all six pairings of them are met.
        let step = if shm { 1 } else { 3 };
        for (i, k) in (0..persists).step_by(step).enumerate() {
            let mode = if i % 2 == 0 { FaultMode::Once } else { FaultMode::Forever };
            let f = Fault { op: Some(SimOp::Persist), after: k, mode, errno: 5 };
            let tear = Tear::ALL[i % Tear::ALL.len()];
            point(layer, clustered, shm, Some(f), tear)
                .unwrap_or_else(|e| panic!("{layer:?}, shm {shm}, persist {k} of {persists}: {e}"));
        }
    }
}

#[test]
fn index_splits_survive_power_loss_pread() {
    campaign(Layer::Pread, false);
}

#[test]
fn index_splits_survive_power_loss_se1() {
    campaign(Layer::Se1, false);
}

#[test]
fn index_splits_survive_power_loss_se2() {
    campaign(Layer::Se2, false);
}

#[test]
fn clustered_rows_survive_power_loss_pread() {
    campaign(Layer::Pread, true);
}

#[test]
fn clustered_rows_survive_power_loss_se1() {
    campaign(Layer::Se1, true);
}

#[test]
fn clustered_rows_survive_power_loss_se2() {
    campaign(Layer::Se2, true);
}
