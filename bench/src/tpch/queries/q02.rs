//! Q2, minimum cost supplier: for each brass part of size 15, the European suppliers that offer it
//! at the lowest cost any European supplier asks; the 100 with the highest account balance.
//! Decorrelated: the correlated `min(ps_supplycost)` is a per-part minimum over the same join,
//! then an equality filter. Plan: region → European nations; supplier → dense map of European
//! suppliers; part → the parts of size 15 whose type ends in BRASS; partsupp probes both, keeps
//! (part, supplier, cost); the minimum per part; top 100.

use nvpage::{ReadOps, ReadTxn, kind};

use super::ops::{collect, nations, region_key, top_n};
use super::{KeyMap, QueryResult, at, put, scaled};

/// What the answer shows of a supplier.
#[derive(Clone, Default)]
struct Supp {
    nation: i32,
    acctbal: i64,
    name: String,
    address: String,
    phone: String,
    comment: String,
}

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let europe = region_key(rx, "EUROPE")?;
    let nations = nations(rx)?;
    let in_europe = |n: i32| {
        usize::try_from(n)
            .ok()
            .and_then(|i| nations.get(i))
            .is_some_and(|x| Some(x.region) == europe)
    };

    let st = rx.table("supplier")?;
    let s_key = st.col::<kind::I64>("s_suppkey")?;
    let s_nation = st.col::<kind::I32>("s_nationkey")?;
    let s_acct = st.col::<kind::Units>("s_acctbal")?;
    let s_name = st.col::<kind::Str>("s_name")?;
    let s_addr = st.col::<kind::Str>("s_address")?;
    let s_phone = st.col::<kind::Str>("s_phone")?;
    let s_comment = st.col::<kind::Str>("s_comment")?;
    let mut supps: Vec<Option<Supp>> = Vec::new();
    rx.for_each_row(&st, |r| {
        let n = r.get(s_nation)?;
        if in_europe(n) {
            let s = Supp {
                nation: n,
                acctbal: r.get(s_acct)?,
                name: r.get(s_name)?.to_string(),
                address: r.get(s_addr)?.to_string(),
                phone: r.get(s_phone)?.to_string(),
                comment: r.get(s_comment)?.to_string(),
            };
            put(&mut supps, r.get(s_key)?, Some(s), None);
        }
        Ok(())
    })?;
    let european =
        |k: i64| usize::try_from(k).ok().and_then(|i| supps.get(i)).is_some_and(Option::is_some);

    let pt = rx.table("part")?;
    let p_key = pt.col::<kind::I64>("p_partkey")?;
    let p_size = pt.col::<kind::I32>("p_size")?;
    let p_type = pt.col::<kind::Bytes>("p_type")?;
    let p_mfgr = pt.col::<kind::Str>("p_mfgr")?;
    let parts: KeyMap<i64, String> = collect(rx, &pt, threads, |r| {
        if r.get(p_size)? != 15 || !r.get(p_type)?.ends_with(b"BRASS") {
            return Ok(None);
        }
        Ok(Some((r.get(p_key)?, r.get(p_mfgr)?.to_string())))
    })?
    .into_iter()
    .collect();
    let mut wanted = Vec::new();
    for &k in parts.keys() {
        put(&mut wanted, k, true, false);
    }

    let pst = rx.table("partsupp")?;
    let ps_part = pst.col::<kind::I64>("ps_partkey")?;
    let ps_supp = pst.col::<kind::I64>("ps_suppkey")?;
    let ps_cost = pst.col::<kind::Units>("ps_supplycost")?;
    let offers = collect(rx, &pst, threads, |r| {
        let (p, s) = (r.get(ps_part)?, r.get(ps_supp)?);
        if at(&wanted, p) != Some(true) || !european(s) {
            return Ok(None);
        }
        Ok(Some((p, s, r.get(ps_cost)?)))
    })?;
    let mut min_cost: KeyMap<i64, i64> = KeyMap::default();
    let mut rows = Vec::with_capacity(offers.len());
    for (p, s, cost) in offers {
        let m = min_cost.entry(p).or_insert(cost);
        *m = (*m).min(cost);
        rows.push((p, s, cost));
    }
    let rows: Vec<(&Supp, &str, i64)> = rows
        .into_iter()
        .filter(|&(p, _, cost)| min_cost.get(&p) == Some(&cost))
        .filter_map(|(p, s, _)| {
            let supp = supps.get(usize::try_from(s).ok()?)?.as_ref()?;
            Some((supp, parts.get(&p)?.as_str(), p))
        })
        .collect();
    let name_of = |n: i32| nations.get(n as usize).map_or("", |x| x.name.as_str());
    let top = top_n(rows, 100, |a, b| {
        b.0.acctbal
            .cmp(&a.0.acctbal)
            .then_with(|| name_of(a.0.nation).cmp(name_of(b.0.nation)))
            .then_with(|| a.0.name.cmp(&b.0.name))
            .then(a.2.cmp(&b.2))
    });
    let mut out = QueryResult::new(&[
        "s_acctbal",
        "s_name",
        "n_name",
        "p_partkey",
        "p_mfgr",
        "s_address",
        "s_phone",
        "s_comment",
    ]);
    for (s, mfgr, p) in top {
        out.rows.push(vec![
            scaled(i128::from(s.acctbal), 2),
            s.name.clone(),
            name_of(s.nation).to_string(),
            p.to_string(),
            mfgr.to_string(),
            s.address.clone(),
            s.phone.clone(),
            s.comment.clone(),
        ]);
    }
    Ok(out)
}
