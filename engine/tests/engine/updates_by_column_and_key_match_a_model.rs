//! Goal: the calls that change rows by column name and by key — `update_columns`, `update_by`,
//! `delete_by`, `upsert` — do what a map of the table's rows says, keep every index right, and
//! leave the transaction usable when they fail before changing anything.
//! Random sequences of them, with calls that must fail (a unique violation, an unknown or
//! repeated column, a value of the wrong type, a key of the wrong arity, a non-unique index),
//! commits and aborts, run on a table with a unique index on a nullable key, a non-unique index
//! on a string, 4 KiB pages and 12 frames, on every compiled layer. After each step the table,
//! both indexes, `count_range` and `index_prefix` are compared with the model; after each commit
//! and at the end, after a reopen, `check` finds nothing wrong.

use std::collections::BTreeMap;
use std::ops::Bound;

use nvpage::{
    Column, ColumnType, Database, Error, Layer, ReadOps, RowId, Schema, Upserted, Value, WriteTxn,
    kind,
};
use proptest::prelude::*;

/// A row: `k` (the unique index's key; NULLs never collide), `qty`, and `name` (the non-unique
/// index's key, short names from few letters so that prefixes repeat, or long ones that move
/// the row when it grows).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Row {
    k: Option<i64>,
    qty: i64,
    name: String,
}

impl Row {
    fn values(&self) -> Vec<Value<'_>> {
        vec![self.k.into(), self.qty.into(), self.name.as_str().into()]
    }
}

fn schema() -> Schema {
    Schema::new(vec![
        Column::nullable("k", ColumnType::I64),
        Column::new("qty", ColumnType::I64),
        Column::new("name", ColumnType::VarChar { max_len: 300 }),
    ])
    .unwrap()
}

/// A change of one column, as `update_columns` and `update_by` take it.
#[derive(Clone, Debug)]
enum Set {
    K(Option<i64>),
    /// `qty`, given as an `i32` (an `I64` column takes it widened).
    Qty(i32),
    Name(String),
}

impl Set {
    fn pair(&self) -> (&str, Value<'_>) {
        match self {
            Set::K(k) => ("k", (*k).into()),
            Set::Qty(q) => ("qty", (*q).into()),
            Set::Name(n) => ("name", n.as_str().into()),
        }
    }

    fn apply(&self, r: &mut Row) {
        match self {
            Set::K(k) => r.k = *k,
            Set::Qty(q) => r.qty = i64::from(*q),
            Set::Name(n) => r.name = n.clone(),
        }
    }
}

/// A call that must fail before it changes anything, and how.
#[derive(Clone, Debug)]
enum Bad {
    UnknownColumn,
    RepeatedColumn,
    WrongType,
    KeyArity,
    NotUnique,
}

#[derive(Clone, Debug)]
enum Op {
    Upsert(Row),
    /// `update_columns` on the `n % live`-th row.
    UpdateColumns(usize, Vec<Set>),
    /// `update_by` the key `k`.
    UpdateBy(i64, Vec<Set>),
    DeleteBy(i64),
    Bad(usize, Bad),
    Commit,
    Abort,
    /// `count_range` over keys in `lo..=hi`, and `index_prefix` of names starting with `p`.
    Ranges(i64, i64, String),
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(prop::sample::select(vec!['a', 'b', 'c']), 0..4)
            .prop_map(|v| v.into_iter().collect()),
        1 => (0usize..300).prop_map(|n| "z".repeat(n)),
    ]
}

fn row() -> impl Strategy<Value = Row> {
    (prop::option::weighted(0.9, 0i64..40), -5i64..5, name()).prop_map(|(k, qty, name)| Row {
        k,
        qty,
        name,
    })
}

fn set() -> impl Strategy<Value = Set> {
    prop_oneof![
        1 => prop::option::weighted(0.9, 0i64..40).prop_map(Set::K),
        3 => (-5i32..5).prop_map(Set::Qty),
        2 => name().prop_map(Set::Name),
    ]
}

/// One to three changes, each of another column (a column named twice is its own failure).
fn sets() -> impl Strategy<Value = Vec<Set>> {
    prop::collection::vec(set(), 1..4).prop_map(|mut v| {
        let mut seen = Vec::new();
        v.retain(|s| {
            let c = s.pair().0.to_string();
            let fresh = !seen.contains(&c);
            seen.push(c);
            fresh
        });
        v
    })
}

fn op() -> impl Strategy<Value = Op> {
    let bad = prop::sample::select(vec![
        Bad::UnknownColumn,
        Bad::RepeatedColumn,
        Bad::WrongType,
        Bad::KeyArity,
        Bad::NotUnique,
    ]);
    prop_oneof![
        8 => row().prop_map(Op::Upsert),
        4 => (any::<usize>(), sets()).prop_map(|(n, s)| Op::UpdateColumns(n, s)),
        5 => (0i64..40, sets()).prop_map(|(k, s)| Op::UpdateBy(k, s)),
        3 => (0i64..40).prop_map(Op::DeleteBy),
        2 => (any::<usize>(), bad).prop_map(|(n, b)| Op::Bad(n, b)),
        1 => Just(Op::Commit),
        1 => Just(Op::Abort),
        2 => (0i64..40, 0i64..40, name()).prop_map(|(lo, hi, p)| Op::Ranges(lo, hi, p)),
    ]
}

type Rows = BTreeMap<RowId, Row>;

/// The live row holding key `k`, if one does.
fn holder(rows: &Rows, k: Option<i64>) -> Option<RowId> {
    k.and_then(|k| rows.iter().find(|(_, r)| r.k == Some(k)).map(|(id, _)| *id))
}

/// Whether `r` would give the unique index a key a row other than `except` holds.
fn taken(rows: &Rows, r: &Row, except: Option<RowId>) -> bool {
    holder(rows, r.k).is_some_and(|id| Some(id) != except)
}

/// The table read through a scan, both indexes walked in full and compared with `rows`.
fn verify(tx: &impl ReadOps, rows: &Rows, what: &str) {
    let t = tx.table("t").unwrap();
    let mut got = Rows::new();
    tx.for_each_row(&t, |r| {
        let row = Row {
            k: r.get_opt(t.col::<kind::I64>("k")?)?,
            qty: r.get_named::<kind::I64>("qty")?,
            name: r.get_named::<kind::Str>("name")?.to_string(),
        };
        got.insert(r.id(), row);
        Ok(())
    })
    .unwrap();
    assert_eq!(&got, rows, "{what}");
    for ix in ["t_k", "t_name"] {
        let ix = tx.index(ix).unwrap();
        let ids: Vec<RowId> = tx
            .index_range(&ix, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .ids()
            .map(Result::unwrap)
            .collect();
        let mut want: Vec<RowId> = rows.keys().copied().collect();
        let mut sorted = ids.clone();
        sorted.sort();
        want.sort();
        assert_eq!(sorted, want, "{what}: {}", ix.name());
    }
}

fn check_sound(db: &Database, rows: usize, what: &str) {
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{what}: {:?}", report.damage);
    for ix in &report.indexes {
        assert_eq!(ix.entries_found, rows as u64, "{what}: {}", ix.name);
    }
}

/// Applies `sets` to the model's row `id`, if the unique key stays free: `Ok(())` if the engine
/// must have done so, `Err(())` if it must have refused with a unique violation.
fn model_set(rows: &mut Rows, id: RowId, sets: &[Set]) -> Result<Row, ()> {
    let mut r = rows[&id].clone();
    for s in sets {
        s.apply(&mut r);
    }
    if taken(rows, &r, Some(id)) { Err(()) } else { Ok(r) }
}

fn run(layer: Layer, ops: &[Op]) {
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        Database::builder()
            .layer(layer)
            .page_size(4096)
            .pool_bytes(12 * 4096)
            .open(dir.path().join("db"))
            .unwrap()
    };
    let db = open();
    {
        let mut tx = db.begin_write().unwrap();
        let t = tx.create_table("t", schema()).unwrap();
        tx.create_unique_index("t_k", &t, &["k"]).unwrap();
        tx.create_index("t_name", &t, &["name"]).unwrap();
        tx.commit().unwrap();
    }
    let mut committed = Rows::new();
    let mut live = Rows::new();
    let mut tx: Option<WriteTxn<'_>> = None;
    for (step, op) in ops.iter().enumerate() {
        let what = format!("{layer:?}, step {step}: {op:?}");
        let w = tx.get_or_insert_with(|| db.begin_write().unwrap());
        let t = w.table("t").unwrap();
        let by_k = w.index("t_k").unwrap();
        let by_name = w.index("t_name").unwrap();
        match op {
            Op::Upsert(r) => {
                let got = w.upsert(&by_k, &r.values()).unwrap();
                match (holder(&live, r.k), got) {
                    (Some(old), Upserted::Updated(id)) => {
                        live.remove(&old);
                        live.insert(id, r.clone());
                    }
                    (None, Upserted::Inserted(id)) => {
                        live.insert(id, r.clone());
                    }
                    (h, got) => panic!("{what}: holder {h:?}, upsert {got:?}"),
                }
            }
            Op::UpdateColumns(n, sets) if !live.is_empty() => {
                let id = *live.keys().nth(n % live.len()).unwrap();
                let pairs: Vec<_> = sets.iter().map(Set::pair).collect();
                let got = w.update_columns(&t, id, &pairs);
                match model_set(&mut live, id, sets) {
                    Ok(r) => {
                        live.remove(&id);
                        live.insert(got.unwrap(), r);
                    }
                    Err(()) => {
                        assert!(matches!(got, Err(Error::UniqueViolation { .. })), "{what}")
                    }
                }
            }
            Op::UpdateBy(k, sets) => {
                let pairs: Vec<_> = sets.iter().map(Set::pair).collect();
                let got = w.update_by(&by_k, &[Value::I64(*k)], &pairs);
                match holder(&live, Some(*k)) {
                    None => assert_eq!(got.unwrap(), None, "{what}"),
                    Some(id) => match model_set(&mut live, id, sets) {
                        Ok(r) => {
                            live.remove(&id);
                            live.insert(got.unwrap().expect("a held key"), r);
                        }
                        Err(()) => {
                            assert!(matches!(got, Err(Error::UniqueViolation { .. })), "{what}")
                        }
                    },
                }
            }
            Op::DeleteBy(k) => {
                let gone = w.delete_by(&by_k, &[Value::I64(*k)]).unwrap();
                assert_eq!(gone, holder(&live, Some(*k)).is_some(), "{what}");
                if let Some(id) = holder(&live, Some(*k)) {
                    live.remove(&id);
                }
            }
            Op::Bad(n, bad) => {
                let id = live.keys().nth(n % live.len().max(1)).copied();
                let id = id.unwrap_or(RowId { page: 0, slot: 0 });
                let k = [Value::I64(*n as i64 % 40)];
                let got = match bad {
                    Bad::UnknownColumn => w.update_columns(&t, id, &[("nope", 1.into())]).map(drop),
                    Bad::RepeatedColumn => {
                        w.update_by(&by_k, &k, &[("qty", 1.into()), ("qty", 2.into())]).map(drop)
                    }
                    Bad::WrongType => {
                        w.upsert(&by_k, &[7i64.into(), "x".into(), "y".into()]).map(drop)
                    }
                    Bad::KeyArity => w.delete_by(&by_k, &[Value::I64(1), Value::I64(2)]).map(drop),
                    Bad::NotUnique => w.delete_by(&by_name, &["a".into()]).map(drop),
                };
                let ok = match bad {
                    Bad::UnknownColumn => matches!(got, Err(Error::UnknownColumn(_))),
                    Bad::RepeatedColumn => matches!(got, Err(Error::DuplicateColumn(_))),
                    Bad::WrongType => matches!(got, Err(Error::ValueDoesNotFit { .. })),
                    Bad::KeyArity => matches!(got, Err(Error::WrongArity { .. })),
                    Bad::NotUnique => matches!(got, Err(Error::NotUnique(_))),
                };
                assert!(ok, "{what}: {got:?}");
            }
            Op::UpdateColumns(..) => {}
            Op::Commit => {
                tx.take().unwrap().commit().unwrap();
                committed = live.clone();
                check_sound(&db, committed.len(), &what);
                verify(&db.begin_read().unwrap(), &committed, &what);
                continue;
            }
            Op::Abort => {
                tx.take().unwrap().abort().unwrap();
                live = committed.clone();
                continue;
            }
            Op::Ranges(lo, hi, p) => {
                let (lo_v, hi_v) = ([Value::I64(*lo)], [Value::I64(*hi)]);
                let counted = w
                    .count_range(&by_k, Bound::Included(&lo_v[..]), Bound::Included(&hi_v[..]))
                    .unwrap();
                let want = live.values().filter(|r| r.k.is_some_and(|k| (*lo..=*hi).contains(&k)));
                assert_eq!(counted, want.count() as u64, "{what}");
                let mut want: Vec<(String, RowId)> = live
                    .iter()
                    .filter(|(_, r)| r.name.starts_with(p.as_str()))
                    .map(|(id, r)| (r.name.clone(), *id))
                    .collect();
                want.sort();
                let fwd: Vec<(String, RowId)> = w
                    .index_prefix(&by_name, &[], p)
                    .unwrap()
                    .map(|g| {
                        let row = g.unwrap();
                        let row = row.row().unwrap();
                        (row.get_named::<kind::Str>("name").unwrap().to_string(), row.id())
                    })
                    .collect();
                assert_eq!(fwd, want, "{what}");
                let back: Vec<RowId> = w
                    .index_prefix(&by_name, &[], p)
                    .unwrap()
                    .ids()
                    .rev()
                    .map(Result::unwrap)
                    .collect();
                let want_back: Vec<RowId> = want.iter().rev().map(|(_, id)| *id).collect();
                assert_eq!(back, want_back, "{what}");
            }
        }
        verify(&*w, &live, &what);
    }
    if let Some(w) = tx.take() {
        w.commit().unwrap();
        committed = live;
    }
    drop(tx);
    drop(db);
    let db = open();
    check_sound(&db, committed.len(), "after reopen");
    verify(&db.begin_read().unwrap(), &committed, "after reopen");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn keyed_writes_answer_as_a_map(ops in prop::collection::vec(op(), 1..160)) {
        for layer in Layer::compiled() {
            run(layer, &ops);
        }
    }
}
