//! The TPC-H queries as hand-written plans over nvpage scans: filters and projections in the
//! scan's fold, hash joins against maps built from the smaller side, hash (or array)
//! aggregation, sorting and limits. Each runs with the specification's validation parameters
//! (clause 2.4, "Validation").
//!
//! Arithmetic is exact: money columns are `i64` cents, products are kept at their natural scale
//! (`extendedprice × (1 − discount)` is scale 4) and summed in `i128`. Only averages and Q14's
//! ratio are rounded, half away from zero, to two places as the answer set shows them. Ties in
//! an `ORDER BY` are broken by the group key so every layer and run returns the same rows.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

use nvpage::{Date, ReadTxn};

pub mod q01;
mod q03;
mod q05;
pub mod q06;
mod q10;
mod q12;
mod q14;
mod q19;

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

/// The implemented queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Query {
    /// Pricing summary report: one pass over lineitem, grouped by flag and status.
    Q01,
    /// Shipping priority: customer ⋈ orders ⋈ lineitem, top 10 orders by revenue.
    Q03,
    /// Local supplier volume: six tables, revenue per Asian nation.
    Q05,
    /// Forecasting revenue change: one filtered sum over lineitem.
    Q06,
    /// Returned item reporting: top 20 customers by lost revenue.
    Q10,
    /// Shipping modes and order priority: lineitem ⋈ orders.
    Q12,
    /// Promotion effect: lineitem ⋈ part, one month.
    Q14,
    /// Discounted revenue: lineitem ⋈ part under three brand/container/size/quantity conditions.
    Q19,
}

impl Query {
    /// Every implemented query, in order.
    pub const ALL: [Query; 8] = [
        Query::Q01,
        Query::Q03,
        Query::Q05,
        Query::Q06,
        Query::Q10,
        Query::Q12,
        Query::Q14,
        Query::Q19,
    ];

    /// The query's number.
    pub fn number(self) -> u32 {
        match self {
            Query::Q01 => 1,
            Query::Q03 => 3,
            Query::Q05 => 5,
            Query::Q06 => 6,
            Query::Q10 => 10,
            Query::Q12 => 12,
            Query::Q14 => 14,
            Query::Q19 => 19,
        }
    }

    /// `q01`, `q06`, ...: the name in tables and JSON.
    pub fn name(self) -> String {
        format!("q{:02}", self.number())
    }

    /// Parses `q6`, `q06`, `Q6` or `6`; `None` for a query that is not implemented.
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
            Query::Q03 => q03::run(rx, threads),
            Query::Q05 => q05::run(rx, threads),
            Query::Q06 => q06::run(rx, threads),
            Query::Q10 => q10::run(rx, threads),
            Query::Q12 => q12::run(rx, threads),
            Query::Q14 => q14::run(rx, threads),
            Query::Q19 => q19::run(rx, threads),
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
pub fn ymd(y: i32, m: u32, d: u32) -> Date {
    Date::from_ymd(y, m, d).expect("a valid constant date")
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
        assert_eq!(Query::parse("q2"), None);
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
