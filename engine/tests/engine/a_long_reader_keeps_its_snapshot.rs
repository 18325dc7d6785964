//! Goal: a read transaction held across ten commits still sees its snapshot, on every layer:
//! after each commit — every row rewritten, rows added and deleted, a table created and one
//! dropped, the file grown, through a pool that steals pages — it reads exactly what it read
//! first, while a reader that begins after each commit sees that commit. The memory kept for it
//! (old page versions) is reported while it lives and freed when it ends (back to zero).

use crate::common;

use common::{Row, commit_table, contents, contents_in, insert_row, schema, values};
use nvpage::{Database, Layer, ReadOps, kind};

fn run(layer: Layer) {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let db = Database::builder()
        .layer(layer)
        .page_size(4096)
        .pool_bytes(8 * 4096)
        .open(dir.path().join("db"))
        .unwrap();
    commit_table(&db, 400, |k| Row { qty: k as i32, note: Some("n".repeat(20)) });
    let (first, snapshot) = std::thread::scope(|s| {
        let (to_reader, from_writer) = std::sync::mpsc::channel::<u64>();
        let (to_writer, from_reader) = std::sync::mpsc::channel::<()>();
        let db = &db;
        let reader = s.spawn(move || {
            let rx = db.begin_read().unwrap();
            let first = contents_in(&rx).unwrap();
            to_writer.send(()).unwrap();
            for commit in from_writer {
                let now = contents_in(&rx).unwrap();
                assert!(now == first, "{layer}: the snapshot changed after commit {commit}");
                let st = db.stats();
                assert_eq!(st.readers, 1, "{layer}");
                assert_eq!(st.oldest_snapshot_age, commit - rx.snapshot(), "{layer}");
                assert!(st.version_bytes > 0, "{layer}: versions are kept for the reader");
                to_writer.send(()).unwrap();
            }
            (first, rx.snapshot())
        });
        from_reader.recv().unwrap();
        for round in 0..10 {
            let mut tx = db.begin_write().unwrap();
            let t = tx.table("t").unwrap();
            let key = t.col::<kind::I64>("key").unwrap();
            let mut rows = Vec::new();
            tx.for_each_row(&t, |r| {
                rows.push((r.id(), r.get(key)?));
                Ok(())
            })
            .unwrap();
            for (id, k) in rows {
                let row = Row { qty: -round, note: Some("w".repeat(20 + round as usize * 3)) };
                tx.update(&t, id, &values(k, &row)).unwrap();
            }
            insert_row(&mut tx, "t", 1000 + round as i64, &Row { qty: 1, note: None }).unwrap();
            tx.create_table(&format!("x{round}"), schema()).unwrap();
            if round > 0 {
                tx.drop_table(&format!("x{}", round - 1)).unwrap();
            }
            tx.commit().unwrap();
            let commit = db.stats().commits;
            // A reader that begins now sees this commit.
            let rx = db.begin_read().unwrap();
            assert_eq!(rx.snapshot(), commit);
            let t = rx.table("t").unwrap();
            assert_eq!(rx.row_count(&t).unwrap(), 401 + round as u64, "{layer}");
            drop(rx);
            to_reader.send(commit).unwrap();
            from_reader.recv().unwrap();
        }
        drop(to_reader);
        reader.join().unwrap()
    });
    assert_eq!(first["t"].len(), 400, "{layer}");
    let st = db.stats();
    assert_eq!(st.commits, snapshot + 10, "{layer}");
    assert_eq!((st.readers, st.versions, st.version_bytes), (0, 0, 0), "{layer}: freed: {st:?}");
    assert_eq!(contents(&db).unwrap()["t"].len(), 410, "{layer}");
}

#[test]
fn a_snapshot_held_across_ten_commits_reads_the_same_and_frees_its_versions() {
    for layer in Layer::compiled() {
        run(layer);
    }
}
