//! Goal: a raw log behaves as PMDK's libpmemlog 1.12 does, call for call. The same operations
//! run against libpmemlog and our log side by side — random sequences (create, in a new file or
//! in place; append; append_vectored; walk with random chunk sizes and early stops; rewind;
//! close and reopen) and PMDK's own log tests (`log_basic`, `log_walker`, `log_recovery`,
//! `log_pool`, reimplemented) — comparing every observable: success or the class of error, the
//! chunks walked and their bytes in order, `tell`, `nbyte`, the contents after reopen. Both
//! persistence paths: `msync` on a disk directory, and cache-line flushes on /dev/shm (libpmem's
//! with `PMEM_IS_PMEM_FORCE=1`, which it reads once per process: each path runs in a child
//! process of its own). Where nvpage differs on purpose — the side-by-side table in the crate
//! docs lists each difference — the test checks the documented rule instead: a record log,
//! framed, against a model of its records; the header page (4 KiB, libpmemlog's 8 KiB on whole
//! pages); pools below 2 MiB, which libpmemlog refuses; a new file's mode, less the umask.
//! Built only with the `pmdk` feature (libpmemlog-dev installed).

mod common;

use std::hash::Hasher;
use std::io::{self, IoSlice};
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::Medium;
use nvpage_storage::{PersistRequest, StorageError};
use nvpage_wal::layout::{DATA_OFFSET, RECORD_HEADER_LEN, record_size};
use nvpage_wal::pmdk::PmemLog;
use nvpage_wal::{CreateOptions, Framing, Log, OpenOptions, Uuid, WalError};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// libpmemlog's smallest pool (`PMEMLOG_MIN_POOL`).
const PMDK_MIN_POOL: u64 = 2 << 20;
/// Where a libpmemlog pool's data starts: its pool header and descriptor, a page each.
const PMDK_DATA_OFFSET: u64 = 8192;

// ---------------------------------------------------------------------------------------------
// Outcomes, as both libraries can say them.

/// A call's result: success, or the class of its error — libpmemlog's `errno`, and the `errno`
/// each of our typed errors stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Ok,
    /// `ENOSPC`: the log is full.
    NoSpace,
    /// `EEXIST`: the file exists, or holds something a create would destroy.
    Exists,
    /// `ENOENT`.
    Missing,
    /// `EINVAL`: not a pool, a damaged or truncated one, a size out of range.
    Invalid,
    /// `EWOULDBLOCK`: another handle holds the file.
    Busy,
    /// `EACCES`.
    Denied,
    Other(i32),
}

fn of_errno(e: &io::Error) -> Outcome {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => Outcome::NoSpace,
        Some(libc::EEXIST) => Outcome::Exists,
        Some(libc::ENOENT) => Outcome::Missing,
        Some(libc::EINVAL) => Outcome::Invalid,
        Some(libc::EWOULDBLOCK) => Outcome::Busy,
        Some(libc::EACCES) => Outcome::Denied,
        code => Outcome::Other(code.unwrap_or(-1)),
    }
}

fn of_wal(e: &WalError) -> Outcome {
    match e {
        WalError::LogFull { .. } => Outcome::NoSpace,
        WalError::NotBlank { .. } | WalError::Storage(StorageError::AlreadyExists { .. }) => {
            Outcome::Exists
        }
        WalError::Missing { .. } => Outcome::Missing,
        WalError::SizeOutOfRange { .. }
        | WalError::NotALog { .. }
        | WalError::Truncated { .. }
        | WalError::CorruptHeader { .. }
        | WalError::CorruptState { .. }
        | WalError::VersionMismatch { .. } => Outcome::Invalid,
        WalError::Storage(StorageError::AlreadyOpen { .. }) => Outcome::Busy,
        WalError::Storage(StorageError::Io { source, .. }) => of_errno(source),
        other => panic!("no libpmemlog counterpart: {other}"),
    }
}

fn lib_outcome<T>(r: &io::Result<T>) -> Outcome {
    r.as_ref().err().map_or(Outcome::Ok, of_errno)
}

fn our_outcome<T>(r: &nvpage_wal::Result<T>) -> Outcome {
    r.as_ref().err().map_or(Outcome::Ok, of_wal)
}

// ---------------------------------------------------------------------------------------------
// Walks, recorded.

/// What a walk handed its callback: the number of calls, the bytes, and a digest of each
/// chunk's length and bytes in order (a walk of a 2 MiB log by 1-byte chunks is two million
/// chunks).
#[derive(Debug, PartialEq, Eq)]
struct Walked {
    calls: usize,
    bytes: usize,
    digest: u64,
}

/// A walk's callback that records what it is handed, and asks to stop at call `stop_after`.
struct Recorder {
    stop_after: Option<usize>,
    calls: usize,
    bytes: usize,
    hasher: std::collections::hash_map::DefaultHasher,
}

impl Recorder {
    fn new(stop_after: Option<usize>) -> Self {
        Self { stop_after, calls: 0, bytes: 0, hasher: Default::default() }
    }

    fn chunk(&mut self, c: &[u8]) -> bool {
        self.calls += 1;
        self.bytes += c.len();
        self.hasher.write_usize(c.len());
        self.hasher.write(c);
        self.stop_after != Some(self.calls)
    }

    fn finish(self) -> Walked {
        Walked { calls: self.calls, bytes: self.bytes, digest: self.hasher.finish() }
    }
}

fn lib_walk(log: &PmemLog, chunk: usize, stop_after: Option<usize>) -> Walked {
    let mut r = Recorder::new(stop_after);
    log.walk(chunk, |c| r.chunk(c));
    r.finish()
}

fn our_walk(log: &Log, chunk: usize, stop_after: Option<usize>) -> Walked {
    let mut r = Recorder::new(stop_after);
    log.walk(chunk, |c| r.chunk(c)).unwrap();
    r.finish()
}

/// The chunks of a walk, whole: for the short logs of PMDK's tests.
fn lib_chunks(log: &PmemLog, chunk: usize) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    log.walk(chunk, |c| {
        v.push(c.to_vec());
        true
    });
    v
}

fn our_chunks(log: &Log, chunk: usize) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    log.walk(chunk, |c| {
        v.push(c.to_vec());
        true
    })
    .unwrap();
    v
}

// ---------------------------------------------------------------------------------------------
// Files and the documented rules.

fn raw_opts(m: &Medium) -> CreateOptions {
    CreateOptions {
        framing: Framing::Raw,
        persistence: m.persistence,
        ..CreateOptions::new(Uuid::from_u128(0x9e))
    }
}

fn our_open(p: &Path, m: &Medium) -> nvpage_wal::Result<Log> {
    Log::open_with(p, &OpenOptions { persistence: m.persistence, ..OpenOptions::default() })
}

/// A sparse file of `len` bytes, as PMDK's tests' `create_holey_file` makes.
fn holey_file(p: &Path, len: u64) {
    std::fs::File::create(p).unwrap().set_len(len).unwrap();
}

/// A file of `len` bytes, allocated and zero, as PMDK's tests' `posix_fallocate` makes.
fn allocated_file(p: &Path, len: u64) {
    let f = std::fs::File::create(p).unwrap();
    nvpage_storage::file::allocate(&f, 0, len).unwrap();
}

/// A file of `len` bytes, zero up to `zero_to` and `'Z'` after, as PMDK's tests'
/// `create_nonzeroed_file` makes.
fn nonzeroed_file(p: &Path, len: u64, zero_to: u64) {
    let f = std::fs::File::create(p).unwrap();
    f.set_len(zero_to).unwrap();
    f.write_all_at(&vec![b'Z'; (len - zero_to) as usize], zero_to).unwrap();
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The process's umask, read without changing it.
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).expect("a kernel that shows it");
    u32::from_str_radix(line["Umask:".len()..].trim(), 8).unwrap()
}

/// Whether permission bits bind this process (not root, or another holder of
/// `CAP_DAC_OVERRIDE`): a file of mode 0 it can still read says they do not.
fn permissions_bind(dir: &Path) -> bool {
    let p = dir.join("probe-permissions");
    std::fs::write(&p, b"x").unwrap();
    chmod(&p, 0);
    let bind = std::fs::read(&p).is_err();
    std::fs::remove_file(&p).unwrap();
    bind
}

/// libpmemlog's usable bytes in a pool file of `file_bytes`: whole pages, less its two.
fn pmdk_nbyte(file_bytes: u64) -> u64 {
    (file_bytes & !4095) - PMDK_DATA_OFFSET
}

/// Ours: the file less its header page.
fn our_nbyte(file_bytes: u64) -> u64 {
    file_bytes - DATA_OFFSET as u64
}

// ---------------------------------------------------------------------------------------------
// One process per persistence path.

const CHILD_VAR: &str = "NVPAGE_PMDK_CHILD";

/// Runs `body` with the medium of persistence path `path` ("msync": a directory beside the
/// build; "emulated-nvm": /dev/shm with the cache-line path), in a child process of this test binary whose `PMEM_IS_PMEM_FORCE` puts libpmemlog on the same
/// path: libpmem reads the variable once per process. Skipped where the medium is missing.
fn on_path(test: &str, path: &str, body: impl FnOnce(&Medium)) {
    let force = if path == "emulated-nvm" { "1" } else { "0" };
    if std::env::var(CHILD_VAR).as_deref() != Ok(test) {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_VAR, test)
            .env("PMEM_IS_PMEM_FORCE", force)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{test} (PMEM_IS_PMEM_FORCE={force}) failed:\n{text}");
        assert!(text.contains("1 passed"), "{test}: the child ran no test:\n{text}");
        print!("{text}");
        return;
    }
    let m = if path == "msync" {
        // The build's own scratch directory, on the disk that holds the build.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        Medium { name: "msync", dir, persistence: PersistRequest::Auto }
    } else {
        let Some(m) = common::media().into_iter().find(|m| m.name == path) else {
            println!("{test}: no medium for the {path} path here; skipped");
            return;
        };
        m
    };
    let log = Log::create(&m.path("probe.log"), PMDK_MIN_POOL, &raw_opts(&m)).unwrap();
    let cache_lines = m.persistence == PersistRequest::CacheLine;
    assert_eq!(log.durability().mode.uses_cache_lines(), cache_lines, "{path}: our log's path");
    drop(log);
    body(&m);
}

// ---------------------------------------------------------------------------------------------
// Random sequences.

/// One operation, applied to both logs.
#[derive(Clone, Debug)]
enum Op {
    /// `append` of `len` bytes drawn from `seed`.
    Append {
        len: usize,
        seed: u8,
    },
    /// `append_vectored` of buffers of these lengths (empty ones and none at all included).
    AppendVectored {
        lens: Vec<usize>,
        seed: u8,
    },
    /// An append of the bytes left free, plus `delta` (so exactly full, or one or two over or
    /// under).
    Fill {
        delta: i8,
    },
    /// `walk` with this chunk size, the callback asking to stop at call `stop_after`.
    Walk {
        chunk: usize,
        stop_after: Option<usize>,
    },
    Rewind,
    /// Close both, open both again.
    Reopen,
}

fn bytes(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| seed.wrapping_add((i as u8).wrapping_mul(31)) ^ (i >> 8) as u8).collect()
}

fn len() -> impl Strategy<Value = usize> {
    // Large appends reach past 256 KiB, where ours writes a part never mapped with `pwrite`.
    prop_oneof![
        1 => Just(0usize),
        6 => 1..200usize,
        3 => 200..5_000usize,
        1 => 60_000..300_000usize,
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let chunk = prop_oneof![Just(0usize), 1..=64usize, 1..=70_000usize];
    prop_oneof![
        8 => (len(), any::<u8>()).prop_map(|(len, seed)| Op::Append { len, seed }),
        3 => (prop::collection::vec(prop_oneof![Just(0usize), len()], 0..5), any::<u8>())
            .prop_map(|(lens, seed)| Op::AppendVectored { lens, seed }),
        1 => (-2i8..=2).prop_map(|delta| Op::Fill { delta }),
        4 => (chunk, prop::option::of(1..5usize))
            .prop_map(|(chunk, stop_after)| Op::Walk { chunk, stop_after }),
        1 => Just(Op::Rewind),
        1 => Just(Op::Reopen),
    ]
}

/// How a case starts: libpmemlog's pool size, and whether both logs are built in place (an
/// existing sparse file, created with size 0) or in a new file.
#[derive(Clone, Debug)]
struct Start {
    pool_bytes: u64,
    in_place: bool,
}

fn start() -> impl Strategy<Value = Start> {
    (PMDK_MIN_POOL..PMDK_MIN_POOL + (64 << 10), any::<bool>())
        .prop_map(|(pool_bytes, in_place)| Start { pool_bytes, in_place })
}

/// A record log's documented behaviour, for the same operations: each append is one record of
/// `record_size(len)` bytes, refused whole when it does not fit; `walk` hands out each
/// record's payload in chunks (chunk size 0: whole), an empty record as one empty chunk, and
/// stops when the callback says so.
#[derive(Debug, Default)]
struct RecordModel {
    records: Vec<Vec<u8>>,
    used: u64,
    capacity: u64,
}

impl RecordModel {
    fn append(&mut self, payload: Vec<u8>) -> Outcome {
        let size = record_size(payload.len() as u64);
        if size > self.capacity - self.used {
            return Outcome::NoSpace;
        }
        self.used += size;
        self.records.push(payload);
        Outcome::Ok
    }

    fn walk(&self, chunk: usize, stop_after: Option<usize>) -> Walked {
        let mut r = Recorder::new(stop_after);
        'records: for p in &self.records {
            if chunk == 0 || p.is_empty() {
                if !r.chunk(p) {
                    break;
                }
                continue;
            }
            for c in p.chunks(chunk) {
                if !r.chunk(c) {
                    break 'records;
                }
            }
        }
        r.finish()
    }
}

/// The three logs of a case: libpmemlog's, our raw one (compared with it), and our record log
/// (compared with [`RecordModel`]).
struct Logs {
    lib: PmemLog,
    raw: Log,
    rec: Log,
}

struct Paths {
    lib: PathBuf,
    raw: PathBuf,
    rec: PathBuf,
}

fn create_all(m: &Medium, paths: &Paths, s: &Start) -> Result<Logs, TestCaseError> {
    let capacity = pmdk_nbyte(s.pool_bytes);
    let our_bytes = capacity + DATA_OFFSET as u64;
    let raw_opts = raw_opts(m);
    let rec_opts = CreateOptions { framing: Framing::Records, ..raw_opts.clone() };
    let (lib, raw, rec) = if s.in_place {
        holey_file(&paths.lib, s.pool_bytes);
        holey_file(&paths.raw, our_bytes);
        holey_file(&paths.rec, our_bytes);
        (
            PmemLog::create_with_mode(&paths.lib, 0, 0o600),
            Log::create(&paths.raw, 0, &raw_opts),
            Log::create(&paths.rec, 0, &rec_opts),
        )
    } else {
        (
            PmemLog::create_with_mode(&paths.lib, s.pool_bytes, 0o600),
            Log::create(&paths.raw, our_bytes, &raw_opts),
            Log::create(&paths.rec, our_bytes, &rec_opts),
        )
    };
    let logs = Logs { lib: lib.unwrap(), raw: raw.unwrap(), rec: rec.unwrap() };
    prop_assert_eq!(logs.lib.nbyte(), capacity, "libpmemlog's nbyte: whole pages less two");
    prop_assert_eq!(logs.raw.nbyte(), our_nbyte(our_bytes), "ours: the file less one page");
    Ok(logs)
}

fn run_case(m: &Medium, s: &Start, ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir_in(m.dir.path()).unwrap();
    let paths = Paths {
        lib: dir.path().join("lib.pool"),
        raw: dir.path().join("raw.log"),
        rec: dir.path().join("rec.log"),
    };
    let mut logs = create_all(m, &paths, s)?;
    let capacity = logs.lib.nbyte();
    let mut model = RecordModel { capacity, ..RecordModel::default() };
    for (i, op) in ops.iter().enumerate() {
        let ctx = format!("op {i} {op:?}");
        match op {
            Op::Append { len, seed } => {
                let b = bytes(*len, *seed);
                let want = lib_outcome(&logs.lib.append(&b));
                prop_assert_eq!(our_outcome(&logs.raw.append(&b)), want, "{}", ctx);
                let rec = our_outcome(&logs.rec.append(&b));
                prop_assert_eq!(rec, model.append(b), "{}: record log", ctx);
            }
            Op::AppendVectored { lens, seed } => {
                let parts: Vec<Vec<u8>> =
                    lens.iter().enumerate().map(|(k, &n)| bytes(n, seed ^ k as u8)).collect();
                let slices: Vec<IoSlice<'_>> = parts.iter().map(|p| IoSlice::new(p)).collect();
                let want = lib_outcome(&logs.lib.append_vectored(&slices));
                prop_assert_eq!(our_outcome(&logs.raw.append_vectored(&slices)), want, "{}", ctx);
                let rec = our_outcome(&logs.rec.append_vectored(&slices));
                prop_assert_eq!(rec, model.append(parts.concat()), "{}: record log", ctx);
            }
            Op::Fill { delta } => {
                let free = (logs.lib.nbyte() - logs.lib.tell()) as i64;
                let b = bytes((free + i64::from(*delta)).max(0) as usize, 7);
                let want = lib_outcome(&logs.lib.append(&b));
                prop_assert_eq!(our_outcome(&logs.raw.append(&b)), want, "{}", ctx);
                let rec_free = (capacity - model.used) as i64 - RECORD_HEADER_LEN as i64;
                let p = bytes((rec_free + i64::from(*delta)).max(0) as usize, 9);
                let rec = our_outcome(&logs.rec.append(&p));
                prop_assert_eq!(rec, model.append(p), "{}: record log", ctx);
            }
            Op::Walk { chunk, stop_after } => {
                let want = lib_walk(&logs.lib, *chunk, *stop_after);
                prop_assert_eq!(our_walk(&logs.raw, *chunk, *stop_after), want, "{}", ctx);
                let rec = our_walk(&logs.rec, *chunk, *stop_after);
                prop_assert_eq!(rec, model.walk(*chunk, *stop_after), "{}: record log", ctx);
            }
            Op::Rewind => {
                logs.lib.rewind();
                logs.raw.rewind().unwrap();
                logs.rec.rewind().unwrap();
                model.records.clear();
                model.used = 0;
            }
            Op::Reopen => {
                drop(logs);
                logs = Logs {
                    lib: PmemLog::open(&paths.lib).unwrap(),
                    raw: our_open(&paths.raw, m).unwrap(),
                    rec: our_open(&paths.rec, m).unwrap(),
                };
                prop_assert_eq!(
                    our_walk(&logs.raw, 0, None),
                    lib_walk(&logs.lib, 0, None),
                    "{}: contents after reopen",
                    ctx
                );
            }
        }
        prop_assert_eq!(logs.raw.tell(), logs.lib.tell(), "{}: tell", ctx);
        prop_assert_eq!(logs.raw.nbyte(), logs.lib.nbyte(), "{}: nbyte", ctx);
        prop_assert_eq!(logs.rec.tell(), model.used, "{}: record log's tell", ctx);
    }
    drop(logs);
    let lib = PmemLog::open(&paths.lib).unwrap();
    let raw = our_open(&paths.raw, m).unwrap();
    let (want, got) = (lib_chunks(&lib, 0).concat(), our_chunks(&raw, 0).concat());
    prop_assert!(want == got, "contents at the end: {} bytes against {}", got.len(), want.len());
    let rec = our_open(&paths.rec, m).unwrap();
    let records: Vec<Vec<u8>> =
        rec.records().unwrap().map(|r| r.unwrap().payload.to_vec()).collect();
    prop_assert!(records == model.records, "the record log's records at the end");
    Ok(())
}

fn random_sequences(m: &Medium) {
    // Within about a minute on two shared cores for both paths: on the `msync` path every
    // append of both libraries syncs the file.
    let cases = if m.persistence == PersistRequest::CacheLine { 256 } else { 64 };
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let strategy = (start(), prop::collection::vec(op(), 1..40));
    TestRunner::new(config)
        .run(&strategy, |(s, ops)| run_case(m, &s, &ops))
        .unwrap_or_else(|e| panic!("{}: {e}", m.name));
}

#[test]
fn random_sequences_on_the_msync_path() {
    on_path("random_sequences_on_the_msync_path", "msync", random_sequences);
}

#[test]
fn random_sequences_on_the_cache_line_path() {
    on_path("random_sequences_on_the_cache_line_path", "emulated-nvm", random_sequences);
}

// ---------------------------------------------------------------------------------------------
// PMDK's tests, reimplemented.

/// `log_basic`: a script of one-letter operations on a pool made in place in a sparse 2 MiB
/// file — c create, n nbyte, a six appends, v appendv of nine strings (then of none), t tell,
/// w walk all at once and by 16, r rewind, l close, h check — as its TEST0 to TEST3 run them.
/// (Its `f`, fault injection, needs a debug build of libpmemlog; TEST5 to TEST10, pool sets and
/// device DAX, have no counterpart: a log is one file. Its appendv of -3 buffers, `EINVAL`, is
/// unsayable here: a slice has no negative length.)
fn log_basic(m: &Medium) {
    const STRINGS: [&str; 9] = [
        "1st test string\n",
        "2nd test string\n",
        "3rd test string\n",
        "4th test string\n",
        "5th test string\n",
        "6th test string\n",
        "7th test string\n",
        "8th test string\n",
        "9th test string\n",
    ];
    let scripts = ["c n t w r l h", "c a n t w r t w l h", "c v n t w r t w l h"];
    let scripts = scripts.into_iter().chain(["c a n t w r t w v n t w r t w l h"]);
    for (k, script) in scripts.enumerate() {
        let dir = tempfile::tempdir_in(m.dir.path()).unwrap();
        let (lp, op) = (dir.path().join("testfile1.pool"), dir.path().join("testfile1.log"));
        holey_file(&lp, 2 << 20);
        holey_file(&op, 2 << 20);
        let mut lib: Option<PmemLog> = None;
        let mut ours: Option<Log> = None;
        for step in script.split(' ') {
            let ctx = format!("{}: log_basic TEST{k} ({script}) at {step}", m.name);
            if step == "c" {
                let l = PmemLog::create_with_mode(&lp, 0, 0o600);
                let o = Log::create(&op, 0, &CreateOptions { mode: 0o600, ..raw_opts(m) });
                assert_eq!(our_outcome(&o), lib_outcome(&l), "{ctx}");
                (lib, ours) = (Some(l.unwrap()), Some(o.unwrap()));
                continue;
            }
            if step == "l" {
                (lib, ours) = (None, None);
                continue;
            }
            if step == "h" {
                assert!(PmemLog::check(&lp).unwrap(), "{ctx}: libpmemlog's pool is consistent");
                let ro = OpenOptions { read_only: true, ..OpenOptions::default() };
                let o = Log::open_with(&op, &ro).unwrap();
                let l = PmemLog::open(&lp).unwrap();
                assert_eq!(our_chunks(&o, 0), lib_chunks(&l, 0), "{ctx}: contents");
                continue;
            }
            let (l, o) = (lib.as_ref().unwrap(), ours.as_mut().unwrap());
            match step {
                "n" => {
                    // The documented rule: the same file, a page more for our data.
                    assert_eq!(l.nbyte(), pmdk_nbyte(2 << 20), "{ctx}");
                    assert_eq!(l.nbyte(), 2_088_960, "{ctx}: as PMDK's expected output says");
                    assert_eq!(o.nbyte(), our_nbyte(2 << 20), "{ctx}");
                }
                "a" => {
                    for s in &STRINGS[..6] {
                        let want = lib_outcome(&l.append(s.as_bytes()));
                        assert_eq!(our_outcome(&o.append(s.as_bytes())), want, "{ctx}: {s:?}");
                    }
                }
                "v" => {
                    let iov: Vec<IoSlice<'_>> =
                        STRINGS.iter().map(|s| IoSlice::new(s.as_bytes())).collect();
                    let want = lib_outcome(&l.append_vectored(&iov));
                    assert_eq!(our_outcome(&o.append_vectored(&iov)), want, "{ctx}: nine");
                    let want = lib_outcome(&l.append_vectored(&[]));
                    assert_eq!(want, Outcome::Ok, "{ctx}");
                    assert_eq!(our_outcome(&o.append_vectored(&[])), want, "{ctx}: none");
                }
                "t" => assert_eq!(o.tell(), l.tell(), "{ctx}"),
                "w" => {
                    // On an empty log, all at once is one empty chunk; by 16, no chunk.
                    assert_eq!(our_chunks(o, 0), lib_chunks(l, 0), "{ctx}: all at once");
                    assert_eq!(our_chunks(o, 16), lib_chunks(l, 16), "{ctx}: by 16");
                }
                "r" => {
                    l.rewind();
                    o.rewind().unwrap();
                }
                other => unreachable!("{other}"),
            }
        }
    }
}

/// `log_walker`: six appends into a pool made in place in an allocated 2 MiB file, then a walk
/// all at once whose callback returns 0 (libpmemlog ignores it there). PMDK's callback writes
/// into the chunk to see a debug build's write protection fault; here the chunk is a `&[u8]`,
/// so such a write does not compile, and the test checks instead that the walk saw the six
/// strings and left them as they were.
fn log_walker(m: &Medium) {
    let dir = tempfile::tempdir_in(m.dir.path()).unwrap();
    let (lp, op) = (dir.path().join("testfile1.pool"), dir.path().join("testfile1.log"));
    allocated_file(&lp, 2 << 20);
    allocated_file(&op, 2 << 20);
    let l = PmemLog::create_with_mode(&lp, 0, 0o600).unwrap();
    let o = Log::create(&op, 0, &CreateOptions { mode: 0o600, ..raw_opts(m) }).unwrap();
    for n in ["1st", "2nd", "3rd", "4th", "5th", "6th"] {
        let s = format!("{n} append string\n");
        assert_eq!(our_outcome(&o.append(s.as_bytes())), lib_outcome(&l.append(s.as_bytes())));
    }
    let (want, got) = (lib_walk(&l, 0, Some(1)), our_walk(&o, 0, Some(1)));
    assert_eq!((got.calls, got.bytes), (1, 108), "{}: log_walker", m.name);
    assert_eq!(got, want, "{}: log_walker", m.name);
    assert_eq!(our_chunks(&o, 0), lib_chunks(&l, 0), "{}: log_walker, after", m.name);
}

/// `log_recovery`: appends (six, or nine through one appendv), then an append cut short after
/// its bytes were stored past the tail and before the tail was — PMDK write-protects the pool's
/// descriptor so that the store of the write offset faults; here the bytes are written into
/// each file past its tail while it is closed, which leaves the same file. Both logs are then
/// consistent, and reopen with the tail and contents from before the cut append.
fn log_recovery(m: &Medium) {
    for op_kind in ["a", "v"] {
        let ctx = format!("{}: log_recovery {op_kind}", m.name);
        let dir = tempfile::tempdir_in(m.dir.path()).unwrap();
        let (lp, op) = (dir.path().join("testfile1.pool"), dir.path().join("testfile1.log"));
        allocated_file(&lp, 2 << 20);
        allocated_file(&op, 2 << 20);
        let l = PmemLog::create_with_mode(&lp, 0, 0o600).unwrap();
        let o = Log::create(&op, 0, &CreateOptions { mode: 0o600, ..raw_opts(m) }).unwrap();
        let names = ["1st", "2nd", "3rd", "4th", "5th", "6th", "7th", "8th", "9th"];
        let strings: Vec<String> = if op_kind == "a" {
            names[..6].iter().map(|n| format!("{n} append string\n")).collect()
        } else {
            names.iter().map(|n| format!("{n} appendv string\n")).collect()
        };
        let append_all = |l: &PmemLog, o: &Log| {
            if op_kind == "a" {
                for s in &strings {
                    assert_eq!(lib_outcome(&l.append(s.as_bytes())), Outcome::Ok, "{ctx}");
                    assert_eq!(our_outcome(&o.append(s.as_bytes())), Outcome::Ok, "{ctx}");
                }
            } else {
                let iov: Vec<IoSlice<'_>> =
                    strings.iter().map(|s| IoSlice::new(s.as_bytes())).collect();
                assert_eq!(lib_outcome(&l.append_vectored(&iov)), Outcome::Ok, "{ctx}");
                assert_eq!(our_outcome(&o.append_vectored(&iov)), Outcome::Ok, "{ctx}");
            }
        };
        append_all(&l, &o);
        let tell = l.tell();
        assert_eq!(tell, if op_kind == "a" { 108 } else { 171 }, "{ctx}: PMDK's expected tell");
        assert_eq!(o.tell(), tell, "{ctx}");
        let before = lib_chunks(&l, 0);
        drop((l, o));
        let cut = strings.concat();
        let write_past_tail = |p: &Path, data_offset: u64| {
            let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
            f.write_all_at(cut.as_bytes(), data_offset + tell).unwrap();
        };
        write_past_tail(&lp, PMDK_DATA_OFFSET);
        write_past_tail(&op, DATA_OFFSET as u64);
        assert!(PmemLog::check(&lp).unwrap(), "{ctx}: libpmemlog's pool is consistent");
        let (l, o) = (PmemLog::open(&lp).unwrap(), our_open(&op, m).unwrap());
        assert_eq!((o.tell(), l.tell()), (tell, tell), "{ctx}: the tail after reopen");
        assert_eq!(lib_chunks(&l, 0), before, "{ctx}: libpmemlog's contents");
        assert_eq!(our_chunks(&o, 0), before, "{ctx}: our contents");
    }
}

/// What a create or open made, observed the same way on both sides.
#[derive(Debug, PartialEq, Eq)]
struct Made {
    outcome: Outcome,
    /// The file's length and permission bits afterwards, if it exists.
    file: Option<(u64, u32)>,
}

fn made(outcome: Outcome, p: &Path) -> Made {
    let file = std::fs::metadata(p).ok().map(|md| (md.len(), md.permissions().mode() & 0o7777));
    Made { outcome, file }
}

/// Which library a call goes to.
#[derive(Clone, Copy, Debug)]
enum Side {
    Libpmemlog,
    Ours,
}

impl Side {
    fn create(self, m: &Medium, p: &Path, bytes: u64, mode: u32) -> Outcome {
        match self {
            Side::Libpmemlog => lib_outcome(&PmemLog::create_with_mode(p, bytes, mode)),
            Side::Ours => {
                our_outcome(&Log::create(p, bytes, &CreateOptions { mode, ..raw_opts(m) }))
            }
        }
    }

    fn open(self, m: &Medium, p: &Path) -> Outcome {
        match self {
            Side::Libpmemlog => lib_outcome(&PmemLog::open(p)),
            Side::Ours => our_outcome(&our_open(p, m)),
        }
    }
}

const MB: u64 = 1 << 20;

/// How a `log_pool` case prepares its file.
enum Prep {
    None,
    /// No file, in a directory that does not exist.
    MissingDirectory,
    /// A sparse file of this length and mode.
    Holey(u64, u32),
    /// Zeros to `zero_to`, then `'Z'`s to `len`; this mode.
    Nonzeroed {
        len: u64,
        zero_to: u64,
        mode: u32,
    },
    /// A pool of this many MiB, made by the side's own create, set to mode 0640 (new files'
    /// modes are compared in `new_files_take_the_mode_less_the_umask`), then changed.
    Made {
        mb: u64,
        then: fn(&Path),
    },
}

impl Prep {
    /// Prepares the case's file at `p` and returns the path to call on.
    fn apply(&self, side: Side, m: &Medium, p: &Path) -> PathBuf {
        match *self {
            Prep::None => {}
            Prep::MissingDirectory => return p.join("testfile"),
            Prep::Holey(len, mode) => {
                holey_file(p, len);
                chmod(p, mode);
            }
            Prep::Nonzeroed { len, zero_to, mode } => {
                nonzeroed_file(p, len, zero_to);
                chmod(p, mode);
            }
            Prep::Made { mb, then } => {
                assert_eq!(side.create(m, p, mb * MB, 0o640), Outcome::Ok, "{side:?}");
                chmod(p, 0o640);
                then(p);
            }
        }
        p.to_path_buf()
    }
}

/// A `log_pool` case: its file, then a create (`Some((MiB, mode))`) or an open (`None`).
struct PoolCase {
    name: &'static str,
    prep: Prep,
    create: Option<(u64, u32)>,
}

/// `log_pool`: `pmemlog_create` and `pmemlog_open` on every kind of file its cases make, each
/// case run twice — on a file for libpmemlog and on the same file for us — and compared: the
/// outcome, and the file's length and mode afterwards; a refused call leaves the file as it
/// was. TEST0's new file is compared by the documented rule (its mode less the umask here), and
/// TEST8's pool below 2 MiB in `below_two_mib`. The permission cases (TEST9, TEST10, TEST24,
/// TEST25) run only where permission bits bind the process (not as root), as in PMDK; pool sets
/// and replicas (TEST11, TEST12, TEST27, TEST28) have no counterpart.
fn log_pool(m: &Medium) {
    let umask = umask();
    let dir = tempfile::tempdir_in(m.dir.path()).unwrap();
    let case = |name, prep, create| PoolCase { name, prep, create };
    let truncate_to_1mb: fn(&Path) =
        |p| std::fs::OpenOptions::new().write(true).open(p).unwrap().set_len(MB).unwrap();
    let mut cases = vec![
        case("TEST0", Prep::None, Some((20, 0o600))),
        case("TEST1", Prep::Holey(40 * MB, 0o600), Some((0, 0o600))),
        case("TEST2", Prep::None, Some((0, 0o600))),
        case("TEST3", Prep::Holey(20 * MB, 0o600), Some((20, 0o600))),
        case("TEST4", Prep::Holey(0, 0o600), Some((0, 0o600))),
        case("TEST5", Prep::MissingDirectory, Some((20, 0o600))),
        case("TEST6", Prep::Nonzeroed { len: 2 * MB, zero_to: 0, mode: 0o640 }, Some((0, 0o600))),
        case(
            "TEST7",
            Prep::Nonzeroed { len: 2 * MB, zero_to: PMDK_DATA_OFFSET, mode: 0o600 },
            Some((0, 0o600)),
        ),
        case("TEST20", Prep::None, None),
        case("TEST21", Prep::Holey(MB, 0o644), None),
        case("TEST22", Prep::Made { mb: 20, then: truncate_to_1mb }, None),
        case("TEST23", Prep::Holey(20 * MB, 0o644), None),
        case("TEST26", Prep::Made { mb: 20, then: |_| {} }, None),
    ];
    if permissions_bind(dir.path()) {
        cases.extend([
            case("TEST9", Prep::Holey(20 * MB, 0o240), Some((0, 0o600))),
            case("TEST10", Prep::Holey(20 * MB, 0o440), Some((0, 0o600))),
            case("TEST24", Prep::Made { mb: 20, then: |p| chmod(p, 0o240) }, None),
            case("TEST25", Prep::Made { mb: 20, then: |p| chmod(p, 0o440) }, None),
        ]);
    } else {
        println!("{}: log_pool TEST9, 10, 24, 25: permission bits do not bind; skipped", m.name);
    }
    for case in cases {
        let ctx = format!("{}: log_pool {}", m.name, case.name);
        let [lib, ours] = [Side::Libpmemlog, Side::Ours].map(|side| {
            let p = case.prep.apply(side, m, &dir.path().join(format!("{}-{side:?}", case.name)));
            let before = std::fs::read(&p).ok();
            let outcome = match case.create {
                Some((mb, mode)) => side.create(m, &p, mb * MB, mode),
                None => side.open(m, &p),
            };
            if outcome != Outcome::Ok {
                let after = std::fs::read(&p).ok();
                assert!(after == before, "{ctx}: {side:?}: a refused call changed the file");
            }
            made(outcome, &p)
        });
        if case.name == "TEST0" {
            let new_file = |bits| Made { outcome: Outcome::Ok, file: Some((20 * MB, bits)) };
            assert_eq!(lib, new_file(0o600), "{ctx}");
            assert_eq!(ours, new_file(0o600 & !umask), "{ctx}");
        } else {
            assert_eq!(ours, lib, "{ctx}");
        }
    }
    new_files_take_the_mode_less_the_umask(m, &dir);
    below_two_mib(m, &dir);
    each_refuses_the_others_file(m, &dir);
    one_handle_at_a_time(m, &dir);
}

/// The documented rule for `log_pool` TEST0's mode: a new pool file gets exactly `mode` from
/// libpmemlog, which `chmod`s it; ours gets `mode` less the umask, as creat(2) gives it.
fn new_files_take_the_mode_less_the_umask(m: &Medium, dir: &tempfile::TempDir) {
    let umask = umask();
    for mode in [0o600, 0o640, 0o644, 0o666, 0o400] {
        let ctx = format!("{}: a new file of mode {mode:o}", m.name);
        let (lp, op) = (
            dir.path().join(format!("mode{mode:o}.pool")),
            dir.path().join(format!("mode{mode:o}.log")),
        );
        drop(PmemLog::create_with_mode(&lp, PMDK_MIN_POOL, mode).unwrap());
        drop(Log::create(&op, PMDK_MIN_POOL, &CreateOptions { mode, ..raw_opts(m) }).unwrap());
        let bits = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(bits(&lp), mode, "{ctx}: libpmemlog");
        assert_eq!(bits(&op), mode & !umask, "{ctx}: ours");
    }
}

/// `log_pool` TEST8 and the documented rule: libpmemlog refuses a pool below 2 MiB
/// (`EINVAL`), in a new file or in place; we make a log of any size from `MIN_FILE_BYTES`, and
/// it behaves as a larger one, full included.
fn below_two_mib(m: &Medium, dir: &tempfile::TempDir) {
    use nvpage_wal::layout::MIN_FILE_BYTES;
    for (k, bytes) in [MIN_FILE_BYTES, 1 << 20, PMDK_MIN_POOL - 1].into_iter().enumerate() {
        let ctx = format!("{}: a pool of {bytes} bytes", m.name);
        let (lp, op) =
            (dir.path().join(format!("small{k}.pool")), dir.path().join(format!("small{k}.log")));
        assert_eq!(lib_outcome(&PmemLog::create(&lp, bytes)), Outcome::Invalid, "{ctx}");
        assert!(!lp.exists(), "{ctx}: libpmemlog leaves no file");
        holey_file(&lp, bytes);
        assert_eq!(lib_outcome(&PmemLog::create(&lp, 0)), Outcome::Invalid, "{ctx}: in place");
        let log = Log::create(&op, bytes, &raw_opts(m)).unwrap();
        assert_eq!(log.nbyte(), our_nbyte(bytes), "{ctx}");
        log.append(&vec![3; log.nbyte() as usize]).unwrap();
        assert_eq!(our_outcome(&log.append(b"")), Outcome::NoSpace, "{ctx}: full");
        drop(log);
        std::fs::remove_file(&op).unwrap();
        holey_file(&op, bytes);
        assert_eq!(Log::create(&op, 0, &raw_opts(m)).unwrap().nbyte(), our_nbyte(bytes), "{ctx}");
    }
}

/// Each library refuses the other's file as not one of its own (`EINVAL`), on open and on a
/// create in place (its first page is not zeros: `EEXIST`).
fn each_refuses_the_others_file(m: &Medium, dir: &tempfile::TempDir) {
    let (lp, op) = (dir.path().join("theirs.pool"), dir.path().join("ours.log"));
    drop(PmemLog::create(&lp, PMDK_MIN_POOL).unwrap());
    drop(Log::create(&op, PMDK_MIN_POOL, &raw_opts(m)).unwrap());
    assert_eq!(our_outcome(&our_open(&lp, m)), Outcome::Invalid, "{}", m.name);
    assert_eq!(lib_outcome(&PmemLog::open(&op)), Outcome::Invalid, "{}", m.name);
    assert_eq!(our_outcome(&Log::create(&lp, 0, &raw_opts(m))), Outcome::Exists, "{}", m.name);
    assert_eq!(lib_outcome(&PmemLog::create(&op, 0)), Outcome::Exists, "{}", m.name);
}

/// A pool held open refuses a second open and a create in place (`EWOULDBLOCK`: both lock the
/// file), and opens again once closed.
fn one_handle_at_a_time(m: &Medium, dir: &tempfile::TempDir) {
    let (lp, op) = (dir.path().join("held.pool"), dir.path().join("held.log"));
    let l = PmemLog::create(&lp, PMDK_MIN_POOL).unwrap();
    let o = Log::create(&op, PMDK_MIN_POOL, &raw_opts(m)).unwrap();
    assert_eq!(lib_outcome(&PmemLog::open(&lp)), Outcome::Busy, "{}", m.name);
    assert_eq!(our_outcome(&our_open(&op, m)), Outcome::Busy, "{}", m.name);
    assert_eq!(lib_outcome(&PmemLog::create(&lp, 0)), Outcome::Busy, "{}", m.name);
    assert_eq!(our_outcome(&Log::create(&op, 0, &raw_opts(m))), Outcome::Busy, "{}", m.name);
    drop((l, o));
    assert_eq!(lib_outcome(&PmemLog::open(&lp)), Outcome::Ok, "{}", m.name);
    assert_eq!(our_outcome(&our_open(&op, m)), Outcome::Ok, "{}", m.name);
}

fn pmdk_cases(m: &Medium) {
    log_basic(m);
    log_walker(m);
    log_recovery(m);
    log_pool(m);
}

#[test]
fn pmdk_cases_on_the_msync_path() {
    on_path("pmdk_cases_on_the_msync_path", "msync", pmdk_cases);
}

#[test]
fn pmdk_cases_on_the_cache_line_path() {
    on_path("pmdk_cases_on_the_cache_line_path", "emulated-nvm", pmdk_cases);
}
