//! Helpers the buffer crate's scenario tests share: files, pools, page patterns, a deadlock
//! watchdog.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;

use nvpage_buffer::{BufferPool, WriteBackHook};
use nvpage_storage::page::PAGE_HEADER_LEN;
use nvpage_storage::{FileLayer, Layer, OpenOptions, PersistRequest};

/// A fresh directory, on tmpfs where there is one (the tests check logic, not the medium, and
/// `fdatasync` on a disk would dominate their run time).
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(d) = tempfile::tempdir_in(shm)
    {
        return d;
    }
    tempfile::tempdir().unwrap()
}

/// The data file's path in `dir`.
pub fn data_path(dir: &Path) -> PathBuf {
    dir.join("data")
}

/// Options for `layer` with a 256 MiB reservation and the given persistence.
pub fn options(layer: Layer, persistence: PersistRequest) -> OpenOptions {
    OpenOptions { max_bytes: 256 << 20, persistence, ..OpenOptions::new(layer) }
}

/// Opens (or creates) the data file in `dir` with `opts`.
pub fn open_with(dir: &Path, opts: &OpenOptions, create: bool) -> Box<dyn FileLayer> {
    let path = data_path(dir);
    if create { opts.create(&path).unwrap() } else { opts.open(&path).unwrap() }
}

/// Opens (or creates) the data file in `dir` with `layer`, reserving 256 MiB.
pub fn open_layer(dir: &Path, layer: Layer, create: bool) -> Box<dyn FileLayer> {
    open_with(dir, &options(layer, PersistRequest::Auto), create)
}

/// A pool of `frames` over the data file in `dir`.
pub fn open_pool(
    dir: &Path,
    layer: Layer,
    create: bool,
    frames: usize,
    hook: Arc<dyn WriteBackHook>,
) -> BufferPool {
    BufferPool::new(open_layer(dir, layer, create), frames, hook).unwrap()
}

/// The payload of a page (everything after the envelope).
pub fn payload(page: &[u8]) -> &[u8] {
    &page[PAGE_HEADER_LEN..]
}

/// Fills a page's payload with `value` in every 8-byte word.
pub fn fill_words(page: &mut [u8], value: u64) {
    for w in page[PAGE_HEADER_LEN..].chunks_exact_mut(8) {
        w.copy_from_slice(&value.to_le_bytes());
    }
}

/// The value every 8-byte word of the payload holds, or a panic naming `what` if the page is torn.
pub fn uniform_word(page: &[u8], what: &str) -> u64 {
    let mut words =
        page[PAGE_HEADER_LEN..].chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().unwrap()));
    let first = words.next().unwrap();
    for (i, w) in words.enumerate() {
        assert_eq!(w, first, "{what}: torn page, word {} is {w:#x}, word 0 is {first:#x}", i + 1);
    }
    first
}

/// Aborts the test binary if `done` has not been signalled within `secs` seconds. Passing never
/// depends on this: it only turns a deadlock, which would hang the test run, into a failure.
///
/// Under Miri there is no watchdog: Miri itself reports a deadlock when no thread can go on (a
/// watchdog's timed wait would hide it), and its run times have nothing to do with seconds.
pub fn watchdog(what: &'static str, secs: u64) -> mpsc::Sender<()> {
    let (tx, rx) = mpsc::channel::<()>();
    if cfg!(miri) {
        return tx;
    }
    std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) =
            rx.recv_timeout(std::time::Duration::from_secs(secs))
        {
            eprintln!("{what}: no progress for {secs} s: deadlock");
            std::process::abort();
        }
    });
    tx
}
