//! Goal: a page's checksum updated from the ranges that change (`page::checksum_from`) is the
//! checksum of the whole new page, for every page size, any edits (the envelope's fields, the
//! checksum's own line, the last byte), and ranges that cover the edits loosely, line by line or
//! unaligned; and a page whose stored checksum is zero (a page of zeros verifies without one) is
//! left to the whole-page computation.

#![forbid(unsafe_code)]
#![allow(clippy::single_range_in_vec_init)] // ranges of a page, not arrays of their indices

use std::ops::Range;

use nvpage_storage::PageId;
use nvpage_storage::page::{self, CHECKSUM_OFFSET, FORMAT_OFFSET};
use proptest::prelude::*;

const SIZES: [usize; 5] = [4096, 8192, 16_384, 32_768, 65_536];

/// A sealed page of `size` bytes whose payload is drawn from `seed`.
fn sealed_page(size: usize, id: u64, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut p: Vec<u8> = (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    page::seal(&mut p, PageId(id));
    p
}

/// The ranges covering `edited` (byte offsets): each widened by `slack` on both sides, clipped
/// to the page, merged where they touch.
fn covering(edited: &[usize], slack: usize, size: usize) -> Vec<Range<usize>> {
    let mut spots = edited.to_vec();
    spots.sort_unstable();
    let mut out: Vec<Range<usize>> = Vec::new();
    for at in spots {
        let r = at.saturating_sub(slack)..(at + 1 + slack).min(size);
        match out.last_mut() {
            Some(last) if last.end >= r.start => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_updated_checksum_is_the_whole_pages(
        size in prop::sample::select(SIZES.to_vec()),
        seed in any::<u64>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), 1..=255u8), 0..12),
        slack in prop::sample::select(vec![0usize, 3, 64, 200]),
        new_id in prop::option::of(1..1000u64),
    ) {
        let old = sealed_page(size, 7, seed);
        let mut new = old.clone();
        let mut edited: Vec<usize> = edits.iter().map(|(i, _)| i.index(size)).collect();
        for (&at, (_, flip)) in edited.iter().zip(&edits) {
            new[at] ^= flip;
        }
        if let Some(id) = new_id {
            // The envelope's id changes too: its bytes must be in the ranges.
            page::set_envelope(&mut new, PageId(id));
            edited.extend(FORMAT_OFFSET..page::PAGE_HEADER_LEN);
        }
        let changed = covering(&edited, slack, size);
        let got = page::checksum_from(&old, &new, &changed);
        prop_assert_eq!(got, Some(page::compute_checksum(&new)));
    }
}

#[test]
fn edits_at_the_pages_edges_and_in_the_checksum_itself() {
    for size in SIZES {
        let old = sealed_page(size, 3, size as u64);
        let mut new = old.clone();
        new[CHECKSUM_OFFSET] ^= 0xff; // not covered by the checksum
        new[FORMAT_OFFSET] ^= 1; // the first covered byte
        new[size - 1] ^= 0x80; // the last
        let changed = [0..64, size - 64..size];
        assert_eq!(page::checksum_from(&old, &new, &changed), Some(page::compute_checksum(&new)));
        // Unchanged pages, with no ranges or with ranges over equal bytes.
        let same = old.clone();
        let crc = page::compute_checksum(&old);
        assert_eq!(page::checksum_from(&old, &same, &[]), Some(crc));
        assert_eq!(page::checksum_from(&old, &same, &[0..size]), Some(crc));
    }
}

#[test]
fn a_zero_stored_checksum_is_not_trusted() {
    let zeros = vec![0u8; 8192];
    let mut new = zeros.clone();
    page::set_envelope(&mut new, PageId(5));
    new[100] = 1;
    assert_eq!(page::checksum_from(&zeros, &new, &[0..128]), None);
}
