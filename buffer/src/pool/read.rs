//! The read path: `view(P, s)` (docs/design.md, "Readers beside the writer").

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use nvpage_storage::{Layer, PageId};

use super::evict::ScanRing;
use super::guard::PageRef;
use super::{BufferPool, PageState, View};
use crate::counters::Counter;
use crate::error::{BufferError, Result};
use crate::frame::{NO_PAGE, Owner};
use crate::held::{self, LatchKind};
use crate::versions::{FindError, NoVersion, PageImage};

impl BufferPool {
    /// A shared guard on page `id` as `view` sees it: the writer's frame (writer's view), a
    /// shared frame at the page's current stamp, the page in place in the mapping (SE2), a frame
    /// loaded from the file, or an old version (a snapshot the page has changed since).
    #[inline]
    pub fn read(&self, id: PageId, view: View) -> Result<PageRef<'_>> {
        if self.kind == Layer::Se2
            && let Some(g) = self.mapped_hit(id, view)
        {
            return Ok(g);
        }
        self.read_inner(id, view, None)
    }

    /// SE2's hit, inlined into the caller so the guard is built where it is used (built in a
    /// callee and returned through memory, its fields stored one by one were reloaded in wider
    /// loads: store-to-load forwarding stalls, a fifth of a hit: perf annotate of the pool's
    /// hit bench): page `id` in place under its page latch, if nothing else is to be read —
    /// no writer's frame in the writer's view, no shared frame, a page verified since open,
    /// and no change past `view` — and the latch is free to take at once. `None` leaves the
    /// decision to `read_inner`, which makes the same one (`read_locked`) with every other
    /// case and every wait. Taking the latch with `try_lock_shared` needs no check of what
    /// this thread holds: the attempt fails if it holds the latch exclusively, or if a writer
    /// waits (where a thread holding it shared must re-enter it, and `read_inner` does).
    #[inline(always)]
    fn mapped_hit(&self, id: PageId, view: View) -> Option<PageRef<'_>> {
        let st = self.pages.get(id.0)?;
        if (view == View::Writer && st.writer.load(Ordering::Acquire) != 0)
            || st.shared.load(Ordering::Acquire) != 0
            || !st.latch.try_lock_shared()
        {
            return None;
        }
        // Under the latch, as in `read_locked`: no store into the page in place can happen now.
        let seen = match view {
            View::Snapshot(s) => st.stamp.load(Ordering::Acquire) <= s,
            View::Writer => true,
        };
        match self.layer.mapped_hint(id).filter(|_| seen) {
            Some(ptr) => {
                held::push(self.key(LatchKind::Page, id.0), false);
                self.counters.add(Counter::Redirected, 1);
                Some(PageRef::mapped(self, st, id, ptr))
            }
            None => {
                // SAFETY: taken shared just above by this thread, and not recorded as held.
                unsafe { st.latch.unlock_shared() };
                None
            }
        }
    }

    /// As [`BufferPool::read`], for one page of a large sequential scan: a miss reuses the scan's
    /// own ring of frames instead of pushing other pages out of the pool.
    #[inline]
    pub fn read_scan(&self, id: PageId, view: View, ring: &mut ScanRing) -> Result<PageRef<'_>> {
        debug_assert!(ring.belongs_to(self.id), "a scan ring belongs to the pool that made it");
        // SE2 reads a clean page in place: no frame, so the ring has no part in it.
        if self.kind == Layer::Se2
            && let Some(g) = self.mapped_hit(id, view)
        {
            return Ok(g);
        }
        self.read_inner(id, view, Some(ring))
    }

    fn read_inner(
        &self,
        id: PageId,
        view: View,
        mut ring: Option<&mut ScanRing>,
    ) -> Result<PageRef<'_>> {
        self.layer.file().check_id(id)?;
        let st = self.page_state(id)?;
        loop {
            if view == View::Writer
                && let Some(f) = self.lookup_pin(&st.writer, id, Owner::Writer)
            {
                if !self.latch_frame(f, id, false)? {
                    continue;
                }
                let guard = PageRef::frame(self, f);
                if self.metas[f].owner() != Owner::Writer {
                    // Written back meanwhile: a shared frame now (SE2: no frame of the page),
                    // looked up again below.
                    continue;
                }
                self.counters.add(Counter::Hit, 1);
                return Ok(guard);
            }
            if let Some(f) = self.shared_hit_frame(id, st, view)? {
                self.counters.add(Counter::Hit, 1);
                return Ok(PageRef::shared_frame(self, f));
            }
            if let Some(r) = self.read_locked(id, st, view, ring.as_deref_mut())? {
                return Ok(r);
            }
        }
    }

    /// A hint that page `id` will be read soon at these byte offsets: starts loading their cache
    /// lines from wherever a read would find the page now (its shared frame, or SE2's mapping
    /// for a page verified since open), pinning, latching and reading nothing. A stale guess (the
    /// frame reused meanwhile, a snapshot that will read an older version) costs only the memory
    /// traffic; a page not in the pool (and not mapped) is skipped. An index scan names the rows
    /// it will read next this way.
    pub fn prefetch(&self, id: PageId, offsets: &[usize]) {
        let Some(st) = self.pages.get(id.0) else { return };
        let base = match st.shared.load(Ordering::Relaxed) {
            // SE2 reads a clean page in place: its address, if verified (no latch, no read).
            0 => match self.layer.mapped_hint(id) {
                Some(p) => p,
                None => return,
            },
            e => self.frame_bytes((e - 1) as usize),
        };
        for &off in offsets.iter().filter(|&&off| off < self.page_size) {
            nvpage_storage::prefetch::prefetch_addr(base.as_ptr().wrapping_add(off));
        }
    }

    /// A hint that [`Self::prefetch`] of page `id` will come later: starts loading the line
    /// that holds the page's state, which that prefetch reads first and would otherwise wait
    /// for.
    pub fn prefetch_state(&self, id: PageId) {
        if let Some(st) = self.pages.get(id.0) {
            nvpage_storage::prefetch::prefetch_addr(std::ptr::from_ref(st).cast());
        }
    }

    /// The published shared frame of `id`, pinned, if `view` may read it: filled at the page's
    /// current stamp, which `view` sees. Its bytes cannot change while it is pinned, so neither
    /// the check nor the guard needs a latch (docs/design.md): a hit costs a pin and an unpin.
    pub(super) fn shared_hit(
        &self,
        id: PageId,
        st: &PageState,
        view: View,
    ) -> Result<Option<PageRef<'_>>> {
        Ok(self.shared_hit_frame(id, st, view)?.map(|f| PageRef::shared_frame(self, f)))
    }

    /// [`Self::shared_hit`] as the frame, pinned, for the caller to wrap in a guard at once.
    // Inlined into `read_inner`, which builds the guard in the value it returns: a guard built
    // here was moved through temporaries, its fields stored one by one and copied in wider
    // loads — store-to-load forwarding stalls, a quarter of a hit's time (perf annotate).
    #[inline(always)]
    fn shared_hit_frame(&self, id: PageId, st: &PageState, view: View) -> Result<Option<usize>> {
        if !view.sees(st.stamp.load(Ordering::Acquire)) {
            return Ok(None);
        }
        let Some(f) = self.lookup_pin(&st.shared, id, Owner::Shared) else { return Ok(None) };
        let m = &self.metas[f];
        if !m.ready.load(Ordering::Acquire) && !self.wait_fill(f, id)? {
            return Ok(None);
        }
        m.touch();
        let now = st.stamp.load(Ordering::Acquire);
        let valid = m.owner() == Owner::Shared
            && m.fill_stamp.load(Ordering::Acquire) == now
            && view.sees(now);
        if !valid {
            self.unpin(m);
            return Ok(None);
        }
        Ok(Some(f))
    }

    /// Waits for the fill of pinned frame `f` (its loader holds the frame's latch exclusively):
    /// `true` if it now holds `id`, filled; else the pin is dropped (the load failed).
    fn wait_fill(&self, f: usize, id: PageId) -> Result<bool> {
        let m = &self.metas[f];
        if !held::may_take(self.key(LatchKind::Frame, f as u64), false) {
            self.unpin(m);
            return Err(BufferError::LatchHeld { page: id });
        }
        m.latch.lock_shared();
        // SAFETY: locked shared just above by this thread.
        unsafe { m.latch.unlock_shared() };
        let filled = m.page() == id.0 && m.ready.load(Ordering::Acquire);
        if !filled {
            self.unpin(m);
        }
        Ok(filled)
    }

    /// The decision under `id`'s shared page latch: an old version, SE2's page in place, or a
    /// shared frame filled now. `None`: another thread published a frame first; look again.
    fn read_locked<'a>(
        &'a self,
        id: PageId,
        st: &'a PageState,
        view: View,
        ring: Option<&mut ScanRing>,
    ) -> Result<Option<PageRef<'a>>> {
        self.lock_page_shared(st, id)?;
        let stamp = st.stamp.load(Ordering::Acquire);
        if let View::Snapshot(s) = view
            && stamp > s
        {
            // The page latch keeps the page's stores out while a version kept as lines is made
            // whole from the file's bytes.
            let found = self.versions.find(id.0, s, |buf| self.layer.read_raw(id, buf));
            self.unlock_page_shared(st, id);
            let image = found.map_err(|e| match e {
                FindError::NoVersion(NoVersion::TooOld { horizon }) => {
                    BufferError::SnapshotTooOld { page: id, snapshot: s, horizon }
                }
                FindError::NoVersion(NoVersion::Missing) => {
                    BufferError::VersionMissing { page: id, snapshot: s }
                }
                FindError::Current(e) => e.into(),
            })?;
            self.counters.add(Counter::VersionRead, 1);
            return Ok(Some(PageRef::owned(self, image)));
        }
        if self.kind == Layer::Se2 {
            return match self.layer.mapped_page(id) {
                Ok(Some(ptr)) => {
                    self.counters.add(Counter::Redirected, 1);
                    // The guard keeps the page latch; its drop releases it.
                    Ok(Some(PageRef::mapped(self, st, id, ptr)))
                }
                Ok(None) => unreachable!("the SE2 layer always maps"),
                Err(e) => {
                    self.unlock_page_shared(st, id);
                    Err(e.into())
                }
            };
        }
        let r = self.load_shared(id, st, stamp, ring);
        self.unlock_page_shared(st, id);
        r
    }

    /// Fills a frame with page `id` from the file and publishes it as the page's shared frame at
    /// `stamp`; the caller holds the page latch shared. Returns it pinned and latched shared; a
    /// private copy when no clean frame can be had (this thread may not write back, R7); `None`
    /// if another thread published a frame first.
    fn load_shared(
        &self,
        id: PageId,
        st: &PageState,
        stamp: u64,
        ring: Option<&mut ScanRing>,
    ) -> Result<Option<PageRef<'_>>> {
        let scan = ring.is_some();
        let f = match self.claim_victim(id, ring) {
            Ok(f) => f,
            Err(BufferError::PoolExhausted { .. }) => return self.private_copy(id).map(Some),
            Err(e) => return Err(e),
        };
        let m = &self.metas[f];
        m.page.store(id.0, Ordering::Release);
        m.set_owner(Owner::Shared);
        m.ready.store(false, Ordering::Release);
        m.fill_stamp.store(stamp, Ordering::Release);
        m.dirty.store(false, Ordering::Release);
        m.usage.store(u8::from(!scan), Ordering::Relaxed);
        // Uncontended: a claimed frame has no pins, hence no latch holders.
        m.latch.lock_exclusive();
        m.pins.claim_to_pin();
        let undo = || {
            m.page.store(NO_PAGE, Ordering::Release);
            // SAFETY: locked exclusive above by this thread.
            unsafe { m.latch.unlock_exclusive() };
            self.unpin(m);
        };
        let published = f as u32 + 1;
        if st.shared.compare_exchange(0, published, Ordering::AcqRel, Ordering::Acquire).is_err() {
            undo();
            return Ok(None);
        }
        // SAFETY: the frame is ours alone: exclusive latch held, published only now and every
        // lookup waits on the latch; the memory is `page_size` bytes inside the pool.
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(self.frame_bytes(f).as_ptr(), self.page_size) };
        if let Err(e) = self.layer.read_page(id, bytes) {
            let _ = st.shared.compare_exchange(published, 0, Ordering::AcqRel, Ordering::Acquire);
            undo();
            return Err(e.into());
        }
        self.counters.add(Counter::Miss, 1);
        self.counters.add(Counter::BytesIn, self.page_size as u64);
        // Filled: from here a pin is enough to read it, and waiting readers may go.
        m.ready.store(true, Ordering::Release);
        // SAFETY: this thread holds the latch exclusively (taken above).
        unsafe { m.latch.unlock_exclusive() };
        Ok(Some(PageRef::shared_frame(self, f)))
    }

    /// Page `id` read from the file into memory of its own, for a reader that can have no frame.
    fn private_copy(&self, id: PageId) -> Result<PageRef<'_>> {
        let mut bytes = PageImage::zeroed(self.page_size);
        let buf = Arc::get_mut(&mut bytes).expect("a fresh Arc has one owner");
        self.layer.read_page(id, buf)?;
        self.counters.add(Counter::PrivateCopy, 1);
        self.counters.add(Counter::BytesIn, self.page_size as u64);
        Ok(PageRef::owned(self, PageImage::new(bytes, 0)))
    }

    /// Takes `id`'s page latch shared: recursively if this thread (or the thread it works for)
    /// holds it, else fairly, behind a waiting write-back. Waits are counted and timed.
    pub(super) fn lock_page_shared(&self, st: &PageState, id: PageId) -> Result<()> {
        let key = self.key(LatchKind::Page, id.0);
        if !held::may_take(key, false) {
            return Err(BufferError::LatchHeld { page: id });
        }
        if held::holds_shared(key) {
            st.latch.lock_shared();
        } else if !st.latch.try_lock_shared() {
            let started = Instant::now();
            st.latch.lock_shared_fair();
            self.counters.add(Counter::LatchWait, 1);
            self.counters.add(Counter::LatchWaitNs, started.elapsed().as_nanos() as u64);
        }
        held::push(key, false);
        Ok(())
    }

    pub(super) fn unlock_page_shared(&self, st: &PageState, id: PageId) {
        held::pop(self.key(LatchKind::Page, id.0), false);
        // SAFETY: the caller took it shared (`lock_page_shared`) and releases it once.
        unsafe { st.latch.unlock_shared() };
    }
}
