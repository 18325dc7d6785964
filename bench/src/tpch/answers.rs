//! At scale factor 1, every answer is also checked against the TPC-H answer set that `tpchgen`
//! ships (derived from the reference `dbgen` and the specification's queries): values compared
//! after trimming the set's padding, numbers at the fewer of the two places (the set prints two;
//! our exact sums carry four or six).

use super::postgres::round_to;

/// The scale factor at which the tests check every plan against the plain-Rust reference
/// (`bench/tests/tpch_answers_match_reference.rs`), as the report says.
pub const REFERENCE_TEST_SF: f64 = 0.03;
use super::queries::{Query, QueryResult};

fn places(v: &str) -> usize {
    v.split_once('.').map_or(0, |(_, f)| f.len())
}

fn same_cell(ours: &str, set: &str) -> bool {
    let (a, b) = (ours.trim(), set.trim());
    if a == b {
        return true;
    }
    let p = places(a).min(places(b));
    match (round_to(a, p), round_to(b, p)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// `None` if our answer to `q` at SF 1 equals the answer set's, else the first difference.
pub fn check_sf1(q: Query, ours: &QueryResult) -> Option<String> {
    let text = tpchgen::q_and_a::answers_sf1::answer(q.number() as i32)?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let rows: Vec<Vec<&str>> = lines.iter().skip(1).map(|l| l.split('|').collect()).collect();
    if rows.len() != ours.rows.len() {
        return Some(format!("{} rows, the answer set has {}", ours.rows.len(), rows.len()));
    }
    for (i, (a, b)) in ours.rows.iter().zip(&rows).enumerate() {
        if a.len() != b.len() || !a.iter().zip(b).all(|(x, y)| same_cell(x, y)) {
            return Some(format!("row {i}: {a:?} vs the answer set's {b:?}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_compare_at_the_fewer_places() {
        assert!(same_cell("406181.0093", "406181.01"));
        assert!(same_cell("BUILDING", "BUILDING   "));
        assert!(same_cell("0", "                   0"));
        assert!(!same_cell("406181.0149", "406181.02"));
        assert!(!same_cell("MAIL", "SHIP"));
    }

    #[test]
    fn a_made_up_q6_answer_is_refused_and_the_real_one_accepted() {
        let mut r = QueryResult::new(&["revenue"]);
        r.rows.push(vec!["123141078.2283".into()]);
        assert_eq!(check_sf1(Query::Q06, &r), None);
        r.rows[0][0] = "123141078.2383".into();
        assert!(check_sf1(Query::Q06, &r).is_some());
    }
}
