//! Q15, top supplier: the suppliers with the largest revenue in 1996Q1. The view is an aggregate
//! and its `max` the largest group. Plan: lineitem of the quarter → dense revenue per supplier;
//! the maximum; supplier reads the details of those that reach it.

use nvpage::{ReadOps, ReadTxn, kind};

use super::{QueryResult, disc_price, scaled, ymd};

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let (from, to) = (ymd(1996, 1, 1), ymd(1996, 4, 1));
    let lt = rx.table("lineitem")?;
    let l_supp = lt.col::<kind::I64>("l_suppkey")?;
    let l_ship = lt.col::<kind::Date>("l_shipdate")?;
    let l_price = lt.col::<kind::Units>("l_extendedprice")?;
    let l_disc = lt.col::<kind::Units>("l_discount")?;
    // Supplier keys are dense (1..=n); `None` for a supplier with no line in the quarter, which
    // the view has no row for.
    let revenue = rx.par_fold(
        &lt,
        threads,
        Vec::<Option<i128>>::new,
        |mut v, r| {
            let d = r.get(l_ship)?;
            if d < from || d >= to {
                return Ok(v);
            }
            let i = usize::try_from(r.get(l_supp)?).unwrap_or(0);
            if v.len() <= i {
                v.resize(i + 1, None);
            }
            *v[i].get_or_insert(0) += disc_price(r.get(l_price)?, r.get(l_disc)?);
            Ok(v)
        },
        |mut a, mut b| {
            if a.len() < b.len() {
                std::mem::swap(&mut a, &mut b);
            }
            for (x, y) in a.iter_mut().zip(b) {
                if let Some(y) = y {
                    *x.get_or_insert(0) += y;
                }
            }
            a
        },
    )?;
    let best = revenue.iter().flatten().copied().max();

    let st = rx.table("supplier")?;
    let s_key = st.col::<kind::I64>("s_suppkey")?;
    let s_name = st.col::<kind::Str>("s_name")?;
    let s_addr = st.col::<kind::Str>("s_address")?;
    let s_phone = st.col::<kind::Str>("s_phone")?;
    let mut rows = Vec::new();
    rx.for_each_row(&st, |r| {
        let k = r.get(s_key)?;
        let rev = usize::try_from(k).ok().and_then(|i| revenue.get(i)).copied().flatten();
        if let Some(rev) = rev.filter(|&x| Some(x) == best) {
            rows.push((
                k,
                vec![
                    k.to_string(),
                    r.get(s_name)?.to_string(),
                    r.get(s_addr)?.to_string(),
                    r.get(s_phone)?.to_string(),
                    scaled(rev, 4),
                ],
            ));
        }
        Ok(())
    })?;
    rows.sort_by_key(|r| r.0);
    let mut out =
        QueryResult::new(&["s_suppkey", "s_name", "s_address", "s_phone", "total_revenue"]);
    out.rows = rows.into_iter().map(|r| r.1).collect();
    Ok(out)
}
