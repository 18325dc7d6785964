//! Small durable transactions, the same for every system: the workloads, the plan of each run
//! (which rows each transaction touches), the [`System`] seam nvpage and SQLite sit behind, and
//! the timed loop.
//!
//! Every system holds one table of the same rows — `id` (64-bit integer), `amount` (cents, a
//! decimal of scale 2 in nvpage, an integer in SQLite), `note` (`"row {id}"`, text) — preloaded
//! with ids `0..table_rows` in one transaction before any clock starts. An insert adds the next
//! id; an update adds one cent to the amount of each of its rows and leaves the rest as it was,
//! so every row keeps its size and its place (nvpage: its [`RowId`](nvpage::RowId), checked;
//! SQLite: its rowid, the `INTEGER PRIMARY KEY`). The rows an update touches are drawn uniformly
//! at random, distinct within a transaction, from the preloaded ids by a seeded generator: each
//! system runs exactly the same transactions, and with a few hundred rows to a page a
//! transaction of k rows touches about k pages.
//!
//! Loads insert many rows per transaction into tables of their own, `load0`, `load1` and
//! `load2`, with the same columns and 0, 1 or 2 secondary indexes: a unique one on `id`, then a
//! non-unique one on `amount`. Their ids are scattered ([`scatter`]): distinct, in no order, so
//! every index entry lands somewhere else in its tree.

use std::time::Instant;

use serde::Serialize;

use crate::BoxError;

/// Transactions run before the clock starts in each measurement (the same for every system):
/// statements prepared, the first log or journal blocks written, the free-space map built.
pub const WARMUP: usize = 2;

/// One kind of small transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// One new row inserted.
    Insert,
    /// That many existing rows updated in place.
    Update(usize),
    /// `rows` new rows with scattered ids inserted into the load table with `indexes` indexes.
    Load {
        /// Secondary indexes on the table: 0, 1 or 2.
        indexes: usize,
        /// Rows per transaction.
        rows: usize,
    },
}

impl Workload {
    /// The name in tables and JSON: `insert 1 row`, `update 10 rows`.
    pub fn name(self) -> String {
        match self {
            Workload::Insert => "insert 1 row".into(),
            Workload::Update(1) => "update 1 row".into(),
            Workload::Update(k) => format!("update {k} rows"),
            Workload::Load { indexes: 1, rows } => format!("load {rows} rows, 1 index"),
            Workload::Load { indexes, rows } => format!("load {rows} rows, {indexes} indexes"),
        }
    }
}

/// One transaction of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Txn {
    /// Insert the row with this id.
    Insert(i64),
    /// Add one cent to the amount of each of these rows.
    Update(Vec<i64>),
    /// Insert rows with these ids into the load table with this many indexes.
    Load(usize, Vec<i64>),
}

/// The id of the `n`-th row loaded into a load table: `n` times an odd constant, modulo 2^64, a
/// bijection, so ids are distinct and scattered across the whole range.
pub fn scatter(n: u64) -> i64 {
    n.wrapping_mul(0x9E37_79B9_7F4A_7C15) as i64
}

/// The load tables' names, by their number of secondary indexes.
pub const LOAD_TABLES: [&str; 3] = ["load0", "load1", "load2"];

/// The amount (in cents) and note of row `id`, as preloaded and inserted by every system.
pub fn row_values(id: i64) -> (i64, String) {
    (id % 100_000, format!("row {id}"))
}

/// What a system's table holds, and how many rows its updates changed: equal across systems
/// that ran the same plans.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Rows in the table.
    pub rows: u64,
    /// The sum of their ids.
    pub id_sum: i64,
    /// The sum of their amounts, in cents.
    pub amount_sum: i64,
    /// Rows changed by updates so far, as the system reported them.
    pub updated: u64,
    /// Rows in the load tables.
    pub loaded: u64,
    /// The sum of their ids, wrapping (they are scattered over the whole `i64` range).
    pub loaded_id_sum: i64,
}

impl std::fmt::Display for Totals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Totals { rows, id_sum, amount_sum, updated, loaded, loaded_id_sum } = self;
        write!(
            f,
            "{rows} rows (ids summing to {id_sum}, amounts to {amount_sum} cents; {updated} \
             updated), {loaded} loaded (ids summing to {loaded_id_sum}, wrapping)"
        )
    }
}

/// One database holding the benchmark's table: nvpage on one layer, or SQLite in one journal
/// mode. Every method that changes the table runs one transaction that is durable, in the mode
/// [`System::durability`] names, when it returns.
pub trait System {
    /// `nvpage` or `sqlite`.
    fn system(&self) -> &'static str;
    /// The configuration: the nvpage layer, or the SQLite journal mode.
    fn config(&self) -> String;
    /// What a committed transaction survives, and how it was made durable.
    fn durability(&self) -> String;
    /// Inserts rows `0..rows` in one transaction.
    fn preload(&mut self, rows: i64) -> Result<(), BoxError>;
    /// Inserts row `id` in one transaction.
    fn insert(&mut self, id: i64) -> Result<(), BoxError>;
    /// Adds one cent to the amount of each row in `ids`, in place, in one transaction.
    fn update(&mut self, ids: &[i64]) -> Result<(), BoxError>;
    /// Inserts rows `ids` into the load table with `indexes` indexes, in one transaction.
    fn load(&mut self, indexes: usize, ids: &[i64]) -> Result<(), BoxError>;
    /// What the table holds now, read in a transaction of its own.
    fn totals(&mut self) -> Result<Totals, BoxError>;
}

/// splitmix64: a small, fixed generator, so a seed gives the same rows on every build.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`; the bias of a 64-bit modulus is negligible here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// `count` transactions of `workload`: inserts of ids from `next_id` on, updates of `k` distinct
/// preloaded rows (ids below `table_rows`) each, drawn from `rng`, or loads of the next scattered
/// ids of their table (from the `next_id`-th on).
pub fn plan(
    workload: Workload,
    count: usize,
    table_rows: i64,
    next_id: i64,
    rng: &mut Rng,
) -> Vec<Txn> {
    (0..count)
        .map(|i| match workload {
            Workload::Insert => Txn::Insert(next_id + i as i64),
            Workload::Update(k) => {
                let k = k.min(table_rows as usize);
                let mut ids = Vec::with_capacity(k);
                while ids.len() < k {
                    let id = rng.below(table_rows as u64) as i64;
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
                Txn::Update(ids)
            }
            Workload::Load { indexes, rows } => {
                let first = next_id as u64 + (i * rows) as u64;
                Txn::Load(indexes, (first..first + rows as u64).map(scatter).collect())
            }
        })
        .collect()
}

/// What one measurement gives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// Transactions committed per second (after the warm-up).
    pub per_s: f64,
    /// Median latency of one transaction, begin to durable commit, µs.
    pub p50_us: f64,
    /// 99th percentile of the same, µs.
    pub p99_us: f64,
}

/// Runs `plan` on `sys`, the first [`WARMUP`] transactions before the clock: every
/// transaction's latency (begin to durable commit) and the rate of the timed ones.
pub fn measure(sys: &mut dyn System, plan: &[Txn]) -> Result<Measured, BoxError> {
    let (warm, timed) = plan.split_at(WARMUP.min(plan.len()));
    for t in warm {
        run_one(sys, t)?;
    }
    let mut lat_ns = Vec::with_capacity(timed.len());
    let start = Instant::now();
    for t in timed {
        let a = Instant::now();
        run_one(sys, t)?;
        lat_ns.push(a.elapsed().as_nanos() as u64);
    }
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    lat_ns.sort_unstable();
    Ok(Measured {
        per_s: timed.len() as f64 / secs,
        p50_us: percentile(&lat_ns, 0.50) / 1e3,
        p99_us: percentile(&lat_ns, 0.99) / 1e3,
    })
}

fn run_one(sys: &mut dyn System, t: &Txn) -> Result<(), BoxError> {
    match t {
        Txn::Insert(id) => sys.insert(*id),
        Txn::Update(ids) => sys.update(ids),
        Txn::Load(indexes, ids) => sys.load(*indexes, ids),
    }
}

/// The `p` quantile of sorted `v` (nearest rank below; 0 for none).
fn percentile(v: &[u64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v[((v.len() - 1) as f64 * p) as usize] as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_plan_draws_distinct_preloaded_rows_and_repeats_from_its_seed() {
        let a = plan(Workload::Update(100), 20, 1000, 1000, &mut Rng::new(7));
        let b = plan(Workload::Update(100), 20, 1000, 1000, &mut Rng::new(7));
        assert_eq!(a, b);
        for t in &a {
            let Txn::Update(ids) = t else { panic!("{t:?}") };
            let mut s = ids.clone();
            s.sort_unstable();
            s.dedup();
            assert_eq!(s.len(), 100);
            assert!(s.iter().all(|&i| (0..1000).contains(&i)));
        }
        let ins = plan(Workload::Insert, 3, 1000, 1005, &mut Rng::new(7));
        assert_eq!(ins, [Txn::Insert(1005), Txn::Insert(1006), Txn::Insert(1007)]);
    }

    #[test]
    fn totals_read_as_words() {
        let t = Totals {
            rows: 3,
            id_sum: 6,
            amount_sum: 150,
            updated: 2,
            loaded: 4,
            loaded_id_sum: -9,
        };
        assert_eq!(
            t.to_string(),
            "3 rows (ids summing to 6, amounts to 150 cents; 2 updated), 4 loaded (ids summing to \
             -9, wrapping)"
        );
    }

    #[test]
    fn loads_take_distinct_scattered_ids_from_where_they_left_off() {
        let w = Workload::Load { indexes: 2, rows: 500 };
        assert_eq!(w.name(), "load 500 rows, 2 indexes");
        let p = plan(w, 4, 1000, 0, &mut Rng::new(7));
        let ids: Vec<i64> = p
            .iter()
            .flat_map(|t| match t {
                Txn::Load(2, ids) => ids.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(ids.len(), 2000);
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 2000, "ids repeat");
        // Scattered: far from increasing.
        let rises = ids.windows(2).filter(|w| w[0] < w[1]).count();
        assert!((500..1500).contains(&rises), "{rises} rises in 1999 steps");
    }

    #[test]
    fn percentiles_of_a_hundred() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&[], 0.99), 0.0);
    }
}
