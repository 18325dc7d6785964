//! Goal: `CREATE TABLE … WITH (storage = 'clustered')` makes a clustered table (its rows in its
//! primary key's B+tree) whose key the engine keeps, as does `CREATE TABLE … AS SELECT` with
//! declared columns; a clustered table without a primary key, an unknown
//! storage, an unknown option or a second storage are typed errors that create nothing.

use nvpage::{Layer, ReadOps, Storage};
use nvpage_sql::Error;

use crate::common::{rows, run_all, runtime, session};

/// How the engine stores table `name`.
fn storage(s: &nvpage_sql::Session, name: &str) -> Storage {
    let rx = s.database().begin_read().unwrap();
    rx.table(name).unwrap().storage()
}

#[test]
fn a_clustered_table_from_sql_keeps_its_rows_in_key_order() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(
            &s,
            "CREATE TABLE c (k BIGINT PRIMARY KEY, note VARCHAR(20)) WITH (storage = 'clustered');
             CREATE TABLE h (k BIGINT PRIMARY KEY, note VARCHAR(20)) WITH (STORAGE = 'Heap');
             CREATE TABLE plain (k BIGINT, note VARCHAR(20));
             INSERT INTO c VALUES (30, 'c'), (10, 'a'), (20, 'b'), (-5, 'first');
             CREATE TABLE pairs (a INT, b INT, v VARCHAR(10), PRIMARY KEY (b, a))
                 WITH (storage = clustered);
             INSERT INTO pairs VALUES (1, 2, 'x'), (2, 1, 'y'), (1, 1, 'z');
             CREATE TABLE copied (k BIGINT PRIMARY KEY, note VARCHAR(20))
                 WITH (storage = 'clustered') AS SELECT k * 2, note FROM c WHERE k > 0;",
        )
        .await;
        // A plain scan reads each row once (in leaf order; the engine's page fold reads a
        // leaf's entries from its last, so without ORDER BY no order is promised).
        let mut scanned = rows(&s, "SELECT k, note FROM c").await;
        scanned.sort_by_key(|r| r[0].parse::<i64>().unwrap());
        let in_key_order = [["-5", "first"], ["10", "a"], ["20", "b"], ["30", "c"]];
        assert_eq!(scanned, in_key_order);
        assert_eq!(rows(&s, "SELECT k, note FROM c ORDER BY k").await, in_key_order);
        assert_eq!(
            rows(&s, "SELECT a, b, v FROM pairs ORDER BY b, a").await,
            [["1", "1", "z"], ["2", "1", "y"], ["1", "2", "x"]]
        );
        assert_eq!(
            rows(&s, "SELECT k, note FROM copied ORDER BY k").await,
            [["20", "a"], ["40", "b"], ["60", "c"]]
        );
        // The key is the engine's: a second row with a key is refused.
        let e = crate::common::try_rows(&s, "INSERT INTO pairs VALUES (2, 1, 'again')")
            .await
            .unwrap_err();
        assert!(e.contains("pairs_pkey"), "{e}");
    });
    assert_eq!(storage(&s, "c"), Storage::Clustered);
    assert_eq!(storage(&s, "pairs"), Storage::Clustered);
    assert_eq!(storage(&s, "copied"), Storage::Clustered);
    assert_eq!(storage(&s, "h"), Storage::Heap);
    assert_eq!(storage(&s, "plain"), Storage::Heap);
}

#[test]
fn bad_storage_requests_are_refused_and_create_nothing() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(&s, "CREATE TABLE src (k BIGINT, v INT); INSERT INTO src VALUES (1, 2)").await;
        // (statement, table it would create, words the error names)
        let cases = [
            ("CREATE TABLE t (k BIGINT, v INT) WITH (storage = 'clustered')", "PRIMARY KEY"),
            ("CREATE TABLE t WITH (storage = 'clustered') AS SELECT * FROM src", "PRIMARY KEY"),
            (
                "CREATE TABLE t (k BIGINT PRIMARY KEY) WITH (storage = 'columnar')",
                "'heap' (the default) or 'clustered'",
            ),
            (
                "CREATE TABLE t (k BIGINT PRIMARY KEY) WITH (storage = 42)",
                "'heap' (the default) or 'clustered'",
            ),
            ("CREATE TABLE t (k BIGINT PRIMARY KEY) WITH (fillfactor = 70)", "storage = 'heap'"),
            (
                "CREATE TABLE t (k BIGINT PRIMARY KEY) WITH (storage = 'heap', storage = 'heap')",
                "twice",
            ),
            (
                "CREATE TABLE t (k BIGINT PRIMARY KEY) WITH (storage = 'columnar') AS SELECT 1",
                "'clustered'",
            ),
        ];
        for (sql, says) in cases {
            let e = match s.sql(sql).await {
                Ok(df) => panic!("{sql}: accepted, {:?}", df.collect().await.map(|b| b.len())),
                Err(e) => e,
            };
            assert!(matches!(e, Error::Plan(_)), "{sql}: {e:?}");
            assert!(e.to_string().contains(says), "{sql}: {e}");
        }
        assert!(rows(&s, "SHOW TABLES").await.iter().all(|r| r[2] != "t"));
    });
    let rx = s.database().begin_read().unwrap();
    assert!(rx.table("t").is_err());
}
