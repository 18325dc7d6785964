//! The writer's changes to a clustered table's rows, which live in the leaves of its primary
//! key's B+tree ([`Storage::Clustered`](crate::Storage::Clustered)): an insert adds the row under
//! its key, an update by key replaces it in place (or moves it, where its key changed), a delete
//! by key takes it out. The tree's pages are written like any index's, so the undo log, abort,
//! recovery and snapshots cover them with nothing new.
//!
//! The table's other indexes (`IndexMeta::keyed`) name each row by its primary key: a write
//! moves their entries after the tree's change, as a heap table's indexes are kept.
//!
//! Every check that can refuse a change — the row's size, a key the tree holds already, a key
//! another row holds in a unique index — comes before the change, so a refused statement leaves
//! the transaction as it was.

use nvpage_buffer::View;

use super::{Live, WriteTxn};
use crate::catalog::IndexMeta;
use crate::error::{Error, Result};
use crate::heap;
use crate::index::node;
use crate::index::spill;
use crate::index::tree::{Mode, Put as Outcome, TreeWriter, find_value, value_copy};
use crate::index::{describe_key, key, row_key};
use crate::row::RowRef;
use crate::schema::Schema;
use crate::table::RowId;

/// What [`WriteTxn::clustered_write`] does with a row.
#[derive(Clone, Copy, Debug)]
pub(super) enum Put<'k> {
    /// Adds it; a key the tree holds is [`Error::UniqueViolation`].
    Insert,
    /// Adds it, or replaces the row with its key.
    Upsert,
    /// Replaces the row whose key is `old`; where the row's own key differs, the row moves to
    /// it, which no other row may hold. `leaf`: the leaf this statement found the row in, if it
    /// did and has changed no page since (a hint, checked before it is used: it spares the
    /// tree's second descent where the row keeps its key and its length).
    Replace { old: &'k [u8], leaf: Option<u64> },
}

impl WriteTxn<'_> {
    /// The position among the catalog's indexes of the tree that holds `table`'s rows.
    pub(super) fn clustered_ix(&self, table_id: u32) -> Result<usize> {
        self.catalog.clustered_tree_ix(table_id).ok_or_else(|| {
            Error::CorruptCatalog(format!("clustered table {table_id} without its tree"))
        })
    }

    /// A copy of the row whose key is `k` in the tree `ix`, as the writer sees it.
    pub(super) fn clustered_row(&self, ix: usize, k: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.clustered_row_at(ix, k)?.map(|(row, _)| row))
    }

    /// [`WriteTxn::clustered_row`], and the leaf whose entry holds the row (or names its chain).
    pub(super) fn clustered_row_at(&self, ix: usize, k: &[u8]) -> Result<Option<(Vec<u8>, u64)>> {
        let x = &self.catalog.indexes[ix];
        let Some((g, leaf, at)) = find_value(self.db, View::Writer, x, k)? else { return Ok(None) };
        let table = self.catalog.table_by_id(x.table_id).ok_or_else(|| {
            Error::CorruptCatalog(format!("the tree of table {} without it", x.table_id))
        })?;
        let row = value_copy(self.db, View::Writer, x, &table.schema, k, &g, leaf, at)?;
        Ok(Some((row, leaf)))
    }

    /// Whether clustered table `table_id` has indexes beside its primary key.
    fn keyed_indexes(&self, table_id: u32) -> bool {
        self.catalog.indexes.iter().any(|x| x.table_id == table_id && x.keyed)
    }

    /// The primary key (encoded) of the row that holds `row`'s key in the unique index `x` of a
    /// clustered table (`row` of `schema`), as the writer sees it; `None` for a key with a NULL,
    /// which no row holds.
    pub(super) fn keyed_holder(
        &self,
        x: &IndexMeta,
        schema: &Schema,
        row: &RowRef<'_>,
    ) -> Result<Option<Vec<u8>>> {
        if x.columns.iter().any(|&c| row.is_null(usize::from(c))) {
            return Ok(None);
        }
        let mut k = Vec::new();
        row_key(x, schema, row, &mut k)?;
        Ok(self.keyed_entry(x, &k)?.map(|(pk, _)| pk))
    }

    /// The primary key (encoded) that the entry of key `k` names in index `x` of a clustered
    /// table (beside its primary key), as the writer sees it, and the entry's leaf.
    pub(super) fn keyed_entry(&self, x: &IndexMeta, k: &[u8]) -> Result<Option<(Vec<u8>, u64)>> {
        Ok(find_value(self.db, View::Writer, x, k)?
            .map(|(g, leaf, at)| (g[at.off..at.off + at.len].to_vec(), leaf)))
    }

    /// Fails with [`Error::UniqueViolation`] if `row` (of clustered table `table`) would give a
    /// unique index beside the primary key a key another row holds; `except` is the primary key
    /// of the row being replaced, which may keep its keys.
    fn check_unique_keyed(
        &self,
        table: Live<'_>,
        row: &RowRef<'_>,
        except: Option<&[u8]>,
    ) -> Result<()> {
        let unique = self.catalog.indexes.iter().filter(|x| x.table_id == table.id && x.keyed);
        for x in unique.filter(|x| x.unique) {
            if let Some(holder) = self.keyed_holder(x, table.schema(), row)?
                && Some(holder.as_slice()) != except
            {
                return Err(Error::UniqueViolation {
                    index: x.name.clone(),
                    key: describe_key(x, row),
                });
            }
        }
        Ok(())
    }

    /// Writes `row` (encoded) into clustered table `table` as `put` says; `true` if it replaced
    /// a row. Its size (at most a heap table's largest row: [`Error::RowTooLarge`]), its key,
    /// and its keys in the table's unique indexes are checked before anything changes; the
    /// table's other indexes follow the row. A row too long for a leaf entry with its key is
    /// spilled to a chain of overflow pages, which its entry names (`index/spill.rs`).
    pub(super) fn clustered_write(
        &mut self,
        table: Live<'_>,
        row: &[u8],
        put: Put<'_>,
    ) -> Result<bool> {
        let ix = self.clustered_ix(table.id)?;
        let x = &self.catalog.indexes[ix];
        let r = RowRef::new(table.schema(), row, RowId::KEYED)?;
        let mut k = Vec::new();
        key::encode_row(table.schema(), &x.columns, &r, &mut k)?;
        let page_size = self.db.page_size();
        let max = heap::max_row(page_size);
        let entry = node::max_sized_entry(page_size);
        if row.len() > max || k.len() + spill::REF_LEN > entry {
            return Err(Error::RowTooLarge { bytes: row.len(), max });
        }
        let spilled = k.len() + row.len() > entry;
        let db = self.db;
        let same_key = matches!(put, Put::Replace { old, .. } if old == k.as_slice());
        let mode = match put {
            Put::Insert => Mode::NewUnlessHeld,
            Put::Upsert => Mode::Upsert,
            Put::Replace { .. } if same_key => Mode::Replace,
            Put::Replace { .. } => {
                // The row moves to a new key, which no row may hold: checked before the old
                // one goes.
                if find_value(db, View::Writer, x, &k)?.is_some() {
                    let key = describe_key(x, &r);
                    return Err(Error::UniqueViolation { index: x.name.clone(), key });
                }
                Mode::New
            }
        };
        // An insert of a key the tree holds is refused before anything is written: where the
        // row spills, its chain would be written first, and where the table has other indexes,
        // their keys are checked next.
        let keyed = self.keyed_indexes(table.id);
        if matches!(put, Put::Insert)
            && (spilled || keyed)
            && find_value(db, View::Writer, x, &k)?.is_some()
        {
            let key = describe_key(x, &r);
            return Err(Error::UniqueViolation { index: x.name.clone(), key });
        }
        // The row this one replaces (its key, a copy of it), for the other indexes' entries,
        // and their unique keys checked before anything changes.
        let mut old: Option<(Vec<u8>, Vec<u8>)> = None;
        if keyed {
            let old_key = match put {
                Put::Insert => None,
                Put::Upsert => Some(k.as_slice()),
                Put::Replace { old, .. } => Some(old),
            };
            if let Some(o) = old_key {
                old = self.clustered_row(ix, o)?.map(|row| (o.to_vec(), row));
            }
            if matches!(put, Put::Replace { .. }) && old.is_none() {
                return Err(Error::CorruptCatalog(format!(
                    "table {}: the row to replace is not in its tree",
                    table.name()
                )));
            }
            self.check_unique_keyed(table, &r, old.as_ref().map(|(o, _)| o.as_slice()))?;
        }
        let mut tree = TreeWriter { db, cat: &mut self.catalog, ix, pending: self.pending };
        if let Put::Replace { old, .. } = put
            && !same_key
        {
            tree.remove(old)?;
        }
        // Nothing above wrote a page where the key is the same: the hint's leaf still holds it.
        let hint = match put {
            Put::Replace { leaf, .. } if same_key => leaf,
            _ => None,
        };
        let outcome = if spilled {
            let chain = tree.spill(row)?;
            let outcome = tree.put_entry(&k, &chain.encode(), true, mode)?;
            if outcome == Outcome::Held {
                // Not met (an insert's key was looked for above), but were it: nothing names
                // the chain, whose pages go as they came.
                tree.release_chain(chain)?;
            }
            outcome
        } else if let Some(leaf) = hint
            && tree.replace_in(leaf, &k, row)?
        {
            Outcome::Replaced
        } else {
            tree.put(&k, row, mode)?
        };
        let replaced = match outcome {
            Outcome::Held => {
                let x = &self.catalog.indexes[ix];
                let key = describe_key(x, &r);
                return Err(Error::UniqueViolation { index: x.name.clone(), key });
            }
            Outcome::Replaced => true,
            // A moved row is the same row.
            Outcome::Added if matches!(put, Put::Replace { .. }) => true,
            Outcome::Added => {
                self.adjust_rows(table, 1)?;
                false
            }
        };
        if keyed {
            let old = old.as_ref().map(|(_, o)| (o.as_slice(), RowId::KEYED));
            self.index_change(table, old, Some((row, RowId::KEYED)))?;
        }
        Ok(replaced)
    }

    /// Deletes the row whose key is `k` from clustered table `table` (and its entries from the
    /// table's other indexes); `false` if none has it.
    pub(super) fn clustered_delete(&mut self, table: Live<'_>, k: &[u8]) -> Result<bool> {
        let ix = self.clustered_ix(table.id)?;
        // A copy of the row where the other indexes need its keys; else only whether it is there.
        let old = if self.keyed_indexes(table.id) {
            let Some(old) = self.clustered_row(ix, k)? else { return Ok(false) };
            Some(old)
        } else {
            if find_value(self.db, View::Writer, &self.catalog.indexes[ix], k)?.is_none() {
                return Ok(false);
            }
            None
        };
        let db = self.db;
        TreeWriter { db, cat: &mut self.catalog, ix, pending: self.pending }.remove(k)?;
        self.adjust_rows(table, -1)?;
        if let Some(old) = old {
            self.index_change(table, Some((&old, RowId::KEYED)), None)?;
        }
        Ok(true)
    }
}
