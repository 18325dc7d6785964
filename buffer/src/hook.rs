//! The write-back hook: how the engine gets to persist a page's before-image before the page is
//! overwritten in place (DESIGN.md rule 1).

use nvpage_storage::{FileLayer, PageId};

use crate::error::HookError;

/// Called by the pool before it stores the first byte of a page into the file, its mapping or the
/// page cache.
pub trait WriteBackHook: Send + Sync + std::fmt::Debug {
    /// `page` is about to be written back through `layer`, which still holds the page's old bytes
    /// (read them with [`FileLayer::read_page`] to log a before-image). Write-back proceeds only
    /// after this returns `Ok`; an `Err` leaves the page dirty and is returned to the caller as
    /// [`BufferError::Hook`](crate::BufferError::Hook).
    ///
    /// The hook runs while the pool holds the page's frame (and, in SE2, the page's mapped latch)
    /// exclusively: it must not call back into the pool.
    fn before_write_back(&self, layer: &dyn FileLayer, page: PageId) -> Result<(), HookError>;
}

/// A hook that logs nothing: for users who keep no undo log (bulk loads into a file that is thrown
/// away on failure, benchmarks, tests). With it, a crash during write-back can leave a mix of old
/// and new pages.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoUndo;

impl WriteBackHook for NoUndo {
    fn before_write_back(&self, _layer: &dyn FileLayer, _page: PageId) -> Result<(), HookError> {
        Ok(())
    }
}
