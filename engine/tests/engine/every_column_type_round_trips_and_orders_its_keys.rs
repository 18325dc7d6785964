//! Goal: the column types `Bool`, `I16`, `F64`, `Timestamp` and `Binary` store every value as
//! given — the extremes, NaN, −0.0, empty and zero bytes — read back the same through every
//! getter, and index in their order: NULLs first, `false < true`, integers and timestamps by
//! value, floats by IEEE 754's total order (−NaN < −∞ < … < −0.0 < +0.0 < … < +∞ < NaN), bytes
//! lexicographically (a prefix first). On every layer, before and after a reopen, with `check`
//! finding nothing wrong.

use std::cmp::Ordering;

use nvpage::{
    Column, ColumnType, Database, Error, Layer, OwnedValue, ReadOps, Schema, Timestamp, Value, kind,
};

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("id", ColumnType::I64),
        Column::nullable("bo", ColumnType::Bool),
        Column::nullable("sm", ColumnType::I16),
        Column::nullable("fl", ColumnType::F64),
        Column::nullable("ts", ColumnType::Timestamp),
        Column::nullable("bi", ColumnType::Binary { max_len: 40 }),
    ])
    .unwrap()
}

const COLUMNS: [&str; 5] = ["bo", "sm", "fl", "ts", "bi"];

/// The values of each new column's rows, in no particular order.
fn samples() -> [Vec<OwnedValue>; 5] {
    let floats = [
        f64::NAN,
        -f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        f64::from_bits(1),
        -f64::from_bits(1),
        0.0,
        -0.0,
        1.5,
        -1.5,
        std::f64::consts::PI,
    ];
    let bytes: [&[u8]; 8] =
        [&[], &[0], &[0, 0], &[0, 1], &[1], &[0xff], &[0xff; 40], &[0x80, 0, 0xff, 0]];
    [
        [true, false].map(OwnedValue::Bool).to_vec(),
        [i16::MAX, i16::MIN, -1, 0, 1, 300].map(OwnedValue::I16).to_vec(),
        floats.map(OwnedValue::F64).to_vec(),
        [i64::MAX, i64::MIN, -1, 0, 1, 1_700_000_000_000_000]
            .map(|t| OwnedValue::Timestamp(Timestamp(t)))
            .to_vec(),
        bytes.map(|b| OwnedValue::Bytes(b.to_vec())).to_vec(),
    ]
}

/// The order an index keeps: NULL first, then each type's own.
fn order(a: &OwnedValue, b: &OwnedValue) -> Ordering {
    use OwnedValue as V;
    match (a, b) {
        (V::Null, V::Null) => Ordering::Equal,
        (V::Null, _) => Ordering::Less,
        (_, V::Null) => Ordering::Greater,
        (V::Bool(x), V::Bool(y)) => x.cmp(y),
        (V::I16(x), V::I16(y)) => x.cmp(y),
        (V::F64(x), V::F64(y)) => x.total_cmp(y),
        (V::Timestamp(x), V::Timestamp(y)) => x.cmp(y),
        (V::Bytes(x), V::Bytes(y)) => x.cmp(y),
        _ => panic!("values of two types: {a:?}, {b:?}"),
    }
}

/// Reads column `c` of every row in the order of its index.
fn by_index(rx: &impl ReadOps, c: &str) -> Vec<OwnedValue> {
    let ix = rx.index(&format!("t_{c}")).unwrap();
    let t = rx.table("t").unwrap();
    let i = t.schema().index_of(c).unwrap();
    rx.index_range(&ix, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
        .unwrap()
        .map(|g| g.unwrap().row().unwrap().value(i).unwrap())
        .collect()
}

fn verify(db: &Database, what: &str) {
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{what}: {:?}", report.damage);
    let rx = db.begin_read().unwrap();
    let t = rx.table("t").unwrap();
    for (c, mut want) in COLUMNS.into_iter().zip(samples()) {
        // Every row holds NULL in the columns it does not sample.
        let rows = rx.row_count(&t).unwrap() as usize;
        want.extend(std::iter::repeat_n(OwnedValue::Null, rows - want.len()));
        want.sort_by(order);
        assert_eq!(by_index(&rx, c), want, "{what}: the index on {c}");
    }
    // The typed getters read what `value` reads.
    let (bo, sm, fl) = (
        t.col::<kind::Bool>("bo").unwrap(),
        t.col::<kind::I16>("sm").unwrap(),
        t.col::<kind::F64>("fl").unwrap(),
    );
    let (ts, bi) = (t.col::<kind::Timestamp>("ts").unwrap(), t.col::<kind::Bytes>("bi").unwrap());
    rx.for_each_row(&t, |r| {
        let typed = [
            r.get_opt(bo)?.map(OwnedValue::Bool),
            r.get_opt(sm)?.map(OwnedValue::I16),
            r.get_opt(fl)?.map(OwnedValue::F64),
            r.get_opt(ts)?.map(OwnedValue::Timestamp),
            r.get_opt(bi)?.map(|b| OwnedValue::Bytes(b.to_vec())),
        ];
        for (i, v) in typed.into_iter().enumerate() {
            assert_eq!(v.unwrap_or(OwnedValue::Null), r.value(i + 1)?, "{what}: column {}", i + 1);
        }
        Ok(())
    })
    .unwrap();
}

#[test]
fn new_types_round_trip_and_index_in_their_order() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let open = || Database::builder().layer(layer).open(dir.path().join("db")).unwrap();
        let db = open();
        let mut tx = db.begin_write().unwrap();
        let t = tx.create_table("t", schema()).unwrap();
        // Half the indexes exist before the rows (built entry by entry), half after (bulk).
        for c in &COLUMNS[..2] {
            tx.create_index(&format!("t_{c}"), &t, &[c]).unwrap();
        }
        let mut id = 0i64;
        for (col, values) in samples().iter().enumerate() {
            for v in values {
                let mut row = vec![
                    Value::I64(id),
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    Value::Null,
                ];
                row[col + 1] = v.as_value();
                tx.insert(&t, &row).unwrap();
                id += 1;
            }
        }
        tx.insert(
            &t,
            &[Value::I64(id), Value::Null, Value::Null, Value::Null, Value::Null, Value::Null],
        )
        .unwrap();
        for c in &COLUMNS[2..] {
            tx.create_index(&format!("t_{c}"), &t, &[c]).unwrap();
        }
        tx.commit().unwrap();
        verify(&db, &format!("{layer}"));
        drop(db);
        verify(&open(), &format!("{layer}, reopened"));
    }
}

#[test]
fn values_convert_where_nothing_is_lost_and_nowhere_else() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let mut tx = db.begin_write().unwrap();
    let t = tx
        .create_table(
            "t",
            Schema::new(vec![
                Column::new("i", ColumnType::I32),
                Column::new("l", ColumnType::I64),
                Column::new("d", ColumnType::Decimal { scale: 2 }),
                Column::new("s", ColumnType::VarChar { max_len: 10 }),
                Column::new("b", ColumnType::Binary { max_len: 10 }),
            ])
            .unwrap(),
        )
        .unwrap();
    // An i16 widens into every integer and decimal column; UTF-8 bytes are a string; a string
    // is bytes.
    let id = tx
        .insert(
            &t,
            &[
                (-7i16).into(),
                (-7i16).into(),
                (-7i16).into(),
                (&b"caf\xc3\xa9"[..]).into(),
                "hi".into(),
            ],
        )
        .unwrap();
    let g = tx.get(&t, id).unwrap();
    let r = g.row().unwrap();
    assert_eq!(r.get_named::<kind::I32>("i").unwrap(), -7);
    assert_eq!(r.get_named::<kind::I64>("l").unwrap(), -7);
    assert_eq!(r.get_named::<kind::Decimal>("d").unwrap().to_string(), "-7.00");
    assert_eq!(r.get_named::<kind::Str>("s").unwrap(), "café");
    assert_eq!(r.get_named::<kind::Bytes>("b").unwrap(), b"hi");
    drop(g);
    // Bytes that are not UTF-8 are no string: refused, naming the column.
    let bad = [1.into(), 1i64.into(), 1.into(), (&b"\xff"[..]).into(), "x".into()];
    match tx.insert(&t, &bad) {
        Err(Error::ValueDoesNotFit { column, reason }) => {
            assert_eq!(column, "s");
            assert!(reason.contains("not UTF-8"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // Nothing narrows: an i64 into an i32 column, an f64 into an integer one, a bool anywhere
    // but a bool column.
    for (i, v) in [(0, Value::I64(1)), (1, Value::F64(1.0)), (2, Value::Bool(true))] {
        let mut row = vec![1.into(), 1i64.into(), 1.into(), "s".into(), "b".into()];
        row[i] = v;
        assert!(matches!(tx.insert(&t, &row), Err(Error::ValueDoesNotFit { .. })), "{i}");
    }
    // The refusals changed nothing: the transaction goes on and commits the one row.
    tx.commit().unwrap();
    assert_eq!(db.begin_read().unwrap().row_count(&t).unwrap(), 1);
}

#[test]
fn timestamps_show_as_utc() {
    assert_eq!(Timestamp(0).to_string(), "1970-01-01 00:00:00");
    assert_eq!(Timestamp(-1).to_string(), "1969-12-31 23:59:59.999999");
    assert_eq!(Timestamp(1_700_000_000_123_456).to_string(), "2023-11-14 22:13:20.123456");
    let d = nvpage::Date::from_ymd(2024, 2, 29).unwrap();
    let t = Timestamp::from_date(d, 3_600_000_000).unwrap();
    assert_eq!(t.to_string(), "2024-02-29 01:00:00");
    assert_eq!(t.date_and_micros(), (d, 3_600_000_000));
    for t in [i64::MIN, i64::MAX] {
        // The ends of the range show, and map back.
        let (d, us) = Timestamp(t).date_and_micros();
        assert_eq!(Timestamp::from_date(d, us), Some(Timestamp(t)));
    }
}

/// Random values of each new type, inserted in random order (some NULL), come back from an
/// index over all five columns in the model's order: the key compares column by column.
fn any_value(col: usize) -> proptest::prelude::BoxedStrategy<OwnedValue> {
    use proptest::prelude::*;
    let value = match col {
        0 => any::<bool>().prop_map(OwnedValue::Bool).boxed(),
        1 => any::<i16>().prop_map(OwnedValue::I16).boxed(),
        // Every bit pattern: NaNs of both signs and any payload, subnormals, ±0.
        2 => any::<u64>().prop_map(|b| OwnedValue::F64(f64::from_bits(b))).boxed(),
        3 => any::<i64>().prop_map(|t| OwnedValue::Timestamp(Timestamp(t))).boxed(),
        _ => proptest::collection::vec(prop_oneof![Just(0u8), Just(0xff), any::<u8>()], 0..6)
            .prop_map(OwnedValue::Bytes)
            .boxed(),
    };
    prop_oneof![1 => Just(OwnedValue::Null), 6 => value].boxed()
}

fn any_row() -> impl proptest::strategy::Strategy<Value = Vec<OwnedValue>> {
    (any_value(0), any_value(1), any_value(2), any_value(3), any_value(4))
        .prop_map(|(a, b, c, d, e)| vec![a, b, c, d, e])
}

use proptest::strategy::Strategy as _;

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

    #[test]
    fn a_composite_key_of_the_new_types_orders_as_its_values(
        rows in proptest::collection::vec(any_row(), 1..60)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder().page_size(4096).open(dir.path().join("db")).unwrap();
        let mut tx = db.begin_write().unwrap();
        let t = tx.create_table("t", schema()).unwrap();
        let ix = tx.create_index("t_all", &t, &COLUMNS).unwrap();
        for (id, r) in rows.iter().enumerate() {
            let mut values = vec![Value::I64(id as i64)];
            values.extend(r.iter().map(OwnedValue::as_value));
            tx.insert(&t, &values).unwrap();
        }
        let mut want: Vec<(Vec<OwnedValue>, usize)> =
            rows.iter().cloned().enumerate().map(|(i, r)| (r, i)).collect();
        // Equal keys order by row id, which follows insertion here (one page or a few, in order).
        want.sort_by(|(a, i), (b, j)| {
            a.iter().zip(b).map(|(x, y)| order(x, y)).find(|o| o.is_ne()).unwrap_or(Ordering::Equal).then(i.cmp(j))
        });
        let got: Vec<usize> = tx
            .index_range(&ix, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
            .unwrap()
            .map(|g| g.unwrap().row().unwrap().get_named::<kind::I64>("id").unwrap() as usize)
            .collect();
        let want: Vec<usize> = want.into_iter().map(|(_, i)| i).collect();
        proptest::prop_assert_eq!(got, want);
    }
}
