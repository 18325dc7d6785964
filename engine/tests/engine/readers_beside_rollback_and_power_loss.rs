//! Goal: readers beside rollback and power loss, on every layer, on the power-loss
//! simulator. A reader holding its snapshot reads it unchanged while the writer steals pages
//! mid-transaction (an 8-frame pool), while the writer aborts — its before-images restored in
//! place beside the reader —, after a commit, and while a last transaction with stolen pages is
//! cut off by a power loss with no rollback in process; after the crash, recovery gives exactly
//! the last commit. Versions never reach the files: the same writes with and without a reader
//! leave data files whose pages are identical (past the header page, which carries each
//! database's own identity) and logs of the same length.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use common::{Row, Rows, commit_table, compare, contents, contents_in, values};
use nvpage::{Database, Layer, ReadOps, kind};
use nvpage_storage::sim::{Sim, Tear};

fn open(path: &Path, layer: Layer) -> Database {
    Database::builder()
        .layer(layer)
        .page_size(4096)
        .pool_bytes(8 * 4096)
        .log_bytes(8 << 20)
        .open(path)
        .unwrap()
}

/// Rewrites every row of `t` with `qty` (and a longer note, so rows move), leaving the
/// transaction open.
fn rewrite_all(tx: &mut nvpage::WriteTxn<'_>, qty: i32) {
    let t = tx.table("t").unwrap();
    let key = t.col::<kind::I64>("key").unwrap();
    let mut rows = Vec::new();
    tx.for_each_row(&t, |r| {
        rows.push((r.id(), r.get(key)?));
        Ok(())
    })
    .unwrap();
    for (id, k) in rows {
        let row = Row { qty, note: Some("r".repeat(10 + qty.unsigned_abs() as usize % 50)) };
        tx.update(&t, id, &values(k, &row)).unwrap();
    }
}

/// The writes: a table, an aborted rewrite, a committed one. With `reader`, a reader thread
/// holds the first commit's snapshot throughout and checks it at every step; with `cut`, a last
/// rewrite is left open (pages stolen) and forgotten: a power loss with no rollback. Returns the
/// state the last commit left.
fn writes(path: &Path, layer: Layer, reader: bool, cut: bool) -> BTreeMap<String, Rows> {
    let db = open(path, layer);
    commit_table(&db, 300, |k| Row { qty: k as i32, note: Some("n".repeat(30)) });
    let first = contents(&db).unwrap();
    let (to_reader, steps) = mpsc::channel::<&str>();
    let (to_writer, acks) = mpsc::channel::<()>();
    let last = std::thread::scope(|s| {
        let (db, first) = (&db, &first);
        if reader {
            s.spawn(move || {
                let rx = db.begin_read().unwrap();
                assert!(contents_in(&rx).unwrap() == *first, "{layer}: at begin");
                to_writer.send(()).unwrap();
                for step in steps {
                    let now = contents_in(&rx).unwrap();
                    assert!(now == *first, "{layer}: the snapshot changed {step}");
                    to_writer.send(()).unwrap();
                }
            });
            acks.recv().unwrap();
        }
        let check = |step: &'static str| {
            if reader {
                to_reader.send(step).unwrap();
                acks.recv().unwrap();
            }
        };
        let mut tx = db.begin_write().unwrap();
        rewrite_all(&mut tx, -1);
        check("while a transaction stole pages");
        tx.abort().unwrap();
        check("after an abort restored them");
        let mut tx = db.begin_write().unwrap();
        rewrite_all(&mut tx, -2);
        tx.commit().unwrap();
        check("after a commit");
        let last = contents(db).unwrap();
        let open_txn = cut.then(|| {
            let mut tx = db.begin_write().unwrap();
            rewrite_all(&mut tx, -3);
            check("while the last transaction stole pages");
            tx
        });
        drop(to_reader);
        // With `cut`, the power goes now: no rollback runs in this process.
        std::mem::forget(open_txn);
        last
    });
    let c = db.counters();
    assert!(c.evictions > 0 && c.write_backs > 0, "{layer}: pages were stolen: {c:?}");
    if !cut {
        let st = db.stats();
        assert_eq!((st.versions, st.version_bytes), (0, 0), "{layer}: {st:?}");
    }
    last
}

fn pages_past_the_header(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path.join(nvpage::DATA_FILE)).unwrap();
    bytes[4096..].to_vec()
}

fn log_len(path: &Path) -> u64 {
    std::fs::metadata(path.join(nvpage::LOG_FILE)).unwrap().len()
}

#[test]
fn a_snapshot_survives_stolen_pages_aborts_and_a_power_loss_and_recovery_gives_the_last_commit() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let sim = Sim::attach(dir.path(), 5);
        let path = dir.path().join("db");
        let last = writes(&path, layer, true, true);
        sim.crash(Tear::Sector);
        let db = open(&path, layer);
        compare(&db, &last).unwrap_or_else(|e| panic!("{layer}: after the power loss: {e}"));
        assert!(db.check().unwrap().is_sound(), "{layer}");
    }
}

#[test]
fn versions_never_reach_the_files() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        let paths: [PathBuf; 2] = [dir.path().join("with"), dir.path().join("without")];
        let a = writes(&paths[0], layer, true, false);
        let b = writes(&paths[1], layer, false, false);
        assert!(a == b, "{layer}: the same commits");
        assert!(
            pages_past_the_header(&paths[0]) == pages_past_the_header(&paths[1]),
            "{layer}: a reader changed the data file"
        );
        assert_eq!(log_len(&paths[0]), log_len(&paths[1]), "{layer}: a reader changed the log");
    }
}
