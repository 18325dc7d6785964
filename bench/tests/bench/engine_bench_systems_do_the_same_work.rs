//! Goal: the engine benchmark's small transactions make nvpage (every layer compiled in) and
//! SQLite (rollback journal and WAL) do the same work, so their rates can be compared: after the
//! same plans — single-row inserts, updates of 1, 10 and 100 random preloaded rows, and loads of
//! scattered ids into tables with 0, 1 and 2 indexes — every system holds exactly the rows a
//! model of the plans predicts (count, sum of ids, sum of amounts, loaded rows and their ids) and
//! reports every updated row. Nothing here is timed. SQLite is in the build with the
//! bench's `sqlite` feature, which `cargo test --workspace` turns on; without it the layers are
//! checked alone.

use nvpage::Layer;
#[cfg(feature = "sqlite")]
use nvpage_bench::engine::sqlite::{JournalMode, SqliteSystem};
use nvpage_bench::engine::txn::{
    Rng, System, Totals, Txn, WARMUP, Workload, measure, plan, scatter,
};
use nvpage_bench::engine::{Medium, NvpageSystem, Place, Sizes};

#[test]
fn nvpage_and_sqlite_end_with_the_rows_the_plans_predict() {
    let dir = tempfile::tempdir().unwrap();
    // Small pages and a pool smaller than the table, so nvpage's updates also steal pages.
    let sizes = Sizes { page_bytes: 4096, pool_bytes: 16 * 4096, log_bytes: 8 << 20 };
    let mut systems: Vec<Box<dyn System>> = Vec::new();
    for layer in Layer::compiled() {
        let place = Place { data: dir.path().join(format!("nvpage-{layer}")), log: None };
        systems.push(Box::new(NvpageSystem::open(&place, layer, Medium::Disk, sizes).unwrap()));
    }
    #[cfg(feature = "sqlite")]
    for mode in JournalMode::ALL {
        let path = dir.path().join(format!("sqlite-{}.db", mode.pragma()));
        let s = SqliteSystem::create(&path, mode, sizes.page_bytes, sizes.pool_bytes, false);
        systems.push(Box::new(s.unwrap()));
    }
    let table_rows = 3000;
    for s in &mut systems {
        s.preload(table_rows).unwrap();
    }

    let per_workload = WARMUP + 3;
    let mut next_id = table_rows;
    let mut updates = 0;
    let mut loaded = 0u64;
    let workloads = [
        Workload::Insert,
        Workload::Update(1),
        Workload::Update(10),
        Workload::Update(100),
        Workload::Load { indexes: 0, rows: 300 },
        Workload::Load { indexes: 1, rows: 300 },
        Workload::Load { indexes: 2, rows: 300 },
    ];
    for (w, workload) in workloads.into_iter().enumerate() {
        let first = if matches!(workload, Workload::Load { .. }) { 0 } else { next_id };
        let p = plan(workload, per_workload, table_rows, first, &mut Rng::new(w as u64));
        for t in &p {
            match t {
                Txn::Insert(_) => next_id += 1,
                Txn::Update(ids) => updates += ids.len() as i64,
                Txn::Load(_, ids) => loaded += ids.len() as u64,
            }
        }
        for s in &mut systems {
            measure(s.as_mut(), &p).unwrap();
        }
    }

    // Every row's amount starts at `id % 100_000` cents (`row_values`); each update adds one.
    let ids = 0..next_id;
    let want = Totals {
        rows: next_id as u64,
        id_sum: ids.clone().sum(),
        amount_sum: ids.map(|i| i % 100_000).sum::<i64>() + updates,
        updated: updates as u64,
        loaded,
        // Each load table holds the first `per_workload × 300` scattered ids.
        loaded_id_sum: (0..3)
            .flat_map(|_| 0..(per_workload * 300) as u64)
            .fold(0i64, |s, n| s.wrapping_add(scatter(n))),
    };
    assert_eq!(loaded, 3 * per_workload as u64 * 300);
    assert_eq!(updates, per_workload as i64 * (1 + 10 + 100));
    for s in &mut systems {
        assert_eq!(s.totals().unwrap(), want, "{} {}", s.system(), s.config());
    }
}
