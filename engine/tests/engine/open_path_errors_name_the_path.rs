//! Goal: when the path given to an open is not a usable database directory, the error says what
//! is wrong with that path — never "no database here" for a path that could not be examined, and
//! never a silently created tree:
//! - a missing parent is `NoParentDirectory` naming both, and nothing is created (an open makes
//!   the database directory only, as SQLite and redb make only their file);
//! - a regular file is `NotADirectory`, and the file is left as it was;
//! - a path through a regular file, or a database file that cannot be examined (here a symbolic
//!   link loop, which the superuser cannot bypass as it bypasses permission bits), is
//!   `Inaccessible` with the path and the OS error, for writable and read-only opens alike;
//! - a create that fails (here a refused persistence mode) leaves no empty directory behind.
//!
//! Permission-denied directories are the same code path as the symbolic-link loop (any error
//! from `stat` other than "not found"); `cli/tests/cli/open_errors_name_the_path_once.rs` meets one
//! for real, as another user.

#![forbid(unsafe_code)]

use std::io::ErrorKind;
use std::path::Path;

use nvpage::{Database, Error, PersistRequest};
use nvpage_storage::StorageError;

fn open(path: &Path, read_only: bool) -> nvpage::Result<Database> {
    Database::builder().read_only(read_only).log_bytes(1 << 20).open(path)
}

#[test]
fn paths_that_are_not_database_directories_are_named_with_their_fault() {
    let tmp = tempfile::tempdir().unwrap();

    // A missing parent: an error naming it, and no directory made.
    let deep = tmp.path().join("no").join("such").join("db");
    match open(&deep, false) {
        Err(Error::NoParentDirectory { path, parent }) => {
            assert_eq!(path, deep);
            assert_eq!(parent, tmp.path().join("no").join("such"));
        }
        r => panic!("missing parent: {:?}", r.map(drop)),
    }
    assert!(!tmp.path().join("no").exists(), "nothing of the chain is created");
    let e = open(&deep, false).map(drop).unwrap_err().to_string();
    assert!(e.contains("does not exist") && e.contains(&deep.display().to_string()), "{e}");
    // Read-only, there is nothing to create: simply no database there.
    assert!(matches!(open(&deep, true), Err(Error::NotFound { .. })));

    // A regular file.
    let file = tmp.path().join("a-file");
    std::fs::write(&file, b"not a database").unwrap();
    for read_only in [false, true] {
        match open(&file, read_only) {
            Err(Error::NotADirectory { path }) => assert_eq!(path, file),
            r => panic!("regular file (read-only {read_only}): {:?}", r.map(drop)),
        }
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"not a database");
    let e = open(&file, false).map(drop).unwrap_err().to_string();
    assert!(e.contains("is not a directory"), "{e}");

    // A path through a regular file: the OS error, not "no database here".
    let through = file.join("db");
    for read_only in [false, true] {
        match open(&through, read_only) {
            Err(Error::Inaccessible { path, source }) => {
                assert_eq!(path, through);
                assert_eq!(source.kind(), ErrorKind::NotADirectory, "{source}");
            }
            r => panic!("path through a file (read-only {read_only}): {:?}", r.map(drop)),
        }
    }

    // A data file that cannot be examined: a symbolic link to itself.
    let db = tmp.path().join("looped");
    std::fs::create_dir(&db).unwrap();
    let data = db.join(nvpage::DATA_FILE);
    std::os::unix::fs::symlink(&data, &data).unwrap();
    for read_only in [false, true] {
        match open(&db, read_only) {
            Err(Error::Inaccessible { path, source }) => {
                assert_eq!(path, data);
                assert_eq!(source.raw_os_error(), Some(libc::ELOOP), "{source}");
            }
            r => panic!("unexaminable data file (read-only {read_only}): {:?}", r.map(drop)),
        }
    }
    assert!(!db.join(nvpage::LOG_FILE).exists(), "nothing was created beside it");

    // A create that fails leaves no directory behind. (Cache-line persistence on a disk file is
    // refused; on tmpfs it would be granted, so the case needs the temp dir on disk.)
    let refused = tmp.path().join("refused");
    match Database::builder().persistence(PersistRequest::CacheLine).open(&refused) {
        Err(Error::Storage(StorageError::EmulationRefused { .. })) => {
            assert!(!refused.exists(), "the directory made for the create is removed");
        }
        Ok(_) => eprintln!("the temp dir is memory or DAX: the refused create is not exercised"),
        Err(e) => panic!("refused create: {e}"),
    }

    // And the directory itself is all an open makes.
    let fresh = tmp.path().join("fresh");
    drop(open(&fresh, false).unwrap());
    assert!(fresh.join(nvpage::DATA_FILE).exists());
}
