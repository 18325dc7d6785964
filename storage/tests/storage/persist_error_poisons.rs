//! Goal: a failed persist never lets the file pretend its data is safe (fsyncgate). The failing
//! call reports the I/O error; from then on every write, header write-back, growth and sync of
//! that handle is `Poisoned`, while reads still work; after the handle is dropped (even across a
//! simulated power loss) the file reopens, writes again, and every page synced before the failure
//! is intact. Runs for every layer on disk and on tmpfs, and for emulated NVM, where `write_page`
//! itself persists.

#![forbid(unsafe_code)]

use crate::common;

use common::{Medium, fill, frame, media, opts, read};
use nvpage_storage::sim::{Fault, Sim, Tear};
use nvpage_storage::{FileLayer, Layer, OpenOptions, PageId, PersistRequest, SimOp, StorageError};

const PS: usize = 4096;
const PAGES: u64 = 6;

fn poisoned(r: Result<(), StorageError>) -> bool {
    matches!(r, Err(StorageError::Poisoned { .. }))
}

fn assert_poisoned(l: &dyn FileLayer, ctx: &str) {
    assert!(l.file().raw().is_poisoned(), "{ctx}");
    assert!(poisoned(l.write_page(PageId(3), &mut frame(PS, 1))), "{ctx}: write_page");
    assert!(poisoned(l.sync()), "{ctx}: sync");
    assert!(poisoned(l.write_header()), "{ctx}: write_header");
    assert!(poisoned(l.grow(PAGES + 1_000)), "{ctx}: grow");
    assert_eq!(l.file().page_count(), PAGES, "{ctx}: a refused growth changed the page count");
    // Still poisoned after all those refusals: nothing clears it but a reopen.
    assert!(poisoned(l.sync()), "{ctx}: sync again");
}

fn scenario(medium: &Medium, layer: Layer, persistence: PersistRequest, seed: u64) {
    let ctx = format!("{} {layer} {persistence:?} seed {seed}", medium.name);
    let path = medium.path(&format!("{layer}-{persistence:?}-{seed}.db"));
    let sim = Sim::attach(medium.dir.path(), seed);
    let o = OpenOptions { persistence, ..opts(layer, PS) };
    let l = o.create(&path).unwrap();
    let committed = fill(&*l, PAGES, seed);
    let cache_lines = l.file().durability().mode.uses_cache_lines();

    sim.fail(Fault::once(Some(SimOp::Persist), 0));
    let mut changed = frame(PS, seed + 100);
    let w = l.write_page(PageId(2), &mut changed);
    let failed = if cache_lines {
        // The cache-line modes persist inside write_page: that is the call that fails.
        w
    } else {
        w.unwrap();
        l.sync()
    };
    match failed {
        Err(StorageError::Io { source, .. }) => {
            assert_eq!(source.raw_os_error(), Some(libc::EIO), "{ctx}");
        }
        other => panic!("{ctx}: the failing persist returned {other:?}"),
    }
    assert_eq!(sim.counts().injected_failures, 1, "{ctx}");
    assert_poisoned(&*l, &ctx);
    // Reads are not refused: the untouched pages are still there.
    for id in [1, 3, 4, 5] {
        assert_eq!(read(&*l, PageId(id)).unwrap(), committed[id as usize], "{ctx} page {id}");
    }
    drop(l);

    // Power is lost before anything else happens; reopening clears the poison, and every page
    // synced before the failure is intact.
    sim.crash(Tear::Sector);
    let l = o.open(&path).unwrap();
    let ctx = format!("{ctx}, reopened");
    assert!(!l.file().raw().is_poisoned(), "{ctx}");
    assert_eq!(l.file().page_count(), PAGES, "{ctx}");
    for id in [1, 3, 4, 5] {
        assert_eq!(read(&*l, PageId(id)).unwrap(), committed[id as usize], "{ctx} page {id}");
    }
    // Page 2's change was never acknowledged: either version, or detected as torn.
    match read(&*l, PageId(2)) {
        Ok(p) => assert!(
            p == committed[2] || p == common::sealed(&changed, PageId(2)),
            "{ctx}: page 2 is neither version"
        ),
        Err(e) => assert!(
            matches!(e, StorageError::ChecksumMismatch { page: PageId(2), .. }),
            "{ctx}: {e:?}"
        ),
    }

    // The reopened file commits again, across another power loss.
    let mut again = frame(PS, seed + 200);
    l.write_page(PageId(2), &mut again).unwrap();
    l.sync().unwrap();
    drop(l);
    sim.crash(Tear::Sector);
    let l = o.open(&path).unwrap();
    assert_eq!(read(&*l, PageId(2)).unwrap(), again, "{ctx}: page 2 after the second crash");
    for id in [1, 3, 4, 5] {
        assert_eq!(read(&*l, PageId(id)).unwrap(), committed[id as usize], "{ctx} page {id}");
    }
}

#[test]
fn a_failed_persist_poisons_until_reopen() {
    for medium in media() {
        for layer in Layer::ALL {
            for seed in 0..4 {
                scenario(&medium, layer, PersistRequest::Auto, seed);
            }
        }
        if medium.is_memory() {
            for layer in [Layer::Se1, Layer::Se2] {
                for seed in 0..4 {
                    scenario(&medium, layer, PersistRequest::CacheLine, seed);
                }
            }
        }
    }
}
