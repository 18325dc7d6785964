//! Goal: opening a directory or a device as a data file, with any layer, read-only or not, is
//! `NotAFile` saying what the path is, before it is opened (a FIFO's open would wait for a
//! writer) — not an I/O error from reading a directory.

use nvpage_storage::{Layer, OpenOptions, StorageError};

#[test]
fn a_directory_or_a_device_is_refused_naming_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let cases = [
        (dir.path().to_path_buf(), "a directory"),
        ("/dev/null".into(), "a character device"),
        (fifo, "a FIFO"),
    ];
    for layer in Layer::ALL {
        for read_only in [true, false] {
            for (path, kind) in &cases {
                let r = OpenOptions { read_only, ..OpenOptions::new(layer) }.open(path);
                let Err(e @ StorageError::NotAFile { .. }) = r else {
                    panic!("{layer} {}: {:?}", path.display(), r.map(|_| ()));
                };
                assert_eq!(e.to_string(), format!("{} is {kind}, not a file", path.display()));
            }
        }
    }
}
