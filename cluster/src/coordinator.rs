//! The coordinator: a DataFusion session whose tables are the workers' shards. It learns the
//! tables' schemas and row counts from the workers (it never opens a database), plans each query
//! with the distributed engine — every shard's scan routed to the worker that holds it, with the
//! projection, filters and limit pushed into that worker's nvpage scan — and loads rows by
//! splitting them as the cluster file says.
//!
//! What a statement does across workers:
//! - `CREATE TABLE`, `DROP TABLE`, `CREATE INDEX`, `DROP INDEX` run on every worker, one after
//!   another; one that fails on a worker stops there (the error names it), and the workers
//!   before it keep the change: run the statement again with `IF [NOT] EXISTS` once the worker
//!   is back.
//! - `INSERT` and `CREATE TABLE … AS` commit on each worker on its own, when the rows' stream
//!   ends: each shard's part is atomic, the whole is not. A load that fails on one worker is
//!   cut short on the others before they commit where it can be; where some had already
//!   committed, the error says which, and deleting the load's rows there (or reloading the
//!   others) is the user's repair.
//! - Queries read each shard as of a snapshot of its own database, taken when its scan starts:
//!   a query sees each shard as of its own moment, not the cluster as of one.
//! - `UPDATE` and `DELETE` run on every worker, one after another, each a transaction of its
//!   own on its shard: as with a load, each shard's part is atomic and the whole is not; one that
//!   fails on a worker stops there, and the error names the workers where it committed. They
//!   may read no table but the one they change (a worker sees only its own shards of another),
//!   an `UPDATE` may not set a column the table is split by (the row would belong on another
//!   worker), and a replicated table takes `DELETE` but not `UPDATE` (a copy changed and one not
//!   would differ unseen; a `DELETE` cut short leaves copies of different counts, which the
//!   coordinator notices and refuses to query), and not a `DELETE` that calls a function whose
//!   value may differ between calls (`random()`, `now()`).
//! - A table some workers lack or hold unlike ([`Coordinator::uneven_tables`]) is not
//!   queryable; while any is, the coordinator looks again before each statement.
//! - Transactions (`BEGIN` … `COMMIT`) are refused: there is no transaction across shards.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_flight::{Action, Criteria, FlightData, FlightDescriptor};
use async_trait::async_trait;
use datafusion::arrow::array::{RecordBatch, UInt32Array, UInt64Array};
use datafusion::arrow::compute::take_record_batch;
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef};
use datafusion::catalog::{Session as DfSession, TableProvider};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::dataframe::DataFrame;
use datafusion::datasource::TableType;
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, SessionStateBuilder, TaskContext};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{
    Expr, LogicalPlan, TableProviderFilterPushDown, Volatility, WriteOp,
};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{ObjectType, Statement as SqlStatement};
use datafusion_distributed::{DistributedExt, SessionStateBuilderExt, WorkerResolver};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use url::Url;

use crate::config::{Cluster, Split};
use crate::error::{Error, Result};
use crate::flight::{self, Channels, TOKEN_HEADER};
use crate::hash::shard_of_rows;
use crate::scan::{
    Access, ShardHome, ShardScanCodec, ShardScanExec, desired_tasks, route, scale_up,
};
use crate::worker::{CreateLike, TableMeta, quote};

/// A coordinator's session over a cluster (see the module's docs).
pub struct Coordinator {
    ctx: SessionContext,
    cluster: Arc<Cluster>,
    urls: Vec<String>,
    /// Tables some workers lack or hold with another schema: not registered.
    uneven: parking_lot::Mutex<Vec<String>>,
}

impl std::fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinator").field("workers", &self.urls).finish_non_exhaustive()
    }
}

/// The workers of the cluster file, for the distributed engine.
#[derive(Clone)]
struct Workers(Vec<Url>);

impl WorkerResolver for Workers {
    fn get_urls(&self) -> DfResult<Vec<Url>> {
        Ok(self.0.clone())
    }
}

/// What one worker said of one table.
struct Found {
    schema: SchemaRef,
    rows: u64,
    meta: TableMeta,
}

impl Coordinator {
    /// Connects to every worker of `cluster` and learns their tables.
    pub async fn connect(cluster: Cluster) -> Result<Self> {
        let urls: Vec<String> =
            cluster.workers.iter().map(|w| format!("http://{}", w.address)).collect();
        let parsed = urls
            .iter()
            .map(|u| Url::parse(u).map_err(|e| Error::Config(format!("worker {u}: {e}"))))
            .collect::<Result<Vec<_>>>()?;
        let mut config = SessionConfig::new().with_information_schema(true);
        config.options_mut().sql_parser.parse_float_as_decimal = true;
        let mut headers = http::HeaderMap::new();
        headers.insert(
            TOKEN_HEADER,
            cluster
                .token
                .parse()
                .map_err(|_| Error::Config("the token must be printable ASCII".into()))?,
        );
        let mut state = SessionStateBuilder::new()
            .with_default_features()
            .with_config(config)
            .with_distributed_worker_resolver(Workers(parsed))
            .with_distributed_channel_resolver(Channels::default())
            .with_distributed_passthrough_headers(headers)?
            .with_distributed_planner()
            .with_distributed_user_codec(ShardScanCodec)
            .with_distributed_desired_task_count_handler(desired_tasks)
            .with_distributed_scale_up_leaf_node_handler(scale_up)
            .with_distributed_route_tasks_handler(route)
            .build();
        // Integer arithmetic fails on overflow, and a literal its column cannot hold is refused
        // by the column's name, as in a single database's sessions.
        nvpage_sql::install_checked_arithmetic(&mut state)?;
        nvpage_sql::install_column_value_checks(&mut state);
        state.config_mut().set_extension(Arc::new(Access(cluster.token.as_str().into())));
        let ctx = SessionContext::new_with_state(state);
        let me = Self {
            ctx,
            cluster: Arc::new(cluster),
            urls,
            uneven: parking_lot::Mutex::new(Vec::new()),
        };
        me.refresh().await?;
        Ok(me)
    }

    /// DataFusion's context: its tables are the cluster's.
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// The workers' addresses (`http://host:port`), in shard order.
    pub fn workers(&self) -> &[String] {
        &self.urls
    }

    /// Tables that some workers lack, or hold with another schema, and replicated tables whose
    /// copies differ in their counts of rows: not queryable until made even (each with the
    /// reason).
    pub fn uneven_tables(&self) -> Vec<String> {
        self.uneven.lock().clone()
    }

    /// Asks every worker for its tables again and registers those every worker holds alike.
    pub async fn refresh(&self) -> Result<()> {
        let mut found: Vec<BTreeMap<String, Found>> = Vec::new();
        for url in &self.urls {
            found.push(self.tables_of(url).await?);
        }
        let names: std::collections::BTreeSet<&String> =
            found.iter().flat_map(|f| f.keys()).collect();
        let schema = self.ctx.catalog("datafusion").and_then(|c| c.schema("public"));
        let Some(schema) = schema else {
            return Err(Error::Config("the coordinator's session has no default schema".into()));
        };
        // Only the cluster's tables: a caller's own (external tables, in-memory ones) stay.
        for old in schema.table_names() {
            let ours = schema
                .table(&old)
                .await?
                .is_some_and(|t| t.downcast_ref::<ClusterTable>().is_some());
            if ours {
                schema.deregister_table(&old)?;
            }
        }
        let mut uneven = Vec::new();
        for name in names {
            let first = &found[0];
            let missing: Vec<&str> = found
                .iter()
                .zip(&self.urls)
                .filter(|(f, _)| !f.contains_key(name))
                .map(|(_, u)| u.as_str())
                .collect();
            if !missing.is_empty() {
                uneven.push(format!("{name}: missing on {}", missing.join(", ")));
                continue;
            }
            let Some(f0) = first.get(name) else { continue };
            let differs: Vec<&str> = found
                .iter()
                .zip(&self.urls)
                .filter(|(f, _)| f[name].schema.fields() != f0.schema.fields())
                .map(|(_, u)| u.as_str())
                .collect();
            if !differs.is_empty() {
                uneven.push(format!("{name}: another schema on {}", differs.join(", ")));
                continue;
            }
            let split = self.cluster.tables.get(name.as_str()).cloned();
            if split == Some(Split::Replicated) {
                // A load or a DELETE cut short leaves copies of different counts.
                let other: Vec<String> = found
                    .iter()
                    .zip(&self.urls)
                    .filter(|(f, _)| f[name].rows != f0.rows)
                    .map(|(f, u)| format!("{} rows on {u}", f[name].rows))
                    .collect();
                if !other.is_empty() {
                    uneven.push(format!(
                        "{name}: a replicated table whose copies differ ({} rows on {}, {})",
                        f0.rows,
                        self.urls[0],
                        other.join(", ")
                    ));
                    continue;
                }
            }
            let homes: Vec<ShardHome> = found
                .iter()
                .zip(&self.urls)
                .map(|(f, u)| ShardHome { url: u.clone(), database: f[name].meta.database.clone() })
                .collect();
            let rows = match split {
                Some(Split::Replicated) => f0.rows,
                _ => found.iter().map(|f| f[name].rows).sum(),
            };
            let table = ClusterTable {
                name: name.clone(),
                schema: f0.schema.clone(),
                split,
                homes,
                rows,
                token: self.cluster.token.clone(),
            };
            schema.register_table(name.clone(), Arc::new(table))?;
        }
        *self.uneven.lock() = uneven;
        Ok(())
    }

    /// The tables of the worker at `url`.
    async fn tables_of(&self, url: &str) -> Result<BTreeMap<String, Found>> {
        let mut client = flight::connect(url, &self.cluster.token).await?;
        let mut infos = client
            .list_flights(Criteria::default())
            .await
            .map_err(|s| Error::worker(url, s.message()))?
            .into_inner();
        let mut out = BTreeMap::new();
        while let Some(info) = infos.next().await {
            let info = info.map_err(|s| Error::worker(url, s.message()))?;
            let name = info
                .flight_descriptor
                .as_ref()
                .and_then(|d| d.path.first().cloned())
                .ok_or_else(|| Error::worker(url, "a table without a name"))?;
            let schema = info.clone().try_decode_schema().map_err(|e| Error::worker(url, e))?;
            let meta: TableMeta = serde_json::from_slice(&info.app_metadata)
                .map_err(|e| Error::worker(url, format!("table {name}: {e}")))?;
            let found =
                Found { schema: Arc::new(schema), rows: info.total_records.max(0) as u64, meta };
            out.insert(name, found);
        }
        Ok(out)
    }

    /// The statements of `sql`, parsed with DataFusion's parser.
    pub fn parse(sql: &str) -> Result<Vec<Statement>> {
        Ok(nvpage_sql::Session::parse(sql)?)
    }

    /// Runs the one statement in `sql` (see the module's docs for what each does). Queries and
    /// `INSERT` return a [`DataFrame`] that runs when collected; every other statement has run
    /// when this returns.
    pub async fn sql(&self, sql: &str) -> Result<DataFrame> {
        let mut statements = Self::parse(sql)?;
        if statements.len() != 1 {
            return Err(Error::Unsupported(format!(
                "{} statements in one call: Coordinator::sql runs one (Coordinator::parse splits a script)",
                statements.len()
            )));
        }
        self.run(statements.remove(0)).await
    }

    /// Runs one parsed statement (see [`Coordinator::sql`]).
    pub async fn run(&self, statement: Statement) -> Result<DataFrame> {
        // Tables found uneven may have been caught between two workers' commits of one
        // statement: look again before each statement while any is.
        if !self.uneven.lock().is_empty() {
            self.refresh().await?;
        }
        if let Statement::Statement(s) = &statement {
            match s.as_ref() {
                SqlStatement::CreateTable(ct) if ct.query.is_none() => {
                    let name = ct.name.to_string();
                    let name = name.trim_matches('"');
                    self.rule(name)?;
                    self.on_every_worker(sql_action(&s.to_string())).await?;
                    return self.done().await;
                }
                SqlStatement::CreateTable(ct) => {
                    let name = ct.name.to_string();
                    let name = name.trim_matches('"').to_string();
                    self.rule(&name)?;
                    let Some(query) = &ct.query else { unreachable!("matched above") };
                    let df = self.ctx.sql(&query.to_string()).await?;
                    // Each worker makes the table as its own `CREATE TABLE … AS` would from
                    // the query's columns (`nvpage_sql::types::schema_of`).
                    let like = CreateLike::new(&name, df.schema().as_arrow())?;
                    self.on_every_worker(like.action()?).await?;
                    self.refresh().await?;
                    let insert = format!("INSERT INTO {} {query}", quote(&name));
                    self.ctx.sql(&insert).await?.collect().await?;
                    return self.done().await;
                }
                SqlStatement::Drop {
                    object_type: ObjectType::Table | ObjectType::Index, ..
                }
                | SqlStatement::CreateIndex(_) => {
                    self.on_every_worker(sql_action(&s.to_string())).await?;
                    return self.done().await;
                }
                SqlStatement::Update(_) | SqlStatement::Delete(_) => {
                    return self.modify(statement).await;
                }
                SqlStatement::StartTransaction { .. }
                | SqlStatement::Commit { .. }
                | SqlStatement::Rollback { .. } => {
                    return Err(Error::Unsupported(
                        "no transactions across shards: each statement commits on each worker \
                         on its own"
                            .into(),
                    ));
                }
                _ => {}
            }
        }
        let state = self.ctx.state();
        let plan = match state.statement_to_plan(statement).await {
            Ok(plan) => plan,
            Err(e) => {
                let uneven = self.uneven.lock().clone();
                if uneven.is_empty() {
                    return Err(e.into());
                }
                return Err(Error::Unsupported(format!(
                    "{e} (tables not queryable until the workers agree: {})",
                    uneven.join("; ")
                )));
            }
        };
        Ok(self.ctx.execute_logical_plan(plan).await?)
    }

    /// `UPDATE` or `DELETE`: checked here, then run on every worker's shard, each a transaction
    /// of its own (see the module's docs). Its result is the rows it changed, as one database's.
    async fn modify(&self, statement: Statement) -> Result<DataFrame> {
        let text = statement.to_string();
        let plan = self.ctx.state().statement_to_plan(statement).await?;
        let LogicalPlan::Dml(dml) = &plan else {
            return Err(Error::Unsupported(format!("not an UPDATE or DELETE: {text}")));
        };
        let name = dml.table_name.table().to_string();
        let split = self.rule(&name)?.clone();
        let verb = if matches!(dml.op, WriteOp::Delete) { "DELETE" } else { "UPDATE" };
        // A worker sees its own shards only: a statement that reads any table beyond the
        // rows it changes (a subquery, a FROM) would read a part of it. And each copy of a
        // replicated table evaluates the statement on its own: a function whose value may
        // differ between calls (`random()`, `now()`) would change copies unlike.
        let mut scans = 0;
        let mut unlike = None;
        dml.input.apply_with_subqueries(|p| {
            if matches!(p, LogicalPlan::TableScan(_)) {
                scans += 1;
            }
            p.apply_expressions(|e| {
                e.apply(|e| {
                    if let Expr::ScalarFunction(f) = e
                        && f.func.signature().volatility != Volatility::Immutable
                    {
                        unlike.get_or_insert_with(|| f.func.name().to_string());
                    }
                    Ok(TreeNodeRecursion::Continue)
                })
            })
        })?;
        if let (Split::Replicated, Some(f)) = (&split, unlike) {
            return Err(Error::Unsupported(format!(
                "{verb} of a replicated table ({name}) with {f}(), whose value may differ on each \
                 worker: its copies would come to differ"
            )));
        }
        if scans != 1 {
            return Err(Error::Unsupported(format!(
                "{verb} across shards reads no table but {name}: each worker would see only its \
                 own shards of a subquery's tables"
            )));
        }
        if verb == "UPDATE" {
            let changed = changed_columns(&dml.input);
            match &split {
                Split::Replicated => {
                    return Err(Error::Unsupported(format!(
                        "UPDATE of a replicated table ({name}): its copies could come to differ \
                         unseen; reload it instead (DROP TABLE, then CREATE TABLE … AS)"
                    )));
                }
                Split::Hash(keys) => {
                    if let Some(k) = keys.iter().find(|k| changed.contains(k)) {
                        return Err(Error::Unsupported(format!(
                            "UPDATE of {name}.{k}, which {name} is split by: the row would \
                             belong on another worker; DELETE it and INSERT it instead"
                        )));
                    }
                }
            }
        }
        let mut counts = Vec::new();
        for url in &self.urls {
            match self.sql_on(url, &text).await {
                Ok(n) => counts.push(n),
                Err(Error::Worker { worker, message }) if !counts.is_empty() => {
                    let done = self.urls[..counts.len()].join(", ");
                    let message = format!(
                        "{message}; the statement committed on {done} before it (each shard's \
                         part is atomic; the statement as a whole is not): run it on the other \
                         workers' databases (nvpage sql DIR), not again through the coordinator"
                    );
                    return Err(Error::Worker { worker, message });
                }
                Err(e) => return Err(e),
            }
        }
        // A replicated table's copies each changed the same rows; a split table's rows are
        // on one worker each.
        let total = match split {
            Split::Replicated => counts.first().copied().unwrap_or(0),
            Split::Hash(_) => counts.iter().sum(),
        };
        let schema = Arc::new(ArrowSchema::new(vec![Field::new("count", DataType::UInt64, false)]));
        let batch = RecordBatch::try_new(schema, vec![Arc::new(UInt64Array::from(vec![total]))])
            .map_err(DataFusionError::from)?;
        let _ = self.refresh().await;
        Ok(self.ctx.read_batch(batch)?)
    }

    /// Runs `sql` on the worker at `url`; the rows it changed, if it says.
    async fn sql_on(&self, url: &str, sql: &str) -> Result<u64> {
        let mut count = 0;
        for body in self.act(url, sql_action(sql)).await? {
            count = std::str::from_utf8(&body)
                .ok()
                .and_then(|b| b.parse().ok())
                .ok_or_else(|| Error::worker(url, "an unreadable count of rows changed"))?;
        }
        Ok(count)
    }

    /// Runs `action` on the worker at `url`; the bodies of its results.
    async fn act(&self, url: &str, action: Action) -> Result<Vec<prost::bytes::Bytes>> {
        let mut client = flight::connect(url, &self.cluster.token).await?;
        let mut out = client
            .do_action(action)
            .await
            .map_err(|s| Error::worker(url, s.message()))?
            .into_inner();
        let mut bodies = Vec::new();
        while let Some(r) = out.next().await {
            bodies.push(r.map_err(|s| Error::worker(url, s.message()))?.body);
        }
        Ok(bodies)
    }

    /// The split of table `name`, which a load needs.
    fn rule(&self, name: &str) -> Result<&Split> {
        self.cluster.tables.get(name).ok_or_else(|| {
            Error::Unsupported(format!(
                "table {name} has no split in the cluster file: add [tables.{name}] with \
                 `hash = [\"column\"]` or `replicated = true`"
            ))
        })
    }

    /// Runs `action` on every worker's database, in shard order; stops at the first failure.
    async fn on_every_worker(&self, action: Action) -> Result<()> {
        for url in &self.urls {
            self.act(url, action.clone()).await?;
        }
        Ok(())
    }

    /// Learns the tables again, and returns the empty result of a statement that has run.
    async fn done(&self) -> Result<DataFrame> {
        self.refresh().await?;
        Ok(self.ctx.read_empty()?)
    }
}

/// The columns an `UPDATE`'s plan sets: those its projection does not pass through as they are.
fn changed_columns(input: &LogicalPlan) -> Vec<String> {
    let LogicalPlan::Projection(p) = input else {
        return input.schema().fields().iter().map(|f| f.name().clone()).collect();
    };
    p.expr
        .iter()
        .zip(p.schema.fields())
        .filter(|(e, f)| {
            let inner = match e {
                Expr::Alias(a) => a.expr.as_ref(),
                e => e,
            };
            !matches!(inner, Expr::Column(c) if c.name == *f.name())
        })
        .map(|(_, f)| f.name().clone())
        .collect()
}

/// The action that runs `sql` on a worker's database.
fn sql_action(sql: &str) -> Action {
    Action { r#type: "sql".into(), body: sql.as_bytes().to_vec().into() }
}

/// A distributed table, as the coordinator's planner sees it.
#[derive(Debug)]
struct ClusterTable {
    name: String,
    schema: SchemaRef,
    split: Option<Split>,
    homes: Vec<ShardHome>,
    rows: u64,
    token: String,
}

#[async_trait]
impl TableProvider for ClusterTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        // Each worker applies every filter to its shard exactly: in its scan's page fold where
        // the fold takes it, in a filter above the scan otherwise. So no filter is needed
        // above the shards, and a limit reaches them too.
        Ok(vec![TableProviderFilterPushDown::Exact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn DfSession,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let scan = ShardScanExec::new(
            &self.name,
            &self.schema,
            projection,
            filters,
            limit,
            self.split == Some(Split::Replicated),
            self.homes.clone(),
            state.config().target_partitions(),
            self.rows,
        )?;
        Ok(Arc::new(scan))
    }

    async fn insert_into(
        &self,
        _state: &dyn DfSession,
        input: Arc<dyn ExecutionPlan>,
        op: InsertOp,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if op != InsertOp::Append {
            return Err(Error::Unsupported(format!("{op} into a distributed table")).into());
        }
        let split = match &self.split {
            Some(s) => s.clone(),
            None => {
                return Err(Error::Unsupported(format!(
                    "table {} has no split in the cluster file: add [tables.{}] with \
                     `hash = [\"column\"]` or `replicated = true`",
                    self.name, self.name
                ))
                .into());
            }
        };
        let key = match &split {
            Split::Hash(cols) => cols
                .iter()
                .map(|c| {
                    self.schema.index_of(c).map_err(|_| {
                        DataFusionError::Plan(format!(
                            "table {}: its split names column {c}, which it does not have",
                            self.name
                        ))
                    })
                })
                .collect::<DfResult<Vec<_>>>()?,
            Split::Replicated => Vec::new(),
        };
        let sink = ShardSink {
            table: self.name.clone(),
            schema: self.schema.clone(),
            key: (split != Split::Replicated).then_some(key),
            homes: self.homes.clone(),
            token: self.token.clone(),
        };
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }
}

/// Splits the rows of an `INSERT` among the workers and streams each worker its part.
#[derive(Debug)]
struct ShardSink {
    table: String,
    schema: SchemaRef,
    /// The split's key columns; `None` for a replicated table.
    key: Option<Vec<usize>>,
    homes: Vec<ShardHome>,
    token: String,
}

impl DisplayAs for ShardSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ShardSink: table={}, shards={}", self.table, self.homes.len())
    }
}

/// One worker's load in progress: its rows' channel and the request's task.
struct Load {
    url: String,
    tx: Option<mpsc::Sender<FlightData>>,
    task: tokio::task::JoinHandle<Result<u64>>,
}

impl ShardSink {
    /// Starts a load of this table on the worker at `url`.
    fn start(&self, url: &str) -> DfResult<Load> {
        let (tx, rx) = mpsc::channel::<FlightData>(4);
        let mut first = arrow_flight::utils::batches_to_flight_data(&self.schema, vec![])?;
        let Some(mut schema_msg) = first.drain(..).next() else {
            return Err(DataFusionError::Internal("no schema message".into()));
        };
        schema_msg.flight_descriptor = Some(FlightDescriptor::new_path(vec![self.table.clone()]));
        tx.try_send(schema_msg).map_err(|e| DataFusionError::Internal(e.to_string()))?;
        let (u, token) = (url.to_string(), self.token.clone());
        let task = tokio::spawn(async move {
            let mut client = flight::connect(&u, &token).await?;
            let mut out = client
                .do_put(ReceiverStream::new(rx))
                .await
                .map_err(|s| Error::worker(&u, s.message()))?
                .into_inner();
            let mut rows = 0;
            while let Some(r) = out.next().await {
                let r = r.map_err(|s| Error::worker(&u, s.message()))?;
                rows = std::str::from_utf8(&r.app_metadata)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
            }
            Ok(rows)
        });
        Ok(Load { url: url.to_string(), tx: Some(tx), task })
    }

    /// Sends `batch` to `load`; on a closed channel, the worker's own error.
    async fn send(&self, load: &mut Load, batch: &RecordBatch) -> DfResult<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let messages =
            arrow_flight::utils::batches_to_flight_data(&self.schema, vec![batch.clone()])?;
        let Some(tx) = &load.tx else { return Ok(()) };
        // The first message is the schema, sent when the load began.
        for m in messages.into_iter().skip(1) {
            if tx.send(m).await.is_err() {
                load.tx = None;
                let why = match (&mut load.task).await {
                    Ok(Err(e)) => e.to_string(),
                    Ok(Ok(_)) => "ended before its rows did".to_string(),
                    Err(e) => e.to_string(),
                };
                return Err(Error::worker(&load.url, why).into());
            }
        }
        Ok(())
    }
}

/// A message that is not Arrow IPC: the worker's decoder fails on it, and its insert with it.
fn abandoned() -> FlightData {
    FlightData { data_header: b"nvpage: load abandoned".to_vec().into(), ..Default::default() }
}

#[async_trait]
impl DataSink for ShardSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        mut data: SendableRecordBatchStream,
        _context: &Arc<TaskContext>,
    ) -> DfResult<u64> {
        let mut loads =
            self.homes.iter().map(|h| self.start(&h.url)).collect::<DfResult<Vec<_>>>()?;
        let n = loads.len();
        let sent: DfResult<()> = async {
            while let Some(batch) = data.next().await {
                let batch = batch?.with_schema(self.schema.clone())?;
                match &self.key {
                    None => {
                        for load in loads.iter_mut() {
                            self.send(load, &batch).await?;
                        }
                    }
                    Some(key) => {
                        let shards = shard_of_rows(&batch, key, n)?;
                        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); n];
                        for (r, s) in shards.into_iter().enumerate() {
                            rows[s].push(r as u32);
                        }
                        for (load, rows) in loads.iter_mut().zip(rows) {
                            if !rows.is_empty() {
                                let part = take_record_batch(&batch, &UInt32Array::from(rows))?;
                                self.send(load, &part).await?;
                            }
                        }
                    }
                }
            }
            Ok(())
        }
        .await;
        if let Err(e) = sent {
            // End every load with a message no worker can read, not with the stream's end
            // (which commits): each worker's insert fails and keeps nothing.
            for load in loads.iter_mut() {
                if let Some(tx) = load.tx.take() {
                    let _ = tx.send(abandoned()).await;
                }
            }
            for load in loads {
                let _ = load.task.await;
            }
            return Err(e);
        }
        for load in loads.iter_mut() {
            load.tx = None;
        }
        let mut committed = Vec::new();
        let mut failed = Vec::new();
        let mut total = 0u64;
        for load in loads {
            match load.task.await {
                Ok(Ok(rows)) => {
                    committed.push(load.url);
                    total = if self.key.is_some() { total + rows } else { rows };
                }
                Ok(Err(e)) => failed.push(e.to_string()),
                Err(e) => failed.push(format!("worker {}: {e}", load.url)),
            }
        }
        if failed.is_empty() {
            return Ok(total);
        }
        let kept = if committed.is_empty() {
            "no worker committed its part".to_string()
        } else {
            format!(
                "committed on {} (each shard's part is atomic; the load as a whole is not)",
                committed.join(", ")
            )
        };
        Err(DataFusionError::Execution(format!(
            "loading {}: {}; {kept}",
            self.table,
            failed.join("; ")
        )))
    }
}
