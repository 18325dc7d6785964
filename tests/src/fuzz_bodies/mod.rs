//! The bodies of the fuzz targets: one `pub fn <target>(data: &[u8])` per target in `fuzz/`.
//!
//! Each body panics only when a property fails (a decoder panicked, an `Ok` that should have
//! been an error, a wrong answer); every typed error is an acceptable outcome for hostile bytes.
//! Checksums cannot be found by mutation, so where the target is about what lies behind a
//! checksum the input's first byte can ask the body to repair it (noted per target).

mod api_countdown;
mod clustered;
mod db_open;
mod index;
mod log;
mod page;
mod row;

use std::path::{Path, PathBuf};

pub use api_countdown::api_countdown;
pub use clustered::clustered_leaf;
pub use clustered::schemas as clustered_schemas;
pub use db_open::db_open;
pub use db_open::{builder as db_open_builder, with_data_file};
pub use index::index_page;
pub use log::{log_decode, log_records, log_recovery, log_scan};
pub use page::page_decode;
pub use row::row_decode;
pub use row::schemas as row_schemas;

/// The names of the targets, as the directories of `fuzz/corpus/` and the binaries of `fuzz/`.
pub const TARGETS: [&str; 10] = [
    "log_records",
    "log_decode",
    "log_recovery",
    "log_scan",
    "page_decode",
    "row_decode",
    "db_open",
    "api_countdown",
    "index_page",
    "clustered_leaf",
];

/// Runs the body of target `name` on `data`.
pub fn run(name: &str, data: &[u8]) {
    match name {
        "log_records" => log_records(data),
        "log_decode" => log_decode(data),
        "log_recovery" => log_recovery(data),
        "log_scan" => log_scan(data),
        "page_decode" => page_decode(data),
        "row_decode" => row_decode(data),
        "db_open" => db_open(data),
        "api_countdown" => api_countdown(data),
        "index_page" => index_page(data),
        "clustered_leaf" => clustered_leaf(data),
        other => panic!("no fuzz target named {other}"),
    }
}

/// A directory for one thread's scratch files (tests replay corpora on several threads of one
/// process): on tmpfs when there is one (fast, and the persists are cheap), else the system's
/// temporary directory. Files are removed after use; the directory, empty then, is removed when
/// its thread exits (a thread-local's destructor: a process's main thread may skip it, so a
/// fuzzer's run can leave one empty directory behind).
pub(crate) fn scratch_dir() -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    /// The thread's directory; removed when the thread exits, if empty.
    struct Dir(PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    // Made once per thread: a fuzzer calls this for every input, and a `mkdir -p` per call
    // (two system calls) cost it a measurable share of its executions.
    thread_local!(static DIR: Dir = {
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        Dir(base.join(format!("nvpage-fuzz-{}-{id}", std::process::id())))
    });
    let dir = DIR.with(|d| d.0.clone());
    if !dir.is_dir() {
        std::fs::create_dir_all(&dir).expect("create the scratch directory");
    }
    dir
}

/// A fresh scratch directory, removed when dropped; on tmpfs when there is one.
pub fn scratch_tempdir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if let Some(d) = shm.is_dir().then(|| tempfile::tempdir_in(shm).ok()).flatten() {
        return d;
    }
    tempfile::tempdir().expect("create a temporary directory")
}

/// A little-endian reader over fuzz input that yields zeros once the input runs out, so every
/// input decodes to some parameters.
pub(crate) struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    pub(crate) fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    pub(crate) fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        for b in &mut out {
            *b = self.u8();
        }
        out
    }

    pub(crate) fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.bytes())
    }

    pub(crate) fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.bytes())
    }

    pub(crate) fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.bytes())
    }

    /// Whatever is left.
    pub(crate) fn rest(self) -> &'a [u8] {
        self.data
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}
