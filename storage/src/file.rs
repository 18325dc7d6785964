//! [`RawFile`]: a locked file, optionally mapped, with its persistence mode. The data file and the
//! log are both built on it, so opening, locking, growth, persistence, poisoning and the crash
//! simulator's hooks live in one place.
//!
//! Rules it keeps (DESIGN.md "One database on disk" and "Persistence"):
//! - opened with `O_NOATIME` where the kernel allows it, without it on `EPERM`;
//! - a `flock` on open (`lock.rs`): exclusive for a writable open, shared for a read-only one,
//!   so read-only handles share a file while no writer holds it; any other second open, in this
//!   process or another, is [`StorageError::AlreadyOpen`] naming the holders;
//! - a path that is not a regular file (a directory, a device) is [`StorageError::NotAFile`];
//! - a created file is followed by an `fsync` of its directory;
//! - growth by `fallocate` (zeros written where unsupported, never a sparse `ftruncate`), then
//!   `fsync`, before the new bytes are used; never shrinks; never moves the mapping;
//! - any persist failure poisons the handle: every later write or persist is
//!   [`StorageError::Poisoned`] until the file is reopened.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::bits::Bits;
use crate::error::{Result, StorageError};
use crate::mapping::{Advice, Mapping};
use crate::persist::{
    self, Durability, FlushInstr, Medium, PersistMode, PersistRequest, cacheline,
};
#[cfg(any(feature = "pread", feature = "se1", feature = "se2"))]
use crate::sim_tag::PausePoint;
use crate::sim_tag::{SimOp, SimTag};

/// The default maximum size of a file: the address space reserved for its mapping.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 256 << 30;

/// The largest maximum file size a file may be opened with (128 TiB, the user address space of
/// x86-64 with 4-level page tables, so the largest a mapping could reserve anyway): the tables
/// kept per page are sized from the maximum, so an "unlimited" one must be refused, not tried.
pub const MAX_SUPPORTED_FILE_BYTES: u64 = 1 << 47;

/// Writes of at least this many bytes into a part of a memory file (tmpfs, ramfs) that is not
/// mapped yet are cheaper through `pwrite` than through the mapping
/// ([`RawFile::kernel_copy_pays`]); below it the system call's own cost starts to count, and a small write populates a window
/// of the mapping that the writes after it reuse.
pub const KERNEL_COPY_MIN: usize = 256 << 10;

/// How to open a [`RawFile`].
#[derive(Clone, Debug)]
pub struct FileOptions {
    /// Map the file (the SE1 and SE2 layers, the log) or use `pread`/`pwrite` only.
    pub mapped: bool,
    /// Refuse every write.
    pub read_only: bool,
    /// The largest size the file may grow to; the mapping reserves this much address space.
    pub max_bytes: u64,
    /// How ranges are to be persisted.
    pub persistence: PersistRequest,
}

impl Default for FileOptions {
    fn default() -> Self {
        Self {
            mapped: false,
            read_only: false,
            max_bytes: DEFAULT_MAX_FILE_BYTES,
            persistence: PersistRequest::Auto,
        }
    }
}

/// A locked, optionally mapped file and the way its ranges are made durable.
#[derive(Debug)]
pub struct RawFile {
    path: PathBuf,
    // Declared before `file`: the mapping is unmapped before the descriptor closes.
    mapping: Option<Mapping>,
    file: File,
    read_only: bool,
    max_bytes: u64,
    durability: Durability,
    len_bytes: AtomicU64,
    grow_lock: Mutex<()>,
    poisoned: AtomicBool,
    /// 2 MiB windows of the mapping already populated (memory media only).
    populated: Bits,
    /// Open file descriptions of this file's own, for [`Self::sync_own`] (set once, by
    /// [`Self::open_sync_handles`]).
    sync_handles: OnceLock<Box<[Mutex<File>]>>,
    /// Whether the kernel may hold changes to the file that only an `fdatasync` makes durable:
    /// bytes written with `pwrite`, or copied into the mapping without a flush. Set after each
    /// such write completes, cleared by [`Self::sync`] as its `fdatasync` begins; true from the
    /// open (a previous handle may have left some). In the cache-line modes, where every other
    /// store is flushed by whoever made it, a sync with nothing unsynced is a fence alone.
    unsynced: AtomicBool,
    /// Held by a cache-line mode's sync from the flag's check to the end of its `fdatasync`: a
    /// concurrent sync that finds the flag clear waits for the one in flight, rather than
    /// returning before that `fdatasync` has succeeded (or failed, and poisoned the file).
    sync_lock: Mutex<()>,
    sim: SimTag,
}

/// Stores whole cache lines into a range of lines: a range of a mapped file's mapping
/// ([`RawFile::store_persist_lines`], with streaming stores in the cache-line modes), or a
/// buffer in memory ([`LineStreamer::new`]). Every store is bounds-checked against the range.
#[derive(Debug)]
pub struct LineStreamer<'a> {
    dst: NonNull<u8>,
    lines: usize,
    /// Streaming stores (the range is a mapping in a cache-line mode) or ordinary ones.
    streaming: bool,
    _range: std::marker::PhantomData<&'a mut [u8]>,
}

impl<'a> LineStreamer<'a> {
    /// A streamer of `buf`'s whole lines (its length rounded down to a multiple of 64), with
    /// ordinary stores: for building, or checking, in memory what a range would hold.
    pub fn new(buf: &'a mut [u8]) -> Self {
        let lines = buf.len() / cacheline::CACHE_LINE;
        Self {
            dst: NonNull::from(buf).cast(),
            lines,
            streaming: false,
            _range: std::marker::PhantomData,
        }
    }

    /// Lines in the range.
    pub fn lines(&self) -> usize {
        self.lines
    }

    /// Where the range's line `i` starts.
    ///
    /// # Panics
    /// If `i` is not below [`Self::lines`].
    #[inline(always)]
    fn line_dst(&self, i: usize) -> *mut u8 {
        assert!(i < self.lines, "line {i} outside a range of {} lines", self.lines);
        // SAFETY: line `i` lies inside the range (asserted), so the offset stays inside it.
        unsafe { self.dst.as_ptr().add(i * cacheline::CACHE_LINE) }
    }

    /// Stores `line` as the range's line `i`.
    ///
    /// # Panics
    /// If `i` is not below [`Self::lines`].
    #[inline(always)]
    pub fn store(&mut self, i: usize, line: &[u8; cacheline::CACHE_LINE]) {
        let dst = self.line_dst(i);
        // SAFETY: `dst` is line `i` of the range, which this streamer borrows exclusively: a
        // buffer borrowed `&mut`, or a mapped range its file's caller keeps to itself
        // (`store_persist_lines`). `line` is a shared borrow, so not that range.
        unsafe {
            if self.streaming {
                // The mapping is page-aligned and `store_persist_lines` asserted a line-aligned
                // offset: `dst` is 64-byte aligned.
                cacheline::stream_line(dst, line);
            } else {
                std::ptr::copy_nonoverlapping(line.as_ptr(), dst, cacheline::CACHE_LINE);
            }
        }
    }

    /// [`Self::store`] for a caller compiled for AVX2 (`#[target_feature(enable = "avx2")]`):
    /// a streaming line is two 32-byte stores instead of four 16-byte ones.
    ///
    /// # Safety
    /// The CPU must have AVX2 (`is_x86_feature_detected!("avx2")`).
    ///
    /// # Panics
    /// If `i` is not below [`Self::lines`].
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub unsafe fn store_avx2(&mut self, i: usize, line: &[u8; cacheline::CACHE_LINE]) {
        let dst = self.line_dst(i);
        // SAFETY: as in `store`; the mapping's lines are 64-byte aligned, so 32-byte aligned,
        // and the caller vouches for AVX2.
        unsafe {
            if self.streaming {
                cacheline::stream_line_avx2(dst, line);
            } else {
                std::ptr::copy_nonoverlapping(line.as_ptr(), dst, cacheline::CACHE_LINE);
            }
        }
    }
}

/// Fences this thread's streaming stores when dropped, if armed: for a path that leaves
/// [`RawFile::store_persist_lines_with`] before its persist's own fence (a panic, a failure).
struct FenceOnDrop(bool);

impl Drop for FenceOnDrop {
    fn drop(&mut self) {
        if self.0 {
            cacheline::fence();
        }
    }
}

impl RawFile {
    /// Creates a new file (refusing an existing one), locks it, and syncs its directory. Its
    /// permission bits are creat(2)'s default, `0o666` less the process's umask.
    pub fn create(path: &Path, opts: &FileOptions) -> Result<Self> {
        Self::create_with_mode(path, opts, 0o666)
    }

    /// [`Self::create`] with permission bits `mode` (`0o7777` at most), less the process's
    /// umask, as creat(2) applies them: the file has its final bits from the moment it exists.
    pub fn create_with_mode(path: &Path, opts: &FileOptions, mode: u32) -> Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut oo = OpenOptions::new();
        oo.read(true).write(true).create_new(true).mode(mode);
        let file = open_noatime(&mut oo, path).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => StorageError::AlreadyExists { path: path.into() },
            _ => StorageError::io("create", path, e),
        })?;
        crate::lock::lock(&file, path, false)?;
        // Past the lock the file is ours alone: a create that fails removes it, so the caller
        // can retry (a leftover empty file would be `AlreadyExists`, then `Truncated`).
        let made = sync_parent_dir(path).and_then(|()| {
            Self::finish_open(path, file, &FileOptions { read_only: false, ..opts.clone() })
        });
        made.inspect_err(|_| {
            let _ = std::fs::remove_file(path);
        })
    }

    /// Opens an existing regular file and locks it: exclusively, or shared if `read_only`.
    pub fn open(path: &Path, opts: &FileOptions) -> Result<Self> {
        // Asked before the open, which would block on a FIFO and fail vaguely on a directory.
        if let Ok(m) = std::fs::metadata(path)
            && !m.is_file()
        {
            return Err(StorageError::NotAFile { path: path.into(), found: file_kind(&m) });
        }
        let mut oo = OpenOptions::new();
        oo.read(true).write(!opts.read_only);
        let file = open_noatime(&mut oo, path).map_err(|e| StorageError::io("open", path, e))?;
        crate::lock::lock(&file, path, opts.read_only)?;
        Self::finish_open(path, file, opts)
    }

    fn finish_open(path: &Path, file: File, opts: &FileOptions) -> Result<Self> {
        let len_bytes = file.metadata().map_err(|e| StorageError::io("fstat", path, e))?.len();
        let largest = opts.max_bytes.max(len_bytes);
        if largest > MAX_SUPPORTED_FILE_BYTES {
            return Err(StorageError::MaxBytesTooLarge {
                requested_bytes: largest,
                limit_bytes: MAX_SUPPORTED_FILE_BYTES,
            });
        }
        let medium = medium_of(&file, path)?;
        let flush = match opts.persistence {
            PersistRequest::Eadr => Some(FlushInstr::Eadr),
            _ => FlushInstr::detect(),
        };
        let sim = SimTag::track(path, &file);
        let max_bytes = opts.max_bytes.max(len_bytes);
        let (mapping, mode) = if opts.mapped {
            // The variable is a request for the cache-line path, as the option is: it gets the
            // same answer, refusal included, rather than being dropped where it cannot be met.
            let by_env_var =
                opts.persistence == PersistRequest::Auto && persist::env_requests_emulation();
            let want_lines = opts.persistence.wants_cache_lines() || by_env_var;
            if want_lines && !medium.is_memory() {
                // MAP_SYNC would make a disk file durable through cache lines; try it before
                // refusing.
                let m = map(&file, path, max_bytes, !opts.read_only, true)?;
                if m.is_sync() && flush.is_some() {
                    return Ok(Self::assemble(
                        path,
                        file,
                        opts,
                        Some(m),
                        PersistMode::Dax,
                        medium,
                        flush,
                        sim,
                        len_bytes,
                        max_bytes,
                    ));
                }
                return Err(StorageError::EmulationRefused { path: path.into(), by_env_var });
            }
            let m = map(&file, path, max_bytes, !opts.read_only, true)?;
            let mode = match (m.is_sync(), want_lines, flush) {
                (true, _, Some(_)) => PersistMode::Dax,
                (false, true, Some(_)) => PersistMode::EmulatedNvm,
                _ => PersistMode::Msync,
            };
            (Some(m), mode)
        } else {
            (None, PersistMode::Fdatasync)
        };
        Ok(Self::assemble(
            path, file, opts, mapping, mode, medium, flush, sim, len_bytes, max_bytes,
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        path: &Path,
        file: File,
        opts: &FileOptions,
        mapping: Option<Mapping>,
        mode: PersistMode,
        medium: Medium,
        flush: Option<FlushInstr>,
        sim: SimTag,
        len_bytes: u64,
        max_bytes: u64,
    ) -> Self {
        let flush = flush.filter(|_| mode.uses_cache_lines());
        // The mapping reserves `max_bytes`; under Miri its stand-in may reserve less (mapping.rs),
        // and the file must not grow past it.
        let max_bytes =
            mapping.as_ref().map_or(max_bytes, |m| max_bytes.min(m.reserved_bytes() as u64));
        Self {
            path: path.to_path_buf(),
            mapping,
            file,
            read_only: opts.read_only,
            max_bytes,
            durability: Durability { mode, flush, medium },
            len_bytes: AtomicU64::new(len_bytes),
            grow_lock: Mutex::new(()),
            poisoned: AtomicBool::new(false),
            populated: Bits::new(max_bytes.div_ceil(POPULATE_WINDOW)),
            sync_handles: OnceLock::new(),
            unsynced: AtomicBool::new(true),
            sync_lock: Mutex::new(()),
            sim,
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Holds the calling thread at `at` for page `page` if the simulator has a pause armed there
    /// (`sim::Sim::pause`); nothing without the `sim` feature.
    #[cfg(any(feature = "pread", feature = "se1", feature = "se2"))]
    #[inline(always)]
    pub(crate) fn sim_pause(&self, at: PausePoint, page: u64) {
        self.sim.pause(at, page);
    }

    /// The file's current length in bytes (what growth has made usable).
    pub fn len_bytes(&self) -> u64 {
        self.len_bytes.load(Ordering::Acquire)
    }

    /// The largest length the file may grow to while open.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The persistence mode and medium.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// The persistence mode.
    pub fn mode(&self) -> PersistMode {
        self.durability.mode
    }

    /// Whether the handle refuses writes.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The first byte of the mapping, for mapped files. Bytes at or past [`Self::len_bytes`] must
    /// never be touched.
    pub fn map_base(&self) -> Option<NonNull<u8>> {
        self.mapping.as_ref().map(Mapping::base)
    }

    /// Whether an earlier persist failure poisoned this handle.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

    /// Marks the handle poisoned: every later write or persist fails until reopen.
    pub fn poison(&self) {
        self.poisoned.store(true, Ordering::Release);
    }

    /// Fails unless the handle may write: not read-only, not poisoned.
    pub fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(StorageError::ReadOnly { path: self.path.clone() });
        }
        if self.is_poisoned() {
            return Err(StorageError::Poisoned { path: self.path.clone() });
        }
        Ok(())
    }

    /// Reads exactly `buf.len()` bytes at `offset` with `pread`.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.sim.check(SimOp::Read).map_err(|e| StorageError::io("pread", &self.path, e))?;
        #[cfg(miri)]
        if let Some(m) = &self.mapping {
            // Miri's stand-in mapping holds the file's bytes while it exists (mapping.rs).
            let len = self.file.metadata().map(|md| md.len());
            return len
                .and_then(|len| m.read_at(buf, offset, len))
                .map_err(|e| StorageError::io("pread", &self.path, e));
        }
        self.file.read_exact_at(buf, offset).map_err(|e| StorageError::io("pread", &self.path, e))
    }

    /// Writes all of `buf` at `offset` with `pwrite`. The bytes may reach the medium at any
    /// moment, whole or in part; they are durable only after [`Self::sync`].
    ///
    /// A mapped file is refused ([`StorageError::MappedWrite`]): a `pwrite` shows through a
    /// shared mapping at once, under any `&[u8]` a reader holds into it. Its pages are written
    /// by its layer; [`Self::write_at_mapped`] is the `unsafe` way round for code that owns
    /// every reference into the mapping.
    pub fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        if self.mapping.is_some() {
            return Err(StorageError::MappedWrite { path: self.path.clone() });
        }
        // SAFETY: the file is not mapped, so no reference into a mapping of it exists.
        unsafe { self.write_at_mapped(buf, offset) }
    }

    /// [`Self::write_at`] without the check for a mapping.
    ///
    /// # Safety
    /// If the file is mapped, no reference into the mapping may overlap `offset..offset +
    /// buf.len()` during the call (the write changes those bytes as any reader sees them).
    pub unsafe fn write_at_mapped(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.check_writable()?;
        self.sim.check(SimOp::Write).map_err(|e| StorageError::io("pwrite", &self.path, e))?;
        #[cfg(miri)]
        if let Some(m) = &self.mapping {
            // Miri's stand-in mapping holds the file's bytes while it exists (mapping.rs).
            let r = m.write_at(&self.file, buf, offset);
            self.unsynced.store(true, Ordering::Release);
            return r.map_err(|e| StorageError::io("pwrite", &self.path, e));
        }
        let r = self.file.write_all_at(buf, offset);
        // Also after a failed write: part of it may have reached the page cache.
        self.unsynced.store(true, Ordering::Release);
        r.map_err(|e| StorageError::io("pwrite", &self.path, e))
    }

    /// Grows the file to at least `new_len` bytes: `fallocate` (or zeros where unsupported),
    /// then `fsync`, so the new length is durable before any byte of it is used. Never shrinks.
    pub fn grow_to(&self, new_len: u64) -> Result<()> {
        self.check_writable()?;
        let _g = self.grow_lock.lock();
        let old = self.len_bytes();
        if new_len <= old {
            return Ok(());
        }
        if new_len > self.max_bytes {
            return Err(StorageError::FileTooLarge {
                requested_bytes: new_len,
                max_bytes: self.max_bytes,
            });
        }
        self.sim.check(SimOp::Grow).map_err(|e| StorageError::io("fallocate", &self.path, e))?;
        allocate(&self.file, old, new_len - old)
            .map_err(|e| StorageError::io("fallocate", &self.path, e))?;
        self.persist_step("fsync", |f| f.file.sync_all())?;
        self.sim.synced();
        self.len_bytes.store(new_len, Ordering::Release);
        Ok(())
    }

    /// Makes every byte written so far durable: `msync` of the file's length for `msync`-mode
    /// mappings, `fdatasync` otherwise. In the cache-line modes stores into the mapping were
    /// flushed by whoever made them, so the `fdatasync` is for bytes written with
    /// [`Self::write_at`] or copied by [`Self::store_vectored`], and is skipped (a fence alone)
    /// when none were since the last sync: on tmpfs it was a syscall in every commit, about 7% of
    /// a single-row commit's time. Growth syncs itself ([`Self::grow_to`]). In `msync`
    /// mode the mapped layers write pages back with `pwrite`: this relies on Linux's `msync`
    /// (`MS_SYNC` on a shared file mapping syncs the file's range, `vfs_fsync_range`, however its
    /// pages were dirtied), which POSIX promises only for changes made through the mapping.
    pub fn sync(&self) -> Result<()> {
        self.check_writable()?;
        match (self.mode(), &self.mapping) {
            (PersistMode::Msync, Some(m)) => {
                self.persist_step("msync", |f| m.msync(0, f.len_bytes() as usize))?;
            }
            (mode, _) if mode.uses_cache_lines() => {
                let _one = self.sync_lock.lock();
                // A sync this one waited for may have failed and poisoned the file.
                self.check_writable()?;
                // Writes that complete from here on set it again, for the next sync to cover.
                if !self.unsynced.swap(false, Ordering::AcqRel) {
                    // Nothing for the kernel to write: every store was flushed by its maker,
                    // and the simulator was told of each as it was persisted.
                    return self.fence_step();
                }
                let r = self.fdatasync(&self.file);
                if r.is_err() {
                    self.unsynced.store(true, Ordering::Release);
                }
                return r;
            }
            _ => return self.fdatasync(&self.file),
        }
        self.sim.synced();
        Ok(())
    }

    /// `fdatasync` through `f` (this file's shared description or one of its own), after a
    /// fence for this thread's streaming stores, as one persist step.
    fn fdatasync(&self, f: &File) -> Result<()> {
        self.persist_step("fdatasync", |_| {
            cacheline::fence();
            f.sync_data()
        })?;
        self.sim.synced();
        Ok(())
    }

    /// Opens `n` open file descriptions of this file for [`Self::sync_own`] (through
    /// `/proc/self/fd`); the first call decides, later ones do nothing. Call it before writing
    /// anything that concurrent syncs will cover: a description reports only the writeback
    /// failures that happen after it is opened (or that nobody has seen yet), so one opened later
    /// could miss a failure another sync already took. Under Miri (no `/proc`) it does nothing.
    pub fn open_sync_handles(&self, n: usize) -> Result<()> {
        if cfg!(miri) || self.sync_handles.get().is_some() {
            return Ok(());
        }
        let proc_path = format!("/proc/self/fd/{}", self.file.as_raw_fd());
        let handles = (0..n)
            .map(|_| {
                let f = OpenOptions::new().read(true).write(!self.read_only).open(&proc_path);
                f.map(Mutex::new).map_err(|e| StorageError::io("reopen for sync", &self.path, e))
            })
            .collect::<Result<Box<[_]>>>()?;
        let _ = self.sync_handles.set(handles);
        Ok(())
    }

    /// Makes everything written to the file so far durable, as [`Self::sync`] does, but through
    /// an open file description of the caller's own, from those [`Self::open_sync_handles`]
    /// opened (waiting for one if all are in use; the shared description if none were opened).
    /// Linux reports a failed writeback once to each open file description, to the first sync
    /// that looks: through one shared description, a sync running beside another that took the
    /// error would return success although pages it covered were lost. With a description each,
    /// every sync that ran while (or after) the failure happened fails. For callers that sync
    /// concurrently.
    pub fn sync_own(&self) -> Result<()> {
        self.check_writable()?;
        let handles = match self.sync_handles.get() {
            Some(h) if !h.is_empty() => h,
            _ => return self.fdatasync(&self.file),
        };
        let own = loop {
            if let Some(f) = handles.iter().find_map(Mutex::try_lock) {
                break f;
            }
            std::thread::yield_now();
        };
        self.fdatasync(&own)
    }

    /// Makes `[offset, offset + len)` durable, which the caller stored through the mapping (on
    /// this thread, in the cache-line modes) or with [`Self::write_at`].
    pub fn persist_range(&self, offset: u64, len: usize) -> Result<()> {
        self.check_writable()?;
        let file_bytes = self.len_bytes();
        if offset.checked_add(len as u64).is_none_or(|end| end > file_bytes) {
            return Err(StorageError::RangeOutOfFile { offset, len: len as u64, file_bytes });
        }
        match (self.mode(), &self.mapping) {
            (PersistMode::Dax | PersistMode::EmulatedNvm, Some(m)) => {
                let instr = self.durability.flush.expect("cache-line modes have an instruction");
                self.persist_step("clflush", |_| {
                    // SAFETY: the range lies below the file's length, inside the mapping, which
                    // lives as long as `self`: it stays mapped for the flush.
                    unsafe {
                        let p = m.base().as_ptr().add(offset as usize);
                        cacheline::flush(instr, p, len);
                    }
                    cacheline::fence();
                    Ok(())
                })?;
                self.sim_persisted_lines(offset, len as u64);
            }
            (PersistMode::Msync, Some(m)) => {
                self.persist_step("msync", |_| m.msync(offset as usize, len))?;
                // msync writes back whole OS pages: both ends of the range round outwards.
                let page = persist::os_page_size() as u64;
                let start = offset & !(page - 1);
                let end = (offset + len as u64).next_multiple_of(page);
                self.sim.persisted(start, end - start);
            }
            _ => {
                self.persist_step("fdatasync", |f| f.file.sync_data())?;
                self.sim.synced();
            }
        }
        Ok(())
    }

    /// Copies `src` into the mapping at `offset` and makes it durable: streaming stores and one
    /// fence in the cache-line modes, a copy and an `msync` of the range otherwise.
    ///
    /// # Safety
    /// The file must be mapped, `offset + src.len()` must not pass [`Self::len_bytes`], and no
    /// other thread may read or write that range during the call.
    pub unsafe fn store_persist(&self, offset: u64, src: &[u8]) -> Result<()> {
        self.check_writable()?;
        let m = self.mapping.as_ref().expect("store_persist needs a mapped file");
        // SAFETY: the caller keeps the range inside the file and to itself.
        let dst = unsafe { m.base().as_ptr().add(offset as usize) };
        match self.durability.flush {
            // SAFETY: as above; `src` is the caller's own buffer, not the mapping.
            Some(instr) => unsafe { cacheline::copy_nontemporal(instr, dst, src) },
            // SAFETY: as above.
            None => unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) },
        }
        self.persist_stored(offset, src.len())
    }

    /// Writes `lines` whole cache lines from `offset`, each stored by `fill` through a
    /// [`LineStreamer`], and makes them durable together: streaming stores and one fence in the
    /// cache-line modes, ordinary stores and an `msync` of the range otherwise. For a writer
    /// that builds its bytes line by line while it stores them (the log's records, hashed as
    /// they are stored); what `fill` returns is returned. `fill` must store every line of the
    /// range: a line it leaves alone is not made durable (nothing flushes it), though the call
    /// returns as if it were. The streamer is not `Send`: a line stored from another thread
    /// would not be ordered by this thread's fence.
    ///
    /// # Safety
    /// As [`Self::store_persist`], for the range `offset..offset + 64 * lines`.
    ///
    /// # Panics
    /// If `offset` is not a multiple of the cache line (64 bytes), or the range passes the
    /// file's end.
    pub unsafe fn store_persist_lines<R>(
        &self,
        offset: u64,
        lines: usize,
        fill: impl FnOnce(&mut LineStreamer<'_>) -> R,
    ) -> Result<R> {
        // SAFETY: forwarded from the caller; there is no second range.
        unsafe { self.store_persist_lines_with(offset, lines, None, fill) }
    }

    /// [`Self::store_persist_lines`], and the same step also makes durable `stored`, a range
    /// `(offset, len)` elsewhere in the mapping that the caller has stored into on this thread
    /// and not yet persisted: in the cache-line modes its lines are flushed before the range's
    /// first store and the one fence covers both, so the second range costs no fence of its
    /// own; otherwise both are `msync`ed. For a log that stores its watermark beside an append
    /// (`nvpage-wal`). A failure leaves either range possibly persisted, possibly not.
    ///
    /// `stored` may reach the medium before the lines, after them, or with them: the caller
    /// stores there only what may be durable before the lines are.
    ///
    /// # Safety
    /// As [`Self::store_persist_lines`]; `stored` must lie inside the file and outside the
    /// lines' range, and no other thread may store into it during the call.
    ///
    /// # Panics
    /// As [`Self::store_persist_lines`], and if `stored` overlaps the lines or passes the file's
    /// end.
    pub unsafe fn store_persist_lines_with<R>(
        &self,
        offset: u64,
        lines: usize,
        stored: Option<(u64, usize)>,
        fill: impl FnOnce(&mut LineStreamer<'_>) -> R,
    ) -> Result<R> {
        self.check_writable()?;
        assert!(offset.is_multiple_of(cacheline::CACHE_LINE as u64), "offset {offset} mid-line");
        let m = self.mapping.as_ref().expect("store_persist_lines needs a mapped file");
        let len = lines.checked_mul(cacheline::CACHE_LINE).expect("a range of lines in memory");
        let end = offset.checked_add(len as u64);
        assert!(
            end.is_some_and(|e| e <= self.len_bytes()),
            "{lines} lines at {offset} pass the end"
        );
        // SAFETY: the caller keeps `offset..offset + len` inside the file (so inside the
        // mapping) and to itself for the call, which the streamer's borrow does not outlive.
        let dst = unsafe { m.base().add(offset as usize) };
        if let Some((at, n)) = stored {
            assert!(
                at.checked_add(n as u64).is_some_and(|e| e <= self.len_bytes()),
                "{n} bytes at {at} pass the end"
            );
            assert!(
                at + n as u64 <= offset || at >= offset + len as u64,
                "{n} bytes at {at} overlap the lines"
            );
            if let Some(instr) = self.durability.flush {
                // SAFETY: the range lies inside the file (asserted), so inside the mapping,
                // which lives as long as `self`. A flush neither reads nor writes the bytes.
                unsafe { cacheline::flush(instr, m.base().as_ptr().add(at as usize), n) };
            }
        }
        let streaming = self.durability.flush.is_some();
        let mut out = LineStreamer { dst, lines, streaming, _range: std::marker::PhantomData };
        // Streaming stores must be fenced before anything else touches their lines: if `fill`
        // panics, or the persist fails before its fence, the guard fences on the way out.
        let unfenced = FenceOnDrop(streaming);
        let r = fill(&mut out);
        self.persist_stored(offset, len)?;
        std::mem::forget(unfenced);
        if let Some((at, n)) = stored {
            match self.durability.flush {
                // Flushed before the lines were stored, so the same fence covered it.
                Some(_) => self.sim_persisted_lines(at, n as u64),
                None => self.persist_range(at, n)?,
            }
        }
        Ok(r)
    }

    /// [`Self::store_persist`] of several ranges, `(offset, bytes)` with each offset from
    /// `base` (a page's, say), made durable together: in
    /// the cache-line modes each range flushed and one fence (one device flush however many
    /// ranges), a copy and an `msync` of the span they cover otherwise.
    ///
    /// For pages, which are read again soon (the next write's copy-on-write and before-image
    /// read them): where the flush is CLWB (or none, eADR) the ranges are copied with ordinary
    /// stores, and CLWB writes the lines back and may leave them cached (it does on this
    /// machine's CPU; some older ones evict), so the next read of the page can hit the cache;
    /// streaming stores leave it in memory only. Measured on emulated NVM (tmpfs) only: on
    /// real NVM an ordinary store reads the line for ownership first. With CLFLUSHOPT or
    /// CLFLUSH, which evict the line anyway, streaming stores (no read for ownership). A loop of
    /// single-row commits on 8 KiB pages (SE2, emulated NVM, five alternated runs): 294-299 k
    /// commits/s streamed, 316-323 k cached.
    ///
    /// # Safety
    /// As [`Self::store_persist`], for every range.
    pub unsafe fn store_persist_parts(&self, base: u64, parts: &[(usize, &[u8])]) -> Result<()> {
        self.check_writable()?;
        let m = self.mapping.as_ref().expect("store_persist_parts needs a mapped file");
        for &(offset, src) in parts {
            let offset = base + offset as u64;
            // SAFETY: the caller keeps each range inside the file and to itself.
            let dst = unsafe { m.base().as_ptr().add(offset as usize) };
            match self.durability.flush {
                Some(instr @ (FlushInstr::Clwb | FlushInstr::Eadr)) => {
                    // SAFETY: as above; `src` is the caller's own buffer, not the mapping; the
                    // flush takes only the addresses of the lines the range touches, which lie in
                    // the mapped OS pages around it.
                    unsafe {
                        std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len());
                        cacheline::flush(instr, dst, src.len());
                    }
                }
                // SAFETY: as above.
                Some(instr) => unsafe { cacheline::copy_nontemporal(instr, dst, src) },
                // SAFETY: as above.
                None => unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) },
            }
        }
        let Some(start) = parts.iter().map(|p| p.0).min() else { return Ok(()) };
        if self.durability.flush.is_none() {
            let end = parts.iter().map(|p| p.0 + p.1.len()).max().unwrap_or(start);
            return self.persist_range(base + start as u64, end - start);
        }
        self.fence_step()?;
        for &(offset, src) in parts {
            self.sim_persisted_lines(base + offset as u64, src.len() as u64);
        }
        Ok(())
    }

    /// Writes `srcs`, one after another, from `offset`, without making them durable (a later
    /// [`Self::persist_range`] or [`Self::sync`] does). Where the file is memory, a copy into the
    /// mapping; on a disk, `pwrite` into the page cache the mapping shares, because the first
    /// store through a mapping into each OS page is a page fault and, on a fresh file, a block
    /// allocation.
    ///
    /// # Safety
    /// As [`Self::store_persist`], for the range `offset..offset + total`, where `total` is the
    /// sum of the slices' lengths.
    pub unsafe fn store_vectored(&self, offset: u64, srcs: &[&[u8]]) -> Result<()> {
        self.check_writable()?;
        let mut at = offset;
        match &self.mapping {
            Some(m) if self.durability.medium.is_memory() => {
                for src in srcs {
                    // SAFETY: the caller keeps `offset..offset + total` inside the file and to
                    // itself; `at..at + src.len()` lies inside it; `src` is not the mapping.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            src.as_ptr(),
                            m.base().as_ptr().add(at as usize),
                            src.len(),
                        )
                    };
                    at += src.len() as u64;
                }
                self.unsynced.store(true, Ordering::Release);
            }
            // SAFETY: the caller keeps the range to itself (a stronger promise than
            // `write_vectored_at` asks).
            _ => unsafe { self.write_vectored_at(offset, srcs)? },
        }
        Ok(())
    }

    /// Writes `srcs`, one after another, from `offset` with `pwrite`, without making them
    /// durable: [`Self::write_at_mapped`] for gathered buffers.
    ///
    /// # Safety
    /// As [`Self::write_at_mapped`], for the range `offset..offset + total`, where `total` is
    /// the sum of the slices' lengths.
    pub unsafe fn write_vectored_at(&self, offset: u64, srcs: &[&[u8]]) -> Result<()> {
        let mut at = offset;
        for src in srcs {
            // SAFETY: forwarded from the caller; `at..at + src.len()` lies inside the range.
            unsafe { self.write_at_mapped(src, at)? };
            at += src.len() as u64;
        }
        Ok(())
    }

    /// Copies `srcs`, one after another, into the mapping from `offset` and makes them durable
    /// together: streaming stores for every slice and one fence in the cache-line modes, copies
    /// and one `msync` of the whole range otherwise. [`Self::store_persist`] for gathered buffers
    /// (a log record's header and payload), without a fence per slice.
    ///
    /// # Safety
    /// As [`Self::store_persist`], for the range `offset..offset + total`, where `total` is the
    /// sum of the slices' lengths.
    pub unsafe fn store_persist_vectored(&self, offset: u64, srcs: &[&[u8]]) -> Result<()> {
        self.check_writable()?;
        let m = self.mapping.as_ref().expect("store_persist_vectored needs a mapped file");
        let total: usize = srcs.iter().map(|s| s.len()).sum();
        let mut at = offset as usize;
        for src in srcs {
            // SAFETY: the caller keeps `offset..offset + total` inside the file and to itself;
            // `at..at + src.len()` lies inside it.
            let dst = unsafe { m.base().as_ptr().add(at) };
            match self.durability.flush {
                // SAFETY: as above; `src` is the caller's own buffer, not the mapping.
                Some(instr) => unsafe { cacheline::copy_nontemporal(instr, dst, src) },
                // SAFETY: as above.
                None => unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) },
            }
            at += src.len();
        }
        self.persist_stored(offset, total)
    }

    /// Makes durable `[offset, offset + len)`, which this thread just stored through the mapping:
    /// in the cache-line modes its streaming stores (and flushes of partial lines) need only a
    /// fence; otherwise an `msync` of the range.
    fn persist_stored(&self, offset: u64, len: usize) -> Result<()> {
        if self.durability.flush.is_none() {
            return self.persist_range(offset, len);
        }
        self.fence_step()?;
        self.sim_persisted_lines(offset, len as u64);
        Ok(())
    }

    /// Whether writing `len` bytes into a part of this file that is not mapped yet costs less
    /// through the kernel's copy ([`Self::write_persist_vectored`]) than through the mapping:
    /// at least [`KERNEL_COPY_MIN`] bytes, on a file that is memory (tmpfs, ramfs).
    /// `pwrite` copies straight into the file's pages without mapping them — no page fault per
    /// 4 KiB, and no zeroing of a fresh tmpfs page that the write fills whole — where a store
    /// through the mapping first has to populate it. Once pages are mapped, the mapping wins:
    /// on tmpfs here streaming stores run at 16–18 GB/s, `pwrite` at 4.5–5.3 GB/s.
    ///
    /// Never on DAX: there a `pwrite` into an `fallocate`d block turns an unwritten extent into
    /// a written one in a journal transaction that nothing forces, so after a power cut the
    /// block could read back as zeros though its data reached the medium; a store through a
    /// `MAP_SYNC` mapping commits that change before the page fault returns.
    pub fn kernel_copy_pays(&self, len: usize) -> bool {
        len >= KERNEL_COPY_MIN && self.durability.medium.is_memory()
    }

    /// Writes `srcs`, one after another, from `offset` with `pwrite` and makes them durable
    /// together: in the cache-line modes with one fence, in `msync` mode with an `msync` of the
    /// range. In the cache-line modes it is for memory files only ([`Self::kernel_copy_pays`]),
    /// where the page cache is the medium and the fence orders the write before what follows;
    /// on DAX the kernel's copy would bypass the CPU cache, but a write into an unwritten
    /// extent leaves a journal change behind that only an `fdatasync` forces.
    ///
    /// # Safety
    /// As [`Self::write_at_mapped`], for the range `offset..offset + total`, where `total` is
    /// the sum of the slices' lengths.
    pub unsafe fn write_persist_vectored(&self, offset: u64, srcs: &[&[u8]]) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.write_vectored_at(offset, srcs)? };
        let total: u64 = srcs.iter().map(|s| s.len() as u64).sum();
        if self.durability.flush.is_none() {
            return self.persist_range(offset, total as usize);
        }
        self.fence_step()?;
        self.sim.persisted(offset, total);
        Ok(())
    }

    /// Fences this thread's streaming stores and flushes, as one persist step (the simulator's
    /// fault plan applies; a failure poisons the handle).
    fn fence_step(&self) -> Result<()> {
        self.persist_step("sfence", |_| {
            cacheline::fence();
            Ok(())
        })
    }

    /// Tells the simulator a range was persisted through cache lines: every line the range
    /// touches is written back whole (partial lines at either end are flushed, not streamed).
    fn sim_persisted_lines(&self, offset: u64, len: u64) {
        let line = cacheline::CACHE_LINE as u64;
        let start = offset & !(line - 1);
        let end = (offset + len).next_multiple_of(line);
        self.sim.persisted(start, end - start);
    }

    /// Runs one persist step: checks the simulator's fault plan, runs `f`, and poisons the handle
    /// if either fails.
    fn persist_step(
        &self,
        op: &'static str,
        f: impl FnOnce(&Self) -> io::Result<()>,
    ) -> Result<()> {
        let r = self.sim.check(SimOp::Persist).and_then(|()| f(self));
        r.map_err(|e| {
            self.poison();
            StorageError::io(op, &self.path, e)
        })
    }

    /// Gives the kernel access advice for `[offset, offset + len)`: `madvise` for mapped files,
    /// `posix_fadvise` otherwise. Hints only: failures are ignored.
    ///
    /// `WillNeed` on a mapping of a file that is memory (tmpfs, ramfs) fills the page tables of
    /// each 2 MiB window once per open (`Advice::Populate`): populating pages already mapped
    /// costs a page-table walk for nothing. On a disk it starts read-ahead in the background.
    ///
    /// `PopulateWrite` is applied only where the file is memory or mapped with `MAP_SYNC` (DAX):
    /// elsewhere it is ignored (see [`Advice::PopulateWrite`]).
    pub fn advise(&self, advice: Advice, offset: u64, len: u64) {
        if advice == Advice::PopulateWrite {
            let direct =
                self.durability.medium.is_memory() || self.durability.mode == PersistMode::Dax;
            let end = (offset + len).min(self.len_bytes());
            if let (Some(m), true, true) = (&self.mapping, direct && !self.read_only, end > offset)
            {
                m.advise(advice, offset as usize, (end - offset) as usize);
            }
            return;
        }
        if let Some(m) = &self.mapping {
            if advice == Advice::WillNeed && self.durability.medium.is_memory() {
                self.populate_once(m, offset, len);
            } else {
                m.advise(advice, offset as usize, len as usize);
            }
            return;
        }
        let flag = match advice {
            Advice::Sequential => libc::POSIX_FADV_SEQUENTIAL,
            Advice::WillNeed | Advice::Populate | Advice::PopulateWrite => {
                libc::POSIX_FADV_WILLNEED
            }
            Advice::Normal => libc::POSIX_FADV_NORMAL,
        };
        let (offset, len) = if advice == Advice::WillNeed { (offset, len) } else { (0, 0) };
        // Miri has no `posix_fadvise`; a hint changes nothing it checks.
        #[cfg(not(miri))]
        // SAFETY: posix_fadvise only reads its integer arguments.
        unsafe {
            libc::posix_fadvise(self.file.as_raw_fd(), offset as i64, len as i64, flag)
        };
        #[cfg(miri)]
        let _ = (flag, offset, len);
    }
}

impl RawFile {
    /// Populates the 2 MiB windows of `[offset, offset + len)` not yet populated since open.
    fn populate_once(&self, m: &Mapping, offset: u64, len: u64) {
        let end = (offset + len).min(self.len_bytes());
        let mut w = offset / POPULATE_WINDOW;
        while w * POPULATE_WINDOW < end {
            if !self.populated.contains(w) {
                let start = w * POPULATE_WINDOW;
                let n = POPULATE_WINDOW.min(end - start);
                m.advise(Advice::Populate, start as usize, n as usize);
                // A window cut short by the file's end is populated again once the file grows.
                if n == POPULATE_WINDOW {
                    self.populated.insert(w);
                }
            }
            w += 1;
        }
    }
}

/// The unit in which mappings of memory files are populated.
const POPULATE_WINDOW: u64 = 2 << 20;

fn map(
    file: &File,
    path: &Path,
    max_bytes: u64,
    writable: bool,
    try_sync: bool,
) -> Result<Mapping> {
    let reserved = usize::try_from(max_bytes).map_err(|_| StorageError::Reserve {
        path: path.into(),
        bytes: max_bytes,
        source: io::Error::other("larger than the address space"),
    })?;
    Mapping::map(file, reserved, writable, try_sync).map_err(|source| StorageError::Reserve {
        path: path.into(),
        bytes: max_bytes,
        source,
    })
}

/// Opens with `O_NOATIME` (seed 001: no atime update per read), retrying without it on `EPERM`
/// (the flag needs the file's owner or `CAP_FOWNER`).
fn open_noatime(oo: &mut OpenOptions, path: &Path) -> io::Result<File> {
    #[cfg(not(miri))]
    oo.custom_flags(libc::O_NOATIME | libc::O_CLOEXEC);
    // Miri has no `O_NOATIME` (it refuses the flag): open as if the kernel had said `EPERM`.
    #[cfg(miri)]
    oo.custom_flags(libc::O_CLOEXEC);
    match oo.open(path) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            oo.custom_flags(libc::O_CLOEXEC);
            oo.open(path)
        }
        r => r,
    }
}

/// What kind of file `m` describes, as [`StorageError::NotAFile`] names it ("a directory").
pub fn file_kind(m: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    match () {
        _ if t.is_dir() => "a directory",
        _ if t.is_block_device() => "a block device",
        _ if t.is_char_device() => "a character device",
        _ if t.is_fifo() => "a FIFO",
        _ if t.is_socket() => "a socket",
        _ if t.is_file() => "a regular file",
        _ => "a special file",
    }
}

/// Allocates `[offset, offset + len)`, extending the file: `fallocate`, or zeros written where the
/// file system lacks it. Never a sparse `ftruncate`: filling a hole through a mapping on a full
/// disk would be a SIGBUS. Every file this crate grows, and every log, is reserved with it.
pub fn allocate(file: &File, offset: u64, len: u64) -> io::Result<()> {
    // Miri has no `fallocate`: under it growth always writes the zeros.
    #[cfg(not(miri))]
    {
        // SAFETY: fallocate only reads its integer arguments.
        let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, offset as i64, len as i64) };
        if rc == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EOPNOTSUPP) {
            return Err(e);
        }
    }
    let zeros = vec![0u8; 1 << 20];
    let mut at = offset;
    while at < offset + len {
        let n = (offset + len - at).min(zeros.len() as u64) as usize;
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

/// Locks directory `dir` exclusively (`flock` on the directory itself, waiting for another
/// holder), until the returned handle is dropped. For callers whose decisions about the files in
/// a directory must not interleave with another process's or thread's (an engine's open deciding
/// whether to create a database, finish a crashed create, or open one). Advisory, as every
/// `flock`. `None` where the directory cannot be locked — it cannot be opened for reading (a
/// search-only directory), or its file system has no `flock` for directories (NFS emulates
/// `flock` with byte-range locks, which an exclusive lock on a read-only handle cannot take):
/// there the caller goes on without the lock.
pub fn lock_dir(dir: &Path) -> Result<Option<File>> {
    let d = match File::open(dir) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => return Ok(None),
        Err(e) => return Err(StorageError::io("open dir", dir, e)),
    };
    // Under Miri the lock is the open handle alone (its `flock` of a directory is untried).
    #[cfg(not(miri))]
    if let Err(e) = crate::lock::flock(&d, libc::LOCK_EX) {
        return match e.raw_os_error() {
            Some(libc::EBADF | libc::ENOLCK | libc::EOPNOTSUPP | libc::EINVAL) => Ok(None),
            _ => Err(StorageError::io("flock dir", dir, e)),
        };
    }
    Ok(Some(d))
}

/// `fsync`s the directory holding `path`, so a newly created file's name is durable.
pub fn sync_parent_dir(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let d = File::open(dir).map_err(|e| StorageError::io("open dir", dir, e))?;
    d.sync_all().map_err(|e| StorageError::io("fsync dir", dir, e))
}

#[cfg(not(miri))]
const TMPFS_MAGIC: i64 = 0x0102_1994;
#[cfg(not(miri))]
const RAMFS_MAGIC: i64 = 0x8584_58f6;

#[cfg(not(miri))]
fn medium_of(file: &File, path: &Path) -> Result<Medium> {
    // SAFETY: an all-zero statfs is a valid value for a plain C struct of integers.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid, writable statfs; the fd is open.
    let rc = unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) };
    if rc != 0 {
        return Err(StorageError::io("fstatfs", path, io::Error::last_os_error()));
    }
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between targets
    Ok(match st.f_type as i64 {
        TMPFS_MAGIC => Medium::Tmpfs,
        RAMFS_MAGIC => Medium::Ramfs,
        _ => Medium::Disk,
    })
}

/// Miri has no `fstatfs`: under it a file below `/dev/shm` counts as tmpfs (so that the
/// cache-line modes run under Miri, over its stand-in mapping) and every other file as a disk file.
#[cfg(miri)]
fn medium_of(_file: &File, path: &Path) -> Result<Medium> {
    Ok(if path.starts_with("/dev/shm") { Medium::Tmpfs } else { Medium::Disk })
}

/// Bytes of `path` that lie in extents the file system has allocated but marks unwritten (ext4's
/// and XFS's `fallocate`d blocks: the first write into each commits the journal to mark it
/// written), from `FS_IOC_FIEMAP` after syncing the file's delayed allocations; `None` where the
/// file system does not report extents (tmpfs). A diagnostic, for tests and tools: it tells
/// whether a log was created with `Prefill::Zeros` on a disk.
pub fn unwritten_bytes(path: &Path) -> Result<Option<u64>> {
    let f = File::open(path).map_err(|e| StorageError::io("open", path, e))?;
    fiemap_unwritten(&f).map_err(|e| StorageError::io("FS_IOC_FIEMAP", path, e))
}

#[cfg(not(miri))]
fn fiemap_unwritten(f: &File) -> io::Result<Option<u64>> {
    /// `struct fiemap` (linux/fiemap.h) with room for `EXTENTS` extents.
    #[repr(C)]
    struct Fiemap {
        start: u64,
        length: u64,
        flags: u32,
        mapped_extents: u32,
        extent_count: u32,
        reserved: u32,
        extents: [FiemapExtent; EXTENTS],
    }
    /// `struct fiemap_extent`.
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct FiemapExtent {
        logical: u64,
        physical: u64,
        length: u64,
        reserved64: [u64; 2],
        flags: u32,
        reserved: [u32; 3],
    }
    const EXTENTS: usize = 64;
    const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B; // _IOWR('f', 11, struct fiemap)
    const FIEMAP_FLAG_SYNC: u32 = 1;
    const FIEMAP_EXTENT_LAST: u32 = 0x1;
    const FIEMAP_EXTENT_UNWRITTEN: u32 = 0x800;
    let mut unwritten = 0u64;
    let mut start = 0u64;
    loop {
        let mut m = Fiemap {
            start,
            length: u64::MAX - start,
            flags: FIEMAP_FLAG_SYNC,
            mapped_extents: 0,
            extent_count: EXTENTS as u32,
            reserved: 0,
            extents: [FiemapExtent::default(); EXTENTS],
        };
        // SAFETY: `m` is a valid `struct fiemap` followed by room for `extent_count` extents, as
        // FS_IOC_FIEMAP requires; the kernel writes only inside it. The fd is open.
        let rc = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_FIEMAP, &mut m as *mut Fiemap) };
        if rc != 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EOPNOTSUPP | libc::ENOTTY) => Ok(None),
                _ => Err(e),
            };
        }
        let got = &m.extents[..(m.mapped_extents as usize).min(EXTENTS)];
        for x in got {
            if x.flags & FIEMAP_EXTENT_UNWRITTEN != 0 {
                unwritten += x.length;
            }
        }
        match got.last() {
            Some(x) if x.flags & FIEMAP_EXTENT_LAST == 0 => start = x.logical + x.length,
            _ => return Ok(Some(unwritten)),
        }
    }
}

/// Miri has no `ioctl`: no extents are reported.
#[cfg(miri)]
fn fiemap_unwritten(_f: &File) -> io::Result<Option<u64>> {
    Ok(None)
}

/// Drops a closed file's pages from the OS page cache (`POSIX_FADV_DONTNEED`), for cold runs.
/// Dirty pages are written back first. On tmpfs/ramfs the file is memory and nothing is dropped.
pub fn evict_os_cache(path: &Path) -> Result<()> {
    let f = File::open(path).map_err(|e| StorageError::io("open", path, e))?;
    f.sync_all().map_err(|e| StorageError::io("fsync", path, e))?;
    // SAFETY: posix_fadvise only reads its integer arguments.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(StorageError::io("posix_fadvise", path, io::Error::from_raw_os_error(rc)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes stored through the mapping and bytes written with `pwrite` see each other while the
    /// file is open, and both are in the file after it is closed, in each mapped mode. Natively
    /// this checks the kernel's shared mapping; under Miri, the stand-in mapping (mapping.rs)
    /// that lets Miri run the mapped layers and the log.
    #[test]
    fn mapped_stores_and_pwrite_agree_and_reach_the_file() {
        let mut cases =
            vec![(tempfile::tempdir().unwrap(), PersistRequest::Auto, PersistMode::Msync)];
        if Path::new("/dev/shm").is_dir() && FlushInstr::detect().is_some() {
            let shm = tempfile::tempdir_in("/dev/shm").unwrap();
            cases.push((shm, PersistRequest::CacheLine, PersistMode::EmulatedNvm));
        }
        for (dir, persistence, mode) in cases {
            let path = dir.path().join("f");
            let opts =
                FileOptions { mapped: true, max_bytes: 1 << 20, persistence, ..Default::default() };
            let f = RawFile::create(&path, &opts).unwrap();
            f.grow_to(64 << 10).unwrap();
            assert_eq!(f.mode(), mode, "{path:?}");
            // SAFETY: the range lies below the file's length and this thread is its only user.
            unsafe { f.store_persist(100, b"stored through the mapping").unwrap() };
            // SAFETY: as above.
            unsafe { f.store_vectored(40_000, &[b"stored ", b"vectored"]).unwrap() };
            f.persist_range(40_000, 15).unwrap();
            assert!(matches!(f.write_at(b"refused", 5000), Err(StorageError::MappedWrite { .. })));
            // SAFETY: no reference into the mapping exists while the write runs.
            unsafe { f.write_at_mapped(b"written with pwrite", 5000).unwrap() };
            let mut buf = [0u8; 26];
            f.read_at(&mut buf, 100).unwrap();
            assert_eq!(&buf, b"stored through the mapping", "{mode}: pread sees the store");
            let base = f.map_base().unwrap().as_ptr();
            // SAFETY: the range lies below the file's length; no thread writes it now.
            let seen = unsafe { std::slice::from_raw_parts(base.add(5000), 19) };
            assert_eq!(seen, b"written with pwrite", "{mode}: the mapping sees pwrite");
            let mut past_end = [0u8; 8];
            assert!(f.read_at(&mut past_end, (64 << 10) - 4).is_err(), "{mode}: read past the end");
            f.sync().unwrap();
            drop(f);

            let f = RawFile::open(&path, &FileOptions::default()).unwrap();
            for (at, want) in [
                (100, &b"stored through the mapping"[..]),
                (5000, b"written with pwrite"),
                (40_000, b"stored vectored"),
            ] {
                let mut got = vec![0u8; want.len()];
                f.read_at(&mut got, at).unwrap();
                assert_eq!(got, want, "{mode}: reopened without a mapping, at {at}");
            }
        }
    }

    /// Lines stored through a `LineStreamer` are the file's bytes, in each mapped mode: every
    /// line where `fill` put it, nothing past the range touched, what `fill` returns returned;
    /// an empty range stores nothing; a range off a line boundary or past the end is refused.
    #[test]
    fn lines_stored_through_a_streamer_reach_the_file() {
        let mut cases = vec![(tempfile::tempdir().unwrap(), PersistRequest::Auto)];
        if Path::new("/dev/shm").is_dir() && FlushInstr::detect().is_some() {
            cases.push((tempfile::tempdir_in("/dev/shm").unwrap(), PersistRequest::CacheLine));
        }
        for (dir, persistence) in cases {
            let path = dir.path().join("f");
            let opts =
                FileOptions { mapped: true, max_bytes: 1 << 20, persistence, ..Default::default() };
            let f = RawFile::create(&path, &opts).unwrap();
            f.grow_to(64 << 10).unwrap();
            let line = |i: usize| [i as u8 + 1; cacheline::CACHE_LINE];
            // SAFETY: the ranges lie below the file's length and this thread is their only user.
            let r = unsafe {
                f.store_persist_lines(4096, 5, |out| {
                    // Out of order, as the log stores a record's header line last.
                    (1..5).chain([0]).for_each(|i| out.store(i, &line(i)));
                    out.lines()
                })
            };
            assert_eq!(r.unwrap(), 5);
            // SAFETY: as above.
            unsafe { f.store_persist_lines(8192, 0, |_| ()) }.unwrap();
            let outside = |at: u64, lines: usize| {
                // SAFETY: a refused range is refused before anything is stored.
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe {
                    f.store_persist_lines(at, lines, |_| ())
                }));
                assert!(r.is_err(), "{at} + {lines} lines should be refused");
            };
            outside(4096 + 8, 1);
            outside((64 << 10) - 64, 2);
            outside(0, usize::MAX);
            f.sync().unwrap();
            drop(f);
            let f = RawFile::open(&path, &FileOptions::default()).unwrap();
            let mut got = vec![0u8; 5 * 64 + 128];
            f.read_at(&mut got, 4096 - 64).unwrap();
            assert!(got[..64].iter().all(|&b| b == 0), "{persistence:?}: before the range");
            for i in 0..5 {
                assert_eq!(got[64 * (i + 1)..64 * (i + 2)], line(i), "{persistence:?}: line {i}");
            }
            assert!(got[6 * 64..].iter().all(|&b| b == 0), "{persistence:?}: past the range");
        }
    }
}
