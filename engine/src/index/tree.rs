//! The B+tree: descents (readers and the writer), and the writer's insert, remove and bulk build.
//!
//! Nodes are pages of the buffer manager (`node.rs`), changed like heap pages: the writer's
//! private copies, logged by the write-back hook and forced at commit, so a split or a freed page
//! needs nothing new from the log, abort or recovery. Readers descend through their snapshot's
//! versions of the pages (SE2: in place, no copy).
//!
//! Shape: a split moves the upper half of a full node (by bytes) into a new right sibling and
//! adds a separator to the parent (a new root above a split root). A leaf's separator is the
//! shortest prefix of its first key above the left leaf's last key. A remove that empties a leaf
//! unlinks it from its siblings and from its parent (an inner node left empty goes too), and a
//! root with one child gives way to the child; emptied pages are freed and reused once no
//! snapshot reads them (R6). Half-empty nodes are not merged (as PostgreSQL's nbtree): every
//! leaf stays at the same depth whatever the sequence of inserts and removes, and space comes
//! back page by page as leaves empty.
//!
//! A clustered table's row too long for a leaf entry is spilled to a chain of the tree's own
//! pages (`spill.rs`), which goes when its entry is replaced or removed.
//!
//! One irregularity is allowed: entry 0 of an inner node routes every key below entry 1's, so
//! its own key may be above some keys it routes (after the entry before it was removed). Searches
//! never depend on it, and a split places the new entry by its position, not its key.

use nvpage_buffer::{BufferPool, PageMut, PageRef, View};
use nvpage_storage::PageId;

use super::key;
use super::node::{self, LeafValues, Node, ValueAt};
use super::spill::{self, Chain};
use crate::catalog::{self, Catalog, IndexMeta};
use crate::db::Database;
use crate::error::{Error, Result};
use crate::schema::Schema;
use crate::table::RowId;

/// A damaged index page.
pub(crate) fn corrupt(page: u64, reason: impl Into<String>) -> Error {
    Error::CorruptPage { page, reason: reason.into() }
}

/// Where a descent goes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Target<'k> {
    /// The leaf where this key is, or would be.
    Key(&'k [u8]),
    /// The last leaf.
    Last,
}

/// `bytes` (page `page`) as a node of `meta`'s tree: [`Node::new`]'s checks, and that it holds
/// what the tree's nodes hold (a leaf of row ids in a clustered table's tree would have its
/// values read as rows, and a row written into it as a row id).
#[inline(always)]
pub(crate) fn node_of<'p>(bytes: &'p [u8], meta: &IndexMeta, page: u64) -> Result<Node<'p>> {
    let n = Node::new(bytes, meta.id, page)?;
    if n.values() != meta.leaf_values() {
        return Err(wrong_values(n.values(), meta.leaf_values(), page));
    }
    Ok(n)
}

/// [`node_of`]'s error, out of the way of the descent it is checked in.
#[cold]
#[inline(never)]
fn wrong_values(found: LeafValues, wanted: LeafValues, page: u64) -> Error {
    let what = |v| if v == LeafValues::Sized { "sized values" } else { "row ids" };
    corrupt(page, format!("a node of {} in a tree of {}", what(found), what(wanted)))
}

/// Descends from `meta`'s root to the leaf of `target`, reading pages as `view` sees them, and
/// returns the leaf (read, checked); `path`, if given, gets each inner node passed and the entry
/// followed (a lookup passes none, and allocates nothing).
pub(crate) fn descend<'a>(
    db: &'a Database,
    view: View,
    meta: &IndexMeta,
    target: Target<'_>,
    mut path: Option<&mut Vec<(u64, usize)>>,
) -> Result<(u64, PageRef<'a>)> {
    let mut page = meta.root;
    let mut above: Option<u8> = None;
    loop {
        let g = db.pool.read(PageId(page), view)?;
        let n = node_of(&g, meta, page)?;
        // Levels fall by one at each step, so the descent ends; checked, so that a damaged
        // level byte of 255 is an error, not an overflow.
        if above.is_some_and(|l| n.level().checked_add(1) != Some(l)) {
            return Err(corrupt(page, "a child not one level below its parent"));
        }
        if n.level() == 0 {
            return Ok((page, g));
        }
        if n.len() == 0 {
            return Err(corrupt(page, "an inner node without entries"));
        }
        let i = match target {
            Target::Key(k) => n.child_for(k)?,
            Target::Last => n.len() - 1,
        };
        if let Some(path) = path.as_deref_mut() {
            path.push((page, i));
        }
        above = Some(n.level());
        page = n.child(i)?;
        // The child's header loads while this node is released and the child found.
        db.pool.prefetch(PageId(page), &[0]);
    }
}

/// The tree's leaves in key order, as `view` sees it, found from the inner nodes alone (a
/// clustered table's pages, for its scans). Each inner child must be one level below its
/// parent, so a damaged link cannot loop. The leaves themselves are not read: the children of
/// level 1 are taken as leaves, and the scan that reads each checks it is one (reading them
/// here too was a second pass over every leaf of the table, a tenth of a scan's time).
pub(crate) fn leaves(pool: &BufferPool, view: View, meta: &IndexMeta) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    // (node, the level its parent expects it at), children pushed in reverse so that they
    // come off the stack in key order.
    let mut stack: Vec<(u64, Option<u8>)> = vec![(meta.root, None)];
    let mut children = Vec::new();
    while let Some((page, expect)) = stack.pop() {
        let g = pool.read(PageId(page), view)?;
        let n = Node::new(&g, meta.id, page)?;
        if expect.is_some_and(|l| n.level() != l) {
            return Err(corrupt(page, "a child not one level below its parent"));
        }
        if n.level() == 0 {
            out.push(page);
            continue;
        }
        if n.level() == 1 {
            for i in 0..n.len() {
                out.push(n.child(i)?);
            }
            if out.len() + stack.len() > usize::try_from(meta.page_count()).unwrap_or(usize::MAX) {
                return Err(corrupt(page, "more nodes than the index has pages"));
            }
            continue;
        }
        children.clear();
        for i in 0..n.len() {
            children.push(n.child(i)?);
        }
        let below = n.level() - 1;
        stack.extend(children.iter().rev().map(|&c| (c, Some(below))));
        if out.len() + stack.len() > usize::try_from(meta.page_count()).unwrap_or(usize::MAX) {
            return Err(corrupt(page, "more nodes than the index has pages"));
        }
    }
    Ok(out)
}

/// The leaf that holds `key` exactly, as `view` sees the tree, its page, and where the entry's
/// value lies in it, if the tree has the key: a clustered table's row (or its chain's reference,
/// where the row is spilled).
pub(crate) fn find_value<'a>(
    db: &'a Database,
    view: View,
    meta: &IndexMeta,
    key: &[u8],
) -> Result<Option<(PageRef<'a>, u64, ValueAt)>> {
    let (leaf, g) = descend(db, view, meta, Target::Key(key), None)?;
    let n = Node::new(&g, meta.id, leaf)?;
    let at = match n.search(key)? {
        Ok(i) => n.entry_at(i)?.1,
        Err(_) => return Ok(None),
    };
    Ok(Some((g, leaf, at)))
}

/// A copy of the value in `page` at `at` (of leaf `leaf` of tree `meta`, the entry whose key
/// is `key`), a spilled row (of `schema`) read whole from its chain as `view` sees it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn value_copy(
    db: &Database,
    view: View,
    meta: &IndexMeta,
    schema: &Schema,
    key: &[u8],
    page: &[u8],
    leaf: u64,
    at: ValueAt,
) -> Result<Vec<u8>> {
    let value = &page[at.off..at.off + at.len];
    if !at.spilled {
        return Ok(value.to_vec());
    }
    let mut out = Vec::new();
    let chain = Chain::decode(value, leaf)?;
    spill::read_row(db, view, meta.id, chain, schema, key, leaf, &mut out)?;
    Ok(out)
}

/// The damage of an entry of `index` (on leaf `page`) that names a row by a primary key its
/// clustered table's tree lacks.
#[cold]
pub(crate) fn missing_row(index: &IndexMeta, page: u64) -> Error {
    corrupt(
        page,
        format!("index {} holds a primary key that is no live row of its table", index.name),
    )
}

/// The row id of the entry whose key is exactly `key`, if any, as `view` sees the tree: for a
/// whole key of a unique index with no NULL, which is in it at most once, as its bytes alone.
pub(crate) fn find_exact(
    db: &Database,
    view: View,
    meta: &IndexMeta,
    key: &[u8],
) -> Result<Option<RowId>> {
    let (leaf, g) = descend(db, view, meta, Target::Key(key), None)?;
    let n = Node::new(&g, meta.id, leaf)?;
    match n.search(key)? {
        Ok(i) => entry_row(n.value(i)?, leaf).map(Some),
        Err(_) => Ok(None),
    }
}

/// The shortest key `s` with `left < s <= right` (for `left < right`): a leaf's separator.
pub(crate) fn separator(left: &[u8], right: &[u8]) -> Vec<u8> {
    let common = node::common_prefix(left, right);
    right[..(common + 1).min(right.len())].to_vec()
}

/// The row id a leaf entry's value holds.
pub(crate) fn entry_row(value: &[u8], page: u64) -> Result<RowId> {
    key::row_id(value).ok_or_else(|| corrupt(page, "a leaf entry without a row id"))
}

/// Where a value of `len` bytes, not a spilled row's reference, can replace entry `i`'s of leaf
/// `n` in place (an update of a clustered table's row that changes no length): the offset of
/// its bytes, if the entry's value is as long and is no spilled row's reference either.
fn same_place(n: &Node<'_>, i: usize, len: usize) -> Result<Option<usize>> {
    let (_, at) = n.entry_at(i)?;
    Ok((!at.spilled && at.len == len).then_some(at.off))
}

/// What [`TreeWriter::put`] does where the key has an entry, and where it has none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A new entry: one the key has already is damage (a unique key is checked first, a
    /// non-unique one ends with its row id).
    New,
    /// A new entry, unless the key has one: then nothing changes.
    NewUnlessHeld,
    /// The key's entry, replaced: none is damage.
    Replace,
    /// The key's entry replaced, or a new one.
    Upsert,
}

/// What [`TreeWriter::put`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Put {
    /// Added an entry.
    Added,
    /// Replaced the key's entry.
    Replaced,
    /// Nothing: the key has an entry ([`Mode::NewUnlessHeld`]).
    Held,
}

/// The writer's operations on one index of its private catalog (`cat.indexes[ix]`).
#[derive(Debug)]
pub(crate) struct TreeWriter<'a, 'c> {
    pub(crate) db: &'a Database,
    pub(crate) cat: &'c mut Catalog,
    pub(crate) ix: usize,
    /// The commit the transaction will be (pages it frees wait for snapshots older than it).
    pub(crate) pending: u64,
}

impl<'a> TreeWriter<'a, '_> {
    fn meta(&self) -> &IndexMeta {
        &self.cat.indexes[self.ix]
    }

    fn meta_mut(&mut self) -> &mut IndexMeta {
        &mut self.cat.indexes[self.ix]
    }

    /// Page `page` to change: a node of this index whose every entry lies inside it (the
    /// changes in `node.rs` rely on that). Its entries are checked once per copy the writer
    /// makes of the page: the changes in `node.rs` keep a sound node sound, and nothing else
    /// stores into the writer's copy (a load of 1,000 rows with two indexes spent a tenth of
    /// its time checking the same leaves again at every insert).
    fn write(&self, page: u64) -> Result<PageMut<'a>> {
        let db = self.db;
        let mut g = db.pool.write(PageId(page))?;
        let n = node_of(&g, self.meta(), page)?;
        if !g.verified() {
            n.check_entries()?;
            g.set_verified();
        }
        Ok(g)
    }

    /// A page for the tree, formatted as an empty node at `level`: one it freed before that no
    /// snapshot reads any more, else the next page of its extents.
    pub(crate) fn alloc(&mut self, level: u8) -> Result<(u64, PageMut<'a>)> {
        let (page, mut g) = self.alloc_page()?;
        let x = self.meta();
        node::init(&mut g, x.id, level, x.leaf_values());
        Ok((page, g))
    }

    /// A page for the tree, zeroed (see [`TreeWriter::alloc`]).
    fn alloc_page(&mut self) -> Result<(u64, PageMut<'a>)> {
        let db = self.db;
        let Catalog { indexes, free, .. } = &mut *self.cat;
        let x = &mut indexes[self.ix];
        let page = match x.free_pages.pop() {
            Some(p) => p,
            None => catalog::next_page(&mut x.extents, &mut x.used_in_last, free, |len| {
                let start = db.pool.file().page_count();
                db.pool.grow(start + u64::from(len))?;
                Ok(start)
            })?,
        };
        Ok((page, db.pool.new_page(PageId(page))?))
    }

    /// Writes `row` into a new chain of the tree's pages (see `spill.rs`), the last page first
    /// so that each names the next; returns the chain.
    pub(crate) fn spill(&mut self, row: &[u8]) -> Result<Chain> {
        let (id, cap) = (self.meta().id, spill::capacity(self.db.page_size()));
        let mut next = 0;
        for piece in row.chunks(cap).rev() {
            let (page, mut g) = self.alloc_page()?;
            spill::init(&mut g, id, next, piece);
            next = page;
        }
        Ok(Chain { len: row.len(), first: next })
    }

    /// Lets the pages of the chain a spilled entry of leaf `leaf` names (its value) go.
    fn release_entry_chain(&mut self, leaf: u64, value: &[u8]) -> Result<()> {
        self.release_chain(Chain::decode(value, leaf)?)
    }

    /// Lets the pages of `chain` go, as the tree's own pages go ([`TreeWriter::release`]).
    pub(crate) fn release_chain(&mut self, chain: Chain) -> Result<()> {
        let mut pages = Vec::with_capacity(chain.pages(self.db.page_size()));
        spill::walk(self.db, View::Writer, self.meta().id, chain, |p, _| pages.push(p))?;
        for p in pages {
            self.release(p);
        }
        Ok(())
    }

    /// Lets `page` go: free once no snapshot older than this transaction's commit is live; at
    /// once if this transaction took it for the tree (no snapshot can read it), so that a row
    /// rewritten again and again in one transaction reuses one overflow page rather than taking
    /// a page for every rewrite until the commit.
    fn release(&mut self, page: u64) {
        let (id, pending) = (self.meta().id, self.pending);
        // The tree as the last commit left it, which the writer began from (it holds the lock).
        let committed = self.db.snapshots.current();
        let ours = match committed.catalog.indexes.iter().find(|x| x.id == id) {
            Some(x) => !x.holds(page),
            // Created by this transaction.
            None => true,
        };
        let m = self.meta_mut();
        if ours {
            m.free_pages.push(page);
        } else {
            m.pending_free_pages.push((pending, page));
        }
    }

    /// Adds `key` → `value` (a row id's bytes, or a sized value where the tree's leaves hold
    /// them). The key must not be in the tree: finding it is damage.
    pub(crate) fn insert_value(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put(key, value, Mode::New).map(drop)
    }

    /// Puts `key` → `value` in its leaf as `mode` says, splitting the leaf if it is full: a new
    /// entry, or in place of the entry the key has (sized values: a clustered table's row, in
    /// place where the leaf has room). One descent finds the leaf and whether the
    /// key is in it; where `mode` leaves the tree as it is ([`Put::Held`]), no page is written.
    pub(crate) fn put(&mut self, key: &[u8], value: &[u8], mode: Mode) -> Result<Put> {
        self.put_entry(key, value, false, mode)
    }

    /// Replaces `key`'s value in place in leaf `leaf` with `value`, as [`TreeWriter::put`] with
    /// [`Mode::Replace`] would where the old value is as long and neither is a spilled row's
    /// reference: `true` if it did; `false`, with nothing written, where the value does not fit
    /// in place (then the caller puts it). Spares the descent a put makes to find the leaf again.
    ///
    /// `leaf` must be the leaf the caller's own statement found `key` in, with no page of the
    /// tree changed since: a leaf freed meanwhile could still hold the key. The checks here (a
    /// node of this tree at level 0 whose search finds `key`; a page of another index is an
    /// error) guard against a caller's mistake, not against a stale leaf; debug builds check
    /// that a descent to `key` ends at `leaf`.
    pub(crate) fn replace_in(&mut self, leaf: u64, key: &[u8], value: &[u8]) -> Result<bool> {
        // The caller's promise, checked where the tests run: a descent to `key` now ends at
        // `leaf` (a write between the find and this call would break it without a trace).
        #[cfg(debug_assertions)]
        {
            let (now, _) = descend(self.db, View::Writer, self.meta(), Target::Key(key), None)?;
            debug_assert_eq!(now, leaf, "a stale leaf for key {key:?}");
        }
        let off = {
            let g = self.db.pool.read(PageId(leaf), View::Writer)?;
            let n = node_of(&g, self.meta(), leaf)?;
            if n.level() != 0 {
                return Ok(false);
            }
            let Ok(i) = n.search(key)? else { return Ok(false) };
            let Some(off) = same_place(&n, i, value.len())? else { return Ok(false) };
            off
        };
        self.overwrite(leaf, off, value)?;
        Ok(true)
    }

    /// Writes `value` over the value at `off` of leaf `leaf`, which [`same_place`] found in the
    /// page as the writer read it: the writer's copy is that page (nothing wrote it since), and
    /// overwriting the value changes nothing else of the node (no removal, insertion or
    /// compaction).
    fn overwrite(&mut self, leaf: u64, off: usize, value: &[u8]) -> Result<()> {
        self.write(leaf)?[off..off + value.len()].copy_from_slice(value);
        Ok(())
    }

    /// [`TreeWriter::put`] of a value that is a spilled row's chain reference where `spilled`
    /// ([`TreeWriter::spill`]). A replaced entry's own chain, if it had one, is released.
    pub(crate) fn put_entry(
        &mut self,
        key: &[u8],
        value: &[u8],
        spilled: bool,
        mode: Mode,
    ) -> Result<Put> {
        let mut path = Vec::new();
        let (leaf, g) =
            descend(self.db, View::Writer, self.meta(), Target::Key(key), Some(&mut path))?;
        let n = Node::new(&g, self.meta().id, leaf)?;
        let found = n.search(key)?;
        // The chain of a spilled entry this put replaces.
        let old_chain = match (found, mode) {
            (Ok(i), Mode::Replace | Mode::Upsert) if n.spilled(i)? => Some(n.value(i)?.to_vec()),
            _ => None,
        };
        let in_place = match (found, mode) {
            (Ok(i), Mode::Replace | Mode::Upsert) if !spilled => same_place(&n, i, value.len())?,
            _ => None,
        };
        drop(g);
        if let Some(off) = in_place {
            self.overwrite(leaf, off, value)?;
            return Ok(Put::Replaced);
        }
        let (pos, outcome) = match (found, mode) {
            (Ok(_), Mode::NewUnlessHeld) => return Ok(Put::Held),
            (Ok(_), Mode::New) => return Err(corrupt(leaf, "an index entry added twice")),
            (Err(_), Mode::Replace) => return Err(corrupt(leaf, "an entry to replace is missing")),
            (Ok(pos), Mode::Replace | Mode::Upsert) => (pos, Put::Replaced),
            (Err(pos), Mode::New | Mode::NewUnlessHeld | Mode::Upsert) => (pos, Put::Added),
        };
        // The writer's copy is the page the descent read (nothing wrote it since): `pos` holds.
        let fitted = {
            let mut g = self.write(leaf)?;
            if outcome == Put::Replaced {
                node::remove_at(&mut g, pos);
            }
            node::insert_entry(&mut g, pos, key, value, spilled)
        };
        if !fitted {
            let (sep, right) = self.split_leaf(leaf, key, value, spilled)?;
            self.insert_above(path, sep, right)?;
        }
        if let Some(old) = old_chain {
            self.release_entry_chain(leaf, &old)?;
        }
        if outcome == Put::Added {
            self.meta_mut().entries += 1;
        }
        Ok(outcome)
    }

    /// Splits full leaf `leaf` and adds the entry to the half it belongs in; returns the new
    /// right leaf and its separator.
    ///
    /// An entry past the last of the last leaf (keys arriving in ascending order: a load in
    /// key order) leaves the full leaf as it is and starts the new one, so that such a load
    /// fills its leaves rather than leaving each half empty.
    fn split_leaf(
        &mut self,
        leaf: u64,
        key: &[u8],
        value: &[u8],
        spilled: bool,
    ) -> Result<(Vec<u8>, u64)> {
        let id = self.meta().id;
        let (right, mut rg) = self.alloc(0)?;
        let mut lg = self.write(leaf)?;
        let l = Node::new(&lg, id, leaf)?;
        if l.next() == 0 && l.len() >= 2 && l.search(key)? == Err(l.len()) {
            let sep = separator(l.key(l.len() - 1)?, key);
            node::set_prev(&mut rg, leaf);
            node::set_next(&mut lg, right);
            if !node::insert_entry(&mut rg, 0, key, value, spilled) {
                return Err(corrupt(right, "no room for one entry in a new leaf"));
            }
            return Ok((sep, right));
        }
        node::split(&mut lg, &mut rg).ok_or_else(|| corrupt(leaf, "a full node of one entry"))?;
        let (l, r) = (Node::new(&lg, id, leaf)?, Node::new(&rg, id, right)?);
        let sep = separator(l.key(l.len() - 1)?, r.key(0)?);
        let next = l.next();
        node::set_prev(&mut rg, leaf);
        node::set_next(&mut rg, next);
        node::set_next(&mut lg, right);
        let (g, page) = if key >= sep.as_slice() { (&mut rg, right) } else { (&mut lg, leaf) };
        let pos = Node::new(g, id, page)?
            .search(key)?
            .err()
            .ok_or_else(|| corrupt(page, "an index entry added twice"))?;
        if !node::insert_entry(g, pos, key, value, spilled) {
            return Err(corrupt(page, "no room in half a split node"));
        }
        drop((lg, rg));
        if next != 0 {
            let mut g = self.write(next)?;
            node::set_prev(&mut g, right);
        }
        Ok((sep, right))
    }

    /// Adds separator `sep` → `right` above the node split last, up `path` (the inner nodes
    /// from the root down and the entry followed in each), splitting full nodes on the way and
    /// the root last.
    fn insert_above(
        &mut self,
        mut path: Vec<(u64, usize)>,
        mut sep: Vec<u8>,
        mut right: u64,
    ) -> Result<()> {
        let id = self.meta().id;
        while let Some((page, followed)) = path.pop() {
            let child = right.to_le_bytes();
            let pos = followed + 1;
            let mut g = self.write(page)?;
            let n = Node::new(&g, id, page)?;
            let level = n.level();
            if pos > n.len() {
                return Err(corrupt(page, "a descent's entry past the node"));
            }
            if node::insert_at(&mut g, pos, &sep, &child) {
                return Ok(());
            }
            drop(g);
            // By position, not key: entry 0's key may be above the keys it routes.
            let (new_right, mut rg) = self.alloc(level)?;
            let mut lg = self.write(page)?;
            let mid = node::split(&mut lg, &mut rg)
                .ok_or_else(|| corrupt(page, "a full node of one entry"))?;
            let up = Node::new(&rg, id, new_right)?.key(0)?.to_vec();
            let fitted = if pos <= mid {
                node::insert_at(&mut lg, pos, &sep, &child)
            } else {
                node::insert_at(&mut rg, pos - mid, &sep, &child)
            };
            if !fitted {
                return Err(corrupt(page, "no room in half a split node"));
            }
            sep = up;
            right = new_right;
        }
        let old = self.meta().root;
        let level = {
            let g = self.db.pool.read(PageId(old), View::Writer)?;
            Node::new(&g, id, old)?.level()
        };
        let level = level.checked_add(1).ok_or_else(|| corrupt(old, "a tree 256 levels deep"))?;
        let (root, mut g) = self.alloc(level)?;
        let fitted = node::insert_at(&mut g, 0, &[], &old.to_le_bytes())
            && node::insert_at(&mut g, 1, &sep, &right.to_le_bytes());
        if !fitted {
            return Err(corrupt(root, "no room in a new root"));
        }
        self.meta_mut().root = root;
        Ok(())
    }

    /// Removes `key`'s entry (and releases its chain, where its row is spilled); a missing entry
    /// is damage.
    pub(crate) fn remove(&mut self, key: &[u8]) -> Result<()> {
        let id = self.meta().id;
        let mut path = Vec::new();
        let (leaf, g) =
            descend(self.db, View::Writer, self.meta(), Target::Key(key), Some(&mut path))?;
        drop(g);
        let (emptied, prev, next, chain) = {
            let mut g = self.write(leaf)?;
            let n = Node::new(&g, id, leaf)?;
            let pos =
                n.search(key)?.map_err(|_| corrupt(leaf, "an index entry to remove is missing"))?;
            let chain = if n.spilled(pos)? { Some(n.value(pos)?.to_vec()) } else { None };
            let found = (n.len() == 1, n.prev(), n.next(), chain);
            node::remove_at(&mut g, pos);
            found
        };
        if let Some(chain) = chain {
            self.release_entry_chain(leaf, &chain)?;
        }
        let m = self.meta_mut();
        m.entries = m.entries.saturating_sub(1);
        if !emptied || path.is_empty() {
            return Ok(());
        }
        // The leaf emptied: unlink it, then take it out of its parent (and an inner node that
        // empties out of its own), then let a root with one child give way to it.
        if prev != 0 {
            node::set_next(&mut self.write(prev)?, next);
        }
        if next != 0 {
            node::set_prev(&mut self.write(next)?, prev);
        }
        self.release(leaf);
        while let Some((page, followed)) = path.pop() {
            let mut g = self.write(page)?;
            let len = Node::new(&g, id, page)?.len();
            if followed >= len {
                return Err(corrupt(page, "a descent's entry past the node"));
            }
            node::remove_at(&mut g, followed);
            if len > 1 {
                break;
            }
            if path.is_empty() {
                // The root emptied (it cannot, as roots keep two entries; an empty tree is a
                // leaf all the same).
                node::init(&mut g, id, 0, self.meta().leaf_values());
                return Ok(());
            }
            drop(g);
            self.release(page);
        }
        // The root's one entry left may be one this descent did not follow: its child is
        // checked to be a level below (else a damaged link back up would loop here forever).
        let mut above: Option<u8> = None;
        loop {
            let root = self.meta().root;
            let child = {
                let g = self.db.pool.read(PageId(root), View::Writer)?;
                let n = Node::new(&g, id, root)?;
                if above.is_some_and(|l| n.level().checked_add(1) != Some(l)) {
                    return Err(corrupt(root, "a child not one level below its parent"));
                }
                if n.level() == 0 || n.len() != 1 {
                    return Ok(());
                }
                above = Some(n.level());
                n.child(0)?
            };
            self.release(root);
            self.meta_mut().root = child;
        }
    }

    /// Fills the tree, which must be one empty leaf, with `entries` (in key order, keys
    /// distinct), each a key and its value (a row id's bytes, or a sized value where the tree's
    /// leaves hold them), bottom up: see [`Build`].
    pub(crate) fn build<'k>(
        &mut self,
        entries: impl Iterator<Item = (&'k [u8], &'k [u8])>,
    ) -> Result<()> {
        let mut b = self.build_start()?;
        for (k, v) in entries {
            self.build_push_value(&mut b, k, v)?;
        }
        self.build_finish(b)
    }

    /// Starts a bulk build into the tree, which must be one empty leaf.
    pub(crate) fn build_start(&mut self) -> Result<Build<'a>> {
        let first = self.meta().root;
        let leaf = self.write(first)?;
        if Node::new(&leaf, self.meta().id, first)?.len() != 0 {
            return Err(corrupt(first, "a bulk build into a tree that is not empty"));
        }
        Ok(Build {
            budget: (self.db.page_size() - node::SLOTS_OFFSET) * 9 / 10,
            nodes: vec![(Vec::new(), first)],
            leaf: (first, leaf),
            used: 0,
            count: 0,
            total: 0,
            last: Vec::new(),
        })
    }

    /// Adds the next entry of a bulk build: its key must be above every key added before (the
    /// caller's promise; the build does not sort).
    pub(crate) fn build_push(&mut self, b: &mut Build<'a>, k: &[u8], rid: RowId) -> Result<()> {
        self.build_push_value(b, k, &key::row_id_bytes(rid))
    }

    /// [`Self::build_push`] with the entry's value as bytes (a row id's, or a sized value where
    /// the tree's leaves hold them).
    pub(crate) fn build_push_value(
        &mut self,
        b: &mut Build<'a>,
        k: &[u8],
        value: &[u8],
    ) -> Result<()> {
        let values = self.meta().leaf_values();
        if !values.fits(0, value.len()) {
            return Err(corrupt(b.leaf.0, "a bulk build's value of the wrong length"));
        }
        let cost =
            node::entry_cost(k.len(), 0) - node::value_len(0) + values.stored(0, value.len());
        if b.count > 0 && b.used + cost > b.budget {
            let (page, mut g) = self.alloc(0)?;
            node::set_next(&mut b.leaf.1, page);
            node::set_prev(&mut g, b.leaf.0);
            b.nodes.push((separator(&b.last, k), page));
            b.leaf = (page, g);
            (b.used, b.count) = (0, 0);
        }
        if !node::insert_at(&mut b.leaf.1, b.count, k, value) {
            return Err(corrupt(b.leaf.0, "no room for an entry in a new leaf"));
        }
        (b.used, b.count, b.total) = (b.used + cost, b.count + 1, b.total + 1);
        b.last.clear();
        b.last.extend_from_slice(k);
        Ok(())
    }

    /// Ends a bulk build: builds each level of inner nodes above the leaves, to a single root.
    pub(crate) fn build_finish(&mut self, b: Build<'a>) -> Result<()> {
        let Build { budget, mut nodes, leaf, total, .. } = b;
        drop(leaf);
        self.meta_mut().entries = total;
        let mut level = 0u8;
        while nodes.len() > 1 {
            level += 1;
            let mut above = Vec::new();
            let mut cur: Option<(u64, PageMut<'a>)> = None;
            let (mut used, mut count) = (0, 0);
            for (k, child) in nodes {
                let cost = node::entry_cost(k.len(), level);
                if cur.is_none() || (count > 0 && used + cost > budget) {
                    let (page, g) = self.alloc(level)?;
                    above.push((k.clone(), page));
                    cur = Some((page, g));
                    (used, count) = (0, 0);
                }
                let (page, g) = cur.as_mut().expect("set above");
                if !node::insert_at(g, count, &k, &child.to_le_bytes()) {
                    return Err(corrupt(*page, "no room for an entry in a new inner node"));
                }
                (used, count) = (used + cost, count + 1);
            }
            nodes = above;
        }
        self.meta_mut().root = nodes[0].1;
        Ok(())
    }
}

/// A bulk build in progress: leaves filled to nine tenths left to right and linked, each new
/// leaf's separator kept for the level above (a few bytes per leaf: the memory of a build over
/// entries that arrive sorted does not grow with the table).
#[derive(Debug)]
pub(crate) struct Build<'a> {
    budget: usize,
    /// (the lowest key a node takes, the node), for the level above.
    nodes: Vec<(Vec<u8>, u64)>,
    /// The leaf being filled.
    leaf: (u64, PageMut<'a>),
    used: usize,
    count: usize,
    total: u64,
    /// The last key added.
    last: Vec<u8>,
}

#[cfg(test)]
mod tests {
    use super::separator;

    #[test]
    fn separators_are_short_and_between() {
        for (l, r) in [(&b"abc"[..], &b"abd"[..]), (b"ab", b"abz"), (b"", b"x"), (b"a\xff", b"b")] {
            let s = separator(l, r);
            assert!(l < s.as_slice() && s.as_slice() <= r, "{l:?} {s:?} {r:?}");
        }
        assert_eq!(separator(b"apple", b"banana"), b"b");
        assert_eq!(separator(b"ab", b"abz"), b"abz");
    }
}
