//! [`BufferPool`]: lookups, loads, copy-on-write, replacement and write-back.
//!
//! Protocol, in one place:
//! - The page table maps a page id to `frame + 1` (0: not resident). A lookup pins the frame it
//!   finds (see `pin.rs`), then re-checks the frame's page id: the frame may have been reused.
//! - A frame is taken for another page only after [`PinState::try_claim`] succeeded (no pins, so no
//!   guards and no latch holders). The claimer writes a dirty victim back, removes its table entry
//!   and loads the new page under the frame's exclusive latch, having published the frame in the
//!   table first so that concurrent lookups of the new page wait on the latch rather than load it
//!   twice. A failed load unpublishes the frame before releasing the latch; waiters re-check the
//!   page id and retry.
//! - SE2 reads of pages that have no frame are served in place from the mapping under the page's
//!   *mapped latch*, held shared for the guard's lifetime. A write-back into the mapping holds that
//!   latch exclusively: on request it waits for redirected readers, before it takes the frame's
//!   latch (a redirected reader may take the frame's latch next); eviction only tries, and skips
//!   a busy page. Shared latches are taken recursively, so a self-join never deadlocks behind a
//!   waiting write-back; a request that would wait on the calling thread itself is
//!   [`BufferError::LatchHeld`].
//! - Before the first byte of a page is stored into the file or its mapping, the pool calls the
//!   [`WriteBackHook`] and proceeds only after it returns `Ok`.

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;
use nvpage_storage::{FileLayer, Layer, PageId};

use crate::chunked::Chunked;
use crate::counters::{Counter, CounterSlots, Counters};
use crate::error::{BufferError, Result};
use crate::frame::{FrameMemory, FrameMeta, NO_PAGE};
use crate::held::{self, LatchKey, LatchKind};
use crate::hook::WriteBackHook;
use crate::latch::Latch;

/// The smallest pool: enough frames for a self-join plus a write.
pub const MIN_FRAMES: usize = 4;

/// A pool of page frames over one file layer.
#[derive(Debug)]
pub struct BufferPool {
    id: usize,
    layer: Box<dyn FileLayer>,
    page_size: usize,
    metas: Box<[CachePadded<FrameMeta>]>,
    memory: FrameMemory,
    table: Chunked<AtomicU32>,
    mapped_latches: Option<Chunked<Latch>>,
    hand: AtomicUsize,
    hook: Arc<dyn WriteBackHook>,
    counters: CounterSlots,
}

/// SE2's mapped latch of a page about to be written back.
enum MappedHold<'a> {
    /// Not SE2: nothing is read in place, there is no latch to take.
    NotMapped,
    /// Held exclusively by the caller, who hands it to [`BufferPool::write_back_frame`].
    Held(&'a Latch),
    /// A redirected reader holds it (only when not waiting).
    Busy,
}

#[derive(Clone, Copy)]
enum LoadKind {
    Read,
    Write,
    New,
}

enum LoadError {
    /// Another thread published the page first: look it up again.
    Retry,
    Failed(BufferError),
}

impl From<BufferError> for LoadError {
    fn from(e: BufferError) -> Self {
        LoadError::Failed(e)
    }
}

impl BufferPool {
    /// A pool of `frames` frames over `layer`, writing back through `hook`.
    pub fn new(
        layer: Box<dyn FileLayer>,
        frames: usize,
        hook: Arc<dyn WriteBackHook>,
    ) -> Result<Self> {
        if frames < MIN_FRAMES {
            return Err(BufferError::TooFewFrames { requested: frames, min: MIN_FRAMES });
        }
        static NEXT_ID: AtomicUsize = AtomicUsize::new(1);
        let page_size = layer.file().page_size().bytes();
        let max_pages = layer.file().raw().max_bytes() / page_size as u64;
        let mapped_latches =
            (layer.layer() == Layer::Se2).then(|| Chunked::new(max_pages, Latch::new));
        // A size the machine cannot hold is a typed error, not an abort.
        let too_large = || BufferError::PoolTooLarge { frames, page_size };
        let mut metas = Vec::new();
        metas.try_reserve_exact(frames).map_err(|_| too_large())?;
        metas.extend((0..frames).map(|_| CachePadded::new(FrameMeta::new())));
        let memory = FrameMemory::new(frames, page_size).ok_or_else(too_large)?;
        Ok(Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            page_size,
            metas: metas.into_boxed_slice(),
            memory,
            table: Chunked::new(max_pages, || AtomicU32::new(0)),
            mapped_latches,
            hand: AtomicUsize::new(0),
            hook,
            counters: CounterSlots::new(),
            layer,
        })
    }

    /// The file layer under the pool.
    pub fn layer(&self) -> &dyn FileLayer {
        &*self.layer
    }

    /// The page size in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// The number of frames.
    pub fn frames(&self) -> usize {
        self.metas.len()
    }

    /// What the pool has done so far.
    pub fn counters(&self) -> Counters {
        self.counters.snapshot()
    }

    /// A ring of frames for one large sequential scan (see [`ScanRing`]).
    pub fn scan_ring(&self) -> ScanRing {
        ScanRing { pool: self.id, slots: vec![None; (self.frames() / 8).clamp(1, 16)], next: 0 }
    }

    fn key(&self, kind: LatchKind, index: u64) -> LatchKey {
        LatchKey { pool: self.id, kind, index }
    }

    fn frame_bytes(&self, f: usize) -> NonNull<u8> {
        self.memory.ptr(f)
    }

    /// Pins the frame holding `id`, if the page is resident.
    fn lookup_pin(&self, id: PageId) -> Option<usize> {
        let entry = self.table.get(id.0)?;
        loop {
            let e = entry.load(Ordering::Acquire);
            if e == 0 {
                return None;
            }
            let f = (e - 1) as usize;
            let m = &self.metas[f];
            if !m.pins.try_pin() {
                // Being evicted or reused: its claimer will unpublish it shortly.
                std::thread::yield_now();
                continue;
            }
            if m.page() == id.0 {
                return Some(f);
            }
            m.pins.unpin();
        }
    }

    /// Latches pinned frame `f` for `id`; `Ok(false)` if the frame no longer holds `id` (a load
    /// failed), in which case the latch and pin are released.
    fn latch_frame(&self, f: usize, id: PageId, exclusive: bool) -> Result<bool> {
        let m = &self.metas[f];
        let key = self.key(LatchKind::Frame, f as u64);
        if !held::may_take(key, exclusive) {
            m.pins.unpin();
            return Err(BufferError::LatchHeld { page: id });
        }
        if exclusive {
            m.latch.lock_exclusive()
        } else {
            m.latch.lock_shared()
        }
        if m.page() != id.0 {
            // SAFETY: locked just above by this thread, in this mode.
            unsafe { if exclusive { m.latch.unlock_exclusive() } else { m.latch.unlock_shared() } }
            m.pins.unpin();
            return Ok(false);
        }
        held::push(key, exclusive);
        m.touch();
        Ok(true)
    }

    /// A shared guard on page `id`: the private frame if the page has one, else (SE2) the page in
    /// place in the mapping, else a frame loaded from the file.
    pub fn read(&self, id: PageId) -> Result<PageRef<'_>> {
        self.read_inner(id, None)
    }

    /// As [`BufferPool::read`], for one page of a large sequential scan: a miss reuses the scan's
    /// own ring of frames instead of pushing other pages out of the pool.
    pub fn read_scan(&self, id: PageId, ring: &mut ScanRing) -> Result<PageRef<'_>> {
        debug_assert_eq!(ring.pool, self.id, "a scan ring belongs to the pool that made it");
        self.read_inner(id, Some(ring))
    }

    fn read_inner(&self, id: PageId, mut ring: Option<&mut ScanRing>) -> Result<PageRef<'_>> {
        self.layer.file().check_id(id)?;
        loop {
            if let Some(f) = self.lookup_pin(id) {
                if !self.latch_frame(f, id, false)? {
                    continue;
                }
                self.counters.add(Counter::Hit, 1);
                return Ok(PageRef::frame(self, f));
            }
            if self.mapped_latches.is_some() {
                match self.read_mapped(id)? {
                    Some(guard) => return Ok(guard),
                    None => continue,
                }
            }
            match self.load(id, ring.as_deref_mut(), LoadKind::Read) {
                Ok(f) => return Ok(PageRef::frame(self, f)),
                Err(LoadError::Retry) => continue,
                Err(LoadError::Failed(e)) => return Err(e),
            }
        }
    }

    /// SE2: a guard on the page in place, or `None` if a frame appeared meanwhile.
    fn read_mapped(&self, id: PageId) -> Result<Option<PageRef<'_>>> {
        let latches = self.mapped_latches.as_ref().expect("SE2 pools have mapped latches");
        let latch = latches.get_or_alloc(id.0).ok_or_else(|| out_of_range(self, id))?;
        let key = self.key(LatchKind::Mapped, id.0);
        if !held::may_take(key, false) {
            return Err(BufferError::LatchHeld { page: id });
        }
        latch.lock_shared();
        let release = || {
            // SAFETY: locked shared just above by this thread.
            unsafe { latch.unlock_shared() }
        };
        if self.table.get(id.0).is_some_and(|e| e.load(Ordering::Acquire) != 0) {
            release();
            return Ok(None);
        }
        match self.layer.mapped_page(id) {
            Ok(Some(ptr)) => {
                held::push(key, false);
                self.counters.add(Counter::Redirected, 1);
                Ok(Some(PageRef {
                    pool: self,
                    kind: RefKind::Mapped(id.0),
                    ptr,
                    _not_send: PhantomData,
                }))
            }
            Ok(None) => unreachable!("the SE2 layer always maps"),
            Err(e) => {
                release();
                Err(e.into())
            }
        }
    }

    /// An exclusive guard on page `id` for changing it; the page is marked dirty. In SE2 the page
    /// is first copied into a private frame (copy-on-write): the mapping keeps the old bytes until
    /// write-back.
    pub fn write(&self, id: PageId) -> Result<PageMut<'_>> {
        self.exclusive(id, LoadKind::Write)
    }

    /// An exclusive guard on page `id` with its bytes zeroed and nothing read from the file, for
    /// a page being (re)initialised. The page is marked dirty.
    pub fn new_page(&self, id: PageId) -> Result<PageMut<'_>> {
        self.exclusive(id, LoadKind::New)
    }

    /// What `write` and `new_page` share: the page's frame latched exclusively and marked dirty,
    /// loaded (`Write`) or zeroed (`New`) if it was not resident, zeroed too if it was and `New`.
    fn exclusive(&self, id: PageId, kind: LoadKind) -> Result<PageMut<'_>> {
        self.layer.file().check_id(id)?;
        self.layer.file().raw().check_writable()?;
        loop {
            if let Some(f) = self.lookup_pin(id) {
                if !self.latch_frame(f, id, true)? {
                    continue;
                }
                self.metas[f].dirty.store(true, Ordering::Release);
                let mut g = PageMut::new(self, f);
                match kind {
                    LoadKind::New => g.fill(0),
                    _ => self.counters.add(Counter::Hit, 1),
                }
                return Ok(g);
            }
            match self.load(id, None, kind) {
                Ok(f) => return Ok(PageMut::new(self, f)),
                Err(LoadError::Retry) => continue,
                Err(LoadError::Failed(e)) => return Err(e),
            }
        }
    }

    /// Takes a frame, publishes it for `id`, and fills it. Returns the frame pinned and latched:
    /// shared for `Read`, exclusive (and dirty) otherwise.
    fn load(
        &self,
        id: PageId,
        ring: Option<&mut ScanRing>,
        kind: LoadKind,
    ) -> Result<usize, LoadError> {
        let scan = ring.is_some();
        // Before claiming: an error after the claim would leave the frame claimed.
        let entry = self.table.get_or_alloc(id.0).ok_or_else(|| out_of_range(self, id))?;
        let f = self.claim_victim(id, ring)?;
        let m = &self.metas[f];
        m.page.store(id.0, Ordering::Release);
        m.usage.store(u8::from(!scan), Ordering::Relaxed);
        // Uncontended: a claimed frame has no pins, hence no latch holders.
        m.latch.lock_exclusive();
        m.pins.claim_to_pin();
        let undo = || {
            m.page.store(NO_PAGE, Ordering::Release);
            // SAFETY: locked exclusive above by this thread.
            unsafe { m.latch.unlock_exclusive() };
            m.pins.unpin();
        };
        if entry.compare_exchange(0, f as u32 + 1, Ordering::AcqRel, Ordering::Acquire).is_err() {
            undo();
            return Err(LoadError::Retry);
        }
        // SAFETY: the frame is ours alone: exclusive latch held, published only now and every
        // lookup waits on the latch; the memory is `page_size` bytes inside the pool.
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(self.frame_bytes(f).as_ptr(), self.page_size) };
        let filled = match kind {
            LoadKind::New => {
                bytes.fill(0);
                Ok(())
            }
            LoadKind::Read | LoadKind::Write => self.layer.read_page(id, bytes),
        };
        if let Err(e) = filled {
            entry.store(0, Ordering::Release);
            undo();
            return Err(LoadError::Failed(e.into()));
        }
        if !matches!(kind, LoadKind::New) {
            let cow = matches!(kind, LoadKind::Write) && self.mapped_latches.is_some();
            self.counters.add(if cow { Counter::Cow } else { Counter::Miss }, 1);
            self.counters.add(Counter::BytesIn, self.page_size as u64);
        }
        let key = self.key(LatchKind::Frame, f as u64);
        match kind {
            LoadKind::Read => {
                // SAFETY: this thread holds the latch exclusively.
                unsafe { m.latch.downgrade() };
                held::push(key, false);
            }
            LoadKind::Write | LoadKind::New => {
                m.dirty.store(true, Ordering::Release);
                held::push(key, true);
            }
        }
        Ok(f)
    }

    /// Finds a frame for `id`: the scan ring's next frame if it is free to reuse, else the clock's
    /// victim (written back first if dirty). Returns it claimed, empty and clean.
    fn claim_victim(&self, id: PageId, ring: Option<&mut ScanRing>) -> Result<usize> {
        let Some(ring) = ring else { return self.clock_victim(id) };
        let slot = ring.next % ring.slots.len();
        ring.next = ring.next.wrapping_add(1);
        if let Some(f) = ring.slots[slot] {
            let m = &self.metas[f];
            if !m.dirty.load(Ordering::Acquire) && m.pins.try_claim() {
                // Dirtied since the check above, its write-back may fail: never keep the claim
                // then, or lookups of its page would spin on the claimed frame for ever.
                match self.evict_claimed(f) {
                    Ok(true) => return Ok(f),
                    Ok(false) => m.pins.release_claim(),
                    Err(e) => {
                        m.pins.release_claim();
                        return Err(e);
                    }
                }
            }
        }
        let f = self.clock_victim(id)?;
        ring.slots[slot] = Some(f);
        Ok(f)
    }

    /// Clock sweep with usage counts: skips pinned frames, decrements used ones, and claims the
    /// first unused one. Gives up with [`BufferError::PoolExhausted`] after enough sweeps to have
    /// drained every usage count.
    fn clock_victim(&self, id: PageId) -> Result<usize> {
        let n = self.metas.len();
        for _ in 0..n * (crate::frame::MAX_USAGE as usize + 2) {
            let f = self.hand.fetch_add(1, Ordering::Relaxed) % n;
            let m = &self.metas[f];
            if m.pins.pins() != 0 || m.pins.is_claimed() {
                continue;
            }
            let u = m.usage.load(Ordering::Relaxed);
            if u > 0 {
                m.usage.store(u - 1, Ordering::Relaxed);
                continue;
            }
            if !m.pins.try_claim() {
                continue;
            }
            match self.evict_claimed(f) {
                Ok(true) => return Ok(f),
                Ok(false) => m.pins.release_claim(),
                Err(e) => {
                    m.pins.release_claim();
                    return Err(e);
                }
            }
        }
        Err(BufferError::PoolExhausted { page: id, frames: n })
    }

    /// Empties claimed frame `f`: writes it back if dirty (never waiting for a latch) and
    /// unpublishes it. `Ok(false)`: a redirected reader holds the page; try another frame.
    fn evict_claimed(&self, f: usize) -> Result<bool> {
        let m = &self.metas[f];
        let page = m.page();
        if page == NO_PAGE {
            return Ok(true);
        }
        if m.dirty.load(Ordering::Acquire) {
            let mapped = match self.lock_mapped(PageId(page), false)? {
                MappedHold::Busy => return Ok(false),
                MappedHold::Held(latch) => Some(latch),
                MappedHold::NotMapped => None,
            };
            self.write_back_frame(f, PageId(page), mapped)?;
        }
        if let Some(e) = self.table.get(page) {
            let _ = e.compare_exchange(f as u32 + 1, 0, Ordering::AcqRel, Ordering::Acquire);
        }
        m.page.store(NO_PAGE, Ordering::Release);
        self.counters.add(Counter::Eviction, 1);
        Ok(true)
    }

    /// SE2: takes page `page`'s mapped latch exclusively for a write-back into the mapping,
    /// waiting for redirected readers if `wait`, else [`MappedHold::Busy`] when one holds it.
    fn lock_mapped(&self, page: PageId, wait: bool) -> Result<MappedHold<'_>> {
        let Some(latches) = &self.mapped_latches else { return Ok(MappedHold::NotMapped) };
        let latch = latches.get_or_alloc(page.0).ok_or_else(|| out_of_range(self, page))?;
        if wait {
            if !held::may_take(self.key(LatchKind::Mapped, page.0), true) {
                return Err(BufferError::LatchHeld { page });
            }
            latch.lock_exclusive();
        } else if !latch.try_lock_exclusive() {
            return Ok(MappedHold::Busy);
        }
        Ok(MappedHold::Held(latch))
    }

    /// Writes frame `f` (holding dirty page `page`) back and releases `mapped` (SE2: the page's
    /// mapped latch, held exclusively by the caller). The caller keeps the frame's bytes stable
    /// (claim or exclusive latch). Calls the hook before storing a byte.
    fn write_back_frame(&self, f: usize, page: PageId, mapped: Option<&Latch>) -> Result<()> {
        let result = self
            .hook
            .before_write_back(&*self.layer, page)
            .map_err(|source| BufferError::Hook { page, source });
        let result = result.and_then(|()| {
            // SAFETY: the caller keeps the frame's bytes to itself (claim or exclusive latch).
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(self.frame_bytes(f).as_ptr(), self.page_size)
            };
            self.layer.write_page(page, bytes).map_err(BufferError::from)
        });
        if let Some(latch) = mapped {
            // SAFETY: the caller locked it exclusively and hands its release to us.
            unsafe { latch.unlock_exclusive() };
        }
        result?;
        self.metas[f].dirty.store(false, Ordering::Release);
        self.counters.add(Counter::WriteBack, 1);
        self.counters.add(Counter::BytesOut, self.page_size as u64);
        Ok(())
    }

    /// Writes page `id` back if it is resident and dirty, waiting for its latch (and, in SE2, for
    /// redirected readers of it). A failure leaves it dirty.
    pub fn flush_page(&self, id: PageId) -> Result<()> {
        let Some(f) = self.lookup_pin(id) else { return Ok(()) };
        let m = &self.metas[f];
        if !m.dirty.load(Ordering::Acquire) {
            m.pins.unpin();
            return Ok(());
        }
        // The mapped latch first, then the frame's: a thread reading the page in place may take
        // the frame's latch next (a self-join, or dirtying the page), so waiting for redirected
        // readers while holding the frame's latch could deadlock against one of them. The pin
        // keeps the frame on this page meanwhile.
        let mapped = match self.lock_mapped(id, true) {
            Ok(MappedHold::Held(latch)) => Some(latch),
            Ok(MappedHold::NotMapped | MappedHold::Busy) => None,
            Err(e) => {
                m.pins.unpin();
                return Err(e);
            }
        };
        let release = || {
            if let Some(latch) = mapped {
                // SAFETY: locked exclusively just above by this thread.
                unsafe { latch.unlock_exclusive() };
            }
        };
        match self.latch_frame(f, id, true) {
            Ok(true) => {}
            Ok(false) => {
                release();
                return Ok(());
            }
            Err(e) => {
                release();
                return Err(e);
            }
        }
        let guard = PageMut::new(self, f);
        let r = if m.dirty.load(Ordering::Acquire) {
            self.write_back_frame(f, id, mapped)
        } else {
            release();
            Ok(())
        };
        drop(guard);
        r
    }

    /// Writes back every page in `ids` that is resident and dirty, in page order.
    pub fn flush_pages(&self, ids: &[PageId]) -> Result<()> {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter().try_for_each(|id| self.flush_page(id))
    }

    /// Writes back every dirty page, in page order. Does not sync: see [`BufferPool::sync`].
    pub fn flush_all(&self) -> Result<()> {
        self.flush_pages(&self.dirty_pages())
    }

    /// Makes every page written back so far durable ([`FileLayer::sync`]).
    pub fn sync(&self) -> Result<()> {
        self.layer.sync().map_err(BufferError::from)
    }

    /// The pages currently dirty (a snapshot), in page order.
    pub fn dirty_pages(&self) -> Vec<PageId> {
        let mut v: Vec<PageId> = self
            .metas
            .iter()
            .filter(|m| m.dirty.load(Ordering::Acquire))
            .map(|m| m.page())
            .filter(|&p| p != NO_PAGE)
            .map(PageId)
            .collect();
        v.sort_unstable();
        v
    }

    /// Evicts page `id` if it is resident and nobody uses it, writing it back first if dirty.
    /// Never waits: `Ok(false)` if the page is pinned, latched or (SE2) read in place.
    pub fn evict_page(&self, id: PageId) -> Result<bool> {
        let Some(f) = self.resident_frame(id) else { return Ok(false) };
        let m = &self.metas[f];
        if !m.pins.try_claim() {
            return Ok(false);
        }
        if m.page() != id.0 {
            m.pins.release_claim();
            return Ok(false);
        }
        let r = self.evict_claimed(f);
        m.pins.release_claim();
        r
    }

    /// Drops page `id`'s frame without writing it back (abort: the file holds the truth). Fails
    /// with [`BufferError::PagePinned`] if a guard holds the page.
    pub fn discard(&self, id: PageId) -> Result<()> {
        let Some(f) = self.resident_frame(id) else { return Ok(()) };
        let m = &self.metas[f];
        if !m.pins.try_claim() {
            return Err(BufferError::PagePinned { page: id });
        }
        if m.page() == id.0 {
            m.dirty.store(false, Ordering::Release);
            if let Some(e) = self.table.get(id.0) {
                let _ = e.compare_exchange(f as u32 + 1, 0, Ordering::AcqRel, Ordering::Acquire);
            }
            m.page.store(NO_PAGE, Ordering::Release);
        }
        m.pins.release_claim();
        Ok(())
    }

    /// Drops every frame without writing anything back.
    pub fn discard_all(&self) -> Result<()> {
        let pages: Vec<u64> =
            self.metas.iter().map(|m| m.page()).filter(|&p| p != NO_PAGE).collect();
        pages.into_iter().try_for_each(|p| self.discard(PageId(p)))
    }

    fn resident_frame(&self, id: PageId) -> Option<usize> {
        let e = self.table.get(id.0)?.load(Ordering::Acquire);
        (e != 0).then(|| (e - 1) as usize)
    }
}

fn out_of_range(pool: &BufferPool, id: PageId) -> BufferError {
    BufferError::Storage(nvpage_storage::StorageError::PageOutOfRange {
        page: id,
        page_count: pool.layer.file().page_count(),
    })
}

/// A small set of frames one sequential scan cycles through, so that scanning a table larger than
/// the pool does not push everything else out (PostgreSQL's ring buffer strategy). A frame in the
/// ring that someone dirtied leaves the ring. SE2 scans read in place and need no frames.
#[derive(Debug, Clone)]
pub struct ScanRing {
    pool: usize,
    slots: Vec<Option<usize>>,
    next: usize,
}

#[derive(Clone, Copy, Debug)]
enum RefKind {
    Frame(usize),
    Mapped(u64),
}

/// A shared guard on a page: a frame, or (SE2) the page in place in the mapping. Derefs to the
/// whole page, envelope included (payload starts at `nvpage_storage::page::PAGE_HEADER_LEN`).
/// Not `Send`: latches are released on the thread that took them.
#[derive(Debug)]
pub struct PageRef<'a> {
    pool: &'a BufferPool,
    kind: RefKind,
    ptr: NonNull<u8>,
    _not_send: PhantomData<*const ()>,
}

impl<'a> PageRef<'a> {
    fn frame(pool: &'a BufferPool, f: usize) -> Self {
        PageRef { pool, kind: RefKind::Frame(f), ptr: pool.frame_bytes(f), _not_send: PhantomData }
    }

    /// Whether the guard points into the mapping (SE2) rather than at a frame.
    pub fn is_redirected(&self) -> bool {
        matches!(self.kind, RefKind::Mapped(_))
    }
}

impl Deref for PageRef<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: for a frame, the guard holds the frame's latch shared and a pin, so the frame
        // holds this page and nobody writes it; for a mapped page, the guard holds the page's
        // mapped latch shared, which every write-back into the mapping takes exclusively, and the
        // page is below the page count, inside the mapping, which outlives the pool's borrow.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.pool.page_size) }
    }
}

impl Drop for PageRef<'_> {
    fn drop(&mut self) {
        let pool = self.pool;
        match self.kind {
            RefKind::Frame(f) => {
                let m = &pool.metas[f];
                held::pop(pool.key(LatchKind::Frame, f as u64), false);
                // SAFETY: the guard took this latch shared and releases it once.
                unsafe { m.latch.unlock_shared() };
                m.pins.unpin();
            }
            RefKind::Mapped(page) => {
                held::pop(pool.key(LatchKind::Mapped, page), false);
                let latches = pool.mapped_latches.as_ref().expect("mapped guards exist in SE2");
                let latch = latches.get(page).expect("the latch was allocated when taken");
                // SAFETY: the guard took this latch shared and releases it once.
                unsafe { latch.unlock_shared() };
            }
        }
    }
}

/// An exclusive guard on a page in a frame (SE2: the private copy). The page is dirty. Derefs to
/// the whole page; bytes below `nvpage_storage::page::PAGE_HEADER_LEN` are overwritten by
/// write-back's envelope. Not `Send`.
#[derive(Debug)]
pub struct PageMut<'a> {
    pool: &'a BufferPool,
    frame: usize,
    _not_send: PhantomData<*const ()>,
}

impl<'a> PageMut<'a> {
    fn new(pool: &'a BufferPool, frame: usize) -> Self {
        PageMut { pool, frame, _not_send: PhantomData }
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
        m.pins.unpin();
    }
}

// Built against std's atomics: with the `shuttle` feature `PinState` runs only on shuttle's
// scheduler. These tests use a real file (the pread layer), so under Miri they need
// `-Zmiri-disable-isolation` (scripts/miri passes it for this crate).
#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    //! The pool's own unsafe code over a real `pread`-layer file, at sizes Miri can interpret:
    //! frame bytes handed to the layer on a load and a write-back, guards dereferencing a frame
    //! under its latch, latch downgrade and release, with threads racing for frames.

    use std::os::unix::fs::FileExt;
    use std::path::Path;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Barrier};

    use nvpage_storage::page::PAGE_HEADER_LEN;
    use nvpage_storage::{FileLayer, Layer, OpenOptions, PageId, PageSize, StorageError};

    use super::{BufferPool, MIN_FRAMES};
    use crate::error::{BufferError, HookError};
    use crate::hook::WriteBackHook;

    /// The smallest page size: Miri interprets every byte that is checksummed or copied.
    const PAGE_BYTES: u64 = 4096;
    /// The file's largest size in pages, which also caps the growth ahead (zeros written, under
    /// Miri, where `fallocate` is missing).
    const MAX_PAGES: u64 = 32;

    /// Counts its calls, so write-backs can be matched against them.
    #[derive(Debug, Default)]
    struct CountingHook(AtomicU64);

    impl CountingHook {
        fn calls(&self) -> u64 {
            self.0.load(Ordering::Relaxed)
        }
    }

    impl WriteBackHook for CountingHook {
        fn before_write_back(
            &self,
            _layer: &dyn FileLayer,
            _page: PageId,
        ) -> Result<(), HookError> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
    }

    /// The pread layer over the file `data` in `dir`, created or opened.
    fn layer(dir: &Path, create: bool) -> Box<dyn FileLayer> {
        let opts = OpenOptions {
            page_size: PageSize::new(PAGE_BYTES).unwrap(),
            max_bytes: MAX_PAGES * PAGE_BYTES,
            ..OpenOptions::new(Layer::Pread)
        };
        let path = dir.join("data");
        if create { opts.create(&path) } else { opts.open(&path) }.unwrap()
    }

    /// A pool of `frames` frames over a new file in `dir`. Under Miri a pool costs tens of
    /// seconds before its first load (the page table's first chunk), so each test builds one and
    /// reads the file back through the layer alone.
    fn pool(dir: &Path, frames: usize, hook: Arc<CountingHook>) -> BufferPool {
        BufferPool::new(layer(dir, true), frames, hook).unwrap()
    }

    /// Page `id` as the file under `layer` holds it, read with `pread`; on a freshly opened
    /// layer this first read also checks the page's checksum and id.
    fn page_in_file(layer: &dyn FileLayer, id: PageId) -> Vec<u8> {
        let mut page = vec![0u8; PAGE_BYTES as usize];
        layer.read_page(id, &mut page).unwrap();
        page
    }

    /// Fills a page's payload with `value` in every 8-byte word.
    fn fill_words(page: &mut [u8], value: u64) {
        for w in page[PAGE_HEADER_LEN..].chunks_exact_mut(8) {
            w.copy_from_slice(&value.to_le_bytes());
        }
    }

    /// The value every 8-byte word of the payload holds; panics, naming `what`, on a torn page.
    fn uniform_word(page: &[u8], what: &str) -> u64 {
        let mut words = page[PAGE_HEADER_LEN..]
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap()));
        let first = words.next().unwrap();
        for (i, w) in words.enumerate() {
            assert_eq!(w, first, "{what}: torn page, word {} is {w:#x}, word 0 {first:#x}", i + 1);
        }
        first
    }

    #[test]
    fn a_miss_loads_a_hit_reuses_and_write_back_reaches_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let hook = Arc::new(CountingHook::default());
        let p = pool(dir.path(), MIN_FRAMES, hook.clone());
        p.layer().grow(4).unwrap();

        // A page never written reads as zeros: a miss, `pread` into a frame.
        {
            let g = p.read(PageId(1)).unwrap();
            assert!(!g.is_redirected());
            assert_eq!(g.len(), PAGE_BYTES as usize);
            assert!(g.iter().all(|&b| b == 0));
        }
        let c = p.counters();
        assert_eq!((c.misses, c.hits, c.bytes_copied_in), (1, 0, PAGE_BYTES));

        // Two shared guards on one thread (a self-join): both hits, on the same frame.
        {
            let a = p.read(PageId(1)).unwrap();
            let b = p.read(PageId(1)).unwrap();
            assert_eq!(a.as_ptr(), b.as_ptr());
            assert_eq!(&*a, &*b);
        }
        assert_eq!((p.counters().misses, p.counters().hits), (1, 2));

        // A write guard on the resident page: a hit, the page dirty, the bytes in the frame.
        {
            let mut w = p.write(PageId(1)).unwrap();
            fill_words(&mut w, 0xA1);
            assert_eq!(uniform_word(&w, "write guard"), 0xA1);
        }
        assert_eq!(p.dirty_pages(), [PageId(1)]);
        assert_eq!(uniform_word(&p.read(PageId(1)).unwrap(), "after write"), 0xA1);

        // Eviction writes the page back (hook first), and the next read loads it from the file.
        assert!(p.evict_page(PageId(1)).unwrap());
        let c = p.counters();
        assert_eq!((c.evictions, c.write_backs, hook.calls()), (1, 1, 1));
        assert!(p.dirty_pages().is_empty());
        assert_eq!(uniform_word(&p.read(PageId(1)).unwrap(), "reloaded"), 0xA1);
        assert_eq!(p.counters().misses, 2);

        // `new_page` zeroes a resident page; `flush_page` writes it back under the exclusive
        // latch and leaves it resident and clean.
        {
            let mut g = p.new_page(PageId(1)).unwrap();
            assert!(g.iter().all(|&b| b == 0));
            fill_words(&mut g, 0xB2);
        }
        p.flush_page(PageId(1)).unwrap();
        assert!(p.dirty_pages().is_empty());
        assert_eq!((p.counters().write_backs, hook.calls()), (2, 2));
        let on_file = page_in_file(p.layer(), PageId(1));
        assert_eq!(uniform_word(&on_file, "page 1 in the file"), 0xB2);
        assert_eq!(uniform_word(&p.read(PageId(1)).unwrap(), "still resident"), 0xB2);

        // A write guard held by this thread refuses its own shared request rather than hang.
        {
            let mut w = p.write(PageId(2)).unwrap();
            fill_words(&mut w, 0xC3);
            assert!(matches!(p.read(PageId(2)), Err(BufferError::LatchHeld { .. })));
        }
        // `discard` drops the frame unwritten: the file keeps the zeros.
        p.discard(PageId(2)).unwrap();
        assert!(p.read(PageId(2)).unwrap().iter().all(|&b| b == 0));
        assert_eq!(hook.calls(), 2);

        // A load that fails (page 3 damaged behind the pool's back) unpublishes the frame and
        // releases its latch: the error reaches the caller every time, and `new_page`, which
        // reads nothing, still gets the page.
        let damaged = std::fs::OpenOptions::new().write(true).open(dir.path().join("data"));
        damaged.unwrap().write_all_at(&[0xFF; 16], 3 * PAGE_BYTES + 64).unwrap();
        for _ in 0..2 {
            assert!(matches!(
                p.read(PageId(3)),
                Err(BufferError::Storage(StorageError::ChecksumMismatch { .. }))
            ));
        }
        fill_words(&mut p.new_page(PageId(3)).unwrap(), 0xD4);
        assert_eq!(uniform_word(&p.read(PageId(3)).unwrap(), "page 3 made anew"), 0xD4);
    }

    /// The value page `i` holds after `round` rounds of read-modify-write.
    fn round_value(i: u64, round: u64) -> u64 {
        (i << 32) | round
    }

    #[test]
    fn eviction_writes_back_every_dirty_page_and_the_file_keeps_them() {
        const PAGES: u64 = 12;
        let rounds: u64 = if cfg!(miri) { 2 } else { 20 };
        let dir = tempfile::tempdir().unwrap();
        let hook = Arc::new(CountingHook::default());
        let p = pool(dir.path(), MIN_FRAMES, hook.clone());
        p.layer().grow(PAGES + 1).unwrap();
        assert!(PAGES as usize > 2 * p.frames(), "the pages must not fit the pool");

        for i in 1..=PAGES {
            fill_words(&mut p.new_page(PageId(i)).unwrap(), round_value(i, 0));
        }
        // Every page after the first `MIN_FRAMES` took a frame from a dirty page.
        let c = p.counters();
        assert!(c.evictions >= PAGES - MIN_FRAMES as u64, "{c:?}");
        assert_eq!(c.write_backs, c.evictions, "{c:?}");

        // Each round reads every page back through a frame another page just left: what
        // eviction wrote is what the file returns.
        for round in 0..rounds {
            for i in 1..=PAGES {
                let mut g = p.write(PageId(i)).unwrap();
                assert_eq!(uniform_word(&g, "read-modify-write"), round_value(i, round));
                fill_words(&mut g, round_value(i, round + 1));
            }
        }
        // A scan cycles through a ring of its own, reusing clean frames.
        let mut ring = p.scan_ring();
        for i in 1..=PAGES {
            let g = p.read_scan(PageId(i), &mut ring).unwrap();
            assert_eq!(uniform_word(&g, "scan"), round_value(i, rounds));
        }

        p.flush_all().unwrap();
        assert!(p.dirty_pages().is_empty());
        let c = p.counters();
        assert_eq!(hook.calls(), c.write_backs, "one hook call per write-back: {c:?}");
        assert_eq!(c.bytes_copied_out, c.write_backs * PAGE_BYTES, "{c:?}");
        p.layer().write_header().unwrap();
        p.sync().unwrap();
        drop(p);

        let file = layer(dir.path(), false);
        for i in 1..=PAGES {
            let g = page_in_file(&*file, PageId(i));
            assert_eq!(uniform_word(&g, "reopened"), round_value(i, rounds));
        }
    }

    const THREADS: usize = 3;
    /// Pages each thread alone writes.
    const OWN_PAGES: u64 = 4;
    /// Pages every thread writes.
    const SHARED_PAGES: u64 = 2;
    /// Two guards per thread at most, plus room for the claims in flight: never exhausted, yet
    /// fewer frames than pages.
    const FRAMES: usize = 2 * THREADS + 4;
    const LAST_PAGE: u64 = THREADS as u64 * OWN_PAGES + SHARED_PAGES;

    fn own_page(t: usize, i: u64) -> PageId {
        PageId(1 + t as u64 * OWN_PAGES + i)
    }

    fn shared_page(i: u64) -> PageId {
        PageId(1 + THREADS as u64 * OWN_PAGES + i)
    }

    /// What one thread did: how often it incremented each page.
    #[derive(Default)]
    struct Tally {
        own: [u64; OWN_PAGES as usize],
        shared: [u64; SHARED_PAGES as usize],
    }

    /// Increments the counter page `id` holds, checking it is whole and, if `expect` is given,
    /// equal to it.
    fn increment(pool: &BufferPool, id: PageId, expect: Option<u64>) {
        let mut g = pool.write(id).unwrap();
        let v = uniform_word(&g, "increment");
        if let Some(e) = expect {
            assert_eq!(v, e, "lost update on {id:?}");
        }
        fill_words(&mut g, v + 1);
    }

    /// A few operations on own, shared and anyone's pages, chosen by a fixed per-thread sequence.
    fn worker(pool: &BufferPool, t: usize, ops: usize, barrier: &Barrier) -> Tally {
        // xorshift64: deterministic, and cheap to interpret.
        let mut x = 0x9E37_79B9_7F4A_7C15_u64 ^ (t as u64 + 1);
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut tally = Tally::default();
        barrier.wait();
        for _ in 0..ops {
            let r = next();
            let own = r % OWN_PAGES;
            let shared = (r >> 8) % SHARED_PAGES;
            match (r >> 16) % 10 {
                // Own page: this thread is its only writer, so its value is known exactly.
                0..4 => {
                    increment(pool, own_page(t, own), Some(tally.own[own as usize]));
                    tally.own[own as usize] += 1;
                }
                4..7 => {
                    increment(pool, shared_page(shared), None);
                    tally.shared[shared as usize] += 1;
                }
                // Anyone's page, while others write it: never torn.
                7..9 => {
                    let id = PageId(1 + (r >> 24) % LAST_PAGE);
                    uniform_word(&pool.read(id).unwrap(), "read of any page");
                }
                // Two guards: an own page held shared while a shared page is incremented.
                _ => {
                    let g = pool.read(own_page(t, own)).unwrap();
                    assert_eq!(uniform_word(&g, "own page held"), tally.own[own as usize]);
                    increment(pool, shared_page(shared), None);
                    tally.shared[shared as usize] += 1;
                    assert_eq!(uniform_word(&g, "own page still held"), tally.own[own as usize]);
                }
            }
        }
        tally
    }

    #[test]
    fn threads_racing_for_frames_lose_no_update_and_tear_no_page() {
        let ops = if cfg!(miri) { 20 } else { 2000 };
        let dir = tempfile::tempdir().unwrap();
        let hook = Arc::new(CountingHook::default());
        let p = pool(dir.path(), FRAMES, hook.clone());
        // Pages of a freshly grown file are zeros: every counter starts at 0.
        p.layer().grow(LAST_PAGE + 1).unwrap();
        assert!(LAST_PAGE as usize > FRAMES, "the pages must not fit the pool");

        let barrier = Barrier::new(THREADS);
        let tallies: Vec<Tally> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (p, barrier) = (&p, &barrier);
                    s.spawn(move || worker(p, t, ops, barrier))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });

        let shared_total = |i: u64| tallies.iter().map(|t| t.shared[i as usize]).sum::<u64>();
        let check = |read: &dyn Fn(PageId) -> u64| {
            for (t, tally) in tallies.iter().enumerate() {
                for i in 0..OWN_PAGES {
                    assert_eq!(read(own_page(t, i)), tally.own[i as usize]);
                }
            }
            for i in 0..SHARED_PAGES {
                assert_eq!(read(shared_page(i)), shared_total(i));
            }
        };
        check(&|id| uniform_word(&p.read(id).unwrap(), "through the pool"));
        let c = p.counters();
        assert!(c.evictions > 0, "the pool was under pressure: {c:?}");

        p.flush_all().unwrap();
        assert!(p.dirty_pages().is_empty());
        assert_eq!(hook.calls(), p.counters().write_backs);
        p.layer().write_header().unwrap();
        p.sync().unwrap();
        drop(p);
        let file = layer(dir.path(), false);
        check(&|id| uniform_word(&page_in_file(&*file, id), "reopened"));
    }
}
