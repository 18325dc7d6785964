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
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Statistics, internal_err};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use nvpage::{Partition, ReadOps, RowId, Snapshot, Table};

use crate::batch::BatchBuilder;
use crate::error::{Result, df};
use crate::filter::Pred;
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
}

/// Rows to read through an index: the ids its range yielded, sorted by where they live.
#[derive(Debug)]
pub(crate) struct IndexRead {
    pub(crate) index: String,
    pub(crate) ids: Vec<RowId>,
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
        mut send: impl FnMut(RecordBatch) -> bool,
    ) -> Result<()> {
        let builder = BatchBuilder::new(
            self.table.schema(),
            &self.projection,
            self.schema.clone(),
            self.pred.clone(),
        )?;
        if let Some(via) = &self.via {
            return self.run_ids(rx, via, part, batch_rows, builder, send);
        }
        let mut out = Batches { builder, batch_rows, sent: false };
        let mut left = self.limit.unwrap_or(usize::MAX);
        let mut pages = rx.scan_partition(&self.table, part)?;
        while left > 0 {
            let Some(page) = pages.next() else { break };
            let page = page?;
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
}

impl Batches {
    /// Sends the rows gathered so far once they fill a batch; `false` when the consumer is gone.
    fn send_full(&mut self, send: &mut impl FnMut(RecordBatch) -> bool) -> Result<bool> {
        if self.builder.rows() < self.batch_rows {
            return Ok(true);
        }
        self.sent = true;
        Ok(send(self.builder.finish()?))
    }

    /// Sends what is left: the last rows, or an empty batch if nothing was sent (the stream's
    /// schema still reaches the consumer).
    fn send_last(mut self, mut send: impl FnMut(RecordBatch) -> bool) -> Result<()> {
        if self.builder.rows() > 0 || !self.sent {
            send(self.builder.finish()?);
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
        via: &IndexRead,
        part: Partition,
        batch_rows: usize,
        builder: BatchBuilder,
        mut send: impl FnMut(RecordBatch) -> bool,
    ) -> Result<()> {
        let n = via.ids.len();
        let (i, count) = (part.index(), part.count());
        let mine = &via.ids[i * n / count..(i + 1) * n / count];
        let mut out = Batches { builder, batch_rows, sent: false };
        let mut left = self.limit.unwrap_or(usize::MAX);
        for &id in mine {
            if left == 0 {
                break;
            }
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

/// Partition `i` of `n` of an nvpage table as a DataFusion plan node.
#[derive(Debug)]
pub(crate) struct NvpageScan {
    source: Source,
    spec: Arc<ScanSpec>,
    partitions: usize,
    rows: Option<u64>,
    props: Arc<PlanProperties>,
}

impl NvpageScan {
    pub(crate) fn new(
        source: Source,
        spec: ScanSpec,
        partitions: usize,
        rows: Option<u64>,
    ) -> Self {
        let props = PlanProperties::new(
            EquivalenceProperties::new(spec.schema.clone()),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Self { source, spec: Arc::new(spec), partitions, rows, props: Arc::new(props) }
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
                if let Some(via) = &self.spec.via {
                    write!(f, ", index={} ({} rows in range)", via.index, via.ids.len())?;
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
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
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
        let (tx, rx) = tokio::sync::mpsc::channel::<DfResult<RecordBatch>>(2);
        let spec = self.spec.clone();
        match &self.source {
            Source::Snapshot(snap) => {
                let snap = snap.clone();
                tokio::task::spawn_blocking(move || {
                    let run = std::panic::AssertUnwindSafe(|| {
                        spec.run(&snap, part, batch_rows, |b| tx.blocking_send(Ok(b)).is_ok())
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
            Source::Txn(writer) => writer.scan(spec, part, batch_rows, tx),
        }
        let stream =
            futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.spec.schema.clone(), stream)))
    }

    fn partition_statistics(&self, partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        let mut stats = Statistics::new_unknown(&self.spec.schema);
        if partition.is_none()
            && self.spec.pred.is_none()
            && let Some(rows) = self.rows
        {
            let rows = self.spec.limit.map_or(rows, |l| rows.min(l as u64));
            stats = stats.with_num_rows(Precision::Exact(rows as usize));
        }
        Ok(Arc::new(stats))
    }
}
