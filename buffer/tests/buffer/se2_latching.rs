//! Goal: SE2's latching rules hold. A redirected read guard and the store of a write-back of the
//! same page never overlap (the store waits: the file keeps the old bytes while the guard lives,
//! though the hook may have logged the page's before-image already); a thread holding a guard on a page cannot
//! deadlock itself by dirtying, evicting or flushing it (typed errors or `Ok(false)` instead); a
//! self-join on a page does not deadlock behind another thread's waiting write-back; and after
//! copy-on-write the mapping keeps the old bytes until write-back. No sleeps: channels and events
//! order the threads, and a yield loop only gives a blocked thread the chance to misbehave.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use nvpage_buffer::{
    BufferError, BufferPool, HookError, NoUndo, View, WriteBack, WriteBackHook, WriteBackPage,
};
use nvpage_storage::{Layer, PageId};

use common::{fill_words, open_pool, scratch_dir, uniform_word, watchdog};

const P: PageId = PageId(1);

/// Records each write-back as an event, with the value the mapping (or file) held just before.
#[derive(Debug, Default)]
struct EventHook {
    events: Arc<Mutex<Vec<String>>>,
    called: AtomicBool,
}

impl EventHook {
    /// Forgets the write-backs so far (the setup's).
    fn reset(&self) {
        self.events.lock().unwrap().clear();
        self.called.store(false, Ordering::SeqCst);
    }
}

impl WriteBackHook for EventHook {
    fn before_write_back(&self, wb_page: &mut WriteBackPage<'_>) -> Result<WriteBack, HookError> {
        let page = wb_page.id();
        let mut old = vec![0u8; wb_page.file().page_size().bytes()];
        wb_page.read_old(&mut old)?;
        let v = uniform_word(&old, "before-image");
        self.events.lock().unwrap().push(format!("write-back {} over {v}", page.0));
        self.called.store(true, Ordering::SeqCst);
        Ok(WriteBack::default())
    }

    fn persist(&self) -> Result<(), HookError> {
        Ok(())
    }
}

/// The value the file (SE2: the mapping, in place) holds for `id`, read below the pool.
fn stored(pool: &BufferPool, id: PageId) -> u64 {
    let mut v = None;
    pool.with_file_page(id, &mut |b| v = Some(uniform_word(b, "stored page"))).unwrap();
    v.unwrap()
}

/// A pool over a file of 4 pages where page 1 holds 1 everywhere, written back, in no frame.
fn setup(layer: Layer, hook: Arc<dyn WriteBackHook>) -> (tempfile::TempDir, BufferPool) {
    let dir = scratch_dir();
    let pool = open_pool(dir.path(), layer, true, 8, hook);
    pool.grow(4).unwrap();
    fill_words(&mut pool.new_page(P).unwrap(), 1);
    pool.flush_page(P).unwrap();
    // SE2's flush lets the page's frame go; the other layers keep it for readers until evicted.
    assert_eq!(pool.evict_page(P).unwrap(), layer != Layer::Se2);
    (dir, pool)
}

/// Gives another thread, which has announced that it is about to block, time to block (or, if the
/// code under test is wrong, to run on). Passing never depends on how long this takes.
fn let_others_run() {
    // Miri switches threads at every yield and runs a hundred times slower: fewer suffice.
    let yields = if cfg!(miri) { 200 } else { 20_000 };
    for _ in 0..yields {
        std::thread::yield_now();
    }
}

#[test]
fn a_write_back_waits_for_redirected_readers_of_its_page() {
    let _done = watchdog("se2 write-back vs reader", 120);
    let hook = Arc::new(EventHook::default());
    let (_dir, pool) = setup(Layer::Se2, hook.clone());
    hook.reset();
    let events = hook.events.clone();

    let reader = pool.read(P, View::Writer).unwrap();
    assert!(reader.is_redirected());
    // Copy-on-write while this thread reads in place: the change goes to a private frame.
    fill_words(&mut pool.write(P).unwrap(), 2);
    assert_eq!(uniform_word(&reader, "redirected guard"), 1);
    assert_eq!(stored(&pool, P), 1, "copy-on-write left the mapping alone");

    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        let flusher = s.spawn(|| {
            tx.send(()).unwrap();
            pool.flush_page(P).unwrap();
            events.lock().unwrap().push("flush returned".into());
        });
        rx.recv().unwrap();
        let_others_run();
        // The flusher may have logged the page's before-image (the hook runs before the store
        // waits for readers), but it stored nothing: the storage layer's own latch is not the
        // pool's, so reading below the pool is allowed, and the mapping still holds the old bytes.
        assert_eq!(stored(&pool, P), 1, "write-back stored under a redirected reader");
        assert_eq!(uniform_word(&reader, "redirected guard"), 1);
        events.lock().unwrap().push("reader released".into());
        drop(reader);
        flusher.join().unwrap();
    });
    let events = hook.events.lock().unwrap().clone();
    assert_eq!(events.last().map(String::as_str), Some("flush returned"), "{events:?}");
    assert!(
        events.contains(&"write-back 1 over 1".into()),
        "the hook saw the old bytes: {events:?}"
    );
    assert!(events.contains(&"reader released".into()), "{events:?}");
    assert_eq!(stored(&pool, P), 2);
    assert!(pool.dirty_pages().is_empty());
}

#[test]
fn a_reader_cannot_deadlock_itself_on_its_own_page() {
    let _done = watchdog("se2 self-deadlock", 120);
    for layer in Layer::compiled() {
        let hook = Arc::new(EventHook::default());
        let (_dir, pool) = setup(layer, hook.clone());
        hook.reset();
        let r = pool.read(P, View::Writer).unwrap();
        assert_eq!(r.is_redirected(), layer == Layer::Se2);
        // Dirtying a page this thread reads: copy on write in every layer, no wait on itself.
        fill_words(&mut pool.write(P).unwrap(), 2);
        assert_eq!(uniform_word(&r, "reader's guard"), 1, "{layer}");
        assert_eq!(stored(&pool, P), 1, "the file keeps the old bytes until write-back");
        if layer == Layer::Se2 {
            // Writing it back would wait for this very guard, which reads the file in place.
            assert!(matches!(pool.flush_page(P), Err(BufferError::LatchHeld { page: P })));
            // Eviction never waits: the page is busy, so it stays.
            assert!(!pool.evict_page(P).unwrap());
            assert_eq!(pool.dirty_pages(), [P], "a refused write-back leaves the page dirty");
            assert!(!hook.called.load(Ordering::SeqCst));
            assert_eq!(stored(&pool, P), 1);
        }
        drop(r);

        // A guard on the writer's dirty frame: writing, flushing and evicting it are refused
        // without waiting.
        let r = pool.read(P, View::Writer).unwrap();
        assert!(!r.is_redirected(), "{layer}: a page with a frame is read from the frame");
        assert_eq!(uniform_word(&r, "frame guard"), 2);
        assert!(matches!(pool.write(P), Err(BufferError::LatchHeld { page: P })), "{layer}");
        assert!(matches!(pool.flush_page(P), Err(BufferError::LatchHeld { page: P })), "{layer}");
        assert!(!pool.evict_page(P).unwrap(), "{layer}");
        drop(r);
        {
            let w = pool.write(P).unwrap();
            assert!(
                matches!(pool.read(P, View::Writer), Err(BufferError::LatchHeld { page: P })),
                "{layer}"
            );
            assert!(matches!(pool.flush_page(P), Err(BufferError::LatchHeld { .. })), "{layer}");
            assert!(!pool.evict_page(P).unwrap(), "{layer}");
            drop(w);
        }
        assert!(!hook.called.load(Ordering::SeqCst), "{layer}: nothing was written back yet");
        assert_eq!(stored(&pool, P), 1, "{layer}: the file keeps the old bytes until write-back");

        // Once the guards are gone, the write-back runs, and the hook saw the old bytes in place.
        pool.flush_page(P).unwrap();
        assert_eq!(*hook.events.lock().unwrap(), ["write-back 1 over 1"], "{layer}");
        assert_eq!(stored(&pool, P), 2, "{layer}");
    }
}

/// Thread A reads page P in place, then dirties it (a private copy appears); thread B starts a
/// write-back of P, which must wait for A's redirected guard; A then reads P again, from the
/// frame. Taking the frame's latch before waiting for the mapped latch would deadlock here.
#[test]
fn a_self_join_does_not_deadlock_behind_a_waiting_write_back_of_a_redirected_page() {
    let _done = watchdog("se2 self-join behind a write-back", 120);
    let hook = Arc::new(EventHook::default());
    let (_dir, pool) = setup(Layer::Se2, hook.clone());
    hook.reset();
    let g1 = pool.read(P, View::Writer).unwrap();
    assert!(g1.is_redirected());
    fill_words(&mut pool.write(P).unwrap(), 2);

    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        let flusher = s.spawn(|| {
            tx.send(()).unwrap();
            pool.flush_page(P).unwrap();
        });
        rx.recv().unwrap();
        let_others_run();
        let g2 = pool.read(P, View::Writer).unwrap();
        assert!(!g2.is_redirected(), "the private copy exists: the second read uses it");
        assert_eq!(uniform_word(&g2, "second guard"), 2);
        let g3 = pool.read(P, View::Writer).unwrap();
        assert_eq!(uniform_word(&g3, "third guard"), 2);
        assert_eq!(uniform_word(&g1, "first guard"), 1);
        assert_eq!(stored(&pool, P), 1, "write-back stored under a redirected read");
        drop((g3, g2, g1));
        flusher.join().unwrap();
    });
    assert_eq!(*hook.events.lock().unwrap(), ["write-back 1 over 1"]);
    assert_eq!(stored(&pool, P), 2);
}

/// Thread A reads a page in place; thread W's write-back of it waits for A; A then hands the
/// page to a worker thread (a parallel scan's), which adopts A's holds: its read of the page is a
/// recursive hold of A's latch, granted beside the waiting write-back. Without the adoption the
/// worker would queue behind W, and A, waiting for its worker, would never let go (R8): the
/// watchdog would fire.
#[test]
fn a_worker_with_its_parents_holds_reads_beside_a_waiting_write_back() {
    let _done = watchdog("worker behind a write-back that waits for its parent", 120);
    let hook = Arc::new(EventHook::default());
    let (_dir, pool) = setup(Layer::Se2, hook.clone());
    hook.reset();
    // A snapshot that sees every stamp: the page in place, not the writer's copy.
    let view = View::Snapshot(u64::MAX - 1);
    let g1 = pool.read(P, view).unwrap();
    assert!(g1.is_redirected());
    fill_words(&mut pool.write(P).unwrap(), 2);
    let waits = pool.counters().write_back_waits;
    std::thread::scope(|s| {
        let flusher = s.spawn(|| pool.flush_page(P).unwrap());
        while pool.counters().write_back_waits == waits {
            std::thread::yield_now();
        }
        let_others_run();
        let holds = nvpage_buffer::current_holds();
        let worker = s.spawn(|| {
            let _acting = nvpage_buffer::inherit(holds);
            let g = pool.read(P, view).unwrap();
            assert!(g.is_redirected());
            uniform_word(&g, "the worker's read")
        });
        assert_eq!(worker.join().unwrap(), 1, "the file's bytes: the write-back waits");
        assert_eq!(stored(&pool, P), 1, "write-back stored under a redirected read");
        drop(g1);
        flusher.join().unwrap();
    });
    assert_eq!(*hook.events.lock().unwrap(), ["write-back 1 over 1"]);
    assert_eq!(stored(&pool, P), 2);
}

/// Thread A holds a shared guard on a dirty frame; thread B's write-back waits for the frame's
/// latch; A takes a second shared guard on the same page: shared latches are recursive, so it is
/// granted despite the waiting writer.
#[test]
fn a_self_join_does_not_deadlock_behind_a_waiting_write_back_of_a_frame() {
    let _done = watchdog("self-join behind a write-back", 120);
    for layer in Layer::compiled() {
        let hook = Arc::new(EventHook::default());
        let (_dir, pool) = setup(layer, hook.clone());
        hook.reset();
        fill_words(&mut pool.write(P).unwrap(), 2);
        let g1 = pool.read(P, View::Writer).unwrap();
        assert!(!g1.is_redirected());

        let (tx, rx) = mpsc::channel();
        std::thread::scope(|s| {
            let flusher = s.spawn(|| {
                tx.send(()).unwrap();
                pool.flush_page(P).unwrap();
            });
            rx.recv().unwrap();
            let_others_run();
            let g2 = pool.read(P, View::Writer).unwrap();
            assert_eq!(uniform_word(&g2, "second guard"), 2, "{layer}");
            assert_eq!(stored(&pool, P), 1, "{layer}: write-back stored under a reader");
            drop((g2, g1));
            flusher.join().unwrap();
        });
        assert_eq!(*hook.events.lock().unwrap(), ["write-back 1 over 1"], "{layer}");
        assert_eq!(stored(&pool, P), 2, "{layer}");
    }
}

/// Eviction never waits: while another thread reads a page in place, a dirty private copy of it
/// is skipped by eviction and by the clock, and written back once the reader is gone.
#[test]
fn eviction_skips_a_page_read_in_place_by_another_thread() {
    let _done = watchdog("se2 eviction skips", 120);
    let (_dir, pool) = setup(Layer::Se2, Arc::new(NoUndo));
    let (held_tx, held_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let pool = &pool;
        let reader = s.spawn(move || {
            let g = pool.read(P, View::Writer).unwrap();
            assert!(g.is_redirected());
            held_tx.send(()).unwrap();
            release_rx.recv().unwrap();
            assert_eq!(uniform_word(&g, "redirected guard"), 1);
        });
        held_rx.recv().unwrap();
        fill_words(&mut pool.write(P).unwrap(), 2);
        assert!(!pool.evict_page(P).unwrap(), "a redirected reader holds the page");
        // Fill the other frames, several times over: the clock skips P's busy frame.
        pool.grow(40).unwrap();
        for id in 2..40 {
            fill_words(&mut pool.new_page(PageId(id)).unwrap(), id);
        }
        assert!(pool.dirty_pages().contains(&P));
        assert_eq!(stored(pool, P), 1);
        release_tx.send(()).unwrap();
        reader.join().unwrap();
    });
    assert!(pool.evict_page(P).unwrap());
    assert_eq!(stored(&pool, P), 2);
}
