//! The storage crate's one error type.

use std::io;
use std::path::PathBuf;

use crate::page::PageId;

/// Everything that can go wrong below the buffer manager.
///
/// Every variant carries what a caller needs to report or act on it. Nothing in this crate panics
/// on bad bytes or bad arguments: it returns one of these.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// An operating-system call failed.
    #[error("{op} failed on {path}: {source}")]
    Io {
        /// What was being done (`"pread"`, `"fallocate"`, ...).
        op: &'static str,
        /// The file concerned.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The file is locked by another open handle, in this process or another: a writer's
    /// refuses every other open, readers' refuse a writable one. The message names the holders
    /// (where `/proc/locks` shows them) and says what to do.
    #[error("{}", crate::lock::conflict(.path, *.writable, .holders))]
    AlreadyOpen {
        /// The file that is locked.
        path: PathBuf,
        /// Whether the refused open was writable (it asked for the exclusive lock).
        writable: bool,
        /// Who holds the lock.
        holders: crate::lock::Holders,
    },
    /// The path names something other than a regular file (a directory, a device, ...).
    #[error("{path} is {found}, not a file")]
    NotAFile {
        /// The path given.
        path: PathBuf,
        /// What it is: "a directory", "a block device", ...
        found: &'static str,
    },
    /// `create` was asked for a file that already exists.
    #[error("{path} already exists")]
    AlreadyExists {
        /// The existing file.
        path: PathBuf,
    },
    /// The file does not start with nvpage's magic bytes.
    #[error("{path} is not an nvpage data file")]
    NotOurs {
        /// The foreign file.
        path: PathBuf,
    },
    /// The file was written by another format version.
    #[error("{path} has format version {found}, this build reads version {expected}")]
    VersionMismatch {
        /// The file.
        path: PathBuf,
        /// The version this build reads and writes.
        expected: u32,
        /// The version in the file.
        found: u32,
    },
    /// The header page's checksum or fields are inconsistent.
    #[error("{path} has a corrupt header: {reason}")]
    CorruptHeader {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The file is shorter than its header says.
    #[error("{path} is truncated: header says {expected_bytes} bytes, file has {found_bytes}")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Bytes the header's page count requires.
        expected_bytes: u64,
        /// Bytes the file holds.
        found_bytes: u64,
    },
    /// A page's stored checksum does not match its bytes.
    #[error(
        "{path}: page {page} fails its checksum: stored {expected:#010x}, computed {found:#010x}"
    )]
    ChecksumMismatch {
        /// The file the page was read from.
        path: PathBuf,
        /// The damaged page.
        page: PageId,
        /// The checksum stored in the page.
        expected: u32,
        /// The checksum of the page's bytes.
        found: u32,
    },
    /// A page holds another page's id: it was written at the wrong offset.
    #[error("{path}: page {page} holds the id of page {found}: misdirected write")]
    WrongPageId {
        /// The file the page was read from.
        path: PathBuf,
        /// Where the page was read.
        page: PageId,
        /// The id written inside it.
        found: PageId,
    },
    /// A page id at or past the page count.
    #[error("page {page} is out of range: the file has {page_count} pages")]
    PageOutOfRange {
        /// The requested page.
        page: PageId,
        /// The number of pages in the file.
        page_count: u64,
    },
    /// A byte range that does not lie inside the file.
    #[error("bytes {offset}..{offset}+{len} are not inside the file's {file_bytes} bytes")]
    RangeOutOfFile {
        /// The range's first byte.
        offset: u64,
        /// The range's length.
        len: u64,
        /// The file's length.
        file_bytes: u64,
    },
    /// A maximum file size larger than this build supports.
    #[error("a maximum file size of {requested_bytes} bytes passes the {limit_bytes} supported")]
    MaxBytesTooLarge {
        /// The size asked for.
        requested_bytes: u64,
        /// [`crate::file::MAX_SUPPORTED_FILE_BYTES`].
        limit_bytes: u64,
    },
    /// A page size outside 4 KiB..=64 KiB or not a power of two.
    #[error("invalid page size {0}: must be a power of two from 4096 to 65536")]
    InvalidPageSize(u64),
    /// A buffer whose length is not the file's page size.
    #[error("buffer of {found} bytes where a page of {expected} bytes is needed")]
    BufferSize {
        /// The page size.
        expected: usize,
        /// The buffer's length.
        found: usize,
    },
    /// Growing the file would pass the maximum size chosen at open (the mapping's reservation).
    #[error("growing to {requested_bytes} bytes passes the maximum file size {max_bytes}")]
    FileTooLarge {
        /// The size asked for.
        requested_bytes: u64,
        /// The limit.
        max_bytes: u64,
    },
    /// The file system has no room for the file to grow.
    #[error("no space left to grow {path}")]
    NoSpace {
        /// The file that could not grow.
        path: PathBuf,
    },
    /// The OS refused to reserve address space for the mapping.
    #[error("cannot reserve {bytes} bytes of address space for {path}: {source}")]
    Reserve {
        /// The file to be mapped.
        path: PathBuf,
        /// The reservation's size.
        bytes: u64,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The layer asked for was left out of this build by Cargo features.
    #[error("layer {0} is not compiled into this build (enable the Cargo feature `{0}`)")]
    LayerNotCompiled(&'static str),
    /// Cache-line persistence was asked for — by [`crate::PersistRequest::CacheLine`] or
    /// [`crate::PersistRequest::Eadr`], or by the environment variable
    /// [`crate::persist::EMULATE_NVM_ENV`] — for a mapped file that is neither on tmpfs/ramfs
    /// nor DAX.
    #[error(
        "{path} is on neither tmpfs/ramfs nor DAX: cache-line persistence (emulated NVM), asked \
         for by {}, would not make it durable",
        if *by_env_var { "the variable NVPAGE_EMULATE_NVM" } else { "the persistence option" }
    )]
    EmulationRefused {
        /// The disk file.
        path: PathBuf,
        /// Whether the request came from the environment variable (else from the option).
        by_env_var: bool,
    },
    /// An earlier persist failed: the file refuses all further writes until it is reopened.
    #[error("{path} is poisoned by an earlier persist failure; reopen it")]
    Poisoned {
        /// The poisoned file.
        path: PathBuf,
    },
    /// The handle was opened read-only.
    #[error("{path} is open read-only")]
    ReadOnly {
        /// The file.
        path: PathBuf,
    },
    /// A `pwrite` through the safe API into a file that is mapped: readers may hold references
    /// into the mapping, which shows the write at once. Pages of a mapped file are written by
    /// its layer (`FileLayer::write_page`, under the buffer manager's page latch).
    #[error("{path} is mapped: write its pages through its layer, not with pwrite")]
    MappedWrite {
        /// The file.
        path: PathBuf,
    },
}

impl StorageError {
    /// The file the error is about, when it names one.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Self::Io { path, .. }
            | Self::AlreadyOpen { path, .. }
            | Self::NotAFile { path, .. }
            | Self::AlreadyExists { path }
            | Self::NotOurs { path }
            | Self::VersionMismatch { path, .. }
            | Self::CorruptHeader { path, .. }
            | Self::Truncated { path, .. }
            | Self::ChecksumMismatch { path, .. }
            | Self::WrongPageId { path, .. }
            | Self::NoSpace { path }
            | Self::Reserve { path, .. }
            | Self::EmulationRefused { path, .. }
            | Self::Poisoned { path }
            | Self::ReadOnly { path }
            | Self::MappedWrite { path } => Some(path),
            Self::PageOutOfRange { .. }
            | Self::RangeOutOfFile { .. }
            | Self::MaxBytesTooLarge { .. }
            | Self::InvalidPageSize(_)
            | Self::BufferSize { .. }
            | Self::FileTooLarge { .. }
            | Self::LayerNotCompiled(_) => None,
        }
    }

    /// Wraps an OS error, turning `ENOSPC` into [`StorageError::NoSpace`].
    pub fn io(op: &'static str, path: &std::path::Path, source: io::Error) -> Self {
        if source.raw_os_error() == Some(libc::ENOSPC) {
            return Self::NoSpace { path: path.to_path_buf() };
        }
        Self::Io { op, path: path.to_path_buf(), source }
    }
}

/// The storage crate's result type.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;
