//! Goal: rule 6 with nothing written back yet: a write transaction whose file growth
//! fails at its `fsync` — before any page was written back — poisons the database at once, on
//! every layer: `is_poisoned()` says so as soon as the persist failed (not only after a commit
//! met it), the commit fails, no later transaction begins, and a reopen recovers the last commit.

use crate::common;

use common::{Row, commit_table, compare, contents, insert_row};
use nvpage::{Database, Error, Layer};
use nvpage_storage::SimOp;
use nvpage_storage::sim::{Fault, Sim};

fn open(path: &std::path::Path, layer: Layer) -> Database {
    // A pool larger than the transaction: nothing is written back before the commit.
    Database::builder().layer(layer).page_size(4096).pool_bytes(8 << 20).open(path).unwrap()
}

#[test]
fn a_failed_growth_fsync_poisons_before_the_commit() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let sim = Sim::attach(dir.path(), 7);
        let path = dir.path().join("db");
        let db = open(&path, layer);
        commit_table(&db, 10, |k| Row { qty: k as i32, note: None });
        let committed = contents(&db).unwrap();
        let writes_before = db.counters().write_backs;

        let mut tx = db.begin_write().unwrap();
        // The next persist is the growth's fsync: the table outgrows the room the file was
        // given ahead (at least 1 MiB per growth).
        sim.fail(Fault::once(Some(SimOp::Persist), 0));
        let note = Some("g".repeat(400));
        let mut failed = None;
        for k in 10..20_000 {
            if let Err(e) = insert_row(&mut tx, "t", k, &Row { qty: 1, note: note.clone() }) {
                failed = Some(e);
                break;
            }
        }
        let e = failed.unwrap_or_else(|| panic!("{layer}: the growth never failed"));
        assert!(matches!(e, Error::Storage(_)), "{layer}: {e}");
        assert_eq!(db.counters().write_backs, writes_before, "{layer}: nothing written back");
        assert!(db.is_poisoned(), "{layer}: a failed persist poisons at once");
        assert!(tx.commit().is_err(), "{layer}");
        sim.clear_faults();
        assert!(matches!(db.begin_write(), Err(Error::Poisoned)), "{layer}");
        drop(db);
        let db = open(&path, layer);
        compare(&db, &committed).unwrap();
        assert!(!db.is_poisoned(), "{layer}: a reopen clears the poison");
    }
}
