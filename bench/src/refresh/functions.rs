//! The refresh functions as nvpage write transactions, one function per transaction.
//!
//! - **RF1** inserts a refresh set: each order, then its lineitems (clause 2.5's order), and
//!   commits.
//! - **RF2** deletes a refresh set by key: it finds the rows whose order key is one of the set's
//!   inside its transaction — by a scan of `orders` and `lineitem` ([`Lookup::Scan`]), or
//!   through the primary-key indexes the loader builds ([`Lookup::Index`]: `orders(o_orderkey)`,
//!   and `lineitem(l_orderkey, l_linenumber)` by its first column) — deletes them, and commits.
//!   Either way RF1 and RF2 keep every index of the two tables up to date. It is given keys, never row ids
//!   remembered from the RF1 that inserted them, and it fails unless it finds exactly the set's
//!   rows.
//!
//! A commit returns only when the transaction is durable in the database's persistence mode
//! (forced pages, then the log's rewind): the times measured here are durable writes.

use clap::ValueEnum;
use nvpage::{Database, ReadOps, RowId, Table, Value, WriteTxn, kind};
use serde::Serialize;

use super::sets::RefreshSet;
use crate::BoxError;
use crate::tpch::load::{lineitem_values, order_values};
use crate::tpch::queries::KeyMap;

/// How RF2 finds the rows of its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Lookup {
    /// A scan of each table (TPC-H's refresh without indexes).
    Scan,
    /// The loader's primary-key indexes, [`ORDERS_INDEX`] and [`LINEITEM_INDEX`].
    Index,
}

impl Lookup {
    /// The name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Lookup::Scan => "scan",
            Lookup::Index => "index",
        }
    }
}

/// The primary-key index on `orders(o_orderkey)` that [`Lookup::Index`] uses.
pub const ORDERS_INDEX: &str = "orders_pkey";
/// The primary-key index on `lineitem(l_orderkey, l_linenumber)` that [`Lookup::Index`] uses
/// by its first column.
pub const LINEITEM_INDEX: &str = "lineitem_pkey";

/// Rows one refresh function changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Changed {
    /// Orders inserted or deleted.
    pub orders: u64,
    /// Lineitems inserted or deleted.
    pub lineitems: u64,
}

/// RF1: inserts `set`'s orders and lineitems in one write transaction and commits it.
pub fn rf1(db: &Database, set: &RefreshSet) -> Result<Changed, BoxError> {
    let mut tx = db.begin_write()?;
    let orders = tx.table("orders")?;
    let lineitem = tx.table("lineitem")?;
    let mut clerk = String::new();
    let mut lines = set.lines.iter().peekable();
    for o in &set.orders {
        tx.insert(&orders, &order_values(o, &mut clerk))?;
        while let Some(l) = lines.next_if(|l| l.l_orderkey == o.o_orderkey) {
            tx.insert(&lineitem, &lineitem_values(l))?;
        }
    }
    if let Some(l) = lines.next() {
        return Err(format!(
            "refresh set {}: lineitem of order {} out of its order's place",
            set.index, l.l_orderkey
        )
        .into());
    }
    tx.commit()?;
    Ok(Changed { orders: set.orders.len() as u64, lineitems: set.lines.len() as u64 })
}

/// The rows of `table` whose `key_column` is one of `keys`, by a scan in `tx`.
fn find_by_scan(
    tx: &WriteTxn<'_>,
    table: &Table,
    key_column: &str,
    keys: &KeyMap<i64, ()>,
) -> Result<Vec<RowId>, BoxError> {
    let key = table.col::<kind::I64>(key_column)?;
    let mut found = Vec::new();
    tx.for_each_row(table, |r| {
        if keys.contains_key(&r.get(key)?) {
            found.push(r.id());
        }
        Ok(())
    })?;
    Ok(found)
}

/// The rows whose key in index `index` is one of `keys`, by a lookup per key in `tx`.
fn find_by_index(
    tx: &WriteTxn<'_>,
    index: &str,
    keys: &KeyMap<i64, ()>,
) -> Result<Vec<RowId>, BoxError> {
    let index = tx.index(index)?;
    let mut found = Vec::new();
    for &k in keys.keys() {
        for row in tx.lookup(&index, &[Value::I64(k)])? {
            found.push(row?.row()?.id());
        }
    }
    Ok(found)
}

/// RF2: deletes `set`'s orders and lineitems, found by key as `lookup` says, in one write
/// transaction, and commits it. An error unless it finds exactly the set's rows.
pub fn rf2(db: &Database, set: &RefreshSet, lookup: Lookup) -> Result<Changed, BoxError> {
    let keys = set.keys();
    let mut tx = db.begin_write()?;
    let orders = tx.table("orders")?;
    let lineitem = tx.table("lineitem")?;
    let (order_rows, line_rows) = match lookup {
        Lookup::Scan => (
            find_by_scan(&tx, &orders, "o_orderkey", &keys)?,
            find_by_scan(&tx, &lineitem, "l_orderkey", &keys)?,
        ),
        Lookup::Index => {
            (find_by_index(&tx, ORDERS_INDEX, &keys)?, find_by_index(&tx, LINEITEM_INDEX, &keys)?)
        }
    };
    if order_rows.len() != set.orders.len() || line_rows.len() != set.lines.len() {
        return Err(format!(
            "RF2 of refresh set {} found {} orders and {} lineitems by key ({}), not the {} and \
             {} RF1 inserted",
            set.index,
            order_rows.len(),
            line_rows.len(),
            lookup.name(),
            set.orders.len(),
            set.lines.len()
        )
        .into());
    }
    for id in &order_rows {
        tx.delete(&orders, *id)?;
    }
    for id in &line_rows {
        tx.delete(&lineitem, *id)?;
    }
    tx.commit()?;
    Ok(Changed { orders: order_rows.len() as u64, lineitems: line_rows.len() as u64 })
}
