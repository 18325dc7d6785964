//! Q12, shipping modes and order priority: late lineitems received in 1994 by MAIL or SHIP,
//! counted by whether their order is urgent or high priority. Plan: lineitem filtered first
//! (few rows pass) → hash map of order → counts per mode; orders probes it.

use nvpage::{ReadOps, ReadTxn, kind};

use super::{KeyMap, QueryResult, ymd};

const MODES: [&[u8]; 2] = [b"MAIL", b"SHIP"];

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let (from, to) = (ymd(1994, 1, 1), ymd(1995, 1, 1));
    let lt = rx.table("lineitem")?;
    let l_key = lt.col::<kind::I64>("l_orderkey")?;
    let l_mode = lt.col::<kind::Bytes>("l_shipmode")?;
    let l_ship = lt.col::<kind::Date>("l_shipdate")?;
    let l_commit = lt.col::<kind::Date>("l_commitdate")?;
    let l_receipt = lt.col::<kind::Date>("l_receiptdate")?;
    let lines = rx.par_fold(
        &lt,
        threads,
        KeyMap::<i64, [u64; 2]>::default,
        |mut m, r| {
            let receipt = r.get(l_receipt)?;
            if receipt < from || receipt >= to {
                return Ok(m);
            }
            let commit = r.get(l_commit)?;
            if commit >= receipt || r.get(l_ship)? >= commit {
                return Ok(m);
            }
            let mode = r.get(l_mode)?;
            if let Some(i) = MODES.iter().position(|&x| x == mode) {
                m.entry(r.get(l_key)?).or_default()[i] += 1;
            }
            Ok(m)
        },
        |mut a, b| {
            for (k, v) in b {
                let e = a.entry(k).or_default();
                e[0] += v[0];
                e[1] += v[1];
            }
            a
        },
    )?;

    let ot = rx.table("orders")?;
    let o_key = ot.col::<kind::I64>("o_orderkey")?;
    let o_prio = ot.col::<kind::Bytes>("o_orderpriority")?;
    // counts[mode] = [high, low]
    let counts = rx.par_fold(
        &ot,
        threads,
        || [[0u64; 2]; 2],
        |mut c, r| {
            if let Some(n) = lines.get(&r.get(o_key)?) {
                let p = r.get(o_prio)?;
                let high = usize::from(!(p == b"1-URGENT" || p == b"2-HIGH"));
                c[0][high] += n[0];
                c[1][high] += n[1];
            }
            Ok(c)
        },
        |mut a, b| {
            for m in 0..2 {
                for h in 0..2 {
                    a[m][h] += b[m][h];
                }
            }
            a
        },
    )?;
    let mut out = QueryResult::new(&["l_shipmode", "high_line_count", "low_line_count"]);
    for (m, name) in ["MAIL", "SHIP"].into_iter().enumerate() {
        if counts[m][0] + counts[m][1] > 0 {
            out.rows.push(vec![name.into(), counts[m][0].to_string(), counts[m][1].to_string()]);
        }
    }
    Ok(out)
}
