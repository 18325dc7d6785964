//! Writes that say what they change by name and by key: [`WriteTxn::update_columns`] sets named
//! columns of a row; [`WriteTxn::update_by`], [`WriteTxn::delete_by`] and [`WriteTxn::upsert`]
//! find their row through a unique index's key. Each is one statement, and keeps the table's
//! indexes right as `insert`, `update` and `delete` do: one that fails before it changes anything
//! (an unknown column, a value that does not fit, a unique violation, a row that is not there)
//! leaves the transaction as it was; one that fails after dooms it.

use nvpage_buffer::View;

use super::WriteTxn;
use super::clustered::Put;
use crate::catalog::{IndexMeta, TableMeta};
use crate::error::{Error, Result};
use crate::index::tree::{find_exact, missing_row};
use crate::index::{Index, key};
use crate::row::{OwnedValue, RowRef, Value, encode_row};
use crate::schema::Schema;
use crate::table::{RowId, Storage, Table};
use crate::txn::ReadOps;

/// What [`WriteTxn::upsert`] did, with the row's id after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upserted {
    /// No row held the key: the values are a new row.
    Inserted(RowId),
    /// The row that held the key holds the values now (its id changes if it grew out of its
    /// page, as [`WriteTxn::update`]'s does).
    Updated(RowId),
}

impl Upserted {
    /// The row's id.
    pub fn id(self) -> RowId {
        match self {
            Upserted::Inserted(id) | Upserted::Updated(id) => id,
        }
    }
}

/// The row [`WriteTxn::find_by`] found.
enum Found {
    /// A heap table's row, by id.
    Heap(RowId),
    /// A clustered table's row: its key, a copy of its bytes, and the leaf that holds it.
    Keyed { key: Vec<u8>, row: Vec<u8>, leaf: u64 },
    /// No row has the key.
    None,
}

/// The values of `row` (encoded, of `schema`).
fn values_of(schema: &Schema, row: &[u8]) -> Result<Vec<OwnedValue>> {
    let r = RowRef::new(schema, row, RowId::KEYED)?;
    (0..schema.columns().len()).map(|i| r.value(i)).collect()
}

/// The columns `set` names, as indexes into `schema`, each with its new value.
fn resolve<'v>(schema: &Schema, set: &[(&str, Value<'v>)]) -> Result<Vec<(usize, Value<'v>)>> {
    let mut seen = vec![false; schema.columns().len()];
    set.iter()
        .map(|(name, v)| {
            let i = schema.index_of(name)?;
            if std::mem::replace(&mut seen[i], true) {
                return Err(Error::DuplicateColumn((*name).into()));
            }
            Ok((i, v.clone()))
        })
        .collect()
}

impl WriteTxn<'_> {
    /// Sets the named columns of row `id` of `table` to the values given and keeps the others;
    /// returns the row's id, which changes if the row grew out of its page (as
    /// [`WriteTxn::update`]'s does). A column the table lacks is [`Error::UnknownColumn`], one
    /// named twice [`Error::DuplicateColumn`]; both, like a value that does not fit its column,
    /// leave the transaction as it was.
    ///
    /// ```
    /// # use nvpage::{Column, ColumnType, Database, ReadOps, Schema, kind};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path().join("db"))?;
    /// let schema = Schema::new(vec![
    ///     Column::new("name", ColumnType::VarChar { max_len: 20 }),
    ///     Column::new("balance", ColumnType::I64),
    /// ])?;
    /// let mut w = db.begin_write()?;
    /// let t = w.create_table("users", schema)?;
    /// let id = w.insert(&t, &["ada".into(), 100i64.into()])?;
    /// let balance = w.get(&t, id)?.row()?.get_named::<kind::I64>("balance")?;
    /// let id = w.update_columns(&t, id, &[("balance", (balance - 30).into())])?;
    /// assert_eq!(w.get(&t, id)?.row()?.get_named::<kind::I64>("balance")?, 70);
    /// assert_eq!(w.get(&t, id)?.row()?.get_named::<kind::Str>("name")?, "ada");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn update_columns(
        &mut self,
        table: &Table,
        id: RowId,
        set: &[(&str, Value<'_>)],
    ) -> Result<RowId> {
        self.statement(|t| {
            t.live(table)?.by_id()?;
            let set = resolve(table.schema(), set)?;
            t.set_columns(table, id, &set)
        })
    }

    /// [`WriteTxn::update_columns`] on the row whose key in the unique index `index` is `key`
    /// (a value for each of its columns): the row's id after it, or `None` if no row has the key
    /// (a key with a NULL is no row's: NULLs never equal). The columns are checked by name
    /// whether or not a row has the key; the values against their types only where one does.
    /// An index whose keys may repeat is [`Error::NotUnique`]. Given a clustered table's primary
    /// key ([`Storage::Clustered`]), the row is changed in its leaf, a change of the key's own
    /// columns moves it to its new key (refused, with nothing changed, where another row holds
    /// that key), and the id returned is [`RowId::KEYED`].
    ///
    /// ```
    /// # use nvpage::{Column, ColumnType, Database, ReadOps, Schema, Value, kind};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path().join("db"))?;
    /// # let schema = Schema::new(vec![
    /// #     Column::new("email", ColumnType::VarChar { max_len: 40 }),
    /// #     Column::new("balance", ColumnType::I64),
    /// # ])?;
    /// let mut w = db.begin_write()?;
    /// let t = w.create_table("users", schema)?;
    /// let by_email = w.create_unique_index("users_email", &t, &["email"])?;
    /// w.insert(&t, &["ada@example.com".into(), 100i64.into()])?;
    /// let moved = w.update_by(&by_email, &["ada@example.com".into()], &[("balance", 70i64.into())])?;
    /// assert!(moved.is_some());
    /// assert_eq!(w.update_by(&by_email, &["bob@example.com".into()], &[("balance", 1i64.into())])?, None);
    /// let g = w.get_by(&by_email, &[Value::Str("ada@example.com")])?.expect("ada's row");
    /// assert_eq!(g.row()?.get_named::<kind::I64>("balance")?, 70);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn update_by(
        &mut self,
        index: &Index,
        key: &[Value<'_>],
        set: &[(&str, Value<'_>)],
    ) -> Result<Option<RowId>> {
        self.statement(|t| {
            let (table, found) = t.find_by(index, key)?;
            let set = resolve(table.schema(), set)?;
            match found {
                Found::Heap(id) => t.set_columns(&table, id, &set).map(Some),
                Found::Keyed { key: k, row: old, leaf } => {
                    let old = values_of(table.schema(), &old)?;
                    let mut values: Vec<Value<'_>> = old.iter().map(OwnedValue::as_value).collect();
                    for (i, v) in &set {
                        values[*i] = v.clone();
                    }
                    let mut buf = std::mem::take(&mut t.buf);
                    let r = encode_row(table.schema(), &values, &mut buf).and_then(|()| {
                        let put = Put::Replace { old: &k, leaf: Some(leaf) };
                        t.clustered_write(t.live(&table)?, &buf, put)
                    });
                    t.buf = buf;
                    r.map(|_| Some(RowId::KEYED))
                }
                Found::None => Ok(None),
            }
        })
    }

    /// Deletes the row whose key in the unique index `index` is `key` (a value for each of its
    /// columns); `false` if no row has the key (a key with a NULL is no row's). An index whose
    /// keys may repeat is [`Error::NotUnique`].
    pub fn delete_by(&mut self, index: &Index, key: &[Value<'_>]) -> Result<bool> {
        self.statement(|t| {
            let (table, found) = t.find_by(index, key)?;
            match found {
                Found::Heap(id) => t.delete_row(t.live(&table)?, id).map(|()| true),
                Found::Keyed { key, .. } => t.clustered_delete(t.live(&table)?, &key),
                Found::None => Ok(false),
            }
        })
    }

    /// Inserts `values` as a row of the table of the unique index `index`, or, if a row has
    /// their key in it, replaces that row's values with them. Other unique indexes of the table
    /// are checked as an insert or update checks them ([`Error::UniqueViolation`], nothing
    /// changed). A row whose key has a NULL is always inserted (NULLs never collide). An index
    /// whose keys may repeat is [`Error::NotUnique`]. Given a clustered table's other unique
    /// index, the row that holds the key there is replaced, and moves where the values' primary
    /// key is another (refused, with nothing changed, where a third row holds it).
    ///
    /// ```
    /// # use nvpage::{Column, ColumnType, Database, ReadOps, Schema, Upserted, kind};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path().join("db"))?;
    /// # let schema = Schema::new(vec![
    /// #     Column::new("name", ColumnType::VarChar { max_len: 20 }),
    /// #     Column::new("visits", ColumnType::I64),
    /// # ])?;
    /// let mut w = db.begin_write()?;
    /// let t = w.create_table("visits", schema)?;
    /// let by_name = w.create_unique_index("visits_name", &t, &["name"])?;
    /// let first = w.upsert(&by_name, &["ada".into(), 1i64.into()])?;
    /// assert!(matches!(first, Upserted::Inserted(_)));
    /// let again = w.upsert(&by_name, &["ada".into(), 2i64.into()])?;
    /// assert!(matches!(again, Upserted::Updated(_)));
    /// assert_eq!(w.row_count(&t)?, 1);
    /// assert_eq!(w.get(&t, again.id())?.row()?.get_named::<kind::I64>("visits")?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn upsert(&mut self, index: &Index, values: &[Value<'_>]) -> Result<Upserted> {
        self.statement(|t| {
            let table = Table::from_meta(t.unique(index)?.1);
            let table = t.live(&table)?;
            let mut buf = std::mem::take(&mut t.buf);
            let r = encode_row(table.schema(), values, &mut buf).and_then(|()| {
                if table.storage() == Storage::Clustered {
                    let (x, _) = t.unique(index)?;
                    let replaced = if x.clustered {
                        t.clustered_write(table, &buf, Put::Upsert)?
                    } else {
                        // Another unique index: the row that holds the key there is replaced
                        // (moved, where the primary key differs), or the row is new.
                        let r = RowRef::new(table.schema(), &buf, RowId::KEYED)?;
                        match t.keyed_holder(x, table.schema(), &r)? {
                            Some(pk) => {
                                let put = Put::Replace { old: &pk, leaf: None };
                                t.clustered_write(table, &buf, put)?
                            }
                            None => t.clustered_write(table, &buf, Put::Insert)?,
                        }
                    };
                    return Ok(if replaced {
                        Upserted::Updated(RowId::KEYED)
                    } else {
                        Upserted::Inserted(RowId::KEYED)
                    });
                }
                match t.holder(index, &buf)? {
                    Some(id) => t.update_encoded(table, id, &buf).map(Upserted::Updated),
                    None => t.insert_row(table, &buf).map(Upserted::Inserted),
                }
            });
            t.buf = buf;
            r
        })
    }

    /// The unique index `index` was made for, and its table: [`Error::UnknownIndex`] where it
    /// does not exist in this transaction (R9), [`Error::NotUnique`] if its keys may repeat.
    fn unique(&self, index: &Index) -> Result<(&IndexMeta, &TableMeta)> {
        let x = self
            .catalog
            .index_by_stamp(index.stamp)
            .ok_or_else(|| Error::UnknownIndex(index.name().into()))?;
        if !x.unique {
            return Err(Error::NotUnique(x.name.clone()));
        }
        let t = self
            .catalog
            .table_by_id(x.table_id)
            .ok_or_else(|| Error::UnknownTable(index.table_name().into()))?;
        Ok((x, t))
    }

    /// The table of the unique index `index`, and the row whose key in it is `key` (a value for
    /// each column), if one has it.
    fn find_by(&self, index: &Index, key: &[Value<'_>]) -> Result<(Table, Found)> {
        let (x, t) = self.unique(index)?;
        if key.len() != x.columns.len() {
            return Err(Error::WrongArity { expected: x.columns.len(), found: key.len() });
        }
        let table = Table::from_meta(t);
        if key.iter().any(|v| matches!(v, Value::Null)) {
            return Ok((table, Found::None));
        }
        let k = key::encoded(&t.schema, &x.columns, key)?;
        if x.clustered {
            let ix = self.clustered_ix(t.id)?;
            return Ok(match self.clustered_row_at(ix, &k)? {
                Some((row, leaf)) => (table, Found::Keyed { key: k, row, leaf }),
                None => (table, Found::None),
            });
        }
        if x.keyed {
            // Another index of a clustered table: its entry names the row by primary key.
            let Some((pk, leaf)) = self.keyed_entry(x, &k)? else {
                return Ok((table, Found::None));
            };
            let ix = self.clustered_ix(t.id)?;
            let (row, leaf) =
                self.clustered_row_at(ix, &pk)?.ok_or_else(|| missing_row(x, leaf))?;
            return Ok((table, Found::Keyed { key: pk, row, leaf }));
        }
        let found = find_exact(self.db, View::Writer, x, &k)?;
        Ok((table, found.map_or(Found::None, Found::Heap)))
    }

    /// The row that holds the key of `row` (encoded, of the index's table) in the unique index
    /// `index`, if one does; `None` for a key with a NULL.
    fn holder(&self, index: &Index, row: &[u8]) -> Result<Option<RowId>> {
        let (x, t) = self.unique(index)?;
        let r = RowRef::new(&t.schema, row, RowId { page: 0, slot: 0 })?;
        self.key_holder(x, &t.schema, &r, &mut Vec::new())
    }

    /// Row `id` of `table` with the columns of `set` changed: the row is read, changed as
    /// values, and encoded again.
    fn set_columns(
        &mut self,
        table: &Table,
        id: RowId,
        set: &[(usize, Value<'_>)],
    ) -> Result<RowId> {
        let table = self.live(table)?;
        let schema = table.schema();
        let old: Vec<OwnedValue> = {
            let g = self.get(&table, id)?;
            let row = g.row()?;
            (0..schema.columns().len()).map(|i| row.value(i)).collect::<Result<_>>()?
        };
        let mut values: Vec<Value<'_>> = old.iter().map(OwnedValue::as_value).collect();
        for (i, v) in set {
            values[*i] = v.clone();
        }
        let mut buf = std::mem::take(&mut self.buf);
        let r = encode_row(schema, &values, &mut buf)
            .and_then(|()| self.update_encoded(table, id, &buf));
        self.buf = buf;
        r
    }
}
