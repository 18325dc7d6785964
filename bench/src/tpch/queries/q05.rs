//! Q5, local supplier volume: revenue in 1994 of lineitems whose customer and supplier are in
//! the same Asian nation. Plan: region → nation → dense maps of Asian suppliers and customers
//! to their nation; orders of the year with an Asian customer → hash map; lineitem probes it
//! and sums per nation when the supplier's nation matches.

use nvpage::{ReadOps, ReadTxn, kind};

use super::ops::nation_of_rows;
use super::{KeyMap, QueryResult, at, disc_price, scaled, ymd};

/// Nation keys are 0..25.
const NATIONS: usize = 25;

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let (from, to) = (ymd(1994, 1, 1), ymd(1995, 1, 1));
    let rt = rx.table("region")?;
    let (r_key, r_name) = (rt.col::<kind::I32>("r_regionkey")?, rt.col::<kind::Bytes>("r_name")?);
    let mut asia = None;
    rx.for_each_row(&rt, |r| {
        if r.get(r_name)? == b"ASIA" {
            asia = Some(r.get(r_key)?);
        }
        Ok(())
    })?;

    let nt = rx.table("nation")?;
    let n_key = nt.col::<kind::I32>("n_nationkey")?;
    let n_name = nt.col::<kind::Str>("n_name")?;
    let n_region = nt.col::<kind::I32>("n_regionkey")?;
    let mut names: Vec<Option<String>> = vec![None; NATIONS];
    rx.for_each_row(&nt, |r| {
        let k = r.get(n_key)? as usize;
        if Some(r.get(n_region)?) == asia && k < NATIONS {
            names[k] = Some(r.get(n_name)?.to_string());
        }
        Ok(())
    })?;
    let in_asia = |n: i32| names.get(n as usize).is_some_and(|x| x.is_some());

    let supp_nation = nation_of_rows(rx, "supplier", "s_suppkey", "s_nationkey", in_asia)?;

    let cust_nation = nation_of_rows(rx, "customer", "c_custkey", "c_nationkey", in_asia)?;

    let ot = rx.table("orders")?;
    let o_key = ot.col::<kind::I64>("o_orderkey")?;
    let o_cust = ot.col::<kind::I64>("o_custkey")?;
    let o_date = ot.col::<kind::Date>("o_orderdate")?;
    let orders = rx.par_fold(
        &ot,
        threads,
        Vec::new,
        |mut v, r| {
            let d = r.get(o_date)?;
            if d >= from
                && d < to
                && let Some(n) = at(&cust_nation, r.get(o_cust)?).filter(|&n| n >= 0)
            {
                v.push((r.get(o_key)?, n));
            }
            Ok(v)
        },
        |mut a, mut b| {
            a.append(&mut b);
            a
        },
    )?;
    let orders: KeyMap<i64, i8> = orders.into_iter().collect();

    let lt = rx.table("lineitem")?;
    let l_key = lt.col::<kind::I64>("l_orderkey")?;
    let l_supp = lt.col::<kind::I64>("l_suppkey")?;
    let l_price = lt.col::<kind::Units>("l_extendedprice")?;
    let l_disc = lt.col::<kind::Units>("l_discount")?;
    let sums = rx.par_fold(
        &lt,
        threads,
        || ([0i128; NATIONS], [0u64; NATIONS]),
        |(mut rev, mut cnt), r| {
            if let Some(&n) = orders.get(&r.get(l_key)?)
                && at(&supp_nation, r.get(l_supp)?) == Some(n)
            {
                rev[n as usize] += disc_price(r.get(l_price)?, r.get(l_disc)?);
                cnt[n as usize] += 1;
            }
            Ok((rev, cnt))
        },
        |(mut ra, mut ca), (rb, cb)| {
            for i in 0..NATIONS {
                ra[i] += rb[i];
                ca[i] += cb[i];
            }
            (ra, ca)
        },
    )?;
    let mut rows: Vec<(String, i128)> = (0..NATIONS)
        .filter(|&i| sums.1[i] > 0)
        .map(|i| (names[i].clone().unwrap_or_default(), sums.0[i]))
        .collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out = QueryResult::new(&["n_name", "revenue"]);
    for (name, rev) in rows {
        out.rows.push(vec![name, scaled(rev, 4)]);
    }
    Ok(out)
}
