//! Q21, suppliers who kept orders waiting: per Saudi supplier, the finished multi-supplier orders
//! in which it alone was late. Decorrelated: `EXISTS` (another supplier in the order) and `NOT
//! EXISTS` (another supplier late in it) become per-order counts of distinct suppliers — all
//! and late — so a late line qualifies when its order has more than one supplier and exactly one
//! late supplier (itself). Plan: supplier → dense set of Saudi suppliers; lineitem → the late
//! lines of Saudi suppliers (few); orders keeps those of status F; lineitem again, for those
//! orders only, aggregates the two distinct counts (as "one, or more than one"); top 100.

use nvpage::{ReadOps, ReadTxn, kind};

use super::ops::{KeySet, Merge, aggregate, collect, nation_key, nations, top_n};
use super::{KeyMap, QueryResult, at, put};

/// `COUNT(DISTINCT supplier)` as far as the query needs it: none, one (which), or more.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Distinct {
    first: Option<i64>,
    many: bool,
}

impl Distinct {
    fn of(s: i64) -> Self {
        Distinct { first: Some(s), many: false }
    }

    fn add(&mut self, s: i64) {
        match self.first {
            None => self.first = Some(s),
            Some(f) if f != s => self.many = true,
            Some(_) => {}
        }
    }
}

impl Merge for Distinct {
    fn merge(&mut self, other: Self) {
        self.many |= other.many;
        if let Some(s) = other.first {
            self.add(s);
        }
    }
}

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let saudi = nation_key(&nations(rx)?, "SAUDI ARABIA");
    let st = rx.table("supplier")?;
    let s_key = st.col::<kind::I64>("s_suppkey")?;
    let s_nation = st.col::<kind::I32>("s_nationkey")?;
    let s_name = st.col::<kind::Str>("s_name")?;
    let mut names: KeyMap<i64, String> = KeyMap::default();
    let mut is_saudi = Vec::new();
    rx.for_each_row(&st, |r| {
        if Some(r.get(s_nation)?) == saudi {
            let k = r.get(s_key)?;
            put(&mut is_saudi, k, true, false);
            names.insert(k, r.get(s_name)?.to_string());
        }
        Ok(())
    })?;

    let lt = rx.table("lineitem")?;
    let l_key = lt.col::<kind::I64>("l_orderkey")?;
    let l_supp = lt.col::<kind::I64>("l_suppkey")?;
    let l_commit = lt.col::<kind::Date>("l_commitdate")?;
    let l_receipt = lt.col::<kind::Date>("l_receiptdate")?;
    let late_lines = collect(rx, &lt, threads, |r| {
        let s = r.get(l_supp)?;
        if at(&is_saudi, s) != Some(true) || r.get(l_receipt)? <= r.get(l_commit)? {
            return Ok(None);
        }
        Ok(Some((r.get(l_key)?, s)))
    })?;
    let candidates: KeySet<i64> = late_lines.iter().map(|&(o, _)| o).collect();

    let ot = rx.table("orders")?;
    let o_key = ot.col::<kind::I64>("o_orderkey")?;
    let o_status = ot.col::<kind::Bytes>("o_orderstatus")?;
    let finished: KeySet<i64> = collect(rx, &ot, threads, |r| {
        let k = r.get(o_key)?;
        Ok((candidates.contains(&k) && r.get(o_status)? == b"F").then_some(k))
    })?
    .into_iter()
    .collect();

    let per_order = aggregate(rx, &lt, threads, |r| {
        let k = r.get(l_key)?;
        if !finished.contains(&k) {
            return Ok(None);
        }
        let s = r.get(l_supp)?;
        let late = r.get(l_receipt)? > r.get(l_commit)?;
        Ok(Some((k, (Distinct::of(s), if late { Distinct::of(s) } else { Distinct::default() }))))
    })?;

    let mut numwait: KeyMap<i64, u64> = KeyMap::default();
    for (o, s) in late_lines {
        if let Some((all, late)) = per_order.get(&o)
            && all.many
            && !late.many
        {
            *numwait.entry(s).or_default() += 1;
        }
    }
    let rows: Vec<(&str, u64)> =
        numwait.into_iter().filter_map(|(s, n)| Some((names.get(&s)?.as_str(), n))).collect();
    let top = top_n(rows, 100, |a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut out = QueryResult::new(&["s_name", "numwait"]);
    for (name, n) in top {
        out.rows.push(vec![name.to_string(), n.to_string()]);
    }
    Ok(out)
}
