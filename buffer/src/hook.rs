//! The write-back hook: how the engine gets to persist a page's before-image before the page is
//! overwritten in place (DESIGN.md rule 1), and hands the pool that image to keep as an old
//! version for readers.

use nvpage_storage::{PageFile, PageId};

use crate::error::HookError;
use crate::versions::PageImage;

/// Called by the pool before it stores the first byte of a page into the file, its mapping or the
/// page cache.
pub trait WriteBackHook: Send + Sync + std::fmt::Debug {
    /// `page` is about to be written back into `file`, which still holds the page's old bytes
    /// (read them with `file.raw().read_at` to log a before-image). The image need not be
    /// durable when this returns: the pool calls [`WriteBackHook::persist`] before it stores
    /// the first byte of any page it called this for, so a commit that writes back k pages
    /// pays one persist for their k images, not k. An `Err` leaves the page dirty and is
    /// returned to the caller as [`BufferError::Hook`](crate::BufferError::Hook).
    ///
    /// `Ok(Some(image))` hands the pool the page's old bytes to keep as the version readers of
    /// older snapshots read (the buffer the hook filled for its log: no extra copy); `Ok(None)`
    /// when no reader can need one (a page the transaction allocated, one it already wrote back,
    /// or one readers never read through the pool).
    ///
    /// The hook runs on the writer's thread; it must not call back into the pool.
    fn before_write_back(
        &self,
        file: &PageFile,
        page: PageId,
    ) -> Result<Option<PageImage>, HookError>;

    /// Makes every image logged by [`WriteBackHook::before_write_back`] so far durable. The pool
    /// calls it before the first in-place store of the pages those calls were for, and proceeds
    /// only after it returns `Ok` (DESIGN.md rule 1). Cheap when nothing is pending.
    fn persist(&self) -> Result<(), HookError>;
}

/// A hook that logs nothing: for users who keep no undo log (bulk loads into a file that is thrown
/// away on failure, benchmarks, tests). With it, a crash during write-back can leave a mix of old
/// and new pages, and no old versions are kept.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoUndo;

impl WriteBackHook for NoUndo {
    fn before_write_back(
        &self,
        _file: &PageFile,
        _page: PageId,
    ) -> Result<Option<PageImage>, HookError> {
        Ok(None)
    }

    fn persist(&self) -> Result<(), HookError> {
        Ok(())
    }
}
