//! Goal: an open that recovers says what it did (`Database::recovery`): after a process stopped
//! inside a write transaction whose pages were stolen, the writable open reports one transaction
//! rolled back, the pages restored, the before-images and records applied, and exactly the log
//! bytes the transaction had written, in a sentence that says so; the database holds the last
//! commit again; and an open with nothing to recover, or after a clean close, reports none.

use nvpage::{Column, ColumnType, Database, ReadOps, Schema, Value, kind};

fn total(db: &Database) -> i64 {
    let rx = db.begin_read().unwrap();
    let t = rx.table("t").unwrap();
    let v = t.col::<kind::I64>("v").unwrap();
    let mut sum = 0;
    rx.for_each_row(&t, |r| {
        sum += r.get(v)?;
        Ok(())
    })
    .unwrap();
    sum
}

#[test]
fn a_recovering_open_reports_what_it_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let small = || Database::builder().page_size(4096).pool_bytes(8 * 4096).log_bytes(4 << 20);
    let (log_bytes, write_backs) = {
        let db = small().open(&path).unwrap();
        assert_eq!(db.recovery(), None, "a new database recovers nothing");
        let mut tx = db.begin_write().unwrap();
        let schema = Schema::new(vec![Column::new("v", ColumnType::I64)]).unwrap();
        let t = tx.create_table("t", schema).unwrap();
        for _ in 0..3000 {
            tx.insert(&t, &[Value::I64(1)]).unwrap();
        }
        tx.commit().unwrap();
        let before = db.counters().write_backs;
        let mut tx = db.begin_write().unwrap();
        let mut ids = Vec::new();
        tx.for_each_row(&t, |r| {
            ids.push(r.id());
            Ok(())
        })
        .unwrap();
        for id in ids {
            tx.update(&t, id, &[Value::I64(100)]).unwrap();
        }
        let write_backs = db.counters().write_backs - before;
        assert!(write_backs > 0, "pages were stolen");
        let log_bytes = db.stats().log_bytes;
        // The process "stops" inside the transaction: nothing ends it.
        std::mem::forget(tx);
        (log_bytes, write_backs)
    };
    let db = small().open(&path).unwrap();
    let r = *db.recovery().expect("the open rolled a transaction back");
    assert_eq!(r.transactions_rolled_back, 1);
    assert!(
        (1..=write_backs).contains(&r.pages_restored),
        "{} pages restored, {write_backs} write-backs",
        r.pages_restored
    );
    assert!(r.images_applied >= r.pages_restored, "{r:?}");
    assert!((1..=r.images_applied).contains(&r.log_records_read), "{r:?}");
    assert_eq!(r.log_bytes_read, log_bytes, "every byte the transaction logged was read");
    assert_eq!(
        r.to_string(),
        format!(
            "rolled back 1 unfinished transaction: {} pages restored from {} before-images in {} \
             log record{} ({log_bytes} bytes of log read)",
            r.pages_restored,
            r.images_applied,
            r.log_records_read,
            if r.log_records_read == 1 { "" } else { "s" }
        )
    );
    assert_eq!(total(&db), 3000, "the last commit, every update rolled back");
    db.close().unwrap();
    let db = small().open(&path).unwrap();
    assert_eq!(db.recovery(), None, "an open after a clean close recovers nothing");
    assert_eq!(total(&db), 3000);
}
