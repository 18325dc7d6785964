//! Goal: on a tokio runtime of two worker threads, owned snapshots move between tasks and
//! threads across `.await` points — read on a worker thread, then on blocking threads, then on
//! whichever worker the task resumes on — while a writer commits beside them, and every read
//! sees exactly the commit its snapshot was taken at. Guards never cross an `.await` (they are
//! not `Send`, so a task holding one across an await would not compile for this runtime).

use crate::common;

use std::sync::Arc;

use common::{Row, commit_table};
use nvpage::{Database, Layer, Partition, ReadOps, Snapshot, kind};

/// The sum of every row's qty in `snap`, one partition per blocking task.
async fn sum(snap: &Snapshot, parts: usize) -> i64 {
    let mut tasks = Vec::new();
    for part in Partition::all(parts).unwrap() {
        let snap = snap.clone();
        tasks.push(tokio::task::spawn_blocking(move || {
            let t = snap.table("t").unwrap();
            let qty = t.col::<kind::I32>("qty").unwrap();
            let mut sum = 0i64;
            for page in snap.scan_partition(&t, part).unwrap() {
                for row in page.unwrap().rows() {
                    sum += i64::from(row.unwrap().get(qty).unwrap());
                }
            }
            sum
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    total
}

/// The same sum read on the calling (worker) thread, the guards dropped before it returns.
fn sum_here(snap: &Snapshot) -> i64 {
    let t = snap.table("t").unwrap();
    let qty = t.col::<kind::I32>("qty").unwrap();
    let mut sum = 0;
    snap.for_each_row(&t, |r| {
        sum += i64::from(r.get(qty)?);
        Ok(())
    })
    .unwrap();
    sum
}

#[test]
fn snapshots_read_their_commit_on_any_thread_of_a_two_worker_runtime() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(
            Database::builder().layer(layer).page_size(4096).open(dir.path().join("db")).unwrap(),
        );
        commit_table(&db, 1500, |_| Row { qty: 1, note: Some("x".repeat(30)) });
        rt.block_on(async {
            let (tx, mut rx) = tokio::sync::mpsc::channel::<Snapshot>(4);
            // The writer: each commit adds one row of qty 1000, on a blocking thread, and hands
            // a snapshot taken after it to the readers.
            let writer = {
                let db = db.clone();
                tokio::spawn(async move {
                    for i in 0..8 {
                        let db2 = db.clone();
                        tokio::task::spawn_blocking(move || {
                            let mut w = db2.begin_write().unwrap();
                            let t = w.table("t").unwrap();
                            let row = Row { qty: 1000, note: None };
                            w.insert(&t, &common::values(10_000 + i, &row)).unwrap();
                            w.commit().unwrap();
                        })
                        .await
                        .unwrap();
                        tx.send(db.snapshot().unwrap()).await.unwrap();
                    }
                })
            };
            let mut readers = Vec::new();
            while let Some(snap) = rx.recv().await {
                readers.push(tokio::spawn(async move {
                    let want = 1500 + 1000 * (snap.commit_seq() as i64 - 1);
                    assert_eq!(sum_here(&snap), want);
                    tokio::task::yield_now().await;
                    assert_eq!(sum(&snap, 3).await, want);
                    tokio::task::yield_now().await;
                    assert_eq!(sum_here(&snap), want);
                    snap.commit_seq()
                }));
            }
            writer.await.unwrap();
            let mut seen = Vec::new();
            for r in readers {
                seen.push(r.await.unwrap());
            }
            assert_eq!(seen, (2..=9).collect::<Vec<u64>>(), "{layer:?}");
        });
        assert_eq!(db.stats().readers, 0, "every snapshot ended");
    }
}
