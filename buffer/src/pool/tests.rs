//! The pool's own unsafe code over a real `pread`-layer file, at sizes Miri can interpret:
//! frame bytes handed to the layer on a load and a write-back, guards dereferencing a frame
//! under its latch or pin, with threads racing for frames.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use nvpage_storage::page::PAGE_HEADER_LEN;
use nvpage_storage::{FileLayer, Layer, OpenOptions, PageId, PageSize, StorageError};

use super::{BufferPool, MIN_FRAMES, View};
use crate::error::{BufferError, HookError};
use crate::hook::WriteBackHook;
use crate::hook::{WriteBack, WriteBackPage};

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
    fn before_write_back(&self, _page: &mut WriteBackPage<'_>) -> Result<WriteBack, HookError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(WriteBack::default())
    }

    fn persist(&self) -> Result<(), HookError> {
        Ok(())
    }
}

/// The pread layer over the file `data` in `dir`, created or opened.
fn layer(dir: &Path, create: bool) -> Box<dyn FileLayer> {
    layer_of(Layer::Pread, dir, create)
}

/// Layer `kind` over the file `data` in `dir`, created or opened.
fn layer_of(kind: Layer, dir: &Path, create: bool) -> Box<dyn FileLayer> {
    let opts = OpenOptions {
        page_size: PageSize::new(PAGE_BYTES).unwrap(),
        max_bytes: MAX_PAGES * PAGE_BYTES,
        ..OpenOptions::new(kind)
    };
    let path = dir.join("data");
    if create { opts.create(&path) } else { opts.open(&path) }.unwrap()
}

/// Page `id` as `pool`'s file holds it now.
fn page_in_file_of(pool: &BufferPool, id: PageId) -> Vec<u8> {
    let mut page = Vec::new();
    pool.with_file_page(id, &mut |b| page = b.to_vec()).unwrap();
    page
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
    let mut words =
        page[PAGE_HEADER_LEN..].chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().unwrap()));
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
    p.grow(4).unwrap();

    // A page never written reads as zeros: a miss, `pread` into a frame.
    {
        let g = p.read(PageId(1), View::Writer).unwrap();
        assert!(!g.is_redirected());
        assert_eq!(g.len(), PAGE_BYTES as usize);
        assert!(g.iter().all(|&b| b == 0));
    }
    let c = p.counters();
    assert_eq!((c.misses, c.hits, c.bytes_copied_in), (1, 0, PAGE_BYTES));

    // Two shared guards on one thread (a self-join): both hits, on the same frame.
    {
        let a = p.read(PageId(1), View::Writer).unwrap();
        let b = p.read(PageId(1), View::Writer).unwrap();
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
    assert_eq!(uniform_word(&p.read(PageId(1), View::Writer).unwrap(), "after write"), 0xA1);

    // Eviction writes the page back (hook first), and the next read loads it from the file.
    assert!(p.evict_page(PageId(1)).unwrap());
    let c = p.counters();
    assert_eq!((c.evictions, c.write_backs, hook.calls()), (1, 1, 1));
    assert!(p.dirty_pages().is_empty());
    assert_eq!(uniform_word(&p.read(PageId(1), View::Writer).unwrap(), "reloaded"), 0xA1);
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
    let on_file = page_in_file_of(&p, PageId(1));
    assert_eq!(uniform_word(&on_file, "page 1 in the file"), 0xB2);
    assert_eq!(uniform_word(&p.read(PageId(1), View::Writer).unwrap(), "still resident"), 0xB2);

    // A write guard held by this thread refuses its own shared request rather than hang.
    {
        let mut w = p.write(PageId(2)).unwrap();
        fill_words(&mut w, 0xC3);
        assert!(matches!(p.read(PageId(2), View::Writer), Err(BufferError::LatchHeld { .. })));
    }
    // `discard_writer` drops the frame unwritten: the file keeps the zeros.
    p.discard_writer(PageId(2)).unwrap();
    assert!(p.read(PageId(2), View::Writer).unwrap().iter().all(|&b| b == 0));
    assert_eq!(hook.calls(), 2);

    // A load that fails (page 3 damaged behind the pool's back) unpublishes the frame and
    // releases its latch: the error reaches the caller every time, and `new_page`, which
    // reads nothing, still gets the page.
    let damaged = std::fs::OpenOptions::new().write(true).open(dir.path().join("data"));
    damaged.unwrap().write_all_at(&[0xFF; 16], 3 * PAGE_BYTES + 64).unwrap();
    for _ in 0..2 {
        assert!(matches!(
            p.read(PageId(3), View::Writer),
            Err(BufferError::Storage(StorageError::ChecksumMismatch { .. }))
        ));
    }
    fill_words(&mut p.new_page(PageId(3)).unwrap(), 0xD4);
    assert_eq!(uniform_word(&p.read(PageId(3), View::Writer).unwrap(), "page 3 made anew"), 0xD4);
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
    p.grow(PAGES + 1).unwrap();
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
        let g = p.read_scan(PageId(i), View::Writer, &mut ring).unwrap();
        assert_eq!(uniform_word(&g, "scan"), round_value(i, rounds));
    }

    p.flush_all().unwrap();
    assert!(p.dirty_pages().is_empty());
    let c = p.counters();
    assert_eq!(hook.calls(), c.write_backs, "one hook call per write-back: {c:?}");
    assert_eq!(c.bytes_copied_out, c.write_backs * PAGE_BYTES, "{c:?}");
    p.write_header().unwrap();
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
                uniform_word(&pool.read(id, View::Writer).unwrap(), "read of any page");
            }
            // Two guards: an own page held shared while a shared page is incremented.
            _ => {
                let g = pool.read(own_page(t, own), View::Writer).unwrap();
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
    p.grow(LAST_PAGE + 1).unwrap();
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
    check(&|id| uniform_word(&p.read(id, View::Writer).unwrap(), "through the pool"));
    let c = p.counters();
    assert!(c.evictions > 0, "the pool was under pressure: {c:?}");

    p.flush_all().unwrap();
    assert!(p.dirty_pages().is_empty());
    assert_eq!(hook.calls(), p.counters().write_backs);
    p.write_header().unwrap();
    p.sync().unwrap();
    drop(p);
    let file = layer(dir.path(), false);
    check(&|id| uniform_word(&page_in_file(&*file, id), "reopened"));
}

/// A reader's pin or claim of the writer's frame lasts an instant (a lookup that finds the
/// owner wrong, a clock sweep passing a dirty frame), and abort's discard waits it out instead
/// of failing (R5: "a reader's pin is not an error"; a failed abort poisons the database). A
/// second thread holds the pin, then the claim, across the discard.
#[test]
fn a_discard_waits_out_another_threads_transient_pin_and_claim() {
    let dir = tempfile::tempdir().unwrap();
    let p = pool(dir.path(), MIN_FRAMES, Arc::new(CountingHook::default()));
    p.grow(4).unwrap();
    for claim in [false, true] {
        p.begin_txn(1);
        drop(p.write(PageId(2)).unwrap());
        let f = (p.pages.get(2).unwrap().writer.load(Ordering::Acquire) - 1) as usize;
        let m = &p.metas[f];
        let (held, wait_held) = std::sync::mpsc::channel();
        let r = std::thread::scope(|s| {
            s.spawn(move || {
                assert!(if claim { m.pins.try_claim() } else { m.pins.try_pin() });
                held.send(()).unwrap();
                for _ in 0..if cfg!(miri) { 20 } else { 2000 } {
                    std::thread::yield_now();
                }
                if claim { m.pins.release_claim() } else { m.pins.unpin() }
            });
            wait_held.recv().unwrap();
            p.discard_writer_frames()
        });
        assert!(r.is_ok(), "claim {claim}: {r:?}");
        assert!(p.dirty_pages().is_empty(), "claim {claim}");
        p.abort_txn().unwrap();
    }
}

/// A prefetch is only a hint: of a resident page, one not in the pool, one past the file, or at
/// offsets past the page, it loads nothing into the pool, counts nothing, pins nothing (the
/// page can still be evicted and written) and changes no byte a read then sees.
#[test]
fn a_prefetch_reads_pins_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = pool(dir.path(), MIN_FRAMES, Arc::new(CountingHook::default()));
    p.grow(4).unwrap();
    {
        let mut w = p.write(PageId(1)).unwrap();
        fill_words(&mut w, 0xB2);
    }
    // Page 2 in a shared frame (the writer's page 1 is in a frame of its own).
    drop(p.read(PageId(2), View::Writer).unwrap());
    let before = p.counters();
    for id in [PageId(1), PageId(2), PageId(MAX_PAGES), PageId(u64::MAX)] {
        p.prefetch(id, &[0, 100, PAGE_BYTES as usize - 1, PAGE_BYTES as usize, usize::MAX]);
    }
    let after = p.counters();
    assert_eq!(
        (after.hits, after.misses, after.bytes_copied_in),
        (before.hits, before.misses, before.bytes_copied_in)
    );
    assert!(p.evict_page(PageId(1)).unwrap() && p.evict_page(PageId(2)).unwrap(), "no pins");
    assert_eq!(uniform_word(&p.read(PageId(1), View::Writer).unwrap(), "after prefetches"), 0xB2);
}

/// A page changed in one transaction after another is copied into the frame the last
/// write-back unpublished (`BufferPool::recycled`), still in the CPU's cache, not into a frame
/// the clock hands out: its writer frames alternate between two frames, and every round's bytes
/// reach the file. A reader's miss meanwhile (another thread) does not take the writer's frame.
#[test]
fn a_page_changed_again_reuses_the_frame_its_last_write_back_let_go() {
    let dir = tempfile::tempdir().unwrap();
    let hook = Arc::new(CountingHook::default());
    let p = pool(dir.path(), MIN_FRAMES, hook);
    p.grow(4).unwrap();
    let mut frames = std::collections::BTreeSet::new();
    for round in 1..=3 * MIN_FRAMES as u64 {
        p.begin_txn(round);
        {
            let mut w = p.write(PageId(2)).unwrap();
            frames.insert(w.as_ptr() as usize);
            fill_words(&mut w, round);
        }
        p.flush_page(PageId(2)).unwrap();
        p.end_txn();
        assert_eq!(uniform_word(&page_in_file_of(&p, PageId(2)), "the file"), round);
        assert_eq!(uniform_word(&p.read(PageId(2), View::Writer).unwrap(), "a read"), round);
        // A miss on another thread: the sweep's frame, not the hint's.
        std::thread::scope(|s| {
            s.spawn(|| drop(p.read(PageId(1 + round % 2 * 2), View::Writer).unwrap()));
        });
    }
    assert_eq!(frames.len(), 2, "writer frames used: {}", frames.len());
}

/// Transactions that each change one page: with SE2 the commit hands the stored frame back and
/// the next transaction takes that very frame; with every layer the writer's list of its frames
/// holds each frame once however often it is taken back, so a commit's search for its dirty
/// pages costs what the transaction wrote, not how many transactions came before.
#[test]
fn a_frame_taken_back_every_transaction_is_listed_once() {
    for kind in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let hook = Arc::new(CountingHook::default());
        let p = BufferPool::new(layer_of(kind, dir.path(), true), MIN_FRAMES, hook).unwrap();
        p.grow(4).unwrap();
        let mut frames = std::collections::BTreeSet::new();
        for round in 1..=4 * MIN_FRAMES as u64 {
            p.begin_txn(round);
            {
                let mut w = p.write(PageId(2)).unwrap();
                frames.insert(w.as_ptr() as usize);
                fill_words(&mut w, round);
            }
            assert_eq!(p.dirty_pages(), [PageId(2)], "{kind}");
            p.flush_all().unwrap();
            p.end_txn();
            assert_eq!(uniform_word(&page_in_file_of(&p, PageId(2)), "the file"), round);
            let listed = p.writer_frames.lock().len();
            assert!(listed <= 1, "{kind}, round {round}: {listed} frames listed");
        }
        let want = if kind == Layer::Se2 { 1 } else { 2 };
        assert_eq!(frames.len(), want, "{kind}: writer frames used");
    }
}

#[test]
fn a_writer_frame_is_verified_only_until_it_is_filled_again() {
    let dir = tempfile::tempdir().unwrap();
    let p = pool(dir.path(), MIN_FRAMES, Arc::new(CountingHook::default()));
    p.grow(4).unwrap();
    {
        let mut g = p.write(PageId(1)).unwrap();
        assert!(!g.verified(), "a frame just copied from the page");
        g.set_verified();
    }
    // The same frame, still the writer's: the mark stays.
    assert!(p.write(PageId(1)).unwrap().verified());
    // Zeroed for a page being reinitialised: its bytes are new, the mark goes.
    assert!(!p.new_page(PageId(1)).unwrap().verified());
    p.write(PageId(1)).unwrap().set_verified();
    // Written back, then copied again for the next change: checked again.
    p.flush_page(PageId(1)).unwrap();
    assert!(!p.write(PageId(1)).unwrap().verified());
    p.write(PageId(1)).unwrap().set_verified();
    // Dropped unwritten, then read again from the file: checked again.
    p.discard_writer(PageId(1)).unwrap();
    assert!(!p.write(PageId(1)).unwrap().verified());
}

/// Outside a write transaction nothing takes frames back (only the writer's thread does), yet
/// with SE2 every flush lets its frame go: the list of frames let go keeps no more entries than
/// the pool has frames.
#[test]
fn the_frames_let_go_are_never_more_than_the_pool_has() {
    if !Layer::compiled().contains(&Layer::Se2) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let hook = Arc::new(CountingHook::default());
    let p = BufferPool::new(layer_of(Layer::Se2, dir.path(), true), MIN_FRAMES, hook).unwrap();
    p.grow(4).unwrap();
    for round in 0..2 * MIN_FRAMES as u64 {
        fill_words(&mut p.write(PageId(1)).unwrap(), round);
        p.flush_page(PageId(1)).unwrap();
        assert_eq!(uniform_word(&page_in_file_of(&p, PageId(1)), "the file"), round);
    }
    let kept = p.recycled.lock().len();
    assert_eq!(kept, p.frames(), "frames let go, kept for a pool of {}", p.frames());
}
