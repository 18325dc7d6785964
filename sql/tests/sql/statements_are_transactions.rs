//! Goal: SQL statements are transactions as PostgreSQL's are. Outside `BEGIN`, a statement is
//! durable when it returns and leaves nothing if it fails (a unique key met halfway through an
//! `INSERT … SELECT`); inside `BEGIN`, statements read their own changes, `ROLLBACK` undoes them
//! all, `COMMIT` keeps them, a statement refused before it changed anything leaves the
//! transaction usable, and one that failed after changing something dooms it: every statement
//! is refused until `COMMIT`, which rolls back and says why. Updates and deletes change exactly
//! the rows their `WHERE` names, with `SET` expressions over the old values.

use std::sync::Arc;

use nvpage::{Database, Layer};
use nvpage_sql::Session;

use crate::common::{rows, run_all, runtime, session, try_rows};

#[test]
fn a_failed_statement_outside_begin_leaves_nothing() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(
            &s,
            "CREATE TABLE src (k BIGINT NOT NULL, v VARCHAR(10));
             CREATE TABLE dst (k BIGINT PRIMARY KEY, v VARCHAR(10));
             INSERT INTO dst VALUES (5000, 'taken');",
        )
        .await;
        // 10,000 rows, one of which (k = 5000) the primary key already holds.
        run_all(&s, "INSERT INTO src SELECT value, 'x' FROM generate_series(1, 10000)").await;
        let e = try_rows(&s, "INSERT INTO dst SELECT k, v FROM src").await.unwrap_err();
        assert!(e.contains("5000") || e.contains("unique"), "{e}");
        assert_eq!(rows(&s, "SELECT count(*), min(v) FROM dst").await, [["1", "taken"]]);
        // A statement that succeeds is durable when it returns: a new open sees it.
        run_all(&s, "INSERT INTO dst SELECT k, v FROM src WHERE k <> 5000").await;
    });
    let db = s.database().clone();
    s.close();
    assert_eq!(Arc::strong_count(&db), 1, "the closed session let go of the database");
    drop(db);
    let again = Session::new(Arc::new(Database::open(dir.path().join("db")).unwrap())).unwrap();
    rt.block_on(async {
        assert_eq!(rows(&again, "SELECT count(*) FROM dst").await, [["10000"]]);
    });
}

#[test]
fn begin_commit_rollback_and_a_doomed_transaction() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(&s, "CREATE TABLE t (k BIGINT PRIMARY KEY, n INT)").await;
        run_all(&s, "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)").await;

        // Statements inside BEGIN read their own changes; ROLLBACK undoes them all.
        run_all(&s, "BEGIN").await;
        assert!(s.in_transaction());
        run_all(&s, "INSERT INTO t VALUES (4, 40); UPDATE t SET n = n + 1 WHERE k <= 2; DELETE FROM t WHERE k = 3").await;
        run_all(&s, "CREATE TABLE u (x INT); INSERT INTO u SELECT n FROM t").await;
        assert_eq!(rows(&s, "SELECT k, n FROM t ORDER BY k").await, [["1", "11"], ["2", "21"], ["4", "40"]]);
        assert_eq!(rows(&s, "SELECT sum(x) FROM u").await, [["72"]]);
        run_all(&s, "ROLLBACK").await;
        assert!(!s.in_transaction());
        assert_eq!(rows(&s, "SELECT k, n FROM t ORDER BY k").await, [["1", "10"], ["2", "20"], ["3", "30"]]);
        assert!(try_rows(&s, "SELECT * FROM u").await.is_err(), "u was created in the rolled-back transaction");

        // COMMIT keeps them; an error found before anything changed leaves the transaction usable.
        run_all(&s, "BEGIN; UPDATE t SET n = n * 2 WHERE k = 1").await;
        let e = try_rows(&s, "SELECT nope FROM t").await.unwrap_err();
        assert!(e.contains("nope"), "{e}");
        run_all(&s, "INSERT INTO t VALUES (5, 50); COMMIT").await;
        assert_eq!(rows(&s, "SELECT k, n FROM t ORDER BY k").await, [["1", "20"], ["2", "20"], ["3", "30"], ["5", "50"]]);

        // A statement that fails after changing something dooms the transaction.
        run_all(&s, "BEGIN; INSERT INTO t VALUES (6, 60)").await;
        let e = try_rows(&s, "INSERT INTO t VALUES (7, 70), (1, 99)").await.unwrap_err();
        assert!(e.contains("unique") || e.contains('1'), "{e}");
        for sql in ["SELECT count(*) FROM t", "INSERT INTO t VALUES (8, 80)"] {
            let e = try_rows(&s, sql).await.unwrap_err();
            assert!(e.contains("rolled back"), "{sql}: {e}");
        }
        let e = try_rows(&s, "COMMIT").await.unwrap_err();
        assert!(e.contains("rolled back"), "{e}");
        assert!(!s.in_transaction());
        assert_eq!(rows(&s, "SELECT count(*), max(k) FROM t").await, [["4", "5"]]);

        // Transaction statements out of place are errors.
        assert!(try_rows(&s, "COMMIT").await.unwrap_err().contains("outside a transaction"));
        run_all(&s, "BEGIN").await;
        assert!(try_rows(&s, "BEGIN").await.unwrap_err().contains("inside a transaction"));
        run_all(&s, "ROLLBACK").await;
    });
}

#[test]
fn transaction_forms_the_session_cannot_honour_are_refused_and_change_nothing() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(&s, "CREATE TABLE t (k BIGINT PRIMARY KEY); INSERT INTO t VALUES (1)").await;
        // A READ ONLY transaction would have taken writes; procedural blocks are not SQL's.
        for sql in ["START TRANSACTION READ ONLY", "BEGIN TRANSACTION READ ONLY"] {
            let e = try_rows(&s, sql).await.unwrap_err();
            assert!(e.contains("READ ONLY") && e.contains("not supported"), "{sql}: {e}");
            assert!(!s.in_transaction(), "{sql}");
        }
        // Any isolation level runs: the one writer's transactions are serializable.
        run_all(&s, "START TRANSACTION ISOLATION LEVEL READ COMMITTED, READ WRITE").await;
        run_all(&s, "INSERT INTO t VALUES (2)").await;
        // Savepoints and chains are refused inside the transaction, which goes on unchanged:
        // `ROLLBACK TO` must not roll the whole transaction back.
        for sql in [
            "SAVEPOINT a",
            "ROLLBACK TO SAVEPOINT a",
            "ROLLBACK TO a",
            "RELEASE SAVEPOINT a",
            "COMMIT AND CHAIN",
            "ROLLBACK AND CHAIN",
        ] {
            let e = try_rows(&s, sql).await.unwrap_err();
            assert!(e.contains("not supported"), "{sql}: {e}");
            assert!(s.in_transaction(), "{sql} ended the transaction");
        }
        run_all(&s, "INSERT INTO t VALUES (3); COMMIT AND NO CHAIN").await;
        assert!(!s.in_transaction());
        assert_eq!(rows(&s, "SELECT k FROM t ORDER BY k").await, [["1"], ["2"], ["3"]]);
        // Outside a transaction too, a savepoint is refused, not taken as a ROLLBACK's error.
        let e = try_rows(&s, "ROLLBACK TO SAVEPOINT a").await.unwrap_err();
        assert!(e.contains("not supported"), "{e}");
    });
}

#[test]
fn updates_and_deletes_change_exactly_the_rows_named() {
    let rt = runtime();
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let s = session(dir.path(), layer);
        rt.block_on(async {
            run_all(
                &s,
                "CREATE TABLE t (k BIGINT PRIMARY KEY, n INT, note VARCHAR(200));
                 INSERT INTO t SELECT value, value % 7, NULL FROM generate_series(1, 3000);",
            )
            .await;
            // Rows that grow move between pages; none is met twice.
            let n = rows(&s, "UPDATE t SET note = repeat('x', 150), n = n + 100 WHERE n = 3").await;
            assert_eq!(n, [["429"]], "{layer:?}");
            assert_eq!(
                rows(&s, "SELECT count(*) FROM t WHERE n = 103 AND length(note) = 150").await,
                [["429"]]
            );
            let n = rows(&s, "DELETE FROM t WHERE k % 2 = 0 OR note IS NOT NULL").await;
            assert_eq!(n, [["1715"]], "{layer:?}");
            assert_eq!(
                rows(&s, "SELECT count(*), sum(k) FROM t").await,
                [["1285", "1927285"]],
                "{layer:?}"
            );
            // The primary key's index follows: a deleted key can be inserted again, a live one not.
            run_all(&s, "INSERT INTO t VALUES (2, 0, NULL)").await;
            assert!(try_rows(&s, "INSERT INTO t VALUES (1, 0, NULL)").await.is_err());
        });
    }
}
