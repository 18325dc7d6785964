//! Q1, pricing summary report: lineitem shipped up to 90 days before 1998-12-01, grouped by
//! return flag and line status. One pass; the groups (there are four) live in a small vector,
//! found per row through a table indexed by flag and status: one load, cheaper than hashing or a
//! search. The sums are `i64`s while they fit, carried into `i128`s when they would not (`Sum`).
//!
//! The sums are kept exact and apart from the formatting ([`Groups`], [`answer`]) so the refresh
//! benchmark can add the lineitems a refresh function inserted to a loaded database's sums and
//! know the answer a snapshot must give.

use nvpage::{Date, ReadOps, ReadTxn, kind};

use super::{QueryResult, avg2, scaled, ymd};

/// An exact sum kept in an `i64` while it fits, the rest carried in an `i128`: the row loop
/// adds with one instruction and a branch never taken (a sum of `i128`s cost two instructions,
/// a load and a store of two words per add), and nothing is lost when the `i64` would overflow.
#[derive(Clone, Copy, Debug, Default)]
struct Sum {
    part: i64,
    carried: i128,
}

impl Sum {
    #[inline(always)]
    fn add(&mut self, v: i64) {
        match self.part.checked_add(v) {
            Some(s) => self.part = s,
            None => self.carry(i128::from(v)),
        }
    }

    /// Adds `v` to the carried part (and moves the `i64` part there too).
    #[cold]
    #[inline(never)]
    fn carry(&mut self, v: i128) {
        self.carried += i128::from(self.part) + v;
        self.part = 0;
    }

    fn total(&self) -> i128 {
        self.carried + i128::from(self.part)
    }

    fn merge(&mut self, o: &Sum) {
        self.carry(o.total());
    }
}

impl PartialEq for Sum {
    fn eq(&self, o: &Sum) -> bool {
        self.total() == o.total()
    }
}
impl Eq for Sum {}

/// One group's exact sums: quantities, prices and discounts in hundredths, `sum_disc_price` at
/// scale 4, `sum_charge` at scale 6.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Agg {
    key: (u8, u8),
    sum_qty: Sum,
    sum_base: Sum,
    sum_disc_price: Sum,
    sum_charge: Sum,
    sum_disc: Sum,
    count: u64,
}

impl Agg {
    fn merge(&mut self, o: &Agg) {
        self.sum_qty.merge(&o.sum_qty);
        self.sum_base.merge(&o.sum_base);
        self.sum_disc_price.merge(&o.sum_disc_price);
        self.sum_charge.merge(&o.sum_charge);
        self.sum_disc.merge(&o.sum_disc);
        self.count += o.count;
    }

    /// Adds one line's values; its products are computed in `i128` when they would overflow
    /// an `i64` (never with TPC-H's values).
    #[inline(always)]
    fn add(&mut self, qty: i64, price: i64, disc: i64, tax: i64) {
        self.sum_qty.add(qty);
        self.sum_base.add(price);
        self.sum_disc.add(disc);
        self.count += 1;
        match products(price, disc, tax) {
            Some((disc_price, charge)) => {
                self.sum_disc_price.add(disc_price);
                self.sum_charge.add(charge);
            }
            None => self.add_wide(price, disc, tax),
        }
    }

    /// [`Agg::add`]'s products in `i128`, added to the sums' carried parts.
    #[cold]
    #[inline(never)]
    fn add_wide(&mut self, price: i64, disc: i64, tax: i64) {
        let dp = i128::from(price) * (100 - i128::from(disc));
        self.sum_disc_price.carry(dp);
        self.sum_charge.carry(dp * (100 + i128::from(tax)));
    }
}

/// A line's discounted price, `price × (100 − disc)`, and charge, that times `100 + tax`, if
/// both fit an `i64`.
#[inline(always)]
fn products(price: i64, disc: i64, tax: i64) -> Option<(i64, i64)> {
    let disc_price = price.checked_mul(100i64.checked_sub(disc)?)?;
    Some((disc_price, disc_price.checked_mul(100i64.checked_add(tax)?)?))
}

/// Q1's groups before formatting: what one pass over some lineitems sums to. Sums of disjoint
/// sets of rows add up ([`Groups::merge`]). The sums are exact while every line's charge and
/// every total fit an `i128`: for instance with quantities, prices, discounts and taxes below
/// 2^31 in magnitude over fewer than 2^31 lines (TPC-H's stay below 2^24 in hundredths).
#[derive(Clone, PartialEq, Eq)]
pub struct Groups {
    aggs: Vec<Agg>,
    /// Each group's place in `aggs` plus one (0: none yet, or past the 255th group), by its
    /// flag and status as one 16-bit number: one load per row, and no key to compare (the row
    /// loop touches only the few lines of its 64 KiB that the groups use).
    place: Box<[u8; 65536]>,
}

impl std::fmt::Debug for Groups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The groups; `place` follows from their order.
        f.debug_tuple("Groups").field(&self.aggs).finish()
    }
}

impl Default for Groups {
    fn default() -> Self {
        Groups { aggs: Vec::new(), place: Box::new([0; 65536]) }
    }
}

fn place_of(key: (u8, u8)) -> usize {
    usize::from(u16::from_be_bytes([key.0, key.1]))
}

/// Q1's cut-off: 1998-12-01 minus 90 days.
const LAST_SHIPDATE: Date = ymd(1998, 9, 2);

impl Groups {
    /// Adds one lineitem: its ship date, return flag and line status (first bytes), quantity,
    /// extended price, discount and tax in hundredths. Rows shipped after the cut-off are left
    /// out, as the query's `WHERE` does.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
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
            0 => self.find_or_add(key),
            p => p - 1,
        };
        self.aggs[i].add(qty, price, disc, tax);
    }

    /// The place of group `key` in `aggs`, added if new, and remembered in `place` if it is
    /// among the first 255 (later groups are found here, by a search, at each of their rows:
    /// TPC-H has four).
    #[cold]
    fn find_or_add(&mut self, key: (u8, u8)) -> usize {
        let i = match self.aggs.iter().position(|g| g.key == key) {
            Some(i) => i,
            None => {
                self.aggs.push(Agg { key, ..Agg::default() });
                self.aggs.len() - 1
            }
        };
        // A slot is only ever written with its own key's place: no other group can hold it.
        if let Ok(p) = u8::try_from(i + 1) {
            self.place[place_of(key)] = p;
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
    let shipdate = l.col::<kind::Date>("l_shipdate")?;
    let flag = l.col::<kind::Bytes>("l_returnflag")?;
    let status = l.col::<kind::Bytes>("l_linestatus")?;
    let qty = l.col::<kind::Units>("l_quantity")?;
    let price = l.col::<kind::Units>("l_extendedprice")?;
    let disc = l.col::<kind::Units>("l_discount")?;
    let tax = l.col::<kind::Units>("l_tax")?;
    // A page at a time: the handles are checked once per page, not per row and column.
    rx.par_fold_pages(
        &l,
        threads,
        Groups::default,
        |groups, page| {
            let (shipdate, flag, status) =
                (page.col(shipdate)?, page.col(flag)?, page.col(status)?);
            let (qty, price, disc, tax) =
                (page.col(qty)?, page.col(price)?, page.col(disc)?, page.col(tax)?);
            page.fold(groups, |mut groups, r| {
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
            })
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
            scaled(g.sum_qty.total(), 2),
            scaled(g.sum_base.total(), 2),
            scaled(g.sum_disc_price.total(), 4),
            scaled(g.sum_charge.total(), 6),
            avg2(g.sum_qty.total(), 2, g.count),
            avg2(g.sum_base.total(), 2, g.count),
            avg2(g.sum_disc.total(), 2, g.count),
            g.count.to_string(),
        ]);
    }
    out
}

/// Runs Q1 in `rx` on `threads` scan workers.
pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    Ok(answer(&aggregate(rx, threads)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lineitem's flag, status, quantity, price, discount and tax.
    type Line = (u8, u8, i64, i64, i64, i64);

    /// Sums past `i64` (totals that overflow as they add, up and down; products that overflow)
    /// come out exact beside TPC-H-sized lines, and two passes merged answer as one pass over
    /// their rows does.
    #[test]
    fn sums_past_i64_are_exact_and_merge() {
        let d = ymd(1995, 1, 1);
        let big = |i: i64| i64::MAX / 150 - i;
        let lines: Vec<Line> = (0..600i64)
            .map(|i| (b'A', b'F', big(i), big(i) / 7, (i % 11) - 5, i % 9))
            .chain((0..600).map(|i| (b'R', b'F', -big(i), -(big(i) / 3), 0, 0)))
            .chain((0..600).map(|i| (b'N', b'O', i % 50 + 1, 90_000 + i * 17, i % 11, i % 9)))
            .chain([(b'N', b'F', 5, i64::MAX, 0, 0), (b'N', b'F', -3, 2, i64::MIN, 1)])
            .collect();
        let add = |g: &mut Groups, l: &Line| g.add_line(d, l.0, l.1, l.2, l.3, l.4, l.5);
        let mut one = Groups::default();
        lines.iter().for_each(|l| add(&mut one, l));
        let (mut x, mut y) = (Groups::default(), Groups::default());
        for (i, l) in lines.iter().enumerate() {
            add(if i % 3 == 0 { &mut y } else { &mut x }, l);
        }
        assert_eq!(answer(&x.merge(&y)), answer(&one));
        for key in [(b'A', b'F'), (b'R', b'F'), (b'N', b'O'), (b'N', b'F')] {
            let rows: Vec<&Line> = lines.iter().filter(|l| (l.0, l.1) == key).collect();
            let g = one.aggs.iter().find(|g| g.key == key).unwrap();
            let sum = |f: &dyn Fn(&Line) -> i128| rows.iter().map(|l| f(l)).sum::<i128>();
            let dp = |l: &Line| i128::from(l.3) * (100 - i128::from(l.4));
            assert_eq!(g.sum_qty.total(), sum(&|l| i128::from(l.2)));
            assert_eq!(g.sum_base.total(), sum(&|l| i128::from(l.3)));
            assert_eq!(g.sum_disc.total(), sum(&|l| i128::from(l.4)));
            assert_eq!(g.sum_disc_price.total(), sum(&dp));
            assert_eq!(g.sum_charge.total(), sum(&|l| dp(l) * (100 + i128::from(l.5))));
            assert_eq!(g.count, rows.len() as u64);
        }
        // A line shipped after the cut-off counts nowhere.
        let before = answer(&one);
        one.add_line(ymd(1998, 9, 3), b'A', b'F', 1, 1, 1, 1);
        assert_eq!(answer(&one), before);
    }
}
