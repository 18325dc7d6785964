//! Goal: checking integer arithmetic for overflow changes no answer that fits. Queries with
//! `+`, `-` and `*` of integers wherever SQL puts them — `GROUP BY`, `HAVING`, `ORDER BY`,
//! `DISTINCT`, grouping sets, window functions and their `PARTITION BY` and `ORDER BY`, ordered
//! aggregates, joins, correlated and uncorrelated subqueries, CTEs, `UNION`, NULL literals,
//! every integer width, filters the scan takes and filters it leaves — give the same rows and
//! the same column names as DataFusion alone over in-memory copies of the same tables; writes,
//! `CREATE TABLE … AS`, prepared statements and `EXPLAIN` keep their names, types and values.

use std::sync::Arc;

use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use nvpage::Layer;
use nvpage_sql::Session;

use crate::common::{run_all, runtime, session, text, try_rows};

const SETUP: &str = "
CREATE TABLE t (id BIGINT PRIMARY KEY, a BIGINT, b INT, c SMALLINT, d BIGINT);
INSERT INTO t VALUES (1, 1, 10, 100, NULL), (2, 2, 20, 200, 5), (3, NULL, 30, NULL, 7),
  (4, 4, NULL, 4, 9), (5, 2, 20, 7, 1), (6, -3, -30, -3, -3);
CREATE TABLE t2 (x BIGINT, y INT);
INSERT INTO t2 VALUES (2, 1), (3, 2), (5, 3), (NULL, 4), (3, 5), (-2, 6);
CREATE TABLE big (id BIGINT PRIMARY KEY, a BIGINT, d BIGINT);
INSERT INTO big VALUES (1, 9223372036854775807, 1), (2, 5, NULL), (3, 7, 3);
";

/// A plain DataFusion context over in-memory copies of the session's tables.
async fn plain(s: &Session, names: &[&str]) -> SessionContext {
    let ctx = SessionContext::new();
    for n in names {
        let df = s.sql(&format!("SELECT * FROM {n}")).await.unwrap();
        let schema = Arc::new(df.schema().as_arrow().clone());
        let batches = df.collect().await.unwrap();
        ctx.register_table(*n, Arc::new(MemTable::try_new(schema, vec![batches]).unwrap()))
            .unwrap();
    }
    ctx
}

type Out = Result<(Vec<String>, Vec<Vec<String>>), String>;

/// The column names and rows of a statement's result, or its error.
async fn named_rows(df: Result<datafusion::dataframe::DataFrame, impl ToString>) -> Out {
    let b = df.map_err(|e| e.to_string())?.collect().await.map_err(|e| e.to_string())?;
    let names = b
        .first()
        .map(|b| b.schema().fields().iter().map(|f| f.name().clone()).collect())
        .unwrap_or_default();
    Ok((names, text(&b)))
}

/// Runs each query on the session and on `ctx`; the mismatches (rows compared sorted unless
/// the query has an `ORDER BY`).
async fn compare(s: &Session, ctx: &SessionContext, queries: &[&str]) -> Vec<String> {
    let mut bad = Vec::new();
    for q in queries {
        let (a, b) = (named_rows(s.sql(q).await).await, named_rows(ctx.sql(q).await).await);
        let norm = |o: Out| {
            o.map(|(n, mut r)| {
                if !q.to_uppercase().contains("ORDER BY") {
                    r.sort();
                }
                (n, r)
            })
        };
        let (a, b) = (norm(a), norm(b));
        if a != b {
            bad.push(format!("{q}\n  nvpage:    {a:?}\n  datafusion: {b:?}"));
        }
    }
    bad
}

fn check(bad: Vec<String>) {
    assert!(bad.is_empty(), "{} mismatches:\n{}", bad.len(), bad.join("\n"));
}

macro_rules! same_as_datafusion {
    ($name:ident, $queries:expr) => {
        #[test]
        fn $name() {
            let rt = runtime();
            let dir = tempfile::tempdir().unwrap();
            let s = session(dir.path(), Layer::best_compiled());
            rt.block_on(async {
                run_all(&s, SETUP).await;
                let ctx = plain(&s, &["t", "t2", "big"]).await;
                check(compare(&s, &ctx, &$queries).await);
            });
        }
    };
}

same_as_datafusion!(
    arithmetic_in_group_by_having_and_order_by,
    [
        "SELECT a + 1, count(*) FROM t GROUP BY a + 1",
        "SELECT a + 1 AS x, count(*) FROM t GROUP BY a + 1 HAVING a + 1 > 2 ORDER BY a + 1",
        "SELECT a + 1 FROM t GROUP BY a + 1 ORDER BY a + 1 DESC NULLS LAST",
        "SELECT b * 2, sum(a) FROM t GROUP BY b * 2 ORDER BY 1",
        "SELECT id FROM t ORDER BY a + 1 NULLS FIRST, id",
        "SELECT id FROM t ORDER BY a - b, id LIMIT 3",
        "SELECT DISTINCT a + 1 FROM t",
        "SELECT count(DISTINCT a + 1), sum(DISTINCT b - 1) FROM t",
        "SELECT a + 1, sum(b) FROM t GROUP BY ROLLUP(a + 1) ORDER BY 1",
        "SELECT a + 1, b * 2, count(*) FROM t GROUP BY GROUPING SETS ((a + 1), (b * 2)) ORDER BY 1, 2",
        "SELECT a + b, (a + b) * c, a + b * c, -(a + 1), -a - 1 FROM t ORDER BY id",
        "SELECT sum(a + 1) FILTER (WHERE id > 2), max(a * b) FROM t",
    ]
);

same_as_datafusion!(
    arithmetic_in_window_functions,
    [
        "SELECT id, sum(a) OVER (ORDER BY a + 1, id) FROM t ORDER BY id",
        "SELECT id, row_number() OVER (PARTITION BY b * 2 ORDER BY a - 1, id) FROM t ORDER BY id",
        "SELECT id, sum(a) OVER (ORDER BY id + 0 RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM t ORDER BY id",
        "SELECT id, sum(a + 1) OVER (PARTITION BY b * 2) FROM t ORDER BY id",
        "SELECT a + 1, rank() OVER (ORDER BY a + 1) FROM t ORDER BY id",
    ]
);

same_as_datafusion!(
    arithmetic_in_joins_subqueries_and_unions,
    [
        "SELECT t.id, t2.y FROM t JOIN t2 ON t.a + 1 = t2.x",
        "SELECT t.id, t2.y FROM t LEFT JOIN t2 ON t.a + 1 = t2.x AND t2.y * 2 > 2",
        "SELECT t.id, t2.y FROM t JOIN t2 ON t.id = t2.x WHERE t.a + t2.x > 3",
        "SELECT id, (SELECT max(y) FROM t2 WHERE t2.x = t.a + 1) FROM t ORDER BY id",
        "SELECT id FROM t WHERE a + 1 IN (SELECT x FROM t2)",
        "SELECT id FROM t WHERE a + 1 NOT IN (SELECT x FROM t2 WHERE x IS NOT NULL)",
        "SELECT id FROM t WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.x = t.a + 1)",
        "SELECT id FROM t WHERE NOT EXISTS (SELECT 1 FROM t2 WHERE t2.x - 1 = t.a)",
        "SELECT id FROM t WHERE b > (SELECT min(y) * 2 FROM t2)",
        "SELECT id FROM t WHERE a = (SELECT max(x) - 1 FROM t2 WHERE t2.y = t.id)",
        "WITH c AS (SELECT id, a * 2 AS y FROM t) SELECT y + 1 FROM c ORDER BY id",
        "WITH c AS (SELECT a * 2 FROM t) SELECT * FROM c",
        "SELECT a + 1 FROM t UNION SELECT x - 1 FROM t2",
        "SELECT b + 1 FROM t UNION ALL SELECT a FROM t",
        "SELECT b + b FROM t UNION ALL SELECT x FROM t2",
        "SELECT * FROM (SELECT a + 1 FROM t) s",
        "SELECT s.\"t.a + Int64(1)\" FROM (SELECT a + 1 FROM t) s",
    ]
);

same_as_datafusion!(
    arithmetic_over_literals_nulls_and_every_integer_width,
    [
        "SELECT NULL + 1, 1 + NULL, NULL * NULL",
        "SELECT a + NULL, NULL - b FROM t ORDER BY id",
        "SELECT -9223372036854775808",
        "SELECT -9223372036854775808 + 0",
        "SELECT 9223372036854775807 - 1",
        "SELECT CAST(1 AS INT) + CAST(2 AS INT), CAST(3 AS SMALLINT) * CAST(4 AS SMALLINT)",
        "SELECT c + c, c * 2, c - b, b + a, arrow_typeof(c + c), arrow_typeof(b + b), arrow_typeof(c * 2) FROM t ORDER BY id",
        "SELECT 1 + 2 * 3, (1 + 2) * 3, 2 - 3 - 4",
        "SELECT CAST(a AS DOUBLE) + 1 FROM t ORDER BY id",
        "SELECT a / 2 + a % 2 FROM t ORDER BY id",
        "SELECT date '2024-01-01' + 1",
        "SELECT count(*) - 1, count(a) * 2 FROM t",
        "SELECT CAST(1 AS INT UNSIGNED) + CAST(2 AS INT UNSIGNED)",
        "SELECT arrow_typeof(CAST(1 AS TINYINT) + CAST(2 AS TINYINT)), CAST(100 AS TINYINT) + CAST(20 AS TINYINT)",
    ]
);

same_as_datafusion!(
    arithmetic_in_filters_the_scan_takes_or_leaves,
    [
        "SELECT id FROM t WHERE a + 1 > 2",
        "SELECT id FROM t WHERE a > 1 AND b * 2 < 50",
        "SELECT id FROM t WHERE id < 5 AND a + 1 = 3",
        "SELECT id FROM t WHERE (a + 1 > 2) OR b = 10",
        "SELECT id FROM t WHERE a + 1 IS NULL",
        "SELECT id FROM t WHERE a - 1 BETWEEN 0 AND 3",
        "SELECT id FROM t WHERE a + 1 IN (2, 3, 5)",
        "SELECT id FROM t WHERE c * 2 > 100",
        "SELECT id FROM t WHERE a > 1 + 0",
        "SELECT id FROM t WHERE a = 3 - 1",
        "SELECT id FROM t WHERE b > 2 * 5",
        "SELECT id FROM t WHERE c = 2 + 2",
        "SELECT id FROM t WHERE id BETWEEN 1 + 1 AND 2 * 2",
        "SELECT id FROM t WHERE a IN (1 + 1, 4 - 0)",
    ]
);

same_as_datafusion!(
    arithmetic_in_ordered_aggregates,
    [
        "SELECT array_agg(id ORDER BY a + 1, id) FROM t",
        "SELECT first_value(id ORDER BY a - 1) FROM t WHERE a IS NOT NULL",
        "SELECT string_agg(CAST(id AS VARCHAR), ',' ORDER BY b * 2, id) FROM t",
        "SELECT EXISTS (SELECT 1 FROM t2 WHERE t2.x = t.a + 1) FROM t ORDER BY id",
    ]
);

same_as_datafusion!(
    bigint_sums_that_fit,
    [
        "SELECT sum(a), sum(b), sum(c), sum(d) FROM t",
        "SELECT b, sum(a) FROM t GROUP BY b ORDER BY b",
        "SELECT sum(a) FILTER (WHERE id > 2), sum(d) FILTER (WHERE a IS NULL) FROM t",
        "SELECT b, sum(a) FILTER (WHERE d > 1) FROM t GROUP BY b ORDER BY b",
        "SELECT b, sum(a) AS s FROM t GROUP BY b HAVING sum(a) > 1 ORDER BY sum(a) DESC, b",
        "SELECT sum(a) FROM t WHERE id < 0",
        "SELECT b, sum(a) FROM t WHERE a IS NULL GROUP BY b",
        "SELECT sum(x), sum(DISTINCT x), count(DISTINCT y) FROM t2",
        "SELECT count(DISTINCT a), sum(b) FROM t",
        "SELECT sum(a), sum(d) FROM big WHERE id > 1",
        "SELECT sum(a) / count(a), avg(a), sum(a) + 1 FROM t",
        "SELECT * FROM (SELECT b, sum(a) FROM t GROUP BY b) s ORDER BY 1",
        "SELECT sum(a) FROM t UNION ALL SELECT sum(x) FROM t2",
        "SELECT id, (SELECT sum(x) FROM t2 WHERE t2.y = t.id) FROM t ORDER BY id",
        "SELECT sum(a) FILTER (WHERE a + 1 > 2) FROM t",
        "SELECT count(a) FILTER (WHERE a + 1 > 2), max(b) FILTER (WHERE -b < 0) FROM t",
        "SELECT id, count(a) FILTER (WHERE a * 2 > 2) OVER (ORDER BY c) FROM t ORDER BY id",
        "SELECT sum(a ORDER BY id) FROM t",
        "SELECT a + 1, sum(d) FROM t GROUP BY GROUPING SETS ((a + 1), ()) ORDER BY 1, 2",
        "SELECT id, sum(a) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t ORDER BY id",
        "SELECT id, sum(d) OVER (PARTITION BY b ORDER BY a) FROM t ORDER BY id",
        "SELECT id, sum(a) OVER () FROM t ORDER BY id",
        "SELECT id, sum(DISTINCT a) OVER (), sum(a) FILTER (WHERE id > 1) OVER (ORDER BY c) FROM t ORDER BY id",
        "SELECT b, sum(sum(a)) OVER (ORDER BY b) FROM t GROUP BY b ORDER BY b",
    ]
);

#[test]
fn writes_prepared_statements_and_explain_keep_their_names_types_and_values() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(&s, SETUP).await;
        let mut bad = Vec::new();
        let mut step = |what: &str,
                        r: Result<Vec<Vec<String>>, String>,
                        want: Option<Vec<Vec<&str>>>| match (&r, &want) {
            (Ok(got), Some(w)) if got == w => {}
            (Ok(_), None) => {}
            _ => bad.push(format!("{what}: {r:?} (want {want:?})")),
        };
        run_all(&s, "CREATE TABLE t3 (id BIGINT PRIMARY KEY, v BIGINT, w INT)").await;
        step(
            "insert select",
            try_rows(&s, "INSERT INTO t3 SELECT id, a + 1, b * 2 FROM t").await,
            None,
        );
        step(
            "after insert",
            try_rows(&s, "SELECT id, v, w FROM t3 ORDER BY id").await,
            Some(vec![
                vec!["1", "2", "20"],
                vec!["2", "3", "40"],
                vec!["3", "NULL", "60"],
                vec!["4", "5", "NULL"],
                vec!["5", "3", "40"],
                vec!["6", "-2", "-60"],
            ]),
        );
        step(
            "insert values",
            try_rows(&s, "INSERT INTO t3 VALUES (7, 9223372036854775806 + 1, 2147483646 + 1)")
                .await,
            None,
        );
        step(
            "after values",
            try_rows(&s, "SELECT v, w FROM t3 WHERE id = 7").await,
            Some(vec![vec!["9223372036854775807", "2147483647"]]),
        );
        step(
            "update",
            try_rows(&s, "UPDATE t3 SET v = v * 2, w = w - 1 WHERE id % 2 = 0").await,
            None,
        );
        step(
            "after update",
            try_rows(&s, "SELECT id, v, w FROM t3 ORDER BY id").await,
            Some(vec![
                vec!["1", "2", "20"],
                vec!["2", "6", "39"],
                vec!["3", "NULL", "60"],
                vec!["4", "10", "NULL"],
                vec!["5", "3", "40"],
                vec!["6", "-4", "-61"],
                vec!["7", "9223372036854775807", "2147483647"],
            ]),
        );
        step(
            "update excl overflow",
            try_rows(&s, "UPDATE t3 SET v = v + 1 WHERE v < 100").await,
            None,
        );
        step(
            "delete arith",
            try_rows(&s, "DELETE FROM t3 WHERE w * 2 > 100 AND id < 7").await,
            None,
        );
        step(
            "after all",
            try_rows(&s, "SELECT id, v, w FROM t3 ORDER BY id").await,
            Some(vec![
                vec!["1", "3", "20"],
                vec!["2", "7", "39"],
                vec!["4", "11", "NULL"],
                vec!["5", "4", "40"],
                vec!["6", "-3", "-61"],
                vec!["7", "9223372036854775807", "2147483647"],
            ]),
        );
        step(
            "ctas",
            try_rows(&s, "CREATE TABLE t4 AS SELECT id, a * b AS ab, c + c AS cc, a + 1 FROM t")
                .await,
            None,
        );
        step(
            "ctas read",
            try_rows(&s, "SELECT id, ab, cc, \"t.a + Int64(1)\" FROM t4 ORDER BY id").await,
            Some(vec![
                vec!["1", "10", "200", "2"],
                vec!["2", "40", "400", "3"],
                vec!["3", "NULL", "NULL", "NULL"],
                vec!["4", "NULL", "8", "5"],
                vec!["5", "40", "14", "3"],
                vec!["6", "90", "-6", "-2"],
            ]),
        );
        let ty = try_rows(&s, "SELECT arrow_typeof(ab), arrow_typeof(cc) FROM t4 LIMIT 1").await;
        step("ctas types", ty, Some(vec![vec!["Int64", "Int16"]]));
        step(
            "prepare",
            try_rows(&s, "PREPARE p(BIGINT) AS SELECT $1 + a FROM t WHERE id = 2").await,
            None,
        );
        step("execute", try_rows(&s, "EXECUTE p(10)").await, Some(vec![vec!["12"]]));
        let e = try_rows(&s, "EXECUTE p(9223372036854775807)").await;
        let ok = matches!(&e, Err(m) if m.contains("integer out of range"));
        step("execute overflow", if ok { Ok(vec![]) } else { Err(format!("{e:?}")) }, None);
        step(
            "prepare untyped",
            try_rows(&s, "PREPARE q AS SELECT a + $1 FROM t WHERE id = 2").await,
            None,
        );
        step("execute untyped", try_rows(&s, "EXECUTE q(10)").await, Some(vec![vec!["12"]]));
        step("explain", try_rows(&s, "EXPLAIN SELECT a + 1 FROM t").await, None);
        step(
            "explain window",
            try_rows(&s, "EXPLAIN SELECT sum(a) OVER (ORDER BY a + 1) FROM t").await,
            None,
        );
        step(
            "explain analyze",
            try_rows(&s, "EXPLAIN ANALYZE SELECT a + 1, count(*) FROM t GROUP BY a + 1").await,
            None,
        );
        step("explain verbose", try_rows(&s, "EXPLAIN VERBOSE SELECT a + 1 FROM t").await, None);
        step(
            "unary minus",
            try_rows(&s, "SELECT -a FROM big WHERE id = 1").await,
            Some(vec![vec!["-9223372036854775807"]]),
        );
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    });
}
