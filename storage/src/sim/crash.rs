//! Building the file that survives a simulated power loss.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{Tracked, read_all};

/// The unit in which unpersisted bytes survive or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tear {
    /// 512 B sectors, as a disk writes them; a torn sector mixes old and new 8-byte words.
    Sector,
    /// 64 B cache lines, as NVM receives them; a torn line mixes old and new 8-byte words.
    Line,
    /// Aligned 8 B words, the failure-atomic unit of a store: kept or taken, never torn.
    Word,
}

impl Tear {
    /// The unit's size in bytes.
    pub fn bytes(self) -> usize {
        match self {
            Tear::Sector => 512,
            Tear::Line => 64,
            Tear::Word => 8,
        }
    }

    /// All three, for tests that sweep them.
    pub const ALL: [Tear; 3] = [Tear::Sector, Tear::Line, Tear::Word];
}

/// What a crash did, summed over the followed files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// Files rewritten.
    pub files: u64,
    /// Units where live and durable differed.
    pub differing_units: u64,
    /// Of those, units that kept their durable (old) bytes.
    pub kept_old: u64,
    /// Units that took their live (new) bytes.
    pub took_new: u64,
    /// Units torn between old and new.
    pub torn: u64,
    /// Files whose unsynced growth was lost.
    pub growth_lost: u64,
}

impl CrashReport {
    pub(super) fn add(&mut self, r: &CrashReport) {
        self.files += r.files;
        self.differing_units += r.differing_units;
        self.kept_old += r.kept_old;
        self.took_new += r.took_new;
        self.torn += r.torn;
        self.growth_lost += r.growth_lost;
    }
}

/// A 64-bit mix of the simulator seed, the crash number and the file index (splitmix64 rounds).
pub(super) fn mix(seed: u64, crash: u64, file: u64) -> u64 {
    let mut z =
        seed ^ crash.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ file.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Chooses, for each unit where `live` and `durable` differ, old, new or torn. Pure, so the
/// simulator's own tests can check it byte by byte.
pub fn survivor(
    durable: &[u8],
    live: &[u8],
    tear: Tear,
    rng: &mut impl Rng,
) -> (Vec<u8>, CrashReport) {
    let mut report = CrashReport { files: 1, ..CrashReport::default() };
    let len = if live.len() > durable.len() && !rng.random_bool(0.5) {
        report.growth_lost = 1;
        durable.len()
    } else {
        live.len().max(durable.len())
    };
    let old = |i: usize| durable.get(i).copied().unwrap_or(0);
    let new = |i: usize| live.get(i).copied().unwrap_or_else(|| old(i));
    let mut out: Vec<u8> = (0..len).map(old).collect();
    let unit = tear.bytes();
    let mut start = 0;
    while start < len {
        let end = (start + unit).min(len);
        if (start..end).any(|i| old(i) != new(i)) {
            report.differing_units += 1;
            let choice =
                if tear == Tear::Word { rng.random_range(0..2) } else { rng.random_range(0..3) };
            match choice {
                0 => report.kept_old += 1,
                1 => {
                    report.took_new += 1;
                    (start..end).for_each(|i| out[i] = new(i));
                }
                _ => {
                    report.torn += 1;
                    let mut w = start;
                    while w < end {
                        let we = (w + 8).min(end);
                        if rng.random_bool(0.5) {
                            (w..we).for_each(|i| out[i] = new(i));
                        }
                        w = we;
                    }
                }
            }
        }
        start = end;
    }
    (out, report)
}

impl Tracked {
    /// Rewrites the file as the survivor of a power loss and makes that the durable image.
    pub(super) fn crash(&self, seed: u64, tear: Tear) -> io::Result<CrashReport> {
        let f = OpenOptions::new().read(true).write(true).open(&self.path)?;
        assert_unlocked(&f, &self.path);
        let mut inner = self.inner.lock();
        let live = read_all(&f)?;
        let mut rng = StdRng::seed_from_u64(seed);
        let (out, report) = survivor(&inner.durable, &live, tear, &mut rng);
        f.set_len(out.len() as u64)?;
        f.write_all_at(&out, 0)?;
        f.sync_all()?;
        inner.durable = out;
        Ok(report)
    }
}

fn assert_unlocked(f: &File, path: &std::path::Path) {
    // SAFETY: flock only reads its integer arguments.
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    assert!(
        rc == 0,
        "Sim::crash: {} is still open; drop every handle before simulating a power loss",
        path.display()
    );
    // SAFETY: as above; releases the probe lock.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_UN) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(seed: u64) -> StdRng {
        StdRng::seed_from_u64(seed)
    }

    #[test]
    fn identical_images_survive_unchanged() {
        let d = vec![5u8; 4096];
        let (out, r) = survivor(&d, &d, Tear::Sector, &mut rng(1));
        assert_eq!(out, d);
        assert_eq!(r.differing_units, 0);
    }

    #[test]
    fn every_unit_is_old_new_or_a_word_mix() {
        for tear in Tear::ALL {
            for seed in 0..50 {
                let durable = vec![0xAAu8; 4096];
                let live = vec![0x55u8; 4096];
                let (out, r) = survivor(&durable, &live, tear, &mut rng(seed));
                assert_eq!(out.len(), 4096);
                assert_eq!(r.differing_units as usize, 4096 / tear.bytes());
                assert_eq!(r.kept_old + r.took_new + r.torn, r.differing_units);
                if tear == Tear::Word {
                    assert_eq!(r.torn, 0, "8-byte words never tear");
                }
                // Within every 8-byte word, all old or all new: never a mix inside a word.
                for w in out.chunks(8) {
                    assert!(w.iter().all(|&b| b == w[0]), "seed {seed}: torn inside a word");
                }
                for (u, chunk) in out.chunks(tear.bytes()).enumerate() {
                    let all_old = chunk.iter().all(|&b| b == 0xAA);
                    let all_new = chunk.iter().all(|&b| b == 0x55);
                    assert!(all_old || all_new || tear != Tear::Word, "unit {u}");
                }
            }
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_survivor() {
        let durable: Vec<u8> = (0..8192u32).map(|i| i as u8).collect();
        let live: Vec<u8> = (0..8192u32).map(|i| (i * 3) as u8).collect();
        let a = survivor(&durable, &live, Tear::Line, &mut rng(42));
        let b = survivor(&durable, &live, Tear::Line, &mut rng(42));
        assert_eq!(a, b);
        let c = survivor(&durable, &live, Tear::Line, &mut rng(43));
        assert_ne!(a.0, c.0);
    }

    #[test]
    fn only_differing_units_change_and_kinds_all_occur() {
        let durable = vec![1u8; 512 * 64];
        let mut live = durable.clone();
        for s in (0..64).step_by(2) {
            live[s * 512 + 100] = 2;
        }
        let (out, r) = survivor(&durable, &live, Tear::Sector, &mut rng(7));
        assert_eq!(r.differing_units, 32);
        for s in (1..64).step_by(2) {
            assert!(out[s * 512..(s + 1) * 512].iter().all(|&b| b == 1));
        }
        assert!(r.kept_old > 0 && r.took_new > 0 && r.torn > 0, "{r:?}");
    }

    #[test]
    fn unsynced_growth_may_be_lost_or_kept() {
        let durable = vec![1u8; 4096];
        let live = vec![1u8; 8192];
        let lens: std::collections::BTreeSet<usize> =
            (0..32).map(|s| survivor(&durable, &live, Tear::Sector, &mut rng(s)).0.len()).collect();
        assert_eq!(lens.into_iter().collect::<Vec<_>>(), vec![4096, 8192]);
    }
}
