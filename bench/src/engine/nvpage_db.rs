//! nvpage in the engine benchmark: opening a database on one medium (the log beside the data, or
//! in a directory of its own on tmpfs), the benchmark's table, and nvpage as a [`System`].

use std::path::{Path, PathBuf};

use nvpage::{
    Column, ColumnType, Database, Decimal, Durability, Layer, PersistRequest, ReadOps, RowId,
    Schema, Table, Value, kind,
};

use super::Medium;
use super::txn::{LOAD_TABLES, System, Totals, row_values};
use crate::BoxError;

/// Where one database's files go: its directory, and the log's directory when it is apart.
#[derive(Clone, Debug)]
pub struct Place {
    /// The database directory (the data file, and the log unless `log` is given).
    pub data: PathBuf,
    /// The log's own directory ([`nvpage::Builder::log_dir`]), on tmpfs.
    pub log: Option<PathBuf>,
}

/// How big a database's parts are.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// The page size of a new database.
    pub page_bytes: u64,
    /// The buffer pool.
    pub pool_bytes: u64,
    /// The log's size at create; it may grow past it (to nvpage's default limit, or to this
    /// size if that is larger: a benchmark that sizes its log is never refused below it).
    pub log_bytes: u64,
}

/// The benchmark's table: an id, an amount in cents, a short note.
pub fn schema() -> Result<Schema, nvpage::Error> {
    Schema::new(vec![
        Column::new("id", ColumnType::I64),
        Column::new("amount", ColumnType::Decimal { scale: 2 }),
        Column::new("note", ColumnType::VarChar { max_len: 64 }),
    ])
}

/// Opens (or creates) the database at `place` with `layer`, persisting as `medium` asks: the
/// cache-line path on tmpfs (emulated NVM), the default on a disk, and a log of its own with
/// the cache-line path when `place.log` is given. Checks nothing about where the files landed:
/// see [`check_medium`].
pub fn open(
    place: &Place,
    layer: Layer,
    medium: Medium,
    sizes: Sizes,
) -> Result<Database, BoxError> {
    let persistence =
        if medium == Medium::Tmpfs { PersistRequest::CacheLine } else { PersistRequest::Auto };
    let mut b = Database::builder()
        .layer(layer)
        .persistence(persistence)
        .page_size(sizes.page_bytes)
        .pool_bytes(sizes.pool_bytes)
        .log_bytes(sizes.log_bytes)
        .max_log_bytes(sizes.log_bytes.max(nvpage::DEFAULT_MAX_LOG_BYTES));
    if let Some(log) = &place.log {
        b = b.log_dir(log).log_persistence(PersistRequest::CacheLine);
    }
    Ok(b.open(&place.data)?)
}

/// Fails unless `db`'s data file and log lie on the media `medium` names: a figure labelled
/// "disk" must not come from memory.
pub fn check_medium(db: &Database, medium: Medium) -> Result<(), BoxError> {
    let want_data_memory = medium == Medium::Tmpfs;
    let want_log_memory = medium != Medium::Disk;
    check_one(db.path(), db.durability(), want_data_memory)?;
    check_one(db.log_path(), db.log_durability(), want_log_memory)
}

fn check_one(path: &Path, d: Durability, memory: bool) -> Result<(), BoxError> {
    if d.medium.is_memory() == memory {
        return Ok(());
    }
    let (want, flag) = if memory { ("tmpfs", "--dir-tmpfs") } else { ("disk", "--dir-disk") };
    Err(format!(
        "{} is on {}, not on {want}: choose another directory with {flag}",
        path.display(),
        d.medium.name()
    )
    .into())
}

/// What a commit of `db` survives and how it is made durable: both files' modes, then the
/// database's guarantee (the weaker of the two).
pub fn durability(db: &Database) -> String {
    format!(
        "data {}, log {}: survives {}",
        mode_on(db.durability()),
        mode_on(db.log_durability()),
        db.guarantee()
    )
}

fn mode_on(d: Durability) -> String {
    match d.flush.filter(|_| d.mode.uses_cache_lines()) {
        Some(instr) => format!("{} on {} ({})", d.mode, d.medium.name(), instr.name()),
        None => format!("{} on {}", d.mode, d.medium.name()),
    }
}

/// Inserts row `id` of the benchmark's table (see [`row_values`]).
pub fn insert_row(
    tx: &mut nvpage::WriteTxn<'_>,
    t: &Table,
    id: i64,
) -> Result<RowId, nvpage::Error> {
    let (amount, note) = row_values(id);
    tx.insert(t, &[Value::I64(id), Value::Decimal(Decimal::new(amount, 2)), Value::Str(&note)])
}

/// nvpage on one layer, as a [`System`]. Updates find their rows by [`RowId`], kept from the
/// preload (SQLite's by its rowid, its primary key: each system's own address of a row).
#[derive(Debug)]
pub struct NvpageSystem {
    db: Database,
    table: Table,
    /// The load tables, by their number of secondary indexes.
    loads: Vec<Table>,
    /// The preloaded rows' ids, by row id (`0..table_rows`).
    rows: Vec<RowId>,
    updated: u64,
}

impl NvpageSystem {
    /// Opens a database at `place` (see [`open`]) and creates the benchmark's table in it.
    pub fn open(
        place: &Place,
        layer: Layer,
        medium: Medium,
        sizes: Sizes,
    ) -> Result<Self, BoxError> {
        let db = open(place, layer, medium, sizes)?;
        let mut tx = db.begin_write()?;
        let table = tx.create_table("t", schema()?)?;
        let mut loads = Vec::new();
        for (indexes, name) in LOAD_TABLES.into_iter().enumerate() {
            let t = tx.create_table(name, schema()?)?;
            if indexes >= 1 {
                tx.create_unique_index(&format!("{name}_id"), &t, &["id"])?;
            }
            if indexes >= 2 {
                tx.create_index(&format!("{name}_amount"), &t, &["amount"])?;
            }
            loads.push(t);
        }
        tx.commit()?;
        Ok(Self { db, table, loads, rows: Vec::new(), updated: 0 })
    }

    /// The database.
    pub fn db(&self) -> &Database {
        &self.db
    }
}

impl System for NvpageSystem {
    fn system(&self) -> &'static str {
        "nvpage"
    }

    fn config(&self) -> String {
        self.db.layer().name().into()
    }

    fn durability(&self) -> String {
        durability(&self.db)
    }

    fn preload(&mut self, rows: i64) -> Result<(), BoxError> {
        let mut tx = self.db.begin_write()?;
        self.rows =
            (0..rows).map(|i| insert_row(&mut tx, &self.table, i)).collect::<Result<_, _>>()?;
        tx.commit()?;
        Ok(())
    }

    fn insert(&mut self, id: i64) -> Result<(), BoxError> {
        let mut tx = self.db.begin_write()?;
        insert_row(&mut tx, &self.table, id)?;
        tx.commit()?;
        Ok(())
    }

    fn update(&mut self, ids: &[i64]) -> Result<(), BoxError> {
        let amount = self.table.col::<kind::Units>("amount")?;
        let mut tx = self.db.begin_write()?;
        for &id in ids {
            let rid = *self.rows.get(id as usize).ok_or_else(|| format!("no row {id}"))?;
            let old = tx.get(&self.table, rid)?.row()?.get(amount)?;
            // The note is a function of the id (`row_values`): the row is rewritten whole,
            // the same size as before.
            let (_, note) = row_values(id);
            let values =
                [Value::I64(id), Value::Decimal(Decimal::new(old + 1, 2)), Value::Str(&note)];
            let moved_to = tx.update(&self.table, rid, &values)?;
            if moved_to != rid {
                return Err(format!("row {id} moved from {rid} to {moved_to}").into());
            }
        }
        tx.commit()?;
        self.updated += ids.len() as u64;
        Ok(())
    }

    fn load(&mut self, indexes: usize, ids: &[i64]) -> Result<(), BoxError> {
        let table = self.loads.get(indexes).ok_or_else(|| format!("no load table {indexes}"))?;
        let mut tx = self.db.begin_write()?;
        for &id in ids {
            insert_row(&mut tx, table, id)?;
        }
        tx.commit()?;
        Ok(())
    }

    fn totals(&mut self) -> Result<Totals, BoxError> {
        let rx = self.db.begin_read()?;
        let id = self.table.col::<kind::I64>("id")?;
        let amount = self.table.col::<kind::Units>("amount")?;
        let mut t = Totals { updated: self.updated, ..Totals::default() };
        rx.for_each_row(&self.table, |row| {
            t.rows += 1;
            t.id_sum += row.get(id)?;
            t.amount_sum += row.get(amount)?;
            Ok(())
        })?;
        for table in &self.loads {
            let id = table.col::<kind::I64>("id")?;
            rx.for_each_row(table, |row| {
                t.loaded += 1;
                t.loaded_id_sum = t.loaded_id_sum.wrapping_add(row.get(id)?);
                Ok(())
            })?;
        }
        Ok(t)
    }
}
