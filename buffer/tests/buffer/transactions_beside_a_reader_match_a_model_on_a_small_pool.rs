//! Goal: inside transactions, where the writer takes back the frames its stores let go
//! (`BufferPool::recycled`), every view stays right. A single writer runs transactions (commit and
//! abort) over a pool smaller than its pages, with a hook that logs first before-images, hands
//! the pool versions and names the changed lines (as the engine's does), while a reader thread
//! reads snapshots. Every read of the writer and of the reader is checked against a model; at
//! the end the file is checked too, on every layer.

use crate::common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use nvpage_buffer::{
    BufferError, BufferPool, HookError, View, WriteBack, WriteBackHook, WriteBackPage,
};
use nvpage_storage::{Layer, PageId};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::{fill_words, open_pool, scratch_dir, uniform_word, watchdog};

const PAGES: u64 = 10;

/// Logs each page's first before-image of the transaction (for abort), returns it as the
/// version, and names the changed lines.
#[derive(Debug, Default)]
struct UndoHook {
    log: Mutex<Vec<(u64, Vec<u8>)>>,
    logged: Mutex<HashSet<u64>>,
}

impl UndoHook {
    fn take(&self) -> Vec<(u64, Vec<u8>)> {
        self.logged.lock().unwrap().clear();
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

impl WriteBackHook for UndoHook {
    fn before_write_back(&self, page: &mut WriteBackPage<'_>) -> Result<WriteBack, HookError> {
        let mut buf = page.image_buffer();
        let changed = page.read_old_and_seal(buf.page_mut())?;
        let id = page.id().0;
        if self.logged.lock().unwrap().insert(id) {
            self.log.lock().unwrap().push((id, buf.page().to_vec()));
        }
        Ok(WriteBack { version: Some(buf.into_image().into()), changed: Some(changed) })
    }

    fn persist(&self) -> Result<(), HookError> {
        Ok(())
    }
}

struct Shared {
    /// The last commit.
    committed: AtomicU64,
    /// history[c]: every page's value as of commit c.
    history: Mutex<Vec<Vec<u64>>>,
    stop: AtomicBool,
}

fn reader(pool: &BufferPool, sh: &Shared, seed: u64) -> u64 {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut reads = 0;
    while !sh.stop.load(Ordering::Acquire) {
        let s = sh.committed.load(Ordering::Acquire);
        let want = sh.history.lock().unwrap()[s as usize].clone();
        for _ in 0..rng.random_range(1..20) {
            let id = rng.random_range(1..=PAGES);
            let g = match pool.read(PageId(id), View::Snapshot(s)) {
                Ok(g) => g,
                Err(BufferError::PoolExhausted { .. }) => continue,
                Err(e) => panic!("{}: snapshot {s} read of page {id}: {e}", pool.layer_kind()),
            };
            let v = uniform_word(&g, "snapshot read");
            assert_eq!(
                v,
                want[id as usize],
                "{}: snapshot {s}, page {id}: read {v:#x} (redirected {}, owned {})",
                pool.layer_kind(),
                g.is_redirected(),
                g.is_owned()
            );
            reads += 1;
            if rng.random_range(0..4) == 0 {
                std::thread::yield_now();
            }
        }
    }
    reads
}

fn writer(pool: &BufferPool, hook: &UndoHook, sh: &Shared, frames: usize, seed: u64, txns: u64) {
    let layer = pool.layer_kind();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut cur = sh.history.lock().unwrap()[0].clone();
    let mut serial = 0u64;
    for _ in 0..txns {
        let c = sh.committed.load(Ordering::Acquire);
        let pending = c + 1;
        pool.begin_txn(pending);
        for _ in 0..rng.random_range(1..30) {
            let id = rng.random_range(1..=PAGES);
            let what = format!("{layer}, {frames} frames, txn {pending}, page {id}");
            match rng.random_range(0..100) {
                0..35 => {
                    serial += 1;
                    let v = pending << 32 | serial;
                    let mut g = pool.write(PageId(id)).unwrap();
                    assert_eq!(uniform_word(&g, &what), cur[id as usize], "{what}: write");
                    fill_words(&mut g, v);
                    cur[id as usize] = v;
                }
                35..45 => {
                    serial += 1;
                    let v = pending << 32 | serial;
                    fill_words(&mut pool.new_page(PageId(id)).unwrap(), v);
                    cur[id as usize] = v;
                }
                45..65 => {
                    let g = pool.read(PageId(id), View::Writer).unwrap();
                    assert_eq!(uniform_word(&g, &what), cur[id as usize], "{what}: read");
                }
                65..72 => {
                    // Hold one page while changing another.
                    let other = id % PAGES + 1;
                    let g = pool.read(PageId(id), View::Writer).unwrap();
                    serial += 1;
                    let v = pending << 32 | serial;
                    {
                        let mut w = pool.write(PageId(other)).unwrap();
                        assert_eq!(uniform_word(&w, &what), cur[other as usize], "{what}: w2");
                        fill_words(&mut w, v);
                    }
                    cur[other as usize] = v;
                    assert_eq!(uniform_word(&g, &what), cur[id as usize], "{what}: held");
                }
                72..80 => {
                    let _ = pool.evict_page(PageId(id)).unwrap();
                }
                80..88 => pool.flush_page(PageId(id)).unwrap(),
                _ => {
                    let mut ring = pool.scan_ring();
                    for k in 0..4 {
                        let p = (id - 1 + k) % PAGES + 1;
                        let g = pool.read_scan(PageId(p), View::Writer, &mut ring).unwrap();
                        assert_eq!(uniform_word(&g, &what), cur[p as usize], "{what}: scan {p}");
                    }
                }
            }
        }
        assert!(
            pool.dirty_pages().iter().all(|p| p.0 >= 1 && p.0 <= PAGES),
            "{layer}: dirty pages"
        );
        if rng.random_range(0..4) == 0 {
            // Abort, as the engine does.
            pool.discard_writer_frames().unwrap();
            for (id, image) in hook.take().into_iter().rev() {
                pool.restore_parts(PageId(id), &[(0, &image)]).unwrap();
            }
            pool.sync().unwrap();
            pool.abort_txn().unwrap();
            cur = sh.history.lock().unwrap()[c as usize].clone();
        } else {
            pool.flush_all().unwrap();
            assert!(pool.dirty_pages().is_empty(), "{layer}: dirty after flush_all");
            pool.sync().unwrap();
            hook.take();
            pool.end_txn();
            sh.history.lock().unwrap().push(cur.clone());
            sh.committed.store(pending, Ordering::Release);
        }
        // The file holds the last commit, page by page.
        let want =
            sh.history.lock().unwrap()[sh.committed.load(Ordering::Acquire) as usize].clone();
        for id in 1..=PAGES {
            let mut got = 0;
            pool.with_file_page(PageId(id), &mut |b| got = uniform_word(b, "file")).unwrap();
            assert_eq!(got, want[id as usize], "{layer}, {frames} frames: page {id} in the file");
        }
    }
}

fn run(layer: Layer, frames: usize, seed: u64, txns: u64) {
    let dir = scratch_dir();
    let hook = Arc::new(UndoHook::default());
    let pool = open_pool(dir.path(), layer, true, frames, hook.clone());
    pool.grow(PAGES + 1).unwrap();
    let sh = Shared {
        committed: AtomicU64::new(0),
        history: Mutex::new(vec![vec![0; PAGES as usize + 1]]),
        stop: AtomicBool::new(false),
    };
    std::thread::scope(|s| {
        let r = s.spawn(|| reader(&pool, &sh, seed ^ 0xABCD));
        let w = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            writer(&pool, &hook, &sh, frames, seed, txns)
        }));
        sh.stop.store(true, Ordering::Release);
        let reads = r.join();
        if let Err(e) = w {
            std::panic::resume_unwind(e);
        }
        assert!(reads.unwrap() > 0);
    });
}

#[test]
fn transactions_beside_a_reader_match_a_model_on_every_layer() {
    let _done = watchdog("recycled_frames_in_transactions", 300);
    for layer in Layer::compiled() {
        for frames in [4, 5, 7] {
            for seed in 0..20 {
                run(layer, frames, seed * 7919 + frames as u64, 300);
            }
        }
    }
}
