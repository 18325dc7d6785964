//! The generator's rows at one scale factor, as plain structs (money in cents, quantities whole,
//! dates as `YYYY-MM-DD` strings).

use std::collections::HashMap;

use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};

pub struct Line {
    pub orderkey: i64,
    pub partkey: i64,
    pub suppkey: i64,
    pub qty: i64,
    pub price: i64,
    pub disc: i64,
    pub tax: i64,
    pub flag: String,
    pub status: String,
    pub ship: String,
    pub commit: String,
    pub receipt: String,
    pub instr: String,
    pub mode: String,
}

pub struct Order {
    pub orderkey: i64,
    pub custkey: i64,
    pub status: String,
    pub totalprice: i64,
    pub date: String,
    pub prio: String,
    pub shipprio: i32,
    pub comment: String,
}

pub struct Cust {
    pub custkey: i64,
    pub name: String,
    pub address: String,
    pub nation: i64,
    pub phone: String,
    pub acctbal: i64,
    pub segment: String,
    pub comment: String,
}

pub struct Part {
    pub partkey: i64,
    pub name: String,
    pub mfgr: String,
    pub brand: String,
    pub container: String,
    pub size: i32,
    pub ty: String,
}

pub struct Supp {
    pub suppkey: i64,
    pub name: String,
    pub address: String,
    pub nation: i64,
    pub phone: String,
    pub acctbal: i64,
    pub comment: String,
}

pub struct PartSupp {
    pub partkey: i64,
    pub suppkey: i64,
    pub availqty: i32,
    pub supplycost: i64,
}

/// The generator's rows at one scale factor.
pub struct Data {
    /// The scale factor they were generated at.
    pub sf: f64,
    pub lines: Vec<Line>,
    pub orders: Vec<Order>,
    pub custs: Vec<Cust>,
    pub parts: Vec<Part>,
    pub supps: Vec<Supp>,
    pub partsupps: Vec<PartSupp>,
    /// (key, name, region key)
    pub nations: Vec<(i64, String, i64)>,
    /// (key, name)
    pub regions: Vec<(i64, String)>,
}

impl Data {
    pub fn generate(sf: f64) -> Data {
        Data {
            sf,
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
                    status: o.o_orderstatus.to_string(),
                    totalprice: o.o_totalprice.0,
                    date: o.o_orderdate.to_string(),
                    prio: o.o_orderpriority.to_string(),
                    shipprio: o.o_shippriority,
                    comment: o.o_comment.to_string(),
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
                    name: p.p_name.to_string(),
                    mfgr: p.p_mfgr.to_string(),
                    brand: p.p_brand.to_string(),
                    container: p.p_container.to_string(),
                    size: p.p_size,
                    ty: p.p_type.to_string(),
                })
                .collect(),
            supps: SupplierGenerator::new(sf, 1, 1)
                .iter()
                .map(|s| Supp {
                    suppkey: s.s_suppkey,
                    name: s.s_name.to_string(),
                    address: s.s_address.to_string(),
                    nation: s.s_nationkey,
                    phone: s.s_phone.to_string(),
                    acctbal: s.s_acctbal.0,
                    comment: s.s_comment.to_string(),
                })
                .collect(),
            partsupps: PartSuppGenerator::new(sf, 1, 1)
                .iter()
                .map(|p| PartSupp {
                    partkey: p.ps_partkey,
                    suppkey: p.ps_suppkey,
                    availqty: p.ps_availqty,
                    supplycost: p.ps_supplycost.0,
                })
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

    /// Supplier key → nation key.
    pub fn supp_nation(&self) -> HashMap<i64, i64> {
        self.supps.iter().map(|s| (s.suppkey, s.nation)).collect()
    }

    /// Nation key → name.
    pub fn nation_name(&self) -> HashMap<i64, &str> {
        self.nations.iter().map(|n| (n.0, n.1.as_str())).collect()
    }

    /// The key of the nation named `name`.
    pub fn nation_key(&self, name: &str) -> i64 {
        self.nations.iter().find(|n| n.1 == name).map(|n| n.0).expect("a TPC-H nation")
    }

    /// The keys of the nations in the region named `name`.
    pub fn nations_in(&self, region: &str) -> Vec<i64> {
        let r = self.regions.iter().find(|r| r.1 == region).map(|r| r.0).expect("a TPC-H region");
        self.nations.iter().filter(|n| n.2 == r).map(|n| n.0).collect()
    }
}

/// The revenue of a line, `price × (1 − discount)`, at scale 4.
pub fn rev(l: &Line) -> i128 {
    i128::from(l.price) * i128::from(100 - l.disc)
}
