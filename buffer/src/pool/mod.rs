//! [`BufferPool`]: frames, page states, views, and the paths data takes through them — reads
//! (`read.rs`), the writer's changes and every store in place (`write.rs`), replacement
//! (`evict.rs`) — and the guards they hand out (`guard.rs`).
//!
//! Protocol, in one place (the argument is `docs/design.md`, "Readers beside the writer"):
//! - Each page id has a **page state**: its page latch, its stamp (the commit that last stored
//!   into it in place), and its two frame entries, `frame + 1` or 0: the **shared** frame (bytes
//!   read from the file at `fill_stamp`, never changed while published) and the running
//!   writer's private **writer** frame (dirty). Readers never look at writer frames.
//! - A read names its [`View`]: the writer's, or a snapshot `s`. A snapshot reads the file's
//!   bytes (a shared frame at the current stamp, SE2 in place, or a frame filled now) when the
//!   stamp is `≤ s`, else the version of the smallest later commit; all decided under the page
//!   latch, shared (a valid shared frame is used without it: its bytes cannot change).
//! - A lookup pins the frame it finds (see `pin.rs`), then re-checks the frame's page id and
//!   owner: the frame may have been reused. A frame is taken for another page only after
//!   [`PinState::try_claim`](crate::pin::PinState::try_claim) succeeded (no pins, hence no guards
//!   and no latch holders). A loader publishes the frame before filling it, under the frame's
//!   exclusive latch, so concurrent lookups wait on the latch rather than load it twice; a failed
//!   load unpublishes it before releasing the latch.
//! - Every store into the file in place — write-back, abort's restore — holds the page latch
//!   exclusively, stamps the page first, and (write-back) calls the [`WriteBackHook`] before the
//!   first byte is stored. Write-back runs on the writer's thread only; others evict only clean
//!   frames and never wait for a page latch while evicting.
//! - Shared page latches are taken recursively by a thread that holds them already (its own or
//!   inherited: see `held.rs`) and fairly otherwise; a request that would wait on the calling
//!   thread itself is [`BufferError::LatchHeld`].

mod evict;
mod guard;
mod read;
mod write;

#[cfg(all(test, not(feature = "shuttle")))]
mod tests;

use crate::idhash::IdMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;
use nvpage_storage::{FileLayer, Layer, PageFile, PageId};
use parking_lot::Mutex;

pub use evict::ScanRing;
pub use guard::{PageMut, PageRef};

use crate::chunked::Chunked;
use crate::counters::{CounterSlots, Counters};
use crate::error::{BufferError, Result};
use crate::frame::{FrameMemory, FrameMeta, Owner};
use crate::held::{LatchKey, LatchKind};
use crate::hook::WriteBackHook;
use crate::latch::Latch;
use crate::versions::Versions;

/// The smallest pool: enough frames for a self-join plus a write.
pub const MIN_FRAMES: usize = 4;

/// Whose bytes a read sees (DESIGN.md R1): passed with every read, never inferred from the
/// thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// The running writer's (and its parallel-scan workers'): its own changes, else the file.
    Writer,
    /// A read transaction's: the database as of commit `s`.
    Snapshot(u64),
}

impl View {
    /// Whether this view reads the file's bytes of a page whose stamp is `stamp`.
    #[inline]
    fn sees(self, stamp: u64) -> bool {
        match self {
            View::Writer => true,
            View::Snapshot(s) => stamp <= s,
        }
    }
}

/// One page id's state (see the module's notes).
#[derive(Debug)]
pub(crate) struct PageState {
    /// Held exclusively by every store into the page in place; shared by a reader across its
    /// decision and its fill (or, SE2 in place, its guard's life).
    latch: Latch,
    /// The commit whose writer last stored into the page in place (the pending one while the
    /// writer runs); 0: not since open.
    stamp: AtomicU64,
    /// The shared frame, `frame + 1`, or 0.
    shared: AtomicU32,
    /// The writer's frame, `frame + 1`, or 0.
    writer: AtomicU32,
}

impl PageState {
    fn new() -> Self {
        Self {
            latch: Latch::new(),
            stamp: AtomicU64::new(0),
            shared: AtomicU32::new(0),
            writer: AtomicU32::new(0),
        }
    }

    fn entry(&self, owner: Owner) -> &AtomicU32 {
        match owner {
            Owner::Shared => &self.shared,
            Owner::Writer => &self.writer,
        }
    }
}

/// The running write transaction, as the pool sees it.
#[derive(Debug, Default)]
struct Txn {
    /// Pages stamped by this transaction, with the stamp each had before (for abort).
    stamped: IdMap<u64, u64>,
}

/// A pool of page frames over one file layer.
#[derive(Debug)]
pub struct BufferPool {
    id: usize,
    layer: Box<dyn FileLayer>,
    /// `layer.layer()`, kept: the read path asks it on every SE2 hit.
    kind: Layer,
    page_size: usize,
    metas: Box<[CachePadded<FrameMeta>]>,
    memory: FrameMemory,
    pages: Chunked<PageState>,
    hand: AtomicUsize,
    hook: Arc<dyn WriteBackHook>,
    counters: CounterSlots,
    versions: Arc<Versions>,
    /// The stamp a write-back gives a page: the pending commit, `C + 1`.
    pending: AtomicU64,
    /// The thread running the write transaction (a token from `thread_token`), 0 if none: only
    /// it writes back; with no transaction, any thread may.
    writer_thread: AtomicU64,
    txn: Mutex<Txn>,
    /// Every frame made a writer frame since this list was last pruned (some since stored or
    /// discarded: readers of the list check each): the writer's dirty pages are found here, not
    /// by a pass over every frame's meta (a megabyte per commit with 8,192 frames).
    writer_frames: Mutex<Vec<u32>>,
    /// Where the writer waits for readers to unpin a frame.
    unpins: Unpins,
    /// Frames a store in place let go, newest last, and their pages: the writer's first choice
    /// for its next frames, since their bytes were just in use and are likely still in the
    /// CPU's cache and resident (a commit copies its pages into fresh frames; the ones the clock
    /// hands out are cold, and in a large pool never touched: the kernel zeroes them first).
    /// These are a shared frame unpublished by a store of its page, and with SE2 the stored
    /// writer frame itself. A hint only: any thread's store adds to it (outside a transaction
    /// too), only the writer's thread takes from it, and each frame is claimed like any other,
    /// skipped if someone holds it or it holds another page by then.
    recycled: Mutex<std::collections::VecDeque<(usize, u64)>>,
}

/// A writer waiting for a frame to be unpinned, and the unpins that wake it.
#[derive(Debug, Default)]
struct Unpins {
    waiters: AtomicUsize,
    generation: Mutex<u64>,
    freed: parking_lot::Condvar,
}

impl Unpins {
    /// Wakes a waiting writer, if any (one load when none waits: the unpin path stays cheap).
    #[inline]
    fn notify(&self) {
        if self.waiters.load(Ordering::Relaxed) > 0 {
            *self.generation.lock() += 1;
            self.freed.notify_all();
        }
    }

    /// Waits until a frame is unpinned. A wake-up racing the registration could be missed (the
    /// unpin path has no fence, to stay cheap), so the wait is also cut short after a
    /// millisecond: the caller looks for a frame again either way, and a missed wake-up costs
    /// that millisecond, never a hang.
    fn wait(&self) {
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let mut g = self.generation.lock();
        let seen = *g;
        while *g == seen {
            if self.freed.wait_for(&mut g, std::time::Duration::from_millis(1)).timed_out() {
                break;
            }
        }
        drop(g);
        self.waiters.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `writer_thread` once a transaction was abandoned: no thread matches it, so none writes back.
const NOBODY: u64 = u64::MAX;

/// A number naming the calling thread, never 0 (nor [`NOBODY`]).
fn thread_token() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static TOKEN: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    TOKEN.with(|t| *t)
}

impl BufferPool {
    /// A pool of `frames` frames over `layer`, writing back through `hook`. The pool owns the
    /// layer: every store into the file goes through it (the soundness of SE2's in-place
    /// reads rests on that, docs/mmap-soundness.md).
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
            pages: Chunked::new(max_pages, PageState::new),
            hand: AtomicUsize::new(0),
            hook,
            counters: CounterSlots::new(),
            versions: Arc::new(Versions::default()),
            pending: AtomicU64::new(1),
            writer_thread: AtomicU64::new(0),
            txn: Mutex::new(Txn::default()),
            writer_frames: Mutex::new(Vec::new()),
            unpins: Unpins::default(),
            recycled: Mutex::new(std::collections::VecDeque::new()),
            kind: layer.layer(),
            layer,
        })
    }

    /// The page file under the pool: sizes, page count, durability, growth. Its bytes are
    /// read with `pread` only; they are written through the pool.
    pub fn file(&self) -> &PageFile {
        self.layer.file()
    }

    /// The file layer in use.
    pub fn layer_kind(&self) -> Layer {
        self.kind
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

    /// Whether the calling thread (or the thread it works for) holds a latch of this pool: a
    /// guard read in place (SE2), or the writer's frame. Such a thread must not begin a
    /// transaction whose commit could wait for that latch.
    pub fn latched_here(&self) -> bool {
        crate::held::holds_any_of(self.id)
    }

    /// The old versions readers' snapshots may need.
    pub fn versions(&self) -> &Versions {
        &self.versions
    }

    /// A ring of frames for one large sequential scan (see [`ScanRing`]).
    pub fn scan_ring(&self) -> ScanRing {
        ScanRing::new(self.id, self.frames())
    }

    /// Raises the page count to `new_count` ([`PageFile::grow`]).
    pub fn grow(&self, new_count: u64) -> Result<()> {
        Ok(self.layer.grow(new_count)?)
    }

    /// Hints that pages `first..first + count` will be read soon, in order: read-ahead in the
    /// background on a disk. Nothing on a file that is memory (tmpfs, ramfs), whose pages need
    /// no reading: there the layer's hint fills the mapping's page tables ahead of the reader
    /// (`MADV_POPULATE_READ`, on the reader's thread), which cost cold scans more than the page
    /// faults it saved (`tpch --sf 1 --queries 1,6 --layers pread,se1,se2 --media
    /// tmpfs --pool-fraction 1.0,0.1 --runs 3`, cold: Q6 on SE2 107–111 ms without it, 126–138
    /// with it).
    pub fn will_need(&self, first: PageId, count: u64) {
        if !self.layer.file().durability().medium.is_memory() {
            self.layer.will_need(first, count);
        }
    }

    /// Runs `f` on page `id` as the file holds it now, verified on its first read: for tools
    /// and tests that check what reached the file.
    ///
    /// SE2 runs `f` on the page in place, under the page's latch held shared, as a redirected
    /// read guard does (and never under the layer's own stripe latch, which stores of 1/256 of
    /// all pages take): from `f`, storing the page itself (a flush, a write-back) is
    /// [`BufferError::LatchHeld`], and storing any other page works. The other layers run `f`
    /// on a copy, holding nothing.
    pub fn with_file_page(&self, id: PageId, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        if self.kind != Layer::Se2 {
            return Ok(self.layer.with_page(id, f)?);
        }
        self.layer.file().check_id(id)?;
        let st = self.page_state(id)?;
        self.lock_page_shared(st, id)?;
        let ptr = match self.layer.mapped_page(id) {
            Ok(Some(ptr)) => ptr,
            Ok(None) => unreachable!("the SE2 layer always maps"),
            Err(e) => {
                self.unlock_page_shared(st, id);
                return Err(e.into());
            }
        };
        // The guard holds the page latch (taken above) and releases it on drop, `f`'s panic
        // included.
        let page = PageRef::mapped(self, st, id, ptr);
        f(&page);
        Ok(())
    }

    /// Writes the header page (page 0) with the page count in memory, in place under its page
    /// latch, with no hook (for users of the pool alone; the engine writes page 0 through a
    /// write guard, logged like any other page). Its shared frame, if any, is unpublished
    /// first: a published shared frame holds the file's bytes (docs/design.md).
    pub fn write_header(&self) -> Result<()> {
        let st = self.page_state(PageId::HEADER)?;
        self.lock_page_exclusive(st, PageId::HEADER)?;
        st.shared.store(0, Ordering::Release);
        let r = self.layer.write_header();
        self.unlock_page_exclusive(st, PageId::HEADER);
        Ok(r?)
    }

    /// Makes every page written back so far durable ([`FileLayer::sync`]).
    pub fn sync(&self) -> Result<()> {
        self.layer.sync().map_err(BufferError::from)
    }

    /// A write transaction begins on the calling thread; its write-backs stamp pages `pending`
    /// (the commit it will be, `C + 1`). Only this thread writes back until [`Self::end_txn`]
    /// or [`Self::abort_txn`].
    pub fn begin_txn(&self, pending: u64) {
        let mut t = self.txn.lock();
        debug_assert!(t.stamped.is_empty(), "one write transaction at a time");
        t.stamped.clear();
        self.pending.store(pending, Ordering::Release);
        self.writer_thread.store(thread_token(), Ordering::Release);
    }

    /// The write transaction committed: its stamps and versions stand.
    pub fn end_txn(&self) {
        self.txn.lock().stamped.clear();
        self.writer_thread.store(0, Ordering::Release);
    }

    /// Whether the calling thread may write a page back.
    fn may_write_back(&self) -> bool {
        let w = self.writer_thread.load(Ordering::Acquire);
        w == 0 || w == thread_token()
    }

    /// Whether the calling thread runs the write transaction.
    fn is_writer_thread(&self) -> bool {
        self.writer_thread.load(Ordering::Acquire) == thread_token()
    }

    /// Drops a pin (a guard's, or a lookup's) and wakes a writer waiting for a frame.
    #[inline]
    fn unpin(&self, m: &FrameMeta) {
        m.pins.unpin();
        self.unpins.notify();
    }

    /// Gives up a claim (an eviction that could not proceed) and wakes a waiting writer.
    fn release_claim(&self, m: &FrameMeta) {
        m.pins.release_claim();
        self.unpins.notify();
    }

    fn key(&self, kind: LatchKind, index: u64) -> LatchKey {
        LatchKey { pool: self.id, kind, index }
    }

    fn frame_bytes(&self, f: usize) -> std::ptr::NonNull<u8> {
        self.memory.ptr(f)
    }

    /// Page `id`'s state, allocated on first use.
    fn page_state(&self, id: PageId) -> Result<&PageState> {
        self.pages.get_or_alloc(id.0).ok_or_else(|| out_of_range(self, id))
    }

    /// Pins the frame `entry` names if it still holds `id` as `owner`.
    #[inline(always)]
    fn lookup_pin(&self, entry: &AtomicU32, id: PageId, owner: Owner) -> Option<usize> {
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
            if m.page() == id.0 && m.owner() == owner {
                return Some(f);
            }
            self.unpin(m);
            if entry.load(Ordering::Acquire) == e {
                // Published for this page but reused under it (a claimer mid-way): look again.
                std::thread::yield_now();
            }
        }
    }

    /// Latches pinned frame `f` for `id`; `Ok(false)` if the frame no longer holds `id` (a load
    /// failed), in which case the latch and pin are released.
    fn latch_frame(&self, f: usize, id: PageId, exclusive: bool) -> Result<bool> {
        let m = &self.metas[f];
        let key = self.key(LatchKind::Frame, f as u64);
        if !crate::held::may_take(key, exclusive) {
            self.unpin(m);
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
            self.unpin(m);
            return Ok(false);
        }
        crate::held::push(key, exclusive);
        m.touch();
        Ok(true)
    }

    /// Takes `id`'s page latch exclusively, waiting (for redirected readers and readers
    /// mid-decision; counted).
    fn lock_page_exclusive(&self, st: &PageState, id: PageId) -> Result<()> {
        let key = self.key(LatchKind::Page, id.0);
        if !crate::held::may_take(key, true) {
            return Err(BufferError::LatchHeld { page: id });
        }
        if !st.latch.try_lock_exclusive() {
            self.counters.add(crate::counters::Counter::WriteBackWait, 1);
            st.latch.lock_exclusive();
        }
        crate::held::push(key, true);
        Ok(())
    }

    fn unlock_page_exclusive(&self, st: &PageState, id: PageId) {
        crate::held::pop(self.key(LatchKind::Page, id.0), true);
        // SAFETY: the caller took it exclusively (`lock_page_exclusive` or a `try`).
        unsafe { st.latch.unlock_exclusive() };
    }
}

fn out_of_range(pool: &BufferPool, id: PageId) -> BufferError {
    BufferError::Storage(nvpage_storage::StorageError::PageOutOfRange {
        page: id,
        page_count: pool.layer.file().page_count(),
    })
}
