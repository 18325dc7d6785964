//! Q1 to Q8.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::data::{Data, Order, rev};
use super::{Rows, fixed, ratio, ratio2};

pub fn q01(d: &Data) -> Rows {
    #[derive(Default)]
    struct A {
        qty: i128,
        base: i128,
        disc_price: i128,
        charge: i128,
        disc: i128,
        n: i128,
    }
    let mut g: BTreeMap<(String, String), A> = BTreeMap::new();
    for l in d.lines.iter().filter(|l| l.ship.as_str() <= "1998-09-02") {
        let a = g.entry((l.flag.clone(), l.status.clone())).or_default();
        a.qty += i128::from(l.qty);
        a.base += i128::from(l.price);
        a.disc_price += rev(l);
        a.charge += rev(l) * i128::from(100 + l.tax);
        a.disc += i128::from(l.disc);
        a.n += 1;
    }
    let rows = g
        .into_iter()
        .map(|((f, s), a)| {
            vec![
                f,
                s,
                fixed(a.qty * 100, 2),
                fixed(a.base, 2),
                fixed(a.disc_price, 4),
                fixed(a.charge, 6),
                ratio2(a.qty, a.n),
                ratio2(a.base, a.n * 100),
                ratio2(a.disc, a.n * 100),
                a.n.to_string(),
            ]
        })
        .collect();
    (
        vec![
            "l_returnflag",
            "l_linestatus",
            "sum_qty",
            "sum_base_price",
            "sum_disc_price",
            "sum_charge",
            "avg_qty",
            "avg_price",
            "avg_disc",
            "count_order",
        ],
        rows,
    )
}

pub fn q02(d: &Data) -> Rows {
    let europe = d.nations_in("EUROPE");
    let names = d.nation_name();
    let supps: HashMap<i64, &super::data::Supp> =
        d.supps.iter().filter(|s| europe.contains(&s.nation)).map(|s| (s.suppkey, s)).collect();
    let mut offers: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
    for ps in d.partsupps.iter().filter(|ps| supps.contains_key(&ps.suppkey)) {
        offers.entry(ps.partkey).or_default().push((ps.suppkey, ps.supplycost));
    }
    let mut rows = Vec::new();
    for p in d.parts.iter().filter(|p| p.size == 15 && p.ty.ends_with("BRASS")) {
        let Some(list) = offers.get(&p.partkey) else { continue };
        // The correlated subquery: the lowest European cost of this part.
        let min = list.iter().map(|o| o.1).min().unwrap();
        for &(s, cost) in list {
            if cost == min {
                let s = supps[&s];
                rows.push((s.acctbal, names[&s.nation], s.name.clone(), p.partkey, p, s));
            }
        }
    }
    rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)).then(a.2.cmp(&b.2)).then(a.3.cmp(&b.3)));
    rows.truncate(100);
    let rows = rows
        .into_iter()
        .map(|(bal, n, name, k, p, s)| {
            vec![
                fixed(i128::from(bal), 2),
                name,
                n.to_string(),
                k.to_string(),
                p.mfgr.clone(),
                s.address.clone(),
                s.phone.clone(),
                s.comment.clone(),
            ]
        })
        .collect();
    (
        vec![
            "s_acctbal",
            "s_name",
            "n_name",
            "p_partkey",
            "p_mfgr",
            "s_address",
            "s_phone",
            "s_comment",
        ],
        rows,
    )
}

pub fn q03(d: &Data) -> Rows {
    let building: HashSet<i64> =
        d.custs.iter().filter(|c| c.segment == "BUILDING").map(|c| c.custkey).collect();
    let orders: HashMap<i64, &Order> = d
        .orders
        .iter()
        .filter(|o| o.date.as_str() < "1995-03-15" && building.contains(&o.custkey))
        .map(|o| (o.orderkey, o))
        .collect();
    let mut sums: HashMap<i64, i128> = HashMap::new();
    for l in d.lines.iter().filter(|l| l.ship.as_str() > "1995-03-15") {
        if orders.contains_key(&l.orderkey) {
            *sums.entry(l.orderkey).or_default() += rev(l);
        }
    }
    let mut v: Vec<(i64, i128)> = sums.into_iter().collect();
    v.sort_by(|a, b| {
        b.1.cmp(&a.1).then(orders[&a.0].date.cmp(&orders[&b.0].date)).then(a.0.cmp(&b.0))
    });
    let rows = v
        .into_iter()
        .take(10)
        .map(|(k, r)| {
            let o = orders[&k];
            vec![k.to_string(), fixed(r, 4), o.date.clone(), o.shipprio.to_string()]
        })
        .collect();
    (vec!["l_orderkey", "revenue", "o_orderdate", "o_shippriority"], rows)
}

pub fn q04(d: &Data) -> Rows {
    let mut late: HashSet<i64> = HashSet::new();
    for l in d.lines.iter().filter(|l| l.commit < l.receipt) {
        late.insert(l.orderkey);
    }
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for o in &d.orders {
        if o.date.as_str() >= "1993-07-01"
            && o.date.as_str() < "1993-10-01"
            && late.contains(&o.orderkey)
        {
            *counts.entry(o.prio.as_str()).or_default() += 1;
        }
    }
    (
        vec!["o_orderpriority", "order_count"],
        counts.into_iter().map(|(p, n)| vec![p.to_string(), n.to_string()]).collect(),
    )
}

pub fn q05(d: &Data) -> Rows {
    let asia: Vec<i64> = d.regions.iter().filter(|r| r.1 == "ASIA").map(|r| r.0).collect();
    let nation_name: HashMap<i64, &str> =
        d.nations.iter().filter(|n| asia.contains(&n.2)).map(|n| (n.0, n.1.as_str())).collect();
    let cust_nation: HashMap<i64, i64> = d.custs.iter().map(|c| (c.custkey, c.nation)).collect();
    let order_nation: HashMap<i64, i64> = d
        .orders
        .iter()
        .filter(|o| o.date.as_str() >= "1994-01-01" && o.date.as_str() < "1995-01-01")
        .map(|o| (o.orderkey, cust_nation[&o.custkey]))
        .collect();
    let supp_nation = d.supp_nation();
    let mut sums: HashMap<&str, i128> = HashMap::new();
    for l in &d.lines {
        let Some(&cn) = order_nation.get(&l.orderkey) else { continue };
        let sn = supp_nation[&l.suppkey];
        if cn == sn
            && let Some(name) = nation_name.get(&sn)
        {
            *sums.entry(name).or_default() += rev(l);
        }
    }
    let mut v: Vec<(&str, i128)> = sums.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    (
        vec!["n_name", "revenue"],
        v.into_iter().map(|(n, r)| vec![n.to_string(), fixed(r, 4)]).collect(),
    )
}

pub fn q06(d: &Data) -> Rows {
    let mut sum = 0i128;
    for l in &d.lines {
        if l.ship.as_str() >= "1994-01-01"
            && l.ship.as_str() < "1995-01-01"
            && (5..=7).contains(&l.disc)
            && l.qty < 24
        {
            sum += i128::from(l.price) * i128::from(l.disc);
        }
    }
    (vec!["revenue"], vec![vec![fixed(sum, 4)]])
}

pub fn q07(d: &Data) -> Rows {
    let names = d.nation_name();
    let supp_nation = d.supp_nation();
    let cust_nation: HashMap<i64, i64> = d.custs.iter().map(|c| (c.custkey, c.nation)).collect();
    let orders: HashMap<i64, &Order> = d.orders.iter().map(|o| (o.orderkey, o)).collect();
    let mut sums: BTreeMap<(&str, &str, String), i128> = BTreeMap::new();
    for l in &d.lines {
        if l.ship.as_str() < "1995-01-01" || l.ship.as_str() > "1996-12-31" {
            continue;
        }
        let n1 = names[&supp_nation[&l.suppkey]];
        let n2 = names[&cust_nation[&orders[&l.orderkey].custkey]];
        if (n1 == "FRANCE" && n2 == "GERMANY") || (n1 == "GERMANY" && n2 == "FRANCE") {
            *sums.entry((n1, n2, l.ship[..4].to_string())).or_default() += rev(l);
        }
    }
    (
        vec!["supp_nation", "cust_nation", "l_year", "revenue"],
        sums.into_iter()
            .map(|((a, b, y), v)| vec![a.to_string(), b.to_string(), y, fixed(v, 4)])
            .collect(),
    )
}

pub fn q08(d: &Data) -> Rows {
    let america = d.nations_in("AMERICA");
    let brazil = d.nation_key("BRAZIL");
    let supp_nation = d.supp_nation();
    let cust_nation: HashMap<i64, i64> = d.custs.iter().map(|c| (c.custkey, c.nation)).collect();
    let steel: HashSet<i64> =
        d.parts.iter().filter(|p| p.ty == "ECONOMY ANODIZED STEEL").map(|p| p.partkey).collect();
    let orders: HashMap<i64, &Order> = d.orders.iter().map(|o| (o.orderkey, o)).collect();
    let mut sums: BTreeMap<String, (i128, i128)> = BTreeMap::new();
    for l in d.lines.iter().filter(|l| steel.contains(&l.partkey)) {
        let o = orders[&l.orderkey];
        if o.date.as_str() < "1995-01-01" || o.date.as_str() > "1996-12-31" {
            continue;
        }
        if !america.contains(&cust_nation[&o.custkey]) {
            continue;
        }
        let e = sums.entry(o.date[..4].to_string()).or_default();
        if supp_nation[&l.suppkey] == brazil {
            e.0 += rev(l);
        }
        e.1 += rev(l);
    }
    (
        vec!["o_year", "mkt_share"],
        sums.into_iter().map(|(y, (b, all))| vec![y, ratio(b, all, 4)]).collect(),
    )
}
