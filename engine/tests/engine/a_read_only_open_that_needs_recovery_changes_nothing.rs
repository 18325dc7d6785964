//! Goal: a read-only open of a database whose log holds an unfinished transaction (pages were
//! stolen mid-transaction, then the process stopped without ending it) is
//! `Error::RecoveryNeeded`, whose text says so, names the database directory and its log, and
//! says what to do; with every layer, the open changes no byte of the data file or the log; a
//! writable open then recovers, after which a read-only open works.

use nvpage::{Column, ColumnType, Database, Error, Layer, ReadOps, Schema, Value};

#[test]
fn a_read_only_open_refuses_to_recover_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let small = || Database::builder().page_size(4096).pool_bytes(8 * 4096).log_bytes(4 << 20);
    {
        let db = small().open(&path).unwrap();
        let mut tx = db.begin_write().unwrap();
        let schema = Schema::new(vec![
            Column::new("k", ColumnType::I64),
            Column::new("s", ColumnType::VarChar { max_len: 64 }),
        ]);
        let t = tx.create_table("t", schema.unwrap()).unwrap();
        for k in 0..2000 {
            tx.insert(&t, &[Value::I64(k), Value::Str("committed")]).unwrap();
        }
        tx.commit().unwrap();
        let mut tx = db.begin_write().unwrap();
        let mut ids = Vec::new();
        tx.for_each_row(&t, |r| {
            ids.push(r.id());
            Ok(())
        })
        .unwrap();
        for (k, id) in ids.into_iter().enumerate() {
            tx.update(&t, id, &[Value::I64(k as i64), Value::Str("never committed")]).unwrap();
        }
        assert!(db.counters().write_backs > 0, "pages were stolen");
        // The process "stops" inside the transaction: nothing ends it.
        std::mem::forget(tx);
    }
    let (data, log) = (path.join(nvpage::DATA_FILE), path.join(nvpage::LOG_FILE));
    let before = (std::fs::read(&data).unwrap(), std::fs::read(&log).unwrap());
    for layer in Layer::compiled() {
        let r = Database::builder().layer(layer).read_only(true).open(&path);
        let e = r.map(drop).unwrap_err();
        assert!(matches!(e, Error::RecoveryNeeded { .. }), "{layer}: {e}");
        let text = e.to_string();
        for want in [
            format!(
                "{}: its log {} holds an unfinished transaction",
                path.display(),
                log.display()
            ),
            "a read-only open cannot roll back; nothing was changed".to_string(),
            "open the database writable once to recover it (`nvpage recover` does)".to_string(),
        ] {
            assert!(text.contains(&want), "{layer}: {want:?} not in {text:?}");
        }
        let after = (std::fs::read(&data).unwrap(), std::fs::read(&log).unwrap());
        assert!(after.0 == before.0, "{layer}: the read-only open changed the data file");
        assert!(after.1 == before.1, "{layer}: the read-only open changed the log");
    }
    drop(small().open(&path).unwrap());
    let db = Database::builder().read_only(true).open(&path).unwrap();
    let rx = db.begin_read().unwrap();
    let t = rx.table("t").unwrap();
    let mut committed = 0;
    rx.for_each_row(&t, |r| {
        committed += usize::from(r.get(t.col::<nvpage::kind::Str>("s")?)? == "committed");
        Ok(())
    })
    .unwrap();
    assert_eq!(committed, 2000);
}
