//! Goal: a file system too full for the log is an error that names the log file, the bytes it
//! needed and the option that sized them — at create (`log_bytes`: the create leaves nothing
//! behind) and when a transaction grows the log (`max_log_bytes`: the transaction is rolled
//! back, the database is as it was, not poisoned, and takes the transaction once there is space).
//! All three layers, on the storage simulator.

use crate::common;

use std::path::Path;

use common::{Row, commit_table, compare, contents, insert_row, values};
use nvpage::{Database, LOG_FILE, Layer, ReadOps};
use nvpage_storage::sim::{Fault, Sim};

fn open(path: &Path, layer: Layer) -> nvpage::Result<Database> {
    Database::builder().layer(layer).pool_bytes(64 << 10).log_bytes(1 << 20).open(path)
}

/// Asserts that `e`'s message names each of `parts`, and that the error is about `file`.
fn names(e: &nvpage::Error, file: &Path, parts: &[&str]) {
    let text = e.to_string();
    for part in parts.iter().copied().chain([&*file.to_string_lossy()]) {
        assert!(text.contains(part), "{text:?} does not name {part:?}");
    }
    assert_eq!(e.path(), Some(file), "{text}");
}

#[test]
fn a_full_disk_at_create_names_the_log_and_log_bytes() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let sim = Sim::attach(dir.path(), 1);
        sim.fail(Fault::disk_full(0));
        let path = dir.path().join("db");
        let e = open(&path, layer).map(drop).expect_err("no space for the log");
        names(&e, &path.join(LOG_FILE), &["no space", "1048576 bytes", "log_bytes"]);
        assert!(!path.exists(), "{layer}: a failed create leaves no directory behind");
        sim.clear_faults();
        drop(open(&path, layer).unwrap());
    }
}

#[test]
fn a_full_disk_when_the_log_grows_names_it_and_max_log_bytes() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let sim = Sim::attach(dir.path(), 2);
        let path = dir.path().join("db");
        let db = open(&path, layer).unwrap();
        commit_table(&db, 2400, |_| Row { qty: 0, note: Some("a".repeat(1000)) });
        let before = contents(&db).unwrap();

        // Rows rewritten in place (same length: the data file needs no room), ~2.4 MB of
        // before-images: the log must grow, and the disk is full.
        sim.fail(Fault::disk_full(0));
        let rewrite = |fill: &str| -> nvpage::Result<()> {
            let mut tx = db.begin_write()?;
            let t = tx.table("t")?;
            for (k, (id, _)) in &before["t"] {
                tx.update(&t, *id, &values(*k, &Row { qty: 1, note: Some(fill.repeat(1000)) }))?;
            }
            tx.commit()
        };
        let e = rewrite("b").expect_err("no space to grow the log");
        let grown = path.join(LOG_FILE);
        names(&e, &grown, &["no space", "max_log_bytes", " bytes"]);
        assert!(!db.is_poisoned(), "{layer}: a log that cannot grow is not a failed persist");
        compare(&db, &before).unwrap_or_else(|d| panic!("{layer}: after the refusal: {d}"));

        // Small transactions still fit; once there is space the large one goes through.
        let mut tx = db.begin_write().unwrap();
        insert_row(&mut tx, "t", 9_999, &Row { qty: 9, note: None }).unwrap();
        tx.commit().unwrap();
        sim.clear_faults();
        rewrite("c").unwrap();
        drop(db);
        let db = open(&path, layer).unwrap();
        let after = contents(&db).unwrap();
        assert_eq!(after["t"].len(), before["t"].len() + 1, "{layer}");
        assert!(db.check().unwrap().is_sound(), "{layer}");
    }
}
