//! Partitions: a table's rows split into `count` shares for as many workers, each share named
//! by its index alone, so a plan can name partition `i` of `n` and any thread, task or process
//! that holds the same snapshot reads the same rows for it.

use crate::error::{Error, Result};

/// Partition `index` of `count` of a table: an opaque, deterministic share of its rows. In one
/// snapshot, the same partition of the same table always holds the same rows, and the `count`
/// partitions of a count hold every row of the table exactly once between them.
///
/// For a heap table a partition is a run of its pages in page order (the table's pages split
/// into `count` runs whose page counts differ by at most one); the API promises only the
/// properties above, so that tables kept in other orders can split by other units (a range of
/// keys).
///
/// ```
/// # use nvpage::Partition;
/// let parts: Vec<Partition> = Partition::all(4)?.collect();
/// assert_eq!(parts.len(), 4);
/// assert_eq!((parts[2].index(), parts[2].count()), (2, 4));
/// assert!(Partition::new(4, 4).is_err());
/// # Ok::<(), nvpage::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Partition {
    index: u32,
    count: u32,
}

impl Partition {
    /// The whole table: partition 0 of 1.
    pub const WHOLE: Partition = Partition { index: 0, count: 1 };

    /// Partition `index` of `count`: [`Error::InvalidOption`] unless `index < count` and
    /// `count` fits 32 bits.
    pub fn new(index: usize, count: usize) -> Result<Self> {
        match (u32::try_from(index), u32::try_from(count)) {
            (Ok(index), Ok(count)) if index < count => Ok(Self { index, count }),
            _ => Err(Error::InvalidOption(format!(
                "partition {index} of {count}: the index must be below the count, and the count \
                 at least 1 and below 2^32"
            ))),
        }
    }

    /// The `count` partitions of a count, in order.
    pub fn all(count: usize) -> Result<impl ExactSizeIterator<Item = Partition>> {
        let count32 = u32::try_from(count).ok().filter(|&c| c > 0).ok_or_else(|| {
            Error::InvalidOption(format!("{count} partitions: at least 1 and below 2^32"))
        })?;
        Ok((0..count32).map(move |index| Partition { index, count: count32 }))
    }

    /// Its index.
    pub fn index(self) -> usize {
        self.index as usize
    }

    /// How many partitions its count splits a table into.
    pub fn count(self) -> usize {
        self.count as usize
    }

    /// This partition's share of a heap table whose pages are `runs` (first page, length), in
    /// order: the pages whose position in the table lies in
    /// `[index·P/count, (index+1)·P/count)` for `P` pages in all, as runs.
    pub(crate) fn runs_of(self, runs: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let total: u64 = runs.iter().map(|r| r.1).sum();
        let share = |i: u64| (u128::from(total) * u128::from(i) / u128::from(self.count)) as u64;
        let (from, to) = (share(u64::from(self.index)), share(u64::from(self.index) + 1));
        let mut out = Vec::new();
        let mut seen = 0;
        for &(start, len) in runs {
            let (lo, hi) = (from.max(seen), to.min(seen + len));
            if lo < hi {
                out.push((start + lo - seen, hi - lo));
            }
            seen += len;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The partitions of every count from 1 to 12 cover a table of uneven runs exactly once, in
    /// page order, with shares that differ by at most one page.
    #[test]
    fn partitions_cover_every_page_once() {
        let runs = [(5, 3), (20, 1), (40, 9), (100, 0), (7, 4)];
        let pages: Vec<u64> = runs.iter().flat_map(|&(s, n)| s..s + n).collect();
        for count in 1..=12 {
            let mut seen = Vec::new();
            let mut sizes = Vec::new();
            for p in Partition::all(count).unwrap() {
                let mine: Vec<u64> = p.runs_of(&runs).iter().flat_map(|&(s, n)| s..s + n).collect();
                sizes.push(mine.len());
                seen.extend(mine);
            }
            assert_eq!(seen, pages, "{count} partitions");
            let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(max - min <= 1, "{count} partitions: shares {sizes:?}");
        }
        assert!(Partition::WHOLE.runs_of(&[]).is_empty());
        assert!(Partition::all(0).is_err());
    }
}
