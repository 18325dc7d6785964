//! Q11, important stock identification: the parts whose stock held by German suppliers is worth
//! more than a fraction of all such stock — 0.0001 / SF, as the specification scales it.
//! Decorrelated: the uncorrelated subquery is the grand total of the same aggregate. Plan:
//! supplier → dense set of German suppliers (and the count of all suppliers); partsupp probes it
//! and sums value per part; the total is the sum of the groups.
//!
//! The scale factor is the database's own: supplier has SF × 10,000 rows (clause 4.2.5), so the
//! fraction 0.0001 / SF is 1 / suppliers and `value > total × fraction` is
//! `value × suppliers > total`, exact in integers.

use nvpage::{ReadOps, ReadTxn, kind};

use super::ops::{aggregate, nation_key, nations};
use super::{QueryResult, at, put, scaled};

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let nations = nations(rx)?;
    let germany = nation_key(&nations, "GERMANY");
    let st = rx.table("supplier")?;
    let (s_key, s_nation) =
        (st.col::<kind::I64>("s_suppkey")?, st.col::<kind::I32>("s_nationkey")?);
    let mut german = Vec::new();
    rx.for_each_row(&st, |r| {
        if Some(r.get(s_nation)?) == germany {
            put(&mut german, r.get(s_key)?, true, false);
        }
        Ok(())
    })?;

    let pst = rx.table("partsupp")?;
    let ps_part = pst.col::<kind::I64>("ps_partkey")?;
    let ps_supp = pst.col::<kind::I64>("ps_suppkey")?;
    let ps_avail = pst.col::<kind::I32>("ps_availqty")?;
    let ps_cost = pst.col::<kind::Units>("ps_supplycost")?;
    // Value at scale 2: cost in cents × a whole quantity.
    let values = aggregate(rx, &pst, threads, |r| {
        if at(&german, r.get(ps_supp)?) != Some(true) {
            return Ok(None);
        }
        let v = i128::from(r.get(ps_cost)?) * i128::from(r.get(ps_avail)?);
        Ok(Some((r.get(ps_part)?, v)))
    })?;
    let total: i128 = values.values().sum();
    let n = i128::from(rx.row_count(&st)?);
    let mut rows: Vec<(i64, i128)> = values.into_iter().filter(|&(_, v)| v * n > total).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out = QueryResult::new(&["ps_partkey", "value"]);
    for (p, v) in rows {
        out.rows.push(vec![p.to_string(), scaled(v, 2)]);
    }
    Ok(out)
}
