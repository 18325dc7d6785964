//! Two and three workers on 127.0.0.1, each with its own database: tables loaded through the
//! coordinator land where their split says, and queries answer as one database would.

use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, UInt64Array};
use datafusion::arrow::util::pretty::pretty_format_batches;
use nvpage::{Database, ReadOps};
use nvpage_cluster::{Cluster, Coordinator, Flow};

mod common;

use common::{TOKEN, Workers, exec, moved, orders};

/// The cluster file's `[tables.*]`.
const TABLES: &str = r#"
[tables.orders]
hash = ["id"]
[tables.regions]
replicated = true
[tables.flags]
hash = ["id"]
"#;

async fn start(n: usize) -> Workers {
    common::start(n, TABLES).await
}

async fn start_in(dirs: Vec<tempfile::TempDir>) -> Workers {
    common::start_in(dirs, TABLES).await
}

async fn text(c: &Coordinator, sql: &str) -> String {
    let rows = c.sql(sql).await.unwrap().collect().await.unwrap();
    pretty_format_batches(&rows).unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_table_split_by_hash_loads_through_the_coordinator_and_answers_whole() {
    let workers = start(2).await;
    let cluster = Cluster::parse(&workers.cluster_file(TOKEN), None).unwrap();
    let c = Coordinator::connect(cluster).await.unwrap();
    c.sql("CREATE TABLE orders (id BIGINT NOT NULL, region INT NOT NULL, amount DECIMAL(10, 2))")
        .await
        .unwrap();
    c.sql("CREATE TABLE regions (r INT NOT NULL, name VARCHAR(20))").await.unwrap();
    let values: Vec<String> =
        (0..1000).map(|i| format!("({i}, {}, {}.{:02})", i % 3, i, i % 100)).collect();
    let inserted = text(&c, &format!("INSERT INTO orders VALUES {}", values.join(", "))).await;
    assert!(inserted.contains("1000"), "{inserted}");
    exec(&c, "INSERT INTO regions VALUES (0, 'north'), (1, 'south'), (2, 'west')").await;
    c.refresh().await.unwrap();

    let total = text(&c, "SELECT count(*) AS n, sum(amount) AS s FROM orders").await;
    assert!(total.contains("| 1000 | 499995.00 |") || total.contains("1000"), "{total}");
    let expected_sum: i64 = (0..1000i64).map(|i| i * 100 + i % 100).sum();
    assert!(
        total.contains(&format!("{}.{:02}", expected_sum / 100, expected_sum % 100)),
        "{total}"
    );
    let joined = text(
        &c,
        "SELECT name, count(*) AS n FROM orders JOIN regions ON region = r \
         WHERE id < 300 GROUP BY name ORDER BY name",
    )
    .await;
    assert!(joined.contains("| north | 100 |"), "{joined}");
    assert!(joined.contains("| south | 100 |"), "{joined}");
    assert!(joined.contains("| west  | 100 |"), "{joined}");
    let replicated = text(&c, "SELECT count(*) AS n FROM regions").await;
    assert!(replicated.contains("| 3 |"), "{replicated}");
    let limited = text(&c, "SELECT id FROM orders WHERE id BETWEEN 10 AND 12 ORDER BY id").await;
    assert!(limited.contains("| 10 |") && limited.contains("| 12 |"), "{limited}");

    // `CREATE TABLE … AS` types the columns as one database's would: a boolean column too.
    c.sql("CREATE TABLE flags AS SELECT id, id % 2 = 0 AS even FROM orders").await.unwrap();
    let even = text(&c, "SELECT count(*) AS n FROM flags WHERE even").await;
    assert!(even.contains("| 500 |"), "{even}");

    drop(c);
    let dirs = workers.stop().await;
    // Every row is on the worker its key's hash names, and on no other.
    let mut seen = 0;
    for (i, dir) in dirs.iter().enumerate() {
        let db = Arc::new(Database::open(dir.path().join("db")).unwrap());
        let snap = db.snapshot().unwrap();
        assert_eq!(snap.row_count(&snap.table("regions").unwrap()).unwrap(), 3, "worker {i}");
        let session = nvpage_sql::Session::new(db.clone()).unwrap();
        let ids = session.sql("SELECT id FROM orders").await.unwrap().collect().await.unwrap();
        for batch in ids {
            seen += batch.num_rows();
            let shards = nvpage_cluster::hash::shard_of_rows(&batch, &[0], 2).unwrap();
            assert!(shards.iter().all(|&s| s == i), "worker {i} holds a row of another shard");
        }
        session.close();
    }
    assert_eq!(seen, 1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wrong_token_is_refused_by_every_worker() {
    let workers = start(2).await;
    let cluster = Cluster::parse(&workers.cluster_file("not-the-token"), None).unwrap();
    let err = Coordinator::connect(cluster).await.unwrap_err().to_string();
    assert!(err.contains(&workers.addresses[0]), "{err}");
    assert!(err.contains("token"), "{err}");
    workers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_query_tells_what_it_moved_between_workers_and_to_the_coordinator() {
    let workers = start(2).await;
    let c = workers.coordinator().await;
    orders(&c, (0..3000).map(|i| format!("({i}, {}, {}.{:02})", i % 1000, i, i % 100))).await;

    // Every row of both shards comes to the coordinator, and nothing passes between workers.
    let (rows, t) = moved(&c, "SELECT id, region FROM orders").await;
    eprintln!("{t:?}");
    assert_eq!(rows, 3000);
    assert_eq!(t.to_coordinator.rows, 3000, "{t:?}");
    assert!(t.to_coordinator.bytes > 0, "{t:?}");
    assert_eq!(t.between_workers, Flow::default(), "{t:?}");

    // Grouping by a column the table is not split by moves rows between the workers.
    let (groups, t) = moved(&c, "SELECT region, count(*) FROM orders GROUP BY region").await;
    eprintln!("{t:?}");
    assert_eq!(groups, 1000);
    assert!(t.between_workers.rows > 0 && t.between_workers.bytes > 0, "{t:?}");
    assert_eq!(t.to_coordinator.rows, 1000, "{t:?}");
    drop(c);
    workers.stop().await;
}

/// The one-line descriptions of the shard scans in `plan`.
fn shard_scans(plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>) -> Vec<String> {
    let mut found = vec![plan.clone()];
    let mut scans = vec![];
    while let Some(p) = found.pop() {
        if p.name() == "ShardScanExec" {
            scans.push(datafusion::physical_plan::displayable(p.as_ref()).one_line().to_string());
        }
        found.extend(p.children().into_iter().cloned());
    }
    scans
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn filters_and_a_limit_reach_every_shard_and_the_answer_stays_exact() {
    let workers = start(2).await;
    let c = workers.coordinator().await;
    orders(&c, (0..2000).map(|i| format!("({i}, {}, {}.{:02})", i % 10, i, i % 100))).await;

    // Filters the page fold takes, one it does not (arithmetic on a column), with a limit.
    for (sql, matching) in [
        ("SELECT id, region FROM orders WHERE region = 3 AND id >= 1000 LIMIT 7", 100),
        ("SELECT id, region FROM orders WHERE id % 7 = 3 LIMIT 7", 286),
        ("SELECT o.id FROM orders o WHERE o.id % 7 = 3 AND o.region = 3 LIMIT 7", 29),
    ] {
        let df = c.sql(sql).await.unwrap();
        let ctx = Arc::new(df.task_ctx());
        let plan = df.create_physical_plan().await.unwrap();
        let scans = shard_scans(&plan);
        assert!(!scans.is_empty() && scans.iter().all(|s| s.contains("limit=7")), "{scans:?}");
        let batches = datafusion::physical_plan::collect(plan, ctx).await.unwrap();
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows, 7.min(matching), "{sql}");
        for b in &batches {
            let ids = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            for id in ids.values() {
                if sql.contains("% 7") {
                    assert_eq!(id % 7, 3, "{sql}: row {id}");
                }
                if sql.contains("region = 3") {
                    assert_eq!(id % 10, 3, "{sql}: row {id}");
                }
                if sql.contains(">= 1000") {
                    assert!(*id >= 1000, "{sql}: row {id}");
                }
            }
        }
        // Without the limit, every matching row and no other.
        let all = sql.trim_end_matches(" LIMIT 7");
        let n: usize =
            c.sql(all).await.unwrap().collect().await.unwrap().iter().map(|b| b.num_rows()).sum();
        assert_eq!(n, matching, "{all}");
    }
    drop(c);
    workers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_scan_the_coordinator_runs_counts_what_it_read_from_the_worker() {
    // One worker: the planner keeps the whole query in the coordinator, whose scan reads the
    // shard from the worker.
    let workers = start(1).await;
    let c = workers.coordinator().await;
    orders(&c, (0..500).map(|i| format!("({i}, {}, 1.00)", i % 5))).await;
    let (rows, t) = moved(&c, "SELECT id FROM orders WHERE region = 2").await;
    assert_eq!(rows, 100);
    assert_eq!(t.to_coordinator.rows, 100, "{t:?}");
    assert!(t.to_coordinator.bytes >= 100 * 8, "{t:?}");
    assert_eq!(t.between_workers, Flow::default(), "{t:?}");
    drop(c);
    workers.stop().await;
}

/// The one number a statement that changes rows answers.
async fn changed(c: &Coordinator, sql: &str) -> u64 {
    let batches = c.sql(sql).await.unwrap().collect().await.unwrap();
    let b = &batches[0];
    b.column(0).as_any().downcast_ref::<UInt64Array>().unwrap().value(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn update_and_delete_change_every_shard_and_refuse_what_would_split_wrongly() {
    let workers = start(2).await;
    let c = workers.coordinator().await;
    orders(&c, (0..1000).map(|i| format!("({i}, {}, 1.00)", i % 4))).await;
    c.sql("CREATE TABLE regions (r INT NOT NULL, name VARCHAR(20))").await.unwrap();
    exec(&c, "INSERT INTO regions VALUES (0, 'north'), (1, 'south'), (2, 'west'), (3, 'east')")
        .await;
    c.refresh().await.unwrap();

    // Rows of both shards change, and the count is the whole table's.
    assert_eq!(changed(&c, "UPDATE orders SET amount = amount * 3 WHERE region = 1").await, 250);
    let sums =
        text(&c, "SELECT region, sum(amount) AS s FROM orders GROUP BY region ORDER BY region")
            .await;
    assert!(sums.contains("| 1      | 750.00 |"), "{sums}");
    assert!(sums.contains("| 2      | 250.00 |"), "{sums}");
    assert_eq!(changed(&c, "DELETE FROM orders WHERE id >= 900").await, 100);
    assert_eq!(changed(&c, "DELETE FROM regions WHERE r = 3").await, 1);
    let left = text(&c, "SELECT count(*) AS n FROM orders").await;
    assert!(left.contains("| 900 |"), "{left}");
    let regions = text(&c, "SELECT count(*) AS n FROM regions").await;
    assert!(regions.contains("| 3 |"), "{regions}");

    // What would place a row wrongly, or read a part of another table, is refused, and changes
    // nothing.
    for (sql, says) in [
        ("UPDATE orders SET id = id + 1 WHERE id = 5", "orders.id, which orders is split by"),
        ("UPDATE regions SET name = 'x'", "replicated"),
        (
            "DELETE FROM orders WHERE region IN (SELECT r FROM regions WHERE name = 'west')",
            "reads no table but orders",
        ),
    ] {
        let err = c.sql(sql).await.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains(says), "{sql}: {err}");
    }
    let same = text(&c, "SELECT count(*) AS n, sum(id) AS s FROM orders").await;
    assert!(same.contains(&format!("| 900 | {} |", (0..900).sum::<i64>())), "{same}");
    drop(c);
    workers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replicated_table_whose_copies_differ_is_not_queryable() {
    let workers = start(2).await;
    let file = workers.cluster_file(TOKEN);
    let c = Coordinator::connect(Cluster::parse(&file, None).unwrap()).await.unwrap();
    c.sql("CREATE TABLE regions (r INT NOT NULL, name VARCHAR(20))").await.unwrap();
    exec(&c, "INSERT INTO regions VALUES (0, 'north'), (1, 'south')").await;
    drop(c);
    let dirs = workers.stop().await;
    // One copy loses a row behind the cluster's back (as a DELETE cut short would leave it).
    let db = Arc::new(Database::open(dirs[1].path().join("db")).unwrap());
    let session = nvpage_sql::Session::new(db).unwrap();
    session.sql("DELETE FROM regions WHERE r = 0").await.unwrap().collect().await.unwrap();
    session.close();

    let workers = start_in(dirs).await;
    let c = Coordinator::connect(Cluster::parse(&workers.cluster_file(TOKEN), None).unwrap())
        .await
        .unwrap();
    let uneven = c.uneven_tables();
    assert!(
        uneven.len() == 1 && uneven[0].contains("regions: a replicated table whose copies differ"),
        "{uneven:?}"
    );
    assert!(c.sql("SELECT count(*) FROM regions").await.is_err());
    drop(c);
    workers.stop().await;
}
