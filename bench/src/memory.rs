//! The machine's own numbers, measured in the same run as the layers so ratios sit side by side:
//! single-threaded memory read bandwidth (the same summing loop the scans use, over a buffer that
//! is already touched) and `memcpy` bandwidth (page-sized copies into one frame).

use std::hint::black_box;

/// Sums a page as little-endian `u64` words: the work every scan does per byte, so that a pass is
/// bound by how fast bytes reach the core and not by what is done with them.
///
/// Never inlined, so the memory baseline and every layer's pass run the very same machine code
/// (one call per page costs nothing next to reading 8 KiB).
#[inline(never)]
pub fn sum_words(bytes: &[u8]) -> u64 {
    bytes.chunks_exact(8).fold(0u64, |acc, w| {
        acc.wrapping_add(u64::from_le_bytes(w.try_into().expect("chunks_exact(8)")))
    })
}

/// A buffer as large as the file under test, filled (so every page is touched and mapped), and
/// one page-sized frame.
#[derive(Debug)]
pub struct MemBuffers {
    src: Vec<u8>,
    frame: Vec<u8>,
}

impl MemBuffers {
    /// Allocates and touches `bytes` bytes (rounded down to whole pages of `page_bytes`).
    pub fn new(bytes: usize, page_bytes: usize) -> Self {
        let mut src = vec![0u8; bytes / page_bytes * page_bytes];
        for (i, w) in src.chunks_exact_mut(8).enumerate() {
            w.copy_from_slice(&(i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes());
        }
        Self { src, frame: vec![0u8; page_bytes] }
    }

    /// Bytes one pass moves.
    pub fn len(&self) -> usize {
        self.src.len()
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }

    /// Reads every byte once, page by page, with [`sum_words`].
    pub fn read_pass(&self) -> u64 {
        let mut acc = 0u64;
        for page in self.src.chunks_exact(self.frame.len()) {
            acc = acc.wrapping_add(sum_words(black_box(page)));
        }
        black_box(acc)
    }

    /// Copies every page into the one frame (`copy_from_slice`, i.e. `memcpy`).
    pub fn copy_pass(&mut self) {
        for page in self.src.chunks_exact(self.frame.len()) {
            self.frame.copy_from_slice(page);
            black_box(&mut self.frame);
        }
    }

    /// Copies every page into the frame and sums the frame: the least a copying layer can do.
    pub fn copy_sum_pass(&mut self) -> u64 {
        let mut acc = 0u64;
        for page in self.src.chunks_exact(self.frame.len()) {
            self.frame.copy_from_slice(page);
            acc = acc.wrapping_add(sum_words(black_box(&self.frame)));
        }
        black_box(acc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_little_endian_words() {
        let mut page = vec![0u8; 16];
        page[0] = 1;
        page[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(sum_words(&page), 0);
        page[9] = 0;
        assert_eq!(sum_words(&page), u64::MAX.wrapping_sub(0xff00).wrapping_add(1));
    }

    #[test]
    fn passes_agree() {
        let mut m = MemBuffers::new(64 * 1024 + 100, 4096);
        assert_eq!(m.len(), 64 * 1024);
        assert_eq!(m.read_pass(), m.copy_sum_pass());
        m.copy_pass();
    }
}
