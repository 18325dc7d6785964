//! LMDB through heed: one unnamed database, keys the 8 big-endian bytes, LMDB's defaults (a
//! durable commit: data pages written, `fdatasync`, the meta page written, `fdatasync`; reads
//! through a read-only mapping, so the OS page cache is LMDB's cache).

use std::ops::Bound;
use std::path::Path;

use heed::types::Bytes;
use heed::{CommitOrAbort, Env, EnvOpenOptions};

use super::super::data::{digest, key_bytes, value};
use super::super::workload::{BATCH, Op, SCAN_LEN, batches};
use super::{Store, durability};
use crate::BoxError;
use crate::tpch::Medium;

type Db<'e> = heed::Database<'e, Bytes, Bytes>;

/// An open LMDB environment holding the data set.
#[derive(Debug)]
pub struct LmdbStore {
    env: Env,
    medium: Medium,
}

fn missing(key: u64) -> BoxError {
    format!("lmdb: key {key:#x} is missing").into()
}

/// Opens the environment in `dir` with a map of `map_bytes` (address space only: the file
/// grows as pages are written).
#[allow(unsafe_code)]
fn open_env(dir: &Path, map_bytes: usize) -> Result<Env, BoxError> {
    let mut options = EnvOpenOptions::new();
    options.map_size(map_bytes);
    // SAFETY: heed's `open` is unsafe because a memory map is undefined behaviour to read if
    // the file under it is changed or truncated by anyone else. `dir` is a directory this
    // benchmark created for this environment alone (a fresh temporary directory); nothing else
    // in this process or outside it opens its files, and they are removed only after the `Env`
    // is dropped. LMDB's own lock file guards the rest, and this process opens the environment
    // once at a time (the runner drops one `LmdbStore` before it opens the next).
    let env = unsafe { options.open(dir) }?;
    Ok(env)
}

impl LmdbStore {
    /// Opens (or creates) the environment in `dir`, sized for `entries` entries.
    pub fn open(dir: &Path, medium: Medium, entries: u64) -> Result<LmdbStore, BoxError> {
        std::fs::create_dir_all(dir)?;
        // A generous reservation: about 1 KiB of address space per entry (an entry takes
        // about 130 bytes), at least 1 GiB; LMDB reports a full map as an error, never silently.
        let map = (entries.saturating_mul(1024)).max(1 << 30);
        let page = 4096;
        let env = open_env(dir, usize::try_from(map / page * page)?)?;
        let wtxn = env.write_txn()?;
        env.create_databases_and_commit(wtxn, |dbo, wtxn| {
            let db: Db<'_> = dbo.create_database(wtxn, None)?;
            heed::Result::Ok(CommitOrAbort::<_, ()>::Commit(db))
        })?;
        Ok(LmdbStore { env, medium })
    }

    /// The database handle, for the length of one call.
    fn db(&self) -> Result<Db<'_>, BoxError> {
        let rtxn = self.env.read_txn()?;
        let db = self
            .env
            .open_databases_and_commit(rtxn, |dbo, rtxn| {
                dbo.open_database(rtxn, None).map(CommitOrAbort::<_, ()>::Commit)
            })?
            .unwrap_commit();
        db.ok_or_else(|| "lmdb: the unnamed database is missing".into())
    }
}

impl Store for LmdbStore {
    fn load(&self, keys: &[u64]) -> Result<(), BoxError> {
        let db = self.db()?;
        let mut wtxn = self.env.write_txn()?;
        for &k in keys {
            db.put(&mut wtxn, &key_bytes(k), &value(k, 0))?;
        }
        wtxn.commit()?;
        Ok(())
    }

    fn lookups(&self, keys: &[u64]) -> Result<u64, BoxError> {
        let db = self.db()?;
        let mut sum = 0u64;
        for chunk in keys.chunks(BATCH) {
            let rtxn = self.env.read_txn()?;
            for &k in chunk {
                let v = db.get(&rtxn, &key_bytes(k))?.ok_or_else(|| missing(k))?;
                sum = sum.wrapping_add(digest(v));
            }
        }
        Ok(sum)
    }

    fn scans(&self, starts: &[u64]) -> Result<u64, BoxError> {
        let db = self.db()?;
        let mut sum = 0u64;
        for chunk in starts.chunks(BATCH) {
            let rtxn = self.env.read_txn()?;
            for &s in chunk {
                let from = key_bytes(s);
                let range = (Bound::Included(&from[..]), Bound::Unbounded);
                for entry in db.range(&rtxn, &range)?.take(SCAN_LEN) {
                    sum = sum.wrapping_add(digest(entry?.1));
                }
            }
        }
        Ok(sum)
    }

    fn mix(&self, ops: &[Op]) -> Result<u64, BoxError> {
        let db = self.db()?;
        let mut sum = 0u64;
        for batch in batches(ops) {
            let mut wtxn = self.env.write_txn()?;
            for op in batch {
                match *op {
                    Op::Get(k) => {
                        let v = db.get(&wtxn, &key_bytes(k))?.ok_or_else(|| missing(k))?;
                        sum = sum.wrapping_add(digest(v));
                    }
                    Op::Put(k, version) => db.put(&mut wtxn, &key_bytes(k), &value(k, version))?,
                }
            }
            wtxn.commit()?;
        }
        Ok(sum)
    }

    fn durability(&self) -> String {
        durability("fdatasync (LMDB's defaults: no NOSYNC, NOMETASYNC or WRITEMAP)", self.medium)
    }

    fn get(&self, key: u64) -> Result<Option<Vec<u8>>, BoxError> {
        let db = self.db()?;
        let rtxn = self.env.read_txn()?;
        Ok(db.get(&rtxn, &key_bytes(key))?.map(<[u8]>::to_vec))
    }
}
