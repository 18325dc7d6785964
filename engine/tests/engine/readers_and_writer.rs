//! Goal: readers beside one writer. Readers running beside a writer never see uncommitted data
//! (the writer breaks an invariant — the `qty` column sums to zero — inside each transaction and
//! restores it before committing, and aborts some transactions while it is broken, with a pool so
//! small that pages are stolen); a second `begin_write` on another thread returns only after the
//! first writer committed, while a `begin_read` returns at once; a parallel scan on 4 threads
//! gives the serial scan's answer. No sleeps: threads meet at barriers and channels.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, mpsc};

use common::{Row, insert_row, rng, schema, values};
use nvpage::{Database, Layer, ReadOps, kind};
use rand::Rng;

fn open(dir: &std::path::Path, layer: Layer) -> Database {
    Database::builder().layer(layer).pool_bytes(64 << 10).open(dir.join("db")).unwrap()
}

/// (rows, sum of qty) as a read transaction sees them.
fn sum(db: &Database) -> (u64, i64) {
    let rx = db.begin_read().unwrap();
    let t = rx.table("t").unwrap();
    let qty = t.col::<kind::I32>("qty").unwrap();
    let (mut n, mut s) = (0u64, 0i64);
    rx.for_each_row(&t, |r| {
        n += 1;
        s += i64::from(r.get(qty)?);
        Ok(())
    })
    .unwrap();
    assert_eq!(rx.row_count(&t).unwrap(), n);
    (n, s)
}

#[test]
fn readers_never_see_uncommitted_data() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), layer);
        {
            let mut tx = db.begin_write().unwrap();
            tx.create_table("t", schema()).unwrap();
            for k in 0..2000 {
                let qty = if k % 2 == 0 { 7 } else { -7 };
                insert_row(&mut tx, "t", k, &Row { qty, note: Some("x".repeat(60)) }).unwrap();
            }
            tx.commit().unwrap();
        }
        let readers = 3;
        let start = Barrier::new(readers + 1);
        let done = AtomicBool::new(false);
        let reads = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..readers {
                s.spawn(|| {
                    start.wait();
                    // At least a few reads, and keep reading until the writer is done.
                    let mut i = 0;
                    while i < 5 || !done.load(Ordering::Acquire) {
                        let (n, total) = sum(&db);
                        assert_eq!(total, 0, "{layer}: a reader saw a broken invariant");
                        assert!(n >= 2000 && n % 2 == 0, "{layer}: {n} rows");
                        reads.fetch_add(1, Ordering::Relaxed);
                        i += 1;
                    }
                });
            }
            start.wait();
            let mut r = rng(7);
            let mut next_key = 2000;
            for round in 0..60 {
                let mut tx = db.begin_write().unwrap();
                let t = tx.table("t").unwrap();
                let ids: Vec<_> = {
                    let mut v = Vec::new();
                    for p in tx.scan(&t).unwrap() {
                        let p = p.unwrap();
                        for row in p.rows() {
                            v.push(row.unwrap().id());
                        }
                    }
                    v
                };
                // Break the invariant: +d on one row, and a new row of +e.
                let d = r.random_range(1..1000);
                let a = ids[r.random_range(0..ids.len())];
                let key_a = tx
                    .get(&t, a)
                    .unwrap()
                    .row()
                    .unwrap()
                    .get(t.col::<kind::I64>("key").unwrap())
                    .unwrap();
                let qty_a = tx
                    .get(&t, a)
                    .unwrap()
                    .row()
                    .unwrap()
                    .get(t.col::<kind::I32>("qty").unwrap())
                    .unwrap();
                tx.update(
                    &t,
                    a,
                    &values(key_a, &Row { qty: qty_a + d, note: Some("y".repeat(200)) }),
                )
                .unwrap();
                let e = r.random_range(1..1000);
                insert_row(&mut tx, "t", next_key, &Row { qty: e, note: None }).unwrap();
                // Touch many pages so that the small pool steals dirty ones mid-transaction.
                for id in ids.iter().step_by(40) {
                    let g = tx.get(&t, *id).unwrap();
                    drop(g);
                }
                if round % 5 == 4 {
                    // Abort with the invariant broken.
                    drop(tx);
                    continue;
                }
                // Restore it: a new row of -(d + e), keeping the row count even.
                insert_row(&mut tx, "t", next_key + 1, &Row { qty: -(d + e), note: None }).unwrap();
                next_key += 2;
                tx.commit().unwrap();
            }
            done.store(true, Ordering::Release);
        });
        assert!(reads.load(Ordering::Relaxed) >= 15);
        let (n, total) = sum(&db);
        assert_eq!((n, total), (2000 + 2 * 48, 0), "{layer}");
    }
}

#[test]
fn a_second_writer_waits_for_the_first_to_commit_and_readers_do_not() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), layer);
        {
            let mut tx = db.begin_write().unwrap();
            tx.create_table("t", schema()).unwrap();
            tx.commit().unwrap();
        }
        let committing = AtomicBool::new(false);
        let (to_first, from_second) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let mut first = db.begin_write().unwrap();
            s.spawn(|| {
                to_first.send(()).unwrap();
                // Blocks until the first writer has committed.
                let tx = db.begin_write().unwrap();
                assert!(committing.load(Ordering::Acquire), "{layer}: began before the commit");
                let t = tx.table("t").unwrap();
                assert_eq!(tx.row_count(&t).unwrap(), 1, "{layer}: sees the first's commit");
                drop(tx);
            });
            // The second thread is (about to be) waiting; the first keeps working meanwhile.
            from_second.recv().unwrap();
            insert_row(&mut first, "t", 1, &Row { qty: 1, note: None }).unwrap();
            committing.store(true, Ordering::Release);
            first.commit().unwrap();
        });
        // A read on another thread begins at once beside the open write transaction (which
        // waits for it to finish before it aborts: were `begin_read` to wait for the writer,
        // the two would wait for each other), and sees only committed rows.
        let (to_reader, reader_go) = mpsc::channel::<()>();
        let (to_writer, writer_go) = mpsc::channel::<u64>();
        std::thread::scope(|s| {
            let mut w = db.begin_write().unwrap();
            insert_row(&mut w, "t", 2, &Row { qty: 2, note: None }).unwrap();
            let db = &db;
            s.spawn(move || {
                reader_go.recv().unwrap();
                let rx = db.begin_read().unwrap();
                let t = rx.table("t").unwrap();
                to_writer.send(rx.row_count(&t).unwrap()).unwrap();
            });
            to_reader.send(()).unwrap();
            let seen = writer_go.recv_timeout(DEADLOCK).expect("begin_read waited for the writer");
            assert_eq!(seen, 1, "{layer}: the reader sees the committed row only");
            drop(w);
        });
        let rx = db.begin_read().unwrap();
        assert_eq!(rx.row_count(&rx.table("t").unwrap()).unwrap(), 1, "{layer}: rolled back");
    }
}

/// Long enough that only a deadlock takes it: a watchdog, not a timing assertion.
const DEADLOCK: std::time::Duration = std::time::Duration::from_secs(120);

#[test]
fn parallel_scan_matches_serial_scan() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), layer);
        let mut r = rng(11);
        {
            let mut tx = db.begin_write().unwrap();
            tx.create_table("t", schema()).unwrap();
            for k in 0..20_000 {
                let note = (k % 3 != 0).then(|| "n".repeat(r.random_range(0..80)));
                insert_row(&mut tx, "t", k, &Row { qty: r.random_range(-500..500), note }).unwrap();
            }
            tx.commit().unwrap();
        }
        let rx = db.begin_read().unwrap();
        let t = rx.table("t").unwrap();
        let key = t.col::<kind::I64>("key").unwrap();
        let qty = t.col::<kind::I32>("qty").unwrap();
        let note = t.col::<kind::Str>("note").unwrap();
        let one = |acc: (u64, i64, i64, u64), row: nvpage::RowRef<'_>| -> nvpage::Result<_> {
            let q = i64::from(row.get(qty)?);
            let len = row.get_opt(note)?.map_or(0, |s| s.len() as u64);
            Ok((acc.0 + 1, acc.1 + q, acc.2 + q * row.get(key)?, acc.3 + len))
        };
        let mut serial = (0, 0, 0, 0);
        rx.for_each_row(&t, |row| {
            serial = one(serial, row)?;
            Ok(())
        })
        .unwrap();
        let combine = |a: (u64, i64, i64, u64), b: (u64, i64, i64, u64)| {
            (a.0 + b.0, a.1 + b.1, a.2 + b.2, a.3 + b.3)
        };
        let par = rx.par_fold(&t, 4, || (0, 0, 0, 0), one, combine).unwrap();
        assert_eq!(par, serial, "{layer}");
        assert_eq!(serial.0, 20_000);
        assert!(rx.page_count(&t).unwrap() > 32, "{layer}: enough pages for several chunks");
        drop(rx);
        // Inside a write transaction, the workers see its uncommitted rows.
        let mut tx = db.begin_write().unwrap();
        insert_row(&mut tx, "t", 99_999, &Row { qty: 1, note: None }).unwrap();
        let t = tx.table("t").unwrap();
        let par = tx.par_fold(&t, 4, || (0, 0, 0, 0), one, combine).unwrap();
        assert_eq!(par.0, 20_001, "{layer}");
        drop(tx);
    }
}
