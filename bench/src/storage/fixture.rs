//! Page files to measure: built once per medium with the public API (create, grow, write every
//! page, write the header, sync), then opened by each layer in turn. The on-disk format does not
//! depend on the layer, so one file serves all three.

use std::path::{Path, PathBuf};

use nvpage_storage::{Layer, OpenOptions, PageId, PageSize, PersistRequest};
use tempfile::TempDir;

use super::args::MediumKind;
use crate::BoxError;
use crate::dirs::check_medium;
use crate::memory::sum_words;

/// A directory of test files on one medium, removed when dropped.
#[derive(Debug)]
pub struct Scratch {
    /// Which medium it is.
    pub kind: MediumKind,
    dir: TempDir,
}

impl Scratch {
    /// Creates a scratch directory inside `parent` and checks, with a probe page file, that it
    /// lies on the medium asked for: a disk directory must not be memory, a tmpfs one must be.
    pub fn new(kind: MediumKind, parent: &Path) -> Result<Self, BoxError> {
        let flag = format!("--dir-{}", kind.name());
        check_medium(parent, kind == MediumKind::Tmpfs, &flag)?;
        let dir = tempfile::Builder::new().prefix("nvpage-bench-").tempdir_in(parent)?;
        Ok(Self { kind, dir })
    }

    /// A path inside the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// How each layer is opened on this medium: the mapped layers on tmpfs use the cache-line
    /// path (emulated NVM); everything else gets the default (`msync`, or `fdatasync` for pread).
    pub fn options(&self, layer: Layer) -> OpenOptions {
        let mut o = OpenOptions::new(layer);
        if self.kind == MediumKind::Tmpfs && layer.is_mapped() {
            o.persistence = PersistRequest::CacheLine;
        }
        o
    }
}

/// The layer used to build files: pread where compiled (plain writes, no mapping to fault in).
fn first_layer() -> Layer {
    Layer::compiled()[0]
}

/// Fills a page's payload with a pattern that differs per page (the envelope is sealed on write).
pub fn fill_page(frame: &mut [u8], id: u64) {
    for (k, w) in frame.chunks_exact_mut(8).enumerate() {
        w.copy_from_slice(&((id << 24) ^ k as u64).to_le_bytes());
    }
}

/// Creates `path` holding `bytes / page_size` pages (header included), every data page written,
/// the header written, all of it synced. Returns the page count and the sum of every data page's
/// words ([`sum_words`]), which every layer's pass over the file must reproduce.
pub fn build(path: &Path, bytes: u64, page_size: PageSize) -> Result<(u64, u64), BoxError> {
    let pages = bytes / page_size.bytes() as u64;
    let mut opts = OpenOptions::new(first_layer());
    opts.page_size = page_size;
    let f = opts.create(path)?;
    f.grow(pages)?;
    let mut frame = vec![0u8; page_size.bytes()];
    let mut sum = 0u64;
    for id in 1..pages {
        fill_page(&mut frame, id);
        f.write_page(PageId(id), &mut frame)?;
        // `write_page` sealed the frame in place: it now holds the page's bytes as stored.
        sum = sum.wrapping_add(sum_words(&frame));
    }
    f.write_header()?;
    f.sync()?;
    Ok((pages, sum))
}
