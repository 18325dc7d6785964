//! Frames: page-size-aligned memory, and each frame's metadata.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

use crate::latch::Latch;
use crate::pin::PinState;

/// The page id of a frame that holds no page.
pub(crate) const NO_PAGE: u64 = u64::MAX;
/// The clock's usage count saturates here (PostgreSQL's `BM_MAX_USAGE_COUNT`).
pub(crate) const MAX_USAGE: u8 = 5;

/// One frame's state. The page bytes live in [`FrameMemory`].
#[derive(Debug)]
pub(crate) struct FrameMeta {
    /// The page held, or [`NO_PAGE`]. Written only by the frame's claimer or loader.
    pub(crate) page: AtomicU64,
    pub(crate) pins: PinState,
    pub(crate) usage: AtomicU8,
    pub(crate) dirty: AtomicBool,
    /// Guards the frame's bytes: shared for readers, exclusive for writers and write-back.
    pub(crate) latch: Latch,
}

impl FrameMeta {
    pub(crate) fn new() -> Self {
        Self {
            page: AtomicU64::new(NO_PAGE),
            pins: PinState::new(),
            usage: AtomicU8::new(0),
            dirty: AtomicBool::new(false),
            latch: Latch::new(),
        }
    }

    pub(crate) fn page(&self) -> u64 {
        self.page.load(Ordering::Acquire)
    }

    /// Marks a use for the clock.
    #[inline]
    pub(crate) fn touch(&self) {
        let u = self.usage.load(Ordering::Relaxed);
        if u < MAX_USAGE {
            self.usage.store(u + 1, Ordering::Relaxed);
        }
    }
}

/// The frames' bytes: one allocation, every frame aligned to the page size.
#[derive(Debug)]
pub(crate) struct FrameMemory {
    base: NonNull<u8>,
    layout: Layout,
    page_size: usize,
}

// SAFETY: the memory is a plain heap allocation owned by this value; access to each frame's bytes
// is synchronised by that frame's latch (see `pool.rs`), not by this type.
unsafe impl Send for FrameMemory {}
// SAFETY: as above.
unsafe impl Sync for FrameMemory {}

impl FrameMemory {
    pub(crate) fn new(frames: usize, page_size: usize) -> Self {
        let layout = Layout::from_size_align(frames * page_size, page_size)
            .expect("page size is a power of two and the pool fits the address space");
        // SAFETY: the layout has a nonzero size (frames >= 1, page_size >= 4096).
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let base = NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        Self { base, layout, page_size }
    }

    /// The first byte of frame `f`.
    pub(crate) fn ptr(&self, f: usize) -> NonNull<u8> {
        debug_assert!((f + 1) * self.page_size <= self.layout.size());
        // SAFETY: `f` is a frame index below the pool's size, so the offset is inside the
        // allocation.
        unsafe { self.base.add(f * self.page_size) }
    }
}

impl Drop for FrameMemory {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.base.as_ptr(), self.layout) };
    }
}
