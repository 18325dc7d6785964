//! [`Log`]: opening, creating, reading and rewinding. Appending is in `append.rs`.

use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;
use nvpage_storage::{Advice, Durability, FileOptions, PersistRequest, RawFile, StorageError};
use parking_lot::Mutex;
use uuid::Uuid;

use crate::error::{Result, WalError};
use crate::layout::{
    self, CAPACITY_WORD_OFFSET, DATA_OFFSET, FIRST_GENERATION, Framing, GENERATION_MASK,
    HeaderFault, LogFault, LogHeader, MAX_CAPACITY, MIN_FILE_BYTES, STATE_OFFSET, Scan, ScanFault,
    State,
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
    /// How the file's space is set aside, at create and when it grows (default
    /// [`Prefill::Allocate`]).
    pub prefill: Prefill,
    /// The permission bits of the file a create makes (default `0o600`: the owner reads and
    /// writes), at most `0o7777`, less the process's umask as creat(2) applies them: the file
    /// has them from the moment it exists. A create with size 0, which builds the log in an
    /// existing file, leaves that file's bits as they are. libpmemlog: `pmemlog_create`'s
    /// `mode`.
    pub mode: u32,
    /// How large the returned handle lets the file grow ([`OpenOptions::max_bytes`]; default
    /// `None`: it keeps its size).
    pub max_bytes: Option<u64>,
}

impl CreateOptions {
    /// A record log for database `uuid`, persisted as storage decides by default, its space
    /// allocated without writing it, of a fixed size.
    pub fn new(uuid: Uuid) -> Self {
        Self {
            uuid,
            framing: Framing::Records,
            persistence: PersistRequest::Auto,
            prefill: Prefill::Allocate,
            mode: 0o600,
            max_bytes: None,
        }
    }
}

/// How [`Log::create`] sets aside the log file's space, and a growth the space it adds. Either
/// way the space is reserved before any append uses it, so no append can meet a full file system
/// halfway: a full log, or a growth the file system has no room for, refuses the append before
/// it changes anything. What differs is what the first durable append into each block costs on a
/// disk file system.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Prefill {
    /// `fallocate`: blocks reserved, nothing written. Cheapest to create. On ext4 and XFS the
    /// blocks are "unwritten" extents, so every sync that first covers a block also commits the
    /// file system's journal to mark it written: on a disk, each small durable append pays a
    /// journal commit until the log has been filled once.
    #[default]
    Allocate,
    /// Allocated, then zeros written over the whole data area and synced, once, at create (as
    /// PostgreSQL fills each WAL segment with zeros): durable appends on a disk then overwrite
    /// written blocks, and a sync writes data only. Costs writing the file once more at create;
    /// worth it on a disk for a log that is synced often and lives long (a database's WAL), not
    /// for one filled once. On memory media (tmpfs, DAX) it gains nothing.
    Zeros,
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
    /// The largest the file may grow to, header page included: an append that does not fit
    /// grows the log first (to twice its size, or to what the append needs if more, never past
    /// this), and only an append past this limit is [`WalError::LogFull`]. The address space
    /// for it is reserved at open, so the mapping never moves. `None` (the default), a limit
    /// below the file's size, a read-only open and a log of a format before
    /// [`GROWABLE_VERSION`](crate::layout::GROWABLE_VERSION) keep the file's size, as
    /// libpmemlog's pools do.
    pub max_bytes: Option<u64>,
    /// How a growth sets aside the space it adds (default [`Prefill::Allocate`]).
    pub prefill: Prefill,
}

/// A position in the data area: the offset of a record (or of a raw append's first byte),
/// counted from the start of the data area. Valid until the next [`Log::rewind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecordPos(pub u64);

/// A persistent-memory log file (see the crate docs for the design and libpmemlog's mapping).
///
/// Byte ranges, all relative to the data area, with `mark <= durable <= copied <= reserved`:
/// - below `mark`: the tail (raw log) or watermark (record log) the state word on the medium
///   holds;
/// - below `durable`: persisted, and found again by an open after a crash (a raw log's tail is
///   persisted up to here; a record log's records are self-validating past its watermark);
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
    /// Written by every reservation: on a cache line of its own, so that one appender's claim
    /// does not take the line the completing appender is publishing `copied` in.
    pub(crate) reserved: CachePadded<AtomicU64>,
    pub(crate) copied: AtomicU64,
    pub(crate) durable: AtomicU64,
    /// The tail of the state word last stored (see the list above).
    pub(crate) mark: AtomicU64,
    pub(crate) record_count: AtomicU64,
    /// Held while the state word is stored and persisted: by the group-commit leader, by
    /// `sync` and close, and by an append that carries the watermark, for its whole copy.
    pub(crate) commit: Mutex<()>,
    /// Appends that waited past the spin for an earlier one to complete ([`Log::order_waits`]).
    pub(crate) order_waits: AtomicU64,
    /// Appends copied but not yet published because an earlier one had not completed, as
    /// `(start, end)`: whoever publishes the append before one of them publishes it too
    /// (`Log::complete_in_order`). At most one entry per appending thread.
    pub(crate) pending: Mutex<Vec<(u64, u64)>>,
    /// `pending`'s length, read without its lock by every completing appender.
    pub(crate) pending_len: AtomicUsize,
    /// What every append reads and hardly any writes: the capacity and how much of it is
    /// populated. On a cache line of their own, away from the cursors every append writes.
    pub(crate) extent: CachePadded<Extent>,
    /// Held while a window is populated.
    pub(crate) populating: Mutex<()>,
    /// The largest capacity a growth may reach (the capacity itself when the log does not grow).
    pub(crate) max_capacity: u64,
    /// How a growth sets aside its space.
    pub(crate) prefill: Prefill,
    /// Held while the log grows (`Log::grow_for`).
    pub(crate) growing: Mutex<()>,
}

/// The data area's extent: read by every append, changed rarely.
#[derive(Debug)]
pub(crate) struct Extent {
    /// Usable bytes of the data area. Only grows, and only after the capacity word holding it
    /// is persisted (`Log::grow_for`): an append reserves below it.
    pub(crate) capacity: AtomicU64,
    /// The data area below this is mapped writable ([`Log::populate_to`]). It changes once per
    /// 2 MiB of appends.
    pub(crate) populated: AtomicU64,
}

/// Open file descriptions a record log in `msync` mode keeps for its concurrent commits' syncs
/// (file descriptors: a database holds two more than its two files): more committers than this
/// at once wait for one to come free, and each sync covers every append completed before it.
const SYNC_HANDLES: usize = 2;

/// How much of the data area an append populates at once when it reaches the unpopulated part
/// (2 MiB: one call per 8,192 appends of 256 B, about a millisecond on tmpfs here).
pub const POPULATE_WINDOW: u64 = 2 << 20;

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
    /// file ([`StorageError::AlreadyExists`]), with permission bits [`CreateOptions::mode`].
    ///
    /// With `size_bytes` 0 it builds the log inside the existing file `path` instead, taking
    /// the file's size, as `pmemlog_create(path, 0, mode)` does: the file must exist
    /// ([`WalError::Missing`]), be of a size a log may have ([`WalError::SizeOutOfRange`]) and
    /// hold only zeros in its first [`DATA_OFFSET`] bytes, where the header goes
    /// ([`WalError::NotBlank`]; libpmemlog likewise refuses a file whose pool header is not
    /// zeros). What the rest of the file held is overwritten with zeros, whatever the
    /// [`Prefill`]: the file may be sparse (a `truncate`d one is), and no byte it held may later
    /// read as a record. Its permission bits are left as they are.
    ///
    /// libpmemlog: `pmemlog_create(path, poolsize, mode)`; ours takes the database UUID, the
    /// framing and the persistence too. A crash during create leaves a file that `open` rejects
    /// (a new file: delete it and create again; an existing one: zero its first page) or an
    /// empty log.
    pub fn create(path: &Path, size_bytes: u64, opts: &CreateOptions) -> Result<Self> {
        if opts.mode & !0o7777 != 0 {
            return Err(WalError::InvalidMode { mode: opts.mode });
        }
        // A log built in an existing file keeps that file's size (its mapping is reserved for
        // that much): it does not grow.
        let in_place = size_bytes == 0;
        let (file, limit) = if in_place {
            let file = claim_blank_file(path, opts.persistence)?;
            let len = file.len_bytes();
            (file, len)
        } else {
            check_file_size(size_bytes)?;
            let limit = growth_limit(opts.max_bytes, size_bytes);
            let fopts = file_options(false, opts.persistence, limit);
            (RawFile::create_with_mode(path, &fopts, opts.mode)?, limit)
        };
        let size_bytes = if in_place { file.len_bytes() } else { size_bytes };
        let header = LogHeader {
            version: layout::FORMAT_VERSION,
            framing: opts.framing,
            uuid: opts.uuid,
            capacity: size_bytes - DATA_OFFSET as u64,
        };
        let made = (|| -> Result<()> {
            file.grow_to(size_bytes).map_err(|e| no_space(e, path, size_bytes))?;
            if in_place || opts.prefill == Prefill::Zeros {
                // Before the state word and header, all synced together below: the blocks were
                // allocated and read as zeros (or, in place, the header page was blank), so a
                // crash anywhere leaves what a crash in a create without this would (only the
                // prefill's benefit may be partial). In place, the zeros also fill the file's
                // holes, so that no store through the mapping can meet a full disk.
                // SAFETY: the log that will hand out references into the file's mapping does
                // not exist yet, and the file is locked against every other opener.
                unsafe { write_zeros(&file, 0, header.capacity)? };
            }
            // SAFETY: as above.
            unsafe {
                let capacity = layout::encode_capacity(header.capacity);
                file.write_at_mapped(&capacity.to_le_bytes(), CAPACITY_WORD_OFFSET as u64)?;
                file.write_at_mapped(&FRESH.encode().to_le_bytes(), STATE_OFFSET as u64)?;
                file.write_at_mapped(&header.encode(), 0)?;
            }
            Ok(file.sync()?)
        })();
        if let Err(e) = made {
            drop(file);
            if !in_place {
                let _ = std::fs::remove_file(path);
            }
            return Err(e);
        }
        let extent = (header.capacity, limit - DATA_OFFSET as u64);
        Self::assemble(file, header, extent, FRESH, opts.prefill)
    }

    /// Whether [`Log::create`] takes a file of `size_bytes` (header page included): a size the
    /// format cannot hold is [`WalError::SizeOutOfRange`]. For callers that check their options
    /// before creating anything.
    pub fn check_size(size_bytes: u64) -> Result<()> {
        check_file_size(size_bytes)
    }

    /// Opens a log, checking its header, its state word and every record below the tail (or
    /// watermark); in a record log it then reads on past the watermark while the records are
    /// whole and of the current generation, and — unless read-only — starts a new generation
    /// there, so that no record found invalid now can be taken for valid later.
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
            Ok(m) if !m.is_file() => {
                let found = nvpage_storage::file::file_kind(&m);
                return Err(StorageError::NotAFile { path: path.into(), found }.into());
            }
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(WalError::Missing { path: path.into() });
            }
            Err(e) => return Err(StorageError::io("stat", path, e).into()),
        };
        if len < DATA_OFFSET as u64 {
            // Shorter than a header page, so not a log whatever its bytes: they only tell which
            // error it is (a file that grew since the `stat` is judged by its first `len`).
            let image = std::fs::read(path).map_err(|e| StorageError::io("read", path, e))?;
            let short = &image[..image.len().min(len as usize)];
            if let Err(f) = layout::decode_log(short, opts.expect_uuid) {
                return Err(fault_error(path, f));
            }
        }
        let limit = if opts.read_only { len } else { growth_limit(opts.max_bytes, len) };
        let file = RawFile::open(path, &file_options(opts.read_only, opts.persistence, limit))?;
        let base = mapping_base(&file)?;
        // SAFETY: the mapping covers the file's `len_bytes()` bytes, all backed. Nothing writes
        // them while the slice lives: the log is not assembled yet, so no appender exists, and
        // the file is locked (`flock`) against every other opener.
        let image = unsafe { std::slice::from_raw_parts(base.as_ptr(), file.len_bytes() as usize) };
        let decoded =
            layout::decode_log(image, opts.expect_uuid).map_err(|f| fault_error(path, f))?;
        let capacity = decoded.capacity;
        // A log of an older format has no capacity word to grow by.
        let growable = decoded.header.version >= layout::GROWABLE_VERSION;
        // The limit is at least the file's length, which holds the capacity (decode checked).
        let max_capacity = if growable { limit - DATA_OFFSET as u64 } else { capacity };
        let extent = (capacity, max_capacity);
        let mut log = Self::assemble(file, decoded.header, extent, decoded.state, opts.prefill)?;
        if let Some(scan) = decoded.scan {
            log.finish_recovery(scan, opts.read_only)?;
        }
        Ok(log)
    }

    /// The log over `file`, whose data area holds `capacity` bytes and may grow to
    /// `max_capacity`: `extent` is the two.
    fn assemble(
        file: RawFile,
        header: LogHeader,
        (capacity, max_capacity): (u64, u64),
        state: State,
        prefill: Prefill,
    ) -> Result<Self> {
        let base = mapping_base(&file)?;
        if header.framing == Framing::Records
            && !file.is_read_only()
            && !file.mode().uses_cache_lines()
        {
            // Record commits in `msync` mode sync concurrently, each through a description of
            // its own (`Log::commit_to`), opened now, before the first append.
            file.open_sync_handles(SYNC_HANDLES)?;
        }
        Ok(Self {
            file,
            base,
            header,
            generation: state.generation,
            reserved: CachePadded::new(AtomicU64::new(state.tail)),
            copied: AtomicU64::new(state.tail),
            durable: AtomicU64::new(state.tail),
            mark: AtomicU64::new(state.tail),
            record_count: AtomicU64::new(0),
            order_waits: AtomicU64::new(0),
            pending: Mutex::new(Vec::new()),
            pending_len: AtomicUsize::new(0),
            commit: Mutex::new(()),
            extent: CachePadded::new(Extent {
                capacity: AtomicU64::new(capacity),
                populated: AtomicU64::new(0),
            }),
            populating: Mutex::new(()),
            max_capacity,
            prefill,
            growing: Mutex::new(()),
        })
    }

    /// Maps every page of the data area writable now, in one call, so that no append takes a
    /// page fault. Where the file is memory or DAX; elsewhere (and read-only) it does nothing.
    /// Appends do this for themselves a window at a time ([`POPULATE_WINDOW`]), so this is
    /// for callers who want the whole cost paid up front, before a latency-sensitive phase.
    /// No libpmemlog counterpart (its pools are pre-faulted by writing them).
    pub fn prefault(&self) {
        self.populate_to(self.capacity());
    }

    /// Makes sure the data area is populated up to at least `end`: a store through the mapping
    /// into a page not yet mapped is a page fault, which costs more than several appends (on
    /// tmpfs and in a VM, microseconds each), and a fresh log would take one per 4 KiB. So the
    /// first append past the populated part maps the next [`POPULATE_WINDOW`] bytes writable in
    /// one call (`MADV_POPULATE_WRITE`, a storage [`Advice::PopulateWrite`]; ignored on disk
    /// files). Appends that go through `pwrite` never need it.
    pub(crate) fn populate_to(&self, end: u64) {
        let populated = &self.extent.populated;
        if end <= populated.load(Ordering::Acquire) {
            return;
        }
        let _one = self.populating.lock();
        let from = populated.load(Ordering::Acquire);
        if end <= from {
            return;
        }
        let to = end.max(from + POPULATE_WINDOW).next_multiple_of(POPULATE_WINDOW);
        let to = to.min(self.capacity());
        self.file.advise(Advice::PopulateWrite, DATA_OFFSET as u64 + from, to - from);
        populated.store(to, Ordering::Release);
    }

    /// Finishes opening a record log whose data area [`layout::decode_log`] scanned (every
    /// record below the watermark checked; damage there is [`WalError::CorruptRecord`]: those
    /// were durable; then on past it while records are whole and of the current generation, the
    /// first that is not ending the log: it was never acknowledged, nor anything after it).
    /// Unless read-only, it stores the state word with the watermark at the end and a new
    /// generation. From then on a record left past the end — torn, or whole but behind a torn
    /// one — carries an old generation and is never read.
    fn finish_recovery(&mut self, scan: Scan, read_only: bool) -> Result<()> {
        if self.generation == 0 {
            // A rewind that wrapped the generations stopped before zeroing: the log is empty.
            self.set_end(0, 0);
            return if read_only { Ok(()) } else { self.zero_and_restart() };
        }
        let Scan { end, records } = scan;
        let stored = self.mark.load(Ordering::Acquire);
        self.set_end(end, records);
        if read_only {
            return Ok(());
        }
        // The records found past the stored watermark may never have been persisted: a process
        // that died before syncing them (or with buffered appends) left them in the page cache
        // or the CPU's caches. Persist them before a watermark above them is stored; otherwise
        // a power cut after this open would leave damage below the watermark, and the log
        // could not be opened again.
        if end > stored {
            self.file.persist_range(DATA_OFFSET as u64 + stored, (end - stored) as usize)?;
        }
        if self.generation == GENERATION_MASK {
            // No new generation without wrapping: erase what lies past the end instead.
            self.zero_data(end, self.capacity() - end)?;
        } else {
            self.generation += 1;
        }
        self.store_state(State { tail: end, generation: self.generation })
    }

    /// Sets the append cursors to `end` (at open and rewind, before any append); `mark` follows
    /// only what is stored.
    fn set_end(&mut self, end: u64, records: u64) {
        for a in [&*self.reserved, &self.copied, &self.durable] {
            a.store(end, Ordering::Release);
        }
        // Every append returned before `&mut self` could be had, and each leaves `pending` as
        // it returns; a failed one too.
        debug_assert!(self.pending.get_mut().is_empty());
        self.pending.get_mut().clear();
        *self.pending_len.get_mut() = 0;
        self.record_count.store(records, Ordering::Release);
    }

    /// Zeroes the whole data area, then stores (tail 0, the first generation): no record of any
    /// generation is left to be mistaken for a new one.
    fn zero_and_restart(&mut self) -> Result<()> {
        self.zero_data(0, self.capacity())?;
        self.generation = FIRST_GENERATION;
        self.store_state(State { tail: 0, generation: FIRST_GENERATION })
    }

    /// Writes zeros over `[from, from + len)` of the data area and makes them durable.
    fn zero_data(&mut self, from: u64, len: u64) -> Result<()> {
        // SAFETY: `&mut self`: no record borrowed from this log is alive, and the log hands out
        // no other reference into its mapping.
        unsafe { write_zeros(&self.file, from, len)? };
        Ok(self.file.sync()?)
    }

    /// Usable bytes of the data area now (a log that grows has more later). libpmemlog:
    /// `pmemlog_nbyte`.
    pub fn nbyte(&self) -> u64 {
        self.capacity()
    }

    /// The largest the file may grow to, header page included: its size, if it does not grow
    /// ([`OpenOptions::max_bytes`]).
    pub fn max_bytes(&self) -> u64 {
        DATA_OFFSET as u64 + self.max_capacity
    }

    /// Usable bytes of the data area now.
    pub(crate) fn capacity(&self) -> u64 {
        self.extent.capacity.load(Ordering::Acquire)
    }

    /// Bytes in the log: every completed append, framing included, buffered ones not yet synced
    /// included. libpmemlog: `pmemlog_tell`.
    pub fn tell(&self) -> u64 {
        self.copied.load(Ordering::Acquire)
    }

    /// Bytes of the log known durable: what an open after a crash would find at least.
    pub fn durable_tell(&self) -> u64 {
        if self.commits_by_copy() {
            return self.copied.load(Ordering::Acquire);
        }
        self.durable.load(Ordering::Acquire)
    }

    /// Whether a completed append is durable with no further step: a record log whose bytes are
    /// persisted by the appending thread's streaming stores and fence. Such a log persists its
    /// watermark only now and then ([`Log::sync`], every `MARK_INTERVAL` bytes, on close).
    pub(crate) fn commits_by_copy(&self) -> bool {
        self.header.framing == Framing::Records && self.file.mode().uses_cache_lines()
    }

    /// The tail (raw log) or watermark (record log) the state word holds, as last stored:
    /// a record log's records past it were found by reading on at open, or appended since.
    pub fn stored_mark(&self) -> u64 {
        self.mark.load(Ordering::Acquire)
    }

    /// Records in the log (0 for a raw log, which has no records).
    pub fn record_count(&self) -> u64 {
        self.record_count.load(Ordering::Acquire)
    }

    /// Appends since this handle opened that waited for an earlier append to complete past a
    /// short spin: appends complete in order, so an appender whose predecessor is descheduled
    /// mid-copy (or blocked in the kernel, or slow) waits for it, and leaves its own append for
    /// that one to publish. With the appending threads each on a core of its own such waits are
    /// rare; a count that grows with the appends means they share cores. A diagnostic for many
    /// appenders (`nvpage-bench log` reports it per round); no libpmemlog counterpart.
    pub fn order_waits(&self) -> u64 {
        self.order_waits.load(Ordering::Relaxed)
    }

    /// The current generation (20 bits): each rewind starts the next, and so does each writable
    /// open of a record log. Records carry the generation they were appended in.
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// The header: format version, framing, database UUID, capacity.
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
    /// are never read again: a raw log reads nothing past its tail, a record log nothing past
    /// its watermark that is not of the current generation. The one rewind in 2^20 that would
    /// wrap a record log's generation stores (tail 0, generation 0) instead, zeroes the data
    /// area, and starts again at generation 1 (an open finishes an interrupted zeroing).
    /// libpmemlog: `pmemlog_rewind`, a persisted store of its write offset.
    ///
    /// Takes `&mut self`: no append, walk or record borrow may be in progress, because the
    /// appends after a rewind overwrite the bytes those borrow.
    pub fn rewind(&mut self) -> Result<()> {
        self.file.check_writable()?;
        let wraps = self.generation == GENERATION_MASK;
        let next = if wraps && self.header.framing == Framing::Records {
            0
        } else {
            State::next_generation(self.generation)
        };
        self.store_state(State { tail: 0, generation: next })?;
        self.generation = next;
        self.set_end(0, 0);
        if next == 0 && self.header.framing == Framing::Records {
            // Generation 0 stored means "zeroing pending": an append now would be written in a
            // generation the next open erases. So a failed zeroing poisons the log (the open
            // finishes the zeroing).
            if let Err(e) = self.zero_and_restart() {
                self.file.poison();
                return Err(e);
            }
        }
        Ok(())
    }

    /// Stores the state word with one aligned 8-byte store and persists it. Callers hold
    /// `commit` or `&mut self`, and every byte below `state.tail` is persisted already.
    pub(crate) fn store_state(&self, state: State) -> Result<()> {
        self.file.check_writable()?;
        self.put_state(state);
        self.file.persist_range(STATE_OFFSET as u64, 8)?;
        self.mark.store(state.tail, Ordering::Release);
        Ok(())
    }

    /// Stores the state word with one aligned 8-byte store, not persisted: the caller persists
    /// it ([`Log::store_state`], or an append's fence) and then records `mark`. The same
    /// conditions as [`Log::store_state`]: the caller holds `commit` or `&mut self`, and every
    /// byte below `state.tail` is persisted already.
    pub(crate) fn put_state(&self, state: State) {
        // SAFETY: STATE_OFFSET is inside the header page, which every log file has (checked at
        // open/create), and 8-byte aligned (const-asserted; the mapping is page-aligned). Only
        // the commit leader (holding `commit`) or a `&mut self` caller stores here, and nobody
        // holds a reference to these bytes, so the atomic store races with nothing.
        let word = unsafe { &*self.base.as_ptr().add(STATE_OFFSET).cast::<AtomicU64>() };
        word.store(state.encode().to_le(), Ordering::Release);
    }

    /// The data area's bytes `[0, end)`.
    ///
    /// Callers pass `end <= copied` (loaded with Acquire): those bytes are written, published,
    /// and never written again while `&self` is borrowed (only a rewind, `&mut self`, lets them
    /// be overwritten).
    pub(crate) fn data(&self, end: u64) -> &[u8] {
        debug_assert!(end <= self.copied.load(Ordering::Acquire));
        debug_assert!(end <= self.capacity());
        // SAFETY: `DATA_OFFSET + end <= DATA_OFFSET + capacity <= file length` (checked at open
        // and create; a growth grows the file before it raises the capacity), so the range is
        // mapped and backed; per the contract above no thread
        // writes these bytes while the borrow lives.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(DATA_OFFSET), end as usize) }
    }
}

/// The state word of a new log.
const FRESH: State = State { tail: 0, generation: FIRST_GENERATION };

impl Drop for Log {
    /// Closing stores the watermark of a record log that has moved past it, so the next open
    /// has nothing to read past it. Only a hint: a failure is ignored (the records are durable
    /// either way).
    fn drop(&mut self) {
        let durable = self.durable_tell();
        if self.header.framing == Framing::Records
            && !self.file.is_read_only()
            && !self.file.is_poisoned()
            && durable > self.mark.load(Ordering::Acquire)
        {
            let _ = self.store_state(State { tail: durable, generation: self.generation });
        }
    }
}

/// Writes zeros over `[from, from + len)` of the data area with `pwrite`, not durably.
///
/// # Safety
/// No reference into `file`'s mapping may overlap the range during the call.
pub(crate) unsafe fn write_zeros(
    file: &RawFile,
    from: u64,
    len: u64,
) -> nvpage_storage::Result<()> {
    let zeros = vec![0u8; (1 << 20).min(len) as usize];
    let mut at = from;
    while at < from + len {
        let n = (from + len - at).min(zeros.len() as u64);
        // SAFETY: forwarded from the caller.
        unsafe { file.write_at_mapped(&zeros[..n as usize], DATA_OFFSET as u64 + at)? };
        at += n;
    }
    Ok(())
}

/// Refuses a log file size outside what the format holds.
fn check_file_size(size_bytes: u64) -> Result<()> {
    let max_bytes = DATA_OFFSET as u64 + MAX_CAPACITY;
    if !(MIN_FILE_BYTES..=max_bytes).contains(&size_bytes) {
        return Err(WalError::SizeOutOfRange { size_bytes, min_bytes: MIN_FILE_BYTES, max_bytes });
    }
    Ok(())
}

/// Opens and locks the existing file `path` for a create with size 0 (see [`Log::create`]): it
/// must exist, be of a size a log may have, and hold only zeros where the header page goes.
fn claim_blank_file(path: &Path, persistence: PersistRequest) -> Result<RawFile> {
    let len = match std::fs::metadata(path) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(WalError::Missing { path: path.into() });
        }
        Err(e) => return Err(StorageError::io("stat", path, e).into()),
    };
    check_file_size(len)?;
    let file = RawFile::open(path, &file_options(false, persistence, len))?;
    // Judged by what the file holds now that it is locked: it may have changed since the `stat`.
    check_file_size(file.len_bytes())?;
    let mut head = vec![0u8; DATA_OFFSET];
    file.read_at(&mut head, 0)?;
    if head.iter().any(|&b| b != 0) {
        return Err(WalError::NotBlank { path: path.into() });
    }
    Ok(file)
}

fn file_options(read_only: bool, persistence: PersistRequest, max_bytes: u64) -> FileOptions {
    FileOptions { mapped: true, read_only, max_bytes, persistence }
}

/// The largest a log file of `len_bytes` bytes may grow to when it may grow to `max_bytes`:
/// never below its size, never past what the format holds.
fn growth_limit(max_bytes: Option<u64>, len_bytes: u64) -> u64 {
    let most = DATA_OFFSET as u64 + MAX_CAPACITY;
    max_bytes.map_or(len_bytes, |m| m.min(most)).max(len_bytes)
}

/// A storage error met while the log file was made `bytes` long: a full file system is
/// [`WalError::NoSpace`], naming the size.
pub(crate) fn no_space(e: StorageError, path: &Path, bytes: u64) -> WalError {
    match e {
        StorageError::NoSpace { .. } => WalError::NoSpace { path: path.into(), bytes },
        e => e.into(),
    }
}

/// The mapping's first byte: a log file is always mapped.
fn mapping_base(file: &RawFile) -> Result<NonNull<u8>> {
    file.map_base().ok_or_else(|| {
        WalError::Storage(StorageError::io(
            "mmap",
            file.path(),
            std::io::Error::other("the log file is not mapped"),
        ))
    })
}

/// The error an open reports for a file whose bytes do not decode as a log.
fn fault_error(path: &Path, f: LogFault) -> WalError {
    let path = path.into();
    match f {
        LogFault::Header(HeaderFault::NotALog) => WalError::NotALog { path },
        LogFault::Header(HeaderFault::Version(found)) => {
            WalError::VersionMismatch { path, expected: layout::FORMAT_VERSION, found }
        }
        LogFault::Header(HeaderFault::Corrupt(reason)) => WalError::CorruptHeader { path, reason },
        LogFault::Truncated { expected_bytes, found_bytes } => {
            WalError::Truncated { path, expected_bytes, found_bytes }
        }
        LogFault::Foreign { expected, found } => WalError::ForeignLog { path, expected, found },
        LogFault::State { word, reason } => WalError::CorruptState { path, word, reason },
        LogFault::Capacity { word, reason } => WalError::CorruptCapacity { path, word, reason },
        LogFault::Record(ScanFault { offset, reason }) => {
            WalError::CorruptRecord { path, offset, reason }
        }
    }
}
