//! The log's one error type.

use std::path::PathBuf;

use nvpage_storage::StorageError;
use uuid::Uuid;

use crate::layout::Framing;

/// Everything that can go wrong with a log. Nothing in this crate panics on a file's bytes: a
/// file that is not a log, a damaged header, a truncated file or a damaged record is one of these.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WalError {
    /// The file layer failed: I/O, locking ([`StorageError::AlreadyOpen`]), a persist failure,
    /// or a log poisoned by an earlier one ([`StorageError::Poisoned`]: reopen it).
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// There is no file at the path.
    #[error("{path}: no such log file")]
    Missing {
        /// The path asked for.
        path: PathBuf,
    },
    /// The file does not start with the log's magic bytes.
    #[error("{path} is not an nvpage log")]
    NotALog {
        /// The foreign file.
        path: PathBuf,
    },
    /// The log was written by another format version.
    #[error(
        "{path} has log format version {found}, this build reads versions {} to {expected}",
        crate::layout::OLDEST_READABLE_VERSION
    )]
    VersionMismatch {
        /// The file.
        path: PathBuf,
        /// The newest version this build reads, the one it creates (it reads
        /// [`OLDEST_READABLE_VERSION`](crate::layout::OLDEST_READABLE_VERSION) on).
        expected: u32,
        /// The version in the file.
        found: u32,
    },
    /// The header's checksum or fields are inconsistent.
    #[error("{path} has a corrupt log header: {reason}")]
    CorruptHeader {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The file is shorter than its header says (or too short to hold a header).
    #[error(
        "{path} is truncated: the log needs {expected_bytes} bytes, the file has {found_bytes}"
    )]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Bytes the header requires.
        expected_bytes: u64,
        /// Bytes the file holds.
        found_bytes: u64,
    },
    /// The state word's check byte does not match, or it names a tail past the data area.
    #[error("{path} has a corrupt state word {word:#018x}: {reason}")]
    CorruptState {
        /// The file.
        path: PathBuf,
        /// The word as stored.
        word: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The capacity word (format 6 on) is damaged, or names less than the log was created
    /// with.
    #[error("{path} has a corrupt capacity word {word:#018x}: {reason}")]
    CorruptCapacity {
        /// The file.
        path: PathBuf,
        /// The word as stored.
        word: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A record below the persisted tail (raw log) or watermark (record log) is damaged.
    /// Everything below it was acknowledged as durable, so this is never taken as the end of
    /// the log.
    #[error("{path}: record at data offset {offset} is damaged: {reason}")]
    CorruptRecord {
        /// The file.
        path: PathBuf,
        /// The record's offset in the data area (file offset minus `DATA_OFFSET`).
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The log belongs to another database.
    #[error("{path} belongs to database {found}, not {expected}")]
    ForeignLog {
        /// The file.
        path: PathBuf,
        /// The UUID the caller expected.
        expected: Uuid,
        /// The UUID in the log's header.
        found: Uuid,
    },
    /// The append does not fit, and the log may not grow enough to hold it; or the log is full
    /// at the largest size it may reach, which refuses every append, even one of no bytes (as
    /// libpmemlog does). Nothing was written; the log is as it was.
    #[error(
        "{path}: log full: the append needs {needed} bytes, {available} are free in a log of at \
         most {max_bytes} bytes"
    )]
    LogFull {
        /// The file.
        path: PathBuf,
        /// Bytes the append needs (its record's framing included).
        needed: u64,
        /// Bytes free when it was tried, counting those the log may still grow by.
        available: u64,
        /// The largest the file may be, header page included: the limit it grows to
        /// ([`OpenOptions::max_bytes`](crate::OpenOptions::max_bytes)), or its size if it does
        /// not grow.
        max_bytes: u64,
    },
    /// The file system has no room for the log file to reach `bytes` bytes: at create, or when
    /// an append grows it. Nothing was written; the log is as it was, and not poisoned.
    #[error("{path}: no space left on its file system for the log to reach {bytes} bytes")]
    NoSpace {
        /// The file.
        path: PathBuf,
        /// The file size that was needed, header page included.
        bytes: u64,
    },
    /// The call needs a log of the other framing (records read from a raw log).
    #[error("the call needs a log of framing {needed}, this log has framing {found}")]
    WrongFraming {
        /// The framing the call works on.
        needed: Framing,
        /// The log's framing.
        found: Framing,
    },
    /// `create` was given a file size outside what the format holds.
    #[error("log file size {size_bytes} is out of range {min_bytes}..={max_bytes}")]
    SizeOutOfRange {
        /// The size asked for.
        size_bytes: u64,
        /// The smallest file.
        min_bytes: u64,
        /// The largest file.
        max_bytes: u64,
    },
    /// A create with size 0 was asked to build a log in a file whose first page, where the
    /// header goes, is not all zeros: it may hold something else (a log, say), which the
    /// create would destroy. libpmemlog refuses such a file too (`EEXIST`).
    #[error(
        "{path} is not blank: its first {} bytes, where a log's header goes, are not all zeros",
        crate::layout::DATA_OFFSET
    )]
    NotBlank {
        /// The file.
        path: PathBuf,
    },
    /// `create` was given permission bits outside `0o7777`.
    #[error("file mode {mode:#o} has bits outside the permission bits 0o7777")]
    InvalidMode {
        /// The mode asked for.
        mode: u32,
    },
    /// A record payload longer than a record's 32-bit length field.
    #[error("a record payload of {len} bytes passes the limit of {max}")]
    RecordTooLarge {
        /// The payload's length.
        len: u64,
        /// The largest payload.
        max: u64,
    },
}

impl WalError {
    /// The file the error is about, when it names one.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Self::Storage(e) => e.path(),
            Self::Missing { path }
            | Self::NotALog { path }
            | Self::VersionMismatch { path, .. }
            | Self::CorruptHeader { path, .. }
            | Self::Truncated { path, .. }
            | Self::CorruptState { path, .. }
            | Self::CorruptCapacity { path, .. }
            | Self::CorruptRecord { path, .. }
            | Self::ForeignLog { path, .. }
            | Self::NotBlank { path }
            | Self::LogFull { path, .. }
            | Self::NoSpace { path, .. } => Some(path),
            Self::WrongFraming { .. }
            | Self::SizeOutOfRange { .. }
            | Self::InvalidMode { .. }
            | Self::RecordTooLarge { .. } => None,
        }
    }
}

/// The log's result type.
pub type Result<T, E = WalError> = std::result::Result<T, E>;
