//! The data file's header page (page 0).
//!
//! ```text
//! byte 0    16         24        28          32           40        56        60
//!      +----+----------+---------+-----------+------------+---------+---------+----------+
//!      | envelope      | magic   | version   | page size  | page    | uuid    | hdr crc  |
//!      | (page.rs)     | 8 bytes | u32       | u32        | count   | 16 B    | u32      |
//!      |               |         |           |            | u64     |         |          |
//!      +----+----------+---------+-----------+------------+---------+---------+----------+
//! ```
//!
//! The header's own CRC32C covers bytes `MAGIC_OFFSET..HEADER_CRC_OFFSET` and lets the header be
//! checked from the first 4 KiB alone, before the page size is known; the page envelope then
//! covers the whole page like any other. The page count is the only truth about how many pages
//! exist: the file may be longer (growth allocates ahead), never shorter.

use std::path::Path;

use uuid::Uuid;

use crate::error::{Result, StorageError};
use crate::page::{self, MIN_PAGE_SIZE, PAGE_HEADER_LEN, PageId, PageSize};

/// Identifies an nvpage data file.
pub const MAGIC: [u8; 8] = *b"NVPAGEDB";
/// The data file format this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;

const MAGIC_OFFSET: usize = PAGE_HEADER_LEN;
const VERSION_OFFSET: usize = MAGIC_OFFSET + MAGIC.len();
const PAGE_SIZE_OFFSET: usize = VERSION_OFFSET + size_of::<u32>();
const PAGE_COUNT_OFFSET: usize = PAGE_SIZE_OFFSET + size_of::<u32>();
const UUID_OFFSET: usize = PAGE_COUNT_OFFSET + size_of::<u64>();
const HEADER_CRC_OFFSET: usize = UUID_OFFSET + 16;
/// Bytes of page 0 the header uses.
pub const HEADER_END: usize = HEADER_CRC_OFFSET + size_of::<u32>();

const _: () = assert!(HEADER_END == 60);
const _: () = assert!(HEADER_END <= MIN_PAGE_SIZE);

/// The fields of the header page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// The page size chosen at creation.
    pub page_size: PageSize,
    /// Pages in the file, the header page included.
    pub page_count: u64,
    /// The database's identity; the log's header carries the same.
    pub uuid: Uuid,
}

impl FileHeader {
    /// Writes the header into `page` (a whole page of `self.page_size` bytes) and seals it.
    pub fn encode_into(&self, page: &mut [u8]) {
        page.fill(0);
        page[MAGIC_OFFSET..VERSION_OFFSET].copy_from_slice(&MAGIC);
        page[VERSION_OFFSET..PAGE_SIZE_OFFSET].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        page[PAGE_SIZE_OFFSET..PAGE_COUNT_OFFSET]
            .copy_from_slice(&self.page_size.as_u32().to_le_bytes());
        page[PAGE_COUNT_OFFSET..UUID_OFFSET].copy_from_slice(&self.page_count.to_le_bytes());
        page[UUID_OFFSET..HEADER_CRC_OFFSET].copy_from_slice(self.uuid.as_bytes());
        let crc = crc32c::crc32c(&page[MAGIC_OFFSET..HEADER_CRC_OFFSET]);
        page[HEADER_CRC_OFFSET..HEADER_END].copy_from_slice(&crc.to_le_bytes());
        page::seal(page, PageId::HEADER);
    }

    /// Decodes the header from the file's first `MIN_PAGE_SIZE` bytes (or fewer, if the file is
    /// shorter). Checks magic, version, the header checksum and the page size; the caller checks
    /// the whole page's envelope once it has read the full page.
    pub fn decode_prefix(path: &Path, prefix: &[u8]) -> Result<Self> {
        if prefix.len() < MIN_PAGE_SIZE {
            if prefix.len() >= VERSION_OFFSET && prefix[MAGIC_OFFSET..VERSION_OFFSET] != MAGIC {
                return Err(StorageError::NotOurs { path: path.to_path_buf() });
            }
            return Err(StorageError::Truncated {
                path: path.to_path_buf(),
                expected_bytes: MIN_PAGE_SIZE as u64,
                found_bytes: prefix.len() as u64,
            });
        }
        if prefix[MAGIC_OFFSET..VERSION_OFFSET] != MAGIC {
            return Err(StorageError::NotOurs { path: path.to_path_buf() });
        }
        let u32_at =
            |at: usize| u32::from_le_bytes(prefix[at..at + 4].try_into().expect("4 bytes"));
        let version = u32_at(VERSION_OFFSET);
        let stored_crc = u32_at(HEADER_CRC_OFFSET);
        let crc = crc32c::crc32c(&prefix[MAGIC_OFFSET..HEADER_CRC_OFFSET]);
        let corrupt =
            |reason: String| StorageError::CorruptHeader { path: path.to_path_buf(), reason };
        if stored_crc != crc {
            return Err(corrupt(format!(
                "header checksum {stored_crc:#010x} does not match computed {crc:#010x}"
            )));
        }
        if version != FORMAT_VERSION {
            return Err(StorageError::VersionMismatch {
                path: path.to_path_buf(),
                expected: FORMAT_VERSION,
                found: version,
            });
        }
        let page_size = PageSize::new(u64::from(u32_at(PAGE_SIZE_OFFSET)))
            .map_err(|e| corrupt(e.to_string()))?;
        let page_count =
            u64::from_le_bytes(prefix[PAGE_COUNT_OFFSET..UUID_OFFSET].try_into().expect("8 bytes"));
        if page_count == 0 {
            return Err(corrupt("page count 0 (the header page itself is page 0)".into()));
        }
        let uuid = Uuid::from_slice(&prefix[UUID_OFFSET..HEADER_CRC_OFFSET]).expect("16 bytes");
        Ok(Self { page_size, page_count, uuid })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> FileHeader {
        FileHeader {
            page_size: PageSize::new(16384).unwrap(),
            page_count: 77,
            uuid: Uuid::new_v4(),
        }
    }

    #[test]
    fn round_trip() {
        let h = header();
        let mut page = vec![0u8; 16384];
        h.encode_into(&mut page);
        assert_eq!(FileHeader::decode_prefix(Path::new("x"), &page[..4096]).unwrap(), h);
        page::verify(&page, PageId::HEADER, Path::new("header")).unwrap();
    }

    #[test]
    fn every_flipped_header_bit_is_an_error() {
        let h = header();
        let mut page = vec![0u8; 16384];
        h.encode_into(&mut page);
        for byte in MAGIC_OFFSET..HEADER_END {
            for bit in 0..8 {
                let mut p = page.clone();
                p[byte] ^= 1 << bit;
                assert!(FileHeader::decode_prefix(Path::new("x"), &p[..4096]).is_err());
            }
        }
    }

    #[test]
    fn short_and_foreign_prefixes() {
        let p = Path::new("x");
        assert!(matches!(
            FileHeader::decode_prefix(p, &[]),
            Err(StorageError::Truncated { found_bytes: 0, .. })
        ));
        assert!(matches!(
            FileHeader::decode_prefix(p, &[0xAB; 4096]),
            Err(StorageError::NotOurs { .. })
        ));
    }
}
