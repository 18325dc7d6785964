//! Goal: a full disk during a bulk load, and a sync that reports no space during a commit, are
//! typed errors (`StorageError::NoSpace`), and nothing committed before is lost: not in the open
//! database, not after a power loss and reopen. A load that meets a full disk fails its
//! transaction alone (the database takes new transactions once space returns); a commit whose
//! force fails poisons the database (rule 6: nothing pretends data is safe) and recovery rolls the
//! transaction back. All three layers, on disk.

use crate::common;

use std::path::Path;

use std::collections::BTreeMap;

use common::{Row, Rows, commit_table, compare, contents, insert_row};
use nvpage::{Database, Error, Layer};
use nvpage_storage::sim::{Fault, FaultMode, Sim, Tear};
use nvpage_storage::{SimOp, StorageError};

/// A database's contents as `common::contents` reads them.
type Contents = BTreeMap<String, Rows>;

fn open(path: &Path, layer: Layer) -> Database {
    Database::builder().layer(layer).pool_bytes(64 << 10).log_bytes(1 << 20).open(path).unwrap()
}

fn row(k: i64) -> Row {
    Row { qty: k as i32, note: Some(format!("{k:>60}")) }
}

/// A fresh directory followed by the simulator, holding a database whose table `t` has keys
/// `0..200` committed; and those contents.
struct Setup {
    dir: tempfile::TempDir,
    sim: Sim,
    db: Database,
    before: Contents,
}

fn setup(layer: Layer, seed: u64) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::attach(dir.path(), seed);
    let db = open(&dir.path().join("db"), layer);
    commit_table(&db, 200, row);
    let before = contents(&db).unwrap();
    Setup { dir, sim, db, before }
}

fn is_no_space(e: &Error) -> bool {
    matches!(e, Error::Storage(StorageError::NoSpace { .. }))
}

#[test]
fn a_full_disk_fails_the_load_alone_and_loses_nothing() {
    for layer in Layer::compiled() {
        let Setup { dir, sim, db, before } = setup(layer, 11);
        let path = dir.path().join("db");

        // Every growth from now on fails with ENOSPC: the load runs until it needs more file.
        sim.fail(Fault::disk_full(0));
        let mut tx = db.begin_write().unwrap();
        let failed = (1_000..200_000).find_map(|k| insert_row(&mut tx, "t", k, &row(k)).err());
        let e = failed.expect("the load needed the file to grow");
        assert!(is_no_space(&e), "{layer}: a full disk is NoSpace, got {e}");
        drop(tx);
        assert!(!db.is_poisoned(), "{layer}: a full disk is not a failed persist");
        compare(&db, &before).unwrap_or_else(|d| panic!("{layer}: after the failed load: {d}"));

        // Space comes back: the database takes a new transaction, which survives power loss.
        sim.clear_faults();
        let mut tx = db.begin_write().unwrap();
        insert_row(&mut tx, "t", 500, &row(500)).unwrap();
        tx.commit().unwrap();
        let after = contents(&db).unwrap();
        assert_eq!(after["t"].len(), 201, "{layer}");
        drop(db);
        sim.crash(Tear::Sector);
        let db = open(&path, layer);
        compare(&db, &after).unwrap_or_else(|d| panic!("{layer}: after reopen: {d}"));
    }
}

#[test]
fn no_space_while_a_commit_syncs_is_an_error_and_recovery_rolls_it_back() {
    for layer in Layer::compiled() {
        let Setup { dir, sim, db, before } = setup(layer, 12);
        let path = dir.path().join("db");

        let mut tx = db.begin_write().unwrap();
        for k in 1_000..1_300 {
            insert_row(&mut tx, "t", k, &row(k)).unwrap();
        }
        // The commit's first persist (forcing before-images or pages) reports no space, as a
        // sync can on file systems that allocate at write-back.
        sim.fail(Fault {
            op: Some(SimOp::Persist),
            after: 0,
            mode: FaultMode::Once,
            errno: libc::ENOSPC,
        });
        let e = tx.commit().expect_err("the commit's sync failed");
        assert!(is_no_space(&e), "{layer}: {e}");
        assert!(db.is_poisoned(), "{layer}: a failed persist poisons the database");
        assert!(db.begin_write().is_err(), "{layer}: a poisoned database refuses writes");
        drop(db);

        sim.crash(Tear::Sector);
        let db = open(&path, layer);
        compare(&db, &before).unwrap_or_else(|d| panic!("{layer}: after recovery: {d}"));
        let mut tx = db.begin_write().unwrap();
        insert_row(&mut tx, "t", 5_000, &row(5_000)).unwrap();
        tx.commit().unwrap();
    }
}
