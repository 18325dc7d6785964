//! Many power-loss states from one crash point: given a file's durable image (what the storage
//! simulator says was persisted) and its live bytes, build the file a power loss may leave, by
//! seed, as `Sim::crash` does (storage/src/sim/crash.rs): every unit (512 B sector, 64 B line or
//! 8 B word) where the two differ is kept old, taken new, or torn (each aligned 8-byte word of
//! it old or new; words never tear), and growth not yet synced is kept or lost. `Sim::crash`
//! rewrites the one file in place; this makes any number of survivors of the same point, which
//! is what lets the soak count a million crash states without rerunning the workload.
//!
//! [`Space`] counts and enumerates the *distinct* survivors of a file: whatever the tear, a
//! survivor is the durable image (zero-extended) with any subset of its differing 8-byte words
//! taken new, at the durable length or, if the file grew, at the live length. So a point whose
//! files differ in few words has few distinct states, and the soak can tell when it has built
//! every one of them.

use nvpage_storage::sim::Tear;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The distinct survivors of one file (see the module's notes), in a fixed order.
#[derive(Clone, Debug)]
pub struct Space {
    /// The durable image zero-extended to the longer length, and the live bytes extended with it.
    old: Vec<u8>,
    new: Vec<u8>,
    /// The survivors at the durable length, if the file grew (`None` otherwise).
    growth_lost: Option<Family>,
    /// The survivors at the longer length.
    full: Family,
}

/// Survivors of one length: the differing words below it, each old or new.
#[derive(Clone, Debug)]
struct Family {
    len: usize,
    /// Offsets of the 8-byte words (the last may be shorter) where old and new differ.
    words: Vec<usize>,
}

impl Family {
    fn new(old: &[u8], new: &[u8], len: usize) -> Self {
        let words = (0..len)
            .step_by(8)
            .filter(|&w| old[w..(w + 8).min(len)] != new[w..(w + 8).min(len)])
            .collect();
        Self { len, words }
    }

    /// `2^words`, saturating.
    fn count(&self) -> u64 {
        if self.words.len() < 64 { 1 << self.words.len() } else { u64::MAX }
    }
}

impl Space {
    /// The survivors of a file whose durable image is `durable` and live bytes `live`.
    pub fn new(durable: &[u8], live: &[u8]) -> Self {
        let len = live.len().max(durable.len());
        let mut old = durable.to_vec();
        old.resize(len, 0);
        let mut new = old.clone();
        new[..live.len()].copy_from_slice(live);
        let growth_lost =
            (live.len() > durable.len()).then(|| Family::new(&old, &new, durable.len()));
        let full = Family::new(&old, &new, len);
        Self { old, new, growth_lost, full }
    }

    /// How many distinct files a power loss may leave (saturating at `u64::MAX`).
    pub fn count(&self) -> u64 {
        self.growth_lost.as_ref().map_or(0, Family::count).saturating_add(self.full.count())
    }

    /// The 8-byte words where the durable image and the live file differ.
    pub fn differing_words(&self) -> usize {
        self.full.words.len()
    }

    /// Survivor number `index` (taken modulo [`Self::count`]): distinct indices below the
    /// count give distinct files. Bit `k` of the index takes the `k`-th differing word new
    /// (words past the 64th stay old).
    pub fn nth(&self, index: u64) -> Vec<u8> {
        let mut index = index % self.count().max(1);
        let family = match &self.growth_lost {
            Some(lost) if index < lost.count() => lost,
            Some(lost) => {
                index -= lost.count();
                &self.full
            }
            None => &self.full,
        };
        let mut out = self.old[..family.len].to_vec();
        for (k, &w) in family.words.iter().enumerate().take(64) {
            if index >> k & 1 == 1 {
                let end = (w + 8).min(family.len);
                out[w..end].copy_from_slice(&self.new[w..end]);
            }
        }
        out
    }
}

/// The file a power loss leaves, for `seed`.
pub fn survivor(durable: &[u8], live: &[u8], tear: Tear, seed: u64) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(seed);
    let len = if live.len() > durable.len() && rng.random_bool(0.5) {
        durable.len()
    } else {
        live.len().max(durable.len())
    };
    // `old` is the durable image zero-extended; `new` is the live file, or `old` past its end.
    let mut old = durable[..durable.len().min(len)].to_vec();
    old.resize(len, 0);
    let mut new = old.clone();
    let n = live.len().min(len);
    new[..n].copy_from_slice(&live[..n]);
    let mut out = old.clone();
    let unit = tear.bytes();
    for start in (0..len).step_by(unit) {
        let end = (start + unit).min(len);
        if old[start..end] == new[start..end] {
            continue;
        }
        let choice =
            if tear == Tear::Word { rng.random_range(0..2) } else { rng.random_range(0..3) };
        for w in (start..end).step_by(8) {
            let take = match choice {
                0 => false,
                1 => true,
                _ => rng.random_bool(0.5),
            };
            if take {
                let we = (w + 8).min(end);
                out[w..we].copy_from_slice(&new[w..we]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_old_new_or_word_mixes_and_words_never_tear() {
        let durable = vec![0xAAu8; 4096];
        let live = vec![0x55u8; 8192];
        for tear in Tear::ALL {
            let mut lens = std::collections::BTreeSet::new();
            for seed in 0..40 {
                let out = survivor(&durable, &live, tear, seed);
                lens.insert(out.len());
                for w in out.chunks(8) {
                    assert!(w.iter().all(|&b| b == w[0]), "a word tore");
                }
            }
            assert_eq!(lens.into_iter().collect::<Vec<_>>(), vec![4096, 8192]);
        }
    }

    #[test]
    fn a_space_enumerates_exactly_the_survivors_a_crash_can_leave() {
        // Three differing words inside one sector, and growth by one word that is not zero.
        let durable: Vec<u8> = (0..64u8).collect();
        let mut live = durable.clone();
        for w in [0, 3, 7] {
            live[w * 8 + 1] ^= 0xFF;
        }
        live.extend_from_slice(&[9; 8]);
        let space = Space::new(&durable, &live);
        assert_eq!(space.differing_words(), 4);
        assert_eq!(space.count(), 8 + 16, "2^3 at the old length, 2^4 at the new one");
        let listed: std::collections::HashSet<Vec<u8>> =
            (0..space.count()).map(|i| space.nth(i)).collect();
        assert_eq!(listed.len() as u64, space.count(), "every index is a different file");
        for tear in Tear::ALL {
            for seed in 0..200 {
                let s = survivor(&durable, &live, tear, seed);
                assert!(listed.contains(&s), "{tear:?} seed {seed}: a survivor outside the space");
            }
        }
        assert_eq!(Space::new(&durable, &durable).count(), 1);
        let wide = Space::new(&vec![0; 4096], &vec![1; 4096]);
        assert_eq!(wide.count(), u64::MAX, "512 differing words: too many to count");
        assert_ne!(wide.nth(1), wide.nth(2));
    }
}
