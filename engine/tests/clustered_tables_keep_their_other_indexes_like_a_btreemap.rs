//! Goal: a clustered table's indexes beside its primary key (a unique one over a nullable
//! column, a non-unique one over two columns) find exactly the rows a map of the table's rows by
//! key says, on every compiled layer, with 4 KiB pages and a pool of a few dozen frames (trees
//! several levels deep, leaves splitting and emptying). Random transactions of inserts, upserts
//! through either unique index, updates by either key (the primary key itself, and the indexed
//! columns, changed too), deletes by either key and refused writes, committed or rolled back,
//! are held to the map: after each write, the row it wrote is found through both indexes under
//! its values and a random code's row is the map's; after each transaction, point lookups,
//! lookups of a key that repeats, and range scans both ways through each index return the rows
//! they should, in key then primary key order; a write refused for a key another row holds
//! changes nothing. A snapshot taken before
//! each transaction still reads what it read; after each tenth commit and after a reopen,
//! `check` finds nothing wrong.
//!
//! Beside it: an index made over rows a clustered table holds finds them (and a unique one over
//! a repeated key is refused with nothing changed), and a unique violation through an index of
//! a clustered table leaves the transaction as it was.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use nvpage::{
    Column, ColumnType, Database, Error, Index, Layer, ReadOps, RowId, Schema, Storage, Upserted,
    Value, kind,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A row's columns but the primary key `k`: a group, a code (unique where not NULL) and a name
/// whose length varies.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Row {
    grp: i32,
    code: Option<i64>,
    name: String,
}

type Model = BTreeMap<i64, Row>;

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("grp", ColumnType::I32),
        Column::nullable("code", ColumnType::I64),
        Column::new("k", ColumnType::I64),
        Column::new("name", ColumnType::VarChar { max_len: 200 }),
    ])
    .unwrap()
    .with_primary_key(&["k"])
    .unwrap()
}

fn values(k: i64, r: &Row) -> Vec<Value<'_>> {
    vec![
        Value::I32(r.grp),
        r.code.map_or(Value::Null, Value::I64),
        Value::I64(k),
        Value::Str(&r.name),
    ]
}

fn random_row(rng: &mut StdRng) -> Row {
    let len =
        if rng.random_bool(0.2) { rng.random_range(60..180) } else { rng.random_range(0..20) };
    Row {
        grp: rng.random_range(0..6),
        code: rng.random_bool(0.85).then(|| rng.random_range(0..3000)),
        name: (0..len).map(|_| char::from(rng.random_range(b'a'..=b'z'))).collect(),
    }
}

fn read_row(row: &nvpage::RowRef<'_>) -> (i64, Row) {
    assert_eq!(row.id(), RowId::KEYED);
    let code =
        if row.is_null(1) { None } else { Some(row.get_named::<kind::I64>("code").unwrap()) };
    let r = Row {
        grp: row.get_named::<kind::I32>("grp").unwrap(),
        code,
        name: row.get_named::<kind::Str>("name").unwrap().to_owned(),
    };
    (row.get_named::<kind::I64>("k").unwrap(), r)
}

/// The key in the model whose row has code `code`, if one has.
fn by_code(model: &Model, code: i64) -> Option<i64> {
    model.iter().find(|(_, r)| r.code == Some(code)).map(|(k, _)| *k)
}

/// Holds what `rx` reads through the table's other indexes to `model`.
fn compare(rx: &impl ReadOps, model: &Model, rng: &mut StdRng, what: &str) {
    let t = rx.table("t").unwrap();
    assert_eq!(rx.row_count(&t).unwrap(), model.len() as u64, "{what}: row count");
    let (code, grp) = (rx.index("t_code").unwrap(), rx.index("t_grp_name").unwrap());
    assert_eq!(rx.index_len(&code).unwrap(), model.len() as u64, "{what}: entries");
    assert_eq!(rx.index_len(&grp).unwrap(), model.len() as u64, "{what}: entries");
    // Every row of a group, through the non-unique index, both ways: in name then key order.
    for g in 0..6 {
        let mut want: Vec<(String, i64)> =
            model.iter().filter(|(_, r)| r.grp == g).map(|(k, r)| (r.name.clone(), *k)).collect();
        want.sort();
        let key = [Value::I32(g)];
        let got: Vec<(String, i64)> = rx
            .lookup(&grp, &key)
            .unwrap()
            .map(|row| {
                let (k, r) = read_row(&row.unwrap().row().unwrap());
                assert_eq!(model.get(&k), Some(&r), "{what}: the row of {k}");
                (r.name, k)
            })
            .collect();
        assert_eq!(got, want, "{what}: group {g}");
        let back: Vec<i64> = rx
            .lookup(&grp, &key)
            .unwrap()
            .rev()
            .map(|row| read_row(&row.unwrap().row().unwrap()).0)
            .collect();
        assert_eq!(
            back,
            want.iter().rev().map(|w| w.1).collect::<Vec<_>>(),
            "{what}: group {g} backwards"
        );
        let ids: Vec<RowId> = rx.lookup(&grp, &key).unwrap().ids().map(|id| id.unwrap()).collect();
        assert_eq!(ids, vec![RowId::KEYED; want.len()], "{what}: group {g}'s ids");
    }
    // Point lookups by code, through the unique index and `get_by`.
    for _ in 0..20 {
        let c = rng.random_range(0..3000);
        let want = by_code(model, c).map(|k| (k, model[&k].clone()));
        let got = rx.get_by(&code, &[Value::I64(c)]).unwrap().map(|g| read_row(&g.row().unwrap()));
        assert_eq!(got, want, "{what}: get_by code {c}");
        let looked: Vec<(i64, Row)> = rx
            .lookup(&code, &[Value::I64(c)])
            .unwrap()
            .map(|g| read_row(&g.unwrap().row().unwrap()))
            .collect();
        assert_eq!(looked, want.into_iter().collect::<Vec<_>>(), "{what}: lookup code {c}");
    }
    // Ranges of codes, both ways.
    for _ in 0..5 {
        let (a, b) = (rng.random_range(0..3000), rng.random_range(0..3000));
        let (lo, hi) = (a.min(b), a.max(b));
        let mut want: Vec<(i64, i64)> = model
            .iter()
            .filter_map(|(k, r)| r.code.filter(|c| (lo..hi).contains(c)).map(|c| (c, *k)))
            .collect();
        want.sort();
        let (lo_v, hi_v) = ([Value::I64(lo)], [Value::I64(hi)]);
        let range = || {
            rx.index_range(&code, Bound::Included(&lo_v[..]), Bound::Excluded(&hi_v[..])).unwrap()
        };
        let code_and_key = |g: nvpage::Result<nvpage::RowGuard<'_>>| {
            let (k, r) = read_row(&g.unwrap().row().unwrap());
            (r.code.unwrap(), k)
        };
        let got: Vec<(i64, i64)> = range().map(code_and_key).collect();
        assert_eq!(got, want, "{what}: codes [{lo}, {hi})");
        let back: Vec<(i64, i64)> = range().rev().map(code_and_key).collect();
        want.reverse();
        assert_eq!(back, want, "{what}: codes [{lo}, {hi}) backwards");
        let counted =
            rx.count_range(&code, Bound::Included(&lo_v[..]), Bound::Excluded(&hi_v[..])).unwrap();
        assert_eq!(counted, want.len() as u64, "{what}: count of codes [{lo}, {hi})");
    }
}

/// After each write: the row with key `k` (if the model has one) is found through both indexes
/// under its values, and a random code's row is the model's.
fn step_check(
    w: &nvpage::WriteTxn<'_>,
    code: &Index,
    grp_name: &Index,
    model: &Model,
    k: i64,
    rng: &mut StdRng,
    what: &str,
) {
    if let Some(r) = model.get(&k) {
        let key = [Value::I32(r.grp), Value::Str(&r.name)];
        let found: Vec<i64> = w
            .lookup(grp_name, &key)
            .unwrap()
            .map(|g| read_row(&g.unwrap().row().unwrap()).0)
            .collect();
        assert!(found.contains(&k), "{what}: {k} under its group and name: {found:?}");
        if let Some(c) = r.code {
            let g = w.get_by(code, &[Value::I64(c)]).unwrap().map(|g| read_row(&g.row().unwrap()));
            assert_eq!(g, Some((k, r.clone())), "{what}: {k} by its code");
        }
    }
    let c = rng.random_range(0..3000);
    let g = w.get_by(code, &[Value::I64(c)]).unwrap().map(|g| read_row(&g.row().unwrap()).0);
    assert_eq!(g, by_code(model, c), "{what}: code {c}");
}

/// One random write through `w`, kept in `next` where it succeeds (a refusal must be for a key
/// the model says another row holds); returns the primary key it wrote or looked for.
fn random_write(
    w: &mut nvpage::WriteTxn<'_>,
    pk: &Index,
    code: &Index,
    next: &mut Model,
    rng: &mut StdRng,
) -> i64 {
    let t = w.table("t").unwrap();
    let k =
        if rng.random_bool(0.9) { rng.random_range(0..1500) } else { rng.random_range(0..20_000) };
    let row = random_row(rng);
    // Whether `row`'s code is held by a row other than the one with key `except`.
    let code_taken = |m: &Model, row: &Row, except: Option<i64>| {
        row.code.is_some_and(|c| by_code(m, c).is_some_and(|holder| Some(holder) != except))
    };
    match rng.random_range(0..12) {
        0..=3 => {
            let r = w.insert(&t, &values(k, &row));
            if next.contains_key(&k) || code_taken(next, &row, None) {
                assert!(matches!(r, Err(Error::UniqueViolation { .. })), "{r:?}");
            } else {
                assert_eq!(r.unwrap(), RowId::KEYED);
                next.insert(k, row);
            }
        }
        4 => {
            // By primary key: the row with key k is replaced, its code checked.
            let r = w.upsert(pk, &values(k, &row));
            if code_taken(next, &row, Some(k)) {
                assert!(matches!(r, Err(Error::UniqueViolation { .. })), "{r:?}");
            } else {
                let was = next.insert(k, row).is_some();
                let want = if was {
                    Upserted::Updated(RowId::KEYED)
                } else {
                    Upserted::Inserted(RowId::KEYED)
                };
                assert_eq!(r.unwrap(), want);
            }
        }
        5 => {
            // By code: the row that has the code is replaced (moved, where k is another key),
            // else a row is inserted; a NULL code always inserts.
            let r = w.upsert(code, &values(k, &row));
            let holder = row.code.and_then(|c| by_code(next, c));
            let pk_taken = next.contains_key(&k) && holder != Some(k);
            if pk_taken {
                assert!(matches!(r, Err(Error::UniqueViolation { .. })), "{r:?}");
            } else {
                if let Some(h) = holder {
                    next.remove(&h);
                }
                next.insert(k, row);
                let want = if holder.is_some() {
                    Upserted::Updated(RowId::KEYED)
                } else {
                    Upserted::Inserted(RowId::KEYED)
                };
                assert_eq!(r.unwrap(), want);
            }
        }
        6..=7 => {
            // The indexed columns change, by primary key.
            let set = [
                ("grp", Value::I32(row.grp)),
                ("code", row.code.map_or(Value::Null, Value::I64)),
                ("name", Value::Str(&row.name)),
            ];
            let r = w.update_by(pk, &[Value::I64(k)], &set);
            match next.get(&k) {
                None => assert_eq!(r.unwrap(), None),
                Some(_) if code_taken(next, &row, Some(k)) => {
                    assert!(matches!(r, Err(Error::UniqueViolation { .. })), "{r:?}")
                }
                Some(_) => {
                    assert_eq!(r.unwrap(), Some(RowId::KEYED));
                    next.insert(k, row);
                }
            }
        }
        8 => {
            // The primary key changes, found by code: the row moves, its entries with it.
            let c = rng.random_range(0..3000);
            let r = w.update_by(code, &[Value::I64(c)], &[("k", Value::I64(k))]);
            match by_code(next, c) {
                None => assert_eq!(r.unwrap(), None),
                Some(h) if h != k && next.contains_key(&k) => {
                    assert!(matches!(r, Err(Error::UniqueViolation { .. })), "{r:?}")
                }
                Some(h) => {
                    assert_eq!(r.unwrap(), Some(RowId::KEYED));
                    let moved = next.remove(&h).unwrap();
                    next.insert(k, moved);
                }
            }
        }
        9 => {
            let r = w.delete_by(pk, &[Value::I64(k)]).unwrap();
            assert_eq!(r, next.remove(&k).is_some());
        }
        _ => {
            let c = rng.random_range(0..3000);
            let r = w.delete_by(code, &[Value::I64(c)]).unwrap();
            let holder = by_code(next, c);
            assert_eq!(r, holder.is_some());
            if let Some(h) = holder {
                next.remove(&h);
            }
        }
    }
    k
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
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    w.create_unique_index("t_code", &t, &["code"]).unwrap();
    w.create_index("t_grp_name", &t, &["grp", "name"]).unwrap();
    w.commit().unwrap();
    for txn in 0..30 {
        let before = (db.snapshot().unwrap(), model.clone());
        let mut next = model.clone();
        let mut w = db.begin_write().unwrap();
        let t = w.table("t").unwrap();
        let pk = w.primary_key(&t).unwrap().unwrap();
        let code = w.index("t_code").unwrap();
        if txn % 10 == 5 {
            // A load of ascending keys: the table's tree and both indexes split.
            let base = 5_000 + 2_000 * i64::from(txn / 10);
            for k in base..base + 1_500 {
                if next.contains_key(&k) {
                    continue;
                }
                let mut row = random_row(&mut rng);
                row.code = None;
                w.insert(&t, &values(k, &row)).unwrap();
                next.insert(k, row);
            }
        }
        let grp_name = w.index("t_grp_name").unwrap();
        for step in 0..rng.random_range(1..150) {
            let k = random_write(&mut w, &pk, &code, &mut next, &mut rng);
            let what = format!("{layer} seed {seed} txn {txn} step {step}");
            step_check(&w, &code, &grp_name, &next, k, &mut rng, &what);
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
    for name in ["t_code", "t_grp_name"] {
        let x = report.indexes.iter().find(|x| x.name == name).unwrap();
        assert_eq!(x.entries_found, model.len() as u64, "{name}");
        assert!(x.depth >= 2, "{layer} seed {seed}: {name} is {} levels deep", x.depth);
    }
}

#[test]
fn clustered_tables_keep_their_other_indexes_like_a_btreemap_on_every_layer() {
    for layer in Layer::compiled() {
        for seed in 0..2 {
            run(layer, seed);
        }
    }
}

#[test]
fn an_index_made_over_a_clustered_tables_rows_finds_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Database::builder().page_size(4096).open(dir.path().join("db")).unwrap());
    let mut w = db.begin_write().unwrap();
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    let mut model = Model::new();
    for k in (0..3000).rev() {
        let row = Row {
            grp: (k % 7) as i32,
            code: (k % 5 != 0).then_some(k * 2),
            name: format!("n{}", k % 13),
        };
        w.insert(&t, &values(k, &row)).unwrap();
        model.insert(k, row);
    }
    w.commit().unwrap();
    // Two rows with one code: the unique index is refused, nothing changed.
    let mut w = db.begin_write().unwrap();
    w.update_by(&w.primary_key(&t).unwrap().unwrap(), &[Value::I64(7)], &[("code", Value::I64(2))])
        .unwrap();
    let e = w.create_unique_index("t_code", &t, &["code"]).unwrap_err();
    assert!(matches!(&e, Error::UniqueViolation { index, .. } if index == "t_code"), "{e}");
    assert!(matches!(w.index("t_code"), Err(Error::UnknownIndex(_))));
    w.abort().unwrap();
    let mut w = db.begin_write().unwrap();
    w.create_unique_index("t_code", &t, &["code"]).unwrap();
    w.create_index("t_grp_name", &t, &["grp", "name"]).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    compare(&w, &model, &mut rng, "created, in the writer");
    w.commit().unwrap();
    compare(&db.begin_read().unwrap(), &model, &mut rng, "created, committed");
    let report = db.check().unwrap();
    assert!(report.damage.is_empty(), "{:?}", report.damage);
    // Dropped again, in a transaction rolled back and then one committed.
    let snapshot = db.snapshot().unwrap();
    let mut w = db.begin_write().unwrap();
    w.drop_index("t_code").unwrap();
    w.abort().unwrap();
    compare(&db.begin_read().unwrap(), &model, &mut rng, "a drop rolled back");
    let mut w = db.begin_write().unwrap();
    w.drop_index("t_code").unwrap();
    w.drop_index("t_grp_name").unwrap();
    w.commit().unwrap();
    compare(&snapshot, &model, &mut rng, "a snapshot from before the drop");
    drop(snapshot);
    assert!(db.check().unwrap().damage.is_empty());
}

#[test]
fn a_unique_violation_through_an_index_of_a_clustered_table_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder().page_size(4096).open(dir.path().join("db")).unwrap();
    let mut w = db.begin_write().unwrap();
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    let code = w.create_unique_index("t_code", &t, &["code"]).unwrap();
    w.create_index("t_grp_name", &t, &["grp", "name"]).unwrap();
    let pk = w.primary_key(&t).unwrap().unwrap();
    let mut model = Model::new();
    for k in 0..400 {
        let row = Row { grp: (k % 3) as i32, code: Some(k * 10), name: format!("row {k}") };
        w.insert(&t, &values(k, &row)).unwrap();
        model.insert(k, row);
    }
    let mut rng = StdRng::seed_from_u64(1);
    let taken = Row { grp: 1, code: Some(50), name: "x".into() };
    let violation = |r: nvpage::Result<_>| {
        assert!(
            matches!(&r, Err(Error::UniqueViolation { index, .. }) if index == "t_code"),
            "{:?}",
            r.map(|_| ())
        );
    };
    // An insert, an update by primary key, a move of the primary key onto a free key with a
    // taken code, an upsert by primary key and one by code onto another row's key.
    violation(w.insert(&t, &values(1000, &taken)).map(drop));
    violation(w.update_by(&pk, &[Value::I64(3)], &[("code", Value::I64(50))]).map(drop));
    violation(
        w.update_by(&pk, &[Value::I64(3)], &[("k", Value::I64(2000)), ("code", Value::I64(60))])
            .map(drop),
    );
    violation(w.upsert(&pk, &values(3, &taken)).map(drop));
    compare(&w, &model, &mut rng, "after the refusals");
    // The transaction goes on, and a NULL code never collides.
    let free = Row { grp: 2, code: None, name: "free".into() };
    w.insert(&t, &values(1000, &free)).unwrap();
    w.insert(&t, &values(1001, &free)).unwrap();
    model.insert(1000, free.clone());
    model.insert(1001, free);
    // A row keeps its own code as it changes otherwise.
    w.update_by(&code, &[Value::I64(50)], &[("name", Value::Str("renamed"))]).unwrap();
    model.get_mut(&5).unwrap().name = "renamed".into();
    compare(&w, &model, &mut rng, "after the writes");
    w.commit().unwrap();
    compare(&db.begin_read().unwrap(), &model, &mut rng, "committed");
    assert!(db.check().unwrap().damage.is_empty());
}
