//! Goal: write-back stores nothing the hook has not covered. On the storage simulator, a hook
//! that keeps before-images (in memory here; the engine persists them in its log) sees every page
//! before it is stored; a power loss at every write-back point — with the page being stored when
//! the power goes, its persist failed — leaves each page either as last synced or covered by a
//! before-image, and restoring the before-images gives back the last synced file exactly. Every
//! layer, with `msync`/`fdatasync` (stores durable at sync) and, for the mapped layers, the
//! cache-line path (each store persisted at once). A hook that fails, or a failed store, leaves
//! the page dirty and the file unchanged, and a later flush succeeds (or, after a failed persist,
//! fails typed: the file is poisoned).

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use nvpage_buffer::{
    BufferError, BufferPool, HookError, View, WriteBack, WriteBackHook, WriteBackPage,
};
use nvpage_storage::sim::{Fault, Sim, Tear};
use nvpage_storage::{Layer, OpenOptions, PageId, PersistRequest, SimOp, StorageError};

use common::{data_path, fill_words, open_with, options, scratch_dir, uniform_word};

/// Pages 1..=PAGES are used; the pool has far fewer frames, so eviction writes back too.
const PAGES: u64 = 10;
const FRAMES: usize = 4;

/// Keeps a before-image of every page before it is written back; arms a crash at write-back
/// number `crash_at` (0-based): the before-image is kept, and the next persist fails — on the
/// cache-line path that is the store that follows, as if the power went while the page was being
/// stored; elsewhere stores wait for a sync that never comes.
#[derive(Debug)]
struct UndoHook {
    images: Mutex<Vec<(PageId, Vec<u8>)>>,
    calls: AtomicU64,
    crash_at: u64,
    crashed: AtomicBool,
    sim: Arc<Sim>,
}

impl UndoHook {
    fn new(sim: Arc<Sim>, crash_at: u64) -> Self {
        Self {
            images: Mutex::new(Vec::new()),
            calls: AtomicU64::new(0),
            crash_at,
            crashed: AtomicBool::new(false),
            sim,
        }
    }
}

impl WriteBackHook for UndoHook {
    fn before_write_back(&self, wb_page: &mut WriteBackPage<'_>) -> Result<WriteBack, HookError> {
        let page = wb_page.id();
        if self.crashed.load(Ordering::SeqCst) {
            return Err("the power is out".into());
        }
        let mut old = vec![0u8; wb_page.file().page_size().bytes()];
        // Sealed from the old bytes: the checksum updated from the changed lines, which the
        // reopened file verifies.
        wb_page.read_old_and_seal(&mut old)?;
        self.images.lock().unwrap().push((page, old));
        if self.calls.fetch_add(1, Ordering::SeqCst) == self.crash_at {
            self.crashed.store(true, Ordering::SeqCst);
            self.sim.fail(Fault::once(Some(SimOp::Persist), 0));
        }
        Ok(WriteBack::default())
    }

    fn persist(&self) -> Result<(), HookError> {
        Ok(())
    }
}

/// Writes every page (value `round * 1000 + page`) and rewrites the odd ones, then flushes; stops
/// at the first error once the hook has crashed.
fn workload(pool: &BufferPool, hook: &UndoHook) {
    let pages = (1..=PAGES).chain((1..=PAGES).step_by(2));
    for (round, id) in pages.enumerate() {
        let r = pool.write(PageId(id)).map(|mut g| fill_words(&mut g, round as u64 * 1000 + id));
        if hook.crashed.load(Ordering::SeqCst) {
            return;
        }
        r.unwrap();
    }
    let r = pool.flush_all();
    if !hook.crashed.load(Ordering::SeqCst) {
        r.unwrap();
    }
}

/// The configurations crashed: every layer as opened by default, and the mapped layers on the
/// cache-line path where the scratch directory allows it (tmpfs: emulated NVM).
fn configs() -> Vec<OpenOptions> {
    let mut v = Vec::new();
    for layer in Layer::compiled() {
        v.push(options(layer, PersistRequest::Auto));
        let cache_line = options(layer, PersistRequest::CacheLine);
        let probe = scratch_dir();
        if layer.is_mapped() && cache_line.create(&data_path(probe.path())).is_ok() {
            v.push(cache_line);
        }
    }
    v
}

fn pool_with(
    dir: &std::path::Path,
    opts: &OpenOptions,
    create: bool,
    hook: Arc<dyn WriteBackHook>,
) -> BufferPool {
    BufferPool::new(open_with(dir, opts, create), FRAMES, hook).unwrap()
}

/// Creates the file under a simulator with every page synced (value `page`); returns the
/// simulator and the synced image.
fn synced_file(dir: &std::path::Path, opts: &OpenOptions, seed: u64) -> (Arc<Sim>, Vec<u8>) {
    let sim = Arc::new(Sim::attach(dir, seed));
    let pool = pool_with(dir, opts, true, Arc::new(nvpage_buffer::NoUndo));
    pool.grow(PAGES + 1).unwrap();
    for id in 1..=PAGES {
        fill_words(&mut pool.new_page(PageId(id)).unwrap(), id);
    }
    pool.flush_all().unwrap();
    pool.write_header().unwrap();
    pool.sync().unwrap();
    drop(pool);
    let image = sim.durable_image(&data_path(dir)).unwrap();
    (sim, image)
}

fn crash_once(opts: &OpenOptions, tear: Tear, crash_at: u64, seed: u64) -> u64 {
    let dir = scratch_dir();
    let (sim, synced) = synced_file(dir.path(), opts, seed);
    let hook = Arc::new(UndoHook::new(sim.clone(), crash_at));
    let pool = pool_with(dir.path(), opts, false, hook.clone());
    let mode = pool.file().durability().mode;
    let ps = pool.page_size();
    workload(&pool, &hook);
    drop(pool);
    let calls = hook.calls.load(Ordering::SeqCst);
    sim.crash(tear);

    let ctx =
        format!("{} ({mode}), {tear:?}, crash at write-back {crash_at}, seed {seed}", opts.layer);
    let mut file = std::fs::read(data_path(dir.path())).unwrap();
    assert!(file.len() >= synced.len(), "{ctx}: the file shrank");
    let images = hook.images.lock().unwrap();
    // Nothing the hook did not cover changed.
    for (i, (now, then)) in file.chunks(ps).zip(synced.chunks(ps)).enumerate() {
        if now != then {
            assert!(
                images.iter().any(|(p, _)| p.0 == i as u64),
                "{ctx}: page {i} changed without a before-image"
            );
        }
    }
    // Undo, newest first, so each page ends with its first before-image.
    for (page, image) in images.iter().rev() {
        let at = page.0 as usize * ps;
        file[at..at + ps].copy_from_slice(image);
    }
    assert!(file[..synced.len()] == synced[..], "{ctx}: undo did not restore the synced file");
    assert!(file[synced.len()..].iter().all(|&b| b == 0), "{ctx}");
    // And the restored file opens and reads as synced, every page verified.
    std::fs::write(data_path(dir.path()), &file).unwrap();
    let pool = pool_with(dir.path(), opts, false, Arc::new(nvpage_buffer::NoUndo));
    for id in 1..=PAGES {
        assert_eq!(uniform_word(&pool.read(PageId(id), View::Writer).unwrap(), &ctx), id, "{ctx}");
    }
    calls
}

#[test]
fn a_crash_at_every_write_back_leaves_only_what_the_hook_covered() {
    let configs = configs();
    if std::path::Path::new("/dev/shm").is_dir() {
        assert!(configs.len() > Layer::compiled().len(), "the cache-line path is crashed too");
    }
    for opts in configs {
        let layer = opts.layer;
        // A run with no crash counts the write-back points.
        let total = crash_once(&opts, Tear::Sector, u64::MAX, 1);
        assert!(total >= PAGES + PAGES / 2, "{layer}: every change is written back ({total})");
        for crash_at in 0..total {
            for (t, tear) in Tear::ALL.into_iter().enumerate() {
                let seed = crash_at * 3 + t as u64;
                let calls = crash_once(&opts, tear, crash_at, seed);
                assert_eq!(calls, crash_at + 1, "{layer}: the crash came at the planned point");
            }
        }
    }
}

/// Fails while `failing` is set, counting its calls.
#[derive(Debug, Default)]
struct SwitchHook {
    failing: AtomicBool,
    calls: AtomicU64,
}

impl WriteBackHook for SwitchHook {
    fn before_write_back(&self, _page: &mut WriteBackPage<'_>) -> Result<WriteBack, HookError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.failing.load(Ordering::SeqCst) {
            return Err("the log is full".into());
        }
        Ok(WriteBack::default())
    }

    fn persist(&self) -> Result<(), HookError> {
        Ok(())
    }
}

fn live_file(dir: &std::path::Path) -> Vec<u8> {
    std::fs::read(data_path(dir)).unwrap()
}

#[test]
fn a_failing_hook_stores_nothing_and_leaves_the_page_dirty() {
    for layer in Layer::compiled() {
        let dir = scratch_dir();
        let opts = options(layer, PersistRequest::Auto);
        let (_sim, _synced) = synced_file(dir.path(), &opts, 7);
        let hook = Arc::new(SwitchHook::default());
        let pool = pool_with(dir.path(), &opts, false, hook.clone());
        // Fill every frame with a dirty page.
        for id in 1..=FRAMES as u64 {
            fill_words(&mut pool.write(PageId(id)).unwrap(), 100 + id);
        }
        hook.failing.store(true, Ordering::SeqCst);
        let before = live_file(dir.path());

        let r = pool.flush_page(PageId(1));
        assert!(matches!(r, Err(BufferError::Hook { page: PageId(1), .. })), "{layer}: {r:?}");
        let r = pool.evict_page(PageId(2));
        assert!(matches!(r, Err(BufferError::Hook { page: PageId(2), .. })), "{layer}: {r:?}");
        // Every frame is dirty and none can be written back: a miss (SE2: a copy-on-write; its
        // reads need no frame) fails, typed.
        let r = if layer == Layer::Se2 {
            pool.write(PageId(PAGES)).map(drop)
        } else {
            pool.read(PageId(PAGES), View::Writer).map(drop)
        };
        assert!(matches!(r, Err(BufferError::Hook { .. })), "{layer}: {r:?}");
        assert!(pool.flush_all().is_err());
        assert!(live_file(dir.path()) == before, "{layer}: a refused write-back stored a byte");
        let dirty: Vec<PageId> = (1..=FRAMES as u64).map(PageId).collect();
        assert_eq!(pool.dirty_pages(), dirty, "{layer}");
        assert_eq!(pool.counters().write_backs, 0, "{layer}");
        for id in 1..=FRAMES as u64 {
            assert_eq!(
                uniform_word(&pool.read(PageId(id), View::Writer).unwrap(), "kept"),
                100 + id
            );
        }

        // The hook recovers: the next flush succeeds and stores the pages.
        hook.failing.store(false, Ordering::SeqCst);
        pool.flush_page(PageId(1)).unwrap();
        assert!(pool.evict_page(PageId(2)).unwrap(), "{layer}");
        assert_eq!(uniform_word(&pool.read(PageId(PAGES), View::Writer).unwrap(), "miss"), PAGES);
        pool.flush_all().unwrap();
        assert!(pool.dirty_pages().is_empty(), "{layer}");
        for id in 1..=FRAMES as u64 {
            let mut v = 0;
            pool.with_file_page(PageId(id), &mut |b| v = uniform_word(b, "stored")).unwrap();
            assert_eq!(v, 100 + id, "{layer}: page {id} written back");
        }
    }
}

#[test]
fn a_failed_store_leaves_the_page_dirty() {
    for opts in configs() {
        let layer = opts.layer;
        let dir = scratch_dir();
        let (sim, _synced) = synced_file(dir.path(), &opts, 11);
        let pool = pool_with(dir.path(), &opts, false, Arc::new(SwitchHook::default()));
        let mode = pool.file().durability().mode;
        let ctx = format!("{layer} ({mode})");
        fill_words(&mut pool.write(PageId(3)).unwrap(), 33);
        if layer == Layer::Pread {
            // A failed pwrite: the page stays dirty, nothing is poisoned, the next flush works.
            sim.fail(Fault::once(Some(SimOp::Write), 0));
            let r = pool.flush_page(PageId(3));
            assert!(matches!(r, Err(BufferError::Storage(StorageError::Io { .. }))), "{r:?}");
            assert_eq!(pool.dirty_pages(), [PageId(3)]);
            assert_eq!(pool.counters().write_backs, 0);
            pool.flush_page(PageId(3)).unwrap();
            assert!(pool.dirty_pages().is_empty());
            pool.sync().unwrap();
            continue;
        }
        sim.fail(Fault::once(Some(SimOp::Persist), 0));
        if mode.uses_cache_lines() {
            // The store's own persist fails: the page stays dirty.
            let r = pool.flush_page(PageId(3));
            assert!(
                matches!(r, Err(BufferError::Storage(StorageError::Io { .. }))),
                "{ctx}: {r:?}"
            );
        } else {
            // Stores are persisted by sync: a failed sync poisons the file.
            assert!(pool.sync().is_err(), "{ctx}");
        }
        // Poisoned until reopened: the next write-back fails instead of pretending.
        assert_eq!(pool.dirty_pages(), [PageId(3)], "{ctx}");
        let r = pool.flush_page(PageId(3));
        assert!(
            matches!(r, Err(BufferError::Storage(StorageError::Poisoned { .. }))),
            "{ctx}: {r:?}"
        );
        assert_eq!(pool.dirty_pages(), [PageId(3)], "{ctx}");
        assert_eq!(pool.counters().write_backs, 0, "{ctx}");
        // The frame still holds the change.
        assert_eq!(uniform_word(&pool.read(PageId(3), View::Writer).unwrap(), "kept"), 33, "{ctx}");
    }
}
