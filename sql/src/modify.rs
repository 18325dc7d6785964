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
use nvpage::{Index, Partition, ReadOps, RowId, Storage, Table, Value, WriteTxn};

use crate::batch::BatchBuilder;
use crate::error::{Error, Result, df};
use crate::values::{for_each_row, for_each_row_of, insert_batch};
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

/// The rows a statement changes: their ids, the key columns of a clustered table's rows (which
/// have no ids), and for an update their new values.
struct Found {
    ids: Vec<RowId>,
    keys: Vec<RecordBatch>,
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
        let key = clustered_key(txn, table)?;
        let found = find(txn, table, schema, filter, change, key.as_ref())?;
        let count = found.keys.iter().map(RecordBatch::num_rows).sum::<usize>() + found.ids.len();
        match (change, &key) {
            (Change::Delete, _) => remove_found(txn, table, key.as_ref(), &found)?,
            (Change::Update(sets), _) if moves_unique_key(txn, table, sets)? => {
                // Statement-level: every found row leaves before any new row arrives, so a
                // new key may be one the statement moves away (`SET k = k + 1`). A new key
                // another row still holds, or two new rows with one key, fail the insert with
                // the engine's `UniqueViolation`; the writer then rolls the statement back
                // (outside `BEGIN`) or dooms the transaction (inside), so nothing of it is kept.
                remove_found(txn, table, key.as_ref(), &found)?;
                for batch in &found.new_rows {
                    insert_batch(txn, table, batch)?;
                }
            }
            (Change::Update(_), None) => {
                let mut ids = found.ids.iter();
                for batch in &found.new_rows {
                    for_each_row(table, batch, |row| {
                        let id = ids
                            .next()
                            .ok_or_else(|| Error::Plan("an updated row lost its id".into()))?;
                        txn.update(table, *id, row)?;
                        Ok(())
                    })?;
                }
            }
            (Change::Update(sets), Some(key)) => {
                // No key column is set, so each new row's key is its old row's: the row is
                // changed in its leaf, where it stays.
                let names: Vec<&str> =
                    sets.iter().map(|(i, _)| table.schema().columns()[*i].name.as_str()).collect();
                for batch in &found.new_rows {
                    for_each_row(table, batch, |row| {
                        let k: Vec<Value<'_>> =
                            key.columns.iter().map(|&c| row[c].clone()).collect();
                        let set: Vec<(&str, Value<'_>)> = sets
                            .iter()
                            .zip(&names)
                            .map(|((i, _), name)| (*name, row[*i].clone()))
                            .collect();
                        match txn.update_by(&key.index, &k, &set)? {
                            Some(_) => Ok(()),
                            None => Err(vanished(table)),
                        }
                    })?;
                }
            }
        }
        Ok(count as u64)
    }
}

/// A clustered table's primary key: the index its rows are found by, and its columns.
struct ClusteredKey {
    index: Index,
    columns: Vec<usize>,
}

/// `table`'s primary key if its rows live in it (they have no ids); `None` for a heap table.
fn clustered_key(txn: &WriteTxn<'_>, table: &Table) -> Result<Option<ClusteredKey>> {
    if table.storage() != Storage::Clustered {
        return Ok(None);
    }
    let index = txn.primary_key(table)?.ok_or_else(|| {
        Error::Plan(format!("clustered table {} has no primary key", table.name()))
    })?;
    let columns = table.schema().primary_key().map(<[usize]>::to_vec).ok_or_else(|| {
        Error::Plan(format!("clustered table {} declares no primary key", table.name()))
    })?;
    Ok(Some(ClusteredKey { index, columns }))
}

/// Whether `sets` assigns a column of one of `table`'s unique indexes: then the update moves
/// rows between keys, and is made as removals and inserts so that its keys are checked once
/// every row has moved rather than row by row.
fn moves_unique_key(
    txn: &WriteTxn<'_>,
    table: &Table,
    sets: &[(usize, Arc<dyn PhysicalExpr>)],
) -> Result<bool> {
    let schema = table.schema();
    for index in txn.indexes(table)?.iter().filter(|x| x.is_unique()) {
        for name in index.columns() {
            let c = schema.index_of(name)?;
            if sets.iter().any(|(i, _)| *i == c) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Deletes every row the statement found: a heap table's by id, a clustered table's by its
/// key (`key`, whose columns `found.keys` holds).
fn remove_found(
    txn: &mut WriteTxn<'_>,
    table: &Table,
    key: Option<&ClusteredKey>,
    found: &Found,
) -> Result<()> {
    let Some(key) = key else {
        for id in &found.ids {
            txn.delete(table, *id)?;
        }
        return Ok(());
    };
    for batch in &found.keys {
        for_each_row_of(table, &key.columns, batch, |k| {
            if txn.delete_by(&key.index, k)? { Ok(()) } else { Err(vanished(table)) }
        })?;
    }
    Ok(())
}

/// A row the statement found and then could not find again by its key: the transaction changed
/// under the statement, which only the statement itself may do.
fn vanished(table: &Table) -> Error {
    Error::Plan(format!(
        "a row of {} the statement found is gone before it changed it",
        table.name()
    ))
}

/// Reads `table` as the transaction sees it and keeps the rows `filter` accepts: their ids (a
/// heap table's) or key columns (a clustered table's, as `key` names them), and for an update
/// their new values. Every row is found before any is changed, so that a row the statement
/// moves is never met again.
fn find(
    txn: &WriteTxn<'_>,
    table: &Table,
    schema: &SchemaRef,
    filter: Option<&Arc<dyn PhysicalExpr>>,
    change: &Change,
    key: Option<&ClusteredKey>,
) -> Result<Found> {
    let mut found = Found { ids: Vec::new(), keys: Vec::new(), new_rows: Vec::new() };
    let all: Vec<usize> = (0..schema.fields().len()).collect();
    let mut builder = BatchBuilder::new(table.schema(), &all, schema.clone(), None)?;
    if key.is_none() {
        builder = builder.keeping_ids();
    }
    let mut take = |batch: RecordBatch, ids: Vec<RowId>| -> Result<()> {
        let keep = match filter {
            Some(f) => mask(f, &batch)?,
            None => BooleanArray::from(vec![true; batch.num_rows()]),
        };
        match key {
            Some(key) => {
                found.keys.push(filter_record_batch(&batch.project(&key.columns)?, &keep)?)
            }
            None => found.ids.extend(
                ids.iter().zip(keep.iter()).filter(|(_, k)| *k == Some(true)).map(|(id, _)| *id),
            ),
        }
        if let Change::Update(sets) = change {
            // Only the rows the filter kept: a SET expression that would fail on a row the
            // statement does not change (`1 / x WHERE x <> 0`, an overflow) must not fail it.
            let kept = filter_record_batch(&batch, &keep)?;
            let mut cols: Vec<ArrayRef> = kept.columns().to_vec();
            for (i, e) in sets {
                cols[*i] = e.evaluate(&kept)?.into_array(kept.num_rows())?;
            }
            found.new_rows.push(RecordBatch::try_new(kept.schema(), cols)?);
        }
        Ok(())
    };
    for page in nvpage::ReadOps::scan_partition(txn, table, Partition::WHOLE)? {
        page?.with_rows(|rows| builder.append(rows, usize::MAX))?;
        if builder.rows() >= 8192 {
            let batch = builder.finish()?;
            take(batch, builder.take_ids())?;
        }
    }
    let batch = builder.finish()?;
    take(batch, builder.take_ids())?;
    Ok(found)
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
