//! Helpers shared by the storage integration tests: the two media every scenario runs on, options
//! for each layer, and page contents derived from a seed.

// Each test binary uses its own subset of these helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use nvpage_storage::page::{self, PAGE_HEADER_LEN};
use nvpage_storage::{FileLayer, Layer, OpenOptions, PageId, PageSize, Result, StorageError};
use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};
use tempfile::TempDir;

/// The page sizes a file may be created with.
pub const PAGE_SIZES: [usize; 5] = [4096, 8192, 16384, 32768, 65536];

/// A directory on one medium.
#[derive(Debug)]
pub struct Medium {
    /// `"disk"` or `"shm"`, for failure messages.
    pub name: &'static str,
    /// The directory, removed on drop.
    pub dir: TempDir,
}

impl Medium {
    /// A file name inside the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Whether the medium is memory (tmpfs).
    pub fn is_memory(&self) -> bool {
        self.name == "shm"
    }
}

/// A fresh directory on disk (the default temp dir).
pub fn disk() -> Medium {
    Medium { name: "disk", dir: tempfile::tempdir().expect("temp dir on disk") }
}

/// A fresh directory on `/dev/shm` (tmpfs), or `None` (with a note) where it does not exist.
pub fn shm() -> Option<Medium> {
    if !Path::new("/dev/shm").is_dir() {
        eprintln!("/dev/shm does not exist here: skipping the tmpfs medium");
        return None;
    }
    Some(Medium {
        name: "shm",
        dir: tempfile::tempdir_in("/dev/shm").expect("temp dir in /dev/shm"),
    })
}

/// [`shm`], where this CPU also has a cache-line flush (the cache-line path's tests need both);
/// `None`, with a note, otherwise.
pub fn shm_with_flush() -> Option<Medium> {
    if nvpage_storage::persist::FlushInstr::detect().is_none() {
        eprintln!("no cache-line flush on this CPU: nothing to test");
        return None;
    }
    shm()
}

/// One fresh directory per available medium: disk, then tmpfs where it exists.
pub fn media() -> Vec<Medium> {
    std::iter::once(disk()).chain(shm()).collect()
}

/// Options for `layer` with pages of `page_size` bytes.
pub fn opts(layer: Layer, page_size: usize) -> OpenOptions {
    OpenOptions {
        page_size: PageSize::new(page_size as u64).expect("valid page size"),
        ..OpenOptions::new(layer)
    }
}

/// A whole page frame whose payload (bytes `PAGE_HEADER_LEN..`) is derived from `seed`; the
/// envelope bytes are left zero for `write_page` to seal.
pub fn frame(page_size: usize, seed: u64) -> Vec<u8> {
    let mut f = vec![0u8; page_size];
    StdRng::seed_from_u64(seed).fill_bytes(&mut f[PAGE_HEADER_LEN..]);
    f
}

/// The bytes page `id` holds once `frame` has been written as it.
pub fn sealed(frame: &[u8], id: PageId) -> Vec<u8> {
    let mut f = frame.to_vec();
    page::seal(&mut f, id);
    f
}

/// Reads page `id` into a fresh frame.
pub fn read(layer: &dyn FileLayer, id: PageId) -> Result<Vec<u8>> {
    let mut f = vec![0u8; layer.file().page_size().bytes()];
    layer.read_page(id, &mut f)?;
    Ok(f)
}

/// Reads page `id` through `with_page` (in place for SE2).
pub fn read_in_place(layer: &dyn FileLayer, id: PageId) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    layer.with_page(id, &mut |b| out = b.to_vec())?;
    Ok(out)
}

/// Grows `layer` to `count` pages, writes pages `1..count` from `frame(ps, seed + id)`, writes
/// the header back and syncs: everything is durable on return. Returns the sealed pages, indexed
/// by page id (index 0 is unused).
pub fn fill(layer: &dyn FileLayer, count: u64, seed: u64) -> Vec<Vec<u8>> {
    let ps = layer.file().page_size().bytes();
    layer.grow(count).expect("grow");
    let mut pages = vec![Vec::new()];
    for id in 1..count {
        let mut f = frame(ps, seed + id);
        layer.write_page(PageId(id), &mut f).expect("write_page");
        pages.push(f);
    }
    layer.write_header().expect("write_header");
    layer.sync().expect("sync");
    pages
}

/// Reads page `id` every way `l` offers (`read_page`, `with_page`, and SE2's `mapped_page`),
/// expecting each to refuse it with `ChecksumMismatch` naming it; returns what went otherwise.
pub fn reads_not_refused(l: &dyn FileLayer, id: PageId) -> Vec<String> {
    let mut reads = vec![("read_page", read(l, id)), ("with_page", read_in_place(l, id))];
    if l.layer() == Layer::Se2 {
        // A pointer: no bytes to show.
        reads.push(("mapped_page", l.mapped_page(id).map(|_| Vec::new())));
    }
    reads
        .into_iter()
        .filter_map(|(how, r)| match r {
            Err(StorageError::ChecksumMismatch { page, .. }) if page == id => None,
            Err(e) => Some(format!("{how} of page {id}: {e}")),
            Ok(b) => Some(format!(
                "{how} handed out page {id} unchecked (payload starts {:02x?})",
                b.get(PAGE_HEADER_LEN..PAGE_HEADER_LEN + 4).unwrap_or_default()
            )),
        })
        .collect()
}
