//! Goal: a filter that bounds the leading primary key column of a clustered table (`=`, `<`,
//! `BETWEEN`, `IN`, with other predicates beside it) reads only that key range from the key's
//! leaves — the plan says so, and the scan reads exactly the rows of the range — and answers
//! as the same query on a heap copy of the table does; ranges longer than a batch, keys of two
//! columns and string keys included. A filter the key cannot serve scans every row.

use std::sync::Arc;

use datafusion::physical_plan::{ExecutionPlan, collect, displayable};
use nvpage::Layer;
use nvpage_sql::Session;

use crate::common::{rows, run_all, runtime, session, text};

/// `sql`'s rows, and each nvpage scan of its plan once run: the scan's line of the plan and
/// the rows it read.
async fn run_with_scans(s: &Session, sql: &str) -> (Vec<Vec<String>>, Vec<(String, usize)>) {
    let df = s.sql(sql).await.unwrap();
    let task = Arc::new(df.task_ctx());
    let plan = df.create_physical_plan().await.unwrap();
    let batches = collect(plan.clone(), task).await.unwrap();
    let mut scans = Vec::new();
    walk(&plan, &mut scans);
    (text(&batches), scans)
}

fn walk(plan: &Arc<dyn ExecutionPlan>, out: &mut Vec<(String, usize)>) {
    if plan.name() == "NvpageScan" {
        let m = plan.metrics().unwrap();
        let scanned = m.sum_by_name("rows_scanned").map_or(0, |v| v.as_usize());
        out.push((displayable(plan.as_ref()).one_line().to_string(), scanned));
    }
    for c in plan.children() {
        walk(c, out);
    }
}

/// Checks `filter` on clustered table `clustered` against its heap copy `heap`: the same rows,
/// and, where `range` names the rows of the key range (how many), a scan that read just them
/// through the key, else one that read the whole table of `all` rows.
async fn check(
    s: &Session,
    (clustered, heap, columns): (&str, &str, &str),
    filter: &str,
    range: Option<usize>,
    all: usize,
) {
    let q = |t: &str| format!("SELECT {columns} FROM {t} WHERE {filter} ORDER BY {columns}");
    let (got, scans) = run_with_scans(s, &q(clustered)).await;
    assert_eq!(got, rows(s, &q(heap)).await, "{filter}");
    let [(line, scanned)] = scans.as_slice() else { panic!("{filter}: scans {scans:?}") };
    match range {
        Some(n) => {
            assert!(
                line.contains(&format!("index={clustered}_pkey (clustered, ")),
                "{filter}: {line}"
            );
            assert_eq!(*scanned, n, "{filter}: {line}");
        }
        None => {
            assert!(!line.contains("index="), "{filter}: {line}");
            assert_eq!(*scanned, all, "{filter}: {line}");
        }
    }
}

#[test]
fn key_ranges_answer_as_a_heap_copy_and_read_only_their_rows() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(
            &s,
            "CREATE TABLE c (k BIGINT PRIMARY KEY, grp INT, name VARCHAR(20), amount DECIMAL(12, 2))
                 WITH (storage = 'clustered');
             INSERT INTO c SELECT (value * 7919) % 20000, CAST(value % 50 AS INT),
                    CASE WHEN value % 10 = 0 THEN NULL ELSE concat('n', value) END,
                    CAST(value AS DECIMAL(12, 2)) / 4
             FROM generate_series(0, 19999);
             CREATE TABLE h AS SELECT * FROM c;",
        )
        .await;
        let t = ("c", "h", "k, grp, name, amount");
        // (filter, rows of the key range it reads, or None for a whole scan)
        let cases = [
            ("k = 777", Some(1)),
            ("k = 20000", Some(0)),
            ("k < 50", Some(50)),
            ("k BETWEEN 100 AND 140", Some(41)),
            ("k IN (5, 17, 300, 19999)", Some(19_995)),
            ("k BETWEEN 100 AND 5000 AND grp = 3", Some(4901)),
            ("k > 19990 AND name LIKE 'n1%'", Some(9)),
            ("k >= 19990 AND k < 19995 AND amount > 10", Some(5)),
            ("k > 100 AND k < 90", Some(0)),
            ("k < 5 OR k > 19995", None),
            // Longer than a batch: the walk lets go of its leaf between batches.
            ("k > 1000 AND grp <> 7", Some(18_999)),
            ("grp = 3", None),
            ("name = 'n123'", None),
        ];
        for (filter, range) in cases {
            check(&s, t, filter, range, 20_000).await;
        }
        let limited = "SELECT count(*) FROM (SELECT k FROM c WHERE k >= 10 LIMIT 7)";
        assert_eq!(rows(&s, limited).await, [["7"]]);
        let first =
            "SELECT k FROM (SELECT k FROM c WHERE k BETWEEN 500 AND 600 LIMIT 3) ORDER BY k";
        let got = rows(&s, first).await;
        assert!(
            got.len() == 3
                && got.iter().all(|r| (500..=600).contains(&r[0].parse::<i64>().unwrap())),
            "{got:?}"
        );
    });
}

#[test]
fn ranges_over_two_column_and_string_keys_resume_after_the_last_key_read() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(
            &s,
            "CREATE TABLE pairs (a INT, b BIGINT, v VARCHAR(10), PRIMARY KEY (a, b))
                 WITH (storage = 'clustered');
             INSERT INTO pairs SELECT CAST(value % 40 AS INT), value, concat('v', value % 9)
             FROM generate_series(1, 4000);
             CREATE TABLE pairs_h AS SELECT * FROM pairs;
             CREATE TABLE names (name VARCHAR(20) PRIMARY KEY, n BIGINT)
                 WITH (storage = 'clustered');
             INSERT INTO names SELECT concat('name', value), value FROM generate_series(1, 3000);
             CREATE TABLE names_h AS SELECT * FROM names;
             SET datafusion.execution.batch_size = 7;",
        )
        .await;
        // Batches of 7 rows: the range's walk starts again after each batch's last key, (a, b)
        // whole, so that rows sharing `a` are neither read twice nor skipped.
        let pairs = ("pairs", "pairs_h", "a, b, v");
        check(&s, pairs, "a = 3", Some(100), 4000).await;
        check(&s, pairs, "a BETWEEN 10 AND 12 AND v <> 'v4'", Some(300), 4000).await;
        check(&s, pairs, "a IN (0, 7, 9, 39) AND b > 100", Some(4000), 4000).await;
        check(&s, pairs, "b < 30", None, 4000).await;
        let names = ("names", "names_h", "name, n");
        check(&s, names, "name = 'name2999'", Some(1), 3000).await;
        check(&s, names, "name = 'nobody' AND n > 0", Some(0), 3000).await;
        check(&s, names, "n BETWEEN 10 AND 30", None, 3000).await;
    });
}
