//! The queries computed a second way, for the tests: straight from `tpchgen`'s rows in plain
//! Rust, with no nvpage storage, no nvpage types and none of the bench crate's query code. Dates
//! are compared as `YYYY-MM-DD` strings, decimals formatted here.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, HashSet};

use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    RegionGenerator, SupplierGenerator,
};

pub struct Line {
    orderkey: i64,
    partkey: i64,
    suppkey: i64,
    qty: i64,
    price: i64,
    disc: i64,
    tax: i64,
    flag: String,
    status: String,
    ship: String,
    commit: String,
    receipt: String,
    instr: String,
    mode: String,
}

pub struct Order {
    orderkey: i64,
    custkey: i64,
    date: String,
    prio: String,
    shipprio: i32,
}

pub struct Cust {
    custkey: i64,
    name: String,
    address: String,
    nation: i64,
    phone: String,
    acctbal: i64,
    segment: String,
    comment: String,
}

pub struct Part {
    partkey: i64,
    brand: String,
    container: String,
    size: i32,
    ty: String,
}

/// The generator's rows at one scale factor.
pub struct Data {
    lines: Vec<Line>,
    orders: Vec<Order>,
    custs: Vec<Cust>,
    parts: Vec<Part>,
    supp_nation: HashMap<i64, i64>,
    nations: Vec<(i64, String, i64)>,
    regions: Vec<(i64, String)>,
}

impl Data {
    pub fn generate(sf: f64) -> Data {
        Data {
            lines: LineItemGenerator::new(sf, 1, 1)
                .iter()
                .map(|l| Line {
                    orderkey: l.l_orderkey,
                    partkey: l.l_partkey,
                    suppkey: l.l_suppkey,
                    qty: l.l_quantity,
                    price: l.l_extendedprice.0,
                    disc: l.l_discount.0,
                    tax: l.l_tax.0,
                    flag: l.l_returnflag.to_string(),
                    status: l.l_linestatus.to_string(),
                    ship: l.l_shipdate.to_string(),
                    commit: l.l_commitdate.to_string(),
                    receipt: l.l_receiptdate.to_string(),
                    instr: l.l_shipinstruct.to_string(),
                    mode: l.l_shipmode.to_string(),
                })
                .collect(),
            orders: OrderGenerator::new(sf, 1, 1)
                .iter()
                .map(|o| Order {
                    orderkey: o.o_orderkey,
                    custkey: o.o_custkey,
                    date: o.o_orderdate.to_string(),
                    prio: o.o_orderpriority.to_string(),
                    shipprio: o.o_shippriority,
                })
                .collect(),
            custs: CustomerGenerator::new(sf, 1, 1)
                .iter()
                .map(|c| Cust {
                    custkey: c.c_custkey,
                    name: c.c_name.to_string(),
                    address: c.c_address.to_string(),
                    nation: c.c_nationkey,
                    phone: c.c_phone.to_string(),
                    acctbal: c.c_acctbal.0,
                    segment: c.c_mktsegment.to_string(),
                    comment: c.c_comment.to_string(),
                })
                .collect(),
            parts: PartGenerator::new(sf, 1, 1)
                .iter()
                .map(|p| Part {
                    partkey: p.p_partkey,
                    brand: p.p_brand.to_string(),
                    container: p.p_container.to_string(),
                    size: p.p_size,
                    ty: p.p_type.to_string(),
                })
                .collect(),
            supp_nation: SupplierGenerator::new(sf, 1, 1)
                .iter()
                .map(|s| (s.s_suppkey, s.s_nationkey))
                .collect(),
            nations: NationGenerator::new(sf, 1, 1)
                .iter()
                .map(|n| (n.n_nationkey, n.n_name.to_string(), n.n_regionkey))
                .collect(),
            regions: RegionGenerator::new(sf, 1, 1)
                .iter()
                .map(|r| (r.r_regionkey, r.r_name.to_string()))
                .collect(),
        }
    }
}

/// A nonnegative or negative fixed-point number with `places` digits.
fn fixed(v: i128, places: u32) -> String {
    let p = 10i128.pow(places);
    let sign = if v < 0 { "-" } else { "" };
    let a = v.abs();
    format!("{sign}{}.{:0w$}", a / p, a % p, w = places as usize)
}

/// `num / den` to two places, half away from zero (`num >= 0`, `den > 0`).
fn ratio2(num: i128, den: i128) -> String {
    fixed((200 * num + den) / (2 * den), 2)
}

fn rev(l: &Line) -> i128 {
    i128::from(l.price) * i128::from(100 - l.disc)
}

type Rows = (Vec<&'static str>, Vec<Vec<String>>);

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
    let mut sums: HashMap<&str, i128> = HashMap::new();
    for l in &d.lines {
        let Some(&cn) = order_nation.get(&l.orderkey) else { continue };
        let sn = d.supp_nation[&l.suppkey];
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

/// The reference answer of query `n`.
pub fn answer(d: &Data, n: u32) -> Rows {
    match n {
        1 => q01(d),
        3 => q03(d),
        5 => q05(d),
        6 => q06(d),
        10 => q10(d),
        12 => q12(d),
        14 => q14(d),
        19 => q19(d),
        _ => panic!("no reference for q{n}"),
    }
}
