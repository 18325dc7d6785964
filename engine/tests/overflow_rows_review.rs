//! Review of overflow rows (commit 030847c): a clustered table's rows too long for a leaf entry,
//! spilled to chains of overflow pages. Each test states what should hold.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use nvpage::{
    Column, ColumnType, Database, Error, Layer, ReadOps, Schema, Storage, Table, Value,
    kind,
};

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("k", ColumnType::I64),
        Column::new("note", ColumnType::VarChar { max_len: 32768 }),
        Column::new("more", ColumnType::VarChar { max_len: 32768 }),
    ])
    .unwrap()
    .with_primary_key(&["k"])
    .unwrap()
}

fn open(dir: &Path, layer: Layer, ps: u64) -> Arc<Database> {
    let b = Database::builder().layer(layer).page_size(ps).pool_bytes(48 * ps);
    Arc::new(b.open(dir.join("db")).unwrap())
}

/// Row `k`'s note, `len` letters that depend on `k` and `salt`.
fn note(k: i64, len: usize, salt: u8) -> String {
    (0..len).map(|j| char::from(b'a' + ((k as usize + j + salt as usize) % 26) as u8)).collect()
}

type Model = BTreeMap<i64, String>;

/// Where a note is split between the columns `note` and `more`.
const SPLIT: usize = 32000;

/// The row of key `k` whose note (both columns) is `v`.
fn vals(k: i64, v: &str) -> [Value<'_>; 3] {
    let at = v.len().min(SPLIT);
    [Value::I64(k), Value::Str(&v[..at]), Value::Str(&v[at..])]
}

/// A row's whole note.
fn whole(row: &nvpage::RowRef<'_>) -> nvpage::Result<String> {
    Ok(format!("{}{}", row.get_named::<kind::Str>("note")?, row.get_named::<kind::Str>("more")?))
}

/// Holds everything `rx` reads of table `t` to `model`: row count, a scan, a page fold, a
/// gather, lookups, ranges both ways and counts.
fn compare(rx: &impl ReadOps, model: &Model, what: &str) {
    let t = rx.table("t").unwrap();
    assert_eq!(rx.row_count(&t).unwrap(), model.len() as u64, "{what}: row count");
    let want: Vec<(i64, String)> = model.iter().map(|(k, v)| (*k, v.clone())).collect();
    let mut all = Vec::new();
    rx.for_each_row(&t, |row| {
        all.push((row.get_named::<kind::I64>("k")?, whole(&row)?));
        Ok(())
    })
    .unwrap();
    assert!(all == want, "{what}: for_each_row ({} rows, want {})", all.len(), want.len());
    let mut scanned = Vec::new();
    for page in rx.scan(&t).unwrap() {
        for row in page.unwrap().rows() {
            let row = row.unwrap();
            scanned.push((row.get_named::<kind::I64>("k").unwrap(), whole(&row).unwrap()));
        }
    }
    assert!(scanned == want, "{what}: scan rows");
    let note_col = t.col::<kind::Bytes>("note").unwrap();
    let more_col = t.col::<kind::Bytes>("more").unwrap();
    let k_col = t.col::<kind::I64>("k").unwrap();
    let total = rx
        .par_fold_pages(
            &t,
            2,
            || (0usize, 0i64),
            |acc, page| {
                let c = page.col(note_col)?;
                let m = page.col(more_col)?;
                let kc = page.col(k_col)?;
                page.fold(acc, |acc, row| {
                    Ok((acc.0 + row.get(c)?.len() + row.get(m)?.len(), acc.1 + row.get(kc)?))
                })
            },
            |a, b| (a.0 + b.0, a.1 + b.1),
        )
        .unwrap();
    let want_total = (model.values().map(String::len).sum::<usize>(), model.keys().sum::<i64>());
    assert_eq!(total, want_total, "{what}: par_fold_pages");
    let mut places = nvpage::RowPlaces::new();
    let (mut data, mut ends) = (Vec::new(), Vec::new());
    for page in rx.scan(&t).unwrap() {
        page.unwrap()
            .with_rows(|rows| {
                rows.locate(&mut places)?.gather_bytes(rows.col(note_col)?, &mut data, &mut ends, None)
            })
            .unwrap();
    }
    let mut from = 0;
    let mut names = Vec::new();
    for end in ends {
        names.push(String::from_utf8(data[from..end as usize].to_vec()).unwrap());
        from = end as usize;
    }
    let want_names: Vec<String> = model.values().map(|v| v[..v.len().min(SPLIT)].to_owned()).collect();
    assert!(names == want_names, "{what}: gather_bytes");
    let pk = rx.primary_key(&t).unwrap().unwrap();
    for (k, v) in model {
        let g = rx.get_by(&pk, &[Value::I64(*k)]).unwrap().expect("a row");
        let row = g.row().unwrap();
        assert!(whole(&row).unwrap() == *v, "{what}: get_by {k}");
    }
    let fwd: Vec<(i64, usize)> = rx
        .index_range(&pk, Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .map(|g| {
            let g = g.unwrap();
            let r = g.row().unwrap();
            (r.get_named::<kind::I64>("k").unwrap(), whole(&r).unwrap().len())
        })
        .collect();
    let want_fwd: Vec<(i64, usize)> = model.iter().map(|(k, v)| (*k, v.len())).collect();
    assert_eq!(fwd, want_fwd, "{what}: index_range forward");
    let mut back: Vec<(i64, usize)> = rx
        .index_range(&pk, Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .rev()
        .map(|g| {
            let g = g.unwrap();
            let r = g.row().unwrap();
            (r.get_named::<kind::I64>("k").unwrap(), whole(&r).unwrap().len())
        })
        .collect();
    back.reverse();
    assert_eq!(back, want_fwd, "{what}: index_range backward");
    let n = rx.count_range(&pk, Bound::Unbounded, Bound::Unbounded).unwrap();
    assert_eq!(n, model.len() as u64, "{what}: count_range");
}

fn sound(db: &Database, what: &str) {
    let report = db.check().unwrap();
    assert!(report.damage.is_empty(), "{what}: {:?}", report.damage);
}

/// The longest row a table `t` of `schema()` takes, found by trying lengths of `note`.
fn longest_note(w: &mut nvpage::WriteTxn<'_>, t: &Table, ps: usize) -> usize {
    let (mut lo, mut hi) = (0usize, ps.min(2 * 32768));
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        match w.insert(t, &vals(-1, &"z".repeat(mid))) {
            Ok(_) => {
                assert!(w.delete_by(&w.primary_key(t).unwrap().unwrap(), &[Value::I64(-1)]).unwrap());
                lo = mid;
            }
            Err(Error::RowTooLarge { .. } | Error::ValueDoesNotFit { .. }) => hi = mid - 1,
            Err(e) => panic!("{e}"),
        }
    }
    lo
}

/// On every page size and layer, a clustered table takes exactly the rows a heap table takes,
/// the longest included, and every read path gives them back whole, before and after a reopen.
#[test]
fn a_row_as_long_as_a_heap_tables_longest_reads_back_whole_on_every_page_size_and_layer() {
    for layer in Layer::compiled() {
        for ps in [4096u64, 8192, 16384, 65536] {
            let dir = tempfile::tempdir().unwrap();
            let db = open(dir.path(), layer, ps);
            let mut w = db.begin_write().unwrap();
            let heap_schema = Schema::new(vec![
                Column::new("k", ColumnType::I64),
                Column::new("note", ColumnType::VarChar { max_len: 32768 }),
                Column::new("more", ColumnType::VarChar { max_len: 32768 }),
            ])
            .unwrap();
            let h = w.create_table("h", heap_schema).unwrap();
            w.create_unique_index("h_k", &h, &["k"]).unwrap();
            let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
            let heap_max = {
                let (mut lo, mut hi) = (0usize, (ps as usize).min(2 * 32768));
                while lo < hi {
                    let mid = (lo + hi).div_ceil(2);
                    match w.insert(&h, &vals(mid as i64, &"z".repeat(mid))) {
                        Ok(_) => lo = mid,
                        Err(Error::RowTooLarge { .. } | Error::ValueDoesNotFit { .. }) => hi = mid - 1,
                        Err(e) => panic!("{e}"),
                    }
                }
                lo
            };
            let max = longest_note(&mut w, &t, ps as usize);
            assert_eq!(max, heap_max, "{layer} {ps}: the longest note of a clustered table");
            assert!(max > ps as usize * 3 / 4, "{layer} {ps}: the longest note {max}");
            let mut model = Model::new();
            let cap = ps as usize - 36;
            let lens = [max, max - 1, 1, cap - 13, cap - 12, cap - 11, cap, 2 * cap - 13, 2 * cap, 3, ps as usize / 4, ps as usize / 4 - 30, ps as usize / 2];
            for (i, &len) in lens.iter().enumerate() {
                if len > max {
                    continue;
                }
                let k = i as i64 * 10;
                let v = note(k, len, 0);
                w.insert(&t, &vals(k, &v)).unwrap();
                model.insert(k, v);
            }
            compare(&w, &model, &format!("{layer} {ps}: in the writer"));
            w.commit().unwrap();
            compare(&db.begin_read().unwrap(), &model, &format!("{layer} {ps}: committed"));
            sound(&db, &format!("{layer} {ps}"));
            drop(db);
            let db = open(dir.path(), layer, ps);
            compare(&db.begin_read().unwrap(), &model, &format!("{layer} {ps}: reopened"));
            sound(&db, &format!("{layer} {ps}: reopened"));
        }
    }
}

/// A snapshot taken before several commits that replace, shrink, grow,
/// move and delete spilled rows (their chains' pages freed and new chains written) reads exactly
/// what it saw; once it ends, `check` finds every page in the tree or free.
#[test]
fn a_snapshot_reads_the_spilled_rows_it_saw_after_commits_replace_and_free_their_chains() {
    for layer in Layer::compiled() {
        let ps = 4096u64;
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), layer, ps);
        let mut model = Model::new();
        let mut w = db.begin_write().unwrap();
        let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
        for k in 0..60i64 {
            let len = if k % 3 == 0 { 1500 + (k as usize * 97) % 2400 } else { 40 + k as usize };
            let v = note(k, len, 0);
            w.insert(&t, &vals(k, &v)).unwrap();
            model.insert(k, v);
        }
        w.commit().unwrap();
        let snap = db.snapshot().unwrap();
        let seen = model.clone();
        for round in 1..=5u8 {
            let mut w = db.begin_write().unwrap();
            let t = w.table("t").unwrap();
            let pk = w.primary_key(&t).unwrap().unwrap();
            for k in 0..60i64 {
                if !model.contains_key(&k) {
                    continue;
                }
                let len = match (k + i64::from(round)) % 4 {
                    0 => 3000 + (k as usize * 13) % 900,
                    1 => 20,
                    2 => 1200 + (k as usize * 31) % 1000,
                    _ => continue,
                };
                let v = note(k, len, round);
                let at = v.len().min(SPLIT);
                let set = [("note", Value::Str(&v[..at])), ("more", Value::Str(&v[at..]))];
                assert!(w.update_by(&pk, &[Value::I64(k)], &set).unwrap().is_some());
                model.insert(k, v);
            }
            // Deletes and moves of spilled rows, and new ones.
            let k = i64::from(round) * 3;
            if model.remove(&k).is_some() {
                assert!(w.delete_by(&pk, &[Value::I64(k)]).unwrap());
            }
            let (from, to) = (i64::from(round) * 3 + 1, 1000 + i64::from(round));
            if let Some(v) = model.remove(&from) {
                assert!(w.update_by(&pk, &[Value::I64(from)], &[("k", Value::I64(to))]).unwrap().is_some());
                model.insert(to, v);
            }
            let v = note(500 + i64::from(round), 3500, round);
            w.upsert(&pk, &vals(500 + i64::from(round), &v)).unwrap();
            model.insert(500 + i64::from(round), v);
            compare(&w, &model, &format!("{layer} round {round}: the writer"));
            w.commit().unwrap();
            compare(&snap, &seen, &format!("{layer} round {round}: the snapshot"));
        }
        drop(snap);
        compare(&db.begin_read().unwrap(), &model, &format!("{layer}: last"));
        sound(&db, &format!("{layer}: after the snapshot"));
        // Freed chains' pages are reused now: still sound.
        let mut w = db.begin_write().unwrap();
        let t = w.table("t").unwrap();
        let pk = w.primary_key(&t).unwrap().unwrap();
        for k in 0..60i64 {
            let v = note(k, 2000 + k as usize, 9);
            w.upsert(&pk, &vals(k, &v)).unwrap();
            model.insert(k, v);
        }
        w.commit().unwrap();
        compare(&db.begin_read().unwrap(), &model, &format!("{layer}: reused"));
        sound(&db, &format!("{layer}: reused"));
        drop(db);
        let db = open(dir.path(), layer, ps);
        compare(&db.begin_read().unwrap(), &model, &format!("{layer}: reopened"));
        sound(&db, &format!("{layer}: reopened"));
    }
}

/// One row taken inline -> spilled -> spilled -> inline -> spilled, moved to a new key while
/// spilled, deleted and inserted again, all in one transaction, then rolled back: the table is
/// what was committed and `check` finds nothing wrong; the same, committed, is what was written.
#[test]
fn a_row_growing_shrinking_and_moving_through_spills_in_one_transaction_aborts_and_commits_cleanly() {
    for layer in Layer::compiled() {
        for ps in [4096u64, 16384] {
            let dir = tempfile::tempdir().unwrap();
            let db = open(dir.path(), layer, ps);
            let big = ps as usize;
            let mut model = Model::new();
            let mut w = db.begin_write().unwrap();
            let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
            for k in 0..200i64 {
                let v = note(k, if k % 10 == 0 { big / 2 } else { 100 }, 0);
                w.insert(&t, &vals(k, &v)).unwrap();
                model.insert(k, v);
            }
            w.commit().unwrap();
            for commit in [false, true] {
                let mut next = model.clone();
                let mut w = db.begin_write().unwrap();
                let t = w.table("t").unwrap();
                let pk = w.primary_key(&t).unwrap().unwrap();
                for k in [5i64, 10, 11, 20] {
                    for (step, len) in [big / 2, big - 100, big / 3, 10, big * 3 / 4].into_iter().enumerate() {
                        let v = note(k, len, step as u8);
                        let at = v.len().min(SPLIT);
                        let set = [("note", Value::Str(&v[..at])), ("more", Value::Str(&v[at..]))];
                        if step % 2 == 0 {
                            assert!(w.update_by(&pk, &[Value::I64(k)], &set).unwrap().is_some());
                        } else {
                            w.upsert(&pk, &vals(k, &v)).unwrap();
                        }
                        next.insert(k, v);
                    }
                    // Moved, spilled, to a key past the end and back, then deleted and inserted.
                    let to = 10_000 + k;
                    assert!(w.update_by(&pk, &[Value::I64(k)], &[("k", Value::I64(to))]).unwrap().is_some());
                    let v = next.remove(&k).unwrap();
                    let e = w.insert(&t, &vals(to, &note(to, big / 2, 7))).unwrap_err();
                    assert!(matches!(e, Error::UniqueViolation { .. }), "{e}");
                    assert!(w.update_by(&pk, &[Value::I64(to)], &[("k", Value::I64(k))]).unwrap().is_some());
                    assert!(w.delete_by(&pk, &[Value::I64(k)]).unwrap());
                    w.insert(&t, &vals(k, &v)).unwrap();
                    next.insert(k, v);
                }
                compare(&w, &next, &format!("{layer} {ps}: the writer"));
                if commit {
                    w.commit().unwrap();
                    model = next;
                } else {
                    w.abort().unwrap();
                }
                compare(&db.begin_read().unwrap(), &model, &format!("{layer} {ps} commit {commit}"));
                sound(&db, &format!("{layer} {ps} commit {commit}"));
            }
            drop(db);
            let db = open(dir.path(), layer, ps);
            compare(&db.begin_read().unwrap(), &model, &format!("{layer} {ps}: reopened"));
            sound(&db, &format!("{layer} {ps}: reopened"));
        }
    }
}

/// Many spilled rows loaded in key order and at random, so leaves split with spilled entries in
/// both halves, then every row deleted (leaves emptied), then the table dropped with chains in
/// it: each step reads right and `check` is sound, and a new table reuses the space soundly.
#[test]
fn leaves_of_spilled_rows_split_empty_and_drop_soundly() {
    for layer in Layer::compiled() {
        let ps = 4096u64;
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), layer, ps);
        let mut model = Model::new();
        let mut w = db.begin_write().unwrap();
        let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
        for i in 0..1500i64 {
            let k = (i * 7919) % 1500;
            let len = if k % 2 == 0 { 1100 + (k as usize % 3000) } else { 1 + (k as usize % 900) };
            let v = note(k, len, 1);
            w.insert(&t, &vals(k, &v)).unwrap();
            model.insert(k, v);
        }
        w.commit().unwrap();
        compare(&db.begin_read().unwrap(), &model, &format!("{layer}: loaded"));
        sound(&db, &format!("{layer}: loaded"));
        let snap = db.snapshot().unwrap();
        let seen = model.clone();
        let mut w = db.begin_write().unwrap();
        let t = w.table("t").unwrap();
        let pk = w.primary_key(&t).unwrap().unwrap();
        for k in 0..1500i64 {
            assert!(w.delete_by(&pk, &[Value::I64(k)]).unwrap());
            model.remove(&k);
        }
        compare(&w, &model, &format!("{layer}: emptied, in the writer"));
        w.commit().unwrap();
        compare(&snap, &seen, &format!("{layer}: the snapshot of the full table"));
        sound(&db, &format!("{layer}: emptied"));
        let mut w = db.begin_write().unwrap();
        let t = w.table("t").unwrap();
        for k in 0..300i64 {
            let v = note(k, 2500, 2);
            w.insert(&t, &vals(k, &v)).unwrap();
            model.insert(k, v);
        }
        w.commit().unwrap();
        compare(&snap, &seen, &format!("{layer}: the snapshot, after a refill"));
        compare(&db.begin_read().unwrap(), &model, &format!("{layer}: refilled"));
        drop(snap);
        sound(&db, &format!("{layer}: refilled"));
        let mut w = db.begin_write().unwrap();
        w.drop_table("t").unwrap();
        let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
        model.clear();
        for k in 0..300i64 {
            let v = note(k, 3000, 3);
            w.insert(&t, &vals(k, &v)).unwrap();
            model.insert(k, v);
        }
        w.commit().unwrap();
        compare(&db.begin_read().unwrap(), &model, &format!("{layer}: dropped and made again"));
        sound(&db, &format!("{layer}: dropped and made again"));
        drop(db);
        let db = open(dir.path(), layer, ps);
        compare(&db.begin_read().unwrap(), &model, &format!("{layer}: reopened"));
        sound(&db, &format!("{layer}: reopened"));
    }
}
