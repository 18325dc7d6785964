//! `page_decode`: the page envelope (`page::verify`, `page::seal`) and the data file's header
//! (`FileHeader::decode_prefix`) on arbitrary bytes.

use std::path::Path;

use nvpage_storage::page::{self, MAX_PAGE_SIZE, MIN_PAGE_SIZE};
use nvpage_storage::{FileHeader, PageId, PageSize};

use super::Input;

/// The header's checksum covers bytes 16..56 and is stored at 56 (storage/src/header.rs).
const HEADER_CRC_RANGE: std::ops::Range<usize> = 16..56;

/// Recomputes a data file header's own checksum (not the page envelope's).
pub(crate) fn reseal_file_header(prefix: &mut [u8]) {
    let crc = crc32c::crc32c(&prefix[HEADER_CRC_RANGE]);
    prefix[56..60].copy_from_slice(&crc.to_le_bytes());
}

/// Target `page_decode`. Input: page size selector u8 (4..64 KiB), page id u64, flags u8 (bit 0
/// repair the header checksum, bit 1 seal the page first), a bit to flip u32, then the page
/// (zero-padded or cut to the page size).
///
/// Properties: `verify` accepts exactly the all-zero page and pages whose checksum and id
/// match; a sealed page verifies and a sealed page with any one bit flipped does not; a header
/// that decodes re-encodes to itself and its page verifies.
pub fn page_decode(data: &[u8]) {
    let mut input = Input::new(data);
    let size = MIN_PAGE_SIZE << (input.u8() % 5);
    let id = PageId(input.u64());
    let flags = input.u8();
    let flip = input.u32() as usize;
    let raw = input.rest();
    let mut p = raw.to_vec();
    p.resize(size, 0);
    if flags & 2 == 2 {
        page::seal(&mut p, id);
        page::verify(&p, id, here()).expect("a sealed page verifies");
        p[(flip / 8) % size] ^= 1 << (flip % 8);
        let zero = p.iter().all(|&b| b == 0);
        assert_eq!(
            page::verify(&p, id, here()).is_ok(),
            zero,
            "a flipped bit of a sealed page verified"
        );
    } else {
        let stored = u32::from_le_bytes(p[..4].try_into().unwrap());
        let sound = stored == page::compute_checksum(&p) && page::stored_id(&p) == id;
        let zero = p.iter().all(|&b| b == 0);
        match page::verify(&p, id, here()) {
            Ok(()) => assert!(sound || zero, "verify accepted a page that does not check"),
            Err(e) => {
                assert!(!sound && !zero, "verify refused a sound page: {e}");
                let _ = e.to_string();
            }
        }
    }
    let mut prefix = raw[..raw.len().min(MIN_PAGE_SIZE)].to_vec();
    if flags & 1 == 1 && prefix.len() >= 60 {
        reseal_file_header(&mut prefix);
    }
    match FileHeader::decode_prefix(Path::new("fuzz"), &prefix) {
        Ok(h) => {
            assert!(h.page_count >= 1);
            assert!((MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&h.page_size.bytes()));
            assert!(PageSize::new(h.page_size.bytes() as u64).is_ok());
            let mut page = vec![0u8; h.page_size.bytes()];
            h.encode_into(&mut page);
            page::verify(&page, PageId::HEADER, here()).expect("an encoded header page verifies");
            let again = FileHeader::decode_prefix(Path::new("fuzz"), &page[..MIN_PAGE_SIZE]);
            assert_eq!(again.expect("re-decode"), h);
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

/// The file a fuzzed page is said to come from, in errors.
fn here() -> &'static Path {
    Path::new("fuzzed page")
}
