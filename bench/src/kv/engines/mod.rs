//! The engines under test, behind one trait: each runs a whole batch of operations per call, in
//! its own transactions, so that a call through the trait costs nothing per operation.
//!
//! | engine | stores a key-value pair as | reads through | a commit is |
//! |---|---|---|---|
//! | nvpage | a row (`k I64`, `v VarChar(100)`) of a heap table with a unique index on `k` | its buffer pool (the size asked for) over the layer | durable at return (pages forced, the log rewound) |
//! | nvpage, clustered | the same row in a leaf of the table's primary key's B+tree (`Storage::Clustered`) | the same | the same |
//! | LMDB (`heed`) | a B+tree entry, key the 8 big-endian bytes | its read-only mapping: the OS page cache | durable at return (`fdatasync`; LMDB's defaults) |
//! | redb | a B+tree entry, key a `u64` | its own cache (1 GiB by default) over `pread` and the OS page cache | durable at return (`Durability::Immediate`, the default) |
//! | SQLite (`rusqlite`, bundled) | a row of a `WITHOUT ROWID` table, `k BLOB PRIMARY KEY` | its page cache (2 MiB by default) over `pread` and the OS page cache | durable at return (`journal_mode=WAL`, `synchronous=FULL`: the WAL is synced at every commit) |
//!
//! LMDB, redb and SQLite are compiled in only with the bench's features `lmdb`, `redb` and
//! `sqlite` ([`crate::features`]); opening one this build left out is an error naming its feature.

#[cfg(feature = "lmdb")]
mod lmdb_store;
mod nvpage_store;
#[cfg(feature = "redb")]
mod redb_store;
#[cfg(feature = "sqlite")]
mod sqlite_store;

use std::path::Path;

use clap::ValueEnum;
use nvpage::Layer;
use serde::Serialize;

use super::workload::Op;
use crate::BoxError;
use crate::features::Comparison;
use crate::tpch::Medium;

/// A database of the data set, open, as the runner drives it. Every method runs on the calling
/// thread in that engine's own transactions; several threads may call at once.
pub trait Store: Sync {
    /// Inserts `value(k, 0)` for every key of `keys`, in that order, in one write transaction,
    /// and commits it (durably). The store is empty before.
    fn load(&self, keys: &[u64]) -> Result<(), BoxError>;

    /// Looks up every key of `keys` ([`BATCH`](super::workload::BATCH) to a read transaction)
    /// and returns the sum of the values' digests. A missing key is an error.
    fn lookups(&self, keys: &[u64]) -> Result<u64, BoxError>;

    /// Reads the [`SCAN_LEN`](super::workload::SCAN_LEN) entries from each key of `starts` on,
    /// in key order ([`BATCH`](super::workload::BATCH) scans to a read transaction), and
    /// returns the sum of their values' digests.
    fn scans(&self, starts: &[u64]) -> Result<u64, BoxError>;

    /// Runs `ops` in order in write transactions, one per [`batches`](super::workload::batches)
    /// slice, each committed durably; a lookup reads through the open write transaction.
    /// Returns the sum of the digests of the values looked up.
    fn mix(&self, ops: &[Op]) -> Result<u64, BoxError>;

    /// How a commit is made durable, and what it survives.
    fn durability(&self) -> String;

    /// The value of `key`, if it is there (for checking, not timed).
    fn get(&self, key: u64) -> Result<Option<Vec<u8>>, BoxError>;

    /// Pages read from the file so far (nvpage: pool misses, copies on write and redirected
    /// reads), where the engine counts them.
    fn pages_read(&self) -> Option<u64> {
        None
    }
}

/// An engine, as `--engines` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineName {
    /// nvpage, on each layer of `--layers`: a heap table and a unique index.
    Nvpage,
    /// nvpage, on each layer of `--layers`: a clustered table (rows in the key's B+tree).
    NvpageClustered,
    /// LMDB through heed.
    Lmdb,
    /// redb.
    Redb,
    /// SQLite through rusqlite.
    Sqlite,
}

/// One engine configuration of the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// nvpage on a layer: a heap table and a unique index.
    Nvpage(Layer),
    /// nvpage on a layer: a clustered table.
    NvpageClustered(Layer),
    /// LMDB.
    Lmdb,
    /// redb.
    Redb,
    /// SQLite.
    Sqlite,
}

impl EngineName {
    /// The engine nvpage is compared with, for all but nvpage.
    pub fn comparison(self) -> Option<Comparison> {
        match self {
            EngineName::Nvpage | EngineName::NvpageClustered => None,
            EngineName::Lmdb => Some(Comparison::Lmdb),
            EngineName::Redb => Some(Comparison::Redb),
            EngineName::Sqlite => Some(Comparison::Sqlite),
        }
    }

    /// Whether this build has the engine (nvpage always; the others with their features).
    pub fn is_compiled(self) -> bool {
        self.comparison().is_none_or(Comparison::is_compiled)
    }
}

impl Engine {
    /// The engine nvpage is compared with, for all but nvpage.
    pub fn comparison(self) -> Option<Comparison> {
        match self {
            Engine::Nvpage(_) | Engine::NvpageClustered(_) => None,
            Engine::Lmdb => Some(Comparison::Lmdb),
            Engine::Redb => Some(Comparison::Redb),
            Engine::Sqlite => Some(Comparison::Sqlite),
        }
    }

    /// The engine's name: `nvpage`, `nvpage-clustered`, `lmdb`, `redb`, `sqlite`.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Nvpage(_) => "nvpage",
            Engine::NvpageClustered(_) => "nvpage-clustered",
            Engine::Lmdb => "lmdb",
            Engine::Redb => "redb",
            Engine::Sqlite => "sqlite",
        }
    }

    /// nvpage's layer, `-` for the others.
    pub fn layer(self) -> &'static str {
        match self {
            Engine::Nvpage(l) | Engine::NvpageClustered(l) => l.name(),
            _ => "-",
        }
    }

    /// `nvpage/se2`, `lmdb`, ...
    pub fn label(self) -> String {
        match self {
            Engine::Nvpage(l) | Engine::NvpageClustered(l) => {
                format!("{}/{}", self.name(), l.name())
            }
            e => e.name().into(),
        }
    }

    /// Whether the engine has a pool the benchmark sizes (only nvpage: the others keep their
    /// own defaults and the OS page cache).
    pub fn has_pool(self) -> bool {
        matches!(self, Engine::Nvpage(_) | Engine::NvpageClustered(_))
    }

    /// What the engine reads through, as the table's `cache` column says it.
    pub fn cache(self, pool_fraction: Option<f64>) -> String {
        match (self, pool_fraction) {
            (Engine::Nvpage(_) | Engine::NvpageClustered(_), Some(f)) => format!("pool {f}"),
            (Engine::Lmdb, _) => "OS cache (mmap)".into(),
            (Engine::Redb, _) => "1 GiB + OS cache".into(),
            (Engine::Sqlite, _) => "2 MiB + OS cache".into(),
            (Engine::Nvpage(_) | Engine::NvpageClustered(_), None) => "pool ≥ the data".into(),
        }
    }

    /// Opens (creating if missing) the engine's database in directory `dir` on `medium`; nvpage
    /// with a pool of `pool_bytes`. An engine this build left out is an error naming its
    /// feature.
    // `entries` sizes LMDB's map only.
    #[cfg_attr(not(feature = "lmdb"), allow(unused_variables))]
    pub fn open(
        self,
        dir: &Path,
        medium: Medium,
        pool_bytes: u64,
        entries: u64,
    ) -> Result<Box<dyn Store>, BoxError> {
        Ok(match self {
            Engine::Nvpage(layer) => {
                Box::new(nvpage_store::NvStore::open(dir, layer, medium, pool_bytes, false)?)
            }
            Engine::NvpageClustered(layer) => {
                Box::new(nvpage_store::NvStore::open(dir, layer, medium, pool_bytes, true)?)
            }
            #[cfg(feature = "lmdb")]
            Engine::Lmdb => Box::new(lmdb_store::LmdbStore::open(dir, medium, entries)?),
            #[cfg(feature = "redb")]
            Engine::Redb => Box::new(redb_store::RedbStore::open(dir, medium)?),
            #[cfg(feature = "sqlite")]
            Engine::Sqlite => Box::new(sqlite_store::SqliteStore::open(dir, medium)?),
            #[cfg(not(all(feature = "lmdb", feature = "redb", feature = "sqlite")))]
            left_out => {
                let missing: Vec<Comparison> = left_out.comparison().into_iter().collect();
                return Err(crate::features::not_compiled(&missing, "kv").into());
            }
        })
    }
}

/// The durability of the engines other than nvpage: how their commit is made durable, the
/// medium, and what that survives.
#[cfg(any(feature = "lmdb", feature = "redb", feature = "sqlite"))]
fn durability(how: &str, medium: Medium) -> String {
    let survives = match medium {
        Medium::Disk => "power loss",
        Medium::Tmpfs => "a process crash only (tmpfs is DRAM)",
    };
    format!("durable at commit: {how}, on {}: survives {survives}", medium.name())
}
