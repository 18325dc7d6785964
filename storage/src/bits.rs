//! A concurrent set of small integers below a fixed maximum, as a bitmap in chunks allocated on
//! first use (so a set sized for a very large file costs nothing until it is used): the 2 MiB
//! windows of a mapping already populated.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

const BITS_PER_CHUNK: u64 = 1 << 18;
const WORDS_PER_CHUNK: usize = (BITS_PER_CHUNK / 64) as usize;

/// A concurrent bit set over integers below a fixed maximum; members are never removed.
#[derive(Debug)]
pub(crate) struct Bits {
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
}

impl Bits {
    /// A set able to hold integers below `max`.
    pub(crate) fn new(max: u64) -> Self {
        let n = max.div_ceil(BITS_PER_CHUNK).max(1) as usize;
        Self { chunks: std::iter::repeat_with(OnceLock::new).take(n).collect() }
    }

    fn locate(n: u64) -> (usize, usize, u64) {
        let chunk = (n / BITS_PER_CHUNK) as usize;
        let bit = n % BITS_PER_CHUNK;
        (chunk, (bit / 64) as usize, 1u64 << (bit % 64))
    }

    /// Whether `n` is in the set. Integers past the maximum never are.
    pub(crate) fn contains(&self, n: u64) -> bool {
        let (c, w, mask) = Self::locate(n);
        match self.chunks.get(c).and_then(OnceLock::get) {
            Some(words) => words[w].load(Ordering::Acquire) & mask != 0,
            None => false,
        }
    }

    /// Adds `n` (nothing past the maximum).
    pub(crate) fn insert(&self, n: u64) {
        let (c, w, mask) = Self::locate(n);
        if let Some(slot) = self.chunks.get(c) {
            let words = slot.get_or_init(|| {
                std::iter::repeat_with(|| AtomicU64::new(0)).take(WORDS_PER_CHUNK).collect()
            });
            words[w].fetch_or(mask, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_and_contains() {
        let b = Bits::new(3 * BITS_PER_CHUNK);
        for n in [0, 1, 63, 64, BITS_PER_CHUNK - 1, BITS_PER_CHUNK, 3 * BITS_PER_CHUNK - 1] {
            assert!(!b.contains(n));
            b.insert(n);
            assert!(b.contains(n));
        }
        assert!(!b.contains(65));
        // Past the maximum: never recorded, never reported.
        b.insert(10 * BITS_PER_CHUNK);
        assert!(!b.contains(10 * BITS_PER_CHUNK));
    }
}
