//! [`Database::check`]: verify a database's pages, catalog and log, reporting every problem found
//! rather than stopping at the first (what `nvpage check` runs).
//!
//! Pages are read from the file with plain reads and verified whatever the layer's verified
//! bitmap says, so a page damaged after it was first read is still found. Pages in use (the
//! header, the catalog chain, every table's pages, every index's tree) must verify; pages not in use (free extents,
//! the unused tail of a table's last extent, pages past every extent) may hold anything a crash
//! or a rolled-back growth left there, and are only counted.

use std::collections::HashSet;

use nvpage_storage::{PageId, page};

use crate::catalog::IndexMeta;
use crate::db::Database;
use crate::error::Result;
use crate::heap::HeapPage;
use crate::index::row_key;
pub use crate::index::verify::IndexReport;
use crate::index::verify::{KeyedRow, Named, sound_row, verify};
use crate::table::RowId;

/// What [`Database::check`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Pages in the data file (the header's page count).
    pub page_count: u64,
    /// Pages in use (header, catalog, tables) whose checksum and id were verified.
    pub pages_verified: u64,
    /// Pages not in use (free, or past every table's extents).
    pub pages_unused: u64,
    /// Of the unused pages, those whose bytes are not a valid page (harmless: never read).
    pub unused_unreadable: u64,
    /// One entry per table.
    pub tables: Vec<TableReport>,
    /// One entry per index.
    pub indexes: Vec<IndexReport>,
    /// The log's generation.
    pub log_generation: u32,
    /// Bytes in the log (0 after a clean commit or recovery).
    pub log_used_bytes: u64,
    /// Records in the log.
    pub log_records: u64,
    /// Every problem found, each a sentence naming the page or table.
    pub damage: Vec<String>,
}

impl CheckReport {
    /// Whether nothing is damaged.
    pub fn is_sound(&self) -> bool {
        self.damage.is_empty()
    }
}

/// One table in a [`CheckReport`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableReport {
    /// The table's name.
    pub name: String,
    /// Live rows according to the catalog.
    pub rows_in_catalog: u64,
    /// Live rows found by scanning its pages.
    pub rows_scanned: u64,
    /// Pages it uses.
    pub pages: u64,
}

impl Database {
    /// Verifies every page in use (checksum, page id), every table's pages (heap pages of that
    /// table, rows readable, row counts matching the catalog), every index (its tree's shape and
    /// order, and that it and its table agree both ways: see [`IndexReport`]) and reports the
    /// log's state, as of the last commit. It reads the files directly, so it waits for a write transaction in
    /// progress and holds the next one off until it returns (readers run on); on the thread that
    /// holds the write transaction it is [`Error::WriteTxnHeld`](crate::Error::WriteTxnHeld),
    /// and on one that holds a read transaction [`Error::ReadTxnHeld`](crate::Error::ReadTxnHeld)
    /// (a guard of it could hold up the commit it would wait for).
    /// Damage is reported in [`CheckReport::damage`]; an error is returned only when the check
    /// itself cannot proceed (I/O failure).
    pub fn check(&self) -> Result<CheckReport> {
        self.check_usable(false)?;
        crate::txn::refuse_if_holding(self, "check")?;
        let _writer = self.writer.lock();
        let published = self.snapshots.current();
        let raw = self.pool.file().raw();
        let ps = self.page_size();
        let mut report = CheckReport { page_count: published.page_count, ..CheckReport::default() };
        {
            let log = self.log.read();
            report.log_generation = log.generation();
            report.log_used_bytes = log.tell();
            report.log_records = log.record_count();
        }
        let cat = &published.catalog;
        let mut buf = vec![0u8; ps];
        let read = |id: u64, buf: &mut Vec<u8>, damage: &mut Vec<String>| -> Result<bool> {
            raw.read_at(buf, id * ps as u64)?;
            match page::verify(buf, PageId(id), raw.path()) {
                Ok(()) => Ok(true),
                Err(e) => {
                    // The error names the file and the page.
                    damage.push(e.to_string());
                    Ok(false)
                }
            }
        };
        let mut in_use: HashSet<u64> = HashSet::new();
        for id in std::iter::once(0).chain(cat.chain.iter().copied()) {
            in_use.insert(id);
            if read(id, &mut buf, &mut report.damage)? {
                report.pages_verified += 1;
            }
        }
        for t in &cat.tables {
            let mut tr = TableReport {
                name: t.name.clone(),
                rows_in_catalog: t.rows,
                pages: t.page_count(),
                ..TableReport::default()
            };
            // The key of every row in each of the table's indexes, to hold each index to.
            let mut indexed: Vec<(&IndexMeta, Vec<KeyedRow>)> = cat
                .indexes
                .iter()
                .filter(|x| x.table_id == t.id)
                .map(|x| (x, Vec::new()))
                .collect();
            for p in t.pages() {
                in_use.insert(p.0);
                if !read(p.0, &mut buf, &mut report.damage)? {
                    continue;
                }
                report.pages_verified += 1;
                let h = match HeapPage::new(&buf, t.id, p.0) {
                    Ok(h) => h,
                    Err(e) => {
                        report.damage.push(format!("table {}: {e}", t.name));
                        continue;
                    }
                };
                for (slot, bytes) in h.rows() {
                    tr.rows_scanned += 1;
                    let id = RowId { page: p.0, slot: slot as u16 };
                    let row = match sound_row(&t.schema, bytes, id) {
                        Ok(row) => row,
                        Err(e) => {
                            report
                                .damage
                                .push(format!("table {}, page {}, slot {slot}: {e}", t.name, p.0));
                            continue;
                        }
                    };
                    for (x, keys) in &mut indexed {
                        let mut k = Vec::new();
                        match row_key(x, &t.schema, &row, &mut k) {
                            Ok(()) => keys.push((k, Named::Row(id))),
                            Err(e) => report.damage.push(format!(
                                "table {}, row {id}: no key for index {}: {e}",
                                t.name, x.name
                            )),
                        }
                    }
                }
            }
            // A clustered table's tree first: its rows give its other indexes their keys.
            indexed.sort_by_key(|(x, _)| !x.clustered);
            let mut indexed = std::collections::VecDeque::from(indexed);
            while let Some((x, keys)) = indexed.pop_front() {
                let secondaries = if x.clustered { indexed.make_contiguous() } else { &mut [] };
                let (mut found, mut verified) = (Vec::new(), 0);
                let mut read_page = |id: u64| -> Result<Option<Vec<u8>>> {
                    let mut b = vec![0u8; ps];
                    let ok = read(id, &mut b, &mut found)?;
                    verified += u64::from(ok);
                    Ok(ok.then_some(b))
                };
                let rows = x.clustered.then_some(&t.schema);
                let damage = &mut report.damage;
                let ir = verify(
                    x,
                    &t.name,
                    rows,
                    secondaries,
                    keys,
                    &mut read_page,
                    damage,
                    &mut in_use,
                )?;
                // A page that does not verify is named by the storage layer's error; say whose.
                report.damage.extend(found.into_iter().map(|e| format!("index {}: {e}", x.name)));
                report.pages_verified += verified;
                if x.clustered {
                    // A clustered table's rows are its tree's entries.
                    (tr.rows_scanned, tr.pages) = (ir.entries_found, ir.pages);
                }
                report.indexes.push(ir);
            }
            if tr.rows_scanned != tr.rows_in_catalog {
                report.damage.push(format!(
                    "table {}: the catalog counts {} rows, its pages hold {}",
                    t.name, tr.rows_in_catalog, tr.rows_scanned
                ));
            }
            report.tables.push(tr);
        }
        let mut scratch = Vec::new();
        for id in 0..report.page_count {
            if in_use.contains(&id) {
                continue;
            }
            report.pages_unused += 1;
            if !read(id, &mut buf, &mut scratch)? {
                report.unused_unreadable += 1;
            }
        }
        Ok(report)
    }
}
