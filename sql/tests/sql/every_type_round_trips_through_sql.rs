//! Goal: every nvpage column type goes in through SQL and comes back as it went in, on every
//! layer — extremes and NULLs included, `CHAR(n)` without its padding, NaN and −0.0 — an index
//! on a float column orders its keys as DataFusion's `ORDER BY` does, and a value a column
//! cannot hold is an error that names the column, with nothing stored.

use nvpage::{Layer, ReadOps};

use crate::common::{rows, run_all, runtime, session, try_rows};

#[test]
fn values_come_back_as_they_went_in_on_every_layer() {
    let rt = runtime();
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let s = session(dir.path(), layer);
        rt.block_on(async {
            run_all(
                &s,
                "CREATE TABLE t (i INT, b BIGINT NOT NULL, d DECIMAL(18, 4), e DATE, c CHAR(5), \
                   v VARCHAR(20), x TEXT);
                 INSERT INTO t VALUES
                   (2147483647, 9223372036854775807, 99999999999999.9999, DATE '9999-12-31',
                    'ab', 'héllo', ''),
                   (-2147483648, -9223372036854775808, -99999999999999.9999, DATE '0001-01-01',
                    'abcde', '', 'x'),
                   (NULL, 0, NULL, NULL, NULL, NULL, NULL),
                   (0, 1, 0.0001, DATE '1970-01-01', '  a', 'tail  ', ' lead')",
            )
            .await;
            let got =
                rows(&s, "SELECT i, b, d, e, c, v, x, length(c), length(v) FROM t ORDER BY b")
                    .await;
            let want: Vec<Vec<&str>> = vec![
                vec![
                    "-2147483648",
                    "-9223372036854775808",
                    "-99999999999999.9999",
                    "0001-01-01",
                    "abcde",
                    "",
                    "x",
                    "5",
                    "0",
                ],
                vec!["NULL", "0", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"],
                vec!["0", "1", "0.0001", "1970-01-01", "  a", "tail  ", " lead", "3", "6"],
                vec![
                    "2147483647",
                    "9223372036854775807",
                    "99999999999999.9999",
                    "9999-12-31",
                    "ab",
                    "héllo",
                    "",
                    "2",
                    "5",
                ],
            ];
            assert_eq!(got, want, "{layer:?}");
            // What the table reads as, column by column.
            let described = rows(&s, "DESCRIBE t").await;
            let types: Vec<(&str, &str, &str)> =
                described.iter().map(|r| (r[0].as_str(), r[1].as_str(), r[2].as_str())).collect();
            assert_eq!(
                types,
                [
                    ("i", "Int32", "YES"),
                    ("b", "Int64", "NO"),
                    ("d", "Decimal128(18, 4)", "YES"),
                    ("e", "Date32", "YES"),
                    ("c", "Utf8", "YES"),
                    ("v", "Utf8", "YES"),
                    ("x", "Utf8", "YES"),
                ]
            );
        });
    }
}

#[test]
fn a_value_a_column_cannot_hold_names_the_column_and_stores_nothing() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(&s, "CREATE TABLE t (id BIGINT NOT NULL, c CHAR(3), n INT)").await;
        for (sql, names) in [
            ("INSERT INTO t VALUES (1, 'abc', 1), (2, 'abcd', 2)", "c"),
            ("INSERT INTO t VALUES (1, 'a', 1), (NULL, 'b', 2)", "id"),
            ("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 3000000000)", "n"),
        ] {
            let e = try_rows(&s, sql).await.unwrap_err();
            assert!(e.contains(names), "{sql}: {e}");
            assert_eq!(rows(&s, "SELECT count(*) FROM t").await, [["0"]], "{sql} left rows");
        }
        let e = try_rows(&s, "CREATE TABLE f (x TIME)").await.unwrap_err();
        assert!(e.contains("column x") && e.contains("no nvpage counterpart"), "{e}");
        let e = try_rows(&s, "CREATE TABLE f (x DECIMAL(20, 2))").await.unwrap_err();
        assert!(e.contains("column x") && e.contains("DECIMAL(20, 2)"), "{e}");
        // A type that could hold nothing is refused, as PostgreSQL refuses it.
        for ty in ["DECIMAL(0, 0)", "VARCHAR(0)", "CHAR(0)", "BINARY(0)", "VARBINARY(0)"] {
            let e = try_rows(&s, &format!("CREATE TABLE f (x {ty})")).await.unwrap_err();
            assert!(
                e.contains("column x") && (e.contains("holds nothing") || e.contains(ty)),
                "{ty}: {e}"
            );
        }
        assert!(
            s.database().begin_read().unwrap().table("f").is_err(),
            "a refused CREATE TABLE left a table"
        );
        // A decimal result wider than 18 digits is checked value by value, naming the row.
        let e = try_rows(
            &s,
            "CREATE TABLE w AS SELECT CAST(12345678901234567890 AS DECIMAL(38, 0)) AS big",
        )
        .await
        .unwrap_err();
        assert!(e.contains("column big") && e.contains("row 1"), "{e}");
        assert!(
            try_rows(&s, "SELECT * FROM w").await.is_err(),
            "the failed CREATE TABLE … AS left a table"
        );
    });
}

/// The rows every new type's test stores, as SQL values: extremes, NaN, infinities, −0.0, empty
/// bytes, NULLs.
const NEW_TYPE_ROWS: &str = "
    (1, true, 32767, 1.5, TIMESTAMP '2024-02-29 01:02:03.123456', X'00ff'),
    (2, false, -32768, CAST('-0.0' AS DOUBLE), TIMESTAMP '1969-12-31 23:59:59.999999', X''),
    (3, NULL, NULL, NULL, NULL, NULL),
    (4, true, 0, CAST('NaN' AS DOUBLE), TIMESTAMP '1970-01-01 00:00:00', X'00'),
    (5, false, -1, CAST('-inf' AS DOUBLE), TIMESTAMP '2262-04-11 23:47:16', X'ff00ff'),
    (6, true, 1, CAST('inf' AS DOUBLE), TIMESTAMP '1677-09-21 00:12:44', X'0000'),
    (7, false, 2, 0.0, TIMESTAMP '2000-01-01 12:00:00', X'01'),
    (8, true, 3, CAST('-1e300' AS DOUBLE), TIMESTAMP '1999-12-31 23:59:59', X'fe'),
    (9, false, 4, CAST('5e-324' AS DOUBLE), TIMESTAMP '2030-06-15 08:30:00.5', X'7f')";

#[test]
fn new_types_come_back_as_they_went_in_and_floats_index_in_datafusions_order() {
    let rt = runtime();
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let s = session(dir.path(), layer);
        rt.block_on(async {
            run_all(
                &s,
                &format!(
                    "CREATE TABLE n (id INT NOT NULL, ok BOOLEAN, sm SMALLINT, f DOUBLE, \
                       ts TIMESTAMP, b BYTEA);
                     CREATE INDEX n_f ON n (f);
                     INSERT INTO n VALUES {NEW_TYPE_ROWS}"
                ),
            )
            .await;
            let stored = rows(&s, "SELECT * FROM n ORDER BY id").await;
            let want = [
                ["1", "true", "32767", "1.5", "2024-02-29T01:02:03.123456", "00ff"],
                ["2", "false", "-32768", "-0.0", "1969-12-31T23:59:59.999999", ""],
                ["3", "NULL", "NULL", "NULL", "NULL", "NULL"],
                ["4", "true", "0", "NaN", "1970-01-01T00:00:00", "00"],
                ["5", "false", "-1", "-inf", "2262-04-11T23:47:16", "ff00ff"],
                ["6", "true", "1", "inf", "1677-09-21T00:12:44", "0000"],
                ["7", "false", "2", "0.0", "2000-01-01T12:00:00", "01"],
                ["8", "true", "3", "-1e300", "1999-12-31T23:59:59", "fe"],
                ["9", "false", "4", "5e-324", "2030-06-15T08:30:00.500", "7f"],
            ];
            assert_eq!(stored, want, "{layer:?}");
            // DataFusion's float order: the ids of `ORDER BY f` (NULL first, as the index).
            let df_order = rows(&s, "SELECT id FROM n ORDER BY f NULLS FIRST, id").await;
            let df_order: Vec<i32> = df_order.iter().map(|r| r[0].parse().unwrap()).collect();
            // The index's order, read through the engine.
            let db = s.database();
            let rx = db.begin_read().unwrap();
            let ix = rx.index("n_f").unwrap();
            let ids: Vec<i32> = rx
                .index_range(&ix, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
                .unwrap()
                .map(|g| g.unwrap().row().unwrap().get_named::<nvpage::kind::I32>("id").unwrap())
                .collect();
            assert_eq!(ids, df_order, "{layer:?}: the index orders floats as DataFusion does");
            drop(rx);
            assert!(db.check().unwrap().is_sound());
        });
    }
}

/// A query's values land in declared columns as an INSERT's would: cast to the columns' types
/// (an integer into a double, a string into bytes), and a nanosecond timestamp truncated to
/// microseconds the same way on every path.
#[test]
fn declared_columns_and_inserts_store_a_value_alike() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(
            &s,
            "CREATE TABLE a1 (f DOUBLE, b VARBINARY(3)) AS SELECT 1, 'ab';
             CREATE TABLE i1 (f DOUBLE, b VARBINARY(3));
             INSERT INTO i1 VALUES (1, 'ab');
             CREATE TABLE a AS SELECT arrow_cast(-1500, 'Timestamp(Nanosecond, None)') AS ts;
             CREATE TABLE b (ts TIMESTAMP);
             INSERT INTO b SELECT arrow_cast(-1500, 'Timestamp(Nanosecond, None)');
             CREATE TABLE c (ts TIMESTAMP) AS SELECT arrow_cast(-1500, 'Timestamp(Nanosecond, None)')",
        )
        .await;
        assert_eq!(rows(&s, "SELECT * FROM a1").await, rows(&s, "SELECT * FROM i1").await);
        assert_eq!(rows(&s, "SELECT * FROM a1").await, [["1.0", "6162"]]);
        let want = [["1969-12-31T23:59:59.999999"]];
        for t in ["a", "b", "c"] {
            assert_eq!(rows(&s, &format!("SELECT ts FROM {t}")).await, want, "table {t}");
        }
        let e = try_rows(&s, "CREATE TABLE d (x SMALLINT) AS SELECT 100000").await.unwrap_err();
        assert!(e.contains("100000") || e.contains("x"), "{e}");
        assert!(try_rows(&s, "SELECT * FROM d").await.is_err(), "the failed CREATE left a table");
    });
}
