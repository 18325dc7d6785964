//! Column gathers: a page's rows located once, narrowed by filters, then read a column at a time
//! into plain vectors — what a columnar consumer (Arrow arrays, a vectorised operator) builds
//! from, with no per-row `Result` and no value enum in between.
//!
//! ```text
//! PageRows ──locate──▶ PageBatch (the live rows' places, in a caller's reused buffer)
//!                        │ retain(pred)      keeps the rows a predicate accepts
//!                        │ retain_by(col, f) keeps the rows whose value of one column passes
//!                        │ gather(col, out)  appends one column of every kept row
//!                        ▼
//!                      Vec<i64> / Vec<i32> / bytes + offsets, and validity
//! ```
//!
//! A [`PageBatch`] borrows its page's [`PageRows`] and the caller's [`RowPlaces`] buffer, so the
//! places it holds are never read against another page's bytes; every row it holds was checked
//! at [`PageRows::locate`] to be at least as long as the schema's fixed area, so a column handle
//! checked against the page ([`PageRows::col`]) reads inside every row.

use std::marker::PhantomData;

use crate::error::{Error, Result};
use crate::row::{Brand, Kind, PageCol, PageRow, RowRef, kind};
use crate::scan::PageRows;
use crate::table::RowId;

/// Where one row of a page lies: its offset and length in the page, and its slot; or, for a
/// clustered table's row spilled from its leaf (`spilled` above 0), its length in the leaf's
/// spilled row `spilled - 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Place {
    off: u16,
    len: u16,
    slot: u16,
    spilled: u16,
}

/// A reusable buffer for the places of one page's rows ([`PageRows::locate`]): keep one per
/// scanning thread and pass it for every page, so locating a page allocates nothing once the
/// buffer has grown to a page's row count.
#[derive(Clone, Debug, Default)]
pub struct RowPlaces(Vec<Place>);

impl RowPlaces {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }
}

/// A page's live rows, located once ([`PageRows::locate`]): a heap page's in the order a fold
/// visits them (last slot first, which walks the page's memory upwards), a clustered table's
/// leaf's in key order. Filters narrow it
/// ([`PageBatch::retain`]); gathers read one column of every row it holds into a vector.
#[derive(Debug)]
pub struct PageBatch<'p, 's> {
    page: PageRows<'p>,
    places: &'s mut Vec<Place>,
    _page: Brand<'p>,
}

impl<'p> PageRows<'p> {
    /// The page's live rows, located into `buf` (cleared first), with every check of a fold:
    /// a damaged page is [`Error::CorruptPage`], a row shorter than the schema's fixed area
    /// [`Error::CorruptRow`].
    pub fn locate<'s>(&self, buf: &'s mut RowPlaces) -> Result<PageBatch<'p, 's>> {
        let places = &mut buf.0;
        places.clear();
        let bytes = self.bytes();
        let base = bytes.as_ptr() as usize;
        let fixed_end = self.schema().fixed_end();
        let spilled = self.spilled();
        self.fold_raw((), |(), id, row| {
            if row.len() < fixed_end {
                return Err(short_row(row.len(), fixed_end));
            }
            // A row lies inside its page (checked by the fold), or is one of its leaf's spilled
            // rows; a page is at most 64 KiB, and a row at most a page: its offset, length and
            // slot fit in 16 bits.
            let (len, slot) = (row.len() as u16, id.slot);
            match spilled.and_then(|s| s.position(row)) {
                Some(k) => places.push(Place { off: 0, len, slot, spilled: k as u16 + 1 }),
                None => {
                    let off = (row.as_ptr() as usize - base) as u16;
                    places.push(Place { off, len, slot, spilled: 0 })
                }
            }
            Ok(())
        })?;
        if self.is_leaf() {
            // The fold read the leaf from its last entry (upwards through its memory, the
            // faster way: `Node::fold_values_rev`); its rows are handed on in key order.
            places.reverse();
        }
        Ok(PageBatch { page: *self, places, _page: PhantomData })
    }
}

/// The bytes of the row at `p` of `page` (inside the page, or the spilled row it names: checked
/// by `locate`).
#[inline(always)]
fn place_bytes<'p>(page: &PageRows<'p>, p: Place) -> &'p [u8] {
    let at = usize::from(p.off);
    let from = match (p.spilled, page.spilled()) {
        (0, _) | (_, None) => page.bytes(),
        (k, Some(s)) => s.at(usize::from(k) - 1),
    };
    &from[at..at + usize::from(p.len)]
}

#[cold]
fn short_row(len: usize, fixed_end: usize) -> Error {
    Error::CorruptRow(format!("{len} bytes, the schema needs at least {fixed_end}"))
}

impl<'p> PageBatch<'p, '_> {
    /// Rows held.
    pub fn len(&self) -> usize {
        self.places.len()
    }

    /// Whether no row is held.
    pub fn is_empty(&self) -> bool {
        self.places.is_empty()
    }

    /// The bytes of the row at `p` (inside the page, or the spilled row it names: checked by
    /// `locate`).
    #[inline(always)]
    fn bytes_of(&self, p: Place) -> &'p [u8] {
        place_bytes(&self.page, p)
    }

    #[inline(always)]
    fn row_of(&self, p: Place) -> PageRow<'p> {
        let id = self.page.row_id(p.slot);
        PageRow::new(RowRef::from_checked(self.page.schema(), self.bytes_of(p), id))
    }

    /// The rows held, in order, or from either end (`.rev()`: a leaf's from its greatest key
    /// down).
    pub fn rows(&self) -> impl DoubleEndedIterator<Item = PageRow<'p>> + '_ {
        self.places.iter().map(|&p| self.row_of(p))
    }

    /// The ids of the rows held, in order, or from either end (for an update or a delete of
    /// them).
    pub fn ids(&self) -> impl DoubleEndedIterator<Item = RowId> + '_ {
        self.places.iter().map(|p| self.page.row_id(p.slot))
    }

    /// Keeps the rows for which `keep` returns `true`, in order; its first error is returned and
    /// leaves the batch as it was.
    pub fn retain(&mut self, mut keep: impl FnMut(PageRow<'p>) -> Result<bool>) -> Result<()> {
        let mut kept = 0;
        for i in 0..self.places.len() {
            let p = self.places[i];
            if keep(self.row_of(p))? {
                self.places[kept] = p;
                kept += 1;
            }
        }
        self.places.truncate(kept);
        Ok(())
    }

    /// Keeps the rows whose value of column `col` passes `keep` (given `None` for a NULL), in
    /// order: a filter on one fixed-width column, read as [`Self::gather`] reads it, with no row
    /// view and no `Result` per row (a scan's `shipdate <= …` is a loop over one slot of each
    /// row).
    pub fn retain_by<K: Fixed>(
        &mut self,
        col: PageCol<'p, K>,
        mut keep: impl FnMut(Option<K::Native>) -> bool,
    ) {
        self.retain_bytes(|row| keep(col.value_in(row)));
    }

    /// Keeps the rows whose values of columns `a` and `b` (of one type) pass `keep` (each given
    /// `None` for a NULL), in order: [`Self::retain_by`] for a comparison of two columns.
    pub fn retain_by_pair<K: Fixed>(
        &mut self,
        a: PageCol<'p, K>,
        b: PageCol<'p, K>,
        mut keep: impl FnMut(Option<K::Native>, Option<K::Native>) -> bool,
    ) {
        self.retain_bytes(|row| keep(a.value_in(row), b.value_in(row)));
    }

    /// Keeps the rows whose bytes pass `keep`, in order.
    fn retain_bytes(&mut self, mut keep: impl FnMut(&'p [u8]) -> bool) {
        let page = self.page;
        self.places.retain(|&p| keep(place_bytes(&page, p)));
    }

    /// Keeps the first `n` rows held.
    pub fn truncate(&mut self, n: usize) {
        self.places.truncate(n);
    }

    /// Appends column `col` of every row held to `values`, in order. A NULL appends
    /// `Default::default()` to `values` and `false` to `valid`; with `valid` given, every
    /// row appends to it (`true` for a value). A NULL with no `valid` is [`Error::Null`] (as
    /// [`PageRow::get`] reports it), with nothing appended.
    pub fn gather<K: Fixed>(
        &self,
        col: PageCol<'p, K>,
        values: &mut Vec<K::Native>,
        valid: Option<&mut Vec<bool>>,
    ) -> Result<()> {
        let (at, index) = (col.offset(), col.index());
        match (col.nullable(), valid) {
            (false, valid) => {
                values.extend(self.places.iter().map(|&p| K::read(self.bytes_of(p), at)));
                if let Some(v) = valid {
                    v.resize(v.len() + self.places.len(), true);
                }
            }
            (true, Some(valid)) => {
                values.reserve(self.places.len());
                valid.reserve(self.places.len());
                for &p in self.places.iter() {
                    let row = self.bytes_of(p);
                    let null = is_null(row, index);
                    values.push(if null { K::Native::default() } else { K::read(row, at) });
                    valid.push(!null);
                }
            }
            (true, None) => {
                if let Some(&p) = self.places.iter().find(|&&p| is_null(self.bytes_of(p), index)) {
                    return Err(Error::Null(
                        self.row_of(p).row().schema().columns()[index].name.clone(),
                    ));
                }
                values.extend(self.places.iter().map(|&p| K::read(self.bytes_of(p), at)));
            }
        }
        Ok(())
    }

    /// Appends column `col` (a `Char`, without its trailing blanks, or a `VarChar`) of every row
    /// held to `data`, each value's end offset in `data` to `ends` (Arrow's layout: value `i`
    /// is `data[ends[i - 1]..ends[i]]`, the caller's first offset before them), and with
    /// `valid` given, `true` or `false` per row as [`PageBatch::gather`] does (a NULL appends
    /// no bytes). A `VarChar` pointing outside its row is [`Error::CorruptRow`]; `data` past
    /// `i32::MAX` bytes is [`Error::InvalidOption`]. Bytes, not `&str`: whoever builds strings
    /// from them checks them as UTF-8 (the engine stores only UTF-8, but a page's bytes are
    /// only as good as its checksum).
    pub fn gather_bytes(
        &self,
        col: PageCol<'p, kind::Bytes>,
        data: &mut Vec<u8>,
        ends: &mut Vec<i32>,
        mut valid: Option<&mut Vec<bool>>,
    ) -> Result<()> {
        let (at, index, ty) = (col.offset(), col.index(), col.ty());
        let fixed_end = self.page.schema().fixed_end();
        let name = || self.page.schema().columns()[index].name.clone();
        if col.nullable() && valid.is_none() && self.rows().any(|r| r.row().is_null(index)) {
            return Err(Error::Null(name()));
        }
        ends.reserve(self.places.len());
        for &p in self.places.iter() {
            let row = self.bytes_of(p);
            let null = col.nullable() && is_null(row, index);
            if !null {
                data.extend_from_slice(kind::Bytes::decode(row, at, ty, fixed_end)?);
            }
            let end = i32::try_from(data.len()).map_err(|_| {
                Error::InvalidOption(format!("column {} gathers past 2 GiB of bytes", name()))
            })?;
            ends.push(end);
            if let Some(v) = valid.as_deref_mut() {
                v.push(!null);
            }
        }
        Ok(())
    }
}

impl<K: Fixed> PageCol<'_, K> {
    /// The column's value in `row` (a row of the page), `None` for a NULL.
    #[inline(always)]
    fn value_in(&self, row: &[u8]) -> Option<K::Native> {
        (!self.nullable() || !is_null(row, self.index())).then(|| K::read(row, self.offset()))
    }
}

#[inline(always)]
fn is_null(row: &[u8], i: usize) -> bool {
    row[i / 8] & (1 << (i % 8)) != 0
}

/// A fixed-width column kind that [`PageBatch::gather`] reads into a `Vec` of its native
/// values: `i16`, `i32`, `i64`, `f64`, a decimal's `i64` units, a date's `i32` days, a
/// timestamp's `i64` microseconds (a `Bool` has no such kind: its byte is checked as it is read).
pub trait Fixed: Kind {
    /// The value as stored.
    type Native: Copy + Default;
    /// Reads the slot at `at` of a row whose fixed area holds it.
    fn read(row: &[u8], at: usize) -> Self::Native;
}

#[inline(always)]
fn read_le<const N: usize>(row: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&row[at..at + N]);
    a
}

/// `impl Fixed` for each kind, reading its slot as the little-endian native type given.
macro_rules! fixed {
    ($($kind:ident => $native:ty,)*) => {$(
        impl Fixed for kind::$kind {
            type Native = $native;
            #[inline(always)]
            fn read(row: &[u8], at: usize) -> $native {
                <$native>::from_le_bytes(read_le(row, at))
            }
        }
    )*};
}

// A date as its days since 1970-01-01 (Arrow's `Date32`), a timestamp as its microseconds since
// 1970-01-01 00:00:00 UTC (Arrow's `Timestamp(Microsecond)`), a decimal as its units.
fixed! {
    I16 => i16,
    I32 => i32,
    I64 => i64,
    F64 => f64,
    Units => i64,
    Date => i32,
    Timestamp => i64,
}
