//! Goal: read-only opens share a database, in one process as across processes (here: handles of
//! one process, whose `flock`s conflict as two processes' do). Two read-only handles read it at
//! once, on every layer; while one lives a writable open is `AlreadyOpen`, saying that this
//! process holds it read-only and that every read-only handle must close first; once they are
//! gone it opens, and while it lives a read-only open is `AlreadyOpen`, saying that this process
//! holds it for writing and to read through that handle instead.

use nvpage::{Column, ColumnType, Database, Error, Layer, ReadOps, Schema, StorageError, Value};

fn is_already_open(e: &Error) -> bool {
    matches!(e, Error::Storage(StorageError::AlreadyOpen { .. }))
}

#[test]
fn read_only_handles_share_and_a_writer_excludes_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let db = Database::builder().log_bytes(1 << 20).open(&path).unwrap();
        let mut tx = db.begin_write().unwrap();
        let t = tx.create_table("t", Schema::new(vec![Column::new("k", ColumnType::I64)]).unwrap());
        let t = t.unwrap();
        for k in 0..100 {
            tx.insert(&t, &[Value::I64(k)]).unwrap();
        }
        tx.commit().unwrap();
    }
    let data = path.join(nvpage::DATA_FILE).display().to_string();
    let log = path.join(nvpage::LOG_FILE).display().to_string();
    let read_only = |layer| Database::builder().layer(layer).read_only(true).open(&path);
    for first in Layer::compiled() {
        for second in Layer::compiled() {
            let a = read_only(first).unwrap_or_else(|e| panic!("{first}: {e}"));
            let b = read_only(second).unwrap_or_else(|e| panic!("{first} then {second}: {e}"));
            for db in [&a, &b] {
                let rx = db.begin_read().unwrap();
                assert_eq!(rx.row_count(&rx.table("t").unwrap()).unwrap(), 100);
            }
            let e = Database::builder().layer(second).open(&path).map(drop).unwrap_err();
            assert!(is_already_open(&e), "{first}/{second}: {e}");
            // The log is locked first: the refusal names it.
            assert_eq!(
                e.to_string(),
                format!(
                    "{log} is already open read-only by this process (another handle to it); a \
                     writable open needs every read-only handle closed first"
                ),
                "{first}/{second}"
            );
        }
    }
    let writer = Database::open(&path).unwrap();
    let e = read_only(Layer::Pread).map(drop).unwrap_err();
    assert!(is_already_open(&e), "{e}");
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("{log} is already open for writing by this process")),
        "{text}"
    );
    assert!(text.contains("read through that handle instead"), "{text}");
    assert!(!text.contains(&data), "{text}");
    drop(writer);
    drop(read_only(Layer::Pread).unwrap());
}
