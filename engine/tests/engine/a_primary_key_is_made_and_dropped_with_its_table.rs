//! Goal: a table created with a primary key has a unique index `<table>_pkey` over the key's
//! columns, which are NOT NULL: a repeated key or a NULL in it is refused before anything
//! changes; the index cannot be dropped apart from its table, and goes with it; the key and its
//! index survive a reopen on every layer and serve the calls by key. A create whose key index
//! could not be made (its name taken, its key too long for a page) creates nothing and leaves
//! the transaction usable.

use nvpage::{Column, ColumnType, Database, Decimal, Error, Layer, ReadOps, Schema, Value, kind};

fn cents(units: i64) -> Value<'static> {
    Value::Decimal(Decimal::new(units, 2))
}

fn accounts() -> Schema {
    Schema::new(vec![
        Column::nullable("branch", ColumnType::I32),
        Column::nullable("number", ColumnType::I64),
        Column::new("balance", ColumnType::Decimal { scale: 2 }),
    ])
    .unwrap()
    .with_primary_key(&["branch", "number"])
    .unwrap()
}

#[test]
fn the_key_is_unique_not_null_and_survives_a_reopen() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bank");
        let schema = accounts();
        assert_eq!(schema.primary_key(), Some(&[0, 1][..]));
        assert!(schema.columns().iter().take(2).all(|c| !c.nullable), "{layer}");
        {
            let db = Database::builder().layer(layer).open(&path).unwrap();
            let mut tx = db.begin_write().unwrap();
            let t = tx.create_table("accounts", schema.clone()).unwrap();
            let pk = tx.primary_key(&t).unwrap().expect("a primary key");
            assert_eq!(pk.name(), "accounts_pkey");
            assert!(pk.is_primary() && pk.is_unique());
            assert_eq!(tx.indexes(&t).unwrap().len(), 1);
            for (b, n, c) in [(1, 10, 500), (1, 11, 700), (2, 10, 900)] {
                tx.insert(&t, &[Value::I32(b), Value::I64(n), cents(c)]).unwrap();
            }
            let e = tx.insert(&t, &[Value::I32(1), Value::I64(11), cents(1)]);
            assert!(
                matches!(&e, Err(Error::UniqueViolation { index, .. }) if index == "accounts_pkey"),
                "{layer}: {e:?}"
            );
            let e = tx.insert(&t, &[Value::I32(3), Value::Null, cents(1)]);
            assert!(matches!(e, Err(Error::ValueDoesNotFit { .. })), "{layer}: {e:?}");
            // The index goes only with its table; the refusal leaves the transaction usable.
            let e = tx.drop_index("accounts_pkey").unwrap_err();
            assert!(matches!(e, Error::PrimaryKeyIndex { .. }), "{layer}: {e}");
            assert_eq!(
                e.to_string(),
                "index accounts_pkey is the primary key of table accounts: it is dropped with the table"
            );
            tx.commit().unwrap();
        }
        let db = Database::builder().layer(layer).open(&path).unwrap();
        let mut tx = db.begin_write().unwrap();
        let t = tx.table("accounts").unwrap();
        assert_eq!(t.schema(), &schema, "{layer}");
        let pk = tx.primary_key(&t).unwrap().expect("the key after a reopen");
        assert!(pk.is_primary());
        assert_eq!(tx.row_count(&t).unwrap(), 3);
        let key = [Value::I32(1), Value::I64(11)];
        assert!(tx.update_by(&pk, &key, &[("balance", cents(750))]).unwrap().is_some());
        let balance = t.col::<kind::Decimal>("balance").unwrap();
        let row = tx.get_by(&pk, &key).unwrap().expect("the updated row");
        assert_eq!(row.row().unwrap().get(balance).unwrap().units, 750);
        drop(row);
        assert!(tx.delete_by(&pk, &[Value::I32(2), Value::I64(10)]).unwrap());
        tx.commit().unwrap();
        assert!(db.check().unwrap().damage.is_empty(), "{layer}");
        // Dropped with its table; the name is free again.
        let mut tx = db.begin_write().unwrap();
        tx.drop_table("accounts").unwrap();
        assert!(matches!(tx.index("accounts_pkey"), Err(Error::UnknownIndex(_))));
        let t = tx.create_table("accounts", schema.clone()).unwrap();
        assert_eq!(tx.row_count(&t).unwrap(), 0);
        tx.commit().unwrap();
        assert!(db.check().unwrap().damage.is_empty(), "{layer}");
    }
}

#[test]
fn a_create_whose_key_index_cannot_be_made_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let mut tx = db.begin_write().unwrap();
    let other =
        tx.create_table("other", Schema::new(vec![Column::new("a", ColumnType::I64)]).unwrap());
    tx.create_index("accounts_pkey", &other.unwrap(), &["a"]).unwrap();
    let e = tx.create_table("accounts", accounts()).unwrap_err();
    assert!(matches!(&e, Error::IndexExists(name) if name == "accounts_pkey"), "{e}");
    assert!(matches!(tx.table("accounts"), Err(Error::UnknownTable(_))));
    let long = Schema::new(vec![Column::new("s", ColumnType::VarChar { max_len: 30_000 })])
        .unwrap()
        .with_primary_key(&["s"])
        .unwrap();
    let e = tx.create_table("long", long).unwrap_err();
    assert!(matches!(e, Error::KeyTooLarge { .. }), "{e}");
    assert!(matches!(tx.table("long"), Err(Error::UnknownTable(_))));
    // The transaction goes on, and commits only what succeeded.
    tx.drop_index("accounts_pkey").unwrap();
    tx.create_table("accounts", accounts()).unwrap();
    tx.commit().unwrap();
    let rx = db.begin_read().unwrap();
    let names: Vec<String> = rx.tables().iter().map(|t| t.name().to_string()).collect();
    assert_eq!(names, ["other", "accounts"]);
    let t = rx.table("accounts").unwrap();
    assert_eq!(
        rx.primary_key(&t).unwrap().map(|x| x.name().to_string()).as_deref(),
        Some("accounts_pkey")
    );
}

#[test]
fn a_primary_key_names_known_distinct_columns() {
    let plain = Schema::new(vec![Column::new("a", ColumnType::I64)]).unwrap();
    assert!(matches!(plain.with_primary_key(&["b"]), Err(Error::UnknownColumn(_))));
    assert!(matches!(plain.with_primary_key(&["a", "a"]), Err(Error::InvalidSchema(_))));
    assert!(matches!(plain.with_primary_key(&[]), Err(Error::InvalidSchema(_))));
    assert_eq!(plain.primary_key(), None);
}
