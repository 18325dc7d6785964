//! Goal: what a reader holds never makes the writer fail, poison or hang (R8), in the cases a
//! review built: `check` on a thread holding a read
//! transaction is `ReadTxnHeld` instead of waiting for a commit that waits for that thread; a
//! commit whose log fills part-way through its flush rolls back without waiting for a reader that
//! holds a guard on a page it logged but never stored, and the reader begins another read
//! meanwhile; a commit that needs frames which readers' guards hold (SE2: its dirty pages read in
//! place; pread: every frame pinned) waits for the readers and then commits, unpoisoned. No
//! sleeps: the readers let go once the writer's wait shows in the write-back-wait counter.

use crate::common;

use std::sync::mpsc;

use common::{Row, commit_table, values};
use nvpage::{Database, Error, Layer, ReadOps, RowId};

fn open(path: &std::path::Path, layer: Layer, pool_pages: u64, log_bytes: u64) -> Database {
    Database::builder()
        .layer(layer)
        .page_size(4096)
        .pool_bytes(pool_pages * 4096)
        .log_bytes(log_bytes)
        .max_log_bytes(log_bytes)
        .open(path)
        .unwrap()
}

/// Spins (yielding) until the writer has waited for readers once more than `before`.
fn until_the_writer_waits(db: &Database, before: u64) {
    while db.counters().write_back_waits == before {
        std::thread::yield_now();
    }
}

/// One row on each of `n` distinct pages.
fn on_distinct_pages(ids: &[RowId], n: usize) -> Vec<RowId> {
    let mut picked: Vec<RowId> = Vec::new();
    for &id in ids {
        if !picked.iter().any(|p| p.page == id.page) {
            picked.push(id);
        }
    }
    picked.truncate(n);
    assert_eq!(picked.len(), n);
    picked
}

#[test]
fn check_on_a_thread_holding_a_read_transaction_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"), Layer::Se2, 16, 1 << 20);
    commit_table(&db, 10, |k| Row { qty: k as i32, note: None });
    let rx = db.begin_read().unwrap();
    assert!(matches!(db.check(), Err(Error::ReadTxnHeld { .. })));
    drop(rx);
    assert!(db.check().unwrap().is_sound());
}

#[test]
fn a_too_large_commit_rolls_back_without_waiting_for_a_readers_guard() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let path = dir.path().join("db");
    // Room for a dozen pages of images, and no growth: the commit's flush finds the log too
    // small for them.
    let log_bytes = 4096 + 12 * 4200;
    let note = "x".repeat(1800);
    let ids = commit_table(&open(&path, Layer::Se2, 256, log_bytes), 60, |k| Row {
        qty: k as i32,
        note: Some(note.clone()),
    });
    // Reopened: the pool is empty, so the reader reads its page in place.
    let db = open(&path, Layer::Se2, 256, log_bytes);
    let target = ids[0];
    std::thread::scope(|s| {
        let (held, wait_held) = mpsc::channel::<()>();
        let (rolled_back, wait_rolled_back) = mpsc::channel::<()>();
        let db = &db;
        s.spawn(move || {
            let rx = db.begin_read().unwrap();
            let t = rx.table("t").unwrap();
            let guard = rx.get(&t, target).unwrap();
            held.send(()).unwrap();
            // A second read transaction on this thread while the writer commits.
            let again = db.begin_read().unwrap();
            assert_eq!(again.snapshot(), rx.snapshot());
            // The guard is let go only once the writer is done.
            wait_rolled_back.recv().unwrap();
            drop(guard);
        });
        wait_held.recv().unwrap();
        let mut tx = db.begin_write().unwrap();
        let t = tx.table("t").unwrap();
        // Every row rewritten with other bytes: images of nearly every line of every page (a
        // before-image holds only the lines that change), more than the log holds.
        let other = "z".repeat(1800);
        for &id in &ids {
            tx.update(&t, id, &values(0, &Row { qty: -1, note: Some(other.clone()) })).unwrap();
        }
        let r = tx.commit();
        assert!(matches!(r, Err(Error::TransactionTooLarge { .. })), "{r:?}");
        assert!(!db.is_poisoned());
        rolled_back.send(()).unwrap();
    });
}

/// A reader holds guards on four pages through a pool of four frames; the writer changes those
/// pages and commits (a row deleted, so the catalog page needs a frame too).
fn a_commit_short_of_frames_waits_for_readers(layer: Layer) {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let path = dir.path().join("db");
    let note = "y".repeat(1800);
    let ids = commit_table(&open(&path, layer, 64, 1 << 20), 16, |k| Row {
        qty: k as i32,
        note: Some(note.clone()),
    });
    let db = open(&path, layer, 4, 1 << 20);
    let picked = on_distinct_pages(&ids, 4);
    let before = db.counters().write_back_waits;
    std::thread::scope(|s| {
        let (held, wait_held) = mpsc::channel::<()>();
        let (db, picked) = (&db, &picked);
        s.spawn(move || {
            let rx = db.begin_read().unwrap();
            let t = rx.table("t").unwrap();
            let guards: Vec<_> = picked.iter().map(|&id| rx.get(&t, id).unwrap()).collect();
            held.send(()).unwrap();
            until_the_writer_waits(db, before);
            drop(guards);
        });
        wait_held.recv().unwrap();
        let mut tx = db.begin_write().unwrap();
        let t = tx.table("t").unwrap();
        for &id in &picked[..3] {
            tx.update(&t, id, &values(0, &Row { qty: -1, note: Some(note.clone()) })).unwrap();
        }
        tx.delete(&t, picked[3]).unwrap();
        let r = tx.commit();
        assert!(r.is_ok() && !db.is_poisoned(), "{layer}: {r:?}");
    });
    assert!(db.counters().write_back_waits > before, "{layer}: the writer waited");
}

#[test]
fn a_commit_short_of_frames_waits_for_readers_in_place_se2() {
    a_commit_short_of_frames_waits_for_readers(Layer::Se2);
}

#[test]
fn a_commit_short_of_frames_waits_for_readers_pinning_every_frame_pread() {
    a_commit_short_of_frames_waits_for_readers(Layer::Pread);
}
