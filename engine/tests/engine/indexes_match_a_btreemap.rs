//! Goal: an index answers exactly what a sorted map of the table's rows answers.
//! Random sequences of inserts, updates (rows that grow and move), deletes, commits and aborts
//! run on a table with a unique index and a composite non-unique one over nullable columns,
//! with 4 KiB pages, long keys (trees several levels deep) and a pool of 12 frames (pages
//! stolen mid-transaction), on every compiled layer. After each step the model says what a
//! unique violation is, and range scans — both directions, both ends in turn (the front read
//! by folds that stop, or by the iterator), inclusive and exclusive bounds on whole keys and on
//! prefixes — are compared with the model's `BTreeMap`; after each commit and at the end, after
//! a reopen, `check` finds nothing wrong and counts every entry.

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};

use nvpage::{
    Column, ColumnType, Database, Error, Index, Layer, ReadOps, RowId, Schema, Value, WriteTxn,
};
use proptest::prelude::*;

/// A row: `a` and `b` (the composite index's key, both nullable), `c` (the unique index's key,
/// nullable: NULLs never collide) and padding that makes updates grow and move rows.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Row {
    a: Option<i32>,
    b: Option<String>,
    c: Option<i64>,
    pad: usize,
}

impl Row {
    fn values(&self) -> Vec<Value<'_>> {
        vec![
            self.a.map_or(Value::Null, Value::I32),
            self.b.as_deref().map_or(Value::Null, Value::Str),
            self.c.map_or(Value::Null, Value::I64),
            Value::Str(PAD.get(..self.pad).unwrap_or(PAD)),
        ]
    }
}

const PAD: &str = "................................................................................................................................................................................................................................................................................................................................................................................................................";

fn schema() -> Schema {
    Schema::new(vec![
        Column::nullable("a", ColumnType::I32),
        Column::nullable("b", ColumnType::VarChar { max_len: 300 }),
        Column::nullable("c", ColumnType::I64),
        Column::new("pad", ColumnType::VarChar { max_len: 400 }),
    ])
    .unwrap()
}

#[derive(Clone, Debug)]
enum Op {
    Insert(Row),
    /// Updates the `n % live`-th row.
    Update(usize, Row),
    Delete(usize),
    Commit,
    Abort,
    /// A scan of the composite index (`true`) or the unique one, with bounds of `k` columns.
    Scan {
        composite: bool,
        lo: Bnd,
        hi: Bnd,
        order: Order,
    },
}

#[derive(Clone, Debug)]
enum Bnd {
    Unbounded,
    In(Key),
    Ex(Key),
}

/// A bound's values: `(a, b)` prefixes for the composite index (`b` absent: a prefix), `c`
/// for the unique one.
#[derive(Clone, Debug)]
struct Key {
    a: Option<i32>,
    b: Option<Option<String>>,
    c: Option<i64>,
}

#[derive(Clone, Copy, Debug)]
enum Order {
    Forward,
    Backward,
    /// Front and back in turn.
    Both,
    /// Two rows from the front by a fold that then breaks (`IndexScan::fold_rows`), one from
    /// the back by the iterator, in turn; the rows read, not only their ids.
    Folded,
}

fn text() -> impl Strategy<Value = String> {
    // Few letters and long repeats: shared prefixes, equal keys, long keys.
    (prop::sample::select(vec!["a", "ab", "b", "ba", "c"]), 0usize..260)
        .prop_map(|(s, n)| s.repeat(1 + n / s.len()).chars().take(n).collect())
}

fn row() -> impl Strategy<Value = Row> {
    (
        prop::option::weighted(0.85, -3i32..4),
        prop::option::weighted(0.85, text()),
        prop::option::weighted(0.9, 0i64..60),
        0usize..400,
    )
        .prop_map(|(a, b, c, pad)| Row { a, b, c, pad })
}

fn key() -> impl Strategy<Value = Key> {
    (
        prop::option::weighted(0.9, -3i32..4),
        prop::option::weighted(0.5, prop::option::weighted(0.9, text())),
        prop::option::weighted(0.9, 0i64..60),
    )
        .prop_map(|(a, b, c)| Key { a, b, c })
}

fn bound() -> impl Strategy<Value = Bnd> {
    prop_oneof![
        1 => Just(Bnd::Unbounded),
        2 => key().prop_map(Bnd::In),
        2 => key().prop_map(Bnd::Ex),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => row().prop_map(Op::Insert),
        4 => (any::<usize>(), row()).prop_map(|(n, r)| Op::Update(n, r)),
        5 => any::<usize>().prop_map(Op::Delete),
        1 => Just(Op::Commit),
        1 => Just(Op::Abort),
        3 => (any::<bool>(), bound(), bound(), prop::sample::select(vec![Order::Forward, Order::Backward, Order::Both, Order::Folded]))
            .prop_map(|(composite, lo, hi, order)| Op::Scan { composite, lo, hi, order }),
    ]
}

/// A model key: the index's columns as comparable values (None first, as the index sorts).
type MKey = Vec<Option<Vec<u8>>>;

fn enc_i(v: i64) -> Vec<u8> {
    ((v as u64) ^ (1 << 63)).to_be_bytes().to_vec()
}

fn model_key(r: &Row, composite: bool) -> MKey {
    if composite {
        vec![r.a.map(|a| enc_i(a.into())), r.b.as_ref().map(|b| b.as_bytes().to_vec())]
    } else {
        vec![r.c.map(enc_i)]
    }
}

/// A bound's values as a model key prefix, and as values for the engine.
fn bound_key(k: &Key, composite: bool) -> (MKey, Vec<Value<'_>>) {
    let mut m = Vec::new();
    let mut v = Vec::new();
    if composite {
        m.push(k.a.map(|a| enc_i(a.into())));
        v.push(k.a.map_or(Value::Null, Value::I32));
        if let Some(b) = &k.b {
            m.push(b.as_ref().map(|b| b.as_bytes().to_vec()));
            v.push(b.as_deref().map_or(Value::Null, Value::Str));
        }
    } else {
        m.push(k.c.map(enc_i));
        v.push(k.c.map_or(Value::Null, Value::I64));
    }
    (m, v)
}

/// Whether `key`'s prefix of `p`'s length compares to `p` as `ok` allows.
fn cmp_prefix(key: &MKey, p: &MKey) -> std::cmp::Ordering {
    key[..p.len()].cmp(p)
}

/// The model's answer: row ids in index order.
fn model_scan(rows: &BTreeMap<RowId, Row>, composite: bool, lo: &Bnd, hi: &Bnd) -> Vec<RowId> {
    use std::cmp::Ordering::*;
    let mut hits: Vec<(MKey, RowId)> = rows
        .iter()
        .map(|(id, r)| (model_key(r, composite), *id))
        .filter(|(k, _)| match lo {
            Bnd::Unbounded => true,
            Bnd::In(b) => cmp_prefix(k, &bound_key(b, composite).0) != Less,
            Bnd::Ex(b) => cmp_prefix(k, &bound_key(b, composite).0) == Greater,
        })
        .filter(|(k, _)| match hi {
            Bnd::Unbounded => true,
            Bnd::In(b) => cmp_prefix(k, &bound_key(b, composite).0) != Greater,
            Bnd::Ex(b) => cmp_prefix(k, &bound_key(b, composite).0) == Less,
        })
        .collect();
    hits.sort();
    hits.into_iter().map(|(_, id)| id).collect()
}

fn engine_bound<'v>(b: &'v Bnd, vals: &'v Option<Vec<Value<'v>>>) -> Bound<&'v [Value<'v>]> {
    match (b, vals) {
        (Bnd::In(_), Some(v)) => Bound::Included(v),
        (Bnd::Ex(_), Some(v)) => Bound::Excluded(v),
        _ => Bound::Unbounded,
    }
}

fn scan(
    tx: &impl ReadOps,
    ix: &Index,
    composite: bool,
    lo: &Bnd,
    hi: &Bnd,
    order: Order,
) -> Vec<RowId> {
    let lv = match lo {
        Bnd::In(k) | Bnd::Ex(k) => Some(bound_key(k, composite).1),
        Bnd::Unbounded => None,
    };
    let hv = match hi {
        Bnd::In(k) | Bnd::Ex(k) => Some(bound_key(k, composite).1),
        Bnd::Unbounded => None,
    };
    let s = tx.index_range(ix, engine_bound(lo, &lv), engine_bound(hi, &hv)).unwrap();
    match order {
        Order::Forward => s.ids().map(Result::unwrap).collect(),
        Order::Backward => {
            let mut v: Vec<RowId> = s.ids().rev().map(Result::unwrap).collect();
            v.reverse();
            v
        }
        Order::Both => {
            let mut ids = s.ids();
            let (mut front, mut back) = (Vec::new(), Vec::new());
            loop {
                let Some(f) = ids.next() else { break };
                front.push(f.unwrap());
                let Some(b) = ids.next_back() else { break };
                back.push(b.unwrap());
            }
            back.reverse();
            front.extend(back);
            front
        }
        Order::Folded => {
            let (mut s, mut front, mut back) = (s, Vec::new(), Vec::new());
            loop {
                let n = s
                    .fold_rows(0, |n, row| {
                        front.push(row.id());
                        Ok(if n == 1 {
                            ControlFlow::Break(2)
                        } else {
                            ControlFlow::Continue(n + 1)
                        })
                    })
                    .unwrap();
                if n < 2 {
                    break;
                }
                let Some(b) = s.next_back() else { break };
                back.push(b.unwrap().row().unwrap().id());
            }
            back.reverse();
            front.extend(back);
            front
        }
    }
}

fn verify_all(tx: &impl ReadOps, ixs: &[Index; 2], rows: &BTreeMap<RowId, Row>, what: &str) {
    for (ix, composite) in [(&ixs[0], true), (&ixs[1], false)] {
        let want = model_scan(rows, composite, &Bnd::Unbounded, &Bnd::Unbounded);
        assert_eq!(
            scan(tx, ix, composite, &Bnd::Unbounded, &Bnd::Unbounded, Order::Forward),
            want,
            "{what}"
        );
        assert_eq!(tx.index_len(ix).unwrap(), rows.len() as u64, "{what}");
    }
}

fn check_sound(db: &Database, rows: usize, what: &str) {
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{what}: {:?}", report.damage);
    assert_eq!(report.indexes.len(), 2);
    for ix in &report.indexes {
        assert_eq!(ix.entries_found, rows as u64, "{what}: {}", ix.name);
    }
}

/// Whether another live row than `except` holds `r`'s unique key.
fn taken(live: &BTreeMap<RowId, Row>, r: &Row, except: Option<RowId>) -> bool {
    r.c.is_some() && live.iter().any(|(id, o)| o.c == r.c && Some(*id) != except)
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
    let mut committed: BTreeMap<RowId, Row> = BTreeMap::new();
    {
        let mut tx = db.begin_write().unwrap();
        let t = tx.create_table("t", schema()).unwrap();
        tx.create_index("t_ab", &t, &["a", "b"]).unwrap();
        tx.create_unique_index("t_c", &t, &["c"]).unwrap();
        tx.commit().unwrap();
    }
    let mut tx: Option<WriteTxn<'_>> = None;
    let mut live = committed.clone();
    for (step, op) in ops.iter().enumerate() {
        let what = format!("{layer:?}, step {step}: {op:?}");
        let w = tx.get_or_insert_with(|| db.begin_write().unwrap());
        let t = w.table("t").unwrap();
        let ixs = [w.index("t_ab").unwrap(), w.index("t_c").unwrap()];
        match op {
            Op::Insert(r) => {
                let got = w.insert(&t, &r.values());
                if taken(&live, r, None) {
                    assert!(matches!(got, Err(Error::UniqueViolation { .. })), "{what}: {got:?}");
                } else {
                    live.insert(got.unwrap(), r.clone());
                }
            }
            Op::Update(n, r) if !live.is_empty() => {
                let id = *live.keys().nth(n % live.len()).unwrap();
                let got = w.update(&t, id, &r.values());
                if taken(&live, r, Some(id)) {
                    assert!(matches!(got, Err(Error::UniqueViolation { .. })), "{what}: {got:?}");
                } else {
                    live.remove(&id);
                    live.insert(got.unwrap(), r.clone());
                }
            }
            Op::Delete(n) if !live.is_empty() => {
                let id = *live.keys().nth(n % live.len()).unwrap();
                w.delete(&t, id).unwrap();
                live.remove(&id);
            }
            Op::Update(..) | Op::Delete(_) => {}
            Op::Commit => {
                tx.take().unwrap().commit().unwrap();
                committed = live.clone();
                check_sound(&db, committed.len(), &what);
                let rx = db.begin_read().unwrap();
                let ixs = [rx.index("t_ab").unwrap(), rx.index("t_c").unwrap()];
                verify_all(&rx, &ixs, &committed, &what);
                continue;
            }
            Op::Abort => {
                tx.take().unwrap().abort().unwrap();
                live = committed.clone();
                continue;
            }
            Op::Scan { composite, lo, hi, order } => {
                let ix = if *composite { &ixs[0] } else { &ixs[1] };
                let want = model_scan(&live, *composite, lo, hi);
                assert_eq!(scan(&*w, ix, *composite, lo, hi, *order), want, "{what}");
                // Rows come back in place, each the row its entry names.
                for g in w.index_range(ix, Bound::Unbounded, Bound::Unbounded).unwrap() {
                    let g = g.unwrap();
                    let row = g.row().unwrap();
                    let c = row.value(2).unwrap();
                    assert_eq!(
                        live[&row.id()]
                            .c
                            .map(nvpage::OwnedValue::I64)
                            .unwrap_or(nvpage::OwnedValue::Null),
                        c
                    );
                }
            }
        }
        verify_all(&*w, &ixs, &live, &what);
    }
    if let Some(w) = tx.take() {
        w.commit().unwrap();
        committed = live;
    }
    drop(tx);
    drop(db);
    let db = open();
    check_sound(&db, committed.len(), "after reopen");
    let rx = db.begin_read().unwrap();
    let ixs = [rx.index("t_ab").unwrap(), rx.index("t_c").unwrap()];
    verify_all(&rx, &ixs, &committed, "after reopen");
    // A point lookup on the unique index finds each row by its key.
    for (id, r) in &committed {
        if let Some(c) = r.c {
            let g = rx.get_by(&ixs[1], &[Value::I64(c)]).unwrap().expect("a row with this key");
            assert_eq!(g.row().unwrap().id(), *id);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn indexes_answer_as_a_sorted_map(ops in prop::collection::vec(op(), 1..220)) {
        for layer in Layer::compiled() {
            run(layer, &ops);
        }
    }
}
