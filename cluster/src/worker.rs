//! A worker: one process that owns one nvpage database and serves its shards. It runs the
//! distributed engine's tasks (the plan fragments a coordinator sends it), reading its shards in
//! place, and answers the coordinator's own requests over Arrow Flight on the same port:
//! - `list_flights`: its tables, with their schemas, live row counts, the database's UUID and
//!   the commit sequence they were read at;
//! - `do_get`: a scan of one of its shards (for a task the planner placed elsewhere);
//! - `do_put`: rows to add to one table, committed as one transaction when the stream ends
//!   whole (a stream cut short commits nothing);
//! - `do_action` `sql`: a statement on its own database (`CREATE TABLE`, `DROP TABLE`,
//!   `CREATE INDEX`, …), for the coordinator to run on every worker; `create_like`: a table
//!   with an Arrow schema's columns, typed as the worker's `CREATE TABLE … AS` types them.
//!
//! Every request must carry the cluster's token ([`crate::flight::TOKEN_HEADER`]); others are
//! refused with `Unauthenticated`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use arrow_flight::decode::FlightRecordBatchStream;
use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::{
    Action, ActionType, Criteria, Empty, FlightData, FlightDescriptor, FlightInfo,
    HandshakeRequest, HandshakeResponse, PollInfo, PutResult, SchemaResult, Ticket,
};
use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{SchemaRef, UInt64Type};
use datafusion::catalog::streaming::StreamingTable;
use datafusion::catalog::{CatalogProvider, MemoryCatalogProvider, MemorySchemaProvider};
use datafusion::common::{DFSchema, TableReference};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::expr_rewriter::unnormalize_col;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::limit::LocalLimitExec;
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use datafusion_distributed::{DistributedExt, Worker, WorkerQueryContext};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use nvpage::{Database, ReadOps};
use nvpage_sql::Session;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status, Streaming};

use crate::error::{Error, Result};
use crate::flight::{Channels, CheckToken, TOKEN_HEADER};
use crate::scan::{Access, ReadSpec, ShardScanCodec, decode_filters, slice_rows, table_ref};

/// How long a worker told to stop lets running requests finish before it cancels them.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// The catalog a worker registers incoming rows in while it inserts them.
const LOAD_CATALOG: &str = "nvpage_load";
const LOAD_SCHEMA: &str = "incoming";

/// What a worker tells the coordinator about each table (a [`FlightInfo`]'s `app_metadata`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TableMeta {
    /// The worker's database's UUID.
    pub database: String,
    /// The commit the table's row count was read at.
    pub commit_seq: u64,
}

/// A worker's own database, as the scans of its tasks read it.
#[derive(Debug)]
pub struct LocalShard {
    /// The database's UUID.
    pub(crate) database: String,
    session: Session,
    loads: AtomicU64,
    /// The local plan of each scan node of this process that read this shard, by node number.
    plans: Mutex<std::collections::HashMap<u64, Arc<PlanCell>>>,
}

/// A scan node's local plan and the commit its snapshot read, made once.
type PlanCell = tokio::sync::OnceCell<(Arc<dyn ExecutionPlan>, u64)>;

impl LocalShard {
    /// The local plan of scan node `id` (made by [`Self::plan`] at its first call, the same
    /// for every later one).
    pub(crate) async fn plan_of(
        &self,
        id: u64,
        read: &ReadSpec,
        partitions: usize,
    ) -> DfResult<(Arc<dyn ExecutionPlan>, u64)> {
        let cell = self.plans.lock().entry(id).or_default().clone();
        cell.get_or_try_init(|| self.plan(read, partitions)).await.cloned()
    }

    /// Drops scan node `id`'s plan.
    pub(crate) fn forget_plan(&self, id: u64) {
        self.plans.lock().remove(&id);
    }

    /// The plan of `read` over this database, as of a snapshot taken now, with its local scan
    /// split into `partitions`; and the snapshot's commit sequence.
    pub(crate) async fn plan(
        &self,
        read: &ReadSpec,
        partitions: usize,
    ) -> DfResult<(Arc<dyn ExecutionPlan>, u64)> {
        let snap = self.session.database().snapshot().map_err(ext)?;
        let commit = snap.commit_seq();
        let mut state = self.session.state_at(snap);
        state.config_mut().options_mut().execution.target_partitions = partitions.max(1);
        let provider = self.session.context().table_provider(table_ref(read)).await?;
        let filters = decode_filters(read, &TaskContext::from(&state))?;
        // The coordinator counts on every filter being applied here, exactly: the local scan
        // evaluates those it takes in its page fold, and a filter above it the rest.
        let refs: Vec<&Expr> = filters.iter().collect();
        let support = provider.supports_filters_pushdown(&refs)?;
        let (pushed, rest): (Vec<_>, Vec<_>) = filters
            .into_iter()
            .zip(support)
            .partition(|(_, s)| *s != TableProviderFilterPushDown::Unsupported);
        let pushed: Vec<Expr> = pushed.into_iter().map(|(f, _)| f).collect();
        let Some(rest) = conjunction(rest.into_iter().map(|(f, _)| f)) else {
            let plan = provider.scan(&state, read.projection.as_ref(), &pushed, read.limit).await?;
            return Ok((plan, commit));
        };
        // Read the columns the rest names too, filter, then keep the columns asked for.
        let table = provider.schema();
        let mut columns: Vec<usize> =
            read.projection.clone().unwrap_or_else(|| (0..table.fields().len()).collect());
        let wanted = columns.len();
        for c in rest.column_refs() {
            let i = table.index_of(&c.name)?;
            if !columns.contains(&i) {
                columns.push(i);
            }
        }
        let scan = provider.scan(&state, Some(&columns), &pushed, None).await?;
        let read_schema = DFSchema::try_from(scan.schema())?;
        let predicate = state.create_physical_expr(unnormalize_col(rest), &read_schema)?;
        let filtered: Arc<dyn ExecutionPlan> = Arc::new(FilterExec::try_new(predicate, scan)?);
        let kept = (0..wanted)
            .map(|i| {
                let field = filtered.schema().field(i).clone();
                let column = Arc::new(Column::new(field.name(), i)) as Arc<dyn PhysicalExpr>;
                ProjectionExpr::new(column, field.name().clone())
            })
            .collect::<Vec<_>>();
        let mut plan: Arc<dyn ExecutionPlan> = Arc::new(ProjectionExec::try_new(kept, filtered)?);
        if let Some(limit) = read.limit {
            // Each partition stops at the limit; the coordinator's limit takes the first.
            plan = Arc::new(LocalLimitExec::new(plan, limit));
        }
        Ok((plan, commit))
    }

    /// Partition `partition` of `partitions` of `plan`: the local scan's partitions `q` with
    /// `q mod partitions == partition`, one after another, sliced as `read` says.
    pub(crate) fn execute(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        read: &ReadSpec,
        partition: usize,
        partitions: usize,
        ctx: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let n = plan.output_partitioning().partition_count();
        let streams = (0..n)
            .filter(|q| q % partitions.max(1) == partition)
            .map(|q| plan.execute(q, ctx.clone()))
            .collect::<DfResult<Vec<_>>>()?;
        let slice = read.slice;
        let batches = futures::stream::iter(streams).flatten().and_then(move |b| async move {
            match slice {
                Some(s) => slice_rows(&b, s),
                None => Ok(b),
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(plan.schema(), batches)))
    }
}

fn ext(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// Serves `db`'s shards on `listener` until `stop` completes; then lets running requests
/// finish for up to [`STOP_GRACE`], cancels what is left, and closes the database.
pub async fn serve(
    db: Database,
    listener: TcpListener,
    token: &str,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    if token.is_empty() {
        return Err(Error::Config("a worker needs the cluster's token".into()));
    }
    let database = db.uuid().to_string();
    let session = Session::new(Arc::new(db))?;
    let incoming = MemoryCatalogProvider::new();
    incoming.register_schema(LOAD_SCHEMA, Arc::new(MemorySchemaProvider::new()))?;
    session.context().register_catalog(LOAD_CATALOG, Arc::new(incoming));
    let shard = Arc::new(LocalShard {
        database,
        session,
        loads: AtomicU64::new(0),
        plans: Mutex::new(Default::default()),
    });
    let token: Arc<str> = token.into();
    let header: http::HeaderValue =
        token.parse().map_err(|_| Error::Config("the token must be printable ASCII".into()))?;

    let channels = Channels::default();
    // The engine's sessions (which it caches with their tasks) and the Flight service hold the
    // shard weakly: when serving ends, this function's is the one strong reference, and the
    // database closes here rather than when the last cached task is dropped.
    let (s, t) = (ShardRef(Arc::downgrade(&shard)), token.clone());
    let engine = Worker::from_session_builder(move |ctx: WorkerQueryContext| {
        let (shard, token, channels, header) =
            (s.clone(), t.clone(), channels.clone(), header.clone());
        async move {
            // The token goes on with this worker's own requests to other workers.
            let mut headers = http::HeaderMap::new();
            headers.insert(TOKEN_HEADER, header);
            let mut b = ctx
                .builder
                .with_distributed_user_codec(ShardScanCodec)
                .with_distributed_channel_resolver(channels)
                .with_distributed_passthrough_headers(headers)?;
            let cfg = b.config().get_or_insert_default();
            cfg.set_extension(Arc::new(shard));
            cfg.set_extension(Arc::new(Access(token)));
            // The coordinator's plans carry its checked integer arithmetic.
            let mut state = b.build();
            nvpage_sql::install_checked_arithmetic(&mut state)?;
            Ok(state)
        }
    });
    let service = ShardService { shard: ShardRef(Arc::downgrade(&shard)) };
    let check = CheckToken(token.clone());
    let flight = FlightServiceServer::new(service)
        .max_decoding_message_size(usize::MAX)
        .max_encoding_message_size(usize::MAX);

    let (stopped_tx, stopped_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tonic::transport::Server::builder()
        .add_service(InterceptedService::new(engine.into_worker_server(), check.clone()))
        .add_service(InterceptedService::new(flight, check))
        .serve_with_incoming_shutdown(
            tokio_stream::wrappers::TcpListenerStream::new(listener),
            async move {
                stop.await;
                let _ = stopped_tx.send(());
            },
        );
    let grace = async move {
        if stopped_rx.await.is_ok() {
            tokio::time::sleep(STOP_GRACE).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    let served = tokio::select! {
        r = server => r.map_err(|e| Error::Config(format!("serving: {}", crate::flight::source_chain(&e)))),
        () = grace => Ok(()),
    };
    // The server and its tasks are gone (those left at the grace's end were dropped, which
    // rolls back a load in progress): close the database.
    let db = Arc::downgrade(shard.session.database());
    match Arc::try_unwrap(shard) {
        Ok(shard) => shard.session.close(),
        Err(shard) => drop(shard),
    }
    // Tasks the engine still caches, or that were cancelled a moment ago, may hold a snapshot
    // of the database for a little longer: the database closes when the last lets go.
    let deadline = tokio::time::Instant::now() + STOP_GRACE;
    while db.strong_count() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    served
}

/// The worker's own Flight requests (see the module's docs).
struct ShardService {
    shard: ShardRef,
}

/// A worker's database as its tasks and requests reach it: gone once the worker stops.
#[derive(Clone, Debug)]
pub(crate) struct ShardRef(std::sync::Weak<LocalShard>);

impl ShardRef {
    /// The shard, unless the worker has stopped.
    pub(crate) fn get(&self) -> DfResult<Arc<LocalShard>> {
        self.0.upgrade().ok_or_else(|| DataFusionError::Execution("the worker is stopping".into()))
    }
}

type Stream<T> = Pin<Box<dyn futures::Stream<Item = std::result::Result<T, Status>> + Send>>;

fn status(e: impl std::fmt::Display) -> Status {
    Status::internal(e.to_string())
}

#[tonic::async_trait]
impl FlightService for ShardService {
    type HandshakeStream = Stream<HandshakeResponse>;
    type ListFlightsStream = Stream<FlightInfo>;
    type DoGetStream = Stream<FlightData>;
    type DoPutStream = Stream<PutResult>;
    type DoExchangeStream = Stream<FlightData>;
    type DoActionStream = Stream<arrow_flight::Result>;
    type ListActionsStream = Stream<ActionType>;

    async fn list_flights(
        &self,
        _request: Request<Criteria>,
    ) -> std::result::Result<Response<Self::ListFlightsStream>, Status> {
        let shard = self.shard.get().map_err(status)?;
        let snap = shard.session.database().snapshot().map_err(status)?;
        let meta = TableMeta { database: shard.database.clone(), commit_seq: snap.commit_seq() };
        let meta = serde_json::to_vec(&meta).map_err(status)?;
        let mut infos = Vec::new();
        for table in snap.tables() {
            let rows = snap.row_count(&table).map_err(status)?;
            let schema = nvpage_sql::types::arrow_schema(table.schema());
            let info = FlightInfo::new()
                .try_with_schema(&schema)
                .map_err(status)?
                .with_descriptor(FlightDescriptor::new_path(vec![table.name().to_string()]))
                .with_total_records(rows as i64)
                .with_app_metadata(meta.clone());
            infos.push(Ok(info));
        }
        Ok(Response::new(Box::pin(futures::stream::iter(infos))))
    }

    async fn do_get(
        &self,
        request: Request<Ticket>,
    ) -> std::result::Result<Response<Self::DoGetStream>, Status> {
        let read: ReadSpec = serde_json::from_slice(&request.into_inner().ticket)
            .map_err(|e| Status::invalid_argument(format!("a scan's ticket: {e}")))?;
        let shard = self.shard.get().map_err(status)?;
        let (plan, _) = shard.plan(&read, 1).await.map_err(status)?;
        let ctx = shard.session.context().task_ctx();
        let batches = shard.execute(plan.clone(), &read, 0, 1, ctx).map_err(status)?;
        drop(shard);
        let data = FlightDataEncoderBuilder::new()
            .with_schema(plan.schema())
            .build(batches.map_err(|e| FlightError::ExternalError(Box::new(e))))
            .map_err(|e| Status::internal(e.to_string()));
        Ok(Response::new(Box::pin(data)))
    }

    async fn do_put(
        &self,
        request: Request<Streaming<FlightData>>,
    ) -> std::result::Result<Response<Self::DoPutStream>, Status> {
        let mut input = request.into_inner();
        let Some(first) = input.message().await? else {
            return Err(Status::invalid_argument("an empty load"));
        };
        let table = match &first.flight_descriptor {
            Some(d) if d.path.len() == 1 => d.path[0].clone(),
            _ => return Err(Status::invalid_argument("a load names its table as a one-part path")),
        };
        let data =
            futures::stream::once(async { Ok(first) }).chain(input).map_err(FlightError::from);
        let mut batches = FlightRecordBatchStream::new_from_flight_data(data).peekable();
        // The schema comes with the first message; a stream of no rows still carries it.
        let schema = match std::pin::Pin::new(&mut batches).peek().await {
            Some(Err(e)) => return Err(Status::invalid_argument(e.to_string())),
            _ => batches.get_ref().schema().cloned(),
        };
        let Some(schema) = schema else {
            return Err(Status::invalid_argument("a load without a schema"));
        };
        let batches = batches.map_err(|e| DataFusionError::External(Box::new(e))).boxed();
        let shard = self.shard.get().map_err(status)?;
        let rows = shard.load(&table, schema, batches).await.map_err(status)?;
        let result = PutResult { app_metadata: rows.to_string().into_bytes().into() };
        Ok(Response::new(Box::pin(futures::stream::once(async { Ok(result) }))))
    }

    async fn do_action(
        &self,
        request: Request<Action>,
    ) -> std::result::Result<Response<Self::DoActionStream>, Status> {
        let action = request.into_inner();
        match action.r#type.as_str() {
            "sql" => {
                let text = std::str::from_utf8(&action.body)
                    .map_err(|_| Status::invalid_argument("a statement that is not UTF-8"))?;
                let shard = self.shard.get().map_err(status)?;
                let df = shard.session.sql(text).await.map_err(status)?;
                let batches = df.collect().await.map_err(status)?;
                // A statement that changes rows answers how many (`UPDATE`, `DELETE`).
                let count = match batches.as_slice() {
                    [b] if b.num_rows() == 1
                        && b.num_columns() == 1
                        && b.schema().field(0).name() == "count" =>
                    {
                        b.column(0).as_primitive_opt::<UInt64Type>().map(|c| c.value(0))
                    }
                    _ => None,
                };
                let out = count.map(|n| arrow_flight::Result { body: n.to_string().into() });
                Ok(Response::new(Box::pin(futures::stream::iter(out.map(Ok)))))
            }
            CreateLike::ACTION => {
                let like: CreateLike = serde_json::from_slice(&action.body).map_err(|e| {
                    Status::invalid_argument(format!("{}: {e}", CreateLike::ACTION))
                })?;
                let shard = self.shard.get().map_err(status)?;
                shard.create_like(&like).await.map_err(status)?;
                Ok(Response::new(Box::pin(futures::stream::empty())))
            }
            other => Err(Status::unimplemented(format!("no action {other:?}"))),
        }
    }

    async fn handshake(
        &self,
        _request: Request<Streaming<HandshakeRequest>>,
    ) -> std::result::Result<Response<Self::HandshakeStream>, Status> {
        Err(Status::unimplemented("handshake: the token goes in every request's header"))
    }

    async fn get_flight_info(
        &self,
        _request: Request<FlightDescriptor>,
    ) -> std::result::Result<Response<FlightInfo>, Status> {
        Err(Status::unimplemented("get_flight_info: use list_flights"))
    }

    async fn poll_flight_info(
        &self,
        _request: Request<FlightDescriptor>,
    ) -> std::result::Result<Response<PollInfo>, Status> {
        Err(Status::unimplemented("poll_flight_info"))
    }

    async fn get_schema(
        &self,
        _request: Request<FlightDescriptor>,
    ) -> std::result::Result<Response<SchemaResult>, Status> {
        Err(Status::unimplemented("get_schema: use list_flights"))
    }

    async fn do_exchange(
        &self,
        _request: Request<Streaming<FlightData>>,
    ) -> std::result::Result<Response<Self::DoExchangeStream>, Status> {
        Err(Status::unimplemented("do_exchange"))
    }

    async fn list_actions(
        &self,
        _request: Request<Empty>,
    ) -> std::result::Result<Response<Self::ListActionsStream>, Status> {
        let sql = ActionType {
            r#type: "sql".into(),
            description: "run one statement on the worker's database".into(),
        };
        let like = ActionType {
            r#type: CreateLike::ACTION.into(),
            description: "make a table with an Arrow schema's columns".into(),
        };
        Ok(Response::new(Box::pin(futures::stream::iter([Ok(sql), Ok(like)]))))
    }
}

/// A table to make with the columns of an Arrow schema, as `CREATE TABLE … AS` makes one
/// (the action a coordinator's `CREATE TABLE … AS` runs on every worker).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CreateLike {
    table: String,
    /// The schema as an Arrow IPC message.
    schema: Vec<u8>,
}

impl CreateLike {
    pub(crate) const ACTION: &'static str = "create_like";

    pub(crate) fn new(table: &str, schema: &datafusion::arrow::datatypes::Schema) -> Result<Self> {
        let options = datafusion::arrow::ipc::writer::IpcWriteOptions::default();
        let message =
            arrow_flight::IpcMessage::try_from(arrow_flight::SchemaAsIpc::new(schema, &options))
                .map_err(|e| DataFusionError::from(e).context(format!("the schema of {table}")))?;
        Ok(Self { table: table.to_string(), schema: message.0.to_vec() })
    }

    pub(crate) fn action(&self) -> Result<Action> {
        let body = serde_json::to_vec(self).map_err(|e| Error::Config(e.to_string()))?;
        Ok(Action { r#type: Self::ACTION.into(), body: body.into() })
    }
}

impl LocalShard {
    /// Makes `like.table` with `like.schema`'s columns: `CREATE TABLE … AS` over an empty
    /// table of that schema, so the types are chosen as the worker's SQL chooses them.
    async fn create_like(&self, like: &CreateLike) -> Result<()> {
        let schema = datafusion::arrow::datatypes::Schema::try_from(arrow_flight::IpcMessage(
            like.schema.clone().into(),
        ))
        .map_err(|e| DataFusionError::from(e).context(format!("the schema of {}", like.table)))?;
        let empty = datafusion::datasource::MemTable::try_new(Arc::new(schema), vec![vec![]])?;
        let sql =
            |source: &str| format!("CREATE TABLE {} AS SELECT * FROM {source}", quote(&like.table));
        self.with_source(Arc::new(empty), sql).await.map(|_| ())
    }

    /// Runs the statement `sql(source)` makes, with `provider` registered as the table `source`
    /// names for the statement's time; returns the statement's result.
    async fn with_source(
        &self,
        provider: Arc<dyn datafusion::catalog::TableProvider>,
        sql: impl FnOnce(&str) -> String,
    ) -> Result<Vec<datafusion::arrow::array::RecordBatch>> {
        let name = format!("l{}", self.loads.fetch_add(1, Ordering::Relaxed));
        let source = TableReference::full(LOAD_CATALOG, LOAD_SCHEMA, name.as_str());
        let ctx = self.session.context();
        ctx.register_table(source.clone(), provider)?;
        let statement = sql(&format!("{LOAD_CATALOG}.{LOAD_SCHEMA}.{name}"));
        let result = async {
            Ok::<_, Error>(
                self.session
                    .sql(&statement)
                    .await?
                    .collect()
                    .await
                    .map_err(nvpage_sql::Error::from)?,
            )
        }
        .await;
        ctx.deregister_table(source)?;
        result
    }

    /// Inserts `batches` into `table` as one statement: committed when the stream ends whole,
    /// nothing kept if it fails or is cut short. Returns the rows inserted.
    async fn load(
        &self,
        table: &str,
        schema: SchemaRef,
        batches: BoxStream<'static, DfResult<datafusion::arrow::array::RecordBatch>>,
    ) -> Result<u64> {
        let once = Arc::new(OneShot { schema: schema.clone(), stream: Mutex::new(Some(batches)) });
        let provider = StreamingTable::try_new(schema, vec![once])?;
        let sql = |source: &str| format!("INSERT INTO {} SELECT * FROM {source}", quote(table));
        let out = self.with_source(Arc::new(provider), sql).await?;
        let rows = out.first().and_then(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<datafusion::arrow::array::UInt64Array>()
                .map(|a| a.value(0))
        });
        Ok(rows.unwrap_or(0))
    }
}

/// `name` as a quoted SQL identifier.
pub(crate) fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A table whose one partition is a stream that can be read once.
struct OneShot {
    schema: SchemaRef,
    stream: Mutex<Option<BoxStream<'static, DfResult<datafusion::arrow::array::RecordBatch>>>>,
}

impl std::fmt::Debug for OneShot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OneShot")
    }
}

impl PartitionStream for OneShot {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let stream = self.stream.lock().take().unwrap_or_else(|| {
            futures::stream::once(async {
                Err(DataFusionError::Execution("incoming rows read twice".into()))
            })
            .boxed()
        });
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), stream))
    }
}
