//! A large array indexed by page id whose chunks are allocated on first use, so a pool over a file
//! that may grow to hundreds of GiB pays only for the pages it touches.

use std::sync::OnceLock;

const CHUNK: u64 = 1 << 16;

/// Elements indexed by `u64`, below a fixed maximum, allocated a chunk at a time.
#[derive(Debug)]
pub(crate) struct Chunked<T> {
    chunks: Box<[OnceLock<Box<[T]>>]>,
    init: fn() -> T,
}

impl<T> Chunked<T> {
    pub(crate) fn new(max: u64, init: fn() -> T) -> Self {
        let n = max.div_ceil(CHUNK).max(1) as usize;
        Self { chunks: std::iter::repeat_with(OnceLock::new).take(n).collect(), init }
    }

    /// The element, if its chunk exists (and `i` is below the maximum).
    #[inline]
    pub(crate) fn get(&self, i: u64) -> Option<&T> {
        let c = self.chunks.get((i / CHUNK) as usize)?.get()?;
        Some(&c[(i % CHUNK) as usize])
    }

    /// The element, allocating its chunk if needed; `None` past the maximum.
    pub(crate) fn get_or_alloc(&self, i: u64) -> Option<&T> {
        let slot = self.chunks.get((i / CHUNK) as usize)?;
        let c =
            slot.get_or_init(|| std::iter::repeat_with(self.init).take(CHUNK as usize).collect());
        Some(&c[(i % CHUNK) as usize])
    }
}
