//! Goal: a database whose creation was killed part-way — a log cut short or never written, a
//! data file half built under its temporary name — opens as a fresh database on the next try
//! (nothing was committed), while a log that holds records but lost its data file is refused,
//! never silently replaced.

use nvpage::{Column, ColumnType, Database, Error, LOG_FILE, ReadOps, Schema, Value};

fn create_table_and_row(db: &Database) {
    let mut tx = db.begin_write().unwrap();
    let t = tx
        .create_table("t", Schema::new(vec![Column::new("k", ColumnType::I64)]).unwrap())
        .unwrap();
    tx.insert(&t, &[Value::I64(7)]).unwrap();
    tx.commit().unwrap();
    let rx = db.begin_read().unwrap();
    assert_eq!(rx.row_count(&rx.table("t").unwrap()).unwrap(), 1);
}

#[test]
fn a_log_left_by_a_killed_create_is_replaced() {
    // What a kill inside the log's creation can leave: nothing written, zeros, a torn header.
    let leftovers: [Vec<u8>; 3] = [vec![], vec![0u8; 8192], {
        let mut v = vec![0u8; 8192];
        v[..8].copy_from_slice(b"NVPAGLOG");
        v
    }];
    for (i, bytes) in leftovers.iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(path.join(LOG_FILE), bytes).unwrap();
        std::fs::write(path.join("data.nvpage.creating"), vec![0xAB; 4096]).unwrap();
        let db = Database::open(&path).unwrap_or_else(|e| panic!("leftover {i}: {e}"));
        create_table_and_row(&db);
        drop(db);
        assert!(
            !path.join("data.nvpage.creating").exists(),
            "leftover {i}: the temporary file is gone"
        );
        let db = Database::open(&path).unwrap();
        assert_eq!(db.begin_read().unwrap().tables().len(), 1);
    }
}

#[test]
fn a_log_with_records_and_no_data_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let db = Database::builder().pool_bytes(64 << 10).open(&path).unwrap();
        create_table_and_row(&db);
        // An unfinished transaction whose stolen pages put before-images in the log: the table's
        // first page (which existed when it began) fills up and is evicted by the tiny pool.
        let mut tx = db.begin_write().unwrap();
        let t = tx.table("t").unwrap();
        for i in 0..5000 {
            tx.insert(&t, &[Value::I64(i)]).unwrap();
        }
        std::mem::forget(tx);
    }
    let log_path = path.join(LOG_FILE);
    assert!(nvpage_wal::Log::open(&log_path).unwrap().tell() > 0, "the log holds before-images");
    let log = std::fs::read(&log_path).unwrap();
    std::fs::remove_file(path.join(nvpage::DATA_FILE)).unwrap();
    match Database::open(&path) {
        Err(Error::Incomplete { missing, .. }) => assert_eq!(missing, nvpage::DATA_FILE),
        other => panic!("expected Incomplete, got {:?}", other.map(|_| ())),
    }
    // The log was not replaced behind the user's back.
    assert_eq!(std::fs::read(&log_path).unwrap(), log);
}
