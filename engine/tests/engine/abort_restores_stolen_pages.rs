//! Goal: after an abort whose transaction had pages stolen (written back in place mid-way by a
//! pool too small to hold them), no reader sees a byte of the aborted changes: not through the
//! pool (every frame of a restored page was dropped), not in SE2's pages read in place from the
//! mapping, not in the data file, and not after reopening. The rows are changed in two passes
//! (even rows, then odd ones), so each page is written back twice with different lines changed:
//! a before-image holds only the lines its write-back changed, and both must be rolled back.

use crate::common;

use common::{Row, compare, contents, insert_row, schema, values};
use nvpage::{Database, Layer, ReadOps};

const MARK: &str = "ABORTED-BYTES-";

fn file_contains(path: &std::path::Path, needle: &[u8]) -> bool {
    let bytes = std::fs::read(path.join(nvpage::DATA_FILE)).unwrap();
    bytes.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn aborted_bytes_are_gone_from_frames_mapping_file_and_reopen() {
    for layer in Layer::compiled() {
        for explicit in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("db");
            let open = || Database::builder().layer(layer).pool_bytes(64 << 10).open(&path);
            let db = open().unwrap();
            {
                let mut tx = db.begin_write().unwrap();
                tx.create_table("t", schema()).unwrap();
                for k in 0..5000 {
                    let note = Some(format!("{:>40}", k));
                    insert_row(&mut tx, "t", k, &Row { qty: k as i32, note }).unwrap();
                }
                tx.commit().unwrap();
            }
            let before = contents(&db).unwrap();
            let stolen_before = db.counters().write_backs;
            {
                let mut tx = db.begin_write().unwrap();
                let t = tx.table("t").unwrap();
                // Same-size updates stay in place: the aborted bytes land only in pages that
                // existed before, which the abort must restore.
                for pass in 0..2 {
                    for (k, (id, _)) in before["t"].iter().filter(|(k, _)| *k % 2 == pass) {
                        let note = Some(format!("{MARK}{:>26}", k));
                        let row = Row { qty: -1, note };
                        assert_eq!(tx.update(&t, *id, &values(*k, &row)).unwrap(), *id);
                    }
                }
                let stolen = db.counters().write_backs - stolen_before;
                assert!(stolen > 10, "{layer}: the pool stole only {stolen} pages");
                assert!(
                    file_contains(&path, MARK.as_bytes()),
                    "{layer}: stolen pages reached the file before the abort"
                );
                if explicit {
                    tx.abort().unwrap();
                } else {
                    drop(tx);
                }
            }
            assert!(!db.is_poisoned());
            assert!(!file_contains(&path, MARK.as_bytes()), "{layer}: the file was restored");
            let redirected = db.counters().redirected_reads;
            compare(&db, &before).unwrap_or_else(|e| panic!("{layer}: in memory: {e}"));
            {
                let rx = db.begin_read().unwrap();
                let t = rx.table("t").unwrap();
                let note = t.col::<nvpage::kind::Str>("note").unwrap();
                let mut pages = 0;
                let mut in_place = 0;
                for p in rx.scan(&t).unwrap() {
                    let p = p.unwrap();
                    pages += 1;
                    in_place += usize::from(p.is_redirected());
                    for r in p.rows() {
                        let r = r.unwrap();
                        assert!(!r.get(note).unwrap().contains(MARK), "{layer}: scan");
                        assert!(!String::from_utf8_lossy(r.bytes()).contains(MARK));
                    }
                }
                for (id, _) in before["t"].values() {
                    let g = rx.get(&t, *id).unwrap();
                    assert!(!g.row().unwrap().get(note).unwrap().contains(MARK), "{layer}: get");
                }
                if layer == Layer::Se2 {
                    // Every frame was dropped: SE2 reads the restored pages in the mapping.
                    assert_eq!(in_place, pages, "SE2 reads restored pages in place");
                    assert!(db.counters().redirected_reads > redirected);
                }
            }
            // A new transaction after the abort sees the restored pages too.
            {
                let tx = db.begin_write().unwrap();
                let t = tx.table("t").unwrap();
                let note = t.col::<nvpage::kind::Str>("note").unwrap();
                tx.for_each_row(&t, |r| {
                    assert!(!r.get(note)?.contains(MARK));
                    Ok(())
                })
                .unwrap();
                drop(tx);
            }
            drop(db);
            let db = open().unwrap();
            compare(&db, &before).unwrap_or_else(|e| panic!("{layer}: after reopen: {e}"));
            assert!(db.check().unwrap().is_sound());
        }
    }
}
