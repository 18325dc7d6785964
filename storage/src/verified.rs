//! The set of pages whose checksum has been verified since open, so that each page is checked the
//! first time it is read and never again (SE2's zero-copy reads must not pay a CRC per fetch).
//!
//! Chunks are allocated on first use, so a reservation for a very large file costs nothing until
//! its pages are read.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

const PAGES_PER_CHUNK: u64 = 1 << 18;
const WORDS_PER_CHUNK: usize = (PAGES_PER_CHUNK / 64) as usize;

/// A concurrent bit set over page ids below a fixed maximum.
#[derive(Debug)]
pub(crate) struct VerifiedPages {
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
}

impl VerifiedPages {
    /// A set able to hold page ids below `max_pages`.
    pub(crate) fn new(max_pages: u64) -> Self {
        let n = max_pages.div_ceil(PAGES_PER_CHUNK).max(1) as usize;
        Self { chunks: std::iter::repeat_with(OnceLock::new).take(n).collect() }
    }

    fn locate(page: u64) -> (usize, usize, u64) {
        let chunk = (page / PAGES_PER_CHUNK) as usize;
        let bit = page % PAGES_PER_CHUNK;
        (chunk, (bit / 64) as usize, 1u64 << (bit % 64))
    }

    /// Whether `page` has been verified. Pages past the maximum never are.
    pub(crate) fn contains(&self, page: u64) -> bool {
        let (c, w, mask) = Self::locate(page);
        match self.chunks.get(c).and_then(OnceLock::get) {
            Some(words) => words[w].load(Ordering::Acquire) & mask != 0,
            None => false,
        }
    }

    /// Records that `page` has been verified (or was written by this handle).
    pub(crate) fn insert(&self, page: u64) {
        let (c, w, mask) = Self::locate(page);
        if let Some(slot) = self.chunks.get(c) {
            let words = slot.get_or_init(|| {
                std::iter::repeat_with(|| AtomicU64::new(0)).take(WORDS_PER_CHUNK).collect()
            });
            words[w].fetch_or(mask, Ordering::AcqRel);
        }
    }

    /// Forgets `page` (its bytes were replaced behind the handle's back, by recovery or abort).
    pub(crate) fn remove(&self, page: u64) {
        let (c, w, mask) = Self::locate(page);
        if let Some(words) = self.chunks.get(c).and_then(OnceLock::get) {
            words[w].fetch_and(!mask, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_contains_remove() {
        let v = VerifiedPages::new(3 * PAGES_PER_CHUNK);
        for p in [0, 1, 63, 64, PAGES_PER_CHUNK - 1, PAGES_PER_CHUNK, 3 * PAGES_PER_CHUNK - 1] {
            assert!(!v.contains(p));
            v.insert(p);
            assert!(v.contains(p));
        }
        v.remove(64);
        assert!(!v.contains(64) && v.contains(63));
        // Past the maximum: never recorded, never reported.
        v.insert(10 * PAGES_PER_CHUNK);
        assert!(!v.contains(10 * PAGES_PER_CHUNK));
    }
}
