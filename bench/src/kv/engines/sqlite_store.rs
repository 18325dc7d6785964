//! SQLite through rusqlite (bundled): `CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB NOT NULL)
//! WITHOUT ROWID` (one B-tree, keyed by the 8 big-endian bytes), `journal_mode=WAL`,
//! `synchronous=FULL` (the WAL is synced at every commit: durable at return; `NORMAL` would
//! not be). Its own defaults otherwise: a 2 MiB page cache over `pread` and the OS page cache,
//! the WAL checkpointed every 1000 pages. One connection per thread, kept in a pool.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use super::super::data::{digest, key_bytes, value};
use super::super::workload::{BATCH, Op, SCAN_LEN, batches};
use super::{Store, durability};
use crate::BoxError;
use crate::tpch::Medium;

/// The database file's name in its directory.
const FILE: &str = "kv.sqlite";

const GET: &str = "SELECT v FROM kv WHERE k = ?1";
const SCAN: &str = "SELECT v FROM kv WHERE k >= ?1 ORDER BY k LIMIT ?2";
const PUT: &str = "UPDATE kv SET v = ?2 WHERE k = ?1";
const INSERT: &str = "INSERT INTO kv (k, v) VALUES (?1, ?2)";

/// An open SQLite database holding the data set.
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    medium: Medium,
    /// Connections not in use: a thread takes one for a call and puts it back.
    idle: std::sync::Mutex<Vec<Connection>>,
}

fn missing(key: u64) -> BoxError {
    format!("sqlite: key {key:#x} is missing").into()
}

/// Opens a connection with the settings every connection needs (`synchronous` is per
/// connection; `journal_mode=WAL` is the file's).
fn connect(path: &Path) -> Result<Connection, BoxError> {
    let c = Connection::open(path)?;
    let mode: String = c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(format!("sqlite: journal_mode is {mode}, not wal").into());
    }
    c.execute_batch("PRAGMA synchronous=FULL")?;
    Ok(c)
}

impl SqliteStore {
    /// Opens (or creates, with its table) the database in `dir`.
    pub fn open(dir: &Path, medium: Medium) -> Result<SqliteStore, BoxError> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(FILE);
        let c = connect(&path)?;
        c.execute_batch(
            "CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID",
        )?;
        Ok(SqliteStore { path, medium, idle: std::sync::Mutex::new(vec![c]) })
    }

    /// Runs `f` with a connection of this thread's own for the call.
    fn with<R>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<R, BoxError>,
    ) -> Result<R, BoxError> {
        let taken = self.idle.lock().map_err(|_| "sqlite: connection pool poisoned")?.pop();
        let mut c = match taken {
            Some(c) => c,
            None => connect(&self.path)?,
        };
        let r = f(&mut c);
        self.idle.lock().map_err(|_| "sqlite: connection pool poisoned")?.push(c);
        r
    }
}

fn read(c: &Connection, k: u64) -> Result<u64, BoxError> {
    let mut get = c.prepare_cached(GET)?;
    let d =
        get.query_row([&key_bytes(k)[..]], |r| Ok(digest(r.get_ref(0)?.as_blob()?))).optional()?;
    d.ok_or_else(|| missing(k))
}

impl Store for SqliteStore {
    fn load(&self, keys: &[u64]) -> Result<(), BoxError> {
        self.with(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            {
                let mut ins = tx.prepare_cached(INSERT)?;
                for &k in keys {
                    ins.execute((&key_bytes(k)[..], &value(k, 0)[..]))?;
                }
            }
            tx.commit()?;
            // The load is done when its pages are in the database file, as the others' are.
            c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
            Ok(())
        })
    }

    fn lookups(&self, keys: &[u64]) -> Result<u64, BoxError> {
        self.with(|c| {
            let mut sum = 0u64;
            for chunk in keys.chunks(BATCH) {
                let tx = c.transaction()?;
                for &k in chunk {
                    sum = sum.wrapping_add(read(&tx, k)?);
                }
                tx.commit()?;
            }
            Ok(sum)
        })
    }

    fn scans(&self, starts: &[u64]) -> Result<u64, BoxError> {
        self.with(|c| {
            let mut sum = 0u64;
            for chunk in starts.chunks(BATCH) {
                let tx = c.transaction()?;
                {
                    let mut scan = tx.prepare_cached(SCAN)?;
                    for &s in chunk {
                        let mut rows = scan.query((&key_bytes(s)[..], SCAN_LEN as i64))?;
                        while let Some(r) = rows.next()? {
                            sum = sum.wrapping_add(digest(r.get_ref(0)?.as_blob()?));
                        }
                    }
                }
                tx.commit()?;
            }
            Ok(sum)
        })
    }

    fn mix(&self, ops: &[Op]) -> Result<u64, BoxError> {
        self.with(|c| {
            let mut sum = 0u64;
            for batch in batches(ops) {
                let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
                for op in batch {
                    match *op {
                        Op::Get(k) => sum = sum.wrapping_add(read(&tx, k)?),
                        Op::Put(k, version) => {
                            let mut put = tx.prepare_cached(PUT)?;
                            if put.execute((&key_bytes(k)[..], &value(k, version)[..]))? != 1 {
                                return Err(missing(k));
                            }
                        }
                    }
                }
                tx.commit()?;
            }
            Ok(sum)
        })
    }

    fn durability(&self) -> String {
        durability("the WAL fsync'd (journal_mode=WAL, synchronous=FULL)", self.medium)
    }

    fn get(&self, key: u64) -> Result<Option<Vec<u8>>, BoxError> {
        self.with(|c| {
            let mut get = c.prepare_cached(GET)?;
            Ok(get.query_row([&key_bytes(key)[..]], |r| r.get::<_, Vec<u8>>(0)).optional()?)
        })
    }
}
