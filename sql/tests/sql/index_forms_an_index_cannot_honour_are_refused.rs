//! Goal: `CREATE INDEX` makes the index it was asked for or none. A partial index, `NULLS NOT
//! DISTINCT`, another access method, an operator class, `INCLUDE` columns and storage
//! parameters are each refused with an error naming them, before anything changes (no index,
//! and a transaction around the statement stays usable); a column's order and `CONCURRENTLY`
//! are accepted, and such an index answers and enforces uniqueness as a plain one does.

use nvpage::{Layer, ReadOps};

use crate::common::{rows, run_all, runtime, session, try_rows};

#[test]
fn index_forms_that_would_change_what_the_index_is_are_refused_and_change_nothing() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(
            &s,
            "CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR(20), active BOOLEAN);
             INSERT INTO t VALUES (1, 'a', true), (2, 'a', false), (3, NULL, true), (4, NULL, false);",
        )
        .await;
        run_all(&s, "BEGIN").await;
        for (sql, names) in [
            ("CREATE UNIQUE INDEX u ON t (name) WHERE active", "partial index (WHERE active)"),
            ("CREATE UNIQUE INDEX u ON t (name) NULLS NOT DISTINCT", "NULLS NOT DISTINCT"),
            ("CREATE INDEX u ON t USING hash (name)", "USING HASH"),
            ("CREATE INDEX u ON t (name) INCLUDE (id)", "INCLUDE"),
            ("CREATE INDEX u ON t (name text_pattern_ops)", "operator class (text_pattern_ops)"),
            ("CREATE INDEX u ON t (name) WITH (fillfactor = 70)", "storage parameters"),
        ] {
            let e = try_rows(&s, sql).await.expect_err(sql);
            assert!(e.contains("CREATE INDEX") && e.contains(names), "{sql}: {e}");
            assert!(s.in_transaction(), "{sql}: the refusal ended the transaction");
        }
        // The transaction the refusals happened in is whole: its statements commit.
        run_all(&s, "INSERT INTO t VALUES (5, 'b', true); COMMIT").await;
        assert_eq!(rows(&s, "SELECT count(*) FROM t").await, [["5"]]);
        assert!(s.database().begin_read().unwrap().index("u").is_err(), "a refusal made an index");

        // Order and CONCURRENTLY are accepted, and the index is an ordinary one.
        run_all(
            &s,
            "CREATE UNIQUE INDEX CONCURRENTLY by_id ON t USING btree (id DESC NULLS LAST);
             CREATE INDEX by_name ON t (name ASC, id DESC);",
        )
        .await;
        let e = try_rows(&s, "INSERT INTO t VALUES (5, 'c', true)").await.unwrap_err();
        assert!(e.contains("by_id"), "{e}");
        assert_eq!(
            rows(&s, "SELECT id FROM t WHERE name = 'a' ORDER BY id DESC").await,
            [["2"], ["1"]]
        );
        let rx = s.database().begin_read().unwrap();
        assert!(rx.index("by_id").is_ok() && rx.index("by_name").is_ok());
    });
}
