//! Goal: a panic that unwinds out of a commit or an abort leaves the database poisoned, never
//! half-done and usable, on every layer: failpoints (feature `failpoints`) panic
//! after the commit's pages are forced, after its commit point, and in the middle of an abort
//! whose transaction stole pages. Afterwards `is_poisoned()` holds, no transaction begins, a
//! reader that began before keeps its snapshot, and a reopen recovers: the transaction is absent
//! when the panic came before its commit point, present when after. Run with
//! `cargo test -p nvpage --features failpoints --test a_panic_in_commit_or_abort_poisons`.

#![cfg(feature = "failpoints")]

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use common::{Row, commit_table, compare, contents, contents_in, values};
use nvpage::{Database, Error, Layer, ReadOps, failpoints, kind};

fn open(path: &Path, layer: Layer) -> Database {
    Database::builder().layer(layer).page_size(4096).pool_bytes(8 * 4096).open(path).unwrap()
}

/// Rewrites every row (stealing pages through the small pool), then commits or aborts with
/// failpoint `point` armed, while a reader on another thread holds the last commit's snapshot;
/// then checks the poison, the reader's snapshot and what a reopen recovers.
fn case(layer: Layer, point: &'static str, commit: bool) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = open(&path, layer);
    commit_table(&db, 300, |k| Row { qty: k as i32, note: Some("n".repeat(30)) });
    let before = contents(&db).unwrap();
    let mut after = before.clone();
    let rewritten = std::thread::scope(|s| {
        let (ready, wait_ready) = std::sync::mpsc::channel::<()>();
        let (go, wait_go) = std::sync::mpsc::channel::<()>();
        let (db, before) = (&db, &before);
        let reader = s.spawn(move || {
            let rx = db.begin_read().unwrap();
            ready.send(()).unwrap();
            wait_go.recv().unwrap();
            assert!(contents_in(&rx).unwrap() == *before, "{layer}: {point}: the snapshot");
        });
        wait_ready.recv().unwrap();
        let mut tx = db.begin_write().unwrap();
        let t = tx.table("t").unwrap();
        let key = t.col::<kind::I64>("key").unwrap();
        let mut rows = Vec::new();
        tx.for_each_row(&t, |r| {
            rows.push((r.id(), r.get(key)?));
            Ok(())
        })
        .unwrap();
        let new_row = Row { qty: -1, note: Some("w".repeat(40)) };
        let mut rewritten = Vec::new();
        for (id, k) in rows {
            // A row that no longer fits its page moves: keep its new id.
            rewritten.push((k, tx.update(&t, id, &values(k, &new_row)).unwrap(), new_row.clone()));
        }
        failpoints::arm(point);
        let r =
            catch_unwind(AssertUnwindSafe(move || if commit { tx.commit() } else { tx.abort() }));
        assert!(r.is_err(), "{layer}: {point} did not panic");
        assert!(db.is_poisoned(), "{layer}: {point}: a panic poisons");
        assert!(matches!(db.begin_write(), Err(Error::Poisoned)), "{layer}: {point}");
        assert!(matches!(db.begin_read(), Err(Error::Poisoned)), "{layer}: {point}");
        go.send(()).unwrap();
        reader.join().unwrap();
        rewritten
    });
    let rows = after.get_mut("t").unwrap();
    for (k, id, row) in rewritten {
        rows.insert(k, (id, row));
    }
    drop(db);
    let db = open(&path, layer);
    let want = if point == "commit::after_commit_point" { &after } else { &before };
    compare(&db, want).unwrap_or_else(|e| panic!("{layer}: {point}: after reopen: {e}"));
    assert!(db.check().unwrap().is_sound(), "{layer}: {point}");
}

#[test]
fn a_panic_in_commit_or_abort_poisons_and_a_reopen_recovers() {
    for layer in Layer::compiled() {
        case(layer, "commit::after_flush", true);
        case(layer, "commit::after_commit_point", true);
        case(layer, "abort::after_restore", false);
    }
}
