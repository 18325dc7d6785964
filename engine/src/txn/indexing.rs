//! The write transaction's index statements (create, drop), and the upkeep of a table's indexes
//! as its rows are inserted, updated and deleted.
//!
//! A unique violation is found before a statement changes anything (the key is looked up in
//! each unique index first), so it leaves the transaction as it was. A clustered table's writes
//! (`clustered.rs`) check their unique keys and then move their rows' entries through
//! `WriteTxn::index_change` too. An index's pages are
//! written like a table's: private copies until commit, before-images logged at write-back.

use nvpage_buffer::View;
use nvpage_storage::PageId;

use super::{Live, WriteTxn};
use crate::catalog::{IndexMeta, Stamp};
use crate::error::{Error, Result};
use crate::heap::HeapPage;
use crate::index::node;
use crate::index::tree::{TreeWriter, find_exact};
use crate::index::{Index, describe_key, entry_value, key, row_key};
use crate::row::RowRef;
use crate::schema::Schema;
use crate::table::{DropTarget, RowId, Storage, Table};
use crate::txn::ReadOps;

/// What [`WriteTxn::create_index_inner`] makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum IndexKind {
    /// Keys may repeat.
    Plain,
    /// A key appears once at most (NULLs aside).
    Unique,
    /// A table's primary key: unique, over NOT NULL columns, made and dropped with the table.
    Primary,
    /// A clustered table's primary key, whose leaves hold the rows.
    Clustered,
}

/// The name of table `table`'s primary-key index.
pub(super) fn primary_key_name(table: &str) -> String {
    format!("{table}_pkey")
}

/// Tables of up to this many rows are indexed by reading every key into memory and sorting
/// (about 40 bytes a row); larger ones are first checked for keys that come in order, which are
/// then indexed as they are read.
const IN_MEMORY_BUILD_ROWS: u64 = 1 << 16;

impl WriteTxn<'_> {
    /// Creates index `name` over `columns` of `table` (in key order): any number of rows may
    /// share a key, ordered by row id. Rows the table holds are indexed by a sorted bottom-up
    /// build. Index names are their own namespace (an index may share a table's name). On a
    /// clustered table ([`Storage::Clustered`]) the index names rows by primary key (its rows
    /// have no ids): keys that repeat are in primary key order, a read through it finds each row
    /// in the table's tree, its ids are [`RowId::KEYED`], and its key with the primary key twice
    /// must fit a leaf entry ([`Error::KeyTooLarge`]).
    pub fn create_index(&mut self, name: &str, table: &Table, columns: &[&str]) -> Result<Index> {
        self.statement(|t| {
            let table = t.live(table)?;
            t.create_index_inner(name, table, columns, IndexKind::Plain)
        })
    }

    /// Creates unique index `name` over `columns` of `table`: no two rows may have one key
    /// (keys with a NULL aside, which never collide, as in SQL). An insert or update that
    /// would break that is [`Error::UniqueViolation`], found before the statement changes
    /// anything; so is this call on a table holding two rows with one key.
    pub fn create_unique_index(
        &mut self,
        name: &str,
        table: &Table,
        columns: &[&str],
    ) -> Result<Index> {
        self.statement(|t| {
            let table = t.live(table)?;
            t.create_index_inner(name, table, columns, IndexKind::Unique)
        })
    }

    pub(super) fn create_index_inner(
        &mut self,
        name: &str,
        table: Live<'_>,
        columns: &[&str],
        kind: IndexKind,
    ) -> Result<Index> {
        let meta = self.meta(&table)?;
        // An index of a clustered table beside its primary key names rows by that key.
        let keyed = meta.storage == Storage::Clustered
            && matches!(kind, IndexKind::Plain | IndexKind::Unique);
        let schema = meta.schema.clone();
        let mut positions = Vec::with_capacity(columns.len());
        for c in columns {
            let i = schema.index_of(c)?;
            if positions.contains(&i) {
                return Err(Error::InvalidSchema(format!("column {c} twice in index {name}")));
            }
            positions.push(i);
        }
        self.check_new_index(name, &schema, &positions)?;
        let cols: Vec<u16> = positions.iter().map(|&i| i as u16).collect();
        if keyed {
            // Its key ends with the primary key where a row id would be, and its value is the
            // primary key again: the longest entry must fit a leaf of sized values.
            let pk: Vec<u16> =
                schema.primary_key().unwrap_or_default().iter().map(|&c| c as u16).collect();
            let bytes = key::max_len(&schema, &cols, false) + 2 * key::max_len(&schema, &pk, false);
            let max = node::max_sized_entry(self.db.page_size());
            if bytes > max {
                let columns = positions.iter().map(|&i| schema.columns()[i].name.clone()).collect();
                return Err(Error::KeyTooLarge { index: name.into(), columns, bytes, max });
            }
        }
        let unique = kind != IndexKind::Plain;
        let id = self.catalog.next_table_id;
        let next_id =
            id.checked_add(1).ok_or_else(|| Error::InvalidSchema("table ids exhausted".into()))?;
        let meta = IndexMeta {
            id,
            stamp: Stamp::fresh(),
            name: name.into(),
            table_id: table.id,
            columns: cols,
            unique,
            primary: matches!(kind, IndexKind::Primary | IndexKind::Clustered),
            clustered: kind == IndexKind::Clustered,
            keyed,
            root: 0,
            entries: 0,
            extents: Vec::new(),
            used_in_last: 0,
            free_pages: Vec::new(),
            pending_free_pages: Vec::new(),
        };
        // A large heap table whose rows come in key order (one loaded in key order, as tables
        // mostly are by their primary key) is indexed as it is read: one pass sees that the
        // keys ascend strictly, a second builds, and the memory does not grow with the table.
        // Otherwise (and for a clustered table's rows) every key and value is read into one
        // buffer and sorted, before anything changes: two rows with one key in a unique index
        // leave the transaction as it was.
        let ascending = !keyed
            && self.meta(&table)?.rows > IN_MEMORY_BUILD_ROWS
            && self.keys_ascend(table, &meta)?;
        let (mut keys, mut entries, mut buf) = (Vec::new(), Vec::new(), Vec::new());
        let mut vbuf = Vec::new();
        if !ascending {
            self.for_each_row(&table, |row| {
                row_key(&meta, &schema, &row, &mut buf)?;
                entry_value(&meta, &schema, &row, &mut vbuf)?;
                entries.push((keys.len(), buf.len(), vbuf.len()));
                keys.extend_from_slice(&buf);
                keys.extend_from_slice(&vbuf);
                Ok(())
            })?;
        }
        let key_of = |&(at, len, _): &(usize, usize, usize)| &keys[at..at + len];
        let value_of = |&(at, len, vlen): &(usize, usize, usize)| &keys[at + len..at + len + vlen];
        entries.sort_unstable_by(|a, b| key_of(a).cmp(key_of(b)));
        if let Some(w) = entries.windows(2).find(|w| key_of(&w[0]) == key_of(&w[1])) {
            let value = value_of(&w[1]);
            let key = if keyed {
                let ix = self.clustered_ix(table.id)?;
                let row = self.clustered_row(ix, value)?.ok_or_else(|| {
                    Error::CorruptCatalog(format!("index {name}: a row read for it went missing"))
                })?;
                describe_key(&meta, &RowRef::new(&schema, &row, RowId::KEYED)?)
            } else {
                let id = key::row_id(value).ok_or_else(|| {
                    Error::CorruptCatalog(format!("index {name}: a row id of a wrong length"))
                })?;
                let row = self.get(&table, id)?;
                describe_key(&meta, &row.row()?)
            };
            return Err(Error::UniqueViolation { index: name.into(), key });
        }
        let pages: Vec<PageId> =
            if ascending { self.meta(&table)?.pages().collect() } else { Vec::new() };
        self.catalog.next_table_id = next_id;
        self.catalog.indexes.push(meta);
        let ix = self.catalog.indexes.len() - 1;
        let db = self.db;
        let mut tree = TreeWriter { db, cat: &mut self.catalog, ix, pending: self.pending };
        let (root, g) = tree.alloc(0)?;
        drop(g);
        tree.cat.indexes[ix].root = root;
        if !ascending {
            tree.build(entries.iter().map(|e| (key_of(e), value_of(e))))?;
        } else {
            let mut b = tree.build_start()?;
            let mut page_keys: Vec<(Vec<u8>, RowId)> = Vec::new();
            for p in pages {
                {
                    let g = db.pool.read(p, View::Writer)?;
                    let h = HeapPage::new(&g, table.id, p.0)?;
                    let x = &tree.cat.indexes[ix];
                    for (slot, bytes) in h.rows() {
                        let row =
                            RowRef::new(&schema, bytes, RowId { page: p.0, slot: slot as u16 })?;
                        let mut k = Vec::new();
                        row_key(x, &schema, &row, &mut k)?;
                        page_keys.push((k, row.id()));
                    }
                }
                for (k, rid) in page_keys.drain(..) {
                    tree.build_push(&mut b, &k, rid)?;
                }
            }
            tree.build_finish(b)?;
        }
        let t = self.meta(&table)?;
        Ok(Index::from_meta(&self.catalog.indexes[ix], t))
    }

    /// Whether `table`'s rows, in scan order, have strictly ascending keys in index `x` (stops
    /// at the first that does not).
    fn keys_ascend(&self, table: Live<'_>, x: &IndexMeta) -> Result<bool> {
        let (mut last, mut k): (Option<Vec<u8>>, Vec<u8>) = (None, Vec::new());
        for page in self.scan(&table)? {
            let page = page?;
            for row in page.rows() {
                row_key(x, table.schema(), &row?, &mut k)?;
                if last.as_ref().is_some_and(|l| k <= *l) {
                    return Ok(false);
                }
                std::mem::swap(last.get_or_insert_with(Vec::new), &mut k);
            }
        }
        Ok(true)
    }

    /// Drops an index: the index named so (`&str`, `&String`), or the one a handle was made for
    /// (`&Index`), which is [`Error::UnknownIndex`] wherever that one does not exist, even if
    /// another index has its name now (see [`DropTarget`]). Its pages become free to reuse once
    /// no read transaction that can still see the index is live.
    pub fn drop_index<'a>(&mut self, index: impl Into<DropTarget<'a, Index>>) -> Result<()> {
        let index = index.into();
        self.statement(|t| {
            let indexes = &t.catalog.indexes;
            let (i, name) = match index {
                DropTarget::Name(name) => (indexes.iter().position(|x| x.name == name), name),
                DropTarget::Handle(h) => {
                    (indexes.iter().position(|x| x.stamp == h.stamp), h.name())
                }
            };
            let i = i.ok_or_else(|| Error::UnknownIndex(name.into()))?;
            let x = &t.catalog.indexes[i];
            if x.primary {
                let table = t.catalog.table_by_id(x.table_id).map(|t| t.name.clone());
                let table = table
                    .ok_or_else(|| Error::CorruptCatalog(format!("index {name} of no table")))?;
                return Err(Error::PrimaryKeyIndex { index: x.name.clone(), table });
            }
            let x = t.catalog.indexes.remove(i);
            t.release_index(&x)
        })
    }

    /// Fails unless an index `name` over the columns at `positions` of `schema` could be made:
    /// a name of 1 to 255 bytes that no index has, at least one column, and keys that fit a
    /// node.
    pub(super) fn check_new_index(
        &self,
        name: &str,
        schema: &Schema,
        positions: &[usize],
    ) -> Result<()> {
        if name.is_empty() || name.len() > 255 {
            return Err(Error::InvalidSchema("an index name is 1 to 255 bytes".into()));
        }
        if self.catalog.index(name).is_some() {
            return Err(Error::IndexExists(name.into()));
        }
        if positions.is_empty() {
            return Err(Error::InvalidSchema("an index needs at least one column".into()));
        }
        let cols: Vec<u16> = positions.iter().map(|&i| i as u16).collect();
        let (bytes, max) = (key::max_len(schema, &cols, true), node::max_key(self.db.page_size()));
        if bytes > max {
            let columns = positions.iter().map(|&i| schema.columns()[i].name.clone()).collect();
            return Err(Error::KeyTooLarge { index: name.into(), columns, bytes, max });
        }
        Ok(())
    }

    /// Lets a dropped index's pages go, as a dropped table's.
    pub(super) fn release_index(&mut self, x: &IndexMeta) -> Result<()> {
        for &(start, n) in &x.runs() {
            for p in start..start + n {
                self.db.pool.discard_writer(nvpage_storage::PageId(p))?;
            }
        }
        let pending = self.pending;
        self.catalog.pending_free.extend(x.extents.iter().map(|&e| (pending, e)));
        Ok(())
    }

    /// Whether `table` has an index.
    pub(super) fn indexed(&self, table: Live<'_>) -> bool {
        self.catalog.indexes.iter().any(|x| x.table_id == table.id)
    }

    /// Fails with [`Error::UniqueViolation`] if `row` (encoded, of `table`) would give a unique
    /// index a key another row holds; `except` is the row being updated, which may keep its key.
    pub(super) fn check_unique(
        &self,
        table: Live<'_>,
        row: &[u8],
        except: Option<RowId>,
    ) -> Result<()> {
        let mut unique = self.catalog.indexes.iter().filter(|x| x.table_id == table.id && x.unique);
        let Some(first) = unique.next() else { return Ok(()) };
        let schema = table.schema();
        let r = RowRef::new(schema, row, except.unwrap_or(RowId { page: 0, slot: 0 }))?;
        let mut k = Vec::new();
        for x in std::iter::once(first).chain(unique) {
            if let Some(holder) = self.key_holder(x, schema, &r, &mut k)?
                && Some(holder) != except
            {
                return Err(Error::UniqueViolation {
                    index: x.name.clone(),
                    key: describe_key(x, &r),
                });
            }
        }
        Ok(())
    }

    /// The row that holds `r`'s key (`r` a row of `schema`) in the unique index `x`, as this
    /// transaction sees it; `None` for a key with a NULL, which no row holds. `k` is scratch.
    pub(super) fn key_holder(
        &self,
        x: &IndexMeta,
        schema: &Schema,
        r: &RowRef<'_>,
        k: &mut Vec<u8>,
    ) -> Result<Option<RowId>> {
        if x.columns.iter().any(|&c| r.is_null(usize::from(c))) {
            return Ok(None);
        }
        row_key(x, schema, r, k)?;
        find_exact(self.db, View::Writer, x, k)
    }

    /// `table`'s row `id`, copied (an update's or delete's old keys).
    pub(super) fn row_bytes(&self, table: &Table, id: RowId) -> Result<Vec<u8>> {
        let g = self.get(table, id)?;
        Ok(g.row()?.bytes().to_vec())
    }

    /// Adds row `id` (encoded as `row`) to each of `table`'s indexes.
    pub(super) fn index_insert(&mut self, table: Live<'_>, row: &[u8], id: RowId) -> Result<()> {
        self.index_change(table, None, Some((row, id)))
    }

    /// Takes row `id` (encoded as `row`) out of each of `table`'s indexes.
    pub(super) fn index_delete(&mut self, table: Live<'_>, row: &[u8], id: RowId) -> Result<()> {
        self.index_change(table, Some((row, id)), None)
    }

    /// Moves each of `table`'s index entries for row `old` to row `new` (each encoded row with
    /// its id), where its key or id changed.
    pub(super) fn index_update(
        &mut self,
        table: Live<'_>,
        old: (&[u8], RowId),
        new: (&[u8], RowId),
    ) -> Result<()> {
        self.index_change(table, Some(old), Some(new))
    }

    /// Moves `table`'s index entries from row `old` to row `new` (either absent: an insert or a
    /// delete), each encoded with its id ([`RowId::KEYED`] in a clustered table, whose indexes
    /// beside its primary key hold the row's key instead, and whose primary key's tree holds
    /// the rows and is left to the caller).
    pub(super) fn index_change(
        &mut self,
        table: Live<'_>,
        old: Option<(&[u8], RowId)>,
        new: Option<(&[u8], RowId)>,
    ) -> Result<()> {
        let schema = table.schema();
        let old = old.map(|(b, id)| RowRef::new(schema, b, id)).transpose()?;
        let new = new.map(|(b, id)| RowRef::new(schema, b, id)).transpose()?;
        let (mut ok, mut nk) = (Vec::new(), Vec::new());
        let (mut ov, mut nv) = (Vec::new(), Vec::new());
        for ix in 0..self.catalog.indexes.len() {
            let x = &self.catalog.indexes[ix];
            if x.table_id != table.id || x.clustered {
                continue;
            }
            if let Some(r) = &old {
                row_key(x, schema, r, &mut ok)?;
                entry_value(x, schema, r, &mut ov)?;
            }
            if let Some(r) = &new {
                row_key(x, schema, r, &mut nk)?;
                entry_value(x, schema, r, &mut nv)?;
            }
            if old.is_some() && new.is_some() && ok == nk && ov == nv {
                continue;
            }
            let mut tree =
                TreeWriter { db: self.db, cat: &mut self.catalog, ix, pending: self.pending };
            if old.is_some() {
                tree.remove(&ok)?;
            }
            if new.is_some() {
                tree.insert_value(&nk, &nv)?;
            }
        }
        Ok(())
    }
}
