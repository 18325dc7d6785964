//! Goal: the scan seam a columnar consumer builds on reads what the row-at-a-time API reads. On
//! every layer, for tables with NULLs, deleted rows and rows of many lengths:
//! - the partitions of any count hold every row exactly once, and the same partition read twice
//!   (in one snapshot, even after later commits) holds the same rows;
//! - a column gathered from a page's located rows equals the rows' own getters, NULLs as
//!   `false` in the validity, strings' bytes and ends as Arrow lays them out; a filter keeps
//!   exactly the rows its predicate accepts; a NULL gathered with no validity is `Null`;
//! - a fold over a partition that breaks stops there, with the value it broke with;
//! - the write transaction's partitions read its own changes.

use crate::common;

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use common::{Row, commit_table, open_4k, rng, values};
use nvpage::{Error, Layer, Partition, ReadOps, RowPlaces, kind};
use rand::Rng;

/// What a row holds, as the row-at-a-time getters read it: (qty, price units, note).
type Seen = (i32, i64, Option<String>);

/// Every row of `t` by key, through partition scans of `count` and column gathers; panics if a
/// key is read twice.
fn by_gathers(rx: &impl ReadOps, count: usize) -> nvpage::Result<BTreeMap<i64, Seen>> {
    let t = rx.table("t")?;
    let key = t.col::<kind::I64>("key")?;
    let qty = t.col::<kind::I32>("qty")?;
    let price = t.col::<kind::Units>("price")?;
    let note = t.col::<kind::Bytes>("note")?;
    let mut out = BTreeMap::new();
    let mut places = RowPlaces::new();
    for part in Partition::all(count)? {
        for page in rx.scan_partition(&t, part)? {
            let page = page?;
            let (mut keys, mut qtys, mut prices) = (Vec::new(), Vec::new(), Vec::new());
            let (mut data, mut ends, mut valid) = (Vec::new(), Vec::new(), Vec::new());
            page.with_rows(|rows| {
                let batch = rows.locate(&mut places)?;
                assert_eq!(batch.len(), batch.rows().count());
                batch.gather(rows.col(key)?, &mut keys, None)?;
                batch.gather(rows.col(qty)?, &mut qtys, None)?;
                batch.gather(rows.col(price)?, &mut prices, None)?;
                batch.gather_bytes(rows.col(note)?, &mut data, &mut ends, Some(&mut valid))?;
                // The gathered values are the rows' own, in the batch's order.
                for (i, row) in batch.rows().enumerate() {
                    assert_eq!(row.row().get(key)?, keys[i]);
                    assert_eq!(row.row().id(), batch.ids().nth(i).unwrap());
                }
                Ok::<_, nvpage::Error>(())
            })?;
            let mut start = 0;
            for i in 0..keys.len() {
                let end = ends[i] as usize;
                let text = valid[i].then(|| String::from_utf8(data[start..end].to_vec()).unwrap());
                assert!(valid[i] || start == end, "a NULL appends no bytes");
                start = end;
                let prev = out.insert(keys[i], (qtys[i], prices[i], text));
                assert!(prev.is_none(), "key {} read twice ({count} partitions)", keys[i]);
            }
        }
    }
    Ok(out)
}

/// Every row of `t` by key, through the row-at-a-time scan.
fn by_rows(rx: &impl ReadOps) -> nvpage::Result<BTreeMap<i64, Seen>> {
    let t = rx.table("t")?;
    let key = t.col::<kind::I64>("key")?;
    let qty = t.col::<kind::I32>("qty")?;
    let price = t.col::<kind::Units>("price")?;
    let note = t.col::<kind::Str>("note")?;
    let mut out = BTreeMap::new();
    rx.for_each_row(&t, |r| {
        out.insert(r.get(key)?, (r.get(qty)?, r.get(price)?, r.get_opt(note)?.map(String::from)));
        Ok(())
    })?;
    Ok(out)
}

/// The rows' ids of partition `part`, in the order its scan reads them.
fn ids_of(rx: &impl ReadOps, part: Partition) -> Vec<nvpage::RowId> {
    let t = rx.table("t").unwrap();
    let mut places = RowPlaces::new();
    let mut ids = Vec::new();
    for page in rx.scan_partition(&t, part).unwrap() {
        page.unwrap().with_rows(|rows| ids.extend(rows.locate(&mut places).unwrap().ids()));
    }
    ids
}

fn note_for(k: i64, r: &mut impl Rng) -> Option<String> {
    match k % 5 {
        0 => None,
        1 => Some(String::new()),
        _ => Some("é".repeat(r.random_range(0..300))),
    }
}

#[test]
fn partitions_and_gathers_match_the_row_scan_on_every_layer() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = open_4k(dir.path(), layer);
        let mut r = rng(7);
        let notes: Vec<Option<String>> = (0..3000).map(|k| note_for(k, &mut r)).collect();
        let ids =
            commit_table(&db, 3000, |k| Row { qty: k as i32 * 3, note: notes[k as usize].clone() });
        // Deletes leave holes in pages, and some pages empty.
        let mut w = db.begin_write().unwrap();
        let t = w.table("t").unwrap();
        for (k, id) in ids.iter().enumerate() {
            if k % 7 == 0 || (1000..1400).contains(&k) {
                w.delete(&t, *id).unwrap();
            }
        }
        w.commit().unwrap();

        let rx = db.begin_read().unwrap();
        let want = by_rows(&rx).unwrap();
        assert_eq!(want.len() as u64, rx.row_count(&t).unwrap());
        let pages = rx.page_count(&t).unwrap() as usize;
        for count in [1, 2, 3, 7, pages, pages + 5] {
            assert_eq!(by_gathers(&rx, count).unwrap(), want, "{layer:?}, {count} partitions");
        }
        // The same partition reads the same rows, in the same order, after later commits.
        let part = Partition::new(1, 3).unwrap();
        let before = ids_of(&rx, part);
        // A writer on another thread (this one holds a read transaction).
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut w = db.begin_write().unwrap();
                for k in 5000..5600 {
                    w.insert(&t, &values(k, &Row { qty: 1, note: None })).unwrap();
                }
                w.delete(&t, before[0]).unwrap();
                // The writer's partitions read its own changes.
                let mine = by_gathers(&w, 4).unwrap();
                assert_eq!(mine, by_rows(&w).unwrap());
                assert_eq!(mine.len(), want.len() + 600 - 1);
                w.commit().unwrap();
            });
        });
        assert_eq!(
            ids_of(&rx, part),
            before,
            "{layer:?}: partition 1 of 3 changed under its snapshot"
        );
        drop(rx);
        let later = db.begin_read().unwrap();
        assert_eq!(by_gathers(&later, 5).unwrap(), by_rows(&later).unwrap());
    }
}

#[test]
fn filters_keep_exactly_what_their_predicate_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_4k(dir.path(), Layer::best_compiled());
    commit_table(&db, 2000, |k| Row { qty: (k * 37 % 101) as i32, note: None });
    let rx = db.begin_read().unwrap();
    let t = rx.table("t").unwrap();
    let (key, qty) = (t.col::<kind::I64>("key").unwrap(), t.col::<kind::I32>("qty").unwrap());
    let mut places = RowPlaces::new();
    let mut kept = Vec::new();
    for page in rx.scan(&t).unwrap() {
        page.unwrap()
            .with_rows(|rows| {
                let (key, qty) = (rows.col(key)?, rows.col(qty)?);
                let mut batch = rows.locate(&mut places)?;
                // One filter a column at a time, one a row at a time: both narrow the batch.
                batch.retain_by(qty, |q| q.is_some_and(|q| q < 20));
                batch.retain(|r| Ok(r.get(key)? % 2 == 1))?;
                batch.gather(key, &mut kept, None)
            })
            .unwrap();
    }
    kept.sort_unstable();
    let want: Vec<i64> = (0..2000).filter(|k| k * 37 % 101 < 20 && k % 2 == 1).collect();
    assert_eq!(kept, want);

    // A predicate's error is returned, and a NULL gathered without a validity is `Null`.
    let note = t.col::<kind::Bytes>("note").unwrap();
    let page = rx.scan(&t).unwrap().next().unwrap().unwrap();
    page.with_rows(|rows| {
        let mut batch = rows.locate(&mut places).unwrap();
        let n = batch.len();
        let e = batch.retain(|_| Err(Error::UnknownColumn("x".into()))).unwrap_err();
        assert!(matches!(e, Error::UnknownColumn(_)), "{e}");
        assert_eq!(batch.len(), n, "a failed filter leaves the batch as it was");
        let (mut data, mut ends) = (Vec::new(), Vec::new());
        let e = batch.gather_bytes(rows.col(note).unwrap(), &mut data, &mut ends, None);
        assert!(matches!(e, Err(Error::Null(ref c)) if c == "note"), "{e:?}");
        assert!(ends.is_empty(), "nothing appended before the error");
    });
}

#[test]
fn a_fold_over_a_partition_stops_where_it_breaks() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_4k(dir.path(), Layer::best_compiled());
    commit_table(&db, 3000, |_| Row { qty: 1, note: Some("x".repeat(100)) });
    let rx = db.begin_read().unwrap();
    let t = rx.table("t").unwrap();
    let pages = rx.page_count(&t).unwrap();
    assert!(pages > 20, "{pages} pages");
    let qty = t.col::<kind::I32>("qty").unwrap();
    // Sum rows until 500 are seen: the fold sees only the pages it needs.
    let (rows, visited) = rx
        .fold_partition(&t, Partition::WHOLE, (0, 0), |(n, v), page| {
            let n = page.fold(n, |n, r| Ok(n + r.get(page.col(qty)?)?))?;
            Ok(if n >= 500 {
                ControlFlow::Break((n, v + 1))
            } else {
                ControlFlow::Continue((n, v + 1))
            })
        })
        .unwrap();
    assert!(rows >= 500 && visited < pages, "{rows} rows on {visited} of {pages} pages");
    // Without a break it folds every page of the partition, and partitions add up.
    let total: i32 = Partition::all(4)
        .unwrap()
        .map(|p| {
            rx.fold_partition(&t, p, 0, |n, page| {
                Ok(ControlFlow::Continue(page.fold(n, |n, r| Ok(n + r.get(page.col(qty)?)?))?))
            })
            .unwrap()
        })
        .sum();
    assert_eq!(total, 3000);
}
