//! The guards the pool hands out: [`PageRef`] (shared: a frame, a page in place, or an image in
//! memory) and [`PageMut`] (the writer's frame, exclusive).

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::atomic::Ordering;

use nvpage_storage::PageId;

use super::{BufferPool, PageState};

thread_local! {
    /// Frames this thread's guards pin: a writer short of frames waits for other threads'
    /// guards, never for its own.
    static GUARD_PINS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn guard_pinned() {
    GUARD_PINS.with(|n| n.set(n.get() + 1));
}

fn guard_unpinned() {
    GUARD_PINS.with(|n| n.set(n.get() - 1));
}

/// How many frames the calling thread's guards pin.
pub(super) fn pins_held_here() -> usize {
    GUARD_PINS.with(std::cell::Cell::get)
}
use crate::held::{self, LatchKind};
use crate::versions::PageImage;

#[derive(Debug)]
enum RefKind<'a> {
    /// A frame, pinned and latched shared (the writer's frame, read in the writer's view).
    Frame(usize),
    /// A shared frame, filled: pinned only (its bytes cannot change while it is pinned).
    SharedFrame(usize),
    /// A page in place in the mapping (SE2), its page latch held shared: the page's state (where
    /// the latch is) and id.
    Mapped(&'a PageState, u64),
    /// Bytes in memory of their own: an old version, or a reader's private copy.
    Owned(PageImage),
}

/// A shared guard on a page: a frame, the page in place in the mapping (SE2), or an image held
/// in memory (an old version for a snapshot, or a private copy). Derefs to the whole page,
/// envelope included (payload starts at `nvpage_storage::page::PAGE_HEADER_LEN`). Not `Send`:
/// latches are released on the thread that took them.
#[derive(Debug)]
pub struct PageRef<'a> {
    pool: &'a BufferPool,
    kind: RefKind<'a>,
    ptr: NonNull<u8>,
    _not_send: PhantomData<*const ()>,
}

impl<'a> PageRef<'a> {
    /// Frame `f`, which the caller pinned and latched shared (and recorded as held).
    pub(super) fn frame(pool: &'a BufferPool, f: usize) -> Self {
        guard_pinned();
        PageRef { pool, kind: RefKind::Frame(f), ptr: pool.frame_bytes(f), _not_send: PhantomData }
    }

    /// Shared frame `f`, which the caller pinned after it was filled (`ready`).
    pub(super) fn shared_frame(pool: &'a BufferPool, f: usize) -> Self {
        guard_pinned();
        PageRef {
            pool,
            kind: RefKind::SharedFrame(f),
            ptr: pool.frame_bytes(f),
            _not_send: PhantomData,
        }
    }

    /// Page `id` in place at `ptr`; the caller holds its page latch shared (recorded as held).
    #[inline(always)]
    pub(super) fn mapped(
        pool: &'a BufferPool,
        st: &'a PageState,
        id: PageId,
        ptr: NonNull<u8>,
    ) -> Self {
        PageRef { pool, kind: RefKind::Mapped(st, id.0), ptr, _not_send: PhantomData }
    }

    /// An image in memory.
    pub(super) fn owned(pool: &'a BufferPool, image: PageImage) -> Self {
        let ptr = NonNull::from(image.page()).cast::<u8>();
        PageRef { pool, kind: RefKind::Owned(image), ptr, _not_send: PhantomData }
    }

    /// Whether the guard points into the mapping (SE2) rather than at a frame or an image.
    pub fn is_redirected(&self) -> bool {
        matches!(self.kind, RefKind::Mapped(..))
    }

    /// Whether the guard holds bytes of its own (an old version, or a private copy).
    pub fn is_owned(&self) -> bool {
        matches!(self.kind, RefKind::Owned(_))
    }
}

impl Deref for PageRef<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match &self.kind {
            RefKind::Owned(image) => image.page(),
            // SAFETY: for a frame, the guard holds the frame's latch shared and a pin, so the
            // frame holds this page and nobody writes it (a writer frame is written only under
            // its exclusive latch). For a filled shared frame, the pin alone: a shared frame is
            // never written once filled — the writer changes frames of its own, and reusing
            // the frame needs a claim, which a pin excludes. For a page in place, the guard
            // holds the page's latch shared, which every store into the page in place takes
            // exclusively (the pool owns the layer, and nothing else writes the file:
            // docs/mmap-soundness.md), and the page is below the page count, inside the
            // mapping, which outlives the pool's borrow.
            RefKind::Frame(_) | RefKind::SharedFrame(_) | RefKind::Mapped(..) => unsafe {
                std::slice::from_raw_parts(self.ptr.as_ptr(), self.pool.page_size)
            },
        }
    }
}

impl Drop for PageRef<'_> {
    #[inline]
    fn drop(&mut self) {
        let pool = self.pool;
        match self.kind {
            RefKind::Frame(f) => release_writer_frame(pool, f),
            RefKind::SharedFrame(f) => {
                pool.unpin(&pool.metas[f]);
                guard_unpinned();
            }
            RefKind::Mapped(st, page) => pool.unlock_page_shared(st, PageId(page)),
            RefKind::Owned(_) => {}
        }
    }
}

/// Releases a read guard on the writer's frame `f`: out of line, so that the hits' releases
/// (shared frames, SE2's pages), inlined where guards drop, stay small.
#[inline(never)]
fn release_writer_frame(pool: &BufferPool, f: usize) {
    let m = &pool.metas[f];
    held::pop(pool.key(LatchKind::Frame, f as u64), false);
    // SAFETY: the guard took this latch shared and releases it once.
    unsafe { m.latch.unlock_shared() };
    pool.unpin(m);
    guard_unpinned();
}

/// An exclusive guard on the writer's frame of a page. The page is dirty. Derefs to the whole
/// page; bytes below `nvpage_storage::page::PAGE_HEADER_LEN` are overwritten by write-back's
/// envelope. Not `Send`.
#[derive(Debug)]
pub struct PageMut<'a> {
    pool: &'a BufferPool,
    frame: usize,
    _not_send: PhantomData<*const ()>,
}

impl<'a> PageMut<'a> {
    /// Frame `frame`, which the caller pinned and latched exclusively (and recorded as held).
    pub(super) fn new(pool: &'a BufferPool, frame: usize) -> Self {
        guard_pinned();
        PageMut { pool, frame, _not_send: PhantomData }
    }

    /// Whether [`Self::set_verified`] was called on this page's frame since its bytes were
    /// filled (copied from the page's current bytes, or zeroed). A caller that checks a page's
    /// structure before it changes it, and changes it only in ways that keep it sound, checks
    /// it once per filling rather than at every change: the frame is the writer's own, and no
    /// one else stores into it.
    pub fn verified(&self) -> bool {
        self.pool.metas[self.frame].verified.load(Ordering::Relaxed)
    }

    /// Records that the caller checked this frame's bytes (see [`Self::verified`]).
    pub fn set_verified(&mut self) {
        self.pool.metas[self.frame].verified.store(true, Ordering::Relaxed);
    }
}

impl Deref for PageMut<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the guard holds the frame's latch exclusively and a pin.
        unsafe {
            std::slice::from_raw_parts(
                self.pool.frame_bytes(self.frame).as_ptr(),
                self.pool.page_size,
            )
        }
    }
}

impl DerefMut for PageMut<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: the guard holds the frame's latch exclusively and a pin, and `&mut self` makes
        // this the only reference derived from it.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.pool.frame_bytes(self.frame).as_ptr(),
                self.pool.page_size,
            )
        }
    }
}

impl Drop for PageMut<'_> {
    fn drop(&mut self) {
        let m = &self.pool.metas[self.frame];
        held::pop(self.pool.key(LatchKind::Frame, self.frame as u64), true);
        // SAFETY: the guard holds this latch exclusively and releases it once.
        unsafe { m.latch.unlock_exclusive() };
        self.pool.unpin(m);
        guard_unpinned();
    }
}
