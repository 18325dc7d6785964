//! Goal: every nvpage column type goes in through SQL and comes back as it went in, on every
//! layer — extremes and NULLs included, `CHAR(n)` without its padding — and a value a column
//! cannot hold is an error that names the column, with nothing stored.

mod common;

use common::{rows, run_all, runtime, session, try_rows};
use nvpage::Layer;

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
        let e = try_rows(&s, "CREATE TABLE f (x DOUBLE)").await.unwrap_err();
        assert!(e.contains("column x") && e.contains("no nvpage counterpart"), "{e}");
        let e = try_rows(&s, "CREATE TABLE f (x DECIMAL(20, 2))").await.unwrap_err();
        assert!(e.contains("column x") && e.contains("DECIMAL(20, 2)"), "{e}");
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
