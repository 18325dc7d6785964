//! The seam between the buffer manager and the file: [`FileLayer`], its three implementations,
//! and the run-time [`Layer`] value that picks one.
//!
//! | layer            | read a page                              | write a page back                          |
//! |------------------|------------------------------------------|--------------------------------------------|
//! | [`Layer::Pread`] | `pread` into the frame                   | `pwrite` from the frame                    |
//! | [`Layer::Se1`]   | `memcpy` from the mapping into the frame | cache-line modes: copy into the mapping, persist the range; `msync` mode: `pwrite` |
//! | [`Layer::Se2`]   | no copy: a pointer into the mapping      | as SE1 (the frame is SE2's private copy)   |
//!
//! In the cache-line modes (NVM, or tmpfs emulating it) SE2 writes back with the same copy as SE1
//! rather than `pwrite`: both move the page through the CPU once, with ordinary stores and CLWB
//! (which may leave the lines cached for the page's next read), or streaming stores where the
//! flush is CLFLUSHOPT or CLFLUSH (`RawFile::store_persist_parts`). In `msync` mode (a disk's
//! file system) both write back with `pwrite`: a store through the mapping would make the file
//! system dirty (and the commit's `msync` write back) the page's whole folio, hundreds of KiB
//! with large folios (`mapped.rs`).

#[cfg(any(feature = "se1", feature = "se2"))]
mod mapped;
#[cfg(feature = "pread")]
mod pread;
#[cfg(feature = "se1")]
mod se1;
#[cfg(feature = "se2")]
mod se2;

use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::ptr::NonNull;
use std::str::FromStr;

use uuid::Uuid;

use crate::error::{Result, StorageError};
use crate::file::{DEFAULT_MAX_FILE_BYTES, FileOptions};
use crate::mapping::Advice;
use crate::page::{PageId, PageSize};
use crate::pagefile::PageFile;
use crate::persist::PersistRequest;

/// Which file layer to use. Chosen at run time among those compiled in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layer {
    /// `pread`/`pwrite` (the paper's baseline File Layer).
    Pread,
    /// `memcpy` between the mapping and frames (the paper's SE1, MemMapped Layer).
    Se1,
    /// Pointer redirection into the mapping, copy-on-write (the paper's SE2, PtrRedirection).
    Se2,
}

impl Layer {
    /// Every layer, compiled in or not.
    pub const ALL: [Layer; 3] = [Layer::Pread, Layer::Se1, Layer::Se2];

    /// The layer's name, as Cargo features, the command line and JSON spell it.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Pread => "pread",
            Layer::Se1 => "se1",
            Layer::Se2 => "se2",
        }
    }

    /// Whether this build includes the layer.
    pub const fn is_compiled(self) -> bool {
        match self {
            Layer::Pread => cfg!(feature = "pread"),
            Layer::Se1 => cfg!(feature = "se1"),
            Layer::Se2 => cfg!(feature = "se2"),
        }
    }

    /// The layers this build includes, in [`Layer::ALL`]'s order.
    pub fn compiled() -> Vec<Layer> {
        Self::ALL.into_iter().filter(|l| l.is_compiled()).collect()
    }

    /// The best layer compiled in, and the default: SE2, else SE1, else pread.
    ///
    /// A build of this crate with no layer (the log's, which needs none) answers pread, which
    /// [`OpenOptions`] then refuses with [`StorageError::LayerNotCompiled`]; the engine, `nvpage`,
    /// refuses to build without a layer, so there the answer is always compiled in.
    pub const fn best_compiled() -> Layer {
        if cfg!(feature = "se2") {
            Layer::Se2
        } else if cfg!(feature = "se1") {
            Layer::Se1
        } else {
            Layer::Pread
        }
    }

    /// Whether the layer maps the file.
    pub fn is_mapped(self) -> bool {
        !matches!(self, Layer::Pread)
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Layer {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Layer::ALL
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown layer '{s}': expected pread, se1 or se2"))
    }
}

/// The seam: how the buffer manager reads and writes pages of one file.
///
/// Every method checks its page id against the page count ([`StorageError::PageOutOfRange`]) and
/// its buffer against the page size ([`StorageError::BufferSize`]). Reads verify a page's checksum
/// and id the first time the page is read after open ([`StorageError::ChecksumMismatch`],
/// [`StorageError::WrongPageId`]). Once a persist fails, every write and persist returns
/// [`StorageError::Poisoned`] until the file is reopened.
pub trait FileLayer: Send + Sync + fmt::Debug {
    /// Which layer this is.
    fn layer(&self) -> Layer;

    /// What every layer shares: page size, page count, growth, durability.
    fn file(&self) -> &PageFile;

    /// Copies page `id` into `frame` (a whole page) and verifies it if this is its first read.
    fn read_page(&self, id: PageId, frame: &mut [u8]) -> Result<()>;

    /// Copies page `id`'s bytes as the file holds them into `buf` (a whole page), unverified:
    /// what a write-back's before-image is made of (a page being reinitialised may hold
    /// anything, and undo must restore exactly that). The mapped layers copy from the mapping
    /// under the page's stripe (no system call), pread reads with `pread`.
    fn read_raw(&self, id: PageId, buf: &mut [u8]) -> Result<()>;

    /// Runs `f` on page `id`'s bytes as the file holds them, unverified, as
    /// [`FileLayer::read_raw`] reads them: in place for the mapped layers (no copy: a write-back
    /// compares the page with its new bytes where it lies), read into `scratch` (resized to a
    /// page) for pread. The mapped layers hold the page's stripe shared while `f` runs: `f`
    /// must not store, through this layer, the page or any page `id ± 256·k`.
    fn with_raw(&self, id: PageId, scratch: &mut Vec<u8>, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        scratch.resize(self.file().page_size().bytes(), 0);
        self.read_raw(id, scratch)?;
        f(scratch);
        Ok(())
    }

    /// Seals `frame` (writes `id` and the checksum into its envelope) and stores it as page `id`.
    ///
    /// From the first byte stored, the page may reach the medium at any moment, whole or in part:
    /// whatever must be durable before that (the page's before-image) must be persisted before
    /// this is called. On return the page is durable in the cache-line modes; in the others it is
    /// durable once [`FileLayer::sync`] returns.
    fn write_page(&self, id: PageId, frame: &mut [u8]) -> Result<()>;

    /// Stores the byte ranges `lines` of `frame` — a whole page, sealed for `id` already
    /// ([`page::seal`](crate::page::seal)) — as page `id`. The caller vouches that every byte
    /// outside `lines` equals the file's already (the buffer pool's write-back hook compared
    /// them): the mapped layers in the cache-line modes store and flush only those lines, the
    /// layers that `pwrite` write the span from the first range to the end of the last. Ranges
    /// are ascending and inside the page ([`StorageError::BufferSize`] otherwise). Durable as
    /// [`FileLayer::write_page`] is.
    fn store_sealed(&self, id: PageId, frame: &[u8], lines: &[Range<usize>]) -> Result<()>;

    /// Stores `parts` — offsets into page `id` and their bytes — exactly as given, not resealed,
    /// and forgets that the page was verified: undo writes a before-image back as the log holds
    /// it (a page being reinitialised may have held anything), all of it or the lines a
    /// write-back changed. Parts must lie inside the page ([`StorageError::BufferSize`]).
    /// Durable as [`FileLayer::write_page`] is, together (one fence in the cache-line modes).
    fn restore_parts(&self, id: PageId, parts: &[(usize, &[u8])]) -> Result<()>;

    /// A pointer to page `id` in the mapping, verified on its first use, where the layer hands
    /// pages out in place (SE2); `Ok(None)` for the layers that copy.
    ///
    /// The pointer is valid for `page_size` bytes for as long as the layer lives. Reading through
    /// it is sound only while no [`FileLayer::write_page`] of the same page runs: the caller (the
    /// buffer manager) guarantees that with the page's latch. See `docs/mmap-soundness.md`.
    fn mapped_page(&self, id: PageId) -> Result<Option<NonNull<u8>>>;

    /// Where page `id` lies in the mapping, without verifying it: the layers that read in place
    /// (SE2) return it only for a page inside the file that they have verified already, taking
    /// no latch and reading nothing; `None` otherwise. When `Some`, it is the pointer
    /// [`FileLayer::mapped_page`] would return, under the same contract: the buffer manager
    /// reads through it only while it holds the page's latch shared (SE2's hit), and a prefetch
    /// hint may use it without any latch (a prefetch reads nothing).
    fn mapped_hint(&self, id: PageId) -> Option<NonNull<u8>> {
        let _ = id;
        None
    }

    /// Runs `f` on page `id`'s bytes in place where the layer can (SE2), holding the layer's own
    /// shared latch for the page so no write-back of it overlaps; copies into a scratch page for
    /// the other layers. Verifies the page on its first read.
    ///
    /// On SE2 that latch is one of 256 stripes (by page id modulo 256), which every store into a
    /// page of the stripe takes exclusively: `f` must not store, through this layer, the page or
    /// any page `id ± 256·k` — the store would wait for `f` for ever. (The buffer pool's
    /// `with_file_page` reads in place under its own page latch instead.)
    fn with_page(&self, id: PageId, f: &mut dyn FnMut(&[u8])) -> Result<()>;

    /// Makes every page written so far durable (`fdatasync`, or `msync` of the file; a fence in
    /// the cache-line modes, where [`FileLayer::write_page`] already persisted).
    fn sync(&self) -> Result<()>;

    /// Raises the page count to `new_count`, growing the file ahead where needed (see
    /// [`PageFile::grow`]).
    fn grow(&self, new_count: u64) -> Result<()> {
        self.file().grow(new_count)
    }

    /// Writes the header page (page 0) with the page count in memory. Like any page, it may be
    /// durable from the first byte stored: callers that undo-log page 0 log it first.
    fn write_header(&self) -> Result<()> {
        let f = self.file();
        let mut page = vec![0u8; f.page_size().bytes()];
        f.header().encode_into(&mut page);
        self.write_page(PageId::HEADER, &mut page)
    }

    /// Hints that pages `first..first + count` will be read soon, in order.
    fn will_need(&self, first: PageId, count: u64) {
        let f = self.file();
        let end = first.0.saturating_add(count).min(f.page_count());
        if end > first.0 {
            f.raw().advise(
                Advice::WillNeed,
                f.offset(first),
                f.offset(PageId(end)) - f.offset(first),
            );
        }
    }

    /// Hints that the whole file will be read sequentially (`MADV_SEQUENTIAL` over the whole
    /// mapping, or `POSIX_FADV_SEQUENTIAL`), or, with `false`, returns to the default.
    fn sequential(&self, on: bool) {
        let advice = if on { Advice::Sequential } else { Advice::Normal };
        self.file().raw().advise(advice, 0, 0);
    }
}

/// How to open or create a page file.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// The layer to use.
    pub layer: Layer,
    /// The page size for a new file (an existing file's is read from its header).
    pub page_size: PageSize,
    /// The largest size the file may reach while open: the mapped layers reserve this much
    /// address space. Default 256 GiB.
    pub max_bytes: u64,
    /// How to persist (see [`crate::persist`]).
    pub persistence: PersistRequest,
    /// Open read-only: every write is [`StorageError::ReadOnly`].
    pub read_only: bool,
    /// The identity for a new file; a fresh random UUID if `None`.
    pub uuid: Option<Uuid>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self {
            layer: Layer::best_compiled(),
            page_size: PageSize::default(),
            max_bytes: DEFAULT_MAX_FILE_BYTES,
            persistence: PersistRequest::Auto,
            read_only: false,
            uuid: None,
        }
    }
}

impl OpenOptions {
    /// Options for `layer`, everything else default.
    pub fn new(layer: Layer) -> Self {
        Self { layer, ..Self::default() }
    }

    fn file_options(&self) -> FileOptions {
        FileOptions {
            mapped: self.layer.is_mapped(),
            read_only: self.read_only,
            max_bytes: self.max_bytes,
            persistence: self.persistence,
        }
    }

    /// Creates a new page file (refusing an existing one) holding just its header page.
    pub fn create(&self, path: &Path) -> Result<Box<dyn FileLayer>> {
        let wrap = constructor(self.layer)?;
        let uuid = self.uuid.unwrap_or_else(Uuid::new_v4);
        let file = PageFile::create(path, &self.file_options(), self.page_size, uuid)?;
        Ok(wrap(file))
    }

    /// Opens an existing page file.
    pub fn open(&self, path: &Path) -> Result<Box<dyn FileLayer>> {
        let wrap = constructor(self.layer)?;
        let file = PageFile::open(path, &self.file_options())?;
        Ok(wrap(file))
    }
}

/// How to wrap a page file in `layer`, or [`StorageError::LayerNotCompiled`] where the build left
/// the layer out: asked before the file is touched, so a refused layer creates nothing.
fn constructor(layer: Layer) -> Result<fn(PageFile) -> Box<dyn FileLayer>> {
    match layer {
        #[cfg(feature = "pread")]
        Layer::Pread => Ok(|file| Box::new(pread::PreadLayer::new(file))),
        #[cfg(feature = "se1")]
        Layer::Se1 => Ok(|file| Box::new(se1::Se1Layer::new(file))),
        #[cfg(feature = "se2")]
        Layer::Se2 => Ok(|file| Box::new(se2::Se2Layer::new(file))),
        // Unreachable only in a build with all three layers.
        #[allow(unreachable_patterns)]
        _ => Err(StorageError::LayerNotCompiled(layer.name())),
    }
}

/// Fails unless `lines` ascend without overlap inside a page of `len` bytes (the first range out
/// of place is reported by its end).
#[cfg(any(feature = "pread", feature = "se1", feature = "se2"))]
fn check_lines(len: usize, lines: &[Range<usize>]) -> Result<()> {
    let mut floor = 0;
    for r in lines {
        if r.start < floor || r.start > r.end || r.end > len {
            return Err(StorageError::BufferSize { expected: len, found: r.end });
        }
        floor = r.end;
    }
    Ok(())
}

/// The parts of `frame` named by `lines` (ascending ranges inside it), for a layer that stores
/// each.
#[cfg(any(feature = "se1", feature = "se2"))]
fn line_parts<'a>(frame: &'a [u8], lines: &[Range<usize>]) -> Result<Vec<(usize, &'a [u8])>> {
    check_lines(frame.len(), lines)?;
    Ok(lines.iter().map(|r| (r.start, &frame[r.clone()])).collect())
}

/// The one part of `frame` from the start of the first of `lines` (ascending ranges inside it)
/// to the end of the last, for a layer that writes with one `pwrite`; `None` if `lines` is empty.
#[cfg(any(feature = "pread", feature = "se1", feature = "se2"))]
fn span_part<'a>(frame: &'a [u8], lines: &[Range<usize>]) -> Result<Option<(usize, &'a [u8])>> {
    check_lines(frame.len(), lines)?;
    Ok(lines
        .first()
        .zip(lines.last())
        .map(|(first, last)| (first.start, &frame[first.start..last.end])))
}
