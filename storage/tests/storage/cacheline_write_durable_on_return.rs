//! Goal: in the cache-line mode (emulated NVM on tmpfs), with flushes or with eADR's fence
//! alone, a page is durable as soon as `write_page` returns: pages and a header written back without any `sync` survive every
//! simulated power loss exactly. The same writes in `msync` mode, also without `sync`, are lost
//! or torn for some seeds, which shows the simulator really drops what was not persisted.

#![forbid(unsafe_code)]

use crate::common;

use common::{frame, opts, read, shm_with_flush};
use nvpage_storage::sim::{Sim, Tear};
use nvpage_storage::{Layer, OpenOptions, PageId, PersistMode, PersistRequest};

const PS: usize = 4096;
const PAGES: u64 = 10;
const SEEDS: u64 = 12;

/// Writes pages and the header without syncing, crashes, and returns whether every page came
/// back exactly.
fn write_crash_reopen(dir: &std::path::Path, layer: Layer, req: PersistRequest, seed: u64) -> bool {
    let path = dir.join(format!("{layer}-{req:?}-{seed}.db"));
    let sim = Sim::attach(dir, seed);
    let l = OpenOptions { persistence: req, ..opts(layer, PS) }.create(&path).unwrap();
    let want_mode =
        if req.wants_cache_lines() { PersistMode::EmulatedNvm } else { PersistMode::Msync };
    assert_eq!(l.file().durability().mode, want_mode);
    l.grow(PAGES).unwrap();
    let mut pages = vec![Vec::new()];
    for id in 1..PAGES {
        let mut f = frame(PS, seed * 100 + id);
        l.write_page(PageId(id), &mut f).unwrap();
        pages.push(f);
    }
    l.write_header().unwrap();
    // Rewrite a page too: the second version is the one that must survive.
    let mut f = frame(PS, seed * 100 + 99);
    l.write_page(PageId(3), &mut f).unwrap();
    pages[3] = f;
    drop(l);
    sim.crash(Tear::ALL[(seed % 3) as usize]);
    let Ok(l) = OpenOptions::new(layer).open(&path) else { return false };
    l.file().page_count() == PAGES
        && (1..PAGES).all(|id| read(&*l, PageId(id)).is_ok_and(|p| p == pages[id as usize]))
}

#[test]
fn cache_line_writes_are_durable_on_return() {
    let Some(m) = shm_with_flush() else { return };
    for layer in [Layer::Se1, Layer::Se2] {
        for seed in 0..SEEDS {
            // eADR's fence-only path is durable on return just the same (on a platform with
            // eADR: the simulator models the fence as what persists).
            for req in [PersistRequest::CacheLine, PersistRequest::Eadr] {
                assert!(
                    write_crash_reopen(m.dir.path(), layer, req, seed),
                    "{layer} seed {seed}: a page written with {req:?} was lost"
                );
            }
        }
        let msync_all_survived = (0..SEEDS)
            .filter(|&seed| write_crash_reopen(m.dir.path(), layer, PersistRequest::Auto, seed))
            .count();
        assert!(
            msync_all_survived < SEEDS as usize,
            "{layer}: unsynced msync-mode writes survived every crash"
        );
    }
}
