//! Q1, pricing summary report: lineitem shipped up to 90 days before 1998-12-01, grouped by
//! return flag and line status. One pass; the groups (there are four) live in a small vector,
//! found per row through a table indexed by the low bits of flag and status: one load, cheaper
//! than hashing or a search.
//!
//! The sums are kept exact and apart from the formatting ([`Groups`], [`answer`]) so the refresh
//! benchmark can add the lineitems a refresh function inserted to a loaded database's sums and
//! know the answer a snapshot must give.

use nvpage::{Date, ReadOps, ReadTxn, kind};

use super::{QueryResult, avg2, scaled, ymd};

/// One group's exact sums: quantities, prices and discounts in hundredths, `sum_disc_price` at
/// scale 4, `sum_charge` at scale 6.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Agg {
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

/// Q1's groups before formatting: what one pass over some lineitems sums to. Sums of disjoint
/// sets of rows add up ([`Groups::merge`]).
#[derive(Clone, PartialEq, Eq)]
pub struct Groups {
    aggs: Vec<Agg>,
    /// Each group's place in `aggs` plus one (0: none yet), by the low five bits of its flag and
    /// of its status: one load per row instead of a search of `aggs` (the flags and statuses
    /// TPC-H has, `A`, `N`, `R` and `F`, `O`, differ in those bits; keys that collide share a
    /// slot and are found by the search).
    place: Box<[u8; 1024]>,
}

impl std::fmt::Debug for Groups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The groups; `place` follows from their order.
        f.debug_tuple("Groups").field(&self.aggs).finish()
    }
}

impl Default for Groups {
    fn default() -> Self {
        Groups { aggs: Vec::new(), place: Box::new([0; 1024]) }
    }
}

fn place_of(key: (u8, u8)) -> usize {
    (usize::from(key.0 & 31) << 5) | usize::from(key.1 & 31)
}

/// Q1's cut-off: 1998-12-01 minus 90 days.
const LAST_SHIPDATE: Date = ymd(1998, 9, 2);

impl Groups {
    /// Adds one lineitem: its ship date, return flag and line status (first bytes), quantity,
    /// extended price, discount and tax in hundredths. Rows shipped after the cut-off are left
    /// out, as the query's `WHERE` does.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn add_line(
        &mut self,
        shipdate: Date,
        flag: u8,
        status: u8,
        qty: i64,
        price: i64,
        disc: i64,
        tax: i64,
    ) {
        if shipdate > LAST_SHIPDATE {
            return;
        }
        let key = (flag, status);
        let i = match usize::from(self.place[place_of(key)]) {
            p if p > 0 && self.aggs[p - 1].key == key => p - 1,
            _ => self.find_or_add(key),
        };
        let dp = price * (100 - disc);
        let g = &mut self.aggs[i];
        g.sum_qty += i128::from(qty);
        g.sum_base += i128::from(price);
        g.sum_disc_price += i128::from(dp);
        g.sum_charge += i128::from(dp) * i128::from(100 + tax);
        g.sum_disc += i128::from(disc);
        g.count += 1;
    }

    /// The place of group `key` in `aggs`, added if new, and remembered in `place` when its
    /// slot is free.
    #[cold]
    fn find_or_add(&mut self, key: (u8, u8)) -> usize {
        let i = match self.aggs.iter().position(|g| g.key == key) {
            Some(i) => i,
            None => {
                self.aggs.push(Agg { key, ..Agg::default() });
                self.aggs.len() - 1
            }
        };
        let slot = &mut self.place[place_of(key)];
        if *slot == 0 && i < usize::from(u8::MAX) {
            *slot = i as u8 + 1;
        }
        i
    }

    /// Adds the sums of `other` (rows disjoint from this one's) to these.
    pub fn merge(mut self, other: &Groups) -> Groups {
        for g in &other.aggs {
            let i = self.find_or_add(g.key);
            self.aggs[i].merge(g);
        }
        self
    }
}

fn first_byte(s: &[u8]) -> u8 {
    s.first().copied().unwrap_or(b' ')
}

/// The groups of every lineitem of the transaction's `lineitem` table.
pub fn aggregate(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<Groups> {
    let l = rx.table("lineitem")?;
    let shipdate = l.col::<kind::DateK>("l_shipdate")?;
    let flag = l.col::<kind::Bytes>("l_returnflag")?;
    let status = l.col::<kind::Bytes>("l_linestatus")?;
    let qty = l.col::<kind::Units>("l_quantity")?;
    let price = l.col::<kind::Units>("l_extendedprice")?;
    let disc = l.col::<kind::Units>("l_discount")?;
    let tax = l.col::<kind::Units>("l_tax")?;
    rx.par_fold(
        &l,
        threads,
        Groups::default,
        |mut groups, r| {
            // The date test first: the other columns are read only for rows that count.
            let d = r.get(shipdate)?;
            if d > LAST_SHIPDATE {
                return Ok(groups);
            }
            groups.add_line(
                d,
                first_byte(r.get(flag)?),
                first_byte(r.get(status)?),
                r.get(qty)?,
                r.get(price)?,
                r.get(disc)?,
                r.get(tax)?,
            );
            Ok(groups)
        },
        |a, b| a.merge(&b),
    )
}

/// The answer the groups make, sorted by flag and status.
pub fn answer(groups: &Groups) -> QueryResult {
    let mut groups = groups.aggs.clone();
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
    out
}

/// Runs Q1 in `rx` on `threads` scan workers.
pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    Ok(answer(&aggregate(rx, threads)?))
}
