//! Goal: `sum` of a `BIGINT` never wraps. A sum whose result does not fit an `Int64` fails the
//! statement with "integer out of range for Int64", ungrouped, grouped, under a FILTER and as
//! a window function; a sum whose running total leaves the range part-way and comes back is
//! exact, whatever the order of the rows and their split into partitions (PostgreSQL sums
//! `bigint` into `numeric`). No rows or only NULLs sum to NULL, the column keeps `sum`'s name
//! and type, and `HAVING` and `ORDER BY` over it plan as before.

use nvpage::Layer;

use crate::common::{rows, run_all, runtime, session, try_rows};

const MAX: &str = "9223372036854775807";

/// `t` holds 2000 rows: in group `g = 0`, 2^62 for each of the first 500 and −2^62 for each of
/// the last 500, which sum to 0 while their running sum in the order of `id` passes 2^63 on
/// the way; in group 1, 1 each. `u` holds groups that sum past the range (`g` 1 and 3) or
/// within it.
const SETUP: &str = "
CREATE TABLE t (id BIGINT PRIMARY KEY, g BIGINT, a BIGINT);
INSERT INTO t SELECT value, value % 2,
  CASE WHEN value % 2 = 1 THEN 1 WHEN value <= 1000 THEN 4611686018427387904
       ELSE -4611686018427387904 END
  FROM generate_series(1, 2000);
CREATE TABLE u (id BIGINT PRIMARY KEY, g BIGINT, a BIGINT, b INT);
INSERT INTO u VALUES
  (1, 1, 9223372036854775807, 1), (2, 1, 1, 1),
  (3, 2, 9223372036854775807, 1), (4, 2, 1, 1), (5, 2, -5, 1),
  (6, 3, -9223372036854775808, 1), (7, 3, -1, 1),
  (8, 4, NULL, 1), (9, 4, NULL, NULL),
  (10, 5, 7, 2), (11, 5, NULL, 2),
  (12, 6, 9223372036854775807, 3), (13, 6, -5, 3), (14, 6, 1, 3), (15, 6, -10, 3);
";

#[test]
fn a_bigint_sum_that_does_not_fit_is_an_error_not_a_wrapped_value() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(&s, SETUP).await;
        for sql in [
            "SELECT sum(a) FROM u",
            "SELECT sum(a) FROM u WHERE g = 1",
            "SELECT sum(a) FROM u WHERE g = 3",
            "SELECT g, sum(a) FROM u GROUP BY g",
            "SELECT b, sum(a) FROM u WHERE g < 3 GROUP BY b",
            "SELECT sum(a) FILTER (WHERE id <> 5) FROM u WHERE g = 2",
            "SELECT g, sum(a) FILTER (WHERE id <> 5) FROM u WHERE g = 2 GROUP BY g",
            "SELECT sum(a) FROM (SELECT a FROM u WHERE g = 5 UNION ALL SELECT a FROM u WHERE g = 6 \
             UNION ALL SELECT a FROM u WHERE g = 6)",
            "SELECT count(DISTINCT b), sum(a) FROM u",
            // As a window function: a frame whose sum does not fit.
            "SELECT id, sum(a) OVER (ORDER BY id) FROM u WHERE g = 2",
            "SELECT id, sum(a) OVER (PARTITION BY g ORDER BY id ROWS 1 PRECEDING) FROM t",
            "SELECT g, sum(a) OVER (PARTITION BY g) FROM u",
        ] {
            let e = try_rows(&s, sql).await.expect_err(sql);
            assert!(e.contains("integer out of range for Int64"), "{sql}: {e}");
        }
        // The error names the column and the sum.
        let e = try_rows(&s, "SELECT sum(a) FROM u WHERE g = 1").await.unwrap_err();
        assert!(e.contains("sum(u.a) overflowed (the sum is 9223372036854775808)"), "{e}");
        let e = try_rows(&s, "SELECT g, sum(a) FROM u WHERE g = 3 GROUP BY g").await.unwrap_err();
        assert!(e.contains("sum(u.a) overflowed (the sum is -9223372036854775809)"), "{e}");
    });
}

#[test]
fn a_bigint_sum_that_fits_is_exact_whatever_passes_the_range_on_the_way() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(&s, SETUP).await;
        assert_eq!(rows(&s, "SELECT sum(a) FROM t WHERE g = 0").await, [["0"]]);
        assert_eq!(rows(&s, "SELECT sum(a) FROM t").await, [["1000"]]);
        assert_eq!(
            rows(&s, "SELECT g, sum(a), count(*) FROM t GROUP BY g ORDER BY g").await,
            [["0", "0", "1000"], ["1", "1000", "1000"]]
        );
        assert_eq!(
            rows(&s, "SELECT sum(a) FILTER (WHERE id <= 502 OR id > 1500) FROM t WHERE g = 0")
                .await,
            [["4611686018427387904"]]
        );
        let max_less = |n: i64| (i64::MAX - n).to_string();
        assert_eq!(rows(&s, "SELECT sum(a) FROM u WHERE g = 2").await, [[max_less(4)]]);
        assert_eq!(
            rows(&s, "SELECT g, sum(a) FROM u WHERE g >= 2 AND g <> 3 GROUP BY g ORDER BY g").await,
            [["2", &max_less(4)], ["4", "NULL"], ["5", "7"], ["6", &max_less(14)]]
        );
        // As a window function: running sums, a whole partition, and a sliding frame.
        assert_eq!(
            rows(&s, "SELECT id, sum(a) OVER (ORDER BY id DESC) FROM u WHERE g = 2 ORDER BY id")
                .await,
            [["3", &max_less(4)], ["4", "-4"], ["5", "-5"]]
        );
        assert_eq!(
            rows(
                &s,
                "SELECT id, sum(a) OVER (PARTITION BY g) FROM u WHERE g IN (2, 4) ORDER BY id"
            )
            .await,
            [
                ["3", &max_less(4)],
                ["4", &max_less(4)],
                ["5", &max_less(4)],
                ["8", "NULL"],
                ["9", "NULL"]
            ]
        );
        assert_eq!(
            rows(
                &s,
                "SELECT id, sum(a) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) \
                 FROM u WHERE g IN (4, 6) ORDER BY id"
            )
            .await,
            [
                ["8", "NULL"],
                ["9", MAX],
                ["12", &max_less(5)],
                ["13", &max_less(4)],
                ["14", "-14"],
                ["15", "-9"]
            ]
        );
    });
}

#[test]
fn no_rows_or_only_nulls_sum_to_null_and_the_column_keeps_its_name() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(&s, SETUP).await;
        assert_eq!(rows(&s, "SELECT sum(a) FROM u WHERE id < 0").await, [["NULL"]]);
        assert_eq!(rows(&s, "SELECT sum(a) FROM u WHERE g = 4").await, [["NULL"]]);
        assert_eq!(rows(&s, "SELECT sum(a) FILTER (WHERE id < 0) FROM u WHERE g = 2").await, [["NULL"]]);
        assert_eq!(
            rows(&s, "SELECT g, sum(a) FILTER (WHERE id <> 7) FROM u WHERE g IN (3, 5) GROUP BY g ORDER BY g")
                .await,
            [["3", "-9223372036854775808"], ["5", "7"]]
        );
        assert_eq!(
            rows(&s, "SELECT g, sum(a) FILTER (WHERE b = 2) FROM u WHERE g IN (2, 5) GROUP BY g ORDER BY g")
                .await,
            [["2", "NULL"], ["5", "7"]]
        );
        // The column is `sum`'s: its name, its type, and what names it above.
        let df = s.sql("SELECT g, sum(a) FROM u WHERE g = 5 GROUP BY g").await.unwrap();
        let names: Vec<String> = df.schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ["g", "sum(u.a)"]);
        assert_eq!(rows(&s, "SELECT arrow_typeof(sum(a)) FROM u WHERE g = 5").await, [["Int64"]]);
        assert_eq!(
            rows(
                &s,
                "SELECT g, sum(a) FROM u WHERE g >= 2 AND g <> 3 GROUP BY g \
                 HAVING sum(a) > 0 ORDER BY sum(a) DESC"
            )
            .await,
            [["2", &(i64::MAX - 4).to_string()], ["6", &(i64::MAX - 14).to_string()], ["5", "7"]]
        );
        assert_eq!(
            rows(&s, "SELECT \"sum(u.a)\" FROM (SELECT g, sum(a) FROM u WHERE g = 5 GROUP BY g)").await,
            [["7"]]
        );
        // EXPLAIN shows the checked function the column is computed by.
        let plan = rows(&s, "EXPLAIN SELECT sum(a) FROM u").await;
        assert!(plan.iter().flatten().any(|l| l.contains("checked_sum(u.a)")), "{plan:?}");
    });
}

#[test]
fn partial_sums_handed_on_row_by_row_sum_the_same() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(&s, SETUP).await;
        // Groups met first in later batches, some with nothing to sum.
        let sql = "SELECT id / 100 AS k, sum(CASE WHEN id >= 1900 THEN NULL ELSE 1 END), \
                   sum(1) FILTER (WHERE id < 1900) FROM t GROUP BY id / 100 ORDER BY k";
        let want: Vec<Vec<String>> = (0..=20)
            .map(|k| {
                let n = match k {
                    0 => "99",
                    19 | 20 => "NULL",
                    _ => "100",
                };
                vec![k.to_string(), n.to_owned(), n.to_owned()]
            })
            .collect();
        assert_eq!(rows(&s, sql).await, want);
        // Grouping that barely reduces the rows hands each row on as a partial sum of its own.
        run_all(
            &s,
            "SET datafusion.execution.skip_partial_aggregation_probe_rows_threshold = 1;
             SET datafusion.execution.skip_partial_aggregation_probe_ratio_threshold = 0.0;
             SET datafusion.execution.batch_size = 64;",
        )
        .await;
        assert_eq!(rows(&s, sql).await, want);
        assert_eq!(
            rows(&s, "SELECT g, sum(a) FILTER (WHERE id <= 502 OR id > 1500) FROM t GROUP BY g ORDER BY g")
                .await,
            [["0", "4611686018427387904"], ["1", "501"]]
        );
        let e = try_rows(&s, "SELECT g, sum(a) FILTER (WHERE id <= 1000) FROM t GROUP BY g")
            .await
            .unwrap_err();
        assert!(e.contains("integer out of range for Int64"), "{e}");
    });
}
