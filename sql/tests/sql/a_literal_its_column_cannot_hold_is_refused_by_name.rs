//! Goal: a literal that its column's type cannot hold, in an `INSERT … VALUES` or an `UPDATE …
//! SET`, is refused before anything changes, with an error naming the column, its type and
//! the value; inside a transaction the refusal leaves the transaction usable. Literals that
//! fit, NULLs and computed values are written as before.

use nvpage::Layer;

use crate::common::{rows, run_all, runtime, session, try_rows};

#[test]
fn a_literal_its_column_cannot_hold_is_refused_naming_the_column() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(
            &s,
            "CREATE TABLE t (id BIGINT PRIMARY KEY, small SMALLINT, qty INT, price DECIMAL(5, 2));
             INSERT INTO t VALUES (1, 1, 1, 1.00), (2, 2, 2, 2.00);",
        )
        .await;
        let before = rows(&s, "SELECT * FROM t ORDER BY id").await;
        for (sql, column, ty, value) in [
            ("INSERT INTO t VALUES (3, 40000, 1, 1.00)", "small", "Int16", "40000"),
            (
                "INSERT INTO t VALUES (3, 1, 1, 1.00), (4, -32769, 1, 1.00)",
                "small",
                "Int16",
                "-32769",
            ),
            ("INSERT INTO t (id, qty) VALUES (3, 3000000000)", "qty", "Int32", "3000000000"),
            ("INSERT INTO t (qty, id) VALUES ('many', 3)", "qty", "Int32", "many"),
            ("UPDATE t SET small = 70000 WHERE id = 1", "small", "Int16", "70000"),
            ("UPDATE t SET qty = 1, small = -40000", "small", "Int16", "-40000"),
        ] {
            let e = try_rows(&s, sql).await.expect_err(sql);
            let named = format!("column {column} ({ty}) cannot hold {value}");
            assert!(e.contains(&named), "{sql}: {e}");
            assert_eq!(rows(&s, "SELECT * FROM t ORDER BY id").await, before, "{sql}");
        }

        // Refused before any change: the transaction goes on and commits what it did.
        run_all(&s, "BEGIN; INSERT INTO t VALUES (3, 3, 3, 3.00);").await;
        let e = try_rows(&s, "UPDATE t SET small = 32768 WHERE id = 3").await.unwrap_err();
        assert!(e.contains("column small (Int16) cannot hold 32768"), "{e}");
        run_all(&s, "UPDATE t SET small = 32767 WHERE id = 3; COMMIT;").await;

        // What fits is written: the types' extremes, NULLs, and computed values.
        run_all(
            &s,
            "INSERT INTO t VALUES (4, -32768, 2147483647, 999.99), (5, NULL, NULL, NULL);
             UPDATE t SET small = small + 1 WHERE id = 1;",
        )
        .await;
        assert_eq!(
            rows(&s, "SELECT id, small, qty, price FROM t WHERE id <> 2 ORDER BY id").await,
            [
                ["1", "2", "1", "1.00"],
                ["3", "32767", "3", "3.00"],
                ["4", "-32768", "2147483647", "999.99"],
                ["5", "NULL", "NULL", "NULL"],
            ]
        );
    });
}
