//! The 22 queries' SQL through a cluster (feature `cluster`): a coordinator and nvpage workers
//! (`nvpage-cluster`), the TPC-H tables split across the workers — `lineitem` by hash of
//! `l_orderkey`, `orders` of `o_orderkey`, `customer` of `c_custkey`, `part` of `p_partkey`,
//! `partsupp` of `ps_partkey`, `supplier` of `s_suppkey`; `nation` and `region` on every worker.

use std::sync::Arc;

use datafusion::datasource::MemTable;
use nvpage::Database;
use nvpage_cluster::Coordinator;
use nvpage_sql::Session;

use super::queries::Query;
use super::sql::{TABLES, rows, text};
use crate::BoxError;

/// The cluster file's `[tables.*]` for the eight tables.
pub const SPLITS: &str = r#"
[tables.lineitem]
hash = ["l_orderkey"]
[tables.orders]
hash = ["o_orderkey"]
[tables.customer]
hash = ["c_custkey"]
[tables.part]
hash = ["p_partkey"]
[tables.partsupp]
hash = ["ps_partkey"]
[tables.supplier]
hash = ["s_suppkey"]
[tables.nation]
replicated = true
[tables.region]
replicated = true
"#;

/// A cluster file for workers at `addresses` (`host:port`, in shard order) with `token`.
pub fn cluster_file(token: &str, addresses: &[String]) -> String {
    let mut s = format!("token = \"{token}\"\n");
    for a in addresses {
        s.push_str(&format!("[[workers]]\naddress = \"{a}\"\n"));
    }
    s.push_str(SPLITS);
    s
}

/// Loads the eight tables of `db` into the cluster through `coordinator`: each read whole
/// from `db` into memory, then `CREATE TABLE … AS SELECT` through the coordinator, which
/// splits its rows among the workers.
pub async fn load(coordinator: &Coordinator, db: Arc<Database>) -> Result<(), BoxError> {
    let session = Session::new(db)?;
    for t in TABLES {
        let df = session.sql(&format!("select * from {t}")).await?;
        let schema = Arc::new(df.schema().as_arrow().clone());
        let batches = df.collect().await?;
        let source = format!("source_{t}");
        let ctx = coordinator.context();
        ctx.register_table(source.as_str(), Arc::new(MemTable::try_new(schema, vec![batches])?))?;
        let loaded = coordinator.sql(&format!("create table {t} as select * from {source}")).await;
        ctx.deregister_table(source.as_str())?;
        loaded?;
    }
    session.close();
    Ok(())
}

/// Query `q`'s SQL as the cluster runs it: the SQL engines' text, except Q11, whose subquery
/// names its sum. The distributed planner has DataFusion turn an uncorrelated scalar subquery
/// into a join (its physical form does not travel between processes), and that rewrite fails
/// ("ambiguous reference") where the subquery's aggregate is spelled as the outer query's.
pub fn cluster_text(q: Query, sf: f64) -> String {
    let sql = text(q, sf);
    if q != Query::Q11 {
        return sql;
    }
    const SUM: &str = "select sum(ps_supplycost * ps_availqty) from";
    debug_assert!(sql.contains(SUM), "Q11's subquery as the SQL engines' text spells it");
    sql.replace(SUM, "select sum(ps_supplycost * ps_availqty) as total_value from")
}

/// Runs `q`'s SQL ([`cluster_text`]) through `coordinator`; its rows as text (NULL empty).
pub async fn run(
    coordinator: &Coordinator,
    q: Query,
    sf: f64,
) -> Result<Vec<Vec<String>>, BoxError> {
    let batches = coordinator.sql(&cluster_text(q, sf)).await?.collect().await?;
    rows(&batches)
}
