//! Goal: SQL's `PRIMARY KEY` is the engine's primary key: the table's schema names it, its
//! columns are NOT NULL, its unique index `<table>_pkey` refuses a repeated key and is dropped
//! only with the table, and DataFusion knows the key (a `GROUP BY` of it may select the table's
//! other columns). `CREATE TABLE … AS` with a declared key keeps it, and leaves nothing when the
//! query's rows repeat a key.

use nvpage::{Layer, ReadOps};

use crate::common::{rows, run_all, runtime, session, try_rows};

#[test]
fn primary_keys_declared_in_sql_are_the_engines() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(
            &s,
            "CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR(20), grp INT);
             CREATE TABLE pair (a INT, b INT, v INT, PRIMARY KEY (b, a));
             INSERT INTO t VALUES (1, 'one', 7), (2, 'two', 7), (3, 'three', 8);",
        )
        .await;
        {
            let rx = s.database().begin_read().unwrap();
            for (table, key) in [("t", vec![0]), ("pair", vec![1, 0])] {
                let t = rx.table(table).unwrap();
                assert_eq!(t.schema().primary_key(), Some(&key[..]), "{table}");
                assert!(key.iter().all(|&c| !t.schema().columns()[c].nullable), "{table}");
                let pk = rx.primary_key(&t).unwrap().expect("a primary key index");
                assert_eq!(pk.name(), format!("{table}_pkey"));
            }
        }
        let e = try_rows(&s, "INSERT INTO t VALUES (2, 'again', 9)").await.unwrap_err();
        assert!(e.contains("t_pkey"), "{e}");
        let e = try_rows(&s, "INSERT INTO pair VALUES (NULL, 1, 1)").await.unwrap_err();
        assert!(e.contains("NOT NULL") || e.contains("non-nullable"), "{e}");
        let e = try_rows(&s, "DROP INDEX t_pkey").await.unwrap_err();
        assert!(e.contains("primary key of table t"), "{e}");
        // `name` depends on the key, so it may be selected beside a GROUP BY of the key alone.
        assert_eq!(
            rows(&s, "SELECT id, name, count(*) FROM t GROUP BY id ORDER BY id").await,
            [["1", "one", "1"], ["2", "two", "1"], ["3", "three", "1"]]
        );
        // A declared key in CREATE TABLE … AS: kept, and enforced on the query's rows.
        run_all(&s, "CREATE TABLE byname (name VARCHAR(20) PRIMARY KEY, id BIGINT) AS SELECT name, id FROM t").await;
        let e = try_rows(&s, "CREATE TABLE bygrp (grp INT PRIMARY KEY, n BIGINT) AS SELECT grp, id FROM t")
            .await
            .unwrap_err();
        assert!(e.contains("bygrp_pkey"), "{e}");
        let rx = s.database().begin_read().unwrap();
        assert!(rx.table("bygrp").is_err(), "a failed CREATE TABLE … AS leaves no table");
        let byname = rx.table("byname").unwrap();
        assert_eq!(byname.schema().primary_key(), Some(&[0][..]));
        assert_eq!(rx.row_count(&byname).unwrap(), 3);
        // Dropped with the table.
        drop(rx);
        run_all(&s, "DROP TABLE t").await;
        assert!(s.database().begin_read().unwrap().index("t_pkey").is_err());
    });
}
