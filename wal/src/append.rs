//! Appending: reserve with an atomic, copy in parallel, complete in order, group commit.
//!
//! ```text
//! append          reserve ──► copy (+ fence, cache-line modes) ──► complete in order ──► commit
//! append_buffered reserve ──► copy (+ fence, cache-line modes) ──► complete in order
//! sync                                                                                    commit
//! ```
//!
//! - **reserve**: a compare-and-swap on `reserved` claims `[start, end)`. A claim that would pass
//!   the capacity first grows the log (`grow.rs`), and one that would pass the largest size the
//!   log may grow to — or any claim once the log is full at that size (an empty one too, as
//!   libpmemlog refuses) — is refused before anything changes ([`WalError::LogFull`]), so it
//!   harms no one. The capacity is an atomic load beside the one of `populated`: no lock and no
//!   system call is added to an append that fits.
//! - **copy**: each appender writes its own range, unlocked. In the cache-line modes it uses
//!   streaming stores and one SFENCE on its own thread (a fence orders only its own core's
//!   stores); a record of the current format from one buffer is stored line by line, its check
//!   computed in the same loop (`layout::store_record_lines`), the header's line last. In
//!   `msync` mode it only writes (`RawFile::store_vectored`: a copy where the file is memory,
//!   `pwrite` on a disk): the commit's sync covers the range. Where the file is
//!   memory (not DAX: `RawFile::kernel_copy_pays`), an append of `KERNEL_COPY_MIN` (256 KiB)
//!   or more into a part of the log not yet mapped is written with `pwrite` instead (and
//!   fenced, in the cache-line modes), which spares populating the mapping; a smaller one first
//!   populates the next
//!   [`POPULATE_WINDOW`](crate::POPULATE_WINDOW) of the mapping if it reaches past it.
//! - **complete in order**: the appender waits until `copied == start`, then publishes
//!   `copied = end`. So `copied` only ever covers whole, written appends, in reservation order.
//!   An appender still waiting after a short spin leaves `(start, end)` in `pending` and waits
//!   (yielding) for `copied` to pass `end`: whoever publishes the append before it publishes it
//!   too. So no appender needs a turn on a CPU of its own to be published. Without this, two
//!   appenders sharing one CPU (the kernel puts both on one for a few milliseconds now and then)
//!   each held a copied, unpublished append while it yielded to the other, and they handed the
//!   CPU back and forth once per append: rounds of 4 KiB records from two threads ran at
//!   0.7-1.5 M/s against 3.3 (`nvpage-bench log`'s `order waits` and `queued ms` columns;
//!   `tests/wal/appenders_sharing_a_core.rs`).
//! - **commit**: a record log in a cache-line mode has nothing left to do: its records are
//!   self-validating and fenced, and every one before it completed first, so an open after a
//!   crash finds it (one fence per append). A record log in `msync` mode, unless `durable`
//!   covers `end` already, syncs the file (`fdatasync`) with no lock, so that concurrent
//!   committers' syncs overlap in the kernel, each through an open file description of its own
//!   (`RawFile::sync_own`, opened with the log: Linux reports a failed writeback once per
//!   description, so through a shared one a sync beside the one that took the error would
//!   succeed). A raw
//!   log, if `durable` does not yet cover `end`, takes the `commit` lock and — unless a leader
//!   covered it meanwhile — persists `[durable, copied)` (in `msync` mode), then stores and
//!   persists the state word with tail `copied` (group commit: one persist covers every append
//!   completed by then, from every thread). A record log stores its watermark only every
//!   [`MARK_INTERVAL`] bytes, on [`Log::sync`] and on close, which bounds what an open reads
//!   past it. A record stored line by line carries a watermark that is due with its own copy:
//!   the state word is stored and flushed before the record's lines, and the one fence makes
//!   both durable (so the append's commit has nothing left to do).
//!
//! Any failure after a reservation poisons the log: a claimed range that is never completed
//! would stall every later appender, so they fail with [`StorageError::Poisoned`] instead.

use std::io::IoSlice;
use std::sync::atomic::Ordering;

use nvpage_storage::StorageError;

use crate::error::{Result, WalError};
use crate::layout::{
    DATA_OFFSET, Framing, LINE, RECORD_HEADER_LEN, RecordCheck, STATE_OFFSET, State, record_header,
    store_record_lines,
};
use crate::log::{Log, RecordPos};

const ZERO_PAD: [u8; LINE] = [0; LINE];

/// Spins of a wait before [`backoff`] starts yielding the CPU.
const SPINS: u32 = 256;

/// A record log stores its watermark when it has moved this many bytes past the stored one: an
/// open reads at most about this much past the watermark, and damage to a record below the
/// watermark is an error rather than the end of the log.
pub const MARK_INTERVAL: u64 = 64 << 10;

/// The slices of one append (header, payload parts, padding), on the stack unless there are many.
#[derive(Default)]
struct Parts<'a> {
    inline: [&'a [u8]; 8],
    n: usize,
    spilled: Vec<&'a [u8]>,
}

impl<'a> Parts<'a> {
    fn push(&mut self, part: &'a [u8]) {
        if part.is_empty() {
            return;
        }
        if self.spilled.is_empty() && self.n < self.inline.len() {
            self.inline[self.n] = part;
            self.n += 1;
            return;
        }
        if self.spilled.is_empty() {
            self.spilled.extend_from_slice(&self.inline[..self.n]);
        }
        self.spilled.push(part);
    }

    fn as_slice(&self) -> &[&'a [u8]] {
        if self.spilled.is_empty() { &self.inline[..self.n] } else { &self.spilled }
    }
}

impl Log {
    /// Appends `buf` and returns once it, and every append before it, is durable in the log's
    /// persistence mode ([`Log::durability`]). In a record log `buf` becomes one record; in a raw
    /// log its bytes are added to the stream. libpmemlog: `pmemlog_append`, which returns 0 or -1
    /// and errno; ours returns the append's position, and [`WalError::LogFull`] when it does not
    /// fit or the log is full (an empty append into a full log too, as libpmemlog refuses it).
    /// Safe from many threads at once.
    pub fn append(&self, buf: &[u8]) -> Result<RecordPos> {
        self.append_vectored(&[IoSlice::new(buf)])
    }

    /// Appends the concatenation of `bufs` as one append (one record in a record log: a page id
    /// and a page, say), durable on return. libpmemlog: `pmemlog_appendv`, which is atomic for
    /// the whole vector, as ours is.
    pub fn append_vectored(&self, bufs: &[IoSlice<'_>]) -> Result<RecordPos> {
        let (pos, end, marked) = self.write(bufs)?;
        self.commit_to(end, !marked)?;
        Ok(pos)
    }

    /// Appends one framed record and returns its position, durable on return. The same as
    /// [`Log::append`], but a raw log is [`WalError::WrongFraming`].
    pub fn append_record(&self, payload: &[u8]) -> Result<RecordPos> {
        self.require(Framing::Records)?;
        self.append(payload)
    }

    /// Appends `buf` **without making it durable**: it is in the log (readers and [`Log::tell`]
    /// see it) but a crash before the next [`Log::sync`] — or before a later durable append,
    /// which covers it — may lose it and every buffered append after it. It is never torn: a
    /// crash keeps whole appends, in order. For callers that batch. No libpmemlog counterpart.
    pub fn append_buffered(&self, buf: &[u8]) -> Result<RecordPos> {
        self.append_buffered_vectored(&[IoSlice::new(buf)])
    }

    /// [`Log::append_buffered`] for a gathered buffer.
    pub fn append_buffered_vectored(&self, bufs: &[IoSlice<'_>]) -> Result<RecordPos> {
        Ok(self.write(bufs)?.0)
    }

    /// Makes every append that completed before the call durable, as a durable append does for
    /// the appends before it: one device flush in `msync` mode, none on the cache-line path
    /// (where appends are durable when they return). The watermark is stored only when it is
    /// due (every [`MARK_INTERVAL`] of appends), so this costs
    /// one flush where [`Log::sync`] costs two: for a writer that batches buffered appends and
    /// needs them durable before its next step (the engine's before-images of a commit).
    pub fn persist_appends(&self) -> Result<()> {
        self.file.check_writable()?;
        self.commit_to(self.copied.load(Ordering::Acquire), true)
    }

    /// Makes every append that completed before the call durable (in `msync` mode one `msync`
    /// of the new bytes) and stores the tail or watermark in the state word.
    /// On a poisoned log it fails, even with nothing new to persist.
    pub fn sync(&self) -> Result<()> {
        self.file.check_writable()?;
        self.commit_to(self.copied.load(Ordering::Acquire), true)?;
        if self.header.framing == Framing::Records {
            self.store_mark(true)?;
        }
        Ok(())
    }

    pub(crate) fn require(&self, needed: Framing) -> Result<()> {
        if self.header.framing != needed {
            return Err(WalError::WrongFraming { needed, found: self.header.framing });
        }
        Ok(())
    }

    /// Reserves, copies and completes one append in order; returns its position, its end, and
    /// whether the copy looked after the watermark (see [`Log::copy_in`]).
    fn write(&self, bufs: &[IoSlice<'_>]) -> Result<(RecordPos, u64, bool)> {
        self.file.check_writable()?;
        let len: u64 = bufs.iter().map(|b| b.len() as u64).sum();
        let size = match self.header.framing {
            Framing::Raw => len,
            Framing::Records if len > u64::from(u32::MAX) => {
                return Err(WalError::RecordTooLarge { len, max: u64::from(u32::MAX) });
            }
            Framing::Records => self.header.record_check().record_size(len),
        };
        let start = self.reserve(size)?;
        let end = start + size;
        // From here an append that does not complete (an error, or a panic) would leave its
        // range claimed and every later appender waiting for it: it poisons the log instead, so
        // that they fail.
        let incomplete = PoisonUnlessCompleted(&self.file);
        // A large append into a part never mapped goes through `pwrite` (no populating); any
        // other through the mapping, populated first where it is not yet.
        let by_kernel = self.file.kernel_copy_pays(size as usize)
            && end > self.extent.populated.load(Ordering::Acquire);
        if !by_kernel {
            self.populate_to(end);
        }
        let marked = self.copy_in(start, size, len, bufs, by_kernel)?;
        self.complete_in_order(start, end)?;
        std::mem::forget(incomplete);
        Ok((RecordPos(start), end, marked))
    }

    /// Claims `size` bytes, growing the log first if they pass its capacity, or refuses
    /// without changing anything. A log full at the largest size it may reach refuses every
    /// append, even one of no bytes, as libpmemlog does (`ENOSPC` whenever its write offset has
    /// reached the end, whatever the count): a caller learns that the log is full from the
    /// first append that finds it so, not from the first that brings bytes.
    fn reserve(&self, size: u64) -> Result<u64> {
        let mut cur = self.reserved.load(Ordering::Relaxed);
        loop {
            if size == 0 && cur >= self.max_capacity {
                return Err(WalError::LogFull {
                    path: self.path().into(),
                    needed: 0,
                    available: 0,
                    max_bytes: self.max_bytes(),
                });
            }
            // Compared, not subtracted: `cur` may come from a claim against a capacity this
            // thread has not loaded yet (the claim's CAS is read with Relaxed). A growth then
            // finds the capacity enough, under its lock, and the next load sees it.
            if cur.saturating_add(size) > self.capacity() {
                self.grow_for(cur, size)?;
                cur = self.reserved.load(Ordering::Relaxed);
                continue;
            }
            match self.reserved.compare_exchange_weak(
                cur,
                cur + size,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(cur),
                Err(now) => cur = now,
            }
        }
    }

    /// Writes the append into its reserved range `[start, start + size)`: through the mapping,
    /// or with `pwrite` if `by_kernel`. Returns whether it looked after the watermark: a record
    /// of at most [`MARK_INTERVAL`] stored line by line stores a watermark that is due with its
    /// own fence, so its commit has none to store.
    fn copy_in(
        &self,
        start: u64,
        size: u64,
        len: u64,
        bufs: &[IoSlice<'_>],
        by_kernel: bool,
    ) -> Result<bool> {
        let cache_lines = self.file.mode().uses_cache_lines();
        let line_path = self.header.record_check() == RecordCheck::SeededLines
            && self.header.framing == Framing::Records
            && cache_lines
            && !by_kernel;
        if let ([one], true) = (bufs, line_path) {
            // A record of the current format, from one buffer, on the cache-line path: stored
            // line by line, its check computed in the same loop (`store_record_lines`).
            let (generation, lines) = (self.generation, (size / LINE as u64) as usize);
            let offset = DATA_OFFSET as u64 + start;
            // A watermark that is due rides on this append's fence: everything below the
            // durable tail was fenced by its own appender before it completed, so the state
            // word may reach the medium before or with this record's lines, never ahead of
            // what it covers. It costs a store and a flush, not a fence of its own.
            // Only a record of at most `MARK_INTERVAL` carries it: the `commit` lock is held
            // for the whole copy, and `sync` waits for that lock; a larger record leaves the
            // watermark to its commit, where one more fence costs little beside its copy.
            let carries = size <= MARK_INTERVAL;
            let mark = if carries { self.mark_due(false) } else { None };
            if let Some((_, state)) = &mark {
                self.put_state(*state);
            }
            let stored = mark.as_ref().map(|_| (STATE_OFFSET as u64, 8));
            // SAFETY: `[start, start + size)` was reserved by this call alone (the CAS in
            // `reserve`), lies below the capacity, so inside the mapped file, and no reader looks
            // past `copied <= start`; `size` is whole lines from a line boundary (format 5). The
            // payload is the caller's buffer, not the mapping. The state word lies in the
            // header's pages, before the data area, and only the `commit` lock's holder (this
            // thread, if `mark` is some) stores there.
            unsafe {
                self.file.store_persist_lines_with(offset, lines, stored, |out| {
                    store_record_lines(out, start, generation, one)
                })
            }?;
            if let Some((_leader, state)) = mark {
                self.mark.store(state.tail, Ordering::Release);
            }
            return Ok(carries);
        }
        let mut payload = Parts::default();
        bufs.iter().for_each(|b| payload.push(b));
        let header;
        let mut parts = Parts::default();
        if self.header.framing == Framing::Records {
            let check = self.header.record_check();
            header = record_header(check, start, self.generation, len, payload.as_slice());
            parts.push(&header);
        }
        payload.as_slice().iter().for_each(|b| parts.push(b));
        let framing = if self.header.framing == Framing::Records { RECORD_HEADER_LEN } else { 0 };
        let pad = size - len - framing as u64;
        parts.push(&ZERO_PAD[..pad as usize]);
        let offset = DATA_OFFSET as u64 + start;
        if by_kernel && cache_lines {
            // SAFETY: `[start, start + size)` was reserved by this call alone (the CAS in
            // `reserve`), and no reference into the mapping reaches past `copied <= start`.
            unsafe { self.file.write_persist_vectored(offset, parts.as_slice()) }?;
        } else if by_kernel {
            // SAFETY: as above. `msync` mode: the commit persists the range.
            unsafe { self.file.write_vectored_at(offset, parts.as_slice()) }?;
        } else if cache_lines {
            // SAFETY: `[start, start + size)` was reserved by this call alone (the CAS in
            // `reserve`), lies below the capacity, so inside the mapped file, and no reader looks
            // past `copied <= start`. The parts are the caller's buffers, not the mapping.
            unsafe { self.file.store_persist_vectored(offset, parts.as_slice()) }?;
        } else {
            // SAFETY: as above. `msync` mode: the commit persists the range.
            unsafe { self.file.store_vectored(offset, parts.as_slice()) }?;
        }
        Ok(false)
    }

    /// Publishes this append once every earlier one has completed, and returns then. While an
    /// earlier one is still being copied it spins a little; then it leaves its range in
    /// `pending` for whoever publishes the append before it, and waits (yielding the CPU) until
    /// `copied` covers it. So an appender never needs its own turn on a CPU to be published:
    /// where two appenders share one core, the running one publishes both and goes on, where
    /// waiting for each other's turn would cost a context switch per append.
    fn complete_in_order(&self, start: u64, end: u64) -> Result<()> {
        if start == end {
            // An empty append (raw logs take them) shares its start with the next one, which may
            // publish first: it publishes nothing, and is complete once `copied` reaches it.
            let mut spins = 0u32;
            while self.copied.load(Ordering::Acquire) < start {
                self.check_not_poisoned()?;
                backoff(&mut spins);
            }
            return Ok(());
        }
        for _ in 0..SPINS {
            if self.copied.load(Ordering::Acquire) == start {
                self.publish(end);
                if self.pending_len.load(Ordering::Acquire) != 0 {
                    self.publish_pending();
                }
                return Ok(());
            }
            // Spinning only: a yield here, with this append copied but not yet left in
            // `pending`, would let the thread that runs next wait for it in turn.
            std::hint::spin_loop();
        }
        let mut spins = SPINS;
        {
            let mut pending = self.pending.lock();
            pending.push((start, end));
            self.pending_len.store(pending.len(), Ordering::Release);
        }
        self.order_waits.fetch_add(1, Ordering::Relaxed);
        loop {
            let copied = self.copied.load(Ordering::Acquire);
            if copied >= end {
                return Ok(());
            }
            if copied == start {
                // The append before this one was published by a thread that had not yet seen
                // this entry: publish it here.
                self.publish_pending();
                continue;
            }
            // A poisoned log: the append waited for failed and will never complete, unless it
            // did and published this one too before another failure poisoned the log.
            if let Err(e) = self.check_not_poisoned() {
                let mut pending = self.pending.lock();
                let Some(i) = pending.iter().position(|&entry| entry == (start, end)) else {
                    // Removed only by a publisher, under this lock, as it published it.
                    return Ok(());
                };
                pending.swap_remove(i);
                self.pending_len.store(pending.len(), Ordering::Release);
                return Err(e);
            }
            backoff(&mut spins);
        }
    }

    /// Publishes the append that ends at `end`, whose start `copied` holds. Only the one thread
    /// that saw `copied` at that start gets here for it, after whoever published `copied`
    /// (Release, read with Acquire): so a load and a store count the record as exactly as a
    /// read-modify-write would, without its lock on the shared line.
    fn publish(&self, end: u64) {
        if self.header.framing == Framing::Records {
            let n = self.record_count.load(Ordering::Relaxed);
            self.record_count.store(n + 1, Ordering::Release);
        }
        self.copied.store(end, Ordering::Release);
    }

    /// Publishes, in order, every pending append that `copied` has reached.
    fn publish_pending(&self) {
        let mut pending = self.pending.lock();
        loop {
            let copied = self.copied.load(Ordering::Acquire);
            let Some(i) = pending.iter().position(|&(start, _)| start == copied) else { break };
            let (_, end) = pending.swap_remove(i);
            self.publish(end);
        }
        self.pending_len.store(pending.len(), Ordering::Release);
    }

    /// Makes the log durable up to at least `end` (which has completed). A raw log commits in
    /// groups: the leader persists the new bytes and the tail as far as appends have completed;
    /// the others wait for `durable` to cover them (spinning, then yielding: parking on the lock
    /// would cost more than the leader's persist). A record log stores its watermark here when
    /// it is due, unless `mark` is false (the append stored it, if due, with its own fence).
    fn commit_to(&self, end: u64, mark: bool) -> Result<()> {
        if self.commits_by_copy() {
            return if mark { self.store_mark(false) } else { Ok(()) };
        }
        if self.header.framing == Framing::Records {
            // `msync` mode, self-validating records: no lock and no tail to order after the
            // data. Each committer whose end is not durable yet syncs the file, so concurrent
            // committers' syncs run at once and the file system joins their journal commits;
            // a lock here would queue them instead. Each syncs through a description of its
            // own, so each learns of a writeback failure that happened while it synced, even
            // if another sync took it first (`RawFile::sync_own`). Everything below `end` was
            // written when the sync began, so after it everything below `end` is durable.
            if self.durable.load(Ordering::Acquire) < end {
                self.file.sync_own()?;
                self.durable.fetch_max(end, Ordering::AcqRel);
            }
            return self.store_mark(false);
        }
        let mut spins = 0u32;
        loop {
            if self.durable.load(Ordering::Acquire) >= end {
                return Ok(());
            }
            if let Some(_leader) = self.commit.try_lock() {
                let from = self.durable.load(Ordering::Acquire);
                if from >= end {
                    return Ok(());
                }
                let target = self.copied.load(Ordering::Acquire);
                debug_assert!(target >= end);
                if !self.file.mode().uses_cache_lines() {
                    self.file.persist_range(DATA_OFFSET as u64 + from, (target - from) as usize)?;
                }
                self.store_state(State { tail: target, generation: self.generation })?;
                self.durable.store(target, Ordering::Release);
                return Ok(());
            }
            self.check_not_poisoned()?;
            backoff(&mut spins);
        }
    }

    /// Stores a record log's watermark at what is durable: always if `now` (waiting for the
    /// lock), else only when it is [`MARK_INTERVAL`] behind and nobody else is storing it.
    fn store_mark(&self, now: bool) -> Result<()> {
        match self.mark_due(now) {
            Some((_leader, state)) => self.store_state(state),
            None => Ok(()),
        }
    }

    /// The watermark to store now, with the `commit` lock that the store must hold: always if
    /// `now` (waiting for the lock) and the mark is behind, else only when it is
    /// [`MARK_INTERVAL`] behind and nobody else is storing it.
    fn mark_due(&self, now: bool) -> Option<(parking_lot::MutexGuard<'_, ()>, State)> {
        // Saturating: another thread may store a newer mark between these two loads.
        let behind = self.durable_tell().saturating_sub(self.mark.load(Ordering::Acquire));
        if behind == 0 || (!now && behind < MARK_INTERVAL) {
            return None;
        }
        let leader = match now {
            true => self.commit.lock(),
            false => self.commit.try_lock()?,
        };
        let tail = self.durable_tell();
        if tail == self.mark.load(Ordering::Acquire) {
            return None;
        }
        Some((leader, State { tail, generation: self.generation }))
    }

    fn check_not_poisoned(&self) -> Result<()> {
        if self.file.is_poisoned() {
            return Err(StorageError::Poisoned { path: self.file.path().into() }.into());
        }
        Ok(())
    }
}

/// Poisons the file if dropped: held across an append's claimed range and forgotten once the
/// append completed, so that it acts on a failure or a panic in between.
struct PoisonUnlessCompleted<'a>(&'a nvpage_storage::RawFile);

impl Drop for PoisonUnlessCompleted<'_> {
    fn drop(&mut self) {
        self.0.poison();
    }
}

/// Waits a little: spins first ([`SPINS`] times), then yields the CPU (the thread waited for
/// may be descheduled).
fn backoff(spins: &mut u32) {
    *spins = spins.saturating_add(1);
    if *spins < SPINS {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}
