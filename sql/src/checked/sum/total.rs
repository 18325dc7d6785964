//! What both accumulators of `checked_sum` share: its input, its 128-bit partial sums and
//! their way back to an `Int64`.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Array, Int64Array};
use datafusion::arrow::buffer::{NullBuffer, ScalarBuffer};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Int64Type};
use datafusion::common::{DataFusionError, Result as DFResult, exec_datafusion_err, exec_err};

/// The type of a partial sum between partitions: 38 digits, the widest `Decimal128`, whose
/// 128 bits hold any sum of fewer than 2^64 `Int64`s.
pub(super) const STATE_TYPE: DataType = DataType::Decimal128(38, 0);

/// The one `Int64` argument (its type is checked at planning; this checks it again).
pub(super) fn int64(values: &[ArrayRef]) -> DFResult<&Int64Array> {
    match values {
        [v] => match v.as_primitive_opt::<Int64Type>() {
            Some(v) => Ok(v),
            None => exec_err!("checked_sum takes an Int64, not {}", v.data_type()),
        },
        _ => exec_err!("checked_sum takes one argument, not {}", values.len()),
    }
}

/// The one field of partial sums.
pub(super) fn partials(states: &[ArrayRef]) -> DFResult<&Decimal128Array> {
    match states {
        [s] => match s.as_primitive_opt::<Decimal128Type>() {
            Some(s) => Ok(s),
            None => exec_err!("checked_sum's partial sums are {STATE_TYPE}, not {}", s.data_type()),
        },
        _ => exec_err!("checked_sum has one partial sum, not {}", states.len()),
    }
}

/// Partial sums as their state field holds them.
pub(super) fn partial_array(
    sums: ScalarBuffer<i128>,
    nulls: Option<NullBuffer>,
) -> DFResult<Decimal128Array> {
    Ok(Decimal128Array::try_new(sums, nulls)?.with_precision_and_scale(38, 0)?)
}

/// `sum` as the `Int64` it must be, or the statement's error naming the column (`name`) and
/// the sum.
pub(super) fn to_int64(name: &str, sum: i128) -> DFResult<i64> {
    i64::try_from(sum).map_err(|_| {
        exec_datafusion_err!("integer out of range for Int64: {name} overflowed (the sum is {sum})")
    })
}

/// The error of a running sum that passed 128 bits.
pub(super) fn past_128_bits(name: &str) -> DataFusionError {
    exec_datafusion_err!("integer out of range for Int64: {name} overflowed (past 128 bits)")
}
