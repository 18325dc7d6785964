//! Q14, promotion effect: the share of September 1995's revenue from promoted parts. Plan: part
//! → dense set of PROMO part keys; one pass over lineitem sums both revenues.

use nvpage::{ReadOps, ReadTxn, kind};

use super::{QueryResult, at, disc_price, div_round, put, scaled, ymd};

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let (from, to) = (ymd(1995, 9, 1), ymd(1995, 10, 1));
    let pt = rx.table("part")?;
    let (p_key, p_type) = (pt.col::<kind::I64>("p_partkey")?, pt.col::<kind::Bytes>("p_type")?);
    let mut promo = Vec::new();
    rx.for_each_row(&pt, |r| {
        if r.get(p_type)?.starts_with(b"PROMO") {
            put(&mut promo, r.get(p_key)?, true, false);
        }
        Ok(())
    })?;

    let lt = rx.table("lineitem")?;
    let l_part = lt.col::<kind::I64>("l_partkey")?;
    let l_ship = lt.col::<kind::Date>("l_shipdate")?;
    let l_price = lt.col::<kind::Units>("l_extendedprice")?;
    let l_disc = lt.col::<kind::Units>("l_discount")?;
    let (promo_rev, total) = rx.par_fold(
        &lt,
        threads,
        || (0i128, 0i128),
        |(p, t), r| {
            let d = r.get(l_ship)?;
            if d < from || d >= to {
                return Ok((p, t));
            }
            let rev = disc_price(r.get(l_price)?, r.get(l_disc)?);
            let is_promo = at(&promo, r.get(l_part)?) == Some(true);
            Ok((if is_promo { p + rev } else { p }, t + rev))
        },
        |a, b| (a.0 + b.0, a.1 + b.1),
    )?;
    let mut out = QueryResult::new(&["promo_revenue"]);
    // 100.00 * promo / total, to two places.
    let v =
        if total == 0 { "NULL".into() } else { scaled(div_round(promo_rev * 10_000, total), 2) };
    out.rows.push(vec![v]);
    Ok(out)
}
