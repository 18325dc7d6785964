//! `checked_sum` of one group: a whole input's, or a window frame's (which takes rows away
//! as the frame slides).

use datafusion::arrow::array::{Array, ArrayRef, Int64Array};
use datafusion::common::{Result as DFResult, ScalarValue, exec_err};
use datafusion::logical_expr::Accumulator;

use super::total::{self, past_128_bits, to_int64};

/// The running sum of one group and how many values (or partial sums) went into it: a sum
/// of none is NULL.
#[derive(Debug)]
pub(super) struct SumOne {
    /// The column's name, for the error.
    name: String,
    sum: i128,
    count: u64,
}

impl SumOne {
    pub(super) fn new(name: &str) -> Self {
        Self { name: name.to_owned(), sum: 0, count: 0 }
    }

    /// Adds `sum`, a sum of `count` values.
    fn add(&mut self, sum: i128, count: u64) -> DFResult<()> {
        self.sum = self.sum.checked_add(sum).ok_or_else(|| past_128_bits(&self.name))?;
        self.count = self.count.checked_add(count).ok_or_else(|| past_128_bits(&self.name))?;
        Ok(())
    }
}

/// The sum of `values`' non-NULL values and how many there are. It cannot overflow: an array
/// holds fewer than 2^63 values, each of magnitude at most 2^63, so the sum's magnitude is
/// below 2^126.
fn batch_sum(values: &Int64Array) -> (i128, u64) {
    let data = values.values();
    let count = (values.len() - values.null_count()) as u64;
    let sum = match values.nulls().filter(|n| n.null_count() > 0) {
        None => data.iter().map(|&v| i128::from(v)).sum(),
        Some(nulls) => {
            data.iter().zip(nulls).map(|(&v, valid)| if valid { i128::from(v) } else { 0 }).sum()
        }
    };
    (sum, count)
}

impl Accumulator for SumOne {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DFResult<()> {
        let (sum, count) = batch_sum(total::int64(values)?);
        self.add(sum, count)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> DFResult<()> {
        let (sum, count) = batch_sum(total::int64(values)?);
        let (Some(s), Some(c)) = (self.sum.checked_sub(sum), self.count.checked_sub(count)) else {
            return exec_err!("{} took away more values than it summed", self.name);
        };
        (self.sum, self.count) = (s, c);
        Ok(())
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn evaluate(&mut self) -> DFResult<ScalarValue> {
        let sum = if self.count == 0 { None } else { Some(to_int64(&self.name, self.sum)?) };
        Ok(ScalarValue::Int64(sum))
    }

    /// The partial sum, NULL where no value was summed.
    fn state(&mut self) -> DFResult<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Decimal128((self.count > 0).then_some(self.sum), 38, 0)])
    }

    /// Adds each partial sum that is not NULL (a NULL one summed nothing).
    fn merge_batch(&mut self, states: &[ArrayRef]) -> DFResult<()> {
        let partials = total::partials(states)?;
        for sum in partials.iter().flatten() {
            self.add(sum, 1)?;
        }
        Ok(())
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.name.capacity()
    }
}
