//! Q17 to Q22.

use std::collections::{HashMap, HashSet};

use super::data::{Data, Line, Order, Part, rev};
use super::{Rows, fixed, ratio2};

pub fn q17(d: &Data) -> Rows {
    let wanted: HashSet<i64> = d
        .parts
        .iter()
        .filter(|p| p.brand == "Brand#23" && p.container == "MED BOX")
        .map(|p| p.partkey)
        .collect();
    let mut by_part: HashMap<i64, Vec<&Line>> = HashMap::new();
    for l in d.lines.iter().filter(|l| wanted.contains(&l.partkey)) {
        by_part.entry(l.partkey).or_default().push(l);
    }
    let mut sum = 0i128;
    for lines in by_part.values() {
        // The correlated subquery: 0.2 × the part's average quantity; `q < 0.2 × s / n` is
        // `5 × q × n < s`.
        let s: i128 = lines.iter().map(|l| i128::from(l.qty)).sum();
        let n = lines.len() as i128;
        sum += lines
            .iter()
            .filter(|l| 5 * i128::from(l.qty) * n < s)
            .map(|l| i128::from(l.price))
            .sum::<i128>();
    }
    // sum / 7.0 in dollars, to two places.
    (vec!["avg_yearly"], vec![vec![ratio2(sum, 700)]])
}

pub fn q18(d: &Data) -> Rows {
    let mut qty: HashMap<i64, i64> = HashMap::new();
    for l in &d.lines {
        *qty.entry(l.orderkey).or_default() += l.qty;
    }
    let names: HashMap<i64, &str> = d.custs.iter().map(|c| (c.custkey, c.name.as_str())).collect();
    let mut v: Vec<&Order> = d.orders.iter().filter(|o| qty[&o.orderkey] > 300).collect();
    v.sort_by(|a, b| {
        b.totalprice.cmp(&a.totalprice).then(a.date.cmp(&b.date)).then(a.orderkey.cmp(&b.orderkey))
    });
    let rows = v
        .into_iter()
        .take(100)
        .map(|o| {
            vec![
                names[&o.custkey].to_string(),
                o.custkey.to_string(),
                o.orderkey.to_string(),
                o.date.clone(),
                fixed(i128::from(o.totalprice), 2),
                fixed(i128::from(qty[&o.orderkey]) * 100, 2),
            ]
        })
        .collect();
    (
        vec!["c_name", "c_custkey", "o_orderkey", "o_orderdate", "o_totalprice", "sum(l_quantity)"],
        rows,
    )
}

pub fn q19(d: &Data) -> Rows {
    let parts: HashMap<i64, &Part> = d.parts.iter().map(|p| (p.partkey, p)).collect();
    let mut sum = 0i128;
    for l in &d.lines {
        let p = parts[&l.partkey];
        let air = l.mode == "AIR" || l.mode == "AIR REG";
        let person = l.instr == "DELIVER IN PERSON";
        let c = p.container.as_str();
        let m1 = p.brand == "Brand#12"
            && ["SM CASE", "SM BOX", "SM PACK", "SM PKG"].contains(&c)
            && (1..=11).contains(&l.qty)
            && (1..=5).contains(&p.size);
        let m2 = p.brand == "Brand#23"
            && ["MED BAG", "MED BOX", "MED PKG", "MED PACK"].contains(&c)
            && (10..=20).contains(&l.qty)
            && (1..=10).contains(&p.size);
        let m3 = p.brand == "Brand#34"
            && ["LG CASE", "LG BOX", "LG PACK", "LG PKG"].contains(&c)
            && (20..=30).contains(&l.qty)
            && (1..=15).contains(&p.size);
        if air && person && (m1 || m2 || m3) {
            sum += rev(l);
        }
    }
    (vec!["revenue"], vec![vec![fixed(sum, 4)]])
}

pub fn q20(d: &Data) -> Rows {
    let forest: HashSet<i64> =
        d.parts.iter().filter(|p| p.name.starts_with("forest")).map(|p| p.partkey).collect();
    let mut shipped: HashMap<(i64, i64), i64> = HashMap::new();
    for l in
        d.lines.iter().filter(|l| l.ship.as_str() >= "1994-01-01" && l.ship.as_str() < "1995-01-01")
    {
        *shipped.entry((l.partkey, l.suppkey)).or_default() += l.qty;
    }
    let mut supps: HashSet<i64> = HashSet::new();
    for ps in d.partsupps.iter().filter(|ps| forest.contains(&ps.partkey)) {
        // The correlated sum is NULL without lines, and no stock exceeds NULL.
        if let Some(&q) = shipped.get(&(ps.partkey, ps.suppkey))
            && 2 * i64::from(ps.availqty) > q
        {
            supps.insert(ps.suppkey);
        }
    }
    let canada = d.nation_key("CANADA");
    let mut rows: Vec<Vec<String>> = d
        .supps
        .iter()
        .filter(|s| s.nation == canada && supps.contains(&s.suppkey))
        .map(|s| vec![s.name.clone(), s.address.clone()])
        .collect();
    rows.sort();
    (vec!["s_name", "s_address"], rows)
}

pub fn q21(d: &Data) -> Rows {
    let saudi = d.nation_key("SAUDI ARABIA");
    let names: HashMap<i64, &str> = d
        .supps
        .iter()
        .filter(|s| s.nation == saudi)
        .map(|s| (s.suppkey, s.name.as_str()))
        .collect();
    let finished: HashSet<i64> =
        d.orders.iter().filter(|o| o.status == "F").map(|o| o.orderkey).collect();
    let mut by_order: HashMap<i64, Vec<&Line>> = HashMap::new();
    for l in &d.lines {
        by_order.entry(l.orderkey).or_default().push(l);
    }
    let late = |l: &Line| l.receipt > l.commit;
    let mut numwait: HashMap<&str, u64> = HashMap::new();
    for l1 in &d.lines {
        let Some(name) = names.get(&l1.suppkey) else { continue };
        if !finished.contains(&l1.orderkey) || !late(l1) {
            continue;
        }
        let others = &by_order[&l1.orderkey];
        let exists = others.iter().any(|l2| l2.suppkey != l1.suppkey);
        let not_exists = !others.iter().any(|l3| l3.suppkey != l1.suppkey && late(l3));
        if exists && not_exists {
            *numwait.entry(name).or_default() += 1;
        }
    }
    let mut v: Vec<(&str, u64)> = numwait.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    v.truncate(100);
    (
        vec!["s_name", "numwait"],
        v.into_iter().map(|(s, n)| vec![s.to_string(), n.to_string()]).collect(),
    )
}

pub fn q22(d: &Data) -> Rows {
    let codes = ["13", "31", "23", "29", "30", "18", "17"];
    let code = |phone: &str| codes.contains(&&phone[..2]);
    let positive: Vec<i64> =
        d.custs.iter().filter(|c| c.acctbal > 0 && code(&c.phone)).map(|c| c.acctbal).collect();
    let (sum, n) = (positive.iter().map(|&b| i128::from(b)).sum::<i128>(), positive.len() as i128);
    let ordered: HashSet<i64> = d.orders.iter().map(|o| o.custkey).collect();
    let mut groups: std::collections::BTreeMap<&str, (u64, i128)> = Default::default();
    for c in &d.custs {
        // acctbal > avg, i.e. acctbal × n > sum (no average without positive balances).
        if code(&c.phone)
            && n > 0
            && i128::from(c.acctbal) * n > sum
            && !ordered.contains(&c.custkey)
        {
            let g = groups.entry(&c.phone[..2]).or_default();
            g.0 += 1;
            g.1 += i128::from(c.acctbal);
        }
    }
    (
        vec!["cntrycode", "numcust", "totacctbal"],
        groups
            .into_iter()
            .map(|(c, (n, s))| vec![c.to_string(), n.to_string(), fixed(s, 2)])
            .collect(),
    )
}
