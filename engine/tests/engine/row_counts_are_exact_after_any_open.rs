//! Goal: a table's row count and an index's entry count are exact after any open, although a
//! commit that changes only counts does not write the catalog (rewriting the catalog page for its
//! row count was about a third of a single-row insert's commit). After a clean
//! close (`Database::close`, or a drop) the next open reads no table page to know them; after a
//! crash that left the file's counts behind its rows — commits that changed counts since the
//! catalog was last written, then the power cut while every write of the process fails, so its
//! drop writes nothing — the open counts the rows again, and `row_count`, `index_len` and
//! `check` agree with the rows. Every layer, on the power-loss simulator.

use crate::common;

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use common::{Row, commit_table, insert_row};
use nvpage::{DATA_FILE, Database, Layer, ReadOps};
use nvpage_storage::sim::{Fault, FaultMode, Sim, Tear};

fn open(path: &Path, layer: Layer) -> Database {
    Database::builder().layer(layer).page_size(4096).pool_bytes(4 << 20).open(path).unwrap()
}

/// Pages the pool fetched since `db` was opened (hits, loads and reads in place).
fn fetches(db: &Database) -> u64 {
    let c = db.counters();
    c.hits + c.misses + c.redirected_reads
}

/// `db`'s rows, its count and its index's count, and whether `check` finds it sound.
fn counts(db: &Database) -> (u64, u64, u64) {
    let rx = db.begin_read().unwrap();
    let t = rx.table("t").unwrap();
    let scanned = rx.scan(&t).unwrap().map(|p| p.unwrap().rows().count() as u64).sum();
    let ix = rx.index("t_key").unwrap();
    (scanned, rx.row_count(&t).unwrap(), rx.index_len(&ix).unwrap())
}

/// A database whose file's counts are behind its rows, as a crash leaves it: a table `t` of
/// 2,000 rows with index `t_key`, closed cleanly, reopened (checked to read no table page),
/// then 30 single-row inserts and 7 deletes committed one by one, and the power cut while every
/// write of the process fails. Returns the simulator (keep it alive), the database's path and
/// the table's pages.
fn crashed_with_stale_counts(dir: &Path, layer: Layer) -> (Sim, PathBuf, u64) {
    let sim = Sim::attach(dir, 11);
    let path = dir.join("db");
    let db = open(&path, layer);
    commit_table(&db, 2000, |k| Row { qty: k as i32, note: Some("n".repeat(40)) });
    let mut tx = db.begin_write().unwrap();
    let t = tx.table("t").unwrap();
    tx.create_index("t_key", &t, &["key"]).unwrap();
    tx.commit().unwrap();
    let pages = db.begin_read().unwrap().page_count(&t).unwrap();
    assert!(pages > 20, "{layer}: the table spans {pages} pages");
    db.close().unwrap();

    // A clean close: the open reads the catalog, not the table.
    let db = open(&path, layer);
    assert!(fetches(&db) < 5, "{layer}: a clean open fetched {} pages", fetches(&db));
    assert_eq!(counts(&db), (2000, 2000, 2000), "{layer}");
    // Commits that change counts only: the first writes the catalog (its counts may be behind
    // from then on), the others do not.
    for k in 2000..2030 {
        let mut tx = db.begin_write().unwrap();
        insert_row(&mut tx, "t", k, &Row { qty: 1, note: None }).unwrap();
        tx.commit().unwrap();
    }
    let ids: Vec<_> = {
        let rx = db.begin_read().unwrap();
        let t = rx.table("t").unwrap();
        let ids: Vec<_> = rx
            .scan(&t)
            .unwrap()
            .flat_map(|p| p.unwrap().rows().map(|r| r.unwrap().id()).collect::<Vec<_>>())
            .collect();
        ids.into_iter().take(7).collect()
    };
    for id in ids {
        let mut tx = db.begin_write().unwrap();
        let t = tx.table("t").unwrap();
        tx.delete(&t, id).unwrap();
        tx.commit().unwrap();
    }
    assert_eq!(counts(&db), (2023, 2023, 2023), "{layer}");

    // The power goes: nothing the process does from here persists (its drop's attempt to
    // write the counts fails), and the files are what the medium held.
    sim.fail(Fault { op: None, after: 0, mode: FaultMode::Forever, errno: libc::EIO });
    drop(db);
    sim.crash(Tear::Word);
    (sim, path, pages)
}

#[test]
fn row_counts_are_exact_after_a_clean_close_and_after_a_crash() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let (_sim, path, pages) = crashed_with_stale_counts(dir.path(), layer);
        let db = open(&path, layer);
        assert!(
            fetches(&db) >= pages,
            "{layer}: an open after a crash counts the rows again ({} fetches, {pages} pages)",
            fetches(&db)
        );
        assert_eq!(counts(&db), (2023, 2023, 2023), "{layer}");
        let report = db.check().unwrap();
        assert!(report.is_sound(), "{layer}: {:?}", report.damage);

        // A commit, and a drop as the clean close: exact again, and read without a count.
        let mut tx = db.begin_write().unwrap();
        insert_row(&mut tx, "t", 5000, &Row { qty: 1, note: None }).unwrap();
        tx.commit().unwrap();
        drop(db);
        let db = open(&path, layer);
        assert!(fetches(&db) < 5, "{layer}: open after a drop fetched {} pages", fetches(&db));
        assert_eq!(counts(&db), (2024, 2024, 2024), "{layer}");
    }
}

/// A damaged heap page found while counting does not stop the open (`check` must be able to
/// report it), and the close that follows does not write the counts it could not make as
/// exact: the open after it counts again.
#[test]
fn a_damaged_page_found_while_counting_is_left_to_check() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let (sim, path, pages) = crashed_with_stale_counts(dir.path(), layer);
        // The table's last page, found by an open that crashes too (so nothing it would write
        // at its close persists).
        let db = open(&path, layer);
        let last = {
            let rx = db.begin_read().unwrap();
            let t = rx.table("t").unwrap();
            let page_of = |p: nvpage::Result<nvpage::ScanPage<'_>>| {
                p.unwrap().rows().next().unwrap().unwrap().id().page
            };
            rx.scan(&t).unwrap().map(page_of).max().unwrap()
        };
        sim.fail(Fault { op: None, after: 0, mode: FaultMode::Forever, errno: libc::EIO });
        drop(db);
        sim.crash(Tear::Word);
        let file = std::fs::OpenOptions::new().write(true).open(path.join(DATA_FILE)).unwrap();
        file.write_all_at(&[0xEE; 32], last * 4096 + 2048).unwrap();
        drop(file);
        let db = open(&path, layer);
        let report = db.check().unwrap();
        assert!(
            report.damage.iter().any(|d| d.contains(&format!("page {last}"))),
            "{layer}: {:?}",
            report.damage
        );
        drop(db);
        let db = open(&path, layer);
        assert!(
            fetches(&db) >= pages - 1,
            "{layer}: the counts stayed unknown, so this open counted again ({} fetches)",
            fetches(&db)
        );
    }
}

std::thread_local! {
    static KEPT: std::cell::RefCell<Option<Database>> = const { std::cell::RefCell::new(None) };
}

/// A handle kept in a `thread_local!` is dropped while the thread's thread-locals are torn
/// down, before or after the engine's own: the drop writes nothing then (a transaction could
/// not run) and does not abort the process; the next open counts the rows. And a handle
/// dropped while a leaked write transaction holds the writer's lock returns at once, leaving
/// the counts to the next open.
#[test]
fn a_drop_that_cannot_close_leaves_the_counts_to_the_next_open() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let db = open(&path, layer);
        commit_table(&db, 100, |k| Row { qty: k as i32, note: None });
        let mut tx = db.begin_write().unwrap();
        let t = tx.table("t").unwrap();
        tx.create_index("t_key", &t, &["key"]).unwrap();
        tx.commit().unwrap();
        drop(db);
        for (k, kept_first) in [(100, true), (101, false)] {
            let child_path = path.clone();
            std::thread::spawn(move || {
                if kept_first {
                    KEPT.with(|_| ());
                }
                let db = open(&child_path, layer);
                let mut tx = db.begin_write().unwrap();
                insert_row(&mut tx, "t", k, &Row { qty: 1, note: None }).unwrap();
                tx.commit().unwrap();
                KEPT.with(|kept| *kept.borrow_mut() = Some(db));
            })
            .join()
            .unwrap();
            let db = open(&path, layer);
            let n = k as u64 + 1;
            assert_eq!(counts(&db), (n, n, n), "{layer}, kept first: {kept_first}");
        }

        let db = open(&path, layer);
        let mut tx = db.begin_write().unwrap();
        insert_row(&mut tx, "t", 102, &Row { qty: 1, note: None }).unwrap();
        tx.commit().unwrap();
        std::mem::forget(db.begin_write().unwrap());
        std::thread::spawn(move || drop(db)).join().unwrap();
        let db = open(&path, layer);
        assert!(fetches(&db) > 1, "{layer}: the counts were left to this open");
        assert_eq!(counts(&db), (103, 103, 103), "{layer}");
    }
}
