//! The refresh functions as nvpage write transactions, one function per transaction.
//!
//! - **RF1** inserts a refresh set: each order, then its lineitems (clause 2.5's order), and
//!   commits.
//! - **RF2** deletes a refresh set by key: with no index, it scans `orders` and `lineitem` inside
//!   its transaction for rows whose order key is one of the set's, deletes them, and commits. It
//!   is given keys, never row ids remembered from the RF1 that inserted them, and it fails unless
//!   it finds exactly the set's rows.
//!
//! A commit returns only when the transaction is durable in the database's persistence mode
//! (forced pages, then the log's rewind): the times measured here are durable writes.

use nvpage::{Database, ReadOps, RowId, Table, WriteTxn, kind};

use super::sets::RefreshSet;
use crate::BoxError;
use crate::tpch::load::{lineitem_values, order_values};
use crate::tpch::queries::KeyMap;

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
fn find(
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

/// RF2: deletes `set`'s orders and lineitems, found by key with a scan of each table, in one
/// write transaction, and commits it. An error unless it finds exactly the set's rows.
pub fn rf2(db: &Database, set: &RefreshSet) -> Result<Changed, BoxError> {
    let keys = set.keys();
    let mut tx = db.begin_write()?;
    let orders = tx.table("orders")?;
    let lineitem = tx.table("lineitem")?;
    let order_rows = find(&tx, &orders, "o_orderkey", &keys)?;
    let line_rows = find(&tx, &lineitem, "l_orderkey", &keys)?;
    if order_rows.len() != set.orders.len() || line_rows.len() != set.lines.len() {
        return Err(format!(
            "RF2 of refresh set {} found {} orders and {} lineitems by key, not the {} and {} \
             RF1 inserted",
            set.index,
            order_rows.len(),
            line_rows.len(),
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
