//! Goal: a clustered table takes rows as long as a heap table does — those too long for a leaf
//! entry (a quarter of a 4 KiB page) live in overflow pages — and SQL reads, filters, orders,
//! updates and deletes them exactly as it does a heap table's: every query below answers the
//! same on the clustered table and its heap twin, on every layer, before and after updates
//! that make short rows long and long rows short.

use nvpage::Layer;
use nvpage_sql::Session;

use crate::common::{rows, run_all, runtime, session, try_rows};

/// Row `k`'s note: one in eight of 1,000 to 3,900 letters, the rest a few words.
fn note(k: i64) -> String {
    let len = if k % 8 == 3 { 1000 + (k * 37) % 2900 } else { 5 + k % 40 };
    (0..len).map(|i| char::from(b'a' + ((k + i) % 26) as u8)).collect()
}

async fn same(s: &Session, q: &str) {
    let (c, h) = (q.replace("{t}", "c"), q.replace("{t}", "h"));
    assert_eq!(rows(s, &c).await, rows(s, &h).await, "{q}");
}

const QUERIES: [&str; 6] = [
    "SELECT count(*), sum(length(note)), max(length(note)) FROM {t}",
    "SELECT k, note FROM {t} WHERE k BETWEEN 100 AND 140 ORDER BY k",
    "SELECT k, length(note) FROM {t} WHERE length(note) > 1000 ORDER BY k DESC LIMIT 7",
    "SELECT grp, count(*), sum(length(note)) FROM {t} GROUP BY grp ORDER BY grp",
    "SELECT k FROM {t} WHERE note LIKE 'abcdefghijklmnopqrstuvwxyzabcdefghijklm%' ORDER BY k",
    "SELECT note FROM {t} WHERE k = 1003",
];

#[test]
fn long_rows_of_a_clustered_table_answer_as_a_heap_tables_do() {
    for layer in Layer::compiled() {
        let rt = runtime();
        let dir = tempfile::tempdir().unwrap();
        let s = session(dir.path(), layer);
        rt.block_on(async {
            run_all(
                &s,
                "CREATE TABLE c (k BIGINT PRIMARY KEY, grp INT, note VARCHAR(6000)) \
                     WITH (storage = 'clustered');
                 CREATE TABLE h (k BIGINT PRIMARY KEY, grp INT, note VARCHAR(6000));",
            )
            .await;
            // Keys out of order, so leaves holding spilled rows split and move them.
            let all: Vec<String> = (0..3_000i64)
                .map(|i| {
                    let k = (i * 1_231) % 3_000;
                    format!("({k}, {}, '{}')", k % 5, note(k))
                })
                .collect();
            for chunk in all.chunks(250) {
                let list = chunk.join(", ");
                run_all(&s, &format!("INSERT INTO c VALUES {list}; INSERT INTO h VALUES {list}"))
                    .await;
            }
            let long = rows(&s, "SELECT count(*) FROM c WHERE length(note) > 1000").await;
            assert_eq!(long, [["375"]], "{layer}: one row in eight is long");
            for q in QUERIES {
                same(&s, q).await;
            }
            // Short rows made long, long rows made short, long rows deleted; then a row longer
            // than a page is refused by both kinds of table alike.
            let longer = "x".repeat(3_500);
            for t in ["c", "h"] {
                run_all(
                    &s,
                    &format!(
                        "UPDATE {t} SET note = '{longer}' WHERE k % 8 = 1 AND k < 1500;
                         UPDATE {t} SET note = 'short' WHERE k % 8 = 3 AND k >= 1500;
                         DELETE FROM {t} WHERE k % 16 = 11"
                    ),
                )
                .await;
            }
            for q in QUERIES {
                same(&s, q).await;
            }
            let too_long = "y".repeat(4_100);
            for t in ["c", "h"] {
                let sql = format!("INSERT INTO {t} VALUES (5000, 0, '{too_long}')");
                let e = try_rows(&s, &sql).await.unwrap_err();
                assert!(e.contains("larger than"), "{layer}: {t}: {e}");
            }
            same(&s, QUERIES[0]).await;
        });
        let report = s.database().check().unwrap();
        assert!(report.is_sound(), "{layer}: {:?}", report.damage);
    }
}
