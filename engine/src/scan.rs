//! Scans: a page-at-a-time iterator over a table, and a parallel fold that splits the table's
//! pages among worker threads.
//!
//! Rows are read in place: a [`ScanPage`] holds its page (a frame, or in SE2 the page in the
//! mapping) and lends [`RowRef`]s borrowed from it. A scan of a table larger than the pool cycles
//! through a small ring of frames ([`nvpage_buffer::ScanRing`]) so that it does not flush
//! everything else out; a table that fits is cached like any other page. Scans ask the kernel to
//! read ahead a window of pages at a time on a disk (`BufferPool::will_need`; nothing on memory).

use std::marker::PhantomData;
use std::ops::{ControlFlow, Range};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use nvpage_buffer::{PageRef, ScanRing, View};
use nvpage_storage::PageId;

use crate::db::Database;
use crate::error::{Error, Result};
use crate::heap::{self, HeapPage};
use crate::index::node::{self, LeafValues, Node};
use crate::index::spill::{self, Chain};
use crate::index::tree;
use crate::partition::Partition;
use crate::row::{Brand, Col, Kind, PageCol, PageRow, RowRef};
use crate::schema::Schema;
use crate::table::{RowId, Storage, Table};
use crate::txn::{self, Ctx};

/// A scan cycles through a ring of frames only when its table is larger than the pool (so it
/// would push everything else out); a table that fits is read through the clock like any other
/// page, so that a pool holding all the data serves a second scan from memory.
fn scan_ring(db: &Database, runs: &[(u64, u64)]) -> Option<ScanRing> {
    let pages: u64 = runs.iter().map(|r| r.1).sum();
    (pages > db.pool.frames() as u64).then(|| db.pool.scan_ring())
}

fn read_page<'t>(
    db: &'t Database,
    view: View,
    id: u64,
    ring: &mut Option<ScanRing>,
) -> Result<PageRef<'t>> {
    Ok(match ring {
        Some(r) => db.pool.read_scan(PageId(id), view, r)?,
        None => db.pool.read(PageId(id), view)?,
    })
}

/// Pages read ahead of a scan.
const READ_AHEAD_PAGES: u64 = 256;
/// Pages a parallel-scan worker takes at a time.
const CHUNK_PAGES: u64 = 32;

/// The pages that hold a table's rows, as a scan reads them.
struct RowPages {
    /// Runs of consecutive page ids, in scan order: a heap table's extents, or a clustered
    /// table's leaves in key order.
    runs: Vec<(u64, u64)>,
    /// The tree whose leaves they are (a clustered table's).
    leaf_of: Option<u32>,
}

/// The pages that hold `table`'s rows as `ctx` sees them.
fn row_pages(ctx: &Ctx<'_>, table: &Table) -> Result<RowPages> {
    let meta = ctx.meta(table)?;
    if meta.storage == Storage::Heap {
        return Ok(RowPages { runs: meta.runs(), leaf_of: None });
    }
    let tree = ctx.catalog.clustered_tree(meta.id).ok_or_else(|| {
        Error::CorruptCatalog(format!("clustered table {} without its tree", meta.name))
    })?;
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for leaf in tree::leaves(&ctx.db.pool, ctx.view, tree)? {
        match runs.last_mut() {
            Some((start, len)) if *start + *len == leaf => *len += 1,
            _ => runs.push((leaf, 1)),
        }
    }
    Ok(RowPages { runs, leaf_of: Some(tree.id) })
}

/// A table's pages as an iterator of [`ScanPage`]s, as its transaction sees them: a heap table's
/// pages, or a clustered table's leaves in key order. It walks from either end: [`Iterator::next`]
/// from the first page up, [`DoubleEndedIterator::next_back`] from the last page down (so
/// `.rev()` reads a clustered table's leaves in descending key order), and the two ends meet,
/// every page yielded once. A partition's scan reversed yields the same pages as forward,
/// reversed.
///
/// ```
/// # use nvpage::{Column, ColumnType, Database, ReadOps, Schema, Storage, Value, kind};
/// # let dir = tempfile::tempdir()?;
/// # let db = Database::builder().page_size(4096).open(dir.path().join("db"))?;
/// let schema = Schema::new(vec![Column::new("k", ColumnType::I64)])?.with_primary_key(&["k"])?;
/// let mut w = db.begin_write()?;
/// let t = w.create_table_with("t", schema, Storage::Clustered)?;
/// for k in 1..=2000 {
///     w.insert(&t, &[Value::I64(k)])?;
/// }
/// w.commit()?;
/// let r = db.begin_read()?;
/// let k = t.col::<kind::I64>("k")?;
/// let mut keys = Vec::new();
/// // The last leaf first, and each leaf's rows from its greatest key down.
/// for page in r.scan(&t)?.rev() {
///     for row in page?.rows().rev() {
///         keys.push(row?.get(k)?);
///     }
/// }
/// assert_eq!(keys, (1..=2000).rev().collect::<Vec<i64>>());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Scan<'t> {
    db: &'t Database,
    view: View,
    table: Table,
    /// The tree whose leaves are scanned (a clustered table's).
    leaf_of: Option<u32>,
    /// Runs of consecutive page ids, in scan order, none empty (`Partition::runs_of`).
    pages: Vec<(u64, u64)>,
    /// The front: the page [`Iterator::next`] yields next, in run `run`.
    run: usize,
    next: u64,
    /// The back: one past the page [`DoubleEndedIterator::next_back`] yields next, in run
    /// `back_run`.
    back_run: usize,
    back_end: u64,
    /// Pages neither end has yielded: the ends have met when it is 0.
    left: u64,
    /// The pages last hinted for the front (`page..page + n`) and for the back
    /// (`page + 1 - n..page + 1`): a page outside its end's window starts a new one.
    ahead: Range<u64>,
    behind: Range<u64>,
    ring: Option<ScanRing>,
}

impl<'t> Scan<'t> {
    /// Partition `part` of `table`'s pages, as `ctx` sees them.
    pub(crate) fn new(ctx: Ctx<'t>, table: &Table, part: Partition) -> Result<Self> {
        let RowPages { runs, leaf_of } = row_pages(&ctx, table)?;
        let pages = part.runs_of(&runs);
        debug_assert!(pages.iter().all(|r| r.1 > 0), "a partition's runs are never empty");
        let next = pages.first().map_or(0, |r| r.0);
        let back_run = pages.len().saturating_sub(1);
        let back_end = pages.last().map_or(0, |r| r.0 + r.1);
        let left = pages.iter().map(|r| r.1).sum();
        let ring = scan_ring(ctx.db, &pages);
        let (db, view, table) = (ctx.db, ctx.view, table.clone());
        Ok(Self {
            db,
            view,
            table,
            leaf_of,
            pages,
            run: 0,
            next,
            back_run,
            back_end,
            left,
            ahead: 0..0,
            behind: 0..0,
            ring,
        })
    }

    fn read(&mut self, page: u64) -> Result<ScanPage<'t>> {
        ScanPage::read(self.db, self.view, &self.table, self.leaf_of, page, &mut self.ring)
    }
}

impl<'t> Iterator for Scan<'t> {
    type Item = Result<ScanPage<'t>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let &(start, len) = self.pages.get(self.run)?;
        let page = self.next;
        self.left -= 1;
        if page + 1 >= start + len {
            self.run += 1;
            self.next = self.pages.get(self.run).map_or(0, |r| r.0);
        } else {
            self.next += 1;
        }
        // The window above the page, up to its run's end (a new run may lie below the last
        // window: a clustered table's leaves need not ascend).
        if !self.ahead.contains(&page) {
            let n = READ_AHEAD_PAGES.min(start + len - page);
            self.db.pool.will_need(PageId(page), n);
            self.ahead = page..page + n;
        }
        Some(self.read(page))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.left).ok();
        (left.unwrap_or(usize::MAX), left)
    }
}

impl DoubleEndedIterator for Scan<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let &(start, _) = self.pages.get(self.back_run)?;
        let page = self.back_end - 1;
        self.left -= 1;
        if page == start {
            // The run is done; below the first run there is nothing left (`left` is 0).
            if let Some(r) = self.back_run.checked_sub(1) {
                self.back_run = r;
                self.back_end = self.pages[r].0 + self.pages[r].1;
            }
        } else {
            self.back_end = page;
        }
        // The window below the page, down to its run's start: the kernel reads it ahead as one
        // range, whichever way the scan then walks it.
        if !self.behind.contains(&page) {
            let n = READ_AHEAD_PAGES.min(page + 1 - start);
            let first = page + 1 - n;
            self.db.pool.will_need(PageId(first), n);
            self.behind = first..page + 1;
        }
        Some(self.read(page))
    }
}

/// One page of a scan (a heap page, or a clustered table's leaf), held for as long as its rows
/// are borrowed.
#[derive(Debug)]
pub struct ScanPage<'t> {
    page: PageRef<'t>,
    schema: Schema,
    id: u64,
    table_id: u32,
    leaf_of: Option<u32>,
    /// A leaf's spilled rows, read when the leaf was.
    spilled: Option<Spilled>,
}

/// The spilled rows of a clustered table's leaf (`index/spill.rs`), each read whole from its
/// chain when the leaf was read, so that the leaf's rows can be lent for as long as the leaf.
#[derive(Debug, Default)]
pub(crate) struct Spilled(Vec<(usize, Vec<u8>)>);

impl Spilled {
    /// The spilled rows of `bytes` (leaf `id` of tree `tree`), as `view` sees their chains:
    /// `None` for a page whose flags say it holds none (one byte read, for every other leaf).
    fn of(
        db: &Database,
        view: View,
        schema: &Schema,
        tree: u32,
        id: u64,
        bytes: &[u8],
    ) -> Result<Option<Self>> {
        if !node::may_spill(bytes) {
            return Ok(None);
        }
        let n = leaf(bytes, tree, id)?;
        let mut rows = Vec::new();
        for i in 0..n.len() {
            if n.spilled(i)? {
                let mut row = Vec::new();
                let chain = Chain::decode(n.value(i)?, id)?;
                spill::read_row(db, view, tree, chain, schema, n.key(i)?, id, &mut row)?;
                rows.push((i, row));
            }
        }
        Ok(Some(Self(rows)))
    }

    /// The row of the leaf's entry `i`, which is spilled; `page`, the leaf, for the error where
    /// the leaf's flags said it held none.
    fn row(this: Option<&Self>, i: usize, page: u64) -> Result<&[u8]> {
        let found = this.and_then(|s| s.0.binary_search_by_key(&i, |r| r.0).ok().map(|k| &s.0[k]));
        found.map(|r| r.1.as_slice()).ok_or_else(|| Error::CorruptPage {
            page,
            reason: "a spilled row in a leaf whose flags say it holds none".into(),
        })
    }

    /// The position among these rows of the one at `bytes` (one of them), for a gather's
    /// places; `None` for bytes of no spilled row.
    pub(crate) fn position(&self, bytes: &[u8]) -> Option<usize> {
        self.0.iter().position(|r| std::ptr::eq(r.1.as_ptr(), bytes.as_ptr()))
    }

    /// The spilled row at `position`.
    pub(crate) fn at(&self, position: usize) -> &[u8] {
        &self.0[position].1
    }
}

impl<'t> ScanPage<'t> {
    fn read(
        db: &'t Database,
        view: View,
        table: &Table,
        leaf_of: Option<u32>,
        id: u64,
        ring: &mut Option<ScanRing>,
    ) -> Result<Self> {
        let page = read_page(db, view, id, ring)?;
        let spilled = match leaf_of {
            None => {
                HeapPage::new(&page, table.id, id)?;
                None
            }
            Some(tree) => {
                leaf(&page, tree, id)?;
                Spilled::of(db, view, table.schema(), tree, id, &page)?
            }
        };
        let (schema, table_id) = (table.schema().clone(), table.id);
        Ok(Self { page, schema, id, table_id, leaf_of, spilled })
    }

    /// The page's id.
    pub fn page_id(&self) -> u64 {
        self.id
    }

    /// Whether the page is read in place from the mapping (SE2).
    pub fn is_redirected(&self) -> bool {
        self.page.is_redirected()
    }

    /// Calls `f` with the page as [`PageRows`]: the page-at-a-time API of
    /// [`ReadOps::par_fold_pages`](crate::ReadOps::par_fold_pages) (column handles checked once
    /// for the page, folds, and [column gathers](PageRows::locate)), for a scan that pulls its
    /// pages one at a time.
    pub fn with_rows<R>(&self, f: impl for<'p> FnOnce(PageRows<'p>) -> R) -> R {
        f(PageRows {
            schema: &self.schema,
            bytes: &self.page,
            table_id: self.table_id,
            id: self.id,
            leaf_of: self.leaf_of,
            spilled: self.spilled.as_ref(),
            _page: PhantomData,
        })
    }

    /// The live rows of the page, in slot order (a clustered table's leaf: in key order), or
    /// from either end: `.rev()` gives them from the last slot down (a leaf's from its greatest
    /// key down). Each knows its id ([`RowRef::id`]; [`RowId::KEYED`] in a clustered table).
    pub fn rows(&self) -> impl DoubleEndedIterator<Item = Result<RowRef<'_>>> + '_ {
        let (page, schema, spilled) = (self.id, &self.schema, self.spilled.as_ref());
        /// The page, as it was checked when read.
        enum Rows<'p> {
            Heap(HeapPage<'p>),
            Leaf(Node<'p>),
        }
        let rows = match self.leaf_of {
            None => Rows::Heap(HeapPage::new(&self.page, self.table_id, page).expect("checked")),
            Some(tree) => Rows::Leaf(leaf(&self.page, tree, page).expect("checked when read")),
        };
        let count = match rows {
            Rows::Heap(h) => h.slot_count(),
            Rows::Leaf(n) => n.len(),
        };
        (0..count).filter_map(move |i| match rows {
            Rows::Heap(h) => {
                h.get(i).map(|bytes| RowRef::new(schema, bytes, RowId { page, slot: i as u16 }))
            }
            Rows::Leaf(n) => Some(
                match n.spilled(i) {
                    Ok(true) => Spilled::row(spilled, i, page),
                    Ok(false) => n.value(i),
                    Err(e) => Err(e),
                }
                .and_then(|b| RowRef::new(schema, b, RowId::KEYED)),
            ),
        })
    }
}

/// Folds every row of `table` on `threads` workers (at least one), each starting from `init()`,
/// then combines the workers' results: [`par_fold_pages`], each page's rows folded in turn.
pub(crate) fn par_fold<A, I, F, C>(
    ctx: Ctx<'_>,
    table: &Table,
    threads: usize,
    init: I,
    fold: F,
    combine: C,
) -> Result<A>
where
    A: Send,
    I: Fn() -> A + Sync,
    F: Fn(A, RowRef<'_>) -> Result<A> + Sync,
    C: Fn(A, A) -> A,
{
    let rows = |acc, page: PageRows<'_>| page.fold(acc, |acc, r| fold(acc, r.row()));
    par_fold_pages(ctx, table, threads, init, rows, combine)
}

/// One heap page of a page-at-a-time fold ([`ReadOps::par_fold_pages`](crate::ReadOps::par_fold_pages)),
/// read in place for as long as the fold's call lasts. Its column handles ([`PageRows::col`])
/// are checked against the table's schema once for the page, so its rows' getters
/// ([`PageRow::get`]) check only their values; the page itself is checked as its rows are
/// folded ([`PageRows::fold`]), with every check of a row-at-a-time scan.
#[derive(Clone, Copy, Debug)]
pub struct PageRows<'p> {
    schema: &'p Schema,
    bytes: &'p [u8],
    table_id: u32,
    id: u64,
    /// The tree whose leaf this is (a clustered table's), or `None` for a heap page.
    leaf_of: Option<u32>,
    /// A leaf's spilled rows.
    spilled: Option<&'p Spilled>,
    /// Invariant in `'p`, as its handles and rows are: two pages' lifetimes never unify.
    _page: Brand<'p>,
}

impl<'p> PageRows<'p> {
    /// The page's id.
    pub fn page_id(&self) -> u64 {
        self.id
    }

    /// The table's schema.
    pub fn schema(&self) -> &'p Schema {
        self.schema
    }

    pub(crate) fn bytes(&self) -> &'p [u8] {
        self.bytes
    }

    /// Whether the page is a clustered table's leaf (its rows in key order), not a heap page.
    pub(crate) fn is_leaf(&self) -> bool {
        self.leaf_of.is_some()
    }

    /// A leaf's spilled rows, if it may hold any.
    pub(crate) fn spilled(&self) -> Option<&'p Spilled> {
        self.spilled
    }

    /// The id of the row in slot `slot` ([`RowId::KEYED`] in a clustered table's leaf).
    pub(crate) fn row_id(&self, slot: u16) -> RowId {
        match self.leaf_of {
            None => RowId { page: self.id, slot },
            Some(_) => RowId::KEYED,
        }
    }

    /// `col`, checked against the page's schema: [`Error::ColumnMismatch`] unless the page's
    /// schema has a column of the handle's type and nullability at the handle's index and
    /// place (a handle of this table, or of one laid out the same up to that column).
    ///
    /// [`Error::ColumnMismatch`]: crate::Error::ColumnMismatch
    #[inline(always)]
    pub fn col<K: Kind>(&self, col: Col<K>) -> Result<PageCol<'p, K>> {
        PageCol::new(col, self.schema)
    }

    /// Folds the page's live rows with `f`, in no promised order (the last slot first, which
    /// walks the page's memory upwards: a third less time per row on a cold cache than slot
    /// order), checking the page in the same pass. A damaged page is [`Error::CorruptPage`] or
    /// [`Error::CorruptRow`], as a row-at-a-time scan reports it.
    ///
    /// [`Error::CorruptPage`]: crate::Error::CorruptPage
    /// [`Error::CorruptRow`]: crate::Error::CorruptRow
    #[inline(always)]
    pub fn fold<A>(&self, init: A, mut f: impl FnMut(A, PageRow<'p>) -> Result<A>) -> Result<A> {
        let schema = self.schema;
        self.fold_raw(init, |acc, rid, bytes| {
            f(acc, PageRow::new(RowRef::new(schema, bytes, rid)?))
        })
    }

    /// Folds the page's live rows with `f` in reverse order, checking the page in the same pass
    /// as [`Self::fold`] does: a heap page's from the last slot down, a clustered table's leaf's
    /// from its greatest key down (with a [reversed scan](Scan), a table's rows in descending
    /// key order). It walks as [`Self::fold`] does today, and is as fast; unlike it, it promises
    /// the order. A leaf's rows in key order are [`Self::locate`]'s.
    #[inline(always)]
    pub fn fold_rev<A>(
        &self,
        init: A,
        mut f: impl FnMut(A, PageRow<'p>) -> Result<A>,
    ) -> Result<A> {
        let schema = self.schema;
        // `fold_raw` walks from the last slot (or entry) down, as this promises.
        self.fold_raw(init, |acc, rid, bytes| {
            f(acc, PageRow::new(RowRef::new(schema, bytes, rid)?))
        })
    }

    /// Folds the page's live rows as their ids and bytes from the last slot down (a leaf's: from
    /// the last entry down; ids [`RowId::KEYED`]), checking the page as it goes. [`Self::fold_rev`]
    /// promises this order to users.
    #[inline(always)]
    pub(crate) fn fold_raw<A>(
        &self,
        init: A,
        mut f: impl FnMut(A, RowId, &'p [u8]) -> Result<A>,
    ) -> Result<A> {
        let id = self.id;
        match self.leaf_of {
            None => heap::fold_rows_rev(self.bytes, self.table_id, id, init, |acc, slot, bytes| {
                f(acc, RowId { page: id, slot: slot as u16 }, bytes)
            }),
            Some(tree) => {
                let spilled = self.spilled;
                leaf(self.bytes, tree, id)?.fold_values_rev(init, |acc, i, v, s| {
                    let row = if s { Spilled::row(spilled, i, id)? } else { v };
                    f(acc, RowId::KEYED, row)
                })
            }
        }
    }
}

/// `bytes` (page `id`) as a leaf of clustered table tree `tree`: a node of it at level 0 that
/// holds rows (sized values). A scan and the row count at open read every leaf through it.
pub(crate) fn leaf(bytes: &[u8], tree: u32, id: u64) -> Result<Node<'_>> {
    let n = Node::new(bytes, tree, id)?;
    if n.level() != 0 {
        return Err(Error::CorruptPage {
            page: id,
            reason: "a clustered table's leaf is not a leaf".into(),
        });
    }
    // A leaf of row ids would read its 10-byte values as rows (sound ones, for a schema whose
    // fixed area is as short).
    if n.values() != LeafValues::Sized {
        return Err(Error::CorruptPage {
            page: id,
            reason: "a clustered table's leaf holds row ids, not rows".into(),
        });
    }
    Ok(n)
}

/// Folds partition `part` of `table` a page at a time on the calling thread, until `fold`
/// breaks or the pages run out: see [`ReadOps::fold_partition`](crate::ReadOps::fold_partition).
pub(crate) fn fold_partition<A>(
    ctx: Ctx<'_>,
    table: &Table,
    part: Partition,
    init: A,
    mut fold: impl for<'p> FnMut(A, PageRows<'p>) -> Result<ControlFlow<A, A>>,
) -> Result<A> {
    let mut acc = init;
    for page in Scan::new(ctx, table, part)? {
        match page?.with_rows(|rows| fold(acc, rows))? {
            ControlFlow::Continue(a) => acc = a,
            ControlFlow::Break(a) => return Ok(a),
        }
    }
    Ok(acc)
}

/// Folds every page of `table` on `threads` workers (at least one): each starts from `init()`
/// and folds its share of the pages with `fold`, then the workers' results are combined. Workers
/// take chunks of pages from a shared counter, so a slow worker does not hold the others back.
/// The first error stops every worker. Workers read with the calling transaction's view and act
/// with what the calling thread holds (its transactions and latches: `txn::adopt`), since it
/// waits for them.
#[inline(always)]
pub(crate) fn par_fold_pages<A, I, F, C>(
    ctx: Ctx<'_>,
    table: &Table,
    threads: usize,
    init: I,
    fold: F,
    combine: C,
) -> Result<A>
where
    A: Send,
    I: Fn() -> A + Sync,
    F: for<'p> Fn(A, PageRows<'p>) -> Result<A> + Sync,
    C: Fn(A, A) -> A,
{
    let (db, view) = (ctx.db, ctx.view);
    let RowPages { runs, leaf_of } = row_pages(&ctx, table)?;
    let use_ring = scan_ring(db, &runs).is_some();
    let chunks: Vec<(u64, u64)> = runs
        .into_iter()
        .flat_map(|(s, n)| {
            (0..n.div_ceil(CHUNK_PAGES))
                .map(move |i| (s + i * CHUNK_PAGES, (n - i * CHUNK_PAGES).min(CHUNK_PAGES)))
        })
        .collect();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let threads = threads.clamp(1, chunks.len().max(1));
    let work = || -> Result<A> {
        let mut acc = init();
        let mut ring = use_ring.then(|| db.pool.scan_ring());
        let schema = table.schema().clone();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(&(start, len)) = chunks.get(i) else { return Ok(acc) };
            if failed.load(Ordering::Relaxed) {
                return Ok(acc);
            }
            db.pool.will_need(PageId(start), len);
            for id in start..start + len {
                let bytes = read_page(db, view, id, &mut ring)?;
                // The next page's first lines load while this one is folded.
                if id + 1 < start + len {
                    db.pool.prefetch(PageId(id + 1), &heap::LEADING_LINES);
                }
                let spilled = match leaf_of {
                    Some(tree) => Spilled::of(db, view, &schema, tree, id, &bytes)?,
                    None => None,
                };
                let page = PageRows {
                    schema: &schema,
                    bytes: &bytes,
                    table_id: table.id,
                    id,
                    leaf_of,
                    spilled: spilled.as_ref(),
                    _page: PhantomData,
                };
                acc = fold(acc, page)?;
            }
        }
    };
    let holdings = txn::holdings();
    let results: Vec<Result<A>> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..threads)
            .map(|_| {
                s.spawn(|| {
                    let _acting = txn::adopt(&holdings);
                    let r = work();
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        let mut out = vec![work()];
        if out[0].is_err() {
            failed.store(true, Ordering::Relaxed);
        }
        out.extend(
            handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))),
        );
        out
    });
    let mut acc: Option<A> = None;
    for r in results {
        let a = r?;
        acc = Some(match acc {
            Some(x) => combine(x, a),
            None => a,
        });
    }
    Ok(acc.unwrap_or_else(init))
}
