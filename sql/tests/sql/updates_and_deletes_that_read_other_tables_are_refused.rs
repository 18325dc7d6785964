//! Goal: an `UPDATE` or `DELETE` changes exactly the rows its `WHERE` picks, or nothing. One
//! whose `WHERE` reads a subquery (`IN`, `EXISTS`, `= ANY`, a scalar subquery) or whose `SET`
//! does, or that joins another table (`UPDATE … FROM`, which DataFusion refuses itself), is
//! refused with an error saying so —
//! DataFusion would hand the table only the parts of the `WHERE` that name it alone, and the
//! statement would change every row — and changes nothing, inside a transaction (which stays
//! usable) or outside one. The same change written with the keys listed does what it says.

use nvpage::Layer;

use crate::common::{rows, run_all, runtime, session, try_rows};

#[test]
fn changes_that_read_another_table_are_refused_and_change_nothing() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(
            &s,
            "CREATE TABLE u (id BIGINT PRIMARY KEY, v BIGINT);
             INSERT INTO u VALUES (1, 1), (2, 2), (7, 7);
             CREATE TABLE other (x BIGINT, y BIGINT);
             INSERT INTO other VALUES (2, 20), (3, 30);",
        )
        .await;
        let all = [["1", "1"], ["2", "2"], ["7", "7"]];
        for in_txn in [false, true] {
            if in_txn {
                run_all(&s, "BEGIN").await;
            }
            for (sql, verb, what) in [
                ("DELETE FROM u WHERE id IN (SELECT x FROM other)", "DELETE", "a subquery"),
                (
                    "DELETE FROM u WHERE EXISTS (SELECT 1 FROM other WHERE x = u.id)",
                    "DELETE",
                    "a subquery",
                ),
                ("DELETE FROM u WHERE id = ANY (SELECT x FROM other)", "DELETE", "a subquery"),
                ("DELETE FROM u WHERE v < (SELECT max(x) FROM other)", "DELETE", "a subquery"),
                ("UPDATE u SET v = 0 WHERE id IN (SELECT x FROM other)", "UPDATE", "a subquery"),
                (
                    "UPDATE u SET v = (SELECT max(y) FROM other) WHERE id = 2",
                    "UPDATE",
                    "a subquery",
                ),
                ("UPDATE u SET v = other.y FROM other WHERE u.id = other.x", "UPDATE ... FROM", ""),
            ] {
                let e = try_rows(&s, sql).await.expect_err(sql);
                // `UPDATE … FROM` DataFusion refuses itself.
                assert!(
                    e.contains(verb) && e.contains(what) && e.contains("is not supported"),
                    "{sql}: {e}"
                );
                assert_eq!(
                    rows(&s, "SELECT id, v FROM u ORDER BY id").await,
                    all,
                    "{sql} changed rows"
                );
                assert_eq!(s.in_transaction(), in_txn, "{sql}");
            }
            if in_txn {
                // The refusals left the transaction usable: it commits what it does next.
                run_all(&s, "UPDATE u SET v = v WHERE id = 1; COMMIT").await;
            }
        }
        // The same changes, with the keys the subquery would have found written out.
        run_all(&s, "UPDATE u SET v = 0 WHERE id IN (2, 3); DELETE FROM u WHERE id IN (7)").await;
        assert_eq!(rows(&s, "SELECT id, v FROM u ORDER BY id").await, [["1", "1"], ["2", "0"]]);
    });
}
