//! Goal: the running writer never fails because readers hold frames (R10), on the layers whose
//! readers read frames (pread and SE1) and with pools of 4 to 8 frames, and fails with a typed
//! error — never a hang — only where its own guards hold every frame. A reader on another
//! thread pins every frame but one (guards on committed pages, each a shared frame); the writer
//! holds a new page in the last frame while it asks for a second one, as an index split does:
//! it waits, the reader lets go once the writer is seen waiting (the pool's write-back-wait
//! counter), and the writer gets its frame and stores both pages. SE2's readers read committed
//! pages in place, so there they pin no frame and the writer has its frames at once; but where
//! they hold in place the pages of the writer's dirty frames, the writer waits for them too, even
//! while it holds one of its own dirty pages in place. No sleeps.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};

use nvpage_buffer::{BufferError, BufferPool, NoUndo, View};
use nvpage_storage::{Layer, PageId};

use common::{fill_words, open_pool, scratch_dir, uniform_word, watchdog};

/// The reader's pages, 1..frames.
fn reader_page(i: usize) -> PageId {
    PageId(1 + i as u64)
}

/// A pool of `frames` whose first `frames - 1` pages are committed (at commit 1) and still in
/// their frames.
fn setup(layer: Layer, frames: usize) -> (tempfile::TempDir, BufferPool) {
    let dir = scratch_dir();
    let pool = open_pool(dir.path(), layer, true, frames, Arc::new(NoUndo));
    pool.grow(2 * frames as u64 + 2).unwrap();
    pool.begin_txn(1);
    for i in 0..frames - 1 {
        fill_words(&mut pool.new_page(reader_page(i)).unwrap(), 100 + i as u64);
    }
    pool.flush_all().unwrap();
    pool.end_txn();
    (dir, pool)
}

/// What went wrong with `layer` and `frames`, if anything.
fn run(layer: Layer, frames: usize) -> Option<String> {
    let (_dir, pool) = setup(layer, frames);
    let (w1, w2) = (PageId(frames as u64 + 1), PageId(frames as u64 + 2));
    let waits_before = pool.counters().write_back_waits;
    // Set once the writer has its second frame, or has given up.
    let asked = AtomicBool::new(false);
    let got = std::thread::scope(|s| {
        let (held, wait_held) = mpsc::channel::<()>();
        let (pool, asked) = (&pool, &asked);
        s.spawn(move || {
            let guards: Vec<_> = (0..frames - 1)
                .map(|i| pool.read(reader_page(i), View::Snapshot(1)).unwrap())
                .collect();
            for (i, g) in guards.iter().enumerate() {
                assert!(!g.is_redirected() && !g.is_owned(), "guard {i} pins a frame");
                assert_eq!(uniform_word(g, "reader's page"), 100 + i as u64);
            }
            held.send(()).unwrap();
            while pool.counters().write_back_waits == waits_before && !asked.load(Ordering::SeqCst)
            {
                std::thread::yield_now();
            }
            drop(guards);
        });
        wait_held.recv().unwrap();
        pool.begin_txn(2);
        let mut first = pool.new_page(w1).unwrap();
        fill_words(&mut first, 1);
        // Every frame is pinned now, one by this thread: the second frame must be waited for.
        let second = pool.new_page(w2);
        asked.store(true, Ordering::SeqCst);
        let got = second.map(|mut second| fill_words(&mut second, 2));
        drop(first);
        got
    });
    if let Err(e) = got {
        pool.abort_txn().unwrap();
        return Some(format!("the writer gave up: {e}"));
    }
    pool.flush_all().unwrap();
    pool.end_txn();
    assert!(pool.counters().write_back_waits > waits_before, "the writer waited");
    for (id, v) in [(w1, 1), (w2, 2)] {
        let mut stored = 0;
        pool.with_file_page(id, &mut |b| stored = uniform_word(b, "stored")).unwrap();
        assert_eq!(stored, v, "page {id:?} in the file");
    }
    None
}

#[test]
fn a_writer_short_of_frames_waits_for_readers() {
    let mut wrong = Vec::new();
    for layer in Layer::compiled().into_iter().filter(|&l| l != Layer::Se2) {
        for frames in 4..=8 {
            wrong.extend(run(layer, frames).map(|w| format!("{layer}, {frames} frames: {w}")));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Where the writer's own guards hold every frame, no reader can end a wait: a typed error.
#[test]
fn a_writer_holding_every_frame_itself_gets_a_typed_error() {
    for layer in Layer::compiled() {
        let dir = scratch_dir();
        let pool = open_pool(dir.path(), layer, true, 4, Arc::new(NoUndo));
        pool.grow(8).unwrap();
        pool.begin_txn(1);
        let held: Vec<_> = (1..5).map(|i| pool.new_page(PageId(i)).unwrap()).collect();
        match pool.new_page(PageId(5)) {
            Err(BufferError::PoolExhausted { page, frames }) => {
                assert_eq!((page, frames), (PageId(5), 4), "{layer}")
            }
            r => panic!("{layer}: a fifth page with four frames held: {:?}", r.map(drop)),
        }
        drop(held);
        pool.abort_txn().unwrap();
    }
}

/// SE2 reads committed pages in the mapping: a commit's flush leaves no frame to its readers, so
/// readers holding a guard on every committed page pin no frame, and the writer takes every
/// frame of the pool without waiting.
#[test]
fn se2_readers_of_committed_pages_pin_no_frame() {
    if !Layer::compiled().contains(&Layer::Se2) {
        return;
    }
    let frames = 4;
    let (_dir, pool) = setup(Layer::Se2, frames);
    let guards: Vec<_> =
        (0..frames - 1).map(|i| pool.read(reader_page(i), View::Snapshot(1)).unwrap()).collect();
    for (i, g) in guards.iter().enumerate() {
        assert!(g.is_redirected(), "guard {i} reads the mapping");
        assert_eq!(uniform_word(g, "reader's page"), 100 + i as u64);
    }
    let waits_before = pool.counters().write_back_waits;
    pool.begin_txn(2);
    let writes: Vec<_> = (0..frames as u64)
        .map(|i| {
            let mut g = pool.new_page(PageId(frames as u64 + 1 + i)).unwrap();
            fill_words(&mut g, i + 1);
            g
        })
        .collect();
    drop(writes);
    pool.flush_all().unwrap();
    pool.end_txn();
    assert_eq!(pool.counters().write_back_waits, waits_before, "the writer never waited");
    drop(guards);
}

/// SE2: a reader holds in place the pages of three of the writer's four dirty frames, and the
/// writer holds the fourth's page in place itself (read before it changed the page). Short of a
/// frame, the writer waits for the reader — it never writes back its own held page, which would
/// wait for itself — and then has its frame.
#[test]
fn an_se2_writer_holding_one_of_its_pages_waits_for_readers_of_the_others() {
    if !Layer::compiled().contains(&Layer::Se2) {
        return;
    }
    let _done = watchdog("an SE2 writer holding one of its pages", 60);
    let (_dir, pool) = setup(Layer::Se2, 5);
    let (held, wait_held) = mpsc::channel::<()>();
    let writer_done = AtomicBool::new(false);
    let got = std::thread::scope(|s| {
        let (pool, writer_done) = (&pool, &writer_done);
        s.spawn(move || {
            let guards: Vec<_> =
                (1..4).map(|i| pool.read(reader_page(i), View::Snapshot(1)).unwrap()).collect();
            assert!(guards.iter().all(|g| g.is_redirected()));
            let waits = pool.counters().write_back_waits;
            held.send(()).unwrap();
            while pool.counters().write_back_waits == waits && !writer_done.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            drop(guards);
        });
        wait_held.recv().unwrap();
        pool.begin_txn(2);
        for i in 1..4 {
            let mut g = pool.write(reader_page(i)).unwrap();
            let v = uniform_word(&g, "page");
            fill_words(&mut g, v + 100);
        }
        let own = pool.read(reader_page(0), View::Writer).unwrap();
        assert!(own.is_redirected());
        fill_words(&mut pool.write(reader_page(0)).unwrap(), 111);
        // Four dirty frames of five, and the fifth taken by a new page held meanwhile.
        let fifth = pool.new_page(PageId(7)).unwrap();
        let r = pool.new_page(PageId(8)).map(|mut g| fill_words(&mut g, 8));
        writer_done.store(true, Ordering::SeqCst);
        drop((own, fifth));
        r
    });
    assert!(got.is_ok(), "the writer failed instead of waiting for the reader: {got:?}");
    assert!(pool.counters().write_back_waits > 0, "the writer waited");
    pool.flush_all().unwrap();
    pool.end_txn();
}

/// SE2: a writer that holds in place every page whose changes fill the pool has no frame anyone
/// else can give back: a typed error, not a wait for itself.
#[test]
fn an_se2_writer_holding_every_page_it_changed_gets_a_typed_error() {
    if !Layer::compiled().contains(&Layer::Se2) {
        return;
    }
    let _done = watchdog("an SE2 writer holding every page it changed", 60);
    let (_dir, pool) = setup(Layer::Se2, 4);
    pool.begin_txn(2);
    // Page 4 is new; pages 1..3 committed, read in place first.
    fill_words(&mut pool.new_page(PageId(4)).unwrap(), 4);
    pool.flush_page(PageId(4)).unwrap();
    let guards: Vec<_> = (0..4).map(|i| pool.read(reader_page(i), View::Writer).unwrap()).collect();
    assert!(guards.iter().all(|g| g.is_redirected()));
    for i in 0..4 {
        fill_words(&mut pool.write(reader_page(i)).unwrap(), 200 + i as u64);
    }
    match pool.new_page(PageId(9)) {
        Err(BufferError::PoolExhausted { page, frames }) => {
            assert_eq!((page, frames), (PageId(9), 4))
        }
        r => panic!("a fifth frame with four held: {:?}", r.map(drop)),
    }
    drop(guards);
    pool.abort_txn().unwrap();
}
