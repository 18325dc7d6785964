//! Goal: `get_by` on a unique index with a whole key and no NULL — which searches one leaf
//! instead of running a range scan — finds exactly what the range lookup finds:
//! the row with the key, or none; in a reader's snapshot and in the writer's own changes
//! (inserted, deleted, moved to another key); on every layer, with trees several levels deep
//! (4 KiB pages). Keys with a NULL, and key prefixes, take the range path and agree with it
//! too; a value of the wrong type is the same typed error on both paths.

use crate::common;

use std::mem::discriminant;

use nvpage::{Column, ColumnType, Database, Error, Index, Layer, ReadOps, RowId, Schema, Value};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The row id of `key`'s row through both paths, after checking they agree.
fn both(rx: &impl ReadOps, ix: &Index, key: &[Value<'_>]) -> Option<RowId> {
    let point = rx.get_by(ix, key).unwrap().map(|g| g.row().unwrap().id());
    let range =
        rx.lookup(ix, key).unwrap().next().transpose().unwrap().map(|g| g.row().unwrap().id());
    assert_eq!(point, range, "get_by and lookup disagree on {key:?}");
    point
}

fn schema() -> Schema {
    Schema::new(vec![
        Column::nullable("c", ColumnType::I64),
        Column::new("d", ColumnType::I32),
        Column::new("pad", ColumnType::Char { len: 40 }),
    ])
    .unwrap()
}

#[test]
fn unique_point_lookups_find_what_range_lookups_find() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = common::open_4k(dir.path(), layer);
        let mut rng = StdRng::seed_from_u64(13);
        let mut tx = db.begin_write().unwrap();
        let t = tx.create_table("t", schema()).unwrap();
        let c = tx.create_unique_index("t_c", &t, &["c"]).unwrap();
        let cd = tx.create_unique_index("t_cd", &t, &["c", "d"]).unwrap();
        // A non-unique index takes the range path: its keys end with the row id.
        let nd = tx.create_index("t_d", &t, &["d"]).unwrap();
        // Even keys 0..80,000 (in random order; three levels of 4 KiB pages), and NULL keys.
        let mut keys: Vec<i64> = (0..40_000).map(|k| k * 2).collect();
        for i in (1..keys.len()).rev() {
            keys.swap(i, rng.random_range(0..=i));
        }
        let mut ids = std::collections::BTreeMap::new();
        for &k in &keys {
            let id = tx.insert(&t, &[Value::I64(k), Value::I32(7), Value::Str("x")]).unwrap();
            ids.insert(k, id);
        }
        let nulls: Vec<RowId> = (0..5)
            .map(|_| tx.insert(&t, &[Value::Null, Value::I32(7), Value::Str("n")]).unwrap())
            .collect();
        tx.commit().unwrap();
        let report = db.check().unwrap();
        assert!(report.is_sound(), "{layer}: {:?}", report.damage);
        let depth = report.indexes.iter().find(|x| x.name == "t_c").map(|x| x.depth);
        assert!(depth >= Some(3), "{layer}: t_c is {depth:?} levels deep");

        let rx = db.begin_read().unwrap();
        for k in -3..80_003 {
            let want = ids.get(&k).copied();
            assert_eq!(both(&rx, &c, &[Value::I64(k)]), want, "{layer}: key {k}");
            let whole = [Value::I64(k), Value::I32(7)];
            assert_eq!(both(&rx, &cd, &whole), want, "{layer}: key ({k}, 7)");
            assert_eq!(both(&rx, &cd, &[Value::I64(k), Value::I32(8)]), None, "{layer}");
            // A prefix of the composite key takes the range path.
            assert_eq!(both(&rx, &cd, &[Value::I64(k)]), want, "{layer}: prefix {k}");
        }
        // A whole key of a non-unique index: the first row with it (by row id), or none.
        assert!(both(&rx, &nd, &[Value::I32(7)]).is_some(), "{layer}");
        assert_eq!(both(&rx, &nd, &[Value::I32(8)]), None, "{layer}");
        // NULL keys never collide: the lookup gives the first of them, on both paths.
        let first_null = both(&rx, &c, &[Value::Null]).expect("a NULL key");
        assert!(nulls.contains(&first_null), "{layer}");
        // A value of the wrong type is the same typed error on both paths.
        let point = rx.get_by(&c, &[Value::Str("4")]).map(|_| ()).expect_err("a string key");
        let range = rx.lookup(&c, &[Value::Str("4")]).map(|_| ()).expect_err("a string key");
        assert_eq!(discriminant(&point), discriminant(&range), "{layer}: {point} / {range}");
        assert!(!matches!(point, Error::Storage(_) | Error::Buffer(_)), "{layer}: {point}");
        drop(rx);

        // The writer's own changes: a key inserted, one deleted, one moved.
        let mut tx = db.begin_write().unwrap();
        let added = tx.insert(&t, &[Value::I64(1), Value::I32(7), Value::Str("a")]).unwrap();
        tx.delete(&t, ids[&2]).unwrap();
        let moved =
            tx.update(&t, ids[&4], &[Value::I64(5), Value::I32(7), Value::Str("m")]).unwrap();
        assert_eq!(both(&tx, &c, &[Value::I64(1)]), Some(added), "{layer}");
        assert_eq!(both(&tx, &c, &[Value::I64(2)]), None, "{layer}");
        assert_eq!(both(&tx, &c, &[Value::I64(4)]), None, "{layer}");
        assert_eq!(both(&tx, &c, &[Value::I64(5)]), Some(moved), "{layer}");
        assert_eq!(both(&tx, &cd, &[Value::I64(5), Value::I32(7)]), Some(moved), "{layer}");
        // A reader beside the writer (on a thread of its own) sees the committed keys.
        std::thread::scope(|s| {
            s.spawn(|| {
                let rx = db.begin_read().unwrap();
                assert_eq!(both(&rx, &c, &[Value::I64(1)]), None, "{layer}");
                assert_eq!(both(&rx, &c, &[Value::I64(2)]), Some(ids[&2]), "{layer}");
                assert_eq!(both(&rx, &c, &[Value::I64(5)]), None, "{layer}");
            });
        });
        tx.commit().unwrap();
    }
}

/// A handle from a transaction that was rolled back names an index that no longer exists, even
/// though a later index took its id: both paths refuse it with the same typed error rather than
/// read the index that took the id (DESIGN.md R9).
#[test]
fn a_rolled_back_handle_is_the_same_error_on_both_paths() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder().layer(layer).open(dir.path().join("db")).unwrap();
        let mut tx = db.begin_write().unwrap();
        let t = tx.create_table("t", schema()).unwrap();
        let id = tx.insert(&t, &[Value::I64(5), Value::I32(7), Value::Str("x")]).unwrap();
        tx.commit().unwrap();
        let mut tx = db.begin_write().unwrap();
        let stale = tx.create_unique_index("u", &t, &["c"]).unwrap();
        tx.abort().unwrap();
        let mut tx = db.begin_write().unwrap();
        let now = tx.create_index("n", &t, &["c"]).unwrap();
        tx.commit().unwrap();
        let rx = db.begin_read().unwrap();
        assert_eq!(both(&rx, &now, &[Value::I64(5)]), Some(id), "{layer}");
        let point = rx.get_by(&stale, &[Value::I64(5)]).map(|g| g.is_some());
        let range = rx.lookup(&stale, &[Value::I64(5)]).map(|s| s.count());
        assert!(matches!(point, Err(Error::UnknownIndex(_))), "{layer}: get_by: {point:?}");
        assert!(matches!(range, Err(Error::UnknownIndex(_))), "{layer}: lookup: {range:?}");
    }
}
