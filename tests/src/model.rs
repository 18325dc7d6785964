//! A model of a database's committed contents and a reader that compares a database with it,
//! shared by the `api_countdown` fuzz body and the soak and corruption scenarios.
//!
//! Every table has one schema: a unique key, a number, and a nullable note whose length varies
//! (long notes make updates grow rows and move them between pages).

use std::collections::BTreeMap;

use nvpage::{Column, ColumnType, Database, ReadOps, RowId, Schema, Value, kind};

/// The schema of every model table.
pub fn schema() -> Schema {
    Schema::new(vec![
        Column::new("key", ColumnType::I64),
        Column::new("qty", ColumnType::I32),
        Column::nullable("note", ColumnType::VarChar { max_len: 3000 }),
    ])
    .expect("a valid schema")
}

/// A row besides its key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Where it lives.
    pub id: RowId,
    /// Its number.
    pub qty: i32,
    /// Its note.
    pub note: Option<String>,
}

impl Row {
    /// The values to insert for `key`.
    pub fn values(&self, key: i64) -> [Value<'_>; 3] {
        [
            Value::I64(key),
            Value::I32(self.qty),
            self.note.as_deref().map_or(Value::Null, Value::Str),
        ]
    }
}

/// Table name → key → row.
pub type Tables = BTreeMap<String, BTreeMap<i64, Row>>;

/// Reads every table of `db` (scan, catalog row count) into a [`Tables`]; any error, a key seen
/// twice or a count that disagrees with the scan is `Err`.
pub fn contents(db: &Database) -> Result<Tables, String> {
    let rx = db.begin_read().map_err(|e| format!("begin_read: {e}"))?;
    let mut out = Tables::new();
    for t in rx.tables() {
        let err = |e: nvpage::Error| format!("table {}: {e}", t.name());
        let key = t.col::<kind::I64>("key").map_err(err)?;
        let qty = t.col::<kind::I32>("qty").map_err(err)?;
        let note = t.col::<kind::Str>("note").map_err(err)?;
        let mut rows = BTreeMap::new();
        for page in rx.scan(&t).map_err(err)? {
            let page = page.map_err(err)?;
            for r in page.rows() {
                let r = r.map_err(err)?;
                let k = r.get(key).map_err(err)?;
                let row = Row {
                    id: r.id(),
                    qty: r.get(qty).map_err(err)?,
                    note: r.get_opt(note).map_err(err)?.map(str::to_string),
                };
                if rows.insert(k, row).is_some() {
                    return Err(format!("table {}: key {k} twice", t.name()));
                }
            }
        }
        let counted = rx.row_count(&t).map_err(err)?;
        if counted != rows.len() as u64 {
            return Err(format!(
                "table {}: catalog counts {counted}, scan {}",
                t.name(),
                rows.len()
            ));
        }
        out.insert(t.name().to_string(), rows);
    }
    Ok(out)
}

/// Compares `db` with `want`; `Err` names the first difference.
pub fn compare(db: &Database, want: &Tables) -> Result<(), String> {
    let got = contents(db)?;
    if got == *want {
        return Ok(());
    }
    if got.keys().ne(want.keys()) {
        return Err(format!(
            "tables {:?}, expected {:?}",
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>()
        ));
    }
    for (name, rows) in want {
        let g = &got[name];
        if let Some((k, _)) = rows.iter().chain(g.iter()).find(|(k, _)| rows.get(k) != g.get(k)) {
            return Err(format!(
                "table {name} key {k}: found {:?}, expected {:?}",
                g.get(k),
                rows.get(k)
            ));
        }
    }
    Err("contents differ".into())
}

/// The generation in a log file's state word, as the file holds it (`u64::MAX` if the word is
/// damaged or missing).
pub fn log_generation(log_file: &[u8]) -> u64 {
    use nvpage_wal::layout::{STATE_OFFSET, State};
    let w = log_file.get(STATE_OFFSET..STATE_OFFSET + 8).map_or([0; 8], |b| b.try_into().unwrap());
    State::decode(u64::from_le_bytes(w)).map_or(u64::MAX, |s| u64::from(s.generation))
}
