//! Transactions.
//!
//! States of the write transaction, as SQLite's pager keeps them:
//!
//! | state      | entered by                    | left by                                     |
//! |------------|-------------------------------|---------------------------------------------|
//! | `Open`     | `Database::begin_write`       | `commit` → `Committed`; `abort`/drop, or a failed commit → `RolledBack` |
//! | `Committed`| the log rewound (commit point), then the commit step publishes it | (final) |
//! | `RolledBack`| every before-image restored, synced, log rewound | (final)                  |
//!
//! A failure in commit, abort or a persist poisons the database (rule 6), except a transaction
//! the log cannot hold — too large for its limit, or its growth refused by a full file system —
//! which is rolled back cleanly and reported as [`Error::TransactionTooLarge`] or
//! [`Error::LogNoSpace`] with the database as it was before the transaction. A panic
//! that unwinds out of a commit or an abort poisons it too.
//!
//! A statement (`insert`, `update`, `delete`, `create_table`, `drop_table`) that fails part-way
//! — an I/O error, damage, a full log — may leave half of itself behind (a page taken but not
//! formatted, a moved row deleted but not inserted). Statements are not atomic on their own, so
//! such a failure dooms the transaction, as PostgreSQL aborts a transaction on an error: later
//! statements fail with [`Error::TransactionFailed`], and `commit` rolls back and reports it
//! (after a full log, both report `TransactionTooLarge` or `LogNoSpace` instead). Errors found
//! before anything changes (a row too large, an unknown row or table, a value that does not fit
//! the schema) leave the transaction as it was. Reads in a doomed transaction see its own
//! changes, half included.
//!
//! Concurrency (docs/design.md, "Readers beside the writer"): one write transaction at a time
//! (a lock held for its life); read transactions take a snapshot — the catalog, page count and
//! every page as of the last commit point before they began — and never wait for the writer.
//! The writer changes a private copy of the catalog and private copies of pages; the commit
//! step publishes them.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::ops::Bound;
use std::sync::Arc;

use nvpage_buffer::View;
use nvpage_storage::PageId;
use parking_lot::MutexGuard;

use crate::catalog::{self, Catalog, Stamp, TableMeta};
use crate::db::Database;
use crate::error::{Error, Result};
use crate::heap::{self, HeapPage};
use crate::index::{Index, IndexScan};

use crate::row::{Value, encode_row};
use crate::schema::Schema;
use crate::table::{DropTarget, Fsm, RowId, Storage, Table};
use crate::undo;

mod clustered;
mod indexing;
use indexing::{IndexKind, primary_key_name};
mod keyed;

pub use keyed::Upserted;

thread_local! {
    /// Databases (by id) in which this thread holds read transactions.
    static READING: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// Databases (by id) in which this thread holds the write transaction.
    static WRITING: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// A thread's list of databases it holds transactions of (`READING`, `WRITING`).
type Held = std::thread::LocalKey<RefCell<Vec<usize>>>;

/// Whether this thread's transaction registries, and the buffer pool's hold lists, can still be
/// used (not while its thread-locals are torn down: see `Drop for Database`).
pub(crate) fn thread_state_alive() -> bool {
    READING.try_with(|_| ()).is_ok()
        && WRITING.try_with(|_| ()).is_ok()
        && nvpage_buffer::thread_state_alive()
}

/// Whether the calling thread holds `db`'s write transaction (or works for it: a parallel scan's
/// worker).
pub(crate) fn writing(db: &Database) -> bool {
    holds(&WRITING, db.id)
}

fn holds(list: &'static Held, db: usize) -> bool {
    list.with(|l| l.borrow().contains(&db))
}

fn enter(list: &'static Held, db: usize) {
    list.with(|l| l.borrow_mut().push(db));
}

fn leave(list: &'static Held, db: usize) {
    list.with(|l| {
        let mut l = l.borrow_mut();
        if let Some(i) = l.iter().rposition(|&id| id == db) {
            l.swap_remove(i);
        }
    });
}

/// Refuses `call` where it would make the calling thread wait for itself on the writer's lock:
/// holding `db`'s write transaction ([`Error::WriteTxnHeld`]), or a read transaction whose
/// guards could hold up the commit it would wait for ([`Error::ReadTxnHeld`]).
///
/// A guard read through a [`Snapshot`](crate::Snapshot) that holds a page's latch (SE2 reads
/// in place) counts as a read transaction held: the snapshot moves between threads, its guards
/// do not, so what this thread holds is what its guards hold.
pub(crate) fn refuse_if_holding(db: &Database, call: &'static str) -> Result<()> {
    if holds(&WRITING, db.id) {
        return Err(Error::WriteTxnHeld { call });
    }
    if holds(&READING, db.id) || db.pool.latched_here() {
        return Err(Error::ReadTxnHeld { call });
    }
    Ok(())
}

/// What a thread holds, for threads that work for it while it waits for them (a parallel
/// scan's workers): its transactions (so `begin_read` in a worker of the write transaction is
/// [`Error::WriteTxnHeld`], as on the writer's own thread) and its latches (so a worker
/// re-enters a page its parent holds instead of queueing behind a write-back that waits for
/// the parent: R8).
#[derive(Clone, Debug)]
pub(crate) struct Holdings {
    reading: Vec<usize>,
    writing: Vec<usize>,
    latches: nvpage_buffer::Holds,
}

/// The calling thread's holdings.
pub(crate) fn holdings() -> Holdings {
    Holdings {
        reading: READING.with(|l| l.borrow().clone()),
        writing: WRITING.with(|l| l.borrow().clone()),
        latches: nvpage_buffer::current_holds(),
    }
}

/// Makes the calling thread act with `h` until the returned guard is dropped.
pub(crate) fn adopt(h: &Holdings) -> Adopted {
    let before = (READING.with(|l| l.borrow().len()), WRITING.with(|l| l.borrow().len()));
    READING.with(|l| l.borrow_mut().extend(&h.reading));
    WRITING.with(|l| l.borrow_mut().extend(&h.writing));
    Adopted { before, _latches: nvpage_buffer::inherit(h.latches.clone()) }
}

/// Holdings adopted by [`adopt`], given up on drop.
#[derive(Debug)]
pub(crate) struct Adopted {
    before: (usize, usize),
    _latches: nvpage_buffer::Inherited,
}

impl Drop for Adopted {
    fn drop(&mut self) {
        READING.with(|l| l.borrow_mut().truncate(self.before.0));
        WRITING.with(|l| l.borrow_mut().truncate(self.before.1));
    }
}

/// What a commit publishes for the read transactions that begin after it.
#[derive(Debug)]
pub(crate) struct Published {
    pub(crate) catalog: Catalog,
    pub(crate) page_count: u64,
}

/// Poisons the database if dropped while a panic unwinds (a commit or an abort that did not
/// finish): its outcome is then left to recovery at the next open.
struct PoisonOnUnwind<'a>(&'a Database);

impl Drop for PoisonOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.poison();
        }
    }
}

impl Database {
    /// Starts a read transaction: a snapshot of the database as of the last commit point, for
    /// the transaction's whole life. Returns at once, whatever the write transaction is doing.
    /// On a thread that holds this database's write transaction it is [`Error::WriteTxnHeld`]
    /// (read through the write transaction: a snapshot's guard there could make the commit wait
    /// for its own thread).
    pub fn begin_read(&self) -> Result<ReadTxn<'_>> {
        self.check_usable(false)?;
        if holds(&WRITING, self.id) {
            return Err(Error::WriteTxnHeld { call: "begin_read" });
        }
        let (seq, state) = self.snapshots.begin();
        enter(&READING, self.id);
        Ok(ReadTxn { db: self, seq, state, _not_send: PhantomData })
    }

    /// Starts the write transaction, waiting for the one in progress (never for readers). On a
    /// thread that holds a read transaction of this database it is [`Error::ReadTxnHeld`] (its
    /// guards could make this transaction's commit wait for its own thread), and on the thread
    /// that holds the write transaction [`Error::WriteTxnHeld`].
    pub fn begin_write(&self) -> Result<WriteTxn<'_>> {
        self.begin_write_for("begin_write")
    }

    /// [`Self::begin_write`] on behalf of `call`, which a refusal names.
    pub(crate) fn begin_write_for(&self, call: &'static str) -> Result<WriteTxn<'_>> {
        self.check_usable(true)?;
        refuse_if_holding(self, call)?;
        let writer = self.writer.lock();
        self.write_txn(writer)
    }

    /// [`Self::begin_write_for`] if no write transaction holds the writer's lock now, else
    /// `None` (a close from a drop must not wait for a transaction that may never end: one
    /// leaked with `mem::forget`).
    pub(crate) fn try_begin_write_for(&self, call: &'static str) -> Result<Option<WriteTxn<'_>>> {
        self.check_usable(true)?;
        refuse_if_holding(self, call)?;
        self.writer.try_lock().map(|writer| self.write_txn(writer)).transpose()
    }

    fn write_txn<'a>(&'a self, writer: MutexGuard<'a, ()>) -> Result<WriteTxn<'a>> {
        self.check_usable(true)?;
        // Under the writer's lock the commit sequence holds still: only a commit raises it.
        let (published, committed, oldest) = self.snapshots.writer_view();
        let start_page_count = published.page_count;
        debug_assert_eq!(self.pool.file().page_count(), start_page_count);
        let mut catalog = published.catalog.clone();
        drop(published);
        catalog.release_free(oldest.unwrap_or(committed));
        self.hook.begin(start_page_count, &catalog.chain);
        self.pool.begin_txn(committed + 1);
        enter(&WRITING, self.id);
        Ok(WriteTxn {
            db: self,
            _writer: writer,
            pending: committed + 1,
            start_page_count,
            catalog,
            done: false,
            buf: Vec::new(),
            failed: None,
        })
    }
}

/// A read transaction: the database as of the last commit point before it began (its
/// snapshot), unchanged for its whole life whatever the writer does. Neither `Send` nor `Sync`:
/// it is released on the thread that took it, and only threads that act for it read through it
/// — [`ReadOps::par_fold`]'s workers, which adopt what its thread holds. (Another thread
/// reading through it would not hold the page latches its thread holds, and could queue behind
/// a commit that waits for that very thread: begin a read transaction of its own instead.)
///
/// ```compile_fail
/// fn shared<T: Sync>(_: &T) {}
/// # let dir = tempfile::tempdir().unwrap();
/// let db = nvpage::Database::open(dir.path().join("db")).unwrap();
/// let rx = db.begin_read().unwrap();
/// shared(&rx); // a read transaction is not shared between threads
/// ```
#[derive(Debug)]
pub struct ReadTxn<'db> {
    db: &'db Database,
    seq: u64,
    state: Arc<Published>,
    /// Neither `Send` nor `Sync` (see the type's notes).
    _not_send: PhantomData<*const ()>,
}

impl ReadTxn<'_> {
    /// The commit this transaction reads: how many commits the database had passed since it
    /// was opened when the transaction began.
    pub fn snapshot(&self) -> u64 {
        self.seq
    }
}

impl Drop for ReadTxn<'_> {
    fn drop(&mut self) {
        leave(&READING, self.db.id);
        self.db.snapshots.end(self.seq, self.db.pool.versions());
    }
}

/// The write transaction: changes are visible to itself, invisible to everyone else until
/// [`WriteTxn::commit`]; dropping it without committing rolls it back. Not `Send`.
#[derive(Debug)]
pub struct WriteTxn<'db> {
    db: &'db Database,
    _writer: MutexGuard<'db, ()>,
    /// The commit this transaction will be (`C + 1`).
    pending: u64,
    start_page_count: u64,
    /// The writer's private copy, published at the commit step.
    catalog: Catalog,
    done: bool,
    buf: Vec<u8>,
    /// The failure that doomed the transaction (see the module's notes), if one did.
    failed: Option<Failure>,
}

/// Why a write transaction is doomed.
#[derive(Debug, Clone)]
enum Failure {
    /// The log cannot hold the transaction: at its limit ([`Error::TransactionTooLarge`]), or
    /// on a full file system ([`Error::LogNoSpace`]). Reported as that error again at commit.
    LogLimit(LogLimit),
    /// Anything else, as its message.
    Other(String),
}

/// The fields of the errors that say the log cannot hold the transaction.
#[derive(Debug, Clone)]
enum LogLimit {
    TooLarge { path: std::path::PathBuf, needed: u64, available: u64, max_bytes: u64 },
    NoSpace { path: std::path::PathBuf, bytes: u64, option: &'static str },
}

impl LogLimit {
    /// The limit `e` reports, if it is one.
    fn of(e: &Error) -> Option<Self> {
        match e {
            Error::TransactionTooLarge { path, needed, available, max_bytes } => {
                Some(LogLimit::TooLarge {
                    path: path.clone(),
                    needed: *needed,
                    available: *available,
                    max_bytes: *max_bytes,
                })
            }
            Error::LogNoSpace { path, bytes, option } => {
                Some(LogLimit::NoSpace { path: path.clone(), bytes: *bytes, option })
            }
            _ => None,
        }
    }

    fn error(&self) -> Error {
        match self.clone() {
            LogLimit::TooLarge { path, needed, available, max_bytes } => {
                Error::TransactionTooLarge { path, needed, available, max_bytes }
            }
            LogLimit::NoSpace { path, bytes, option } => Error::LogNoSpace { path, bytes, option },
        }
    }
}

impl Failure {
    fn error(&self) -> Error {
        match self {
            Failure::LogLimit(l) => l.error(),
            Failure::Other(m) => Error::TransactionFailed(m.clone()),
        }
    }
}

/// Whether a statement failing with `e` may have changed something before it failed. The
/// errors listed here are all raised before a statement changes anything.
fn may_leave_half(e: &Error) -> bool {
    !matches!(
        e,
        Error::RowTooLarge { .. }
            | Error::UnknownRow(_)
            | Error::UnknownTable(_)
            | Error::TableExists(_)
            | Error::UnknownColumn(_)
            | Error::UnknownIndex(_)
            | Error::IndexExists(_)
            | Error::NotUnique(_)
            | Error::PrimaryKeyIndex { .. }
            | Error::KeyedRows(_)
            | Error::Unsupported(_)
            | Error::DuplicateColumn(_)
            | Error::UniqueViolation { .. }
            | Error::KeyTooLarge { .. }
            | Error::InvalidSchema(_)
            | Error::WrongArity { .. }
            | Error::ValueDoesNotFit { .. }
            | Error::ColumnMismatch
            | Error::ColumnType { .. }
            | Error::Null(_)
            | Error::TransactionFailed(_)
    )
}

/// A table handle checked against the write transaction's catalog as a statement begins: the
/// table it was made for exists in this transaction (R9), so the handle's id and schema are that
/// table's. Only [`WriteTxn::live`] makes one, and the helpers of the statements that change
/// rows take one, so none of them can act through an unchecked handle, whose id may be another
/// table's (its pages, its free space, its indexes). No statement drops a table it changes rows
/// of, so the check holds for the statement's life.
#[derive(Clone, Copy, Debug)]
struct Live<'h>(&'h Table);

impl Live<'_> {
    /// The table, if its rows have ids: [`Error::KeyedRows`] for a clustered table.
    fn by_id(self) -> Result<Self> {
        match self.storage() {
            Storage::Heap => Ok(self),
            Storage::Clustered => Err(Error::KeyedRows(self.name().into())),
        }
    }
}

impl std::ops::Deref for Live<'_> {
    type Target = Table;

    fn deref(&self) -> &Table {
        self.0
    }
}

mod sealed {
    use nvpage_buffer::View;

    use crate::catalog::{Catalog, IndexMeta, TableMeta};
    use crate::db::Database;
    use crate::error::{Error, Result};
    use crate::index::Index;
    use crate::table::Table;

    /// What a transaction reads with: its database, its view of pages, its catalog.
    #[derive(Clone, Copy, Debug)]
    pub struct Ctx<'a> {
        pub(crate) db: &'a Database,
        pub(crate) view: View,
        pub(crate) catalog: &'a Catalog,
    }

    impl<'a> Ctx<'a> {
        /// The entry of the table `table` was made for, if it exists in this catalog; else
        /// (dropped, not yet created, rolled back, of another database or open)
        /// [`Error::UnknownTable`] (R9).
        pub(crate) fn meta(&self, table: &Table) -> Result<&'a TableMeta> {
            self.catalog
                .table_by_stamp(table.stamp)
                .ok_or_else(|| Error::UnknownTable(table.name().into()))
        }

        /// The entry of the index `index` was made for, if it exists in this catalog; else
        /// [`Error::UnknownIndex`] (R9).
        pub(crate) fn index_meta(&self, index: &Index) -> Result<&'a IndexMeta> {
            self.catalog
                .index_by_stamp(index.stamp)
                .ok_or_else(|| Error::UnknownIndex(index.name().into()))
        }
    }

    /// The transactions' private half of [`ReadOps`](super::ReadOps): only this crate's
    /// transactions implement it.
    pub trait Reads {
        /// What the transaction reads with.
        fn ctx(&self) -> Ctx<'_>;

        /// [`Reads::ctx`] for a read that takes page guards: an error where a guard could make
        /// the calling thread wait for itself.
        fn pages(&self) -> Result<Ctx<'_>> {
            Ok(self.ctx())
        }
    }
}

pub(crate) use sealed::{Ctx, Reads};

/// What both kinds of transaction can read: tables, rows, scans (see `scan.rs`), each as the
/// transaction sees them (a read transaction its snapshot, the write transaction its own
/// changes).
pub trait ReadOps: sealed::Reads {
    /// The database the transaction reads.
    fn db(&self) -> &Database {
        self.ctx().db
    }

    /// The table named `name`.
    fn table(&self, name: &str) -> Result<Table> {
        let ctx = self.ctx();
        ctx.catalog
            .table(name)
            .map(Table::from_meta)
            .ok_or_else(|| Error::UnknownTable(name.into()))
    }

    /// Every table, in creation order.
    fn tables(&self) -> Vec<Table> {
        self.ctx().catalog.tables.iter().map(Table::from_meta).collect()
    }

    /// Live rows in `table`.
    fn row_count(&self, table: &Table) -> Result<u64> {
        Ok(self.ctx().meta(table)?.rows)
    }

    /// Pages `table` uses (a clustered table's: its tree's).
    fn page_count(&self, table: &Table) -> Result<u64> {
        let ctx = self.ctx();
        let t = ctx.meta(table)?;
        Ok(ctx.catalog.clustered_tree(t.id).map_or_else(|| t.page_count(), |x| x.page_count()))
    }

    /// The row `id` of `table`, read in place (see [`RowGuard`]).
    fn get(&self, table: &Table, id: RowId) -> Result<RowGuard<'_>> {
        get_row(&self.pages()?, table, id)
    }

    /// The index named `name`.
    fn index(&self, name: &str) -> Result<Index> {
        let cat = self.ctx().catalog;
        let x = cat.index(name).ok_or_else(|| Error::UnknownIndex(name.into()))?;
        let t = cat
            .table_by_id(x.table_id)
            .ok_or_else(|| Error::CorruptCatalog(format!("index {name} of no table")))?;
        Ok(Index::from_meta(x, t))
    }

    /// `table`'s primary key: the unique index a table created with a
    /// [`Schema::with_primary_key`](crate::Schema::with_primary_key) has, named `<table>_pkey`;
    /// `None` for a table without one.
    fn primary_key(&self, table: &Table) -> Result<Option<Index>> {
        let ctx = self.ctx();
        let t = ctx.meta(table)?;
        let mut xs = ctx.catalog.indexes.iter();
        Ok(xs.find(|x| x.table_id == t.id && x.primary).map(|x| Index::from_meta(x, t)))
    }

    /// `table`'s indexes, in creation order.
    fn indexes(&self, table: &Table) -> Result<Vec<Index>> {
        let ctx = self.ctx();
        let t = ctx.meta(table)?;
        Ok(ctx
            .catalog
            .indexes
            .iter()
            .filter(|x| x.table_id == t.id)
            .map(|x| Index::from_meta(x, t))
            .collect())
    }

    /// Entries in `index` (one per row of its table).
    fn index_len(&self, index: &Index) -> Result<u64> {
        Ok(self.ctx().index_meta(index)?.entries)
    }

    /// The rows whose key starts with `key` — values for all of the index's columns (a point
    /// lookup: at most one row in a unique index, NULLs aside) or for its first few (a prefix
    /// scan) — in key order, then row id order. See [`IndexScan`].
    fn lookup(&self, index: &Index, key: &[Value<'_>]) -> Result<IndexScan<'_>> {
        IndexScan::new(self.pages()?, index, Bound::Included(key), Bound::Included(key))
    }

    /// The first row whose key starts with `key` (see [`ReadOps::lookup`]), read in place; for a
    /// unique index and a whole key, the row with that key.
    fn get_by(&self, index: &Index, key: &[Value<'_>]) -> Result<Option<RowGuard<'_>>> {
        crate::index::get_by(self.pages()?, index, key)
    }

    /// The rows whose keys lie between `lo` and `hi`, in key order (`.rev()` for the reverse).
    /// A bound is a tuple of values for the index's first columns, all of them or fewer (a
    /// prefix), and takes or leaves every key that starts with it: on an index over `(a, b)`,
    /// `(Excluded(&[Value::I32(5)]), Unbounded)` starts after every key with `a = 5`. NULLs
    /// sort first.
    fn index_range(
        &self,
        index: &Index,
        lo: Bound<&[Value<'_>]>,
        hi: Bound<&[Value<'_>]>,
    ) -> Result<IndexScan<'_>> {
        IndexScan::new(self.pages()?, index, lo, hi)
    }

    /// The rows whose key starts with the values `leading` (for the index's first columns, maybe
    /// none) and then, in its next column (a string), a value that starts with `starts_with`:
    /// SQL's `LIKE 'abc%'`, in key order (`.rev()` for the reverse). A `Char` column's values
    /// compare without their trailing blanks, as in its keys; a NULL among `leading` matches the
    /// rows with NULL there, as in [`ReadOps::lookup`] (not as SQL's `=`, which matches none).
    ///
    /// ```
    /// # use nvpage::{Column, ColumnType, Database, ReadOps, Schema, kind};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path().join("db"))?;
    /// let schema = Schema::new(vec![Column::new("name", ColumnType::VarChar { max_len: 20 })])?;
    /// let mut w = db.begin_write()?;
    /// let t = w.create_table("t", schema)?;
    /// let by_name = w.create_index("t_name", &t, &["name"])?;
    /// for name in ["abacus", "abc", "abcd", "abd", "b"] {
    ///     w.insert(&t, &[name.into()])?;
    /// }
    /// fn names<'t>(
    ///     rows: impl Iterator<Item = nvpage::Result<nvpage::RowGuard<'t>>>,
    /// ) -> nvpage::Result<Vec<String>> {
    ///     rows.map(|g| Ok(g?.row()?.get_named::<kind::Str>("name")?.to_owned())).collect()
    /// }
    /// assert_eq!(names(w.index_prefix(&by_name, &[], "abc")?)?, ["abc", "abcd"]);
    /// assert_eq!(names(w.index_prefix(&by_name, &[], "ab")?.rev())?, ["abd", "abcd", "abc", "abacus"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn index_prefix(
        &self,
        index: &Index,
        leading: &[Value<'_>],
        starts_with: &str,
    ) -> Result<IndexScan<'_>> {
        IndexScan::prefixed(self.pages()?, index, leading, starts_with)
    }

    /// How many rows' keys lie between `lo` and `hi` (bounds as [`ReadOps::index_range`]
    /// takes them), counted from the index's leaves: no row is read.
    fn count_range(
        &self,
        index: &Index,
        lo: Bound<&[Value<'_>]>,
        hi: Bound<&[Value<'_>]>,
    ) -> Result<u64> {
        IndexScan::new(self.pages()?, index, lo, hi)?.ids().try_fold(0, |n, id| id.map(|_| n + 1))
    }

    /// The pages of `table`, in order; each lends its rows (see [`ScanPage`](crate::ScanPage)).
    fn scan(&self, table: &Table) -> Result<crate::Scan<'_>> {
        crate::scan::Scan::new(self.pages()?, table, crate::Partition::WHOLE)
    }

    /// The pages of partition `part` of `table`, in order (see [`Partition`](crate::Partition)):
    /// the same rows every time in this transaction, and with the other partitions of its
    /// count, every row of the table once. A scan stops when it is dropped, and holds only the
    /// page it last returned: a consumer that drops each page before it waits (on a channel, a
    /// task) holds nothing a commit waits for.
    ///
    /// ```
    /// # use nvpage::{Column, ColumnType, Database, Partition, ReadOps, RowPlaces, Schema, Value, kind};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path().join("db"))?;
    /// let mut w = db.begin_write()?;
    /// let t = w.create_table("t", Schema::new(vec![Column::new("n", ColumnType::I64)])?)?;
    /// for n in 1..=1000 {
    ///     w.insert(&t, &[Value::I64(n)])?;
    /// }
    /// w.commit()?;
    /// let r = db.begin_read()?;
    /// let n = t.col::<kind::I64>("n")?;
    /// let (mut values, mut places) = (Vec::new(), RowPlaces::new());
    /// for part in Partition::all(3)? {
    ///     for page in r.scan_partition(&t, part)? {
    ///         page?.with_rows(|rows| {
    ///             let mut batch = rows.locate(&mut places)?;
    ///             batch.retain(|row| Ok(row.get(rows.col(n)?)? % 2 == 0))?;
    ///             batch.gather(rows.col(n)?, &mut values, None)
    ///         })?;
    ///     }
    /// }
    /// assert_eq!(values.len(), 500);
    /// assert_eq!(values.iter().sum::<i64>(), 250_500);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn scan_partition(&self, table: &Table, part: crate::Partition) -> Result<crate::Scan<'_>> {
        crate::scan::Scan::new(self.pages()?, table, part)
    }

    /// Folds partition `part` of `table` a page at a time on the calling thread, as
    /// [`ReadOps::par_fold_pages`] folds each page, until `fold` returns
    /// [`ControlFlow::Break`](std::ops::ControlFlow::Break) (a `LIMIT` met, a consumer gone:
    /// no error) or the pages run out; returns the last value `fold` gave. Each page is held
    /// only while `fold` runs on it.
    fn fold_partition<A>(
        &self,
        table: &Table,
        part: crate::Partition,
        init: A,
        fold: impl for<'p> FnMut(A, crate::PageRows<'p>) -> Result<std::ops::ControlFlow<A, A>>,
    ) -> Result<A> {
        crate::scan::fold_partition(self.pages()?, table, part, init, fold)
    }

    /// Calls `f` on every row of `table`, in page order, until it returns an error. Each row
    /// knows where it lives ([`RowRef::id`](crate::RowRef::id)), for an update or delete after.
    fn for_each_row(
        &self,
        table: &Table,
        mut f: impl FnMut(crate::RowRef<'_>) -> Result<()>,
    ) -> Result<()> {
        for page in self.scan(table)? {
            let page = page?;
            for row in page.rows() {
                f(row?)?;
            }
        }
        Ok(())
    }

    /// Folds every row of `table` on `threads` worker threads, which borrow this transaction
    /// (its view, its catalog, and what its thread holds): each starts from `init()` and folds
    /// its share of the pages with `fold`; the results are combined with `combine`. This is
    /// what the TPC-H queries run on.
    fn par_fold<A, I, F, C>(
        &self,
        table: &Table,
        threads: usize,
        init: I,
        fold: F,
        combine: C,
    ) -> Result<A>
    where
        A: Send,
        I: Fn() -> A + Sync,
        F: Fn(A, crate::RowRef<'_>) -> Result<A> + Sync,
        C: Fn(A, A) -> A,
    {
        crate::scan::par_fold(self.pages()?, table, threads, init, fold, combine)
    }

    /// [`ReadOps::par_fold`] a page at a time: `fold` gets each heap page of `table` as
    /// [`PageRows`](crate::PageRows), checks its column handles against the page once
    /// ([`PageRows::col`](crate::PageRows::col)) and folds the page's rows
    /// ([`PageRows::fold`](crate::PageRows::fold)), whose getters then check only their values.
    /// For scans that read a few columns of many rows, where the row-at-a-time getters' check
    /// of each handle is a tenth of the time (Q1).
    ///
    /// ```
    /// # use nvpage::{Column, ColumnType, Database, ReadOps, Schema, Value, kind};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path().join("db"))?;
    /// let schema = Schema::new(vec![Column::new("n", ColumnType::I64)])?;
    /// let mut w = db.begin_write()?;
    /// let t = w.create_table("t", schema)?;
    /// for n in 1..=100 {
    ///     w.insert(&t, &[Value::I64(n)])?;
    /// }
    /// w.commit()?;
    /// let r = db.begin_read()?;
    /// let n = t.col::<kind::I64>("n")?;
    /// let sum = r.par_fold_pages(
    ///     &t,
    ///     2,
    ///     || 0,
    ///     |acc, page| {
    ///         let n = page.col(n)?;
    ///         page.fold(acc, |acc, row| Ok(acc + row.get(n)?))
    ///     },
    ///     |a, b| a + b,
    /// )?;
    /// assert_eq!(sum, 5050);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn par_fold_pages<A, I, F, C>(
        &self,
        table: &Table,
        threads: usize,
        init: I,
        fold: F,
        combine: C,
    ) -> Result<A>
    where
        A: Send,
        I: Fn() -> A + Sync,
        F: for<'p> Fn(A, crate::PageRows<'p>) -> Result<A> + Sync,
        C: Fn(A, A) -> A,
    {
        crate::scan::par_fold_pages(self.pages()?, table, threads, init, fold, combine)
    }
}

impl<T: sealed::Reads> ReadOps for T {}

/// The row `id` of `table`, read in place as `ctx` sees it.
pub(crate) fn get_row<'a>(ctx: &Ctx<'a>, table: &Table, id: RowId) -> Result<RowGuard<'a>> {
    get_in(ctx, ctx.meta(table)?, id)
}

/// The row `id` of the table `t` (of `ctx`'s catalog), read in place. A page that is not the
/// table's is [`Error::UnknownRow`], not a read of another table's page.
pub(crate) fn get_in<'a>(ctx: &Ctx<'a>, t: &'a TableMeta, id: RowId) -> Result<RowGuard<'a>> {
    if t.storage == Storage::Clustered {
        return Err(Error::KeyedRows(t.name.clone()));
    }
    if !t.holds(id.page) {
        return Err(Error::UnknownRow(id));
    }
    let page = ctx.db.pool.read(PageId(id.page), ctx.view)?;
    let Some((off, len)) = heap::row_at(&page, t.id, id.page, usize::from(id.slot))? else {
        return Err(Error::UnknownRow(id));
    };
    Ok(RowGuard::at(page, &t.schema, off, len, id))
}

/// Fails unless `id`'s page belongs to `table` (so a stale or foreign id is an error, not a read
/// of another table's page).
fn check_row_page(ctx: &Ctx<'_>, table: &Table, id: RowId) -> Result<()> {
    if ctx.meta(table)?.holds(id.page) { Ok(()) } else { Err(Error::UnknownRow(id)) }
}

/// A row read in place, holding its page; [`RowGuard::row`] gives the typed view.
#[derive(Debug)]
pub struct RowGuard<'t> {
    page: GuardPage<'t>,
    schema: &'t Schema,
    off: usize,
    len: usize,
    id: RowId,
}

/// The page a [`RowGuard`] holds: its own guard, or a clustered table's leaf that a range scan
/// holds too (rows from one leaf share one read of it).
#[derive(Debug)]
enum GuardPage<'t> {
    Own(nvpage_buffer::PageRef<'t>),
    Shared(std::rc::Rc<nvpage_buffer::PageRef<'t>>),
    /// A copy: a clustered table's row read whole from the chain it was spilled to.
    Copy(Vec<u8>),
}

impl<'t> RowGuard<'t> {
    /// A row at `off..off + len` of `page`, whose id is `id`.
    pub(crate) fn at(
        page: nvpage_buffer::PageRef<'t>,
        schema: &'t Schema,
        off: usize,
        len: usize,
        id: RowId,
    ) -> Self {
        Self { page: GuardPage::Own(page), schema, off, len, id }
    }

    /// A clustered table's row at `off..off + len` of `leaf`, which others may hold too.
    pub(crate) fn in_leaf(
        leaf: std::rc::Rc<nvpage_buffer::PageRef<'t>>,
        schema: &'t Schema,
        off: usize,
        len: usize,
    ) -> Self {
        Self { page: GuardPage::Shared(leaf), schema, off, len, id: RowId::KEYED }
    }

    /// A clustered table's row read whole into `row` (one spilled to a chain of pages).
    pub(crate) fn owned(row: Vec<u8>, schema: &'t Schema, id: RowId) -> Self {
        let len = row.len();
        Self { page: GuardPage::Copy(row), schema, off: 0, len, id }
    }

    /// The row's typed view.
    // Inlined into the caller's loop: the view returned through the stack from a call was
    // stored in parts and loaded whole, a store-forwarding stall per row (perf annotate).
    #[inline(always)]
    pub fn row(&self) -> Result<crate::RowRef<'_>> {
        let page: &[u8] = match &self.page {
            GuardPage::Own(g) => g,
            GuardPage::Shared(g) => g,
            GuardPage::Copy(row) => row,
        };
        crate::RowRef::new(self.schema, &page[self.off..self.off + self.len], self.id)
    }
}

impl sealed::Reads for ReadTxn<'_> {
    fn ctx(&self) -> Ctx<'_> {
        Ctx { db: self.db, view: View::Snapshot(self.seq), catalog: &self.state.catalog }
    }
}

impl sealed::Reads for WriteTxn<'_> {
    fn ctx(&self) -> Ctx<'_> {
        Ctx { db: self.db, view: View::Writer, catalog: &self.catalog }
    }
}

impl WriteTxn<'_> {
    /// Runs one statement; a failure that may have left half of it behind dooms the
    /// transaction (see the module's notes), and a doomed transaction runs no statement.
    fn statement<R>(&mut self, f: impl FnOnce(&mut Self) -> Result<R>) -> Result<R> {
        if let Some(failure) = &self.failed {
            return Err(failure.error());
        }
        let r = f(self);
        if let Err(e) = &r
            && may_leave_half(e)
        {
            self.failed = Some(match LogLimit::of(e) {
                Some(limit) => Failure::LogLimit(limit),
                None => Failure::Other(e.to_string()),
            });
        }
        r
    }

    /// Creates table `name`, its rows on heap pages ([`Storage::Heap`]). Like every change, it
    /// is undone if the transaction is.
    pub fn create_table(&mut self, name: &str, schema: Schema) -> Result<Table> {
        self.statement(|t| t.create_table_inner(name, schema, Storage::Heap))
    }

    /// Creates table `name` with its rows kept as `storage` says: [`Storage::Clustered`] keeps
    /// them in the leaves of the primary key's B+tree, so the schema needs a primary key
    /// ([`Schema::with_primary_key`]). Its rows may be as long as a heap table's
    /// ([`Error::RowTooLarge`] beyond): one too long to share a leaf with three others (a
    /// quarter of a page, its key included) lives whole in a chain of overflow pages, which its
    /// leaf entry names, and is read from there.
    ///
    /// ```
    /// # use nvpage::{Column, ColumnType, Database, ReadOps, Schema, Storage, Value, kind};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path().join("db"))?;
    /// let schema = Schema::new(vec![
    ///     Column::new("id", ColumnType::I64),
    ///     Column::new("name", ColumnType::VarChar { max_len: 40 }),
    /// ])?
    /// .with_primary_key(&["id"])?;
    /// let mut w = db.begin_write()?;
    /// let t = w.create_table_with("people", schema, Storage::Clustered)?;
    /// for (id, name) in [(3, "carol"), (1, "ann"), (2, "bob")] {
    ///     w.insert(&t, &[Value::I64(id), name.into()])?;
    /// }
    /// let pk = w.primary_key(&t)?.expect("a clustered table's key");
    /// let g = w.get_by(&pk, &[Value::I64(2)])?.expect("bob");
    /// assert_eq!(g.row()?.get_named::<kind::Str>("name")?, "bob");
    /// drop(g);
    /// // A scan walks the rows in key order.
    /// let mut names = Vec::new();
    /// w.for_each_row(&t, |row| Ok(names.push(row.get_named::<kind::Str>("name")?.to_owned())))?;
    /// assert_eq!(names, ["ann", "bob", "carol"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_table_with(
        &mut self,
        name: &str,
        schema: Schema,
        storage: Storage,
    ) -> Result<Table> {
        self.statement(|t| t.create_table_inner(name, schema, storage))
    }

    fn create_table_inner(
        &mut self,
        name: &str,
        schema: Schema,
        storage: Storage,
    ) -> Result<Table> {
        if name.is_empty() || name.len() > 255 {
            return Err(Error::InvalidSchema("a table name is 1 to 255 bytes".into()));
        }
        if self.catalog.table(name).is_some() {
            return Err(Error::TableExists(name.into()));
        }
        // A primary key's index is checked before anything changes, so that its create cannot
        // fail on a name or a key length after the table exists.
        let key = schema.primary_key().map(|k| (primary_key_name(name), k.to_vec()));
        if let Some((index, cols)) = &key {
            self.check_new_index(index, &schema, cols)?;
        }
        let kind = match (storage, &key) {
            (Storage::Heap, _) => IndexKind::Primary,
            (Storage::Clustered, Some(_)) => {
                // `check_new_index` kept the longest key with a row id (10 bytes) to an entry
                // of a leaf of row ids, so with a spilled row's reference (12 bytes) it fits an
                // entry of a leaf of rows (whose entries take 8 bytes more).
                IndexKind::Clustered
            }
            (Storage::Clustered, None) => {
                return Err(Error::InvalidSchema(
                    "a clustered table keeps its rows in its primary key's order, so its \
                     schema needs a primary key (Schema::with_primary_key)"
                        .into(),
                ));
            }
        };
        let cat = &mut self.catalog;
        let id = cat.next_table_id;
        cat.next_table_id =
            id.checked_add(1).ok_or_else(|| Error::InvalidSchema("table ids exhausted".into()))?;
        let meta = TableMeta {
            id,
            stamp: Stamp::fresh(),
            name: name.into(),
            schema,
            rows: 0,
            extents: Vec::new(),
            used_in_last: 0,
            storage: Storage::Heap,
        };
        let t = Table::from_meta(&meta);
        cat.tables.push(meta);
        self.db.fsm.lock().insert(id, Fsm::complete());
        if let Some((index, cols)) = key {
            let live = self.live(&t)?;
            let names: Vec<&str> =
                cols.iter().map(|&c| t.schema().columns()[c].name.as_str()).collect();
            self.create_index_inner(&index, live, &names, kind)?;
        }
        if storage == Storage::Clustered {
            self.meta_mut(Live(&t))?.storage = storage;
            return Ok(Table::from_meta(self.meta(&t)?));
        }
        Ok(t)
    }

    /// Drops a table and its indexes: the table named so (`&str`, `&String`), or the one a
    /// handle was made for (`&Table`), which is [`Error::UnknownTable`] wherever that one does
    /// not exist, even if another table has its name now (see [`DropTarget`]). Their pages
    /// become free to reuse once no read transaction that can still see the table is live (they
    /// are never reused by this transaction).
    pub fn drop_table<'a>(&mut self, table: impl Into<DropTarget<'a, Table>>) -> Result<()> {
        let table = table.into();
        self.statement(|t| t.drop_table_inner(table))
    }

    fn drop_table_inner(&mut self, table: DropTarget<'_, Table>) -> Result<()> {
        let cat = &mut self.catalog;
        let (i, name) = match table {
            DropTarget::Name(name) => (cat.tables.iter().position(|t| t.name == name), name),
            DropTarget::Handle(h) => (cat.tables.iter().position(|t| t.stamp == h.stamp), h.name()),
        };
        let meta = cat.tables.remove(i.ok_or_else(|| Error::UnknownTable(name.into()))?);
        // The writer's changes to the dropped pages need not reach the file: older snapshots
        // read the pages' committed bytes, and nobody else reads them again.
        for p in meta.pages() {
            self.db.pool.discard_writer(p)?;
        }
        let pending = self.pending;
        cat.pending_free.extend(meta.extents.iter().map(|&e| (pending, e)));
        self.db.fsm.lock().remove(&meta.id);
        let (gone, kept) = std::mem::take(&mut self.catalog.indexes)
            .into_iter()
            .partition(|x| x.table_id == meta.id);
        self.catalog.indexes = kept;
        for x in gone {
            self.release_index(&x)?;
        }
        Ok(())
    }

    /// Inserts a row; returns its id. A row larger than a page is [`Error::RowTooLarge`]; a row
    /// whose key a unique index of the table holds already is [`Error::UniqueViolation`].
    pub fn insert(&mut self, table: &Table, values: &[Value<'_>]) -> Result<RowId> {
        self.encoded_statement(table, values, |t, table, row| t.insert_row(table, row))
    }

    /// Inserts `row` (encoded) into `table` and its indexes, unless a unique index holds its
    /// key already.
    fn insert_row(&mut self, table: Live<'_>, row: &[u8]) -> Result<RowId> {
        if table.storage() == Storage::Clustered {
            self.clustered_write(table, row, clustered::Put::Insert)?;
            return Ok(RowId::KEYED);
        }
        self.check_unique(table, row, None)?;
        let id = self.insert_encoded(table, row)?;
        if self.indexed(table) {
            self.index_insert(table, row, id)?;
        }
        Ok(id)
    }

    /// Runs `f` as one statement on `values` encoded as a row of `table` (in the transaction's
    /// reused buffer), the handle checked first.
    fn encoded_statement<R>(
        &mut self,
        table: &Table,
        values: &[Value<'_>],
        f: impl FnOnce(&mut Self, Live<'_>, &[u8]) -> Result<R>,
    ) -> Result<R> {
        self.statement(|t| {
            let table = t.live(table)?;
            let mut buf = std::mem::take(&mut t.buf);
            let r = encode_row(table.schema(), values, &mut buf).and_then(|()| f(t, table, &buf));
            t.buf = buf;
            r
        })
    }

    fn insert_encoded(&mut self, table: Live<'_>, row: &[u8]) -> Result<RowId> {
        let max = heap::max_row(self.db.page_size());
        if row.len() > max {
            return Err(Error::RowTooLarge { bytes: row.len(), max });
        }
        let need = row.len() + 4;
        let mut tried_last = false;
        loop {
            let candidate = self.candidate_page(table, need, &mut tried_last)?;
            let page = match candidate {
                Some(p) => p,
                None => self.allocate_page(table)?,
            };
            let mut g = self.db.pool.write(PageId(page))?;
            let h = HeapPage::new(&g, table.id, page)?;
            let (slots, free) = (h.slot_count(), h.free_space());
            let (slot, free) = heap::insert_counted(&mut g, row, slots, free);
            drop(g);
            if let Some(f) = self.db.fsm.lock().get_mut(&table.id) {
                f.set(page, free, self.db.page_size());
            }
            if let Some(slot) = slot {
                self.adjust_rows(table, 1)?;
                return Ok(RowId { page, slot: slot as u16 });
            }
            if candidate.is_none() {
                return Err(Error::RowTooLarge { bytes: row.len(), max });
            }
        }
    }

    /// A page of `table` that may have `need` bytes free: from the free-space map if it is
    /// complete; else the table's last page once, then the map built from every page.
    fn candidate_page(
        &mut self,
        table: Live<'_>,
        need: usize,
        tried_last: &mut bool,
    ) -> Result<Option<u64>> {
        let complete = self.db.fsm.lock().get(&table.id).is_some_and(|f| f.complete);
        if !complete {
            if !*tried_last {
                *tried_last = true;
                let last = self.meta(&table)?.pages().last().map(|p| p.0);
                if last.is_some() {
                    return Ok(last);
                }
            }
            self.build_fsm(table)?;
        }
        Ok(self.db.fsm.lock().get(&table.id).and_then(|f| f.find(need)))
    }

    fn build_fsm(&mut self, table: Live<'_>) -> Result<()> {
        let pages: Vec<PageId> = self.meta(&table)?.pages().collect();
        let mut fsm = Fsm::complete();
        for p in pages {
            let g = self.db.pool.read(p, View::Writer)?;
            let h = HeapPage::new(&g, table.id, p.0)?;
            fsm.set(p.0, h.free_space(), self.db.page_size());
        }
        self.db.fsm.lock().insert(table.id, fsm);
        Ok(())
    }

    /// The table `table` was made for, if it exists in this transaction (R9).
    fn meta(&self, table: &Table) -> Result<&TableMeta> {
        self.ctx_of().meta(table)
    }

    fn meta_mut(&mut self, table: Live<'_>) -> Result<&mut TableMeta> {
        let unknown = || Error::UnknownTable(table.name().into());
        self.catalog.table_by_stamp_mut(table.stamp).ok_or_else(unknown)
    }

    /// `table`, checked for a statement (see [`Live`]).
    fn live<'h>(&self, table: &'h Table) -> Result<Live<'h>> {
        self.meta(table)?;
        Ok(Live(table))
    }

    fn adjust_rows(&mut self, table: Live<'_>, delta: i64) -> Result<()> {
        let t = self.meta_mut(table)?;
        t.rows = t.rows.saturating_add_signed(delta);
        Ok(())
    }

    /// Takes a fresh page for `table`: the next page of its last extent, else a new extent
    /// (from the free list, else by growing the file), and formats it as an empty heap page.
    fn allocate_page(&mut self, table: Live<'_>) -> Result<u64> {
        let pool = &self.db.pool;
        let Catalog { tables, free, .. } = &mut self.catalog;
        let t = tables
            .iter_mut()
            .find(|t| t.stamp == table.stamp)
            .ok_or_else(|| Error::UnknownTable(table.name().into()))?;
        let page = catalog::next_page(&mut t.extents, &mut t.used_in_last, free, |len| {
            let start = pool.file().page_count();
            pool.grow(start + u64::from(len))?;
            Ok(start)
        })?;
        let mut g = self.db.pool.new_page(PageId(page))?;
        heap::init(&mut g, table.id);
        Ok(page)
    }

    /// Deletes row `id`. A clustered table's rows are deleted by key
    /// ([`WriteTxn::delete_by`]): given one, this is [`Error::KeyedRows`].
    pub fn delete(&mut self, table: &Table, id: RowId) -> Result<()> {
        self.statement(|t| t.delete_row(t.live(table)?.by_id()?, id))
    }

    /// Deletes row `id` from `table` and its indexes.
    fn delete_row(&mut self, table: Live<'_>, id: RowId) -> Result<()> {
        if !self.indexed(table) {
            return self.delete_heap(table, id);
        }
        let old = self.row_bytes(&table, id)?;
        self.delete_heap(table, id)?;
        self.index_delete(table, &old, id)
    }

    /// Deletes row `id` from the table's pages (its indexes are the caller's).
    fn delete_heap(&mut self, table: Live<'_>, id: RowId) -> Result<()> {
        check_row_page(&self.ctx_of(), &table, id)?;
        let mut g = self.db.pool.write(PageId(id.page))?;
        HeapPage::new(&g, table.id, id.page)?;
        if !heap::delete(&mut g, usize::from(id.slot)) {
            return Err(Error::UnknownRow(id));
        }
        let free = heap::free_space(&g);
        drop(g);
        if let Some(f) = self.db.fsm.lock().get_mut(&table.id) {
            f.set(id.page, free, self.db.page_size());
        }
        self.adjust_rows(table, -1)
    }

    fn ctx_of(&self) -> Ctx<'_> {
        sealed::Reads::ctx(self)
    }

    /// Replaces row `id`. The row keeps its id if its page has room for the new value; otherwise
    /// it moves, and the new id is returned.
    pub fn update(&mut self, table: &Table, id: RowId, values: &[Value<'_>]) -> Result<RowId> {
        self.encoded_statement(table, values, |t, table, row| {
            t.update_encoded(table.by_id()?, id, row)
        })
    }

    fn update_encoded(&mut self, table: Live<'_>, id: RowId, row: &[u8]) -> Result<RowId> {
        let max = heap::max_row(self.db.page_size());
        if row.len() > max {
            return Err(Error::RowTooLarge { bytes: row.len(), max });
        }
        if !self.indexed(table) {
            return self.update_heap(table, id, row);
        }
        let old = self.row_bytes(&table, id)?;
        self.check_unique(table, row, Some(id))?;
        let new_id = self.update_heap(table, id, row)?;
        self.index_update(table, (&old, id), (row, new_id))?;
        Ok(new_id)
    }

    /// Replaces row `id` in the table's pages, moving it if its page has no room (its indexes
    /// are the caller's).
    fn update_heap(&mut self, table: Live<'_>, id: RowId, row: &[u8]) -> Result<RowId> {
        check_row_page(&self.ctx_of(), &table, id)?;
        let mut g = self.db.pool.write(PageId(id.page))?;
        let h = HeapPage::new(&g, table.id, id.page)?;
        if h.get(usize::from(id.slot)).is_none() {
            return Err(Error::UnknownRow(id));
        }
        if heap::update(&mut g, usize::from(id.slot), row) {
            let free = heap::free_space(&g);
            drop(g);
            if let Some(f) = self.db.fsm.lock().get_mut(&table.id) {
                f.set(id.page, free, self.db.page_size());
            }
            return Ok(id);
        }
        drop(g);
        self.delete_heap(table, id)?;
        self.insert_encoded(table, row)
    }

    /// Commits: writes the catalog and header pages if they changed, forces every changed page
    /// (rule 2), rewinds the log (the commit point, rule 3), then publishes the new state to the
    /// read transactions that begin after it (the commit step). Waits for no reader, except one
    /// holding a guard on a page this commit stores into in place (SE2 reads in place), until it
    /// lets go.
    pub fn commit(mut self) -> Result<()> {
        let armed = PoisonOnUnwind(self.db);
        self.done = true;
        if let Some(failure) = self.failed.take() {
            // Doomed by a statement that failed part-way: roll back instead.
            self.roll_back_and_end()?;
            drop(armed);
            return Err(failure.error());
        }
        let mut at_commit_point = false;
        let r = self.commit_inner(&mut at_commit_point);
        if let Err(e) = &r {
            if at_commit_point {
                // The rewind's 8-byte store reached the log's mapping but its persist failed: it
                // may be durable, so the transaction may have committed. Every page is forced, so
                // the file holds the committed state; rolling back now would store before-images
                // over pages that a durable commit point makes final (breaking rule 1 in reverse).
                // Leave both files as they are and poison: the next open either finds the rewind
                // (committed) or rolls the log back (absent) — atomic either way. Readers keep
                // their snapshots (the commit step never ran).
                self.db.poison();
                self.db.pool.abandon_txn();
            } else {
                let clean = self.roll_back().is_ok();
                if !clean {
                    self.db.pool.abandon_txn();
                }
                // A log that cannot hold the transaction refused an append before it changed
                // anything: rolled back cleanly, the database is as it was, and usable.
                if !(clean && LogLimit::of(e).is_some()) {
                    self.db.poison();
                }
            }
        }
        self.db.hook.end();
        drop(armed);
        r
    }

    /// Sets `at_commit_point` when the rewind was attempted: from then on a failure leaves the
    /// outcome to the next open.
    fn commit_inner(&mut self, at_commit_point: &mut bool) -> Result<()> {
        // Counts alone are not written once the file says they may be stale (see
        // `Catalog::counts_stale`); anything else in the catalog is. Under the writer's lock the
        // published catalog is the one this transaction began from. Whether the writer changed
        // the catalog is found by comparing it with that one, not by a flag every change must
        // remember to set: a flag missed a tree's new root, extents and free pages where a
        // commit changed no count (a split by an update, a spilled row rewritten), and a crash
        // after such a commit lost them.
        let base = &self.db.snapshots.current().catalog;
        let counts = self.catalog.counts_differ(base);
        if self.catalog.differs_beyond_counts(base) || (counts && !base.counts_stale) {
            // Stale from this commit on if it changed a count (the next ones that change only
            // counts will not write them); as the file had them otherwise.
            self.catalog.counts_stale = base.counts_stale || counts;
            self.write_catalog()?;
        }
        let pool = &self.db.pool;
        if pool.file().page_count() != self.start_page_count {
            let mut g = pool.write(PageId::HEADER)?;
            pool.file().header().encode_into(&mut g);
        }
        pool.flush_all()?;
        pool.sync()?;
        crate::failpoint::hit("commit::after_flush");
        {
            let mut log = self.db.log.write();
            if log.tell() > 0 {
                *at_commit_point = true;
                log.rewind()?;
            }
        }
        crate::failpoint::hit("commit::after_commit_point");
        // The commit step (R5): the stamps this transaction wrote become a commit number.
        pool.end_txn();
        let published = Published {
            catalog: std::mem::take(&mut self.catalog),
            page_count: pool.file().page_count(),
        };
        self.db.snapshots.commit(published, pool.versions());
        Ok(())
    }

    /// Serializes the catalog into its chain of pages, extending the chain as needed.
    fn write_catalog(&mut self) -> Result<()> {
        let cap = catalog::chunk_capacity(self.db.page_size());
        let blob = loop {
            let blob = self.catalog.encode();
            let need = blob.len().div_ceil(cap).max(1);
            if self.catalog.chain.len() >= need {
                break blob;
            }
            let page = match self.catalog.take_free(1) {
                Some(p) => p,
                None => {
                    let p = self.db.pool.file().page_count();
                    self.db.pool.grow(p + 1)?;
                    p
                }
            };
            self.catalog.chain.push(page);
        };
        for (i, &p) in self.catalog.chain.iter().enumerate() {
            let chunk = blob.get(i * cap..((i + 1) * cap).min(blob.len())).unwrap_or_default();
            let next = self.catalog.chain.get(i + 1).copied().unwrap_or(0);
            let mut g = self.db.pool.new_page(PageId(p))?;
            catalog::write_chunk(&mut g, chunk, next);
        }
        Ok(())
    }

    /// Writes the catalog with exact counts and commits (a clean close: see
    /// [`Database::close`]).
    pub(crate) fn commit_exact_counts(mut self) -> Result<()> {
        self.catalog.counts_stale = false;
        self.write_catalog()?;
        self.commit()
    }

    /// Rolls the transaction back explicitly, reporting a failure (which also poisons the
    /// database). Dropping the transaction does the same silently.
    pub fn abort(mut self) -> Result<()> {
        self.roll_back_and_end()
    }

    /// Ends the transaction by rolling it back (abort, drop, a doomed commit); a failure, or a
    /// panic unwinding out of it, poisons the database.
    fn roll_back_and_end(&mut self) -> Result<()> {
        let armed = PoisonOnUnwind(self.db);
        self.done = true;
        let r = self.roll_back();
        if r.is_err() {
            self.db.poison();
            self.db.pool.abandon_txn();
        }
        self.db.hook.end();
        drop(armed);
        r
    }

    /// Rule 4, beside readers (docs/design.md, "Abort, in order"): drop the writer's frames,
    /// restore every before-image newest first in place under its page latch, sync, rewind;
    /// then give the pages the transaction stamped their old stamps and drop its versions, the
    /// page count and the free-space maps. The published snapshot never changed.
    fn roll_back(&mut self) -> Result<()> {
        let db = self.db;
        db.pool.discard_writer_frames()?;
        // Pages logged but never stored (a flush that failed part-way) are skipped: they hold
        // their image's bytes already, and a reader may be reading them in place.
        let store = |page: PageId, parts: &[(usize, &[u8])]| -> Result<()> {
            db.pool.restore_parts(page, parts)?;
            Ok(())
        };
        undo::roll_back(&mut db.log.write(), db.page_size(), store, || Ok(db.pool.sync()?))?;
        db.pool.abort_txn()?;
        db.pool.file().set_page_count(self.start_page_count)?;
        db.fsm.lock().clear();
        Ok(())
    }
}

impl Drop for WriteTxn<'_> {
    fn drop(&mut self) {
        leave(&WRITING, self.db.id);
        if !self.done {
            let _ = self.roll_back_and_end();
        }
    }
}
