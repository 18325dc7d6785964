//! Page ids, page sizes, and the page envelope: every page carries its id and a CRC32C.
//!
//! ```text
//! byte 0        4        8                16                          page_size
//!      +--------+--------+----------------+---------------------------+
//!      | crc32c | format | page id (u64)  | payload (owned by callers) |
//!      +--------+--------+----------------+---------------------------+
//! ```
//!
//! The checksum covers bytes `4..page_size` (so it covers the id). All integers are little-endian.
//! A page whose every byte is zero is the state growth leaves behind and verifies as an unwritten
//! page; any other page must carry a matching checksum and its own id. Higher layers recognise an
//! unwritten page by its zero payload (a heap page, for one, has a nonzero type byte).

use std::fmt;

use crate::error::{Result, StorageError};

/// Offset of the page's CRC32C.
pub const CHECKSUM_OFFSET: usize = 0;
/// Offset of the page format word (the envelope's version; 1 today).
pub const FORMAT_OFFSET: usize = CHECKSUM_OFFSET + size_of::<u32>();
/// Offset of the page's own id.
pub const PAGE_ID_OFFSET: usize = FORMAT_OFFSET + size_of::<u32>();
/// Bytes at the start of every page reserved for the envelope; payload starts here.
pub const PAGE_HEADER_LEN: usize = PAGE_ID_OFFSET + size_of::<u64>();
/// The envelope format written into every sealed page.
pub const PAGE_FORMAT: u32 = 1;

/// The smallest page size.
pub const MIN_PAGE_SIZE: usize = 4096;
/// The largest page size.
pub const MAX_PAGE_SIZE: usize = 65536;
/// The page size used when none is chosen.
pub const DEFAULT_PAGE_SIZE: usize = 8192;

const _: () = assert!(PAGE_HEADER_LEN == 16);
const _: () = assert!(MIN_PAGE_SIZE.is_power_of_two() && MAX_PAGE_SIZE.is_power_of_two());
const _: () = assert!(DEFAULT_PAGE_SIZE >= MIN_PAGE_SIZE && DEFAULT_PAGE_SIZE <= MAX_PAGE_SIZE);
// Pages are whole cache lines and whole OS pages, so flushes and msync never straddle two pages.
const _: () = assert!(MIN_PAGE_SIZE.is_multiple_of(4096));

/// A page's number in its file; page 0 is the header page.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PageId(pub u64);

impl PageId {
    /// The header page.
    pub const HEADER: PageId = PageId(0);

    /// The page's byte offset in a file of pages of `page_size` bytes.
    pub fn offset(self, page_size: PageSize) -> u64 {
        self.0 * page_size.bytes() as u64
    }
}

impl fmt::Debug for PageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PageId({})", self.0)
    }
}

impl fmt::Display for PageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A validated page size: a power of two from 4 KiB to 64 KiB.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PageSize(u32);

impl PageSize {
    /// Validates a page size.
    pub fn new(bytes: u64) -> Result<Self> {
        let ok = bytes.is_power_of_two()
            && bytes >= MIN_PAGE_SIZE as u64
            && bytes <= MAX_PAGE_SIZE as u64;
        if ok { Ok(Self(bytes as u32)) } else { Err(StorageError::InvalidPageSize(bytes)) }
    }

    /// The size in bytes.
    pub fn bytes(self) -> usize {
        self.0 as usize
    }

    /// The size as the `u32` stored in the header.
    pub fn as_u32(self) -> u32 {
        self.0
    }
}

impl Default for PageSize {
    fn default() -> Self {
        Self(DEFAULT_PAGE_SIZE as u32)
    }
}

fn read_u32(page: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&page[at..at + 4]);
    u32::from_le_bytes(b)
}

fn read_u64(page: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&page[at..at + 8]);
    u64::from_le_bytes(b)
}

/// The checksum a page's bytes should carry.
pub fn compute_checksum(page: &[u8]) -> u32 {
    crc32c::crc32c(&page[FORMAT_OFFSET..])
}

/// Writes the envelope (format, id, checksum) into `page`, which must be a whole page.
pub fn seal(page: &mut [u8], id: PageId) {
    set_envelope(page, id);
    let crc = compute_checksum(page);
    set_checksum(page, crc);
}

/// Writes the envelope's format and id into `page`: [`seal`] without the checksum, for a caller
/// that computes it with [`checksum_from`] and stores it with [`set_checksum`].
pub fn set_envelope(page: &mut [u8], id: PageId) {
    page[FORMAT_OFFSET..PAGE_ID_OFFSET].copy_from_slice(&PAGE_FORMAT.to_le_bytes());
    page[PAGE_ID_OFFSET..PAGE_HEADER_LEN].copy_from_slice(&id.0.to_le_bytes());
}

/// Stores `crc` as `page`'s checksum.
pub fn set_checksum(page: &mut [u8], crc: u32) {
    page[CHECKSUM_OFFSET..FORMAT_OFFSET].copy_from_slice(&crc.to_le_bytes());
}

/// The checksum `new` should carry, computed from the one `old` carries and the bytes of the
/// `changed` ranges only, not a pass over the page (CRC32C is linear: `crate::crc`). A commit
/// that changes a few lines of an 8 KiB page checksums a few hundred bytes.
///
/// The caller vouches for two things:
/// - `old`'s stored checksum is the checksum of `old`'s bytes: the page was verified since it
///   was last replaced, or written sealed ([`PageFile::is_verified`](crate::PageFile)). An
///   all-zero page verifies without one, and is recognised here: `None` when `old`'s stored
///   checksum is zero, and the caller computes the checksum whole ([`compute_checksum`]).
/// - every byte from [`FORMAT_OFFSET`] on in which `new` differs from `old` lies in `changed`
///   (ranges inside the page, ascending and disjoint — a difference counted twice would cancel
///   out; they may cover equal bytes too). The envelope's fields count: write them first
///   ([`set_envelope`]).
///
/// A wrong answer would make a committed page unreadable, so debug builds check it against
/// [`compute_checksum`] — where `old`'s checksum is its bytes' (a page damaged after it was
/// verified keeps its mismatch, by design: see `docs/design.md`).
///
/// # Panics
/// If the pages differ in length or a range passes their end (a caller's bug).
pub fn checksum_from(old: &[u8], new: &[u8], changed: &[std::ops::Range<usize>]) -> Option<u32> {
    assert_eq!(old.len(), new.len(), "two pages of one size");
    let stored = read_u32(old, CHECKSUM_OFFSET);
    if stored == 0 {
        return None;
    }
    let len = new.len();
    debug_assert!(changed.windows(2).all(|w| w[0].end <= w[1].start), "disjoint, ascending");
    let crc = changed.iter().fold(stored, |crc, r| {
        let start = r.start.max(FORMAT_OFFSET);
        if start >= r.end {
            return crc;
        }
        let delta = crate::crc::register_of_difference(&old[start..r.end], &new[start..r.end]);
        crc ^ crate::crc::shift(delta, len - r.end)
    });
    debug_assert!(
        stored != compute_checksum(old) || crc == compute_checksum(new),
        "an updated checksum equals the whole page's"
    );
    Some(crc)
}

/// Checks a page read from the file `path` at `id`: a matching checksum and its own id, or all
/// zeros. `path` only names the file in the error.
pub fn verify(page: &[u8], id: PageId, path: &std::path::Path) -> Result<()> {
    let expected = read_u32(page, CHECKSUM_OFFSET);
    let found = compute_checksum(page);
    if expected != found {
        if page.iter().all(|&b| b == 0) {
            return Ok(());
        }
        return Err(StorageError::ChecksumMismatch {
            path: path.into(),
            page: id,
            expected,
            found,
        });
    }
    let stored_id = PageId(read_u64(page, PAGE_ID_OFFSET));
    if stored_id != id {
        return Err(StorageError::WrongPageId { path: path.into(), page: id, found: stored_id });
    }
    Ok(())
}

/// The id stored in a page's envelope (not verified).
pub fn stored_id(page: &[u8]) -> PageId {
    PageId(read_u64(page, PAGE_ID_OFFSET))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn here() -> &'static std::path::Path {
        std::path::Path::new("some.file")
    }

    #[test]
    fn seal_then_verify() {
        let mut page = vec![7u8; 8192];
        seal(&mut page, PageId(42));
        verify(&page, PageId(42), here()).unwrap();
        assert!(matches!(verify(&page, PageId(43), here()), Err(StorageError::WrongPageId { .. })));
        page[100] ^= 1;
        assert!(matches!(
            verify(&page, PageId(42), here()),
            Err(StorageError::ChecksumMismatch { page: PageId(42), ref path, .. }) if path == here()
        ));
    }

    #[test]
    fn zero_page_is_unwritten() {
        verify(&vec![0u8; 4096], PageId(9), here()).unwrap();
    }

    #[test]
    fn page_sizes() {
        for ok in [4096u64, 8192, 16384, 32768, 65536] {
            assert_eq!(PageSize::new(ok).unwrap().bytes() as u64, ok);
        }
        for bad in [0u64, 1, 2048, 4095, 5000, 131072, u64::MAX] {
            assert!(
                matches!(PageSize::new(bad), Err(StorageError::InvalidPageSize(b)) if b == bad)
            );
        }
    }
}
