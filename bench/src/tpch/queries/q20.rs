//! Q20, potential part promotion: Canadian suppliers holding more than half of what they shipped
//! in 1994 of some part whose name starts with "forest". Decorrelated: the nested `IN`s are
//! semi-joins, and the correlated sum a per-(part, supplier) aggregate restricted to the pairs
//! partsupp offers for those parts. Plan: part → dense set of forest parts; partsupp of those
//! parts → hash map of (part, supplier) to stock (the largest, where the tiniest scale factors
//! repeat a pair: one row above the bar is enough for `IN`); lineitem of 1994 probes it and sums quantities
//! per pair; the pairs whose stock exceeds half of it name the suppliers; supplier keeps the
//! Canadian ones among them.

use nvpage::{ReadOps, ReadTxn, kind};

use super::ops::{KeySet, aggregate, collect, nation_key, nations};
use super::{KeyMap, QueryResult, at, put, ymd};

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let (from, to) = (ymd(1994, 1, 1), ymd(1995, 1, 1));
    let pt = rx.table("part")?;
    let (p_key, p_name) = (pt.col::<kind::I64>("p_partkey")?, pt.col::<kind::Bytes>("p_name")?);
    let mut forest = Vec::new();
    rx.for_each_row(&pt, |r| {
        if r.get(p_name)?.starts_with(b"forest") {
            put(&mut forest, r.get(p_key)?, true, false);
        }
        Ok(())
    })?;

    let pst = rx.table("partsupp")?;
    let ps_part = pst.col::<kind::I64>("ps_partkey")?;
    let ps_supp = pst.col::<kind::I64>("ps_suppkey")?;
    let ps_avail = pst.col::<kind::I32>("ps_availqty")?;
    let mut stock: KeyMap<(i64, i64), i32> = KeyMap::default();
    for (k, a) in collect(rx, &pst, threads, |r| {
        let p = r.get(ps_part)?;
        if at(&forest, p) != Some(true) {
            return Ok(None);
        }
        Ok(Some(((p, r.get(ps_supp)?), r.get(ps_avail)?)))
    })? {
        let e = stock.entry(k).or_insert(a);
        *e = (*e).max(a);
    }

    let lt = rx.table("lineitem")?;
    let l_part = lt.col::<kind::I64>("l_partkey")?;
    let l_supp = lt.col::<kind::I64>("l_suppkey")?;
    let l_ship = lt.col::<kind::Date>("l_shipdate")?;
    let l_qty = lt.col::<kind::Units>("l_quantity")?;
    let shipped = aggregate(rx, &lt, threads, |r| {
        let p = r.get(l_part)?;
        if at(&forest, p) != Some(true) {
            return Ok(None);
        }
        let d = r.get(l_ship)?;
        if d < from || d >= to {
            return Ok(None);
        }
        let key = (p, r.get(l_supp)?);
        if !stock.contains_key(&key) {
            return Ok(None);
        }
        Ok(Some((key, r.get(l_qty)?)))
    })?;
    // `availqty > 0.5 × sum(quantity)`, in hundredths: `200 × availqty > sum`. A pair with no
    // line shipped has a NULL sum, which no stock exceeds.
    let suppliers: KeySet<i64> = shipped
        .into_iter()
        .filter(|&(k, sum)| stock.get(&k).is_some_and(|&a| 200 * i64::from(a) > sum))
        .map(|((_, s), _)| s)
        .collect();

    let canada = nation_key(&nations(rx)?, "CANADA");
    let st = rx.table("supplier")?;
    let s_key = st.col::<kind::I64>("s_suppkey")?;
    let s_nation = st.col::<kind::I32>("s_nationkey")?;
    let s_name = st.col::<kind::Str>("s_name")?;
    let s_addr = st.col::<kind::Str>("s_address")?;
    let mut rows = Vec::new();
    rx.for_each_row(&st, |r| {
        if Some(r.get(s_nation)?) == canada && suppliers.contains(&r.get(s_key)?) {
            rows.push(vec![r.get(s_name)?.to_string(), r.get(s_addr)?.to_string()]);
        }
        Ok(())
    })?;
    rows.sort();
    let mut out = QueryResult::new(&["s_name", "s_address"]);
    out.rows = rows;
    Ok(out)
}
