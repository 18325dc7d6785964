//! The writer's path: private frames (copy on write in every layer), and every store into the
//! file in place — write-back and abort's restore — under the page's exclusive latch.

use std::sync::atomic::Ordering;

use nvpage_storage::{Layer, PageId};

use super::guard::PageMut;
use super::{BufferPool, NOBODY, PageState, View};
use crate::counters::Counter;
use crate::error::{BufferError, Result};
use crate::frame::{FrameMeta, NO_PAGE, Owner};
use crate::held::{self, LatchKind};
use crate::hook::{WriteBack, WriteBackPage};

#[derive(Clone, Copy)]
enum Fill {
    /// The page's current bytes (the writer's view).
    Current,
    /// Zeros: a page being (re)initialised.
    Zeros,
}

/// What becomes of a frame once its page is stored in place.
#[derive(Clone, Copy)]
pub(super) enum AfterStore {
    /// It stays as the page's shared frame (its bytes are now the file's): the commit's flush
    /// with pread and SE1, whose readers read frames.
    Shared,
    /// It leaves the page and is kept for the writer's next copy on write
    /// (`BufferPool::recycled`): the commit's flush with SE2, whose readers read the mapping, so
    /// that a shared frame there would only hold memory the writer's copies then sweep past.
    Recycled,
    /// It leaves the page (eviction takes it for another).
    Leaves,
}

pub(super) enum LoadError {
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
    /// An exclusive guard on page `id` for changing it: the writer's private frame, made on
    /// first use by copying the page's current bytes (copy on write, every layer: readers keep
    /// the file's bytes until write-back). The page is dirty.
    pub fn write(&self, id: PageId) -> Result<PageMut<'_>> {
        self.exclusive(id, Fill::Current)
    }

    /// An exclusive guard on page `id` with its bytes zeroed and nothing read, for a page being
    /// (re)initialised. The page is dirty.
    pub fn new_page(&self, id: PageId) -> Result<PageMut<'_>> {
        self.exclusive(id, Fill::Zeros)
    }

    fn exclusive(&self, id: PageId, fill: Fill) -> Result<PageMut<'_>> {
        self.layer.file().check_id(id)?;
        self.layer.file().raw().check_writable()?;
        let st = self.page_state(id)?;
        loop {
            if let Some(f) = self.lookup_pin(&st.writer, id, Owner::Writer) {
                if !self.latch_frame(f, id, true)? {
                    continue;
                }
                let mut g = PageMut::new(self, f);
                if self.metas[f].owner() != Owner::Writer {
                    // Written back while this thread waited for it: a shared frame now, or (SE2)
                    // let go; the page is looked up again.
                    continue;
                }
                match fill {
                    Fill::Zeros => {
                        g.fill(0);
                        self.metas[f].verified.store(false, Ordering::Relaxed);
                    }
                    Fill::Current => self.counters.add(Counter::Hit, 1),
                }
                self.metas[f].writes.fetch_add(1, Ordering::Relaxed);
                return Ok(g);
            }
            match self.load_writer(id, st, fill) {
                Ok(g) => return Ok(g),
                Err(LoadError::Retry) => continue,
                Err(LoadError::Failed(e)) => return Err(e),
            }
        }
    }

    /// Takes a frame, publishes it as `id`'s writer frame and fills it. Returns it pinned,
    /// latched exclusively and dirty.
    fn load_writer(
        &self,
        id: PageId,
        st: &PageState,
        fill: Fill,
    ) -> Result<PageMut<'_>, LoadError> {
        let f = self.claim_victim(id, None)?;
        let m = &self.metas[f];
        m.page.store(id.0, Ordering::Release);
        m.set_owner(Owner::Writer);
        m.ready.store(false, Ordering::Release);
        m.usage.store(1, Ordering::Relaxed);
        m.verified.store(false, Ordering::Relaxed);
        m.latch.lock_exclusive();
        m.pins.claim_to_pin();
        let undo = || {
            m.page.store(NO_PAGE, Ordering::Release);
            m.set_owner(Owner::Shared);
            // SAFETY: locked exclusive above by this thread.
            unsafe { m.latch.unlock_exclusive() };
            self.unpin(m);
        };
        let published = f as u32 + 1;
        if st.writer.compare_exchange(0, published, Ordering::AcqRel, Ordering::Acquire).is_err() {
            undo();
            return Err(LoadError::Retry);
        }
        // SAFETY: the frame is ours alone: exclusive latch held, and lookups of it wait on it.
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(self.frame_bytes(f).as_ptr(), self.page_size) };
        let filled = match fill {
            Fill::Zeros => {
                bytes.fill(0);
                Ok(())
            }
            Fill::Current => self.copy_current(id, st, bytes),
        };
        if let Err(e) = filled {
            let _ = st.writer.compare_exchange(published, 0, Ordering::AcqRel, Ordering::Acquire);
            undo();
            return Err(LoadError::Failed(e));
        }
        self.note_writer_frame(f);
        m.writes.fetch_add(1, Ordering::Relaxed);
        m.dirty.store(true, Ordering::Release);
        held::push(self.key(LatchKind::Frame, f as u64), true);
        Ok(PageMut::new(self, f))
    }

    /// Copies page `id` as the writer sees it (it has no frame of its own yet) into `bytes`:
    /// from a shared frame at the current stamp, else from the file. Only the writer stores into
    /// the file, so its bytes hold still without the page latch.
    fn copy_current(&self, id: PageId, st: &PageState, bytes: &mut [u8]) -> Result<()> {
        if let Some(g) = self.shared_hit(id, st, View::Writer)? {
            bytes.copy_from_slice(&g);
            self.counters.add(Counter::Cow, 1);
            return Ok(());
        }
        self.layer.read_page(id, bytes)?;
        self.counters.add(Counter::Cow, 1);
        self.counters.add(Counter::BytesIn, self.page_size as u64);
        Ok(())
    }

    /// Writes page `id` back if the writer holds it dirty ([`Self::flush_pages`]).
    pub fn flush_page(&self, id: PageId) -> Result<()> {
        self.flush_pages(&[id])
    }

    /// Writes back every page in `ids` that the writer holds dirty, in page order, in two steps:
    /// the hook logs every page's before-image and then persists them all at once (one log
    /// flush for a commit's k pages, not k: rule 1 still holds, as no page is stored before
    /// its image is persisted); then each page is stored in place, waiting for its page latch
    /// (readers reading it in place, readers mid-decision) and then its frame. A failure leaves
    /// the pages not yet stored dirty.
    pub fn flush_pages(&self, ids: &[PageId]) -> Result<()> {
        let mut ids: Vec<PageId> =
            ids.iter().copied().filter(|&id| self.dirty_writer_frame(id).is_some()).collect();
        ids.sort_unstable();
        ids.dedup();
        // A page this thread holds (a guard on it, or on its frame) would make the store wait
        // for the thread itself: refuse before logging anything.
        for &id in &ids {
            let frame = self.dirty_writer_frame(id).map_or(0, |f| f as u64);
            if !held::may_take(self.key(LatchKind::Page, id.0), true)
                || !held::may_take(self.key(LatchKind::Frame, frame), true)
            {
                return Err(BufferError::LatchHeld { page: id });
            }
        }
        let logged = ids.iter().map(|&page| self.seal_and_log(page)).collect::<Result<Vec<_>>>()?;
        if let Some(&page) = ids.first() {
            self.hook.persist().map_err(|source| BufferError::Hook { page, source })?;
        }
        ids.into_iter().zip(logged).try_for_each(|(id, (wb, seen))| self.flush_logged(id, wb, seen))
    }

    /// Seals page `id`'s writer frame (its checksum set: what will be stored) and hands it to
    /// the hook, which logs the page's before-image — the lines that change — and says which
    /// lines to store; returns that, and the frame and its count of write guards then. In a write
    /// transaction only the writer's thread changes a writer frame, so it holds still until the
    /// store; outside one, another thread may change it in between, which the store finds by
    /// the count.
    fn seal_and_log(&self, id: PageId) -> Result<(WriteBack, Option<(usize, u32)>)> {
        let none = (WriteBack::default(), None);
        let Some(st) = self.pages.get(id.0) else { return Ok(none) };
        let Some(f) = self.lookup_pin(&st.writer, id, Owner::Writer) else { return Ok(none) };
        if !self.latch_frame(f, id, true)? {
            return Ok(none);
        }
        let mut g = PageMut::new(self, f);
        if self.metas[f].owner() != Owner::Writer {
            // Stored by another thread while this one waited for it (outside a write
            // transaction), a shared frame now or let go: nothing to write back.
            return Ok(none);
        }
        let seen = self.metas[f].writes.load(Ordering::Relaxed);
        let wb = self.hook_call(id, &mut g)?;
        Ok((wb, Some((f, seen))))
    }

    /// Hands page `id`'s frame `bytes` to the hook ([`WriteBackHook::before_write_back`]),
    /// which logs its before-image and may seal it; seals it whole if the hook did not. The
    /// caller keeps the frame's bytes to itself. The hook reads the page's old bytes from its
    /// shared frame where one is published at the page's current stamp (pinned for the call,
    /// as the writer's copy on write reads it): the file's bytes, without reading the file.
    fn hook_call(&self, id: PageId, bytes: &mut [u8]) -> Result<WriteBack> {
        // A frame being filled that cannot be waited for (an error) is passed over: the hook
        // reads the file instead.
        let current = self
            .pages
            .get(id.0)
            .and_then(|st| self.shared_hit(id, st, View::Writer).ok().flatten());
        let mut page =
            WriteBackPage::new(&*self.layer, &self.versions, id, bytes, current.as_deref());
        let wb = self.hook.before_write_back(&mut page);
        let wb = wb.map_err(|source| BufferError::Hook { page: id, source })?;
        page.sealed();
        Ok(wb)
    }

    /// The writer's frame of `id`, if it holds the page dirty (a snapshot).
    fn dirty_writer_frame(&self, id: PageId) -> Option<usize> {
        let e = self.pages.get(id.0)?.writer.load(Ordering::Acquire);
        let f = e.checked_sub(1)? as usize;
        let m = &self.metas[f];
        (m.page() == id.0 && m.dirty.load(Ordering::Acquire)).then_some(f)
    }

    /// Stores page `id`'s writer frame in place, its before-image logged and persisted (`wb`:
    /// the version readers may need, if any, and the lines to store). A frame written since
    /// `seen` (the frame and its count of write guards at the hook call) — or another frame of
    /// the page by now, or one the hook was not called for: all only by another thread's write,
    /// outside a write transaction — is sealed again, handed to the hook again and its image
    /// persisted, here, before the store (rule 1 holds for the bytes stored).
    fn flush_logged(&self, id: PageId, wb: WriteBack, seen: Option<(usize, u32)>) -> Result<()> {
        let Some(st) = self.pages.get(id.0) else { return Ok(()) };
        let Some(f) = self.lookup_pin(&st.writer, id, Owner::Writer) else { return Ok(()) };
        // The page latch first, then the frame's: a reader holding the page latch (SE2 in place)
        // may take the frame's next, never the other way round. The pin keeps the frame on
        // this page meanwhile.
        if let Err(e) = self.lock_page_exclusive(st, id) {
            self.unpin(&self.metas[f]);
            return Err(e);
        }
        let r = match self.latch_frame(f, id, true) {
            Ok(true) => {
                let guard = PageMut::new(self, f);
                let r = if !self.metas[f].dirty.load(Ordering::Acquire) {
                    Ok(())
                } else if seen == Some((f, self.metas[f].writes.load(Ordering::Relaxed))) {
                    self.store_in_place(f, id, st, wb, self.after_flush())
                } else {
                    self.write_back_alone(f, id, st, self.after_flush())
                };
                drop(guard);
                r
            }
            Ok(false) => Ok(()),
            Err(e) => Err(e),
        };
        self.unlock_page_exclusive(st, id);
        r
    }

    /// What becomes of a writer frame the commit's flush stores: with SE2 readers read the
    /// mapping, so the frame goes back to the writer; otherwise it serves the page's readers.
    fn after_flush(&self) -> AfterStore {
        if self.kind == Layer::Se2 { AfterStore::Recycled } else { AfterStore::Shared }
    }

    /// Writes frame `f` of page `id` back on its own: sealed, its before-image logged by the hook
    /// and persisted, then stored in place (eviction, and a flush that found the frame changed
    /// since its hook call). The caller holds `id`'s page latch exclusively and the frame (claim
    /// or exclusive latch), on the writer's thread.
    pub(super) fn write_back_alone(
        &self,
        f: usize,
        id: PageId,
        st: &PageState,
        after: AfterStore,
    ) -> Result<()> {
        let hook_error = |source| BufferError::Hook { page: id, source };
        // SAFETY: the caller keeps the frame's bytes to itself (claim or exclusive latch).
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(self.frame_bytes(f).as_ptr(), self.page_size) };
        let wb = self.hook_call(id, bytes)?;
        self.hook.persist().map_err(hook_error)?;
        self.store_in_place(f, id, st, wb, after)
    }

    /// Writes back every dirty page, in page order. Does not sync: see [`BufferPool::sync`].
    pub fn flush_all(&self) -> Result<()> {
        self.flush_pages(&self.dirty_pages())
    }

    /// The pages the writer holds dirty (a snapshot), in page order.
    pub fn dirty_pages(&self) -> Vec<PageId> {
        self.writer_pages(|m| m.dirty.load(Ordering::Acquire))
    }

    /// The pages of the writer's frames that pass `keep`, in page order, each once. Frames in
    /// `writer_frames` no longer the writer's are pruned from it on the way (a frame becomes the
    /// writer's again only through `note_writer_frame`, which lists it again), and so are a
    /// frame's repeats: a frame the writer takes back at once ([`Self::recycle`]) is the
    /// writer's again before the next prune, and was listed once per transaction.
    fn writer_pages(&self, keep: impl Fn(&FrameMeta) -> bool) -> Vec<PageId> {
        let mut frames = self.writer_frames.lock();
        frames.retain(|&f| self.metas[f as usize].owner() == Owner::Writer);
        frames.sort_unstable();
        frames.dedup();
        let mut v: Vec<PageId> = frames
            .iter()
            .map(|&f| &self.metas[f as usize])
            .filter(|m| keep(m))
            .map(|m| m.page())
            .filter(|&p| p != NO_PAGE)
            .map(PageId)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Frame `f`, already owned by the writer, is listed before it is marked dirty: every dirty
    /// frame is in the list. The list is pruned of frames no longer the writer's when it
    /// outgrows the pool (a transaction that evicted many of its pages), so it stays bounded.
    fn note_writer_frame(&self, f: usize) {
        let mut frames = self.writer_frames.lock();
        if frames.len() >= self.metas.len() {
            frames.retain(|&g| self.metas[g as usize].owner() == Owner::Writer);
            frames.sort_unstable();
            frames.dedup();
        }
        frames.push(f as u32);
    }

    /// Stores writer frame `f`, sealed, as page `id` in place: its version (the before-image
    /// the hook logged and persisted: rule 1), the stamp, the old shared frame unpublished, the
    /// store (of the lines the hook found changed, or all). The caller holds `id`'s page latch
    /// exclusively and the frame (claim or exclusive latch), on the writer's thread.
    pub(super) fn store_in_place(
        &self,
        f: usize,
        id: PageId,
        st: &PageState,
        wb: WriteBack,
        after: AfterStore,
    ) -> Result<()> {
        let pending = self.pending.load(Ordering::Acquire);
        // The version is the page as the transaction found it: kept at the page's first store
        // in this transaction; a later write-back adds only the lines the version lacks (in the
        // others, its old bytes are the transaction's own).
        if let Some(version) = wb.version {
            let first = st.stamp.load(Ordering::Acquire) != pending;
            self.versions.insert(id.0, pending, version, first);
        }
        let old = st.stamp.swap(pending, Ordering::AcqRel);
        if old != pending {
            self.txn.lock().stamped.entry(id.0).or_insert(old);
        }
        // Readers that validated the old shared frame before the stamp changed keep its bytes,
        // which their snapshots need; later ones find no frame and decide again.
        let unpublished = st.shared.swap(0, Ordering::AcqRel);
        if unpublished != 0 {
            self.recycle(unpublished as usize - 1, id);
        }
        // SAFETY: the caller keeps the frame's bytes to itself (claim or exclusive latch).
        let bytes =
            unsafe { std::slice::from_raw_parts(self.frame_bytes(f).as_ptr(), self.page_size) };
        let whole = 0..self.page_size;
        let lines = wb.changed.as_deref().unwrap_or(std::slice::from_ref(&whole));
        self.layer.store_sealed(id, bytes, lines)?;
        let m = &self.metas[f];
        m.dirty.store(false, Ordering::Release);
        self.counters.add(Counter::WriteBack, 1);
        let stored: usize = lines.iter().map(|r| r.len()).sum();
        self.counters.add(Counter::BytesOut, stored as u64);
        let published = f as u32 + 1;
        let _ = st.writer.compare_exchange(published, 0, Ordering::AcqRel, Ordering::Acquire);
        match after {
            AfterStore::Shared => {
                m.fill_stamp.store(pending, Ordering::Release);
                m.set_owner(Owner::Shared);
                m.ready.store(true, Ordering::Release);
                st.shared.store(published, Ordering::Release);
            }
            AfterStore::Recycled => {
                // No longer the writer's: a thread that found the frame before the exchange
                // above sees that once it has the latch, and looks the page up again.
                m.set_owner(Owner::Shared);
                self.recycle(f, id);
            }
            AfterStore::Leaves => {}
        }
        Ok(())
    }

    /// Abort's store in place: `parts` (offsets into page `id` and bytes) of the page's
    /// before-image, exactly as the log holds them, under the page's exclusive latch. A page
    /// keeps its stamp until [`Self::abort_txn`] (several images of one page are restored
    /// newest first, and every one of them must find the page stamped): meanwhile readers read
    /// its version, which holds the bytes being restored (docs/design.md, "Abort, in order").
    /// Only a page this transaction stored in place is restored: one whose image was logged but
    /// never stored (a flush that failed part-way) still holds exactly those bytes, and may be
    /// read in place by a reader holding a guard (`Ok(false)`, nothing done). A stored page is
    /// read from the file by no reader (its stamp sent them all to the version), so this waits
    /// at most for a reader mid-decision, never for a guard.
    pub fn restore_parts(&self, id: PageId, parts: &[(usize, &[u8])]) -> Result<bool> {
        if !self.txn.lock().stamped.contains_key(&id.0) {
            return Ok(false);
        }
        let st = self.page_state(id)?;
        self.lock_page_exclusive(st, id)?;
        // Unpublished before the bytes change, as every store in place does: a published shared
        // frame holds the file's bytes (no reader's view sees this one, filled at the pending
        // stamp; `abort_txn` unpublishes it too).
        st.shared.store(0, Ordering::Release);
        let r = self.layer.restore_parts(id, parts);
        self.unlock_page_exclusive(st, id);
        r?;
        Ok(true)
    }

    /// Unpublishes page `id`'s shared frame and gives it back the stamp it had before this
    /// transaction; the caller holds its page latch exclusively.
    fn unstamp(&self, id: PageId, st: &PageState) {
        st.shared.store(0, Ordering::Release);
        if let Some(old) = self.txn.lock().stamped.remove(&id.0) {
            st.stamp.store(old, Ordering::Release);
        }
    }

    /// The write transaction rolled back (its pages restored with [`Self::restore_parts`]): every
    /// page it stamped (restored, or allocated by it) loses its shared frame and gets its old
    /// stamp back, then its versions are dropped. Call after [`Self::discard_writer_frames`] and
    /// the restores.
    pub fn abort_txn(&self) -> Result<()> {
        let pages: Vec<u64> = self.txn.lock().stamped.keys().copied().collect();
        for p in pages {
            let (id, st) = (PageId(p), self.page_state(PageId(p))?);
            self.lock_page_exclusive(st, id)?;
            self.unstamp(id, st);
            self.unlock_page_exclusive(st, id);
        }
        self.versions.drop_commit(self.pending.load(Ordering::Acquire));
        self.writer_thread.store(0, Ordering::Release);
        Ok(())
    }

    /// The write transaction ended without a clean commit or rollback (the database is being
    /// poisoned): no thread may write a dirty frame back from now on, since no hook can log it.
    pub fn abandon_txn(&self) {
        self.writer_thread.store(NOBODY, Ordering::Release);
    }

    /// Drops page `id`'s writer frame without writing it back (the file keeps its bytes).
    /// Fails with [`BufferError::PagePinned`] if this thread holds a guard on it. Another
    /// thread's pin or claim of a writer frame lasts an instant (a lookup that finds the owner
    /// wrong, a clock sweep passing by), so it is waited out.
    pub fn discard_writer(&self, id: PageId) -> Result<()> {
        let Some(st) = self.pages.get(id.0) else { return Ok(()) };
        let e = st.writer.load(Ordering::Acquire);
        if e == 0 {
            return Ok(());
        }
        let f = (e - 1) as usize;
        let m = &self.metas[f];
        if !held::may_take(self.key(LatchKind::Frame, f as u64), true) {
            return Err(BufferError::PagePinned { page: id });
        }
        while !m.pins.try_claim() {
            std::thread::yield_now();
        }
        if m.page() == id.0 && m.owner() == Owner::Writer {
            m.dirty.store(false, Ordering::Release);
            let _ = st.writer.compare_exchange(e, 0, Ordering::AcqRel, Ordering::Acquire);
            m.page.store(NO_PAGE, Ordering::Release);
            m.set_owner(Owner::Shared);
        }
        self.release_claim(m);
        Ok(())
    }

    /// Drops every writer frame without writing anything back (abort: the file holds the truth).
    pub fn discard_writer_frames(&self) -> Result<()> {
        let pages = self.writer_pages(|_| true);
        pages.into_iter().try_for_each(|p| self.discard_writer(p))
    }
}
