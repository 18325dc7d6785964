//! The queries computed a second way, for the tests: straight from `tpchgen`'s rows in plain
//! Rust, with no nvpage storage, no nvpage types and none of the bench crate's query code. Dates
//! are compared as `YYYY-MM-DD` strings, decimals formatted here. Subqueries are evaluated as the
//! SQL states them, per outer row, over rows grouped by the correlation key beforehand (so the
//! reference stays fast at test scale factors without sharing the plans' decorrelation).
//!
//! - [`data`]: the generator's rows, as plain structs.
//! - [`q01_q08`], [`q09_q16`], [`q17_q22`]: one function per query, returning column names and
//!   rows.

#![allow(dead_code)]

mod data;
mod q01_q08;
mod q09_q16;
mod q17_q22;

pub use data::Data;

/// Column names and rows of one answer.
pub type Rows = (Vec<&'static str>, Vec<Vec<String>>);

/// A nonnegative or negative fixed-point number with `places` digits.
pub fn fixed(v: i128, places: u32) -> String {
    let p = 10i128.pow(places);
    let sign = if v < 0 { "-" } else { "" };
    let a = v.abs();
    format!("{sign}{}.{:0w$}", a / p, a % p, w = places as usize)
}

/// `num / den` to `places` places, half away from zero (`num >= 0`, `den > 0`).
pub fn ratio(num: i128, den: i128, places: u32) -> String {
    let p = 10i128.pow(places);
    fixed((2 * p * num + den) / (2 * den), places)
}

/// `num / den` to two places, half away from zero (`num >= 0`, `den > 0`).
pub fn ratio2(num: i128, den: i128) -> String {
    ratio(num, den, 2)
}

/// The reference answer of query `n`.
pub fn answer(d: &Data, n: u32) -> Rows {
    match n {
        1 => q01_q08::q01(d),
        2 => q01_q08::q02(d),
        3 => q01_q08::q03(d),
        4 => q01_q08::q04(d),
        5 => q01_q08::q05(d),
        6 => q01_q08::q06(d),
        7 => q01_q08::q07(d),
        8 => q01_q08::q08(d),
        9 => q09_q16::q09(d),
        10 => q09_q16::q10(d),
        11 => q09_q16::q11(d),
        12 => q09_q16::q12(d),
        13 => q09_q16::q13(d),
        14 => q09_q16::q14(d),
        15 => q09_q16::q15(d),
        16 => q09_q16::q16(d),
        17 => q17_q22::q17(d),
        18 => q17_q22::q18(d),
        19 => q17_q22::q19(d),
        20 => q17_q22::q20(d),
        21 => q17_q22::q21(d),
        22 => q17_q22::q22(d),
        _ => panic!("no query {n}"),
    }
}
