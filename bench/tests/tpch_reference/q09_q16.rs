//! Q9 to Q16.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::data::{Cust, Data, rev};
use super::{Rows, fixed, ratio2};

pub fn q09(d: &Data) -> Rows {
    let names = d.nation_name();
    let supp_nation = d.supp_nation();
    let green: HashSet<i64> =
        d.parts.iter().filter(|p| p.name.contains("green")).map(|p| p.partkey).collect();
    // At the tiniest scale factors the generator repeats a (part, supplier) pair in partsupp;
    // the join then matches each row.
    let mut costs: HashMap<(i64, i64), Vec<i64>> = HashMap::new();
    for ps in &d.partsupps {
        costs.entry((ps.partkey, ps.suppkey)).or_default().push(ps.supplycost);
    }
    let year: HashMap<i64, &str> = d.orders.iter().map(|o| (o.orderkey, &o.date[..4])).collect();
    let mut sums: BTreeMap<(&str, std::cmp::Reverse<&str>), i128> = BTreeMap::new();
    for l in d.lines.iter().filter(|l| green.contains(&l.partkey)) {
        let Some(matches) = costs.get(&(l.partkey, l.suppkey)) else { continue };
        for &cost in matches {
            let amount = rev(l) - i128::from(cost) * i128::from(l.qty) * 100;
            let key = (names[&supp_nation[&l.suppkey]], std::cmp::Reverse(year[&l.orderkey]));
            *sums.entry(key).or_default() += amount;
        }
    }
    (
        vec!["nation", "o_year", "sum_profit"],
        sums.into_iter()
            .map(|((n, y), v)| vec![n.to_string(), y.0.to_string(), fixed(v, 4)])
            .collect(),
    )
}

pub fn q10(d: &Data) -> Rows {
    let order_cust: HashMap<i64, i64> = d
        .orders
        .iter()
        .filter(|o| o.date.as_str() >= "1993-10-01" && o.date.as_str() < "1994-01-01")
        .map(|o| (o.orderkey, o.custkey))
        .collect();
    let mut sums: HashMap<i64, i128> = HashMap::new();
    for l in d.lines.iter().filter(|l| l.flag == "R") {
        if let Some(c) = order_cust.get(&l.orderkey) {
            *sums.entry(*c).or_default() += rev(l);
        }
    }
    let mut v: Vec<(i64, i128)> = sums.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let custs: HashMap<i64, &Cust> = d.custs.iter().map(|c| (c.custkey, c)).collect();
    let names: HashMap<i64, &str> = d.nations.iter().map(|n| (n.0, n.1.as_str())).collect();
    let rows = v
        .into_iter()
        .take(20)
        .map(|(k, r)| {
            let c = custs[&k];
            vec![
                k.to_string(),
                c.name.clone(),
                fixed(r, 4),
                fixed(i128::from(c.acctbal), 2),
                names[&c.nation].to_string(),
                c.address.clone(),
                c.phone.clone(),
                c.comment.clone(),
            ]
        })
        .collect();
    (
        vec![
            "c_custkey",
            "c_name",
            "revenue",
            "c_acctbal",
            "n_name",
            "c_address",
            "c_phone",
            "c_comment",
        ],
        rows,
    )
}

pub fn q11(d: &Data) -> Rows {
    let germany = d.nation_key("GERMANY");
    let german: HashSet<i64> =
        d.supps.iter().filter(|s| s.nation == germany).map(|s| s.suppkey).collect();
    let mut value: HashMap<i64, i128> = HashMap::new();
    for ps in d.partsupps.iter().filter(|ps| german.contains(&ps.suppkey)) {
        *value.entry(ps.partkey).or_default() +=
            i128::from(ps.supplycost) * i128::from(ps.availqty);
    }
    let total: i128 = value.values().sum();
    // value > total × 0.0001 / SF, i.e. value × SF × 10,000 > total (SF × 10,000 is whole at
    // the scale factors the tests use).
    let k = (d.sf * 10_000.0).round() as i128;
    assert!(((d.sf * 10_000.0) - k as f64).abs() < 1e-9, "SF × 10,000 must be whole");
    let mut v: Vec<(i64, i128)> = value.into_iter().filter(|&(_, v)| v * k > total).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    (
        vec!["ps_partkey", "value"],
        v.into_iter().map(|(p, v)| vec![p.to_string(), fixed(v, 2)]).collect(),
    )
}

pub fn q12(d: &Data) -> Rows {
    let prio: HashMap<i64, &str> = d.orders.iter().map(|o| (o.orderkey, o.prio.as_str())).collect();
    let mut counts: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for l in &d.lines {
        if (l.mode == "MAIL" || l.mode == "SHIP")
            && l.commit < l.receipt
            && l.ship < l.commit
            && l.receipt.as_str() >= "1994-01-01"
            && l.receipt.as_str() < "1995-01-01"
        {
            let p = prio[&l.orderkey];
            let e = counts.entry(l.mode.as_str()).or_default();
            if p == "1-URGENT" || p == "2-HIGH" {
                e.0 += 1;
            } else {
                e.1 += 1;
            }
        }
    }
    (
        vec!["l_shipmode", "high_line_count", "low_line_count"],
        counts
            .into_iter()
            .map(|(m, (h, l))| vec![m.to_string(), h.to_string(), l.to_string()])
            .collect(),
    )
}

pub fn q13(d: &Data) -> Rows {
    // o_comment not like '%special%requests%'
    let excluded =
        |c: &str| c.find("special").is_some_and(|i| c[i + "special".len()..].contains("requests"));
    let mut per_cust: HashMap<i64, u64> = d.custs.iter().map(|c| (c.custkey, 0)).collect();
    for o in d.orders.iter().filter(|o| !excluded(&o.comment)) {
        if let Some(n) = per_cust.get_mut(&o.custkey) {
            *n += 1;
        }
    }
    let mut dist: HashMap<u64, u64> = HashMap::new();
    for n in per_cust.into_values() {
        *dist.entry(n).or_default() += 1;
    }
    let mut v: Vec<(u64, u64)> = dist.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
    (
        vec!["c_count", "custdist"],
        v.into_iter().map(|(c, n)| vec![c.to_string(), n.to_string()]).collect(),
    )
}

pub fn q14(d: &Data) -> Rows {
    let promo: HashSet<i64> =
        d.parts.iter().filter(|p| p.ty.starts_with("PROMO")).map(|p| p.partkey).collect();
    let (mut p, mut t) = (0i128, 0i128);
    for l in
        d.lines.iter().filter(|l| l.ship.as_str() >= "1995-09-01" && l.ship.as_str() < "1995-10-01")
    {
        t += rev(l);
        if promo.contains(&l.partkey) {
            p += rev(l);
        }
    }
    (vec!["promo_revenue"], vec![vec![ratio2(100 * p, t)]])
}

pub fn q15(d: &Data) -> Rows {
    let mut revenue: BTreeMap<i64, i128> = BTreeMap::new();
    for l in
        d.lines.iter().filter(|l| l.ship.as_str() >= "1996-01-01" && l.ship.as_str() < "1996-04-01")
    {
        *revenue.entry(l.suppkey).or_default() += rev(l);
    }
    let max = revenue.values().copied().max();
    let rows = d
        .supps
        .iter()
        .filter(|s| revenue.get(&s.suppkey).copied() == max && max.is_some())
        .map(|s| {
            vec![
                s.suppkey.to_string(),
                s.name.clone(),
                s.address.clone(),
                s.phone.clone(),
                fixed(revenue[&s.suppkey], 4),
            ]
        })
        .collect();
    (vec!["s_suppkey", "s_name", "s_address", "s_phone", "total_revenue"], rows)
}

pub fn q16(d: &Data) -> Rows {
    let complaints: HashSet<i64> = d
        .supps
        .iter()
        .filter(|s| {
            s.comment
                .find("Customer")
                .is_some_and(|i| s.comment[i + "Customer".len()..].contains("Complaints"))
        })
        .map(|s| s.suppkey)
        .collect();
    let sizes = [49, 14, 23, 45, 19, 3, 36, 9];
    let parts: HashMap<i64, &super::data::Part> = d
        .parts
        .iter()
        .filter(|p| {
            p.brand != "Brand#45" && !p.ty.starts_with("MEDIUM POLISHED") && sizes.contains(&p.size)
        })
        .map(|p| (p.partkey, p))
        .collect();
    let mut groups: HashMap<(&str, &str, i32), HashSet<i64>> = HashMap::new();
    for ps in &d.partsupps {
        let Some(p) = parts.get(&ps.partkey) else { continue };
        if !complaints.contains(&ps.suppkey) {
            groups.entry((p.brand.as_str(), p.ty.as_str(), p.size)).or_default().insert(ps.suppkey);
        }
    }
    let mut v: Vec<((&str, &str, i32), usize)> =
        groups.into_iter().map(|(g, s)| (g, s.len())).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    (
        vec!["p_brand", "p_type", "p_size", "supplier_cnt"],
        v.into_iter()
            .map(|((b, t, s), n)| vec![b.to_string(), t.to_string(), s.to_string(), n.to_string()])
            .collect(),
    )
}
