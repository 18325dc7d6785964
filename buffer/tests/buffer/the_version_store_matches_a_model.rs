//! Goal: `Versions` alone, driven as the pool drives it (single thread, so every step is
//! "under the page latch"), against a model: whole and lines versions, a page stored several
//! times in a commit, readers making versions whole at any point (mid-abort included), the byte
//! limit, aborts. Every find equals the model's page at the snapshot or is `TooOld` below the
//! horizon; when nothing is left, the store's bytes are zero.

use std::sync::Arc;

use nvpage_buffer::{FindError, LinesImage, NoVersion, PageImage, Version, Versions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const PAGES: usize = 5;
const LEN: usize = 512;
const LINE: usize = 64;

fn find(v: &Versions, p: usize, s: u64, file: &[u8]) -> Result<Vec<u8>, NoVersion> {
    v.find(p as u64, s, |buf| -> Result<(), ()> {
        buf.copy_from_slice(file);
        Ok(())
    })
    .map(|i| i.page().to_vec())
    .map_err(|e| match e {
        FindError::NoVersion(n) => n,
        FindError::Current(()) => unreachable!(),
    })
}

fn run(seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let v = Versions::new(if rng.random_bool(0.5) { u64::MAX } else { rng.random_range(0..4000) });
    let mut file = vec![vec![0u8; LEN]; PAGES];
    let mut stamp = [0u64; PAGES];
    let mut history: Vec<Vec<Vec<u8>>> = vec![file.clone()];
    let mut readers: Vec<u64> = Vec::new();
    let mut committed = 0u64;
    let check = |v: &Versions,
                 readers: &[u64],
                 file: &[Vec<u8>],
                 stamp: &[u64; PAGES],
                 history: &[Vec<Vec<u8>>],
                 rng: &mut StdRng,
                 at: &str| {
        for &s in readers {
            let p = rng.random_range(0..PAGES);
            if stamp[p] <= s {
                assert_eq!(file[p], history[s as usize][p], "seed {seed} {at}: file");
                continue;
            }
            match find(v, p, s, &file[p]) {
                Ok(got) => assert!(
                    got == history[s as usize][p],
                    "seed {seed} {at}: snapshot {s}, page {p}: wrong bytes"
                ),
                Err(NoVersion::TooOld { horizon }) => {
                    assert!(s < horizon, "seed {seed} {at}: s {s} horizon {horizon}")
                }
                Err(e) => panic!("seed {seed} {at}: snapshot {s}, page {p}: {e:?}"),
            }
        }
    };
    for _ in 0..200 {
        let pending = committed + 1;
        let mut stamped: Vec<(usize, u64)> = Vec::new();
        for _ in 0..rng.random_range(1..12) {
            let p = rng.random_range(0..PAGES);
            // A store of page p: some lines change.
            let old = file[p].clone();
            let mut new = old.clone();
            let mut changed = Vec::new();
            for l in 0..LEN / LINE {
                if rng.random_range(0..3) == 0 {
                    for b in &mut new[l * LINE..(l + 1) * LINE] {
                        *b = rng.random();
                    }
                    changed.push(l * LINE..(l + 1) * LINE);
                }
            }
            let version = if rng.random_range(0..8) == 0 {
                Version::Page(PageImage::new(Arc::from(old.clone()), 0))
            } else {
                let mut lines = LinesImage::new(LEN);
                for r in &changed {
                    lines.push(&old, r.clone());
                }
                Version::Lines(lines)
            };
            let first = stamp[p] != pending;
            v.insert(p as u64, pending, version, first);
            if first {
                stamped.push((p, stamp[p]));
                stamp[p] = pending;
            }
            file[p] = new;
            if rng.random_range(0..3) == 0 {
                readers.push(committed);
            }
            check(&v, &readers, &file, &stamp, &history, &mut rng, "store");
            if rng.random_range(0..4) == 0 && !readers.is_empty() {
                readers.swap_remove(rng.random_range(0..readers.len()));
                let oldest = readers.iter().copied().min().unwrap_or(committed);
                v.collect(oldest, committed);
            }
        }
        if rng.random_range(0..4) == 0 {
            // Abort: pages restored one at a time (readers read between), stamps back, versions
            // dropped.
            for &(p, _) in stamped.iter().rev() {
                file[p] = history[committed as usize][p].clone();
                check(&v, &readers, &file, &stamp, &history, &mut rng, "restore");
            }
            for &(p, old) in &stamped {
                stamp[p] = old;
            }
            check(&v, &readers, &file, &stamp, &history, &mut rng, "unstamped");
            v.drop_commit(pending);
        } else {
            committed = pending;
            history.push(file.clone());
            let oldest = readers.iter().copied().min().unwrap_or(committed);
            v.collect(oldest, committed);
        }
        check(&v, &readers, &file, &stamp, &history, &mut rng, "end");
    }
    readers.clear();
    v.collect(committed, committed);
    let st = v.stats();
    assert_eq!((st.versions, st.bytes), (0, 0), "seed {seed}: {st:?}");
}

#[test]
fn versions_alone_match_a_model() {
    for seed in 0..300 {
        run(seed);
    }
}
