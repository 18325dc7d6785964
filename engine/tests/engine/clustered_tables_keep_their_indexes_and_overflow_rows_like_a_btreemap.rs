//! Goal: a clustered table with indexes beside its primary key (a unique one over a nullable
//! column, a non-unique one over two columns) and rows too long for a leaf entry (spilled whole to
//! overflow pages) holds exactly what a map of its rows by key says, on every compiled layer, with
//! 4 KiB pages and a pool of a few dozen frames (every tree several levels deep, leaves splitting
//! and emptying). Random transactions of inserts, upserts through either unique index, updates by
//! either key (of the indexed columns, of the primary key itself, and of a note that takes a row
//! into and out of overflow pages, to a byte either side of the longest row a leaf entry takes),
//! deletes by either key and refused writes, committed, aborted or dropped, with reopens between
//! them, are held to the map. After each write the row it wrote is found by its key and through
//! both indexes under its values. After each transaction: row and entry counts; a scan row at a
//! time; a scan page at a time (columns gathered, rows kept by a column filter, a fold on two
//! threads); point lookups, lookups of a key that repeats and range scans both ways through each
//! index, in key then primary key order, and ranges of the primary and the unique index read as
//! folds that stop at a random row, the iterator reading on from there. A write refused for a key
//! another row holds changes nothing; a snapshot taken before each transaction still reads what it
//! read; `check` finds nothing wrong after every fifth transaction, after each reopen and at the
//! end, when the table's trees are three levels deep. Each run counts what it read and wrote: a
//! fifth of the rows read were spilled, rows grew into and shrank out of overflow pages, and rows
//! of the longest length a leaf takes and of one byte more were written.
//!
//! Beside it: the length at which a row spills is the one the model test counts with; an index
//! made over rows a clustered table holds (spilled ones too) finds them (and a unique one over
//! a repeated key is refused with nothing changed); and a unique violation through an index of
//! a clustered table leaves the transaction as it was.

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;

use nvpage::{
    Column, ColumnType, Database, Error, Index, IndexScan, Layer, ReadOps, RowId, RowPlaces,
    Schema, Storage, Upserted, Value, WriteTxn, kind,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const PAGE: u64 = 4096;

/// The longest row (as encoded) a leaf entry takes on 4 KiB pages beside its 9-byte key: an
/// entry may hold a quarter of a node's entry area less a slot and two length fields,
/// `(4096 - 64) / 4 - 6 - 2 - 2 = 998` bytes of key and row. A longer row spills.
/// `a_row_spills_exactly_past_the_longest_a_leaf_entry_takes` holds the engine to it.
const LONGEST_INLINE: usize = 998 - 9;

/// A row's bytes before its strings: the null bitmap, grp, code, k, and the slots (offset and
/// length) of name and note. Every scan holds each row's length to it.
const FIXED: usize = 1 + 4 + 8 + 8 + 4 + 4;

/// The longest row a heap table takes on 4 KiB pages (and so a clustered one).
const LONGEST: usize = 4060;

const GROUPS: i32 = 7;
const CODES: i64 = 3000;

/// A row's columns but the primary key `k`: a group, a code (unique where not NULL), a name
/// (with the group, the non-unique index's key) and a note whose length decides whether the
/// row spills.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Row {
    grp: i32,
    code: Option<i64>,
    name: String,
    note: Option<String>,
}

impl Row {
    /// The row's encoded length.
    fn len(&self) -> usize {
        FIXED + self.name.len() + self.note.as_ref().map_or(0, String::len)
    }

    fn spills(&self) -> bool {
        self.len() > LONGEST_INLINE
    }
}

/// The table's rows by key, and the key of each code's row.
#[derive(Clone, Debug, Default)]
struct Model {
    rows: BTreeMap<i64, Row>,
    codes: BTreeMap<i64, i64>,
}

impl Model {
    fn get(&self, k: i64) -> Option<&Row> {
        self.rows.get(&k)
    }

    /// The key of the row whose code is `code`, if one has.
    fn by_code(&self, code: i64) -> Option<i64> {
        self.codes.get(&code).copied()
    }

    /// Whether `row`'s code is held by a row other than the one with key `except`.
    fn code_taken(&self, row: &Row, except: Option<i64>) -> bool {
        row.code.and_then(|c| self.by_code(c)).is_some_and(|holder| Some(holder) != except)
    }

    /// Puts `row` under key `k`, whose code no other row may hold; returns the row it replaced.
    fn put(&mut self, k: i64, row: Row) -> Option<Row> {
        let old = self.remove(k);
        if let Some(c) = row.code {
            assert_eq!(self.codes.insert(c, k), None, "the model's code {c} held twice");
        }
        self.rows.insert(k, row);
        old
    }

    fn remove(&mut self, k: i64) -> Option<Row> {
        let old = self.rows.remove(&k)?;
        if let Some(c) = old.code {
            self.codes.remove(&c);
        }
        Some(old)
    }

    fn len(&self) -> u64 {
        self.rows.len() as u64
    }
}

/// What a run read and wrote, to show that its rows spill and cross the threshold.
#[derive(Debug, Default)]
struct Seen {
    rows_read: u64,
    spilled_read: u64,
    /// Rows written (inserted, replaced or changed) of exactly the longest inline length, and
    /// of one byte more.
    written_at_edge: [u64; 2],
    grew_into_overflow: u64,
    shrank_out_of_overflow: u64,
    reopens: u64,
}

impl Seen {
    /// Counts a row written where `old` (if any) was.
    fn wrote(&mut self, old: Option<&Row>, new: &Row) {
        match new.len().checked_sub(LONGEST_INLINE) {
            Some(0) => self.written_at_edge[0] += 1,
            Some(1) => self.written_at_edge[1] += 1,
            _ => {}
        }
        match old.map(|o| (o.spills(), new.spills())) {
            Some((false, true)) => self.grew_into_overflow += 1,
            Some((true, false)) => self.shrank_out_of_overflow += 1,
            _ => {}
        }
    }
}

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("grp", ColumnType::I32),
        Column::nullable("code", ColumnType::I64),
        Column::new("k", ColumnType::I64),
        Column::new("name", ColumnType::VarChar { max_len: 200 }),
        Column::nullable("note", ColumnType::VarChar { max_len: LONGEST as u16 }),
    ])
    .unwrap()
    .with_primary_key(&["k"])
    .unwrap()
}

fn values(k: i64, r: &Row) -> Vec<Value<'_>> {
    vec![
        Value::I32(r.grp),
        r.code.map_or(Value::Null, Value::I64),
        Value::I64(k),
        Value::Str(&r.name),
        r.note.as_deref().into(),
    ]
}

fn letters(rng: &mut StdRng, len: usize) -> String {
    (0..len).map(|_| char::from(rng.random_range(b'a'..=b'z'))).collect()
}

/// A name: one of a few that repeat (rows of one group and name, told apart by their keys in
/// the non-unique index), a run of 60 to 150 letters `n` and a few others (long keys that
/// share long prefixes, so that the index's separators are long and its tree deep), or a
/// short one.
fn random_name(rng: &mut StdRng) -> String {
    match rng.random_range(0..20) {
        0..=4 => format!("{}{}", "n".repeat(140), rng.random_range(0..4)),
        5..=16 => {
            let (run, tail) = (rng.random_range(60..150), rng.random_range(1..30));
            format!("{}{}", "n".repeat(run), letters(rng, tail))
        }
        _ => {
            let len = rng.random_range(1..20);
            letters(rng, len)
        }
    }
}

/// A note for a row whose name is `name_len` bytes long, making a row of one of these lengths:
/// NULL or short, up to 900 bytes, within two bytes of the longest a leaf entry takes, or too
/// long for one (a third of rows spill). `spill` given, a row that spills, or one that does not.
fn random_note(rng: &mut StdRng, name_len: usize, spill: Option<bool>) -> Option<String> {
    let base = FIXED + name_len;
    loop {
        let len = match rng.random_range(0..20) {
            0..=1 => None,
            2..=7 => Some(base + rng.random_range(0..60)),
            8..=11 => Some(rng.random_range(base..900)),
            12..=14 => Some(rng.random_range(LONGEST_INLINE - 1..=LONGEST_INLINE + 2)),
            _ => Some(rng.random_range(LONGEST_INLINE + 3..=LONGEST)),
        };
        if spill.is_none_or(|s| s == len.is_some_and(|l| l > LONGEST_INLINE)) {
            return len.map(|l| letters(rng, l - base));
        }
    }
}

fn random_row(rng: &mut StdRng) -> Row {
    let name = random_name(rng);
    let note = random_note(rng, name.len(), None);
    Row {
        grp: rng.random_range(0..GROUPS),
        code: rng.random_bool(0.85).then(|| rng.random_range(0..CODES)),
        name,
        note,
    }
}

fn read_row(row: &nvpage::RowRef<'_>) -> (i64, Row) {
    assert_eq!(row.id(), RowId::KEYED);
    let code =
        if row.is_null(1) { None } else { Some(row.get_named::<kind::I64>("code").unwrap()) };
    let note = if row.is_null(4) {
        None
    } else {
        Some(row.get_named::<kind::Str>("note").unwrap().to_owned())
    };
    let r = Row {
        grp: row.get_named::<kind::I32>("grp").unwrap(),
        code,
        name: row.get_named::<kind::Str>("name").unwrap().to_owned(),
        note,
    };
    (row.get_named::<kind::I64>("k").unwrap(), r)
}

fn read_guard(g: nvpage::Result<nvpage::RowGuard<'_>>) -> (i64, Row) {
    read_row(&g.unwrap().row().unwrap())
}

/// The rows of `scan`: the first `stop` through [`IndexScan::fold_rows`], which then breaks,
/// and the rest through the iterator the fold left where it stopped.
fn folded(mut scan: IndexScan<'_>, stop: usize) -> Vec<(i64, Row)> {
    let mut got = Vec::new();
    if stop > 0 {
        let n = scan
            .fold_rows(0, |n, row| {
                got.push(read_row(&row));
                Ok(if n + 1 == stop {
                    ControlFlow::Break(n + 1)
                } else {
                    ControlFlow::Continue(n + 1)
                })
            })
            .unwrap();
        assert_eq!(n, got.len(), "the fold's value is the one its last call gave");
    }
    got.extend(scan.map(read_guard));
    got
}

/// Holds `got` to `want` (long lists: the first difference is reported, not both lists).
fn same<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T], what: &str) {
    if let Some(i) = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)) {
        panic!(
            "{what}: {} items, expected {}; first difference at {i}: {:?}, expected {:?}",
            got.len(),
            want.len(),
            got.get(i),
            want.get(i)
        );
    }
}

/// Holds everything `rx` reads of table `t` to `model`, counting into `seen` what the scan read.
fn compare(rx: &impl ReadOps, model: &Model, rng: &mut StdRng, what: &str, seen: &mut Seen) {
    let t = rx.table("t").unwrap();
    assert_eq!(t.storage(), Storage::Clustered);
    assert_eq!(rx.row_count(&t).unwrap(), model.len(), "{what}: row count");
    let pk = rx.primary_key(&t).unwrap().expect("the primary key");
    let (code, grp) = (rx.index("t_code").unwrap(), rx.index("t_grp_name").unwrap());
    for x in [&pk, &code, &grp] {
        assert_eq!(rx.index_len(x).unwrap(), model.len(), "{what}: entries of {}", x.name());
    }
    scans(rx, model, what, seen);
    by_primary_key(rx, &pk, model, rng, what);
    by_group_and_name(rx, &grp, model, rng, what);
    by_code(rx, &code, model, rng, what);
}

/// A scan row at a time (every row's length as the model computes it), and one page at a time:
/// keys and notes gathered, the keys of rows with a code below 1000 kept by a column filter,
/// and a fold on two threads.
fn scans(rx: &impl ReadOps, model: &Model, what: &str, seen: &mut Seen) {
    let t = rx.table("t").unwrap();
    let mut all = Vec::new();
    rx.for_each_row(&t, |row| {
        let (k, r) = read_row(&row);
        assert_eq!(row.bytes().len(), r.len(), "{what}: the length of row {k}");
        all.push((k, r));
        Ok(())
    })
    .unwrap();
    let want: Vec<(i64, Row)> = model.rows.iter().map(|(k, r)| (*k, r.clone())).collect();
    same(&all, &want, &format!("{what}: a scan in key order"));
    seen.rows_read += all.len() as u64;
    seen.spilled_read += all.iter().filter(|(_, r)| r.spills()).count() as u64;

    let (k_col, code_col) = (t.col::<kind::I64>("k").unwrap(), t.col::<kind::I64>("code").unwrap());
    let note_col = t.col::<kind::Bytes>("note").unwrap();
    let mut places = RowPlaces::new();
    let (mut keys, mut coded, mut data, mut ends, mut valid) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for page in rx.scan(&t).unwrap() {
        page.unwrap()
            .with_rows(|rows| {
                let mut batch = rows.locate(&mut places)?;
                batch.gather(rows.col(k_col)?, &mut keys, None)?;
                batch.gather_bytes(rows.col(note_col)?, &mut data, &mut ends, Some(&mut valid))?;
                batch.retain_by(rows.col(code_col)?, |c| c.is_some_and(|c| c < 1000));
                batch.gather(rows.col(k_col)?, &mut coded, None)
            })
            .unwrap();
    }
    same(&keys, &model.rows.keys().copied().collect::<Vec<_>>(), &format!("{what}: keys gathered"));
    let mut notes = Vec::new();
    let mut from = 0;
    for (end, valid) in ends.iter().zip(&valid) {
        let bytes = &data[from..*end as usize];
        notes.push(valid.then(|| String::from_utf8(bytes.to_vec()).unwrap()));
        from = *end as usize;
    }
    let want: Vec<Option<String>> = model.rows.values().map(|r| r.note.clone()).collect();
    same(&notes, &want, &format!("{what}: notes gathered"));
    let want: Vec<i64> = model
        .rows
        .iter()
        .filter(|(_, r)| r.code.is_some_and(|c| c < 1000))
        .map(|(k, _)| *k)
        .collect();
    same(&coded, &want, &format!("{what}: keys of codes below 1000, filtered"));

    let (grp_col, note_str) =
        (t.col::<kind::I32>("grp").unwrap(), t.col::<kind::Str>("note").unwrap());
    let sum = rx
        .par_fold_pages(
            &t,
            2,
            || 0u64,
            |acc, page| {
                let (g, n) = (page.col(grp_col)?, page.col(note_str)?);
                page.fold(acc, |acc, row| {
                    let note = row.get_opt(n)?.map_or(0, str::len) as u64;
                    Ok(acc + note * GROUPS as u64 + row.get(g)? as u64)
                })
            },
            |a, b| a + b,
        )
        .unwrap();
    let want: u64 = model
        .rows
        .values()
        .map(|r| r.note.as_ref().map_or(0, String::len) as u64 * GROUPS as u64 + r.grp as u64)
        .sum();
    assert_eq!(sum, want, "{what}: a fold of the pages");
}

/// Random keys by `get_by`, and a range of keys both ways.
fn by_primary_key(rx: &impl ReadOps, pk: &Index, model: &Model, rng: &mut StdRng, what: &str) {
    for _ in 0..10 {
        let k = rng.random_range(-5..80_000);
        let got = rx.get_by(pk, &[Value::I64(k)]).unwrap().map(|g| read_row(&g.row().unwrap()));
        assert_eq!(got, model.get(k).map(|r| (k, r.clone())), "{what}: get_by {k}");
    }
    let (a, b) = (rng.random_range(-5..80_000), rng.random_range(-5..80_000));
    let (lo, hi) = (a.min(b), a.max(b));
    let (lo_v, hi_v) = ([Value::I64(lo)], [Value::I64(hi)]);
    let range = || {
        rx.index_range(pk, Bound::Excluded(&lo_v[..]), Bound::Included(&hi_v[..]))
            .unwrap()
            .map(|g| read_guard(g).0)
    };
    let rows: Vec<(i64, Row)> = model
        .rows
        .range((Bound::Excluded(lo), Bound::Included(hi)))
        .map(|(k, r)| (*k, r.clone()))
        .collect();
    let stop = rng.random_range(0..=rows.len() + 1);
    let scan = rx.index_range(pk, Bound::Excluded(&lo_v[..]), Bound::Included(&hi_v[..])).unwrap();
    same(&folded(scan, stop), &rows, &format!("{what}: rows ({lo}, {hi}], {stop} folded"));
    let mut want: Vec<i64> = rows.iter().map(|(k, _)| *k).collect();
    same(&range().collect::<Vec<_>>(), &want, &format!("{what}: keys ({lo}, {hi}]"));
    want.reverse();
    let back: Vec<i64> = rx
        .index_range(pk, Bound::Excluded(&lo_v[..]), Bound::Included(&hi_v[..]))
        .unwrap()
        .rev()
        .map(|g| read_guard(g).0)
        .collect();
    same(&back, &want, &format!("{what}: keys ({lo}, {hi}] backwards"));
}

/// Every group through the non-unique index, both ways (in name then key order), and a range
/// from a row's group and name to another group, both ways.
fn by_group_and_name(rx: &impl ReadOps, grp: &Index, model: &Model, rng: &mut StdRng, what: &str) {
    let mut entries: Vec<(i32, &str, i64)> =
        model.rows.iter().map(|(k, r)| (r.grp, r.name.as_str(), *k)).collect();
    entries.sort();
    for g in 0..GROUPS {
        let want: Vec<(i32, &str, i64)> = entries.iter().filter(|e| e.0 == g).copied().collect();
        let key = [Value::I32(g)];
        let mut got = Vec::new();
        for row in rx.lookup(grp, &key).unwrap() {
            let (k, r) = read_guard(row);
            assert_eq!(model.get(k), Some(&r), "{what}: the row of {k}");
            got.push((k, r.name));
        }
        let got: Vec<(i32, &str, i64)> = got.iter().map(|(k, n)| (g, n.as_str(), *k)).collect();
        same(&got, &want, &format!("{what}: group {g}"));
        let back: Vec<i64> =
            rx.lookup(grp, &key).unwrap().rev().map(|row| read_guard(row).0).collect();
        let want_back: Vec<i64> = want.iter().rev().map(|e| e.2).collect();
        same(&back, &want_back, &format!("{what}: group {g} backwards"));
        let ids = rx.lookup(grp, &key).unwrap().ids().map(|id| id.unwrap());
        assert!(ids.eq(std::iter::repeat_n(RowId::KEYED, want.len())), "{what}: group {g}'s ids");
    }
    let Some(from) = model.rows.range(rng.random_range(0..80_000)..).next().map(|e| e.1) else {
        return;
    };
    let (to, lo_in, hi_in) =
        (rng.random_range(from.grp..GROUPS), rng.random_bool(0.5), rng.random_bool(0.5));
    let lo_v = [Value::I32(from.grp), Value::Str(&from.name)];
    let hi_v = [Value::I32(to)];
    let lo = if lo_in { Bound::Included(&lo_v[..]) } else { Bound::Excluded(&lo_v[..]) };
    let hi = if hi_in { Bound::Included(&hi_v[..]) } else { Bound::Excluded(&hi_v[..]) };
    let start = (from.grp, from.name.as_str());
    let mut want: Vec<i64> = entries
        .iter()
        .filter(|e| if lo_in { (e.0, e.1) >= start } else { (e.0, e.1) > start })
        .filter(|e| if hi_in { e.0 <= to } else { e.0 < to })
        .map(|e| e.2)
        .collect();
    let what = format!("{what}: from {start:?} to group {to} ({lo_in}, {hi_in})");
    let got: Vec<i64> = rx.index_range(grp, lo, hi).unwrap().map(|g| read_guard(g).0).collect();
    same(&got, &want, &what);
    assert_eq!(rx.count_range(grp, lo, hi).unwrap(), want.len() as u64, "{what}: counted");
    want.reverse();
    let back: Vec<i64> =
        rx.index_range(grp, lo, hi).unwrap().rev().map(|g| read_guard(g).0).collect();
    same(&back, &want, &format!("{what}, backwards"));
}

/// Point lookups by code, through the unique index and `get_by`, and ranges of codes both ways.
fn by_code(rx: &impl ReadOps, code: &Index, model: &Model, rng: &mut StdRng, what: &str) {
    for _ in 0..20 {
        let c = rng.random_range(0..CODES);
        let want = model.by_code(c).map(|k| (k, model.rows[&k].clone()));
        let got = rx.get_by(code, &[Value::I64(c)]).unwrap().map(|g| read_row(&g.row().unwrap()));
        assert_eq!(got, want, "{what}: get_by code {c}");
        let looked: Vec<(i64, Row)> =
            rx.lookup(code, &[Value::I64(c)]).unwrap().map(read_guard).collect();
        assert_eq!(looked, want.into_iter().collect::<Vec<_>>(), "{what}: lookup code {c}");
    }
    for _ in 0..3 {
        let (a, b) = (rng.random_range(0..CODES), rng.random_range(0..CODES));
        let (lo, hi) = (a.min(b), a.max(b));
        let mut want: Vec<(i64, i64)> = model.codes.range(lo..hi).map(|(c, k)| (*c, *k)).collect();
        let (lo_v, hi_v) = ([Value::I64(lo)], [Value::I64(hi)]);
        let range = || {
            rx.index_range(code, Bound::Included(&lo_v[..]), Bound::Excluded(&hi_v[..])).unwrap()
        };
        let code_and_key = |g: nvpage::Result<nvpage::RowGuard<'_>>| {
            let (k, r) = read_guard(g);
            (r.code.unwrap(), k)
        };
        let got: Vec<(i64, i64)> = range().map(code_and_key).collect();
        same(&got, &want, &format!("{what}: codes [{lo}, {hi})"));
        let stop = rng.random_range(0..=want.len() + 1);
        let rows: Vec<(i64, Row)> = want.iter().map(|(_, k)| (*k, model.rows[k].clone())).collect();
        same(&folded(range(), stop), &rows, &format!("{what}: codes [{lo}, {hi}), {stop} folded"));
        let counted =
            rx.count_range(code, Bound::Included(&lo_v[..]), Bound::Excluded(&hi_v[..])).unwrap();
        assert_eq!(counted, want.len() as u64, "{what}: count of codes [{lo}, {hi})");
        want.reverse();
        let back: Vec<(i64, i64)> = range().rev().map(code_and_key).collect();
        same(&back, &want, &format!("{what}: codes [{lo}, {hi}) backwards"));
    }
}

/// The table's indexes, as a writer names them.
struct Indexes {
    pk: Index,
    code: Index,
    grp_name: Index,
}

/// After each write: the row with key `k` is the model's (or absent, as the model says), found
/// through both indexes under its values; a random code's row is the model's.
fn step_check(w: &WriteTxn<'_>, x: &Indexes, model: &Model, k: i64, rng: &mut StdRng, what: &str) {
    let got = w.get_by(&x.pk, &[Value::I64(k)]).unwrap().map(|g| read_row(&g.row().unwrap()));
    assert_eq!(got.as_ref().map(|g| &g.1), model.get(k), "{what}: the row of {k}");
    if let Some(r) = model.get(k) {
        let key = [Value::I32(r.grp), Value::Str(&r.name)];
        let found: Vec<i64> =
            w.lookup(&x.grp_name, &key).unwrap().map(|g| read_guard(g).0).collect();
        assert!(found.contains(&k), "{what}: {k} under its group and name: {found:?}");
        if let Some(c) = r.code {
            let g =
                w.get_by(&x.code, &[Value::I64(c)]).unwrap().map(|g| read_row(&g.row().unwrap()));
            assert_eq!(g, Some((k, r.clone())), "{what}: {k} by its code");
        }
    }
    let c = rng.random_range(0..CODES);
    let g = w.get_by(&x.code, &[Value::I64(c)]).unwrap().map(|g| read_row(&g.row().unwrap()).0);
    assert_eq!(g, model.by_code(c), "{what}: code {c}");
}

/// A key: mostly one of the first 1,500, half the time the next the model holds (so that
/// updates and deletes find rows), now and then any up to 12,000.
fn pick_key(m: &Model, rng: &mut StdRng) -> i64 {
    let k =
        if rng.random_bool(0.9) { rng.random_range(0..1500) } else { rng.random_range(0..12_000) };
    if rng.random_bool(0.5) { m.rows.range(k..).next().map_or(k, |(k, _)| *k) } else { k }
}

/// A note for a change of the row `old` (if any) whose name will be `name_len` bytes long:
/// mostly one that takes it across the spill threshold.
fn changed_note(rng: &mut StdRng, old: Option<&Row>, name_len: usize) -> Option<String> {
    let cross = old.filter(|_| rng.random_bool(0.7)).map(|o| !o.spills());
    random_note(rng, name_len, cross)
}

fn refused<T: std::fmt::Debug>(r: nvpage::Result<T>) {
    assert!(matches!(r, Err(Error::UniqueViolation { .. })), "{r:?}");
}

/// One random write through `w`, kept in `next` where it succeeds (a refusal must be for a key
/// the model says another row holds); returns the primary key it wrote or looked for.
fn random_write(
    w: &mut WriteTxn<'_>,
    x: &Indexes,
    next: &mut Model,
    rng: &mut StdRng,
    seen: &mut Seen,
) -> i64 {
    let t = w.table("t").unwrap();
    let k = pick_key(next, rng);
    let mut row = random_row(rng);
    match rng.random_range(0..13) {
        0..=2 => {
            let r = w.insert(&t, &values(k, &row));
            if next.get(k).is_some() || next.code_taken(&row, None) {
                refused(r);
            } else {
                assert_eq!(r.unwrap(), RowId::KEYED);
                seen.wrote(None, &row);
                next.put(k, row);
            }
        }
        3 => {
            // By primary key: the row with key k is replaced, its code checked.
            row.note = changed_note(rng, next.get(k), row.name.len());
            let r = w.upsert(&x.pk, &values(k, &row));
            if next.code_taken(&row, Some(k)) {
                refused(r);
            } else {
                seen.wrote(next.get(k), &row);
                let want = match next.put(k, row) {
                    Some(_) => Upserted::Updated(RowId::KEYED),
                    None => Upserted::Inserted(RowId::KEYED),
                };
                assert_eq!(r.unwrap(), want);
            }
        }
        4 => {
            // By code: the row that has the code is replaced (moved, where k is another key),
            // else a row is inserted; a NULL code always inserts.
            let r = w.upsert(&x.code, &values(k, &row));
            let holder = row.code.and_then(|c| next.by_code(c));
            if next.get(k).is_some() && holder != Some(k) {
                refused(r);
            } else {
                let old = holder.and_then(|h| next.remove(h));
                seen.wrote(old.as_ref(), &row);
                next.put(k, row);
                let want = match old {
                    Some(_) => Upserted::Updated(RowId::KEYED),
                    None => Upserted::Inserted(RowId::KEYED),
                };
                assert_eq!(r.unwrap(), want);
            }
        }
        op @ 5..=8 => {
            // Some columns change, by primary key: indexed ones (5, 6) or the note (7, 8),
            // mostly across the spill threshold.
            let old = next.get(k).cloned();
            let notes_only = op >= 7;
            let mut change = if notes_only {
                [false, false, rng.random_bool(0.3), true]
            } else {
                [0.7, 0.7, 0.7, 0.5].map(|p| rng.random_bool(p))
            };
            if change == [false; 4] {
                change[0] = true;
            }
            let [grp, code, name, note] = change;
            let name_len =
                if name { row.name.len() } else { old.as_ref().map_or(0, |o| o.name.len()) };
            if note {
                row.note = changed_note(rng, old.as_ref(), name_len);
            }
            let mut set = Vec::new();
            if grp {
                set.push(("grp", Value::I32(row.grp)));
            }
            if code {
                set.push(("code", row.code.map_or(Value::Null, Value::I64)));
            }
            if name {
                set.push(("name", Value::Str(&row.name)));
            }
            if note {
                set.push(("note", row.note.as_deref().into()));
            }
            let r = w.update_by(&x.pk, &[Value::I64(k)], &set);
            match old {
                None => assert_eq!(r.unwrap(), None),
                Some(old) => {
                    let mut new = old.clone();
                    if grp {
                        new.grp = row.grp;
                    }
                    if code {
                        new.code = row.code;
                    }
                    if name {
                        new.name = row.name.clone();
                    }
                    if note {
                        new.note = row.note.clone();
                    }
                    if next.code_taken(&new, Some(k)) {
                        refused(r);
                    } else {
                        assert_eq!(r.unwrap(), Some(RowId::KEYED));
                        seen.wrote(Some(&old), &new);
                        next.put(k, new);
                    }
                }
            }
        }
        9 => {
            // The primary key changes (the note too, now and then), the row found by its code
            // or by its key: the row moves, its entries with it.
            let (finder, found, from) = if rng.random_bool(0.5) {
                let c = rng.random_range(0..CODES);
                let c = next.codes.range(c..).next().map_or(c, |(c, _)| *c);
                (&x.code, c, next.by_code(c))
            } else {
                let f = pick_key(next, rng);
                (&x.pk, f, next.get(f).map(|_| f))
            };
            let old = from.and_then(|f| next.get(f).cloned());
            let note = rng.random_bool(0.5);
            if note {
                let name_len = old.as_ref().map_or(0, |o| o.name.len());
                row.note = changed_note(rng, old.as_ref(), name_len);
            }
            let mut set = vec![("k", Value::I64(k))];
            if note {
                set.push(("note", row.note.as_deref().into()));
            }
            let r = w.update_by(finder, &[Value::I64(found)], &set);
            match (from, old) {
                (Some(f), Some(_)) if f != k && next.get(k).is_some() => refused(r),
                (Some(f), Some(old)) => {
                    assert_eq!(r.unwrap(), Some(RowId::KEYED));
                    let mut new = next.remove(f).unwrap();
                    if note {
                        new.note = row.note.clone();
                    }
                    seen.wrote(Some(&old), &new);
                    next.put(k, new);
                }
                _ => assert_eq!(r.unwrap(), None),
            }
        }
        10..=11 => {
            let r = w.delete_by(&x.pk, &[Value::I64(k)]).unwrap();
            assert_eq!(r, next.remove(k).is_some());
        }
        _ => {
            let c = rng.random_range(0..CODES);
            let r = w.delete_by(&x.code, &[Value::I64(c)]).unwrap();
            let holder = next.by_code(c);
            assert_eq!(r, holder.is_some());
            if let Some(h) = holder {
                next.remove(h);
            }
        }
    }
    k
}

fn assert_sound(db: &Database, what: &str) -> nvpage::CheckReport {
    let report = db.check().unwrap();
    assert!(report.damage.is_empty(), "{what}: {:?}", report.damage);
    report
}

/// How a transaction of the run ends.
#[derive(Clone, Copy, Debug)]
enum End {
    Commit,
    Abort,
    Drop,
}

fn run(layer: Layer, seed: u64) -> Seen {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut seen = Seen::default();
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        let b = Database::builder().layer(layer).page_size(PAGE).pool_bytes(48 * PAGE);
        Arc::new(b.open(dir.path().join("db")).unwrap())
    };
    let mut model = Model::default();
    let mut db = open();
    let mut w = db.begin_write().unwrap();
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    w.create_unique_index("t_code", &t, &["code"]).unwrap();
    w.create_index("t_grp_name", &t, &["grp", "name"]).unwrap();
    w.commit().unwrap();
    for txn in 0..30 {
        let what = |when: &str| format!("{layer} seed {seed} txn {txn}, {when}");
        let before = (db.snapshot().unwrap(), model.clone());
        let mut next = model.clone();
        let mut w = db.begin_write().unwrap();
        let t = w.table("t").unwrap();
        let x = Indexes {
            pk: w.primary_key(&t).unwrap().unwrap(),
            code: w.index("t_code").unwrap(),
            grp_name: w.index("t_grp_name").unwrap(),
        };
        // Now and then a load of ascending keys, committed (the trees split at their right
        // edges and grow a level) or rolled back (every page it took goes back).
        let end = match txn % 10 {
            5 => End::Commit,
            8 => End::Abort,
            _ => [End::Commit, End::Commit, End::Commit, End::Abort, End::Drop]
                [rng.random_range(0..5)],
        };
        if txn % 10 == 5 || txn % 10 == 8 {
            let base = 12_000 + 2_000 * i64::from(txn);
            for k in base..base + 1_500 {
                let mut row = random_row(&mut rng);
                row.code = None;
                w.insert(&t, &values(k, &row)).unwrap();
                seen.wrote(None, &row);
                next.put(k, row);
            }
        }
        for step in 0..rng.random_range(1..150) {
            let k = random_write(&mut w, &x, &mut next, &mut rng, &mut seen);
            step_check(&w, &x, &next, k, &mut rng, &what(&format!("step {step}")));
        }
        compare(&w, &next, &mut rng, &what("in the writer"), &mut seen);
        match end {
            End::Commit => {
                w.commit().unwrap();
                model = next;
            }
            End::Abort => w.abort().unwrap(),
            End::Drop => drop(w),
        }
        let rx = db.begin_read().unwrap();
        compare(&rx, &model, &mut rng, &what(&format!("after {end:?}")), &mut seen);
        drop(rx);
        compare(&before.0, &before.1, &mut rng, &what("a snapshot from before"), &mut seen);
        drop(before);
        if rng.random_bool(0.15) {
            drop(db);
            db = open();
            seen.reopens += 1;
            compare(&db.begin_read().unwrap(), &model, &mut rng, &what("reopened"), &mut seen);
            assert_sound(&db, &what("reopened"));
        } else if txn % 5 == 4 {
            assert_sound(&db, &what("checked"));
        }
    }
    drop(db);
    let db = open();
    let what = format!("{layer} seed {seed}, reopened at the end");
    compare(&db.begin_read().unwrap(), &model, &mut rng, &what, &mut seen);
    let report = assert_sound(&db, &what);
    for (name, depth) in [("t_pkey", 3), ("t_grp_name", 3), ("t_code", 2)] {
        let x = report.indexes.iter().find(|x| x.name == name).unwrap();
        assert_eq!(x.entries_found, model.len(), "{what}: {name}'s entries");
        assert!(x.depth >= depth, "{what}: {name} is {} levels deep", x.depth);
    }
    seen
}

#[test]
fn clustered_tables_keep_their_indexes_and_overflow_rows_like_a_btreemap_on_every_layer() {
    for layer in Layer::compiled() {
        for seed in 0..2 {
            let seen = run(layer, seed);
            let what = format!("{layer} seed {seed}: {seen:?}");
            assert!(seen.spilled_read * 5 >= seen.rows_read, "{what}: too few rows spilled");
            assert!(seen.grew_into_overflow >= 20 && seen.shrank_out_of_overflow >= 20, "{what}");
            assert!(seen.written_at_edge.iter().all(|&n| n >= 10), "{what}");
            assert!(seen.reopens >= 2, "{what}");
        }
    }
}

/// A table of one row is one leaf, and one overflow page beside it once the row spills: rows of
/// [`LONGEST_INLINE`] bytes stay in the leaf, a byte more spills, and a byte less again comes
/// back.
#[test]
fn a_row_spills_exactly_past_the_longest_a_leaf_entry_takes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder().page_size(PAGE).open(dir.path().join("db")).unwrap();
    let mut w = db.begin_write().unwrap();
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    w.commit().unwrap();
    for (len, pages) in [(LONGEST_INLINE, 1), (LONGEST_INLINE + 1, 2), (LONGEST_INLINE, 1)] {
        let row =
            Row { grp: 1, code: None, name: "n".into(), note: Some("x".repeat(len - FIXED - 1)) };
        assert_eq!(row.len(), len);
        let mut w = db.begin_write().unwrap();
        let pk = w.primary_key(&t).unwrap().unwrap();
        w.upsert(&pk, &values(7, &row)).unwrap();
        w.commit().unwrap();
        let rx = db.begin_read().unwrap();
        let g = rx.get_by(&pk, &[Value::I64(7)]).unwrap().unwrap();
        assert_eq!(g.row().unwrap().bytes().len(), len);
        assert_eq!(read_row(&g.row().unwrap()), (7, row));
        drop(g);
        drop(rx);
        let report = assert_sound(&db, &format!("a row of {len} bytes"));
        let tree = report.indexes.iter().find(|x| x.name == "t_pkey").unwrap();
        assert_eq!(tree.pages, pages, "the tree of a row of {len} bytes");
    }
}

#[test]
fn an_index_made_over_a_clustered_tables_rows_finds_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Database::builder().page_size(PAGE).open(dir.path().join("db")).unwrap());
    let mut w = db.begin_write().unwrap();
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    let mut model = Model::default();
    for k in (0..3000).rev() {
        // One row in nine spills: the index is made from rows read off their chains too.
        let note = match k % 9 {
            0 => Some("s".repeat(1000 + (k as usize % 2000))),
            1 => None,
            _ => Some(format!("note {k}")),
        };
        let row = Row {
            grp: (k % 7) as i32,
            code: (k % 5 != 0).then_some(k * 2),
            name: format!("n{}", k % 13),
            note,
        };
        w.insert(&t, &values(k, &row)).unwrap();
        model.put(k, row);
    }
    w.commit().unwrap();
    let mut seen = Seen::default();
    // Two rows with one code: the unique index is refused, nothing changed.
    let mut w = db.begin_write().unwrap();
    w.update_by(&w.primary_key(&t).unwrap().unwrap(), &[Value::I64(7)], &[("code", Value::I64(2))])
        .unwrap();
    let e = w.create_unique_index("t_code", &t, &["code"]).unwrap_err();
    assert!(matches!(&e, Error::UniqueViolation { index, .. } if index == "t_code"), "{e}");
    assert!(matches!(w.index("t_code"), Err(Error::UnknownIndex(_))));
    w.abort().unwrap();
    let mut w = db.begin_write().unwrap();
    w.create_unique_index("t_code", &t, &["code"]).unwrap();
    w.create_index("t_grp_name", &t, &["grp", "name"]).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    compare(&w, &model, &mut rng, "created, in the writer", &mut seen);
    w.commit().unwrap();
    compare(&db.begin_read().unwrap(), &model, &mut rng, "created, committed", &mut seen);
    assert!(seen.spilled_read > 600, "{seen:?}");
    assert_sound(&db, "created");
    // Dropped again, in a transaction rolled back and then one committed.
    let snapshot = db.snapshot().unwrap();
    let mut w = db.begin_write().unwrap();
    w.drop_index("t_code").unwrap();
    w.abort().unwrap();
    compare(&db.begin_read().unwrap(), &model, &mut rng, "a drop rolled back", &mut seen);
    let mut w = db.begin_write().unwrap();
    w.drop_index("t_code").unwrap();
    w.drop_index("t_grp_name").unwrap();
    w.commit().unwrap();
    compare(&snapshot, &model, &mut rng, "a snapshot from before the drop", &mut seen);
    drop(snapshot);
    assert_sound(&db, "dropped");
}

#[test]
fn a_unique_violation_through_an_index_of_a_clustered_table_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder().page_size(PAGE).open(dir.path().join("db")).unwrap();
    let mut w = db.begin_write().unwrap();
    let t = w.create_table_with("t", schema(), Storage::Clustered).unwrap();
    let code = w.create_unique_index("t_code", &t, &["code"]).unwrap();
    w.create_index("t_grp_name", &t, &["grp", "name"]).unwrap();
    let pk = w.primary_key(&t).unwrap().unwrap();
    let mut model = Model::default();
    for k in 0..400 {
        // Every tenth row spills: a refused write leaves its chain as it was.
        let note = (k % 10 == 3).then(|| "v".repeat(2000));
        let row = Row { grp: (k % 3) as i32, code: Some(k * 10), name: format!("row {k}"), note };
        w.insert(&t, &values(k, &row)).unwrap();
        model.put(k, row);
    }
    let mut rng = StdRng::seed_from_u64(1);
    let mut seen = Seen::default();
    let long = "w".repeat(3000);
    let taken = Row { grp: 1, code: Some(50), name: "x".into(), note: Some(long.clone()) };
    let violation = |r: nvpage::Result<_>| {
        assert!(
            matches!(&r, Err(Error::UniqueViolation { index, .. }) if index == "t_code"),
            "{:?}",
            r.map(|_| ())
        );
    };
    // An insert, an update by primary key, a move of the primary key onto a free key with a
    // taken code, an upsert by primary key and one by code onto another row's key; spilled
    // rows among them, and a refused write that would have spilled the row.
    violation(w.insert(&t, &values(1000, &taken)).map(drop));
    violation(w.update_by(&pk, &[Value::I64(3)], &[("code", Value::I64(50))]).map(drop));
    violation(
        w.update_by(
            &pk,
            &[Value::I64(4)],
            &[("code", Value::I64(50)), ("note", Value::Str(&long))],
        )
        .map(drop),
    );
    violation(
        w.update_by(&pk, &[Value::I64(3)], &[("k", Value::I64(2000)), ("code", Value::I64(60))])
            .map(drop),
    );
    violation(w.upsert(&pk, &values(3, &taken)).map(drop));
    compare(&w, &model, &mut rng, "after the refusals", &mut seen);
    // The transaction goes on, and a NULL code never collides.
    let free = Row { grp: 2, code: None, name: "free".into(), note: None };
    w.insert(&t, &values(1000, &free)).unwrap();
    w.insert(&t, &values(1001, &free)).unwrap();
    model.put(1000, free.clone());
    model.put(1001, free);
    // A row keeps its own code as it changes otherwise.
    w.update_by(&code, &[Value::I64(50)], &[("name", Value::Str("renamed"))]).unwrap();
    model.rows.get_mut(&5).unwrap().name = "renamed".into();
    compare(&w, &model, &mut rng, "after the writes", &mut seen);
    w.commit().unwrap();
    compare(&db.begin_read().unwrap(), &model, &mut rng, "committed", &mut seen);
    assert_sound(&db, "committed");
}
