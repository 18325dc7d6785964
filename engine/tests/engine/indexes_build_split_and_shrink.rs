//! Goal: indexes behave as a user of a storage engine expects, on every layer — a
//! bulk build on a loaded table equals an index kept row by row; trees grow deep and shrink back
//! as rows come and go, their pages reused rather than the file grown; a unique violation is a
//! typed error that leaves the transaction usable; a reader's snapshot keeps its index contents
//! while the writer changes them; an index survives reopen, and goes with its table.

use std::ops::Bound;

use nvpage::{Column, ColumnType, Database, Error, Layer, ReadOps, RowId, Schema, Value};

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("id", ColumnType::I64),
        Column::new("name", ColumnType::VarChar { max_len: 200 }),
        Column::nullable("score", ColumnType::I32),
    ])
    .unwrap()
}

/// Row `i`'s name: long, so that a 4 KiB leaf holds about twenty, with shared prefixes.
fn name(i: i64) -> String {
    format!(
        "{}-{:0>150}",
        ["north", "south", "east", "west"][(i % 4) as usize],
        (i * 7919) % 10_007
    )
}

fn open(dir: &std::path::Path, layer: Layer) -> Database {
    Database::builder()
        .layer(layer)
        .page_size(4096)
        .pool_bytes(32 * 4096)
        .open(dir.join("db"))
        .unwrap()
}

fn names_in_order(tx: &impl ReadOps, ix: &nvpage::Index) -> Vec<String> {
    let t = tx.table("t").unwrap();
    let col = t.col::<nvpage::kind::Str>("name").unwrap();
    tx.index_range(ix, Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .map(|g| g.unwrap().row().unwrap().get(col).unwrap().to_owned())
        .collect()
}

fn report(db: &Database, index: &str) -> nvpage::IndexReport {
    let r = db.check().unwrap();
    assert!(r.is_sound(), "{:?}", r.damage);
    r.indexes.into_iter().find(|x| x.name == index).unwrap()
}

#[test]
fn a_bulk_build_equals_an_index_kept_row_by_row_and_trees_shrink_back() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), layer);
        const N: i64 = 3000;
        let mut tx = db.begin_write().unwrap();
        let t = tx.create_table("t", schema()).unwrap();
        let kept = tx.create_index("kept", &t, &["name"]).unwrap();
        for i in 0..N {
            let n = name(i);
            tx.insert(&t, &[Value::I64(i), Value::Str(&n), Value::I32((i % 5) as i32)]).unwrap();
        }
        let built = tx.create_index("built", &t, &["name"]).unwrap();
        // The writer reads its own indexes, both the same.
        let order = names_in_order(&tx, &kept);
        let mut sorted: Vec<String> = (0..N).map(name).collect();
        sorted.sort();
        assert_eq!(order, sorted, "{layer:?}");
        assert_eq!(names_in_order(&tx, &built), sorted, "{layer:?}");
        tx.commit().unwrap();
        let (k, b) = (report(&db, "kept"), report(&db, "built"));
        assert!(k.depth >= 3 && b.depth >= 3, "{layer:?}: deep trees: {k:?} {b:?}");
        assert!(b.pages < k.pages, "{layer:?}: a bulk build packs leaves fuller: {b:?} {k:?}");

        // Delete every row: the trees shrink to a leaf; their pages wait to be reused.
        let mut tx = db.begin_write().unwrap();
        let ids: Vec<RowId> = tx
            .scan(&t)
            .unwrap()
            .flat_map(|p| p.unwrap().rows().map(|r| r.unwrap().id()).collect::<Vec<_>>())
            .collect();
        for id in ids {
            tx.delete(&t, id).unwrap();
        }
        assert_eq!(tx.lookup(&kept, &[]).unwrap().count(), 0);
        tx.commit().unwrap();
        let k = report(&db, "kept");
        assert_eq!((k.depth, k.pages, k.entries_found), (1, 1, 0), "{layer:?}: {k:?}");
        let file_pages = db.page_count();
        // Fill again: the freed pages are reused, the file does not grow.
        let mut tx = db.begin_write().unwrap();
        for i in 0..N {
            let n = name(i);
            tx.insert(&t, &[Value::I64(i), Value::Str(&n), Value::Null]).unwrap();
        }
        tx.commit().unwrap();
        assert_eq!(db.page_count(), file_pages, "{layer:?}: pages reused");
        assert_eq!(report(&db, "kept").entries_found, N as u64);

        // Reopen: the indexes are in the catalog.
        drop(db);
        let db = open(dir.path(), layer);
        let rx = db.begin_read().unwrap();
        let kept = rx.index("kept").unwrap();
        assert_eq!(kept.columns(), ["name".to_string()]);
        assert_eq!(names_in_order(&rx, &kept), sorted, "{layer:?}");
        // A prefix scan: the names that start with a value (here a whole key; the encoding is
        // self-delimiting, so a prefix of the columns, not of a string).
        let one = name(17);
        let hits: Vec<_> = rx
            .lookup(&kept, &[Value::Str(&one)])
            .unwrap()
            .map(|g| g.unwrap().row().unwrap().id())
            .collect();
        assert_eq!(hits.len(), 1);
    }
}

#[test]
fn a_unique_violation_is_typed_and_leaves_the_transaction_usable() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), layer);
        let mut tx = db.begin_write().unwrap();
        let t = tx.create_table("t", schema()).unwrap();
        let by_id = tx.create_unique_index("by_id", &t, &["id"]).unwrap();
        let a = tx.insert(&t, &[Value::I64(1), Value::Str("a"), Value::Null]).unwrap();
        let b = tx.insert(&t, &[Value::I64(2), Value::Str("b"), Value::Null]).unwrap();
        let e = tx.insert(&t, &[Value::I64(1), Value::Str("again"), Value::Null]).unwrap_err();
        assert!(matches!(&e, Error::UniqueViolation { index, .. } if index == "by_id"), "{e}");
        assert!(e.to_string().ends_with("the key (1)"), "the message names the key: {e}");
        let e = tx.update(&t, b, &[Value::I64(1), Value::Str("b"), Value::Null]).unwrap_err();
        assert!(matches!(e, Error::UniqueViolation { .. }));
        // An update keeping its own key is no violation, even when the row moves.
        let long = "x".repeat(190);
        let a2 = tx.update(&t, a, &[Value::I64(1), Value::Str(&long), Value::Null]).unwrap();
        // A unique index over a table with duplicates cannot be created, and nothing changes.
        tx.insert(&t, &[Value::I64(3), Value::Str("b"), Value::Null]).unwrap();
        let e = tx.create_unique_index("by_name", &t, &["name"]).unwrap_err();
        assert!(matches!(e, Error::UniqueViolation { .. }), "{e}");
        assert!(matches!(tx.index("by_name"), Err(Error::UnknownIndex(_))));
        tx.create_index("by_name", &t, &["name"]).unwrap();
        assert!(matches!(tx.create_index("by_name", &t, &["id"]), Err(Error::IndexExists(_))));
        assert!(matches!(tx.create_index("x", &t, &["nope"]), Err(Error::UnknownColumn(_))));
        assert!(matches!(tx.create_index("x", &t, &[]), Err(Error::InvalidSchema(_))));
        // NULLs never collide in a unique index.
        let by_score = tx.create_unique_index("by_score", &t, &["score"]).unwrap();
        tx.insert(&t, &[Value::I64(4), Value::Str("c"), Value::Null]).unwrap();
        assert_eq!(tx.lookup(&by_score, &[Value::Null]).unwrap().count(), 4);
        tx.commit().unwrap();
        let rx = db.begin_read().unwrap();
        let g = rx.get_by(&by_id, &[Value::I64(1)]).unwrap().unwrap();
        assert_eq!(g.row().unwrap().id(), a2);
        assert_eq!(rx.index_len(&by_id).unwrap(), 4);
        assert!(rx.get_by(&by_id, &[Value::I64(9)]).unwrap().is_none());
        drop(g);
        drop(rx);
        assert!(db.check().unwrap().is_sound());
    }
}

#[test]
fn keys_longer_than_a_quarter_page_are_refused_at_creation() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Layer::compiled()[0]);
    let mut tx = db.begin_write().unwrap();
    let wide = Schema::new(vec![Column::new("s", ColumnType::VarChar { max_len: 1000 })]).unwrap();
    let t = tx.create_table("w", wide).unwrap();
    let e = tx.create_index("w_s", &t, &["s"]).unwrap_err();
    assert!(matches!(e, Error::KeyTooLarge { bytes: 2013, max: 990, .. }), "{e:?}");
    tx.insert(&t, &[Value::Str("still usable")]).unwrap();
    tx.commit().unwrap();
}

#[test]
fn a_reader_keeps_its_snapshot_of_an_index_and_a_table_takes_its_indexes_along() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), layer);
        let mut tx = db.begin_write().unwrap();
        let t = tx.create_table("t", schema()).unwrap();
        tx.create_unique_index("by_id", &t, &["id"]).unwrap();
        for i in 0..500 {
            tx.insert(&t, &[Value::I64(i), Value::Str(&name(i)), Value::Null]).unwrap();
        }
        tx.commit().unwrap();
        let rx = db.begin_read().unwrap();
        let ix = rx.index("by_id").unwrap();
        let before: Vec<RowId> = rx.lookup(&ix, &[]).unwrap().ids().map(Result::unwrap).collect();
        assert_eq!(before.len(), 500);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut tx = db.begin_write().unwrap();
                let t = tx.table("t").unwrap();
                let ix = tx.index("by_id").unwrap();
                let ids: Vec<RowId> = tx
                    .index_range(&ix, Bound::Included(&[Value::I64(100)]), Bound::Unbounded)
                    .unwrap()
                    .ids()
                    .map(Result::unwrap)
                    .collect();
                for id in ids {
                    tx.delete(&t, id).unwrap();
                }
                for i in 1000..1300 {
                    tx.insert(&t, &[Value::I64(i), Value::Str(&name(i)), Value::Null]).unwrap();
                }
                tx.commit().unwrap();
            })
            .join()
            .unwrap();
        });
        // The writer committed; this reader still sees its snapshot, through the index.
        let again: Vec<RowId> = rx.lookup(&ix, &[]).unwrap().ids().map(Result::unwrap).collect();
        assert_eq!(again, before, "{layer:?}");
        let id_col = rx.table("t").unwrap().col::<nvpage::kind::I64>("id").unwrap();
        let last = rx
            .index_range(&ix, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .next_back()
            .unwrap()
            .unwrap();
        assert_eq!(last.row().unwrap().get(id_col).unwrap(), 499);
        drop(last);
        drop(rx);
        let rx = db.begin_read().unwrap();
        let ix = rx.index("by_id").unwrap();
        assert_eq!(rx.index_len(&ix).unwrap(), 400);
        drop(rx);
        // Dropping the table drops its index.
        let mut tx = db.begin_write().unwrap();
        tx.drop_table("t").unwrap();
        assert!(matches!(tx.index("by_id"), Err(Error::UnknownIndex(_))));
        tx.commit().unwrap();
        drop(db);
        let db = open(dir.path(), layer);
        let r = db.check().unwrap();
        assert!(r.is_sound() && r.indexes.is_empty(), "{r:?}");
    }
}

/// Keys of about 480 bytes that share 470 of them: leaves and inner nodes alike hold about
/// eight entries (separators are long too), so trees grow four levels deep and every level
/// splits and empties many times over.
#[test]
fn deep_trees_of_long_keys_split_and_shrink_at_every_level() {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;

    let long = Schema::new(vec![Column::new("k", ColumnType::VarChar { max_len: 486 })]).unwrap();
    let key = |n: u32| format!("{}{n:08}", "k".repeat(470));
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), layer);
        let mut rng = StdRng::seed_from_u64(18);
        let mut model: BTreeMap<String, RowId> = BTreeMap::new();
        let mut deepest = 0;
        for round in 0..6 {
            let mut tx = db.begin_write().unwrap();
            let t = match tx.table("t") {
                Ok(t) => t,
                Err(_) => {
                    let t = tx.create_table("t", long.clone()).unwrap();
                    tx.create_unique_index("t_k", &t, &["k"]).unwrap();
                    t
                }
            };
            let ix = tx.index("t_k").unwrap();
            // Grow in the first rounds, shrink in the last: every level splits, then empties.
            let grow = if round < 3 { 0.8 } else { 0.15 };
            for _ in 0..700 {
                if model.is_empty() || rng.random_bool(grow) {
                    let k = key(rng.random_range(0..1_000_000));
                    match tx.insert(&t, &[Value::Str(&k)]) {
                        Ok(id) => assert!(model.insert(k, id).is_none()),
                        Err(Error::UniqueViolation { .. }) => assert!(model.contains_key(&k)),
                        Err(e) => panic!("{e}"),
                    }
                } else {
                    let i = rng.random_range(0..model.len());
                    let k = model.keys().nth(i).unwrap().clone();
                    let id = model.remove(&k).unwrap();
                    tx.delete(&t, id).unwrap();
                }
            }
            let forward: Vec<RowId> =
                tx.lookup(&ix, &[]).unwrap().ids().map(Result::unwrap).collect();
            let mut backward: Vec<RowId> =
                tx.lookup(&ix, &[]).unwrap().ids().rev().map(Result::unwrap).collect();
            backward.reverse();
            let want: Vec<RowId> = model.values().copied().collect();
            assert_eq!(forward, want, "{layer:?}, round {round}");
            assert_eq!(backward, want, "{layer:?}, round {round}");
            tx.commit().unwrap();
            let r = report(&db, "t_k");
            assert_eq!(r.entries_found, model.len() as u64);
            deepest = deepest.max(r.depth);
        }
        assert!(deepest >= 4, "{layer:?}: trees reached depth {deepest}");
    }
}

/// A large table whose rows come in key order is indexed as it is read (no key buffer that grows
/// with the table); one in another order through a sort; both give the same index, and a
/// duplicate in a large sorted-looking table is still a unique violation.
#[test]
fn large_tables_are_indexed_in_order_or_sorted() {
    let layer = Layer::best_compiled();
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), layer);
    const N: i64 = 100_000;
    let mut tx = db.begin_write().unwrap();
    let t = tx.create_table("t", schema()).unwrap();
    for i in 0..N {
        // Ids ascend with the rows; scores cycle, so their order is not the rows'.
        tx.insert(&t, &[Value::I64(i), Value::Str("x"), Value::I32((i % 1000) as i32)]).unwrap();
    }
    let by_id = tx.create_unique_index("by_id", &t, &["id"]).unwrap();
    let by_score = tx.create_index("by_score", &t, &["score", "id"]).unwrap();
    let e = tx.create_unique_index("by_score_alone", &t, &["score"]).unwrap_err();
    assert!(matches!(e, Error::UniqueViolation { .. }), "{e}");
    tx.commit().unwrap();
    let r = db.check().unwrap();
    assert!(r.is_sound(), "{:?}", r.damage);
    let rx = db.begin_read().unwrap();
    let id = t.col::<nvpage::kind::I64>("id").unwrap();
    let ids: Vec<i64> = rx
        .lookup(&by_id, &[])
        .unwrap()
        .map(|g| g.unwrap().row().unwrap().get(id).unwrap())
        .collect();
    assert_eq!(ids, (0..N).collect::<Vec<_>>());
    let g = rx.get_by(&by_id, &[Value::I64(77_777)]).unwrap().unwrap();
    assert_eq!(g.row().unwrap().get(id).unwrap(), 77_777);
    let sevens: Vec<i64> = rx
        .lookup(&by_score, &[Value::I32(7)])
        .unwrap()
        .map(|g| g.unwrap().row().unwrap().get(id).unwrap())
        .collect();
    assert_eq!(sevens, (0..N).filter(|i| i % 1000 == 7).collect::<Vec<_>>());
    // A later row repeating an earlier key: the rows no longer ascend, and the sort finds it.
    drop(g);
    drop(rx);
    let mut tx = db.begin_write().unwrap();
    tx.drop_index("by_id").unwrap();
    tx.insert(&t, &[Value::I64(5), Value::Str("again"), Value::Null]).unwrap();
    let e = tx.create_unique_index("by_id_again", &t, &["id"]).unwrap_err();
    assert!(matches!(e, Error::UniqueViolation { .. }), "{e}");
}
