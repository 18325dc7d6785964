//! Goal: an owned snapshot (`Database::snapshot`) is a value that moves between threads and
//! async tasks and reads one commit in every clone, wherever it is read, while the writer
//! commits beside it; it keeps the database open until its last clone is gone; and the checks
//! that keep a thread from waiting for itself hold for it: reading pages through a snapshot on
//! the writer's thread is `WriteTxnHeld`, and a snapshot held without guards lets its thread
//! write.

use crate::common;

use std::sync::Arc;

use common::{Row, commit_table, insert_row};
use nvpage::{Database, Error, Layer, Partition, ReadOps, Snapshot, kind};

fn assert_send_sync_clone<T: Send + Sync + Clone + 'static>() {}

#[test]
fn a_snapshot_is_send_sync_and_cheap_to_clone() {
    assert_send_sync_clone::<Snapshot>();
}

fn open(dir: &std::path::Path, layer: Layer) -> Arc<Database> {
    Arc::new(Database::builder().layer(layer).page_size(4096).open(dir.join("db")).unwrap())
}

/// The sum of every row's qty, read through `rx`'s partitions of `count` on as many threads.
fn sum_on_threads(rx: &Snapshot, count: usize) -> i64 {
    let t = rx.table("t").unwrap();
    let qty = t.col::<kind::I32>("qty").unwrap();
    std::thread::scope(|s| {
        let workers: Vec<_> = Partition::all(count)
            .unwrap()
            .map(|part| {
                let (rx, t) = (rx.clone(), t.clone());
                s.spawn(move || {
                    let mut sum = 0i64;
                    for page in rx.scan_partition(&t, part).unwrap() {
                        let page = page.unwrap();
                        for row in page.rows() {
                            sum += i64::from(row.unwrap().get(qty).unwrap());
                        }
                    }
                    sum
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    })
}

#[test]
fn every_clone_reads_the_commit_it_was_taken_at_while_the_writer_commits() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), layer);
        commit_table(&db, 2000, |_| Row { qty: 1, note: Some("n".repeat(40)) });
        let first = db.snapshot().unwrap();
        assert_eq!(first.commit_seq(), 1);
        let mut snaps = vec![first.clone()];
        // Each commit doubles every qty; a snapshot taken after commit i reads 2000 · 2^i.
        for _ in 0..3 {
            let mut w = db.begin_write().unwrap();
            let t = w.table("t").unwrap();
            let qty = t.col::<kind::I32>("qty").unwrap();
            let mut rows = Vec::new();
            w.for_each_row(&t, |r| {
                rows.push((r.id(), r.get(qty)?, r.get(t.col::<kind::I64>("key")?)?));
                Ok(())
            })
            .unwrap();
            for (id, q, key) in rows {
                let row = Row { qty: q * 2, note: Some("n".repeat(40)) };
                w.update(&t, id, &common::values(key, &row)).unwrap();
            }
            // Mid-transaction, every snapshot still reads its own commit, on any thread.
            std::thread::scope(|s| {
                for (i, snap) in snaps.iter().enumerate() {
                    let snap = snap.clone();
                    s.spawn(move || assert_eq!(sum_on_threads(&snap, 3), 2000 << i, "{layer:?}"));
                }
            });
            w.commit().unwrap();
            snaps.push(db.snapshot().unwrap());
        }
        for (i, snap) in snaps.iter().enumerate() {
            assert_eq!(sum_on_threads(snap, 4), 2000 << i, "{layer:?}, snapshot {i}");
        }
        assert_eq!(db.stats().readers, 4, "one registration per snapshot, not per clone");
        drop(snaps);
        drop(first);
        assert_eq!(db.stats().readers, 0);
    }
}

#[test]
fn the_writers_thread_reads_no_page_through_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Layer::best_compiled());
    let ids = commit_table(&db, 10, |_| Row { qty: 1, note: None });
    let snap = db.snapshot().unwrap();
    let t = snap.table("t").unwrap();
    // A snapshot held without guards lets its thread write.
    let mut w = db.begin_write().unwrap();
    insert_row(&mut w, "t", 99, &Row { qty: 5, note: None }).unwrap();
    // While it writes, a read of pages through the snapshot is refused on this thread...
    assert!(matches!(snap.get(&t, ids[0]), Err(Error::WriteTxnHeld { .. })));
    assert!(matches!(snap.scan(&t).map(|_| ()), Err(Error::WriteTxnHeld { .. })));
    assert!(matches!(
        snap.scan_partition(&t, Partition::WHOLE).map(|_| ()),
        Err(Error::WriteTxnHeld { .. })
    ));
    // ...but not what needs no page (the snapshot's catalog), nor on another thread.
    assert_eq!(snap.row_count(&t).unwrap(), 10);
    let other = snap.clone();
    let n = std::thread::spawn(move || {
        let t = other.table("t").unwrap();
        other.scan(&t).unwrap().map(|p| p.unwrap().rows().count()).sum::<usize>()
    })
    .join()
    .unwrap();
    assert_eq!(n, 10);
    w.commit().unwrap();
    // After the commit the snapshot reads its own commit again, here too.
    assert_eq!(snap.scan(&t).unwrap().map(|p| p.unwrap().rows().count()).sum::<usize>(), 10);
    assert_eq!(db.snapshot().unwrap().row_count(&t).unwrap(), 11);
}

#[test]
fn a_guard_read_in_place_through_a_snapshot_keeps_its_thread_from_writing() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), layer);
        let ids = commit_table(&db, 10, |_| Row { qty: 1, note: None });
        // Reopened, so that no frame holds the table's page: SE2 then reads it in place.
        drop(db);
        let db = open(dir.path(), layer);
        let snap = db.snapshot().unwrap();
        let t = snap.table("t").unwrap();
        let page = snap.scan(&t).unwrap().next().unwrap().unwrap();
        assert_eq!(page.is_redirected(), layer == Layer::Se2);
        let guard = snap.get(&t, ids[3]).unwrap();
        match layer {
            // SE2 reads the page in place, holding its latch: this thread's commit would store
            // into that page and wait for the guard, on this very thread.
            Layer::Se2 => {
                assert!(matches!(db.begin_write(), Err(Error::ReadTxnHeld { .. })), "{layer:?}");
                drop(page);
                assert!(matches!(db.begin_write(), Err(Error::ReadTxnHeld { .. })), "{layer:?}");
                drop(guard);
            }
            // Elsewhere the guard holds a copy: a commit never waits for it, and writing here
            // with the guard alive is allowed and commits.
            _ => {
                let mut w = db.begin_write().unwrap();
                let t = w.table("t").unwrap();
                let key = t.col::<kind::I64>("key").unwrap();
                w.update(&t, ids[3], &common::values(3, &Row { qty: 9, note: None })).unwrap();
                w.commit().unwrap();
                assert_eq!(guard.row().unwrap().get(key).unwrap(), 3, "{layer:?}");
                let qty = t.col::<kind::I32>("qty").unwrap();
                assert_eq!(guard.row().unwrap().get(qty).unwrap(), 1, "the snapshot's bytes");
                drop((guard, page));
            }
        }
        let w = db.begin_write().unwrap();
        w.commit().unwrap();
    }
}

#[test]
fn a_snapshot_keeps_the_database_open_until_its_last_clone_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Layer::best_compiled());
    commit_table(&db, 100, |_| Row { qty: 2, note: None });
    let snap = db.snapshot().unwrap();
    let clone = snap.clone();
    drop(db);
    // The files are still open (and locked) by the snapshot's database.
    let again = Database::open(dir.path().join("db"));
    assert!(again.is_err(), "the database closed while a snapshot held it");
    assert_eq!(sum_on_threads(&clone, 2), 200);
    drop(snap);
    assert_eq!(sum_on_threads(&clone, 1), 200);
    drop(clone);
    // The last clone closed it: it opens again.
    let db = Database::open(dir.path().join("db")).unwrap();
    assert_eq!(
        db.begin_read().unwrap().row_count(&db.begin_read().unwrap().table("t").unwrap()).unwrap(),
        100
    );
}
