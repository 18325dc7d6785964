//! Q22, global sales opportunity: customers of seven country codes with an above-average positive
//! balance who never ordered, counted and summed per code. Decorrelated: the average is an
//! uncorrelated aggregate over the same customers, `NOT EXISTS` an anti-join with the set of
//! customers who ordered. Plan: customer → (key, code, balance) of the seven codes; the average
//! of the positive balances; orders → dense set of customers with an order; the rest probe it.

use nvpage::{ReadOps, ReadTxn, kind};

use super::ops::collect;
use super::{QueryResult, scaled};

const CODES: [&[u8]; 7] = [b"13", b"31", b"23", b"29", b"30", b"18", b"17"];

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let ct = rx.table("customer")?;
    let c_key = ct.col::<kind::I64>("c_custkey")?;
    let c_phone = ct.col::<kind::Bytes>("c_phone")?;
    let c_acct = ct.col::<kind::Units>("c_acctbal")?;
    // (customer, code index, balance in cents)
    let custs = collect(rx, &ct, threads, |r| {
        let phone = r.get(c_phone)?;
        let Some(code) = CODES.iter().position(|c| phone.starts_with(c)) else { return Ok(None) };
        Ok(Some((r.get(c_key)?, code, r.get(c_acct)?)))
    })?;
    let (sum, n) = custs
        .iter()
        .filter(|c| c.2 > 0)
        .fold((0i128, 0i128), |(s, n), c| (s + i128::from(c.2), n + 1));

    let ot = rx.table("orders")?;
    let o_cust = ot.col::<kind::I64>("o_custkey")?;
    // Customer keys are dense (1..=n).
    let ordered = rx.par_fold(
        &ot,
        threads,
        Vec::<bool>::new,
        |mut v, r| {
            let i = usize::try_from(r.get(o_cust)?).unwrap_or(0);
            if v.len() <= i {
                v.resize(i + 1, false);
            }
            v[i] = true;
            Ok(v)
        },
        |mut a, mut b| {
            if a.len() < b.len() {
                std::mem::swap(&mut a, &mut b);
            }
            for (x, y) in a.iter_mut().zip(b) {
                *x |= y;
            }
            a
        },
    )?;

    // `balance > sum / n`, exactly: `balance × n > sum` (no positive balance: no average, and
    // a comparison with NULL keeps nobody).
    let mut groups = [(0u64, 0i128); CODES.len()];
    for (k, code, bal) in custs {
        let has_ordered =
            usize::try_from(k).ok().and_then(|i| ordered.get(i)).copied() == Some(true);
        if n > 0 && i128::from(bal) * n > sum && !has_ordered {
            groups[code].0 += 1;
            groups[code].1 += i128::from(bal);
        }
    }
    let mut rows: Vec<(&[u8], (u64, i128))> =
        CODES.iter().copied().zip(groups).filter(|g| g.1.0 > 0).collect();
    rows.sort_by_key(|r| r.0);
    let mut out = QueryResult::new(&["cntrycode", "numcust", "totacctbal"]);
    for (code, (count, total)) in rows {
        out.rows.push(vec![
            String::from_utf8_lossy(code).into_owned(),
            count.to_string(),
            scaled(total, 2),
        ]);
    }
    Ok(out)
}
