//! Goal: a transaction whose before-images pass the log's size commits: the log grows for it,
//! whether the images are logged as the pool evicts pages mid-transaction (a small pool) or as
//! the commit forces them (a pool that holds every page), and the commit is whole after a
//! reopen. A power loss in the middle of such a transaction, after the log grew and stolen pages
//! were written in place, leaves the database as it was before the transaction. All three
//! layers, on the storage simulator.

use crate::common;

use std::path::Path;

use common::{Row, commit_table, compare, contents, values};
use nvpage::{Database, LOG_FILE, Layer, ReadOps};
use nvpage_storage::sim::{Sim, Tear};

const LOG_BYTES: u64 = 1 << 20;

fn open(path: &Path, layer: Layer, pool: u64) -> Database {
    Database::builder().layer(layer).pool_bytes(pool).log_bytes(LOG_BYTES).open(path).unwrap()
}

/// Rewrites every row of table `t` with a note of `fill`: ~2.4 MB of before-images (the changed
/// lines of every page), more than the log's 1 MiB. Leaves the transaction open.
fn rewrite_all<'a>(db: &'a Database, fill: &str) -> nvpage::WriteTxn<'a> {
    let before = contents(db).unwrap();
    let mut tx = db.begin_write().unwrap();
    let t = tx.table("t").unwrap();
    for (k, (id, _)) in &before["t"] {
        let row = Row { qty: 1, note: Some(fill.repeat(1000)) };
        tx.update(&t, *id, &values(*k, &row)).unwrap();
    }
    tx
}

#[test]
fn a_transaction_larger_than_the_log_grows_it_and_commits() {
    for layer in Layer::compiled() {
        for pool in [64u64 << 10, 8 << 20] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("db");
            let sim = Sim::attach(dir.path(), 5);
            let db = open(&path, layer, pool);
            commit_table(&db, 2400, |_| Row { qty: 0, note: Some("a".repeat(1000)) });
            let before = contents(&db).unwrap();
            let ctx = format!("{layer}, pool {pool}");

            rewrite_all(&db, "b").commit().unwrap_or_else(|e| panic!("{ctx}: {e}"));
            let log_len = std::fs::metadata(path.join(LOG_FILE)).unwrap().len();
            assert!(log_len > LOG_BYTES, "{ctx}: the log did not grow ({log_len} bytes)");
            let committed = contents(&db).unwrap();
            assert!(committed["t"].values().all(|(_, r)| r.note == Some("b".repeat(1000))));
            drop(db);
            let db = open(&path, layer, pool);
            compare(&db, &committed).unwrap_or_else(|d| panic!("{ctx}: after reopen: {d}"));
            assert!(db.check().unwrap().is_sound(), "{ctx}");

            // A power cut with such a transaction open, its stolen pages in place: nothing
            // rolls it back but recovery. The log is grown afresh for it from a new database
            // too, so the crash also finds a log that grew in this process.
            drop(db);
            let fresh = dir.path().join("fresh");
            let db = open(&fresh, layer, pool);
            commit_table(&db, 2400, |_| Row { qty: 0, note: Some("a".repeat(1000)) });
            let base = contents(&db).unwrap();
            assert_eq!(base["t"].len(), before["t"].len());
            let tx = rewrite_all(&db, "c");
            std::mem::forget(tx);
            drop(db);
            sim.crash(Tear::Sector);
            let db = open(&fresh, layer, pool);
            compare(&db, &base).unwrap_or_else(|d| panic!("{ctx}: after the power cut: {d}"));
            assert!(db.check().unwrap().is_sound(), "{ctx}");
        }
    }
}
