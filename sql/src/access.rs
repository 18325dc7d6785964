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
//! A clustered table keeps its rows in its primary key's leaves, in key order: a filter that
//! bounds the key's leading column reads that key range from the leaves, whatever its size
//! (`key_range`), with the whole filter still applied to each row. Its other indexes (which
//! name rows by primary key) are never chosen: a row read through one is a descent of the
//! table's tree on top of the index's walk, which the budget's cost of a row (a page) does not
//! cover, so a filter on their columns alone reads every leaf.
//!
//! Only committed snapshots choose an index: inside an explicit transaction the scan reads the
//! writer's pages, a chunk at a time on its thread, and reads them all.

use std::ops::Bound;

use nvpage::{
    ColumnType, Date, Decimal, OwnedValue, ReadOps, Snapshot, Storage, Table, Timestamp, Value,
};

use crate::error::Result;
use crate::filter::{KeyLit, Pred};
use crate::scan::{IndexRead, KeyRange};

/// The rows to read through an index, or `None` to read every page.
pub(crate) fn choose(snap: &Snapshot, table: &Table, pred: &Pred) -> Result<Option<IndexRead>> {
    // A clustered table's rows have no ids to fetch them by: its key ranges are read from its
    // leaves instead.
    if table.storage() == Storage::Clustered {
        return Ok(key_range(snap, table, pred)?.map(IndexRead::KeyRange));
    }
    let budget = (snap.page_count(table)? / 4) as usize;
    if budget == 0 {
        return Ok(None);
    }
    let schema = table.schema();
    let mut best: Option<(String, Vec<nvpage::RowId>)> = None;
    for index in snap.indexes(table)? {
        let Some(lead) = index.columns().first() else { continue };
        let column = schema.index_of(lead)?;
        let Some((lo, hi)) = pred.key_range(column) else { continue };
        let ty = schema.columns()[column].ty;
        let (Some(lo), Some(hi)) = (bound(&lo, ty), bound(&hi, ty)) else { continue };
        let (lo, hi) = (lo.as_ref().map(|v| [v.as_value()]), hi.as_ref().map(|v| [v.as_value()]));
        let limit = best.as_ref().map_or(budget, |b| b.1.len().saturating_sub(1));
        let mut ids = Vec::new();
        for id in snap.index_range(&index, as_slice(&lo), as_slice(&hi))?.ids() {
            ids.push(id?);
            if ids.len() > limit {
                break;
            }
        }
        if ids.len() <= limit {
            best = Some((index.name().to_string(), ids));
        }
    }
    Ok(best.map(|(index, mut ids)| {
        // In the heap's order: rows on one page are read one after another.
        ids.sort_unstable();
        IndexRead::Ids { index, ids }
    }))
}

/// The key range of a clustered table that holds every row `pred` keeps, where `pred` bounds
/// the leading column of its primary key; `None` where it does not. No budget: the range's
/// leaves are some of the leaves a whole scan reads, each read once, so the range reads no
/// page the whole scan would not (in one partition, where a whole scan runs several).
fn key_range(snap: &Snapshot, table: &Table, pred: &Pred) -> Result<Option<KeyRange>> {
    let Some(index) = snap.primary_key(table)? else { return Ok(None) };
    let Some(lead) = index.columns().first() else { return Ok(None) };
    let column = table.schema().index_of(lead)?;
    let Some((lo, hi)) = pred.key_range(column) else { return Ok(None) };
    let ty = table.schema().columns()[column].ty;
    let (Some(lo), Some(hi)) = (bound(&lo, ty), bound(&hi, ty)) else { return Ok(None) };
    Ok(Some(KeyRange { column: lead.clone(), index, lo, hi }))
}

/// A bound on an index's key, as [`ReadOps::index_range`] takes it.
pub(crate) fn as_slice<'a, 'v, T: AsRef<[Value<'v>]>>(b: &'a Bound<T>) -> Bound<&'a [Value<'v>]> {
    b.as_ref().map(|v| v.as_ref())
}

/// A key bound as the index's leading column's value; `None` where the value does not fit the
/// column (the index is then not used), or the column is a `Char` (its keys hold the blanks a
/// filter's value leaves off).
fn bound(b: &Bound<KeyLit>, ty: ColumnType) -> Option<Bound<OwnedValue>> {
    fn value(k: &KeyLit, ty: ColumnType) -> Option<OwnedValue> {
        Some(match (k, ty) {
            (KeyLit::Num(v), ColumnType::I32) => OwnedValue::I32(i32::try_from(*v).ok()?),
            (KeyLit::Num(v), ColumnType::I64) => OwnedValue::I64(i64::try_from(*v).ok()?),
            (KeyLit::Num(v), ColumnType::Decimal { scale }) => {
                OwnedValue::Decimal(Decimal::new(i64::try_from(*v).ok()?, scale))
            }
            (KeyLit::Num(v), ColumnType::Date) => OwnedValue::Date(Date(i32::try_from(*v).ok()?)),
            (KeyLit::Num(v), ColumnType::I16) => OwnedValue::I16(i16::try_from(*v).ok()?),
            (KeyLit::Num(v), ColumnType::Timestamp) => {
                OwnedValue::Timestamp(Timestamp(i64::try_from(*v).ok()?))
            }
            (KeyLit::Num(0), ColumnType::Bool) => OwnedValue::Bool(false),
            (KeyLit::Num(1), ColumnType::Bool) => OwnedValue::Bool(true),
            (KeyLit::Str(s), ColumnType::VarChar { .. }) => {
                OwnedValue::Str(std::str::from_utf8(s).ok()?.to_owned())
            }
            _ => return None,
        })
    }
    Some(match b {
        Bound::Included(k) => Bound::Included(value(k, ty)?),
        Bound::Excluded(k) => Bound::Excluded(value(k, ty)?),
        Bound::Unbounded => Bound::Unbounded,
    })
}
