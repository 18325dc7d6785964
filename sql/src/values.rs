//! Arrow values as the engine's: the rows of a record batch turned into [`Value`]s of a table's
//! columns, for `INSERT` and `UPDATE`.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, AsArray, Date32Array, Decimal128Array, Int8Array, Int16Array, Int32Array, Int64Array,
    UInt8Array, UInt16Array, UInt32Array,
};
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::datatypes::{
    DataType, Decimal128Type, DecimalType, Float32Type, Float64Type, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};
use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use nvpage::{ColumnType, Date, Decimal, Table, Timestamp, Value, WriteTxn};

use crate::error::{Error, Result};

/// Inserts every row of `batch` (its columns in the table's order) into `table`; returns how
/// many.
pub(crate) fn insert_batch(
    txn: &mut WriteTxn<'_>,
    table: &Table,
    batch: &RecordBatch,
) -> Result<u64> {
    for_each_row(table, batch, |row| Ok(txn.insert(table, row).map(drop)?))?;
    Ok(batch.num_rows() as u64)
}

/// Calls `f` with the values of each row of `batch` (its columns in `table`'s
/// order), one reused buffer of values for all of them.
pub(crate) fn for_each_row(
    table: &Table,
    batch: &RecordBatch,
    f: impl FnMut(&[Value<'_>]) -> Result<()>,
) -> Result<()> {
    let all: Vec<usize> = (0..table.schema().columns().len()).collect();
    for_each_row_of(table, &all, batch, f)
}

/// Calls `f` with the values of each row of `batch`, whose columns are `table`'s columns
/// `columns` (indexes into its schema), in that order.
pub(crate) fn for_each_row_of(
    table: &Table,
    columns: &[usize],
    batch: &RecordBatch,
    mut f: impl FnMut(&[Value<'_>]) -> Result<()>,
) -> Result<()> {
    let readers = readers(table, columns, batch)?;
    let mut row = Vec::with_capacity(readers.len());
    for i in 0..batch.num_rows() {
        row.clear();
        for r in &readers {
            row.push(r.value(i)?);
        }
        f(&row)?;
    }
    Ok(())
}

/// `batch` with its columns cast to `types` (the declared columns of `CREATE TABLE t (…) AS
/// SELECT …`, in order), as an `INSERT`'s plan casts a query's columns to its table's: a value
/// the cast cannot make is an error, never a NULL.
pub(crate) fn cast_columns(batch: &RecordBatch, types: &[DataType]) -> Result<RecordBatch> {
    if batch.num_columns() != types.len() {
        return Err(Error::Plan(format!(
            "the query gives {} columns for the {} declared",
            batch.num_columns(),
            types.len()
        )));
    }
    let opts = CastOptions { safe: false, ..CastOptions::default() };
    let columns = batch
        .columns()
        .iter()
        .zip(types)
        .map(|(a, t)| cast_with_options(a, t, &opts))
        .collect::<Result<Vec<_>, _>>()?;
    let fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .zip(types)
        .map(|(f, t)| Field::new(f.name(), t.clone(), true))
        .collect();
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?)
}

/// Readers of `batch`'s columns as values of `table`'s columns `columns`, in order.
fn readers<'b>(
    table: &'b Table,
    columns: &[usize],
    batch: &'b RecordBatch,
) -> Result<Vec<ColumnReader<'b>>> {
    let cols = table.schema().columns();
    if batch.num_columns() != columns.len() {
        return Err(Error::Plan(format!(
            "{} values a row for {} columns of table {}",
            batch.num_columns(),
            columns.len(),
            table.name(),
        )));
    }
    columns
        .iter()
        .zip(batch.columns())
        .map(|(&i, a)| {
            let c = cols.get(i).ok_or_else(|| {
                Error::Plan(format!("table {} has no column {}", table.name(), i + 1))
            })?;
            ColumnReader::new(&c.name, c.ty, a.as_ref())
        })
        .collect()
}

/// One Arrow column read as values of an nvpage column.
pub(crate) struct ColumnReader<'b> {
    name: &'b str,
    ty: ColumnType,
    array: &'b dyn Array,
}

impl<'b> ColumnReader<'b> {
    fn new(name: &'b str, ty: ColumnType, array: &'b dyn Array) -> Result<Self> {
        let fits = match ty {
            ColumnType::I16 | ColumnType::I32 | ColumnType::I64 => matches!(
                array.data_type(),
                DataType::Int8
                    | DataType::Int16
                    | DataType::Int32
                    | DataType::Int64
                    | DataType::UInt8
                    | DataType::UInt16
                    | DataType::UInt32
            ),
            ColumnType::Decimal { .. } => matches!(array.data_type(), DataType::Decimal128(..)),
            ColumnType::Date => matches!(array.data_type(), DataType::Date32),
            ColumnType::Char { .. } | ColumnType::VarChar { .. } => matches!(
                array.data_type(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            ),
            ColumnType::Bool => matches!(array.data_type(), DataType::Boolean),
            ColumnType::F64 => matches!(array.data_type(), DataType::Float32 | DataType::Float64),
            ColumnType::Timestamp => matches!(array.data_type(), DataType::Timestamp(_, None)),
            ColumnType::Binary { .. } => matches!(
                array.data_type(),
                DataType::Binary | DataType::LargeBinary | DataType::BinaryView
            ),
        };
        if !fits && array.data_type() != &DataType::Null {
            return Err(Error::Plan(format!(
                "column {name} ({ty}) cannot hold values of type {}",
                array.data_type()
            )));
        }
        Ok(Self { name, ty, array })
    }

    /// Row `i`'s value.
    pub(crate) fn value(&self, i: usize) -> Result<Value<'b>> {
        let a = self.array;
        if a.is_null(i) {
            return Ok(Value::Null);
        }
        let int = |v: i64| -> Result<Value<'b>> {
            let narrow = match self.ty {
                ColumnType::I64 => return Ok(Value::I64(v)),
                ColumnType::I16 => i16::try_from(v).ok().map(Value::I16),
                _ => i32::try_from(v).ok().map(Value::I32),
            };
            narrow.ok_or_else(|| {
                Error::Plan(format!(
                    "column {}: {v} does not fit an {} (row {})",
                    self.name,
                    self.ty,
                    i + 1
                ))
            })
        };
        let micros = |v: Option<i64>| {
            v.map(|v| Value::Timestamp(Timestamp(v))).ok_or_else(|| {
                Error::Plan(format!(
                    "column {}: a timestamp out of nvpage's range (row {})",
                    self.name,
                    i + 1
                ))
            })
        };
        match a.data_type() {
            DataType::Int8 => int(i64::from(downcast::<Int8Array>(a).value(i))),
            DataType::Int16 => int(i64::from(downcast::<Int16Array>(a).value(i))),
            DataType::Int32 => int(i64::from(downcast::<Int32Array>(a).value(i))),
            DataType::Int64 => int(downcast::<Int64Array>(a).value(i)),
            DataType::UInt8 => int(i64::from(downcast::<UInt8Array>(a).value(i))),
            DataType::UInt16 => int(i64::from(downcast::<UInt16Array>(a).value(i))),
            DataType::UInt32 => int(i64::from(downcast::<UInt32Array>(a).value(i))),
            DataType::Decimal128(_, scale) if *scale < 0 => Err(Error::Plan(format!(
                "column {}: a decimal of negative scale {scale} (row {})",
                self.name,
                i + 1
            ))),
            DataType::Decimal128(_, scale) => {
                let units = downcast::<Decimal128Array>(a).value(i);
                let units = i64::try_from(units).map_err(|_| {
                    let shown = Decimal128Type::format_decimal(units, 38, *scale);
                    Error::Plan(format!(
                        "column {}: {shown} does not fit an nvpage decimal (18 digits; row {})",
                        self.name,
                        i + 1
                    ))
                })?;
                Ok(Value::Decimal(Decimal::new(units, *scale as u8)))
            }
            DataType::Date32 => Ok(Value::Date(Date(downcast::<Date32Array>(a).value(i)))),
            DataType::Utf8 => Ok(Value::Str(a.as_string::<i32>().value(i))),
            DataType::LargeUtf8 => Ok(Value::Str(a.as_string::<i64>().value(i))),
            DataType::Utf8View => Ok(Value::Str(a.as_string_view().value(i))),
            DataType::Boolean => Ok(Value::Bool(a.as_boolean().value(i))),
            DataType::Float32 => {
                Ok(Value::F64(f64::from(a.as_primitive::<Float32Type>().value(i))))
            }
            DataType::Float64 => Ok(Value::F64(a.as_primitive::<Float64Type>().value(i))),
            DataType::Timestamp(TimeUnit::Second, _) => {
                micros(a.as_primitive::<TimestampSecondType>().value(i).checked_mul(1_000_000))
            }
            DataType::Timestamp(TimeUnit::Millisecond, _) => {
                micros(a.as_primitive::<TimestampMillisecondType>().value(i).checked_mul(1_000))
            }
            DataType::Timestamp(TimeUnit::Microsecond, _) => {
                micros(Some(a.as_primitive::<TimestampMicrosecondType>().value(i)))
            }
            // Toward zero, as Arrow's cast (and so an INSERT's plan) truncates.
            DataType::Timestamp(TimeUnit::Nanosecond, _) => {
                micros(Some(a.as_primitive::<TimestampNanosecondType>().value(i) / 1_000))
            }
            DataType::Binary => Ok(Value::Bytes(a.as_binary::<i32>().value(i))),
            DataType::LargeBinary => Ok(Value::Bytes(a.as_binary::<i64>().value(i))),
            DataType::BinaryView => Ok(Value::Bytes(a.as_binary_view().value(i))),
            other => Err(Error::Plan(format!("column {}: values of type {other}", self.name))),
        }
    }
}

fn downcast<T: 'static>(a: &dyn Array) -> &T {
    a.as_any().downcast_ref::<T>().expect("the data type was matched")
}
