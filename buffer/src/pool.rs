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
        Ok(Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            page_size,
            metas: (0..frames).map(|_| CachePadded::new(FrameMeta::new())).collect(),
            memory: FrameMemory::new(frames, page_size),
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
