//! A guard-less reader-writer latch (parking_lot's raw lock): guards in `pool.rs` own the release.

use parking_lot::RawRwLock;
use parking_lot::lock_api::{RawRwLock as _, RawRwLockDowngrade as _, RawRwLockRecursive as _};

/// A reader-writer latch released explicitly by its holder.
pub(crate) struct Latch(RawRwLock);

impl std::fmt::Debug for Latch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Latch")
    }
}

impl Latch {
    pub(crate) const fn new() -> Self {
        Latch(RawRwLock::INIT)
    }

    /// Shared, recursively: granted even while a writer waits, so a thread that already reads can
    /// read again (a self-join) without deadlocking behind that writer.
    #[inline]
    pub(crate) fn lock_shared(&self) {
        self.0.lock_shared_recursive();
    }

    #[inline]
    pub(crate) fn lock_exclusive(&self) {
        self.0.lock_exclusive();
    }

    #[inline]
    pub(crate) fn try_lock_exclusive(&self) -> bool {
        self.0.try_lock_exclusive()
    }

    /// # Safety
    /// The caller holds the latch shared.
    #[inline]
    pub(crate) unsafe fn unlock_shared(&self) {
        // SAFETY: forwarded from the caller.
        unsafe { self.0.unlock_shared() }
    }

    /// # Safety
    /// The caller holds the latch exclusively.
    #[inline]
    pub(crate) unsafe fn unlock_exclusive(&self) {
        // SAFETY: forwarded from the caller.
        unsafe { self.0.unlock_exclusive() }
    }

    /// Turns the caller's exclusive hold into a shared one, letting waiting readers in.
    ///
    /// # Safety
    /// The caller holds the latch exclusively.
    #[inline]
    pub(crate) unsafe fn downgrade(&self) {
        // SAFETY: forwarded from the caller.
        unsafe { self.0.downgrade() }
    }
}
