//! Q1, pricing summary report: lineitem shipped up to 90 days before 1998-12-01, grouped by
//! return flag and line status. One pass; the groups live in a small vector searched linearly
//! (there are four), cheaper per row than hashing.

use nvpage::{ReadOps, ReadTxn, kind};

use super::{QueryResult, avg2, scaled, ymd};

#[derive(Clone, Copy, Default)]
struct Agg {
    key: (u8, u8),
    sum_qty: i128,
    sum_base: i128,
    sum_disc_price: i128,
    sum_charge: i128,
    sum_disc: i128,
    count: u64,
}

impl Agg {
    fn merge(&mut self, o: &Agg) {
        self.sum_qty += o.sum_qty;
        self.sum_base += o.sum_base;
        self.sum_disc_price += o.sum_disc_price;
        self.sum_charge += o.sum_charge;
        self.sum_disc += o.sum_disc;
        self.count += o.count;
    }
}

fn first_byte(s: &[u8]) -> u8 {
    s.first().copied().unwrap_or(b' ')
}

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let l = rx.table("lineitem")?;
    let shipdate = l.col::<kind::DateK>("l_shipdate")?;
    let flag = l.col::<kind::Bytes>("l_returnflag")?;
    let status = l.col::<kind::Bytes>("l_linestatus")?;
    let qty = l.col::<kind::Units>("l_quantity")?;
    let price = l.col::<kind::Units>("l_extendedprice")?;
    let disc = l.col::<kind::Units>("l_discount")?;
    let tax = l.col::<kind::Units>("l_tax")?;
    // 1998-12-01 minus 90 days.
    let last = ymd(1998, 9, 2);
    let groups = rx.par_fold(
        &l,
        threads,
        Vec::<Agg>::new,
        |mut groups, r| {
            if r.get(shipdate)? > last {
                return Ok(groups);
            }
            let key = (first_byte(r.get(flag)?), first_byte(r.get(status)?));
            let i = match groups.iter().position(|g| g.key == key) {
                Some(i) => i,
                None => {
                    groups.push(Agg { key, ..Agg::default() });
                    groups.len() - 1
                }
            };
            let (p, d, t) = (r.get(price)?, r.get(disc)?, r.get(tax)?);
            let dp = p * (100 - d);
            let g = &mut groups[i];
            g.sum_qty += i128::from(r.get(qty)?);
            g.sum_base += i128::from(p);
            g.sum_disc_price += i128::from(dp);
            g.sum_charge += i128::from(dp) * i128::from(100 + t);
            g.sum_disc += i128::from(d);
            g.count += 1;
            Ok(groups)
        },
        |mut a, b| {
            for g in &b {
                match a.iter_mut().find(|x| x.key == g.key) {
                    Some(x) => x.merge(g),
                    None => a.push(*g),
                }
            }
            a
        },
    )?;
    let mut groups = groups;
    groups.sort_by_key(|g| g.key);
    let mut out = QueryResult::new(&[
        "l_returnflag",
        "l_linestatus",
        "sum_qty",
        "sum_base_price",
        "sum_disc_price",
        "sum_charge",
        "avg_qty",
        "avg_price",
        "avg_disc",
        "count_order",
    ]);
    for g in groups {
        out.rows.push(vec![
            char::from(g.key.0).to_string(),
            char::from(g.key.1).to_string(),
            scaled(g.sum_qty, 2),
            scaled(g.sum_base, 2),
            scaled(g.sum_disc_price, 4),
            scaled(g.sum_charge, 6),
            avg2(g.sum_qty, 2, g.count),
            avg2(g.sum_base, 2, g.count),
            avg2(g.sum_disc, 2, g.count),
            g.count.to_string(),
        ]);
    }
    Ok(out)
}
