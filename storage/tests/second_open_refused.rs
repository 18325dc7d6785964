//! Goal: a data file is open through one handle at a time. While a handle of any layer lives
//! (made by create or by open), a second open through any layer — read-only included — is
//! `AlreadyOpen` and leaves the first handle working; once the first is dropped, the file opens.

#![forbid(unsafe_code)]

mod common;

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
                        matches!(&r, Err(StorageError::AlreadyOpen { path: p }) if *p == path),
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
