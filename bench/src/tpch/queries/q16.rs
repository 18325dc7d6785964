//! Q16, parts/supplier relationship: how many suppliers without customer complaints offer parts
//! of each brand, type and size, for eight sizes, leaving out one brand and one type prefix.
//! Decorrelated: `NOT IN` is an anti-join with the (small) set of complained-about suppliers,
//! `COUNT(DISTINCT)` a sort of (group, supplier) pairs. Plan: supplier → dense set of suppliers
//! whose comment matches "Customer ... Complaints"; part → dense map to a group number;
//! partsupp probes both and collects (group, supplier).

use nvpage::{ReadOps, ReadTxn, kind};

use super::ops::{collect, like};
use super::{KeyMap, QueryResult, at, put};

const SIZES: [i32; 8] = [49, 14, 23, 45, 19, 3, 36, 9];

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let st = rx.table("supplier")?;
    let (s_key, s_comment) =
        (st.col::<kind::I64>("s_suppkey")?, st.col::<kind::Bytes>("s_comment")?);
    let mut complained = Vec::new();
    rx.for_each_row(&st, |r| {
        if like::words_in_order(r.get(s_comment)?, &[b"Customer", b"Complaints"]) {
            put(&mut complained, r.get(s_key)?, true, false);
        }
        Ok(())
    })?;

    let pt = rx.table("part")?;
    let p_key = pt.col::<kind::I64>("p_partkey")?;
    let p_brand = pt.col::<kind::Str>("p_brand")?;
    let p_type = pt.col::<kind::Str>("p_type")?;
    let p_size = pt.col::<kind::I32>("p_size")?;
    let parts = collect(rx, &pt, threads, |r| {
        let (brand, ty, size) = (r.get(p_brand)?, r.get(p_type)?, r.get(p_size)?);
        if brand == "Brand#45" || ty.starts_with("MEDIUM POLISHED") || !SIZES.contains(&size) {
            return Ok(None);
        }
        Ok(Some((r.get(p_key)?, (brand.to_string(), ty.to_string(), size))))
    })?;
    // Groups numbered from 1 (0: not wanted), each part mapped to its group.
    let mut groups: Vec<(String, String, i32)> = Vec::new();
    let mut group_of: KeyMap<(String, String, i32), u32> = KeyMap::default();
    let mut part_group: Vec<u32> = Vec::new();
    for (k, g) in parts {
        let next = groups.len() as u32 + 1;
        let id = *group_of.entry(g.clone()).or_insert_with(|| {
            groups.push(g);
            next
        });
        put(&mut part_group, k, id, 0);
    }

    let pst = rx.table("partsupp")?;
    let ps_part = pst.col::<kind::I64>("ps_partkey")?;
    let ps_supp = pst.col::<kind::I64>("ps_suppkey")?;
    let mut pairs = collect(rx, &pst, threads, |r| {
        let Some(g) = at(&part_group, r.get(ps_part)?).filter(|&g| g > 0) else { return Ok(None) };
        let s = r.get(ps_supp)?;
        Ok((at(&complained, s) != Some(true)).then_some((g, s)))
    })?;
    pairs.sort_unstable();
    pairs.dedup();
    let mut counts = vec![0u64; groups.len() + 1];
    for (g, _) in pairs {
        counts[g as usize] += 1;
    }
    let mut rows: Vec<(&(String, String, i32), u64)> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| (g, counts[i + 1]))
        .filter(|&(_, n)| n > 0)
        .collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let mut out = QueryResult::new(&["p_brand", "p_type", "p_size", "supplier_cnt"]);
    for ((brand, ty, size), n) in rows {
        out.rows.push(vec![brand.clone(), ty.clone(), size.to_string(), n.to_string()]);
    }
    Ok(out)
}
