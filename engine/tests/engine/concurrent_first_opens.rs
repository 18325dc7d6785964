//! Goal: two first opens of one directory at once (threads here; processes alike, the lock is
//! the directory's `flock`) never break the database: each gets the database or a typed
//! `AlreadyOpen`, and afterwards the directory opens. Without the directory lock each opener
//! took the other's fresh log for a crashed create, and half the races left a data file and a
//! log of different databases (`ForeignLog` forever). Also: a read-only open of a directory
//! holding only a crashed create's log removes nothing.

use std::sync::Barrier;

use nvpage::{Database, Error};
use nvpage_storage::StorageError;

#[test]
fn two_first_opens_at_once_leave_one_database() {
    for i in 0..40 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let barrier = Barrier::new(2);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    barrier.wait();
                    match Database::builder().log_bytes(1 << 20).open(&path) {
                        Ok(db) => drop(db),
                        Err(Error::Storage(StorageError::AlreadyOpen { .. })) => {}
                        Err(e) => panic!("iteration {i}: {e}"),
                    }
                });
            }
        });
        let db =
            Database::open(&path).unwrap_or_else(|e| panic!("iteration {i}: after the race: {e}"));
        assert!(db.check().unwrap().damage.is_empty());
    }
}

#[test]
fn a_read_only_open_leaves_a_crashed_create_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    drop(Database::builder().log_bytes(1 << 20).open(&path).unwrap());
    // A create that crashed before its data file's rename leaves the log alone.
    std::fs::remove_file(path.join(nvpage::DATA_FILE)).unwrap();
    std::fs::write(path.join(nvpage::LOG_FILE), b"").unwrap();
    let ro = Database::builder().read_only(true).open(&path);
    assert!(matches!(ro, Err(Error::NotFound { .. })), "{:?}", ro.map(|_| ()));
    assert!(path.join(nvpage::LOG_FILE).exists(), "a read-only open removed a file");
    // A writable open removes it and creates the database.
    drop(Database::builder().log_bytes(1 << 20).open(&path).unwrap());
}
