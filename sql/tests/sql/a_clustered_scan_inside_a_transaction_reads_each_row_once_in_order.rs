//! Goal: inside `BEGIN`, where a scan reads the writer's pages a chunk of a partition at a time
//! on the writer thread, each row is read once and a clustered table's partitions come in key
//! order. Held on a clustered table large enough that a partition spans several chunks, against
//! a heap twin:
//!
//! - `ORDER BY` the key inside `BEGIN`, after uncommitted inserts between the keys (leaves split
//!   mid-tree), answers as the heap twin does;
//! - `INSERT INTO c SELECT k + 1000000, … FROM c` inside `BEGIN` (the statement's own inserts
//!   land on leaves appended at the tree's right end, and the table's pages change between the
//!   scan's chunks) inserts each row it read exactly once: the table doubles.

use nvpage::Layer;

use crate::common::{rows, run_all, runtime, session};

const N: i64 = 30_000;

async fn load(s: &nvpage_sql::Session) {
    run_all(
        s,
        "CREATE TABLE c (k BIGINT PRIMARY KEY, grp INT, note VARCHAR(200)) \
             WITH (storage = 'clustered');
         CREATE TABLE h (k BIGINT PRIMARY KEY, grp INT, note VARCHAR(200));",
    )
    .await;
    for t in ["c", "h"] {
        run_all(
            s,
            &format!(
                "INSERT INTO {t} SELECT value * 2, CAST(value % 13 AS INT), repeat('n', 150) \
                 FROM generate_series(0, {}) ORDER BY (value * 7919) % {N}",
                N - 1
            ),
        )
        .await;
    }
}

#[test]
fn order_by_the_key_inside_begin_answers_as_a_sort() {
    let rt = runtime();
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let s = session(dir.path(), layer);
        rt.block_on(async {
            load(&s).await;
            run_all(&s, "BEGIN").await;
            for t in ["c", "h"] {
                run_all(
                    &s,
                    &format!(
                        "INSERT INTO {t} SELECT value * 2 + 1, 1, repeat('m', 150) \
                         FROM generate_series(0, {}) WHERE value % 3 = 0",
                        N - 1
                    ),
                )
                .await;
            }
            for q in [
                "SELECT k FROM {t} ORDER BY k",
                "SELECT k, grp FROM {t} WHERE grp = 1 ORDER BY k LIMIT 100",
                "SELECT count(*) FROM {t}",
            ] {
                let (c, h) = (
                    rows(&s, &q.replace("{t}", "c")).await,
                    rows(&s, &q.replace("{t}", "h")).await,
                );
                assert_eq!(c.len(), h.len(), "{layer:?}: {q}: row counts");
                assert!(c == h, "{layer:?}: {q}: the clustered table answers otherwise");
            }
            run_all(&s, "COMMIT").await;
        });
    }
}

#[test]
fn an_insert_that_reads_its_own_clustered_table_inside_begin_inserts_each_row_once() {
    let rt = runtime();
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let s = session(dir.path(), layer);
        rt.block_on(async {
            load(&s).await;
            let mut counts = Vec::new();
            // Each table in a transaction of its own (a failure dooms the transaction).
            for t in ["c", "h"] {
                run_all(&s, "BEGIN").await;
                let r = crate::common::try_rows(
                    &s,
                    &format!("INSERT INTO {t} SELECT k + 1000000, grp, note FROM {t}"),
                )
                .await;
                let n = crate::common::try_rows(&s, &format!("SELECT count(*) FROM {t}"))
                    .await
                    .map_or_else(|e| e, |n| n[0][0].clone());
                counts.push((t, r.map(|r| r[0][0].clone()), n));
                let _ = crate::common::try_rows(&s, "ROLLBACK").await;
            }
            let want = (2 * N).to_string();
            for (t, inserted, n) in &counts {
                assert_eq!(
                    (inserted.as_deref(), n.as_str()),
                    (Ok(N.to_string().as_str()), want.as_str()),
                    "{layer:?}: table {t} (all: {counts:?})"
                );
            }
        });
    }
}
