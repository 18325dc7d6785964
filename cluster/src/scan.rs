//! The scan of a distributed table: one plan node, [`ShardScanExec`], that the distributed
//! planner runs as one task per worker, each task routed to the worker whose database holds its
//! shard and reading it in place there, with the query's projection, filters and limit pushed
//! into the worker's own nvpage scan.
//!
//! Where the planner runs the node elsewhere — in the coordinator, when a stage is left with a
//! single task, or a task on another worker — the node reads the shards it needs from their
//! workers over Flight instead ([`crate::worker`]'s `do_get`). So the answer never depends on
//! where a task ran; only its cost does.
//!
//! A replicated table is read from one copy per task: task *i* of *k* reads worker *i mod n*'s
//! copy and keeps the rows whose hash of every column read, mod *k*, is *i* (each row once).

use std::fmt;
use std::sync::Arc;

use arrow_flight::Ticket;
use arrow_flight::decode::FlightRecordBatchStream;
use datafusion::arrow::array::{BooleanArray, RecordBatch};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::common::TableReference;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{Statistics, internal_err};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use datafusion_distributed::{
    DesiredTaskCountEvent, DesiredTaskCountEventResponse, DistributedTaskContext, RouteTasksEvent,
    RouteTasksEventResponse, ScaleUpLeafNodeEvent, ScaleUpLeafNodeEventResponse,
};
use datafusion_proto::bytes::Serializeable;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use datafusion_proto::protobuf;
use futures::{StreamExt, TryStreamExt};
use prost::Message;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::flight;
use crate::hash::shard_of_rows;
use crate::worker::ShardRef;

/// Where one shard lives: its worker's address and its database's UUID.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardHome {
    /// `http://host:port`.
    pub url: String,
    /// The UUID of the worker's database ([`nvpage::Database::uuid`]): how a worker knows a
    /// shard is its own.
    pub database: String,
}

/// What a scan of one table reads: the same on every shard.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ReadSpec {
    pub table: String,
    pub projection: Option<Vec<usize>>,
    /// The filters, each as DataFusion's protobuf of a logical expression.
    pub filters: Vec<Vec<u8>>,
    pub limit: Option<usize>,
    /// For a replicated table read by `k` tasks: keep the rows of slice `i` of `k`.
    pub slice: Option<(usize, usize)>,
}

/// The scan node's state, as shipped to workers.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct ScanState {
    read: ReadSpec,
    replicated: bool,
    homes: Vec<ShardHome>,
    /// Output partitions of each task.
    partitions: usize,
    /// Tasks the planner split the node into (1 until it does).
    tasks: usize,
    /// Live rows of the shards, summed (one copy of a replicated table), as of discovery.
    rows: u64,
}

/// The scan of a distributed table (see the module's docs).
#[derive(Debug)]
pub struct ShardScanExec {
    state: ScanState,
    schema: SchemaRef,
    props: Arc<PlanProperties>,
    /// This node's number in this process: the key of its local plan, which the worker's shard
    /// keeps ([`crate::worker::LocalShard::plan_of`]) so that every partition of a task reads
    /// one snapshot of its database, and so that the plan (and its snapshot) goes when the node
    /// or the worker does.
    id: u64,
    /// The shard whose plans hold this node's, once it has one.
    planned_on: parking_lot::Mutex<Option<std::sync::Weak<crate::worker::LocalShard>>>,
    metrics: ExecutionPlanMetricsSet,
}

impl ShardScanExec {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        table: &str,
        table_schema: &Schema,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
        replicated: bool,
        homes: Vec<ShardHome>,
        partitions: usize,
        rows: u64,
    ) -> Result<Self> {
        let filters =
            filters.iter().map(|f| f.to_bytes().map(|b| b.to_vec())).collect::<Result<_>>()?;
        let schema = Arc::new(match projection {
            Some(p) => table_schema.project(p)?,
            None => table_schema.clone(),
        });
        let read = ReadSpec {
            table: table.to_string(),
            projection: projection.cloned(),
            filters,
            limit,
            slice: None,
        };
        let state = ScanState { read, replicated, homes, partitions, tasks: 1, rows };
        Ok(Self::from_state(state, schema))
    }

    fn from_state(state: ScanState, schema: SchemaRef) -> Self {
        let props = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(state.partitions.max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Self {
            state,
            schema,
            props,
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            planned_on: parking_lot::Mutex::new(None),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The table this node scans.
    pub fn table(&self) -> &str {
        &self.state.read.table
    }

    /// The shards task `task` of `tasks` reads: for a split table, every shard `j` with `j mod
    /// tasks == task`; for a replicated one, the copy of worker `task mod n`, sliced.
    fn reads(&self, task: usize, tasks: usize) -> Vec<(usize, ReadSpec)> {
        let n = self.state.homes.len();
        if self.state.replicated {
            let mut read = self.state.read.clone();
            read.slice = (tasks > 1).then_some((task, tasks));
            if read.slice.is_some() {
                // The first rows of a copy need not be in this slice: the limit above decides.
                read.limit = None;
            }
            return vec![(task % n, read)];
        }
        (0..n).filter(|j| j % tasks == task).map(|j| (j, self.state.read.clone())).collect()
    }
}

impl DisplayAs for ShardScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.state;
        write!(
            f,
            "ShardScanExec: table={}, shards={}{}, tasks={}",
            s.read.table,
            s.homes.len(),
            if s.replicated { " (replicated)" } else { "" },
            s.tasks
        )?;
        if let Some(p) = &s.read.projection {
            write!(f, ", projection={p:?}")?;
        }
        if !s.read.filters.is_empty() {
            write!(f, ", filters={}", s.read.filters.len())?;
        }
        if let Some(l) = s.read.limit {
            write!(f, ", limit={l}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for ShardScanExec {
    fn name(&self) -> &str {
        "ShardScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        let mut s = Statistics::new_unknown(&self.schema);
        if partition.is_none() && self.state.read.filters.is_empty() {
            s.num_rows = Precision::Inexact(self.state.rows as usize);
        }
        Ok(Arc::new(s))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let (task, tasks) = if self.state.tasks > 1 {
            let d = DistributedTaskContext::from_ctx(&context);
            (d.task_index, d.task_count.max(1))
        } else {
            (0, 1)
        };
        let partitions = self.state.partitions.max(1);
        let local = match context.session_config().get_extension::<ShardRef>() {
            Some(r) => Some(r.get()?),
            None => None,
        };
        let token = context.session_config().get_extension::<Access>();
        let mut streams = Vec::new();
        for (shard, read) in self.reads(task, tasks) {
            let home = self.state.homes[shard].clone();
            match &local {
                Some(l) if l.database == home.database => {
                    *self.planned_on.lock() = Some(Arc::downgrade(l));
                    let (l, read, id, ctx) = (Arc::downgrade(l), read, self.id, context.clone());
                    let seq = MetricBuilder::new(&self.metrics)
                        .global_gauge(format!("shard{shard}_commit_seq"));
                    streams.push(
                        futures::stream::once(async move {
                            let l = l.upgrade().ok_or_else(|| {
                                DataFusionError::Execution("the worker is stopping".into())
                            })?;
                            let (plan, commit) = l.plan_of(id, &read, partitions).await?;
                            seq.set(commit as usize);
                            l.execute(plan, &read, partition, partitions, ctx)
                        })
                        .try_flatten()
                        .boxed(),
                    );
                }
                // A shard of another process: read whole, in the partition its number names.
                _ if shard % partitions == partition => {
                    let Some(token) = token.clone() else {
                        return internal_err!("no cluster token in the session of a shard scan");
                    };
                    let moved = Moved {
                        rows: MetricBuilder::new(&self.metrics).counter(REMOTE_ROWS, partition),
                        bytes: MetricBuilder::new(&self.metrics).counter(REMOTE_BYTES, partition),
                    };
                    let schema = self.schema.clone();
                    streams.push(remote(home, read, token.0.clone(), schema, moved));
                }
                _ => {}
            }
        }
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            futures::stream::iter(streams).flatten(),
        )))
    }
}

impl Drop for ShardScanExec {
    fn drop(&mut self) {
        if let Some(shard) = self.planned_on.lock().take().and_then(|w| w.upgrade()) {
            shard.forget_plan(self.id);
        }
    }
}

/// The next [`ShardScanExec`]'s number.
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The cluster's token, kept in a session's configuration for the scans that read shards of
/// other processes.
#[derive(Debug)]
pub(crate) struct Access(pub(crate) Arc<str>);

/// The metric of the rows a scan read from shards of other processes.
pub(crate) const REMOTE_ROWS: &str = "remote_rows";
/// The metric of the bytes (Flight messages) a scan read from shards of other processes.
pub(crate) const REMOTE_BYTES: &str = "remote_bytes";

/// What a remote read counts into.
struct Moved {
    rows: Count,
    bytes: Count,
}

/// Reads `read` of the shard at `home` over Flight, as one stream.
fn remote(
    home: ShardHome,
    read: ReadSpec,
    token: Arc<str>,
    schema: SchemaRef,
    moved: Moved,
) -> futures::stream::BoxStream<'static, Result<RecordBatch>> {
    futures::stream::once(async move {
        let ticket = serde_json::to_vec(&read).map_err(|e| DataFusionError::External(e.into()))?;
        let mut client = flight::connect(&home.url, &token).await?;
        let response = client
            .do_get(Ticket::new(ticket))
            .await
            .map_err(|s| crate::Error::worker(&home.url, s.message()))?;
        let url = home.url.clone();
        let bytes = moved.bytes;
        let messages = response.into_inner().map_ok(move |m| {
            bytes.add(m.encoded_len());
            m
        });
        let batches = FlightRecordBatchStream::new_from_flight_data(
            messages.map_err(arrow_flight::error::FlightError::from),
        )
        .map_err(move |e| DataFusionError::from(crate::Error::worker(&url, e)));
        let rows = moved.rows;
        Ok::<_, DataFusionError>(batches.and_then(move |b| {
            let schema = schema.clone();
            rows.add(b.num_rows());
            async move { Ok(b.with_schema(schema)?) }
        }))
    })
    .try_flatten()
    .boxed()
}

/// Keeps the rows of `batch` in slice `i` of `k` (see the module's docs).
pub(crate) fn slice_rows(batch: &RecordBatch, (i, k): (usize, usize)) -> Result<RecordBatch> {
    let all: Vec<usize> = (0..batch.num_columns()).collect();
    let keep: BooleanArray =
        shard_of_rows(batch, &all, k)?.into_iter().map(|s| Some(s == i)).collect();
    Ok(filter_record_batch(batch, &keep)?)
}

/// How the coordinator's planner splits the scan: one task per shard for a split table, one for
/// a replicated one.
pub(crate) fn desired_tasks(
    ev: DesiredTaskCountEvent<'_>,
) -> Option<Result<DesiredTaskCountEventResponse>> {
    let scan = ev.plan.downcast_ref::<ShardScanExec>()?;
    let n = if scan.state.replicated { 1 } else { scan.state.homes.len() };
    Some(Ok(DesiredTaskCountEventResponse::desired(n)))
}

/// The scan, told how many tasks it runs as.
pub(crate) fn scale_up(
    ev: ScaleUpLeafNodeEvent<'_>,
) -> Option<Result<ScaleUpLeafNodeEventResponse>> {
    let scan = ev.plan.downcast_ref::<ShardScanExec>()?;
    let mut state = scan.state.clone();
    state.tasks = ev.task_count;
    let scaled = ShardScanExec::from_state(state, scan.schema.clone());
    Some(Ok(ScaleUpLeafNodeEventResponse::new(Arc::new(scaled))))
}

/// Task `i` of a stage that scans shards goes to worker `i mod n`: the home of the shards it
/// reads.
pub(crate) fn route(ev: RouteTasksEvent<'_>) -> Option<Result<RouteTasksEventResponse>> {
    let mut homes = None;
    let found = ev.plan.apply(|node| {
        if let Some(scan) = node.downcast_ref::<ShardScanExec>() {
            homes = Some(scan.state.homes.clone());
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    });
    if let Err(e) = found {
        return Some(Err(e));
    }
    let homes = homes?;
    let urls: Result<Vec<Url>> = (0..ev.task_count)
        .map(|i| {
            let url = &homes[i % homes.len()].url;
            Url::parse(url).map_err(|e| DataFusionError::Plan(format!("worker url {url}: {e}")))
        })
        .collect();
    Some(urls.map(RouteTasksEventResponse::new))
}

/// Ships [`ShardScanExec`] between processes.
#[derive(Debug)]
pub(crate) struct ShardScanCodec;

#[derive(Clone, PartialEq, ::prost::Message)]
struct ShardScanProto {
    #[prost(string, tag = "1")]
    state: String,
    #[prost(message, optional, tag = "2")]
    schema: Option<protobuf::Schema>,
}

impl PhysicalExtensionCodec for ShardScanCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        _ctx: &TaskContext,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !inputs.is_empty() {
            return internal_err!("ShardScanExec has no inputs, got {}", inputs.len());
        }
        let proto = ShardScanProto::decode(buf)
            .map_err(|e| DataFusionError::Internal(format!("ShardScanExec: {e}")))?;
        let state: ScanState = serde_json::from_str(&proto.state)
            .map_err(|e| DataFusionError::Internal(format!("ShardScanExec: {e}")))?;
        let Some(schema) = proto.schema.as_ref() else {
            return internal_err!("ShardScanExec without its schema");
        };
        let schema: Schema = schema.try_into()?;
        Ok(Arc::new(ShardScanExec::from_state(state, Arc::new(schema))))
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let Some(scan) = node.downcast_ref::<ShardScanExec>() else {
            return internal_err!("expected ShardScanExec, got {}", node.name());
        };
        let proto = ShardScanProto {
            state: serde_json::to_string(&scan.state)
                .map_err(|e| DataFusionError::Internal(format!("ShardScanExec: {e}")))?,
            schema: Some(scan.schema.as_ref().try_into()?),
        };
        proto.encode(buf).map_err(|e| DataFusionError::Internal(format!("ShardScanExec: {e}")))
    }
}

/// Decodes `read`'s filters in `ctx`.
pub(crate) fn decode_filters(read: &ReadSpec, ctx: &TaskContext) -> Result<Vec<Expr>> {
    read.filters.iter().map(|b| Expr::from_bytes_with_ctx(b, ctx)).collect()
}

/// `read.table` as a reference that keeps its name's case.
pub(crate) fn table_ref(read: &ReadSpec) -> TableReference {
    TableReference::bare(read.table.clone())
}
