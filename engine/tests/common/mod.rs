//! What the engine's scenario tests share: a schema, a model of the committed contents, a
//! seeded random workload that keeps the model, and a comparison of a database with the model.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use nvpage::{
    Column, ColumnType, Database, Decimal, Error, Layer, ReadOps, RowId, Schema, Value, WriteTxn,
    kind,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A new database of 4 KiB pages (small, so that tables span many) in `dir/db`, on `layer`.
pub fn open_4k(dir: &Path, layer: Layer) -> Database {
    Database::builder().layer(layer).page_size(4096).open(dir.join("db")).unwrap()
}

/// Every test table has this schema: a unique key, a number, a decimal derived from the key,
/// and a note whose length varies (so updates grow rows and move them between pages).
pub fn schema() -> Schema {
    Schema::new(vec![
        Column::new("key", ColumnType::I64),
        Column::new("qty", ColumnType::I32),
        Column::new("price", ColumnType::Decimal { scale: 2 }),
        Column::nullable("note", ColumnType::VarChar { max_len: 3000 }),
    ])
    .unwrap()
}

/// A row's values besides its key (the price is `key × 7` hundredths).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub qty: i32,
    pub note: Option<String>,
}

/// A table's rows: key → (row id, values).
pub type Rows = BTreeMap<i64, (RowId, Row)>;

/// The committed contents of a database.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Model {
    pub tables: BTreeMap<String, Rows>,
    pub next_key: i64,
    pub next_table: u32,
}

pub fn insert_row(
    tx: &mut WriteTxn<'_>,
    table: &str,
    key: i64,
    row: &Row,
) -> nvpage::Result<RowId> {
    let t = tx.table(table)?;
    tx.insert(&t, &values(key, row))
}

/// Creates table `t` in `db` holding keys `0..n`, each with `row(key)`, and commits; returns the
/// rows' ids in key order.
pub fn commit_table(db: &Database, n: i64, row: impl Fn(i64) -> Row) -> Vec<RowId> {
    let mut tx = db.begin_write().unwrap();
    tx.create_table("t", schema()).unwrap();
    let ids = (0..n).map(|k| insert_row(&mut tx, "t", k, &row(k)).unwrap()).collect();
    tx.commit().unwrap();
    ids
}

pub fn values(key: i64, row: &Row) -> [Value<'_>; 4] {
    [
        Value::I64(key),
        Value::I32(row.qty),
        Value::Decimal(Decimal::new(key * 7, 2)),
        row.note.as_deref().map_or(Value::Null, Value::Str),
    ]
}

/// Reads every table of `db` into a model's table map, checking each row's derived column and
/// that every row id reads back the same row.
pub fn contents(db: &Database) -> Result<BTreeMap<String, Rows>, String> {
    let rx = db.begin_read().map_err(|e| format!("begin_read: {e}"))?;
    contents_in(&rx)
}

/// Reads every table as `rx` sees it into a model's table map (as [`contents`]).
pub fn contents_in(rx: &impl ReadOps) -> Result<BTreeMap<String, Rows>, String> {
    let mut out = BTreeMap::new();
    for t in rx.tables() {
        let key = t.col::<kind::I64>("key").map_err(|e| e.to_string())?;
        let qty = t.col::<kind::I32>("qty").map_err(|e| e.to_string())?;
        let price = t.col::<kind::Units>("price").map_err(|e| e.to_string())?;
        let note = t.col::<kind::Str>("note").map_err(|e| e.to_string())?;
        let mut rows = Rows::new();
        let scan = rx.scan(&t).map_err(|e| format!("scan {}: {e}", t.name()))?;
        for page in scan {
            let page = page.map_err(|e| format!("scan {}: {e}", t.name()))?;
            for r in page.rows() {
                let r = r.map_err(|e| format!("row of {}: {e}", t.name()))?;
                let k = r.get(key).map_err(|e| e.to_string())?;
                let p = r.get(price).map_err(|e| e.to_string())?;
                if p != k * 7 {
                    return Err(format!("{}: row {k} has price {p}, not {}", t.name(), k * 7));
                }
                let row = Row {
                    qty: r.get(qty).map_err(|e| e.to_string())?,
                    note: r.get_opt(note).map_err(|e| e.to_string())?.map(str::to_string),
                };
                if rows.insert(k, (r.id(), row)).is_some() {
                    return Err(format!("{}: key {k} twice", t.name()));
                }
            }
        }
        let counted = rx.row_count(&t).map_err(|e| e.to_string())?;
        if counted != rows.len() as u64 {
            return Err(format!(
                "{}: catalog counts {counted} rows, scan finds {}",
                t.name(),
                rows.len()
            ));
        }
        if let Ok(ix) = rx.index(&key_index(t.name())) {
            check_key_index(rx, &ix, &rows)?;
        }
        out.insert(t.name().to_string(), rows);
    }
    Ok(out)
}

/// The unique index on `key` that the workload gives every table of an even number.
pub fn key_index(table: &str) -> String {
    format!("{table}_key")
}

/// `ix` (a unique index on `key`) holds exactly `rows`: one entry each, each leading to its row.
fn check_key_index(rx: &impl ReadOps, ix: &nvpage::Index, rows: &Rows) -> Result<(), String> {
    let entries = rx.index_len(ix).map_err(|e| e.to_string())?;
    if entries != rows.len() as u64 {
        return Err(format!("{}: {entries} entries for {} rows", ix.name(), rows.len()));
    }
    for (k, (id, _)) in rows {
        let g = rx.get_by(ix, &[Value::I64(*k)]).map_err(|e| e.to_string())?;
        let found = g.map(|g| g.row().map(|r| r.id())).transpose().map_err(|e| e.to_string())?;
        if found != Some(*id) {
            return Err(format!("{}: key {k} finds {found:?}, not row {id}", ix.name()));
        }
    }
    Ok(())
}

/// Compares `db` with `want`; `Err` describes the first difference.
pub fn compare(db: &Database, want: &BTreeMap<String, Rows>) -> Result<(), String> {
    let got = contents(db)?;
    if got.keys().ne(want.keys()) {
        return Err(format!(
            "tables {:?}, expected {:?}",
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>()
        ));
    }
    for (name, rows) in want {
        let g = &got[name];
        if g != rows {
            let extra: Vec<_> = g.keys().filter(|k| !rows.contains_key(k)).take(5).collect();
            let missing: Vec<_> = rows.keys().filter(|k| !g.contains_key(k)).take(5).collect();
            let changed: Vec<_> =
                rows.iter().filter(|(k, v)| g.get(k).is_some_and(|x| x != *v)).take(3).collect();
            return Err(format!(
                "table {name}: {} rows, expected {}; extra keys {extra:?}, missing {missing:?}, \
                 changed {changed:?}",
                g.len(),
                rows.len()
            ));
        }
    }
    Ok(())
}

/// How a transaction of the random workload ended.
#[derive(Debug)]
pub enum End {
    /// Committed: the model advanced.
    Committed,
    /// Rolled back by drop or `abort()`: the model did not change.
    Aborted,
    /// An operation failed (the transaction was then dropped): the model did not change.
    OpFailed(Error),
    /// `commit` failed; `tentative` is what the model would have become.
    CommitFailed(Error, Box<Model>),
    /// The power was cut with the transaction open (`cut` asked for it): no rollback ran
    /// before the cut, and the model did not change.
    Cut,
}

/// One random transaction on `db`, keeping `model` (advanced only on a successful commit).
/// `cut` is called with the transaction open before each operation (with the number done so
/// far) and once more before it ends; it returns true to cut the power there, after which the
/// transaction is dropped unfinished (by then `cut` has taken what survives the power cut).
pub fn random_txn(
    db: &Database,
    rng: &mut StdRng,
    model: &mut Model,
    cut: &mut dyn FnMut(usize) -> bool,
) -> End {
    random_txn_publishing(db, rng, model, cut, &|_| {})
}

/// [`random_txn`], calling `publish` with the state a commit is about to make (right before
/// `commit`), so that readers can look up the state their snapshot names.
pub fn random_txn_publishing(
    db: &Database,
    rng: &mut StdRng,
    model: &mut Model,
    cut: &mut dyn FnMut(usize) -> bool,
    publish: &dyn Fn(&Model),
) -> End {
    let mut tx = match db.begin_write() {
        Ok(tx) => tx,
        Err(e) => return End::OpFailed(e),
    };
    let mut tent = model.clone();
    let n_ops =
        if rng.random_bool(0.15) { rng.random_range(40..160) } else { rng.random_range(1..20) };
    for op in 0..=n_ops {
        if cut(op) {
            drop(tx);
            return End::Cut;
        }
        if op == n_ops {
            break;
        }
        if let Err(e) = random_op(&mut tx, rng, &mut tent) {
            drop(tx);
            return End::OpFailed(e);
        }
    }
    match rng.random_range(0..20) {
        0 | 1 => {
            drop(tx);
            End::Aborted
        }
        2 => match tx.abort() {
            Ok(()) => End::Aborted,
            Err(e) => End::OpFailed(e),
        },
        _ => match (publish(&tent), tx.commit()).1 {
            Ok(()) => {
                *model = tent;
                End::Committed
            }
            Err(e) => End::CommitFailed(e, Box::new(tent)),
        },
    }
}

fn pick<'a, K: Ord, V>(rng: &mut StdRng, m: &'a BTreeMap<K, V>) -> Option<(&'a K, &'a V)> {
    if m.is_empty() {
        return None;
    }
    let i = rng.random_range(0..m.len());
    m.iter().nth(i)
}

fn note(rng: &mut StdRng) -> Option<String> {
    match rng.random_range(0..20) {
        0 | 1 => None,
        2 | 3 => Some("G".repeat(rng.random_range(400..2500))),
        _ => Some("n".repeat(rng.random_range(0..120))),
    }
}

fn random_op(tx: &mut WriteTxn<'_>, rng: &mut StdRng, m: &mut Model) -> nvpage::Result<()> {
    let choice = rng.random_range(0..100);
    if m.tables.is_empty() || (choice < 3 && m.tables.len() < 5) {
        let name = format!("t{}", m.next_table);
        m.next_table += 1;
        let t = tx.create_table(&name, schema())?;
        if m.next_table % 2 == 1 {
            // Tables of an even number change their rows by key too (`update_by`, `upsert`,
            // `delete_by`), through this index.
            tx.create_unique_index(&key_index(&name), &t, &["key"])?;
        }
        m.tables.insert(name, Rows::new());
        return Ok(());
    }
    if choice < 5 && m.tables.len() > 1 {
        let name = pick(rng, &m.tables).unwrap().0.clone();
        tx.drop_table(&name)?;
        m.tables.remove(&name);
        return Ok(());
    }
    let name = pick(rng, &m.tables).unwrap().0.clone();
    let t = tx.table(&name)?;
    let rows = m.tables.get_mut(&name).unwrap();
    let existing = pick(rng, rows).map(|(k, v)| (*k, v.0));
    let ix = tx.index(&key_index(&name)).ok();
    let by_key = ix.as_ref().filter(|_| rng.random_bool(0.5));
    let row = Row { qty: rng.random_range(-1000..1000), note: note(rng) };
    match (choice, existing) {
        (5..60, _) | (_, None) => {
            let key = m.next_key;
            m.next_key += 1;
            let id = match by_key {
                Some(ix) => match tx.upsert(ix, &values(key, &row))? {
                    nvpage::Upserted::Inserted(id) => id,
                    other => panic!("upsert of the new key {key}: {other:?}"),
                },
                None => tx.insert(&t, &values(key, &row))?,
            };
            rows.insert(key, (id, row));
        }
        (60..85, Some((key, id))) => {
            let set = [("qty", Value::I32(row.qty)), ("note", row.note.as_deref().into())];
            let id = match (by_key, rng.random_range(0..3)) {
                (Some(ix), 0) => match tx.upsert(ix, &values(key, &row))? {
                    nvpage::Upserted::Updated(id) => id,
                    other => panic!("upsert of the held key {key}: {other:?}"),
                },
                (Some(ix), _) => tx.update_by(ix, &[Value::I64(key)], &set)?.expect("a held key"),
                (None, 0) => tx.update_columns(&t, id, &set)?,
                (None, _) => tx.update(&t, id, &values(key, &row))?,
            };
            rows.insert(key, (id, row));
        }
        (_, Some((key, id))) => {
            match by_key {
                Some(ix) => assert!(tx.delete_by(ix, &[Value::I64(key)])?, "a held key {key}"),
                None => tx.delete(&t, id)?,
            }
            rows.remove(&key);
        }
    }
    Ok(())
}

/// A seeded RNG.
pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}
