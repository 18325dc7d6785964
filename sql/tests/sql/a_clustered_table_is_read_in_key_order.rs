//! Goal: a clustered table's scan yields its rows in primary-key order within each partition,
//! and DataFusion is told so: `ORDER BY` the key (or its leading columns) merges the
//! partitions instead of sorting the table, and answers exactly as a sort of a heap table of
//! the same rows does — with a `LIMIT`, after rows were deleted and updated (leaves emptied and
//! rewritten), on a two-column key, on every layer. A key column whose key bytes do not order
//! as DataFusion's values do (`CHAR`), a descending order and a scan that leaves the key out
//! are still sorted.

use nvpage::Layer;
use nvpage_sql::Session;

use crate::common::{rows, run_all, runtime, session};

/// The plan of `sql`, as text.
async fn plan(s: &Session, sql: &str) -> String {
    rows(s, &format!("EXPLAIN {sql}")).await.into_iter().flatten().collect::<Vec<_>>().join("\n")
}

/// Whether the physical plan of `sql` sorts (a merge of sorted partitions is not a sort).
async fn sorts(s: &Session, sql: &str) -> bool {
    plan(s, sql).await.lines().any(|l| l.trim_start().starts_with("SortExec"))
}

/// The same statement on the clustered table `c…` and its heap twin `h…`.
async fn same(s: &Session, q: &str) {
    let (c, h) = (q.replace("{t}", "c"), q.replace("{t}", "h"));
    assert_eq!(rows(s, &c).await, rows(s, &h).await, "{q}");
}

async fn load(s: &Session) {
    run_all(
        s,
        "CREATE TABLE c (k BIGINT PRIMARY KEY, grp INT, note VARCHAR(30)) \
             WITH (storage = 'clustered');
         CREATE TABLE h (k BIGINT PRIMARY KEY, grp INT, note VARCHAR(30));
         CREATE TABLE c2 (a INT, b VARCHAR(40), v INT, PRIMARY KEY (a, b)) \
             WITH (storage = 'clustered');
         CREATE TABLE h2 (a INT, b VARCHAR(40), v INT, PRIMARY KEY (a, b));
         CREATE TABLE cc (name CHAR(6) PRIMARY KEY, v INT) WITH (storage = 'clustered');
         INSERT INTO cc VALUES ('b', 1), ('a', 2), ('ab', 3);",
    )
    .await;
    // Keys out of order, so leaves split in the middle as well as at the end, and the tree
    // spans many leaves (4 KiB pages): several partitions.
    let rows: Vec<String> = (0..12_000i64)
        .map(|i| {
            let k = (i * 7_919) % 12_000;
            format!("({k}, {}, 'note {}')", k % 13, k % 97)
        })
        .collect();
    for chunk in rows.chunks(2_000) {
        let list = chunk.join(", ");
        run_all(s, &format!("INSERT INTO c VALUES {list}; INSERT INTO h VALUES {list}")).await;
    }
    // 300 distinct (a, b) pairs (a repeats, b of varying length), inserted out of order.
    let pairs: Vec<String> = (0..300)
        .map(|i| {
            let b = "x".repeat(i % 7) + &format!("{}", (i * 17) % 60);
            format!("({}, '{b}', {i})", (i * 31) % 50)
        })
        .collect();
    let pairs = pairs.join(", ");
    run_all(s, &format!("INSERT INTO c2 VALUES {pairs}; INSERT INTO h2 VALUES {pairs}")).await;
}

#[test]
fn order_by_the_key_of_a_clustered_table_merges_instead_of_sorting() {
    let rt = runtime();
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let s = session(dir.path(), layer);
        rt.block_on(async {
            load(&s).await;
            let by_key = [
                "SELECT k, grp, note FROM {t} ORDER BY k",
                "SELECT k, note FROM {t} WHERE grp = 3 ORDER BY k LIMIT 25",
                "SELECT k FROM {t} WHERE k > 11000 ORDER BY k",
                "SELECT k FROM {t} ORDER BY k NULLS FIRST LIMIT 7",
            ];
            for q in by_key {
                assert!(!sorts(&s, &q.replace("{t}", "c")).await, "{layer:?}: {q} sorts");
                assert!(sorts(&s, &q.replace("{t}", "h")).await, "{layer:?}: {q} on a heap");
                same(&s, q).await;
            }
            // Leaves emptied, rows rewritten in place and moved to new keys.
            run_all(
                &s,
                "DELETE FROM c WHERE k % 5 = 0; DELETE FROM h WHERE k % 5 = 0;
                 UPDATE c SET note = 'changed' WHERE k % 7 = 1;
                 UPDATE h SET note = 'changed' WHERE k % 7 = 1;
                 UPDATE c SET k = k + 100000 WHERE k % 11 = 2;
                 UPDATE h SET k = k + 100000 WHERE k % 11 = 2;",
            )
            .await;
            for q in by_key {
                same(&s, q).await;
            }
            // A two-column key: ordered by both, or by the leading one.
            for q in
                ["SELECT a, b, v FROM {t}2 ORDER BY a, b", "SELECT a, v FROM {t}2 ORDER BY a, b"]
            {
                assert!(!sorts(&s, &q.replace("{t}", "c")).await, "{layer:?}: {q} sorts");
                same(&s, q).await;
            }
            let by_a = "SELECT a FROM c2 ORDER BY a";
            assert!(!sorts(&s, by_a).await, "{layer:?}: {by_a} sorts");
            assert_eq!(rows(&s, by_a).await, rows(&s, "SELECT a FROM h2 ORDER BY a").await);
            // Orders the scan does not give are sorted as before.
            for q in [
                "SELECT k FROM c ORDER BY k DESC LIMIT 5",
                "SELECT grp FROM c ORDER BY grp",
                "SELECT v FROM c2 ORDER BY b",
                "SELECT name FROM cc ORDER BY name",
            ] {
                assert!(sorts(&s, q).await, "{layer:?}: {q} should sort");
            }
            same(&s, "SELECT k FROM {t} ORDER BY k DESC LIMIT 5").await;
            assert_eq!(rows(&s, "SELECT name FROM cc ORDER BY name").await, [["a"], ["ab"], ["b"]]);
        });
    }
}
