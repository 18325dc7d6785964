//! The 22 TPC-H queries as hand-written plans over nvpage scans: filters and projections in the
//! scan's fold, hash joins against maps built from the smaller side, hash (or array)
//! aggregation, sorting and limits ([`ops`] holds the operators they share). Each runs with the
//! specification's validation parameters (clause 2.4, "Validation"). Subqueries are decorrelated
//! as a query engine would: `EXISTS` and `IN` become semi-joins, `NOT EXISTS` and `NOT IN`
//! anti-joins, a correlated aggregate an aggregate grouped by the correlation key and joined
//! back, an outer join with a count a count defaulting to zero, a view an aggregate; no plan
//! scans a table once per row of another. Each query's file says its plan.
//!
//! Arithmetic is exact: money columns are `i64` cents, products are kept at their natural scale
//! (`extendedprice × (1 − discount)` is scale 4) and summed in `i128`. Only averages and Q14's
//! ratio are rounded, half away from zero, to two places as the answer set shows them. Ties in
//! an `ORDER BY` are broken by the group key so every layer and run returns the same rows.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

use nvpage::{Date, ReadTxn};

pub mod ops;
pub mod q01;
mod q02;
mod q03;
mod q04;
mod q05;
pub mod q06;
mod q07;
mod q08;
mod q09;
mod q10;
mod q11;
mod q12;
mod q13;
mod q14;
mod q15;
mod q16;
mod q17;
mod q18;
mod q19;
mod q20;
mod q21;
mod q22;

/// A query's answer: column names and rows of values printed as the answer set prints them.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueryResult {
    /// Column names, as in the specification's SQL.
    pub columns: Vec<String>,
    /// Rows of values: decimals with at least two places, dates `YYYY-MM-DD`, `CHAR` values
    /// without trailing blanks.
    pub rows: Vec<Vec<String>>,
}

impl QueryResult {
    pub(crate) fn new(columns: &[&str]) -> Self {
        Self { columns: columns.iter().map(|c| c.to_string()).collect(), rows: Vec::new() }
    }
}

/// The 22 queries of TPC-H.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Query {
    /// Pricing summary report: one pass over lineitem, grouped by flag and status.
    Q01,
    /// Minimum cost supplier: European suppliers of brass parts at their region's lowest cost.
    Q02,
    /// Shipping priority: customer ⋈ orders ⋈ lineitem, top 10 orders by revenue.
    Q03,
    /// Order priority checking: orders of a quarter with a late lineitem (a semi-join).
    Q04,
    /// Local supplier volume: six tables, revenue per Asian nation.
    Q05,
    /// Forecasting revenue change: one filtered sum over lineitem.
    Q06,
    /// Volume shipping: trade between France and Germany per year.
    Q07,
    /// National market share: Brazil's share of an American market per year.
    Q08,
    /// Product type profit measure: profit on green parts per nation and year (six tables).
    Q09,
    /// Returned item reporting: top 20 customers by lost revenue.
    Q10,
    /// Important stock identification: German stock above 0.0001 / SF of the total.
    Q11,
    /// Shipping modes and order priority: lineitem ⋈ orders.
    Q12,
    /// Customer distribution: orders per customer (an outer join), counted.
    Q13,
    /// Promotion effect: lineitem ⋈ part, one month.
    Q14,
    /// Top supplier: the suppliers with the quarter's largest revenue (a view and its maximum).
    Q15,
    /// Parts/supplier relationship: distinct suppliers per brand, type and size (an anti-join).
    Q16,
    /// Small-quantity-order revenue: lines under a fifth of their part's average quantity.
    Q17,
    /// Large volume customer: orders of more than 300 units, top 100.
    Q18,
    /// Discounted revenue: lineitem ⋈ part under three brand/container/size/quantity conditions.
    Q19,
    /// Potential part promotion: Canadian suppliers with surplus stock of forest parts.
    Q20,
    /// Suppliers who kept orders waiting: `EXISTS` and `NOT EXISTS` over lineitem.
    Q21,
    /// Global sales opportunity: customers without orders above an average balance.
    Q22,
}

impl Query {
    /// Every query, in order.
    pub const ALL: [Query; 22] = [
        Query::Q01,
        Query::Q02,
        Query::Q03,
        Query::Q04,
        Query::Q05,
        Query::Q06,
        Query::Q07,
        Query::Q08,
        Query::Q09,
        Query::Q10,
        Query::Q11,
        Query::Q12,
        Query::Q13,
        Query::Q14,
        Query::Q15,
        Query::Q16,
        Query::Q17,
        Query::Q18,
        Query::Q19,
        Query::Q20,
        Query::Q21,
        Query::Q22,
    ];

    /// The query's number.
    pub fn number(self) -> u32 {
        Query::ALL.iter().position(|&q| q == self).map_or(0, |i| i as u32 + 1)
    }

    /// `q01`, `q06`, ...: the name in tables and JSON.
    pub fn name(self) -> String {
        format!("q{:02}", self.number())
    }

    /// Parses `q6`, `q06`, `Q6` or `6`; `None` for anything else.
    pub fn parse(s: &str) -> Option<Query> {
        let t = s.trim();
        let digits = t.strip_prefix(['q', 'Q']).unwrap_or(t);
        let n: u32 = digits.parse().ok()?;
        Query::ALL.into_iter().find(|q| q.number() == n)
    }

    /// Runs the query in read transaction `rx`, scanning with `threads` workers.
    pub fn run(self, rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
        match self {
            Query::Q01 => q01::run(rx, threads),
            Query::Q02 => q02::run(rx, threads),
            Query::Q03 => q03::run(rx, threads),
            Query::Q04 => q04::run(rx, threads),
            Query::Q05 => q05::run(rx, threads),
            Query::Q06 => q06::run(rx, threads),
            Query::Q07 => q07::run(rx, threads),
            Query::Q08 => q08::run(rx, threads),
            Query::Q09 => q09::run(rx, threads),
            Query::Q10 => q10::run(rx, threads),
            Query::Q11 => q11::run(rx, threads),
            Query::Q12 => q12::run(rx, threads),
            Query::Q13 => q13::run(rx, threads),
            Query::Q14 => q14::run(rx, threads),
            Query::Q15 => q15::run(rx, threads),
            Query::Q16 => q16::run(rx, threads),
            Query::Q17 => q17::run(rx, threads),
            Query::Q18 => q18::run(rx, threads),
            Query::Q19 => q19::run(rx, threads),
            Query::Q20 => q20::run(rx, threads),
            Query::Q21 => q21::run(rx, threads),
            Query::Q22 => q22::run(rx, threads),
        }
    }
}

impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A multiplicative hash for integer keys (the Fx hash of rustc): join and group keys here are
/// trusted integers, so SipHash's defence against hash flooding buys nothing and costs time.
#[derive(Clone, Copy, Debug, Default)]
pub struct KeyHasher(u64);

const FX_K: u64 = 0x517c_c1b7_2722_0a95;

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(FX_K);
        }
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(FX_K);
    }
    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A hash map keyed by integers, with [`KeyHasher`].
pub type KeyMap<K, V> = HashMap<K, V, BuildHasherDefault<KeyHasher>>;

/// Sets `v[key] = value`, growing `v` with `fill` (keys of the dimension tables are dense,
/// 1..=n, so a vector indexed by key is the cheapest hash table).
pub fn put<T: Clone>(v: &mut Vec<T>, key: i64, value: T, fill: T) {
    let i = usize::try_from(key).unwrap_or(0);
    if v.len() <= i {
        v.resize(i + 1, fill);
    }
    v[i] = value;
}

/// `v[key]`, or `None` past its end.
#[inline]
pub fn at<T: Copy>(v: &[T], key: i64) -> Option<T> {
    usize::try_from(key).ok().and_then(|i| v.get(i).copied())
}

/// Merges per-worker maps of sums.
pub fn merge_sums<K: std::hash::Hash + Eq>(
    mut a: KeyMap<K, i128>,
    b: KeyMap<K, i128>,
) -> KeyMap<K, i128> {
    if a.len() < b.len() {
        return merge_sums(b, a);
    }
    for (k, v) in b {
        *a.entry(k).or_default() += v;
    }
    a
}

/// `units × 10^-scale` with exactly `scale` places.
pub fn scaled(units: i128, scale: u8) -> String {
    let mut s = String::new();
    nvpage::format_scaled(&mut s, units, scale).expect("writing to a String");
    s
}

/// `n / d` rounded half away from zero (`d > 0`).
pub fn div_round(n: i128, d: i128) -> i128 {
    let q = n / d;
    let r = n % d;
    if 2 * r.abs() >= d { q + n.signum() } else { q }
}

/// The average of `count` values summing to `sum` (at scale `scale`), to two places.
pub fn avg2(sum: i128, scale: u8, count: u64) -> String {
    if count == 0 {
        return "NULL".into();
    }
    let units = if scale >= 2 {
        div_round(sum, 10i128.pow(u32::from(scale - 2)) * i128::from(count))
    } else {
        div_round(sum * 10i128.pow(u32::from(2 - scale)), i128::from(count))
    };
    scaled(units, 2)
}

/// A date constant of the queries' parameters.
pub const fn ymd(y: i32, m: u32, d: u32) -> Date {
    match Date::from_ymd(y, m, d) {
        Some(date) => date,
        None => panic!("an invalid constant date"),
    }
}

/// `extendedprice × (1 − discount)` at scale 4, from cents and hundredths.
#[inline]
pub fn disc_price(price: i64, discount: i64) -> i128 {
    i128::from(price * (100 - discount))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_names() {
        assert_eq!(Query::parse("q6"), Some(Query::Q06));
        assert_eq!(Query::parse("Q01"), Some(Query::Q01));
        assert_eq!(Query::parse("19"), Some(Query::Q19));
        assert_eq!(Query::parse("q2"), Some(Query::Q02));
        assert_eq!(Query::parse("q22"), Some(Query::Q22));
        assert_eq!(Query::parse("q23"), None);
        assert_eq!(Query::parse("0"), None);
        assert_eq!(Query::parse("x"), None);
        assert_eq!(Query::Q06.name(), "q06");
    }

    #[test]
    fn rounding_and_formatting() {
        assert_eq!(div_round(5, 2), 3);
        assert_eq!(div_round(-5, 2), -3);
        assert_eq!(div_round(4, 3), 1);
        assert_eq!(avg2(5104, 2, 2), "25.52");
        assert_eq!(avg2(1, 2, 3), "0.00");
        assert_eq!(avg2(2, 2, 3), "0.01");
        assert_eq!(avg2(7, 0, 2), "3.50");
        assert_eq!(scaled(1231410782283, 4), "123141078.2283");
        assert_eq!(scaled(-5, 2), "-0.05");
    }
}
