//! Goal: a new database with the default options sets aside what it needs, not room for the
//! largest transaction it might meet: on a disk and on tmpfs (where a file is memory), its log
//! file is 1 MiB and holds no more blocks than that, the whole directory under 2.5 MiB; and
//! transactions that fit leave the log as it is.

use crate::common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use common::{Row, commit_table, insert_row};
use nvpage::{DATA_FILE, Database, LOG_FILE};

/// The file's length and the bytes of storage it holds (`ls -ls`).
fn sizes(path: &Path) -> (u64, u64) {
    let m = std::fs::metadata(path).unwrap();
    (m.len(), m.blocks() * 512)
}

#[test]
fn a_fresh_database_sets_aside_a_small_log() {
    let disk = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    for dir in [disk.path(), shm.path()] {
        let path = dir.join("db");
        let db = Database::open(&path).unwrap();
        let log = path.join(LOG_FILE);
        let (len, held) = sizes(&log);
        assert!(len <= 1 << 20, "{}: a fresh log of {len} bytes", dir.display());
        assert!(held <= 1 << 20, "{}: a fresh log holds {held} bytes", dir.display());
        let (_, data) = sizes(&path.join(DATA_FILE));
        assert!(held + data < 5 << 19, "{}: {held} + {data} bytes", dir.display());

        // Small transactions fit: the log keeps its size.
        commit_table(&db, 100, |k| Row { qty: k as i32, note: Some("n".repeat(200)) });
        for k in 100..200 {
            let mut tx = db.begin_write().unwrap();
            insert_row(&mut tx, "t", k, &Row { qty: 1, note: None }).unwrap();
            tx.commit().unwrap();
        }
        drop(db);
        assert_eq!(sizes(&log).0, len, "{}: the log grew for small transactions", dir.display());
    }
}
