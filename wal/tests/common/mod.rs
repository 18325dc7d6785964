//! Helpers shared by the log's integration tests.
#![allow(dead_code)]

pub mod model;

use std::path::{Path, PathBuf};

use nvpage_storage::PersistRequest;
use nvpage_wal::{CreateOptions, Framing, Log, Result};
use tempfile::TempDir;
use uuid::Uuid;

/// A directory and the persistence request to use in it: /dev/shm on the cache-line path
/// (emulated NVM) where it exists, and the temp directory with `msync`.
pub struct Medium {
    pub name: &'static str,
    pub dir: TempDir,
    pub persistence: PersistRequest,
}

impl Medium {
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

pub fn media() -> Vec<Medium> {
    let mut v = Vec::new();
    if let Some(dir) =
        Path::new("/dev/shm").is_dir().then(|| tempfile::tempdir_in("/dev/shm").ok()).flatten()
    {
        v.push(Medium { name: "emulated-nvm", dir, persistence: PersistRequest::CacheLine });
    }
    let dir = tempfile::tempdir().expect("tempdir");
    v.push(Medium { name: "msync", dir, persistence: PersistRequest::Auto });
    v
}

pub fn opts(framing: Framing, persistence: PersistRequest) -> CreateOptions {
    CreateOptions { framing, persistence, ..CreateOptions::new(Uuid::from_u128(0x1234)) }
}

pub fn create(path: &Path, size: u64, framing: Framing, persistence: PersistRequest) -> Log {
    Log::create(path, size, &opts(framing, persistence)).expect("create")
}

pub fn open(path: &Path, persistence: PersistRequest) -> Result<Log> {
    let r = Log::open_with(path, &nvpage_wal::OpenOptions { persistence, ..Default::default() });
    if let Err(nvpage_wal::WalError::Storage(nvpage_storage::StorageError::AlreadyOpen {
        ..
    })) = &r
    {
        // Shown only if the test fails: who holds the lock, for a test that did not expect one.
        eprintln!("{}", lock_holders(path));
    }
    r
}

/// Opens `path` allowed to grow to `max_bytes`.
pub fn open_growing(path: &Path, persistence: PersistRequest, max_bytes: u64) -> Result<Log> {
    let opts =
        nvpage_wal::OpenOptions { persistence, max_bytes: Some(max_bytes), ..Default::default() };
    Log::open_with(path, &opts)
}

/// What holds `path`'s `flock`, for a failed open's report: the lines of `/proc/locks` for its
/// file (device and inode), this process's descriptors and mappings of it, and after how many
/// yields, if within a thousand, that lock line is gone (a holder that was closing at the time).
/// It only reads `/proc`: it takes no lock that could fail another opener. `/proc/locks` names
/// the process that took a lock, which a child sharing the description would not change.
pub fn lock_holders(path: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return format!("{}: no metadata", path.display());
    };
    let (major, minor) = (libc::major(meta.dev()), libc::minor(meta.dev()));
    // `/proc/locks` writes `MAJ:MIN:INODE`, `/proc/self/maps` `MAJ:MIN INODE` (hexadecimal
    // device numbers, two digits at least).
    let lock_key = format!(" {major:02x}:{minor:02x}:{} ", meta.ino());
    let map_key = format!(" {major:02x}:{minor:02x} {} ", meta.ino());
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let locks = || -> Vec<String> {
        read("/proc/locks").lines().filter(|l| l.contains(&lock_key)).map(String::from).collect()
    };
    let held = locks();
    let fds: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let m = std::fs::metadata(e.path()).ok()?;
            (m.dev() == meta.dev() && m.ino() == meta.ino())
                .then(|| e.file_name().to_string_lossy().into_owned())
        })
        .collect();
    let maps: Vec<String> = read("/proc/self/maps")
        .lines()
        .filter(|l| l.contains(&map_key))
        .map(String::from)
        .collect();
    let gone_after = (1..=1000).find(|_| {
        std::thread::yield_now();
        locks().is_empty()
    });
    format!(
        "lock held on {} (pid {}): /proc/locks {held:?}; our descriptors {fds:?}; our mappings \
         {maps:?}; the lock line gone after {gone_after:?} yields",
        path.display(),
        std::process::id(),
    )
}

/// Every record's payload, oldest first.
pub fn payloads(log: &Log) -> Vec<Vec<u8>> {
    log.records().expect("records").map(|r| r.expect("record").payload.to_vec()).collect()
}

/// A payload that names its index and is checkable byte by byte.
pub fn payload(i: u64, len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..len).map(|j| (i as usize * 31 + j * 7) as u8).collect();
    if len >= 8 {
        v[..8].copy_from_slice(&i.to_le_bytes());
    }
    v
}

/// Rewrites a log file's header (its first bytes) as format `version`, sealed by the crate's own
/// encoder: a file as another build would have written it, or one this build must refuse.
pub fn set_version(file: &mut [u8], version: u32) {
    use nvpage_wal::layout::{HEADER_LEN, LogHeader};
    let head: &mut [u8; HEADER_LEN] = (&mut file[..HEADER_LEN]).try_into().expect("a header");
    let header = LogHeader::decode(head).expect("a sound header to start from");
    *head = LogHeader { version, ..header }.encode();
}
