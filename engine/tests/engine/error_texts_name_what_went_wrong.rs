//! Goal: every refusal of bad input reads as a user would write the input, and names what it
//! is about: a value that does not fit says the value as written ('one', 12.345, NULL), what kind
//! it is, the column and the column's type; counts are singular or plural as they are; an index
//! whose keys are too long names the index, its columns and the limit; a type out of range gives
//! the limit; a database that needs recovery names its directory; a call refused because the
//! thread holds a transaction names that call; a duplicate key shows its values; names of
//! tables, indexes and columns appear as they were given. Each text is
//! compared whole where it is short, so that a Rust `Debug` form (`Str("one")`) cannot creep back.

use std::path::Path;

use nvpage::{
    Column, ColumnType, Database, Decimal, Error, Layer, ReadOps, Schema, Value, WriteTxn,
};

fn open(path: &Path) -> Database {
    Database::builder().layer(Layer::compiled()[0]).pool_bytes(64 << 10).open(path).unwrap()
}

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("id", ColumnType::I64),
        Column::new("qty", ColumnType::I64),
        Column::new("price", ColumnType::Decimal { scale: 2 }),
        Column::new("code", ColumnType::Char { len: 4 }),
        Column::nullable("note", ColumnType::VarChar { max_len: 20 }),
    ])
    .unwrap()
}

/// A valid row of [`schema`], with value `i` of it replaced by `v`.
fn row_with<'a>(i: usize, v: Value<'a>) -> Vec<Value<'a>> {
    let mut row = vec![
        Value::I64(1),
        Value::I64(2),
        Value::Decimal(Decimal::new(1250, 2)),
        Value::Str("ab"),
        Value::Null,
    ];
    row[i] = v;
    row
}

/// The message of the error `r` holds.
fn text<T>(r: nvpage::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

fn insert_text(tx: &mut WriteTxn<'_>, i: usize, v: Value<'_>) -> String {
    let t = tx.table("t").unwrap();
    text(tx.insert(&t, &row_with(i, v)))
}

#[test]
fn values_that_do_not_fit_are_shown_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"));
    let mut tx = db.begin_write().unwrap();
    let t = tx.create_table("t", schema()).unwrap();
    let by_qty = tx.create_index("by_qty", &t, &["qty"]).unwrap();

    let cases = [
        (1, Value::Str("one"), "value does not fit: 'one' (a string) for column qty (i64)"),
        (0, Value::F64(7.5), "value does not fit: 7.5 (an f64) for column id (i64)"),
        (
            3,
            Value::Bytes(&[0xff, 0x00]),
            "value does not fit: x'ff00' (2 bytes) for column code (char(4)): the bytes are not \
             UTF-8",
        ),
        (1, Value::Null, "value does not fit: NULL for column qty (i64): it is NOT NULL"),
        (
            2,
            Value::Decimal(Decimal::new(12345, 3)),
            "value does not fit: 12.345 (a decimal) for column price (decimal(scale 2)): not \
             exact at scale 2",
        ),
        (
            2,
            Value::Decimal(Decimal::new(i64::MAX, 0)),
            "value does not fit: 9223372036854775807 (a decimal) for column price (decimal(scale \
             2)): out of range at scale 2",
        ),
        (
            3,
            Value::Str("it's long"),
            "value does not fit: 'it''s long' (a string) for column code (char(4)): longer than \
             4 bytes",
        ),
        (
            3,
            Value::Date(nvpage::Date(0)),
            "value does not fit: 1970-01-01 (a date) for column code (char(4))",
        ),
    ];
    for (i, v, want) in cases {
        assert_eq!(insert_text(&mut tx, i, v), want);
    }
    // A long string is cut short in the message, which gives its length instead.
    let long = "y".repeat(50);
    let got = insert_text(&mut tx, 4, Value::Str(&long));
    let shown = format!("'{}…' (a string of 50 bytes)", "y".repeat(40));
    assert_eq!(
        got,
        format!("value does not fit: {shown} for column note (varchar(20)): longer than 20 bytes")
    );
    // A key for an index lookup is checked the same way.
    assert_eq!(
        text(tx.lookup(&by_qty, &[Value::Str("one")])),
        "value does not fit: 'one' (a string) for column qty (i64)"
    );
    // None of these changed anything: the transaction goes on.
    tx.insert(&t, &row_with(0, Value::I64(1))).unwrap();
    tx.commit().unwrap();
}

#[test]
fn counts_are_singular_or_plural() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"));
    let mut tx = db.begin_write().unwrap();
    let one = Schema::new(vec![Column::new("a", ColumnType::I32)]).unwrap();
    let t1 = tx.create_table("one", one).unwrap();
    let t = tx.create_table("t", schema()).unwrap();
    assert_eq!(text(tx.insert(&t1, &[Value::I32(1), Value::I32(2)])), "2 values for 1 column");
    assert_eq!(text(tx.insert(&t, &[Value::I64(1)])), "1 value for 5 columns");
    assert_eq!(text(tx.insert(&t1, &[])), "0 values for 1 column");
    let by_id = tx.create_index("by_id", &t, &["id"]).unwrap();
    assert_eq!(text(tx.lookup(&by_id, &[Value::I64(1), Value::I64(2)])), "2 values for 1 column");
}

#[test]
fn schemas_and_indexes_out_of_range_give_the_limit() {
    let bad = |ty: ColumnType| text(Schema::new(vec![Column::new("v", ty)]));
    assert_eq!(
        bad(ColumnType::VarChar { max_len: 40_000 }),
        "invalid schema: column v: varchar(40000) passes the longest string, 32768 bytes"
    );
    assert_eq!(
        bad(ColumnType::Char { len: 40_000 }),
        "invalid schema: column v: char(40000) passes the longest string, 32768 bytes"
    );
    assert_eq!(
        bad(ColumnType::Char { len: 0 }),
        "invalid schema: column v: char(0) is empty: a char holds 1 to 32768 bytes"
    );
    assert_eq!(
        bad(ColumnType::Decimal { scale: 19 }),
        "invalid schema: column v: decimal(scale 19) passes the largest scale, 18"
    );
    let twice =
        Schema::new(vec![Column::new("a", ColumnType::I32), Column::new("a", ColumnType::I64)]);
    assert_eq!(text(twice), "invalid schema: duplicate column a");

    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"));
    let mut tx = db.begin_write().unwrap();
    let wide = Schema::new(vec![
        Column::new("id", ColumnType::I64),
        Column::new("s", ColumnType::VarChar { max_len: 3000 }),
    ])
    .unwrap();
    let t = tx.create_table("w", wide).unwrap();
    let e = tx.create_index("w_by_s", &t, &["id", "s"]).unwrap_err();
    let Error::KeyTooLarge { bytes, max, .. } = e else { panic!("{e:?}") };
    assert_eq!(
        e.to_string(),
        format!(
            "index w_by_s on (id, s): its keys take up to {bytes} bytes, and a page of this \
             database takes keys of at most {max}; index fewer or shorter columns, or create the \
             database with a larger page size"
        )
    );
    assert_eq!(
        text(tx.create_index("x", &t, &["s", "s"])),
        "invalid schema: column s twice in index x"
    );
    assert_eq!(
        text(tx.table("nope")),
        "no table nope in this transaction's view (a handle names only the table it was made \
         for, in the open that made it)"
    );
    assert_eq!(text(tx.create_table("w", schema())), "a table named w exists");
    assert_eq!(
        text(tx.index("nope")),
        "no index nope in this transaction's view (a handle names only the index it was made \
         for, in the open that made it)"
    );
    tx.create_index("w_by_id", &t, &["id"]).unwrap();
    assert_eq!(text(tx.create_index("w_by_id", &t, &["id"])), "an index named w_by_id exists");
    assert_eq!(text(t.col::<nvpage::kind::I64>("nope")), "no column named nope");
    assert_eq!(text(t.col::<nvpage::kind::I32>("id")), "column id is i64, not i32");
}

#[test]
fn a_duplicate_key_shows_its_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"));
    let mut tx = db.begin_write().unwrap();
    let t = tx.create_table("t", schema()).unwrap();
    tx.create_unique_index("by_code_qty", &t, &["code", "qty"]).unwrap();
    let id = tx.insert(&t, &row_with(3, Value::Str("ab"))).unwrap();
    let note = t.col::<nvpage::kind::Str>("note").unwrap();
    assert_eq!(text(tx.get(&t, id).unwrap().row().unwrap().get(note)), "column note is NULL");
    assert_eq!(
        text(tx.insert(&t, &row_with(3, Value::Str("ab")))),
        "unique index by_code_qty already holds the key ('ab', 2)"
    );
}

#[test]
fn a_call_refused_for_a_transaction_the_thread_holds_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"));
    let writer = "this thread holds the write transaction of this database";
    let tx = db.begin_write().unwrap();
    assert_eq!(
        text(db.begin_read()),
        format!(
            "{writer}: begin_read would wait for itself; read through the write transaction instead"
        )
    );
    assert_eq!(
        text(db.begin_write()),
        format!("{writer}: begin_write would wait for itself; commit or abort it first")
    );
    assert_eq!(
        text(db.check()),
        format!("{writer}: check would wait for itself; commit or abort it first")
    );
    tx.commit().unwrap();

    let reader = "this thread holds a read transaction of this database";
    let rx = db.begin_read().unwrap();
    for call in ["begin_write", "check"] {
        let got = if call == "check" { text(db.check()) } else { text(db.begin_write()) };
        assert_eq!(
            got,
            format!("{reader}: {call} would wait for itself; end the read transaction first")
        );
    }
    drop(rx);
    drop(db.begin_write().unwrap());
}

#[test]
fn a_database_that_needs_recovery_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = open(&path);
    let mut tx = db.begin_write().unwrap();
    let t = tx.create_table("t", schema()).unwrap();
    let ids: Vec<_> =
        (0..2000).map(|k| tx.insert(&t, &row_with(0, Value::I64(k))).unwrap()).collect();
    tx.commit().unwrap();
    // Every row changed through a pool of 8 pages: the changed pages are written in place,
    // their before-images logged first; the transaction never ends.
    let mut tx = db.begin_write().unwrap();
    for (k, id) in ids.iter().enumerate() {
        let mut row = row_with(0, Value::I64(k as i64));
        row[1] = Value::I64(-1);
        tx.update(&t, *id, &row).unwrap();
    }
    std::mem::forget(tx);
    drop(db);
    let e = Database::builder().read_only(true).open(&path).map(drop).unwrap_err();
    assert!(matches!(e, Error::RecoveryNeeded { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "{}: its log {} holds an unfinished transaction (a crash or a killed process left \
             it), which a read-only open cannot roll back; nothing was changed: open the database \
             writable once to recover it (`nvpage recover` does)",
            path.display(),
            path.join("log.nvpage").display()
        )
    );
    assert_eq!(e.path(), Some(path.as_path()));
}
