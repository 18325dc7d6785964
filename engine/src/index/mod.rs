//! Ordered indexes: B+trees over a table's columns, on pages of the buffer manager.
//!
//! - `key`: the order-preserving byte encoding of keys (compared with `memcmp`).
//! - `node`: the index page format.
//! - `tree`: descents, and the writer's insert, remove and bulk build.
//! - `scan`: range scans in both directions, as iterators of rows in place.
//! - `spill`: the overflow pages of a clustered table's rows too long for a leaf entry.
//! - `verify`: what `check` verifies of each index.
//!
//! A unique index's key is its columns; a non-unique index's key is its columns then the row id
//! (so entries are distinct, in key then row id order), as is a unique index's key with a NULL
//! column (NULLs never collide, as in SQL). Every leaf entry's value is the row's id.
//!
//! A clustered table's rows have no ids (they move as leaves split): its primary key's leaves
//! hold the rows themselves, and its other indexes (`IndexMeta::keyed`) hold primary keys
//! instead of row ids. Each entry's value is its row's encoded primary key, and where a key
//! would end with a row id it ends with those bytes (entries in key then primary key order); a
//! read through such an index finds the row by its key in the table's tree.

pub(crate) mod key;
pub(crate) mod node;
mod scan;
pub(crate) mod spill;
pub(crate) mod tree;
pub(crate) mod verify;

use std::sync::Arc;

pub(crate) use scan::get_by;
pub use scan::{IndexIds, IndexScan};

use crate::catalog::{IndexMeta, Stamp, TableMeta};
use crate::error::{Error, Result};
use crate::row::RowRef;
use crate::schema::Schema;
use crate::table::DropTarget;

/// A handle on an index, from [`ReadOps::index`](crate::ReadOps::index) or
/// [`WriteTxn::create_index`](crate::WriteTxn::create_index). Cheap to clone.
///
/// A handle names one index for its whole life, as a [`Table`](crate::Table) does (see there):
/// wherever the index it was made for does not exist in the transaction's view — its create not
/// committed in the reader's snapshot or rolled back, the index or its table dropped (even where
/// another took its name or id since), another database, an earlier open of this one — every
/// operation given the handle is [`Error::UnknownIndex`](crate::Error::UnknownIndex), never a
/// lookup in another index.
#[derive(Clone, Debug)]
pub struct Index {
    pub(crate) stamp: Stamp,
    name: Arc<str>,
    table: Arc<str>,
    columns: Arc<[String]>,
    unique: bool,
    primary: bool,
}

impl Index {
    pub(crate) fn from_meta(x: &IndexMeta, t: &TableMeta) -> Self {
        let names = x.columns.iter().map(|&c| t.schema.columns()[usize::from(c)].name.clone());
        Self {
            stamp: x.stamp,
            name: x.name.as_str().into(),
            table: t.name.as_str().into(),
            columns: names.collect(),
            unique: x.unique,
            primary: x.primary,
        }
    }

    /// The index's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name of the table it indexes.
    pub fn table_name(&self) -> &str {
        &self.table
    }

    /// Its key's columns, in key order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Whether a key appears at most once (keys with a NULL excepted).
    pub fn is_unique(&self) -> bool {
        self.unique
    }

    /// Whether the index is its table's primary key
    /// ([`ReadOps::primary_key`](crate::ReadOps::primary_key)).
    pub fn is_primary(&self) -> bool {
        self.primary
    }
}

impl<'a> From<&'a Index> for DropTarget<'a, Index> {
    fn from(handle: &'a Index) -> Self {
        DropTarget::Handle(handle)
    }
}

/// Sets `out` to the entry key of `row` (of `schema`) in index `x`: its columns, then its row
/// id (a clustered table's index: its primary key) unless the index is unique and no column is
/// NULL.
pub(crate) fn row_key(
    x: &IndexMeta,
    schema: &Schema,
    row: &RowRef<'_>,
    out: &mut Vec<u8>,
) -> Result<()> {
    out.clear();
    key::encode_row(schema, &x.columns, row, out)?;
    if !x.unique || x.columns.iter().any(|&c| row.is_null(usize::from(c))) {
        put_row_name(x, schema, row, out)?;
    }
    Ok(())
}

/// Appends what names `row` in index `x`: its primary key's bytes in a clustered table's index,
/// else its row id's.
fn put_row_name(x: &IndexMeta, schema: &Schema, row: &RowRef<'_>, out: &mut Vec<u8>) -> Result<()> {
    if x.keyed {
        put_primary_key(schema, row, out)
    } else {
        key::put_row_id(out, row.id());
        Ok(())
    }
}

/// Appends `row`'s primary key (of `schema`, a clustered table's), encoded as the table's tree
/// keys it: an entry's value in the table's other indexes.
pub(crate) fn put_primary_key(schema: &Schema, row: &RowRef<'_>, out: &mut Vec<u8>) -> Result<()> {
    let pk = schema.primary_key().ok_or_else(|| {
        Error::CorruptCatalog("an index of primary keys on a table without one".into())
    })?;
    for &c in pk {
        key::encode_row(schema, &[c as u16], row, out)?;
    }
    Ok(())
}

/// The value of `row`'s entry in index `x`: its primary key's bytes in a clustered table's
/// index, else its row id's.
pub(crate) fn entry_value(
    x: &IndexMeta,
    schema: &Schema,
    row: &RowRef<'_>,
    out: &mut Vec<u8>,
) -> Result<()> {
    out.clear();
    put_row_name(x, schema, row, out)
}

/// `row`'s key in index `x` as its values, for messages.
pub(crate) fn describe_key(x: &IndexMeta, row: &RowRef<'_>) -> String {
    let values: Vec<String> = x
        .columns
        .iter()
        .map(|&c| match row.value(usize::from(c)) {
            Ok(v) => v.as_value().to_string(),
            Err(_) => "?".into(),
        })
        .collect();
    format!("({})", values.join(", "))
}
