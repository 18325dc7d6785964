//! Goal: a whole `refresh` run at a tiny scale factor on one layer and one medium finishes —
//! every query's answer equal to its snapshot's state, the row counts back at the loaded ones
//! after the refresh pairs — and its JSON file parses and holds every field the summaries and
//! the README's figures are read from. No timing is asserted.

use nvpage_bench::refresh::functions::Lookup;
use nvpage_bench::refresh::{Config, QUERIES, execute, write_json};
use nvpage_bench::tpch::Medium;

#[test]
fn a_refresh_run_returns_to_the_loaded_rows_and_reports_every_field() {
    let disk = tempfile::tempdir().unwrap();
    let layer = nvpage::Layer::best_compiled();
    let cfg = Config {
        sf: 0.005,
        layers: vec![layer],
        media: vec![Medium::Disk],
        dir_disk: disk.path().into(),
        dir_tmpfs: "/dev/shm".into(),
        runs: 2,
        rf2: Lookup::Scan,
        queries: QUERIES.to_vec(),
        quiet: true,
    };
    let report = execute(&cfg).unwrap();
    let path = disk.path().join("refresh.json");
    write_json(&report, &path).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for key in ["machine", "config", "databases", "summary", "queries", "refreshes", "results"] {
        assert!(v.get(key).is_some(), "no {key:?} in the report");
    }
    assert_eq!(v["config"]["sf"].as_f64(), Some(0.005));
    assert_eq!(v["config"]["orders_per_refresh"].as_u64(), Some(7));
    assert_eq!(v["config"]["rf2"], "scan");
    assert_eq!(v["config"]["loads"].as_array().unwrap().len(), 1);

    let dbs = v["databases"].as_array().unwrap();
    assert_eq!(dbs.len(), 1);
    let db = &dbs[0];
    let loaded = &v["config"]["loads"][0]["tables"];
    for t in ["orders", "lineitem"] {
        assert_eq!(db["rows_loaded"][t], loaded[t], "{t}");
        assert_eq!(db["rows_after"][t], loaded[t], "{t}: the pairs left rows behind");
    }
    // The warm-up pair, and at least one pair alone and one beside the queries in each run.
    let (warm_up, per_run) = (1, 2);
    assert!(db["refresh_pairs"].as_u64().unwrap() >= warm_up + per_run * 2);
    // Two queries alone and beside in each run, and once more at the end.
    assert_eq!(db["snapshot_checks"].as_u64(), Some(2 * 2 * 2 + 2));
    for n in ["pool_bytes", "data_bytes_start", "data_bytes_after", "peak_version_bytes"] {
        assert!(db[n].as_u64().is_some(), "{n} in {db}");
    }
    assert_eq!(db["rf2"], "scan");
    assert!(!db["durability"].as_str().unwrap().is_empty());

    let queries = v["queries"].as_array().unwrap();
    assert_eq!(queries.len(), 2 * 2 * 2, "queries × modes × runs");
    for r in queries {
        for s in ["query", "layer", "medium", "durability", "mode"] {
            assert!(!r[s].as_str().unwrap().is_empty(), "{s} in {r}");
        }
        assert!(["alone", "beside"].contains(&r["mode"].as_str().unwrap()));
        for n in ["wall_ms", "user_ms", "sys_ms", "others_cores", "others_niced_cores"] {
            assert!(r[n].as_f64().unwrap() >= 0.0, "{n} in {r}");
        }
        for n in [
            "run",
            "snapshot",
            "commits_during",
            "version_reads",
            "latch_waits",
            "latch_wait_ns",
            "versions_at_end",
            "version_bytes_at_end",
        ] {
            assert!(r[n].as_u64().is_some(), "{n} in {r}");
        }
        assert!(r["sets_in_snapshot"].is_array());
        if r["mode"] == "alone" {
            assert_eq!(r["sets_in_snapshot"], serde_json::json!([]), "no writer, no set: {r}");
            assert_eq!(r["latch_waits"].as_u64(), Some(0), "no writer to wait for: {r}");
        }
    }
    let refreshes = v["refreshes"].as_array().unwrap();
    assert!(refreshes.iter().any(|r| r["mode"] == "alone"));
    for r in refreshes {
        assert!(["rf1", "rf2"].contains(&r["function"].as_str().unwrap()), "{r}");
        assert!(["warm-up", "alone", "beside", "edge"].contains(&r["mode"].as_str().unwrap()));
        assert!(!r["durability"].as_str().unwrap().is_empty());
        for n in ["ms", "user_ms", "sys_ms", "others_cores", "others_niced_cores"] {
            assert!(r[n].as_f64().unwrap() >= 0.0, "{n} in {r}");
        }
        assert!(r["orders"].as_u64().unwrap() == 7, "every RF changes a whole set: {r}");
        for n in ["set", "commit", "lineitems", "version_bytes_after"] {
            assert!(r[n].as_u64().is_some(), "{n} in {r}");
        }
    }
    // Every commit number once: one writer, one function per transaction.
    let mut commits: Vec<u64> = refreshes.iter().map(|r| r["commit"].as_u64().unwrap()).collect();
    commits.sort_unstable();
    commits.dedup();
    assert_eq!(commits.len(), refreshes.len());

    let summary = &v["summary"];
    let lines = summary["queries"].as_array().unwrap();
    assert_eq!(lines.len(), 2);
    for l in lines {
        for n in ["alone_ms", "beside_ms", "beside_over_alone", "latch_wait_share"] {
            assert!(l[n].as_f64().unwrap() >= 0.0, "{n} in {l}");
        }
        assert!(l["version_bytes_peak"].as_u64().is_some());
    }
    let loops = summary["refresh"].as_array().unwrap();
    assert_eq!(loops.len(), 2, "alone and beside");
    let alone = loops.iter().find(|l| l["mode"] == "alone").unwrap();
    assert!(alone["pairs_per_s"].as_f64().unwrap() > 0.0);
    let names: Vec<&str> =
        v["results"].as_array().unwrap().iter().map(|r| r["query"].as_str().unwrap()).collect();
    assert_eq!(names, ["q01", "q06"]);
}
