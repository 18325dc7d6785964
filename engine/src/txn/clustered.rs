//! The writer's changes to a clustered table's rows, which live in the leaves of its primary
//! key's B+tree ([`Storage::Clustered`](crate::Storage::Clustered)): an insert adds the row under
//! its key, an update by key replaces it in place (or moves it, where its key changed), a delete
//! by key takes it out. The tree's pages are written like any index's, so the undo log, abort,
//! recovery and snapshots cover them with nothing new.
//!
//! Every check that can refuse a change — the row's size, a key the tree holds already — comes
//! before the change, so a refused statement leaves the transaction as it was.

use nvpage_buffer::View;

use super::{Live, WriteTxn};
use crate::catalog::IndexMeta;
use crate::error::{Error, Result};
use crate::index::node;
use crate::index::tree::{TreeWriter, find_value};
use crate::index::{describe_key, key};
use crate::row::RowRef;
use crate::table::RowId;

impl WriteTxn<'_> {
    /// The position in the catalog of `table`'s primary key, whose leaves hold its rows.
    pub(super) fn clustered_ix(&self, table_id: u32) -> Result<usize> {
        self.catalog.indexes.iter().position(|x| x.table_id == table_id && x.clustered).ok_or_else(
            || Error::CorruptCatalog(format!("clustered table {table_id} without its tree")),
        )
    }

    /// `row`'s key in the clustered primary key `x`, into `out`; a row too large for a leaf
    /// entry with it is [`Error::RowTooLarge`].
    fn clustered_key(&self, x: &IndexMeta, row: &RowRef<'_>, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        key::encode_row(row.schema(), &x.columns, row, out)?;
        let max = node::max_sized_entry(self.db.page_size());
        if out.len() + row.bytes().len() > max {
            return Err(Error::RowTooLarge { bytes: row.bytes().len(), max: max - out.len() });
        }
        Ok(())
    }

    /// A copy of the row whose key is `k` in `table`'s tree, as the writer sees it.
    pub(super) fn clustered_row(&self, ix: usize, k: &[u8]) -> Result<Option<Vec<u8>>> {
        let x = &self.catalog.indexes[ix];
        Ok(find_value(self.db, View::Writer, x, k)?.map(|(g, off, len)| g[off..off + len].to_vec()))
    }

    /// Adds `row` (encoded) to clustered table `table` (when `replace`, in place of the row with
    /// its key, which must be there; else a key the tree holds is [`Error::UniqueViolation`]).
    pub(super) fn clustered_put(
        &mut self,
        table: Live<'_>,
        row: &[u8],
        replace: bool,
    ) -> Result<()> {
        let ix = self.clustered_ix(table.id)?;
        let r = RowRef::new(table.schema(), row, RowId::KEYED)?;
        let mut k = Vec::new();
        self.clustered_key(&self.catalog.indexes[ix], &r, &mut k)?;
        let db = self.db;
        if replace {
            return TreeWriter { db, cat: &mut self.catalog, ix, pending: self.pending }
                .replace(&k, row);
        }
        let x = &self.catalog.indexes[ix];
        if find_value(db, View::Writer, x, &k)?.is_some() {
            return Err(Error::UniqueViolation { index: x.name.clone(), key: describe_key(x, &r) });
        }
        TreeWriter { db, cat: &mut self.catalog, ix, pending: self.pending }
            .insert_value(&k, row)?;
        self.adjust_rows(table, 1)
    }

    /// Replaces the row whose key is `old_key` with `row` (encoded), whose key may differ: then
    /// the row moves to its new key, which no other row may hold.
    pub(super) fn clustered_rekey(
        &mut self,
        table: Live<'_>,
        old_key: &[u8],
        row: &[u8],
    ) -> Result<()> {
        let ix = self.clustered_ix(table.id)?;
        let r = RowRef::new(table.schema(), row, RowId::KEYED)?;
        let mut k = Vec::new();
        self.clustered_key(&self.catalog.indexes[ix], &r, &mut k)?;
        let db = self.db;
        if k == old_key {
            return TreeWriter { db, cat: &mut self.catalog, ix, pending: self.pending }
                .replace(&k, row);
        }
        let x = &self.catalog.indexes[ix];
        if find_value(db, View::Writer, x, &k)?.is_some() {
            return Err(Error::UniqueViolation { index: x.name.clone(), key: describe_key(x, &r) });
        }
        let mut tree = TreeWriter { db, cat: &mut self.catalog, ix, pending: self.pending };
        tree.remove(old_key)?;
        tree.insert_value(&k, row)
    }

    /// Deletes the row whose key is `k` from clustered table `table`; `false` if none has it.
    pub(super) fn clustered_delete(&mut self, table: Live<'_>, k: &[u8]) -> Result<bool> {
        let ix = self.clustered_ix(table.id)?;
        if find_value(self.db, View::Writer, &self.catalog.indexes[ix], k)?.is_none() {
            return Ok(false);
        }
        let db = self.db;
        TreeWriter { db, cat: &mut self.catalog, ix, pending: self.pending }.remove(k)?;
        self.adjust_rows(table, -1)?;
        Ok(true)
    }
}
