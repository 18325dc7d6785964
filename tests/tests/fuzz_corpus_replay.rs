//! Goal: the fuzz corpus (`fuzz/corpus/<target>/`, kept in the repository and minimized with
//! `cargo fuzz cmin`) replays through the fuzz targets' bodies on the ordinary stable test run,
//! so every input a fuzzer once found interesting — and every crash it found, once fixed — is
//! checked by CI without a nightly toolchain. The seeds the corpus started from must still reach
//! the paths behind the checksums (a log that opens with records, a database that opens with
//! rows), or the fuzzers would be exploring error paths only.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

use nvpage_tests::fuzz_bodies::{self, TARGETS};
use nvpage_tests::fuzz_seeds;

fn corpus_dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus").join(target)
}

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = corpus_dir(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files.into_iter().map(|p| (p.clone(), std::fs::read(&p).expect("read a corpus file"))).collect()
}

fn replay(target: &str) {
    let files = corpus(target);
    assert!(!files.is_empty(), "{target}: the corpus is empty");
    let mut failed = Vec::new();
    for (path, data) in &files {
        if catch_unwind(AssertUnwindSafe(|| fuzz_bodies::run(target, data))).is_err() {
            failed.push(path.display().to_string());
        }
    }
    eprintln!("{target}: {} corpus inputs replayed, {} failed", files.len(), failed.len());
    assert!(failed.is_empty(), "{target}: inputs failed (see the panics above): {failed:?}");
}

#[test]
fn replay_log_records() {
    replay("log_records");
}

#[test]
fn replay_log_recovery() {
    replay("log_recovery");
}

#[test]
fn replay_log_decode() {
    replay("log_decode");
}

#[test]
fn replay_log_scan() {
    replay("log_scan");
}

#[test]
fn replay_page_decode() {
    replay("page_decode");
}

#[test]
fn replay_row_decode() {
    replay("row_decode");
}

#[test]
fn replay_db_open() {
    replay("db_open");
}

#[test]
fn replay_api_countdown() {
    replay("api_countdown");
}

#[test]
fn replay_index_page() {
    replay("index_page");
}

#[test]
fn replay_clustered_leaf() {
    replay("clustered_leaf");
}

#[test]
fn every_target_has_a_corpus() {
    for t in TARGETS {
        assert!(corpus_dir(t).is_dir(), "{t} has no corpus directory");
    }
}

#[test]
fn seeds_reach_the_paths_behind_the_checksums() {
    use nvpage::ReadOps;
    let logs = fuzz_seeds::real_logs();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    std::fs::write(&path, &logs[0]).unwrap();
    let log = nvpage_wal::Log::open(&path).expect("the seed log opens");
    assert_eq!(log.record_count(), 4);
    drop(log);
    let file = fuzz_seeds::real_data_file();
    // The db_open seed opens (its log is made to match) and holds the rows it was made with.
    let got = fuzz_bodies::with_data_file(&file, nvpage::Layer::Se2, |db| {
        let db = db.expect("the seed database opens");
        let rx = db.begin_read().unwrap();
        rx.tables().iter().map(|t| rx.row_count(t).unwrap()).collect::<Vec<_>>()
    });
    assert_eq!(got, vec![12, 3]);
    // The index seeds are real nodes of two indexes, leaves and inner nodes, that decode.
    let nodes: Vec<(u32, u8)> = fuzz_seeds::real_index_pages()
        .iter()
        .map(|(id, page)| {
            let index_id = u32::from_le_bytes(page[24..28].try_into().unwrap());
            let (level, ..) = nvpage::fuzzing::index_node(page, index_id, *id).expect("a node");
            (index_id, level)
        })
        .collect();
    for x in [1, 2] {
        assert!(nodes.contains(&(x, 0)) && nodes.contains(&(x, 1)), "index {x}: {nodes:?}");
    }
    // The clustered leaf seeds are real leaves of both schemas, and read as rows.
    for (schema, leaves) in fuzz_seeds::real_clustered_leaves() {
        let rows: usize = leaves
            .iter()
            .filter(|(_, page)| page[17] == 0)
            .map(|(id, page)| {
                let tree = u32::from_le_bytes(page[24..28].try_into().unwrap());
                let s = &fuzz_bodies::clustered_schemas()[usize::from(schema)];
                nvpage::fuzzing::clustered_leaf_fold(page, s, tree, *id).expect("a leaf").len()
            })
            .sum();
        assert!(rows > 100, "schema {schema}: {rows} rows in the seed leaves");
    }
    // The keyed seeds: the leaves of a clustered table with other indexes hold spilled rows'
    // references, and those indexes' leaves and inner nodes (sized values: primary keys) decode.
    let (primary, others) = fuzz_seeds::real_keyed_nodes();
    let tree_of = |page: &[u8]| u32::from_le_bytes(page[24..28].try_into().unwrap());
    let s = &fuzz_bodies::clustered_schemas()[2];
    let spilled: usize = primary
        .iter()
        .filter(|(_, page)| page[17] == 0)
        .map(|(id, page)| {
            let rows = nvpage::fuzzing::clustered_leaf_fold(page, s, tree_of(page), *id);
            rows.expect("a leaf").iter().filter(|(_, spilled)| *spilled).count()
        })
        .sum();
    assert!(spilled > 100, "{spilled} spilled rows in the seed leaves");
    let mut nodes: Vec<(u32, u8)> = others
        .iter()
        .map(|(id, page)| {
            let (level, ..) =
                nvpage::fuzzing::index_node(page, tree_of(page), *id).expect("a node");
            (tree_of(page), level.min(1))
        })
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    assert_eq!(nodes.len(), 4, "a leaf and an inner node of two indexes: {nodes:?}");
    for t in TARGETS {
        let seeds = fuzz_seeds::seeds(t);
        assert!(!seeds.is_empty(), "{t}: no seeds");
        for s in &seeds {
            fuzz_bodies::run(t, s);
        }
    }
}

/// Writes the seeds into the corpus: run once when a format changes, then `cargo fuzz cmin`.
#[test]
#[ignore = "writes fuzz/corpus; run by hand"]
fn write_seed_corpus() {
    for t in TARGETS {
        let dir = corpus_dir(t);
        std::fs::create_dir_all(&dir).unwrap();
        for (i, s) in fuzz_seeds::seeds(t).iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i}")), s).unwrap();
        }
    }
}
