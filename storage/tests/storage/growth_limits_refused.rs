//! Goal: growth that cannot happen is a typed error that loses nothing. A full disk is
//! `NoSpace` (the page count stays, the handle keeps working, pages synced earlier are intact
//! after reopen and after a power loss; a create on a full disk leaves no file behind), and
//! growth past the maximum size chosen at open is `FileTooLarge`.

#![forbid(unsafe_code)]

use crate::common;

use common::{fill, frame, media, opts, read};
use nvpage_storage::sim::{Fault, Sim, Tear};
use nvpage_storage::{Layer, OpenOptions, PageId, StorageError};

const PS: usize = 4096;
const PAGES: u64 = 6;

#[test]
fn full_disk_is_no_space_and_loses_nothing() {
    for medium in media() {
        for layer in Layer::ALL {
            let ctx = format!("{} {layer}", medium.name);
            let path = medium.path(&format!("{layer}.db"));
            let sim = Sim::attach(medium.dir.path(), layer as u64);
            let l = opts(layer, PS).create(&path).unwrap();
            let committed = fill(&*l, PAGES, 3);
            let len = std::fs::metadata(&path).unwrap().len();

            sim.fail(Fault::disk_full(0));
            // Far past what growth allocated ahead, so the file itself must grow.
            let far = len / PS as u64 + 10;
            for _ in 0..2 {
                let r = l.grow(far);
                assert!(
                    matches!(&r, Err(StorageError::NoSpace { path: p }) if *p == path),
                    "{ctx}: {r:?}"
                );
                assert_eq!(l.file().page_count(), PAGES, "{ctx}");
            }
            assert_eq!(std::fs::metadata(&path).unwrap().len(), len, "{ctx}: file unchanged");
            // A full disk is not a persist failure: the handle still writes and syncs, and growth
            // into space already allocated needs no more disk.
            assert!(!l.file().raw().is_poisoned(), "{ctx}");
            l.grow(PAGES + 1).unwrap();
            let mut extra = frame(PS, 77);
            l.write_page(PageId(PAGES), &mut extra).unwrap();
            l.write_header().unwrap();
            l.sync().unwrap();
            drop(l);

            sim.crash(Tear::Sector);
            let l = OpenOptions::new(layer).open(&path).unwrap();
            assert_eq!(l.file().page_count(), PAGES + 1, "{ctx}");
            for id in 1..PAGES {
                assert_eq!(read(&*l, PageId(id)).unwrap(), committed[id as usize], "{ctx} {id}");
            }
            assert_eq!(read(&*l, PageId(PAGES)).unwrap(), extra, "{ctx}");
        }
    }
}

#[test]
fn create_on_a_full_disk_leaves_no_file() {
    for medium in media() {
        for layer in Layer::ALL {
            let path = medium.path(&format!("{layer}.db"));
            let sim = Sim::attach(medium.dir.path(), 9);
            sim.fail(Fault::disk_full(0));
            let r = opts(layer, PS).create(&path);
            assert!(matches!(r, Err(StorageError::NoSpace { .. })), "{layer}: {r:?}");
            assert!(!path.exists(), "{} {layer}: a failed create left a file", medium.name);
            // The simulator copes with a followed file that is gone, and a retry works.
            sim.crash(Tear::Sector);
            sim.clear_faults();
            drop(opts(layer, PS).create(&path).unwrap());
            assert!(OpenOptions::new(layer).open(&path).is_ok());
        }
    }
}

#[test]
fn growth_past_the_maximum_size_is_file_too_large() {
    const MAX_PAGES: u64 = 16;
    let max_bytes = MAX_PAGES * PS as u64;
    for medium in media() {
        for layer in Layer::ALL {
            let ctx = format!("{} {layer}", medium.name);
            let path = medium.path(&format!("{layer}.db"));
            let o = OpenOptions { max_bytes, ..opts(layer, PS) };
            let l = o.create(&path).unwrap();
            // Growth never allocates ahead past the maximum.
            let written = fill(&*l, MAX_PAGES, 4);
            assert!(std::fs::metadata(&path).unwrap().len() <= max_bytes, "{ctx}");
            for new_count in [MAX_PAGES + 1, 1 << 40, u64::MAX] {
                let r = l.grow(new_count);
                assert!(
                    matches!(r, Err(StorageError::FileTooLarge { max_bytes: m, .. }) if m == max_bytes),
                    "{ctx} grow to {new_count}: {r:?}"
                );
                assert_eq!(l.file().page_count(), MAX_PAGES, "{ctx}");
            }
            let r = l.grow(MAX_PAGES + 1);
            assert!(
                matches!(r, Err(StorageError::FileTooLarge { requested_bytes, .. })
                    if requested_bytes == (MAX_PAGES + 1) * PS as u64),
                "{ctx}: {r:?}"
            );
            // The last page that fits works, and the handle is not poisoned.
            let mut last = frame(PS, 5);
            l.write_page(PageId(MAX_PAGES - 1), &mut last).unwrap();
            l.sync().unwrap();
            drop(l);
            let l = o.open(&path).unwrap();
            assert_eq!(read(&*l, PageId(MAX_PAGES - 1)).unwrap(), last, "{ctx}");
            assert_eq!(read(&*l, PageId(3)).unwrap(), written[3], "{ctx}");
            assert!(matches!(l.grow(MAX_PAGES + 1), Err(StorageError::FileTooLarge { .. })));
        }
    }
}
