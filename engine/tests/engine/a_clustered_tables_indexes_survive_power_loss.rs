//! Goal: a clustered table's indexes beside its primary key are as atomic and durable as its
//! rows. A workload of inserts, updates of the indexed columns and of the primary key, and
//! deletes — long names, so that the leaves of the table's tree and of its non-unique index on
//! `name` split, empty and are freed within each transaction, through a pool of 8 frames that
//! steals pages mid-transaction — runs on the storage simulator on /dev/shm and is cut at every
//! persist it makes (the fault once, or for good), with torn writes of each kind; after
//! recovery, `check` finds every tree sound and the indexes in agreement with the rows, and the
//! rows read through each index, both ways, are exactly those of the last commit (or of the
//! failed one, when its failure came after the commit point's store). Every compiled layer.

use std::collections::BTreeMap;
use std::path::Path;

use nvpage::{
    Column, ColumnType, Database, Layer, PersistRequest, ReadOps, Schema, Storage, Value, kind,
};
use nvpage_storage::SimOp;
use nvpage_storage::sim::{Fault, FaultMode, Sim, Tear};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Rows by primary key: (code, name).
type Rows = BTreeMap<i64, (i64, String)>;

fn open(path: &Path, layer: Layer) -> nvpage::Result<Database> {
    Database::builder()
        .layer(layer)
        .page_size(4096)
        .pool_bytes(8 * 4096)
        .log_bytes(256 << 10)
        .persistence(PersistRequest::CacheLine)
        .open(path)
}

fn name(n: i64) -> String {
    format!("{}{n:06}", "n".repeat(150))
}

/// The rows read through `index` in both directions (they must agree), as (key, code, name).
fn through(rx: &impl ReadOps, index: &str) -> Result<Rows, String> {
    let ix = rx.index(index).map_err(|e| e.to_string())?;
    let read = |g: nvpage::Result<nvpage::RowGuard<'_>>| -> nvpage::Result<(i64, (i64, String))> {
        let g = g?;
        let r = g.row()?;
        let k = r.get_named::<kind::I64>("k")?;
        Ok((k, (r.get_named::<kind::I64>("code")?, r.get_named::<kind::Str>("name")?.to_owned())))
    };
    let lookup = || rx.lookup(&ix, &[]).map_err(|e| e.to_string());
    let forward: Vec<_> =
        lookup()?.map(read).collect::<nvpage::Result<_>>().map_err(|e| e.to_string())?;
    let backward: Vec<_> =
        lookup()?.rev().map(read).collect::<nvpage::Result<_>>().map_err(|e| e.to_string())?;
    if forward.iter().rev().ne(backward.iter()) {
        return Err(format!("{index}: forward and backward scans differ"));
    }
    let rows: Rows = forward.iter().cloned().collect();
    if rows.len() != forward.len() {
        return Err(format!("{index}: a row read twice"));
    }
    Ok(rows)
}

/// The rows, read through both indexes (which must agree).
fn contents(db: &Database) -> Result<Rows, String> {
    let rx = db.begin_read().map_err(|e| e.to_string())?;
    if rx.index("t_name").is_err() {
        // The first commit, which creates the table and its indexes, did not survive.
        return Ok(Rows::new());
    }
    let (by_code, by_name) = (through(&rx, "t_code")?, through(&rx, "t_name")?);
    if by_code != by_name {
        return Err("the indexes read different rows".into());
    }
    Ok(by_code)
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

/// Runs the workload; returns the committed rows, and the rows of a commit that failed after
/// its commit point's store (either may survive).
fn workload(db: &Database, sim: &Sim, path: &Path) -> (Rows, Option<Rows>) {
    let mut r = StdRng::seed_from_u64(11);
    let mut committed = Rows::new();
    for txn in 0..5 {
        let Ok(mut tx) = db.begin_write() else { return (committed, None) };
        let t = match tx.table("t") {
            Ok(t) => t,
            Err(_) => {
                let schema = Schema::new(vec![
                    Column::new("k", ColumnType::I64),
                    Column::new("code", ColumnType::I64),
                    Column::new("name", ColumnType::VarChar { max_len: 200 }),
                ])
                .unwrap()
                .with_primary_key(&["k"])
                .unwrap();
                let made = tx.create_table_with("t", schema, Storage::Clustered).and_then(|t| {
                    tx.create_unique_index("t_code", &t, &["code"])?;
                    tx.create_index("t_name", &t, &["name"])?;
                    Ok(t)
                });
                match made {
                    Ok(t) => t,
                    Err(_) => return (committed, None),
                }
            }
        };
        let (Ok(pk), Ok(code)) = (tx.index("t_pkey"), tx.index("t_code")) else {
            return (committed, None);
        };
        let mut rows = committed.clone();
        for _ in 0..80 {
            let k = r.random_range(0..100_000i64);
            let ok = match r.random_range(0..4) {
                0 | 1 if !rows.contains_key(&k) => {
                    // Codes are the key's, so never taken.
                    let row = (k * 2, name(r.random_range(0..1000)));
                    let done =
                        tx.insert(&t, &[Value::I64(k), Value::I64(row.0), Value::Str(&row.1)]);
                    rows.insert(k, row);
                    done.is_ok()
                }
                2 if !rows.is_empty() => {
                    // A new name, and a move to a free key, found by code.
                    let (&old, row) = rows.iter().nth(r.random_range(0..rows.len())).unwrap();
                    let c = row.0;
                    if rows.contains_key(&k) {
                        continue;
                    }
                    let new = name(r.random_range(0..1000));
                    let set = [("k", Value::I64(k)), ("name", Value::Str(&new))];
                    let done = tx.update_by(&code, &[Value::I64(c)], &set);
                    rows.remove(&old);
                    rows.insert(k, (c, new));
                    matches!(done, Ok(Some(_)))
                }
                _ if !rows.is_empty() => {
                    let (&old, _) = rows.iter().nth(r.random_range(0..rows.len())).unwrap();
                    rows.remove(&old);
                    matches!(tx.delete_by(&pk, &[Value::I64(old)]), Ok(true))
                }
                _ => continue,
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
            Ok(()) => committed = rows,
            Err(_) => {
                let (live, durable) = generations(sim, path);
                return (committed, (live != durable).then_some(rows));
            }
        }
    }
    (committed, None)
}

fn point(layer: Layer, fault: Fault, tear: Tear) -> Result<(), String> {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let sim = Sim::attach(dir.path(), 18);
    let path = dir.path().join("db");
    drop(open(&path, layer).map_err(|e| e.to_string())?);
    sim.fail(fault);
    let (before, maybe) = match open(&path, layer) {
        Ok(db) => workload(&db, &sim, &path),
        Err(_) => (Rows::new(), None),
    };
    sim.crash(tear);
    sim.clear_faults();
    let db = open(&path, layer).map_err(|e| format!("reopen: {e}"))?;
    let report = db.check().map_err(|e| e.to_string())?;
    if !report.is_sound() {
        return Err(format!("check: {:?}", report.damage));
    }
    let got = contents(&db)?;
    if got != before && Some(&got) != maybe.as_ref() {
        return Err(format!("{} rows recovered, {} committed", got.len(), before.len()));
    }
    Ok(())
}

#[test]
fn a_clustered_tables_indexes_survive_power_loss() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        let sim = Sim::attach(dir.path(), 18);
        let path = dir.path().join("db");
        drop(open(&path, layer).unwrap());
        let start = sim.counts().persists;
        let db = open(&path, layer).unwrap();
        let (rows, maybe) = workload(&db, &sim, &path);
        assert!(maybe.is_none() && rows.len() > 50, "{maybe:?} {}", rows.len());
        assert_eq!(contents(&db).unwrap(), rows);
        drop(db);
        let persists = sim.counts().persists - start;
        for k in 0..persists {
            let mode = if k % 2 == 0 { FaultMode::Once } else { FaultMode::Forever };
            let f = Fault { op: Some(SimOp::Persist), after: k, mode, errno: 5 };
            let tear = Tear::ALL[(k % 3) as usize];
            point(layer, f, tear)
                .unwrap_or_else(|e| panic!("{layer:?}, persist {k} of {persists}: {e}"));
        }
    }
}
