//! What SE1 and SE2 share: page access through the file's mapping, under a striped latch that
//! keeps a write-back of a page from overlapping a copy or in-place read of the same page.
//!
//! The stripes make this module's safe API sound on its own. The buffer manager, which reads SE2
//! pages in place through raw pointers, keeps its own page latches for the same purpose.

use std::ops::Range;
use std::ptr::NonNull;

use parking_lot::RwLock;

use crate::error::Result;
use crate::page::{self, PageId};
use crate::pagefile::PageFile;

const STRIPES: usize = 256;

/// A page file reached through its mapping.
#[derive(Debug)]
pub(super) struct MappedPages {
    pub(super) file: PageFile,
    base: NonNull<u8>,
    stripes: Box<[RwLock<()>]>,
}

// SAFETY: `base` points into the mapping owned by `file`, which is Send + Sync; every access to
// the bytes below goes through a stripe latch (or, for raw pointers handed out, the caller's
// latch), so sharing the pointer across threads is sound.
unsafe impl Send for MappedPages {}
// SAFETY: as above.
unsafe impl Sync for MappedPages {}

impl MappedPages {
    pub(super) fn new(file: PageFile) -> Self {
        let base = file.raw().map_base().expect("mapped layers open the file mapped");
        Self {
            file,
            base,
            stripes: std::iter::repeat_with(|| RwLock::new(())).take(STRIPES).collect(),
        }
    }

    fn stripe(&self, id: PageId) -> &RwLock<()> {
        &self.stripes[(id.0 as usize) % STRIPES]
    }

    /// The address of page `id`, which must be below the page count.
    fn ptr(&self, id: PageId) -> NonNull<u8> {
        // SAFETY: `id` is below the page count, so the page lies below the file's length and
        // inside the reservation (growth keeps length <= reservation).
        unsafe { self.base.add(self.file.offset(id) as usize) }
    }

    /// Copies page `id` into `frame` and verifies it on its first read.
    pub(super) fn copy_out(&self, id: PageId, frame: &mut [u8]) -> Result<()> {
        self.file.read_checked(id, || {
            self.copy_raw(id, frame)?;
            Ok(frame)
        })?;
        Ok(())
    }

    /// Copies page `id` into `buf` as the mapping holds it, unverified.
    pub(super) fn copy_raw(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.file.check_buf(buf.len())?;
        self.raw_in_place(id, &mut |page| buf.copy_from_slice(page))
    }

    /// Runs `f` on page `id`'s bytes in the mapping, unverified, under the stripe's shared latch
    /// (what [`Self::copy_raw`] would copy).
    pub(super) fn raw_in_place(&self, id: PageId, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        self.file.check_id(id)?;
        let _shared = self.stripe(id).read();
        let len = self.file.page_size().bytes();
        // SAFETY: the page lies inside the mapped, allocated file (checked above); the shared
        // stripe latch keeps `put` of this page, the only writer through this type, out for the
        // slice's lifetime, which ends with this function. Writers outside this type (the buffer
        // manager's SE2 write-back) also go through `put`.
        let page = unsafe { std::slice::from_raw_parts(self.ptr(id).as_ptr(), len) };
        f(page);
        Ok(())
    }

    /// Seals `frame` and stores it as page `id` (into the mapping, persisted at once, in the
    /// cache-line modes; by `pwrite` in `msync` mode: see `put`).
    pub(super) fn store(&self, id: PageId, frame: &mut [u8]) -> Result<()> {
        self.check_store(id, frame.len())?;
        page::seal(frame, id);
        self.file.store_sealed_with(id, || self.put(id, &[(0, frame)]))
    }

    /// Stores the `lines` of `frame`, a page sealed for `id` already, as page `id`
    /// ([`FileLayer::store_sealed`](super::FileLayer::store_sealed)): only those lines in the
    /// cache-line modes (each stored and flushed, one fence for them all), the span from the
    /// first to the last with one `pwrite` in `msync` mode.
    pub(super) fn store_sealed(
        &self,
        id: PageId,
        frame: &[u8],
        lines: &[Range<usize>],
    ) -> Result<()> {
        self.check_store(id, frame.len())?;
        let parts = if self.file.raw().mode().uses_cache_lines() {
            super::line_parts(frame, lines)?
        } else {
            super::span_part(frame, lines)?.into_iter().collect()
        };
        self.file.store_sealed_with(id, || self.put(id, &parts))
    }

    /// Stores `parts` (offsets into page `id` and bytes) exactly as given (undo's before-image,
    /// not resealed), leaving the page unverified; persists at once in the cache-line modes.
    pub(super) fn restore(&self, id: PageId, parts: &[(usize, &[u8])]) -> Result<()> {
        self.file.check_id(id)?;
        self.file.check_parts(parts)?;
        self.file.raw().check_writable()?;
        self.file.restore_with(id, || self.put(id, parts))
    }

    fn check_store(&self, id: PageId, len: usize) -> Result<()> {
        self.file.check_id(id)?;
        self.file.check_buf(len)?;
        self.file.raw().check_writable()
    }

    /// Stores `parts` of page `id` (offsets inside the page, checked by the caller) under the
    /// page's stripe, exclusively: into the mapping with their lines persisted in the cache-line
    /// modes (one fence for them all), by `pwrite` in `msync` mode (why: below).
    fn put(&self, id: PageId, parts: &[(usize, &[u8])]) -> Result<()> {
        let raw = self.file.raw();
        let base = self.file.offset(id);
        let _exclusive = self.stripe(id).write();
        if raw.mode().uses_cache_lines() {
            // SAFETY: the file is mapped; the page lies below its length (`check_id`) and every
            // part inside the page (checked by the caller); the exclusive stripe latch keeps
            // every other access to this page through this type out, and the buffer manager,
            // the only holder of pointers from `pointer`, calls this only under its own
            // exclusive page latch.
            unsafe { raw.store_persist_parts(base, parts) }
        } else {
            // `msync` mode (a file on a disk's file system): `pwrite`, not a store through the
            // mapping. A store into a clean page of a shared file mapping faults, and the file
            // system's `page_mkwrite` marks the whole folio dirty — with large folios in the page
            // cache (ext4 on Linux 6.x), up to hundreds of KiB for one 8 KiB page — and the
            // commit's `msync` writes all of it back. A `pwrite` dirties only the blocks it
            // writes, and shows through the mapping like the store would (one page cache).
            // Measured: 100-update commits over 1 M rows ran 5x slower than pread's before this.
            for &(off, bytes) in parts {
                // SAFETY: as above: no reference into the mapping overlaps the page during the
                // call (the stripe keeps this type's readers out, the buffer manager's page latch
                // its own); `bytes` is the caller's buffer, not the mapping.
                unsafe { raw.write_at_mapped(bytes, base + off as u64) }?;
            }
            Ok(())
        }
    }

    /// The page's address, after verifying the page on its first use.
    #[cfg(feature = "se2")]
    pub(super) fn pointer(&self, id: PageId) -> Result<NonNull<u8>> {
        self.file.check_id(id)?;
        // The hot path of SE2: a page verified once is handed out without taking a latch (the
        // caller's own latch covers its use of the pointer).
        if !self.file.is_verified(id) {
            self.in_place(id, &mut |_| {})?;
        }
        Ok(self.ptr(id))
    }

    /// The page's address if it is inside the file and verified already — the checks and the
    /// address of [`Self::pointer`], less its first-use verification (no latch, no read): for
    /// `FileLayer::mapped_hint`, whose callers read through it only under the page's latch.
    #[cfg(feature = "se2")]
    pub(super) fn hint(&self, id: PageId) -> Option<NonNull<u8>> {
        (self.file.check_id(id).is_ok() && self.file.is_verified(id)).then(|| self.ptr(id))
    }

    /// Runs `f` on the page's bytes in the mapping under the stripe's shared latch.
    #[cfg(feature = "se2")]
    pub(super) fn in_place(&self, id: PageId, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        let mut checked = Ok(());
        // Read in place: the check reads the bytes after the page's stamp is taken.
        self.raw_in_place(id, &mut |page| {
            checked = self.file.read_checked(id, || Ok(page)).map(&mut *f);
        })?;
        checked
    }

    pub(super) fn sync(&self) -> Result<()> {
        self.file.raw().sync()
    }
}
