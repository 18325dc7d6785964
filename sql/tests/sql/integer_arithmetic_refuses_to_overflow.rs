//! Goal: integer arithmetic never wraps. `+`, `-` and `*` of integers whose result does not fit
//! their type fail the statement with an error naming the type (as PostgreSQL's "integer out
//! of range"), in a query over a table, in a literal expression folded at planning, in an
//! `UPDATE`, and in a `CREATE TABLE … AS`; a failed write keeps nothing, and an `UPDATE` evaluates
//! its `SET` expressions on the rows it changes only. Results that fit are
//! exact, NULLs stay NULL, column names and types are the operator's, and decimal arithmetic
//! is untouched.

use nvpage::{Layer, ReadOps};

use crate::common::{rows, run_all, runtime, session, try_rows};

#[test]
fn integer_arithmetic_that_does_not_fit_is_an_error_not_a_wrapped_value() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(
            &s,
            "CREATE TABLE t (id BIGINT PRIMARY KEY, big BIGINT, qty INT, small SMALLINT, price DECIMAL(12, 2));
             INSERT INTO t VALUES
               (1, 9223372036854775807, 2147483647, 32767, 9999999999.99),
               (2, -9223372036854775808, -2147483648, -32768, 1.50),
               (3, 10, 46341, 200, NULL),
               (4, NULL, NULL, NULL, 2.00);",
        )
        .await;
        // Every form that overflows, over the table's rows.
        for (sql, ty) in [
            ("SELECT big + 1 FROM t", "Int64"),
            ("SELECT big - 1 FROM t WHERE id = 2", "Int64"),
            ("SELECT big * 2 FROM t WHERE id = 2", "Int64"),
            ("SELECT -big - big FROM t WHERE id = 1", "Int64"),
            ("SELECT qty * qty FROM t WHERE id = 3", "Int32"),
            ("SELECT qty + qty FROM t WHERE id = 1", "Int32"),
            ("SELECT small * small FROM t WHERE id = 3", "Int16"),
            ("SELECT id FROM t WHERE big + 1 > 0", "Int64"),
            ("SELECT sum(qty * qty) FROM t", "Int32"),
            ("SELECT -big FROM t WHERE id = 2", "Int64"),
            ("SELECT -qty FROM t WHERE id = 2", "Int32"),
        ] {
            let e = try_rows(&s, sql).await.expect_err(sql);
            assert!(e.contains(&format!("integer out of range for {ty}")), "{sql}: {e}");
        }
        // A literal expression is folded at planning, and fails there.
        let e = try_rows(&s, "SELECT 9223372036854775807 + 1").await.unwrap_err();
        assert!(e.contains("integer out of range for Int64"), "{e}");
        // What fits is exact; NULL operands give NULL; the column is named as written.
        let batches = s
            .sql("SELECT id, big - 1, qty * 2, small + small, price * 2 FROM t WHERE id > 2 ORDER BY id")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let schema = batches[0].schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["id", "t.big - Int64(1)", "t.qty * Int64(2)", "t.small + t.small", "t.price * Int64(2)"]);
        assert_eq!(
            rows(&s, "SELECT id, big - 1, qty * 2, small + small, price * 2 FROM t WHERE id > 2 ORDER BY id")
                .await,
            [["3", "9", "92682", "400", "NULL"], ["4", "NULL", "NULL", "NULL", "4.00"]]
        );
        assert_eq!(rows(&s, "SELECT big - 1 + 1 FROM t WHERE id = 1").await, [["9223372036854775807"]]);
        // A write that overflows keeps nothing.
        let e = try_rows(&s, "UPDATE t SET qty = qty + qty").await.unwrap_err();
        assert!(e.contains("integer out of range for Int32"), "{e}");
        assert_eq!(rows(&s, "SELECT qty FROM t WHERE id = 3").await, [["46341"]]);
        let e = try_rows(&s, "CREATE TABLE doubled AS SELECT id, big * 2 AS b FROM t").await.unwrap_err();
        assert!(e.contains("integer out of range for Int64"), "{e}");
        assert!(s.database().begin_read().unwrap().table("doubled").is_err());
        // The same statement over the rows that fit does what it says.
        // The SET expression runs on the rows the statement changes, and on no other.
        run_all(&s, "UPDATE t SET qty = qty + qty WHERE id = 3").await;
        run_all(&s, "UPDATE t SET small = 1000 / (id - 3) WHERE id = 4").await;
        assert_eq!(rows(&s, "SELECT id, small FROM t WHERE id >= 3 ORDER BY id").await, [["3", "200"], ["4", "1000"]]);
        run_all(&s, "CREATE TABLE doubled AS SELECT id, big * 2 AS b FROM t WHERE id IN (3, 4)").await;
        assert_eq!(rows(&s, "SELECT qty FROM t WHERE id = 3").await, [["92682"]]);
        assert_eq!(rows(&s, "SELECT id, b FROM doubled ORDER BY id").await, [["3", "20"], ["4", "NULL"]]);
        let rx = s.database().begin_read().unwrap();
        assert_eq!(rx.row_count(&rx.table("doubled").unwrap()).unwrap(), 2);
    });
}
