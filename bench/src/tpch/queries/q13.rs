//! Q13, customer distribution: how many customers have each number of orders, leaving out orders
//! whose comment mentions "special ... requests". Decorrelated: the left outer join with a count
//! is a count per customer defaulting to 0. Plan: orders → dense count per customer; customer
//! reads its count (0 if none); a histogram of the counts.

use nvpage::{ReadOps, ReadTxn, kind};

use super::ops::like;
use super::{KeyMap, QueryResult};

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let ot = rx.table("orders")?;
    let o_cust = ot.col::<kind::I64>("o_custkey")?;
    let o_comment = ot.col::<kind::Bytes>("o_comment")?;
    // Customer keys are dense (1..=n): a vector indexed by key per worker.
    let counts = rx.par_fold(
        &ot,
        threads,
        Vec::<u32>::new,
        |mut v, r| {
            if like::words_in_order(r.get(o_comment)?, &[b"special", b"requests"]) {
                return Ok(v);
            }
            let i = usize::try_from(r.get(o_cust)?).unwrap_or(0);
            if v.len() <= i {
                v.resize(i + 1, 0);
            }
            v[i] += 1;
            Ok(v)
        },
        |mut a, mut b| {
            if a.len() < b.len() {
                std::mem::swap(&mut a, &mut b);
            }
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
            a
        },
    )?;

    let ct = rx.table("customer")?;
    let c_key = ct.col::<kind::I64>("c_custkey")?;
    let hist = rx.par_fold(
        &ct,
        threads,
        KeyMap::<u32, u64>::default,
        |mut m, r| {
            let n = usize::try_from(r.get(c_key)?).ok().and_then(|i| counts.get(i)).copied();
            *m.entry(n.unwrap_or(0)).or_default() += 1;
            Ok(m)
        },
        super::ops::merge_maps,
    )?;
    let mut rows: Vec<(u32, u64)> = hist.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
    let mut out = QueryResult::new(&["c_count", "custdist"]);
    for (c, n) in rows {
        out.rows.push(vec![c.to_string(), n.to_string()]);
    }
    Ok(out)
}
