//! Goal: a reader's guards never make the writer fail (R10) where the writer needs frames they
//! pin, in the two places where it holds one new index page while it asks for a frame for
//! another: a leaf split (the new right leaf held while the old leaf is written) and the bulk
//! build of an index (the leaf being filled held while the next is taken). On every layer, with
//! pools of 4 to 8 frames (3 is below the pool's minimum and refused at open). A reader on
//! another thread pins every frame but one, with guards on rows of pages the last commit wrote
//! (with pread and SE1 their frames stay the pages' shared frames); the writer's statement
//! waits, the reader lets go once the writer is seen waiting (the pool's write-back-wait
//! counter), and the writer commits, unpoisoned, with sound indexes. SE2's commit leaves those
//! pages no frame and its guards read them in place: there they pin nothing, and the writer
//! never waits. No sleeps.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use nvpage::{Column, ColumnType, Database, Error, Layer, ReadOps, RowId, Schema, Value, WriteTxn};

const ROWS: i64 = 240;

fn open(path: &std::path::Path, layer: Layer, frames: u64) -> nvpage::Result<Database> {
    Database::builder().layer(layer).page_size(4096).pool_bytes(frames * 4096).open(path)
}

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("id", ColumnType::I64),
        Column::new("name", ColumnType::VarChar { max_len: 200 }),
    ])
    .unwrap()
}

/// Row `i`'s name: long, so that a 4 KiB leaf holds about twenty and a heap page about as many
/// rows.
fn name(i: i64) -> String {
    format!("{:0>160}", (i * 7919) % 100_003)
}

/// Which statement runs while the reader pins the frames.
#[derive(Clone, Copy, Debug)]
enum Need {
    /// Rows inserted into a table with an index on `name`, splitting its leaves.
    LeafSplits,
    /// An index built over the loaded table.
    BulkBuild,
}

/// A database in `path` holding `ROWS` rows (indexed on `name` for `LeafSplits`), committed.
fn load(path: &std::path::Path, layer: Layer, need: Need) -> Vec<RowId> {
    let db = open(path, layer, 256).unwrap();
    let mut tx = db.begin_write().unwrap();
    let t = tx.create_table("t", schema()).unwrap();
    if let Need::LeafSplits = need {
        tx.create_index("by_name", &t, &["name"]).unwrap();
    }
    let ids =
        (0..ROWS).map(|i| tx.insert(&t, &[Value::I64(i), Value::Str(&name(i))]).unwrap()).collect();
    tx.commit().unwrap();
    ids
}

/// One row on each of `n` distinct pages.
fn on_distinct_pages(ids: &[RowId], n: usize) -> Vec<RowId> {
    let mut picked: Vec<RowId> = Vec::new();
    for &id in ids {
        if !picked.iter().any(|p| p.page == id.page) {
            picked.push(id);
        }
    }
    picked.truncate(n);
    assert_eq!(picked.len(), n, "the table spans too few pages");
    picked
}

/// The statement of `need`, in `tx`.
fn statement(tx: &mut WriteTxn<'_>, need: Need) -> nvpage::Result<()> {
    let t = tx.table("t")?;
    match need {
        Need::LeafSplits => {
            // Names between the loaded ones, all into the same few leaves: each fills and
            // splits, more than once.
            for i in 0..60 {
                let n = format!("{:0>160}-{i:02}", (ROWS * 7919) % 100_003);
                tx.insert(&t, &[Value::I64(ROWS + i), Value::Str(&n)])?;
            }
        }
        Need::BulkBuild => {
            tx.create_index("built", &t, &["name"])?;
        }
    }
    Ok(())
}

/// What went wrong with `layer`, `frames` and `need`, if anything.
fn run(layer: Layer, frames: u64, need: Need) -> Option<String> {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
    let path = dir.path().join("db");
    let ids = load(&path, layer, need);
    let db = open(&path, layer, frames).unwrap();
    let picked = on_distinct_pages(&ids, frames as usize - 1);
    // A commit that writes the picked rows' pages: afterwards each page's frame is its shared
    // frame, which a reader's guard pins (SE2: no frame; its guards read the mapping).
    let mut tx = db.begin_write().unwrap();
    let t = tx.table("t").unwrap();
    for &id in &picked {
        let i = ids.iter().position(|&x| x == id).unwrap() as i64;
        tx.update(&t, id, &[Value::I64(-i), Value::Str(&name(i))]).unwrap();
    }
    tx.commit().unwrap();
    let before = db.counters();
    // Set once the writer's statement has returned, so the reader never outwaits a failure.
    let done = AtomicBool::new(false);
    let result = std::thread::scope(|s| {
        let (held, wait_held) = mpsc::channel::<()>();
        let (db, picked, done) = (&db, &picked, &done);
        let reader = s.spawn(move || {
            let rx = db.begin_read().unwrap();
            let t = rx.table("t").unwrap();
            let guards: Vec<_> = picked.iter().map(|&id| rx.get(&t, id).unwrap()).collect();
            let now = db.counters();
            let pinned = now.redirected_reads == before.redirected_reads
                && now.private_copies == before.private_copies;
            held.send(()).unwrap();
            while db.counters().write_back_waits == before.write_back_waits
                && !done.load(Ordering::SeqCst)
            {
                std::thread::yield_now();
            }
            drop(guards);
            pinned
        });
        wait_held.recv().unwrap();
        let mut tx = db.begin_write().unwrap();
        let r = statement(&mut tx, need);
        done.store(true, Ordering::SeqCst);
        let pinned = reader.join().unwrap();
        let reads_frames = layer != Layer::Se2;
        assert_eq!(
            pinned, reads_frames,
            "{layer}, {frames} frames: the reader's guards pin frames"
        );
        r.and_then(|()| tx.commit())
    });
    if let Err(e) = result {
        return Some(format!("the writer failed: {e}"));
    }
    assert!(!db.is_poisoned());
    let waited = db.counters().write_back_waits > before.write_back_waits;
    assert_eq!(waited, layer != Layer::Se2, "{layer}: the writer waited");
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.damage);
    let index = match need {
        Need::LeafSplits => "by_name",
        Need::BulkBuild => "built",
    };
    let x = report.indexes.iter().find(|x| x.name == index).unwrap();
    let rx = db.begin_read().unwrap();
    let rows = rx.row_count(&rx.table("t").unwrap()).unwrap();
    assert_eq!((x.entries_in_catalog, x.entries_found), (rows, rows), "{index}");
    None
}

#[test]
fn a_writer_short_of_frames_waits_for_readers() {
    let mut wrong = Vec::new();
    for layer in Layer::compiled() {
        for frames in 4..=8 {
            for need in [Need::LeafSplits, Need::BulkBuild] {
                if let Some(w) = run(layer, frames, need) {
                    wrong.push(format!("{layer}, {frames} frames, {need:?}: {w}"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_pool_of_three_frames_is_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    for layer in Layer::compiled() {
        let r = open(&dir.path().join(format!("db-{layer}")), layer, 3);
        assert!(matches!(r, Err(Error::InvalidOption(_))), "{layer}: {:?}", r.err());
    }
}
