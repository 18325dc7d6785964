//! The scan plan node: partition `i` of an nvpage table, read on a blocking thread and handed
//! to DataFusion as record batches through a bounded channel.
//!
//! The fold runs where guards may live — a thread of tokio's blocking pool, which it does not
//! leave while it holds a page — and it holds at most one page at a time, dropped before it
//! waits for the channel: a consumer that stops reading (a `LIMIT` met, a cancelled query, a
//! stream dropped or forgotten) holds no guard a commit could wait for (DESIGN S3). A dropped
//! stream closes the channel, and the fold stops at its next send. Inside an explicit
//! transaction the pages are the writer's, read on the session's writer thread
//! (`writer.rs`), a chunk of pages per request.

use std::fmt;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::config::ConfigOptions;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Statistics, internal_err};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::expressions::DynamicFilterPhysicalExpr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation, PushedDown,
};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, Time,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::StreamExt;
use nvpage::{
    ColumnType, Index, OwnedValue, Partition, ReadOps, RowId, Snapshot, Storage, Table, Value,
};

use crate::access::as_slice;

use crate::batch::BatchBuilder;
use crate::error::{Error, Result, df};
use crate::filter::Pred;
use crate::runtime::{KEEPS_TOO_MUCH, RuntimeFilters, TRIAL_ROWS};
use crate::writer::Writer;

/// Where a scan reads: a committed snapshot, or the open transaction of a session's writer.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    Snapshot(Snapshot),
    Txn(Writer),
}

/// What one scan reads: the table, the columns, the rows a pushed filter keeps, and a limit.
#[derive(Clone, Debug)]
pub(crate) struct ScanSpec {
    pub(crate) table: Table,
    pub(crate) projection: Vec<usize>,
    pub(crate) schema: SchemaRef,
    pub(crate) pred: Option<Arc<Pred>>,
    pub(crate) limit: Option<usize>,
    /// The rows an index range named, when the plan reads them rather than every page
    /// (`access.rs`).
    pub(crate) via: Option<Arc<IndexRead>>,
    /// Filters DataFusion builds while the query runs, which narrow `pred` (`runtime.rs`).
    pub(crate) runtime: Option<Arc<RuntimeFilters>>,
}

/// What a scan counts, for `EXPLAIN ANALYZE`: the rows it read, the rows it handed on, and
/// the time its fold took, waits for the consumer left out.
#[derive(Clone, Debug)]
pub(crate) struct ScanMetrics {
    scanned: Count,
    output: Count,
    time: Time,
}

impl ScanMetrics {
    fn new(set: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        Self {
            scanned: MetricBuilder::new(set).counter("rows_scanned", partition),
            output: MetricBuilder::new(set).output_rows(partition),
            time: MetricBuilder::new(set).elapsed_compute(partition),
        }
    }

    fn record(&self, scanned: usize, output: usize) {
        self.scanned.add(scanned);
        self.output.add(output);
    }

    /// Adds the time since `since` to the fold's.
    fn lap(&self, since: Instant) {
        self.time.add_duration(since.elapsed());
    }
}

/// The run-time filters as a fold applies them: compiled again when their generation moves,
/// dropped for the rest of a generation once its trial shows they keep nearly every row.
struct Filters<'s> {
    spec: &'s ScanSpec,
    seen: Option<u64>,
    judged: bool,
}

impl Filters<'_> {
    fn refresh(&mut self, builder: &mut BatchBuilder) {
        let Some(runtime) = &self.spec.runtime else { return };
        let generation = runtime.generation();
        if self.seen != Some(generation) {
            builder.set_runtime(runtime.pred(generation, self.spec.table.schema()));
            self.seen = Some(generation);
            self.judged = false;
            return;
        }
        let (tried, kept) = builder.runtime_counts();
        if !self.judged && tried >= TRIAL_ROWS {
            self.judged = true;
            if kept * 100 > tried * KEEPS_TOO_MUCH {
                builder.set_runtime(None);
            }
        }
    }
}

/// Rows to read through an index rather than every page (`access.rs`).
#[derive(Debug)]
pub(crate) enum IndexRead {
    /// A heap table's rows, by the ids an index's range yielded, sorted by where they live.
    Ids { index: String, ids: Vec<RowId> },
    /// A clustered table's rows of a range of its primary key, read from the key's leaves.
    KeyRange(KeyRange),
}

/// The rows of a clustered table whose primary key's leading column lies between `lo` and
/// `hi`.
#[derive(Debug)]
pub(crate) struct KeyRange {
    /// The primary key.
    pub(crate) index: Index,
    /// Its leading column's name.
    pub(crate) column: String,
    pub(crate) lo: Bound<OwnedValue>,
    pub(crate) hi: Bound<OwnedValue>,
}

impl fmt::Display for KeyRange {
    /// The range as a filter on the column: `k = 5`, `k >= 1 AND k < 9`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.column;
        match (&self.lo, &self.hi) {
            (Bound::Included(a), Bound::Included(b)) if a == b => {
                return write!(f, "{c} = {}", a.as_value());
            }
            _ => {}
        }
        let lo = match &self.lo {
            Bound::Included(v) => Some(format!("{c} >= {}", v.as_value())),
            Bound::Excluded(v) => Some(format!("{c} > {}", v.as_value())),
            Bound::Unbounded => None,
        };
        let hi = match &self.hi {
            Bound::Included(v) => Some(format!("{c} <= {}", v.as_value())),
            Bound::Excluded(v) => Some(format!("{c} < {}", v.as_value())),
            Bound::Unbounded => None,
        };
        let parts: Vec<String> = lo.into_iter().chain(hi).collect();
        if parts.is_empty() { write!(f, "every {c}") } else { write!(f, "{}", parts.join(" AND ")) }
    }
}

impl ScanSpec {
    /// Folds partition `part` of the table as `rx` reads it into batches of about
    /// `batch_rows` rows, handing each to `send`; stops when `send` says the consumer is gone,
    /// or the limit is met. Holds a page only while gathering its rows.
    pub(crate) fn run(
        &self,
        rx: &impl ReadOps,
        part: Partition,
        batch_rows: usize,
        metrics: &ScanMetrics,
        mut send: impl FnMut(RecordBatch) -> bool,
    ) -> Result<()> {
        let builder = BatchBuilder::new(
            self.table.schema(),
            &self.projection,
            self.schema.clone(),
            self.pred.clone(),
        )?;
        let mut out = Batches {
            builder,
            batch_rows,
            sent: false,
            metrics: metrics.clone(),
            since: Instant::now(),
        };
        let mut filters = Filters { spec: self, seen: None, judged: false };
        match self.via.as_deref() {
            Some(IndexRead::Ids { ids, .. }) => {
                return self.run_ids(rx, ids, part, out, filters, send);
            }
            Some(IndexRead::KeyRange(range)) => {
                return self.run_key_range(rx, range, part, out, filters, send);
            }
            None => {}
        }
        let mut left = self.limit.unwrap_or(usize::MAX);
        let mut pages = rx.scan_partition(&self.table, part)?;
        while left > 0 {
            let Some(page) = pages.next() else { break };
            let page = page?;
            filters.refresh(&mut out.builder);
            left -= page.with_rows(|rows| out.builder.append(rows, left))?;
            drop(page);
            if !out.send_full(&mut send)? {
                return Ok(());
            }
        }
        out.send_last(send)
    }
}

/// A scan's batches on their way out: the builder, and whether one has been sent.
struct Batches {
    builder: BatchBuilder,
    batch_rows: usize,
    sent: bool,
    metrics: ScanMetrics,
    /// When the fold last resumed (it pauses while a batch waits for the consumer).
    since: Instant,
}

impl Batches {
    /// Sends the rows gathered so far once they fill a batch; `false` when the consumer is gone.
    fn send_full(&mut self, send: &mut impl FnMut(RecordBatch) -> bool) -> Result<bool> {
        if self.builder.rows() < self.batch_rows {
            return Ok(true);
        }
        self.sent = true;
        let batch = self.finish()?;
        self.metrics.lap(self.since);
        let open = send(batch);
        self.since = Instant::now();
        Ok(open)
    }

    fn finish(&mut self) -> Result<RecordBatch> {
        let batch = self.builder.finish()?;
        self.metrics.record(self.builder.take_scanned(), batch.num_rows());
        Ok(batch)
    }

    /// Sends what is left: the last rows, or an empty batch if nothing was sent (the stream's
    /// schema still reaches the consumer).
    fn send_last(mut self, mut send: impl FnMut(RecordBatch) -> bool) -> Result<()> {
        if self.builder.rows() > 0 || !self.sent {
            let batch = self.finish()?;
            self.metrics.lap(self.since);
            send(batch);
        } else {
            self.metrics.record(self.builder.take_scanned(), 0);
            self.metrics.lap(self.since);
        }
        Ok(())
    }
}

impl ScanSpec {
    /// [`ScanSpec::run`] over the rows `via` names: partition `part`'s share of them, one row
    /// held at a time.
    fn run_ids(
        &self,
        rx: &impl ReadOps,
        ids: &[RowId],
        part: Partition,
        mut out: Batches,
        mut filters: Filters<'_>,
        mut send: impl FnMut(RecordBatch) -> bool,
    ) -> Result<()> {
        let n = ids.len();
        let (i, count) = (part.index(), part.count());
        let mine = &ids[i * n / count..(i + 1) * n / count];
        let mut left = self.limit.unwrap_or(usize::MAX);
        for &id in mine {
            if left == 0 {
                break;
            }
            filters.refresh(&mut out.builder);
            let row = rx.get(&self.table, id)?;
            if out.builder.append_row(&row.row()?)? {
                left -= 1;
            }
            drop(row);
            if !out.send_full(&mut send)? {
                return Ok(());
            }
        }
        out.send_last(send)
    }
}

impl ScanSpec {
    /// [`ScanSpec::run`] over the rows of a clustered table's key range, in key order, read
    /// from the leaves that hold them. The plan gives such a scan one partition
    /// (`provider.rs`); any other reads nothing. A full batch is sent only after the range's
    /// walk has let go of its leaf, and the walk starts again after the last key it read: the
    /// scan holds no page while it waits for the consumer.
    fn run_key_range(
        &self,
        rx: &impl ReadOps,
        range: &KeyRange,
        part: Partition,
        mut out: Batches,
        mut filters: Filters<'_>,
        mut send: impl FnMut(RecordBatch) -> bool,
    ) -> Result<()> {
        if part.index() != 0 {
            return out.send_last(send);
        }
        let key = self.table.schema().primary_key().ok_or_else(|| {
            Error::Plan(format!("clustered table {} declares no primary key", self.table.name()))
        })?;
        let mut lo: Bound<Vec<OwnedValue>> = range.lo.clone().map(|v| vec![v]);
        let hi: Bound<[Value<'_>; 1]> = range.hi.as_ref().map(|v| [v.as_value()]);
        let mut left = self.limit.unwrap_or(usize::MAX);
        while left > 0 {
            let mut resume = None;
            let from: Bound<Vec<Value<'_>>> =
                lo.as_ref().map(|k| k.iter().map(OwnedValue::as_value).collect());
            for g in rx.index_range(&range.index, as_slice(&from), as_slice(&hi))? {
                let g = g?;
                let row = g.row()?;
                filters.refresh(&mut out.builder);
                if out.builder.append_row(&row)? {
                    left -= 1;
                }
                if left == 0 {
                    break;
                }
                if out.builder.rows() >= out.batch_rows {
                    let after = key.iter().map(|&c| row.value(c));
                    resume = Some(after.collect::<nvpage::Result<Vec<_>>>()?);
                    break;
                }
            }
            let Some(after) = resume else { break };
            if !out.send_full(&mut send)? {
                return Ok(());
            }
            lo = Bound::Excluded(after);
        }
        out.send_last(send)
    }
}

/// The orders each partition of a scan of `spec` yields its rows in, as DataFusion knows
/// orders: a clustered table's are in its primary key's order (a partition is a run of its
/// leaves, a key range, and each leaf's rows come in key order; a key-range read walks the
/// key), by as many of the key's leading columns as the scan projects. So `ORDER BY` the key
/// merges the partitions rather than sorting them, and with a `LIMIT` stops early. Only
/// columns whose key bytes order as DataFusion orders their values: not `Char` (blanks at
/// its end) or `F64` (NaNs and signed zeros). Key columns are NOT NULL, so the order holds
/// with NULLs first or last; both are declared, as a query may ask either.
fn key_orderings(spec: &ScanSpec) -> Vec<Vec<PhysicalSortExpr>> {
    let schema = spec.table.schema();
    let Some(key) = schema.primary_key().filter(|_| spec.table.storage() == Storage::Clustered)
    else {
        return Vec::new();
    };
    let mut cols = Vec::new();
    for &c in key {
        let ordered = !matches!(schema.columns()[c].ty, ColumnType::Char { .. } | ColumnType::F64);
        let Some(at) = spec.projection.iter().position(|&p| p == c).filter(|_| ordered) else {
            break;
        };
        cols.push((schema.columns()[c].name.clone(), at));
    }
    if cols.is_empty() {
        return Vec::new();
    }
    [true, false]
        .into_iter()
        .map(|nulls_first| {
            let options = SortOptions { descending: false, nulls_first };
            cols.iter()
                .map(|(name, at)| PhysicalSortExpr::new(Arc::new(Column::new(name, *at)), options))
                .collect()
        })
        .collect()
}

/// Partition `i` of `n` of an nvpage table as a DataFusion plan node.
#[derive(Debug)]
pub(crate) struct NvpageScan {
    source: Source,
    spec: Arc<ScanSpec>,
    partitions: usize,
    /// The rows the scan yields: exact without a filter, an estimate with one; `None` inside
    /// an explicit transaction.
    rows: Option<Precision<u64>>,
    props: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl NvpageScan {
    pub(crate) fn new(
        source: Source,
        spec: ScanSpec,
        partitions: usize,
        rows: Option<Precision<u64>>,
    ) -> Self {
        let props = PlanProperties::new(
            EquivalenceProperties::new_with_orderings(spec.schema.clone(), key_orderings(&spec)),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Self {
            source,
            spec: Arc::new(spec),
            partitions,
            rows,
            props: Arc::new(props),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

impl DisplayAs for NvpageScan {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                let cols: Vec<&str> =
                    self.spec.schema.fields().iter().map(|f| f.name().as_str()).collect();
                write!(
                    f,
                    "NvpageScan: table={}, partitions={}, projection=[{}]",
                    self.spec.table.name(),
                    self.partitions,
                    cols.join(", ")
                )?;
                if self.spec.pred.is_some() {
                    write!(f, ", filter=pushed")?;
                }
                if let Some(runtime) = &self.spec.runtime {
                    write!(f, ", runtime filters={}", runtime.exprs().len())?;
                }
                match self.spec.via.as_deref() {
                    Some(IndexRead::Ids { index, ids }) => {
                        write!(f, ", index={index} ({} rows in range)", ids.len())?;
                    }
                    Some(IndexRead::KeyRange(range)) => {
                        write!(f, ", index={} (clustered, {range})", range.index.name())?;
                    }
                    None => {}
                }
                if let Some(l) = self.spec.limit {
                    write!(f, ", limit={l}")?;
                }
                Ok(())
            }
            DisplayFormatType::TreeRender => write!(f, "table={}", self.spec.table.name()),
        }
    }
}

impl ExecutionPlan for NvpageScan {
    fn name(&self) -> &str {
        "NvpageScan"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        // The run-time filters this scan reads: a join builds one only if its probe side has
        // a reader of it.
        for e in self.spec.runtime.iter().flat_map(|r| r.exprs()) {
            if f(e)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    /// Takes the filters DataFusion builds while the query runs (`runtime.rs`); reports every
    /// filter as not pushed, since the scan evaluates them only in part.
    fn handle_child_pushdown_result(
        &self,
        phase: FilterPushdownPhase,
        child_pushdown_result: ChildPushdownResult,
        _config: &ConfigOptions,
    ) -> DfResult<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        let filters = child_pushdown_result.parent_filters;
        let not_pushed = vec![PushedDown::No; filters.len()];
        let mut runtime: Vec<Arc<dyn PhysicalExpr>> =
            self.spec.runtime.iter().flat_map(|r| r.exprs().iter().cloned()).collect();
        let before = runtime.len();
        if phase == FilterPushdownPhase::Post {
            runtime.extend(
                filters
                    .into_iter()
                    .map(|f| f.filter)
                    .filter(|f| f.is::<DynamicFilterPhysicalExpr>()),
            );
        }
        if runtime.len() == before {
            return Ok(FilterPushdownPropagation::with_parent_pushdown_result(not_pushed));
        }
        let mut spec = (*self.spec).clone();
        spec.runtime = Some(Arc::new(RuntimeFilters::new(runtime, spec.schema.clone())));
        // It may now drop rows: its count is no longer exact.
        let rows = self.rows.map(|r| r.to_inexact());
        let node = NvpageScan::new(self.source.clone(), spec, self.partitions, rows);
        Ok(FilterPushdownPropagation::with_parent_pushdown_result(not_pushed)
            .with_updated_node(Arc::new(node) as Arc<dyn ExecutionPlan>))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if children.is_empty() { Ok(self) } else { internal_err!("NvpageScan has no children") }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let part = Partition::new(partition, self.partitions).map_err(df)?;
        let batch_rows = context.session_config().batch_size().max(1);
        let metrics = ScanMetrics::new(&self.metrics, partition);
        let (spec, source) = (self.spec.clone(), self.source.clone());
        // The fold starts when the stream is first polled, not now: a join polls its probe
        // side once its build side is complete (unless told to buffer probe rows ahead), and
        // by then the run-time filter it built reaches the first page.
        let start = move || start(source, spec, part, batch_rows, metrics);
        let stream = futures::stream::once(async move { start() }).flat_map(|rx| {
            futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) })
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.spec.schema.clone(), stream)))
    }

    fn partition_statistics(&self, partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        let mut stats = Statistics::new_unknown(&self.spec.schema);
        if partition.is_none()
            && let Some(rows) = self.rows
        {
            let rows = rows.map(|r| self.spec.limit.map_or(r, |l| r.min(l as u64)) as usize);
            stats = stats.with_num_rows(rows);
        }
        Ok(Arc::new(stats))
    }
}

/// Starts partition `part`'s fold (on a blocking thread for a snapshot, on the writer's for
/// the open transaction) and returns the channel its batches arrive through.
fn start(
    source: Source,
    spec: Arc<ScanSpec>,
    part: Partition,
    batch_rows: usize,
    metrics: ScanMetrics,
) -> tokio::sync::mpsc::Receiver<DfResult<RecordBatch>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<DfResult<RecordBatch>>(2);
    match source {
        Source::Snapshot(snap) => {
            tokio::task::spawn_blocking(move || {
                let run = std::panic::AssertUnwindSafe(|| {
                    spec.run(&snap, part, batch_rows, &metrics, |b| tx.blocking_send(Ok(b)).is_ok())
                });
                let outcome = match std::panic::catch_unwind(run) {
                    Ok(r) => r.map_err(df),
                    Err(_) => Err(DataFusionError::Execution(format!(
                        "the scan of {} panicked",
                        spec.table.name()
                    ))),
                };
                if let Err(e) = outcome {
                    let _ = tx.blocking_send(Err(e));
                }
            });
        }
        Source::Txn(writer) => writer.scan(spec, part, batch_rows, metrics, tx),
    }
    rx
}
