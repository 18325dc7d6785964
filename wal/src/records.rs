//! Reading the log: the record iterator and libpmemlog's `walk`.
//!
//! Both read a snapshot of `copied` taken when they start, and hold no lock: an append from
//! inside a walk or an iteration (on this thread or another) writes past the snapshot and is not
//! seen by it, and cannot deadlock against it. The slices they hand out borrow the log, and the
//! bytes below `copied` are never written while the log is borrowed (only [`Log::rewind`],
//! which needs `&mut`, lets later appends overwrite them), so the borrows are sound.

use std::sync::atomic::Ordering;

use crate::error::{Result, WalError};
use crate::layout::{Framing, Generations, RecordWalk, ScanFault};
use crate::log::{Log, RecordPos};

/// One record of the log, borrowed from the mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// Where the record starts in the data area.
    pub pos: RecordPos,
    /// Its payload, checked against its checksum.
    pub payload: &'a [u8],
}

/// The records since the last rewind, oldest first (see [`Log::records`]). Each is checked as
/// it is read (length, check, a generation no older than the record before it and no
/// newer than the log's); a damaged one yields [`WalError::CorruptRecord`] once, then the
/// iterator ends.
#[derive(Debug)]
pub struct Records<'a> {
    log: &'a Log,
    walk: RecordWalk<'a>,
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(match self.walk.next()? {
            Ok((pos, payload)) => Ok(Record { pos: RecordPos(pos), payload }),
            Err(ScanFault { offset, reason }) => {
                Err(WalError::CorruptRecord { path: self.log.path().into(), offset, reason })
            }
        })
    }
}

impl Log {
    /// The records since the last rewind, oldest first, up to the appends completed when the
    /// call is made. A raw log is [`WalError::WrongFraming`]. No libpmemlog counterpart.
    pub fn records(&self) -> Result<Records<'_>> {
        self.require(Framing::Records)?;
        let end = self.copied.load(Ordering::Acquire);
        let gens = Generations::up_to(self.generation);
        let walk = RecordWalk::new(self.data(end), 0, gens, self.header.record_check());
        Ok(Records { log: self, walk })
    }

    /// The records since the last rewind, newest first: the order in which the engine
    /// applies before-images. Records are variable-length and carry no back pointers, so this
    /// collects the positions first (16 bytes per record); the payloads stay in the mapping.
    pub fn records_newest_first(&self) -> Result<Vec<Record<'_>>> {
        let mut all = self.records()?.collect::<Result<Vec<_>>>()?;
        all.reverse();
        Ok(all)
    }

    /// Calls `f` with the log's contents in chunks of at most `chunk_size` bytes, oldest first,
    /// until it returns `false`. libpmemlog: `pmemlog_walk`, whose chunking ours follows.
    ///
    /// - A raw log is walked as libpmemlog walks its byte stream: with `chunk_size` 0, one call
    ///   with the whole stream, even an empty one (`f`'s answer then does not matter); otherwise
    ///   consecutive chunks of `chunk_size` bytes, the last one shorter, and none at all when
    ///   the log is empty.
    /// - A record log is walked record by record, its payloads chunked the same way (`chunk_size`
    ///   0: each payload whole), a chunk never spanning two records: an empty record is one
    ///   empty chunk, so a log with no records gets no call at all.
    ///
    /// `pmemlog_walk` holds its pool's read lock, so an append from the callback deadlocks; ours
    /// holds no lock and walks a snapshot (appends made from the callback are not visited).
    pub fn walk(&self, chunk_size: usize, mut f: impl FnMut(&[u8]) -> bool) -> Result<()> {
        match self.header.framing {
            Framing::Raw => {
                walk_chunks(self.data(self.copied.load(Ordering::Acquire)), chunk_size, &mut f);
            }
            Framing::Records => {
                for r in self.records()? {
                    let payload = r?.payload;
                    // An empty record is one empty chunk, whatever the chunk size.
                    let size = if payload.is_empty() { 0 } else { chunk_size };
                    if !walk_chunks(payload, size, &mut f) {
                        break;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Hands `bytes` to `f` as `pmemlog_walk` does: whole (even empty) if `chunk_size` is 0, else in
/// consecutive chunks of `chunk_size` bytes (none if `bytes` is empty) while `f` returns `true`.
/// Returns whether `f` asked for more.
fn walk_chunks(bytes: &[u8], chunk_size: usize, f: &mut impl FnMut(&[u8]) -> bool) -> bool {
    if chunk_size == 0 {
        return f(bytes);
    }
    bytes.chunks(chunk_size).all(f)
}
