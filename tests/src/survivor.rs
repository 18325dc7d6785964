//! Many power-loss states from one crash point: given a file's durable image (what the storage
//! simulator says was persisted) and its live bytes, build the file a power loss may leave, by
//! seed, as `Sim::crash` does (storage/src/sim/crash.rs): every unit (512 B sector, 64 B line or
//! 8 B word) where the two differ is kept old, taken new, or torn (each aligned 8-byte word of
//! it old or new; words never tear), and growth not yet synced is kept or lost. `Sim::crash`
//! rewrites the one file in place; this makes any number of survivors of the same point, which
//! is what lets the soak count a million crash states without rerunning the workload.

use nvpage_storage::sim::Tear;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The number of units where `durable` and `live` differ (the crash point's "width").
pub fn differing_units(durable: &[u8], live: &[u8], tear: Tear) -> usize {
    let len = durable.len().max(live.len());
    let at = |b: &[u8], i: usize| b.get(i).copied().unwrap_or(0);
    (0..len.div_ceil(tear.bytes()))
        .filter(|u| {
            let s = u * tear.bytes();
            (s..(s + tear.bytes()).min(len)).any(|i| at(durable, i) != at(live, i))
        })
        .count()
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
        assert_eq!(differing_units(&durable, &live, Tear::Sector), 16);
        assert_eq!(differing_units(&durable, &durable, Tear::Word), 0);
    }
}
