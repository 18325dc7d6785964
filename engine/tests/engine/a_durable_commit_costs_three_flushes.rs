//! Goal: a durable commit on a disk costs three device flushes however many pages it changed:
//! one for all its before-images together (the log, before the first page is stored
//! in place), one for its pages (the data file's sync), one for the commit point (the log's
//! rewind) — counted on the power-loss simulator, on every layer, for a single-row insert (one
//! page logged, its heap page: a commit that changes only the row count does not write the
//! catalog), a single-row update, and an update of rows on
//! a dozen pages and on every page, with a pool large enough that no page is stolen before the
//! commit. Images hold only the lines a page's write-back changes, so a tenth of the rows updated
//! on every page logs well under 64 KiB; a commit that logs 64 KiB or more (every row changed)
//! also stores the log's watermark (one more: the log stores it every `MARK_INTERVAL`, so that
//! damage below it is an error, never the end of the log).

use crate::common;

use common::{Row, commit_table, insert_row, values};
use nvpage::{Database, Layer, ReadOps, kind};
use nvpage_storage::sim::Sim;

#[test]
fn every_durable_commit_costs_three_flushes() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let sim = Sim::attach(dir.path(), 3);
        let db = Database::builder()
            .layer(layer)
            .page_size(4096)
            .pool_bytes(4 << 20)
            .open(dir.path().join("db"))
            .unwrap();
        let ids = commit_table(&db, 2000, |k| Row { qty: k as i32, note: Some("n".repeat(20)) });
        let flushes = |what: &str, want: u64, f: &dyn Fn()| {
            let before = sim.counts();
            f();
            let after = sim.counts();
            assert_eq!(after.persists - before.persists, want, "{layer}: {what}: {after:?}");
        };
        let update_every = |step: usize, note: Option<String>| {
            let mut tx = db.begin_write().unwrap();
            let t = tx.table("t").unwrap();
            for (k, &id) in ids.iter().enumerate().step_by(step) {
                let row = Row { qty: -(k as i32), note: note.clone() };
                tx.update(&t, id, &values(k as i64, &row)).unwrap();
            }
            tx.commit().unwrap();
        };
        flushes("a single-row insert", 3, &|| {
            let mut tx = db.begin_write().unwrap();
            insert_row(&mut tx, "t", 5000, &Row { qty: 1, note: None }).unwrap();
            tx.commit().unwrap();
        });
        flushes("a single-row update", 3, &|| {
            let mut tx = db.begin_write().unwrap();
            let t = tx.table("t").unwrap();
            tx.update(&t, ids[7], &values(7, &Row { qty: -7, note: Some("u".into()) })).unwrap();
            tx.commit().unwrap();
        });
        // 2000 rows of about 60 bytes fill some 35 pages of 4 KiB: every 200th row is on a
        // dozen of them, every 10th on all of them (a few lines of each: under 64 KiB of
        // images); every row changed changes nearly every line of every page (over 64 KiB).
        flushes("rows on a dozen pages updated", 3, &|| update_every(200, None));
        flushes("rows on every page updated", 3, &|| update_every(10, None));
        flushes("every row changed", 4, &|| update_every(1, Some("w".repeat(20))));
        let rx = db.begin_read().unwrap();
        let t = rx.table("t").unwrap();
        let qty = t.col::<kind::I32>("qty").unwrap();
        assert_eq!(rx.get(&t, ids[7]).unwrap().row().unwrap().get(qty).unwrap(), -7, "{layer}");
        assert!(rx.page_count(&t).unwrap() > 10, "{layer}: the update spans many pages");
    }
}
