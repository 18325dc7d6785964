//! The few operators the plans share, each a thin layer over [`ReadOps::par_fold`]: a filtered
//! projection ([`collect`]), hash aggregation ([`aggregate`], with [`Merge`] for the
//! accumulators), top-N ([`top_n`]), the small dimension tables read whole ([`nations`],
//! [`region_key`]), and `LIKE` patterns ([`like`]). A hash join is a [`collect`] of the smaller
//! side into a [`KeyMap`] (or a dense vector with [`put`](super::put)) probed from the fold of
//! the larger side; a semi-join probes a [`KeySet`]; an anti-join probes it and keeps misses.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hash};

use nvpage::{ReadOps, ReadTxn, RowRef, Table, kind};

use super::{KeyHasher, KeyMap, put};

/// A hash set of integer keys, with [`KeyHasher`].
pub type KeySet<K> = HashSet<K, BuildHasherDefault<KeyHasher>>;

/// The rows of `table` that `f` maps to `Some`, in no particular order, scanned on `threads`
/// workers.
pub fn collect<T, F>(
    rx: &ReadTxn<'_>,
    table: &Table,
    threads: usize,
    f: F,
) -> nvpage::Result<Vec<T>>
where
    T: Send,
    F: Fn(RowRef<'_>) -> nvpage::Result<Option<T>> + Sync,
{
    rx.par_fold(
        table,
        threads,
        Vec::new,
        |mut v, r| {
            if let Some(x) = f(r)? {
                v.push(x);
            }
            Ok(v)
        },
        |mut a, mut b| {
            if a.len() < b.len() {
                std::mem::swap(&mut a, &mut b);
            }
            a.append(&mut b);
            a
        },
    )
}

/// An aggregate's accumulator: starts at `default()`, and two partial results over disjoint
/// rows combine with `merge`.
pub trait Merge: Default + Send {
    /// Adds `other`'s rows to `self`.
    fn merge(&mut self, other: Self);
}

impl Merge for i128 {
    fn merge(&mut self, other: Self) {
        *self += other;
    }
}

impl Merge for i64 {
    fn merge(&mut self, other: Self) {
        *self += other;
    }
}

impl Merge for u64 {
    fn merge(&mut self, other: Self) {
        *self += other;
    }
}

impl<A: Merge, B: Merge> Merge for (A, B) {
    fn merge(&mut self, other: Self) {
        self.0.merge(other.0);
        self.1.merge(other.1);
    }
}

/// `GROUP BY`: for every row `f` maps to `Some((key, value))`, merges `value` into `key`'s
/// accumulator. Each worker aggregates its pages into its own map; the maps are merged, the
/// smaller into the larger.
pub fn aggregate<K, V, F>(
    rx: &ReadTxn<'_>,
    table: &Table,
    threads: usize,
    f: F,
) -> nvpage::Result<KeyMap<K, V>>
where
    K: Hash + Eq + Send,
    V: Merge,
    F: Fn(RowRef<'_>) -> nvpage::Result<Option<(K, V)>> + Sync,
{
    rx.par_fold(
        table,
        threads,
        KeyMap::<K, V>::default,
        |mut m, r| {
            if let Some((k, v)) = f(r)? {
                m.entry(k).or_default().merge(v);
            }
            Ok(m)
        },
        merge_maps,
    )
}

/// Merges two partial aggregates.
pub fn merge_maps<K: Hash + Eq, V: Merge>(
    mut a: KeyMap<K, V>,
    mut b: KeyMap<K, V>,
) -> KeyMap<K, V> {
    if a.len() < b.len() {
        std::mem::swap(&mut a, &mut b);
    }
    for (k, v) in b {
        a.entry(k).or_default().merge(v);
    }
    a
}

/// The first `n` of `rows` in the order `cmp` gives (`ORDER BY ... LIMIT n`): a selection, then
/// a sort of the `n` alone. `cmp` must be a total order for the answer to be deterministic.
pub fn top_n<T>(mut rows: Vec<T>, n: usize, cmp: impl Fn(&T, &T) -> Ordering) -> Vec<T> {
    if n == 0 {
        return Vec::new();
    }
    if rows.len() > n {
        rows.select_nth_unstable_by(n - 1, &cmp);
        rows.truncate(n);
    }
    rows.sort_by(cmp);
    rows
}

/// Nation keys are 0..25.
pub const NATIONS: usize = 25;

/// One row of `nation`.
#[derive(Clone, Debug, Default)]
pub struct Nation {
    /// `n_name`.
    pub name: String,
    /// `n_regionkey`.
    pub region: i32,
}

/// The nations, indexed by key (a key outside 0..25 is left out).
pub fn nations(rx: &ReadTxn<'_>) -> nvpage::Result<Vec<Nation>> {
    let t = rx.table("nation")?;
    let key = t.col::<kind::I32>("n_nationkey")?;
    let name = t.col::<kind::Str>("n_name")?;
    let region = t.col::<kind::I32>("n_regionkey")?;
    let mut out = vec![Nation::default(); NATIONS];
    rx.for_each_row(&t, |r| {
        if let Some(n) = usize::try_from(r.get(key)?).ok().and_then(|k| out.get_mut(k)) {
            *n = Nation { name: r.get(name)?.to_string(), region: r.get(region)? };
        }
        Ok(())
    })?;
    Ok(out)
}

/// The key of the nation named `name`, if any.
pub fn nation_key(nations: &[Nation], name: &str) -> Option<i32> {
    nations.iter().position(|n| n.name == name).map(|i| i as i32)
}

/// The key of the region named `name`, if any.
pub fn region_key(rx: &ReadTxn<'_>, name: &str) -> nvpage::Result<Option<i32>> {
    let t = rx.table("region")?;
    let (key, rname) = (t.col::<kind::I32>("r_regionkey")?, t.col::<kind::Bytes>("r_name")?);
    let mut found = None;
    rx.for_each_row(&t, |r| {
        if r.get(rname)? == name.as_bytes() {
            found = Some(r.get(key)?);
        }
        Ok(())
    })?;
    Ok(found)
}

/// Supplier or customer to nation: a dense map from each row's key (column `key` of `table`) to
/// its nation key (column `nation`) where `keep` accepts the nation, -1 elsewhere — one scan,
/// the first step of Q5, Q7, Q8 and Q9.
pub fn nation_of_rows(
    rx: &ReadTxn<'_>,
    table: &str,
    key: &str,
    nation: &str,
    keep: impl Fn(i32) -> bool,
) -> nvpage::Result<Vec<i8>> {
    let t = rx.table(table)?;
    let (k, n) = (t.col::<kind::I64>(key)?, t.col::<kind::I32>(nation)?);
    let mut out = Vec::new();
    rx.for_each_row(&t, |r| {
        let nk = r.get(n)?;
        if keep(nk) {
            put(&mut out, r.get(k)?, nk as i8, -1);
        }
        Ok(())
    })?;
    Ok(out)
}

/// `LIKE` patterns of the queries: `%` only, no `_`.
pub mod like {
    /// Where `needle` first occurs in `hay` at or after `from`.
    fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
        let hay = hay.get(from..)?;
        if needle.is_empty() {
            return Some(from);
        }
        hay.windows(needle.len()).position(|w| w == needle).map(|i| i + from)
    }

    /// `hay LIKE '%w1%w2%...%'`: the words occur in order without overlapping. Taking each
    /// word's first occurrence after the previous one leaves the most room for the rest, so
    /// this is exact.
    pub fn words_in_order(hay: &[u8], words: &[&[u8]]) -> bool {
        let mut at = 0;
        for w in words {
            match find(hay, w, at) {
                Some(i) => at = i + w.len(),
                None => return false,
            }
        }
        true
    }

    /// `hay LIKE '%needle%'`.
    pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
        find(hay, needle, 0).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns() {
        assert!(like::words_in_order(b"xx special yy requests", &[b"special", b"requests"]));
        assert!(!like::words_in_order(b"requests then special", &[b"special", b"requests"]));
        assert!(!like::words_in_order(b"specialrequest", &[b"special", b"requests"]));
        assert!(like::words_in_order(b"specialrequests", &[b"special", b"requests"]));
        assert!(like::contains(b"dark green metallic", b"green"));
        assert!(!like::contains(b"gree", b"green"));
    }

    #[test]
    fn top_n_selects_then_sorts() {
        let v = vec![5, 1, 9, 3, 7, 2];
        assert_eq!(top_n(v.clone(), 3, |a, b| b.cmp(a)), vec![9, 7, 5]);
        assert_eq!(top_n(v.clone(), 10, |a, b| a.cmp(b)), vec![1, 2, 3, 5, 7, 9]);
        assert!(top_n(v, 0, |a, b| a.cmp(b)).is_empty());
    }

    #[test]
    fn maps_merge_by_key() {
        let mut a: KeyMap<i64, (i128, u64)> = KeyMap::default();
        a.insert(1, (10, 1));
        let mut b: KeyMap<i64, (i128, u64)> = KeyMap::default();
        b.insert(1, (5, 2));
        b.insert(2, (7, 1));
        let m = merge_maps(a, b);
        assert_eq!(m[&1], (15, 3));
        assert_eq!(m[&2], (7, 1));
    }
}
