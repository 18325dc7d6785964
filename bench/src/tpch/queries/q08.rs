//! Q8, national market share: Brazil's share, as a supplier, of the American market for economy
//! anodized steel in 1995 and 1996. Plan: region → American nations; customer → dense set of
//! American customers; part → dense set of the parts of that type; supplier → dense map to
//! nation; orders of the two years by an American customer → hash map to the year; lineitem of
//! those parts probes it and sums the volume per year, in total and Brazil's.

use nvpage::{ReadOps, ReadTxn, kind};

use super::ops::{aggregate, collect, nation_key, nation_of_rows, nations, region_key};
use super::{KeyMap, QueryResult, at, disc_price, div_round, put, scaled, ymd};

/// Places of the share: the answer set shows two; four check more of the arithmetic.
const PLACES: u32 = 4;

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let (from, to) = (ymd(1995, 1, 1), ymd(1996, 12, 31));
    let america = region_key(rx, "AMERICA")?;
    let nations = nations(rx)?;
    let brazil = nation_key(&nations, "BRAZIL").map(|n| n as i8);
    let american = |n: i32| {
        usize::try_from(n)
            .ok()
            .and_then(|i| nations.get(i))
            .is_some_and(|x| Some(x.region) == america)
    };

    let ct = rx.table("customer")?;
    let (c_key, c_nation) =
        (ct.col::<kind::I64>("c_custkey")?, ct.col::<kind::I32>("c_nationkey")?);
    let mut cust_american = Vec::new();
    rx.for_each_row(&ct, |r| {
        if american(r.get(c_nation)?) {
            put(&mut cust_american, r.get(c_key)?, true, false);
        }
        Ok(())
    })?;

    let pt = rx.table("part")?;
    let (p_key, p_type) = (pt.col::<kind::I64>("p_partkey")?, pt.col::<kind::Bytes>("p_type")?);
    let mut steel = Vec::new();
    rx.for_each_row(&pt, |r| {
        if r.get(p_type)? == b"ECONOMY ANODIZED STEEL" {
            put(&mut steel, r.get(p_key)?, true, false);
        }
        Ok(())
    })?;

    let supp_nation = nation_of_rows(rx, "supplier", "s_suppkey", "s_nationkey", |_| true)?;

    let ot = rx.table("orders")?;
    let o_key = ot.col::<kind::I64>("o_orderkey")?;
    let o_cust = ot.col::<kind::I64>("o_custkey")?;
    let o_date = ot.col::<kind::Date>("o_orderdate")?;
    let orders: KeyMap<i64, i32> = collect(rx, &ot, threads, |r| {
        let d = r.get(o_date)?;
        if d < from || d > to || at(&cust_american, r.get(o_cust)?) != Some(true) {
            return Ok(None);
        }
        Ok(Some((r.get(o_key)?, d.ymd().0)))
    })?
    .into_iter()
    .collect();

    let lt = rx.table("lineitem")?;
    let l_key = lt.col::<kind::I64>("l_orderkey")?;
    let l_part = lt.col::<kind::I64>("l_partkey")?;
    let l_supp = lt.col::<kind::I64>("l_suppkey")?;
    let l_price = lt.col::<kind::Units>("l_extendedprice")?;
    let l_disc = lt.col::<kind::Units>("l_discount")?;
    // year → (Brazil's volume, all volume), at scale 4.
    let sums = aggregate(rx, &lt, threads, |r| {
        if at(&steel, r.get(l_part)?) != Some(true) {
            return Ok(None);
        }
        let Some(&year) = orders.get(&r.get(l_key)?) else { return Ok(None) };
        let volume = disc_price(r.get(l_price)?, r.get(l_disc)?);
        let mine = brazil.is_some() && at(&supp_nation, r.get(l_supp)?) == brazil;
        Ok(Some((year, (if mine { volume } else { 0 }, volume))))
    })?;
    let mut rows: Vec<(i32, (i128, i128))> = sums.into_iter().collect();
    rows.sort_by_key(|r| r.0);
    let mut out = QueryResult::new(&["o_year", "mkt_share"]);
    for (year, (mine, all)) in rows {
        let share = div_round(mine * 10i128.pow(PLACES), all);
        out.rows.push(vec![year.to_string(), scaled(share, PLACES as u8)]);
    }
    Ok(out)
}
