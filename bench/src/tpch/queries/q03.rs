//! Q3, shipping priority: the ten unshipped orders of the BUILDING segment with the highest
//! revenue as of 1995-03-15. Plan: customer → dense set of keys; orders filtered by date and
//! customer → hash map; lineitem probes it and sums revenue per order.

use nvpage::{Date, ReadOps, ReadTxn, kind};

use super::{KeyMap, QueryResult, at, disc_price, merge_sums, put, scaled, ymd};

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let day = ymd(1995, 3, 15);
    let c = rx.table("customer")?;
    let (c_key, c_seg) = (c.col::<kind::I64>("c_custkey")?, c.col::<kind::Bytes>("c_mktsegment")?);
    let mut building = Vec::new();
    rx.for_each_row(&c, |r| {
        if r.get(c_seg)? == b"BUILDING" {
            put(&mut building, r.get(c_key)?, true, false);
        }
        Ok(())
    })?;

    let o = rx.table("orders")?;
    let o_key = o.col::<kind::I64>("o_orderkey")?;
    let o_cust = o.col::<kind::I64>("o_custkey")?;
    let o_date = o.col::<kind::Date>("o_orderdate")?;
    let o_prio = o.col::<kind::I32>("o_shippriority")?;
    let orders = rx.par_fold(
        &o,
        threads,
        Vec::new,
        |mut v, r| {
            let d = r.get(o_date)?;
            if d < day && at(&building, r.get(o_cust)?) == Some(true) {
                v.push((r.get(o_key)?, (d, r.get(o_prio)?)));
            }
            Ok(v)
        },
        |mut a, mut b| {
            a.append(&mut b);
            a
        },
    )?;
    let orders: KeyMap<i64, (Date, i32)> = orders.into_iter().collect();

    let l = rx.table("lineitem")?;
    let l_key = l.col::<kind::I64>("l_orderkey")?;
    let l_ship = l.col::<kind::Date>("l_shipdate")?;
    let l_price = l.col::<kind::Units>("l_extendedprice")?;
    let l_disc = l.col::<kind::Units>("l_discount")?;
    let revenue = rx.par_fold(
        &l,
        threads,
        KeyMap::<i64, i128>::default,
        |mut m, r| {
            if r.get(l_ship)? > day {
                let k = r.get(l_key)?;
                if orders.contains_key(&k) {
                    *m.entry(k).or_default() += disc_price(r.get(l_price)?, r.get(l_disc)?);
                }
            }
            Ok(m)
        },
        merge_sums,
    )?;
    let mut rows: Vec<(i64, i128, Date, i32)> =
        revenue.into_iter().map(|(k, rev)| (k, rev, orders[&k].0, orders[&k].1)).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)).then(a.0.cmp(&b.0)));
    let mut out = QueryResult::new(&["l_orderkey", "revenue", "o_orderdate", "o_shippriority"]);
    for (k, rev, d, p) in rows.into_iter().take(10) {
        out.rows.push(vec![k.to_string(), scaled(rev, 4), d.to_string(), p.to_string()]);
    }
    Ok(out)
}
