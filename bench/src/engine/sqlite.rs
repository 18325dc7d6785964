//! SQLite beside nvpage: the bundled SQLite through `rusqlite`, one connection, the
//! same table and rows, `synchronous=FULL`, each transaction `BEGIN ... COMMIT`, in one of two
//! journal modes — `DELETE`, a rollback journal of before-images as nvpage's undo log is, and
//! `WAL`. Its page size and page cache are nvpage's page size and pool, so both keep the whole
//! table in memory in pages of one size. Everything else is SQLite's default (locking mode
//! `NORMAL`, automatic checkpoints every 1000 pages of WAL).
//!
//! SQLite keeps its journal or WAL beside the database file (`<db>-journal`, `<db>-wal`) and has
//! no option to put it on another device, so it has no counterpart to nvpage's log on tmpfs
//! beside a data disk.

use std::path::Path;

use rusqlite::Connection;

use super::txn::{LOAD_TABLES, System, Totals, row_values};
use crate::BoxError;

/// SQLite's journal modes measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JournalMode {
    /// `journal_mode=DELETE`: a rollback journal, deleted at every commit.
    Delete,
    /// `journal_mode=WAL`: a write-ahead log, checkpointed into the database now and then.
    Wal,
}

impl JournalMode {
    /// Both modes, in the order the tables list them.
    pub const ALL: [JournalMode; 2] = [JournalMode::Delete, JournalMode::Wal];

    /// The pragma's value.
    pub fn pragma(self) -> &'static str {
        match self {
            JournalMode::Delete => "DELETE",
            JournalMode::Wal => "WAL",
        }
    }

    /// The configuration's name in tables and JSON: `journal_mode=DELETE`.
    pub fn config(self) -> String {
        format!("journal_mode={}", self.pragma())
    }
}

/// The bundled SQLite's version.
pub fn version() -> &'static str {
    rusqlite::version()
}

/// SQLite in one journal mode, as a [`System`].
#[derive(Debug)]
pub struct SqliteSystem {
    conn: Connection,
    mode: JournalMode,
    on_memory: bool,
    updated: u64,
}

impl SqliteSystem {
    /// Creates the database file `path` in `mode` with `synchronous=FULL`, pages of
    /// `page_bytes` and a page cache of `cache_bytes`, and the benchmark's table in it.
    /// `on_memory` says whether `path` lies on tmpfs, for [`System::durability`].
    pub fn create(
        path: &Path,
        mode: JournalMode,
        page_bytes: u64,
        cache_bytes: u64,
        on_memory: bool,
    ) -> Result<Self, BoxError> {
        let conn = Connection::open(path)?;
        // The page size first: it is fixed when the first table is made, and in WAL mode
        // cannot change at all.
        conn.execute_batch(&format!(
            "PRAGMA page_size = {page_bytes}; PRAGMA cache_size = -{}; PRAGMA synchronous = FULL;",
            cache_bytes / 1024
        ))?;
        let pragma = format!("PRAGMA journal_mode = {}", mode.pragma());
        let got: String = conn.query_row(&pragma, [], |r| r.get(0))?;
        let sync: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
        // synchronous: 2 is FULL.
        if !got.eq_ignore_ascii_case(mode.pragma()) || sync != 2 {
            return Err(format!(
                "{}: SQLite runs journal_mode={got}, synchronous={sync}, not {}, synchronous=2",
                path.display(),
                mode.config()
            )
            .into());
        }
        conn.execute_batch(
            "CREATE TABLE t(id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, note TEXT NOT NULL)",
        )?;
        // The load tables: rowid tables (the id is a column, as nvpage's heap rows hold it),
        // with nvpage's indexes.
        for (indexes, name) in LOAD_TABLES.into_iter().enumerate() {
            conn.execute_batch(&format!(
                "CREATE TABLE {name}(id INTEGER NOT NULL, amount INTEGER NOT NULL, \
                 note TEXT NOT NULL)"
            ))?;
            if indexes >= 1 {
                conn.execute_batch(&format!("CREATE UNIQUE INDEX {name}_id ON {name}(id)"))?;
            }
            if indexes >= 2 {
                conn.execute_batch(&format!("CREATE INDEX {name}_amount ON {name}(amount)"))?;
            }
        }
        Ok(Self { conn, mode, on_memory, updated: 0 })
    }

    fn begin(&self) -> rusqlite::Result<()> {
        self.conn.prepare_cached("BEGIN")?.execute([]).map(drop)
    }

    fn commit(&self) -> rusqlite::Result<()> {
        self.conn.prepare_cached("COMMIT")?.execute([]).map(drop)
    }

    fn insert_row(&self, id: i64) -> rusqlite::Result<()> {
        let (amount, note) = row_values(id);
        let mut st =
            self.conn.prepare_cached("INSERT INTO t(id, amount, note) VALUES (?1, ?2, ?3)")?;
        st.execute(rusqlite::params![id, amount, note]).map(drop)
    }
}

impl System for SqliteSystem {
    fn system(&self) -> &'static str {
        "sqlite"
    }

    fn config(&self) -> String {
        self.mode.config()
    }

    fn durability(&self) -> String {
        let how = match self.mode {
            JournalMode::Delete => {
                "synchronous=FULL: at every commit the rollback journal, then the database \
                 fsynced, then the journal deleted"
            }
            JournalMode::Wal => {
                "synchronous=FULL: the WAL fsynced at every commit (the database at checkpoints)"
            }
        };
        let survives = if self.on_memory {
            "on tmpfs: survives a process crash only (fsync of memory does nothing)"
        } else {
            "on disk: survives power loss, as far as the file system keeps fsync's promise"
        };
        format!("{how}, {survives}")
    }

    fn preload(&mut self, rows: i64) -> Result<(), BoxError> {
        self.begin()?;
        for id in 0..rows {
            self.insert_row(id)?;
        }
        self.commit()?;
        Ok(())
    }

    fn insert(&mut self, id: i64) -> Result<(), BoxError> {
        self.begin()?;
        self.insert_row(id)?;
        self.commit()?;
        Ok(())
    }

    fn update(&mut self, ids: &[i64]) -> Result<(), BoxError> {
        self.begin()?;
        let mut st = self.conn.prepare_cached("UPDATE t SET amount = amount + 1 WHERE id = ?1")?;
        let mut changed = 0;
        for &id in ids {
            changed += st.execute([id])? as u64;
        }
        drop(st);
        self.commit()?;
        self.updated += changed;
        Ok(())
    }

    fn load(&mut self, indexes: usize, ids: &[i64]) -> Result<(), BoxError> {
        let name = LOAD_TABLES.get(indexes).ok_or_else(|| format!("no load table {indexes}"))?;
        self.begin()?;
        let sql = format!("INSERT INTO {name}(id, amount, note) VALUES (?1, ?2, ?3)");
        let mut st = self.conn.prepare_cached(&sql)?;
        for &id in ids {
            let (amount, note) = row_values(id);
            st.execute(rusqlite::params![id, amount, note])?;
        }
        drop(st);
        self.commit()?;
        Ok(())
    }

    fn totals(&mut self) -> Result<Totals, BoxError> {
        let (rows, id_sum, amount_sum) = self.conn.query_row(
            "SELECT count(*), coalesce(sum(id), 0), coalesce(sum(amount), 0) FROM t",
            [],
            |r| Ok((r.get::<_, i64>(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let mut t = Totals {
            rows: rows as u64,
            id_sum,
            amount_sum,
            updated: self.updated,
            ..Totals::default()
        };
        // The scattered ids overflow SQLite's sum: added here, wrapping, as nvpage's are.
        for name in LOAD_TABLES {
            let mut st = self.conn.prepare(&format!("SELECT id FROM {name}"))?;
            let mut q = st.query([])?;
            while let Some(r) = q.next()? {
                t.loaded += 1;
                t.loaded_id_sum = t.loaded_id_sum.wrapping_add(r.get::<_, i64>(0)?);
            }
        }
        Ok(t)
    }
}
