//! Replacement: the clock sweep, scan rings, and taking a frame from its page. A dirty frame is
//! written back only on the writer's thread (R7), and eviction never waits for a latch: it
//! tries, and skips a busy page.

use std::sync::atomic::Ordering;

use nvpage_storage::PageId;

use super::BufferPool;
use super::write::AfterStore;
use crate::counters::Counter;
use crate::error::{BufferError, Result};
use crate::frame::{NO_PAGE, Owner};
use crate::held::{self, LatchKind};

/// Frames kept for the writer's next copies on write ([`BufferPool::recycle`]): as many as a
/// large commit stores, and never more than the pool has.
pub(super) const RECYCLED: usize = 4096;

/// A small set of frames one sequential scan cycles through, so that scanning a table larger than
/// the pool does not push everything else out (PostgreSQL's ring buffer strategy). A frame in the
/// ring that someone dirtied leaves the ring. SE2 scans read in place and need no frames.
#[derive(Debug, Clone)]
pub struct ScanRing {
    pool: usize,
    slots: Vec<Option<usize>>,
    next: usize,
}

impl ScanRing {
    pub(super) fn new(pool: usize, frames: usize) -> Self {
        ScanRing { pool, slots: vec![None; (frames / 8).clamp(1, 16)], next: 0 }
    }

    pub(super) fn belongs_to(&self, pool: usize) -> bool {
        self.pool == pool
    }
}

impl BufferPool {
    /// Finds a frame for `id`: the scan ring's next frame if it is free to reuse, else the clock's
    /// victim (written back first if dirty). Returns it claimed, empty and clean.
    pub(super) fn claim_victim(&self, id: PageId, ring: Option<&mut ScanRing>) -> Result<usize> {
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
                    Ok(false) => self.release_claim(m),
                    Err(e) => {
                        self.release_claim(m);
                        return Err(e);
                    }
                }
            }
        }
        let f = self.clock_victim(id)?;
        ring.slots[slot] = Some(f);
        Ok(f)
    }

    /// A frame for `id` from the clock. Other threads give up with
    /// [`BufferError::PoolExhausted`] (a reader then reads a private copy); the running
    /// writer's thread instead waits for readers to let a frame go — a reader is never the cause
    /// of a writer's error (R10) — unless its own guards hold every frame, where the wait would
    /// be on itself.
    fn clock_victim(&self, id: PageId) -> Result<usize> {
        if let Some(f) = self.take_recycled() {
            return Ok(f);
        }
        loop {
            match self.sweep(id) {
                Err(BufferError::PoolExhausted { .. }) if self.is_writer_thread() => {}
                r => return r,
            }
            if !self.wait_for_a_frame()? {
                return Err(BufferError::PoolExhausted { page: id, frames: self.metas.len() });
            }
        }
    }

    /// Keeps frame `f`, which a store in place of page `id` just let go, for the writer's next
    /// frame ([`Self::take_recycled`]); the newest [`RECYCLED`] (or as many as the pool has
    /// frames, if fewer) are kept, and a frame past them is left to the sweep.
    pub(super) fn recycle(&self, f: usize, id: PageId) {
        let mut kept = self.recycled.lock();
        if kept.len() >= RECYCLED.min(self.metas.len()) {
            kept.pop_front();
        }
        kept.push_back((f, id.0));
    }

    /// The frame a store in place most recently let go (`BufferPool::recycled`), claimed and
    /// emptied, on the writer's thread, if it still holds the page it was let go from, nobody
    /// holds it and it is clean: as the sweep takes a frame, without the sweep. Such a frame is
    /// most likely still unpublished; one reloaded for the same page since is evicted as the
    /// sweep would evict it. Frames that fail this are dropped from the list.
    fn take_recycled(&self) -> Option<usize> {
        if !self.is_writer_thread() {
            return None;
        }
        loop {
            let (f, page) = self.recycled.lock().pop_back()?;
            if let Some(f) = self.claim_recycled(f, page) {
                return Some(f);
            }
        }
    }

    /// Frame `f`, let go from `page`, claimed and emptied if it still holds that page, nobody
    /// holds it and it is clean; `None` otherwise.
    fn claim_recycled(&self, f: usize, page: u64) -> Option<usize> {
        let m = self.metas.get(f)?;
        if m.page() != page || m.pins.pins() != 0 || m.dirty.load(Ordering::Acquire) {
            return None;
        }
        if !m.pins.try_claim() {
            return None;
        }
        // Claimed: the frame holds still. Taken for another page between the check and the
        // claim, it is left to the sweep.
        if m.page() != page {
            self.release_claim(m);
            return None;
        }
        match self.evict_claimed(f) {
            Ok(true) => Some(f),
            _ => {
                self.release_claim(m);
                None
            }
        }
    }

    /// The writer found no frame: every frame is pinned (by readers' guards, or its own), or in
    /// SE2 readers hold the pages of its dirty frames in place (eviction skips those). Writes
    /// back one of its dirty frames, waiting for the readers of its page, or else waits until
    /// another thread unpins a frame (R10). A dirty frame whose page this thread itself holds
    /// (an SE2 guard in place, taken before the page was changed) is passed over: its write-back
    /// would wait for this thread.
    ///
    /// The wait ends: the writer's thread is in a transaction, so every other thread pinning a
    /// frame is a reader, or a parallel-scan worker, and neither waits for the writer; and while
    /// this thread's guards pin fewer frames than the pool has, less the dirty frames of pages
    /// it holds, some frame is pinned by others only. `Ok(false)` where they reach as many —
    /// each guard counted, so two on one frame count twice: erring towards the error, never
    /// towards a wait nobody else can end — and the caller reports
    /// [`BufferError::PoolExhausted`].
    fn wait_for_a_frame(&self) -> Result<bool> {
        let mut held_here = 0;
        for m in self.metas.iter() {
            let page = m.page();
            if m.owner() != Owner::Writer
                || !m.dirty.load(Ordering::Acquire)
                || m.pins.pins() != 0
                || m.pins.is_claimed()
                || page == NO_PAGE
            {
                continue;
            }
            if !held::may_take(self.key(LatchKind::Page, page), true) {
                held_here += 1;
                continue;
            }
            // Waits for the page's readers: a write-back that cannot skip them.
            self.flush_page(PageId(page))?;
            return Ok(true);
        }
        if super::guard::pins_held_here() + held_here >= self.metas.len() {
            return Ok(false);
        }
        self.counters.add(Counter::WriteBackWait, 1);
        self.unpins.wait();
        Ok(true)
    }

    /// Clock sweep with usage counts: skips pinned frames (and, off the writer's thread, dirty
    /// ones), decrements used ones, and claims the first unused one. Gives up with
    /// [`BufferError::PoolExhausted`] after enough sweeps to have drained every usage count.
    fn sweep(&self, id: PageId) -> Result<usize> {
        let n = self.metas.len();
        let writes_back = self.may_write_back();
        for _ in 0..n * (crate::frame::MAX_USAGE as usize + 2) {
            let f = self.hand.fetch_add(1, Ordering::Relaxed) % n;
            let m = &self.metas[f];
            if m.pins.pins() != 0 || m.pins.is_claimed() {
                continue;
            }
            if !writes_back && m.dirty.load(Ordering::Acquire) {
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
                Ok(false) => self.release_claim(m),
                Err(e) => {
                    self.release_claim(m);
                    return Err(e);
                }
            }
        }
        Err(BufferError::PoolExhausted { page: id, frames: n })
    }

    /// Empties claimed frame `f`: writes it back if dirty (on the writer's thread only, never
    /// waiting for the page latch) and unpublishes it. `Ok(false)`: it cannot be had now (a
    /// reader holds its page, or this thread may not write back); try another frame.
    pub(super) fn evict_claimed(&self, f: usize) -> Result<bool> {
        let m = &self.metas[f];
        let page = m.page();
        if page == NO_PAGE {
            return Ok(true);
        }
        let id = PageId(page);
        let st = self.pages.get(page).expect("a frame's page has a state");
        if m.dirty.load(Ordering::Acquire) {
            if !self.may_write_back() {
                return Ok(false);
            }
            let key = self.key(LatchKind::Page, page);
            if !held::may_take(key, true) || !st.latch.try_lock_exclusive() {
                return Ok(false);
            }
            held::push(key, true);
            let r = self.write_back_alone(f, id, st, AfterStore::Leaves);
            self.unlock_page_exclusive(st, id);
            r?;
        } else {
            let _ = st.entry(m.owner()).compare_exchange(
                f as u32 + 1,
                0,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
        m.page.store(NO_PAGE, Ordering::Release);
        m.set_owner(Owner::Shared);
        self.counters.add(Counter::Eviction, 1);
        Ok(true)
    }

    /// Evicts page `id`'s frames (the writer's, written back first if dirty, and the shared one)
    /// if nobody uses them. Never waits: `Ok(false)` if the page has no frame, or a frame of it
    /// is pinned or latched, or its page latch is held, or this thread may not write it back.
    pub fn evict_page(&self, id: PageId) -> Result<bool> {
        let Some(st) = self.pages.get(id.0) else { return Ok(false) };
        let (mut found, mut all) = (false, true);
        for owner in [Owner::Writer, Owner::Shared] {
            let e = st.entry(owner).load(Ordering::Acquire);
            if e == 0 {
                continue;
            }
            found = true;
            let f = (e - 1) as usize;
            let m = &self.metas[f];
            if !m.pins.try_claim() {
                all = false;
                continue;
            }
            if m.page() != id.0 {
                self.release_claim(m);
                continue;
            }
            let r = self.evict_claimed(f);
            self.release_claim(m);
            all &= r?;
        }
        Ok(found && all)
    }
}
