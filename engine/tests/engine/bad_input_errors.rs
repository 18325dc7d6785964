//! Goal: every kind of bad input gives its typed error and never a panic, on every layer — rows
//! and values that do not fit, unknown tables, columns and row ids, a second open, a missing or
//! foreign log, a damaged page, a write on a thread holding a read, writes to a read-only
//! database — and a transaction too large for the log is refused with the database exactly as it
//! was, not poisoned, and still taking transactions (in memory and after reopen).

use crate::common;

use std::path::Path;

use common::{Row, compare, contents, insert_row, schema, values};
use nvpage::{
    Column, ColumnType, Database, Date, Decimal, Error, Layer, ReadOps, RowId, Schema, Value, kind,
};
use nvpage_storage::StorageError;

fn open(path: &Path, layer: Layer) -> nvpage::Result<Database> {
    Database::builder().layer(layer).pool_bytes(64 << 10).log_bytes(1 << 20).open(path)
}

fn wide() -> Schema {
    Schema::new(vec![
        Column::new("i", ColumnType::I64),
        Column::new("n", ColumnType::I32),
        Column::new("d", ColumnType::Decimal { scale: 2 }),
        Column::new("day", ColumnType::Date),
        Column::new("c", ColumnType::Char { len: 4 }),
        Column::new("v", ColumnType::VarChar { max_len: 20_000 }),
    ])
    .unwrap()
}

fn good<'a>(v: &'a str) -> [Value<'a>; 6] {
    [
        Value::I64(1),
        Value::I32(2),
        Value::Decimal(Decimal::new(300, 2)),
        Value::Date(Date(9000)),
        Value::Str("ab"),
        Value::Str(v),
    ]
}

fn misfit(r: nvpage::Result<RowId>, column: &str) {
    match r {
        Err(Error::ValueDoesNotFit { column: c, reason }) => {
            assert_eq!(c, column, "{reason}");
            assert!(!reason.is_empty());
        }
        other => panic!("column {column}: expected ValueDoesNotFit, got {other:?}"),
    }
}

#[test]
fn rows_values_tables_columns_and_row_ids() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(&dir.path().join("db"), layer).unwrap();
        let mut tx = db.begin_write().unwrap();
        let t = tx.create_table("w", wide()).unwrap();
        let other = tx.create_table("o", wide()).unwrap();
        let id = tx.insert(&t, &good("fine")).unwrap();
        let other_id = tx.insert(&other, &good("elsewhere")).unwrap();

        // A row larger than a page.
        let big = "x".repeat(9000);
        match tx.insert(&t, &good(&big)) {
            Err(Error::RowTooLarge { bytes, max }) => assert!(bytes > max, "{layer}"),
            r => panic!("{layer}: {r:?}"),
        }
        assert!(matches!(tx.update(&t, id, &good(&big)), Err(Error::RowTooLarge { .. })));

        // Values that do not fit their columns.
        let mut v = good("");
        v[0] = Value::Date(Date(1));
        misfit(tx.insert(&t, &v), "i");
        // An i32 widens into an i64 column; an i64 never narrows into an i32 one.
        v[0] = Value::I32(1);
        tx.insert(&t, &v).unwrap();
        let mut v = good("");
        v[1] = Value::I64(2);
        misfit(tx.insert(&t, &v), "n");
        let mut v = good("");
        v[1] = Value::Null;
        misfit(tx.insert(&t, &v), "n");
        let mut v = good("");
        v[2] = Value::Decimal(Decimal::new(12345, 3));
        misfit(tx.insert(&t, &v), "d");
        let mut v = good("");
        v[2] = Value::Decimal(Decimal::new(i64::MAX, 0));
        misfit(tx.insert(&t, &v), "d");
        // A scale past any column's is refused too, its error naming the value: past 38, a
        // power of ten overflows even an i128, and writing the message must not.
        for scale in [39, 255] {
            let mut v = good("");
            v[2] = Value::Decimal(Decimal::new(-7, scale));
            misfit(tx.insert(&t, &v), "d");
        }
        let mut v = good("");
        v[3] = Value::Str("1998-01-01");
        misfit(tx.insert(&t, &v), "day");
        let mut v = good("");
        v[4] = Value::Str("too long");
        misfit(tx.insert(&t, &v), "c");
        let long = "y".repeat(20_001);
        misfit(tx.insert(&t, &good(&long)), "v");
        // A decimal that is exact at the column's scale is rescaled, not refused.
        let mut v = good("");
        v[2] = Value::Decimal(Decimal::new(5, 0));
        tx.insert(&t, &v).unwrap();

        // Wrong arity.
        assert!(matches!(
            tx.insert(&t, &good("")[..5]),
            Err(Error::WrongArity { expected: 6, found: 5 })
        ));
        assert!(matches!(tx.update(&t, id, &[]), Err(Error::WrongArity { .. })));

        // Unknown table, column; a column handle of the wrong type.
        assert!(matches!(tx.table("nope"), Err(Error::UnknownTable(n)) if n == "nope"));
        assert!(matches!(tx.drop_table("nope"), Err(Error::UnknownTable(_))));
        assert!(matches!(tx.create_table("w", wide()), Err(Error::TableExists(_))));
        assert!(matches!(t.col::<kind::I64>("nope"), Err(Error::UnknownColumn(c)) if c == "nope"));
        assert!(matches!(t.col::<kind::I64>("n"), Err(Error::ColumnType { .. })));
        assert!(matches!(
            Schema::new(vec![Column::new("a", ColumnType::I32), Column::new("a", ColumnType::I64)]),
            Err(Error::InvalidSchema(_))
        ));

        // Unknown, deleted and foreign row ids.
        let nowhere = RowId { page: 1 << 40, slot: 0 };
        assert!(matches!(tx.get(&t, nowhere), Err(Error::UnknownRow(_))));
        let past_slots = RowId { page: id.page, slot: 999 };
        assert!(matches!(tx.get(&t, past_slots), Err(Error::UnknownRow(_))));
        assert!(matches!(tx.delete(&t, past_slots), Err(Error::UnknownRow(_))));
        assert!(matches!(tx.get(&t, other_id), Err(Error::UnknownRow(_))), "{layer}");
        assert!(matches!(tx.delete(&t, other_id), Err(Error::UnknownRow(_))));
        assert!(matches!(tx.update(&t, other_id, &good("")), Err(Error::UnknownRow(_))));
        // The catalog page and the header are no table's rows.
        for page in [0, 1] {
            assert!(matches!(tx.get(&t, RowId { page, slot: 0 }), Err(Error::UnknownRow(_))));
        }
        tx.delete(&t, id).unwrap();
        assert!(matches!(tx.get(&t, id), Err(Error::UnknownRow(_))));
        assert!(matches!(tx.delete(&t, id), Err(Error::UnknownRow(_))));
        assert!(matches!(tx.update(&t, id, &good("")), Err(Error::UnknownRow(_))));
        // A dropped table's handle.
        tx.drop_table("o").unwrap();
        assert!(matches!(tx.insert(&other, &good("")), Err(Error::UnknownTable(_))));
        assert!(matches!(tx.get(&other, other_id), Err(Error::UnknownTable(_))));
        assert!(tx.scan(&other).is_err());
        // None of this poisoned anything: the transaction commits.
        assert!(!db.is_poisoned());
        tx.commit().unwrap();
        let rx = db.begin_read().unwrap();
        // The row given as `good` values and the one whose i32 widened.
        assert_eq!(rx.row_count(&t).unwrap(), 2, "{layer}");
    }
}

#[test]
fn opens_and_files() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let db = open(&path, layer).unwrap();
        {
            let mut tx = db.begin_write().unwrap();
            tx.create_table("t", schema()).unwrap();
            for k in 0..200 {
                insert_row(&mut tx, "t", k, &Row { qty: 1, note: Some("z".repeat(100)) }).unwrap();
            }
            tx.commit().unwrap();
        }
        // A second open of the same database, in this process.
        for l in Layer::compiled() {
            match open(&path, l) {
                Err(Error::Storage(StorageError::AlreadyOpen { .. })) => {}
                r => panic!("{layer}/{l}: second open: {:?}", r.map(|_| ())),
            }
        }
        // A write transaction on a thread holding a read transaction.
        {
            let rx = db.begin_read().unwrap();
            assert!(matches!(db.begin_write(), Err(Error::ReadTxnHeld { .. })));
            drop(rx);
            drop(db.begin_write().unwrap());
        }
        // A read transaction (or a check) on the thread holding the write transaction.
        {
            let tx = db.begin_write().unwrap();
            assert!(matches!(db.begin_read(), Err(Error::WriteTxnHeld { .. })));
            assert!(matches!(db.check(), Err(Error::WriteTxnHeld { .. })));
            tx.commit().unwrap();
            drop(db.begin_read().unwrap());
            let tx = db.begin_write().unwrap();
            drop(tx);
            drop(db.begin_read().unwrap());
        }
        let want = contents(&db).unwrap();
        drop(db);

        // Read-only: reads work, writes are refused.
        {
            let ro = Database::builder().layer(layer).read_only(true).open(&path).unwrap();
            compare(&ro, &want).unwrap();
            assert!(matches!(ro.begin_write(), Err(Error::ReadOnly)));
        }
        // A read-only open of a missing database does not create it.
        assert!(matches!(
            Database::builder().read_only(true).open(dir.path().join("none")),
            Err(Error::NotFound { .. })
        ));
        assert!(matches!(
            Database::builder().create(false).open(dir.path().join("none")),
            Err(Error::NotFound { .. })
        ));

        // A foreign log: another database's log copied in.
        let other = dir.path().join("other");
        drop(open(&other, layer).unwrap());
        let log = path.join(nvpage::LOG_FILE);
        let saved = dir.path().join("saved-log");
        std::fs::rename(&log, &saved).unwrap();
        std::fs::copy(other.join(nvpage::LOG_FILE), &log).unwrap();
        match open(&path, layer) {
            Err(Error::Wal(nvpage_wal::WalError::ForeignLog { .. })) => {}
            r => panic!("{layer}: foreign log: {:?}", r.map(|_| ())),
        }
        // A missing log.
        std::fs::remove_file(&log).unwrap();
        match open(&path, layer) {
            Err(Error::Incomplete { missing, .. }) => assert_eq!(missing, nvpage::LOG_FILE),
            r => panic!("{layer}: missing log: {:?}", r.map(|_| ())),
        }
        std::fs::rename(&saved, &log).unwrap();
        compare(&open(&path, layer).unwrap(), &want).unwrap();

        // A damaged heap page: one byte flipped while closed.
        let data = path.join(nvpage::DATA_FILE);
        let heap_page = want["t"].values().next().unwrap().0.page;
        let mut bytes = std::fs::read(&data).unwrap();
        bytes[heap_page as usize * 8192 + 4000] ^= 0x40;
        std::fs::write(&data, &bytes).unwrap();
        let db = open(&path, layer).unwrap();
        let rx = db.begin_read().unwrap();
        let t = rx.table("t").unwrap();
        let mut seen = None;
        for p in rx.scan(&t).unwrap() {
            if let Err(e) = p {
                seen = Some(e);
                break;
            }
        }
        match seen {
            Some(Error::Storage(StorageError::ChecksumMismatch { page, .. })) => {
                assert_eq!(page.0, heap_page, "{layer}")
            }
            other => panic!("{layer}: damaged page: {other:?}"),
        }
        let id = want["t"].values().find(|v| v.0.page == heap_page).unwrap().0;
        assert!(matches!(
            rx.get(&t, id),
            Err(Error::Storage(StorageError::ChecksumMismatch { .. }))
        ));
        drop(rx);
        let report = db.check().unwrap();
        assert!(!report.is_sound());
        assert!(
            report.damage.iter().any(|d| d.contains(&format!("page {heap_page}"))),
            "{report:?}"
        );
        // The table is named as it was given, not quoted as Rust would.
        assert!(report.damage.iter().any(|d| d.starts_with("table t: ")), "{report:?}");
    }
}

/// Rows of ~1000 bytes: 2400 of them fill ~300 pages, more than a 1 MiB log's before-images.
fn fill(db: &Database) {
    let mut tx = db.begin_write().unwrap();
    tx.create_table("t", schema()).unwrap();
    for k in 0..2400 {
        insert_row(&mut tx, "t", k, &Row { qty: 0, note: Some("a".repeat(1000)) }).unwrap();
    }
    tx.commit().unwrap();
}

#[test]
fn a_transaction_too_large_for_the_log_changes_nothing() {
    for layer in Layer::compiled() {
        // A small pool fails at an eviction's before-image, mid-transaction; a pool that holds
        // every page fails at commit's force.
        for pool in [64u64 << 10, 8 << 20] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("db");
            let open = |p: &Path| {
                let b = Database::builder().layer(layer).pool_bytes(pool);
                b.log_bytes(1 << 20).max_log_bytes(1 << 20).open(p)
            };
            let db = open(&path).unwrap();
            fill(&db);
            let before = contents(&db).unwrap();
            let mut tx = db.begin_write().unwrap();
            let t = tx.table("t").unwrap();
            let mut failed = None;
            for (k, (id, _)) in &before["t"] {
                let row = Row { qty: 1, note: Some("b".repeat(1000)) };
                if let Err(e) = tx.update(&t, *id, &values(*k, &row)) {
                    failed = Some(e);
                    break;
                }
            }
            let from_commit = failed.is_none();
            let r = match failed {
                Some(e) => {
                    drop(tx);
                    Err(e)
                }
                None => tx.commit(),
            };
            let e = r.expect_err("the transaction does not fit the log");
            let Error::TransactionTooLarge { needed, available, max_bytes, .. } = e else {
                panic!("{layer}: expected TransactionTooLarge, got {e:?}");
            };
            assert!(needed > available, "{layer}");
            assert_eq!(max_bytes, 1 << 20, "{layer}");
            // The message names the file, the bytes needed and the option to raise.
            let text = e.to_string();
            let log = path.join(nvpage::LOG_FILE);
            let needs = format!("need {needed} bytes");
            for part in [&*log.to_string_lossy(), &needs, "max_log_bytes"] {
                assert!(text.contains(part), "{layer}: {text:?} does not name {part:?}");
            }
            assert_eq!(e.path(), Some(log.as_path()), "{layer}");
            assert_eq!(from_commit, pool > 1 << 20, "{layer}: where the log filled up");
            assert!(!db.is_poisoned(), "{layer}: too large is not a failure");
            compare(&db, &before).unwrap_or_else(|e| panic!("{layer}: in memory: {e}"));
            // The next transaction works.
            let mut tx = db.begin_write().unwrap();
            insert_row(&mut tx, "t", 99_999, &Row { qty: 5, note: None }).unwrap();
            tx.commit().unwrap();
            let after = contents(&db).unwrap();
            assert_eq!(after["t"].len(), before["t"].len() + 1);
            drop(db);
            let db = open(&path).unwrap();
            compare(&db, &after).unwrap_or_else(|e| panic!("{layer}: after reopen: {e}"));
            assert!(db.check().unwrap().is_sound());
        }
    }
}

/// Sizes no machine holds are typed errors at open, never an abort, found before anything is
/// created: a pool of 2^62 bytes, a maximum data file of 2^62 bytes (the pread layer sizes its
/// page tables from it too).
#[test]
fn sizes_the_machine_cannot_hold_are_typed_errors() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        match Database::builder().layer(layer).pool_bytes(1 << 62).open(&path) {
            Err(e @ Error::InvalidOption(_)) => {
                assert!(e.to_string().contains("pool_bytes(4611686018427387904): more than"), "{e}")
            }
            r => panic!("{layer}: a 2^62-byte pool: {:?}", r.map(|_| ())),
        }
        assert!(!path.exists(), "{layer}: the refused pool created the database");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        match Database::builder().layer(layer).max_file_bytes(1 << 62).open(&path) {
            Err(Error::Storage(StorageError::MaxBytesTooLarge { requested_bytes, .. })) => {
                assert_eq!(requested_bytes, 1 << 62, "{layer}")
            }
            r => panic!("{layer}: a 2^62-byte maximum file: {:?}", r.map(|_| ())),
        }
        assert!(!path.exists(), "{layer}: the refused maximum created the database");
        drop(Database::builder().layer(layer).open(&path).unwrap());
    }
}

/// A decimal key of a scale past any column's, given to every call that encodes a key, is a
/// typed error naming the column: never a panic while its message is written.
#[test]
fn a_decimal_key_of_any_scale_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"), Layer::compiled()[0]).unwrap();
    let mut tx = db.begin_write().unwrap();
    let t = tx.create_table("w", wide()).unwrap();
    let ix = tx.create_unique_index("w_d", &t, &["d"]).unwrap();
    tx.insert(&t, &good("fine")).unwrap();
    let refused = |r: nvpage::Result<()>, call: &str| match r {
        Err(Error::ValueDoesNotFit { column, reason }) => {
            assert_eq!(column, "d", "{call}: {reason}");
            assert!(reason.contains("0.0000"), "{call}: the message names the value: {reason}");
        }
        other => panic!("{call}: expected ValueDoesNotFit, got {other:?}"),
    };
    for scale in [39, 255] {
        let key = [Value::Decimal(Decimal::new(1, scale))];
        refused(tx.get_by(&ix, &key).map(drop), "get_by");
        refused(tx.lookup(&ix, &key).map(drop), "lookup");
        refused(tx.delete_by(&ix, &key).map(drop), "delete_by");
        refused(tx.update_by(&ix, &key, &[("n", Value::I32(1))]).map(drop), "update_by");
    }
    // Nothing was changed, and the transaction goes on.
    tx.commit().unwrap();
    assert_eq!(db.begin_read().unwrap().row_count(&t).unwrap(), 1);
}
