//! Q9, product type profit measure: the profit on parts whose name contains "green", per supplier
//! nation and order year. Plan: part → dense set of green parts; supplier → dense map to nation;
//! partsupp of green parts → hash map of (part, supplier) to cost; lineitem of green parts
//! probes it and sums each order's profit per nation (the aggregate pushed below the join with
//! orders, which it shrinks from every order to those with a green part); orders probes those
//! sums and adds them per (nation, year).

use nvpage::{ReadOps, ReadTxn, kind};

use super::ops::{Merge, aggregate, collect, like, nation_of_rows, nations};
use super::{KeyMap, QueryResult, at, disc_price, put, scaled};

/// Profit per nation of one order's green lineitems, scale 4: a short list (at most seven
/// lines an order).
#[derive(Default)]
struct PerNation(Vec<(i8, i128)>);

impl Merge for PerNation {
    fn merge(&mut self, other: Self) {
        for (n, v) in other.0 {
            match self.0.iter_mut().find(|x| x.0 == n) {
                Some(x) => x.1 += v,
                None => self.0.push((n, v)),
            }
        }
    }
}

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let nations = nations(rx)?;
    let pt = rx.table("part")?;
    let (p_key, p_name) = (pt.col::<kind::I64>("p_partkey")?, pt.col::<kind::Bytes>("p_name")?);
    let mut green = Vec::new();
    for k in collect(rx, &pt, threads, |r| {
        like::contains(r.get(p_name)?, b"green").then(|| r.get(p_key)).transpose()
    })? {
        put(&mut green, k, true, false);
    }

    let supp_nation = nation_of_rows(rx, "supplier", "s_suppkey", "s_nationkey", |_| true)?;

    let pst = rx.table("partsupp")?;
    let ps_part = pst.col::<kind::I64>("ps_partkey")?;
    let ps_supp = pst.col::<kind::I64>("ps_suppkey")?;
    let ps_cost = pst.col::<kind::Units>("ps_supplycost")?;
    let offers = collect(rx, &pst, threads, |r| {
        let p = r.get(ps_part)?;
        if at(&green, p) != Some(true) {
            return Ok(None);
        }
        Ok(Some(((p, r.get(ps_supp)?), r.get(ps_cost)?)))
    })?;
    // (part, supplier) → (matching partsupp rows, sum of their costs).
    let mut cost: KeyMap<(i64, i64), (i128, i128)> = KeyMap::default();
    for (k, c) in offers {
        let e = cost.entry(k).or_default();
        e.0 += 1;
        e.1 += i128::from(c);
    }

    let lt = rx.table("lineitem")?;
    let l_key = lt.col::<kind::I64>("l_orderkey")?;
    let l_part = lt.col::<kind::I64>("l_partkey")?;
    let l_supp = lt.col::<kind::I64>("l_suppkey")?;
    let l_qty = lt.col::<kind::Units>("l_quantity")?;
    let l_price = lt.col::<kind::Units>("l_extendedprice")?;
    let l_disc = lt.col::<kind::Units>("l_discount")?;
    let per_order = aggregate(rx, &lt, threads, |r| {
        let p = r.get(l_part)?;
        if at(&green, p) != Some(true) {
            return Ok(None);
        }
        let s = r.get(l_supp)?;
        let Some(&(rows, costs)) = cost.get(&(p, s)) else { return Ok(None) };
        let Some(n) = at(&supp_nation, s).filter(|&n| n >= 0) else { return Ok(None) };
        // Per matching partsupp row, at scale 4: price × (1 − discount) − cost × quantity.
        let revenue = disc_price(r.get(l_price)?, r.get(l_disc)?);
        let amount = rows * revenue - costs * i128::from(r.get(l_qty)?);
        Ok(Some((r.get(l_key)?, PerNation(vec![(n, amount)]))))
    })?;

    let ot = rx.table("orders")?;
    let o_key = ot.col::<kind::I64>("o_orderkey")?;
    let o_date = ot.col::<kind::Date>("o_orderdate")?;
    let sums = rx.par_fold(
        &ot,
        threads,
        KeyMap::<(i8, i32), i128>::default,
        |mut m, r| {
            if let Some(lines) = per_order.get(&r.get(o_key)?) {
                let year = r.get(o_date)?.ymd().0;
                for &(n, v) in &lines.0 {
                    *m.entry((n, year)).or_default() += v;
                }
            }
            Ok(m)
        },
        super::ops::merge_maps,
    )?;
    let name = |n: i8| nations.get(n as usize).map_or("", |x| x.name.as_str());
    let mut rows: Vec<((i8, i32), i128)> = sums.into_iter().collect();
    rows.sort_by(|a, b| name(a.0.0).cmp(name(b.0.0)).then(b.0.1.cmp(&a.0.1)));
    let mut out = QueryResult::new(&["nation", "o_year", "sum_profit"]);
    for ((n, year), v) in rows {
        out.rows.push(vec![name(n).to_string(), year.to_string(), scaled(v, 4)]);
    }
    Ok(out)
}
