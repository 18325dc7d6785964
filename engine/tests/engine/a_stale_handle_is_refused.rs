//! Goal: a `Table` or `Index` handle names one table or index for its whole life. A handle whose
//! object does not exist in the transaction's view — made by a create that was rolled back,
//! dropped, dropped and re-created under its name, not yet committed when a reader began, made
//! by another database, or made before the database was reopened — is `UnknownTable` /
//! `UnknownIndex` on every operation that takes it, in a write and in a read transaction, and
//! never reaches the table or index that holds its id or its name now: that table keeps its rows,
//! its index its entries, and `check` finds nothing wrong. A handle is accepted wherever its
//! object exists (a reader that began after its create committed).
//!
//! Every case but the reopen builds the stale objects with a schema unlike the live table's
//! (one `I64` column against three, the live one's unique index on its third), so that a handle
//! that reached the live table would encode, decode and index its rows with the wrong schema.

use std::fmt::Debug;
use std::ops::Bound;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use nvpage::{
    Column, ColumnType, Database, Error, Index, OwnedValue, ReadOps, RowId, Schema, Table, Value,
    WriteTxn, kind,
};

/// The live row's key, in `t_k`.
const KEY: i64 = 42;

fn open(path: &Path) -> Database {
    Database::builder().page_size(4096).pool_bytes(1 << 20).open(path).unwrap()
}

/// The live table's schema: the unique index `t_k` is on its third column.
fn live_schema() -> Schema {
    Schema::new(vec![
        Column::new("name", ColumnType::VarChar { max_len: 20 }),
        Column::new("n", ColumnType::I32),
        Column::new("k", ColumnType::I64),
    ])
    .unwrap()
}

/// The stale objects' schema: one column.
fn stale_schema() -> Schema {
    Schema::new(vec![Column::new("x", ColumnType::I64)]).unwrap()
}

/// Creates table `t` (the live schema) with unique index `t_k` on `k` and one row, and commits;
/// returns the row's id.
fn commit_live(db: &Database) -> RowId {
    let mut w = db.begin_write().unwrap();
    let t = w.create_table("t", live_schema()).unwrap();
    w.create_unique_index("t_k", &t, &["k"]).unwrap();
    let id = w.insert(&t, &[Value::Str("live"), Value::I32(1), Value::I64(KEY)]).unwrap();
    w.commit().unwrap();
    id
}

/// Creates table `name` (the stale schema) with unique index `{name}_x` and one row, in `w`.
fn create_stale(w: &mut WriteTxn<'_>, name: &str) -> (Table, Index) {
    let t = w.create_table(name, stale_schema()).unwrap();
    let x = w.create_unique_index(&format!("{name}_x"), &t, &["x"]).unwrap();
    w.insert(&t, &[Value::I64(KEY)]).unwrap();
    (t, x)
}

/// A value for each column of `schema`, as the live row has them.
fn values_for(schema: &Schema) -> Vec<OwnedValue> {
    let value = |ty| match ty {
        ColumnType::I64 => OwnedValue::I64(KEY),
        ColumnType::I32 => OwnedValue::I32(1),
        ColumnType::VarChar { .. } => OwnedValue::Str("live".into()),
        other => panic!("no value for {other}"),
    };
    schema.columns().iter().map(|c| value(c.ty)).collect()
}

/// Which error an operation through a stale handle must give.
#[derive(Clone, Copy)]
enum Want {
    Table,
    Index,
}

/// What operations through stale handles did instead of refusing.
#[derive(Default)]
struct Wrong(Vec<String>);

impl Wrong {
    /// Runs `op` (named `what`), expecting the error `want`.
    fn expect<T: Debug>(&mut self, what: &str, want: Want, op: impl FnOnce() -> nvpage::Result<T>) {
        match catch_unwind(AssertUnwindSafe(op)) {
            Ok(Err(Error::UnknownTable(_))) if matches!(want, Want::Table) => {}
            Ok(Err(Error::UnknownIndex(_))) if matches!(want, Want::Index) => {}
            Ok(other) => self.0.push(format!("{what}: {other:?}")),
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                self.0.push(format!("{what}: panicked: {msg}"));
            }
        }
    }

    fn assert_none(&self, case: &str) {
        assert!(
            self.0.is_empty(),
            "{case}: stale handles were not refused:\n{}",
            self.0.join("\n")
        );
    }
}

/// Every operation of both kinds of transaction that takes a handle, through `st` and `sx`;
/// `row` is the live row's id (what a handle that reached the live table would read). Column
/// handles keep working: they read only the handle's schema.
fn read_ops(r: &impl ReadOps, st: &Table, sx: &Index, row: RowId, wrong: &mut Wrong, how: &str) {
    let first = &st.schema().columns()[0].name;
    assert!(st.col::<kind::I64>(first).is_ok() || st.col::<kind::Str>(first).is_ok());
    let key = [Value::I64(KEY)];
    let what = |op: &str| format!("{how}: {op}");
    wrong.expect(&what("row_count"), Want::Table, || r.row_count(st));
    wrong.expect(&what("page_count"), Want::Table, || r.page_count(st));
    wrong.expect(&what("get"), Want::Table, || {
        r.get(st, row).map(|g| g.row().map(|r| r.bytes().len()))
    });
    wrong.expect(&what("scan"), Want::Table, || r.scan(st).map(|s| s.count()));
    wrong.expect(&what("for_each_row"), Want::Table, || {
        let mut n = 0;
        r.for_each_row(st, |_| {
            n += 1;
            Ok(())
        })
        .map(|()| n)
    });
    wrong.expect(&what("par_fold"), Want::Table, || {
        r.par_fold(st, 2, || 0u64, |n, row| Ok(n + row.bytes().len() as u64), |a, b| a + b)
    });
    wrong.expect(&what("par_fold_pages"), Want::Table, || {
        r.par_fold_pages(st, 2, || 0u64, |n, page| page.fold(n, |n, _| Ok(n + 1)), |a, b| a + b)
    });
    wrong.expect(&what("scan_partition"), Want::Table, || {
        r.scan_partition(st, nvpage::Partition::WHOLE).map(|s| s.count())
    });
    wrong.expect(&what("fold_partition"), Want::Table, || {
        r.fold_partition(st, nvpage::Partition::WHOLE, 0u64, |n, _| {
            Ok(std::ops::ControlFlow::Continue(n + 1))
        })
    });
    wrong.expect(&what("indexes"), Want::Table, || r.indexes(st).map(|x| x.len()));
    wrong.expect(&what("index_len"), Want::Index, || r.index_len(sx));
    wrong.expect(&what("get_by"), Want::Index, || r.get_by(sx, &key).map(|g| g.is_some()));
    wrong.expect(&what("lookup"), Want::Index, || r.lookup(sx, &key).map(|s| s.count()));
    wrong.expect(&what("lookup ids"), Want::Index, || r.lookup(sx, &key).map(|s| s.ids().count()));
    wrong.expect(&what("index_range"), Want::Index, || {
        r.index_range(sx, Bound::Unbounded, Bound::Unbounded).map(|s| s.rev().count())
    });
}

/// The write transaction's statements that take a handle, through `st` and `sx`.
fn write_ops(w: &mut WriteTxn<'_>, st: &Table, sx: &Index, row: RowId, wrong: &mut Wrong) {
    let owned = values_for(st.schema());
    let values: Vec<Value<'_>> = owned.iter().map(OwnedValue::as_value).collect();
    let first = st.schema().columns()[0].name.as_str();
    wrong.expect("write: insert", Want::Table, || w.insert(st, &values));
    wrong.expect("write: update", Want::Table, || w.update(st, row, &values));
    wrong.expect("write: delete", Want::Table, || w.delete(st, row));
    wrong.expect("write: create_index", Want::Table, || w.create_index("s_i", st, &[first]));
    wrong.expect("write: create_unique_index", Want::Table, || {
        w.create_unique_index("s_u", st, &[first])
    });
    wrong.expect("write: drop_index", Want::Index, || w.drop_index(sx));
    wrong.expect("write: drop_table", Want::Table, || w.drop_table(st));
}

/// The live table `t`, its index `t_k` and its one row, as `r` sees them.
fn assert_live_intact(r: &impl ReadOps, row: RowId, case: &str) {
    let t = r.table("t").unwrap_or_else(|e| panic!("{case}: the live table: {e}"));
    let k = r.index("t_k").unwrap_or_else(|e| panic!("{case}: the live index: {e}"));
    assert_eq!(r.row_count(&t).unwrap(), 1, "{case}");
    assert_eq!(r.index_len(&k).unwrap(), 1, "{case}");
    assert_eq!(r.indexes(&t).unwrap().len(), 1, "{case}: t's indexes");
    let (name, key) = (t.col::<kind::Str>("name").unwrap(), t.col::<kind::I64>("k").unwrap());
    let g = r.get_by(&k, &[Value::I64(KEY)]).unwrap().expect("the live row");
    let got = g.row().unwrap();
    assert_eq!((got.id(), got.get(name).unwrap(), got.get(key).unwrap()), (row, "live", KEY));
    assert!(r.index("s_i").is_err() && r.index("s_u").is_err(), "{case}");
}

/// Runs every operation through `st` and `sx` in a write transaction and in a read transaction
/// of `db`, each of which must refuse them all, then checks that the live objects are as
/// `commit_live` left them, that the write transaction the refusals happened in still works,
/// and that the database is sound.
fn assert_refused_everywhere(db: &Database, st: &Table, sx: &Index, row: RowId, case: &str) {
    let mut wrong = Wrong::default();
    read_ops(&db.begin_read().unwrap(), st, sx, row, &mut wrong, "read");
    let mut w = db.begin_write().unwrap();
    read_ops(&w, st, sx, row, &mut wrong, "write");
    write_ops(&mut w, st, sx, row, &mut wrong);
    if let Err(e) = w.commit() {
        wrong.0.push(format!("commit after the refusals: {e}"));
    }
    wrong.assert_none(case);

    assert_live_intact(&db.begin_read().unwrap(), row, case);
    let mut w = db.begin_write().unwrap();
    let t = w.table("t").unwrap();
    let extra = w.insert(&t, &[Value::Str("more"), Value::I32(2), Value::I64(KEY + 1)]);
    w.delete(&t, extra.unwrap()).unwrap();
    w.commit().unwrap();
    assert_live_intact(&db.begin_read().unwrap(), row, case);
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{case}: {:?}", report.damage);
}

/// Handles made by a create that was rolled back; the next creates take their ids, and here
/// their names too.
#[test]
fn handles_from_a_rolled_back_create() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"));
    let mut w = db.begin_write().unwrap();
    let (st, sx) = {
        let t = w.create_table("t", stale_schema()).unwrap();
        let x = w.create_unique_index("t_k", &t, &["x"]).unwrap();
        (t, x)
    };
    w.abort().unwrap();
    let row = commit_live(&db);
    assert_refused_everywhere(&db, &st, &sx, row, "rolled back");
}

/// Handles on a table and its index that a later commit dropped.
#[test]
fn handles_on_dropped_objects() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"));
    let mut w = db.begin_write().unwrap();
    let (st, sx) = create_stale(&mut w, "gone");
    w.commit().unwrap();
    let mut w = db.begin_write().unwrap();
    w.drop_table("gone").unwrap();
    w.commit().unwrap();
    let row = commit_live(&db);
    assert_refused_everywhere(&db, &st, &sx, row, "dropped");
}

/// Handles on a table and index that were dropped, then created again under the same names.
#[test]
fn handles_on_objects_dropped_and_created_again() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"));
    let mut w = db.begin_write().unwrap();
    let (st, sx) = create_stale(&mut w, "t");
    let sx = {
        // The index under the live index's name, so that both names are taken again.
        w.drop_index(sx.name()).unwrap();
        w.create_unique_index("t_k", &st, &["x"]).unwrap()
    };
    w.commit().unwrap();
    let mut w = db.begin_write().unwrap();
    w.drop_table("t").unwrap();
    w.commit().unwrap();
    let row = commit_live(&db);
    assert_refused_everywhere(&db, &st, &sx, row, "dropped and created again");
}

/// Handles made by another database, whose ids and names the live objects have.
#[test]
fn handles_from_another_database() {
    let dir = tempfile::tempdir().unwrap();
    let other = open(&dir.path().join("other"));
    let mut w = other.begin_write().unwrap();
    let (st, sx) = {
        let t = w.create_table("t", stale_schema()).unwrap();
        let x = w.create_unique_index("t_k", &t, &["x"]).unwrap();
        (t, x)
    };
    w.commit().unwrap();
    let db = open(&dir.path().join("db"));
    let row = commit_live(&db);
    assert_refused_everywhere(&db, &st, &sx, row, "another database");
    // The database that made them still takes them.
    assert_eq!(other.begin_read().unwrap().row_count(&st).unwrap(), 0);
}

/// Handles on the live objects themselves, made before the database was closed and opened
/// again: a handle belongs to the open that made it (see `Table`'s documentation).
#[test]
fn handles_from_before_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = open(&path);
    let row = commit_live(&db);
    let (st, sx) = {
        let r = db.begin_read().unwrap();
        (r.table("t").unwrap(), r.index("t_k").unwrap())
    };
    db.close().unwrap();
    let db = open(&path);
    assert_refused_everywhere(&db, &st, &sx, row, "before a reopen");
    // Handles taken again after the reopen work.
    let r = db.begin_read().unwrap();
    assert_eq!(r.row_count(&r.table("t").unwrap()).unwrap(), 1);
}

/// Handles made by the write transaction in progress: a reader that began before its commit
/// refuses them (its snapshot has no such objects), one that began after takes them.
#[test]
fn handles_not_yet_committed_in_a_reader() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"));
    let row = commit_live(&db);
    let mut w = db.begin_write().unwrap();
    let (st, sx) = create_stale(&mut w, "new");
    let wrong = std::thread::scope(|s| {
        s.spawn(|| {
            let r = db.begin_read().unwrap();
            let mut wrong = Wrong::default();
            read_ops(&r, &st, &sx, row, &mut wrong, "read before the commit");
            assert_live_intact(&r, row, "not yet committed");
            wrong
        })
        .join()
        .unwrap()
    });
    wrong.assert_none("not yet committed");
    w.commit().unwrap();
    {
        let r = db.begin_read().unwrap();
        assert_eq!(r.row_count(&st).unwrap(), 1);
        let got = r.get_by(&sx, &[Value::I64(KEY)]).unwrap().expect("its row");
        assert_eq!(got.row().unwrap().get(st.col::<kind::I64>("x").unwrap()).unwrap(), KEY);
    }
    // Dropping through the handles drops what they name, and only that.
    let mut w = db.begin_write().unwrap();
    w.drop_index(&sx).unwrap();
    assert!(matches!(w.index_len(&sx), Err(Error::UnknownIndex(_))));
    assert_eq!(w.row_count(&st).unwrap(), 1);
    w.drop_table(&st).unwrap();
    w.commit().unwrap();
    let r = db.begin_read().unwrap();
    assert!(r.table("new").is_err() && r.index("new_x").is_err());
    assert_live_intact(&r, row, "dropped through the handles");
}
