//! Growing the log while it is open, for an append that does not fit.
//!
//! ```text
//! grow_for   lock ──► fallocate + fsync (storage: RawFile::grow_to) ──► [zeros + sync]
//!                 ──► capacity word stored and persisted ──► capacity published ──► unlock
//! ```
//!
//! The order is what makes a crash at any point harmless, and the power-loss test
//! (`tests/wal/a_growing_log_survives_power_loss.rs`) crashes at each step:
//!
//! - The file's new length is durable (`fsync`) before the capacity word names it, so an open
//!   never finds a capacity past the file's end. A crash before that leaves the old word and
//!   perhaps a longer file, whose extra bytes no one reads (the next growth reuses them).
//! - The capacity word is one aligned 8-byte store, persisted: an open finds the old capacity
//!   or the new one, never a torn one, and its check byte catches damage.
//! - Appends reserve only below the published capacity, which is raised after the word is
//!   persisted: no byte past the old end is written, and so no record there can be relied on at
//!   recovery, before an open would read that far.
//!
//! Appends that fit never come here: they pay one atomic load of the capacity. Only the append
//! that meets the end takes the lock (those behind it wait for it and then find room), and a
//! growth failure changes nothing: a full file system is [`WalError::NoSpace`], a limit reached
//! [`WalError::LogFull`], and neither poisons the log (a failed `fsync` or persist does, as
//! everywhere: the file can no longer be trusted).

use std::sync::atomic::Ordering;

use crate::error::{Result, WalError};
use crate::layout::{self, CAPACITY_WORD_OFFSET, DATA_OFFSET};
use crate::log::{Log, Prefill, no_space, write_zeros};

/// A growth takes the file to at least this multiple of its size (unless the limit is nearer),
/// so a log reaches any size in a number of growths logarithmic in it, and never holds more
/// than twice what the largest transaction so far needed.
const GROWTH_FACTOR: u64 = 2;

/// File sizes a growth picks are whole multiples of this (a page of the mapping).
const GROWTH_ALIGN: u64 = 4096;

impl Log {
    /// Makes room for an append of `size` bytes at `start` (its reservation failed against the
    /// capacity it saw): grows the data area to hold at least `start + size`, unless another
    /// appender already did. Past the limit ([`Log::max_bytes`]) it is [`WalError::LogFull`].
    pub(crate) fn grow_for(&self, start: u64, size: u64) -> Result<()> {
        let _one = self.growing.lock();
        let capacity = self.capacity();
        let needed_end = start.saturating_add(size);
        if needed_end <= capacity {
            return Ok(());
        }
        if needed_end > self.max_capacity {
            return Err(WalError::LogFull {
                path: self.path().into(),
                needed: size,
                available: self.max_capacity.saturating_sub(start),
                max_bytes: self.max_bytes(),
            });
        }
        self.file.check_writable()?;
        let data = DATA_OFFSET as u64;
        let file_bytes = (data + capacity)
            .saturating_mul(GROWTH_FACTOR)
            .max(data + needed_end)
            .next_multiple_of(GROWTH_ALIGN)
            .min(data + self.max_capacity);
        let new_capacity = file_bytes - data;
        self.file.grow_to(file_bytes).map_err(|e| no_space(e, self.path(), file_bytes))?;
        if self.prefill == Prefill::Zeros {
            // SAFETY: the range lies past the capacity: no append has reserved it and no reader
            // reads it, so no reference into the mapping overlaps it.
            unsafe { write_zeros(&self.file, capacity, new_capacity - capacity)? };
            self.file.sync()?;
        }
        self.store_capacity(new_capacity)?;
        self.extent.capacity.store(new_capacity, Ordering::Release);
        Ok(())
    }

    /// Stores the capacity word with one aligned 8-byte store and persists it. The caller holds
    /// `growing`, and the file holds `capacity` bytes of data area, durably.
    fn store_capacity(&self, capacity: u64) -> Result<()> {
        let word = layout::encode_capacity(capacity).to_le();
        // SAFETY: CAPACITY_WORD_OFFSET is inside the header page, which every log file has, and
        // 8-byte aligned (const-asserted; the mapping is page-aligned). Only a growth (holding
        // `growing`) stores here once the log is open, and nothing holds a reference to these
        // bytes (readers borrow the data area only), so the atomic store races with nothing.
        let at = unsafe {
            &*self.base.as_ptr().add(CAPACITY_WORD_OFFSET).cast::<std::sync::atomic::AtomicU64>()
        };
        at.store(word, Ordering::Release);
        Ok(self.file.persist_range(CAPACITY_WORD_OFFSET as u64, 8)?)
    }
}
