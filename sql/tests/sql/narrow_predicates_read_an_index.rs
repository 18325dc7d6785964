//! Goal: a filter that bounds an index's leading column to a few rows reads them through the
//! index, a filter that keeps many rows scans the pages, and both answer exactly as a table
//! without the index does: equality, ranges from either side, `BETWEEN`, an empty range, NULLs,
//! a range on a later column of the index (not usable), strings, small integers, timestamps,
//! booleans, and a `LIMIT`.

use nvpage::Layer;

use crate::common::{rows, run_all, runtime, session};

/// The plan's text for `sql`.
async fn plan(s: &nvpage_sql::Session, sql: &str) -> String {
    rows(s, &format!("EXPLAIN {sql}"))
        .await
        .iter()
        .map(|r| r.join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_narrow_range_reads_the_index_and_answers_as_a_scan() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(
            &s,
            "CREATE TABLE t (id BIGINT PRIMARY KEY, grp INT, amount DECIMAL(12, 2), day DATE,
                             name VARCHAR(20), tiny SMALLINT, at TIMESTAMP, flag BOOLEAN);
             INSERT INTO t SELECT value, CAST(value % 50 AS INT),
                    CAST(value AS DECIMAL(12, 2)) / 4,
                    CAST(DATE '2000-01-01' + CAST(value AS INT) AS DATE),
                    CASE WHEN value % 10 = 0 THEN NULL ELSE concat('n', value) END,
                    CAST(value - 10000 AS SMALLINT), to_timestamp_micros(value * 1500000),
                    value = 5
             FROM generate_series(1, 20000);
             CREATE INDEX t_grp_day ON t (grp, day);
             CREATE INDEX t_name ON t (name);
             CREATE INDEX t_tiny ON t (tiny);
             CREATE INDEX t_at ON t (at);
             CREATE INDEX t_flag ON t (flag);
             CREATE TABLE plain AS SELECT * FROM t;",
        )
        .await;
        // (filter, whether an index serves it)
        let cases = [
            ("id = 777", Some("t_pkey")),
            ("id BETWEEN 100 AND 140", Some("t_pkey")),
            ("id > 19990", Some("t_pkey")),
            ("id >= 19990 AND id < 19995", Some("t_pkey")),
            ("id < 5 AND grp = 3", Some("t_pkey")),
            ("id > 100 AND id < 90", Some("t_pkey")),
            ("name = 'n1234'", Some("t_name")),
            ("name = 'n1230'", Some("t_name")),
            ("tiny BETWEEN -3 AND 4", Some("t_tiny")),
            (
                "at >= TIMESTAMP '1970-01-01 01:00:00' AND at < TIMESTAMP '1970-01-01 01:00:30.75'",
                Some("t_at"),
            ),
            ("flag", Some("t_flag")),
            ("flag = true", Some("t_flag")),
            ("tiny > -9000", None),
            ("flag = false", None),
            // Most rows, or many: the scan is cheaper. The index on (grp, day) is read by its
            // leading column alone, whose 400 rows of group 7 are more than a quarter of the
            // table's pages.
            ("id > 100", None),
            ("grp = 7", None),
            ("grp = 7 AND day < DATE '2000-03-01'", None),
            // A later column of the index bounds nothing the index can seek.
            ("day = DATE '2000-02-01'", None),
            ("name IS NULL", None),
        ];
        for (filter, via) in cases {
            let q = |table: &str| {
                format!(
                    "SELECT id, grp, amount, day, name, tiny, at, flag FROM {table}
                     WHERE {filter} ORDER BY id"
                )
            };
            let p = plan(&s, &q("t")).await;
            match via {
                Some(index) => assert!(p.contains(&format!("index={index}")), "{filter}:\n{p}"),
                None => assert!(!p.contains("index="), "{filter}:\n{p}"),
            }
            assert_eq!(rows(&s, &q("t")).await, rows(&s, &q("plain")).await, "{filter}");
        }
        assert_eq!(
            rows(&s, "SELECT id, amount, name FROM t WHERE id BETWEEN 9 AND 11 ORDER BY id").await,
            [["9", "2.25", "n9"], ["10", "2.50", "NULL"], ["11", "2.75", "n11"]]
        );
        let limited =
            rows(&s, "SELECT count(*) FROM (SELECT id FROM t WHERE id < 50 LIMIT 7)").await;
        assert_eq!(limited, [["7"]]);
    });
}

#[test]
fn inside_a_transaction_the_scan_sees_its_own_rows() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(
            &s,
            "CREATE TABLE t (id BIGINT PRIMARY KEY, v INT);
             INSERT INTO t SELECT value, 1 FROM generate_series(1, 5000);
             BEGIN;
             UPDATE t SET v = 2 WHERE id = 42;
             INSERT INTO t VALUES (6000, 3);",
        )
        .await;
        assert_eq!(rows(&s, "SELECT v FROM t WHERE id = 42").await, [["2"]]);
        assert_eq!(rows(&s, "SELECT v FROM t WHERE id = 6000").await, [["3"]]);
        run_all(&s, "ROLLBACK").await;
        assert_eq!(rows(&s, "SELECT v FROM t WHERE id = 42").await, [["1"]]);
        assert!(rows(&s, "SELECT v FROM t WHERE id = 6000").await.is_empty());
        assert!(plan(&s, "SELECT v FROM t WHERE id = 42").await.contains("index=t_pkey"));
    });
}
