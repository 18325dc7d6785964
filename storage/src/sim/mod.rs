//! The power-loss and fault simulator (feature `sim`), which every crate's crash tests use.
//!
//! A [`Sim`] covers one directory. For each file opened under it through [`crate::RawFile`] (the
//! data file, the log) it keeps a **durable image** next to the live file, and copies a range
//! into the durable image when that range is persisted (`msync` ranges rounded out to OS pages,
//! cache-line flushes to 64 B lines, `fdatasync`/`fsync` the whole file and its length). Nothing
//! intercepts stores: a store into a mapping or a `pwrite` lands in the live file and is found
//! later by diffing live against durable.
//!
//! [`Sim::crash`] builds the file that survives a power loss: every unit (512 B sector, 64 B line
//! or 8 B word) where live and durable differ is, by seed, kept old, taken new, or torn (each
//! 8-byte word of it old or new; an aligned 8-byte word is failure-atomic and never tears). So a
//! store is treated as possibly durable at any moment, whole or in part, as DESIGN.md demands. A
//! growth whose `fsync` did not happen may or may not survive.
//!
//! [`Sim::fail`] fails the N-th call of a kind (`pread`, `pwrite`, growth, persist) once or for
//! good, with any errno: `ENOSPC` on growth is a full disk. Everything is deterministic from the
//! seed; tests print it when they fail.
//!
//! [`Sim::pause`] holds the next thread that reaches a [`PausePoint`] for a page of a file under
//! the simulator until the test lets it go: a race between two threads is run in the order that
//! loses, every time, with no sleep.

mod crash;

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak, mpsc};

use parking_lot::Mutex;

use crate::page::PageId;
use crate::sim_tag::SimOp;

pub use crate::sim_tag::PausePoint;
pub use crash::{CrashReport, Tear};

/// Whether an injected fault fires once or for every matching call from then on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultMode {
    /// Fail the one call, then behave.
    Once,
    /// Fail that call and every matching call after it.
    Forever,
}

/// A planned failure: the call after `after` matching calls fails with `errno`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// Which kind of call; `None` counts every kind.
    pub op: Option<SimOp>,
    /// How many matching calls succeed first.
    pub after: u64,
    /// Once or for good.
    pub mode: FaultMode,
    /// The error returned (`libc::EIO`, `libc::ENOSPC`, ...).
    pub errno: i32,
}

impl Fault {
    /// The `(after + 1)`-th call of kind `op` (any kind if `None`) fails once with `EIO`.
    pub fn once(op: Option<SimOp>, after: u64) -> Self {
        Self { op, after, mode: FaultMode::Once, errno: libc::EIO }
    }

    /// A full disk: the `(after + 1)`-th growth and every one after fails with `ENOSPC`.
    pub fn disk_full(after: u64) -> Self {
        Self { op: Some(SimOp::Grow), after, mode: FaultMode::Forever, errno: libc::ENOSPC }
    }
}

#[derive(Debug)]
struct ArmedFault {
    fault: Fault,
    seen: u64,
    fired: bool,
}

/// Calls counted since the simulator was attached (or since the last crash).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCounts {
    /// `pread` calls.
    pub reads: u64,
    /// `pwrite` calls.
    pub writes: u64,
    /// Growth calls.
    pub grows: u64,
    /// Persist calls (flush and fence, `msync`, `fdatasync`, `fsync`).
    pub persists: u64,
    /// Calls failed by injected faults.
    pub injected_failures: u64,
}

/// A pause waiting for a thread to reach its point: the thread tells `reached`, then waits for
/// `resume` (a message, or the [`Pause`]'s end).
#[derive(Debug)]
struct ArmedPause {
    at: PausePoint,
    page: u64,
    reached: mpsc::Sender<()>,
    resume: mpsc::Receiver<()>,
}

#[derive(Debug)]
struct WorldState {
    files: HashMap<PathBuf, Arc<Tracked>>,
    counts: OpCounts,
    faults: Vec<ArmedFault>,
    pauses: Vec<ArmedPause>,
    crashes: u64,
}

#[derive(Debug)]
struct World {
    dir: PathBuf,
    seed: u64,
    state: Mutex<WorldState>,
}

/// One file under a simulator: the durable image and a descriptor to read the live bytes.
#[derive(Debug)]
struct Tracked {
    path: PathBuf,
    world: Weak<World>,
    inner: Mutex<TrackedInner>,
}

#[derive(Debug)]
struct TrackedInner {
    /// A descriptor of our own (its own open file description, so it holds no lock).
    live: File,
    durable: Vec<u8>,
}

static WORLDS: Mutex<Vec<Weak<World>>> = Mutex::new(Vec::new());

/// A simulated machine covering one directory. Dropping it stops the tracking.
#[derive(Debug)]
pub struct Sim {
    world: Arc<World>,
}

impl Sim {
    /// Starts simulating `dir` (which must exist). Files already there count as durable as they
    /// are; files opened or created under `dir` from now on are followed.
    pub fn attach(dir: &Path, seed: u64) -> Sim {
        let dir = dir.canonicalize().expect("Sim::attach: the directory must exist");
        let world = Arc::new(World {
            dir,
            seed,
            state: Mutex::new(WorldState {
                files: HashMap::new(),
                counts: OpCounts::default(),
                faults: Vec::new(),
                pauses: Vec::new(),
                crashes: 0,
            }),
        });
        let mut worlds = WORLDS.lock();
        worlds.retain(|w| w.strong_count() > 0);
        worlds.push(Arc::downgrade(&world));
        Sim { world }
    }

    /// The seed everything random derives from.
    pub fn seed(&self) -> u64 {
        self.world.seed
    }

    /// Arms a fault. Several may be armed at once; each counts matching calls from now on.
    pub fn fail(&self, fault: Fault) {
        self.world.state.lock().faults.push(ArmedFault { fault, seen: 0, fired: false });
    }

    /// Disarms every fault.
    pub fn clear_faults(&self) {
        self.world.state.lock().faults.clear();
    }

    /// Arms a pause: the next thread to reach `at` for page `page` of a file under the simulator
    /// is held there until the returned [`Pause`] lets it go (or is dropped). One thread, once;
    /// several pauses may be armed at once.
    pub fn pause(&self, at: PausePoint, page: PageId) -> Pause {
        let (reached_tx, reached) = mpsc::channel();
        let (resume, resume_rx) = mpsc::channel();
        self.world.state.lock().pauses.push(ArmedPause {
            at,
            page: page.0,
            reached: reached_tx,
            resume: resume_rx,
        });
        Pause { at, page, reached, resume }
    }

    /// Calls counted so far.
    pub fn counts(&self) -> OpCounts {
        self.world.state.lock().counts
    }

    /// Simulates a power loss: every followed file under the directory is rewritten as the file
    /// that survives (see the module docs). Every handle on those files must have been dropped
    /// (a file still locked by a handle is a test bug and panics). Faults are disarmed, counts
    /// reset, and the survivors become the new durable images. Crash `k` of a simulator uses the
    /// seed `(seed, k)`.
    pub fn crash(&self, tear: Tear) -> CrashReport {
        let mut st = self.world.state.lock();
        let crash_no = st.crashes;
        st.crashes += 1;
        st.faults.clear();
        st.counts = OpCounts::default();
        let mut report = CrashReport::default();
        // A followed file the program has since removed is gone; it has nothing to survive.
        st.files.retain(|path, _| path.exists());
        let mut paths: Vec<_> = st.files.keys().cloned().collect();
        paths.sort();
        for (i, path) in paths.iter().enumerate() {
            let tracked = &st.files[path];
            let seed = crash::mix(self.world.seed, crash_no, i as u64);
            let r = tracked.crash(seed, tear).unwrap_or_else(|e| {
                panic!("sim crash of {} failed: {e} (seed {})", path.display(), self.world.seed)
            });
            report.add(&r);
        }
        report
    }

    /// The durable image of `path` as the simulator holds it, if the file is followed.
    pub fn durable_image(&self, path: &Path) -> Option<Vec<u8>> {
        let path = path.canonicalize().ok()?;
        let st = self.world.state.lock();
        st.files.get(&path).map(|t| t.inner.lock().durable.clone())
    }
}

/// A thread held, or about to be held, at a [`PausePoint`] ([`Sim::pause`]).
#[derive(Debug)]
pub struct Pause {
    at: PausePoint,
    page: PageId,
    reached: mpsc::Receiver<()>,
    resume: mpsc::Sender<()>,
}

impl Pause {
    /// Blocks until a thread is held at the pause's point.
    ///
    /// # Panics
    /// If the simulator was dropped first (no thread can reach the pause then).
    pub fn wait_reached(&self) {
        self.reached.recv().unwrap_or_else(|_| {
            panic!(
                "the simulator ended before a thread reached {:?} of page {}",
                self.at, self.page
            )
        });
    }

    /// Lets the held thread go on (dropping the pause does too).
    pub fn resume(self) {
        let _ = self.resume.send(());
    }
}

impl World {
    /// Holds the calling thread at `at` for `page` if a pause is armed there: tells the test,
    /// then waits for it to resume the pause, outside the world's lock.
    fn pause(&self, at: PausePoint, page: u64) {
        let armed = {
            let mut st = self.state.lock();
            let i = st.pauses.iter().position(|p| p.at == at && p.page == page);
            i.map(|i| st.pauses.swap_remove(i))
        };
        if let Some(p) = armed {
            let _ = p.reached.send(());
            // A message or a dropped `Pause`: either way, go on.
            let _ = p.resume.recv();
        }
    }

    fn check(&self, op: SimOp) -> io::Result<()> {
        let mut st = self.state.lock();
        match op {
            SimOp::Read => st.counts.reads += 1,
            SimOp::Write => st.counts.writes += 1,
            SimOp::Grow => st.counts.grows += 1,
            SimOp::Persist => st.counts.persists += 1,
        }
        let mut failure = None;
        for f in st.faults.iter_mut() {
            if f.fault.op.is_some_and(|o| o != op) {
                continue;
            }
            let n = f.seen;
            f.seen += 1;
            let fires = match f.fault.mode {
                FaultMode::Once => n == f.fault.after,
                FaultMode::Forever => n >= f.fault.after,
            };
            if fires && failure.is_none() {
                f.fired = true;
                failure = Some(f.fault.errno);
            }
        }
        if let Some(errno) = failure {
            st.counts.injected_failures += 1;
            return Err(io::Error::from_raw_os_error(errno));
        }
        Ok(())
    }
}

impl Tracked {
    /// Copies the live bytes of `[offset, offset + len)` into the durable image.
    fn persisted(&self, offset: u64, len: u64) {
        let mut inner = self.inner.lock();
        let live_len = inner.live.metadata().map(|m| m.len()).unwrap_or(0);
        let end = (offset + len).min(live_len);
        if end <= offset {
            return;
        }
        let mut buf = vec![0u8; (end - offset) as usize];
        if inner.live.read_exact_at(&mut buf, offset).is_err() {
            return;
        }
        if (inner.durable.len() as u64) < end {
            inner.durable.resize(end as usize, 0);
        }
        inner.durable[offset as usize..end as usize].copy_from_slice(&buf);
    }

    /// The whole live file, length included, becomes durable.
    fn synced(&self) {
        let mut inner = self.inner.lock();
        if let Ok(live) = read_all(&inner.live) {
            inner.durable = live;
        }
    }
}

/// Whether two descriptors refer to the same file (device and inode).
fn same_file(a: &File, b: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (a.metadata(), b.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

fn read_all(f: &File) -> io::Result<Vec<u8>> {
    let len = f.metadata()?.len();
    let mut buf = vec![0u8; len as usize];
    f.read_exact_at(&mut buf, 0)?;
    Ok(buf)
}

/// The hook [`crate::RawFile`] holds: a followed file, or nothing.
#[derive(Debug, Clone, Default)]
pub(crate) struct SimTag(Option<Arc<Tracked>>);

impl SimTag {
    /// Follows `path` if a simulator covers it. A file seen for the first time counts as durable
    /// as it is now.
    pub(crate) fn track(path: &Path, _file: &File) -> Self {
        let Ok(canonical) = path.canonicalize() else { return SimTag(None) };
        let world = {
            let worlds = WORLDS.lock();
            worlds.iter().filter_map(Weak::upgrade).find(|w| canonical.starts_with(&w.dir))
        };
        let Some(world) = world else { return SimTag(None) };
        let Ok(live) = File::open(&canonical) else { return SimTag(None) };
        let mut st = world.state.lock();
        if let Some(t) = st.files.get(&canonical) {
            // Reopened: keep the durable image, read through a fresh descriptor. A file removed
            // and created again under the same name starts from its own bytes instead.
            let mut inner = t.inner.lock();
            if !same_file(&inner.live, &live) {
                inner.durable = read_all(&live).unwrap_or_default();
            }
            inner.live = live;
            drop(inner);
            return SimTag(Some(t.clone()));
        }
        let durable = read_all(&live).unwrap_or_default();
        let t = Arc::new(Tracked {
            path: canonical.clone(),
            world: Arc::downgrade(&world),
            inner: Mutex::new(TrackedInner { live, durable }),
        });
        st.files.insert(canonical, t.clone());
        SimTag(Some(t))
    }

    pub(crate) fn check(&self, op: SimOp) -> io::Result<()> {
        match self.0.as_ref().and_then(|t| t.world.upgrade()) {
            Some(w) => w.check(op),
            None => Ok(()),
        }
    }

    pub(crate) fn persisted(&self, offset: u64, len: u64) {
        if let Some(t) = &self.0 {
            t.persisted(offset, len);
        }
    }

    pub(crate) fn synced(&self) {
        if let Some(t) = &self.0 {
            t.synced();
        }
    }

    // Only the layers' page files pause; a build with none (the log's) never calls this.
    #[cfg_attr(not(any(feature = "pread", feature = "se1", feature = "se2")), allow(dead_code))]
    pub(crate) fn pause(&self, at: PausePoint, page: u64) {
        if let Some(w) = self.0.as_ref().and_then(|t| t.world.upgrade()) {
            w.pause(at, page);
        }
    }
}
