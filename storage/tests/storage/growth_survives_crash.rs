//! Goal: growth is crash-safe. A file grown in rounds (each round: grow past the space allocated
//! ahead, write the new pages and rewrite some old ones, write the header back, sync) loses
//! nothing to a simulated power loss that strikes while the next round's pages are being written
//! past the durable page count, whatever the seed and tear unit: the page count and every synced
//! page come back exactly, through whichever layer reopens the file, and the pages of the
//! interrupted round are out of range.

#![forbid(unsafe_code)]

use crate::common;

use common::{Medium, frame, media, opts, read, sealed};
use nvpage_storage::sim::{Sim, Tear};
use nvpage_storage::{FileLayer, Layer, OpenOptions, PageId};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Enough pages that the rounds pass growth's 1 MiB allocation ahead.
const PS: usize = 16384;
const ROUNDS: u64 = 3;
const PAGES_PER_ROUND: u64 = 25;
const SEEDS: u64 = 6;

fn check(l: &dyn FileLayer, committed: &[Vec<u8>], ctx: &str) {
    assert_eq!(l.file().page_count(), committed.len() as u64, "{ctx}: page count");
    for (id, want) in committed.iter().enumerate().skip(1) {
        let got = read(l, PageId(id as u64)).unwrap_or_else(|e| panic!("{ctx} page {id}: {e}"));
        assert!(got == *want, "{ctx}: page {id} differs after the crash");
    }
}

fn campaign(medium: &Medium, first: Layer, seed: u64) {
    let tear = Tear::ALL[(seed % 3) as usize];
    let path = medium.path(&format!("{first}-{seed}.db"));
    let sim = Sim::attach(medium.dir.path(), seed);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut committed: Vec<Vec<u8>> = vec![Vec::new()];
    let mut l = opts(first, PS).create(&path).unwrap();
    for round in 0..ROUNDS {
        let ctx = format!("{} {first} seed {seed} {tear:?} round {round}", medium.name);
        let count = committed.len() as u64 + PAGES_PER_ROUND;
        l.grow(count).unwrap();
        for id in committed.len() as u64..count {
            let mut f = frame(PS, rng.random());
            l.write_page(PageId(id), &mut f).unwrap();
            committed.push(f);
        }
        for _ in 0..2 {
            let id = rng.random_range(1..committed.len());
            let mut f = frame(PS, rng.random());
            l.write_page(PageId(id as u64), &mut f).unwrap();
            committed[id] = sealed(&f, PageId(id as u64));
        }
        l.write_header().unwrap();
        l.sync().unwrap();
        // The next round is under way when the power goes: grown, pages written past the
        // durable page count, nothing synced.
        l.grow(count + 4).unwrap();
        for id in count..count + 4 {
            l.write_page(PageId(id), &mut frame(PS, rng.random())).unwrap();
        }
        drop(l);
        let report = sim.crash(tear);
        assert!(report.differing_units > 0, "{ctx}: the unsynced pages reached the crash");
        let next = Layer::ALL[(first as usize + round as usize + 1) % 3];
        l = OpenOptions::new(next).open(&path).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        check(&*l, &committed, &format!("{ctx}, reopened by {next}"));
        let past = PageId(count);
        assert!(read(&*l, past).is_err(), "{ctx}: unsynced growth is not visible");
    }
    assert!(
        std::fs::metadata(&path).unwrap().len() > (1 << 20) + PS as u64,
        "the campaign grew past the allocation ahead"
    );
}

#[test]
fn synced_growth_survives_power_loss() {
    for medium in media() {
        for layer in Layer::ALL {
            for seed in 0..SEEDS {
                campaign(&medium, layer, seed);
            }
        }
    }
}
