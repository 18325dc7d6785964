//! Goal: a table scan walks its pages from either end, on every layer, with 4 KiB pages and a
//! pool of a few dozen frames (so large scans cycle through their ring of frames):
//! - a clustered table's scan reversed, each leaf's rows reversed, reads its rows in descending
//!   key order: the forward scan's rows reversed, and a map of the rows by key walked backwards,
//!   rows spilled to overflow pages included; a page's reverse fold and its located rows
//!   reversed read the same;
//! - pages taken from both ends in any interleaving of `next` and `next_back` meet: every page,
//!   and so every row, is yielded once, and then neither end yields more;
//! - a partition's scan reversed yields the pages its forward scan yields, reversed, and the
//!   partitions taken last to first, each reversed, read the whole table backwards;
//! - a heap table's scan reversed yields its forward scan's pages and rows, reversed;
//! - a reverse scan held across a writer's commits (which split, empty and rewrite the leaves it
//!   has yet to read) reads the snapshot it began in, and only that;
//! - in the write transaction, a reverse scan reads its own uncommitted changes.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use nvpage::{
    Column, ColumnType, Database, Layer, Partition, ReadOps, RowId, RowPlaces, Scan, Schema,
    Storage, Value, kind,
};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

const PAGE: u64 = 4096;

/// A row too long to stay in a 4 KiB leaf with its key (more than a quarter of the page) is
/// spilled to overflow pages.
const SPILLS_PAST: usize = PAGE as usize / 4;

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("k", ColumnType::I64),
        Column::new("name", ColumnType::VarChar { max_len: 3900 }),
    ])
    .unwrap()
    .with_primary_key(&["k"])
    .unwrap()
}

fn open(dir: &std::path::Path, layer: Layer) -> Arc<Database> {
    let b = Database::builder().layer(layer).page_size(PAGE).pool_bytes(48 * PAGE);
    Arc::new(b.open(dir.join("db")).unwrap())
}

/// Key `k`'s name of `len` letters, which depend on `k` and `salt`.
fn name(k: i64, len: usize, salt: u64) -> String {
    let base = k.rem_euclid(26) as u64 + salt;
    (0..len as u64).map(|j| char::from(b'a' + ((base + j) % 26) as u8)).collect()
}

/// A name's length: mostly short (dozens of rows to a leaf), one in ten up to a few hundred
/// bytes, and one in twenty spilled.
fn random_len(rng: &mut StdRng) -> usize {
    match rng.random_range(0..20) {
        0 => rng.random_range(SPILLS_PAST + 100..3900),
        1 | 2 => rng.random_range(100..400),
        _ => rng.random_range(0..40),
    }
}

type Model = BTreeMap<i64, String>;

/// A clustered table `t` of about `n` keys inserted in random order (its leaves out of page
/// order), with runs of keys deleted (leaves emptied) and some rows grown into and shrunk out of
/// overflow pages, committed; returns its rows.
fn clustered(db: &Database, rng: &mut StdRng, n: i64) -> Model {
    let mut model = Model::new();
    let mut w = db.begin_write().unwrap();
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    let mut keys: Vec<i64> = (0..n).collect();
    keys.shuffle(rng);
    for &k in &keys {
        let v = name(k, random_len(rng), 0);
        w.insert(&t, &[Value::I64(k), Value::Str(&v)]).unwrap();
        model.insert(k, v);
    }
    w.commit().unwrap();
    let mut w = db.begin_write().unwrap();
    let pk = w.primary_key(&t).unwrap().unwrap();
    for _ in 0..6 {
        let at = rng.random_range(0..n);
        for k in at..(at + rng.random_range(1..120)).min(n) {
            if model.remove(&k).is_some() {
                assert!(w.delete_by(&pk, &[Value::I64(k)]).unwrap());
            }
        }
    }
    for _ in 0..n / 10 {
        let k = rng.random_range(0..n);
        if model.contains_key(&k) {
            let v = name(k, random_len(rng), 1);
            w.upsert(&pk, &[Value::I64(k), Value::Str(&v)]).unwrap();
            model.insert(k, v);
        }
    }
    w.commit().unwrap();
    assert!(model.values().filter(|v| v.len() > SPILLS_PAST).count() > 5, "rows spilled");
    model
}

/// A page's id and its rows as (key, name), in the order they were read.
type Page = (u64, Vec<(i64, String)>);

/// A clustered table's row as (key, name).
fn row_of(r: &nvpage::RowRef<'_>) -> (i64, String) {
    (r.get_named::<kind::I64>("k").unwrap(), r.get_named::<kind::Str>("name").unwrap().to_owned())
}

/// The page `page` as `Page`, its rows in key order, or from the greatest key down with
/// `backwards`.
fn page_of(page: nvpage::Result<nvpage::ScanPage<'_>>, backwards: bool) -> Page {
    let page = page.unwrap();
    let rows: Vec<_> = if backwards {
        page.rows().rev().map(|r| row_of(&r.unwrap())).collect()
    } else {
        page.rows().map(|r| row_of(&r.unwrap())).collect()
    };
    (page.page_id(), rows)
}

/// Every page of `scan`, first to last, each page's rows in key order.
fn forwards(scan: Scan<'_>) -> Vec<Page> {
    scan.map(|p| page_of(p, false)).collect()
}

/// Every page of `scan`, last to first, each page's rows from the greatest key down.
fn backwards(scan: Scan<'_>) -> Vec<Page> {
    scan.rev().map(|p| page_of(p, true)).collect()
}

/// `pages` reversed, each page's rows too.
fn reversed(pages: &[Page]) -> Vec<Page> {
    pages.iter().rev().map(|(id, rows)| (*id, rows.iter().rev().cloned().collect())).collect()
}

fn rows_of(pages: &[Page]) -> Vec<(i64, String)> {
    pages.iter().flat_map(|p| p.1.iter().cloned()).collect()
}

fn descending(model: &Model) -> Vec<(i64, String)> {
    model.iter().rev().map(|(k, v)| (*k, v.clone())).collect()
}

/// The first place two row lists differ, for a message that does not print 3,000 rows.
fn differ(got: &[(i64, String)], want: &[(i64, String)]) -> String {
    let at = got.iter().zip(want).position(|(g, w)| g != w).unwrap_or(got.len().min(want.len()));
    let short = |r: Option<&(i64, String)>| r.map(|(k, v)| (*k, v.len()));
    format!(
        "{} rows, want {}; first difference at {at}: (key, length) {:?}, want {:?}",
        got.len(),
        want.len(),
        short(got.get(at)),
        short(want.get(at))
    )
}

/// Holds `rx`'s reverse scan of `t` to its forward scan and to `model`: pages, rows, the page
/// fold from the last row, and the located rows reversed.
fn reverse_matches(rx: &impl ReadOps, model: &Model, what: &str) {
    let t = rx.table("t").unwrap();
    let fwd = forwards(rx.scan(&t).unwrap());
    let scan = rx.scan(&t).unwrap();
    assert_eq!(scan.size_hint(), (fwd.len(), Some(fwd.len())), "{what}: size hint");
    let back = backwards(scan);
    assert!(fwd.len() > 48, "{what}: {} leaves, more than the pool's frames", fwd.len());
    let ids: Vec<u64> = back.iter().map(|p| p.0).collect();
    let want_ids: Vec<u64> = fwd.iter().rev().map(|p| p.0).collect();
    assert_eq!(ids, want_ids, "{what}: the leaves reversed");
    let (got, want) = (rows_of(&back), descending(model));
    assert!(got == want, "{what}: reverse scan against the model: {}", differ(&got, &want));
    assert!(back == reversed(&fwd), "{what}: reverse scan against the forward scan");
    let k = t.col::<kind::I64>("k").unwrap();
    let v = t.col::<kind::Str>("name").unwrap();
    let mut places = RowPlaces::new();
    let mut folded = Vec::new();
    let mut located = Vec::new();
    for page in rx.scan(&t).unwrap().rev() {
        page.unwrap()
            .with_rows(|rows| {
                let (kc, vc) = (rows.col(k)?, rows.col(v)?);
                folded = rows.fold_rev(std::mem::take(&mut folded), |mut acc, r| {
                    acc.push((r.get(kc)?, r.get(vc)?.to_owned()));
                    Ok(acc)
                })?;
                let batch = rows.locate(&mut places)?;
                for r in batch.rows().rev() {
                    located.push((r.get(kc)?, r.get(vc)?.to_owned()));
                }
                assert!(batch.ids().rev().all(|id| id == RowId::KEYED));
                Ok::<_, nvpage::Error>(())
            })
            .unwrap();
    }
    assert!(folded == want, "{what}: reverse folds: {}", differ(&folded, &want));
    assert!(located == want, "{what}: located rows reversed: {}", differ(&located, &want));
}

#[test]
fn a_clustered_tables_pages_reversed_give_its_rows_in_descending_key_order() {
    for layer in Layer::compiled() {
        for seed in 0..2 {
            let dir = tempfile::tempdir().unwrap();
            let db = open(dir.path(), layer);
            let mut rng = StdRng::seed_from_u64(seed);
            let mut model = clustered(&db, &mut rng, 3000);
            let what = format!("{layer} seed {seed}");
            reverse_matches(&db.begin_read().unwrap(), &model, &format!("{what}: a reader"));
            // The writer's own leaves, changed and not committed.
            let mut w = db.begin_write().unwrap();
            let pk = w.primary_key(&w.table("t").unwrap()).unwrap().unwrap();
            for _ in 0..300 {
                let k = rng.random_range(0..3500);
                let v = name(k, random_len(&mut rng), 2);
                w.upsert(&pk, &[Value::I64(k), Value::Str(&v)]).unwrap();
                model.insert(k, v);
            }
            reverse_matches(&w, &model, &format!("{what}: the writer"));
        }
    }
}

/// Takes `scan`'s pages from the end `from_back` says, step by step, until both ends are done;
/// returns the pages taken from the front and from the back, each list in the order taken.
fn meet(mut scan: Scan<'_>, mut from_back: impl FnMut() -> bool) -> (Vec<Page>, Vec<Page>) {
    let (mut front, mut back) = (Vec::new(), Vec::new());
    loop {
        let left = scan.size_hint().0;
        let (taken, to) = if from_back() {
            (scan.next_back().map(|p| page_of(p, true)), &mut back)
        } else {
            (scan.next().map(|p| page_of(p, false)), &mut front)
        };
        let Some(page) = taken else {
            assert_eq!(left, 0, "a scan stopped with pages left");
            break;
        };
        to.push(page);
    }
    assert!(scan.next().is_none() && scan.next_back().is_none(), "a scan went on past its end");
    (front, back)
}

/// Holds every way of taking `rx`'s pages of `t` from both ends (each end alone, strictly in
/// turn, in runs of three, at random) to its forward scan.
fn meets_once(rx: &impl ReadOps, rng: &mut StdRng, what: &str) {
    let t = rx.table("t").unwrap();
    let fwd = forwards(rx.scan(&t).unwrap());
    for how in ["the front alone", "the back alone", "in turn", "in runs", "at random"] {
        let mut step = 0u64;
        let from_back = || {
            step += 1;
            match how {
                "the front alone" => false,
                "the back alone" => true,
                "in turn" => step.is_multiple_of(2),
                "in runs" => (step / 3).is_multiple_of(2),
                _ => rng.random_range(0..8) < 5,
            }
        };
        let (front, back) = meet(rx.scan(&t).unwrap(), from_back);
        // The front read the first pages in order, the back the last ones from the end down:
        // together, every page once.
        let mut all = front.clone();
        all.extend(reversed(&back));
        assert!(all == fwd, "{what}: ends taken {how}: {}", differ(&rows_of(&all), &rows_of(&fwd)));
    }
}

#[test]
fn pages_taken_from_both_ends_in_turn_meet_and_yield_every_row_once() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), layer);
        let mut rng = StdRng::seed_from_u64(7);
        let model = clustered(&db, &mut rng, 2000);
        let rx = db.begin_read().unwrap();
        let t = rx.table("t").unwrap();
        assert!(rows_of(&forwards(rx.scan(&t).unwrap())).into_iter().eq(model.into_iter()));
        for seed in 0..4 {
            let mut rng = StdRng::seed_from_u64(seed);
            meets_once(&rx, &mut rng, &format!("{layer} seed {seed}"));
        }
        // A table of one leaf, and an empty one.
        drop(rx);
        let mut w = db.begin_write().unwrap();
        let small = w.create_table_with("small", schema(), Storage::Clustered).unwrap();
        w.create_table_with("empty", schema(), Storage::Clustered).unwrap();
        for k in 0..5 {
            w.insert(&small, &[Value::I64(k), Value::Str("x")]).unwrap();
        }
        w.commit().unwrap();
        let rx = db.begin_read().unwrap();
        let small = rx.table("small").unwrap();
        let (front, back) = meet(rx.scan(&small).unwrap(), || true);
        assert!(front.is_empty() && back.len() == 1, "{layer}: one leaf");
        let keys: Vec<i64> = back[0].1.iter().map(|r| r.0).collect();
        assert_eq!(keys, [4, 3, 2, 1, 0], "{layer}: one leaf's rows reversed");
        // An empty table's scan yields its root, a leaf of no rows, from either end.
        let empty = rx.table("empty").unwrap();
        let fwd = forwards(rx.scan(&empty).unwrap());
        let (front, back) = meet(rx.scan(&empty).unwrap(), || true);
        assert!(front.is_empty() && back == reversed(&fwd), "{layer}: an empty table");
        assert!(rows_of(&back).is_empty() && back.len() <= 1, "{layer}: an empty table");
    }
}

#[test]
fn partitions_read_backwards_hold_the_pages_they_hold_forwards() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), layer);
        let mut rng = StdRng::seed_from_u64(11);
        let model = clustered(&db, &mut rng, 2500);
        let rx = db.begin_read().unwrap();
        let t = rx.table("t").unwrap();
        let leaves = forwards(rx.scan(&t).unwrap()).len();
        for count in [1, 2, 3, 7, leaves - 1, leaves + 5] {
            let mut whole = Vec::new();
            let parts: Vec<Partition> = Partition::all(count).unwrap().collect();
            for &part in parts.iter().rev() {
                let fwd = forwards(rx.scan_partition(&t, part).unwrap());
                let back = backwards(rx.scan_partition(&t, part).unwrap());
                assert!(back == reversed(&fwd), "{layer}: partition {} of {count}", part.index());
                // A partition's rows are a key range, in partition order.
                let (mut front, tail) =
                    meet(rx.scan_partition(&t, part).unwrap(), || rng.random_bool(0.5));
                front.extend(reversed(&tail));
                assert!(
                    front == fwd,
                    "{layer}: partition {} of {count} from both ends",
                    part.index()
                );
                whole.extend(rows_of(&back));
            }
            let want = descending(&model);
            assert!(
                whole == want,
                "{layer}: {count} partitions backwards: {}",
                differ(&whole, &want)
            );
        }
    }
}

#[test]
fn a_heap_tables_pages_reversed_are_its_pages_forwards_reversed() {
    use common::{Row, commit_table, values};
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder()
            .layer(layer)
            .page_size(PAGE)
            .pool_bytes(16 * PAGE)
            .open(dir.path().join("db"))
            .unwrap();
        let note = |k: i64| Some("n".repeat((k as usize * 37) % 700));
        let ids = commit_table(&db, 1500, |k| Row { qty: k as i32, note: note(k) });
        // Holes in pages, and rows moved by growing.
        let mut w = db.begin_write().unwrap();
        let t = w.table("t").unwrap();
        for (_, id) in ids.iter().enumerate().filter(|(k, _)| k % 7 == 3) {
            w.delete(&t, *id).unwrap();
        }
        for (k, id) in ids.iter().enumerate().filter(|(k, _)| k % 11 == 5 && k % 7 != 3) {
            let row = Row { qty: -1, note: Some("g".repeat(900)) };
            w.update(&t, *id, &values(k as i64, &row)).unwrap();
        }
        w.commit().unwrap();
        let rx = db.begin_read().unwrap();
        let t = rx.table("t").unwrap();
        let key = t.col::<kind::I64>("key").unwrap();
        let read = |backwards: bool| -> Vec<(u64, Vec<(RowId, i64)>)> {
            let scan = rx.scan(&t).unwrap();
            let pages: Box<dyn Iterator<Item = _>> =
                if backwards { Box::new(scan.rev()) } else { Box::new(scan) };
            pages
                .map(|p| {
                    let p = p.unwrap();
                    let rows: Box<dyn Iterator<Item = _>> =
                        if backwards { Box::new(p.rows().rev()) } else { Box::new(p.rows()) };
                    let rows = rows.map(|r| r.map(|r| (r.id(), r.get(key).unwrap())));
                    (p.page_id(), rows.collect::<nvpage::Result<Vec<_>>>().unwrap())
                })
                .collect()
        };
        let (fwd, back) = (read(false), read(true));
        assert!(fwd.len() > 16, "{layer}: {} pages, more than the pool's frames", fwd.len());
        let want: Vec<_> = fwd
            .iter()
            .rev()
            .map(|(id, rows)| (*id, rows.iter().rev().copied().collect()))
            .collect();
        assert_eq!(back, want, "{layer}: a heap table reversed");
        // Descending slot order within each page, and every row once.
        for (page, rows) in &back {
            assert!(rows.windows(2).all(|w| w[0].0.slot > w[1].0.slot), "{layer}: page {page}");
        }
        let live = ids.len() - ids.iter().enumerate().filter(|(k, _)| k % 7 == 3).count();
        assert_eq!(back.iter().map(|p| p.1.len()).sum::<usize>(), live, "{layer}: rows");
        // Both ends of a heap scan meet too.
        let mut scan = rx.scan(&t).unwrap();
        let mut seen = Vec::new();
        let mut turn = false;
        while let Some(p) = if turn { scan.next_back() } else { scan.next() } {
            seen.push(p.unwrap().page_id());
            turn = !turn;
        }
        seen.sort_unstable();
        let mut all: Vec<u64> = fwd.iter().map(|p| p.0).collect();
        all.sort_unstable();
        assert_eq!(seen, all, "{layer}: a heap scan from both ends");
    }
}

#[test]
fn a_reverse_scan_beside_a_committing_writer_sees_its_snapshot_only() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), layer);
        let mut rng = StdRng::seed_from_u64(23);
        let model = clustered(&db, &mut rng, 2500);
        let snap = db.snapshot().unwrap();
        let got = std::thread::scope(|s| {
            // Made here, so that a panic on either side drops its ends and frees the other.
            let (to_writer, from_reader) = std::sync::mpsc::channel::<()>();
            let (to_reader, from_writer) = std::sync::mpsc::channel::<()>();
            let snap = &snap;
            let reader = s.spawn(move || {
                let t = snap.table("t").unwrap();
                let mut got = Vec::new();
                let mut scan = snap.scan(&t).unwrap();
                // A page at a time, each dropped before the writer commits (a reader holds only
                // the page it was last given).
                while let Some(page) = scan.next_back() {
                    got.extend(page_of(page, true).1);
                    to_writer.send(()).unwrap();
                    from_writer.recv().unwrap();
                }
                drop(to_writer);
                got
            });
            // Each commit grows, shrinks, spills, moves and deletes rows across the key range,
            // and adds keys past both ends: leaves split, empty and are rewritten.
            let mut round = 0u64;
            while from_reader.recv().is_ok() {
                round += 1;
                let mut w = db.begin_write().unwrap();
                let pk = w.primary_key(&w.table("t").unwrap()).unwrap().unwrap();
                for _ in 0..20 {
                    let k = rng.random_range(-200..2700);
                    if rng.random_bool(0.3) {
                        w.delete_by(&pk, &[Value::I64(k)]).unwrap();
                    } else {
                        let v = name(k, random_len(&mut rng), 3 + round);
                        w.upsert(&pk, &[Value::I64(k), Value::Str(&v)]).unwrap();
                    }
                }
                w.commit().unwrap();
                to_reader.send(()).unwrap();
            }
            reader.join().unwrap()
        });
        let want = descending(&model);
        assert!(got == want, "{layer}: a reverse scan beside commits: {}", differ(&got, &want));
        // The commits were seen by a reader that began after them.
        let rx = db.begin_read().unwrap();
        let now = rows_of(&backwards(rx.scan(&rx.table("t").unwrap()).unwrap()));
        assert!(now != want, "{layer}: the writer changed the table");
        let mut keys: Vec<i64> = now.iter().map(|r| r.0).collect();
        keys.reverse();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{layer}: descending keys after commits");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Any set of keys, rows of any length, taken from the ends in any order: every row once,
    /// the front's in key order and the back's in descending key order.
    #[test]
    fn any_table_read_from_any_mix_of_ends_yields_its_rows_once(
        layer in proptest::sample::select(Layer::compiled()),
        rows in proptest::collection::btree_map(-5000i64..5000, 0usize..3000, 0..400),
        ends in proptest::collection::vec(any::<bool>(), 0..200),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), layer);
        let mut w = db.begin_write().unwrap();
        let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
        let model: Model = rows.iter().map(|(&k, &len)| (k, name(k, len, 0))).collect();
        for (k, v) in &model {
            w.insert(&t, &[Value::I64(*k), Value::Str(v)]).unwrap();
        }
        w.commit().unwrap();
        let rx = db.begin_read().unwrap();
        let mut ends = ends.into_iter();
        let (front, back) = meet(rx.scan(&t).unwrap(), || ends.next().unwrap_or(true));
        let mut all = rows_of(&front);
        all.extend(rows_of(&back).into_iter().rev());
        let want: Vec<(i64, String)> = model.into_iter().collect();
        prop_assert!(all == want, "{}", differ(&all, &want));
    }
}
