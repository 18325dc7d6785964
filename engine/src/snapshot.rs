//! Owned snapshots: a read of one commit that moves between threads and async tasks.
//!
//! A [`ReadTxn`](crate::ReadTxn) borrows its database and stays on its thread. A [`Snapshot`]
//! owns what it reads — the database by `Arc`, the commit's catalog — so it can be cloned into
//! every partition of a query and sent to the threads and tasks that read them. Only the
//! snapshot moves: the guards, rows and pages read through it borrow it and stay on the thread
//! that made them (they are neither `Send` nor `Sync`), so latches are still taken and released
//! by one thread, and the checks that keep a thread from waiting for itself stay per thread:
//!
//! - a thread that holds a guard read through a snapshot (or holds a `ReadTxn`) cannot begin
//!   the write transaction ([`Error::ReadTxnHeld`]): its commit could wait for that guard;
//! - a thread that holds the write transaction cannot read pages through a snapshot
//!   ([`Error::WriteTxnHeld`]): the guard could hold up its own commit;
//! - holding a snapshot without a guard blocks nothing: a commit waits for guards, never for
//!   snapshots, so a snapshot kept in a task between reads (or forgotten in a dropped stream's
//!   state) keeps only its old page versions in memory, within
//!   [`Builder::max_version_bytes`](crate::Builder::max_version_bytes).

use std::sync::Arc;

use nvpage_buffer::View;

use crate::db::Database;
use crate::error::{Error, Result};
use crate::txn::{Ctx, Published, Reads, writing};

/// A read of one commit of a database, owned: `Send`, `Sync`, and cheap to clone (every clone
/// reads the same commit). It reads through [`ReadOps`](crate::ReadOps), as a
/// [`ReadTxn`](crate::ReadTxn) does, and holds the database open: the database closes (as a
/// dropped [`Database`] does) when its last handle and its last snapshot are gone.
///
/// ```
/// use std::sync::Arc;
/// use nvpage::{Column, ColumnType, Database, ReadOps, Schema, Value};
///
/// # fn main() -> nvpage::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = Arc::new(Database::open(dir.path().join("db"))?);
/// let mut w = db.begin_write()?;
/// let t = w.create_table("t", Schema::new(vec![Column::new("n", ColumnType::I64)])?)?;
/// w.insert(&t, &[Value::I64(1)])?;
/// w.commit()?;
///
/// let snap = db.snapshot()?;
/// let other = snap.clone();
/// let count = std::thread::spawn(move || other.row_count(&t)).join().unwrap()?;
/// assert_eq!(count, 1);
/// assert_eq!(snap.commit_seq(), 1);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Snapshot(Arc<Registered>);

/// One registration in the database's snapshot registry, ended when the last clone goes.
#[derive(Debug)]
struct Registered {
    db: Arc<Database>,
    seq: u64,
    state: Arc<Published>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.db.snapshots.end(self.seq, self.db.pool.versions());
    }
}

impl Database {
    /// Takes an owned snapshot of the last commit (see [`Snapshot`]). Returns at once, whatever
    /// the write transaction is doing.
    pub fn snapshot(self: &Arc<Self>) -> Result<Snapshot> {
        self.check_usable(false)?;
        let (seq, state) = self.snapshots.begin();
        Ok(Snapshot(Arc::new(Registered { db: self.clone(), seq, state })))
    }
}

impl Snapshot {
    /// The commit this snapshot reads: how many commits the database had passed since it was
    /// opened when the snapshot was taken (as [`ReadTxn::snapshot`](crate::ReadTxn::snapshot)).
    pub fn commit_seq(&self) -> u64 {
        self.0.seq
    }

    /// The database it reads.
    pub fn database(&self) -> &Arc<Database> {
        &self.0.db
    }
}

impl Reads for Snapshot {
    fn ctx(&self) -> Ctx<'_> {
        Ctx { db: &self.0.db, view: View::Snapshot(self.0.seq), catalog: &self.0.state.catalog }
    }

    fn pages(&self) -> Result<Ctx<'_>> {
        if writing(&self.0.db) {
            return Err(Error::WriteTxnHeld { call: "a read of pages through a snapshot" });
        }
        Ok(self.ctx())
    }
}
