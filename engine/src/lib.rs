//! # nvpage
//!
//! An embeddable page storage engine built so that non-volatile memory pays off and ordinary
//! disks still work well: heap tables of typed rows on a buffer manager over one of three file
//! layers (pread, SE1, SE2), made atomic and durable by an undo-only write-ahead log kept in a
//! persistent-memory log.
//!
//! ```
//! use nvpage::{Column, ColumnType, Database, ReadOps, Schema, Value, kind};
//!
//! # fn main() -> nvpage::Result<()> {
//! # let dir = tempfile::tempdir().unwrap();
//! let db = Database::open(dir.path().join("shop"))?;
//! let mut tx = db.begin_write()?;
//! let items = tx.create_table("items", Schema::new(vec![
//!     Column::new("id", ColumnType::I64),
//!     Column::new("name", ColumnType::VarChar { max_len: 40 }),
//! ])?)?;
//! tx.insert(&items, &[Value::I64(1), Value::Str("apple")])?;
//! tx.insert(&items, &[Value::I64(2), Value::Str("pear")])?;
//! tx.commit()?;
//!
//! let rx = db.begin_read()?;
//! let items = rx.table("items")?;
//! let id = items.col::<kind::I64>("id")?;
//! let mut sum = 0;
//! rx.for_each_row(&items, |row| {
//!     sum += row.get(id)?;
//!     Ok(())
//! })?;
//! assert_eq!(sum, 3);
//! # Ok(())
//! # }
//! ```
//!
//! Rows are found by scans, by their [`RowId`], or through indexes: B+trees over one or more
//! columns ([`WriteTxn::create_index`], [`WriteTxn::create_unique_index`]), read with
//! [`ReadOps::get_by`], [`ReadOps::lookup`] and [`ReadOps::index_range`]:
//!
//! ```
//! use std::ops::Bound;
//! use nvpage::{Column, ColumnType, Database, ReadOps, Schema, Value, kind};
//!
//! # fn main() -> nvpage::Result<()> {
//! # let dir = tempfile::tempdir().unwrap();
//! let db = Database::open(dir.path().join("people"))?;
//! let mut tx = db.begin_write()?;
//! let people = tx.create_table("people", Schema::new(vec![
//!     Column::new("id", ColumnType::I64),
//!     Column::new("city", ColumnType::VarChar { max_len: 40 }),
//! ])?)?;
//! let by_id = tx.create_unique_index("people_id", &people, &["id"])?;
//! let by_city = tx.create_index("people_city", &people, &["city"])?;
//! for (id, city) in [(1, "Oslo"), (2, "Bergen"), (3, "Oslo"), (4, "Tromsø")] {
//!     tx.insert(&people, &[Value::I64(id), Value::Str(city)])?;
//! }
//! tx.commit()?;
//!
//! let rx = db.begin_read()?;
//! let id = people.col::<kind::I64>("id")?;
//! let row = rx.get_by(&by_id, &[Value::I64(3)])?.expect("a row with id 3");
//! assert_eq!(row.row()?.get(id)?, 3);
//! assert_eq!(rx.lookup(&by_city, &[Value::Str("Oslo")])?.count(), 2);
//! // Cities after "Bergen", the last first.
//! let mut ids = Vec::new();
//! for row in rx.index_range(&by_city, Bound::Excluded(&[Value::Str("Bergen")]), Bound::Unbounded)?.rev() {
//!     ids.push(row?.row()?.get(id)?);
//! }
//! assert_eq!(ids, [4, 3, 1]);
//! # Ok(())
//! # }
//! ```
//!
//! A table whose schema has a primary key ([`Schema::with_primary_key`]) may keep its rows in
//! that key's B+tree instead of on heap pages ([`Storage::Clustered`], through
//! [`WriteTxn::create_table_with`]): lookups end in the leaf and range scans read only the leaves
//! of their range; its rows are found and changed by key. Its other indexes
//! ([`WriteTxn::create_index`]) name rows by primary key, and a read through them finds the row
//! in the table's tree.
//!
//! What it is not: no SQL (the `nvpage-sql` crate adds it), and one writer at a time (readers run
//! beside it).
//!
//! # Cargo features
//!
//! | feature | what it compiles in |
//! |---------|---------------------|
//! | `pread` | [`Layer::Pread`]: `pread`/`pwrite` between the file and the buffer pool's frames |
//! | `se1`   | [`Layer::Se1`]: `memcpy` between a mapping of the file and the frames |
//! | `se2`   | [`Layer::Se2`]: reads point into the mapping; a page is copied only before a change |
//!
//! All three are on by default. A build compiles in exactly the layers its features name, and
//! [`Builder::layer`] defaults to the best of them ([`Layer::best_compiled`]: SE2, else SE1, else
//! pread); asking for a layer the build left out is the typed error [`Error::Storage`] holding
//! [`StorageError::LayerNotCompiled`], never a panic. A build with none (`default-features = false`
//! and no layer named) fails with a `compile_error!` naming the features. The on-disk format does
//! not depend on the layer: a database written with one opens with any other.
//!
//! Invariants (rules 1–6 of the project's design; `docs/design.md` in the repository records how
//! the engine keeps them):
//! 1. No byte of a page that existed when the write transaction began is stored into the file,
//!    its mapping or the page cache before the page's before-image is persisted in the log.
//! 2. A transaction commits only after every page it changed is persisted in place.
//! 3. The commit point is one persisted 8-byte rewind of the log; only read transactions that
//!    begin after it see the commit.
//! 4. Abort and recovery are one routine: before-images applied newest first with plain writes,
//!    synced, log rewound; every cached copy of a restored page dropped.
//! 5. Recovery runs first at open, from the log alone, before the data file is mapped or any
//!    checksum is checked; it is idempotent.
//! 6. A failure during commit, abort, recovery or any persist poisons the database until reopen.
//!
//! Isolation: one write transaction at a time; a read transaction reads a snapshot — the
//! database as of the last commit point before it began, for its whole life — and never waits
//! for the writer (snapshot isolation; `docs/design.md`, "Readers beside the writer"). Old page
//! versions a snapshot needs are kept in memory, bounded by [`Builder::max_version_bytes`]; a
//! snapshot that outlives the bound fails with [`Error::SnapshotTooOld`] when it needs a version
//! it lost, never reading newer bytes. [`Database`] is `Send + Sync`; a [`ReadTxn`] stays on
//! its thread (neither `Send` nor `Sync`: other threads read through it only as
//! [`ReadOps::par_fold`]'s workers, which act for it), and so does a [`WriteTxn`] (its parallel
//! scans aside). A [`Snapshot`] (from [`Database::snapshot`]) is the read that moves: owned,
//! `Send + Sync`, cheap to clone, every clone reading one commit; what is read through it stays
//! on the thread that read it.
//!
//! For columnar consumers (a SQL engine's scans): [`ReadOps::scan_partition`] reads
//! [`Partition`] `i` of `n` of a table (the same rows every time in one snapshot),
//! [`ReadOps::fold_partition`] folds one until the fold breaks, and [`PageRows::locate`] finds a
//! page's rows once so that filters ([`PageBatch::retain`]) and column gathers
//! ([`PageBatch::gather`], [`PageBatch::gather_bytes`]) work on them a column at a time.

#![forbid(unsafe_code)]

#[cfg(not(any(feature = "pread", feature = "se1", feature = "se2")))]
compile_error!(
    "nvpage needs at least one file layer: enable the Cargo feature `pread`, `se1` or `se2` \
     (with `default-features = false`, name one, e.g. `features = [\"se1\"]`)"
);

mod catalog;
mod check;
mod db;
mod error;
mod failpoint;
mod gather;
mod heap;
mod index;
mod le;
mod partition;
mod recovery;
mod row;
mod scan;
mod schema;
mod snapshot;
mod table;
mod txn;
mod undo;

pub use check::{CheckReport, IndexReport, TableReport};
pub use db::{
    Builder, DATA_FILE, DEFAULT_LOG_BYTES, DEFAULT_MAX_LOG_BYTES, DEFAULT_MAX_VERSION_BYTES,
    Database, LOG_FILE, Stats,
};
pub use error::{Error, Result};
pub use gather::{Fixed, PageBatch, RowPlaces};
pub use index::{Index, IndexIds, IndexScan};
pub use recovery::RecoveryReport;
// The types the API names, and no more: every safe function reachable from `nvpage` is part of
// its soundness argument (the storage and buffer crates are for tools and tests to depend on).
pub use nvpage_buffer::{BufferError, Counters};
pub use nvpage_storage::{
    Durability, Layer, Medium, PageId, PersistMode, PersistRequest, StorageError,
};
pub use nvpage_wal::{Prefill, WalError};
pub use partition::Partition;
pub use row::{
    Col, Date, Decimal, Kind, OwnedValue, PageCol, PageRow, RowRef, Timestamp, Value,
    format_scaled, kind,
};
pub use scan::{PageRows, Scan, ScanPage};
pub use schema::{Column, ColumnType, MAX_SCALE, MAX_STRING_LEN, Schema};
pub use snapshot::Snapshot;
pub use table::{DropTarget, RowId, Storage, Table};
pub use txn::{ReadOps, ReadTxn, RowGuard, Upserted, WriteTxn};

/// Failpoints for tests (feature `failpoints`): arm one by name, and the engine panics there.
/// Points: `commit::after_flush` (pages forced, before the commit point),
/// `commit::after_commit_point` (the log rewound, before the commit step publishes it),
/// `abort::after_restore` (before-images restored, before the log is rewound).
#[cfg(feature = "failpoints")]
pub mod failpoints {
    pub use crate::failpoint::arm;
}

/// Thin wrappers over private decoders, for the fuzz targets (`fuzz/`) and their corpus replay
/// (`tests/`). Not part of the API: no stability promise, no behaviour of its own.
#[doc(hidden)]
pub mod fuzzing {
    use crate::catalog::Catalog;
    use crate::error::{Error, Result};
    use crate::heap::HeapPage;
    use crate::index::node::{self, Node};
    use crate::row::{RowRef, Value, encode_row};
    use crate::schema::Schema;
    use crate::table::RowId;

    /// A heap page's live rows with their slots, and the bytes an insert could use.
    pub type HeapRows<'p> = (Vec<(usize, &'p [u8])>, usize);

    /// Checks `page` (a whole page, as the engine always passes) as a heap page of `table_id`
    /// and returns its live rows with their slots, and the bytes an insert could use.
    pub fn heap_rows(page: &[u8], table_id: u32, id: u64) -> Result<HeapRows<'_>> {
        if page.len() < nvpage_storage::page::MIN_PAGE_SIZE {
            return Err(Error::InvalidOption("heap_rows takes a whole page".into()));
        }
        let h = HeapPage::new(page, table_id, id)?;
        Ok((h.rows().collect(), h.free_space()))
    }

    /// `page`'s live rows with their slots as a scan's fold reads them (last slot first,
    /// checking the page as it goes, in one pass: `heap::fold_rows_rev`), or its first error.
    pub fn heap_fold_rows(page: &[u8], table_id: u32, id: u64) -> Result<Vec<(usize, &[u8])>> {
        if page.len() < nvpage_storage::page::MIN_PAGE_SIZE {
            return Err(Error::InvalidOption("heap_fold_rows takes a whole page".into()));
        }
        crate::heap::fold_rows_rev(page, table_id, id, Vec::new(), |mut rows, slot, bytes| {
            rows.push((slot, bytes));
            Ok(rows)
        })
    }

    /// Decodes a catalog blob; `Ok` gives each table's name and its pages, in order.
    pub fn catalog_tables(
        blob: &[u8],
        page_count: u64,
        chain: Vec<u64>,
    ) -> Result<Vec<(String, Vec<u64>)>> {
        let cat = Catalog::decode(blob, page_count, chain)?;
        Ok(cat.tables.iter().map(|t| (t.name.clone(), t.pages().map(|p| p.0).collect())).collect())
    }

    /// Encodes a row of `schema`, as inserts do.
    pub fn encode(schema: &Schema, values: &[Value<'_>]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        encode_row(schema, values, &mut out)?;
        Ok(out)
    }

    /// An index node's level, left and right siblings, and entries (key, value), in slot order.
    pub type IndexNode<'p> = (u8, u64, u64, Vec<(&'p [u8], &'p [u8])>);

    /// Checks `page` (a whole page, as the engine always passes) as a node of index `index_id`
    /// and checks every entry as the writer does before an edit (each inside the page, their
    /// sum inside the entry area; a descent checks each entry it reads), and returns what it
    /// holds.
    pub fn index_node(page: &[u8], index_id: u32, id: u64) -> Result<IndexNode<'_>> {
        let n = Node::new(whole_page(page)?, index_id, id)?;
        n.check_entries()?;
        let entries = (0..n.len()).map(|i| Ok((n.key(i)?, n.value(i)?))).collect::<Result<_>>()?;
        Ok((n.level(), n.prev(), n.next(), entries))
    }

    /// A search for `key` in the node `page` (checked as [`index_node`] does): where the key is
    /// (`Ok`) or would go (`Err`), the entry a descent follows, and the bytes an insert could
    /// use after compaction.
    pub fn index_search(
        page: &[u8],
        index_id: u32,
        id: u64,
        key: &[u8],
    ) -> Result<(std::result::Result<usize, usize>, usize, usize)> {
        index_node(page, index_id, id)?;
        let n = Node::new(whole_page(page)?, index_id, id)?;
        Ok((n.search(key)?, n.child_for(key)?, n.free_space()?))
    }

    /// Whether the node `page` (checked as [`index_node`] does) has a prefix every key starts
    /// with and each slot its key's head: what a search relies on besides key order.
    pub fn index_heads_sound(page: &[u8], index_id: u32, id: u64) -> Result<bool> {
        index_node(page, index_id, id)?;
        Ok(Node::new(whole_page(page)?, index_id, id)?.head_damage()?.is_none())
    }

    /// The writer's insert into the node `page` (all its entries checked first, as the writer
    /// does), as the tree makes it: `key` → `value`
    /// where a search puts it, compacting the node if needed; a full node is split into
    /// `right` (a page of the same size, formatted here) and the entry added to the half its
    /// position falls in. With `spilled`, the entry is marked a spilled row's reference, as a
    /// clustered table's tree marks one (`node::insert_entry`). Returns how many entries `page`
    /// kept if it split. An error if the node does not check, holds the key already, `value` is
    /// not its level's length, `spilled` is asked of a node that is not a leaf of sized values,
    /// or the entry does not fit even half a node.
    pub fn index_insert(
        page: &mut [u8],
        index_id: u32,
        id: u64,
        key: &[u8],
        value: &[u8],
        spilled: bool,
        right: &mut [u8],
    ) -> Result<Option<usize>> {
        let bad = |why: &str| Error::CorruptPage { page: id, reason: why.into() };
        let n = Node::new(whole_page(page)?, index_id, id)?;
        n.check_entries()?;
        let level = n.level();
        let values = n.values();
        if !values.fits(level, value.len()) || right.len() != page.len() {
            return Err(Error::InvalidOption("a value or page of the wrong length".into()));
        }
        if spilled && (values, level) != (node::LeafValues::Sized, 0) {
            return Err(Error::InvalidOption(
                "a spilled entry outside a leaf of sized values".into(),
            ));
        }
        let pos = n.search(key)?.err().ok_or_else(|| bad("the key is there already"))?;
        if node::insert_entry(page, pos, key, value, spilled) {
            return Ok(None);
        }
        node::init(right, index_id, level, values);
        let mid = node::split(page, right).ok_or_else(|| bad("a full node of one entry"))?;
        let fitted = if pos <= mid {
            node::insert_entry(page, pos, key, value, spilled)
        } else {
            node::insert_entry(right, pos - mid, key, value, spilled)
        };
        if fitted { Ok(Some(mid)) } else { Err(bad("no room in half a split node")) }
    }

    /// The writer's removal of entry `pos` from the node `page` (all its entries checked first).
    pub fn index_remove(page: &mut [u8], index_id: u32, id: u64, pos: usize) -> Result<()> {
        let n = Node::new(whole_page(page)?, index_id, id)?;
        n.check_entries()?;
        if pos >= n.len() {
            return Err(Error::InvalidOption(format!("no entry {pos} in {}", n.len())));
        }
        node::remove_at(page, pos);
        Ok(())
    }

    /// Checks `page` (a whole page, as the engine always passes) as a leaf of the clustered
    /// table of `schema` whose tree is `tree`, and returns its rows as a page fold reads them
    /// (`PageRows::fold`: the node checked and a leaf, then each entry from the last, each
    /// checked as it is read and its value made a row of `schema`), or the first error. Each
    /// value comes with whether it is a spilled row's reference, which is checked as one (the
    /// chain's pages are not at hand).
    pub fn clustered_leaf_fold<'p>(
        page: &'p [u8],
        schema: &Schema,
        tree: u32,
        id: u64,
    ) -> Result<Vec<(&'p [u8], bool)>> {
        clustered_leaf(page, tree, id)?.fold_values_rev(Vec::new(), |mut rows, _, value, s| {
            leaf_value(schema, value, s, id)?;
            rows.push((value, s));
            Ok(rows)
        })
    }

    /// A leaf entry's value as a row of `schema`, or, `spilled`, as a chain's reference.
    fn leaf_value(schema: &Schema, value: &[u8], spilled: bool, id: u64) -> Result<()> {
        if spilled {
            crate::index::spill::Chain::decode(value, id).map(drop)
        } else {
            RowRef::new(schema, value, RowId::KEYED).map(drop)
        }
    }

    /// The same page's rows as a row-at-a-time scan reads them (`ScanPage::rows`: in slot
    /// order, each entry checked as it is read and its value made a row of `schema` or, where
    /// spilled, a reference), or the first error.
    pub fn clustered_leaf_rows<'p>(
        page: &'p [u8],
        schema: &Schema,
        tree: u32,
        id: u64,
    ) -> Result<Vec<(&'p [u8], bool)>> {
        let n = clustered_leaf(page, tree, id)?;
        (0..n.len())
            .map(|i| {
                let (value, spilled) = (n.value(i)?, n.spilled(i)?);
                leaf_value(schema, value, spilled, id)?;
                Ok((value, spilled))
            })
            .collect()
    }

    /// Whether `row` is a sound row of `schema` as `check` holds every row: `Ok`, or what is
    /// wrong with it.
    pub fn sound_row(schema: &Schema, row: &[u8]) -> Result<()> {
        crate::index::verify::sound_row(schema, row, RowId::KEYED).map(drop)
    }

    /// `page` as a leaf of tree `tree`, as a scan of a clustered table takes it: a node of the
    /// tree, at level 0.
    fn clustered_leaf(page: &[u8], tree: u32, id: u64) -> Result<Node<'_>> {
        let n = Node::new(whole_page(page)?, tree, id)?;
        if n.level() != 0 {
            return Err(Error::CorruptPage {
                page: id,
                reason: "a clustered table's leaf is not a leaf".into(),
            });
        }
        Ok(n)
    }

    fn whole_page(page: &[u8]) -> Result<&[u8]> {
        let sizes = nvpage_storage::page::MIN_PAGE_SIZE..=nvpage_storage::page::MAX_PAGE_SIZE;
        if sizes.contains(&page.len()) && page.len().is_power_of_two() {
            Ok(page)
        } else {
            Err(Error::InvalidOption("index nodes are whole pages".into()))
        }
    }
}
