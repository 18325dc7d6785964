//! A cluster of in-process workers against one database holding the same rows: filtered
//! queries (pushed into the shards' scans, or applied above them on the workers), `LIMIT`s,
//! joins, `UPDATE` and `DELETE` answer alike, and what would split a table wrongly is refused.

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, UInt64Array};
use datafusion::arrow::util::pretty::pretty_format_batches;
use nvpage::Database;
use nvpage_cluster::{Cluster, Coordinator};

mod common;

use common::{TOKEN, Workers, exec, moved};

/// The cluster file's `[tables.*]`.
const TABLES: &str = r#"
[tables.orders]
hash = ["id"]
[tables.regions]
replicated = true
[tables.empty]
hash = ["id"]
[tables.Mixed]
hash = ["Key"]
"#;

async fn start(n: usize) -> Workers {
    common::start(n, TABLES).await
}

/// The statements that make and fill the tables, on a cluster or on one database.
fn setup_sql() -> Vec<String> {
    let mut v = vec![
        "CREATE TABLE orders (id BIGINT NOT NULL, region INT, amount DECIMAL(10, 2), \
         code CHAR(5), note VARCHAR(20))"
            .to_string(),
        "CREATE TABLE regions (r INT NOT NULL, rname VARCHAR(20), rcode CHAR(4))".to_string(),
        "CREATE TABLE empty (id BIGINT NOT NULL, v INT)".to_string(),
        "CREATE TABLE \"Mixed\" (\"Key\" BIGINT NOT NULL, \"Val\" INT, val INT)".to_string(),
    ];
    let rows: Vec<String> = (0..600)
        .map(|i| {
            let region = if i % 11 == 0 { "NULL".to_string() } else { (i % 5).to_string() };
            let code = match i % 4 {
                0 => "'ab'".to_string(),
                1 => "'ab   '".to_string(),
                2 => "NULL".to_string(),
                _ => "'xyz'".to_string(),
            };
            let note = if i % 3 == 0 { "NULL".to_string() } else { format!("'n{}'", i % 7) };
            format!("({i}, {region}, {}.{:02}, {code}, {note})", i % 97, i % 100)
        })
        .collect();
    v.push(format!("INSERT INTO orders VALUES {}", rows.join(", ")));
    v.push(
        "INSERT INTO regions VALUES (0, 'north', 'n'), (1, 'south', 'so  '), (2, 'west', NULL), \
         (3, 'east', 'e'), (4, NULL, 'x'), (5, 'north', 'n')"
            .to_string(),
    );
    let mixed: Vec<String> =
        (0..100).map(|i| format!("({i}, {}, {})", i % 10, 100 - i % 10)).collect();
    v.push(format!("INSERT INTO \"Mixed\" VALUES {}", mixed.join(", ")));
    v
}

async fn cluster_with_data(n: usize) -> (Workers, Coordinator) {
    let workers = start(n).await;
    let c = workers.coordinator().await;
    for s in setup_sql() {
        c.sql(&s).await.unwrap().collect().await.unwrap();
    }
    c.refresh().await.unwrap();
    (workers, c)
}

/// One database with the same tables and rows.
async fn local_with_data() -> (tempfile::TempDir, nvpage_sql::Session) {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Database::open(dir.path().join("db")).unwrap());
    let s = nvpage_sql::Session::new(db).unwrap();
    for q in setup_sql() {
        s.sql(&q).await.unwrap().collect().await.unwrap();
    }
    (dir, s)
}

/// Rows as sorted lines (order-insensitive comparison).
fn lines(batches: &[RecordBatch]) -> Vec<String> {
    let text = pretty_format_batches(batches).unwrap().to_string();
    let mut v: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(1)
        .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>().join("|"))
        .collect();
    v.sort();
    v
}

async fn on_cluster(c: &Coordinator, sql: &str) -> Result<Vec<String>, String> {
    let df = c.sql(sql).await.map_err(|e| e.to_string())?;
    Ok(lines(&df.collect().await.map_err(|e| e.to_string())?))
}

async fn on_local(s: &nvpage_sql::Session, sql: &str) -> Result<Vec<String>, String> {
    let df = s.sql(sql).await.map_err(|e| e.to_string())?;
    Ok(lines(&df.collect().await.map_err(|e| e.to_string())?))
}

/// Every query answers on the cluster as on one database; the differences, if any.
async fn differences(c: &Coordinator, s: &nvpage_sql::Session, queries: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for q in queries {
        let want = on_local(s, q).await;
        let got = on_cluster(c, q).await;
        if want != got {
            out.push(format!("{q}\n  one database: {want:?}\n  cluster:      {got:?}"));
        }
    }
    out
}

/// Queries a user would write against the tables above; LIMITs without ORDER BY are counted.
const QUERIES: &[&str] = &[
    "SELECT count(*) FROM orders",
    "SELECT count(*) FROM orders WHERE id % 7 = 3",
    "SELECT count(*) FROM orders WHERE id % 7 = 3 AND region = 2",
    "SELECT count(*) FROM (SELECT id FROM orders WHERE id % 7 = 3 LIMIT 5)",
    "SELECT count(*) FROM (SELECT id FROM orders WHERE id % 7 = 3 LIMIT 5 OFFSET 80)",
    "SELECT id FROM orders WHERE id % 7 = 3 ORDER BY id LIMIT 5 OFFSET 10",
    "SELECT count(*) FROM orders WHERE code = 'ab'",
    "SELECT count(*) FROM orders WHERE code = 'ab   '",
    "SELECT count(*) FROM orders WHERE length(code) = 2",
    "SELECT count(*) FROM orders WHERE code || '.' = 'ab.'",
    "SELECT count(*) FROM orders WHERE code LIKE 'a%'",
    "SELECT count(*) FROM orders WHERE code LIKE '%b'",
    "SELECT count(*) FROM orders WHERE upper(code) = 'AB'",
    "SELECT count(*) FROM orders WHERE note IS NULL",
    "SELECT count(*) FROM orders WHERE NOT (note = 'n1')",
    "SELECT count(*) FROM orders WHERE note <> 'n1' OR id % 2 = 0",
    "SELECT count(*) FROM orders WHERE coalesce(note, '') = ''",
    "SELECT count(*) FROM orders WHERE region = 1 OR id % 3 = 0",
    "SELECT count(*) FROM orders WHERE region IN (1, NULL)",
    "SELECT count(*) FROM orders WHERE region NOT IN (1, 2)",
    "SELECT count(*) FROM orders WHERE NOT (region = 1 OR id % 3 = 0)",
    "SELECT count(*) FROM orders WHERE region + 0 IS NULL",
    "SELECT count(*) FROM orders WHERE CAST(id AS VARCHAR) LIKE '1%'",
    "SELECT note, count(*) FROM orders WHERE amount * 2 > 100 GROUP BY note",
    "SELECT sum(amount) FROM orders WHERE id % 7 = 3 AND note LIKE 'n%'",
    "SELECT count(*) FROM (SELECT note FROM orders WHERE amount * 2 > 100 LIMIT 30)",
    "SELECT count(*) FROM regions WHERE r % 2 = 0",
    "SELECT count(*) FROM (SELECT rname FROM regions WHERE r % 2 = 0 LIMIT 2)",
    "SELECT count(*) FROM (SELECT rname FROM regions LIMIT 4)",
    "SELECT count(*) FROM regions WHERE rcode = 'so'",
    "SELECT count(*) FROM regions WHERE length(rcode) = 2",
    "SELECT count(*) FROM (SELECT o.id FROM orders o JOIN regions g ON o.region = g.r \
     WHERE g.rname LIKE '%th' AND o.id % 5 = 1 LIMIT 10)",
    "SELECT g.rname, count(*) FROM orders o JOIN regions g ON o.region = g.r \
     WHERE o.id % 5 = 1 GROUP BY g.rname",
    "SELECT count(*) FROM orders o LEFT JOIN regions g ON o.region = g.r AND g.r % 2 = 0",
    "SELECT count(*) FROM (SELECT o.id FROM orders o LEFT JOIN regions g ON o.region = g.r LIMIT 9)",
    "SELECT count(*) FROM \"Mixed\" WHERE \"Val\" % 3 = 1",
    "SELECT count(*) FROM \"Mixed\" WHERE \"Val\" + val = 100",
    "SELECT \"Key\" FROM \"Mixed\" WHERE \"Val\" * 2 = 6 ORDER BY \"Key\" LIMIT 3",
    "SELECT count(*) FROM empty WHERE v % 2 = 1",
    "SELECT count(*) FROM (SELECT * FROM orders WHERE id % 2 = 0 UNION ALL SELECT * FROM orders WHERE id % 2 = 1 LIMIT 700)",
];

/// Every query of [`QUERIES`] answers on `n` workers as on one database.
async fn filtered_queries_answer_as_one_database(n: usize) {
    let (workers, c) = cluster_with_data(n).await;
    let (_dir, s) = local_with_data().await;
    let diffs = differences(&c, &s, QUERIES).await;
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    drop(c);
    workers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn filtered_queries_answer_as_one_database_on_one_worker() {
    filtered_queries_answer_as_one_database(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn filtered_queries_answer_as_one_database_on_two_workers() {
    filtered_queries_answer_as_one_database(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn filtered_queries_answer_as_one_database_on_three_workers() {
    filtered_queries_answer_as_one_database(3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn what_a_statement_moved_is_read_for_every_kind_of_statement() {
    let (workers, c) = cluster_with_data(2).await;
    for sql in [
        "SELECT * FROM empty",
        "SELECT count(*) FROM empty",
        "SELECT id FROM orders WHERE id < 0",
        "SELECT id FROM orders LIMIT 1",
        "SELECT o.id FROM orders o JOIN empty e ON o.id = e.id",
        "SELECT o.id FROM empty e JOIN orders o ON o.region = e.v",
        "SELECT o.id FROM orders o JOIN orders p ON o.region = p.id WHERE p.id < 0",
        "SELECT o.region, count(*) FROM orders o JOIN empty e ON o.region = e.v GROUP BY o.region",
        "SELECT region, count(*) FROM orders GROUP BY region LIMIT 1",
        "INSERT INTO empty SELECT id, region FROM orders WHERE id < 10",
        "DELETE FROM empty WHERE v = 1",
        "CREATE INDEX empty_v ON empty (v)",
    ] {
        let (rows, t) = moved(&c, sql).await;
        // A query's result came to the coordinator: at least its rows did. (The coordinator
        // makes the result of INSERT, DELETE and DDL itself.)
        if sql.starts_with("SELECT") {
            assert!(t.to_coordinator.rows >= rows as u64, "{sql}: {rows} rows, {t:?}");
        }
    }
    drop(c);
    workers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replicated_table_refuses_a_delete_each_copy_would_do_differently() {
    let (workers, c) = cluster_with_data(2).await;
    let values: Vec<String> = (10..400).map(|i| format!("({i}, 'r{i}', 'c')")).collect();
    exec(&c, &format!("INSERT INTO regions VALUES {}", values.join(", "))).await;
    c.refresh().await.unwrap();
    // Each copy would evaluate random() on its own.
    let err = c.sql("DELETE FROM regions WHERE random() < 0.5").await.err().map(|e| e.to_string());
    assert!(err.as_deref().unwrap_or("").contains("random()"), "{err:?}");
    assert!(c.uneven_tables().is_empty(), "{:?}", c.uneven_tables());
    assert_eq!(on_cluster(&c, "SELECT count(*) FROM regions").await.unwrap(), vec!["|396|"]);
    drop(c);
    workers.stop().await;
}

/// The count a statement answers on one database.
async fn changed_local(s: &nvpage_sql::Session, sql: &str) -> u64 {
    let batches = s.sql(sql).await.unwrap().collect().await.unwrap();
    batches[0].column(0).as_any().downcast_ref::<UInt64Array>().unwrap().value(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn updates_and_deletes_answer_as_one_database() {
    let (workers, c) = cluster_with_data(2).await;
    let (_dir, s) = local_with_data().await;
    let mut diffs = Vec::new();
    for sql in [
        "UPDATE orders SET note = 'z' WHERE id % 7 = 3",
        "UPDATE orders SET note = NULL WHERE note = 'n1' AND code = 'ab'",
        "UPDATE orders SET region = region + 1 WHERE code LIKE 'a%'",
        "UPDATE orders SET id = id WHERE id = 5",
        "UPDATE orders o SET amount = o.amount * 2 WHERE o.region IS NULL",
        "DELETE FROM orders WHERE id < 0",
        "UPDATE orders SET note = 'q' WHERE id < 0",
        "DELETE FROM orders WHERE note IS NULL AND id % 2 = 0",
        "DELETE FROM regions WHERE r % 2 = 0",
        "DELETE FROM regions WHERE rcode = 'so'",
        "UPDATE \"Mixed\" SET \"Val\" = \"Val\" + 1 WHERE val > 95",
        "DELETE FROM \"Mixed\" WHERE \"Val\" = 3",
        "DELETE FROM empty",
        "DELETE FROM orders",
    ] {
        let want = changed_local(&s, sql).await;
        let got = match c.sql(sql).await {
            Ok(df) => match df.collect().await {
                Ok(b) => {
                    Ok(b[0].column(0).as_any().downcast_ref::<UInt64Array>().unwrap().value(0))
                }
                Err(e) => Err(e.to_string()),
            },
            Err(e) => Err(e.to_string()),
        };
        if got != Ok(want) {
            diffs.push(format!("{sql}: one database {want}, cluster {got:?}"));
        }
        for q in [
            "SELECT id, region, amount, code, note FROM orders",
            "SELECT * FROM regions",
            "SELECT * FROM \"Mixed\"",
        ] {
            let (a, b) = (on_local(&s, q).await, on_cluster(&c, q).await);
            if a != b {
                diffs.push(format!(
                    "after {sql}: {q} differs ({} vs {:?} rows)",
                    a.unwrap().len(),
                    b.map(|b| b.len())
                ));
            }
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    drop(c);
    workers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn updates_that_would_misplace_rows_are_refused() {
    let (workers, c) = cluster_with_data(2).await;
    let mut let_through = Vec::new();
    for sql in [
        "UPDATE orders SET ID = 7 WHERE id = 5",
        "UPDATE orders SET \"id\" = 7 WHERE id = 5",
        "UPDATE orders o SET id = 7 WHERE o.id = 5",
        "UPDATE orders SET id = CASE WHEN id = 5 THEN 7 ELSE id END",
        "UPDATE \"Mixed\" SET \"Key\" = 1000 WHERE \"Key\" = 1",
        "UPDATE orders SET note = (SELECT max(note) FROM orders)",
        "UPDATE orders SET note = rname FROM regions WHERE region = r",
        "DELETE FROM orders WHERE amount > (SELECT avg(amount) FROM orders)",
        "DELETE FROM orders WHERE EXISTS (SELECT 1 FROM regions WHERE r = region)",
        "WITH big AS (SELECT id FROM orders WHERE id > 500) DELETE FROM orders WHERE id IN (SELECT id FROM big)",
    ] {
        if let Ok(df) = c.sql(sql).await {
            let r = df.collect().await;
            let_through.push(format!("{sql}: {:?}", r.map(|b| lines(&b))));
        }
    }
    let same = on_cluster(&c, "SELECT count(*), sum(id) FROM orders").await.unwrap();
    assert!(let_through.is_empty(), "{let_through:?}\n{same:?}");
    drop(c);
    workers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_table_seen_uneven_comes_back_once_the_copies_agree() {
    let (workers, c) = cluster_with_data(2).await;
    // The second worker's copy of the replicated table alone, as a cluster of its own: what a
    // statement between the two workers' commits leaves for a moment.
    let second = format!(
        "token = \"{TOKEN}\"\n[[workers]]\naddress = \"{}\"\n[tables.regions]\nreplicated = true\n",
        workers.addresses[1]
    );
    let one = Coordinator::connect(Cluster::parse(&second, None).unwrap()).await.unwrap();
    let before = on_cluster(&one, "SELECT count(*) FROM regions").await.unwrap();
    one.sql("DELETE FROM regions WHERE r = 0").await.unwrap().collect().await.unwrap();
    c.refresh().await.unwrap();
    assert_eq!(c.uneven_tables().len(), 1, "{:?}", c.uneven_tables());
    let err = c.sql("SELECT count(*) FROM regions").await.err().map(|e| e.to_string());
    assert!(err.as_deref().unwrap_or("").contains("copies differ"), "{err:?}");
    // The copies agree again: the next statement finds the table without a refresh of its own.
    exec(&one, "INSERT INTO regions VALUES (0, 'north', 'no')").await;
    assert_eq!(on_cluster(&c, "SELECT count(*) FROM regions").await.unwrap(), before);
    assert!(c.uneven_tables().is_empty());
    drop(one);
    drop(c);
    workers.stop().await;
}
