//! Goal: damage to an index of a clustered table beside its primary key (whose entries name
//! rows by primary key) is reported, never a panic or a row silently skipped, on every layer. A
//! clustered table with a unique index on `code` and a non-unique one on `grp` (4 KiB pages,
//! 3,000 rows) is closed, and one leaf of an index is rewritten with a valid checksum, each on
//! its own copy of the file:
//!
//! - (a) an entry of `t_code` whose value names a primary key the table does not hold;
//! - (b) an entry of `t_code` whose value names another row (whose code is not the entry's);
//! - (c) a leaf of `t_code` with its last entry cut off (one row without an entry, and the
//!   catalog's count one above the leaves');
//! - (d) an entry of `t_grp` whose value names a primary key the table does not hold.
//!
//! For each, `check` reports damage naming the index. Where an entry names a missing key, reads
//! through it (`get_by`, `lookup`, range scans both ways, `update_by` and `delete_by` by its
//! key) are typed `Corrupt` errors, while `IndexScan::ids` (which reads no row) still counts
//! every entry.

use crate::damage;

use std::ops::Bound;
use std::path::Path;

use damage::{PS, page_mut, page_of, reseal, u16_at, u64_at};
use nvpage::{
    Column, ColumnType, DATA_FILE, Database, Error, Layer, ReadOps, Schema, Storage, Value,
};

const ROWS: i64 = 3_000;

/// Where a leaf keeps what the damage reads and changes (engine/src/index/node.rs).
const TYPE: usize = 16;
const LEVEL: usize = 17;
const COUNT: usize = 18;
const LEAF_VALUES: usize = 29;
const SLOTS: usize = 64;
const SLOT: usize = 6;

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("k", ColumnType::I64),
        Column::new("code", ColumnType::I64),
        Column::new("grp", ColumnType::I32),
        Column::new("name", ColumnType::VarChar { max_len: 100 }),
    ])
    .unwrap()
    .with_primary_key(&["k"])
    .unwrap()
}

/// An `I64` as an index key encodes it: a byte saying it is not NULL, then big-endian with the
/// sign bit flipped.
fn encode(v: i64) -> [u8; 9] {
    let mut b = [1u8; 9];
    b[1..].copy_from_slice(&((v as u64) ^ (1 << 63)).to_be_bytes());
    b
}

fn decode(b: &[u8]) -> i64 {
    (u64::from_be_bytes(b[1..9].try_into().unwrap()) ^ (1 << 63)) as i64
}

fn open(dir: &Path, layer: Layer) -> Database {
    Database::builder()
        .layer(layer)
        .page_size(PS as u64)
        .pool_bytes(64 * PS as u64)
        .open(dir)
        .unwrap()
}

/// Row `k`'s code is `3k`, its group `k % 7`.
fn build(dir: &Path) -> Vec<u8> {
    let db = open(dir, Layer::Pread);
    let mut tx = db.begin_write().unwrap();
    let t = tx.create_table_with("t", schema(), Storage::Clustered).unwrap();
    tx.create_unique_index("t_code", &t, &["code"]).unwrap();
    tx.create_index("t_grp", &t, &["grp"]).unwrap();
    for k in 0..ROWS {
        let name = "n".repeat((k % 50) as usize);
        let row = [Value::I64(k), Value::I64(3 * k), Value::I32((k % 7) as i32), Value::Str(&name)];
        tx.insert(&t, &row).unwrap();
    }
    tx.commit().unwrap();
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.damage);
    drop(db);
    std::fs::read(dir.join(DATA_FILE)).unwrap()
}

/// Where entry `i` of leaf `p` keeps its key, and its value: an entry is key length u16, key,
/// value length u16, value.
fn entry(p: &[u8], i: usize) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
    let off = u16_at(p, SLOTS + SLOT * i);
    let key = off + 2..off + 2 + u16_at(p, off);
    let len_at = key.end;
    (key, len_at + 2..len_at + 2 + u16_at(p, len_at))
}

/// Leaves of sized values whose entries have keys of `key_len` bytes and values of 9 (an
/// encoded primary key): `t_code`'s leaves for 9, `t_grp`'s for 14 (its group, then the key).
fn leaves(file: &[u8], key_len: usize) -> Vec<u64> {
    let page_count = u64_at(file, 32);
    (0..page_count)
        .filter(|&p| {
            let b = page_of(file, p);
            b[TYPE] == b'X' && b[LEVEL] == 0 && b[LEAF_VALUES] == 1 && u16_at(b, COUNT) > 2 && {
                let (k, v) = entry(b, 0);
                k.len() == key_len && v.len() == 9
            }
        })
        .collect()
}

/// The code an entry of `t_code` is under.
fn code_of(p: &[u8], i: usize) -> i64 {
    decode(&p[entry(p, i).0])
}

#[derive(Debug)]
struct Case {
    name: &'static str,
    /// The index the damage is in.
    index: &'static str,
    /// A code whose entry names a key the table lacks (reads through it must fail).
    missing: Option<i64>,
}

fn damage(file: &mut [u8], which: char) -> Case {
    match which {
        'a' | 'b' => {
            let p = leaves(file, 9)[1];
            let page = page_mut(file, p);
            let code = code_of(page, 1);
            let (_, v) = entry(page, 1);
            let pk = if which == 'a' { 10 * ROWS } else { decode(&page[entry(page, 2).1]) };
            page[v].copy_from_slice(&encode(pk));
            reseal(file, p);
            if which == 'a' {
                Case { name: "(a) a missing key", index: "t_code", missing: Some(code) }
            } else {
                Case { name: "(b) another row", index: "t_code", missing: None }
            }
        }
        'c' => {
            let p = leaves(file, 9)[1];
            let page = page_mut(file, p);
            let n = u16_at(page, COUNT);
            page[COUNT..COUNT + 2].copy_from_slice(&(n as u16 - 1).to_le_bytes());
            reseal(file, p);
            Case { name: "(c) an entry cut off", index: "t_code", missing: None }
        }
        _ => {
            let p = leaves(file, 14)[1];
            let page = page_mut(file, p);
            let (_, v) = entry(page, 1);
            page[v].copy_from_slice(&encode(10 * ROWS + 1));
            reseal(file, p);
            Case { name: "(d) a missing key in t_grp", index: "t_grp", missing: None }
        }
    }
}

fn corrupt<T: std::fmt::Debug>(r: nvpage::Result<T>, what: &str) {
    match r {
        Err(Error::CorruptPage { .. } | Error::CorruptRow(_) | Error::CorruptCatalog(_)) => {}
        other => panic!("{what}: {other:?}, not a corruption error"),
    }
}

#[test]
fn a_secondary_entry_naming_a_missing_key_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("db");
    let pristine = build(&db_dir);
    assert!(!leaves(&pristine, 9).is_empty() && !leaves(&pristine, 14).is_empty());
    for which in ['a', 'b', 'c', 'd'] {
        let mut file = pristine.clone();
        let case = damage(&mut file, which);
        for layer in Layer::compiled() {
            std::fs::write(db_dir.join(DATA_FILE), &file).unwrap();
            let db = open(&db_dir, layer);
            let report = db.check().unwrap();
            let what = format!("{} on {layer}", case.name);
            assert!(
                report.damage.iter().any(|d| d.contains(&format!("index {}", case.index))),
                "{what}: {:?}",
                report.damage
            );
            if which == 'c' {
                assert!(
                    report.damage.iter().any(|d| d.contains("the catalog counts")),
                    "{what}: {:?}",
                    report.damage
                );
            }
            let rx = db.begin_read().unwrap();
            let index = rx.index(case.index).unwrap();
            // Row ids are not rows: every entry is still counted.
            let all = rx.index_range(&index, Bound::Unbounded, Bound::Unbounded).unwrap();
            let entries = all.ids().count() as i64;
            assert_eq!(entries, if which == 'c' { ROWS - 1 } else { ROWS }, "{what}");
            let whole = |rev: bool| -> nvpage::Result<u64> {
                let scan = rx.index_range(&index, Bound::Unbounded, Bound::Unbounded)?;
                let rows: Box<dyn Iterator<Item = _>> =
                    if rev { Box::new(scan.rev()) } else { Box::new(scan) };
                rows.map(|g| g.map(drop)).try_fold(0, |n, r| r.map(|()| n + 1))
            };
            if which == 'd' {
                corrupt(whole(false), &format!("{what}: a scan"));
                corrupt(whole(true), &format!("{what}: a scan backwards"));
            }
            let Some(code) = case.missing else { continue };
            corrupt(whole(false), &format!("{what}: a scan"));
            corrupt(whole(true), &format!("{what}: a scan backwards"));
            let key = [Value::I64(code)];
            corrupt(rx.get_by(&index, &key).map(|g| g.is_some()), &format!("{what}: get_by"));
            let looked = rx.lookup(&index, &key).unwrap().map(|g| g.map(drop)).collect::<Vec<_>>();
            corrupt(looked.into_iter().collect::<nvpage::Result<Vec<()>>>(), &what);
            drop(rx);
            let mut w = db.begin_write().unwrap();
            let set = [("name", Value::Str("x"))];
            corrupt(w.update_by(&index, &key, &set), &format!("{what}: update_by"));
            drop(w);
            // The error doomed that transaction: the next starts afresh.
            let mut w = db.begin_write().unwrap();
            corrupt(w.delete_by(&index, &key), &format!("{what}: delete_by"));
            drop(w);
            // Codes whose entries are sound still read.
            let rx = db.begin_read().unwrap();
            let g = rx.get_by(&index, &[Value::I64(code + 3)]).unwrap();
            assert!(g.is_some(), "{what}");
        }
    }
}
