//! nvpage: the data set as the engine's model has it — rows of a heap table `kv (k I64, v
//! VarChar(100))` with a unique index `kv_k` on `k` — read in place through the index; or, the
//! clustered variant, the same rows kept in the leaves of the primary key `k`'s B+tree.
//!
//! `k` is an `I64`: an 8-byte key, encoded in the index as 9 bytes (a presence byte and the
//! big-endian value with its sign bit flipped) that sort by `memcmp` as the numbers do. An
//! 8-byte `Char` would have to be text (nvpage's strings are UTF-8) and encodes to 11 bytes or
//! more (escaped, then terminated). `v` is a `VarChar`, as the other engines store a value: a
//! byte string with its length.

use std::ops::Bound;
use std::ops::ControlFlow::{Break, Continue};
use std::path::Path;

use nvpage::{
    Col, Column, ColumnType, Database, Index, Layer, ReadOps, Schema, Storage, Table, Value, kind,
};

use super::super::data::{VALUE_BYTES, digest, value};
use super::super::workload::{BATCH, Op, SCAN_LEN, batches};
use super::Store;
use crate::BoxError;
use crate::tpch::Medium;
use crate::tpch::runner::builder;

const TABLE: &str = "kv";
const INDEX: &str = "kv_k";

/// An open nvpage database holding the data set.
#[derive(Debug)]
pub struct NvStore {
    db: Database,
    table: Table,
    /// The unique index on `k`, or the clustered table's primary key.
    index: Index,
    clustered: bool,
    /// The value, read as bytes (as the other engines return theirs: no UTF-8 check).
    v: Col<kind::Bytes>,
}

fn missing(key: u64) -> BoxError {
    format!("nvpage: key {key:#x} is missing").into()
}

fn as_str(v: &[u8; VALUE_BYTES]) -> Result<&str, BoxError> {
    Ok(std::str::from_utf8(v)?)
}

impl NvStore {
    /// Opens (or creates, with its table and index) the database in `dir`, checking that it
    /// lies on `medium` (tmpfs: emulated NVM, cache-line persistence).
    pub fn open(
        dir: &Path,
        layer: Layer,
        medium: Medium,
        pool_bytes: u64,
        clustered: bool,
    ) -> Result<NvStore, BoxError> {
        let db = builder(layer, medium).pool_bytes(pool_bytes).open(dir)?;
        if db.durability().medium.is_memory() != (medium == Medium::Tmpfs) {
            return Err(format!(
                "{} is on {}, not on {}: choose another directory with --dir-{}",
                dir.display(),
                db.durability().medium.name(),
                medium.name(),
                medium.name()
            )
            .into());
        }
        let (table, index) = {
            let rx = db.begin_read()?;
            let index = if clustered { format!("{TABLE}_pkey") } else { INDEX.to_string() };
            match (rx.table(TABLE), rx.index(&index)) {
                (Ok(t), Ok(x)) => (t, x),
                _ => {
                    drop(rx);
                    let mut tx = db.begin_write()?;
                    let schema = Schema::new(vec![
                        Column::new("k", ColumnType::I64),
                        Column::new("v", ColumnType::VarChar { max_len: VALUE_BYTES as u16 }),
                    ])?;
                    let (t, x) = if clustered {
                        let schema = schema.with_primary_key(&["k"])?;
                        let t = tx.create_table_with(TABLE, schema, Storage::Clustered)?;
                        let x = tx.primary_key(&t)?.ok_or("a clustered table without its key")?;
                        (t, x)
                    } else {
                        let t = tx.create_table(TABLE, schema)?;
                        let x = tx.create_unique_index(INDEX, &t, &["k"])?;
                        (t, x)
                    };
                    tx.commit()?;
                    (t, x)
                }
            }
        };
        let v = table.col::<kind::Bytes>("v")?;
        Ok(NvStore { db, table, index, clustered, v })
    }

    /// The digest of `key`'s value as `tx` reads it.
    fn read(&self, tx: &impl ReadOps, key: u64) -> Result<u64, BoxError> {
        let g = tx.get_by(&self.index, &[Value::I64(key as i64)])?.ok_or_else(|| missing(key))?;
        let row = g.row()?;
        Ok(digest(row.get(self.v)?))
    }
}

impl Store for NvStore {
    fn load(&self, keys: &[u64]) -> Result<(), BoxError> {
        let mut tx = self.db.begin_write()?;
        for &k in keys {
            tx.insert(&self.table, &[Value::I64(k as i64), Value::Str(as_str(&value(k, 0))?)])?;
        }
        tx.commit()?;
        Ok(())
    }

    fn lookups(&self, keys: &[u64]) -> Result<u64, BoxError> {
        let mut sum = 0u64;
        for chunk in keys.chunks(BATCH) {
            let rx = self.db.begin_read()?;
            for &k in chunk {
                sum = sum.wrapping_add(self.read(&rx, k)?);
            }
        }
        Ok(sum)
    }

    fn scans(&self, starts: &[u64]) -> Result<u64, BoxError> {
        let mut sum = 0u64;
        for chunk in starts.chunks(BATCH) {
            let rx = self.db.begin_read()?;
            for &s in chunk {
                let from = [Value::I64(s as i64)];
                let mut scan =
                    rx.index_range(&self.index, Bound::Included(&from), Bound::Unbounded)?;
                // The rows read in place, none handed out in a guard of its own.
                (sum, _) = scan.fold_rows((sum, 0), |(sum, n), row| {
                    let acc = (sum.wrapping_add(digest(row.get(self.v)?)), n + 1);
                    Ok(if acc.1 == SCAN_LEN { Break(acc) } else { Continue(acc) })
                })?;
            }
        }
        Ok(sum)
    }

    fn mix(&self, ops: &[Op]) -> Result<u64, BoxError> {
        let mut sum = 0u64;
        for batch in batches(ops) {
            let mut tx = self.db.begin_write()?;
            for op in batch {
                match *op {
                    Op::Get(k) => sum = sum.wrapping_add(self.read(&tx, k)?),
                    Op::Put(k, version) if self.clustered => {
                        let v = value(k, version);
                        let set = [("v", Value::Str(as_str(&v)?))];
                        tx.update_by(&self.index, &[Value::I64(k as i64)], &set)?
                            .ok_or_else(|| missing(k))?;
                    }
                    Op::Put(k, version) => {
                        let key = [Value::I64(k as i64)];
                        let id = {
                            let g = tx.get_by(&self.index, &key)?.ok_or_else(|| missing(k))?;
                            g.row()?.id()
                        };
                        let v = value(k, version);
                        tx.update(&self.table, id, &[key[0].clone(), Value::Str(as_str(&v)?)])?;
                    }
                }
            }
            tx.commit()?;
        }
        Ok(sum)
    }

    fn durability(&self) -> String {
        format!("durable at commit: pages forced, then the log rewound; {}", self.db.durability())
    }

    fn get(&self, key: u64) -> Result<Option<Vec<u8>>, BoxError> {
        let rx = self.db.begin_read()?;
        let Some(g) = rx.get_by(&self.index, &[Value::I64(key as i64)])? else { return Ok(None) };
        let row = g.row()?;
        Ok(Some(row.get(self.v)?.to_vec()))
    }

    fn pages_read(&self) -> Option<u64> {
        let c = self.db.counters();
        Some(c.misses + c.cow_copies + c.redirected_reads)
    }
}
