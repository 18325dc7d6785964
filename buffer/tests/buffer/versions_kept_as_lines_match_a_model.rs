//! Goal: versions kept as changed lines give every snapshot its pages. A writer runs transactions
//! (commit and abort, stores of one page several times, evictions through a small pool) with a
//! hook that does what the engine's undo hook does: `seal_from_old_lines` at every write-back,
//! every image logged (abort restores them newest first), the lines handed over as the version.
//! Snapshots are registered and ended as the engine's registry does (collect under one lock);
//! a checker thread reads pages at the live snapshots after each step of the writer (handed
//! over through channels: deterministic), and a free-running reader reads beside it. Every
//! snapshot read must equal the model's page at that commit, or be `SnapshotTooOld` below the
//! horizon.

use crate::common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use nvpage_buffer::{
    BufferError, BufferPool, HookError, Version, View, WriteBack, WriteBackHook, WriteBackPage,
};
use nvpage_storage::{Layer, PageId};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::{open_pool, scratch_dir, watchdog};

const PAGES: u64 = 8;
const LINE: usize = 64;

type Image = (u64, Vec<(usize, Vec<u8>)>);

/// A read for the checker: a snapshot, a page, and the page's bytes the model has at it.
type Check = (u64, u64, Vec<u8>);

#[derive(Debug, Default)]
struct LinesHook {
    log: Mutex<Vec<Image>>,
    scratch: Mutex<Vec<u8>>,
}

impl WriteBackHook for LinesHook {
    fn before_write_back(&self, page: &mut WriteBackPage<'_>) -> Result<WriteBack, HookError> {
        let mut scratch = self.scratch.lock().unwrap();
        let (changed, lines) = page.seal_from_old_lines(&mut scratch)?;
        let mut parts = Vec::new();
        let mut at = 0;
        for r in lines.ranges() {
            parts.push((r.start, lines.bytes()[at..at + r.len()].to_vec()));
            at += r.len();
        }
        if !parts.is_empty() {
            self.log.lock().unwrap().push((page.id().0, parts));
        }
        Ok(WriteBack { version: Some(Version::Lines(lines)), changed: Some(changed) })
    }

    fn persist(&self) -> Result<(), HookError> {
        Ok(())
    }
}

/// Pages' bytes from `LINE` on, by page id (0 unused).
type Pages = Vec<Vec<u8>>;

struct Registry {
    committed: u64,
    readers: BTreeMap<u64, usize>,
    history: Vec<Pages>,
}

struct Shared {
    reg: Mutex<Registry>,
    stop: AtomicBool,
}

impl Shared {
    fn begin(&self) -> (u64, Pages) {
        let mut g = self.reg.lock().unwrap();
        let s = g.committed;
        *g.readers.entry(s).or_default() += 1;
        (s, g.history[s as usize].clone())
    }

    fn collect(g: &Registry, pool: &BufferPool) {
        let oldest = g.readers.first_key_value().map_or(g.committed, |(&s, _)| s);
        pool.versions().collect(oldest, g.committed);
    }

    fn end(&self, s: u64, pool: &BufferPool) {
        let mut g = self.reg.lock().unwrap();
        let n = g.readers.get_mut(&s).unwrap();
        *n -= 1;
        if *n == 0 {
            g.readers.remove(&s);
        }
        Self::collect(&g, pool);
    }
}

#[derive(Debug)]
enum Got {
    Bytes(Vec<u8>),
    TooOld,
    Other(String),
}

fn read_at(pool: &BufferPool, s: u64, id: u64) -> Got {
    match pool.read(PageId(id), View::Snapshot(s)) {
        Ok(g) => Got::Bytes(g[LINE..].to_vec()),
        Err(BufferError::SnapshotTooOld { .. }) => Got::TooOld,
        Err(e) => Got::Other(e.to_string()),
    }
}

fn check(pool: &BufferPool, s: u64, id: u64, want: &[u8], what: &str) {
    match read_at(pool, s, id) {
        Got::Bytes(b) => {
            if b != want {
                let first = b.iter().zip(want).position(|(a, b)| a != b).unwrap();
                panic!(
                    "{what}: snapshot {s}, page {id}: wrong bytes, first difference at byte {} \
                     (line {}): got {:?}, want {:?}",
                    first + LINE,
                    (first + LINE) / LINE,
                    &b[first..(first + 8).min(b.len())],
                    &want[first..(first + 8).min(want.len())]
                );
            }
        }
        Got::TooOld => {
            let h = pool.versions().stats().horizon;
            assert!(s < h, "{what}: snapshot {s}, page {id}: too old, horizon {h}");
        }
        Got::Other(e) => panic!("{what}: snapshot {s}, page {id}: {e}"),
    }
}

/// Changes 1 to 4 random lines (past line 0) of `page`, the same in `model`.
fn change(page: &mut [u8], model: &mut [u8], rng: &mut StdRng) {
    let lines = page.len() / LINE;
    for _ in 0..rng.random_range(1..=4) {
        let l = rng.random_range(1..lines);
        let a = rng.random_range(0..LINE);
        let b = rng.random_range(a + 1..=LINE);
        for off in l * LINE + a..l * LINE + b {
            let v: u8 = rng.random();
            page[off] = v;
            model[off - LINE] = v;
        }
    }
}

fn writer(
    pool: &BufferPool,
    hook: &LinesHook,
    sh: &Shared,
    seed: u64,
    txns: u64,
    limit: Option<u64>,
    checker: &(mpsc::Sender<Vec<Check>>, mpsc::Receiver<()>),
) {
    let layer = pool.layer_kind();
    let mut rng = StdRng::seed_from_u64(seed);
    let ps = pool.page_size();
    let mut cur: Pages = sh.reg.lock().unwrap().history[0].clone();
    let mut live: Vec<(u64, Pages)> = Vec::new();
    if let Some(l) = limit {
        pool.versions().set_limit(l);
    }
    let check_live = |live: &Vec<(u64, Pages)>, rng: &mut StdRng| {
        let mut batch = Vec::new();
        for (s, pages) in live {
            for _ in 0..3 {
                let id = rng.random_range(1..=PAGES);
                batch.push((*s, id, pages[id as usize].clone()));
            }
        }
        if !batch.is_empty() {
            checker.0.send(batch).unwrap();
            checker.1.recv().unwrap();
        }
    };
    for t in 0..txns {
        let c = sh.reg.lock().unwrap().committed;
        let pending = c + 1;
        pool.begin_txn(pending);
        for step in 0..rng.random_range(1..25) {
            let id = rng.random_range(1..=PAGES);
            let what = format!("{layer}, seed {seed}, txn {t} (pending {pending}), step {step}");
            match rng.random_range(0..100) {
                0..40 => {
                    let mut g = pool.write(PageId(id)).unwrap();
                    assert_eq!(&g[LINE..], &cur[id as usize][..], "{what}: write {id}");
                    change(&mut g, &mut cur[id as usize], &mut rng);
                }
                40..45 => {
                    let mut g = pool.new_page(PageId(id)).unwrap();
                    cur[id as usize].fill(0);
                    change(&mut g, &mut cur[id as usize], &mut rng);
                }
                45..60 => {
                    let g = pool.read(PageId(id), View::Writer).unwrap();
                    assert_eq!(&g[LINE..], &cur[id as usize][..], "{what}: read {id}");
                }
                60..72 => {
                    let _ = pool.evict_page(PageId(id)).unwrap();
                }
                72..84 => pool.flush_page(PageId(id)).unwrap(),
                84..90 => {
                    let (s, pages) = sh.begin();
                    live.push((s, pages));
                }
                90..95 if !live.is_empty() => {
                    let i = rng.random_range(0..live.len());
                    let (s, _) = live.swap_remove(i);
                    sh.end(s, pool);
                }
                _ => {}
            }
            check_live(&live, &mut rng);
        }
        if rng.random_range(0..4) == 0 {
            pool.discard_writer_frames().unwrap();
            let log = std::mem::take(&mut *hook.log.lock().unwrap());
            for (id, parts) in log.iter().rev() {
                let parts: Vec<(usize, &[u8])> =
                    parts.iter().map(|(o, b)| (*o, b.as_slice())).collect();
                pool.restore_parts(PageId(*id), &parts).unwrap();
                check_live(&live, &mut rng);
            }
            pool.sync().unwrap();
            pool.abort_txn().unwrap();
            cur = sh.reg.lock().unwrap().history[c as usize].clone();
        } else {
            pool.flush_all().unwrap();
            pool.sync().unwrap();
            hook.log.lock().unwrap().clear();
            pool.end_txn();
            let mut g = sh.reg.lock().unwrap();
            g.history.push(cur.clone());
            g.committed = pending;
            Shared::collect(&g, pool);
        }
        check_live(&live, &mut rng);
        let want = sh.reg.lock().unwrap();
        let want = want.history[want.committed as usize].clone();
        for id in 1..=PAGES {
            let mut got = Vec::new();
            pool.with_file_page(PageId(id), &mut |b| got = b[LINE..].to_vec()).unwrap();
            assert_eq!(got, want[id as usize], "{layer}, seed {seed}: page {id} in the file");
        }
        let _ = ps;
    }
    for (s, _) in live {
        sh.end(s, pool);
    }
}

fn free_reader(pool: &BufferPool, sh: &Shared, seed: u64) -> u64 {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut reads = 0;
    while !sh.stop.load(Ordering::Acquire) {
        let (s, want) = sh.begin();
        for _ in 0..rng.random_range(1..40) {
            let id = rng.random_range(1..=PAGES);
            check(pool, s, id, &want[id as usize], "free reader");
            reads += 1;
        }
        sh.end(s, pool);
    }
    reads
}

fn run(layer: Layer, frames: usize, seed: u64, txns: u64, limit: Option<u64>) {
    let dir = scratch_dir();
    let hook = Arc::new(LinesHook::default());
    let pool = open_pool(dir.path(), layer, true, frames, hook.clone());
    pool.grow(PAGES + 1).unwrap();
    let ps = pool.page_size();
    let sh = Shared {
        reg: Mutex::new(Registry {
            committed: 0,
            readers: BTreeMap::new(),
            history: vec![vec![vec![0u8; ps - LINE]; PAGES as usize + 1]],
        }),
        stop: AtomicBool::new(false),
    };
    let (req_tx, req_rx) = mpsc::channel::<Vec<Check>>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let pool = &pool;
        let checker = s.spawn(move || {
            for batch in req_rx {
                for (snap, id, want) in batch {
                    check(pool, snap, id, &want, &format!("{layer}, seed {seed}: checker"));
                }
                done_tx.send(()).unwrap();
            }
        });
        let free = s.spawn(|| free_reader(pool, &sh, seed ^ 0x5151));
        let w = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            writer(pool, &hook, &sh, seed, txns, limit, &(req_tx, done_rx))
        }));
        sh.stop.store(true, Ordering::Release);
        let c = checker.join();
        let f = free.join();
        if let Err(e) = w {
            std::panic::resume_unwind(e);
        }
        if let Err(e) = c {
            std::panic::resume_unwind(e);
        }
        let f = match f {
            Ok(n) => n,
            Err(e) => std::panic::resume_unwind(e),
        };
        let c = pool.counters();
        eprintln!(
            "{layer} frames {frames} seed {seed}: free reads {f}, version reads {}, write-backs {}, \
             evictions {}",
            c.version_reads, c.write_backs, c.evictions
        );
    });
}

#[test]
fn versions_as_lines_match_a_model_on_every_layer() {
    let _done = watchdog("versions_kept_as_lines_match_a_model", 600);
    for layer in Layer::compiled() {
        for frames in [4, 6] {
            for seed in 0..12 {
                run(layer, frames, seed * 7919 + frames as u64, 120, None);
            }
        }
    }
}

#[test]
fn versions_as_lines_match_a_model_under_a_byte_limit() {
    let _done = watchdog("versions_kept_as_lines_match_a_model_under_a_bound", 600);
    for layer in Layer::compiled() {
        for seed in 0..12 {
            run(layer, 5, seed * 104_729 + 3, 120, Some(20_000));
        }
    }
}
