//! Q17, small-quantity-order revenue: the yearly revenue lost if orders of under a fifth of a
//! part's average quantity were no longer taken, for one brand and container. Decorrelated: the
//! correlated average is a per-part aggregate over the same lineitems, so one pass over lineitem
//! collects the lines of the few parts concerned, and both the averages and the sum come from
//! them. Plan: part → dense set of the parts of Brand#23 in MED BOX; lineitem probes it and
//! collects (part, quantity, price).

use nvpage::{ReadOps, ReadTxn, kind};

use super::ops::collect;
use super::{KeyMap, QueryResult, at, div_round, put, scaled};

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let pt = rx.table("part")?;
    let p_key = pt.col::<kind::I64>("p_partkey")?;
    let p_brand = pt.col::<kind::Bytes>("p_brand")?;
    let p_cont = pt.col::<kind::Bytes>("p_container")?;
    let mut wanted = Vec::new();
    rx.for_each_row(&pt, |r| {
        if r.get(p_brand)? == b"Brand#23" && r.get(p_cont)? == b"MED BOX" {
            put(&mut wanted, r.get(p_key)?, true, false);
        }
        Ok(())
    })?;

    let lt = rx.table("lineitem")?;
    let l_part = lt.col::<kind::I64>("l_partkey")?;
    let l_qty = lt.col::<kind::Units>("l_quantity")?;
    let l_price = lt.col::<kind::Units>("l_extendedprice")?;
    let lines = collect(rx, &lt, threads, |r| {
        let p = r.get(l_part)?;
        if at(&wanted, p) != Some(true) {
            return Ok(None);
        }
        Ok(Some((p, r.get(l_qty)?, r.get(l_price)?)))
    })?;
    // Per part: (sum of quantities, count).
    let mut avg: KeyMap<i64, (i128, i128)> = KeyMap::default();
    for &(p, q, _) in &lines {
        let a = avg.entry(p).or_default();
        a.0 += i128::from(q);
        a.1 += 1;
    }
    // `q < 0.2 × sum / count`, exactly: `5 × q × count < sum`.
    let total: i128 = lines
        .iter()
        .filter(|&&(p, q, _)| avg.get(&p).is_some_and(|&(sum, n)| 5 * i128::from(q) * n < sum))
        .map(|&(_, _, price)| i128::from(price))
        .sum();
    let mut out = QueryResult::new(&["avg_yearly"]);
    // sum / 7.0, to two places.
    out.rows.push(vec![scaled(div_round(total, 7), 2)]);
    Ok(out)
}
