//! Q7, volume shipping: the revenue of goods shipped in 1995 and 1996 between France and Germany,
//! per supplier nation, customer nation and year. Plan: supplier and customer → dense maps of
//! those in either nation; orders of those customers → hash map to the customer's nation;
//! lineitem of the two years probes both and sums per (supplier nation, customer nation, year)
//! when the nations differ.

use nvpage::{ReadOps, ReadTxn, kind};

use super::ops::{aggregate, collect, nation_key, nation_of_rows, nations};
use super::{KeyMap, QueryResult, at, disc_price, scaled, ymd};

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let nations = nations(rx)?;
    let pair = [nation_key(&nations, "FRANCE"), nation_key(&nations, "GERMANY")];
    let in_pair = |n: i32| pair.contains(&Some(n));
    let (from, to) = (ymd(1995, 1, 1), ymd(1996, 12, 31));

    let supp_nation = nation_of_rows(rx, "supplier", "s_suppkey", "s_nationkey", in_pair)?;

    let cust_nation = nation_of_rows(rx, "customer", "c_custkey", "c_nationkey", in_pair)?;

    let ot = rx.table("orders")?;
    let o_key = ot.col::<kind::I64>("o_orderkey")?;
    let o_cust = ot.col::<kind::I64>("o_custkey")?;
    let orders: KeyMap<i64, i8> = collect(rx, &ot, threads, |r| {
        let Some(n) = at(&cust_nation, r.get(o_cust)?).filter(|&n| n >= 0) else {
            return Ok(None);
        };
        Ok(Some((r.get(o_key)?, n)))
    })?
    .into_iter()
    .collect();

    let lt = rx.table("lineitem")?;
    let l_key = lt.col::<kind::I64>("l_orderkey")?;
    let l_supp = lt.col::<kind::I64>("l_suppkey")?;
    let l_ship = lt.col::<kind::Date>("l_shipdate")?;
    let l_price = lt.col::<kind::Units>("l_extendedprice")?;
    let l_disc = lt.col::<kind::Units>("l_discount")?;
    let sums = aggregate(rx, &lt, threads, |r| {
        let d = r.get(l_ship)?;
        if d < from || d > to {
            return Ok(None);
        }
        let Some(sn) = at(&supp_nation, r.get(l_supp)?).filter(|&n| n >= 0) else {
            return Ok(None);
        };
        let Some(&cn) = orders.get(&r.get(l_key)?) else { return Ok(None) };
        if cn == sn {
            return Ok(None);
        }
        let key = (sn, cn, d.ymd().0);
        Ok(Some((key, disc_price(r.get(l_price)?, r.get(l_disc)?))))
    })?;
    let name = |n: i8| nations.get(n as usize).map_or("", |x| x.name.as_str());
    let mut rows: Vec<((i8, i8, i32), i128)> = sums.into_iter().collect();
    rows.sort_by(|a, b| (name(a.0.0), name(a.0.1), a.0.2).cmp(&(name(b.0.0), name(b.0.1), b.0.2)));
    let mut out = QueryResult::new(&["supp_nation", "cust_nation", "l_year", "revenue"]);
    for ((sn, cn, y), rev) in rows {
        out.rows.push(vec![name(sn).into(), name(cn).into(), y.to_string(), scaled(rev, 4)]);
    }
    Ok(out)
}
