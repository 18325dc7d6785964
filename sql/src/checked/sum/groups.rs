//! `checked_sum` of many groups at once, as a grouped aggregation runs it: one 128-bit sum
//! per group, and each batch added in one pass over its rows that checks for overflow with a
//! flag, not a branch that leaves the loop.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, Int64Array};
use datafusion::arrow::buffer::{BooleanBuffer, NullBuffer, ScalarBuffer};
use datafusion::common::{Result as DFResult, exec_err};
use datafusion::logical_expr::{EmitTo, GroupsAccumulator};

use super::total::{self, past_128_bits, to_int64};

/// The running sums of a grouped aggregation's groups, by group index.
#[derive(Debug)]
pub(super) struct SumGroups {
    /// The column's name, for the error.
    name: String,
    /// Each group's running sum; 0 for a group that has summed no value.
    sums: Vec<i128>,
    /// Whether each group has summed a value, as long as `sums`; `None` while every group has
    /// (no NULL value and no FILTER so far), so that the common case marks nothing.
    seen: Option<Vec<bool>>,
}

impl SumGroups {
    pub(super) fn new(name: &str) -> Self {
        Self { name: name.to_owned(), sums: Vec::new(), seen: None }
    }

    /// Adds `values[i]` to the sum of group `groups[i]` for each row `i` that `counted` holds
    /// (every row if it is `None`); there are `total` groups now.
    ///
    /// A group first met in this batch gets a row of it, so while every value counts, every
    /// group has summed one, and `seen` stays `None`.
    fn add<T: Copy + Into<i128>>(
        &mut self,
        values: &[T],
        counted: Option<&BooleanBuffer>,
        groups: &[usize],
        total: usize,
    ) -> DFResult<()> {
        if values.len() != groups.len() || counted.is_some_and(|c| c.len() != groups.len()) {
            return exec_err!("{}: {} values for {} rows", self.name, values.len(), groups.len());
        }
        let had = self.sums.len();
        self.sums.resize(total, 0);
        let added = match (counted, &mut self.seen) {
            (None, None) => add_rows(&mut self.sums, groups, values),
            (None, Some(seen)) => {
                seen.resize(total, false);
                add_marking(&mut self.sums, seen, groups, values, std::iter::repeat(true))
            }
            (Some(counted), seen) => {
                let seen = seen.get_or_insert_with(|| vec![true; had]);
                seen.resize(total, false);
                add_marking(&mut self.sums, seen, groups, values, counted.iter())
            }
        };
        match added {
            Ok(false) => Ok(()),
            Ok(true) => Err(past_128_bits(&self.name)),
            Err(g) => exec_err!("{}: group {g} of {total}", self.name),
        }
    }

    /// The `seen` of the groups `emit_to` takes, as the nulls of their sums.
    fn take_seen(&mut self, emit_to: EmitTo) -> Option<NullBuffer> {
        let seen = self.seen.as_mut()?;
        let taken = emit_to.take_needed(seen);
        if seen.is_empty() {
            self.seen = None;
        }
        Some(NullBuffer::from(taken))
    }
}

/// Adds each row's value to its group's sum: whether a sum passed 128 bits, or the first group
/// index past `sums`.
fn add_rows<T: Copy + Into<i128>>(
    sums: &mut [i128],
    groups: &[usize],
    values: &[T],
) -> Result<bool, usize> {
    let mut overflow = false;
    for (&g, &v) in groups.iter().zip(values) {
        let Some(sum) = sums.get_mut(g) else { return Err(g) };
        let (s, o) = sum.overflowing_add(v.into());
        *sum = s;
        overflow |= o;
    }
    Ok(overflow)
}

/// [`add_rows`] of the rows `valid` holds, marking their groups `seen` (as long as `sums`).
fn add_marking<T: Copy + Into<i128>>(
    sums: &mut [i128],
    seen: &mut [bool],
    groups: &[usize],
    values: &[T],
    valid: impl Iterator<Item = bool>,
) -> Result<bool, usize> {
    let mut overflow = false;
    for ((&g, &v), valid) in groups.iter().zip(values).zip(valid) {
        if !valid {
            continue;
        }
        let (Some(sum), Some(seen)) = (sums.get_mut(g), seen.get_mut(g)) else { return Err(g) };
        let (s, o) = sum.overflowing_add(v.into());
        *sum = s;
        overflow |= o;
        *seen = true;
    }
    Ok(overflow)
}

/// The rows whose values count: not NULL and, under a FILTER, passed by it (a NULL filter
/// result passes nothing); `None` for every row. `filter`, if any, is as long as `nulls`' array.
fn counted(nulls: Option<&NullBuffer>, filter: Option<&BooleanArray>) -> Option<BooleanBuffer> {
    let nulls = nulls.filter(|n| n.null_count() > 0).map(NullBuffer::inner);
    let filter = filter.map(|f| match f.nulls() {
        Some(n) => f.values() & n.inner(),
        None => f.values().clone(),
    });
    match (nulls, filter) {
        (None, filter) => filter,
        (Some(nulls), None) => Some(nulls.clone()),
        (Some(nulls), Some(filter)) => Some(nulls & &filter),
    }
}

/// The `Int64` argument, and the FILTER's results if any, checked to be as long.
fn input<'a>(
    values: &'a [ArrayRef],
    filter: Option<&BooleanArray>,
) -> DFResult<(&'a Int64Array, Option<BooleanBuffer>)> {
    let values = total::int64(values)?;
    if let Some(f) = filter.filter(|f| f.len() != values.len()) {
        return exec_err!("checked_sum: a FILTER of {} rows over {}", f.len(), values.len());
    }
    Ok((values, counted(values.nulls(), filter)))
}

impl GroupsAccumulator for SumGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> DFResult<()> {
        let (values, counted) = input(values, opt_filter)?;
        self.add::<i64>(values.values(), counted.as_ref(), group_indices, total_num_groups)
    }

    /// Adds each partial sum that is not NULL (a NULL one summed nothing).
    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> DFResult<()> {
        let partials = total::partials(values)?;
        let counted = counted(partials.nulls(), None);
        self.add::<i128>(partials.values(), counted.as_ref(), group_indices, total_num_groups)
    }

    /// Each group's sum as an `Int64`, NULL where it summed no value; an error if one does not
    /// fit.
    fn evaluate(&mut self, emit_to: EmitTo) -> DFResult<ArrayRef> {
        let sums = emit_to.take_needed(&mut self.sums);
        let nulls = self.take_seen(emit_to);
        let sums: Vec<i64> =
            sums.into_iter().map(|s| to_int64(&self.name, s)).collect::<DFResult<_>>()?;
        Ok(Arc::new(Int64Array::try_new(sums.into(), nulls)?))
    }

    fn state(&mut self, emit_to: EmitTo) -> DFResult<Vec<ArrayRef>> {
        let sums = emit_to.take_needed(&mut self.sums);
        let nulls = self.take_seen(emit_to);
        Ok(vec![Arc::new(total::partial_array(sums.into(), nulls)?)])
    }

    /// Each row as a group of its own: its value as a partial sum, NULL where it does not
    /// count.
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> DFResult<Vec<ArrayRef>> {
        let (values, counted) = input(values, opt_filter)?;
        let sums: ScalarBuffer<i128> = values.values().iter().map(|&v| i128::from(v)).collect();
        Ok(vec![Arc::new(total::partial_array(sums, counted.map(NullBuffer::new))?)])
    }

    fn size(&self) -> usize {
        let seen = self.seen.as_ref().map_or(0, Vec::capacity);
        self.sums.capacity() * size_of::<i128>() + seen + self.name.capacity()
    }
}
