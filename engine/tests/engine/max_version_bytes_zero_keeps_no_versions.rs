//! Goal: `Builder::max_version_bytes(0)` means what its docs say: no old version is kept past
//! the commit that made it. A read transaction that began before a commit and then reads a page
//! that commit changed fails with `SnapshotTooOld` (never newer bytes); it still reads a table no
//! commit changed; the database keeps no version bytes between transactions; and a read
//! transaction that begins after the commit reads everything.

use std::sync::mpsc;

use nvpage::{Column, ColumnType, Database, Error, ReadOps, Schema, Value, kind};

fn sum(rx: &impl ReadOps, table: &str) -> nvpage::Result<i64> {
    let t = rx.table(table)?;
    let v = t.col::<kind::I64>("v")?;
    let mut sum = 0;
    rx.for_each_row(&t, |r| {
        sum += r.get(v)?;
        Ok(())
    })?;
    Ok(sum)
}

#[test]
fn zero_keeps_no_versions_and_overlapping_readers_get_snapshot_too_old() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder()
        .max_version_bytes(0)
        .log_bytes(4 << 20)
        .open(dir.path().join("db"))
        .unwrap();
    let schema = || Schema::new(vec![Column::new("v", ColumnType::I64)]).unwrap();
    {
        let mut tx = db.begin_write().unwrap();
        for name in ["changed", "unchanged"] {
            let t = tx.create_table(name, schema()).unwrap();
            for _ in 0..100 {
                tx.insert(&t, &[Value::I64(1)]).unwrap();
            }
        }
        tx.commit().unwrap();
    }
    let (began, begun) = mpsc::channel();
    let (committed, commit) = mpsc::channel();
    std::thread::scope(|s| {
        let db = &db;
        let reader = s.spawn(move || {
            let rx = db.begin_read().unwrap();
            began.send(()).unwrap();
            commit.recv().unwrap();
            let changed = sum(&rx, "changed");
            assert!(matches!(changed, Err(Error::SnapshotTooOld { .. })), "{changed:?}");
            assert_eq!(sum(&rx, "unchanged").unwrap(), 100);
        });
        begun.recv().unwrap();
        let mut tx = db.begin_write().unwrap();
        let t = tx.table("changed").unwrap();
        let mut ids = Vec::new();
        tx.for_each_row(&t, |r| {
            ids.push(r.id());
            Ok(())
        })
        .unwrap();
        for id in ids {
            tx.update(&t, id, &[Value::I64(2)]).unwrap();
        }
        tx.commit().unwrap();
        assert_eq!(db.stats().version_bytes, 0, "no version kept past its commit");
        committed.send(()).unwrap();
        reader.join().unwrap();
    });
    let rx = db.begin_read().unwrap();
    assert_eq!(sum(&rx, "changed").unwrap(), 200);
    assert_eq!(sum(&rx, "unchanged").unwrap(), 100);
}
