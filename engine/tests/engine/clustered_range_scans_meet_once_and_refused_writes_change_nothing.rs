//! Goal: a clustered table's range scans and refused writes are exact, on every layer:
//!
//! - a clustered table's range scan, walked from both ends in any interleaving of `next` and
//!   `next_back` (and `.ids()` likewise), yields every row of its range exactly once, in key
//!   order from the front and reverse key order from the back, for bounds included, excluded
//!   or open that fall on held keys, missing keys, mid-leaf and past either end; in the writer
//!   (uncommitted leaves) and in a snapshot; on every layer, with a pool of a few dozen frames;
//! - a refused insert (a held key) and a refused move (`update_by` onto a held key) copy no page
//!   (the pool's copy-on-write counter stands still), change no count, and leave the row as it
//!   was; upserts, moves and inserts keep `row_count`, the tree's entries and `check` in step
//!   with a model, after a commit and after a reopen.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use nvpage::{Column, ColumnType, Database, Error, Layer, ReadOps, Schema, Storage, Value, kind};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("k", ColumnType::I64),
        Column::new("name", ColumnType::VarChar { max_len: 300 }),
    ])
    .unwrap()
    .with_primary_key(&["k"])
    .unwrap()
}

fn name(k: i64, salt: u64) -> String {
    let len = ((k as u64).wrapping_mul(31).wrapping_add(salt * 7)) % 200;
    (0..len).map(|j| char::from(b'a' + ((k as u64 + j + salt) % 26) as u8)).collect()
}

fn open(dir: &std::path::Path, layer: Layer) -> Arc<Database> {
    let b = Database::builder().layer(layer).page_size(4096).pool_bytes(48 * 4096);
    Arc::new(b.open(dir.join("db")).unwrap())
}

fn random_bound(rng: &mut StdRng, max: i64) -> Bound<i64> {
    match rng.random_range(0..5) {
        0 => Bound::Unbounded,
        1 | 2 => Bound::Included(rng.random_range(-3..max + 3)),
        _ => Bound::Excluded(rng.random_range(-3..max + 3)),
    }
}

fn as_values(b: &Bound<i64>) -> Bound<[Value<'static>; 1]> {
    match *b {
        Bound::Included(k) => Bound::Included([Value::I64(k)]),
        Bound::Excluded(k) => Bound::Excluded([Value::I64(k)]),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn slice<'a>(b: &'a Bound<[Value<'static>; 1]>) -> Bound<&'a [Value<'static>]> {
    match b {
        Bound::Included(v) => Bound::Included(&v[..]),
        Bound::Excluded(v) => Bound::Excluded(&v[..]),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Walks `rx`'s range scans from both ends in random interleavings and holds them to `model`.
fn walk_both_ends(
    rx: &impl ReadOps,
    model: &BTreeMap<i64, String>,
    rng: &mut StdRng,
    max: i64,
    what: &str,
) {
    let t = rx.table("t").unwrap();
    let pk = rx.primary_key(&t).unwrap().unwrap();
    for round in 0..150 {
        let (lo, hi) = (random_bound(rng, max), random_bound(rng, max));
        let want: Vec<i64> = match (lo, hi) {
            // BTreeMap::range panics on an empty or inverted range; the scan yields nothing.
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b))
                if a > b
                    || (a == b
                        && !(matches!(lo, Bound::Included(_))
                            && matches!(hi, Bound::Included(_)))) =>
            {
                Vec::new()
            }
            _ => model.range((lo, hi)).map(|(k, _)| *k).collect(),
        };
        let (lo_v, hi_v) = (as_values(&lo), as_values(&hi));
        // How often the front steps: all front, all back, or a mix.
        let p_front = [0.0, 1.0, 0.5, 0.1, 0.9][round % 5];
        let ids = round % 7 == 3;
        let (mut front, mut back) = (Vec::new(), Vec::new());
        if ids {
            let mut scan = rx.index_range(&pk, slice(&lo_v), slice(&hi_v)).unwrap().ids();
            let mut n = 0usize;
            loop {
                let from_front = rng.random_bool(p_front);
                let got = if from_front { scan.next() } else { scan.next_back() };
                match got {
                    Some(id) => {
                        id.unwrap();
                        n += 1;
                        assert!(
                            n <= want.len(),
                            "{what}: ids of {lo:?}..{hi:?} past {}",
                            want.len()
                        );
                    }
                    None => break,
                }
            }
            assert_eq!(n, want.len(), "{what}: ids of {lo:?}..{hi:?}");
            assert!(scan.next().is_none() && scan.next_back().is_none(), "{what}: ids resumed");
            continue;
        }
        let mut scan = rx.index_range(&pk, slice(&lo_v), slice(&hi_v)).unwrap();
        loop {
            let from_front = rng.random_bool(p_front);
            let got = if from_front { scan.next() } else { scan.next_back() };
            let Some(g) = got else { break };
            let g = g.unwrap();
            let row = g.row().unwrap();
            let k = row.get_named::<kind::I64>("k").unwrap();
            let n = row.get_named::<kind::Str>("name").unwrap();
            assert_eq!(Some(n), model.get(&k).map(String::as_str), "{what}: row {k}'s name");
            if from_front {
                front.push(k)
            } else {
                back.push(k)
            }
            assert!(front.len() + back.len() <= want.len(), "{what}: {lo:?}..{hi:?} repeats a row");
        }
        assert!(scan.next().is_none() && scan.next_back().is_none(), "{what}: resumed");
        back.reverse();
        front.extend(back);
        assert_eq!(front, want, "{what}: {lo:?}..{hi:?} from both ends (front share {p_front})");
    }
}

fn both_ends(layer: Layer, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), layer);
    const MAX: i64 = 5000;
    let mut model = BTreeMap::new();
    let mut w = db.begin_write().unwrap();
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    // Inserted in random order: leaves filled anywhere in their pages.
    let mut keys: Vec<i64> = (0..MAX).collect();
    keys.shuffle(&mut rng);
    for &k in &keys {
        let n = name(k, 0);
        w.insert(&t, &[Value::I64(k), Value::Str(&n)]).unwrap();
        model.insert(k, n);
    }
    w.commit().unwrap();
    // Holes: runs of keys gone (leaves emptied and unlinked), and single keys.
    let mut w = db.begin_write().unwrap();
    let pk = w.primary_key(&t).unwrap().unwrap();
    for _ in 0..15 {
        let at = rng.random_range(0..MAX);
        for k in at..(at + rng.random_range(1..200)).min(MAX) {
            if model.remove(&k).is_some() {
                assert!(w.delete_by(&pk, &[Value::I64(k)]).unwrap());
            }
        }
    }
    for _ in 0..300 {
        let k = rng.random_range(0..MAX);
        if model.remove(&k).is_some() {
            assert!(w.delete_by(&pk, &[Value::I64(k)]).unwrap());
        }
    }
    w.commit().unwrap();
    let committed = model.clone();
    let snap = db.snapshot().unwrap();
    // The writer's own leaves, changed and not committed: upserts that grow rows (splits).
    let mut w = db.begin_write().unwrap();
    for _ in 0..400 {
        let k = rng.random_range(0..MAX);
        let n = name(k, 1 + rng.random_range(0..5));
        w.upsert(&pk, &[Value::I64(k), Value::Str(&n)]).unwrap();
        model.insert(k, n);
    }
    walk_both_ends(&w, &model, &mut rng, MAX, &format!("{layer} seed {seed}: the writer"));
    // The snapshot on a thread of its own (this one holds the write transaction), while the
    // writer's changed leaves stand.
    let mut rng2 = StdRng::seed_from_u64(seed + 100);
    std::thread::scope(|s| {
        s.spawn(|| {
            let what = format!("{layer} seed {seed}: a snapshot");
            walk_both_ends(&snap, &committed, &mut rng2, MAX, &what);
        });
    });
    w.commit().unwrap();
    let rx = db.begin_read().unwrap();
    walk_both_ends(&rx, &model, &mut rng, MAX, &format!("{layer} seed {seed}: committed"));
}

#[test]
fn clustered_range_scans_from_both_ends_yield_each_row_once() {
    for layer in Layer::compiled() {
        for seed in 0..2 {
            both_ends(layer, seed);
        }
    }
}

/// Every row of `t` as `rx` reads it, by a scan.
fn scanned(rx: &impl ReadOps) -> BTreeMap<i64, String> {
    let t = rx.table("t").unwrap();
    let mut all = BTreeMap::new();
    let mut last = None;
    rx.for_each_row(&t, |row| {
        let k = row.get_named::<kind::I64>("k").unwrap();
        assert!(last < Some(k), "a scan out of key order at {k}");
        last = Some(k);
        all.insert(k, row.get_named::<kind::Str>("name").unwrap().to_owned());
        Ok(())
    })
    .unwrap();
    all
}

fn refused(layer: Layer) {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), layer);
    let mut model = BTreeMap::new();
    let mut w = db.begin_write().unwrap();
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    for k in (0..3000).map(|i| i * 2) {
        let n = name(k, 0);
        w.insert(&t, &[Value::I64(k), Value::Str(&n)]).unwrap();
        model.insert(k, n);
    }
    w.commit().unwrap();

    // A fresh transaction: nothing of the tree is the writer's yet, so any page written would
    // be copied first.
    let mut w = db.begin_write().unwrap();
    let pk = w.primary_key(&t).unwrap().unwrap();
    for k in [0, 2, 1000, 3000, 5996] {
        let before = db.counters().cow_copies;
        let e = w.insert(&t, &[Value::I64(k), Value::Str("refused")]).unwrap_err();
        assert!(matches!(e, Error::UniqueViolation { .. }), "{layer}: insert {k}: {e}");
        assert_eq!(
            db.counters().cow_copies,
            before,
            "{layer}: a refused insert of {k} copied a page"
        );
        assert_eq!(w.row_count(&t).unwrap(), model.len() as u64, "{layer}: after refused {k}");
        // A row moved onto a held key: refused before the old row goes.
        let before = db.counters().cow_copies;
        let e = w.update_by(&pk, &[Value::I64(k)], &[("k", Value::I64(k + 2))]).unwrap_err();
        assert!(matches!(e, Error::UniqueViolation { .. }), "{layer}: move {k}: {e}");
        assert_eq!(
            db.counters().cow_copies,
            before,
            "{layer}: a refused move of {k} copied a page"
        );
    }
    // The transaction goes on, and a refused insert left every row as it was.
    assert_eq!(scanned(&w), model, "{layer}: after the refused calls");
    // Upserts of held keys (replace, no count), of new keys (count), moves (no count),
    // and inserts of odd keys, many in one leaf (splits).
    for k in (0..6000).step_by(7) {
        let n = name(k, 3);
        w.upsert(&pk, &[Value::I64(k), Value::Str(&n)]).unwrap();
        model.insert(k, n);
    }
    for k in (1..600).step_by(2) {
        if k % 5 == 0 || model.contains_key(&k) {
            continue;
        }
        let n = name(k, 4);
        w.insert(&t, &[Value::I64(k), Value::Str(&n)]).unwrap();
        model.insert(k, n);
    }
    for k in (2000..2400).step_by(2) {
        let to = k + 100_000;
        if model.contains_key(&k) {
            assert!(
                w.update_by(&pk, &[Value::I64(k)], &[("k", Value::I64(to))]).unwrap().is_some()
            );
            let n = model.remove(&k).unwrap();
            model.insert(to, n);
        }
    }
    assert_eq!(w.row_count(&t).unwrap(), model.len() as u64, "{layer}: the writer's count");
    assert_eq!(scanned(&w), model, "{layer}: the writer's rows");
    // A refused insert after the leaves are the writer's: still nothing changes.
    let e = w.insert(&t, &[Value::I64(4), Value::Str("again")]).unwrap_err();
    assert!(matches!(e, Error::UniqueViolation { .. }), "{e}");
    assert_eq!(w.row_count(&t).unwrap(), model.len() as u64);
    w.commit().unwrap();
    let report = db.check().unwrap();
    assert!(report.damage.is_empty(), "{layer}: {:?}", report.damage);
    let x = report.indexes.iter().find(|x| x.name == "t_pkey").unwrap();
    assert_eq!(
        (x.entries_in_catalog, x.entries_found),
        (model.len() as u64, model.len() as u64),
        "{layer}: the tree's entries"
    );
    drop(db);
    let db = open(dir.path(), layer);
    let rx = db.begin_read().unwrap();
    let t = rx.table("t").unwrap();
    assert_eq!(rx.row_count(&t).unwrap(), model.len() as u64, "{layer}: reopened count");
    assert_eq!(scanned(&rx), model, "{layer}: reopened rows");
}

#[test]
fn a_refused_clustered_insert_or_move_writes_nothing_and_counts_stay_exact() {
    for layer in Layer::compiled() {
        refused(layer);
    }
}
