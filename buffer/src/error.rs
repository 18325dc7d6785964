//! The buffer manager's one error type.

use nvpage_storage::{PageId, StorageError};

/// An error the write-back hook returns; the buffer manager passes it up unchanged.
pub type HookError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong in the buffer manager.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BufferError {
    /// The file layer failed (I/O, checksum, out-of-range page, poisoned file, ...).
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The write-back hook refused or failed for `page`: nothing of it was stored.
    #[error("write-back hook failed for page {page}: {source}")]
    Hook {
        /// The page that was to be written back.
        page: PageId,
        /// The hook's error.
        #[source]
        source: HookError,
    },
    /// Every frame is pinned (or busy) and another page is needed: on a thread that does not
    /// run the write transaction (a reader then reads a private copy instead), or on the
    /// writer's thread where its own guards pin every frame (it waits for other threads' pins).
    #[error("all {frames} frames are pinned or busy: no frame for page {page}")]
    PoolExhausted {
        /// The page that needed a frame.
        page: PageId,
        /// The pool's size.
        frames: usize,
    },
    /// This thread already holds a latch on `page` that the request conflicts with: waiting
    /// would deadlock the thread on itself.
    #[error("this thread already holds a conflicting latch on page {page}: waiting would deadlock")]
    LatchHeld {
        /// The page.
        page: PageId,
    },
    /// A snapshot needs an old version of `page` that is no longer kept: the bound on versions'
    /// memory freed it (every version of a commit at or below `horizon` is gone).
    #[error(
        "snapshot {snapshot} is too old: page {page} changed since, and versions up to commit {horizon} were freed"
    )]
    SnapshotTooOld {
        /// The page read.
        page: PageId,
        /// The reader's snapshot (commit number).
        snapshot: u64,
        /// The versions' horizon.
        horizon: u64,
    },
    /// A snapshot above the versions' horizon found no version of a page that changed after
    /// it: a bug (every page stored in place keeps one), reported rather than read wrongly.
    #[error("no version of page {page} for snapshot {snapshot}: a bug, please report it")]
    VersionMissing {
        /// The page read.
        page: PageId,
        /// The reader's snapshot.
        snapshot: u64,
    },
    /// The page is pinned by a guard and cannot be discarded or evicted now.
    #[error("page {page} is in use by a guard")]
    PagePinned {
        /// The page.
        page: PageId,
    },
    /// The memory for this many frames could not be had.
    #[error("cannot allocate a pool of {frames} frames of {page_size} bytes")]
    PoolTooLarge {
        /// Frames asked for.
        frames: usize,
        /// Bytes per frame.
        page_size: usize,
    },
    /// The pool needs at least this many frames.
    #[error("a pool needs at least {min} frames, {requested} requested")]
    TooFewFrames {
        /// Frames asked for.
        requested: usize,
        /// The minimum.
        min: usize,
    },
}

/// The buffer manager's result type.
pub type Result<T, E = BufferError> = std::result::Result<T, E>;
