//! Goal: opening something that is not a regular file as a log (a directory, such as a
//! database's, or a device) is a typed error saying what the path is, before anything is mapped
//! or locked: never "cannot reserve address space: No such device" from the mapping of a
//! directory.

use nvpage_storage::StorageError;
use nvpage_wal::{Log, OpenOptions, WalError};

#[test]
fn a_directory_or_a_device_is_named_for_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    for read_only in [true, false] {
        let opts = OpenOptions { read_only, ..OpenOptions::default() };
        for (path, kind) in
            [(dir.path(), "a directory"), (std::path::Path::new("/dev/null"), "a character device")]
        {
            let e = Log::open_with(path, &opts).map(drop).unwrap_err();
            assert!(
                matches!(&e, WalError::Storage(StorageError::NotAFile { path: p, .. }) if p == path),
                "{e}"
            );
            assert_eq!(e.to_string(), format!("{} is {kind}, not a file", path.display()));
        }
    }
}
