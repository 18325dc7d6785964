//! Goal: a clustered table's rows too long for a leaf entry, spilled to overflow pages, hold on
//! every path a row takes: the longest row a heap table takes reads back whole on every page
//! size and layer; rows that grow into and shrink out of overflow pages, move to new keys, split
//! and empty leaves, and are dropped with their table stay right through abort, commit, reopen
//! and a crash right after a commit that changed no row count; snapshots read the rows they saw
//! while commits free and reuse their pages; a column filter judges a spilled row by its own
//! values; a refused insert takes no page, and rewriting one row many times in a transaction
//! reuses its page; a damaged reference, and a chain two entries share, are typed errors and
//! `check` damage, never a panic or another row's values.

use crate::damage;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use nvpage::{
    Column, ColumnType, Database, Error, Layer, ReadOps, Schema, Storage, Table, Value, kind,
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
                rows.locate(&mut places)?.gather_bytes(
                    rows.col(note_col)?,
                    &mut data,
                    &mut ends,
                    None,
                )
            })
            .unwrap();
    }
    let mut from = 0;
    let mut names = Vec::new();
    for end in ends {
        names.push(String::from_utf8(data[from..end as usize].to_vec()).unwrap());
        from = end as usize;
    }
    let want_names: Vec<String> =
        model.values().map(|v| v[..v.len().min(SPLIT)].to_owned()).collect();
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
                assert!(
                    w.delete_by(&w.primary_key(t).unwrap().unwrap(), &[Value::I64(-1)]).unwrap()
                );
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
                        Err(Error::RowTooLarge { .. } | Error::ValueDoesNotFit { .. }) => {
                            hi = mid - 1
                        }
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
            let lens = [
                max,
                max - 1,
                1,
                cap - 13,
                cap - 12,
                cap - 11,
                cap,
                2 * cap - 13,
                2 * cap,
                3,
                ps as usize / 4,
                ps as usize / 4 - 30,
                ps as usize / 2,
            ];
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
                assert!(
                    w.update_by(&pk, &[Value::I64(from)], &[("k", Value::I64(to))])
                        .unwrap()
                        .is_some()
                );
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
fn a_row_growing_shrinking_and_moving_through_spills_in_one_transaction_aborts_and_commits_cleanly()
{
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
                    for (step, len) in
                        [big / 2, big - 100, big / 3, 10, big * 3 / 4].into_iter().enumerate()
                    {
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
                    assert!(
                        w.update_by(&pk, &[Value::I64(k)], &[("k", Value::I64(to))])
                            .unwrap()
                            .is_some()
                    );
                    let v = next.remove(&k).unwrap();
                    let e = w.insert(&t, &vals(to, &note(to, big / 2, 7))).unwrap_err();
                    assert!(matches!(e, Error::UniqueViolation { .. }), "{e}");
                    assert!(
                        w.update_by(&pk, &[Value::I64(to)], &[("k", Value::I64(k))])
                            .unwrap()
                            .is_some()
                    );
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
                compare(
                    &db.begin_read().unwrap(),
                    &model,
                    &format!("{layer} {ps} commit {commit}"),
                );
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

/// The data file's page count (the header's).
fn page_count(db: &Database) -> u64 {
    db.check().unwrap().page_count
}

/// A refused insert (its key held already) of a row too long for a leaf changes nothing, as a
/// refused insert of a short row does: repeated, it does not make the database grow.
#[test]
fn a_refused_insert_of_a_long_row_takes_no_pages() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Layer::Pread, 4096);
    let mut w = db.begin_write().unwrap();
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    let v = note(1, 3000, 0);
    w.insert(&t, &vals(1, &v)).unwrap();
    w.commit().unwrap();
    let before = page_count(&db);
    let mut w = db.begin_write().unwrap();
    let t = w.table("t").unwrap();
    for _ in 0..300 {
        let e = w.insert(&t, &vals(1, &note(1, 3500, 1))).unwrap_err();
        assert!(matches!(e, Error::UniqueViolation { .. }), "{e}");
    }
    w.commit().unwrap();
    sound(&db, "after 300 refused inserts");
    let after = page_count(&db);
    assert!(
        after <= before + 8,
        "300 refused inserts grew the file from {before} to {after} pages"
    );
}

/// Rewriting one spilled row many times in one transaction keeps the file's size bounded, as
/// rewriting one row of a heap table does: the chains it writes and replaces in the same
/// transaction (no snapshot ever saw them) do not pile up.
#[test]
fn rewriting_one_spilled_row_many_times_in_one_transaction_does_not_grow_the_file_without_bound() {
    let grown = |storage: Storage| {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), Layer::Pread, 4096);
        let mut w = db.begin_write().unwrap();
        let t = match storage {
            Storage::Clustered => w.create_table_with("t", schema(), storage).unwrap(),
            _ => {
                let s = Schema::new(schema().columns().to_vec()).unwrap();
                let t = w.create_table("t", s).unwrap();
                w.create_unique_index("t_k", &t, &["k"]).unwrap();
                t
            }
        };
        w.insert(&t, &vals(1, &note(1, 3000, 0))).unwrap();
        w.commit().unwrap();
        let before = page_count(&db);
        let mut w = db.begin_write().unwrap();
        let t = w.table("t").unwrap();
        let x = match storage {
            Storage::Clustered => w.primary_key(&t).unwrap().unwrap(),
            _ => w.index("t_k").unwrap(),
        };
        for i in 0..300u32 {
            w.upsert(&x, &vals(1, &note(1, 3000 + (i as usize % 500), i as u8))).unwrap();
        }
        w.commit().unwrap();
        sound(&db, "after 300 rewrites");
        page_count(&db) - before
    };
    let (heap, clustered) = (grown(Storage::Heap), grown(Storage::Clustered));
    assert!(
        clustered <= heap + 16,
        "300 rewrites of one row grew a heap table's file by {heap} pages, a clustered table's by {clustered}"
    );
}

/// Where a leaf keeps its entries (engine/src/index/node.rs): slots from byte 64, 6 bytes each
/// (entry offset u16, key head); an entry is key length u16, key, value length u16 (top bit:
/// spilled), value.
const SLOTS: usize = 64;
const SLOT: usize = 6;
const SPILLED: usize = 0x8000;

/// Where entry `i` of leaf `p` keeps its value length, and where its value lies.
fn entry(p: &[u8], i: usize) -> (usize, std::ops::Range<usize>) {
    use damage::u16_at;
    let off = u16_at(p, SLOTS + SLOT * i);
    let len_at = off + 2 + u16_at(p, off);
    (len_at, len_at + 2..len_at + 2 + (u16_at(p, len_at) & !SPILLED))
}

/// A closed database whose clustered table `t` has rows 1 and 2 spilled (one overflow page
/// each, rows of the same length) and row 3 inline, all in one leaf, damaged so that row 2's
/// entry names row 1's chain. Returns the damaged file's database, opened.
fn two_entries_one_chain(dir: &Path) -> (Arc<Database>, u64) {
    use damage::{PS, page_mut, page_of, reseal, u16_at};
    let db = open(dir, Layer::Pread, PS as u64);
    let mut w = db.begin_write().unwrap();
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    for k in 1..=3i64 {
        w.insert(&t, &vals(k, &note(k, if k == 3 { 50 } else { 2000 }, 0))).unwrap();
    }
    w.commit().unwrap();
    sound(&db, "built");
    drop(db);
    let path = dir.join("db").join(nvpage::DATA_FILE);
    let path = if path.exists() { path } else { dir.join("db") };
    let mut file = std::fs::read(&path).unwrap();
    let pages = file.len() / PS;
    let leaf = (0..pages as u64)
        .find(|&p| {
            let pg = page_of(&file, p);
            pg[16] == b'X' && pg[17] == 0 && pg[29] == 1 && u16_at(pg, 18) == 3
        })
        .expect("the table's one leaf");
    let pg = page_mut(&mut file, leaf);
    let (a_len, a) = entry(pg, 0);
    let (b_len, b) = entry(pg, 1);
    assert!(u16_at(pg, a_len) & SPILLED != 0 && u16_at(pg, b_len) & SPILLED != 0);
    let a_ref = pg[a].to_vec();
    let shared = u64::from_le_bytes(a_ref[4..12].try_into().unwrap());
    pg[b].copy_from_slice(&a_ref);
    reseal(&mut file, leaf);
    std::fs::write(&path, &file).unwrap();
    (open(dir, Layer::Pread, PS as u64), shared)
}

/// Two entries naming one chain is damage `check` reports; deleting both rows must not free
/// the chain's page twice unnoticed: either a delete refuses, or `check` then names the page
/// freed twice (its free list holds it twice). Unnoticed, two long rows written afterwards are
/// given the same overflow page and one reads as the other.
#[test]
fn two_entries_naming_one_chain_are_never_a_silent_double_free() {
    let dir = tempfile::tempdir().unwrap();
    let (db, shared) = two_entries_one_chain(dir.path());
    let report = db.check().unwrap();
    assert!(
        damage::names(&report.damage, "t_pkey", shared),
        "check finds the shared chain: {:?}",
        report.damage
    );
    let mut w = db.begin_write().unwrap();
    let t = w.table("t").unwrap();
    let pk = w.primary_key(&t).unwrap().unwrap();
    let refused = [1i64, 2].iter().any(|&k| w.delete_by(&pk, &[Value::I64(k)]).is_err());
    if refused {
        return;
    }
    w.commit().unwrap();
    let report = db.check().unwrap();
    let flagged = damage::names(&report.damage, "t_pkey", shared);
    let damage_after = report.damage.clone();
    // Two new long rows, each on one overflow page.
    let mut w = db.begin_write().unwrap();
    let t = w.table("t").unwrap();
    let (x, y) = (note(10, 2000, 5), note(11, 2000, 6));
    w.insert(&t, &vals(10, &x)).unwrap();
    w.insert(&t, &vals(11, &y)).unwrap();
    w.commit().unwrap();
    let rx = db.begin_read().unwrap();
    let t = rx.table("t").unwrap();
    let pk = rx.primary_key(&t).unwrap().unwrap();
    let got = |k: i64| -> Option<(i64, String)> {
        let g = rx.get_by(&pk, &[Value::I64(k)]).ok()??;
        let r = g.row().ok()?;
        Some((r.get_named::<kind::I64>("k").ok()?, whole(&r).ok()?))
    };
    let (gx, gy) = (got(10), got(11));
    assert!(
        flagged,
        "check does not name page {shared}, freed twice by the deletes (it reports {damage_after:?}); \
         then new rows 10 and 11 read as keys {:?} and {:?}",
        gx.as_ref().map(|r| r.0),
        gy.as_ref().map(|r| r.0)
    );
    for (k, want, g) in [(10, &x, gx), (11, &y, gy)] {
        if let Some((gk, gv)) = g {
            assert!(gk == k && gv == *want, "row {k} reads as row {gk}");
        }
    }
}

/// The damaged file's database: the table of [`two_entries_one_chain`] undamaged, then row 1's
/// reference rewritten by `edit` (given the leaf's page and the reference's bytes).
fn damaged_reference(dir: &Path, edit: impl Fn(u64, &mut [u8])) -> Arc<Database> {
    use damage::{PS, page_mut, page_of, reseal, u16_at};
    let db = open(dir, Layer::Pread, PS as u64);
    let mut w = db.begin_write().unwrap();
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    for k in 1..=3i64 {
        w.insert(&t, &vals(k, &note(k, if k == 3 { 50 } else { 1500 + 500 * k as usize }, 0)))
            .unwrap();
    }
    w.commit().unwrap();
    drop(db);
    let path = dir.join("db").join(nvpage::DATA_FILE);
    let mut file = std::fs::read(&path).unwrap();
    let pages = file.len() / PS;
    let leaf = (0..pages as u64)
        .find(|&p| {
            let pg = page_of(&file, p);
            pg[16] == b'X' && pg[17] == 0 && pg[29] == 1 && u16_at(pg, 18) == 3
        })
        .expect("the table's one leaf");
    let pg = page_mut(&mut file, leaf);
    let (_, a) = entry(pg, 0);
    edit(leaf, &mut pg[a]);
    reseal(&mut file, leaf);
    std::fs::write(&path, &file).unwrap();
    open(dir, Layer::Pread, PS as u64)
}

/// Every read of row 1 of a damaged table and `check` return (an error or damage), never a
/// panic; `check` reports the damage.
fn reads_report(db: &Database, what: &str) {
    let report = db.check().unwrap();
    assert!(!report.damage.is_empty(), "{what}: check finds nothing");
    let rx = db.begin_read().unwrap();
    let t = rx.table("t").unwrap();
    let pk = rx.primary_key(&t).unwrap().unwrap();
    assert!(
        rx.get_by(&pk, &[Value::I64(1)]).and_then(|g| g.unwrap().row().map(drop)).is_err(),
        "{what}: get_by"
    );
    assert!(rx.for_each_row(&t, |_| Ok(())).is_err(), "{what}: for_each_row");
    let r: nvpage::Result<Vec<()>> = rx
        .index_range(&pk, Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .map(|g| g.and_then(|g| g.row().map(drop)))
        .collect();
    assert!(r.is_err(), "{what}: index_range");
    assert!(
        rx.par_fold_pages(&t, 2, || (), |a, _| Ok(a), |a, _| a).is_err(),
        "{what}: par_fold_pages"
    );
    drop(rx);
    let mut w = db.begin_write().unwrap();
    let t = w.table("t").unwrap();
    let pk = w.primary_key(&t).unwrap().unwrap();
    assert!(
        w.update_by(&pk, &[Value::I64(1)], &[("note", Value::Str("x"))]).is_err(),
        "{what}: update_by"
    );
    drop(w);
}

/// A spilled row's reference whose length is huge, or whose first page is past the file, at the
/// end of the page numbers, or the leaf itself: typed errors and `check` damage, no panic.
#[test]
fn a_damaged_reference_is_an_error_never_a_panic() {
    type Edit = fn(u64, &mut [u8]);
    let cases: [(&str, Edit); 5] = [
        ("length u32::MAX", |_, r| r[..4].copy_from_slice(&u32::MAX.to_le_bytes())),
        ("length past a heap row", |_, r| r[..4].copy_from_slice(&70_000u32.to_le_bytes())),
        ("first page past the file", |_, r| r[4..].copy_from_slice(&100_000u64.to_le_bytes())),
        ("first page u64::MAX", |_, r| r[4..].copy_from_slice(&u64::MAX.to_le_bytes())),
        ("first page the leaf", |leaf, r| r[4..].copy_from_slice(&leaf.to_le_bytes())),
    ];
    for (what, edit) in cases {
        let dir = tempfile::tempdir().unwrap();
        let db = damaged_reference(dir.path(), edit);
        reads_report(&db, what);
    }
}

/// A snapshot taken before a clustered table with spilled rows is dropped (in the same
/// transaction as a new table of long rows, and again in later ones) reads the dropped table's
/// rows whole; once it ends, the space is reused and `check` is sound.
#[test]
fn a_snapshot_reads_a_dropped_tables_spilled_rows_while_new_tables_fill_the_file() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), layer, 4096);
        let mut model = Model::new();
        let mut w = db.begin_write().unwrap();
        let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
        for k in 0..200i64 {
            let v = note(k, if k % 2 == 0 { 2500 } else { 30 }, 4);
            w.insert(&t, &vals(k, &v)).unwrap();
            model.insert(k, v);
        }
        w.commit().unwrap();
        let snap = db.snapshot().unwrap();
        for round in 0..3i64 {
            let mut w = db.begin_write().unwrap();
            let name = format!("u{round}");
            if round == 0 {
                w.drop_table("t").unwrap();
            }
            let u = w.create_table_with(&name, schema(), Storage::Clustered).unwrap();
            for k in 0..150i64 {
                w.insert(&u, &vals(k, &note(k, 3000, 9))).unwrap();
            }
            if round > 0 {
                w.drop_table(format!("u{}", round - 1).as_str()).unwrap();
            }
            w.commit().unwrap();
            compare(&snap, &model, &format!("{layer} round {round}: the snapshot"));
        }
        drop(snap);
        sound(&db, &format!("{layer}: after the snapshot"));
        let mut w = db.begin_write().unwrap();
        let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
        for k in 0..200i64 {
            w.insert(&t, &vals(k, &model[&k])).unwrap();
        }
        w.commit().unwrap();
        compare(&db.begin_read().unwrap(), &model, &format!("{layer}: made again"));
        sound(&db, &format!("{layer}: made again"));
    }
}

/// A column filter of a page's located rows (`PageBatch::retain_by`, `retain_by_pair`) judges a
/// spilled row by its own values, as `retain` and the gathers read them: on a leaf of spilled
/// and inline rows, keeping the even keys keeps exactly the even keys.
#[test]
fn retain_by_judges_a_spilled_row_by_its_own_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Layer::Pread, 4096);
    let mut w = db.begin_write().unwrap();
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    for k in 0..40i64 {
        let len = if k % 4 < 2 { 1500 } else { 20 };
        w.insert(&t, &vals(k, &note(k, len, 0))).unwrap();
    }
    w.commit().unwrap();
    let rx = db.begin_read().unwrap();
    let t = rx.table("t").unwrap();
    let k_col = t.col::<kind::I64>("k").unwrap();
    let mut places = nvpage::RowPlaces::new();
    let (mut by, mut by_pair, mut by_row) = (Vec::new(), Vec::new(), Vec::new());
    for page in rx.scan(&t).unwrap() {
        page.unwrap()
            .with_rows(|rows| {
                let c = rows.col(k_col)?;
                let mut b = rows.locate(&mut places)?;
                b.retain_by(c, |v| v.is_some_and(|k| k % 2 == 0));
                b.gather(c, &mut by, None)?;
                let mut b = rows.locate(&mut places)?;
                b.retain_by_pair(c, c, |a, _| a.is_some_and(|k| k % 2 == 0));
                b.gather(c, &mut by_pair, None)?;
                let mut b = rows.locate(&mut places)?;
                b.retain(|r| Ok(r.get(c)? % 2 == 0))?;
                b.gather(c, &mut by_row, None)
            })
            .unwrap();
    }
    let want: Vec<i64> = (0..40).filter(|k| k % 2 == 0).collect();
    assert_eq!(by_row, want, "retain (whole rows) keeps the even keys");
    assert_eq!((&by, &by_pair), (&want, &want), "retain_by and retain_by_pair keep the even keys");
}

/// Rows around the longest a leaf entry takes inline (a quarter page with the key), on the
/// smallest and largest pages, each one byte longer than the last, read back whole, then each
/// rewritten one byte shorter and one longer (crossing the line both ways), and deleted.
#[test]
fn rows_on_either_side_of_the_spill_line_read_back_whole() {
    for layer in Layer::compiled() {
        for ps in [4096u64, 65536] {
            let dir = tempfile::tempdir().unwrap();
            let db = open(dir.path(), layer, ps);
            let mut model = Model::new();
            let mut w = db.begin_write().unwrap();
            let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
            let pk = w.primary_key(&t).unwrap().unwrap();
            let line = ps as usize / 4;
            for (i, len) in (line - 60..line + 10).enumerate() {
                let v = note(i as i64, len, 0);
                w.insert(&t, &vals(i as i64, &v)).unwrap();
                model.insert(i as i64, v);
            }
            compare(&w, &model, &format!("{layer} {ps}: inserted"));
            for (i, len) in (line - 60..line + 10).enumerate() {
                let k = i as i64;
                let len = if i % 2 == 0 { len - 1 } else { len + 1 };
                let v = note(k, len, 1);
                w.upsert(&pk, &vals(k, &v)).unwrap();
                model.insert(k, v);
            }
            compare(&w, &model, &format!("{layer} {ps}: rewritten"));
            w.commit().unwrap();
            compare(&db.begin_read().unwrap(), &model, &format!("{layer} {ps}: committed"));
            sound(&db, &format!("{layer} {ps}: committed"));
            let mut w = db.begin_write().unwrap();
            let t = w.table("t").unwrap();
            let pk = w.primary_key(&t).unwrap().unwrap();
            for k in model.keys().copied().filter(|k| k % 3 == 0).collect::<Vec<_>>() {
                assert!(w.delete_by(&pk, &[Value::I64(k)]).unwrap());
                model.remove(&k);
            }
            w.commit().unwrap();
            compare(&db.begin_read().unwrap(), &model, &format!("{layer} {ps}: deleted"));
            sound(&db, &format!("{layer} {ps}: deleted"));
        }
    }
}

/// With the data file capped (`max_file_bytes`), an insert refused because its key is held is a
/// `UniqueViolation` however many times it is tried, as for a short row: the refused long rows
/// do not use up the file and turn into a failure that poisons the transaction.
#[test]
fn refused_inserts_of_long_rows_never_exhaust_a_capped_file() {
    let dir = tempfile::tempdir().unwrap();
    let ps = 4096u64;
    let b = Database::builder()
        .layer(Layer::Pread)
        .page_size(ps)
        .pool_bytes(48 * ps)
        .max_file_bytes(64 * ps);
    let db = Arc::new(b.open(dir.path().join("db")).unwrap());
    let mut w = db.begin_write().unwrap();
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    w.insert(&t, &vals(1, &note(1, 3000, 0))).unwrap();
    w.commit().unwrap();
    let mut w = db.begin_write().unwrap();
    let t = w.table("t").unwrap();
    for i in 0..200 {
        match w.insert(&t, &vals(1, &note(1, 3000, 1))) {
            Err(Error::UniqueViolation { .. }) => {}
            other => panic!("refused insert {i}: {other:?}"),
        }
    }
    w.insert(&t, &vals(2, &note(2, 3000, 1))).unwrap();
    w.commit().unwrap();
    sound(&db, "after the refused inserts");
}

/// A snapshot read on another thread, over and over, while the writer commits rewrites and
/// deletes of spilled rows (freeing their chains) and new long rows (taking freed pages once
/// no older snapshot is live), reads what it saw every time.
#[test]
fn a_snapshot_on_another_thread_reads_its_spilled_rows_while_the_writer_commits() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), layer, 4096);
        let mut model = Model::new();
        let mut w = db.begin_write().unwrap();
        let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
        for k in 0..80i64 {
            let v = note(k, if k % 2 == 0 { 1800 + k as usize } else { 40 }, 0);
            w.insert(&t, &vals(k, &v)).unwrap();
            model.insert(k, v);
        }
        w.commit().unwrap();
        let snap = db.snapshot().unwrap();
        let seen = model.clone();
        std::thread::scope(|s| {
            let reader = s.spawn(|| {
                for i in 0..30 {
                    compare(&snap, &seen, &format!("{layer}: the snapshot, pass {i}"));
                }
            });
            for round in 1..=20u8 {
                // Every few rounds a fresh snapshot comes and goes, so freed pages get reused.
                let fresh = (round % 3 == 0).then(|| db.snapshot().unwrap());
                drop(fresh);
                let mut w = db.begin_write().unwrap();
                let t = w.table("t").unwrap();
                let pk = w.primary_key(&t).unwrap().unwrap();
                for k in (0..80i64).filter(|k| (k + i64::from(round)) % 3 == 0) {
                    let v = note(k, if (k + i64::from(round)) % 2 == 0 { 2500 } else { 30 }, round);
                    w.upsert(&pk, &vals(k, &v)).unwrap();
                    model.insert(k, v);
                }
                w.commit().unwrap();
            }
            reader.join().unwrap();
        });
        compare(&db.begin_read().unwrap(), &model, &format!("{layer}: last"));
        drop(snap);
        sound(&db, &format!("{layer}: after"));
    }
}

/// A transaction that runs out of file (`max_file_bytes`) while spilling rows fails with a
/// typed error, and its abort leaves the committed table whole and `check` sound.
#[test]
fn running_out_of_file_while_spilling_aborts_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let ps = 4096u64;
    let b = Database::builder()
        .layer(Layer::Pread)
        .page_size(ps)
        .pool_bytes(48 * ps)
        .max_file_bytes(64 * ps);
    let db = Arc::new(b.open(dir.path().join("db")).unwrap());
    let mut model = Model::new();
    let mut w = db.begin_write().unwrap();
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    for k in 0..10i64 {
        let v = note(k, 3000, 0);
        w.insert(&t, &vals(k, &v)).unwrap();
        model.insert(k, v);
    }
    w.commit().unwrap();
    let mut w = db.begin_write().unwrap();
    let t = w.table("t").unwrap();
    let pk = w.primary_key(&t).unwrap().unwrap();
    let mut failed = None;
    for k in 0..200i64 {
        let r = if k < 10 {
            w.upsert(&pk, &vals(k, &note(k, 2000, 1))).map(drop)
        } else {
            w.insert(&t, &vals(k, &note(k, 3000, 1))).map(drop)
        };
        if let Err(e) = r {
            failed = Some(e);
            break;
        }
    }
    let e = failed.expect("the file runs out");
    assert!(matches!(e, Error::Storage(_)), "{e}");
    w.abort().unwrap();
    compare(&db.begin_read().unwrap(), &model, "after the abort");
    sound(&db, "after the abort");
}

/// A clustered table of 20 spilled rows, committed, then a commit whose only changes rewrite
/// each of them in place of itself (no row count changes): the database, and the rows it holds.
fn rewritten_in_place(dir: &Path, layer: Layer) -> (Arc<Database>, Model) {
    let db = open(dir, layer, 4096);
    let mut model = Model::new();
    let mut w = db.begin_write().unwrap();
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    for k in 0..20i64 {
        let v = note(k, 2000, 0);
        w.insert(&t, &vals(k, &v)).unwrap();
        model.insert(k, v);
    }
    w.commit().unwrap();
    let mut w = db.begin_write().unwrap();
    let t = w.table("t").unwrap();
    let pk = w.primary_key(&t).unwrap().unwrap();
    for k in 0..20i64 {
        let v = note(k, 2500, 1);
        let at = v.len().min(SPLIT);
        let set = [("note", Value::Str(&v[..at])), ("more", Value::Str(&v[at..]))];
        assert!(w.update_by(&pk, &[Value::I64(k)], &set).unwrap().is_some());
        model.insert(k, v);
    }
    w.commit().unwrap();
    (db, model)
}

/// A transaction whose only changes rewrite spilled rows in place of themselves (no row added
/// or removed, so no row count changes) still takes pages for their new chains and frees the
/// old ones: after a reopen the table reads the same and `check` is sound, and new rows written
/// then do not take the chains' pages.
#[test]
fn a_transaction_that_only_rewrites_spilled_rows_survives_a_reopen() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let (db, mut model) = rewritten_in_place(dir.path(), layer);
        compare(&db.begin_read().unwrap(), &model, &format!("{layer}: committed"));
        sound(&db, &format!("{layer}: committed"));
        drop(db);
        let db = open(dir.path(), layer, 4096);
        compare(&db.begin_read().unwrap(), &model, &format!("{layer}: reopened"));
        sound(&db, &format!("{layer}: reopened"));
        let mut w = db.begin_write().unwrap();
        let t = w.table("t").unwrap();
        for k in 100..140i64 {
            let v = note(k, 3000, 2);
            w.insert(&t, &vals(k, &v)).unwrap();
            model.insert(k, v);
        }
        w.commit().unwrap();
        compare(&db.begin_read().unwrap(), &model, &format!("{layer}: more rows after the reopen"));
        sound(&db, &format!("{layer}: more rows after the reopen"));
    }
}

/// Copies directory `from` (files only, one level deep or more) to `to`: the files as a crash
/// right now would leave them.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// The files as a crash right after a commit leaves them (no clean close) hold that commit: a
/// transaction whose only changes rewrite spilled rows (new chains taken, old ones freed, no row
/// count changed) is found whole and sound by the next open, and rows written then do not take
/// the new chains' pages.
#[test]
fn a_crash_right_after_a_commit_that_only_rewrote_spilled_rows_keeps_them_sound() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let (db, mut model) = rewritten_in_place(dir.path(), layer);
        sound(&db, &format!("{layer}: committed"));
        let crashed = tempfile::tempdir().unwrap();
        copy_dir(&dir.path().join("db"), &crashed.path().join("db"));
        drop(db);
        let db = open(crashed.path(), layer, 4096);
        compare(&db.begin_read().unwrap(), &model, &format!("{layer}: after the crash"));
        sound(&db, &format!("{layer}: after the crash"));
        let mut w = db.begin_write().unwrap();
        let t = w.table("t").unwrap();
        for k in 100..140i64 {
            let v = note(k, 3000, 2);
            w.insert(&t, &vals(k, &v)).unwrap();
            model.insert(k, v);
        }
        w.commit().unwrap();
        compare(&db.begin_read().unwrap(), &model, &format!("{layer}: more rows after the crash"));
        sound(&db, &format!("{layer}: more rows after the crash"));
    }
}

/// The same crash after a commit whose only changes grow inline rows (no row count changed),
/// so that their leaves split and the tree takes pages.
#[test]
fn a_crash_right_after_a_commit_that_only_grew_inline_rows_keeps_them_sound() {
    let layer = Layer::Pread;
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), layer, 4096);
    let mut model = Model::new();
    let mut w = db.begin_write().unwrap();
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    for k in 0..20i64 {
        let v = note(k, 100, 0);
        w.insert(&t, &vals(k, &v)).unwrap();
        model.insert(k, v);
    }
    w.commit().unwrap();
    let mut w = db.begin_write().unwrap();
    let t = w.table("t").unwrap();
    let pk = w.primary_key(&t).unwrap().unwrap();
    for k in 0..20i64 {
        let v = note(k, 900, 1);
        let set = [("note", Value::Str(&v))];
        assert!(w.update_by(&pk, &[Value::I64(k)], &set).unwrap().is_some());
        model.insert(k, v);
    }
    w.commit().unwrap();
    sound(&db, "committed");
    let crashed = tempfile::tempdir().unwrap();
    copy_dir(&dir.path().join("db"), &crashed.path().join("db"));
    drop(db);
    let db = open(crashed.path(), layer, 4096);
    compare(&db.begin_read().unwrap(), &model, "after the crash");
    sound(&db, "after the crash");
}
