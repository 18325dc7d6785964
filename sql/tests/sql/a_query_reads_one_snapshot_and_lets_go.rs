//! Goal: a query reads one snapshot across all its tables and partitions — a commit made while
//! it is half read changes nothing it returns — and a scan lets go (DESIGN S3): a `LIMIT` stops
//! the scan after the pages it needs, and a stream dropped, or forgotten half read, holds no
//! guard a writer's commit waits for (on every layer: the commit that stores into every page
//! the stream read completes), and its snapshot ends with the stream.

use std::sync::Arc;

use datafusion::prelude::SessionConfig;
use futures::StreamExt;
use nvpage::{Database, Layer};
use nvpage_sql::Session;

use crate::common::{rows, run_all, runtime};

fn small_batches(dir: &std::path::Path, layer: Layer) -> (Arc<Database>, Session) {
    let db =
        Arc::new(Database::builder().layer(layer).page_size(4096).open(dir.join("db")).unwrap());
    let config = SessionConfig::new().with_batch_size(64).with_target_partitions(2);
    (db.clone(), Session::with_config(db, config).unwrap())
}

/// Sets every row's `n` to `to`, in one transaction on a thread of its own (this one may hold
/// what a session's runtime holds).
fn set_all(db: &Arc<Database>, to: i32) {
    let db = db.clone();
    std::thread::spawn(move || {
        let s = Session::new(db).unwrap();
        runtime().block_on(async {
            run_all(&s, &format!("UPDATE t1 SET n = {to}; UPDATE t2 SET n = {to}")).await;
        });
        s.close();
    })
    .join()
    .unwrap();
}

#[test]
fn a_commit_during_a_query_changes_nothing_it_returns() {
    let rt = runtime();
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let (db, s) = small_batches(dir.path(), layer);
        rt.block_on(async {
            run_all(
                &s,
                "CREATE TABLE t1 (k BIGINT NOT NULL, n INT NOT NULL);
                 CREATE TABLE t2 (k BIGINT NOT NULL, n INT NOT NULL);
                 INSERT INTO t1 SELECT value, 1 FROM generate_series(1, 4000);
                 INSERT INTO t2 SELECT value, 1 FROM generate_series(1, 4000);",
            )
            .await;
            let df = s.sql("SELECT n FROM t1 UNION ALL SELECT n FROM t2").await.unwrap();
            let mut stream = df.execute_stream().await.unwrap();
            let first = stream.next().await.unwrap().unwrap();
            assert!(first.num_rows() > 0);
            // Half read: every row of both tables changes, and commits.
            set_all(&db, 2);
            let mut seen = first.num_rows();
            let mut ones = crate::common::text(&[first]).iter().filter(|r| r[0] == "1").count();
            while let Some(b) = stream.next().await {
                let b = b.unwrap();
                seen += b.num_rows();
                ones += crate::common::text(&[b]).iter().filter(|r| r[0] == "1").count();
            }
            assert_eq!((seen, ones), (8000, 8000), "{layer:?}: the query saw the later commit");
            assert_eq!(rows(&s, "SELECT sum(n) FROM t1").await, [["8000"]], "{layer:?}");
        });
        s.close();
    }
}

#[test]
fn dropped_and_forgotten_streams_hold_no_commit() {
    for layer in Layer::compiled() {
        let rt = runtime();
        let dir = tempfile::tempdir().unwrap();
        let (db, s) = small_batches(dir.path(), layer);
        rt.block_on(async {
            run_all(
                &s,
                "CREATE TABLE t1 (k BIGINT NOT NULL, n INT NOT NULL, pad VARCHAR(200));
                 CREATE TABLE t2 (k BIGINT NOT NULL, n INT NOT NULL);
                 INSERT INTO t1 SELECT value, 1, repeat('p', 150) FROM generate_series(1, 6000);",
            )
            .await;
            // A LIMIT stops the scan early: far fewer pages read than the table has.
            let pages = {
                let snap = db.snapshot().unwrap();
                nvpage::ReadOps::page_count(&snap, &nvpage::ReadOps::table(&snap, "t1").unwrap())
                    .unwrap()
            };
            let c0 = db.counters();
            assert_eq!(rows(&s, "SELECT k FROM t1 LIMIT 5").await.len(), 5);
            let c1 = db.counters();
            let read = (c1.hits + c1.misses + c1.redirected_reads)
                - (c0.hits + c0.misses + c0.redirected_reads);
            assert!(read * 4 < pages, "{layer:?}: LIMIT 5 read {read} of {pages} pages");

            // A stream forgotten half read: the writer's commit over every page completes.
            let df = s.sql("SELECT n FROM t1").await.unwrap();
            let mut forgotten = df.execute_stream().await.unwrap();
            assert!(forgotten.next().await.unwrap().unwrap().num_rows() > 0);
            set_all(&db, 3);
            // A stream dropped half read: the same, and its snapshot ends with it.
            let df = s.sql("SELECT n FROM t1").await.unwrap();
            let mut dropped = df.execute_stream().await.unwrap();
            assert!(dropped.next().await.unwrap().unwrap().num_rows() > 0);
            drop(dropped);
            set_all(&db, 4);
            drop(forgotten);
            assert_eq!(rows(&s, "SELECT min(n), max(n) FROM t1").await, [["4", "4"]]);
        });
        s.close();
        // The runtime's end waits for its blocking tasks, the scans among them.
        drop(rt);
        // Every snapshot ended once its stream and its task were gone: nothing is kept for them.
        assert_eq!(db.stats().readers, 0, "{layer:?}");
    }
}
