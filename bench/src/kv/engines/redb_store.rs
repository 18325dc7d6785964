//! redb: one table `kv` of `u64` keys and byte-string values, redb's defaults (a durable commit,
//! `Durability::Immediate`; reads through its own cache, 1 GiB by default, over `pread` and the
//! OS page cache).

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use super::super::data::{digest, value};
use super::super::workload::{BATCH, Op, SCAN_LEN, batches};
use super::{Store, durability};
use crate::BoxError;
use crate::tpch::Medium;

const TABLE: TableDefinition<'_, u64, &[u8]> = TableDefinition::new("kv");

/// The database file's name in its directory.
const FILE: &str = "kv.redb";

/// An open redb database holding the data set.
#[derive(Debug)]
pub struct RedbStore {
    db: Database,
    medium: Medium,
}

fn missing(key: u64) -> BoxError {
    format!("redb: key {key:#x} is missing").into()
}

impl RedbStore {
    /// Opens (or creates, with its table) the database in `dir`.
    pub fn open(dir: &std::path::Path, medium: Medium) -> Result<RedbStore, BoxError> {
        std::fs::create_dir_all(dir)?;
        let db = Database::create(dir.join(FILE))?;
        let w = db.begin_write()?;
        w.open_table(TABLE)?;
        w.commit()?;
        Ok(RedbStore { db, medium })
    }
}

impl Store for RedbStore {
    fn load(&self, keys: &[u64]) -> Result<(), BoxError> {
        let w = self.db.begin_write()?;
        {
            let mut t = w.open_table(TABLE)?;
            for &k in keys {
                t.insert(k, &value(k, 0)[..])?;
            }
        }
        w.commit()?;
        Ok(())
    }

    fn lookups(&self, keys: &[u64]) -> Result<u64, BoxError> {
        let mut sum = 0u64;
        for chunk in keys.chunks(BATCH) {
            let r = self.db.begin_read()?;
            let t = r.open_table(TABLE)?;
            for &k in chunk {
                let v = t.get(k)?.ok_or_else(|| missing(k))?;
                sum = sum.wrapping_add(digest(v.value()));
            }
        }
        Ok(sum)
    }

    fn scans(&self, starts: &[u64]) -> Result<u64, BoxError> {
        let mut sum = 0u64;
        for chunk in starts.chunks(BATCH) {
            let r = self.db.begin_read()?;
            let t = r.open_table(TABLE)?;
            for &s in chunk {
                for entry in t.range(s..)?.take(SCAN_LEN) {
                    sum = sum.wrapping_add(digest(entry?.1.value()));
                }
            }
        }
        Ok(sum)
    }

    fn mix(&self, ops: &[Op]) -> Result<u64, BoxError> {
        let mut sum = 0u64;
        for batch in batches(ops) {
            let w = self.db.begin_write()?;
            {
                let mut t = w.open_table(TABLE)?;
                for op in batch {
                    match *op {
                        Op::Get(k) => {
                            let v = t.get(k)?.ok_or_else(|| missing(k))?;
                            sum = sum.wrapping_add(digest(v.value()));
                        }
                        Op::Put(k, version) => {
                            t.insert(k, &value(k, version)[..])?;
                        }
                    }
                }
            }
            w.commit()?;
        }
        Ok(sum)
    }

    fn durability(&self) -> String {
        durability("fsync (Durability::Immediate, redb's default)", self.medium)
    }

    fn get(&self, key: u64) -> Result<Option<Vec<u8>>, BoxError> {
        let r = self.db.begin_read()?;
        let t = r.open_table(TABLE)?;
        Ok(t.get(key)?.map(|v| v.value().to_vec()))
    }
}
