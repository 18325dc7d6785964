//! Goal: the kv benchmark compares like with like. Every engine (nvpage on each layer, with a
//! heap table and an index and with a clustered table, LMDB,
//! redb, SQLite), loaded with the same keys, returns the same value for every key, and the same
//! entries for the same range scans; and a whole `kv` run on a tiny data set — both media, two
//! pool sizes, one and two threads, cold and warm — finishes with every answer checked against
//! the model, and its JSON and SVG are written. LMDB, redb and SQLite take part where the build
//! has them (the bench's features `lmdb`, `redb`, `sqlite`, which `cargo test --workspace` turns
//! on).

use std::path::Path;

use nvpage_bench::kv::args::LoadOrder;
use nvpage_bench::kv::data::{key, value};
use nvpage_bench::kv::engines::Engine;
use nvpage_bench::kv::workload::{Workload, load_order};
use nvpage_bench::kv::{Config, execute};
use nvpage_bench::tpch::Medium;

fn engines() -> Vec<Engine> {
    let layers = nvpage::Layer::compiled();
    let mut e: Vec<Engine> = layers.iter().map(|&l| Engine::Nvpage(l)).collect();
    e.extend(layers.iter().map(|&l| Engine::NvpageClustered(l)));
    let compared = [Engine::Lmdb, Engine::Redb, Engine::Sqlite].into_iter();
    e.extend(compared.filter(|c| c.comparison().is_some_and(|c| c.is_compiled())));
    e
}

#[test]
fn every_engine_returns_the_same_value_for_every_key() {
    let n = 2000u64;
    let dir = tempfile::tempdir().unwrap();
    let keys = load_order(n, false);
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    // Scans from the first key, from the middle, and from past the last key but one.
    let starts = [sorted[0], sorted[n as usize / 2], sorted[n as usize - 2] + 1];
    // The first engine's label, values, lookup sum and scan sum: what the others must match.
    type Answers = (String, Vec<Option<Vec<u8>>>, u64, u64);
    let mut first: Option<Answers> = None;
    for engine in engines() {
        let at = dir.path().join(engine.label().replace('/', "-"));
        let store = engine.open(&at, Medium::Disk, 1 << 20, n).unwrap();
        store.load(&keys).unwrap();
        // Every key, and one never loaded.
        let got: Vec<Option<Vec<u8>>> = (0..=n).map(|i| store.get(key(i)).unwrap()).collect();
        for i in 0..n {
            assert_eq!(
                got[i as usize].as_deref(),
                Some(&value(key(i), 0)[..]),
                "{}: item {i}",
                engine.label()
            );
        }
        assert_eq!(got[n as usize], None, "{}: a key never loaded", engine.label());
        let lookups = store.lookups(&keys).unwrap();
        let scans = store.scans(&starts).unwrap();
        match &first {
            None => first = Some((engine.label(), got, lookups, scans)),
            Some((label, want, l, s)) => {
                assert_eq!(&got, want, "{} against {label}", engine.label());
                assert_eq!(lookups, *l, "{}'s lookups against {label}'s", engine.label());
                assert_eq!(scans, *s, "{}'s scans against {label}'s", engine.label());
            }
        }
    }
}

#[test]
fn a_whole_run_checks_every_answer_and_writes_its_reports() {
    let disk = tempfile::tempdir().unwrap();
    let shm = Path::new("/dev/shm");
    let mut media = vec![Medium::Disk];
    if shm.is_dir() {
        media.push(Medium::Tmpfs);
    } else {
        eprintln!("no /dev/shm: the tmpfs medium is left out");
    }
    let engines = engines();
    let cfg = Config {
        entries: 3000,
        engines: engines.clone(),
        media: media.clone(),
        dir_disk: disk.path().into(),
        dir_tmpfs: shm.into(),
        pool_fractions: vec![1.0, 0.1],
        threads: vec![1, 2],
        loads: vec![LoadOrder::Sorted, LoadOrder::Random],
        workloads: Workload::AFTER_LOAD.to_vec(),
        lookups: 500,
        scans: 20,
        mix_ops: 400,
        runs: 1,
        cold: true,
        verify: 3000,
        quiet: true,
    };
    let report = execute(&cfg).unwrap();
    // One line per medium, engine (and pool), workload, thread count and pass.
    for medium in &media {
        for engine in &engines {
            let mine = |w: &str| {
                report
                    .rows
                    .iter()
                    .filter(|l| l.medium == medium.name() && l.engine == engine.label())
                    .filter(|l| l.workload == w)
                    .count()
            };
            let pools = if engine.has_pool() { 2 } else { 1 };
            assert_eq!(mine("load-sorted"), 1, "{}", engine.label());
            assert_eq!(mine("load-random"), 1, "{}", engine.label());
            for w in ["lookup-uniform", "lookup-zipf", "scan-100", "mix-50/50"] {
                assert_eq!(mine(w), pools * 2 * 2, "{} {w}", engine.label());
            }
        }
    }
    // Every write figure names its durability.
    for l in
        report.rows.iter().filter(|l| l.workload.starts_with("load") || l.workload == "mix-50/50")
    {
        let d = l.durability.as_deref().unwrap_or_default();
        assert!(d.contains("survives"), "{} {}: {d:?}", l.engine, l.workload);
    }
    let json = disk.path().join("kv.json");
    report.write_json(&json).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for k in ["machine", "config", "durabilities", "notes", "rows", "runs"] {
        assert!(v.get(k).is_some(), "no {k:?} in the JSON");
    }
    let svg = disk.path().join("kv.svg");
    let bars = nvpage_bench::kv::output::bars(&report.rows);
    nvpage_bench::chart::draw(&bars, "kv", "operations/s", &svg).unwrap();
    assert!(std::fs::read_to_string(&svg).unwrap().contains("lookup-zipf"));
}
