//! [`Log`]: opening, creating, reading and rewinding. Appending is in `append.rs`.

use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use nvpage_storage::{Durability, FileOptions, PersistRequest, RawFile, StorageError};
use parking_lot::Mutex;
use uuid::Uuid;

use crate::error::{Result, WalError};
use crate::layout::{
    self, DATA_OFFSET, Framing, HEADER_LEN, HeaderFault, LogHeader, MAX_CAPACITY, MIN_FILE_BYTES,
    STATE_OFFSET, State,
};

/// How to create a log.
#[derive(Clone, Debug)]
pub struct CreateOptions {
    /// The database the log belongs to; written into the header.
    pub uuid: Uuid,
    /// Records (the default) or libpmemlog's raw byte stream.
    pub framing: Framing,
    /// How ranges are persisted (storage's [`PersistRequest`]).
    pub persistence: PersistRequest,
}

impl CreateOptions {
    /// A record log for database `uuid`, persisted as storage decides by default.
    pub fn new(uuid: Uuid) -> Self {
        Self { uuid, framing: Framing::Records, persistence: PersistRequest::Auto }
    }
}

/// How to open a log.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// Refuse every append and rewind (the `nvpage log` tools open this way).
    pub read_only: bool,
    /// How ranges are persisted (storage's [`PersistRequest`]).
    pub persistence: PersistRequest,
    /// The database the log must belong to: another UUID in the header is
    /// [`WalError::ForeignLog`].
    pub expect_uuid: Option<Uuid>,
}

/// A position in the data area: the offset of a record (or of a raw append's first byte),
/// counted from the start of the data area. Valid until the next [`Log::rewind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecordPos(pub u64);

/// A persistent-memory log file (see the crate docs for the design and libpmemlog's mapping).
///
/// Byte ranges, all relative to the data area, with `durable <= copied <= reserved`:
/// - below `durable`: persisted, and the state word on the medium says so;
/// - below `copied`: every append's bytes are written (and, in the cache-line modes, fenced by
///   the thread that wrote them), in order; readers see up to here;
/// - below `reserved`: claimed by appenders, possibly still being copied.
///
/// Bytes below `copied` are never written again until [`Log::rewind`], which takes `&mut self`:
/// that is what lets readers borrow them as `&[u8]` for as long as they borrow the log.
#[derive(Debug)]
pub struct Log {
    pub(crate) file: RawFile,
    pub(crate) base: NonNull<u8>,
    pub(crate) header: LogHeader,
    pub(crate) generation: u32,
    pub(crate) reserved: AtomicU64,
    pub(crate) copied: AtomicU64,
    pub(crate) durable: AtomicU64,
    pub(crate) record_count: AtomicU64,
    /// Held only while the state word is stored and persisted (the group-commit leader).
    pub(crate) commit: Mutex<()>,
}

// SAFETY: `base` points into the mapping owned by `file`, which lives as long as the log. Every
// access through it follows the byte-range discipline documented on `Log`: appenders write only
// ranges they reserved with an atomic, readers read only below `copied` (published with
// Release/Acquire), and the state word is written only under `commit` or with `&mut self`.
unsafe impl Send for Log {}
// SAFETY: as above; shared access never creates two writers of one byte, nor a writer of a byte
// a reader may hold.
unsafe impl Sync for Log {}

impl Log {
    /// Creates a log file of `size_bytes` bytes (header page included), refusing an existing
    /// file. libpmemlog: `pmemlog_create(path, poolsize, mode)`; ours takes the database UUID
    /// and the framing instead of a file mode (the file gets the process's umask), and a crash
    /// during create leaves a file that `open` rejects as not a log (delete it and create again).
    pub fn create(path: &Path, size_bytes: u64, opts: &CreateOptions) -> Result<Self> {
        let max_bytes = DATA_OFFSET as u64 + MAX_CAPACITY;
        if !(MIN_FILE_BYTES..=max_bytes).contains(&size_bytes) {
            return Err(WalError::SizeOutOfRange {
                size_bytes,
                min_bytes: MIN_FILE_BYTES,
                max_bytes,
            });
        }
        let fopts = file_options(false, opts.persistence, size_bytes);
        let file = RawFile::create(path, &fopts)?;
        let header = LogHeader {
            framing: opts.framing,
            uuid: opts.uuid,
            capacity: size_bytes - DATA_OFFSET as u64,
        };
        let made = (|| {
            file.grow_to(size_bytes)?;
            file.write_at(
                &State { tail: 0, generation: 0 }.encode().to_le_bytes(),
                STATE_OFFSET as u64,
            )?;
            file.write_at(&header.encode(), 0)?;
            file.sync()
        })();
        if let Err(e) = made {
            drop(file);
            let _ = std::fs::remove_file(path);
            return Err(e.into());
        }
        Self::assemble(file, header, State { tail: 0, generation: 0 }, 0)
    }

    /// Opens a log, checking its header, its state word and every record below the tail.
    /// libpmemlog: `pmemlog_open(path)`.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with(path, &OpenOptions::default())
    }

    /// Opens the log of database `uuid`: a log of another database is [`WalError::ForeignLog`].
    pub fn open_for(path: &Path, uuid: Uuid) -> Result<Self> {
        Self::open_with(path, &OpenOptions { expect_uuid: Some(uuid), ..OpenOptions::default() })
    }

    /// Opens a log with options.
    pub fn open_with(path: &Path, opts: &OpenOptions) -> Result<Self> {
        let len = match std::fs::metadata(path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(WalError::Missing { path: path.into() });
            }
            Err(e) => return Err(StorageError::io("stat", path, e).into()),
        };
        if len < DATA_OFFSET as u64 {
            return Err(short_file(path, len));
        }
        let file = RawFile::open(path, &file_options(opts.read_only, opts.persistence, len))?;
        let mut hb = [0u8; HEADER_LEN];
        file.read_at(&mut hb, 0)?;
        let header = LogHeader::decode(&hb).map_err(|f| header_error(path, f))?;
        let expected_bytes = DATA_OFFSET as u64 + header.capacity;
        let found_bytes = file.len_bytes();
        if found_bytes < expected_bytes {
            return Err(WalError::Truncated { path: path.into(), expected_bytes, found_bytes });
        }
        if let Some(expected) = opts.expect_uuid.filter(|u| *u != header.uuid) {
            return Err(WalError::ForeignLog { path: path.into(), expected, found: header.uuid });
        }
        let mut wb = [0u8; 8];
        file.read_at(&mut wb, STATE_OFFSET as u64)?;
        let word = u64::from_le_bytes(wb);
        let state = State::decode(word);
        if state.tail > header.capacity {
            return Err(WalError::CorruptState {
                path: path.into(),
                word,
                reason: format!("tail {} passes the capacity {}", state.tail, header.capacity),
            });
        }
        let mut log = Self::assemble(file, header, state, 0)?;
        log.record_count = AtomicU64::new(log.verify()?);
        Ok(log)
    }

    fn assemble(file: RawFile, header: LogHeader, state: State, records: u64) -> Result<Self> {
        let base = file.map_base().ok_or_else(|| {
            WalError::Storage(StorageError::io(
                "mmap",
                file.path(),
                std::io::Error::other("the log file is not mapped"),
            ))
        })?;
        Ok(Self {
            file,
            base,
            header,
            generation: state.generation,
            reserved: AtomicU64::new(state.tail),
            copied: AtomicU64::new(state.tail),
            durable: AtomicU64::new(state.tail),
            record_count: AtomicU64::new(records),
            commit: Mutex::new(()),
        })
    }

    /// Checks every record below the tail; returns how many there are.
    fn verify(&self) -> Result<u64> {
        if self.header.framing == Framing::Raw {
            return Ok(0);
        }
        let mut n = 0;
        for r in self.records()? {
            r?;
            n += 1;
        }
        Ok(n)
    }

    /// Usable bytes of the data area. libpmemlog: `pmemlog_nbyte`.
    pub fn nbyte(&self) -> u64 {
        self.header.capacity
    }

    /// Bytes in the log: every completed append, framing included, buffered ones not yet synced
    /// included. libpmemlog: `pmemlog_tell`.
    pub fn tell(&self) -> u64 {
        self.copied.load(Ordering::Acquire)
    }

    /// Bytes of the log known durable: the tail the state word on the medium holds.
    pub fn durable_tell(&self) -> u64 {
        self.durable.load(Ordering::Acquire)
    }

    /// Records in the log (0 for a raw log, which has no records).
    pub fn record_count(&self) -> u64 {
        self.record_count.load(Ordering::Acquire)
    }

    /// The current generation (24 bits, wrapping): each rewind starts the next.
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// The header: framing, database UUID, capacity.
    pub fn header(&self) -> &LogHeader {
        &self.header
    }

    /// The database the log belongs to.
    pub fn uuid(&self) -> Uuid {
        self.header.uuid
    }

    /// The log's framing.
    pub fn framing(&self) -> Framing {
        self.header.framing
    }

    /// How the log's bytes are persisted and what that survives.
    pub fn durability(&self) -> Durability {
        self.file.durability()
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Whether an earlier persist failure poisoned the log (every write fails until reopen).
    pub fn is_poisoned(&self) -> bool {
        self.file.is_poisoned()
    }

    /// Empties the log in one persisted 8-byte store of (tail 0, generation + 1): the commit
    /// point of the engine's transactions. Records of older generations left in the data area
    /// are never read again: nothing past the persisted tail is. libpmemlog: `pmemlog_rewind`
    /// (a pmemobj transaction there).
    ///
    /// Takes `&mut self`: no append, walk or record borrow may be in progress, because the
    /// appends after a rewind overwrite the bytes those borrow.
    pub fn rewind(&mut self) -> Result<()> {
        self.file.check_writable()?;
        let next = State { tail: 0, generation: State::next_generation(self.generation) };
        self.store_state(next)?;
        self.generation = next.generation;
        for a in [&self.reserved, &self.copied, &self.durable, &self.record_count] {
            a.store(0, Ordering::Release);
        }
        Ok(())
    }

    /// Stores the state word with one aligned 8-byte store and persists it. Callers hold
    /// `commit` or `&mut self`, and every byte below `state.tail` is persisted already.
    pub(crate) fn store_state(&self, state: State) -> Result<()> {
        self.file.check_writable()?;
        // SAFETY: STATE_OFFSET is inside the header page, which every log file has (checked at
        // open/create), and 8-byte aligned (const-asserted; the mapping is page-aligned). Only
        // the commit leader (holding `commit`) or a `&mut self` caller stores here, and nobody
        // holds a reference to these bytes, so the atomic store races with nothing.
        let word = unsafe { &*self.base.as_ptr().add(STATE_OFFSET).cast::<AtomicU64>() };
        word.store(state.encode().to_le(), Ordering::Release);
        self.file.persist_range(STATE_OFFSET as u64, 8)?;
        Ok(())
    }

    /// The data area's bytes `[0, end)`.
    ///
    /// Callers pass `end <= copied` (loaded with Acquire): those bytes are written, published,
    /// and never written again while `&self` is borrowed (only a rewind, `&mut self`, lets them
    /// be overwritten).
    pub(crate) fn data(&self, end: u64) -> &[u8] {
        debug_assert!(end <= self.copied.load(Ordering::Acquire));
        // SAFETY: `DATA_OFFSET + end <= DATA_OFFSET + capacity <= file length` (checked at open
        // and create), so the range is mapped and backed. Per the contract above no thread
        // writes these bytes while the returned borrow of `self` lives.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(DATA_OFFSET), end as usize) }
    }
}

fn file_options(read_only: bool, persistence: PersistRequest, max_bytes: u64) -> FileOptions {
    FileOptions { mapped: true, read_only, max_bytes, persistence }
}

fn short_file(path: &Path, len: u64) -> WalError {
    let mut magic = [0u8; 8];
    let is_log = std::fs::File::open(path)
        .and_then(|f| std::os::unix::fs::FileExt::read_exact_at(&f, &mut magic, 0))
        .map(|()| magic == layout::MAGIC);
    match is_log {
        Ok(false) => WalError::NotALog { path: path.into() },
        _ => WalError::Truncated {
            path: path.into(),
            expected_bytes: MIN_FILE_BYTES,
            found_bytes: len,
        },
    }
}

fn header_error(path: &Path, f: HeaderFault) -> WalError {
    match f {
        HeaderFault::NotALog => WalError::NotALog { path: path.into() },
        HeaderFault::Version(found) => {
            WalError::VersionMismatch { path: path.into(), expected: layout::FORMAT_VERSION, found }
        }
        HeaderFault::Corrupt(reason) => WalError::CorruptHeader { path: path.into(), reason },
    }
}
