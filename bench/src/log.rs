//! `nvpage-bench log`: the log side by side, in one run. Systems: nvpage's log (raw and
//! record framing; on the disk also created zero-filled, `Prefill::Zeros`), `pwrite` + `fdatasync` per append on a plain file, and — with the Cargo
//! feature `pmdk` — PMDK's libpmemlog through `nvpage_wal::pmdk`. Media: tmpfs with the
//! cache-line path forced (emulated NVM: survives a process crash only), tmpfs with `msync`, and a
//! disk directory. Workloads: the seed's (fresh pools of 64 MiB filled with 4 MiB appends, MB/s of
//! data really appended) and small durable appends (64 B, 256 B, 4 KiB; 1 and 2 threads;
//! appends/s, p50 and p99 latency). Every row names its durability. On the forced medium the seed
//! workload also gets a floor row: the system calls that carry our log's cost there, with no log
//! around them, and each small-append row a streaming copy-and-fence floor.
//!
//! Each small-append row is `--rounds` rounds and reports the median round. Beside it, per round:
//! the slowest and fastest rate, the time its threads waited runnable for a CPU (`queued ms`:
//! a round whose threads the kernel put on one CPU runs at one thread's rate), and the log's
//! order waits; the JSON adds each round's involuntary context switches and, for several
//! threads, a core-to-core round trip measured just before it. `--pin` puts each appending
//! thread on a CPU of its own.
//!
//! libpmem decides between flushes and `msync` once per process from `PMEM_IS_PMEM_FORCE`, so the
//! libpmemlog rows for the forced medium run in a child process of this binary with that variable
//! set (`--pmdk-child`), and report back as JSON lines.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use comfy_table::Table;
use nvpage::PersistRequest;
use nvpage_storage::{Advice, FileOptions, RawFile};
use nvpage_wal::layout::{DATA_OFFSET, record_size};
use nvpage_wal::{CreateOptions, Framing, Log, Prefill, Uuid, WalError};
use serde::{Deserialize, Serialize};

use crate::dirs::{MediaDirs, check_dir, check_medium};
use crate::machine::Machine;

/// Arguments of `nvpage-bench log`.
#[derive(Debug, Clone, clap::Args)]
pub struct LogArgs {
    /// Where the logs live (`--disk-dir` and `--tmpfs-dir`, this benchmark's former spelling,
    /// are hidden aliases).
    #[command(flatten)]
    pub dirs: MediaDirs,
    /// Small appends per thread (at most; each row also stops after `--row-seconds`).
    #[arg(long, default_value_t = 200_000)]
    pub appends: u64,
    /// Time limit of one small-append row (all its rounds).
    #[arg(long, default_value_t = 2.0)]
    pub row_seconds: f64,
    /// Rounds of each small-append row; the row reports the median round's rate, with every
    /// round's latencies. On tmpfs the log is rewound between rounds (libpmemlog's pool too, and
    /// the plain file's tail reset): the steady state of a log in use, which the engine rewinds
    /// at every commit. On the disk each round gets a fresh file, made before its clock as the
    /// first was, so that a round appends into blocks never written, which is what the
    /// allocated and zero-filled rows compare. A round of 4 KiB records from two threads lasts
    /// about 10 ms on tmpfs, one scheduling tick: one round alone swung by 2× from run to run.
    #[arg(long, default_value_t = 5)]
    pub rounds: u32,
    /// Pools of the seed workload (the seed used 20).
    #[arg(long, default_value_t = 20)]
    pub pools: u32,
    /// Size of one pool in MiB (the seed used 64).
    #[arg(long, default_value_t = 64)]
    pub pool_mib: u64,
    /// Write the rows as JSON here too.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Only these media (`tmpfs-cacheline`, `tmpfs-msync`, `disk`); all three when not given.
    #[arg(long, value_delimiter = ',')]
    pub media: Vec<String>,
    /// Skip the seed workload (fresh 64 MiB pools filled with 4 MiB appends).
    #[arg(long)]
    pub no_seed: bool,
    /// Only small appends of these sizes in bytes (`--sizes 4096`); 64, 256 and 4096 when not
    /// given.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..))]
    pub sizes: Vec<u64>,
    /// Only small-append rows with these numbers of threads (`--threads 1`); 1 and 2 when not
    /// given.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: Vec<u32>,
    /// Pin each appending thread of a small-append row to a CPU of its own (thread t to the
    /// t-th CPU this process may run on, round robin if there are fewer), libpmemlog's too.
    /// Unpinned, the kernel sometimes starts a round with two appending threads on one CPU and
    /// moves one away only milliseconds later, and such a round runs at one thread's rate (its
    /// `queued ms` shows it): on this machine's two vCPUs that is a few 10 ms rounds in a run.
    #[arg(long)]
    pub pin: bool,
    /// Internal: run only libpmemlog's rows on this medium and print them as JSON lines.
    #[arg(long, hide = true)]
    pub pmdk_child: Option<String>,
}

/// One line of the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LogRow {
    /// `seed` (4 MiB appends into fresh pools) or `small`.
    pub workload: String,
    /// `nvpage-wal raw`, `nvpage-wal records` (created with `Prefill::Allocate`), the same with
    /// ` zero-filled` (`Prefill::Zeros`; disk only), `write+fdatasync`, `libpmemlog`, and
    /// `floor: fallocate+pwrite` (seed workload on `tmpfs-cacheline`: a floor, not a log).
    pub system: String,
    /// `tmpfs-cacheline`, `tmpfs-msync`, `disk`.
    pub medium: String,
    /// What a completed append survives, as the system was configured.
    pub durability: String,
    /// Appending threads.
    pub threads: u32,
    /// Bytes per append.
    pub append_bytes: u64,
    /// Appends completed (in the median round of a small-append row).
    pub appends: u64,
    /// Rounds the row ran (small appends; 1 for the seed workload).
    pub rounds: u32,
    /// Appends per second (all threads).
    pub appends_per_s: f64,
    /// MB/s of data appended (10^6 bytes).
    pub mb_per_s: f64,
    /// Median latency of one append, µs (small appends only).
    pub p50_us: Option<f64>,
    /// 99th percentile latency of one append, µs (small appends only).
    pub p99_us: Option<f64>,
    /// Every round's appends/s, in the order the rounds ran (small appends only).
    #[serde(default)]
    pub round_rates: Vec<f64>,
    /// Per round, the involuntary context switches of the appending threads: a thread that lost
    /// its CPU to another task (small appends only).
    #[serde(default)]
    pub round_preempted: Vec<u64>,
    /// Per round, µs the appending threads waited runnable for a CPU, summed over them
    /// (`/proc/thread-self/schedstat`; small appends only).
    #[serde(default)]
    pub round_queued_us: Vec<f64>,
    /// Per round, the appends that waited for an earlier one to complete past spinning
    /// (`Log::order_waits`; nvpage-wal rows only).
    #[serde(default)]
    pub round_order_waits: Vec<u64>,
    /// Per round of several threads, the round trip of a cache line between the first two
    /// CPUs, ns, measured just before the round's clock starts ([`core_to_core_ns`]).
    #[serde(default)]
    pub round_core_to_core_ns: Vec<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Medium {
    TmpfsCacheLine,
    TmpfsMsync,
    Disk,
}

impl Medium {
    const ALL: [Medium; 3] = [Medium::TmpfsCacheLine, Medium::TmpfsMsync, Medium::Disk];

    fn name(self) -> &'static str {
        match self {
            Medium::TmpfsCacheLine => "tmpfs-cacheline",
            Medium::TmpfsMsync => "tmpfs-msync",
            Medium::Disk => "disk",
        }
    }

    fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == s)
    }

    fn dir(self, args: &LogArgs) -> &Path {
        if self == Medium::Disk { &args.dirs.dir_disk } else { &args.dirs.dir_tmpfs }
    }

    fn persistence(self) -> PersistRequest {
        if self == Medium::TmpfsCacheLine {
            PersistRequest::CacheLine
        } else {
            PersistRequest::Auto
        }
    }
}

const SMALL_SIZES: [u64; 3] = [64, 256, 4096];
const THREADS: [u32; 2] = [1, 2];

impl LogArgs {
    /// The small appends' sizes to run: `--sizes`, or [`SMALL_SIZES`].
    fn small_sizes(&self) -> Vec<u64> {
        if self.sizes.is_empty() { SMALL_SIZES.to_vec() } else { self.sizes.clone() }
    }

    /// The small appends' thread counts to run: `--threads`, or [`THREADS`].
    fn small_threads(&self) -> Vec<u32> {
        if self.threads.is_empty() { THREADS.to_vec() } else { self.threads.clone() }
    }
}
/// One small-append log file on `m`: a round stops appending when it is half full. On the disk
/// a smaller file keeps the pre-written logs' creates (zero-filled ours, filled libpmemlog's;
/// written once per round, before its clock) from spending the virtual disk's write budget that
/// the rows after them are measured with; at thousands of appends a second, rounds there end by
/// time (their share of `--row-seconds`).
fn small_log_bytes(m: Medium) -> u64 {
    if m == Medium::Disk { 32 << 20 } else { 256 << 20 }
}

/// Appends per thread of a small-append row on `m` (at most `--appends`): half the log's bytes,
/// shared among the threads, in records of `size` bytes and their framing.
fn small_appends_per_thread(args: &LogArgs, m: Medium, size: u64, threads: u32) -> u64 {
    args.appends.min(small_log_bytes(m) / 2 / u64::from(threads) / record_size(size))
}

/// Runs the benchmark and prints the table (and JSON, if asked).
pub fn run(args: &LogArgs) -> Result<(), crate::BoxError> {
    if let Some(m) = &args.pmdk_child {
        let m = Medium::from_name(m).ok_or("unknown medium")?;
        for row in pmdk_rows(args, m)? {
            println!("{}", serde_json::to_string(&row)?);
        }
        return Ok(());
    }
    let mut media = Vec::new();
    for name in &args.media {
        media.push(Medium::from_name(name).ok_or_else(|| format!("unknown medium '{name}'"))?);
    }
    if media.is_empty() {
        media = Medium::ALL.to_vec();
    }
    for &m in &media {
        let flag = if m == Medium::Disk { "--dir-disk" } else { "--dir-tmpfs" };
        check_dir(m.dir(args), flag)?;
        check_medium(m.dir(args), m != Medium::Disk, flag)?;
    }
    // Read before the runs: the summary's load average is the one at the start.
    let machine = Machine::detect();
    println!("{}", machine.summary());
    let mut rows = Vec::new();
    for m in media {
        let scratch = tempfile::tempdir_in(m.dir(args))?;
        let dir = scratch.path();
        eprintln!("log bench: {} in {}", m.name(), dir.display());
        if !args.no_seed {
            rows.push(seed_nvpage(args, m, dir)?);
            if m == Medium::TmpfsCacheLine {
                rows.push(seed_floor(args, m, dir)?);
            } else {
                rows.push(seed_write(args, m, dir)?);
            }
        }
        for size in args.small_sizes() {
            for threads in args.small_threads() {
                for framing in [Framing::Raw, Framing::Records] {
                    // On a disk the first sync into each block of an allocated log commits the
                    // journal; a zero-filled one overwrites written blocks.
                    let prefills: &[Prefill] = if m == Medium::Disk {
                        &[Prefill::Allocate, Prefill::Zeros]
                    } else {
                        &[Prefill::Allocate]
                    };
                    for &prefill in prefills {
                        rows.push(small_nvpage(args, m, dir, framing, prefill, size, threads)?);
                    }
                }
                if m == Medium::TmpfsCacheLine {
                    rows.extend(small_floor(args, m, dir, size, threads)?);
                } else {
                    rows.push(small_write(args, m, dir, size, threads)?);
                }
            }
        }
        rows.extend(pmdk_rows_via_child(args, m));
    }
    print_table(&rows);
    if let Some(path) = &args.json {
        let doc = serde_json::json!({ "machine": machine.summary(), "rows": rows });
        std::fs::write(path, serde_json::to_string_pretty(&doc)?)?;
    }
    Ok(())
}

/// The seed workload's append: 4 MiB.
const SEED_APPEND: u64 = 4 << 20;

/// Runs `fill` on each of the seed workload's fresh pools (`--pools` paths `seed-{i}.{ext}` in
/// `dir`), under one clock; `fill` returns the appends it made. The pools are deleted after the
/// clock stops: the seed keeps its files, and giving their pages back to the kernel is no part
/// of appending. Returns the appends in all and the wall time.
fn time_fresh_pools<E>(
    args: &LogArgs,
    dir: &Path,
    ext: &str,
    mut fill: impl FnMut(&Path) -> Result<u64, E>,
) -> Result<(u64, Duration), E> {
    let paths: Vec<PathBuf> =
        (0..args.pools).map(|i| dir.join(format!("seed-{i}.{ext}"))).collect();
    let t0 = Instant::now();
    let mut appends = 0;
    for path in &paths {
        appends += fill(path)?;
    }
    let wall = t0.elapsed();
    for p in &paths {
        let _ = std::fs::remove_file(p);
    }
    Ok((appends, wall))
}

/// A seed-workload row: one thread, 4 MiB appends, MB/s of data appended.
fn seed_row(system: &str, m: Medium, durability: String, appends: u64, wall: Duration) -> LogRow {
    row("seed", system, m, durability, 1, SEED_APPEND, appends, appends * SEED_APPEND, wall, None)
}

fn seed_nvpage(args: &LogArgs, m: Medium, dir: &Path) -> Result<LogRow, WalError> {
    let chunk = vec![b'1'; SEED_APPEND as usize];
    let mut durability = String::new();
    let (appends, wall) = time_fresh_pools(args, dir, "log", |path| {
        let opts = CreateOptions {
            framing: Framing::Raw,
            persistence: m.persistence(),
            ..CreateOptions::new(Uuid::nil())
        };
        let log = Log::create(path, args.pool_mib << 20, &opts)?;
        durability = log.durability().to_string();
        let mut appends = 0;
        loop {
            match log.append(&chunk) {
                Ok(_) => appends += 1,
                Err(WalError::LogFull { .. }) => return Ok(appends),
                Err(e) => return Err(e),
            }
        }
    })?;
    Ok(seed_row("nvpage-wal raw", m, durability, appends, wall))
}

fn seed_write(args: &LogArgs, m: Medium, dir: &Path) -> std::io::Result<LogRow> {
    let chunk = vec![b'1'; SEED_APPEND as usize];
    let per_pool = (args.pool_mib << 20) / SEED_APPEND;
    let (appends, wall) = time_fresh_pools(args, dir, "vfs", |path| -> std::io::Result<u64> {
        let f = OpenOptions::new().create_new(true).write(true).open(path)?;
        for j in 0..per_pool {
            f.write_all_at(&chunk, j * SEED_APPEND)?;
        }
        f.sync_data()?;
        Ok(per_pool)
    })?;
    let durability = format!("fdatasync per pool on {}", medium_fs(m));
    Ok(seed_row("write+fdatasync", m, durability, appends, wall))
}

/// The seed workload's floor on tmpfs: the system calls that carry our log's cost for it
/// (`fallocate` of the whole file at create, then one `pwrite` per 4 MiB append at the log's
/// offsets into pages never mapped), with no log around them — no header, state word, fence,
/// mapping, nor the few syncs a create makes (each a few microseconds on tmpfs). The log can come
/// near this row, not past it; libpmemlog's row against it shows the most any log that reserves
/// its pool, as libpmemlog does, could reach over libpmemlog here.
fn seed_floor(args: &LogArgs, m: Medium, dir: &Path) -> std::io::Result<LogRow> {
    let chunk = vec![b'1'; SEED_APPEND as usize];
    let pool = args.pool_mib << 20;
    // The log's data area starts a page in, so a pool holds one append less than its size.
    let data_offset = DATA_OFFSET as u64;
    let per_pool = (pool - data_offset) / SEED_APPEND;
    let (appends, wall) = time_fresh_pools(args, dir, "floor", |path| -> std::io::Result<u64> {
        let f = OpenOptions::new().create_new(true).read(true).write(true).open(path)?;
        // What `Log::create` reserves its file with.
        nvpage_storage::file::allocate(&f, 0, pool)?;
        for j in 0..per_pool {
            f.write_all_at(&chunk, data_offset + j * SEED_APPEND)?;
        }
        Ok(per_pool)
    })?;
    let durability = "none of its own (tmpfs page cache, nothing fenced): a floor, not a log";
    Ok(seed_row("floor: fallocate+pwrite", m, durability.into(), appends, wall))
}

fn medium_fs(m: Medium) -> &'static str {
    if m == Medium::Disk { "disk: survives power loss" } else { "tmpfs: process crash only" }
}

/// Runs `threads` threads of `op` until each did `appends` or the round's time (its share of
/// `--row-seconds`) is up; returns the appends done, the wall time and the per-append
/// latencies in ns.
fn timed<F>(args: &LogArgs, threads: u32, per_thread: u64, op: F) -> Round
where
    F: Fn(u32, u64) -> bool + Sync,
{
    let limit = Duration::from_secs_f64(args.row_seconds / f64::from(args.rounds.max(1)));
    let core_to_core = (threads > 1).then(core_to_core_ns).flatten();
    let t0 = Instant::now();
    let ran: Vec<(Vec<u64>, Sched)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let op = &op;
                s.spawn(move || {
                    if args.pin {
                        pin_thread(t);
                    }
                    let mut lat = Vec::with_capacity(per_thread.min(1 << 20) as usize);
                    let before = Sched::now();
                    for i in 0..per_thread {
                        let a = Instant::now();
                        if !op(t, i) {
                            break;
                        }
                        let b = Instant::now();
                        lat.push((b - a).as_nanos() as u64);
                        if i % 256 == 0 && b - t0 > limit {
                            break;
                        }
                    }
                    (lat, Sched::now().since(before))
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    let wall = t0.elapsed();
    let sched = ran.iter().fold(Sched::default(), |a, (_, b)| a.plus(*b));
    let mut lat: Vec<u64> = ran.into_iter().flat_map(|(l, _)| l).collect();
    lat.sort_unstable();
    Round { appends: lat.len() as u64, wall, lat, sched, order_waits: None, core_to_core }
}

/// The round trip of a cache line between the first two CPUs this process may run on, ns: two
/// threads pinned one to each pass a counter back and forth 20,000 times (about 3 ms). What the
/// log's shared cursors cost its appenders depends on it, and it is the hypervisor's to set: the
/// floor rows share nothing and do not feel it. `None` with fewer than two CPUs, where the
/// threads cannot be pinned, or if the passes take more than a second.
fn core_to_core_ns() -> Option<f64> {
    const TRIPS: u64 = 20_000;
    let cpus = allowed_cpus().ok()?;
    let &[a, b, ..] = cpus.as_slice() else { return None };
    let pin = |cpu: usize| pin_to(cpu).is_ok();
    // Both ends on threads of their own: a thread starts with its creator's CPU set, so the
    // caller's must stay as it is. They play only once both are pinned: two threads on one CPU
    // passing a ball by spinning would wait a scheduler tick per pass.
    let (ball, pinned) = (AtomicU64::new(0), std::sync::Barrier::new(2));
    let (both, given_up) = (AtomicU64::new(0), std::sync::atomic::AtomicBool::new(false));
    // Waits until the ball reads `want`; false if the other side gave up, or after a second.
    let wait_for = |want: u64, t0: Instant| -> bool {
        let mut spins = 0u32;
        while ball.load(Ordering::Acquire) != want {
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(4096)
                && (given_up.load(Ordering::Relaxed) || t0.elapsed() > Duration::from_secs(1))
            {
                given_up.store(true, Ordering::Relaxed);
                return false;
            }
            std::hint::spin_loop();
        }
        true
    };
    let play = |cpu: usize, first: bool| {
        both.fetch_add(u64::from(pin(cpu)), Ordering::AcqRel);
        pinned.wait();
        if both.load(Ordering::Acquire) != 2 {
            return None;
        }
        let t0 = Instant::now();
        for i in 0..TRIPS {
            let (mine, theirs) =
                if first { (2 * i + 1, 2 * i + 2) } else { (2 * i + 2, 2 * i + 1) };
            if !first && !wait_for(theirs, t0) {
                return None;
            }
            ball.store(mine, Ordering::Release);
            if first && !wait_for(theirs, t0) {
                return None;
            }
        }
        Some(t0.elapsed())
    };
    let took = std::thread::scope(|s| {
        let other = s.spawn(move || play(b, false));
        let first = s.spawn(move || play(a, true));
        let took = first.join().ok().flatten();
        other.join().ok().flatten().and(took)
    });
    took.map(|t| t.as_nanos() as f64 / TRIPS as f64)
}

/// Pins the calling thread to the `t`-th CPU this process may run on (round robin), as
/// `--pin` asks; a CPU set that cannot be read or set leaves the thread where it is, with a note.
fn pin_thread(t: u32) {
    let pinned = allowed_cpus().and_then(|cpus| pin_to(cpus[t as usize % cpus.len().max(1)]));
    if let Err(e) = pinned {
        eprintln!("--pin: thread {t} not pinned: {e}");
    }
}

/// The CPUs this process may run on, in order.
fn allowed_cpus() -> nix::Result<Vec<usize>> {
    use nix::sched::{CpuSet, sched_getaffinity};
    let allowed = sched_getaffinity(nix::unistd::Pid::from_raw(0))?;
    Ok((0..CpuSet::count()).filter(|&c| allowed.is_set(c).unwrap_or(false)).collect())
}

/// Pins the calling thread to `cpu`.
fn pin_to(cpu: usize) -> nix::Result<()> {
    use nix::sched::{CpuSet, sched_setaffinity};
    let mut one = CpuSet::new();
    one.set(cpu)?;
    sched_setaffinity(nix::unistd::Pid::from_raw(0), &one)
}

/// One round of a small-append row.
struct Round {
    appends: u64,
    wall: Duration,
    /// Every append's latency, ns.
    lat: Vec<u64>,
    /// The appending threads' scheduling, summed over them.
    sched: Sched,
    /// The log's [`Log::order_waits`] during the round, where the system has them.
    order_waits: Option<u64>,
    /// [`core_to_core_ns`] just before the round (rounds of several threads).
    core_to_core: Option<f64>,
}

/// What the scheduler did to one thread (or, summed, to a round's threads): involuntary
/// context switches (`getrusage(RUSAGE_THREAD)`) and time spent runnable but waiting for a CPU
/// (`/proc/thread-self/schedstat`'s second field). Zeros where either cannot be read. A vCPU
/// the hypervisor takes away shows in neither: the guest cannot see it per thread.
#[derive(Clone, Copy, Debug, Default)]
struct Sched {
    preempted: u64,
    queued_ns: u64,
}

impl Sched {
    fn now() -> Self {
        use nix::sys::resource::{UsageWho, getrusage};
        let preempted = getrusage(UsageWho::RUSAGE_THREAD)
            .map_or(0, |u| u.involuntary_context_switches().max(0) as u64);
        let queued_ns = std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0);
        Sched { preempted, queued_ns }
    }

    fn since(self, before: Sched) -> Sched {
        Sched {
            preempted: self.preempted.saturating_sub(before.preempted),
            queued_ns: self.queued_ns.saturating_sub(before.queued_ns),
        }
    }

    fn plus(self, o: Sched) -> Sched {
        Sched { preempted: self.preempted + o.preempted, queued_ns: self.queued_ns + o.queued_ns }
    }
}

/// The rounds of one small-append row: each round's appends and wall time, and every
/// append's latency.
#[derive(Default)]
struct Rounds {
    runs: Vec<(u64, Duration)>,
    lat: Vec<u64>,
    sched: Vec<Sched>,
    order_waits: Vec<u64>,
    core_to_core: Vec<f64>,
}

impl Rounds {
    fn add(&mut self, round: Round) {
        self.runs.push((round.appends, round.wall));
        self.lat.extend(round.lat);
        self.sched.push(round.sched);
        self.order_waits.extend(round.order_waits);
        self.core_to_core.extend(round.core_to_core);
    }

    /// The row: the round of median rate, every round's latencies.
    fn into_row(
        mut self,
        system: &str,
        m: Medium,
        durability: String,
        threads: u32,
        size: u64,
    ) -> LogRow {
        let rate = |r: &(u64, Duration)| r.0 as f64 / r.1.as_secs_f64().max(1e-9);
        let round_rates = self.runs.iter().map(rate).collect();
        self.runs.sort_by(|a, b| rate(a).total_cmp(&rate(b)));
        let (n, wall) = self.runs.get(self.runs.len() / 2).copied().unwrap_or_default();
        self.lat.sort_unstable();
        let r =
            row("small", system, m, durability, threads, size, n, n * size, wall, Some(&self.lat));
        LogRow {
            rounds: self.runs.len() as u32,
            round_rates,
            round_preempted: self.sched.iter().map(|s| s.preempted).collect(),
            round_queued_us: self.sched.iter().map(|s| s.queued_ns as f64 / 1e3).collect(),
            round_order_waits: self.order_waits,
            round_core_to_core_ns: self.core_to_core,
            ..r
        }
    }
}

/// Runs a small-append row's `--rounds` rounds on a system `make` creates at `path` (before any
/// clock): `round` times one round on it. On the disk each round gets a fresh one, so that a
/// round appends into blocks never written; elsewhere `reset` starts the same one over (a
/// rewind). The file is removed at the end.
fn run_rounds<T, E>(
    args: &LogArgs,
    m: Medium,
    path: &Path,
    make: impl Fn() -> Result<T, E>,
    reset: impl Fn(&mut T) -> Result<(), E>,
    mut round: impl FnMut(&T) -> Round,
) -> Result<Rounds, E> {
    let mut rounds = Rounds::default();
    let mut system = make()?;
    for i in 0..args.rounds.max(1) {
        if i > 0 && m == Medium::Disk {
            drop(system);
            let _ = std::fs::remove_file(path);
            system = make()?;
        } else if i > 0 {
            reset(&mut system)?;
        }
        rounds.add(round(&system));
    }
    drop(system);
    let _ = std::fs::remove_file(path);
    Ok(rounds)
}

#[allow(clippy::too_many_arguments)]
fn small_nvpage(
    args: &LogArgs,
    m: Medium,
    dir: &Path,
    framing: Framing,
    prefill: Prefill,
    size: u64,
    threads: u32,
) -> Result<LogRow, WalError> {
    let path = dir.join(format!("small-{size}-{threads}-{framing}.log"));
    let opts = CreateOptions {
        framing,
        persistence: m.persistence(),
        prefill,
        ..CreateOptions::new(Uuid::nil())
    };
    let buf = vec![0x5Au8; size as usize];
    let per_thread = small_appends_per_thread(args, m, size, threads);
    let make = || -> Result<Log, WalError> {
        // Created (and, with `Prefill::Zeros`, written once) before the clock.
        let log = Log::create(&path, small_log_bytes(m), &opts)?;
        // Before the clock, as libpmemlog's pool is (`prefault`): the rows compare appending.
        log.prefault();
        Ok(log)
    };
    let mut durability = String::new();
    let rounds = run_rounds(args, m, &path, make, Log::rewind, |log| {
        durability = log.durability().to_string();
        let waits = log.order_waits();
        let round = timed(args, threads, per_thread, |_, _| log.append(&buf).is_ok());
        Round { order_waits: Some(log.order_waits() - waits), ..round }
    })?;
    let system = match prefill {
        Prefill::Allocate => format!("nvpage-wal {framing}"),
        Prefill::Zeros => format!("nvpage-wal {framing} zero-filled"),
    };
    Ok(rounds.into_row(&system, m, durability, threads, size))
}

/// The floor of a small-append row on the cache-line path: each append stores a record's bytes
/// (`record_size(size)`: framing and padding to whole lines included) with streaming stores
/// into its thread's own range of a mapped tmpfs file, populated before the clock, then fences
/// — what an append through the mapping costs at least, with no reservation, check or ordering
/// among threads. In the same run as the log's rows, with the same rounds, appends and clock
/// reads: a swing the floor shares with them is the machine's (memory, scheduler), not the log's.
/// The log benchmark's one `unsafe` call: storing into a mapping through `RawFile`, whose safe
/// calls all go through the kernel or a log's own reservation. Only where the file persists
/// with cache-line flushes (a flush instruction found): elsewhere the store would be a copy and
/// an `msync`, not the floor the row names, and the row is left out.
#[allow(unsafe_code)]
fn small_floor(
    args: &LogArgs,
    m: Medium,
    dir: &Path,
    size: u64,
    threads: u32,
) -> nvpage_storage::Result<Option<LogRow>> {
    let path = dir.join(format!("small-{size}-{threads}.floor"));
    let bytes = small_log_bytes(m);
    let opts = FileOptions {
        mapped: true,
        max_bytes: bytes,
        persistence: m.persistence(),
        ..FileOptions::default()
    };
    let per_thread = small_appends_per_thread(args, m, size, threads);
    let step = record_size(size);
    let span = per_thread * step;
    assert!(
        span * u64::from(threads) <= bytes,
        "half the log, as small_appends_per_thread sizes it"
    );
    let buf = vec![0x5Au8; step as usize];
    let make = || -> nvpage_storage::Result<RawFile> {
        let f = RawFile::create(&path, &opts)?;
        f.grow_to(bytes)?;
        f.advise(Advice::PopulateWrite, 0, bytes);
        Ok(f)
    };
    // The durability is fixed at create (the medium and the flush instruction), not by the
    // file's size: an empty file tells it without the populate a round's file costs.
    let durability = RawFile::create(&path, &opts)?.durability();
    let _ = std::fs::remove_file(&path);
    if durability.flush.is_none() {
        return Ok(None);
    }
    let durability =
        format!("streaming stores + fence, nothing else: a floor, not a log; {durability}");
    let rounds = run_rounds(
        args,
        m,
        &path,
        make,
        |_| Ok(()),
        |f| {
            timed(args, threads, per_thread, |t, i| {
                let at = u64::from(t) * span + i * step;
                // SAFETY: the file is mapped and `bytes` long (`grow_to`); thread `t` alone stores
                // into `[t span, (t + 1) span)` (asserted inside the file above), one append at a
                // time, and nothing reads the file.
                unsafe { f.store_persist(at, &buf) }.is_ok()
            })
        },
    )?;
    Ok(Some(rounds.into_row("floor: streaming copy+fence", m, durability, threads, size)))
}

fn small_write(
    args: &LogArgs,
    m: Medium,
    dir: &Path,
    size: u64,
    threads: u32,
) -> std::io::Result<LogRow> {
    let path = dir.join(format!("small-{size}-{threads}.vfs"));
    let buf = vec![0x5Au8; size as usize];
    let make = || OpenOptions::new().create_new(true).read(true).write(true).open(&path);
    // On the disk every round's appends extend a fresh file; elsewhere each round's tail starts
    // over at 0 in the same file, as a rewound log's does.
    let rounds = run_rounds(
        args,
        m,
        &path,
        make,
        |_| Ok(()),
        |f| {
            let tail = AtomicU64::new(0);
            timed(args, threads, args.appends, |_, _| {
                let at = tail.fetch_add(size, Ordering::Relaxed);
                f.write_all_at(&buf, at).and_then(|()| f.sync_data()).is_ok()
            })
        },
    )?;
    let durability = format!("pwrite+fdatasync per append on {}", medium_fs(m));
    Ok(rounds.into_row("write+fdatasync", m, durability, threads, size))
}

#[allow(clippy::too_many_arguments)]
fn row(
    workload: &str,
    system: &str,
    m: Medium,
    durability: String,
    threads: u32,
    append_bytes: u64,
    appends: u64,
    bytes: u64,
    wall: Duration,
    lat_ns: Option<&[u64]>,
) -> LogRow {
    let secs = wall.as_secs_f64().max(1e-9);
    let pct = |p: f64| {
        lat_ns
            .filter(|l| !l.is_empty())
            .map(|l| l[((l.len() - 1) as f64 * p) as usize] as f64 / 1e3)
    };
    LogRow {
        workload: workload.into(),
        system: system.into(),
        medium: m.name().into(),
        durability,
        threads,
        append_bytes,
        appends,
        rounds: 1,
        appends_per_s: appends as f64 / secs,
        mb_per_s: bytes as f64 / secs / 1e6,
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        round_rates: Vec::new(),
        round_preempted: Vec::new(),
        round_queued_us: Vec::new(),
        round_order_waits: Vec::new(),
        round_core_to_core_ns: Vec::new(),
    }
}

/// A row's slowest and fastest rounds in M appends/s, `-` for a row without rounds.
fn spread(rates: &[f64]) -> String {
    let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let max = rates.iter().copied().fold(0.0, f64::max);
    if rates.is_empty() { "-".into() } else { format!("{:.2}-{:.2}", min / 1e6, max / 1e6) }
}

/// Per-round times the appending threads waited for a CPU, ms, joined with `/`.
fn queued(us: &[f64]) -> String {
    if us.is_empty() {
        return "-".into();
    }
    us.iter().map(|u| format!("{:.1}", u / 1e3)).collect::<Vec<_>>().join("/")
}

/// Per-round counts joined with `/`, `-` for none.
fn counts(v: &[u64]) -> String {
    if v.is_empty() {
        return "-".into();
    }
    v.iter().map(u64::to_string).collect::<Vec<_>>().join("/")
}

fn print_table(rows: &[LogRow]) {
    let mut t = Table::new();
    t.set_header(vec![
        "workload",
        "system",
        "medium",
        "threads",
        "bytes",
        "appends/s",
        "MB/s",
        "p50 µs",
        "p99 µs",
        "rounds M/s",
        "queued ms",
        "order waits",
        "durability",
    ]);
    let us = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"));
    for r in rows {
        t.add_row(vec![
            r.workload.clone(),
            r.system.clone(),
            r.medium.clone(),
            r.threads.to_string(),
            r.append_bytes.to_string(),
            format!("{:.0}", r.appends_per_s),
            format!("{:.0}", r.mb_per_s),
            us(r.p50_us),
            us(r.p99_us),
            spread(&r.round_rates),
            queued(&r.round_queued_us),
            counts(&r.round_order_waits),
            r.durability.clone(),
        ]);
    }
    println!("{t}");
}

/// libpmemlog's rows for `m`, from a child process whose environment fixes libpmem's choice.
#[cfg(feature = "pmdk")]
fn pmdk_rows_via_child(args: &LogArgs, m: Medium) -> Vec<LogRow> {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(_) => return Vec::new(),
    };
    let force = if m == Medium::TmpfsCacheLine { "1" } else { "0" };
    let out = std::process::Command::new(exe)
        .env("PMEM_IS_PMEM_FORCE", force)
        .args(["log", "--pmdk-child", m.name()])
        .arg("--dir-tmpfs")
        .arg(&args.dirs.dir_tmpfs)
        .arg("--dir-disk")
        .arg(&args.dirs.dir_disk)
        .args(["--appends", &args.appends.to_string()])
        .args(["--row-seconds", &args.row_seconds.to_string()])
        .args(["--rounds", &args.rounds.to_string()])
        .args(["--pools", &args.pools.to_string(), "--pool-mib", &args.pool_mib.to_string()])
        .args(args.no_seed.then_some("--no-seed"))
        .args(list_arg("--sizes", &args.sizes))
        .args(list_arg("--threads", &args.threads))
        .args(args.pin.then_some("--pin"))
        .output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
        Ok(o) => {
            eprintln!("libpmemlog rows failed: {}", String::from_utf8_lossy(&o.stderr));
            Vec::new()
        }
        Err(e) => {
            eprintln!("libpmemlog rows failed: {e}");
            Vec::new()
        }
    }
}

/// A list option as the child process takes it (`--sizes 64,4096`), or nothing if `values` is
/// empty.
#[cfg(feature = "pmdk")]
fn list_arg<T: ToString>(flag: &str, values: &[T]) -> Vec<String> {
    if values.is_empty() {
        return Vec::new();
    }
    let list: Vec<String> = values.iter().map(T::to_string).collect();
    vec![flag.to_string(), list.join(",")]
}

#[cfg(not(feature = "pmdk"))]
fn pmdk_rows_via_child(_args: &LogArgs, _m: Medium) -> Vec<LogRow> {
    Vec::new()
}

#[cfg(feature = "pmdk")]
fn pmdk_rows(args: &LogArgs, m: Medium) -> std::io::Result<Vec<LogRow>> {
    use nvpage_wal::pmdk::PmemLog;
    let forced = std::env::var("PMEM_IS_PMEM_FORCE").is_ok_and(|v| v == "1");
    let durability = if forced {
        "libpmem flushes (PMEM_IS_PMEM_FORCE=1) on tmpfs: process crash only".to_string()
    } else {
        format!("libpmem msync on {}", medium_fs(m))
    };
    let scratch = tempfile::tempdir_in(m.dir(args))?;
    let dir = scratch.path();
    let mut rows = Vec::new();
    if !args.no_seed {
        let chunk = vec![b'1'; SEED_APPEND as usize];
        let (appends, wall) =
            time_fresh_pools(args, dir, "pmemlog", |path| -> std::io::Result<u64> {
                let log = PmemLog::create(path, args.pool_mib << 20)?;
                let mut appends = 0;
                while log.nbyte() - log.tell() >= SEED_APPEND && log.append(&chunk).is_ok() {
                    appends += 1;
                }
                Ok(appends)
            })?;
        rows.push(seed_row("libpmemlog", m, durability.clone(), appends, wall));
    }
    for size in args.small_sizes() {
        for threads in args.small_threads() {
            let path = dir.join(format!("small-{size}-{threads}.pmemlog"));
            let buf = vec![0x5Au8; size as usize];
            let per_thread = small_appends_per_thread(args, m, size, threads);
            let make = || -> std::io::Result<PmemLog> {
                let log = PmemLog::create(&path, small_log_bytes(m))?;
                prefault(&log);
                Ok(log)
            };
            // As ours: a fresh pool each round on the disk, rewound elsewhere.
            let rewind = |log: &mut PmemLog| {
                log.rewind();
                Ok(())
            };
            let rounds = run_rounds(args, m, &path, make, rewind, |log| {
                timed(args, threads, per_thread, |_, _| log.append(&buf).is_ok())
            })?;
            rows.push(rounds.into_row("libpmemlog", m, durability.clone(), threads, size));
        }
    }
    Ok(rows)
}

/// Touches every page of a fresh libpmemlog pool (fills it, then rewinds), so that its small
/// appends take no page faults — as nvpage's log, which `small_nvpage` prefaults
/// (`Log::prefault`) before its clock too: the rows compare appending, not first-touch faults.
#[cfg(feature = "pmdk")]
fn prefault(log: &nvpage_wal::pmdk::PmemLog) {
    let chunk = vec![0u8; 1 << 20];
    while log.nbyte() - log.tell() >= chunk.len() as u64 && log.append(&chunk).is_ok() {}
    log.rewind();
}

#[cfg(not(feature = "pmdk"))]
fn pmdk_rows(_args: &LogArgs, _m: Medium) -> std::io::Result<Vec<LogRow>> {
    Err(std::io::Error::other("built without the `pmdk` feature"))
}
