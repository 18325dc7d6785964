//! Goal: a clustered table (rows in its primary key's B+tree) holds exactly what a map of its
//! rows by key says, on every compiled layer, with 4 KiB pages and a pool of a few dozen frames
//! (trees several levels deep, leaves splitting and emptying). Random transactions of inserts,
//! upserts, updates by key (the key itself changed too), deletes by key and lookups, committed
//! or rolled back, are held after each one to the map: a scan walks the rows in key order, range
//! scans both ways and the partitions of a scan read exactly the keys they should, a fold of the
//! pages sums the same and a column gather reads the same names. Some rows are too long for a
//! leaf (spilled to overflow pages), and grow into and shrink out of that. Refused calls (a key held already, a row id) change nothing and leave
//! the transaction usable. After each commit and after a reopen, `check` finds nothing wrong.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::ops::Bound;
use std::sync::Arc;

use nvpage::{
    Column, ColumnType, Database, Error, Layer, Partition, ReadOps, RowId, Schema, Storage,
    Upserted, Value, kind,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A row's columns but the key: a group, a name whose length varies (rows of 30 to 260 bytes,
/// so a leaf holds from about a dozen to a hundred, and one in twenty of 1,000 to 3,900 bytes,
/// too long for a leaf entry: spilled to one or two overflow pages), and an amount that may be
/// NULL.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Row {
    grp: i32,
    name: String,
    amount: Option<i64>,
}

type Model = BTreeMap<i64, Row>;

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("grp", ColumnType::I32),
        Column::new("k", ColumnType::I64),
        Column::new("name", ColumnType::VarChar { max_len: 3900 }),
        Column::nullable("amount", ColumnType::Decimal { scale: 2 }),
    ])
    .unwrap()
    .with_primary_key(&["k"])
    .unwrap()
}

fn values(k: i64, r: &Row) -> Vec<Value<'_>> {
    let amount = r.amount.map_or(Value::Null, |a| Value::Decimal(nvpage::Decimal::new(a, 2)));
    vec![Value::I32(r.grp), Value::I64(k), Value::Str(&r.name), amount]
}

fn random_row(rng: &mut StdRng) -> Row {
    let len = match rng.random_range(0..20) {
        0 => rng.random_range(1000..3900),
        1..=4 => rng.random_range(100..240),
        _ => rng.random_range(0..30),
    };
    Row {
        grp: rng.random_range(0..5),
        name: (0..len).map(|_| char::from(rng.random_range(b'a'..=b'z'))).collect(),
        amount: rng.random_bool(0.8).then(|| rng.random_range(-10_000..10_000)),
    }
}

/// The rows `rows` yields, as (key, row).
fn read_row(row: &nvpage::RowRef<'_>) -> (i64, Row) {
    let k = row.get_named::<kind::I64>("k").unwrap();
    let amount = if row.is_null(3) {
        None
    } else {
        Some(row.get_named::<kind::Decimal>("amount").unwrap().units)
    };
    let grp = row.get_named::<kind::I32>("grp").unwrap();
    (k, Row { grp, name: row.get_named::<kind::Str>("name").unwrap().to_owned(), amount })
}

/// Holds everything `rx` reads of table `t` to `model`.
fn compare(rx: &impl ReadOps, model: &Model, rng: &mut StdRng, what: &str) {
    let t = rx.table("t").unwrap();
    assert_eq!(t.storage(), Storage::Clustered);
    assert_eq!(rx.row_count(&t).unwrap(), model.len() as u64, "{what}: row count");
    let mut all = Vec::new();
    rx.for_each_row(&t, |row| {
        assert_eq!(row.id(), RowId::KEYED);
        all.push(read_row(&row));
        Ok(())
    })
    .unwrap();
    let want: Vec<(i64, Row)> = model.iter().map(|(k, r)| (*k, r.clone())).collect();
    assert_eq!(all, want, "{what}: a scan in key order");
    // Partitions: each a run of keys in order, together every row once.
    let n = rng.random_range(1..5);
    let mut parts = Vec::new();
    for part in Partition::all(n).unwrap() {
        for page in rx.scan_partition(&t, part).unwrap() {
            for row in page.unwrap().rows() {
                parts.push(read_row(&row.unwrap()).0);
            }
        }
    }
    assert_eq!(parts, model.keys().copied().collect::<Vec<_>>(), "{what}: {n} partitions");
    // A page-at-a-time fold, on two threads, and a column gather.
    let amount = t.col::<kind::Units>("amount").unwrap();
    let sum = rx
        .par_fold_pages(
            &t,
            2,
            || 0i64,
            |acc, page| {
                let c = page.col(amount)?;
                page.fold(acc, |acc, row| Ok(acc + row.get_opt(c)?.unwrap_or(0)))
            },
            |a, b| a + b,
        )
        .unwrap();
    assert_eq!(sum, model.values().filter_map(|r| r.amount).sum::<i64>(), "{what}: a fold");
    let name = t.col::<kind::Bytes>("name").unwrap();
    let mut places = nvpage::RowPlaces::new();
    let (mut data, mut ends) = (Vec::new(), Vec::new());
    for page in rx.scan(&t).unwrap() {
        page.unwrap()
            .with_rows(|rows| {
                rows.locate(&mut places)?.gather_bytes(rows.col(name)?, &mut data, &mut ends, None)
            })
            .unwrap();
    }
    let mut names = Vec::new();
    let mut from = 0;
    for end in ends {
        names.push(String::from_utf8(data[from..end as usize].to_vec()).unwrap());
        from = end as usize;
    }
    let want: Vec<String> = model.values().map(|r| r.name.clone()).collect();
    assert!(names == want, "{what}: a gather of names in key order");
    // Lookups and ranges, both ways.
    let pk = rx.primary_key(&t).unwrap().expect("the key");
    for _ in 0..10 {
        let k = rng.random_range(-5..22_100);
        let got = rx.get_by(&pk, &[Value::I64(k)]).unwrap().map(|g| read_row(&g.row().unwrap()));
        assert_eq!(got, model.get(&k).map(|r| (k, r.clone())), "{what}: get_by {k}");
        let (a, b) = (rng.random_range(-5..22_100), rng.random_range(-5..22_100));
        let (lo, hi) = (a.min(b), a.max(b));
        let (lo_v, hi_v) = ([Value::I64(lo)], [Value::I64(hi)]);
        let range = rx
            .index_range(&pk, Bound::Included(&lo_v[..]), Bound::Excluded(&hi_v[..]))
            .unwrap()
            .rev()
            .map(|g| read_row(&g.unwrap().row().unwrap()).0)
            .collect::<Vec<_>>();
        let want: Vec<i64> = model.range(lo..hi).rev().map(|(k, _)| *k).collect();
        assert_eq!(range, want, "{what}: [{lo}, {hi}) backwards");
        let counted =
            rx.count_range(&pk, Bound::Excluded(&lo_v[..]), Bound::Included(&hi_v[..])).unwrap();
        assert_eq!(
            counted,
            model.range((Bound::Excluded(lo), Bound::Included(hi))).count() as u64,
            "{what}: count ({lo}, {hi}]"
        );
    }
}

fn run(layer: Layer, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        let b = Database::builder().layer(layer).page_size(4096).pool_bytes(48 * 4096);
        Arc::new(b.open(dir.path().join("db")).unwrap())
    };
    let mut model = Model::new();
    let db = open();
    let mut w = db.begin_write().unwrap();
    w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    w.commit().unwrap();
    for txn in 0..40 {
        // A snapshot of the last commit, read again once this transaction has split, emptied
        // and rewritten leaves: it sees what it saw.
        let before = (db.snapshot().unwrap(), model.clone());
        let mut next = model.clone();
        let mut w = db.begin_write().unwrap();
        let t = w.table("t").unwrap();
        let pk = w.primary_key(&t).unwrap().unwrap();
        // Every tenth transaction a load of ascending keys (its leaves fill and split at the
        // right edge, and the tree grows a level); the others change random keys.
        if txn % 10 == 5 {
            let base = 10_000 + 3_000 * i64::from(txn / 10);
            for k in base..base + 3_000 {
                if next.contains_key(&k) {
                    continue;
                }
                let row = random_row(&mut rng);
                w.insert(&t, &values(k, &row)).unwrap();
                next.insert(k, row);
            }
        }
        for _ in 0..rng.random_range(1..120) {
            let k = if rng.random_bool(0.9) {
                rng.random_range(0..2000)
            } else {
                rng.random_range(0..22_000)
            };
            let row = random_row(&mut rng);
            match rng.random_range(0..10) {
                0..=3 => {
                    let r = w.insert(&t, &values(k, &row));
                    match next.entry(k) {
                        Entry::Occupied(_) => {
                            assert!(matches!(r, Err(Error::UniqueViolation { .. })), "{r:?}")
                        }
                        Entry::Vacant(e) => {
                            assert_eq!(r.unwrap(), RowId::KEYED);
                            e.insert(row);
                        }
                    }
                }
                4 => {
                    let done = w.upsert(&pk, &values(k, &row)).unwrap();
                    let was = next.insert(k, row).is_some();
                    assert_eq!(
                        done,
                        if was {
                            Upserted::Updated(RowId::KEYED)
                        } else {
                            Upserted::Inserted(RowId::KEYED)
                        }
                    );
                }
                5..=6 => {
                    let set = [("name", Value::Str(&row.name)), ("grp", Value::I32(row.grp))];
                    let r = w.update_by(&pk, &[Value::I64(k)], &set).unwrap();
                    assert_eq!(r.is_some(), next.contains_key(&k));
                    if let Some(old) = next.get_mut(&k) {
                        old.name = row.name.clone();
                        old.grp = row.grp;
                    }
                }
                7 => {
                    // The key itself changes: the row moves, unless another holds the new key.
                    let to = rng.random_range(0..22_000);
                    let r = w.update_by(&pk, &[Value::I64(k)], &[("k", Value::I64(to))]);
                    match (next.contains_key(&k), next.contains_key(&to) && to != k) {
                        (false, _) => assert_eq!(r.unwrap(), None),
                        (true, true) => {
                            assert!(matches!(r, Err(Error::UniqueViolation { .. })), "{r:?}")
                        }
                        (true, false) => {
                            assert!(r.unwrap().is_some());
                            let moved = next.remove(&k).unwrap();
                            next.insert(to, moved);
                        }
                    }
                }
                8 => {
                    let r = w.delete_by(&pk, &[Value::I64(k)]).unwrap();
                    assert_eq!(r, next.remove(&k).is_some());
                }
                _ => {
                    // Row ids name no row of a clustered table.
                    assert!(matches!(w.get(&t, RowId::KEYED), Err(Error::KeyedRows(_))));
                    let e = w.delete(&t, RowId { page: 3, slot: 0 }).unwrap_err();
                    assert!(matches!(e, Error::KeyedRows(_)), "{e}");
                    let e = w.update(&t, RowId::KEYED, &values(k, &row)).unwrap_err();
                    assert!(matches!(e, Error::KeyedRows(_)), "{e}");
                }
            }
        }
        compare(&w, &next, &mut rng, &format!("{layer} seed {seed} txn {txn}, in the writer"));
        if rng.random_bool(0.8) {
            w.commit().unwrap();
            model = next;
            let rx = db.begin_read().unwrap();
            compare(&rx, &model, &mut rng, &format!("{layer} seed {seed} txn {txn}, committed"));
        } else {
            w.abort().unwrap();
            let rx = db.begin_read().unwrap();
            compare(&rx, &model, &mut rng, &format!("{layer} seed {seed} txn {txn}, rolled back"));
        }
        compare(&before.0, &before.1, &mut rng, &format!("{layer} seed {seed} txn {txn}, before"));
        drop(before);
        if txn % 10 == 9 {
            let report = db.check().unwrap();
            assert!(report.damage.is_empty(), "{layer} seed {seed}: {:?}", report.damage);
        }
    }
    drop(db);
    let db = open();
    let rx = db.begin_read().unwrap();
    compare(&rx, &model, &mut rng, &format!("{layer} seed {seed}, reopened"));
    drop(rx);
    let report = db.check().unwrap();
    assert!(report.damage.is_empty(), "{layer} seed {seed}: {:?}", report.damage);
    let t = report.tables.iter().find(|t| t.name == "t").unwrap();
    assert_eq!(t.rows_scanned, model.len() as u64);
    let tree = report.indexes.iter().find(|x| x.name == "t_pkey").unwrap();
    assert!(tree.depth >= 3, "{layer} seed {seed}: a tree {} levels deep", tree.depth);
}

#[test]
fn clustered_tables_match_a_btreemap_on_every_layer() {
    for layer in Layer::compiled() {
        for seed in 0..3 {
            run(layer, seed);
        }
    }
}

#[test]
fn a_clustered_table_needs_a_primary_key_and_takes_rows_as_long_as_a_heap_table_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder().page_size(4096).open(dir.path().join("db")).unwrap();
    let mut w = db.begin_write().unwrap();
    let plain = Schema::new(vec![Column::new("a", ColumnType::I64)]).unwrap();
    let e = w.create_table_with("t", plain, Storage::Clustered).unwrap_err();
    assert!(matches!(e, Error::InvalidSchema(_)), "{e}");
    let wide = Schema::new(vec![
        Column::new("k", ColumnType::I64),
        Column::new("note", ColumnType::VarChar { max_len: 3000 }),
    ])
    .unwrap()
    .with_primary_key(&["k"])
    .unwrap();
    let t = w.create_table_with("t", wide, Storage::Clustered).unwrap();
    // A row as long as a heap table takes is spilled to overflow pages; a longer one is refused.
    let (longest, long) = ("x".repeat(3000), "x".repeat(2000));
    w.insert(&t, &[Value::I64(1), Value::Str(&long)]).unwrap();
    w.insert(&t, &[Value::I64(2), Value::Str(&longest)]).unwrap();
    let too_long = Schema::new(vec![
        Column::new("k", ColumnType::I64),
        Column::new("note", ColumnType::VarChar { max_len: 5000 }),
    ])
    .unwrap()
    .with_primary_key(&["k"])
    .unwrap();
    let big = w.create_table_with("big", too_long, Storage::Clustered).unwrap();
    let e = w.insert(&big, &[Value::I64(1), Value::Str(&"y".repeat(4500))]).unwrap_err();
    assert!(matches!(e, Error::RowTooLarge { .. }), "{e}");
    // The refused insert changed nothing; the transaction goes on.
    w.commit().unwrap();
    let rx = db.begin_read().unwrap();
    assert_eq!((rx.row_count(&t).unwrap(), rx.row_count(&big).unwrap()), (2, 0));
    let pk = rx.primary_key(&t).unwrap().unwrap();
    let g = rx.get_by(&pk, &[Value::I64(2)]).unwrap().unwrap();
    assert_eq!(g.row().unwrap().get_named::<kind::Str>("note").unwrap(), longest);
    drop(g);
    drop(rx);
    let mut w = db.begin_write().unwrap();
    // An index whose key (its column, then the primary key) cannot fit a leaf.
    let e = w.create_index("t_note", &t, &["note"]).unwrap_err();
    assert!(matches!(e, Error::KeyTooLarge { .. }), "{e}");
    let e = w.drop_index("t_pkey").unwrap_err();
    assert!(matches!(e, Error::PrimaryKeyIndex { .. }), "{e}");
    w.drop_table("t").unwrap();
    w.commit().unwrap();
    assert!(db.check().unwrap().damage.is_empty());
}
