//! Goal: every builder option is checked before an open touches the disk. A refused option on a
//! new database is `InvalidOption` naming the option and its value (or the storage crate's own
//! `InvalidPageSize`, `MaxBytesTooLarge`), and leaves neither the database directory, nor the
//! log's directory, nor any file behind; on an
//! existing database that needs recovery, a pool too small for the database's own page size is
//! refused before recovery writes a byte.

use nvpage::{Builder, Column, ColumnType, Database, Error, ReadOps, Schema, StorageError, Value};

fn refusals() -> Vec<(&'static str, Builder)> {
    let b = Database::builder;
    vec![
        ("pool_bytes(0)", b().pool_bytes(0)),
        ("pool_bytes(24576)", b().pool_bytes(3 * 8192)),
        ("log_bytes(0)", b().log_bytes(0)),
        ("log_bytes(18446744073709551615)", b().log_bytes(u64::MAX)),
        ("pool_bytes(1125899906842624)", b().pool_bytes(1 << 50)),
        ("max_file_bytes(0)", b().max_file_bytes(0)),
    ]
}

#[test]
fn a_refused_option_leaves_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let (path, logs) = (tmp.path().join("db"), tmp.path().join("wal"));
    for (option, b) in refusals() {
        for apart in [false, true] {
            let b = if apart { b.clone().log_dir(&logs) } else { b.clone() };
            let e = b.open(&path).map(drop).unwrap_err();
            assert!(matches!(e, Error::InvalidOption(_)), "{option}: {e}");
            assert!(e.to_string().starts_with(&format!("invalid option: {option}: ")), "{e}");
            assert!(!path.exists(), "{option} (log apart: {apart}): the database directory");
            assert!(!logs.exists(), "{option}: the log's directory");
        }
    }
    // The storage crate's own refusals keep their types.
    let e = Database::builder().page_size(1000).open(&path).map(drop).unwrap_err();
    assert!(matches!(e, Error::Storage(StorageError::InvalidPageSize(1000))), "{e}");
    assert!(!path.exists(), "page_size(1000)");
    let e = Database::builder().max_file_bytes(1 << 50).open(&path).map(drop).unwrap_err();
    assert_eq!(
        e.to_string(),
        "a maximum file size of 1125899906842624 bytes passes the 140737488355328 supported"
    );
    assert!(!path.exists(), "max_file_bytes(2^50)");
    // A pool for 4 pages of 16 KiB refuses a new database of 64 KiB pages, not one of 16 KiB.
    let e = Database::builder().page_size(65536).pool_bytes(4 << 14).open(&path).map(drop);
    let e = e.unwrap_err().to_string();
    assert_eq!(
        e,
        "invalid option: pool_bytes(65536): a pool holds at least 4 pages: 262144 bytes at \
         65536 bytes a page"
    );
    assert!(!path.exists());
    drop(Database::builder().page_size(16384).pool_bytes(4 << 14).open(&path).unwrap());
}

#[test]
fn a_pool_too_small_for_the_database_is_refused_before_recovery() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("db");
    let big = || Database::builder().page_size(65536).pool_bytes(4 * 65536).log_bytes(16 << 20);
    {
        let db = big().open(&path).unwrap();
        let mut tx = db.begin_write().unwrap();
        let t = tx.create_table("t", Schema::new(vec![Column::new("v", ColumnType::I64)]).unwrap());
        let t = t.unwrap();
        for v in 0..40_000 {
            tx.insert(&t, &[Value::I64(v)]).unwrap();
        }
        tx.commit().unwrap();
        let mut tx = db.begin_write().unwrap();
        let mut ids = Vec::new();
        tx.for_each_row(&t, |r| {
            ids.push(r.id());
            Ok(())
        })
        .unwrap();
        for id in ids {
            tx.update(&t, id, &[Value::I64(-1)]).unwrap();
        }
        assert!(db.stats().log_bytes > 0, "pages were stolen, their before-images logged");
        std::mem::forget(tx);
    }
    let (data, log) = (path.join(nvpage::DATA_FILE), path.join(nvpage::LOG_FILE));
    let before = (std::fs::read(&data).unwrap(), std::fs::read(&log).unwrap());
    // Enough for 4 pages of the builder's 8 KiB, not of the database's 64 KiB.
    let e = Database::builder().pool_bytes(4 * 8192).open(&path).map(drop).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid option: pool_bytes(32768): a pool holds at least 4 pages: 262144 bytes at 65536 \
         bytes a page"
    );
    let after = (std::fs::read(&data).unwrap(), std::fs::read(&log).unwrap());
    assert!(after == before, "the refused open changed the files");
    let db = big().open(&path).unwrap();
    assert!(db.recovery().is_some());
}
