//! Opening a database: the builder, creation, and the [`Database`] handle.
//!
//! Open, in order (DESIGN.md rule 5): check every option (nothing on disk is touched by an open
//! an option refuses); take the log; check the data file's header against the log's UUID with
//! plain reads; roll back the log's current generation with plain writes (`recovery.rs`); only
//! then open the data file with the chosen layer, start the buffer pool and read the catalog.
//!
//! Locks: a writable open holds both files exclusively, a read-only open holds them shared, so
//! any number of read-only handles, in this process or others, may have a database open while no
//! writable one does (`nvpage-storage`'s `RawFile`).

use nvpage_buffer::idhash::IdMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use nvpage_buffer::{BufferPool, Counters, MIN_FRAMES, Snapshots, View};
use nvpage_storage::page::MIN_PAGE_SIZE;
use nvpage_storage::{
    Durability, Layer, OpenOptions, PageId, PageSize, PersistRequest, StorageError,
};
use nvpage_wal::{CreateOptions, Log, Prefill};
use parking_lot::{Mutex, RwLock};

use crate::txn::Published;
use uuid::Uuid;

use crate::catalog::{self, CATALOG_ROOT, Catalog};
use crate::error::{Error, Result};
use crate::heap::HeapPage;
use crate::recovery::{self, Recover, RecoveryReport};
use crate::table::Fsm;
use crate::undo::UndoHook;

/// The data file's name in a database directory.
pub const DATA_FILE: &str = "data.nvpage";
/// The log's name in a database directory.
pub const LOG_FILE: &str = "log.nvpage";

/// How to open (or create) a database. [`Database::open`] uses the defaults.
#[derive(Clone, Debug)]
pub struct Builder {
    layer: Layer,
    page_size: u64,
    pool_bytes: u64,
    log_bytes: u64,
    max_log_bytes: u64,
    log_prefill: Prefill,
    log_dir: Option<PathBuf>,
    log_persistence: Option<PersistRequest>,
    persistence: PersistRequest,
    max_file_bytes: u64,
    max_version_bytes: u64,
    read_only: bool,
    create: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Self {
            layer: Layer::best_compiled(),
            page_size: nvpage_storage::page::DEFAULT_PAGE_SIZE as u64,
            pool_bytes: 64 << 20,
            log_bytes: DEFAULT_LOG_BYTES,
            max_log_bytes: DEFAULT_MAX_LOG_BYTES,
            log_prefill: Prefill::Allocate,
            log_dir: None,
            log_persistence: None,
            persistence: PersistRequest::Auto,
            max_file_bytes: nvpage_storage::file::DEFAULT_MAX_FILE_BYTES,
            max_version_bytes: DEFAULT_MAX_VERSION_BYTES,
            read_only: false,
            create: true,
        }
    }
}

impl Builder {
    /// The file layer (default: the best compiled in, SE2 > SE1 > pread).
    pub fn layer(mut self, layer: Layer) -> Self {
        self.layer = layer;
        self
    }

    /// The page size of a new database (4 KiB to 64 KiB, a power of two; default 8 KiB). An
    /// existing database keeps its own.
    pub fn page_size(mut self, bytes: u64) -> Self {
        self.page_size = bytes;
        self
    }

    /// Memory for the buffer pool's frames (default 64 MiB; at least 4 pages of the database's
    /// page size and at most the 128 TiB of a process's address space, else the open is
    /// [`Error::InvalidOption`] before anything on disk is touched). A pool the system then
    /// cannot allocate is found only when the pool is made, after the files are open.
    pub fn pool_bytes(mut self, bytes: u64) -> Self {
        self.pool_bytes = bytes;
        self
    }

    /// The log file's size when a new database is created, header page included (default
    /// 1 MiB, [`DEFAULT_LOG_BYTES`]). The log holds the before-images of the running write
    /// transaction only (each commit empties it), so it starts small and grows when a
    /// transaction needs more, to twice its size at a time, up to [`Builder::max_log_bytes`];
    /// it never shrinks. An existing database keeps the log it has.
    /// A size the log's format cannot hold is [`Error::InvalidOption`] before anything is
    /// created.
    pub fn log_bytes(mut self, bytes: u64) -> Self {
        self.log_bytes = bytes;
        self
    }

    /// The largest the log file may grow to, header page included (default 1 GiB,
    /// [`DEFAULT_MAX_LOG_BYTES`]; at least [`Builder::log_bytes`]): a transaction whose
    /// before-images would need more is [`Error::TransactionTooLarge`], rolled back with the
    /// database as it was. Address space for it is reserved at open (the log's mapping never
    /// moves); disk or memory only as the log grows. Applies at every open; a log that is
    /// larger already keeps its size.
    pub fn max_log_bytes(mut self, bytes: u64) -> Self {
        self.max_log_bytes = bytes;
        self
    }

    /// How a new database's log file is set aside, and the space it grows by (default
    /// [`Prefill::Allocate`]). [`Prefill::Zeros`] writes the space once, at create and at each
    /// growth, after which its durable appends on a disk file system overwrite written blocks
    /// instead of committing the file system's journal for each block they first reach: worth
    /// it on a disk for a database that commits often; on tmpfs or DAX it gains nothing.
    pub fn log_prefill(mut self, prefill: Prefill) -> Self {
        self.log_prefill = prefill;
        self
    }

    /// Keeps the log in directory `dir` instead of beside the data file: a small persistent-memory
    /// device beside a data disk, as PostgreSQL puts `pg_wal` on a device of its own. Give the
    /// same directory at every open (the log is `dir/log.nvpage`; one database per directory):
    /// an open without it finds no log and reports the database `Incomplete`, and a log of
    /// another database is `ForeignLog` (the files carry the database's UUID). Both files are
    /// locked; the log is created first and recovered from first, as beside the data. The
    /// database survives what the weaker of its two media survives ([`Database::guarantee`]).
    /// Like the database's own directory, `dir` is made if missing, not its parents.
    pub fn log_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.log_dir = Some(dir.into());
        self
    }

    /// How the log persists, when it should differ from the data file's
    /// ([`Builder::persistence`], the default): `CacheLine` for a log on NVM (or emulated NVM on
    /// tmpfs) beside a data file on a disk, whose own request stays `Auto`.
    pub fn log_persistence(mut self, p: PersistRequest) -> Self {
        self.log_persistence = Some(p);
        self
    }

    fn log_request(&self) -> PersistRequest {
        self.log_persistence.unwrap_or(self.persistence)
    }

    /// How to persist (see [`nvpage_storage::persist`]): `CacheLine` puts the mapped layers and the
    /// log on cache-line flushes (DAX, or emulated NVM on tmpfs only).
    pub fn persistence(mut self, p: PersistRequest) -> Self {
        self.persistence = p;
        self
    }

    /// The largest size the data file may reach while open (the mapping's reservation; default
    /// 256 GiB). More than a mapping can reserve (128 TiB) is
    /// [`StorageError::MaxBytesTooLarge`], and for a new database less than its first two pages
    /// is [`Error::InvalidOption`], both before anything is created.
    pub fn max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = bytes;
        self
    }

    /// Memory for old versions of pages kept for read transactions whose snapshot predates a
    /// change (default 256 MiB). Past it, versions are freed oldest commit first, and a read
    /// transaction that then needs one it lost fails with [`Error::SnapshotTooOld`]; the writer
    /// never waits for readers. The running write transaction's own versions are not counted
    /// (the log's limit, [`Builder::max_log_bytes`], bounds them).
    ///
    /// 0 keeps no old version past the commit that made it: a read transaction that reads a
    /// page some commit changed after its snapshot began fails with [`Error::SnapshotTooOld`]
    /// (pages no commit changed since read as ever). For an application whose reads never
    /// overlap a commit, or that retries them; the memory for versions is then nil.
    pub fn max_version_bytes(mut self, bytes: u64) -> Self {
        self.max_version_bytes = bytes;
        self
    }

    /// Open read-only: every write transaction is [`Error::ReadOnly`]. The files are locked
    /// shared, so any number of read-only opens, in this process or others, have the database
    /// open at once; one is refused while a writable open holds it, and a writable open is
    /// refused while any read-only one does
    /// ([`StorageError::AlreadyOpen`](crate::StorageError::AlreadyOpen), naming the holder). A
    /// database whose log holds an unfinished transaction is [`Error::RecoveryNeeded`]: a
    /// read-only open never recovers, and writes nothing.
    pub fn read_only(mut self, yes: bool) -> Self {
        self.read_only = yes;
        self
    }

    /// Whether a missing database is created (default true). Only the database directory itself
    /// is made: a missing parent is [`Error::NoParentDirectory`].
    pub fn create(mut self, yes: bool) -> Self {
        self.create = yes;
        self
    }

    /// Opens the database in directory `dir`, creating it (the directory, not its parents) if
    /// allowed and missing. A path that is a file is [`Error::NotADirectory`]; one that cannot be
    /// examined (permission denied, ...) is [`Error::Inaccessible`], naming the OS error. An
    /// option out of range is [`Error::InvalidOption`], found before any file or directory is
    /// made or changed.
    pub fn open(self, dir: impl AsRef<Path>) -> Result<Database> {
        Database::open_with(dir.as_ref(), self)
    }

    /// Checks every option's value, before the open touches the disk: `page_bytes` is the page
    /// size of the database the open will create (`creating`) or open.
    fn validate(&self, page_bytes: usize, creating: bool) -> Result<()> {
        let invalid = |option: &str, value: u64, why: String| {
            Err(Error::InvalidOption(format!("{option}({value}): {why}")))
        };
        pool_frames(self.pool_bytes, page_bytes)?;
        // The user address space of x86-64 (4-level page tables): no pool or mapping is larger.
        let limit = nvpage_storage::file::MAX_SUPPORTED_FILE_BYTES;
        if self.pool_bytes > limit {
            let why = format!("more than the {limit} bytes (128 TiB) of a process's address space");
            return invalid("pool_bytes", self.pool_bytes, why);
        }
        if self.max_file_bytes > limit {
            // The storage crate's own refusal, as the file's open would give it.
            let (requested_bytes, limit_bytes) = (self.max_file_bytes, limit);
            return Err(StorageError::MaxBytesTooLarge { requested_bytes, limit_bytes }.into());
        }
        if !creating {
            return Ok(());
        }
        let first_pages = (CATALOG_ROOT.0 + 1) * page_bytes as u64;
        if self.max_file_bytes < first_pages {
            let why = format!(
                "a new database's data file starts with {} pages of {page_bytes} bytes \
                 ({first_pages} bytes)",
                CATALOG_ROOT.0 + 1,
            );
            return invalid("max_file_bytes", self.max_file_bytes, why);
        }
        if let Err(e) = Log::check_size(self.log_bytes) {
            return invalid("log_bytes", self.log_bytes, e.to_string());
        }
        if self.log_bytes > self.max_log_bytes {
            let why = format!(
                "passes max_log_bytes ({}): a log starts no larger than its limit",
                self.max_log_bytes
            );
            return invalid("log_bytes", self.log_bytes, why);
        }
        Ok(())
    }
}

/// The page size an existing data file's header records, read with a plain read before anything
/// is locked or written; the smallest page size where the header cannot be read or decoded (a
/// torn header, a file being created), whose pool the layer's open checks again.
fn stored_page_size(data_path: &Path) -> usize {
    use std::io::Read;
    // Not a FIFO's open, which would wait for a writer.
    if !std::fs::metadata(data_path).is_ok_and(|m| m.is_file()) {
        return MIN_PAGE_SIZE;
    }
    let mut prefix = vec![0u8; MIN_PAGE_SIZE];
    let read = std::fs::File::open(data_path).and_then(|mut f| f.read_exact(&mut prefix));
    read.ok()
        .and_then(|()| nvpage_storage::FileHeader::decode_prefix(data_path, &prefix).ok())
        .map_or(MIN_PAGE_SIZE, |h| h.page_size.bytes())
}

/// How many frames a pool of `pool_bytes` holds at `page_bytes` a page: at least
/// [`MIN_FRAMES`], else [`Error::InvalidOption`].
fn pool_frames(pool_bytes: u64, page_bytes: usize) -> Result<usize> {
    let frames = (pool_bytes / page_bytes as u64) as usize;
    if frames < MIN_FRAMES {
        return Err(Error::InvalidOption(format!(
            "pool_bytes({pool_bytes}): a pool holds at least {MIN_FRAMES} pages: {} bytes at \
             {page_bytes} bytes a page",
            MIN_FRAMES as u64 * page_bytes as u64
        )));
    }
    Ok(frames)
}

/// The default bound on old versions' memory ([`Builder::max_version_bytes`]).
pub const DEFAULT_MAX_VERSION_BYTES: u64 = 256 << 20;

/// The log file's default size at create ([`Builder::log_bytes`]): 1 MiB, header page
/// included. A database's log holds one transaction's before-images, and the changed lines of
/// a page are logged, not whole pages: a transaction of a few rows logs a few KiB, and a load
/// of 10,000 rows into a table with two indexes logged 1.8 MB (docs/design.md, "Sizing the
/// log"). Larger transactions grow the log.
pub const DEFAULT_LOG_BYTES: u64 = 1 << 20;

/// The default limit of the log's growth ([`Builder::max_log_bytes`]): 1 GiB, header page
/// included.
pub const DEFAULT_MAX_LOG_BYTES: u64 = 1 << 30;

static NEXT_DB_ID: AtomicUsize = AtomicUsize::new(1);

/// An open database: one data file and one log, both locked (exclusively by a writable open,
/// shared by read-only ones).
///
/// `Database` is `Send + Sync`: share it between threads by reference (or in an `Arc`). One
/// [`WriteTxn`](crate::WriteTxn) runs at a time; any number of [`ReadTxn`](crate::ReadTxn)s run
/// beside it, each reading a snapshot: the database as of the last commit before it began
/// (snapshot isolation; docs/design.md, "Readers beside the writer").
#[derive(Debug)]
pub struct Database {
    pub(crate) id: usize,
    dir: PathBuf,
    log_path: PathBuf,
    log_durability: Durability,
    pub(crate) pool: BufferPool,
    pub(crate) log: Arc<RwLock<Log>>,
    pub(crate) hook: Arc<UndoHook>,
    /// Held by the write transaction for its life (and by `check`).
    pub(crate) writer: Mutex<()>,
    /// The commit sequence, what each commit published, and the live readers' snapshots.
    pub(crate) snapshots: Snapshots<Published>,
    /// Free space per table: the writer's cache, dropped on abort.
    pub(crate) fsm: Mutex<IdMap<u32, Fsm>>,
    poisoned: AtomicBool,
    read_only: bool,
    /// Set by [`Database::close`]: its drop then writes nothing.
    closed: AtomicBool,
    /// The open found the file's counts stale and could not count every table (a damaged
    /// page): a close leaves the file's flag saying so.
    counts_unknown: bool,
    /// What recovery did at this open, if it rolled a transaction back.
    recovery: Option<RecoveryReport>,
}

impl Drop for Database {
    /// A clean close, silently: see [`Database::close`]. Nothing while a panic unwinds, while
    /// the thread's thread-locals are torn down (a handle kept in a `thread_local!`: a write
    /// transaction then would panic, and a panic there aborts the process), or while another
    /// write transaction holds the writer's lock (one leaked with `mem::forget`): the next open
    /// counts the rows instead. A panic inside is caught: dropping never unwinds.
    fn drop(&mut self) {
        if self.closed.load(Ordering::Acquire)
            || std::thread::panicking()
            || !crate::txn::thread_state_alive()
        {
            return;
        }
        let close = std::panic::AssertUnwindSafe(|| self.write_exact_counts(false));
        let _ = std::panic::catch_unwind(close);
    }
}

impl Database {
    /// Opens (or creates) the database in `dir` with the default options (see
    /// [`Builder::open`]).
    pub fn open(dir: impl AsRef<Path>) -> Result<Database> {
        Builder::default().open(dir)
    }

    /// Options for opening a database.
    pub fn builder() -> Builder {
        Builder::default()
    }

    fn open_with(dir: &Path, b: Builder) -> Result<Database> {
        let page_size = PageSize::new(b.page_size)?;
        if !b.layer.is_compiled() {
            return Err(StorageError::LayerNotCompiled(b.layer.name()).into());
        }
        let log_dir = b.log_dir.clone().unwrap_or_else(|| dir.to_path_buf());
        let data_path = dir.join(DATA_FILE);
        let log_path = log_dir.join(LOG_FILE);
        let writes = b.create && !b.read_only;
        // Options first, so that one refused touches nothing (an open that recovers writes the
        // log's state word and the data file). Whether this open will create is decided for
        // certain below, under the directory's lock; a database created meanwhile by another
        // opener, or one whose header is torn, has its page size checked against the pool only
        // once the layer has it open.
        let creating = writes && !data_path.try_exists().unwrap_or(false);
        let pages = if creating { page_size.bytes() } else { stored_page_size(&data_path) };
        b.validate(pages, creating)?;
        let made_dir = database_dir(dir, writes)?;
        let made_log_dir = log_dir != dir && database_dir(&log_dir, writes)?;
        // Openers of one directory decide one at a time whether to create, finish a crashed
        // create or open (two first opens at once would otherwise each take the other's fresh
        // log for a crashed create); the one that loses then meets the files' own locks. With
        // the log elsewhere, its directory is locked too, always after the data's.
        let _deciding = nvpage_storage::file::lock_dir(dir)?;
        let _deciding_log =
            if log_dir != dir { nvpage_storage::file::lock_dir(&log_dir)? } else { None };
        if !exists(&data_path)? {
            if exists(&log_path)? {
                if !crashed_create(&log_path)? {
                    return Err(Error::Incomplete { path: dir.into(), missing: DATA_FILE });
                }
                // A read-only open leaves the files as they are.
                if !b.read_only {
                    std::fs::remove_file(&log_path)
                        .map_err(|e| nvpage_storage::StorageError::io("remove", &log_path, e))?;
                }
            }
            if !writes {
                return Err(Error::NotFound { path: dir.into() });
            }
            if let Err(e) = create(dir, &log_dir, &b, page_size) {
                // Leave no empty directory behind a create that failed (a refused persistence
                // mode, a full disk): the paths are as the caller gave them.
                if made_log_dir {
                    let _ = std::fs::remove_dir(&log_dir);
                }
                if made_dir {
                    let _ = std::fs::remove_dir(dir);
                }
                return Err(e);
            }
        } else if !exists(&log_path)? {
            return Err(Error::Incomplete { path: log_dir, missing: LOG_FILE });
        }
        let (log, recovery) = recovery::recover(&Recover {
            dir,
            data_path: &data_path,
            log_path: &log_path,
            read_only: b.read_only,
            log_persistence: b.log_request(),
            max_log_bytes: b.max_log_bytes,
            log_prefill: b.log_prefill,
        })?;
        let opts = OpenOptions {
            layer: b.layer,
            page_size,
            max_bytes: b.max_file_bytes,
            persistence: b.persistence,
            read_only: b.read_only,
            uuid: None,
        };
        let layer = opts.open(&data_path)?;
        if layer.file().uuid() != log.uuid() {
            return Err(Error::Wal(nvpage_wal::WalError::ForeignLog {
                path: log_path,
                expected: layer.file().uuid(),
                found: log.uuid(),
            }));
        }
        let frames = pool_frames(b.pool_bytes, layer.file().page_size().bytes())?;
        let log_durability = log.durability();
        let log = Arc::new(RwLock::new(log));
        let hook = Arc::new(UndoHook::new(log.clone()));
        let pool = BufferPool::new(layer, frames, hook.clone())?;
        pool.versions().set_limit(b.max_version_bytes);
        let mut catalog = load_catalog(&pool)?;
        let counts_unknown = catalog.counts_stale && !count_rows(&pool, &mut catalog);
        let page_count = pool.file().page_count();
        Ok(Database {
            id: NEXT_DB_ID.fetch_add(1, Ordering::Relaxed),
            dir: dir.into(),
            log_path: log_path.clone(),
            log_durability,
            pool,
            log,
            hook,
            writer: Mutex::new(()),
            snapshots: Snapshots::new(Published { catalog, page_count }),
            fsm: Mutex::new(IdMap::default()),
            poisoned: AtomicBool::new(false),
            read_only: b.read_only,
            closed: AtomicBool::new(false),
            counts_unknown,
            recovery,
        })
    }

    /// What recovery did at this open: `None` when the log held no unfinished transaction
    /// (every open after a clean close, and every read-only open, which refuses to open a
    /// database that needs recovery: [`Error::RecoveryNeeded`]).
    pub fn recovery(&self) -> Option<&RecoveryReport> {
        self.recovery.as_ref()
    }

    /// The database's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The file layer in use.
    pub fn layer(&self) -> Layer {
        self.pool.layer_kind()
    }

    /// The data file's persistence mode and medium.
    pub fn durability(&self) -> Durability {
        self.pool.file().durability()
    }

    /// The log's persistence mode and medium.
    pub fn log_durability(&self) -> Durability {
        self.log_durability
    }

    /// The log file (beside the data file, or in [`Builder::log_dir`]).
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// What a committed transaction survives: the weaker of the data file's and the log's
    /// guarantees (a log on tmpfs beside a data disk survives a process crash only, and so does
    /// the database).
    pub fn guarantee(&self) -> &'static str {
        let (data, log) = (self.durability(), self.log_durability());
        if data.survives_power_loss() && !log.survives_power_loss() {
            log.guarantee()
        } else {
            data.guarantee()
        }
    }

    /// The page size.
    pub fn page_size(&self) -> usize {
        self.pool.page_size()
    }

    /// Pages in the data file as of the last commit (header and catalog included).
    pub fn page_count(&self) -> u64 {
        self.snapshots.current().page_count
    }

    /// The buffer pool's counters (hits, misses, redirected reads, bytes copied, ...).
    pub fn counters(&self) -> Counters {
        self.pool.counters()
    }

    /// The database's identity (in the data file's and the log's headers).
    pub fn uuid(&self) -> Uuid {
        self.pool.file().uuid()
    }

    /// Closes the database, reporting what dropping it would do silently: when commits since
    /// the catalog was last written changed row counts only (such commits do not write the
    /// catalog), one more commit writes the exact counts, so that the next open need not count
    /// rows again. An error leaves the database as committed; the next open counts the rows
    /// of every table (reading each of its pages once) and recovers as after a crash. Nothing
    /// is written by a read-only or poisoned database, when the counts are exact already, or
    /// when the open could not count a damaged table's rows.
    pub fn close(self) -> Result<()> {
        self.closed.store(true, Ordering::Release);
        self.write_exact_counts(true)
    }

    /// Writes the exact counts if the file's may be stale; waits for the writer's lock if
    /// `wait`, else gives up while another transaction holds it.
    fn write_exact_counts(&self, wait: bool) -> Result<()> {
        if self.read_only
            || self.counts_unknown
            || self.is_poisoned()
            || !self.snapshots.current().catalog.counts_stale
        {
            return Ok(());
        }
        let tx = if wait {
            Some(self.begin_write_for("close")?)
        } else {
            self.try_begin_write_for("close")?
        };
        tx.map_or(Ok(()), |tx| tx.commit_exact_counts())
    }

    /// Whether an earlier failure poisoned the database: a failure during commit, abort or
    /// recovery, or any failed persist of the data file or the log (rule 6), even one that no
    /// transaction has met yet.
    pub fn is_poisoned(&self) -> bool {
        // Never waits: while the writer holds the log (its commit point, a rollback) it is the
        // one that meets a log failure, and it poisons the database itself.
        self.poisoned.load(Ordering::Acquire)
            || self.pool.file().raw().is_poisoned()
            || self.log.try_read().is_some_and(|l| l.is_poisoned())
    }

    pub(crate) fn poison(&self) {
        self.poisoned.store(true, Ordering::Release);
    }

    pub(crate) fn check_usable(&self, write: bool) -> Result<()> {
        if self.is_poisoned() {
            return Err(Error::Poisoned);
        }
        if write && self.read_only {
            return Err(Error::ReadOnly);
        }
        Ok(())
    }

    /// What the database holds for its readers right now: live read transactions, how far the
    /// oldest lags, and the old versions kept for them; and the log's bytes.
    pub fn stats(&self) -> Stats {
        let snap = self.snapshots.stats();
        let v = self.pool.versions().stats();
        Stats {
            commits: snap.commits,
            readers: snap.readers,
            oldest_snapshot_age: snap.oldest_age,
            versions: v.versions,
            version_bytes: v.bytes,
            version_horizon: v.horizon,
            log_bytes: self.log.read().tell(),
        }
    }
}

/// What [`Database::stats`] reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Commits since the database was opened.
    pub commits: u64,
    /// Live read transactions.
    pub readers: u64,
    /// How many commits the oldest live read transaction's snapshot is behind (0 with none).
    pub oldest_snapshot_age: u64,
    /// Old page versions kept for read transactions (and the running writer's, until it ends).
    pub versions: u64,
    /// Their memory, in bytes.
    pub version_bytes: u64,
    /// Versions of commits at or below this were freed by [`Builder::max_version_bytes`]: a
    /// reader whose snapshot is older and needs one fails with [`Error::SnapshotTooOld`].
    pub version_horizon: u64,
    /// Bytes in the log: before-images of the running write transaction (0 between
    /// transactions: a commit or a rollback rewinds it). Images gathered for the pool's next
    /// persist are not in it yet.
    pub log_bytes: u64,
}

/// Checks that `dir` is a directory and, when `create` allows and it is missing, makes it — the
/// database directory only, never its parents — and syncs its parent so the new name is durable.
/// Returns whether this call made it. A path that is missing (and may not be created) is
/// [`Error::NotFound`]; a file is [`Error::NotADirectory`]; a missing parent is
/// [`Error::NoParentDirectory`]; any other failure to look (permission denied, a component that
/// is a file) is [`Error::Inaccessible`] with the OS error, never taken for "no database here".
fn database_dir(dir: &Path, create: bool) -> Result<bool> {
    use std::io::ErrorKind;
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => return Ok(false),
        Ok(_) => return Err(Error::NotADirectory { path: dir.into() }),
        Err(e) if e.kind() != ErrorKind::NotFound => {
            return Err(Error::Inaccessible { path: dir.into(), source: e });
        }
        Err(_) if !create => return Err(Error::NotFound { path: dir.into() }),
        Err(_) => {}
    }
    match std::fs::create_dir(dir) {
        Ok(()) => {
            nvpage_storage::file::sync_parent_dir(dir)?;
            Ok(true)
        }
        // Another opener made it first: judge what is there now.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => database_dir(dir, false),
        Err(e) if e.kind() == ErrorKind::NotFound => Err(Error::NoParentDirectory {
            path: dir.into(),
            parent: dir.parent().unwrap_or(Path::new("")).into(),
        }),
        Err(e) => Err(nvpage_storage::StorageError::io("mkdir", dir, e).into()),
    }
}

/// Whether `path` exists; a failure to tell (permission denied, ...) is [`Error::Inaccessible`],
/// not "no".
fn exists(path: &Path) -> Result<bool> {
    path.try_exists().map_err(|source| Error::Inaccessible { path: path.into(), source })
}

/// A log with no data file is a create that crashed after starting the log (the data file
/// appears, complete, only by a rename at the very end of a create): such a log holds nothing
/// committed. Whether it is one: empty, or never a whole log (a crash inside `Log::create`: too
/// short, all zeros, or a torn header); a writable open then removes it so the database can be
/// created again. A log that opens and holds
/// records is kept, and the directory is `Incomplete`. Callers hold the directory's lock, so no
/// create is running beside this.
fn crashed_create(log_path: &Path) -> Result<bool> {
    use nvpage_wal::WalError;
    // Read-only: a writable open would start a new generation, and this one tells whether the
    // log was ever rewound (committed to) since its create.
    let read_only = nvpage_wal::OpenOptions { read_only: true, ..Default::default() };
    let unfinished = match Log::open_with(log_path, &read_only) {
        Ok(log) => log.tell() == 0 && log.generation() == nvpage_wal::layout::FIRST_GENERATION,
        Err(
            WalError::Truncated { .. }
            | WalError::NotALog { .. }
            | WalError::CorruptHeader { .. }
            | WalError::CorruptState { .. }
            | WalError::CorruptCapacity { .. },
        ) => true,
        Err(e) => return Err(e.into()),
    };
    Ok(unfinished)
}

/// The name a data file is built under before the rename that makes the database exist.
const DATA_FILE_CREATING: &str = "data.nvpage.creating";

/// Creates the log, then the data file — header and empty catalog — under a temporary name, and
/// renames it into place (then syncs the directory). Each step is durable before the next. A
/// crash before the rename leaves a lone log (and perhaps a half-built temporary file), which the
/// next open removes; after it, the database is whole.
fn create(dir: &Path, log_dir: &Path, b: &Builder, page_size: PageSize) -> Result<()> {
    // `dir` and `log_dir` exist: `open_with` made (and locked) them before deciding to create.
    let io = |op: &'static str, p: &Path, e| nvpage_storage::StorageError::io(op, p, e);
    let uuid = Uuid::new_v4();
    let log_opts = CreateOptions {
        persistence: b.log_request(),
        prefill: b.log_prefill,
        // The bits the data file gets (creat(2)'s 0o666 less the umask): who may read the
        // database may read its log.
        mode: 0o666,
        ..CreateOptions::new(uuid)
    };
    let log_path = log_dir.join(LOG_FILE);
    drop(Log::create(&log_path, b.log_bytes, &log_opts).map_err(|e| match e {
        nvpage_wal::WalError::NoSpace { path, bytes } => {
            Error::LogNoSpace { path, bytes, option: "log_bytes" }
        }
        e => e.into(),
    })?);
    let creating = dir.join(DATA_FILE_CREATING);
    match std::fs::remove_file(&creating) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(io("remove", &creating, e).into());
        }
        _ => {}
    }
    let opts = OpenOptions {
        layer: Layer::compiled()[0],
        page_size,
        max_bytes: b.max_file_bytes,
        persistence: PersistRequest::Auto,
        read_only: false,
        uuid: Some(uuid),
    };
    {
        let layer = opts.create(&creating)?;
        layer.grow(CATALOG_ROOT.0 + 1)?;
        let mut page = vec![0u8; page_size.bytes()];
        catalog::write_chunk(&mut page, &Catalog::default().encode(), 0);
        layer.write_page(CATALOG_ROOT, &mut page)?;
        layer.write_header()?;
        layer.sync()?;
    }
    let data = dir.join(DATA_FILE);
    std::fs::rename(&creating, &data).map_err(|e| io("rename", &creating, e))?;
    nvpage_storage::file::sync_parent_dir(&data)?;
    Ok(())
}

/// Counts the rows of every table, reading each of its pages (a clustered table's: the entries
/// of its tree's leaves), after an open found the file's
/// counts possibly stale (no clean close since commits changed counts only: see
/// `Catalog::counts_stale`). Every row is in each of its table's indexes once, so an index
/// holds as many entries as its table rows (`check` verifies both). The flag stays: it is the
/// file's state, until a commit or a close writes the catalog. A page that cannot be read or is
/// not a sound heap page of its table leaves that table (and its indexes) with the file's
/// counts, and the result `false`: the open goes on (a damaged page is reported where it is
/// read, and by `check`, which the open must allow), and no close writes those counts as exact.
fn count_rows(pool: &BufferPool, catalog: &mut Catalog) -> bool {
    let count = |id: u32, p: PageId| -> Result<u64> {
        let page = pool.read(p, View::Writer)?;
        Ok(HeapPage::new(&page, id, p.0)?.rows().count() as u64)
    };
    // A clustered table's rows are its tree's leaf entries.
    let count_leaves = |x: &catalog::IndexMeta| -> Result<u64> {
        let leaves = crate::index::tree::leaves(pool, View::Writer, x)?;
        leaves.into_iter().try_fold(0, |n, p| {
            let page = pool.read(PageId(p), View::Writer)?;
            Ok(n + crate::scan::leaf(&page, x.id, p)?.len() as u64)
        })
    };
    let mut all = true;
    let Catalog { tables, indexes, .. } = catalog;
    for t in tables.iter_mut() {
        let counted = match indexes.iter().find(|x| x.table_id == t.id && x.clustered) {
            Some(x) => count_leaves(x),
            None => t.pages().map(|p| count(t.id, p)).sum::<Result<u64>>(),
        };
        match counted {
            Ok(rows) => {
                t.rows = rows;
                for x in indexes.iter_mut().filter(|x| x.table_id == t.id) {
                    x.entries = rows;
                }
            }
            Err(_) => all = false,
        }
    }
    all
}

/// Reads the catalog chain from page 1.
fn load_catalog(pool: &BufferPool) -> Result<Catalog> {
    let mut blob = Vec::new();
    let mut next = CATALOG_ROOT.0;
    let mut chain = Vec::new();
    let page_count = pool.file().page_count();
    while next != 0 {
        if next >= page_count || chain.contains(&next) {
            return Err(Error::CorruptCatalog(format!("catalog chain reaches page {next}")));
        }
        let page = pool.read(PageId(next), View::Writer)?;
        let (chunk, n) = catalog::read_chunk(&page, PageId(next))?;
        blob.extend_from_slice(chunk);
        chain.push(next);
        next = n;
    }
    Catalog::decode(&blob, page_count, chain)
}
