//! Q6, forecasting revenue change: `sum(l_extendedprice * l_discount)` over one year's shipments
//! with a discount of 0.06 ± 0.01 and a quantity under 24. One filtered pass over lineitem.

use nvpage::{ReadOps, ReadTxn, kind};

use super::{QueryResult, scaled, ymd};

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let l = rx.table("lineitem")?;
    let shipdate = l.col::<kind::DateK>("l_shipdate")?;
    let discount = l.col::<kind::Units>("l_discount")?;
    let quantity = l.col::<kind::Units>("l_quantity")?;
    let price = l.col::<kind::Units>("l_extendedprice")?;
    let (from, to) = (ymd(1994, 1, 1), ymd(1995, 1, 1));
    let revenue = rx.par_fold(
        &l,
        threads,
        || 0i128,
        |acc, r| {
            let d = r.get(shipdate)?;
            if d < from || d >= to {
                return Ok(acc);
            }
            let disc = r.get(discount)?;
            if !(5..=7).contains(&disc) || r.get(quantity)? >= 2400 {
                return Ok(acc);
            }
            Ok(acc + i128::from(r.get(price)? * disc))
        },
        |a, b| a + b,
    )?;
    let mut out = QueryResult::new(&["revenue"]);
    out.rows.push(vec![scaled(revenue, 4)]);
    Ok(out)
}
