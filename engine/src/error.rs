//! The engine's one error type.

use std::path::PathBuf;

use nvpage_buffer::BufferError;
use nvpage_storage::StorageError;
use nvpage_wal::WalError;

use crate::schema::ColumnType;
use crate::table::RowId;

/// Everything that can go wrong in the engine. Nothing panics on bad input or bad bytes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The data file or its layer failed (I/O, checksum, already open, full disk, ...).
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The buffer manager failed.
    #[error(transparent)]
    Buffer(BufferError),
    /// The log failed (I/O, corruption, a foreign log, ...).
    #[error(transparent)]
    Wal(WalError),
    /// The directory holds a data file but no log (or the reverse).
    #[error("{path}: the database is incomplete: {missing} is missing")]
    Incomplete {
        /// The database directory.
        path: PathBuf,
        /// Which file is missing.
        missing: &'static str,
    },
    /// There is no database at the path and creating one was not allowed.
    #[error("{path}: no database here")]
    NotFound {
        /// The directory.
        path: PathBuf,
    },
    /// The path is a file, not a directory: a database is a directory holding its files.
    #[error("{path} is not a directory: a database is a directory")]
    NotADirectory {
        /// The path given as the database.
        path: PathBuf,
    },
    /// The database directory does not exist and neither does its parent: an open creates the
    /// database directory only, never the directories above it (a mistyped path is not silently
    /// made into a tree).
    #[error("{path}: cannot create the database: its parent directory {parent} does not exist")]
    NoParentDirectory {
        /// The database directory.
        path: PathBuf,
        /// Its parent, which is missing (or a parent of it is).
        parent: PathBuf,
    },
    /// The database directory or one of its files cannot be looked at: permission denied, a
    /// component of the path that is not a directory, ... The OS error says which.
    #[error("{path}: cannot access it: {source}")]
    Inaccessible {
        /// The directory or file that could not be examined.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// An earlier failure during commit, abort, recovery or a persist poisoned the database:
    /// reopen it (recovery then restores the last committed state).
    #[error("the database is poisoned by an earlier failure; reopen it")]
    Poisoned,
    /// The database was opened read-only.
    #[error("the database is open read-only")]
    ReadOnly,
    /// A read-only open found a transaction to roll back, and changed nothing: open the
    /// database writable once (the `nvpage recover` command does), then read-only again.
    #[error(
        "{path}: its log {log} holds an unfinished transaction (a crash or a killed process left \
         it), which a read-only open cannot roll back; nothing was changed: open the database \
         writable once to recover it (`nvpage recover` does)"
    )]
    RecoveryNeeded {
        /// The database directory.
        path: PathBuf,
        /// Its log file.
        log: PathBuf,
    },
    /// `begin_write` or `check` on a thread that holds a read transaction of the same database:
    /// the call would wait for a commit that waits for that read transaction's guards. End the
    /// read transaction first.
    #[error(
        "this thread holds a read transaction of this database: {call} would wait for itself; \
         end the read transaction first"
    )]
    ReadTxnHeld {
        /// The call refused: `begin_write` or `check`.
        call: &'static str,
    },
    /// `begin_read`, `begin_write` or `check` on a thread that holds this database's write
    /// transaction: the call would wait for that transaction. Read through the write transaction
    /// instead, or end it first.
    #[error(
        "this thread holds the write transaction of this database: {call} would wait for \
         itself; {}",
        if *call == "begin_read" {
            "read through the write transaction instead"
        } else {
            "commit or abort it first"
        }
    )]
    WriteTxnHeld {
        /// The call refused: `begin_read`, `begin_write` or `check`.
        call: &'static str,
    },
    /// A read transaction needs an old version of `page` (the page changed after its snapshot)
    /// that [`Builder::max_version_bytes`](crate::Builder::max_version_bytes) made the database
    /// free: begin a new read transaction. Never a read of newer bytes instead.
    #[error(
        "the read transaction's snapshot {snapshot} is too old: page {page} changed since, and the versions of commits up to {horizon} were freed (Builder::max_version_bytes)"
    )]
    SnapshotTooOld {
        /// The page read.
        page: u64,
        /// The transaction's snapshot ([`ReadTxn::snapshot`](crate::ReadTxn::snapshot)).
        snapshot: u64,
        /// Versions of commits at or below this are gone.
        horizon: u64,
    },
    /// The transaction's before-images do not fit the log, even grown to its limit
    /// ([`Builder::max_log_bytes`](crate::Builder::max_log_bytes)); it was rolled back, and the
    /// database is as it was before it.
    #[error(
        "{path}: the transaction is too large for the log: its next before-images need {needed} \
         bytes and {available} are left of the {max_bytes} bytes Builder::max_log_bytes lets the \
         log grow to; raise max_log_bytes or split the transaction"
    )]
    TransactionTooLarge {
        /// The log file.
        path: PathBuf,
        /// Bytes the next before-images needed (their record's framing included).
        needed: u64,
        /// Bytes left in the log, counting those it may still grow by.
        available: u64,
        /// The largest the log file may be, header page included.
        max_bytes: u64,
    },
    /// The log's file system has no room for it: at create, for its
    /// [`Builder::log_bytes`](crate::Builder::log_bytes), or to grow for a transaction's
    /// before-images. Nothing was written: a transaction it refuses is rolled back, with the
    /// database as it was before it, and the database takes the next one.
    #[error(
        "{path}: no space left on the device for the log to reach {bytes} bytes; {}",
        no_space_advice(option)
    )]
    LogNoSpace {
        /// The log file.
        path: PathBuf,
        /// The size the log file needed, header page included.
        bytes: u64,
        /// The option that sets that size: `log_bytes` at create, `max_log_bytes` (the limit
        /// of its growth) for a transaction.
        option: &'static str,
    },
    /// An earlier statement of this write transaction failed part-way (an I/O error, damage),
    /// so the transaction may hold half of that statement: it takes no more changes, and its
    /// commit rolls it back and reports this. (After a full log the same holds, reported as
    /// [`Error::TransactionTooLarge`].)
    #[error("an earlier statement of this transaction failed ({0}); it can only be rolled back")]
    TransactionFailed(String),
    /// No table has this name in the transaction's view; or, given a handle, the table the
    /// handle was made for does not exist there — dropped, its create rolled back or not yet
    /// committed in a reader's snapshot, or the handle is of another database or an earlier open
    /// of this one — whichever table has its name now (see [`Table`](crate::Table)).
    #[error(
        "no table {0} in this transaction's view (a handle names only the table it was made \
         for, in the open that made it)"
    )]
    UnknownTable(String),
    /// A table with this name exists.
    #[error("a table named {0} exists")]
    TableExists(String),
    /// The table has no column of this name.
    #[error("no column named {0}")]
    UnknownColumn(String),
    /// No index has this name in the transaction's view; or, given a handle, the index the
    /// handle was made for does not exist there, whichever index has its name now (see
    /// [`Index`](crate::Index)).
    #[error(
        "no index {0} in this transaction's view (a handle names only the index it was made \
         for, in the open that made it)"
    )]
    UnknownIndex(String),
    /// An index with this name exists.
    #[error("an index named {0} exists")]
    IndexExists(String),
    /// A call that finds one row by its key ([`WriteTxn::update_by`](crate::WriteTxn::update_by),
    /// `delete_by`, `upsert`) given an index whose keys may repeat.
    #[error(
        "index {0} is not unique: updates, deletes and upserts by key need a unique index (or \
         look the rows up and change each by its id)"
    )]
    NotUnique(String),
    /// A call that takes a row id, given a clustered table (or its row id,
    /// [`RowId::KEYED`](crate::RowId::KEYED)): its rows are found and changed by key.
    #[error(
        "table {0} keeps its rows in its primary key's order: find and change them by key \
         (get_by, update_by, delete_by, upsert with its primary key), not by row id"
    )]
    KeyedRows(String),
    /// What this build does not do yet, named.
    #[error("not supported yet: {0}")]
    Unsupported(String),
    /// [`WriteTxn::drop_index`](crate::WriteTxn::drop_index) given a table's primary key, which
    /// lives and goes with its table.
    #[error("index {index} is the primary key of table {table}: it is dropped with the table")]
    PrimaryKeyIndex {
        /// The index.
        index: String,
        /// Its table.
        table: String,
    },
    /// A column named twice among the columns an update sets.
    #[error("column {0} is set twice in one update")]
    DuplicateColumn(String),
    /// An insert or update would give a unique index a key it holds already (or an index being
    /// created on a table finds two rows with one key). Found before the statement changes
    /// anything: the transaction goes on as it was.
    #[error("unique index {index} already holds the key {key}")]
    UniqueViolation {
        /// The index.
        index: String,
        /// The key, as its values.
        key: String,
    },
    /// An index whose keys can be longer than an index page allows (a quarter of a page, so
    /// that every node holds four entries): choose fewer or shorter columns, or larger pages.
    #[error(
        "index {index} on ({}): its keys take up to {bytes} bytes, and a page of this database \
         takes keys of at most {max}; index fewer or shorter columns, or create the database \
         with a larger page size",
        columns.join(", ")
    )]
    KeyTooLarge {
        /// The index.
        index: String,
        /// Its columns, in key order.
        columns: Vec<String>,
        /// The longest key the columns encode to.
        bytes: usize,
        /// The longest key a page takes.
        max: usize,
    },
    /// A schema that cannot be created.
    #[error("invalid schema: {0}")]
    InvalidSchema(String),
    /// An insert or update with the wrong number of values (or a key with more values than its
    /// index has columns).
    #[error("{} for {}", count(*found, "value"), count(*expected, "column"))]
    WrongArity {
        /// Columns in the schema.
        expected: usize,
        /// Values given.
        found: usize,
    },
    /// A value that does not fit its column's type.
    #[error("value does not fit: {reason}")]
    ValueDoesNotFit {
        /// The column.
        column: String,
        /// The value as a user writes it, its kind, the column and its type, and what does not
        /// fit: `'one' (a string) for column qty (i64)`.
        reason: String,
    },
    /// A row larger than a page can hold.
    #[error("a row of {bytes} bytes is larger than the {max} bytes a page holds")]
    RowTooLarge {
        /// The encoded row's size.
        bytes: usize,
        /// The largest row a page holds.
        max: usize,
    },
    /// No live row has this id.
    #[error("no row {0}")]
    UnknownRow(RowId),
    /// A column handle used on a table it was not made for.
    #[error("a column handle was used on another table's rows")]
    ColumnMismatch,
    /// A column handle of the wrong type.
    #[error("column {column} is {actual}, not {wanted}")]
    ColumnType {
        /// The column.
        column: String,
        /// Its type.
        actual: ColumnType,
        /// The type asked for.
        wanted: &'static str,
    },
    /// A NULL where a value was required ([`crate::RowRef::get`]; use `get_opt`).
    #[error("column {0} is NULL")]
    Null(String),
    /// A row's bytes are inconsistent with its schema.
    #[error("corrupt row: {0}")]
    CorruptRow(String),
    /// A page's contents are inconsistent (its checksum was fine: a bug or a misdirected page).
    #[error("corrupt page {page}: {reason}")]
    CorruptPage {
        /// The page.
        page: u64,
        /// What is wrong.
        reason: String,
    },
    /// The file was written in a format this version of nvpage does not read (the message says
    /// what to do).
    #[error("incompatible file format: {0}")]
    IncompatibleFormat(String),
    /// The catalog's bytes are inconsistent.
    #[error("corrupt catalog: {0}")]
    CorruptCatalog(String),
    /// A log record that is not a valid before-image of this database.
    #[error("corrupt log record: {0}")]
    CorruptLog(String),
    /// A configuration value out of range.
    #[error("invalid option: {0}")]
    InvalidOption(String),
}

impl Error {
    /// The file or directory the error is about, when it names one (its message then shows it).
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Error::Storage(e) => e.path(),
            Error::Wal(e) => e.path(),
            Error::Buffer(BufferError::Storage(e)) => e.path(),
            Error::Incomplete { path, .. }
            | Error::NotFound { path }
            | Error::NotADirectory { path }
            | Error::NoParentDirectory { path, .. }
            | Error::Inaccessible { path, .. }
            | Error::RecoveryNeeded { path, .. }
            | Error::TransactionTooLarge { path, .. }
            | Error::LogNoSpace { path, .. } => Some(path),
            Error::Buffer(_)
            | Error::Poisoned
            | Error::ReadOnly
            | Error::ReadTxnHeld { .. }
            | Error::WriteTxnHeld { .. }
            | Error::SnapshotTooOld { .. }
            | Error::TransactionFailed(_)
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
            | Error::RowTooLarge { .. }
            | Error::UnknownRow(_)
            | Error::ColumnMismatch
            | Error::ColumnType { .. }
            | Error::Null(_)
            | Error::CorruptRow(_)
            | Error::CorruptPage { .. }
            | Error::IncompatibleFormat(_)
            | Error::CorruptCatalog(_)
            | Error::CorruptLog(_)
            | Error::InvalidOption(_) => None,
        }
    }
}

impl From<WalError> for Error {
    fn from(e: WalError) -> Self {
        match e {
            WalError::Storage(s) => Error::Storage(s),
            WalError::LogFull { path, needed, available, max_bytes } => {
                Error::TransactionTooLarge { path, needed, available, max_bytes }
            }
            // Met only while the log grows for a transaction: create names `log_bytes` itself.
            WalError::NoSpace { path, bytes } => {
                Error::LogNoSpace { path, bytes, option: "max_log_bytes" }
            }
            e => Error::Wal(e),
        }
    }
}

impl From<BufferError> for Error {
    fn from(e: BufferError) -> Self {
        match e {
            BufferError::Storage(s) => Error::Storage(s),
            BufferError::SnapshotTooOld { page, snapshot, horizon } => {
                Error::SnapshotTooOld { page: page.0, snapshot, horizon }
            }
            BufferError::Hook { source, .. } => match source.downcast::<Error>() {
                Ok(inner) => *inner,
                Err(other) => Error::Buffer(BufferError::Hook {
                    page: nvpage_storage::PageId(u64::MAX),
                    source: other,
                }),
            },
            e => Error::Buffer(e),
        }
    }
}

/// `n` and `noun`, plural unless `n` is 1: "1 column", "2 columns".
fn count(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// What to do about a log that met a full file system, by the option that sized it.
fn no_space_advice(option: &str) -> String {
    match option {
        "log_bytes" => {
            "free space, or create the database with a smaller Builder::log_bytes".into()
        }
        _ => format!(
            "free space, or split the transaction (the log grows to hold a transaction's \
             before-images, up to Builder::{option})"
        ),
    }
}

/// The engine's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
