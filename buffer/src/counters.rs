//! Counters cheap enough to leave on: one cache-padded set per thread slot, summed on read.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;

const SLOTS: usize = 16;

/// What the pool has done since it was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Fetches served by a page already in a frame.
    pub hits: u64,
    /// Fetches that loaded a page into a frame (a copy, or a `pread`).
    pub misses: u64,
    /// Fetches served in place from the mapping (SE2), with no frame and no copy.
    pub redirected_reads: u64,
    /// Pages copied into a private frame before their first change (SE2 copy-on-write).
    pub cow_copies: u64,
    /// Frames taken from one page for another.
    pub evictions: u64,
    /// Dirty pages written back to the file.
    pub write_backs: u64,
    /// Bytes copied from the file or its mapping into frames.
    pub bytes_copied_in: u64,
    /// Bytes copied from frames into the file or its mapping.
    pub bytes_copied_out: u64,
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
}

fn slot_index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static INDEX: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SLOTS;
    }
    INDEX.with(|i| *i)
}

impl CounterSlots {
    pub(crate) fn new() -> Self {
        Self { slots: (0..SLOTS).map(|_| CachePadded::new(Slot::default())).collect() }
    }

    #[inline]
    pub(crate) fn add(&self, c: Counter, n: u64) {
        let s = &self.slots[slot_index()];
        let field = match c {
            Counter::Hit => &s.hits,
            Counter::Miss => &s.misses,
            Counter::Redirected => &s.redirected_reads,
            Counter::Cow => &s.cow_copies,
            Counter::Eviction => &s.evictions,
            Counter::WriteBack => &s.write_backs,
            Counter::BytesIn => &s.bytes_copied_in,
            Counter::BytesOut => &s.bytes_copied_out,
        };
        field.fetch_add(n, Ordering::Relaxed);
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
        }
        c
    }
}
