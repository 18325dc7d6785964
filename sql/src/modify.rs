//! `UPDATE` and `DELETE`: the table read as the statement's transaction sees it, the `WHERE`
//! and the `SET` expressions evaluated by DataFusion on those rows, then the changes applied —
//! every row found first, then changed, so that a row the statement moves is never met again.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt64Array};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DFSchema, internal_err};
use datafusion::error::Result as DfResult;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, utils::conjunction};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use nvpage::{Partition, RowId, Table};

use crate::batch::BatchBuilder;
use crate::error::{Error, Result, df};
use crate::values::for_each_row;
use crate::writer::{Slot, Writer};

/// `filters`, joined by `AND`, as an expression DataFusion evaluates on the table's batches.
pub(crate) fn physical_filter(
    state: &dyn Session,
    table: &Table,
    schema: &SchemaRef,
    filters: &[Expr],
) -> DfResult<Option<Arc<dyn PhysicalExpr>>> {
    let Some(expr) = conjunction(filters.to_vec()) else { return Ok(None) };
    let dfs = DFSchema::try_from_qualified_schema(table.name(), schema)?;
    Ok(Some(state.create_physical_expr(expr, &dfs)?))
}

/// Each `SET column = expression`, as the column's index and an expression DataFusion
/// evaluates on the table's batches.
pub(crate) fn physical_assignments(
    state: &dyn Session,
    table: &Table,
    schema: &SchemaRef,
    assignments: &[(String, Expr)],
) -> DfResult<Vec<(usize, Arc<dyn PhysicalExpr>)>> {
    let dfs = DFSchema::try_from_qualified_schema(table.name(), schema)?;
    assignments
        .iter()
        .map(|(name, e)| {
            let i = table.schema().index_of(name).map_err(df)?;
            Ok((i, state.create_physical_expr(e.clone(), &dfs)?))
        })
        .collect()
}

#[derive(Debug)]
enum Change {
    Delete,
    Update(Vec<(usize, Arc<dyn PhysicalExpr>)>),
}

/// The plan node of an `UPDATE` or a `DELETE`: one partition, one batch out, the row count.
#[derive(Debug)]
pub(crate) struct ModifyExec {
    table: Table,
    schema: SchemaRef,
    filter: Option<Arc<dyn PhysicalExpr>>,
    change: Change,
    writer: Writer,
    props: Arc<PlanProperties>,
}

fn count_schema() -> SchemaRef {
    Arc::new(ArrowSchema::new(vec![Field::new("count", DataType::UInt64, false)]))
}

impl ModifyExec {
    fn new(
        table: Table,
        schema: SchemaRef,
        filter: Option<Arc<dyn PhysicalExpr>>,
        change: Change,
        writer: Writer,
    ) -> Self {
        let props = PlanProperties::new(
            EquivalenceProperties::new(count_schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Self { table, schema, filter, change, writer, props: Arc::new(props) }
    }

    pub(crate) fn delete(
        table: Table,
        schema: SchemaRef,
        filter: Option<Arc<dyn PhysicalExpr>>,
        writer: Writer,
    ) -> Self {
        Self::new(table, schema, filter, Change::Delete, writer)
    }

    pub(crate) fn update(
        table: Table,
        schema: SchemaRef,
        filter: Option<Arc<dyn PhysicalExpr>>,
        sets: Vec<(usize, Arc<dyn PhysicalExpr>)>,
        writer: Writer,
    ) -> Self {
        Self::new(table, schema, filter, Change::Update(sets), writer)
    }
}

/// The rows a statement changes: their ids, and for an update their new values.
struct Found {
    ids: Vec<RowId>,
    new_rows: Vec<RecordBatch>,
}

impl ModifyExec {
    /// Finds the rows to change as the statement's transaction sees them, then changes them;
    /// returns how many. Runs on the writer thread.
    fn apply(
        slot: &mut Slot<'_>,
        table: &Table,
        schema: &SchemaRef,
        filter: Option<&Arc<dyn PhysicalExpr>>,
        change: &Change,
    ) -> Result<u64> {
        let txn = slot.txn()?;
        let mut found = Found { ids: Vec::new(), new_rows: Vec::new() };
        let all: Vec<usize> = (0..schema.fields().len()).collect();
        let mut builder =
            BatchBuilder::new(table.schema(), &all, schema.clone(), None)?.keeping_ids();
        let mut failure = None;
        let mut take = |batch: RecordBatch, ids: Vec<RowId>| -> Result<()> {
            let keep = match filter {
                Some(f) => mask(f, &batch)?,
                None => BooleanArray::from(vec![true; batch.num_rows()]),
            };
            found.ids.extend(
                ids.iter().zip(keep.iter()).filter(|(_, k)| *k == Some(true)).map(|(id, _)| *id),
            );
            if let Change::Update(sets) = change {
                let mut cols: Vec<ArrayRef> = batch.columns().to_vec();
                for (i, e) in sets {
                    let v = e.evaluate(&batch)?.into_array(batch.num_rows())?;
                    cols[*i] = v;
                }
                let updated = RecordBatch::try_new(batch.schema(), cols)?;
                found.new_rows.push(filter_record_batch(&updated, &keep)?);
            }
            Ok(())
        };
        {
            let pages = nvpage::ReadOps::scan_partition(&*txn, table, Partition::WHOLE)?;
            for page in pages {
                page?.with_rows(|rows| builder.append(rows, usize::MAX))?;
                if builder.rows() >= 8192 {
                    let batch = builder.finish()?;
                    if let Err(e) = take(batch, builder.take_ids()) {
                        failure = Some(e);
                        break;
                    }
                }
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        let batch = builder.finish()?;
        take(batch, builder.take_ids())?;
        let Found { ids, new_rows } = found;
        match change {
            Change::Delete => {
                for id in &ids {
                    txn.delete(table, *id)?;
                }
            }
            Change::Update(_) => {
                let mut ids = ids.iter();
                for batch in &new_rows {
                    for_each_row(table, batch, |row| {
                        let id = ids
                            .next()
                            .ok_or_else(|| Error::Plan("an updated row lost its id".into()))?;
                        txn.update(table, *id, row)?;
                        Ok(())
                    })?;
                }
            }
        }
        Ok(ids.len() as u64)
    }
}

/// Where `f` is true on `batch` (NULL is not true).
fn mask(f: &Arc<dyn PhysicalExpr>, batch: &RecordBatch) -> Result<BooleanArray> {
    let v = f.evaluate(batch)?.into_array(batch.num_rows())?;
    let b = v
        .as_any()
        .downcast_ref::<BooleanArray>()
        .ok_or_else(|| Error::Plan(format!("a WHERE clause of type {}", v.data_type())))?;
    Ok(b.clone())
}

impl DisplayAs for ModifyExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.change {
            Change::Delete => "NvpageDelete",
            Change::Update(_) => "NvpageUpdate",
        };
        write!(f, "{what}: table={}", self.table.name())
    }
}

impl ExecutionPlan for ModifyExec {
    fn name(&self) -> &str {
        "ModifyExec"
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
        if children.is_empty() { Ok(self) } else { internal_err!("ModifyExec has no children") }
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        if partition != 0 {
            return internal_err!("ModifyExec has one partition");
        }
        let (table, schema, filter, writer) =
            (self.table.clone(), self.schema.clone(), self.filter.clone(), self.writer.clone());
        let change = match &self.change {
            Change::Delete => Change::Delete,
            Change::Update(s) => Change::Update(s.clone()),
        };
        let fut = async move {
            let n = writer
                .statement(move |slot| Self::apply(slot, &table, &schema, filter.as_ref(), &change))
                .await
                .map_err(df)?;
            let counts: ArrayRef = Arc::new(UInt64Array::from(vec![n]));
            Ok(RecordBatch::try_new(count_schema(), vec![counts])?)
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(count_schema(), futures::stream::once(fut))))
    }
}
