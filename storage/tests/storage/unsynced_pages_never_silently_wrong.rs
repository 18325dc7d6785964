//! Goal: a page written but not synced when the power goes comes back, after reopen, as its old
//! version, its new version, or a torn page that reports `ChecksumMismatch` naming it — never as
//! silently wrong bytes — while pages not written since the last sync come back exactly. Over the
//! seeds, all three outcomes occur, so the check is not vacuous. Runs for every layer, on disk and
//! on tmpfs, with every tear unit (512 B sector, 64 B line, 8 B word).

#![forbid(unsafe_code)]

use crate::common;

use common::{fill, frame, media, opts, read, read_in_place, sealed};
use nvpage_storage::sim::{Sim, Tear};
use nvpage_storage::{Layer, OpenOptions, PageId, StorageError};

const PS: usize = 8192;
const PAGES: u64 = 12;
const REWRITTEN: u64 = 6;
const SEEDS: u64 = 10;

#[derive(Default, Debug)]
struct Outcomes {
    old: u32,
    new: u32,
    torn: u32,
}

#[test]
fn unsynced_pages_are_old_new_or_detected() {
    for medium in media() {
        for layer in Layer::ALL {
            let mut seen = Outcomes::default();
            for seed in 0..SEEDS {
                let tear = Tear::ALL[(seed % 3) as usize];
                let ctx = format!("{} {layer} seed {seed} {tear:?}", medium.name);
                let path = medium.path(&format!("{layer}-{seed}.db"));
                let sim = Sim::attach(medium.dir.path(), seed);
                let l = opts(layer, PS).create(&path).unwrap();
                let old = fill(&*l, PAGES, seed * 1000);
                let mut new = Vec::new();
                for id in 1..=REWRITTEN {
                    // Odd pages are rewritten whole, so nearly every unit differs and the page
                    // nearly always tears; even pages get a one-byte edit near the start, so
                    // only one or two units differ and old and new survive often too.
                    let mut f = if id % 2 == 1 {
                        frame(PS, seed * 1000 + 500 + id)
                    } else {
                        let mut f = old[id as usize].clone();
                        f[20] ^= 0xFF;
                        f
                    };
                    l.write_page(PageId(id), &mut f).unwrap();
                    new.push(f);
                }
                drop(l);
                sim.crash(tear);
                let reader = Layer::ALL[(layer as usize + seed as usize) % 3];
                let l = OpenOptions::new(reader).open(&path).unwrap();
                assert_eq!(l.file().page_count(), PAGES, "{ctx}");
                for id in 1..PAGES {
                    let got = read(&*l, PageId(id));
                    let in_place = read_in_place(&*l, PageId(id));
                    if id > REWRITTEN {
                        assert_eq!(got.unwrap(), old[id as usize], "{ctx}: untouched page {id}");
                        continue;
                    }
                    match (got, in_place) {
                        (Ok(p), Ok(q)) => {
                            assert_eq!(p, q, "{ctx}: read_page and with_page disagree on {id}");
                            if p == old[id as usize] {
                                seen.old += 1;
                            } else if p == sealed(&new[id as usize - 1], PageId(id)) {
                                seen.new += 1;
                            } else {
                                panic!("{ctx}: page {id} verified but is neither version");
                            }
                        }
                        (Err(e), Err(f)) => {
                            for e in [e, f] {
                                assert!(
                                    matches!(e, StorageError::ChecksumMismatch { page, .. }
                                        if page == PageId(id)),
                                    "{ctx}: page {id}: {e:?}"
                                );
                            }
                            seen.torn += 1;
                        }
                        (a, b) => panic!("{ctx}: page {id}: read_page {a:?}, with_page {b:?}"),
                    }
                }
            }
            assert!(
                seen.old > 0 && seen.new > 0 && seen.torn > 0,
                "{} {layer}: outcomes over {SEEDS} seeds: {seen:?}",
                medium.name
            );
        }
    }
}
