//! Frames: page-size-aligned memory, and each frame's metadata.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering};

use crate::latch::Latch;
use crate::pin::PinState;

/// The page id of a frame that holds no page.
pub(crate) const NO_PAGE: u64 = u64::MAX;
/// The clock's usage count saturates here (PostgreSQL's `BM_MAX_USAGE_COUNT`).
pub(crate) const MAX_USAGE: u8 = 5;

/// Whose a frame is (DESIGN.md R2): readers use only shared frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Owner {
    /// Bytes read from the file at `fill_stamp`, never changed while published: any view whose
    /// check passes may read them.
    Shared = 0,
    /// The running writer's private, dirty copy.
    Writer = 1,
}

/// One frame's state. The page bytes live in [`FrameMemory`].
#[derive(Debug)]
pub(crate) struct FrameMeta {
    /// The page held, or [`NO_PAGE`]. Written only by the frame's claimer or loader.
    pub(crate) page: AtomicU64,
    pub(crate) pins: PinState,
    pub(crate) usage: AtomicU8,
    pub(crate) dirty: AtomicBool,
    /// An [`Owner`]; changed only by the frame's claimer, or by the write-back that holds it
    /// exclusively.
    owner: AtomicU8,
    /// For a shared frame: the page's stamp when its bytes were read from the file.
    pub(crate) fill_stamp: AtomicU64,
    /// For a shared frame: its bytes are filled and will not change while it is pinned, so a
    /// reader needs only a pin (no latch). False while a loader fills it (readers then wait on
    /// the latch the loader holds) and for writer frames.
    pub(crate) ready: AtomicBool,
    /// Write guards handed out on the frame (wrapping): a write-back compares it across its hook
    /// call and its store, to find a frame another thread changed in between (possible only
    /// outside a write transaction, where any thread may write).
    pub(crate) writes: AtomicU32,
    /// For a writer frame: its user checked its bytes' structure since the frame was last
    /// filled ([`crate::PageMut::verified`]). Cleared whenever a frame is filled for the writer.
    pub(crate) verified: AtomicBool,
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
            owner: AtomicU8::new(Owner::Shared as u8),
            fill_stamp: AtomicU64::new(0),
            ready: AtomicBool::new(false),
            writes: AtomicU32::new(0),
            verified: AtomicBool::new(false),
            latch: Latch::new(),
        }
    }

    pub(crate) fn page(&self) -> u64 {
        self.page.load(Ordering::Acquire)
    }

    pub(crate) fn owner(&self) -> Owner {
        if self.owner.load(Ordering::Acquire) == Owner::Writer as u8 {
            Owner::Writer
        } else {
            Owner::Shared
        }
    }

    pub(crate) fn set_owner(&self, owner: Owner) {
        self.owner.store(owner as u8, Ordering::Release);
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

/// The frames' bytes: one anonymous private mapping, every frame aligned to the page size.
///
/// Not `std::alloc::alloc_zeroed`: for an alignment above malloc's (16 bytes) the system
/// allocator allocates, then zeroes the whole block with `memset`, which faults in every page of
/// the pool at once. A default 64 MiB pool then cost 64 MiB of resident memory and about 35 ms
/// at every open, before a single page was read. The kernel zero-fills an anonymous mapping page
/// by page on first touch, so a pool costs memory as its frames are first used.
///
/// The mapping asks for transparent huge pages (`MADV_HUGEPAGE`; where the kernel's setting is
/// `madvise` or `always`, and ignored where it is `never`): a frame read through 2 MiB pages
/// costs no TLB miss per 4 KiB. Random reads of pages held in frames are where that shows:
/// point lookups (kv bench, 1 M entries on tmpfs, one thread, the build before and this one
/// alternated, four runs each) with the pool holding all the data ran 6–32% faster with pread
/// and 8–23% with SE1; with a tenth in the pool, within their spread (the copies, not the TLB,
/// cost there). SE2 reads in place, through the file's mapping, and its runs were within ±5%
/// either way (six each); TPC-H Q1 and Q6 ran within their spread on every layer. The cost,
/// where the kernel grants huge pages: a pool's memory grows in steps of up to 2 MiB as frames
/// are first used; a first touch zeroes 2 MiB and, with the kernel's default
/// `defrag=madvise`, may wait for it to compact memory; and its background collapser may later
/// make a partly used 2 MiB range wholly resident.
#[derive(Debug)]
pub(crate) struct FrameMemory {
    /// The first frame: `region` rounded up to the page size.
    base: NonNull<u8>,
    /// What was mapped (or, under Miri, allocated): the frames plus up to a page of slack for the
    /// alignment.
    region: NonNull<u8>,
    region_bytes: usize,
    page_size: usize,
}

// SAFETY: the memory is a plain mapping owned by this value; access to each frame's bytes is
// synchronised by that frame's latch (see `pool.rs`), not by this type.
unsafe impl Send for FrameMemory {}
// SAFETY: as above.
unsafe impl Sync for FrameMemory {}

impl FrameMemory {
    /// The frames' memory, zeroed; `None` if it does not fit the address space or the OS (or
    /// the allocator) refuses it.
    pub(crate) fn new(frames: usize, page_size: usize) -> Option<Self> {
        let bytes = frames.checked_mul(page_size)?;
        // The mapping is aligned to the OS page only; a page of slack lets the first frame start
        // on a page-size boundary.
        let region_bytes = bytes.checked_add(page_size)?;
        let region = Self::map(region_bytes)?;
        let skip = region.as_ptr().addr().next_multiple_of(page_size) - region.as_ptr().addr();
        // SAFETY: `skip < page_size`, so the first frame lies inside the region (and the last
        // ends within it: `skip + bytes <= region_bytes`).
        let base = unsafe { region.add(skip) };
        Some(Self { base, region, region_bytes, page_size })
    }

    #[cfg(not(miri))]
    fn map(bytes: usize) -> Option<NonNull<u8>> {
        // SAFETY: a fresh anonymous mapping at an address the kernel chooses (no MAP_FIXED), so
        // no existing memory is replaced; it is read and written only through `ptr`.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        // Huge pages where the kernel allows them (see the type's doc); a refusal changes nothing.
        // SAFETY: `p..p + bytes` is the mapping just made; the advice changes no contents.
        let _ = unsafe { libc::madvise(p, bytes, libc::MADV_HUGEPAGE) };
        NonNull::new(p.cast::<u8>())
    }

    /// Under Miri, which checks the frames' accesses, not their cost: zeroed heap memory.
    #[cfg(miri)]
    fn map(bytes: usize) -> Option<NonNull<u8>> {
        let layout = Self::miri_layout(bytes)?;
        // SAFETY: the layout has a nonzero size (frames >= 1, page_size >= 4096).
        NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })
    }

    #[cfg(miri)]
    fn miri_layout(bytes: usize) -> Option<std::alloc::Layout> {
        std::alloc::Layout::from_size_align(bytes, 16).ok()
    }

    /// The first byte of frame `f`.
    pub(crate) fn ptr(&self, f: usize) -> NonNull<u8> {
        debug_assert!((f + 1) * self.page_size <= self.region_bytes - self.page_size);
        // SAFETY: `f` is a frame index below the pool's size, so the offset is inside the
        // frames.
        unsafe { self.base.add(f * self.page_size) }
    }
}

impl Drop for FrameMemory {
    fn drop(&mut self) {
        #[cfg(not(miri))]
        // SAFETY: the region was mapped in `new` with this length and is unmapped once; no frame
        // is referenced any more (the pool, which hands them out, is being dropped).
        unsafe {
            libc::munmap(self.region.as_ptr().cast(), self.region_bytes)
        };
        #[cfg(miri)]
        {
            let layout = Self::miri_layout(self.region_bytes).expect("checked when allocated");
            // SAFETY: allocated in `map` with this layout, freed once.
            unsafe { std::alloc::dealloc(self.region.as_ptr(), layout) };
        }
    }
}

// Built against std's atomics: with the `shuttle` feature `PinState` runs only on shuttle's
// scheduler.
#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    use std::thread;

    use super::{FrameMemory, FrameMeta, NO_PAGE};

    const PAGE: usize = 4096;
    const ITERS: usize = if cfg!(miri) { 50 } else { 10_000 };

    /// The bytes page `id` holds in these tests: every byte the id's low byte.
    fn pattern(id: u64) -> [u8; PAGE] {
        [id as u8; PAGE]
    }

    #[test]
    fn frames_are_aligned_zeroed_and_disjoint() {
        let mem = FrameMemory::new(4, PAGE).unwrap();
        for f in 0..4 {
            assert_eq!(mem.ptr(f).as_ptr().addr() % PAGE, 0);
            // SAFETY: frame `f` is `PAGE` bytes inside the allocation, and this test alone uses it.
            let bytes = unsafe { std::slice::from_raw_parts(mem.ptr(f).as_ptr(), PAGE) };
            assert_eq!(bytes, &[0u8; PAGE][..]);
        }
        for f in 0..4 {
            // SAFETY: as above; no other reference to the frame is alive.
            let bytes = unsafe { std::slice::from_raw_parts_mut(mem.ptr(f).as_ptr(), PAGE) };
            bytes.copy_from_slice(&pattern(f as u64 + 1));
        }
        for f in 0..4 {
            // SAFETY: as above.
            let bytes = unsafe { std::slice::from_raw_parts(mem.ptr(f).as_ptr(), PAGE) };
            assert_eq!(bytes, &pattern(f as u64 + 1)[..], "frame {f} overwritten by a neighbour");
        }
    }

    /// One frame, the pool's protocol for shared frames: a loader claims it only when unpinned,
    /// marks it not ready, publishes a new page id, fills the bytes under the exclusive latch,
    /// marks it ready and lets the latch go; two readers pin it and, if it is not ready yet, wait
    /// for the fill on the latch, then read under the pin alone and must find the bytes of the
    /// page id they read. Miri checks that the frame's bytes are never written while anyone
    /// reads them.
    #[test]
    fn loads_and_reads_of_one_frame_race_safely() {
        let meta = Arc::new(FrameMeta::new());
        let mem = Arc::new(FrameMemory::new(1, PAGE).unwrap());
        let loader = {
            let (meta, mem) = (Arc::clone(&meta), Arc::clone(&mem));
            thread::spawn(move || {
                let mut last = None;
                for id in 0..ITERS as u64 {
                    if !meta.pins.try_claim() {
                        continue;
                    }
                    meta.ready.store(false, Ordering::Release);
                    meta.page.store(id, Ordering::Release);
                    meta.latch.lock_exclusive();
                    meta.pins.claim_to_pin();
                    // SAFETY: exclusive latch held: readers that pinned since wait on it.
                    let bytes =
                        unsafe { std::slice::from_raw_parts_mut(mem.ptr(0).as_ptr(), PAGE) };
                    bytes.copy_from_slice(&pattern(id));
                    meta.ready.store(true, Ordering::Release);
                    // SAFETY: held exclusively, taken above by this thread.
                    unsafe { meta.latch.unlock_exclusive() };
                    // SAFETY: pinned and ready: nobody writes the bytes until a claim.
                    let bytes = unsafe { std::slice::from_raw_parts(mem.ptr(0).as_ptr(), PAGE) };
                    assert_eq!(bytes, &pattern(id)[..]);
                    meta.pins.unpin();
                    last = Some(id);
                }
                last
            })
        };
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (meta, mem) = (Arc::clone(&meta), Arc::clone(&mem));
                thread::spawn(move || {
                    for _ in 0..ITERS {
                        if !meta.pins.try_pin() {
                            continue;
                        }
                        if !meta.ready.load(Ordering::Acquire) {
                            // A fill in progress (or none yet): wait for the loader's latch.
                            meta.latch.lock_shared();
                            // SAFETY: locked shared just above by this thread.
                            unsafe { meta.latch.unlock_shared() };
                            if !meta.ready.load(Ordering::Acquire) {
                                meta.pins.unpin();
                                continue;
                            }
                        }
                        meta.touch();
                        let id = meta.page();
                        // SAFETY: pinned and ready: no loader can claim the frame to write it.
                        let bytes =
                            unsafe { std::slice::from_raw_parts(mem.ptr(0).as_ptr(), PAGE) };
                        assert_eq!(bytes, &pattern(id)[..], "page {id} read torn");
                        meta.pins.unpin();
                    }
                })
            })
            .collect();
        readers.into_iter().for_each(|t| t.join().unwrap());
        let last = loader.join().unwrap();
        assert_eq!(meta.page(), last.unwrap_or(NO_PAGE), "the last load's page id stays");
        assert_eq!((meta.pins.pins(), meta.pins.is_claimed()), (0, false));
        assert!(meta.usage.load(Ordering::Relaxed) <= super::MAX_USAGE);
    }
}
