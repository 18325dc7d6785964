//! Q18, large volume customer: the 100 orders (by total price) of more than 300 units, with
//! their customer. Decorrelated: `IN` over a grouped subquery is a semi-join with the groups
//! that pass `HAVING`. Plan: lineitem → quantity per order (hash aggregate); the orders above
//! 300; orders probes them; customer reads the names of the top 100's customers.

use nvpage::{Date, ReadOps, ReadTxn, kind};

use super::ops::{aggregate, collect, top_n};
use super::{KeyMap, QueryResult, scaled};

/// 300 units, in hundredths.
const MIN_QTY: i64 = 300 * 100;

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let lt = rx.table("lineitem")?;
    let l_key = lt.col::<kind::I64>("l_orderkey")?;
    let l_qty = lt.col::<kind::Units>("l_quantity")?;
    let qty = aggregate(rx, &lt, threads, |r| Ok(Some((r.get(l_key)?, r.get(l_qty)?))))?;
    let big: KeyMap<i64, i64> = qty.into_iter().filter(|&(_, q)| q > MIN_QTY).collect();

    let ot = rx.table("orders")?;
    let o_key = ot.col::<kind::I64>("o_orderkey")?;
    let o_cust = ot.col::<kind::I64>("o_custkey")?;
    let o_date = ot.col::<kind::Date>("o_orderdate")?;
    let o_price = ot.col::<kind::Units>("o_totalprice")?;
    // (total price, date, order, customer, quantity)
    let orders: Vec<(i64, Date, i64, i64, i64)> = collect(rx, &ot, threads, |r| {
        let k = r.get(o_key)?;
        let Some(&q) = big.get(&k) else { return Ok(None) };
        Ok(Some((r.get(o_price)?, r.get(o_date)?, k, r.get(o_cust)?, q)))
    })?;
    let top = top_n(orders, 100, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));

    let ct = rx.table("customer")?;
    let c_key = ct.col::<kind::I64>("c_custkey")?;
    let c_name = ct.col::<kind::Str>("c_name")?;
    let mut names: KeyMap<i64, Option<String>> = top.iter().map(|o| (o.3, None)).collect();
    rx.for_each_row(&ct, |r| {
        if let Some(slot) = names.get_mut(&r.get(c_key)?) {
            *slot = Some(r.get(c_name)?.to_string());
        }
        Ok(())
    })?;
    let mut out = QueryResult::new(&[
        "c_name",
        "c_custkey",
        "o_orderkey",
        "o_orderdate",
        "o_totalprice",
        "sum(l_quantity)",
    ]);
    for (price, date, k, c, q) in top {
        // An order's customer is always in customer (a foreign key); the inner join drops it
        // otherwise.
        let Some(Some(name)) = names.get(&c) else { continue };
        out.rows.push(vec![
            name.clone(),
            c.to_string(),
            k.to_string(),
            date.to_string(),
            scaled(i128::from(price), 2),
            scaled(i128::from(q), 2),
        ]);
    }
    Ok(out)
}
