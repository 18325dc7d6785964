//! At scale factor 1, every answer is also checked against the TPC-H answer set that `tpchgen`
//! ships (derived from the reference `dbgen` and the specification's queries): row by row,
//! values compared after trimming the set's padding. Text and whole numbers (keys, counts) must
//! be equal. A decimal must equal the set's once rounded to the set's places (it prints two; our
//! exact sums carry four or six), or else lie within the precision the specification asks of
//! answers (clause 2.1.3.5: sums within $100, averages and ratios within 1%, here the tighter
//! of the two, and never less than one unit of the set's last place): the set is not exact
//! everywhere — it rounds Q9's 42698382.8550 down, and its Q17 is 348406.02 where exact
//! arithmetic (ours, the plain-Rust reference's and PostgreSQL's) gives 348406.05. The report
//! counts the values accepted that way. One column of the set is wrong in a way no tolerance
//! covers: Q11's `ps_partkey` is printed divided by 100 (129760 as 1297), so that column is
//! compared as ours / 100.

use super::postgres::round_to;
use super::queries::{Query, QueryResult};
use super::runner::row_text;

/// The scale factor at which the tests check every plan against the plain-Rust reference
/// (`bench/tests/bench/tpch_answers_match_reference.rs`), as the report says.
pub const REFERENCE_TEST_SF: f64 = 0.03;

fn places(v: &str) -> usize {
    v.split_once('.').map_or(0, |(_, f)| f.len())
}

/// How a cell of ours compares with the answer set's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cell {
    /// Equal, or equal once rounded to the set's places.
    Equal,
    /// A decimal within clause 2.1.3.5's precision, not equal.
    Within,
    /// Different.
    Differs,
}

fn compare_cell(ours: &str, set: &str) -> Cell {
    let (a, b) = (ours.trim(), set.trim());
    if a == b {
        return Cell::Equal;
    }
    let p = places(b);
    if p == 0 || places(a) == 0 {
        // Text, keys and counts: exact.
        return Cell::Differs;
    }
    if round_to(a, p).is_some_and(|x| Some(x) == round_to(b, p)) {
        return Cell::Equal;
    }
    let (Ok(x), Ok(y)) = (a.parse::<f64>(), b.parse::<f64>()) else { return Cell::Differs };
    let unit = 10f64.powi(-(p as i32));
    let allowed = (0.01 * y.abs()).min(100.0).max(unit);
    // Half a unit of slack for the binary representation of the two decimals.
    if (x - y).abs() <= allowed + unit / 2.0 { Cell::Within } else { Cell::Differs }
}

/// Q11's answer set prints `ps_partkey` divided by 100: our key, as the set prints it.
fn as_the_set_prints(q: Query, col: usize, ours: &str) -> String {
    match (q, col, ours.parse::<i64>()) {
        (Query::Q11, 0, Ok(k)) => (k / 100).to_string(),
        _ => ours.to_string(),
    }
}

/// `None` if our answer to `q` at SF 1 matches the answer set's (as [`check_sf1_counted`]
/// compares), else the first difference.
pub fn check_sf1(q: Query, ours: &QueryResult) -> Option<String> {
    check_sf1_counted(q, ours).err()
}

/// Compares our answer to `q` at SF 1 with the answer set's: `Ok` with the number of decimals
/// accepted within clause 2.1.3.5's precision rather than equal (0 when the set has no answer),
/// or the first difference.
pub fn check_sf1_counted(q: Query, ours: &QueryResult) -> Result<usize, String> {
    let Some(text) = tpchgen::q_and_a::answers_sf1::answer(q.number() as i32) else {
        return Ok(0);
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let rows: Vec<Vec<&str>> = lines.iter().skip(1).map(|l| l.split('|').collect()).collect();
    if rows.len() != ours.rows.len() {
        return Err(format!("{} rows, the answer set has {}", ours.rows.len(), rows.len()));
    }
    let mut within = 0;
    for (i, (a, b)) in ours.rows.iter().zip(&rows).enumerate() {
        let differs = || format!("row {i}: {} vs the answer set's {}", row_text(a), row_text(b));
        if a.len() != b.len() {
            return Err(differs());
        }
        for (col, (x, y)) in a.iter().zip(b).enumerate() {
            match compare_cell(&as_the_set_prints(q, col, x), y) {
                Cell::Equal => {}
                Cell::Within => within += 1,
                Cell::Differs => return Err(differs()),
            }
        }
    }
    Ok(within)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_compare_at_the_sets_places_or_within_the_specifications_precision() {
        assert_eq!(compare_cell("406181.0093", "406181.01"), Cell::Equal);
        assert_eq!(compare_cell("BUILDING", "BUILDING   "), Cell::Equal);
        assert_eq!(compare_cell("0", "                   0"), Cell::Equal);
        assert_eq!(compare_cell("MAIL", "SHIP"), Cell::Differs);
        // A key or a count is exact.
        assert_eq!(compare_cell("1479", "1478"), Cell::Differs);
        // The set's rounding of a tie, and its Q17.
        assert_eq!(compare_cell("42698382.8550", "42698382.85"), Cell::Within);
        assert_eq!(compare_cell("348406.05", "348406.02"), Cell::Within);
        // A sum $100 off, an average 2% off: different.
        assert_eq!(compare_cell("123141178.24", "123141078.23"), Cell::Differs);
        assert_eq!(compare_cell("26.03", "25.52"), Cell::Differs);
        // Small values get one unit of the last place, not 1% of it.
        assert_eq!(compare_cell("0.06", "0.05"), Cell::Within);
        assert_eq!(compare_cell("0.07", "0.05"), Cell::Differs);
    }

    #[test]
    fn a_made_up_q6_answer_is_refused_and_the_real_one_accepted() {
        let mut r = QueryResult::new(&["revenue"]);
        r.rows.push(vec!["123141078.2283".into()]);
        assert_eq!(check_sf1_counted(Query::Q06, &r), Ok(0));
        assert_eq!(check_sf1(Query::Q06, &r), None);
        r.rows[0][0] = "123141378.2383".into();
        assert!(check_sf1(Query::Q06, &r).is_some());
    }

    #[test]
    fn q11_keys_are_compared_as_the_set_prints_them() {
        assert_eq!(as_the_set_prints(Query::Q11, 0, "129760"), "1297");
        assert_eq!(as_the_set_prints(Query::Q11, 1, "17538456.86"), "17538456.86");
        assert_eq!(as_the_set_prints(Query::Q10, 0, "129760"), "129760");
    }
}
