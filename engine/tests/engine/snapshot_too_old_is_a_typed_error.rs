//! Goal: the bound on old versions' memory (`Builder::max_version_bytes`) does what the docs
//! say, on every layer: when commits push the versions a live reader needs past the bound, the
//! oldest are freed, and that reader then gets `Error::SnapshotTooOld` for a page that changed
//! after its snapshot — never newer bytes — while it still reads pages unchanged since; the
//! writer never waits; a reader that begins afterwards reads everything; and the horizon is
//! reported.

use crate::common;

use common::{Row, commit_table, contents_in, schema, values};
use nvpage::{Database, Error, Layer, ReadOps, Value, kind};

fn run(layer: Layer) {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let db = Database::builder()
        .layer(layer)
        .page_size(4096)
        .pool_bytes(16 * 4096)
        // Room for a few pages' versions: a commit that rewrites the table passes it.
        .max_version_bytes(4 * 4096)
        .open(dir.path().join("db"))
        .unwrap();
    commit_table(&db, 300, |k| Row { qty: k as i32, note: Some("n".repeat(40)) });
    {
        let mut tx = db.begin_write().unwrap();
        let u = tx.create_table("unchanged", schema()).unwrap();
        tx.insert(&u, &values(7, &Row { qty: 7, note: None })).unwrap();
        tx.commit().unwrap();
    }
    std::thread::scope(|s| {
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let (back, done) = std::sync::mpsc::channel::<()>();
        let db = &db;
        s.spawn(move || {
            let rx = db.begin_read().unwrap();
            let before = contents_in(&rx).unwrap();
            back.send(()).unwrap();
            wait.recv().unwrap();
            // Every page of "t" changed twice since the snapshot, past the bound.
            let t = rx.table("t").unwrap();
            let qty = t.col::<kind::I32>("qty").unwrap();
            let mut sum = 0i64;
            let r = rx.for_each_row(&t, |r| {
                sum += i64::from(r.get(qty)?);
                Ok(())
            });
            match r {
                Err(Error::SnapshotTooOld { snapshot, horizon, .. }) => {
                    assert_eq!(snapshot, rx.snapshot());
                    assert!(horizon > snapshot, "{layer}: horizon {horizon}");
                }
                other => panic!("{layer}: expected SnapshotTooOld, got {other:?} (sum {sum})"),
            }
            // Pages that did not change since the snapshot still read.
            let u = rx.table("unchanged").unwrap();
            let mut rows = 0;
            rx.for_each_row(&u, |_| {
                rows += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!(rows, before["unchanged"].len(), "{layer}");
        });
        done.recv().unwrap();
        for round in 1..=2 {
            let mut tx = db.begin_write().unwrap();
            let t = tx.table("t").unwrap();
            let mut ids = Vec::new();
            tx.for_each_row(&t, |r| {
                ids.push(r.id());
                Ok(())
            })
            .unwrap();
            for (k, id) in ids.into_iter().enumerate() {
                tx.update(
                    &t,
                    id,
                    &[
                        Value::I64(k as i64),
                        Value::I32(-round),
                        Value::Decimal(nvpage::Decimal::new(k as i64 * 7, 2)),
                        Value::Str("m"),
                    ],
                )
                .unwrap();
            }
            tx.commit().unwrap();
        }
        let st = db.stats();
        assert!(st.version_horizon > 0, "{layer}: {st:?}");
        assert!(st.version_bytes <= 4 * 4096 + 4096 + 12, "{layer}: bounded: {st:?}");
        go.send(()).unwrap();
    });
    // A reader that begins now reads everything.
    let rx = db.begin_read().unwrap();
    let now = contents_in(&rx).unwrap();
    assert_eq!(now["t"].len(), 300, "{layer}");
    assert!(now["t"].values().all(|(_, r)| r.qty == -2), "{layer}");
    assert!(!db.is_poisoned());
}

#[test]
fn a_snapshot_past_the_bound_is_too_old_never_wrong() {
    for layer in Layer::compiled() {
        run(layer);
    }
}
