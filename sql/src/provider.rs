//! One nvpage table as a DataFusion table: scans with projection, filters and limits pushed into
//! the page fold, exact row counts as statistics, and `INSERT`, `UPDATE`, `DELETE` through the
//! session's writer.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{Constraint, Constraints, Statistics, stats::Precision};
use datafusion::datasource::TableType;
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::error::Result as DfResult;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan};
use futures::StreamExt;
use nvpage::{Database, ReadOps, Table};

use crate::access;
use crate::error::{Error, df};
use crate::filter;
use crate::modify::{self, ModifyExec};
use crate::scan::{IndexRead, NvpageScan, ScanSpec, Source};
use crate::session::StatementSnapshot;
use crate::types::arrow_schema;
use crate::values::insert_batch;
use crate::writer::Writer;

/// An nvpage table, as DataFusion reads and writes it.
#[derive(Debug)]
pub struct NvpageTable {
    table: Table,
    schema: SchemaRef,
    writer: Writer,
    /// Live rows as of the catalog the table was found in (exact).
    rows: u64,
    /// The table's primary key, as DataFusion knows keys (its planner derives functional
    /// dependencies from it; the engine enforces it).
    constraints: Constraints,
}

impl NvpageTable {
    pub(crate) fn new(table: Table, rows: u64, writer: Writer) -> Self {
        let schema = arrow_schema(table.schema());
        let key = table.schema().primary_key().map(|k| Constraint::PrimaryKey(k.to_vec()));
        let constraints = Constraints::new_unverified(key.into_iter().collect());
        Self { table, schema, writer, rows, constraints }
    }

    /// The engine's handle on the table.
    pub fn table(&self) -> &Table {
        &self.table
    }

    fn db(&self) -> &Arc<Database> {
        self.writer.db()
    }

    /// Where a scan of this statement reads: the open transaction's own changes, else the
    /// statement's snapshot (or, used outside a [`crate::Session`], a snapshot of its own).
    fn source(&self, state: &dyn Session) -> DfResult<Source> {
        if self.writer.in_transaction() {
            return Ok(Source::Txn(self.writer.clone()));
        }
        match state.config().get_extension::<StatementSnapshot>() {
            Some(s) => Ok(Source::Snapshot(s.0.clone())),
            None => Ok(Source::Snapshot(self.db().snapshot().map_err(df)?)),
        }
    }
}

#[async_trait]
impl TableProvider for NvpageTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn constraints(&self) -> Option<&Constraints> {
        Some(&self.constraints)
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let projection: Vec<usize> =
            projection.cloned().unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        let schema = Arc::new(self.schema.project(&projection)?);
        let pred = filter::compile_all(filters, self.table.schema()).map_err(df)?.map(Arc::new);
        let source = self.source(state)?;
        let rows = match &source {
            Source::Snapshot(s) => Some(s.row_count(&self.table).map_err(df)?),
            Source::Txn(_) => None,
        };
        let via = match (&source, &pred) {
            (Source::Snapshot(snap), Some(pred)) => {
                access::choose(snap, &self.table, pred).map_err(df)?.map(Arc::new)
            }
            _ => None,
        };
        // Rows read through a heap table's index are few (at most a quarter of the pages'
        // count): one partition reads them in the heap's order. A clustered key range is one
        // walk of its leaves, in key order.
        let partitions = if via.is_some() { 1 } else { state.config().target_partitions().max(1) };
        let rows = rows.map(|rows| match (&pred, via.as_deref()) {
            (None, _) => Precision::Exact(rows),
            // The rows of the index's range: the filter keeps at most these.
            (Some(_), Some(IndexRead::Ids { ids, .. })) => Precision::Inexact(ids.len() as u64),
            // What DataFusion assumes of a filter it cannot see into (a clustered key range
            // is not counted before it is read).
            (Some(_), _) => {
                let percent = state.config_options().optimizer.default_filter_selectivity;
                Precision::Inexact(rows * u64::from(percent.min(100)) / 100)
            }
        });
        let spec = ScanSpec {
            table: self.table.clone(),
            projection,
            schema,
            pred,
            limit,
            via,
            runtime: None,
        };
        Ok(Arc::new(NvpageScan::new(source, spec, partitions, rows)))
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| match filter::compile(f, self.table.schema()) {
                Some(_) => TableProviderFilterPushDown::Exact,
                None => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    fn statistics(&self) -> Option<Statistics> {
        Some(
            Statistics::new_unknown(&self.schema)
                .with_num_rows(Precision::Exact(self.rows as usize)),
        )
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        op: InsertOp,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if op != InsertOp::Append {
            return Err(df(Error::Plan(format!(
                "{op} is not supported: INSERT INTO appends rows"
            ))));
        }
        let sink = InsertSink {
            table: self.table.clone(),
            schema: self.schema.clone(),
            writer: self.writer.clone(),
        };
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }

    async fn delete_from(
        &self,
        state: &dyn Session,
        filters: Vec<Expr>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let filter = modify::physical_filter(state, &self.table, &self.schema, &filters)?;
        Ok(Arc::new(ModifyExec::delete(
            self.table.clone(),
            self.schema.clone(),
            filter,
            self.writer.clone(),
        )))
    }

    async fn update(
        &self,
        state: &dyn Session,
        assignments: Vec<(String, Expr)>,
        filters: Vec<Expr>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let filter = modify::physical_filter(state, &self.table, &self.schema, &filters)?;
        let sets = modify::physical_assignments(state, &self.table, &self.schema, &assignments)?;
        Ok(Arc::new(ModifyExec::update(
            self.table.clone(),
            self.schema.clone(),
            filter,
            sets,
            self.writer.clone(),
        )))
    }
}

/// Where `INSERT` sends its rows: the session's writer, as one statement.
#[derive(Debug)]
struct InsertSink {
    table: Table,
    schema: SchemaRef,
    writer: Writer,
}

impl InsertSink {
    /// Inserts `batch`'s rows in the writer's transaction; how many.
    async fn insert(&self, batch: RecordBatch) -> Result<u64, Error> {
        let table = self.table.clone();
        self.writer
            .call(move |slot| -> Result<u64, Error> { insert_batch(slot.txn()?, &table, &batch) })
            .await?
    }
}

impl DisplayAs for InsertSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NvpageInsert: table={}", self.table.name())
    }
}

#[async_trait]
impl DataSink for InsertSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        mut data: SendableRecordBatchStream,
        _context: &Arc<TaskContext>,
    ) -> DfResult<u64> {
        self.writer.begin_statement().await.map_err(df)?;
        let mut rows = 0u64;
        // Inside `BEGIN`, the input's scans read the transaction's pages a chunk at a time on
        // the writer thread, between this sink's inserts: an input that reads the table it
        // inserts into would meet rows the statement inserted, or miss some (each chunk is cut
        // from the pages as they are then). So the input is read whole first, and the statement
        // sees the table as it stood when it began. Outside `BEGIN` the input reads a snapshot,
        // and rows are inserted as they come.
        let whole_first = self.writer.in_transaction();
        let outcome: Result<(), Error> = async {
            let mut held = Vec::new();
            while let Some(batch) = data.next().await {
                held.push(batch?);
                if whole_first {
                    continue;
                }
                for batch in held.drain(..) {
                    rows += self.insert(batch).await?;
                }
            }
            for batch in held {
                rows += self.insert(batch).await?;
            }
            Ok(())
        }
        .await;
        let failed = outcome.as_ref().err().map(ToString::to_string);
        self.writer.end_statement(failed).await.map_err(df)?;
        outcome.map_err(df)?;
        Ok(rows)
    }
}
