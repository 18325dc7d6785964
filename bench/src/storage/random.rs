//! Random single-page latency: read a page, write a page back, and write a page back durably.
//!
//! Reads and plain writes are timed in batches (one clock read per [`BATCH`] operations, so the
//! timer does not dominate sub-microsecond operations) and reported as the median batch's time
//! per operation. Durable writes (`write_page` then `sync`) cost micro- to milliseconds each and
//! are timed one by one, for at most `sync_ops` operations or [`SYNC_BUDGET`], whichever ends
//! first.

use std::time::{Duration, Instant};

use nvpage_storage::{FileLayer, Layer, PageId, Result};

use super::fixture::fill_page;
use crate::memory::sum_words;
use crate::stats::median;

/// Operations per timed batch for reads and plain writes.
pub const BATCH: u64 = 100;
/// The most wall time one run of write+sync may take.
pub const SYNC_BUDGET: Duration = Duration::from_secs(2);

/// A small, fast, reproducible generator of page ids (xorshift64*).
#[derive(Clone, Debug)]
pub struct PageIds {
    state: u64,
    data_pages: u64,
}

impl PageIds {
    /// Ids of data pages (`1..page_count`), from `seed`.
    pub fn new(seed: u64, page_count: u64) -> Self {
        Self { state: seed | 1, data_pages: page_count.saturating_sub(1).max(1) }
    }

    /// The next page id.
    pub fn next_id(&mut self) -> PageId {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let r = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D);
        PageId(1 + r % self.data_pages)
    }
}

/// Fetches a page and reads every byte of it: in place for SE2, into `frame` for the others.
pub fn read_one(layer: &dyn FileLayer, id: PageId, frame: &mut [u8]) -> Result<u64> {
    let mut acc = 0u64;
    if layer.layer() == Layer::Se2 {
        layer.with_page(id, &mut |b| acc = sum_words(b))?;
    } else {
        layer.read_page(id, frame)?;
        acc = sum_words(frame);
    }
    Ok(std::hint::black_box(acc))
}

/// Median nanoseconds per operation over batches of `op`, `ops` operations in all.
fn batched(ops: u64, mut op: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut per_op_ns = Vec::with_capacity((ops / BATCH + 1) as usize);
    let mut done = 0;
    while done < ops {
        let n = BATCH.min(ops - done);
        let t0 = Instant::now();
        for _ in 0..n {
            op()?;
        }
        per_op_ns.push(t0.elapsed().as_nanos() as f64 / n as f64);
        done += n;
    }
    Ok(median(&per_op_ns))
}

/// Random page reads: median ns per read.
pub fn reads(layer: &dyn FileLayer, ops: u64, seed: u64) -> Result<f64> {
    let mut ids = PageIds::new(seed, layer.file().page_count());
    let mut frame = vec![0u8; layer.file().page_size().bytes()];
    batched(ops, || read_one(layer, ids.next_id(), &mut frame).map(drop))
}

/// Random page writes without sync: median ns per `write_page` (seal, checksum, copy or
/// `pwrite`; in the cache-line modes also the flush that persists it).
pub fn writes(layer: &dyn FileLayer, ops: u64, seed: u64) -> Result<f64> {
    let mut ids = PageIds::new(seed, layer.file().page_count());
    let mut frame = vec![0u8; layer.file().page_size().bytes()];
    let mut stamp = 0u64;
    batched(ops, || {
        let id = ids.next_id();
        fill_page(&mut frame, id.0);
        stamp += 1;
        frame[16..24].copy_from_slice(&stamp.to_le_bytes());
        layer.write_page(id, &mut frame)
    })
}

/// Random durable page writes, `write_page` then `sync` each: median ns per operation, and the
/// number of operations done.
pub fn synced_writes(layer: &dyn FileLayer, max_ops: u64, seed: u64) -> Result<(f64, u64)> {
    let mut ids = PageIds::new(seed, layer.file().page_count());
    let mut frame = vec![0u8; layer.file().page_size().bytes()];
    let mut per_op_ns = Vec::new();
    let start = Instant::now();
    while (per_op_ns.len() as u64) < max_ops && start.elapsed() < SYNC_BUDGET {
        let id = ids.next_id();
        fill_page(&mut frame, id.0);
        let t0 = Instant::now();
        layer.write_page(id, &mut frame)?;
        layer.sync()?;
        per_op_ns.push(t0.elapsed().as_nanos() as f64);
    }
    Ok((median(&per_op_ns), per_op_ns.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_stay_among_data_pages_and_repeat_from_a_seed() {
        let mut a = PageIds::new(7, 10);
        let mut b = PageIds::new(7, 10);
        let mut seen = [false; 10];
        for _ in 0..1000 {
            let id = a.next_id();
            assert_eq!(id, b.next_id());
            assert!((1..10).contains(&id.0));
            seen[id.0 as usize] = true;
        }
        assert!(seen[1..].iter().all(|&s| s));
    }
}
