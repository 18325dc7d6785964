//! The refresh functions' data. TPC-H's RF1 inserts new orders with their lineitems and RF2
//! deletes orders with their lineitems, each 0.1% of the orders (SF × 1,500; clause 2.5). `tpchgen`
//! has no refresh generator, but its order and lineitem generators draw every row from random
//! streams positioned by the order's index, and a generator built for part `p` of `n` starts at
//! index `(p − 1) × ⌊orders / n⌋`. So a part past the last one (`p > n`) draws orders beyond the
//! loaded range with the generator's own code: keys from the same sparse mapping
//! (`OrderGenerator::make_order_key`, clause 4.2.3: 8 keys used in every 32), 1–7 lineitems
//! each, customer and part keys within the loaded tables, dates, prices from the part's retail
//! price, flags and statuses as the base data draws them. A refresh set is one such part of
//! [`PARTS`]: set `j` is part `first + j + 1`, where `first` is the first part whose indices all
//! lie past the loaded orders.
//!
//! Where this differs from `dbgen -U`: dbgen's update sets put their keys in the gaps of the
//! sparse key space (its `mk_sparse` adds the update number into the unused bits) and its RF2
//! deletes orders of the loaded population. Here new keys lie above the loaded maximum, and RF2
//! deletes the orders an earlier RF1 inserted, so the database returns to its loaded state
//! after every pair and a snapshot's expected answers are known (see `model`).

use tpchgen::generators::{LineItem, LineItemGenerator, Order, OrderGenerator};

use crate::BoxError;
use crate::tpch::queries::KeyMap;

/// A refresh set is one part in this many of the orders table: 0.1% (the RF size of clause 2.5).
pub const PARTS: i32 = 1000;

/// Where the refresh sets of one scale factor lie.
#[derive(Clone, Copy, Debug)]
pub struct RefreshSets {
    sf: f64,
    per_set: i64,
    /// The 0-based part of set 0: its first index is `first × per_set ≥` the loaded orders.
    first: i64,
}

/// One refresh set: the orders RF1 inserts and RF2 deletes, with their lineitems.
#[derive(Clone, Debug)]
pub struct RefreshSet {
    /// The set's number, from 0.
    pub index: u64,
    /// The orders, in key order.
    pub orders: Vec<Order<'static>>,
    /// Their lineitems, grouped by order in the same order.
    pub lines: Vec<LineItem<'static>>,
}

impl RefreshSets {
    /// The refresh sets of scale factor `sf`; an error if a set would hold no order (SF below
    /// 1/1500).
    pub fn new(sf: f64) -> Result<Self, BoxError> {
        let total = OrderGenerator::calculate_row_count(sf, 1, 1);
        let per_set = total / i64::from(PARTS);
        if per_set == 0 {
            return Err(format!(
                "at SF {sf} a refresh set (0.1% of {total} orders) holds no order: the refresh \
                 benchmark needs SF ≥ 1/1500"
            )
            .into());
        }
        Ok(Self { sf, per_set, first: (total + per_set - 1) / per_set })
    }

    /// Orders in each set.
    pub fn orders_per_set(&self) -> u64 {
        self.per_set as u64
    }

    /// The generator's part number of set `j`.
    fn part(&self, j: u64) -> Result<i32, BoxError> {
        i64::try_from(j)
            .ok()
            .and_then(|j| self.first.checked_add(j)?.checked_add(1))
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| format!("refresh set {j} lies past the generator's range").into())
    }

    /// Generates set `j`.
    pub fn set(&self, j: u64) -> Result<RefreshSet, BoxError> {
        let part = self.part(j)?;
        let orders: Vec<Order<'static>> =
            OrderGenerator::new(self.sf, part, PARTS).iter().collect();
        let lines: Vec<LineItem<'static>> =
            LineItemGenerator::new(self.sf, part, PARTS).iter().collect();
        Ok(RefreshSet { index: j, orders, lines })
    }
}

impl RefreshSet {
    /// The set's order keys.
    pub fn keys(&self) -> KeyMap<i64, ()> {
        self.orders.iter().map(|o| (o.o_orderkey, ())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_lie_above_the_loaded_keys_and_do_not_overlap() {
        let sf = 0.01;
        let sets = RefreshSets::new(sf).unwrap();
        assert_eq!(sets.orders_per_set(), 15);
        let loaded_max = OrderGenerator::new(sf, 1, 1).iter().map(|o| o.o_orderkey).max().unwrap();
        let a = sets.set(0).unwrap();
        let b = sets.set(1).unwrap();
        assert_eq!(a.orders.len(), 15);
        let a_max = a.orders.iter().map(|o| o.o_orderkey).max().unwrap();
        let b_min = b.orders.iter().map(|o| o.o_orderkey).min().unwrap();
        assert!(a.orders.iter().all(|o| o.o_orderkey > loaded_max), "{:?}", a.orders[0]);
        assert!(b_min > a_max);
        // The same sparse mapping: indices past the loaded ones, keys from make_order_key.
        let first_index = sets.first * sets.per_set + 1;
        assert_eq!(a.orders[0].o_orderkey, OrderGenerator::make_order_key(first_index));
        assert_eq!(sets.set(0).unwrap().orders, a.orders, "a set is the same every time");
    }

    #[test]
    fn every_order_has_one_to_seven_lineitems_of_its_own() {
        let sets = RefreshSets::new(0.01).unwrap();
        let s = sets.set(3).unwrap();
        let keys = s.keys();
        assert!(s.lines.iter().all(|l| keys.contains_key(&l.l_orderkey)));
        for o in &s.orders {
            let mine: Vec<_> = s.lines.iter().filter(|l| l.l_orderkey == o.o_orderkey).collect();
            assert!((1..=7).contains(&mine.len()), "{} has {}", o.o_orderkey, mine.len());
            let numbers: Vec<i32> = mine.iter().map(|l| l.l_linenumber).collect();
            assert_eq!(numbers, (1..=mine.len() as i32).collect::<Vec<_>>());
        }
        // The generator's own columns: customers and parts within the loaded tables.
        assert!(s.orders.iter().all(|o| (1..=1500).contains(&o.o_custkey)));
        assert!(s.lines.iter().all(|l| (1..=2000).contains(&l.l_partkey)));
    }

    #[test]
    fn too_small_a_scale_factor_is_an_error() {
        let e = RefreshSets::new(0.0005).unwrap_err().to_string();
        assert!(e.contains("1/1500"), "{e}");
        assert!(RefreshSets::new(0.001).is_ok());
    }
}
