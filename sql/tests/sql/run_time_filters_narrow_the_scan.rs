//! Goal: the filters DataFusion builds while a query runs — a hash join's from its build side,
//! a top-N sort's from the rows it holds — reach the nvpage scan, which drops the rows they
//! rule out before gathering them; and every answer is the one the same query gives with those
//! filters turned off: inner, semi and anti joins, collected and partitioned joins, NULL keys,
//! keys of another type, build sides given as a list and as bounds only, `ORDER BY … LIMIT`.

use std::sync::Arc;

use datafusion::physical_plan::{ExecutionPlan, collect, displayable};
use nvpage::Layer;
use nvpage_sql::Session;

use crate::common::{rows, run_all, runtime, session, text};

/// `sql`'s rows, and each nvpage scan of its plan once run: the scan's line of the plan, the
/// rows it read and the rows it handed on.
async fn run_with_scans(s: &Session, sql: &str) -> (Vec<Vec<String>>, Vec<(String, usize, usize)>) {
    let df = s.sql(sql).await.unwrap();
    let task = Arc::new(df.task_ctx());
    let plan = df.create_physical_plan().await.unwrap();
    let batches = collect(plan.clone(), task).await.unwrap();
    let mut scans = Vec::new();
    walk(&plan, &mut scans);
    (text(&batches), scans)
}

fn walk(plan: &Arc<dyn ExecutionPlan>, out: &mut Vec<(String, usize, usize)>) {
    if plan.name() == "NvpageScan" {
        let m = plan.metrics().unwrap();
        let scanned = m.sum_by_name("rows_scanned").map_or(0, |v| v.as_usize());
        let kept = m.output_rows().unwrap_or(0);
        out.push((displayable(plan.as_ref()).one_line().to_string(), scanned, kept));
    }
    for c in plan.children() {
        walk(c, out);
    }
}

/// The tables: `big` of 60,000 rows over 4 KiB pages (more than a run-time filter's trial), its
/// key `k` cycling through 2,000 values
/// with a NULL every 97th row; `small`, 200 keys of which `tag = 'x'` marks 20 (and one NULL
/// key), a decimal and a narrower key beside each.
async fn tables(s: &Session) {
    run_all(
        s,
        "CREATE TABLE big (id BIGINT, k BIGINT, v DECIMAL(12, 2), g INT, d DECIMAL(12, 2));
         INSERT INTO big SELECT value AS id,
                CASE WHEN value % 97 = 0 THEN NULL ELSE value * 7919 % 2000 END AS k,
                CAST(value AS DECIMAL(12, 2)) / 8 AS v, CAST(value % 13 AS INT) AS g,
                CAST(value * 7919 % 2000 AS DECIMAL(12, 2)) / 4 AS d
         FROM generate_series(1, 60000);
         CREATE TABLE small (k BIGINT, k32 INT, kd DECIMAL(12, 2), tag VARCHAR(4));
         INSERT INTO small SELECT value * 10 AS k, CAST(value * 10 AS INT) AS k32,
                CAST(value * 10 AS DECIMAL(12, 2)) / 4 AS kd,
                CASE WHEN value % 10 = 3 THEN 'x' ELSE 'y' END AS tag
         FROM generate_series(0, 199);
         INSERT INTO small VALUES (NULL, NULL, NULL, 'x');",
    )
    .await;
}

/// Queries whose answers must not depend on the run-time filters.
const QUERIES: [&str; 9] = [
    "SELECT count(*), sum(big.v) FROM big JOIN small ON big.k = small.k WHERE small.tag = 'x'",
    "SELECT big.id, small.tag FROM big JOIN small ON big.k = small.k32
     WHERE small.tag = 'x' AND big.g < 7 ORDER BY big.id",
    "SELECT count(*) FROM big JOIN small ON big.d = small.kd WHERE small.tag = 'x'",
    "SELECT count(*), sum(v) FROM big WHERE k IN (SELECT k FROM small WHERE tag = 'x')",
    "SELECT count(*) FROM big WHERE NOT EXISTS (SELECT 1 FROM small WHERE small.k = big.k)",
    "SELECT count(*) FROM big WHERE k NOT IN (SELECT k FROM small WHERE tag = 'y')",
    "SELECT count(*), count(small.k) FROM big LEFT JOIN small
     ON big.k = small.k AND small.tag = 'x'",
    "SELECT id, v FROM big ORDER BY v DESC, id LIMIT 7",
    "SELECT id, k FROM big WHERE g = 3 ORDER BY k NULLS FIRST, id LIMIT 5",
];

/// Each query's answer under `settings`, beside its answer with run-time filters off.
async fn same_answers(s: &Session, settings: &str) {
    for q in QUERIES {
        run_all(s, "SET datafusion.optimizer.enable_dynamic_filter_pushdown = true").await;
        run_all(s, settings).await;
        let with = rows(s, q).await;
        run_all(s, "SET datafusion.optimizer.enable_dynamic_filter_pushdown = false").await;
        let without = rows(s, q).await;
        assert_eq!(with, without, "{q} under {settings}");
        assert!(!with.is_empty(), "{q}");
    }
}

#[test]
fn a_join_s_keys_prune_the_probe_side_before_it_is_gathered() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        tables(&s).await;
        let q = QUERIES[0];
        let (with, scans) = run_with_scans(&s, q).await;
        let (line, scanned, kept) =
            scans.iter().find(|(l, ..)| l.contains("table=big")).cloned().unwrap();
        assert!(line.contains("runtime filters=1"), "{line}");
        assert_eq!(scanned, 60_000, "{line}");
        // 20 of the 2,000 keys, each on 30 rows: at most 600 rows.
        assert!(kept > 0 && kept <= 600, "{line}: kept {kept} of {scanned}");

        run_all(&s, "SET datafusion.optimizer.enable_dynamic_filter_pushdown = false").await;
        let (without, scans) = run_with_scans(&s, q).await;
        let (line, scanned, kept) =
            scans.iter().find(|(l, ..)| l.contains("table=big")).cloned().unwrap();
        assert!(!line.contains("runtime filters"), "{line}");
        assert_eq!((scanned, kept), (60_000, 60_000), "{line}");
        assert_eq!(with, without);
    });
}

#[test]
fn answers_do_not_depend_on_the_run_time_filters() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        tables(&s).await;
        // Joins collected on one side, with the build side's keys as a list.
        same_answers(&s, "SET datafusion.execution.target_partitions = 3").await;
        // Partitioned joins: a filter per partition, chosen by the key's hash.
        same_answers(
            &s,
            "SET datafusion.optimizer.hash_join_single_partition_threshold = 0;
             SET datafusion.optimizer.hash_join_single_partition_threshold_rows = 0",
        )
        .await;
        // Build sides too large for a list: the keys' bounds only.
        same_answers(
            &s,
            "SET datafusion.optimizer.hash_join_inlist_pushdown_max_distinct_values = 1",
        )
        .await;
    });
}

#[test]
fn a_top_n_sort_narrows_the_scan_as_it_goes() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        tables(&s).await;
        run_all(
            &s,
            "SET datafusion.execution.target_partitions = 1;
             SET datafusion.execution.batch_size = 1024",
        )
        .await;
        let (top, scans) = run_with_scans(&s, "SELECT id, v FROM big ORDER BY v LIMIT 3").await;
        assert_eq!(top, [["1", "0.13"], ["2", "0.25"], ["3", "0.38"]]);
        let (line, scanned, kept) = scans[0].clone();
        assert!(line.contains("runtime filters=1"), "{line}");
        // Rows lie in increasing `v`: once the sort has seen the first batches, its filter
        // rules out every later row, and the scan stops handing them on.
        assert_eq!(scanned, 60_000, "{line}");
        assert!(kept <= 30_000, "{line}: kept {kept} of {scanned}");
    });
}
