//! Goal: a statement that fails part-way (here an injected write error while the pool writes a
//! victim page back) dooms its transaction: later statements fail with `TransactionFailed`, the
//! commit rolls back and reports it, and the database is exactly as the last commit left it —
//! never a committed half-statement (a page taken but never formatted, a moved row deleted but
//! not inserted). A statement refused before it changes anything (wrong arity, an unknown or
//! existing table) leaves the transaction usable.

use crate::common;

use std::path::Path;

use common::{Row, commit_table, compare, contents, insert_row, schema, values};
use nvpage::{Database, Error, Layer, ReadOps, Value};
use nvpage_storage::SimOp;
use nvpage_storage::sim::{Fault, Sim};

fn row(k: i64) -> Row {
    Row { qty: k as i32, note: Some(format!("{k:>200}")) }
}

/// A small pool, so that inserts and updates make the pool write victims back.
fn open(path: &Path) -> Database {
    Database::builder()
        .layer(Layer::Pread)
        .pool_bytes(32 << 10)
        .log_bytes(1 << 20)
        .open(path)
        .unwrap()
}

/// Whether `e` is the injected write failure on the data file.
fn on_data_file(e: &Error) -> bool {
    e.to_string().contains(nvpage::DATA_FILE)
}

#[test]
fn an_insert_failing_part_way_dooms_its_transaction() {
    // The n-th write from the 150th insert on fails: some land on the data file (a victim's
    // write-back), others on the log (a before-image), which poisons instead (rule 6).
    let mut on_data = 0;
    for after in 0..8 {
        on_data += usize::from(insert_case(after));
    }
    assert!(on_data > 0, "no case put the injected failure on the data file");
}

/// Returns whether the injected failure hit the data file.
fn insert_case(after: u64) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::attach(dir.path(), 1);
    let path = dir.path().join("db");
    let db = open(&path);
    commit_table(&db, 50, row);
    let committed = contents(&db).unwrap();

    let mut tx = db.begin_write().unwrap();
    let mut failed_at = None;
    for k in 50..400 {
        if k == 150 {
            sim.fail(Fault::once(Some(SimOp::Write), after));
        }
        match insert_row(&mut tx, "t", k, &row(k)) {
            Ok(_) => assert!(failed_at.is_none(), "insert {k} after a failed one succeeded"),
            Err(e) if failed_at.is_none() => failed_at = Some(e.to_string()),
            Err(e) => assert!(matches!(e, Error::TransactionFailed(_)), "insert {k}: {e}"),
        }
    }
    let failure = failed_at.expect("the injected failure hit no insert");
    if failure.contains(nvpage::LOG_FILE) {
        // The log failed: the commit cannot roll back cleanly, so it poisons; the reopen's
        // recovery rolls the transaction back.
        assert!(tx.commit().is_err());
        assert!(db.is_poisoned(), "a log that failed poisons the database");
        drop(db);
        let db = open(&path);
        compare(&db, &committed).unwrap();
        return false;
    }
    assert!(failure.contains(nvpage::DATA_FILE), "{failure}");
    match tx.commit() {
        Err(Error::TransactionFailed(cause)) => assert!(cause.contains(nvpage::DATA_FILE)),
        r => panic!("commit of a doomed transaction: {r:?}"),
    }
    assert!(!db.is_poisoned(), "a clean rollback does not poison");
    compare(&db, &committed).unwrap();
    assert!(db.check().unwrap().damage.is_empty());

    // The database goes on, and all of it survives a reopen.
    let mut tx = db.begin_write().unwrap();
    insert_row(&mut tx, "t", 1000, &row(1000)).unwrap();
    tx.commit().unwrap();
    let now = contents(&db).unwrap();
    drop(db);
    let db = open(&path);
    compare(&db, &now).unwrap();
    assert!(db.check().unwrap().damage.is_empty());
    true
}

#[test]
fn an_update_that_moves_its_row_and_fails_keeps_the_row() {
    // The injected failure must land inside the moving update: try a few offsets.
    for after in 0..6 {
        let dir = tempfile::tempdir().unwrap();
        let sim = Sim::attach(dir.path(), 2);
        let path = dir.path().join("db");
        let db = open(&path);
        let ids = commit_table(&db, 300, row);
        let committed = contents(&db).unwrap();

        let mut tx = db.begin_write().unwrap();
        let t = tx.table("t").unwrap();
        // Dirty several pages, so that the next frame the update needs is won by a write-back.
        for k in 0..6 {
            let small = Row { qty: 1, note: Some("x".into()) };
            tx.update(&t, ids[k * 30], &values(k as i64 * 30, &small)).unwrap();
        }
        // Row 1's page is full: this update moves it (a delete, then an insert elsewhere).
        let big = Row { qty: 7, note: Some("y".repeat(2900)) };
        sim.fail(Fault::once(Some(SimOp::Write), after));
        match tx.update(&t, ids[1], &values(1, &big)) {
            Err(e) if on_data_file(&e) => {}
            _ => continue,
        }
        assert!(matches!(tx.delete(&t, ids[2]), Err(Error::TransactionFailed(_))));
        assert!(matches!(tx.commit(), Err(Error::TransactionFailed(_))));
        assert!(!db.is_poisoned());
        compare(&db, &committed).unwrap();
        return;
    }
    panic!("no offset put the injected failure inside the moving update");
}

#[test]
fn a_statement_refused_before_it_changes_anything_leaves_the_transaction_usable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = open(&path);
    let mut tx = db.begin_write().unwrap();
    tx.create_table("t", schema()).unwrap();
    insert_row(&mut tx, "t", 1, &row(1)).unwrap();
    let t = tx.table("t").unwrap();
    assert!(matches!(tx.insert(&t, &[Value::I64(2)]), Err(Error::WrongArity { .. })));
    assert!(matches!(insert_row(&mut tx, "missing", 3, &row(3)), Err(Error::UnknownTable(_))));
    assert!(matches!(tx.create_table("t", schema()), Err(Error::TableExists(_))));
    insert_row(&mut tx, "t", 4, &row(4)).unwrap();
    tx.commit().unwrap();
    let rx = db.begin_read().unwrap();
    let t = rx.table("t").unwrap();
    assert_eq!(rx.row_count(&t).unwrap(), 2);
}
