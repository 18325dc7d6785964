//! # nvpage-wal
//!
//! A persistent-memory log: a file that is mapped and appended to, as PMDK's libpmemlog did
//! (create, open, append, vectored append, walk, rewind, nbyte, tell, close), plus framed records
//! with checksums and generations, a record iterator, many appenders with group commit, and a
//! buffered append. The engine uses it as its undo-only write-ahead log: page before-images are
//! appended durably before pages are overwritten in place, and a rewind is the commit point.
//!
//! What it is not: not a redo log, not a ring (a full log is [`WalError::LogFull`]; the owner
//! rewinds), not a multi-file segment store, and it never interprets payloads.
//!
//! ## Design (details in `docs/design.md`, "The log")
//!
//! The file is a header page (magic, version, framing, database UUID, capacity, CRC32C: written
//! once at create), an 8-byte **state word** alone in the next cache line (tail and generation,
//! outside the header checksum), then the data area. See [`layout`] for the bytes.
//!
//! - **Persisted tail.** An append persists its bytes (streaming stores and SFENCE on the
//!   appending thread, or `msync`), then the state word's tail is stored with one aligned 8-byte
//!   store and persisted. Everything below the persisted tail is durable and nothing past it is
//!   ever read, so the log's content after any crash is exactly the whole appends below the tail.
//!   This costs a second fence per commit; group commit shares it among concurrent appenders. The
//!   alternative — a lazily persisted watermark and self-validating records past it, one fence —
//!   measured 13–20% faster with one thread and ~10% with two on this machine
//!   (`benches/commit_protocol.rs`), but needs a scan at open, a hash chain so that a record
//!   landed behind a lost one can never reappear later, cannot work for raw (unframed) logs,
//!   and makes generation wrap-around a correctness question. We chose the persisted tail.
//! - **Rewind** is one persisted 8-byte store of (tail 0, generation + 1). Stale records of
//!   older generations past the tail are never read.
//! - **Corruption is never the end.** A damaged record below the tail is
//!   [`WalError::CorruptRecord`] naming its offset, at open and when read.
//! - **Framing** is fixed at create: a record log (the default; each append is one checked
//!   record) or a raw log (libpmemlog's byte stream, no per-append overhead or checksum).
//!
//! ## libpmemlog, side by side
//!
//! | libpmemlog | here | differences, and why |
//! |---|---|---|
//! | `pmemlog_create(path, poolsize, mode)` | [`Log::create`] | takes the database UUID and framing ([`CreateOptions`]); refuses an existing file, as libpmemlog does |
//! | `pmemlog_open(path)` | [`Log::open`], [`Log::open_for`] | checks every record below the tail; `open_for` rejects another database's log ([`WalError::ForeignLog`]) |
//! | `pmemlog_append(plp, buf, count)` | [`Log::append`] | returns the append's position; takes `&self` and runs in parallel with other appends |
//! | `pmemlog_appendv(plp, iov, n)` | [`Log::append_vectored`] | the same, with [`std::io::IoSlice`] |
//! | — | [`Log::append_record`], [`Log::records`], [`Log::records_newest_first`] | framed records |
//! | — | [`Log::append_buffered`] + [`Log::sync`] | batching: not durable until `sync` |
//! | `pmemlog_walk(plp, chunksize, cb, arg)` | [`Log::walk`] | a closure returning `bool` (continue); honours the chunk size; holds no lock, so appending from the callback cannot deadlock |
//! | `pmemlog_rewind(plp)` | [`Log::rewind`] | one 8-byte store; takes `&mut self` so no borrow of old bytes survives it |
//! | `pmemlog_nbyte(plp)` | [`Log::nbyte`] | usable bytes of the data area |
//! | `pmemlog_tell(plp)` | [`Log::tell`] | bytes used, framing included; [`Log::durable_tell`] for the persisted part |
//! | `pmemlog_close(plp)` | `Drop` | a buffered append not yet synced may be lost, as the docs of [`Log::append_buffered`] say |
//!
//! ## Invariants
//!
//! - `durable <= copied <= reserved <= capacity` (bytes of the data area); the state word on the
//!   medium holds a tail `<= durable`'s last value and is only stored after every byte below the
//!   new tail is persisted.
//! - Bytes below `copied` are never written until a rewind (`&mut self`).
//! - Any persist failure poisons the log until reopen; it never pretends data is safe.
//!
//! `unsafe` is confined to `log.rs` (the state word, reading the mapping), `append.rs` (copying
//! into reserved ranges) and the optional `pmdk` FFI shim.

mod append;
mod error;
pub mod layout;
mod log;
#[cfg(feature = "pmdk")]
pub mod pmdk;
mod records;

pub use error::{Result, WalError};
pub use layout::{Framing, LogHeader};
pub use log::{CreateOptions, Log, OpenOptions, RecordPos};
pub use records::{Record, Records};
pub use uuid::Uuid;
