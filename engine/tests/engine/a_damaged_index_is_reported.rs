//! Goal: a damaged index page is reported, never a panic or a hang, on every layer.
//! A unique index over long names (4 KiB pages, keys sharing a 150-byte prefix, so the tree
//! has inner nodes below its root) is closed, and its pages in the data file are damaged in
//! seventeen distinct ways, each on its own copy of the file:
//!
//! - bytes flipped under the checksum, (1) in a leaf and (2) in an inner node: the storage
//!   layer's checksum reports them on read;
//! - and pages rewritten with a valid checksum but a wrong structure: (3) a leaf's keys out of
//!   order, (4) a leaf's right link to a heap page, (5) a leaf's right link skipping a leaf,
//!   (6) the leaf links closed into a ring, (7) a child pointer to a heap page, (8) a child
//!   pointer past the end of the file, (9) a child pointer back up to the root, (10) an entry
//!   count too large for the page, (11) an entry past the end of the page, (12) slots sharing
//!   one entry (more bytes than the page holds: an insert's free-space sum underflowed), (13)
//!   a leaf's level byte 255 (a child's level + 1 overflowed), (14) another index's id in a
//!   node, (15) an inner node without entries, (16) a slot's key head not its key's;
//! - and (17) a root whose one child left, once a delete empties its other, is itself (the
//!   delete's collapse of the root looped forever).
//!
//! For each, `check` reports damage naming the index and the page; and lookups, `get_by`,
//! range scans from either end, inserts and deletes that reach the damage return a typed error.
//! Damage only some operations can see (keys out of order, leaf links: the scans that walk
//! them; a point lookup reads one leaf and trusts its order and its key heads) is asserted
//! where it is seen; every other operation must still return, whatever it returns.

use crate::damage;

use std::collections::HashMap;
use std::ops::Bound;
use std::path::Path;

use damage::{PS, names, page_mut, page_of, reseal, u16_at, u64_at};
use nvpage::{
    Column, ColumnType, DATA_FILE, Database, Layer, ReadOps, Result, RowId, Schema, Value, kind,
};

const INDEX: &str = "by_name";

fn name(k: i64) -> String {
    format!("{}{k:05}", "n".repeat(150))
}

fn open(dir: &Path, layer: Layer) -> Database {
    Database::builder()
        .layer(layer)
        .page_size(PS as u64)
        .pool_bytes(64 * PS as u64)
        .open(dir)
        .unwrap()
}

/// The database of `rows` rows under a unique index on their names, built on the loaded table;
/// returns its data file.
fn build(dir: &Path, rows: i64) -> Vec<u8> {
    let db = open(dir, Layer::Pread);
    let mut tx = db.begin_write().unwrap();
    let schema = Schema::new(vec![
        Column::new("id", ColumnType::I64),
        Column::new("name", ColumnType::VarChar { max_len: 200 }),
    ])
    .unwrap();
    let t = tx.create_table("t", schema).unwrap();
    for k in 0..rows {
        tx.insert(&t, &[Value::I64(k), Value::Str(&name(k))]).unwrap();
    }
    tx.create_unique_index(INDEX, &t, &["name"]).unwrap();
    tx.commit().unwrap();
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.damage);
    drop(db);
    std::fs::read(dir.join(DATA_FILE)).unwrap()
}

/// Where index pages' slots start, and a slot's bytes: the entry's offset (u16), its key's head.
const SLOTS: usize = 64;
const SLOT: usize = 6;

/// Entry `i`'s (key, value) in index page `p` (engine/src/index/node.rs: count at 18, slots
/// from 64, each entry a u16 key length, the key, the value).
fn entry(p: &[u8], i: usize) -> (&[u8], &[u8]) {
    let off = u16_at(p, SLOTS + SLOT * i);
    let len = u16_at(p, off);
    let value = if p[17] == 0 { 10 } else { 8 };
    (&p[off + 2..off + 2 + len], &p[off + 2 + len..off + 2 + len + value])
}

/// The tree as the pristine file holds it.
struct Tree {
    root: u64,
    /// Leaves in key order.
    leaves: Vec<u64>,
    /// Inner nodes one level above the leaves.
    lowest_inner: Vec<u64>,
    heap: u64,
    page_count: u64,
}

impl Tree {
    fn read(file: &[u8]) -> Tree {
        let page_count = u64_at(file, 32);
        let pages = || (0..page_count).map(|p| (p, page_of(file, p)));
        let index = pages().filter(|(_, p)| p[16] == b'X');
        let root = index.clone().max_by_key(|(_, p)| p[17]).unwrap().0;
        let mut leaf = index.clone().find(|(_, p)| p[17] == 0 && u64_at(p, 32) == 0).unwrap().0;
        let mut leaves = vec![leaf];
        while u64_at(page_of(file, leaf), 40) != 0 {
            leaf = u64_at(page_of(file, leaf), 40);
            leaves.push(leaf);
        }
        let lowest_inner = index.filter(|(_, p)| p[17] == 1).map(|(id, _)| id).collect();
        let heap = pages().find(|(_, p)| p[16] == b'H').unwrap().0;
        Tree { root, leaves, lowest_inner, heap, page_count }
    }

    /// A name the index routes through node `p`: the first of the leftmost leaf below it.
    fn probe(&self, file: &[u8], mut p: u64) -> String {
        while page_of(file, p)[17] > 0 {
            p = u64_at(entry(page_of(file, p), 0).1, 0);
        }
        let key = entry(page_of(file, p), 0).0;
        // A unique key of one VarChar with no NULL: 0x01, the bytes, 0x00 0x00.
        String::from_utf8(key[1..key.len() - 2].to_vec()).unwrap()
    }
}

/// Which operations failed with an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ops(u16);

const GET_BY: u16 = 1;
const LOOKUP: u16 = 2;
const FROM_PROBE: u16 = 4;
const TO_PROBE_REV: u16 = 8;
const ALL_FORWARD: u16 = 16;
const ALL_REVERSE: u16 = 32;
const INSERT: u16 = 64;
const DELETE: u16 = 128;
const PROBE: u16 = GET_BY | LOOKUP | FROM_PROBE | TO_PROBE_REV;
const FULL: u16 = ALL_FORWARD | ALL_REVERSE;
const WRITES: u16 = INSERT | DELETE;

/// Whether a scan ends in an error (every row it yields read).
fn scan_fails<'t>(items: impl Iterator<Item = Result<nvpage::RowGuard<'t>>>) -> bool {
    for item in items {
        match item.and_then(|g| g.row().map(|r| r.bytes().len())) {
            Ok(_) => {}
            Err(e) => {
                let _ = e.to_string();
                return true;
            }
        }
    }
    false
}

/// Runs every read and write around `probe` (a name routed through the damage) and returns
/// which failed.
fn operate(db: &Database, probe: &str) -> Ops {
    let mut failed = 0;
    let key = [Value::Str(probe)];
    let key: &[Value<'_>] = &key;
    {
        let rx = db.begin_read().unwrap();
        let ix = rx.index(INDEX).unwrap();
        let mut fail_if = |bit: u16, failed_now: bool| {
            if failed_now {
                failed |= bit;
            }
        };
        fail_if(
            GET_BY,
            rx.get_by(&ix, key).and_then(|g| g.map(|g| g.row().map(|_| ())).transpose()).is_err(),
        );
        fail_if(LOOKUP, rx.lookup(&ix, key).map(scan_fails).unwrap_or(true));
        let from = rx.index_range(&ix, Bound::Included(key), Bound::Unbounded);
        fail_if(FROM_PROBE, from.map(scan_fails).unwrap_or(true));
        let to = rx.index_range(&ix, Bound::Unbounded, Bound::Included(key));
        fail_if(TO_PROBE_REV, to.map(|s| scan_fails(s.rev())).unwrap_or(true));
        let all = rx.index_range(&ix, Bound::Unbounded, Bound::Unbounded);
        fail_if(ALL_FORWARD, all.map(scan_fails).unwrap_or(true));
        let all = rx.index_range(&ix, Bound::Unbounded, Bound::Unbounded);
        fail_if(ALL_REVERSE, all.map(|s| scan_fails(s.rev())).unwrap_or(true));
    }
    // A new name right after the probe's: the same leaf.
    let mut tx = db.begin_write().unwrap();
    let t = tx.table("t").unwrap();
    let next = format!("{probe}x");
    if tx.insert(&t, &[Value::I64(-1), Value::Str(&next)]).is_err() {
        failed |= INSERT;
    }
    drop(tx);
    let mut tx = db.begin_write().unwrap();
    let id = row_ids(&tx)[probe];
    if tx.delete(&t, id).is_err() {
        failed |= DELETE;
    }
    drop(tx);
    Ops(failed)
}

/// Every row's id by name, found without the index.
fn row_ids(tx: &impl ReadOps) -> HashMap<String, RowId> {
    let t = tx.table("t").unwrap();
    let col = t.col::<kind::Str>("name").unwrap();
    let mut ids = HashMap::new();
    tx.for_each_row(&t, |r| {
        ids.insert(r.get(col)?.to_owned(), r.id());
        Ok(())
    })
    .unwrap();
    ids
}

/// One kind of damage: what it does to the file, the page `check` must name, a name routed
/// through it, and the operations that must fail.
struct Case {
    what: &'static str,
    file: Vec<u8>,
    named: u64,
    probe: String,
    must_fail: u16,
}

fn cases(file: &[u8], tree: &Tree) -> Vec<Case> {
    let mid = tree.leaves.len() / 2;
    let leaf = tree.leaves[mid];
    let (first, last) = (tree.leaves[0], *tree.leaves.last().unwrap());
    let inner = tree.lowest_inner[tree.lowest_inner.len() / 2];
    assert_ne!(inner, tree.root, "a tree with inner nodes below its root");
    let mut out = Vec::new();
    let mut case = |what, named, at: u64, must_fail, damage: &dyn Fn(&mut Vec<u8>)| {
        let mut f = file.to_vec();
        damage(&mut f);
        out.push(Case { what, file: f, named, probe: tree.probe(file, at), must_fail });
    };
    let flip = |p: u64| move |f: &mut Vec<u8>| page_mut(f, p)[2000] ^= 0x5A;
    case("a leaf's bytes flipped", leaf, leaf, PROBE | FULL | WRITES, &flip(leaf));
    case("an inner node's bytes flipped", inner, inner, PROBE | WRITES, &flip(inner));
    case("a leaf's keys out of order", leaf, leaf, FULL, &|f| {
        // Slots 0 and 1 swapped whole: each head stays its key's.
        let p = page_mut(f, leaf);
        for b in 0..SLOT {
            p.swap(SLOTS + b, SLOTS + SLOT + b);
        }
        reseal(f, leaf);
    });
    let set_u64 = |p: u64, at: usize, v: u64| {
        move |f: &mut Vec<u8>| {
            page_mut(f, p)[at..at + 8].copy_from_slice(&v.to_le_bytes());
            reseal(f, p);
        }
    };
    let forward = FROM_PROBE | ALL_FORWARD;
    case("a leaf's right link to a heap page", leaf, leaf, forward, &set_u64(leaf, 40, tree.heap));
    let skip = tree.leaves[mid + 2];
    case("a leaf's right link skipping a leaf", leaf, leaf, forward, &set_u64(leaf, 40, skip));
    let ring = FROM_PROBE | TO_PROBE_REV | FULL;
    case("the leaf links closed into a ring", last, last, ring, &|f| {
        set_u64(last, 40, first)(f);
        set_u64(first, 32, last)(f);
    });
    // Where the inner node keeps its entry 0's child.
    let child0 = {
        let (key, _) = entry(page_of(file, inner), 0);
        u16_at(page_of(file, inner), SLOTS) + 2 + key.len()
    };
    let to_child = |target: u64| set_u64(inner, child0, target);
    let heap = tree.heap;
    case("a child pointer to a heap page", heap, inner, PROBE | WRITES, &to_child(heap));
    let past = tree.page_count + 10;
    case("a child pointer past the file", past, inner, PROBE | WRITES, &to_child(past));
    let root = tree.root;
    case("a child pointer back up to the root", root, inner, PROBE | WRITES, &to_child(root));
    let set_u16 = |p: u64, at: usize, v: u16| {
        move |f: &mut Vec<u8>| {
            page_mut(f, p)[at..at + 2].copy_from_slice(&v.to_le_bytes());
            reseal(f, p);
        }
    };
    let all = PROBE | FULL | WRITES;
    case("an entry count too large", leaf, leaf, all, &set_u16(leaf, 18, u16::MAX));
    let slot1 = SLOTS + SLOT;
    case("an entry past the page", leaf, leaf, all, &set_u16(leaf, slot1, PS as u16 - 2));
    // Every slot on one entry: each entry read lies inside the page, so a point lookup (a binary
    // search reads a few entries, and checks only those) may find the one key; scans meet equal
    // keys out of order, the writer checks the entries' sum before it edits, check reports it.
    case("slots sharing one entry", leaf, leaf, all & !GET_BY, &|f| {
        let p = page_mut(f, leaf);
        let entry0 = u16_at(p, SLOTS);
        let shared = (entry0 - SLOTS) / SLOT;
        for i in 1..shared {
            p.copy_within(SLOTS..SLOTS + SLOT, SLOTS + SLOT * i);
        }
        p[18..20].copy_from_slice(&(shared as u16).to_le_bytes());
        p[20..24].copy_from_slice(&((SLOTS + SLOT * shared) as u32).to_le_bytes());
        reseal(f, leaf);
    });
    case("a leaf's level 255", leaf, leaf, all, &|f| {
        page_mut(f, leaf)[17] = 255;
        reseal(f, leaf);
    });
    case("another index's id in a leaf", leaf, leaf, all, &|f| {
        page_mut(f, leaf)[24..28].copy_from_slice(&999u32.to_le_bytes());
        reseal(f, leaf);
    });
    case("an inner node without entries", inner, inner, PROBE | WRITES, &set_u16(inner, 18, 0));
    // A search compares heads and trusts them, as it trusts key order: check must see it.
    case("a key head not its key's", leaf, leaf, 0, &|f| {
        page_mut(f, leaf)[SLOTS + SLOT + 2] ^= 0x01;
        reseal(f, leaf);
    });
    out
}

#[test]
fn damaged_index_pages_are_reported_and_every_operation_returns_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("db");
    let pristine = build(&db_dir, 1000);
    let tree = Tree::read(&pristine);
    let cases = cases(&pristine, &tree);
    assert_eq!(cases.len(), 16);
    for c in &cases {
        for layer in Layer::compiled() {
            std::fs::write(db_dir.join(DATA_FILE), &c.file).unwrap();
            let db = open(&db_dir, layer);
            let report = db.check().unwrap();
            assert!(!report.is_sound(), "{}: check found nothing", c.what);
            assert!(names(&report.damage, INDEX, c.named), "{}: {:?}", c.what, report.damage);
            let failed = operate(&db, &c.probe);
            assert_eq!(
                Ops(failed.0 & c.must_fail),
                Ops(c.must_fail),
                "{} on {layer:?}: these failed, the rest must too",
                c.what
            );
        }
    }
    // The pristine file, reopened, is sound: the damage was each case's own.
    std::fs::write(db_dir.join(DATA_FILE), &pristine).unwrap();
    let db = open(&db_dir, Layer::Pread);
    assert!(db.check().unwrap().is_sound());
    assert_eq!(operate(&db, &name(500)), Ops(0));
}

#[test]
fn a_root_whose_last_child_is_itself_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("db");
    // Two leaves under a root: 30 keys of 158 bytes, 21 to a leaf filled to nine tenths.
    let pristine = build(&db_dir, 30);
    let tree = Tree::read(&pristine);
    assert_eq!(tree.leaves.len(), 2);
    let root = tree.root;
    let mut file = pristine.clone();
    let r = page_of(&file, root);
    assert_eq!((r[17], u16_at(r, 18)), (1, 2), "a root of two entries above the leaves");
    let (key, _) = entry(r, 1);
    let at = u16_at(r, SLOTS + SLOT) + 2 + key.len();
    page_mut(&mut file, root)[at..at + 8].copy_from_slice(&root.to_le_bytes());
    reseal(&mut file, root);
    let first_leaf = u16_at(page_of(&file, tree.leaves[0]), 18) as i64;
    for layer in Layer::compiled() {
        std::fs::write(db_dir.join(DATA_FILE), &file).unwrap();
        let db = open(&db_dir, layer);
        let report = db.check().unwrap();
        assert!(names(&report.damage, INDEX, root), "{:?}", report.damage);
        let mut tx = db.begin_write().unwrap();
        let t = tx.table("t").unwrap();
        let ids = row_ids(&tx);
        // Emptying the first leaf leaves the root one entry: the damaged one.
        for k in 0..first_leaf - 1 {
            tx.delete(&t, ids[&name(k)]).unwrap();
        }
        let e = tx.delete(&t, ids[&name(first_leaf - 1)]).unwrap_err();
        assert!(matches!(e, nvpage::Error::CorruptPage { page, .. } if page == root), "{e}");
    }
}

/// Rewrites the one-page catalog of `file` (version 4) as version 2 wrote it: version 2, and no
/// flags word after it (the chunk's length, at byte 20 of its page, 4 bytes shorter).
fn as_version_2(file: &mut [u8]) {
    let page = &mut file[PS..2 * PS];
    let len = u32::from_le_bytes(page[20..24].try_into().unwrap()) as usize;
    page[32..36].copy_from_slice(&2u32.to_le_bytes());
    page.copy_within(40..32 + len, 36);
    page[20..24].copy_from_slice(&((len - 4) as u32).to_le_bytes());
    reseal(file, 1);
}

/// A file whose catalog says version 2 (index pages without key heads, before this format)
/// holds indexes in a format this nvpage does not read: opening it is a typed error saying so,
/// not a misread tree. The same file without indexes opens (its tables' pages did not change).
#[test]
fn an_index_of_the_old_page_format_is_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("db");
    let mut file = build(&db_dir, 50);
    // The catalog's blob starts on page 1 after its 32-byte header, with its version (u32).
    let version = PS + 32;
    assert_eq!(u64_at(&file, version) as u32, 4, "this nvpage writes catalog version 4");
    as_version_2(&mut file);
    std::fs::write(db_dir.join(DATA_FILE), &file).unwrap();
    for layer in Layer::compiled() {
        let e = Database::builder().layer(layer).page_size(PS as u64).open(&db_dir).unwrap_err();
        assert!(matches!(e, nvpage::Error::IncompatibleFormat(_)), "{e}");
        assert!(e.to_string().contains("drop the indexes"), "{e}");
    }
    // Without its index (dropped by this nvpage, then marked version 2 again) it opens.
    let db_dir = dir.path().join("db2");
    build(&db_dir, 50);
    {
        let db = open(&db_dir, Layer::Pread);
        let mut tx = db.begin_write().unwrap();
        tx.drop_index(INDEX).unwrap();
        tx.commit().unwrap();
    }
    let mut file = std::fs::read(db_dir.join(DATA_FILE)).unwrap();
    as_version_2(&mut file);
    std::fs::write(db_dir.join(DATA_FILE), &file).unwrap();
    let db = open(&db_dir, Layer::Pread);
    let rx = db.begin_read().unwrap();
    assert_eq!(rx.row_count(&rx.table("t").unwrap()).unwrap(), 50);
    drop(rx);
    assert!(db.check().unwrap().is_sound());
}
