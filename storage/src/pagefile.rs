//! [`PageFile`]: what every layer shares — the locked file, its header, the page count, growth,
//! and the set of verified pages.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use uuid::Uuid;

use crate::error::{Result, StorageError};
use crate::file::{FileOptions, RawFile};
use crate::header::FileHeader;
use crate::page::{self, MIN_PAGE_SIZE, PageId, PageSize};
use crate::persist::Durability;
#[cfg(any(feature = "pread", feature = "se1", feature = "se2"))]
use crate::sim_tag::PausePoint;
use crate::verified::VerifiedPages;

/// Growth allocates at least this many bytes ahead, so that a file growing page by page does not
/// pay a `fallocate` and an `fsync` per page.
const GROWTH_MIN_BYTES: u64 = 1 << 20;

/// A page file: header page plus data pages, locked for this handle.
#[derive(Debug)]
pub struct PageFile {
    raw: RawFile,
    page_size: PageSize,
    uuid: Uuid,
    page_count: AtomicU64,
    verified: VerifiedPages,
}

impl PageFile {
    /// Creates a file holding only its header page (page count 1), durable on return.
    pub(crate) fn create(
        path: &Path,
        opts: &FileOptions,
        page_size: PageSize,
        uuid: Uuid,
    ) -> Result<Self> {
        let raw = RawFile::create(path, opts)?;
        let header = FileHeader { page_size, page_count: 1, uuid };
        let mut page = vec![0u8; page_size.bytes()];
        header.encode_into(&mut page);
        let written = raw
            .grow_to(page_size.bytes() as u64)
            // SAFETY: the file was created just now and nothing has been handed out of it yet:
            // no reference into its mapping exists.
            .and_then(|()| unsafe { raw.write_at_mapped(&page, 0) })
            .and_then(|()| raw.sync());
        if let Err(e) = written {
            // A half-made file would block a retry (`AlreadyExists`) and fail to open: remove it.
            drop(raw);
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        let f = Self::assemble(raw, header);
        f.header_checked();
        Ok(f)
    }

    /// Opens an existing file: reads and checks the header page with `pread` (before any byte of
    /// the mapping is touched), and checks the file is as long as the header says.
    pub(crate) fn open(path: &Path, opts: &FileOptions) -> Result<Self> {
        let raw = RawFile::open(path, opts)?;
        let len = raw.len_bytes();
        let mut prefix = vec![0u8; (MIN_PAGE_SIZE as u64).min(len) as usize];
        raw.read_at(&mut prefix, 0)?;
        let header = FileHeader::decode_prefix(path, &prefix)?;
        let ps = header.page_size.bytes() as u64;
        let mut page0 = vec![0u8; ps.min(len) as usize];
        raw.read_at(&mut page0, 0)?;
        let need = header.page_count.saturating_mul(ps);
        if (len as u128) < need as u128 {
            return Err(StorageError::Truncated {
                path: path.into(),
                expected_bytes: need,
                found_bytes: len,
            });
        }
        page::verify(&page0, PageId::HEADER, path).map_err(|e| StorageError::CorruptHeader {
            path: path.into(),
            reason: match e {
                StorageError::ChecksumMismatch { expected, found, .. } => format!(
                    "the header page fails its checksum: stored {expected:#010x}, computed \
                     {found:#010x}"
                ),
                StorageError::WrongPageId { found, .. } => {
                    format!("the header page holds the id of page {found}")
                }
                e => e.to_string(),
            },
        })?;
        let f = Self::assemble(raw, header);
        f.header_checked();
        Ok(f)
    }

    /// Records the header page verified: it was just written sealed, or read and checked, and
    /// nothing else has the file yet.
    fn header_checked(&self) {
        let before = self.verified.stamp(PageId::HEADER.0);
        self.verified.insert_if_unchanged(PageId::HEADER.0, before);
    }

    fn assemble(raw: RawFile, header: FileHeader) -> Self {
        let max_pages = raw.max_bytes() / header.page_size.bytes() as u64;
        Self {
            verified: VerifiedPages::new(max_pages),
            page_size: header.page_size,
            uuid: header.uuid,
            page_count: AtomicU64::new(header.page_count),
            raw,
        }
    }

    /// The underlying file.
    pub fn raw(&self) -> &RawFile {
        &self.raw
    }

    /// The page size chosen at creation.
    pub fn page_size(&self) -> PageSize {
        self.page_size
    }

    /// The database's identity, from the header.
    pub fn uuid(&self) -> Uuid {
        self.uuid
    }

    /// Pages below which ids are valid (the header page included).
    #[inline]
    pub fn page_count(&self) -> u64 {
        self.page_count.load(Ordering::Acquire)
    }

    /// The persistence mode and medium.
    pub fn durability(&self) -> Durability {
        self.raw.durability()
    }

    /// The header as it stands in memory (the page count may be ahead of the file's header page
    /// until [`crate::FileLayer::write_header`] writes it back).
    pub fn header(&self) -> FileHeader {
        FileHeader { page_size: self.page_size, page_count: self.page_count(), uuid: self.uuid }
    }

    /// Fails unless `id` is below the page count.
    #[inline]
    pub fn check_id(&self, id: PageId) -> Result<()> {
        let page_count = self.page_count();
        if id.0 >= page_count {
            return Err(StorageError::PageOutOfRange { page: id, page_count });
        }
        Ok(())
    }

    /// Fails unless `buf` is exactly one page.
    pub fn check_buf(&self, len: usize) -> Result<()> {
        if len != self.page_size.bytes() {
            return Err(StorageError::BufferSize { expected: self.page_size.bytes(), found: len });
        }
        Ok(())
    }

    /// Fails unless every part (an offset into a page and its bytes) lies inside one page.
    pub fn check_parts(&self, parts: &[(usize, &[u8])]) -> Result<()> {
        let page = self.page_size.bytes();
        match parts.iter().find(|(off, b)| off.checked_add(b.len()).is_none_or(|end| end > page)) {
            Some(&(off, b)) => {
                Err(StorageError::BufferSize { expected: page, found: off.saturating_add(b.len()) })
            }
            None => Ok(()),
        }
    }

    /// The byte offset of page `id`.
    pub fn offset(&self, id: PageId) -> u64 {
        id.offset(self.page_size)
    }

    /// Reads page `id` with `read` and, unless the page is verified, checks the bytes it read;
    /// returns them. The page is recorded verified only if no store into it began or ended
    /// from before `read` ran until the check is recorded (`verified.rs`): the mark vouches for
    /// the bytes the file holds, not for a copy of bytes a store has since replaced. A page
    /// verified when `read` began is checked anyway if a store into it began meanwhile.
    #[cfg(any(feature = "pread", feature = "se1", feature = "se2"))]
    pub(crate) fn read_checked<'b>(
        &self,
        id: PageId,
        read: impl FnOnce() -> Result<&'b [u8]>,
    ) -> Result<&'b [u8]> {
        let before = self.verified.stamp(id.0);
        let bytes = read()?;
        if before.is_verified() && self.verified.stamp(id.0) == before {
            return Ok(bytes);
        }
        self.raw.sim_pause(PausePoint::BeforeCheck, id.0);
        page::verify(bytes, id, self.raw.path())?;
        self.verified.insert_if_unchanged(id.0, before);
        Ok(bytes)
    }

    /// Whether page `id`'s bytes in the file have been checked since open, or stored sealed
    /// through the layer, with no store into the page since (`verified.rs`): its checksum is its
    /// bytes' (or it is all zeros, which verifies without one), unless something outside this
    /// handle changed the file.
    #[inline]
    pub fn is_verified(&self, id: PageId) -> bool {
        self.verified.contains(id.0)
    }

    /// Runs `put`, which stores a page sealed for `id` (whole, or lines of it whose other bytes
    /// equal the file's), and records the outcome: the page is verified afterwards only if `put`
    /// succeeded and no other store into the page overlapped it (a failed store may leave part
    /// of the page stored, whose checksum then no longer vouches for its bytes).
    #[cfg(any(feature = "pread", feature = "se1", feature = "se2"))]
    pub(crate) fn store_sealed_with(
        &self,
        id: PageId,
        put: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        self.store_with(id, true, put)
    }

    /// Runs `put`, which stores bytes into page `id` exactly as given (undo's before-image, not
    /// resealed): the page is unverified from before the first byte is stored, and stays so.
    #[cfg(any(feature = "pread", feature = "se1", feature = "se2"))]
    pub(crate) fn restore_with(&self, id: PageId, put: impl FnOnce() -> Result<()>) -> Result<()> {
        self.store_with(id, false, put)
    }

    #[cfg(any(feature = "pread", feature = "se1", feature = "se2"))]
    fn store_with(&self, id: PageId, sealed: bool, put: impl FnOnce() -> Result<()>) -> Result<()> {
        let begun = self.verified.begin_store(id.0);
        let r = put();
        self.raw.sim_pause(PausePoint::BeforeRecord, id.0);
        self.verified.end_store(id.0, begun, sealed && r.is_ok());
        r
    }

    /// Forgets that page `id` was verified: its bytes were replaced outside the layer (by abort
    /// or recovery) and are checked again when next read. A read that copied the page before
    /// this call does not mark it verified after it.
    pub fn forget_verified(&self, id: PageId) {
        self.verified.remove(id.0);
    }

    /// Raises the page count to `new_count`, allocating (and `fsync`ing) the file ahead where it
    /// is too short. The new pages read as zeros or as whatever an earlier, rolled-back growth left
    /// there: callers write a page before they read it. The header page on disk keeps the old
    /// count until it is written back.
    pub fn grow(&self, new_count: u64) -> Result<()> {
        self.raw.check_writable()?;
        let ps = self.page_size.bytes() as u64;
        let need = new_count.checked_mul(ps).ok_or(StorageError::FileTooLarge {
            requested_bytes: u64::MAX,
            max_bytes: self.raw.max_bytes(),
        })?;
        let have = self.raw.len_bytes();
        if need > have {
            if need > self.raw.max_bytes() {
                return Err(StorageError::FileTooLarge {
                    requested_bytes: need,
                    max_bytes: self.raw.max_bytes(),
                });
            }
            let ahead = (have / 8).max(GROWTH_MIN_BYTES);
            let target = need.max(have + ahead).div_ceil(ps) * ps;
            self.raw.grow_to(target.min(self.raw.max_bytes() / ps * ps))?;
        }
        self.page_count.fetch_max(new_count, Ordering::AcqRel);
        Ok(())
    }

    /// Sets the in-memory page count, for abort and recovery when they restore the header page
    /// (the count may go down; the file never shrinks while open).
    pub fn set_page_count(&self, count: u64) -> Result<()> {
        let ps = self.page_size.bytes() as u64;
        if count == 0 || count.saturating_mul(ps) > self.raw.len_bytes() {
            return Err(StorageError::Truncated {
                path: self.raw.path().into(),
                expected_bytes: count.saturating_mul(ps),
                found_bytes: self.raw.len_bytes(),
            });
        }
        self.page_count.store(count, Ordering::Release);
        Ok(())
    }
}
