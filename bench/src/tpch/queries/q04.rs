//! Q4, order priority checking: how many orders of 1993Q3 had at least one lineitem received
//! after its commit date, per priority. Decorrelated: `EXISTS` is a semi-join. Plan: orders of
//! the quarter → hash map to their priority; lineitem, late lines only, probes it and collects
//! the orders found; each order counted once.

use nvpage::{ReadOps, ReadTxn, kind};

use super::ops::{KeySet, collect};
use super::{KeyMap, QueryResult, ymd};

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let (from, to) = (ymd(1993, 7, 1), ymd(1993, 10, 1));
    let ot = rx.table("orders")?;
    let o_key = ot.col::<kind::I64>("o_orderkey")?;
    let o_date = ot.col::<kind::Date>("o_orderdate")?;
    let o_prio = ot.col::<kind::Str>("o_orderpriority")?;
    let orders: KeyMap<i64, String> = collect(rx, &ot, threads, |r| {
        let d = r.get(o_date)?;
        if d < from || d >= to {
            return Ok(None);
        }
        Ok(Some((r.get(o_key)?, r.get(o_prio)?.to_string())))
    })?
    .into_iter()
    .collect();

    let lt = rx.table("lineitem")?;
    let l_key = lt.col::<kind::I64>("l_orderkey")?;
    let l_commit = lt.col::<kind::Date>("l_commitdate")?;
    let l_receipt = lt.col::<kind::Date>("l_receiptdate")?;
    let late = collect(rx, &lt, threads, |r| {
        let k = r.get(l_key)?;
        Ok((orders.contains_key(&k) && r.get(l_commit)? < r.get(l_receipt)?).then_some(k))
    })?;
    let late: KeySet<i64> = late.into_iter().collect();

    let mut counts: Vec<(&str, u64)> = Vec::new();
    for k in &late {
        let p = orders[k].as_str();
        match counts.iter_mut().find(|(x, _)| *x == p) {
            Some((_, n)) => *n += 1,
            None => counts.push((p, 1)),
        }
    }
    counts.sort();
    let mut out = QueryResult::new(&["o_orderpriority", "order_count"]);
    for (p, n) in counts {
        out.rows.push(vec![p.to_string(), n.to_string()]);
    }
    Ok(out)
}
