//! Counters cheap enough to leave on: one cache-padded set per thread slot, summed on read.
//!
//! A thread owns its slot alone (slots are handed out uniquely and returned when the thread
//! exits), so it counts with a plain load and store instead of a locked read-modify-write: the
//! hit path's cheapest possible count. Threads beyond the slots share one overflow slot and count
//! with `fetch_add`.

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

/// Slots owned by one thread each; slot `OWNED_SLOTS` is the shared overflow.
const OWNED_SLOTS: usize = 64;
const SLOTS: usize = OWNED_SLOTS + 1;

/// What the pool has done since it was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Fetches served by a page already in a frame.
    pub hits: u64,
    /// Fetches that loaded a page into a frame (a copy, or a `pread`).
    pub misses: u64,
    /// Fetches served in place from the mapping (SE2), with no frame and no copy.
    pub redirected_reads: u64,
    /// Pages copied into the writer's private frame before its first change (copy on write,
    /// every layer).
    pub cow_copies: u64,
    /// Frames taken from one page for another.
    pub evictions: u64,
    /// Dirty pages written back to the file.
    pub write_backs: u64,
    /// Bytes copied from the file or its mapping into frames.
    pub bytes_copied_in: u64,
    /// Bytes copied from frames into the file or its mapping: a write-back's changed lines (the
    /// `pwrite` paths also write the unchanged bytes between them), the whole page where the
    /// hook names none.
    pub bytes_copied_out: u64,
    /// Reads served from an old version (a snapshot older than the page's last change).
    pub version_reads: u64,
    /// Reads served by a private copy because no clean frame could be had.
    pub private_copies: u64,
    /// Page-latch acquisitions by readers that had to wait (a write-back in progress or queued).
    pub latch_waits: u64,
    /// Their total wait, in nanoseconds.
    pub latch_wait_ns: u64,
    /// Times the writer waited for readers: a store in place (a commit's write-back, or a
    /// write-back to free a frame) waiting for a reader holding the page in place (SE2) or
    /// mid-decision, or a writer short of frames waiting for readers' guards to unpin one.
    pub write_back_waits: u64,
}

#[derive(Debug, Default)]
struct Slot {
    hits: AtomicU64,
    misses: AtomicU64,
    redirected_reads: AtomicU64,
    cow_copies: AtomicU64,
    evictions: AtomicU64,
    write_backs: AtomicU64,
    bytes_copied_in: AtomicU64,
    bytes_copied_out: AtomicU64,
    version_reads: AtomicU64,
    private_copies: AtomicU64,
    latch_waits: AtomicU64,
    latch_wait_ns: AtomicU64,
    write_back_waits: AtomicU64,
}

/// The pool's counters, striped across thread slots so counting never bounces a cache line.
#[derive(Debug)]
pub(crate) struct CounterSlots {
    slots: Box<[CachePadded<Slot>]>,
}

/// Which field to bump.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Counter {
    Hit,
    Miss,
    Redirected,
    Cow,
    Eviction,
    WriteBack,
    BytesIn,
    BytesOut,
    VersionRead,
    PrivateCopy,
    LatchWait,
    LatchWaitNs,
    WriteBackWait,
}

/// Slot indices not owned by a live thread.
static FREE_SLOTS: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static NEXT_SLOT: Mutex<usize> = Mutex::new(0);

/// The calling thread's slot, returned to the free list when the thread exits.
struct SlotLease(usize);

impl SlotLease {
    fn take() -> Self {
        if let Some(i) = FREE_SLOTS.lock().pop() {
            return SlotLease(i);
        }
        let mut next = NEXT_SLOT.lock();
        if *next < OWNED_SLOTS {
            *next += 1;
            return SlotLease(*next - 1);
        }
        SlotLease(OWNED_SLOTS)
    }
}

impl Drop for SlotLease {
    fn drop(&mut self) {
        if self.0 < OWNED_SLOTS {
            FREE_SLOTS.lock().push(self.0);
        }
    }
}

fn slot_index() -> usize {
    thread_local! {
        static LEASE: SlotLease = SlotLease::take();
    }
    // During thread teardown the lease may be gone: count in the shared slot then.
    LEASE.try_with(|l| l.0).unwrap_or(OWNED_SLOTS)
}

impl CounterSlots {
    pub(crate) fn new() -> Self {
        Self { slots: (0..SLOTS).map(|_| CachePadded::new(Slot::default())).collect() }
    }

    #[inline]
    pub(crate) fn add(&self, c: Counter, n: u64) {
        let index = slot_index();
        let s = &self.slots[index];
        let field = match c {
            Counter::Hit => &s.hits,
            Counter::Miss => &s.misses,
            Counter::Redirected => &s.redirected_reads,
            Counter::Cow => &s.cow_copies,
            Counter::Eviction => &s.evictions,
            Counter::WriteBack => &s.write_backs,
            Counter::BytesIn => &s.bytes_copied_in,
            Counter::BytesOut => &s.bytes_copied_out,
            Counter::VersionRead => &s.version_reads,
            Counter::PrivateCopy => &s.private_copies,
            Counter::LatchWait => &s.latch_waits,
            Counter::LatchWaitNs => &s.latch_wait_ns,
            Counter::WriteBackWait => &s.write_back_waits,
        };
        if index == OWNED_SLOTS {
            field.fetch_add(n, Ordering::Relaxed);
        } else {
            // This thread owns the slot: nobody else writes it, readers only load it.
            field.store(field.load(Ordering::Relaxed) + n, Ordering::Relaxed);
        }
    }

    pub(crate) fn snapshot(&self) -> Counters {
        let mut c = Counters::default();
        for s in self.slots.iter() {
            c.hits += s.hits.load(Ordering::Relaxed);
            c.misses += s.misses.load(Ordering::Relaxed);
            c.redirected_reads += s.redirected_reads.load(Ordering::Relaxed);
            c.cow_copies += s.cow_copies.load(Ordering::Relaxed);
            c.evictions += s.evictions.load(Ordering::Relaxed);
            c.write_backs += s.write_backs.load(Ordering::Relaxed);
            c.bytes_copied_in += s.bytes_copied_in.load(Ordering::Relaxed);
            c.bytes_copied_out += s.bytes_copied_out.load(Ordering::Relaxed);
            c.version_reads += s.version_reads.load(Ordering::Relaxed);
            c.private_copies += s.private_copies.load(Ordering::Relaxed);
            c.latch_waits += s.latch_waits.load(Ordering::Relaxed);
            c.latch_wait_ns += s.latch_wait_ns.load(Ordering::Relaxed);
            c.write_back_waits += s.write_back_waits.load(Ordering::Relaxed);
        }
        c
    }
}
