//! Goal: a data file has one writable handle at a time, or any number of read-only ones. While a
//! writable handle of any layer lives (made by create or by open), a second open through any
//! layer — read-only included — is `AlreadyOpen` naming this process as the writer, and leaves
//! the first handle working; once the first is dropped, the file opens. Read-only handles of any
//! layers read the file side by side, and refuse a writable open, naming this process as a
//! reader.

#![forbid(unsafe_code)]

use crate::common;

use common::{fill, media, opts, read};
use nvpage_storage::{Layer, OpenOptions, PageId, StorageError};

#[test]
fn second_open_is_refused_for_every_layer_pair() {
    for medium in media() {
        let path = medium.path("locked.db");
        let written = fill(&*opts(Layer::Pread, 4096).create(&path).unwrap(), 4, 1);
        for first in Layer::ALL {
            let holder = OpenOptions::new(first).open(&path).unwrap();
            for second in Layer::ALL {
                for read_only in [false, true] {
                    let r = OpenOptions { read_only, ..OpenOptions::new(second) }.open(&path);
                    assert!(
                        matches!(
                            &r,
                            Err(StorageError::AlreadyOpen { path: p, writable, holders })
                                if *p == path
                                    && *writable != read_only
                                    && holders.this_process
                                    && holders.writer == Some(true)
                        ),
                        "{} {first} then {second} (read-only {read_only}): {r:?}",
                        medium.name
                    );
                }
            }
            // The refused opens did not disturb the holder.
            assert_eq!(read(&*holder, PageId(3)).unwrap(), written[3]);
            holder.write_page(PageId(2), &mut common::frame(4096, 2)).unwrap();
            holder.sync().unwrap();
            drop(holder);
            for second in Layer::ALL {
                drop(OpenOptions::new(second).open(&path).expect("open after the holder is gone"));
            }
        }
    }
}

#[test]
fn a_freshly_created_file_is_locked_too() {
    for medium in media() {
        for first in Layer::ALL {
            let path = medium.path(&format!("{first}.db"));
            let holder = opts(first, 4096).create(&path).unwrap();
            for second in Layer::ALL {
                let r = OpenOptions::new(second).open(&path);
                assert!(matches!(r, Err(StorageError::AlreadyOpen { .. })), "{first}/{second}");
            }
            drop(holder);
            assert!(OpenOptions::new(first).open(&path).is_ok());
        }
    }
}

#[test]
fn read_only_handles_share_a_file_and_refuse_a_writer() {
    for medium in media() {
        let path = medium.path("shared.db");
        let written = fill(&*opts(Layer::Pread, 4096).create(&path).unwrap(), 4, 1);
        for first in Layer::ALL {
            let ro = |layer| OpenOptions { read_only: true, ..OpenOptions::new(layer) };
            let a = ro(first).open(&path).unwrap();
            for second in Layer::ALL {
                let b = ro(second).open(&path).unwrap_or_else(|e| panic!("{first}/{second}: {e}"));
                assert_eq!(read(&*a, PageId(3)).unwrap(), written[3]);
                assert_eq!(read(&*b, PageId(2)).unwrap(), written[2]);
                let r = OpenOptions::new(second).open(&path);
                let Err(e @ StorageError::AlreadyOpen { .. }) = r else {
                    panic!("{} {first}/{second}: a writable open beside readers", medium.name);
                };
                assert_eq!(
                    e.to_string(),
                    format!(
                        "{} is already open read-only by this process (another handle to it); a \
                         writable open needs every read-only handle closed first",
                        path.display()
                    )
                );
            }
            drop(a);
            drop(OpenOptions::new(first).open(&path).expect("writable once the readers are gone"));
        }
    }
}
