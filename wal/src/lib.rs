//! # nvpage-wal
//!
//! A persistent-memory log: a file that is mapped and appended to, as PMDK's libpmemlog did
//! (create, open, append, vectored append, walk, rewind, nbyte, tell, close), plus framed records
//! with checksums and generations, a record iterator, many appenders with group commit, and a
//! buffered append. The engine uses it as its undo-only write-ahead log: page before-images are
//! appended durably before pages are overwritten in place, and a rewind is the commit point.
//!
//! What it is not: not a redo log, not a ring (a full log is [`WalError::LogFull`]; the owner
//! rewinds), not a multi-file segment store, and it never interprets payloads. It may grow,
//! up to a limit its owner sets, but never shrinks.
//!
//! ## Design (details in `docs/design.md`, "The log")
//!
//! The file is a header page (magic, version, framing, database UUID, capacity at create,
//! CRC32C: written once at create), an 8-byte **state word** alone in the next cache line (tail,
//! generation and a CRC-8 check byte, outside the header checksum), an 8-byte **capacity word**
//! alone in the line after it (the data area's size now, with the same check byte), then the
//! data area. See [`layout`] for the bytes.
//!
//! - **Record logs: one fence per append.** A record is self-validating (length, generation,
//!   an XXH3-64 check of its payload seeded with its offset and generation: not a CRC, which a
//!   payload holding its own CRC can fool). An appender copies it with
//!   streaming stores and one SFENCE, waits until every earlier append has completed, and is
//!   durable: an open after a crash reads on from the state word's **watermark** while records
//!   are whole and of the current generation. The watermark is stored only every
//!   [`MARK_INTERVAL`] bytes (64 KiB), on the cache-line path riding on the next record's
//!   fence, and on [`Log::sync`] and on close: it bounds what an open reads, and damage below it
//!   is [`WalError::CorruptRecord`], never the end of the log. Each
//!   writable open stores the end it found with a **new generation**, so a whole record left
//!   behind a torn one can never be read later, however the later appends line up with it.
//!   In `msync` mode the commit is one `msync` of the new bytes, taken without a lock.
//! - **Raw logs: the persisted tail.** libpmemlog's unframed byte stream cannot validate
//!   itself, so an append persists its bytes, then stores and persists the state word's tail
//!   (group commit shares it). Nothing past the tail is ever read.
//! - We measured both protocols before choosing (`benches/commit_protocol.rs`): once page faults
//!   are out of the way (see below), one fence per append is 2.3–2.6× the persisted tail on
//!   this machine's emulated NVM. The first version used the persisted tail for both framings.
//! - **Rewind** is one persisted 8-byte store of (tail 0, generation + 1). Records of older
//!   generations past the tail are never read. Generations are 20 bits: the one rewind in 2^20
//!   that would wrap a record log's generation zeroes the data area first (an open finishes a
//!   zeroing cut short), so a record log never meets a stale record of its own generation.
//! - **No page faults on the append path.** Where the log file is memory (tmpfs) or DAX, an
//!   append that reaches past the populated part of the mapping first populates the next
//!   [`POPULATE_WINDOW`] (2 MiB) writable in one call (`MADV_POPULATE_WRITE`): a first store
//!   into an unmapped page costs microseconds here, more than several appends.
//!   [`Log::prefault`] populates the whole log at once. An append of 256 KiB or more into a
//!   part never populated of a memory file goes through `pwrite` instead: the kernel copies
//!   into the file's pages without mapping them, nor zeroing the fresh ones it fills whole (not
//!   on DAX, where such a write's extent change would wait for an `fdatasync`). On a disk the
//!   appender always writes with `pwrite`, for the same reason.
//! - **Growth while open.** Opened with a limit ([`OpenOptions::max_bytes`]), a log whose next
//!   append does not fit grows first, to twice its size or what the append needs (never past the
//!   limit): the file is grown (`fallocate`, then `fsync`: storage's `RawFile::grow_to`), then
//!   the capacity word is stored and persisted, and only then may appends reserve past the old
//!   end. So an open after a crash at any step finds a capacity the file holds, and every record
//!   below it. The mapping reserved address space for the limit at open, so it never moves; an
//!   append that fits pays one atomic load for this. Only past the limit is the log full.
//! - **Corruption is never the end.** Damage below the tail or watermark, or to the state word,
//!   is a typed error naming what is wrong, at open and when read. The open decodes the mapped
//!   file with one pure function of its bytes, [`layout::decode_log`], which the fuzz targets
//!   `log_decode` and `log_scan` run without a file, tens of thousands of times a second.
//! - **Framing** is fixed at create: a record log (the default; each append is one checked
//!   record) or a raw log (libpmemlog's byte stream, no per-append overhead or checksum).
//!
//! ## libpmemlog, side by side
//!
//! A raw log does what libpmemlog 1.12 does, call for call: the same outcomes (each
//! [`WalError`] stands for the `errno` libpmemlog sets), bytes walked in the same chunks, the
//! same `tell`, the same contents after reopen. `tests/raw_logs_match_libpmemlog.rs` (Cargo
//! feature `pmdk`) runs random sequences and PMDK's own log tests against both. The differences
//! are deliberate, and these are all of them:
//!
//! | libpmemlog | here | differences, and why |
//! |---|---|---|
//! | `pmemlog_create(path, poolsize, mode)` | [`Log::create`] | takes the database UUID, the [`Framing`], the persistence and a [`Prefill`] too ([`CreateOptions`]); `poolsize` is the size to start from where the log may grow to [`CreateOptions::max_bytes`] (a libpmemlog pool keeps its size; a log given no limit keeps its size too); the default framing is [`Framing::Records`] (below); a file from [`MIN_FILE_BYTES`](layout::MIN_FILE_BYTES) (4,160 bytes) on, where libpmemlog refuses a pool below 2 MiB (`EINVAL`): the format needs only its header page and a line; `mode` is applied less the umask, as creat(2) applies it, where libpmemlog `chmod`s the file to exactly `mode` (the umask is the administrator's say, and a log holds the database's before-images); with size 0 (built in an existing file) the bytes past the header page are overwritten with zeros, which libpmemlog leaves: a sparse file's holes are filled, so no store through the mapping meets a full disk, and nothing the file held reads as a record; [`Prefill::Zeros`] also writes a new file with zeros (on a disk, durable appends then overwrite written blocks) |
//! | `pmemlog_open(path)` | [`Log::open`], [`Log::open_for`], [`Log::open_with`] | a record log's open checks every record below its watermark, reads on past it, and starts a new generation; `open_for` rejects another database's log ([`WalError::ForeignLog`]); `open_with` can open read-only |
//! | pool sets and replicas (a `PMEMPOOLSET` file as the path) | — | not offered: a log is one file |
//! | `pmemlog_append(plp, buf, count)` | [`Log::append`] | returns the append's position; runs in parallel with other appends (`&self`; libpmemlog takes a write lock); in a record log it is one record of [`record_size`](layout::record_size)`(count)` bytes (16 bytes of header, padded to 64), refused whole if it does not fit |
//! | `pmemlog_appendv(plp, iov, n)` | [`Log::append_vectored`] | as `append`, with [`std::io::IoSlice`] (a negative count cannot be said) |
//! | — | [`Log::append_record`], [`Log::records`], [`Log::records_newest_first`] | framed records |
//! | — | [`Log::append_buffered`] + [`Log::sync`] | batching: not durable until `sync` |
//! | — | [`Log::prefault`] | maps the whole log writable now; appends otherwise do it 2 MiB at a time |
//! | `pmemlog_walk(plp, chunksize, cb, arg)` | [`Log::walk`] | a closure returning `bool` (continue); holds no lock and walks a snapshot, so appending from the callback cannot deadlock (libpmemlog's read lock makes it); a record log's chunks are its payloads, each chunked alone, and one with no records gets no call |
//! | `pmemlog_rewind(plp)` | [`Log::rewind`] | takes `&mut self`, so no borrow of old bytes survives it; starts a new generation |
//! | `pmemlog_nbyte(plp)` | [`Log::nbyte`] | the file as it is now less one 4 KiB header page; libpmemlog keeps two and rounds the pool down to whole pages, so the same file holds 4 KiB less there, and nothing past its last whole page; [`Log::max_bytes`] for the most a growing log may reach |
//! | `pmemlog_tell(plp)` | [`Log::tell`] | a record log counts its framing; [`Log::durable_tell`] for the durable part |
//! | `pmemlog_close(plp)` | `Drop` | a buffered append not yet synced may be lost, as the docs of [`Log::append_buffered`] say |
//! | `pmemlog_check(path)` | [`Log::open_with`] read-only (`nvpage log check`) | checks a record log's every record too |
//! | `-1` or `NULL` and `errno`; `pmemlog_errormsg()` | [`Result`] | typed errors ([`WalError`]) naming the file and the cause |
//! | `pmemlog_check_version`, `pmemlog_set_funcs`, `pmemlog_ctl_*` | — | not offered: Cargo checks versions, Rust's allocator is the process's |
//!
//! ## Invariants
//!
//! - `mark <= durable <= copied <= reserved <= capacity <= max capacity` (bytes of the data
//!   area); the state word on the medium holds `mark`, stored only after every byte below it is
//!   persisted; the capacity word holds `capacity`, stored only after the file holds it durably,
//!   and persisted before any append reserves past the capacity before it.
//! - The capacity never decreases, and the file never shrinks.
//! - Bytes below `copied` are never written until a rewind (`&mut self`).
//! - In a record log, every record at or past the stored watermark that an open accepts has the
//!   state word's generation, and no generation is reused while a record of it may remain.
//! - Any persist failure poisons the log until reopen; it never pretends data is safe.
//!
//! `unsafe` is confined to `log.rs` (the state word, reading the mapping), `grow.rs` (the
//! capacity word), `append.rs` (copying into reserved ranges), `xxh3.rs` (SSE2 intrinsics that
//! take no pointers: x86_64's baseline; AVX2 ones behind a proof that only a run-time check
//! creates), `layout.rs` (entering the AVX2 build of the loop that stores and hashes a record,
//! and its 32-byte line stores, with that proof) and the optional `pmdk` FFI shim.

mod append;
mod error;
mod grow;
pub mod layout;
mod log;
#[cfg(feature = "pmdk")]
pub mod pmdk;
mod records;
mod xxh3;

pub use append::MARK_INTERVAL;
pub use error::{Result, WalError};
pub use layout::{Framing, LogHeader};
pub use log::{CreateOptions, Log, OpenOptions, POPULATE_WINDOW, Prefill, RecordPos};
pub use records::{Record, Records};
pub use uuid::Uuid;
