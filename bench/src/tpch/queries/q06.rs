//! Q6, forecasting revenue change: `sum(l_extendedprice * l_discount)` over one year's shipments
//! with a discount of 0.06 ± 0.01 and a quantity under 24. One filtered pass over lineitem.
//!
//! The exact sum is kept apart from its formatting ([`revenue`], [`answer`]) so the refresh
//! benchmark can add the lineitems a refresh function inserted and know the answer a snapshot
//! must give.

use nvpage::{Date, ReadOps, ReadTxn, kind};

use super::{QueryResult, scaled, ymd};

/// The year of shipments the query sums: from 1994-01-01 to 1995-01-01 (excluded).
const FROM: Date = ymd(1994, 1, 1);
const TO: Date = ymd(1995, 1, 1);

/// What one lineitem adds to the revenue (scale 4), given its ship date, and its discount,
/// quantity and extended price in hundredths: `None` if the query's `WHERE` leaves it out.
#[inline]
pub fn line_revenue(shipdate: Date, disc: i64, qty: i64, price: i64) -> Option<i128> {
    if shipdate < FROM || shipdate >= TO || !(5..=7).contains(&disc) || qty >= 2400 {
        return None;
    }
    Some(i128::from(price * disc))
}

/// The revenue (scale 4) of every lineitem of the transaction's `lineitem` table.
pub fn revenue(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<i128> {
    let l = rx.table("lineitem")?;
    let shipdate = l.col::<kind::Date>("l_shipdate")?;
    let discount = l.col::<kind::Units>("l_discount")?;
    let quantity = l.col::<kind::Units>("l_quantity")?;
    let price = l.col::<kind::Units>("l_extendedprice")?;
    // A page at a time: the handles are checked once per page, not per row and column.
    rx.par_fold_pages(
        &l,
        threads,
        || 0i128,
        |acc, page| {
            let (shipdate, discount) = (page.col(shipdate)?, page.col(discount)?);
            let (quantity, price) = (page.col(quantity)?, page.col(price)?);
            page.fold(acc, |acc, r| {
                // Column by column, so a row the date leaves out costs one read;
                // `line_revenue` decides the rest.
                let d = r.get(shipdate)?;
                if d < FROM || d >= TO {
                    return Ok(acc);
                }
                let disc = r.get(discount)?;
                if !(5..=7).contains(&disc) {
                    return Ok(acc);
                }
                let line = line_revenue(d, disc, r.get(quantity)?, r.get(price)?);
                Ok(acc + line.unwrap_or(0))
            })
        },
        |a, b| a + b,
    )
}

/// The answer a revenue makes.
pub fn answer(revenue: i128) -> QueryResult {
    let mut out = QueryResult::new(&["revenue"]);
    out.rows.push(vec![scaled(revenue, 4)]);
    out
}

/// Runs Q6 in `rx` on `threads` scan workers.
pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    Ok(answer(revenue(rx, threads)?))
}
