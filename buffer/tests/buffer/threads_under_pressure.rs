//! Goal: several threads reading and writing disjoint and shared pages through a pool smaller than
//! their working set, on every layer: no lost update (each thread's own counters and the shared
//! counters end at the number of increments), no torn page (every read sees a payload of one
//! repeated word), no deadlock (the test finishes), and the counters add up exactly.

use crate::common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use nvpage_buffer::{BufferPool, HookError, View, WriteBack, WriteBackHook, WriteBackPage};
use nvpage_storage::{Layer, PageId};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::{fill_words, open_pool, scratch_dir, uniform_word, watchdog};

const THREADS: usize = 4;
/// Two guards per thread at most, plus room for the claims in flight: never exhausted.
const FRAMES: usize = 2 * THREADS + 4;
const OWN_PAGES: u64 = 6;
const SHARED_PAGES: u64 = 4;
const OPS: usize = 4000;

fn own_page(t: usize, i: u64) -> PageId {
    PageId(1 + t as u64 * OWN_PAGES + i)
}

fn shared_page(i: u64) -> PageId {
    PageId(1 + THREADS as u64 * OWN_PAGES + i)
}

const LAST_PAGE: u64 = THREADS as u64 * OWN_PAGES + SHARED_PAGES;

/// Counts its calls, so write-backs can be matched against them.
#[derive(Debug, Default)]
struct CountingHook(AtomicU64);

impl WriteBackHook for CountingHook {
    fn before_write_back(&self, _page: &mut WriteBackPage<'_>) -> Result<WriteBack, HookError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(WriteBack::default())
    }

    fn persist(&self) -> Result<(), HookError> {
        Ok(())
    }
}

/// What one thread did, for the final checks.
#[derive(Default)]
struct Tally {
    /// Successful `read`, `read_scan` and `write` calls.
    fetches: u64,
    writes: u64,
    own: [u64; OWN_PAGES as usize],
    shared: [u64; SHARED_PAGES as usize],
}

/// Increments the counter page `id` holds, checking it is whole and, if `expect` is given, equal
/// to it.
fn increment(pool: &BufferPool, id: PageId, expect: Option<u64>, tally: &mut Tally) {
    let mut g = pool.write(id).unwrap();
    let v = uniform_word(&g, &format!("write of {id:?}"));
    if let Some(e) = expect {
        assert_eq!(v, e, "lost update on {id:?}");
    }
    fill_words(&mut g, v + 1);
    tally.fetches += 1;
    tally.writes += 1;
}

fn worker(pool: &BufferPool, t: usize, barrier: &Barrier) -> Tally {
    let mut rng = StdRng::seed_from_u64(0x5EED + t as u64);
    let mut tally = Tally::default();
    barrier.wait();
    for _ in 0..OPS {
        let own = rng.random_range(0..OWN_PAGES);
        let shared = rng.random_range(0..SHARED_PAGES);
        match rng.random_range(0..100) {
            // Own page: this thread is its only writer, so its value is known exactly.
            0..30 => {
                increment(pool, own_page(t, own), Some(tally.own[own as usize]), &mut tally);
                tally.own[own as usize] += 1;
            }
            30..50 => {
                increment(pool, shared_page(shared), None, &mut tally);
                tally.shared[shared as usize] += 1;
            }
            // Any page, anyone's.
            50..70 => {
                let id = PageId(rng.random_range(1..=LAST_PAGE));
                let g = pool.read(id, View::Writer).unwrap();
                uniform_word(&g, &format!("read of {id:?}"));
                tally.fetches += 1;
            }
            // Two guards: reading an own page while incrementing a shared one.
            70..80 => {
                let r = pool.read(own_page(t, own), View::Writer).unwrap();
                assert_eq!(
                    uniform_word(&r, "own page held"),
                    tally.own[own as usize],
                    "{}: stale read of {:?} (redirected: {})",
                    pool.layer_kind(),
                    own_page(t, own),
                    r.is_redirected()
                );
                tally.fetches += 1;
                increment(pool, shared_page(shared), None, &mut tally);
                tally.shared[shared as usize] += 1;
                assert_eq!(uniform_word(&r, "own page still held"), tally.own[own as usize]);
            }
            // A self-join on a shared page.
            80..88 => {
                let a = pool.read(shared_page(shared), View::Writer).unwrap();
                let b = pool.read(shared_page(shared), View::Writer).unwrap();
                let (va, vb) = (uniform_word(&a, "self-join"), uniform_word(&b, "self-join"));
                if a.as_ptr() != b.as_ptr() {
                    // A writer made its private copy meanwhile: `b` sees it, ahead of the file's
                    // bytes `a` holds (a shared frame, or SE2's mapping in place). A snapshot
                    // view would keep both at the file's; this test reads as the writer does.
                    assert!(vb >= va, "self-join: the private copy {vb} is behind the file's {va}");
                } else {
                    // The same frame (pinned, so it cannot change page), or the mapping under one
                    // held latch: the same bytes.
                    assert_eq!(va, vb, "self-join saw two versions");
                }
                tally.fetches += 2;
            }
            88..94 => {
                let mut ring = pool.scan_ring();
                let first = rng.random_range(1..=LAST_PAGE);
                for k in 0..8 {
                    let id = PageId((first - 1 + k) % LAST_PAGE + 1);
                    let g = pool.read_scan(id, View::Writer, &mut ring).unwrap();
                    uniform_word(&g, &format!("scan of {id:?}"));
                    tally.fetches += 1;
                }
            }
            94..97 => pool.flush_page(PageId(rng.random_range(1..=LAST_PAGE))).unwrap(),
            _ => {
                pool.evict_page(PageId(rng.random_range(1..=LAST_PAGE))).unwrap();
            }
        }
    }
    tally
}

fn run(layer: Layer) {
    let dir = scratch_dir();
    let hook = Arc::new(CountingHook::default());
    let pool = open_pool(dir.path(), layer, true, FRAMES, hook.clone());
    // Pages of a freshly grown file are zeros: every counter starts at 0.
    pool.grow(LAST_PAGE + 1).unwrap();
    assert!((LAST_PAGE as usize) > 2 * FRAMES, "the working set must not fit the pool");

    let barrier = Barrier::new(THREADS);
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (pool, barrier) = (&pool, &barrier);
                s.spawn(move || worker(pool, t, barrier))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    // No lost update, read back through the pool...
    for (t, tally) in tallies.iter().enumerate() {
        for i in 0..OWN_PAGES {
            let g = pool.read(own_page(t, i), View::Writer).unwrap();
            assert_eq!(uniform_word(&g, "own page at the end"), tally.own[i as usize]);
        }
    }
    let shared_total = |i: u64| tallies.iter().map(|t| t.shared[i as usize]).sum::<u64>();
    for i in 0..SHARED_PAGES {
        let g = pool.read(shared_page(i), View::Writer).unwrap();
        assert_eq!(uniform_word(&g, "shared page at the end"), shared_total(i), "{layer}");
    }

    // ...and the counters add up. Every successful fetch counted exactly one of hit, miss,
    // redirected read, copy on write or private copy (the reads just above included).
    let c = pool.counters();
    let fetches: u64 =
        tallies.iter().map(|t| t.fetches).sum::<u64>() + THREADS as u64 * OWN_PAGES + SHARED_PAGES;
    let writes: u64 = tallies.iter().map(|t| t.writes).sum();
    assert_eq!(
        c.hits + c.misses + c.redirected_reads + c.cow_copies + c.private_copies,
        fetches,
        "{layer}: {c:?}"
    );
    assert_eq!(c.version_reads, 0, "no snapshot read: {c:?}");
    let loads = c.misses + c.cow_copies;
    // A miss and a private copy read the file; a copy on write reads the file or copies the
    // page's shared frame.
    let ps = pool.page_size() as u64;
    assert!(
        c.bytes_copied_in >= (c.misses + c.private_copies) * ps
            && c.bytes_copied_in <= (loads + c.private_copies) * ps,
        "{layer}: {c:?}"
    );
    // Every frame taken from a page was loaded with it; what was loaded and not evicted is
    // resident, in at most FRAMES frames.
    assert!(c.evictions <= loads && loads - c.evictions <= FRAMES as u64, "{layer}: {c:?}");
    assert!(loads > FRAMES as u64, "{layer}: the pool was under pressure: {c:?}");
    match layer {
        Layer::Se2 => {
            assert_eq!(c.misses, 0, "SE2 reads in place or from a private copy: {c:?}");
            assert!(c.redirected_reads > 0 && c.cow_copies > 0, "{c:?}");
        }
        _ => assert!(c.redirected_reads == 0 && c.cow_copies > 0, "{layer}: {c:?}"),
    }

    pool.flush_all().unwrap();
    assert!(pool.dirty_pages().is_empty());
    let c = pool.counters();
    // Each write-back cleans a page one write dirtied, and ran the hook first. A flush logs its
    // pages before it stores them, so a page another thread wrote back in between was logged
    // and not stored by it (harmless: the image is the page's current bytes): at least one hook
    // call per write-back.
    assert!(c.write_backs >= 1 && c.write_backs <= writes, "{layer}: {c:?}");
    assert!(
        hook.0.load(Ordering::Relaxed) >= c.write_backs,
        "{layer}: a write-back without its hook call"
    );
    assert_eq!(c.bytes_copied_out, c.write_backs * pool.page_size() as u64, "{layer}: {c:?}");

    // The file holds the same counters, for every layer.
    pool.write_header().unwrap();
    pool.sync().unwrap();
    drop(pool);
    for other in Layer::compiled() {
        let pool = open_pool(dir.path(), other, false, FRAMES, Arc::new(CountingHook::default()));
        for i in 0..SHARED_PAGES {
            let g = pool.read(shared_page(i), View::Writer).unwrap();
            assert_eq!(
                uniform_word(&g, "shared page reopened"),
                shared_total(i),
                "{layer} -> {other}"
            );
        }
        for (t, tally) in tallies.iter().enumerate() {
            for i in 0..OWN_PAGES {
                let g = pool.read(own_page(t, i), View::Writer).unwrap();
                assert_eq!(uniform_word(&g, "own page reopened"), tally.own[i as usize]);
            }
        }
    }
}

#[test]
fn threads_under_pressure_lose_nothing_and_tear_nothing() {
    let _done = watchdog("threads_under_pressure", 120);
    for layer in Layer::compiled() {
        run(layer);
    }
}
