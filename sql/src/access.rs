//! Whether a scan reads every page of its table or the rows an index range names.
//!
//! A pushed filter whose conjuncts bound the leading column of one of the table's indexes
//! (`=`, `<`, `<=`, `>`, `>=`, `BETWEEN`, `IN` with a number, date, timestamp or boolean at the
//! column's scale, or `=` with a string for a `VarChar` column: [`Pred::key_range`]) makes that
//! index a candidate. For each candidate, the plan walks the range's entries in the statement's
//! snapshot, row ids only, and stops as soon as they outnumber the budget: a quarter of the
//! table's pages. The index with the fewest rows within its budget wins; with none, the scan
//! reads every page.
//!
//! Why a quarter of the pages: a scan reads its pages in order and folds each one's rows in
//! place, where a row read through an index costs a page of its own (its header and slot, a miss
//! each when the rows were not inserted in key order) — in a warm pool about what a page of the
//! scan costs, far more on a disk when cold. A quarter leaves that margin, and it bounds the
//! plan's own walk: at most a quarter of the pages' worth of entries, read from the index's
//! leaves. Counting is exact, not estimated: the engine keeps no histograms.
//!
//! Only committed snapshots choose an index: inside an explicit transaction the scan reads the
//! writer's pages, a chunk at a time on its thread, and reads them all.

use std::ops::Bound;

use nvpage::{ColumnType, Date, Decimal, ReadOps, Snapshot, Storage, Table, Timestamp, Value};

use crate::error::Result;
use crate::filter::{KeyLit, Pred};
use crate::scan::IndexRead;

/// The rows to read through an index, or `None` to read every page.
pub(crate) fn choose(snap: &Snapshot, table: &Table, pred: &Pred) -> Result<Option<IndexRead>> {
    // A clustered table's rows have no ids to fetch them by: its scan walks its leaves.
    if table.storage() == Storage::Clustered {
        return Ok(None);
    }
    let budget = (snap.page_count(table)? / 4) as usize;
    if budget == 0 {
        return Ok(None);
    }
    let schema = table.schema();
    let mut best: Option<IndexRead> = None;
    for index in snap.indexes(table)? {
        let Some(lead) = index.columns().first() else { continue };
        let column = schema.index_of(lead)?;
        let Some((lo, hi)) = pred.key_range(column) else { continue };
        let ty = schema.columns()[column].ty;
        let (Some(lo), Some(hi)) = (bound(&lo, ty), bound(&hi, ty)) else { continue };
        let limit = best.as_ref().map_or(budget, |b| b.ids.len().saturating_sub(1));
        let mut ids = Vec::new();
        for id in snap.index_range(&index, as_slice(&lo), as_slice(&hi))?.ids() {
            ids.push(id?);
            if ids.len() > limit {
                break;
            }
        }
        if ids.len() <= limit {
            best = Some(IndexRead { index: index.name().to_string(), ids });
        }
    }
    if let Some(b) = &mut best {
        // In the heap's order: rows on one page are read one after another.
        b.ids.sort_unstable();
    }
    Ok(best)
}

fn as_slice<'a>(b: &'a Bound<[Value<'a>; 1]>) -> Bound<&'a [Value<'a>]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// A key bound as the index's leading column's value; `None` where the value does not fit the
/// column (the index is then not used), or the column is a `Char` (its keys hold the blanks a
/// filter's value leaves off).
fn bound(b: &Bound<KeyLit>, ty: ColumnType) -> Option<Bound<[Value<'_>; 1]>> {
    fn value(k: &KeyLit, ty: ColumnType) -> Option<[Value<'_>; 1]> {
        Some([match (k, ty) {
            (KeyLit::Num(v), ColumnType::I32) => Value::I32(i32::try_from(*v).ok()?),
            (KeyLit::Num(v), ColumnType::I64) => Value::I64(i64::try_from(*v).ok()?),
            (KeyLit::Num(v), ColumnType::Decimal { scale }) => {
                Value::Decimal(Decimal::new(i64::try_from(*v).ok()?, scale))
            }
            (KeyLit::Num(v), ColumnType::Date) => Value::Date(Date(i32::try_from(*v).ok()?)),
            (KeyLit::Num(v), ColumnType::I16) => Value::I16(i16::try_from(*v).ok()?),
            (KeyLit::Num(v), ColumnType::Timestamp) => {
                Value::Timestamp(Timestamp(i64::try_from(*v).ok()?))
            }
            (KeyLit::Num(0), ColumnType::Bool) => Value::Bool(false),
            (KeyLit::Num(1), ColumnType::Bool) => Value::Bool(true),
            (KeyLit::Str(s), ColumnType::VarChar { .. }) => {
                Value::Str(std::str::from_utf8(s).ok()?)
            }
            _ => return None,
        }])
    }
    Some(match b {
        Bound::Included(k) => Bound::Included(value(k, ty)?),
        Bound::Excluded(k) => Bound::Excluded(value(k, ty)?),
        Bound::Unbounded => Bound::Unbounded,
    })
}
