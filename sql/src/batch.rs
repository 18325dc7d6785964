//! Arrow record batches built from a scan's pages: each page's rows located once, the pushed
//! filter applied to them in place, then each projected column gathered into the vector that
//! becomes its Arrow buffer.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int16Array,
    Int32Array, Int64Array, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use nvpage::{Col, ColumnType, PageBatch, PageRows, RowId, RowPlaces, RowRef, Schema, kind};

use crate::error::{Error, Result};
use crate::filter::{self, Pred};
use crate::types::DECIMAL_PRECISION;

/// One projected column: its handle, and what has been gathered of it so far.
#[derive(Debug)]
struct Gathered {
    values: Values,
    /// Validity, kept for nullable columns only.
    valid: Option<Vec<bool>>,
}

#[derive(Debug)]
enum Values {
    I32(Col<kind::I32>, Vec<i32>),
    I64(Col<kind::I64>, Vec<i64>),
    Decimal(Col<kind::Units>, u8, Vec<i64>),
    Date(Col<kind::Date>, Vec<i32>),
    /// A string column's bytes and ends, or a binary column's (`true`).
    Str(Col<kind::Bytes>, Vec<u8>, Vec<i32>, bool),
    Bool(Col<kind::Bool>, Vec<bool>),
    I16(Col<kind::I16>, Vec<i16>),
    F64(Col<kind::F64>, Vec<f64>),
    Timestamp(Col<kind::Timestamp>, Vec<i64>),
}

/// Builds record batches of a table's projected columns from its pages.
#[derive(Debug)]
pub(crate) struct BatchBuilder {
    schema: SchemaRef,
    cols: Vec<Gathered>,
    pred: Option<Arc<Pred>>,
    places: RowPlaces,
    rows: usize,
    /// Rows read, before the predicate, since the last [`BatchBuilder::take_scanned`].
    scanned: usize,
    /// A run-time filter, evaluated on the rows `pred` keeps.
    runtime: Option<Arc<Pred>>,
    /// The rows `runtime` was evaluated on and kept since it was set.
    runtime_counts: (usize, usize),
    /// The gathered rows' ids, when the builder keeps them (for an update or a delete).
    ids: Option<Vec<RowId>>,
}

impl BatchBuilder {
    /// A builder of `projected` (the Arrow schema of the columns `projection` names, in order)
    /// from rows of `table`, keeping the rows `pred` accepts.
    pub(crate) fn new(
        table: &Schema,
        projection: &[usize],
        projected: SchemaRef,
        pred: Option<Arc<Pred>>,
    ) -> Result<Self> {
        let cols = projection
            .iter()
            .map(|&i| {
                let c = &table.columns()[i];
                let name = c.name.as_str();
                let values = match c.ty {
                    ColumnType::I32 => Values::I32(Col::new(table, name)?, Vec::new()),
                    ColumnType::I64 => Values::I64(Col::new(table, name)?, Vec::new()),
                    ColumnType::Decimal { scale } => {
                        Values::Decimal(Col::new(table, name)?, scale, Vec::new())
                    }
                    ColumnType::Date => Values::Date(Col::new(table, name)?, Vec::new()),
                    ColumnType::Char { .. } | ColumnType::VarChar { .. } => {
                        Values::Str(Col::new(table, name)?, Vec::new(), vec![0], false)
                    }
                    ColumnType::Binary { .. } => {
                        Values::Str(Col::new(table, name)?, Vec::new(), vec![0], true)
                    }
                    ColumnType::Bool => Values::Bool(Col::new(table, name)?, Vec::new()),
                    ColumnType::I16 => Values::I16(Col::new(table, name)?, Vec::new()),
                    ColumnType::F64 => Values::F64(Col::new(table, name)?, Vec::new()),
                    ColumnType::Timestamp => Values::Timestamp(Col::new(table, name)?, Vec::new()),
                };
                Ok(Gathered { values, valid: c.nullable.then(Vec::new) })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            schema: projected,
            cols,
            pred,
            places: RowPlaces::new(),
            rows: 0,
            scanned: 0,
            runtime: None,
            runtime_counts: (0, 0),
            ids: None,
        })
    }

    /// Keeps the gathered rows' ids too ([`BatchBuilder::take_ids`]).
    pub(crate) fn keeping_ids(mut self) -> Self {
        self.ids = Some(Vec::new());
        self
    }

    /// The ids of the rows of the batch [`BatchBuilder::finish`] returned last (or of the rows
    /// gathered so far, before it), in the batch's order.
    pub(crate) fn take_ids(&mut self) -> Vec<RowId> {
        self.ids.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Rows gathered since the last batch.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// The run-time filter rows are kept by from now on, besides the pushed predicate
    /// (`runtime.rs`); its counts start again.
    pub(crate) fn set_runtime(&mut self, pred: Option<Arc<Pred>>) {
        self.runtime = pred;
        self.runtime_counts = (0, 0);
    }

    /// The rows the run-time filter was evaluated on and the rows it kept, since it was set.
    pub(crate) fn runtime_counts(&self) -> (usize, usize) {
        self.runtime_counts
    }

    /// Gathers the rows of `page` the predicate keeps, at most `limit` of them; returns how
    /// many.
    pub(crate) fn append(&mut self, page: PageRows<'_>, limit: usize) -> Result<usize> {
        let mut batch = page.locate(&mut self.places)?;
        self.scanned += batch.len();
        if let Some(pred) = &self.pred {
            filter::retain(pred, page, &mut batch)?;
        }
        if let Some(runtime) = &self.runtime
            && !batch.is_empty()
        {
            self.runtime_counts.0 += batch.len();
            filter::retain(runtime, page, &mut batch)?;
            self.runtime_counts.1 += batch.len();
        }
        batch.truncate(limit);
        if let Some(ids) = &mut self.ids {
            ids.extend(batch.ids());
        }
        for g in &mut self.cols {
            gather(g, page, &batch)?;
        }
        self.rows += batch.len();
        Ok(batch.len())
    }

    /// Appends `row` if the predicate keeps it; returns whether it did. For rows reached one at
    /// a time (through an index), where [`BatchBuilder::append`] gathers a page's at once.
    pub(crate) fn append_row(&mut self, row: &RowRef<'_>) -> Result<bool> {
        self.scanned += 1;
        if let Some(pred) = &self.pred
            && pred.eval(row)? != Some(true)
        {
            return Ok(false);
        }
        if let Some(runtime) = &self.runtime {
            self.runtime_counts.0 += 1;
            if runtime.eval(row)? != Some(true) {
                return Ok(false);
            }
            self.runtime_counts.1 += 1;
        }
        if let Some(ids) = &mut self.ids {
            ids.push(row.id());
        }
        for g in &mut self.cols {
            let present = match &mut g.values {
                Values::I32(c, v) => push(v, row.get_opt(*c)?),
                Values::I64(c, v) => push(v, row.get_opt(*c)?),
                Values::Decimal(c, _, v) => push(v, row.get_opt(*c)?),
                Values::Date(c, v) => push(v, row.get_opt(*c)?.map(|d| d.0)),
                Values::Bool(c, v) => push(v, row.get_opt(*c)?),
                Values::I16(c, v) => push(v, row.get_opt(*c)?),
                Values::F64(c, v) => push(v, row.get_opt(*c)?),
                Values::Timestamp(c, v) => push(v, row.get_opt(*c)?.map(|t| t.0)),
                Values::Str(c, data, ends, _) => {
                    let value = row.get_opt(*c)?;
                    data.extend_from_slice(value.unwrap_or_default());
                    let end = i32::try_from(data.len()).map_err(|_| {
                        Error::Plan("a string column gathers past 2 GiB of bytes".into())
                    })?;
                    ends.push(end);
                    value.is_some()
                }
            };
            match &mut g.valid {
                Some(valid) => valid.push(present),
                None if !present => {
                    return Err(Error::Engine(nvpage::Error::CorruptRow(
                        "a NULL in a column that is NOT NULL".into(),
                    )));
                }
                None => {}
            }
        }
        self.rows += 1;
        Ok(true)
    }

    /// The rows read since the last call, kept or not.
    pub(crate) fn take_scanned(&mut self) -> usize {
        std::mem::take(&mut self.scanned)
    }

    /// The rows gathered so far as a record batch; the builder starts again empty.
    pub(crate) fn finish(&mut self) -> Result<RecordBatch> {
        let rows = std::mem::take(&mut self.rows);
        let arrays = self.cols.iter_mut().map(take_array).collect::<Result<Vec<_>>>()?;
        let opts = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(self.schema.clone(), arrays, &opts)
            .map_err(datafusion::error::DataFusionError::from)?)
    }
}

/// Pushes `value` (its type's default for NULL); returns whether it was present.
fn push<T: Default>(v: &mut Vec<T>, value: Option<T>) -> bool {
    let present = value.is_some();
    v.push(value.unwrap_or_default());
    present
}

fn gather<'p>(
    g: &mut Gathered,
    page: PageRows<'p>,
    batch: &PageBatch<'p, '_>,
) -> nvpage::Result<()> {
    let valid = g.valid.as_mut();
    match &mut g.values {
        Values::I32(c, v) => batch.gather(page.col(*c)?, v, valid),
        Values::I64(c, v) => batch.gather(page.col(*c)?, v, valid),
        Values::Decimal(c, _, v) => batch.gather(page.col(*c)?, v, valid),
        Values::Date(c, v) => batch.gather(page.col(*c)?, v, valid),
        Values::I16(c, v) => batch.gather(page.col(*c)?, v, valid),
        Values::F64(c, v) => batch.gather(page.col(*c)?, v, valid),
        Values::Timestamp(c, v) => batch.gather(page.col(*c)?, v, valid),
        Values::Str(c, data, ends, _) => batch.gather_bytes(page.col(*c)?, data, ends, valid),
        // A bool's byte is checked as it is read: no unchecked gather.
        Values::Bool(c, v) => {
            let c = page.col(*c)?;
            let mut valid = valid;
            for row in batch.rows() {
                let present = push(v, row.get_opt(c)?);
                if let Some(valid) = valid.as_mut() {
                    valid.push(present);
                } else if !present {
                    return Err(nvpage::Error::CorruptRow(
                        "a NULL in a column that is NOT NULL".into(),
                    ));
                }
            }
            Ok(())
        }
    }
}

/// The column gathered so far as an Arrow array, leaving it empty.
fn take_array(g: &mut Gathered) -> Result<ArrayRef> {
    let nulls = g.valid.as_mut().map(|v| NullBuffer::from(std::mem::take(v)));
    Ok(match &mut g.values {
        Values::I32(_, v) => {
            Arc::new(Int32Array::new(ScalarBuffer::from(std::mem::take(v)), nulls))
        }
        Values::I64(_, v) => {
            Arc::new(Int64Array::new(ScalarBuffer::from(std::mem::take(v)), nulls))
        }
        Values::Date(_, v) => {
            Arc::new(Date32Array::new(ScalarBuffer::from(std::mem::take(v)), nulls))
        }
        Values::Decimal(_, scale, v) => {
            let wide: Vec<i128> = std::mem::take(v).into_iter().map(i128::from).collect();
            Arc::new(
                Decimal128Array::new(ScalarBuffer::from(wide), nulls)
                    .with_precision_and_scale(DECIMAL_PRECISION, *scale as i8)
                    .map_err(datafusion::error::DataFusionError::from)?,
            )
        }
        Values::Str(_, data, ends, binary) => {
            let offsets = OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(ends, vec![0])));
            let bytes = std::mem::take(data);
            if *binary {
                Arc::new(BinaryArray::new(offsets, bytes.into(), nulls))
            } else {
                Arc::new(StringArray::try_new(offsets, bytes.into(), nulls).map_err(|e| {
                    Error::Engine(nvpage::Error::CorruptRow(format!("a string is not UTF-8: {e}")))
                })?)
            }
        }
        Values::Bool(_, v) => Arc::new(BooleanArray::new(std::mem::take(v).into(), nulls)),
        Values::I16(_, v) => {
            Arc::new(Int16Array::new(ScalarBuffer::from(std::mem::take(v)), nulls))
        }
        Values::F64(_, v) => {
            Arc::new(Float64Array::new(ScalarBuffer::from(std::mem::take(v)), nulls))
        }
        Values::Timestamp(_, v) => {
            Arc::new(TimestampMicrosecondArray::new(ScalarBuffer::from(std::mem::take(v)), nulls))
        }
    })
}
