//! Goal: a reader holding a guard never makes a commit fail, poison or deadlock (R8),
//! on every layer. A reader thread holds a `RowGuard` on a row while the writer updates that
//! row's page and commits: in SE2, where the guard points into the mapping, the commit waits for
//! it (counted as a write-back wait) — and while it waits, the reader runs a parallel scan over
//! the page it holds, whose workers re-enter the page (they act for the reader) instead of
//! queueing behind the waiting commit; then the reader lets go and the commit completes. In the
//! layers that copy, the guard holds a frame of its own and the commit does not wait at all.
//! Throughout, the reader sees its snapshot. No sleeps: the reader watches the write-back-wait
//! counter to know the commit is waiting.

use crate::common;

use common::{Row, commit_table, values};
use nvpage::{Database, Layer, ReadOps, kind};

fn open(dir: &std::path::Path, layer: Layer) -> Database {
    Database::builder().layer(layer).page_size(4096).pool_bytes(16 * 4096).open(dir).unwrap()
}

fn run(layer: Layer) {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let path = dir.path().join("db");
    let ids = commit_table(&open(&path, layer), 200, |k| Row { qty: k as i32, note: None });
    // Reopened: the pool is empty, so SE2 reads the pages in place.
    let db = open(&path, layer);
    let target = ids[0];
    let waits_before = db.counters().write_back_waits;
    std::thread::scope(|s| {
        let (held, held_rx) = std::sync::mpsc::channel::<()>();
        let (committing, committing_rx) = std::sync::mpsc::channel::<()>();
        let db = &db;
        let reader = s.spawn(move || {
            let rx = db.begin_read().unwrap();
            let t = rx.table("t").unwrap();
            let qty = t.col::<kind::I32>("qty").unwrap();
            let guard = rx.get(&t, target).unwrap();
            assert_eq!(guard.row().unwrap().get(qty).unwrap(), 0);
            let redirected = db.counters().redirected_reads;
            assert_eq!(redirected > 0, layer == Layer::Se2, "{layer}: the guard's kind");
            held.send(()).unwrap();
            committing_rx.recv().unwrap();
            if layer == Layer::Se2 {
                // The commit's write-back of this page waits for the guard.
                while db.counters().write_back_waits == waits_before {
                    std::thread::yield_now();
                }
            }
            // A parallel scan over the held page while the commit waits for it.
            let sum = rx
                .par_fold(&t, 2, || 0i64, |a, r| Ok(a + i64::from(r.get(qty)?)), |a, b| a + b)
                .unwrap();
            assert_eq!(sum, (0..200).sum::<i64>(), "{layer}: the snapshot's rows");
            assert_eq!(guard.row().unwrap().get(qty).unwrap(), 0, "{layer}: the guard's row");
            drop(guard);
            // After the guard goes, the snapshot still reads its own bytes.
            assert_eq!(rx.get(&t, target).unwrap().row().unwrap().get(qty).unwrap(), 0);
        });
        held_rx.recv().unwrap();
        let mut tx = db.begin_write().unwrap();
        let t = tx.table("t").unwrap();
        for &id in &ids[..20] {
            tx.update(&t, id, &values(0, &Row { qty: -1, note: None })).unwrap();
        }
        committing.send(()).unwrap();
        tx.commit().unwrap();
        reader.join().unwrap();
    });
    assert!(!db.is_poisoned(), "{layer}");
    let waited = db.counters().write_back_waits - waits_before;
    if layer == Layer::Se2 {
        assert!(waited > 0, "{layer}: the commit waited for the guard");
    } else {
        assert_eq!(waited, 0, "{layer}: a guard on a frame of its own holds no commit back");
    }
    let rx = db.begin_read().unwrap();
    let t = rx.table("t").unwrap();
    let qty = t.col::<kind::I32>("qty").unwrap();
    assert_eq!(rx.get(&t, target).unwrap().row().unwrap().get(qty).unwrap(), -1, "{layer}");
}

#[test]
fn a_commit_waits_for_a_guard_on_its_page_and_a_parallel_scan_beside_it_finishes() {
    for layer in Layer::compiled() {
        run(layer);
    }
}
