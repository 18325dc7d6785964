//! Goal: a whole `tpch` run at a tiny scale factor over every layer, both media, two pool sizes,
//! cold and warm: it finishes with every answer agreeing, and its JSON file parses and holds
//! DESIGN.md's shape — machine, config, every run with every field, every query's answer.

use nvpage_bench::tpch::{Config, Medium, Query, execute, write_json};

#[test]
fn the_json_report_parses_and_holds_every_field() {
    let disk = tempfile::tempdir().unwrap();
    let shm = std::path::Path::new("/dev/shm");
    let mut media = vec![Medium::Disk];
    if shm.is_dir() {
        media.push(Medium::Tmpfs);
    } else {
        eprintln!("no /dev/shm: the tmpfs medium is left out");
    }
    let layers = nvpage::Layer::compiled();
    let cfg = Config {
        sf: 0.003,
        layers: layers.clone(),
        media: media.clone(),
        dir_disk: disk.path().into(),
        dir_tmpfs: shm.into(),
        pool_fractions: vec![1.0, 0.1],
        runs: 2,
        threads: 2,
        queries: vec![Query::Q01, Query::Q06, Query::Q03],
        cold: true,
        warm: true,
        with_postgres: false,
        sql: false,
        reduced: false,
        clustered: false,
        quiet: true,
    };
    let report = execute(&cfg).unwrap();
    let path = disk.path().join("report.json");
    write_json(&report, &path).unwrap();

    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for key in ["machine", "config", "runs", "results"] {
        assert!(v.get(key).is_some(), "no {key:?} in the report");
    }
    assert!(v["machine"]["cores"].as_u64().unwrap() >= 1);
    assert_eq!(v["config"]["sf"].as_f64(), Some(0.003));
    assert_eq!(v["config"]["loads"].as_array().unwrap().len(), layers.len() * media.len());

    let runs = v["runs"].as_array().unwrap();
    // media × layers × pools × queries × (cold + warm) × runs
    assert_eq!(runs.len(), media.len() * layers.len() * 2 * 3 * 2 * 2);
    for r in runs {
        for s in ["query", "layer", "medium", "durability"] {
            assert!(!r[s].as_str().unwrap().is_empty(), "{s} in {r}");
        }
        for n in ["pool_fraction", "wall_ms", "user_ms", "sys_ms"] {
            assert!(r[n].as_f64().unwrap() >= 0.0, "{n} in {r}");
        }
        for n in ["run", "pages_read", "bytes_copied", "redirected_reads"] {
            assert!(r[n].as_u64().is_some(), "{n} in {r}");
        }
        assert!(r["cold"].is_boolean());
        if r["layer"] == "se2" {
            assert_eq!(r["bytes_copied"].as_u64(), Some(0), "SE2 reads copy nothing: {r}");
        }
        if r["cold"] == true {
            assert!(r["pages_read"].as_u64().unwrap() > 0, "a cold run reads pages: {r}");
        }
    }
    let results = v["results"].as_array().unwrap();
    let names: Vec<&str> = results.iter().map(|r| r["query"].as_str().unwrap()).collect();
    assert_eq!(names, ["q01", "q03", "q06"]);
    assert_eq!(results[2]["columns"], serde_json::json!(["revenue"]));
    for r in results {
        let cols = r["columns"].as_array().unwrap().len();
        for row in r["rows"].as_array().unwrap() {
            let row = row.as_array().unwrap();
            assert_eq!(row.len(), cols);
            assert!(row.iter().all(|x| x.is_string()));
        }
    }
}
