//! Range scans over an index, from either end, as iterators of rows in place.
//!
//! A scan descends once per end (lazily, on the first step from that end), then walks the leaf
//! chain, holding one leaf per end: the leaf is read as the transaction sees it (a snapshot's
//! version, or the writer's own copy) and, on SE2, in place. Rows are fetched in place too
//! ([`RowGuard`]), and as an end yields one it asks the pool to prefetch the page header and
//! slot of the rows of its next entries in range ([`PREFETCH_ROWS`]); [`IndexScan::fold_rows`]
//! hands the rows to a closure instead, a clustered table's as views of the leaf the scan holds,
//! with no guard per row. The range shrinks as either end yields, so the two ends meet and stop.
//! Damage a walk can see is an error, not a shorter scan: a key that is not beyond the last one
//! its end yielded, a sibling whose link back does not lead to the leaf just left, more steps
//! than the index has pages.

use std::ops::{Bound, ControlFlow};
use std::rc::Rc;

use nvpage_buffer::PageRef;
use nvpage_storage::PageId;

use super::Index;
use super::key;
use super::node::{Node, ValueAt};
use super::spill::{self, Chain};
use super::tree::{
    Target, corrupt, descend, entry_row, find_exact, find_value, missing_row, node_of, value_copy,
};
use crate::catalog::{IndexMeta, TableMeta};
use crate::error::{Error, Result};
use crate::heap;
use crate::row::{RowRef, Value};
use crate::table::RowId;
use crate::txn::{Ctx, RowGuard, get_in};

/// Rows of an index's key range, in key order (then row id order for a non-unique index), from
/// [`ReadOps::index_range`](crate::ReadOps::index_range) or
/// [`ReadOps::lookup`](crate::ReadOps::lookup); `.rev()` walks it from the high end, and both
/// ends may be walked in turn. Each row is read in place ([`RowGuard`]); [`IndexScan::ids`]
/// gives the row ids alone, without reading the rows.
#[derive(Debug)]
pub struct IndexScan<'t> {
    ctx: Ctx<'t>,
    meta: &'t IndexMeta,
    table: &'t TableMeta,
    /// The tree that holds the rows, where `meta` is another index of a clustered table (its
    /// entries name rows by primary key).
    rows: Option<&'t IndexMeta>,
    /// What is left of the range: each end's step moves its bound past the key it yields —
    /// the front's lazily, see `lo_behind`.
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    /// The front has yielded the entry just before its cursor's, in the leaf it holds, and `lo`
    /// is not yet past that entry's key: the front's steps compare with the entry itself, and
    /// `lo` is moved (a copy of the key) only when something else reads it ([`Self::settle_lo`]):
    /// the back, or the front leaving the leaf.
    lo_behind: bool,
    front: Option<Cursor<'t>>,
    back: Option<Cursor<'t>>,
    done: bool,
    /// Leaves the two ends may still step onto: more than the index has pages means the
    /// leaves' links loop (damage).
    steps_left: u64,
}

/// One end's place: a leaf held, and the entry next to it.
#[derive(Debug)]
struct Cursor<'t> {
    page: u64,
    /// Shared with the rows of a clustered table's leaf that the scan has yielded: they read it
    /// where it is held, with no second read of the page.
    leaf: Rc<PageRef<'t>>,
    /// The front's next entry; for the back, one past its next entry.
    pos: usize,
    /// How far this leaf's rows were prefetched: the front's first entry not yet asked for, the
    /// back's last one asked for (both start at `pos`).
    ahead: usize,
}

impl<'t> Cursor<'t> {
    fn new(page: u64, leaf: PageRef<'t>, pos: usize) -> Self {
        Self { page, leaf: Rc::new(leaf), pos, ahead: pos }
    }
}

/// An entry a scan's step yields.
#[derive(Debug)]
enum Hit<'t> {
    /// A heap table's row, by id.
    Row(RowId),
    /// A clustered table's row, in the leaf held at `off..off + len`.
    InLeaf { leaf: Rc<PageRef<'t>>, off: usize, len: usize },
    /// A clustered table's row spilled to `chain` (`spill.rs`), named by the entry of `leaf`
    /// whose key is `key`.
    Spilled { chain: Chain, key: Vec<u8>, leaf: u64 },
    /// A clustered table's row by its primary key, in the index's leaf `page` (held) at
    /// `off..off + len`: the row is found in the table's tree.
    ByKey { leaf: Rc<PageRef<'t>>, page: u64, off: usize, len: usize },
}

impl Hit<'_> {
    /// The id [`IndexScan::ids`] gives for it ([`RowId::KEYED`] in a clustered table).
    fn id(self) -> RowId {
        match self {
            Hit::Row(id) => id,
            Hit::InLeaf { .. } | Hit::Spilled { .. } | Hit::ByKey { .. } => RowId::KEYED,
        }
    }
}

/// What entry `pos` of leaf `page` (read as `n`) gives: a row id, or, in a clustered table's
/// tree, where its row lies in the leaf (or the chain it was spilled to), or, in another index
/// of a clustered table, where its primary key lies.
fn hit<'t>(
    meta: &IndexMeta,
    n: &Node<'_>,
    cur: &Cursor<'t>,
    key: &[u8],
    at: ValueAt,
) -> Result<Hit<'t>> {
    let ValueAt { off, len, spilled } = at;
    if spilled {
        if !meta.clustered {
            return Err(corrupt(cur.page, "a spilled row's reference in an index of no rows"));
        }
        let chain = Chain::decode(&n.bytes()[off..off + len], cur.page)?;
        return Ok(Hit::Spilled { chain, key: key.to_vec(), leaf: cur.page });
    }
    if meta.clustered {
        return Ok(Hit::InLeaf { leaf: cur.leaf.clone(), off, len });
    }
    if meta.keyed {
        return Ok(Hit::ByKey { leaf: cur.leaf.clone(), page: cur.page, off, len });
    }
    entry_row(&n.bytes()[off..off + len], cur.page).map(Hit::Row)
}

/// Rows a scan that reads rows asks the pool to prefetch ahead of the one it yields: each is on
/// a heap page of its own when rows were not inserted in key order, and its page header and slot
/// would otherwise be two cache misses in a row (`BufferPool::prefetch`).
const PREFETCH_ROWS: usize = 8;

/// Bytes of each entry ahead that a clustered table's scan asks for: its key and the start of
/// its row, two lines (the next line comes with the second on most cores).
const PREFETCH_ENTRY_BYTES: usize = 128;

/// In a clustered table's scan, asks for the lines of the [`PREFETCH_ROWS`] entries of leaf `n`
/// ahead of an end's next one (`pos`) that it has not asked for yet (`ahead`, as a cursor keeps
/// it), and, in the call whose entries first reach the leaf's end, for the header and first
/// slots of the leaf beyond it. Rows of a leaf filled in random order lie anywhere in its page:
/// without this, each entry's first line is a miss the step waits for. Only a hint: damage is
/// left for the step that reads the entry.
fn prefetch_entries(
    db: &crate::Database,
    n: &Node<'_>,
    pos: usize,
    ahead: &mut usize,
    front: bool,
) {
    let range = if front {
        let to = (pos + PREFETCH_ROWS).min(n.len());
        let range = (*ahead).max(pos)..to;
        *ahead = (*ahead).max(to);
        range
    } else {
        let from = pos.saturating_sub(PREFETCH_ROWS);
        let range = from..(*ahead).min(pos);
        *ahead = (*ahead).min(from);
        range
    };
    let reaches_end =
        !range.is_empty() && if front { range.end == n.len() } else { range.start == 0 };
    for i in range {
        n.prefetch_entry(i, PREFETCH_ENTRY_BYTES);
    }
    if reaches_end {
        let sibling = if front { n.next() } else { n.prev() };
        if sibling != 0 {
            db.pool.prefetch(PageId(sibling), &[0, 64]);
        }
    }
}

fn above(key: &[u8], lo: &Bound<Vec<u8>>) -> bool {
    match lo {
        Bound::Included(l) => key >= l.as_slice(),
        Bound::Excluded(l) => key > l.as_slice(),
        Bound::Unbounded => true,
    }
}

fn below(key: &[u8], hi: &Bound<Vec<u8>>) -> bool {
    match hi {
        Bound::Included(h) => key <= h.as_slice(),
        Bound::Excluded(h) => key < h.as_slice(),
        Bound::Unbounded => true,
    }
}

/// Sets `bound` to exclude `key` and everything beyond it, reusing its buffer.
fn exclude(bound: &mut Bound<Vec<u8>>, key: &[u8]) {
    let mut v = match std::mem::replace(bound, Bound::Unbounded) {
        Bound::Included(v) | Bound::Excluded(v) => v,
        Bound::Unbounded => Vec::new(),
    };
    v.clear();
    v.extend_from_slice(key);
    *bound = Bound::Excluded(v);
}

/// `index`'s entry in `ctx`'s catalog (the index the handle was made for, if it exists there),
/// and its table's.
fn metas<'t>(ctx: &Ctx<'t>, index: &Index) -> Result<(&'t IndexMeta, &'t TableMeta)> {
    let meta = ctx.index_meta(index)?;
    let tmeta = ctx
        .catalog
        .table_by_id(meta.table_id)
        .ok_or_else(|| Error::UnknownTable(index.table_name().into()))?;
    Ok((meta, tmeta))
}

/// The first row whose key starts with `values`, as `ctx` sees it ([`ReadOps::get_by`]). A whole
/// key of a unique index with no NULL — in the index at most once, as its bytes alone — is
/// found by one descent and one search of the leaf ([`find_exact`]), the leaf released before
/// the row is read; any other key by a range scan's first step. The catalog's entry decides.
///
/// [`ReadOps::get_by`]: crate::ReadOps::get_by
pub(crate) fn get_by<'t>(
    ctx: Ctx<'t>,
    index: &Index,
    values: &[Value<'_>],
) -> Result<Option<RowGuard<'t>>> {
    let (meta, tmeta) = metas(&ctx, index)?;
    if !meta.unique
        || values.len() != meta.columns.len()
        || values.iter().any(|v| matches!(v, Value::Null))
    {
        let lo = Bound::Included(values);
        return IndexScan::new(ctx, index, lo, Bound::Included(values))?.next().transpose();
    }
    let k = key::encoded(&tmeta.schema, &meta.columns, values)?;
    if meta.clustered {
        return tree_row(&ctx, meta, tmeta, &k);
    }
    if meta.keyed {
        let Some((g, page, at)) = find_value(ctx.db, ctx.view, meta, &k)? else {
            return Ok(None);
        };
        let pk = g[at.off..at.off + at.len].to_vec();
        drop(g);
        return row_by_key(&ctx, meta, tmeta, rows_tree(&ctx, tmeta)?, page, &pk).map(Some);
    }
    let Some(rid) = find_exact(ctx.db, ctx.view, meta, &k)? else { return Ok(None) };
    // The row's page header and slot load while the pool finds the page.
    ctx.db.pool.prefetch(PageId(rid.page), &[0, heap::slot_offset(usize::from(rid.slot))]);
    indexed_row(&ctx, meta, tmeta, rid).map(Some)
}

/// The tree that holds clustered table `table`'s rows.
fn rows_tree<'t>(ctx: &Ctx<'t>, table: &TableMeta) -> Result<&'t IndexMeta> {
    ctx.catalog.clustered_tree(table.id).ok_or_else(|| {
        Error::CorruptCatalog(format!("clustered table {} without its tree", table.name))
    })
}

/// The row of clustered table `table` whose primary key is `pk` (encoded), found in its tree
/// `tree`, which an entry of index `meta` on leaf `page` names: no such row is damage to the
/// index.
fn row_by_key<'t>(
    ctx: &Ctx<'t>,
    meta: &IndexMeta,
    table: &'t TableMeta,
    tree: &IndexMeta,
    page: u64,
    pk: &[u8],
) -> Result<RowGuard<'t>> {
    tree_row(ctx, tree, table, pk)?.ok_or_else(|| missing_row(meta, page))
}

/// The row of clustered table `table` whose primary key is `pk` (encoded), found in its tree
/// `tree`, if it has one: in place in its leaf, or read from the chain it was spilled to.
fn tree_row<'t>(
    ctx: &Ctx<'t>,
    tree: &IndexMeta,
    table: &'t TableMeta,
    pk: &[u8],
) -> Result<Option<RowGuard<'t>>> {
    let Some((g, leaf, at)) = find_value(ctx.db, ctx.view, tree, pk)? else { return Ok(None) };
    let schema = &table.schema;
    if at.spilled {
        let row = value_copy(ctx.db, ctx.view, tree, schema, pk, &g, leaf, at)?;
        return Ok(Some(RowGuard::owned(row, schema, RowId::KEYED)));
    }
    Ok(Some(RowGuard::at(g, schema, at.off, at.len, RowId::KEYED)))
}

/// Row `id` of `table`, which index `meta` holds: not a live row is damage to the index.
fn indexed_row<'t>(
    ctx: &Ctx<'t>,
    meta: &IndexMeta,
    table: &'t TableMeta,
    id: RowId,
) -> Result<RowGuard<'t>> {
    get_in(ctx, table, id).map_err(|e| match e {
        Error::UnknownRow(id) => corrupt(
            id.page,
            format!("index {} holds row {id}, which is not a live row of its table", meta.name),
        ),
        e => e,
    })
}

impl<'t> IndexScan<'t> {
    /// Rows of `index` whose keys lie between `lo` and `hi`, each bound a tuple of values for
    /// the index's first columns (all of them or fewer: a key prefix). A bound on a prefix
    /// takes or leaves every key that starts with it: `Included(&[5])` on `(a, b)` starts at
    /// the first key with `a = 5`, `Excluded(&[5])` after the last.
    pub(crate) fn new(
        ctx: Ctx<'t>,
        index: &Index,
        lo: Bound<&[Value<'_>]>,
        hi: Bound<&[Value<'_>]>,
    ) -> Result<Self> {
        let (meta, tmeta) = metas(&ctx, index)?;
        let encode = |values: &[Value<'_>]| key::encoded(&tmeta.schema, &meta.columns, values);
        let mut done = false;
        let lo = match lo {
            Bound::Unbounded => Bound::Unbounded,
            Bound::Included(v) => Bound::Included(encode(v)?),
            // Past every key with this prefix; nothing is past the empty prefix.
            Bound::Excluded(v) => match key::successor(&encode(v)?) {
                Some(s) => Bound::Included(s),
                None => {
                    done = true;
                    Bound::Unbounded
                }
            },
        };
        let hi = match hi {
            Bound::Unbounded => Bound::Unbounded,
            Bound::Included(v) => {
                key::successor(&encode(v)?).map_or(Bound::Unbounded, Bound::Excluded)
            }
            Bound::Excluded(v) => Bound::Excluded(encode(v)?),
        };
        Ok(Self::over(ctx, meta, tmeta, lo, hi, done))
    }

    /// Rows of `index` whose key starts with the values `leading` (for its first columns, maybe
    /// none), then, in the next column (a `Char` or `VarChar`), a string that starts with
    /// `starts_with`: SQL's `LIKE 'abc%'`. A `Char` compares without its trailing blanks.
    pub(crate) fn prefixed(
        ctx: Ctx<'t>,
        index: &Index,
        leading: &[Value<'_>],
        starts_with: &str,
    ) -> Result<Self> {
        let (meta, tmeta) = metas(&ctx, index)?;
        let mut lo = key::encoded(&tmeta.schema, &meta.columns, leading)?;
        let c = meta.columns.get(leading.len()).ok_or(Error::WrongArity {
            expected: meta.columns.len().saturating_sub(1),
            found: leading.len(),
        })?;
        key::put_str_prefix(&tmeta.schema.columns()[usize::from(*c)], starts_with, &mut lo)?;
        let hi = key::successor(&lo).map_or(Bound::Unbounded, Bound::Excluded);
        Ok(Self::over(ctx, meta, tmeta, Bound::Included(lo), hi, false))
    }

    /// A scan of `meta`'s keys between the encoded bounds `lo` and `hi` (`done`: an empty range).
    fn over(
        ctx: Ctx<'t>,
        meta: &'t IndexMeta,
        table: &'t TableMeta,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        done: bool,
    ) -> Self {
        let steps_left = meta.page_count() + 1;
        let rows = if meta.keyed { ctx.catalog.clustered_tree(table.id) } else { None };
        Self {
            ctx,
            meta,
            table,
            rows,
            lo,
            hi,
            lo_behind: false,
            front: None,
            back: None,
            done,
            steps_left,
        }
    }

    /// Moves `lo` past the last key the front yielded, if it is not yet (`lo_behind`).
    fn settle_lo(&mut self) -> Result<()> {
        if !std::mem::take(&mut self.lo_behind) {
            return Ok(());
        }
        let cur = self.front.as_ref().expect("only a front that has yielded leaves lo behind");
        let n = Node::new(&cur.leaf, self.meta.id, cur.page)?;
        exclude(&mut self.lo, n.key(cur.pos - 1)?);
        Ok(())
    }

    /// The row ids alone, in the same order (no row is read).
    pub fn ids(self) -> IndexIds<'t> {
        IndexIds(self)
    }

    /// Folds the rows front to back, each read in place as a view, until `fold` returns
    /// [`ControlFlow::Break`] (a `LIMIT` met: no error) or the range ends; returns the last value
    /// `fold` gave. The same rows as the iterator's, in the same order, and the scan may go on
    /// after a break (the iterator, or another fold, takes the next row); an error, the scan's
    /// or `fold`'s, ends the fold and is returned. Where the iterator hands each row out in a
    /// guard of its own, this reads a clustered table's row where the scan holds its leaf:
    /// nothing is built or moved per row.
    ///
    /// ```
    /// use std::ops::{Bound, ControlFlow};
    /// use nvpage::{Column, ColumnType, Database, ReadOps, Schema, Storage, Value, kind};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::open(dir.path())?;
    /// let mut w = db.begin_write()?;
    /// let schema = Schema::new(vec![Column::new("k", ColumnType::I64)])?.with_primary_key(&["k"])?;
    /// let t = w.create_table_with("t", schema, Storage::Clustered)?;
    /// for k in 0..1000 {
    ///     w.insert(&t, &[Value::I64(k)])?;
    /// }
    /// w.commit()?;
    ///
    /// let (r, k) = (db.begin_read()?, t.col::<kind::I64>("k")?);
    /// let pk = r.primary_key(&t)?.expect("a clustered table has its key");
    /// let from = [Value::I64(500)];
    /// // The first ten keys from 500 on.
    /// let mut scan = r.index_range(&pk, Bound::Included(&from), Bound::Unbounded)?;
    /// let (sum, n) = scan.fold_rows((0, 0), |(sum, n), row| {
    ///     let acc = (sum + row.get(k)?, n + 1);
    ///     Ok(if n + 1 == 10 { ControlFlow::Break(acc) } else { ControlFlow::Continue(acc) })
    /// })?;
    /// assert_eq!((sum, n), ((500..510).sum::<i64>(), 10));
    /// // The scan goes on where the fold stopped.
    /// assert_eq!(scan.next().transpose()?.map(|g| g.row()?.get(k)).transpose()?, Some(510));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fold_rows<A>(
        &mut self,
        init: A,
        mut fold: impl FnMut(A, RowRef<'_>) -> Result<ControlFlow<A, A>>,
    ) -> Result<A> {
        let mut acc = init;
        loop {
            let step = self.step_front();
            let Some(hit) = self.item(step).transpose()? else { return Ok(acc) };
            self.prefetch_rows(true);
            // A clustered table's row is read where the cursor holds its leaf (the step checked
            // that the entry lies inside it); any other through its guard. `fold` is called
            // from one place, where it inlines.
            let (leaf, guard);
            let row = match hit {
                Hit::InLeaf { leaf: l, off, len } => {
                    leaf = l;
                    RowRef::new(&self.table.schema, &leaf[off..off + len], RowId::KEYED)?
                }
                hit => {
                    guard = self.row(hit)?;
                    guard.row()?
                }
            };
            match fold(acc, row)? {
                ControlFlow::Continue(a) => acc = a,
                ControlFlow::Break(a) => return Ok(a),
            }
        }
    }

    /// Reads leaf `page`, reached by a sibling link from leaf `from` (`forward`: its right
    /// link), which `page`'s link the other way must lead back to: a link to a wrong leaf
    /// (one skipped, or a loop back) is damage, not a silently shorter scan.
    fn leaf(&mut self, page: u64, from: u64, forward: bool) -> Result<PageRef<'t>> {
        self.steps_left = self
            .steps_left
            .checked_sub(1)
            .ok_or_else(|| corrupt(page, "the index's leaf links loop"))?;
        let g = self.ctx.db.pool.read(PageId(page), self.ctx.view)?;
        let n = node_of(&g, self.meta, page)?;
        if n.level() != 0 {
            return Err(corrupt(page, "a leaf's sibling is not a leaf"));
        }
        if (if forward { n.prev() } else { n.next() }) != from {
            return Err(corrupt(page, format!("its link back does not lead to leaf {from}")));
        }
        Ok(g)
    }

    /// In a clustered table's scan, the hints for a leaf `n` an end has just reached: the lines
    /// of its slots from `from`'s on (each entry's place, read before the entry can be asked
    /// for), and the state of the leaf beyond it, which [`prefetch_entries`] asks the pool for
    /// as the end nears this leaf's edge.
    fn landed(&self, n: &Node<'_>, from: usize, front: bool) {
        if self.meta.clustered {
            n.prefetch_slots(from);
            let sibling = if front { n.next() } else { n.prev() };
            if sibling != 0 {
                self.ctx.db.pool.prefetch_state(PageId(sibling));
            }
        }
    }

    /// The front's first cursor: a descent to its bound's leaf.
    #[inline(never)]
    fn start_front(&mut self) -> Result<()> {
        let target = match &self.lo {
            Bound::Included(k) | Bound::Excluded(k) => Target::Key(k),
            Bound::Unbounded => Target::Key(&[]),
        };
        let (page, leaf) = descend(self.ctx.db, self.ctx.view, self.meta, target, None)?;
        let n = Node::new(&leaf, self.meta.id, page)?;
        let pos = match &self.lo {
            Bound::Included(k) => n.search(k)?.unwrap_or_else(|i| i),
            Bound::Excluded(k) => n.search(k)?.map_or_else(|i| i, |i| i + 1),
            Bound::Unbounded => 0,
        };
        self.landed(&n, pos, true);
        self.front = Some(Cursor::new(page, leaf, pos));
        Ok(())
    }

    /// The back's first cursor: a descent to its bound's leaf.
    #[inline(never)]
    fn start_back(&mut self) -> Result<()> {
        let target = match &self.hi {
            Bound::Included(k) | Bound::Excluded(k) => Target::Key(k),
            Bound::Unbounded => Target::Last,
        };
        let (page, leaf) = descend(self.ctx.db, self.ctx.view, self.meta, target, None)?;
        let n = Node::new(&leaf, self.meta.id, page)?;
        let pos = match &self.hi {
            Bound::Included(k) => n.search(k)?.map_or_else(|i| i, |i| i + 1),
            Bound::Excluded(k) => n.search(k)?.unwrap_or_else(|i| i),
            Bound::Unbounded => n.len(),
        };
        self.landed(&n, 0, false);
        self.back = Some(Cursor::new(page, leaf, pos));
        Ok(())
    }

    /// Moves an end onto the leaf its link leads to (`forward`: the right one), if there is one;
    /// `false` at the tree's edge, which ends the scan.
    #[inline(never)]
    fn next_leaf(&mut self, forward: bool) -> Result<bool> {
        if forward {
            self.settle_lo()?;
        }
        let cur = if forward { &self.front } else { &self.back };
        let cur = cur.as_ref().expect("a cursor steps onto its sibling");
        let n = Node::new(&cur.leaf, self.meta.id, cur.page)?;
        let (from, to) = (cur.page, if forward { n.next() } else { n.prev() });
        if to == 0 {
            self.done = true;
            return Ok(false);
        }
        let leaf = self.leaf(to, from, forward)?;
        let n = Node::new(&leaf, self.meta.id, to)?;
        self.landed(&n, 0, forward);
        let pos = if forward { 0 } else { n.len() };
        let cur = Cursor::new(to, leaf, pos);
        if forward {
            self.front = Some(cur);
        } else {
            self.back = Some(cur);
        }
        Ok(true)
    }

    // The steps are inlined into the iterators: a step's result moved through the stack between
    // calls was stored in parts and loaded whole, store-forwarding stalls that cost more than
    // the step (perf annotate).
    #[inline(always)]
    fn step_front(&mut self) -> Result<Option<Hit<'t>>> {
        if self.done {
            return Ok(None);
        }
        if self.front.is_none() {
            self.start_front()?;
        }
        loop {
            let cur = self.front.as_mut().expect("set above");
            let n = Node::new(&cur.leaf, self.meta.id, cur.page)?;
            if cur.pos < n.len() {
                let (key, place) = n.entry_at(cur.pos)?;
                // Keys ahead of the front are above its bound (or the key it yielded last) in
                // a sound tree; beyond the other bound is where the range (or the back's walk)
                // ends.
                let ahead =
                    if self.lo_behind { key > n.key(cur.pos - 1)? } else { above(key, &self.lo) };
                if !ahead {
                    return Err(corrupt(cur.page, "leaf keys out of order"));
                }
                if !below(key, &self.hi) {
                    self.done = true;
                    return Ok(None);
                }
                cur.pos += 1;
                if self.meta.clustered {
                    prefetch_entries(self.ctx.db, &n, cur.pos, &mut cur.ahead, true);
                }
                let hit = hit(self.meta, &n, cur, key, place)?;
                self.lo_behind = true;
                return Ok(Some(hit));
            }
            if !self.next_leaf(true)? {
                return Ok(None);
            }
        }
    }

    #[inline(always)]
    fn step_back(&mut self) -> Result<Option<Hit<'t>>> {
        if self.done {
            return Ok(None);
        }
        self.settle_lo()?;
        if self.back.is_none() {
            self.start_back()?;
        }
        loop {
            let cur = self.back.as_mut().expect("set above");
            let n = Node::new(&cur.leaf, self.meta.id, cur.page)?;
            if cur.pos > 0 {
                let (key, place) = n.entry_at(cur.pos - 1)?;
                if !below(key, &self.hi) {
                    return Err(corrupt(cur.page, "leaf keys out of order"));
                }
                if !above(key, &self.lo) {
                    self.done = true;
                    return Ok(None);
                }
                cur.pos -= 1;
                if self.meta.clustered {
                    prefetch_entries(self.ctx.db, &n, cur.pos, &mut cur.ahead, false);
                }
                let hit = hit(self.meta, &n, cur, key, place)?;
                exclude(&mut self.hi, key);
                return Ok(Some(hit));
            }
            if !self.next_leaf(false)? {
                return Ok(None);
            }
        }
    }

    /// Asks the pool to prefetch the page header and slot of the rows of the next
    /// [`PREFETCH_ROWS`] entries of one end's leaf that it has not asked for yet. Only a hint:
    /// damage it meets is left for the step that reads the entry to report.
    fn prefetch_rows(&mut self, front: bool) {
        let (db, id) = (self.ctx.db, self.meta.id);
        if self.meta.clustered || self.meta.keyed {
            // The rows are the leaf's entries, asked for as the step reads the leaf (or, named
            // by primary key, found by a descent of their own).
            return;
        }
        // The back's step settled `lo`; the front's reads `hi` alone.
        debug_assert!(front || !self.lo_behind);
        let Some(cur) = (if front { self.front.as_mut() } else { self.back.as_mut() }) else {
            return;
        };
        let Ok(n) = Node::new(&cur.leaf, id, cur.page) else { return };
        let range = if front {
            let to = (cur.pos + PREFETCH_ROWS).min(n.len());
            let range = cur.ahead.max(cur.pos)..to;
            cur.ahead = cur.ahead.max(to);
            range
        } else {
            let from = cur.pos.saturating_sub(PREFETCH_ROWS);
            let range = from..cur.ahead.min(cur.pos);
            cur.ahead = cur.ahead.min(from);
            range
        };
        let in_range = |i: usize| {
            n.key(i).is_ok_and(|k| if front { below(k, &self.hi) } else { above(k, &self.lo) })
        };
        let mut ask = |i: usize| {
            if let Some(rid) = n.value(i).ok().and_then(key::row_id) {
                db.pool.prefetch(PageId(rid.page), &[0, heap::slot_offset(usize::from(rid.slot))]);
            }
        };
        // Only entries the scan will yield: a point lookup's range ends at its key.
        if front {
            range.take_while(|&i| in_range(i)).for_each(&mut ask);
        } else {
            range.rev().take_while(|&i| in_range(i)).for_each(&mut ask);
        }
    }

    /// An end's step as an iterator's item: an error ends the scan.
    #[inline(always)]
    fn item(&mut self, step: Result<Option<Hit<'t>>>) -> Option<Result<Hit<'t>>> {
        match step {
            Ok(r) => r.map(Ok),
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }

    #[inline(always)]
    fn row(&self, hit: Hit<'t>) -> Result<RowGuard<'t>> {
        match hit {
            Hit::Row(id) => indexed_row(&self.ctx, self.meta, self.table, id),
            Hit::InLeaf { leaf, off, len } => {
                Ok(RowGuard::in_leaf(leaf, &self.table.schema, off, len))
            }
            Hit::Spilled { chain, key, leaf } => {
                let (mut row, schema) = (Vec::new(), &self.table.schema);
                let (db, view, tree) = (self.ctx.db, self.ctx.view, self.meta.id);
                spill::read_row(db, view, tree, chain, schema, &key, leaf, &mut row)?;
                Ok(RowGuard::owned(row, &self.table.schema, RowId::KEYED))
            }
            Hit::ByKey { leaf, page, off, len } => {
                let tree = match self.rows {
                    Some(tree) => tree,
                    None => rows_tree(&self.ctx, self.table)?,
                };
                row_by_key(&self.ctx, self.meta, self.table, tree, page, &leaf[off..off + len])
            }
        }
    }
}

impl<'t> Iterator for IndexScan<'t> {
    type Item = Result<RowGuard<'t>>;

    // Inlined into the caller's loop: a row guard handed back through the stack was stored in
    // parts and loaded whole, a store-forwarding stall per row (perf annotate).
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let step = self.step_front();
        let hit = self.item(step)?;
        self.prefetch_rows(true);
        Some(hit.and_then(|hit| self.row(hit)))
    }
}

impl DoubleEndedIterator for IndexScan<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let step = self.step_back();
        let hit = self.item(step)?;
        self.prefetch_rows(false);
        Some(hit.and_then(|hit| self.row(hit)))
    }
}

/// The row ids of an [`IndexScan`], from [`IndexScan::ids`].
#[derive(Debug)]
pub struct IndexIds<'t>(IndexScan<'t>);

impl Iterator for IndexIds<'_> {
    type Item = Result<RowId>;

    fn next(&mut self) -> Option<Self::Item> {
        let step = self.0.step_front();
        self.0.item(step).map(|hit| hit.map(Hit::id))
    }
}

impl DoubleEndedIterator for IndexIds<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let step = self.0.step_back();
        self.0.item(step).map(|hit| hit.map(Hit::id))
    }
}
