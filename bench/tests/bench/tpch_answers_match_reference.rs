//! Goal: each of the 22 TPC-H queries, on every layer, cold (just opened) and warm (run again),
//! returns exactly the rows of an independent computation made in plain Rust straight from the
//! generator's rows — so the loader, the row layout, the scans and the plans are all checked, and
//! the three layers agree with each other, and with lineitem and orders loaded as clustered
//! tables (rows in their primary keys' B+trees) the answers are the same. The scale factor is the smallest at which every
//! reference answer has rows and something other than zeros in them (at SF 0.01, Q8's shares and
//! Q17's sum are zero; at 0.02 Q11 has no row), so no plan passes by returning nothing.

use crate::tpch_reference;

use indicatif::ProgressBar;
use nvpage::Layer;
use nvpage_bench::tpch::load::load_all;
use nvpage_bench::tpch::runner::builder;
use nvpage_bench::tpch::{Medium, Query, QueryResult};

const SF: f64 = nvpage_bench::tpch::answers::REFERENCE_TEST_SF;

fn expected(data: &tpch_reference::Data, q: Query) -> QueryResult {
    let (columns, rows) = tpch_reference::answer(data, q.number());
    QueryResult { columns: columns.into_iter().map(String::from).collect(), rows }
}

#[test]
fn every_query_on_every_layer_cold_and_warm_equals_the_reference() {
    let data = tpch_reference::Data::generate(SF);
    let want: Vec<(Query, QueryResult)> =
        Query::ALL.iter().map(|&q| (q, expected(&data, q))).collect();
    for (q, r) in &want {
        assert!(!r.rows.is_empty(), "{q}: the reference has no rows at SF {SF}");
        let zero = |v: &String| v.trim_start_matches(['0', '.']).is_empty();
        assert!(!r.rows.iter().flatten().all(zero), "{q}: the reference is all zeros at SF {SF}");
    }
    let tmp = tempfile::tempdir().unwrap();
    // Every layer with heap tables, and the best with lineitem and orders clustered.
    let runs = Layer::compiled().into_iter().map(|l| (l, false));
    for (layer, clustered) in runs.chain([(Layer::best_compiled(), true)]) {
        let dir = tmp.path().join(layer.name());
        {
            let db = builder(layer, Medium::Disk).open(&dir).unwrap();
            load_all(&db, SF, clustered, &ProgressBar::hidden()).unwrap();
        }
        // A small pool (a few hundred pages) so scans also go through eviction.
        let open = || builder(layer, Medium::Disk).pool_bytes(2 << 20).open(&dir).unwrap();
        let layer = format!("{layer}{}", if clustered { ", clustered" } else { "" });
        for (q, expect) in &want {
            let db = open();
            let rx = db.begin_read().unwrap();
            let cold = q.run(&rx, 2).unwrap();
            assert_eq!(&cold, expect, "{q} on {layer}, cold");
            let warm = q.run(&rx, 3).unwrap();
            assert_eq!(&warm, expect, "{q} on {layer}, warm");
            let single = q.run(&rx, 1).unwrap();
            assert_eq!(&single, expect, "{q} on {layer}, one thread");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
