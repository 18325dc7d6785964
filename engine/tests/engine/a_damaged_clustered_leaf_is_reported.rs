//! Goal: a damaged leaf of a clustered table, or a damaged chain of overflow pages holding one of
//! its rows, is reported, never a panic, a hang or a silently shorter read, on every layer. A
//! clustered table (4 KiB pages, 12,000 rows of 25 to 264 bytes, so its tree has inner nodes
//! below its root, and one in 500 of 1,500 to 3,800 bytes, spilled to an overflow page) is
//! closed, and one of its leaves in the data file is rewritten with a valid checksum in ten
//! ways, each on its own copy of the file:
//!
//! - (a) two entries swapped, rows and all: keys out of order;
//! - rows whose bytes no longer decode: (b) a string's offset past the row's end, (b2) a
//!   string's bytes not UTF-8;
//! - (c) a row whose key column is not its entry's key (the row says 2k - 1, the entry 2k);
//! - (d) an entry's value length running past the page;
//! - the leaf's right link (e) skipping a leaf and (e2) pointing at the leaf itself;
//! - (f) another index's id in the leaf; (g) a leaf-values byte of an unknown kind, (g2) one
//!   that says the leaf holds row ids.
//!
//! and, around a spilled row, in six more:
//!
//! - its overflow page (h) made a heap page's type, (i) another index's, (j) a byte shorter;
//! - (k) its entry's reference naming a heap page; (l) its leaf's flags saying it holds no
//!   spilled row; (m) a string in the spilled row not UTF-8.
//!
//! For each, `check` reports damage naming the table's tree (`t_pkey`) and the page; and the
//! full scans (row at a time, and a page fold on two threads), `get_by`, range scans from a key
//! in the leaf and over everything both ways, `update_by`, `delete_by` and an insert into the
//! leaf return a typed error where they walk the damage. Damage an operation cannot see is
//! asserted only where it is seen, and every other operation must still return: a point lookup
//! trusts its leaf's order and its rows' keys; a table scan finds the leaves from the inner
//! nodes, not their links, and yields rows in slot order without comparing keys; a delete by
//! key takes the row out unread, and an insert reads no other row. A full read that returns
//! without an error must have read every row.

use crate::damage;

use std::ops::Bound;
use std::path::Path;

use damage::{PS, names, page_mut, page_of, reseal, u16_at, u32_at, u64_at};
use nvpage::{
    Column, ColumnType, DATA_FILE, Database, Decimal, Error, Index, Layer, ReadOps, Result, RowRef,
    Schema, Storage, Table, Value,
};

const ROWS: i64 = 12_000;
const TREE: &str = "t_pkey";

/// Where a leaf keeps what the damage changes (engine/src/index/node.rs).
const COUNT: usize = 18;
const INDEX_ID: usize = 24;
const LEAF_VALUES: usize = 29;
const FLAGS: usize = 30;
/// The top bit of a leaf entry's value length: the value names the row's overflow page.
const SPILLED: usize = 0x8000;
/// Where an overflow page keeps its type, index id and length (engine/src/index/spill.rs).
const SPILL_INDEX_ID: usize = 20;
const SPILL_LEN: usize = 32;
const SPILL_DATA: usize = 36;
const PREV: usize = 32;
const NEXT: usize = 40;
/// Slots from byte 64, 6 bytes each: the entry's offset (u16) and its key's head.
const SLOTS: usize = 64;
const SLOT: usize = 6;

/// Where a row of [`schema`] keeps its key (after the one-byte null bitmap) and its name's
/// slot (offset u16, length u16); its values start at `FIXED_END`.
const ROW_K: usize = 1;
const ROW_NAME: usize = 9;
const FIXED_END: usize = 25;

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("k", ColumnType::I64),
        Column::new("name", ColumnType::VarChar { max_len: 3900 }),
        Column::new("grp", ColumnType::I32),
        Column::nullable("amount", ColumnType::Decimal { scale: 2 }),
    ])
    .unwrap()
    .with_primary_key(&["k"])
    .unwrap()
}

/// Row `i`'s name: 0 to 239 letters, so a leaf holds from a dozen rows to a hundred; one row in
/// 500 has 1,500 to 3,799, too many for a leaf entry.
fn name(i: i64) -> String {
    let len = if i % 500 == 7 { 1500 + (i * 37) % 2300 } else { (i * 37) % 240 };
    (0..len).map(|j| char::from(b'a' + ((i + j) % 26) as u8)).collect()
}

/// Row `i`, whose key is `2 * i`: every odd key is free for an insert between two rows.
fn insert_row(tx: &mut nvpage::WriteTxn<'_>, t: &Table, k: i64) -> Result<()> {
    let i = k / 2;
    let name = name(i);
    let amount = if i % 5 == 0 { Value::Null } else { Value::Decimal(Decimal::new(i * 3, 2)) };
    tx.insert(t, &[Value::I64(k), Value::Str(&name), Value::I32((i % 7) as i32), amount]).map(drop)
}

fn open(dir: &Path, layer: Layer) -> Database {
    Database::builder()
        .layer(layer)
        .page_size(PS as u64)
        .pool_bytes(64 * PS as u64)
        .open(dir)
        .unwrap()
}

/// The clustered table `t` of `ROWS` rows, and a heap table with an index of its own (whose id
/// a damaged leaf takes); returns the data file.
fn build(dir: &Path) -> Vec<u8> {
    let db = open(dir, Layer::Pread);
    let mut tx = db.begin_write().unwrap();
    let t = tx.create_table_with("t", schema(), Storage::Clustered).unwrap();
    for i in 0..ROWS {
        insert_row(&mut tx, &t, 2 * i).unwrap();
    }
    let other = Schema::new(vec![Column::new("id", ColumnType::I64)]).unwrap();
    let o = tx.create_table("other", other).unwrap();
    tx.create_unique_index("other_id", &o, &["id"]).unwrap();
    for id in 0..50 {
        tx.insert(&o, &[Value::I64(id)]).unwrap();
    }
    tx.commit().unwrap();
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.damage);
    let tree = report.indexes.iter().find(|x| x.name == TREE).unwrap();
    assert!(tree.depth >= 3, "a tree {} levels deep", tree.depth);
    drop(db);
    std::fs::read(dir.join(DATA_FILE)).unwrap()
}

/// Where entry `i` of leaf `p` keeps its value's length, and where its value (the row, or a
/// spilled row's reference) lies: an entry is key length u16, key, value length u16, value.
fn entry(p: &[u8], i: usize) -> (usize, std::ops::Range<usize>) {
    let off = u16_at(p, SLOTS + SLOT * i);
    let len_at = off + 2 + u16_at(p, off);
    (len_at, len_at + 2..len_at + 2 + (u16_at(p, len_at) & !SPILLED))
}

/// Whether entry `i` of leaf `p` is a spilled row's reference.
fn spilled(p: &[u8], i: usize) -> bool {
    u16_at(p, entry(p, i).0) & SPILLED != 0
}

/// The key of entry `i` of leaf `p`, from the entry's key (an I64: a byte saying it is not
/// NULL, then 8 bytes big-endian with the sign bit flipped).
fn key_of(p: &[u8], i: usize) -> i64 {
    let at = u16_at(p, SLOTS + SLOT * i) + 2;
    (u64::from_be_bytes(p[at + 1..at + 9].try_into().unwrap()) ^ (1 << 63)) as i64
}

/// The table's tree as the pristine file holds it.
struct Tree {
    /// Leaves in key order.
    leaves: Vec<u64>,
    /// The other table's index.
    other_id: u32,
}

impl Tree {
    fn read(file: &[u8]) -> Tree {
        let page_count = u64_at(file, 32);
        let index = (0..page_count).filter(|&p| page_of(file, p)[16] == b'X');
        // The clustered tree's nodes hold sized values; the other index's, row ids.
        let (clustered, other): (Vec<u64>, Vec<u64>) =
            index.partition(|&p| page_of(file, p)[LEAF_VALUES] == 1);
        let first = clustered
            .iter()
            .copied()
            .find(|&p| page_of(file, p)[17] == 0 && u64_at(page_of(file, p), PREV) == 0)
            .unwrap();
        let mut leaves = vec![first];
        while let next @ 1.. = u64_at(page_of(file, *leaves.last().unwrap()), NEXT) {
            leaves.push(next);
        }
        let other_id = u32_at(page_of(file, other[0]), INDEX_ID);
        assert_ne!(other_id, u32_at(page_of(file, first), INDEX_ID));
        Tree { leaves, other_id }
    }
}

/// Which operations failed with an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ops(u16);

const SCAN: u16 = 1;
const FOLD: u16 = 2;
const GET_BY: u16 = 4;
const FROM_PROBE: u16 = 8;
const TO_PROBE_REV: u16 = 16;
const ALL_FORWARD: u16 = 32;
const ALL_REVERSE: u16 = 64;
const UPDATE_BY: u16 = 128;
const DELETE_BY: u16 = 256;
const INSERT: u16 = 512;
const FULL: u16 = SCAN | FOLD | ALL_FORWARD | ALL_REVERSE;
const PROBE: u16 = GET_BY | FROM_PROBE | TO_PROBE_REV;
const EVERY: u16 = FULL | PROBE | UPDATE_BY | DELETE_BY | INSERT;
const NAMES: [&str; 10] = [
    "scan",
    "fold",
    "get_by",
    "range from the probe",
    "range to the probe, reversed",
    "range over all",
    "range over all, reversed",
    "update_by",
    "delete_by",
    "insert",
];

/// The names of the operations in `ops`.
fn op_names(ops: u16) -> Vec<&'static str> {
    (0..NAMES.len()).filter(|b| ops & (1 << b) != 0).map(|b| NAMES[b]).collect()
}

/// Reads every column of `row`.
fn read_all(row: &RowRef<'_>) -> Result<()> {
    (0..4).try_for_each(|i| row.value(i).map(drop))
}

/// Rows of a range scan, each read whole.
fn count<'t>(rows: impl Iterator<Item = Result<nvpage::RowGuard<'t>>>) -> Result<u64> {
    rows.map(|g| g.and_then(|g| read_all(&g.row()?))).try_fold(0, |n, r| r.map(|()| n + 1))
}

/// Every row of `t` read a row at a time, in the scan's order.
fn scan_rows(rx: &impl ReadOps, t: &Table) -> Result<u64> {
    let mut n = 0;
    for page in rx.scan(t)? {
        for row in page?.rows() {
            read_all(&row?)?;
            n += 1;
        }
    }
    Ok(n)
}

/// Every row of `t` read by a fold of its pages on two threads.
fn fold_rows(rx: &impl ReadOps, t: &Table) -> Result<u64> {
    let rows =
        |n, page: nvpage::PageRows<'_>| page.fold(n, |n, r| read_all(&r.row()).map(|()| n + 1));
    rx.par_fold_pages(t, 2, || 0, rows, |a, b| a + b)
}

/// What a case's operations did.
#[derive(Debug)]
struct Outcome {
    failed: Ops,
    errors: Vec<String>,
    /// What went wrong besides: a full read that returned fewer rows, an error not of damage.
    wrong: Vec<String>,
}

/// Runs every read and write around key `probe` (a row in the damaged leaf) and returns which
/// failed; a full read that returns without an error must have read every row.
fn operate(db: &Database, probe: i64, what: &str) -> Outcome {
    let (mut failed, mut errors, mut wrong) = (0, Vec::new(), Vec::new());
    let mut note = |bit: u16, r: Result<Option<u64>>| match r {
        Ok(Some(n)) if n != ROWS as u64 => {
            wrong.push(format!("{what}: {:?} returned {n} of {ROWS} rows", op_names(bit)))
        }
        Ok(_) => {}
        Err(e) => {
            if !matches!(e, Error::CorruptPage { .. } | Error::CorruptRow(_)) {
                wrong.push(format!("{what}: {:?}: not an error of damage: {e:?}", op_names(bit)));
            }
            errors.push(e.to_string());
            failed |= bit;
        }
    };
    let key = [Value::I64(probe)];
    let key: &[Value<'_>] = &key;
    {
        let rx = db.begin_read().unwrap();
        let t = rx.table("t").unwrap();
        let pk: Index = rx.primary_key(&t).unwrap().unwrap();
        note(SCAN, scan_rows(&rx, &t).map(Some));
        note(FOLD, fold_rows(&rx, &t).map(Some));
        let got = rx.get_by(&pk, key).and_then(|g| g.map(|g| read_all(&g.row()?)).transpose());
        note(GET_BY, got.map(|_| None));
        let from = rx.index_range(&pk, Bound::Included(key), Bound::Unbounded);
        note(FROM_PROBE, from.and_then(count).map(|_| None));
        let to = rx.index_range(&pk, Bound::Unbounded, Bound::Included(key));
        note(TO_PROBE_REV, to.and_then(|s| count(s.rev())).map(|_| None));
        let all = rx.index_range(&pk, Bound::Unbounded, Bound::Unbounded);
        note(ALL_FORWARD, all.and_then(count).map(Some));
        let all = rx.index_range(&pk, Bound::Unbounded, Bound::Unbounded);
        note(ALL_REVERSE, all.and_then(|s| count(s.rev())).map(Some));
    }
    // Each write in a transaction of its own, rolled back: the next starts from the damage.
    let write = |f: &dyn Fn(&mut nvpage::WriteTxn<'_>, &Table, &Index) -> Result<()>| {
        let mut tx = db.begin_write().unwrap();
        let t = tx.table("t").unwrap();
        let pk = tx.primary_key(&t).unwrap().unwrap();
        f(&mut tx, &t, &pk)
    };
    note(
        UPDATE_BY,
        write(&|tx, _, pk| tx.update_by(pk, key, &[("grp", Value::I32(-1))]).map(drop))
            .map(|()| None),
    );
    note(DELETE_BY, write(&|tx, _, pk| tx.delete_by(pk, key).map(drop)).map(|()| None));
    // The odd key after the probe's: a new row in the same leaf.
    note(INSERT, write(&|tx, t, _| insert_row(tx, t, probe + 1)).map(|()| None));
    Outcome { failed: Ops(failed), errors, wrong }
}

/// One kind of damage: what it does to the file, the page `check` must name, a key in the
/// damaged leaf, and the operations that must fail.
struct Case {
    what: &'static str,
    file: Vec<u8>,
    named: u64,
    probe: i64,
    must_fail: u16,
}

fn cases(file: &[u8], tree: &Tree) -> Vec<Case> {
    let mid = tree.leaves.len() / 2;
    let leaf = tree.leaves[mid];
    let p = page_of(file, leaf);
    assert!(u16_at(p, COUNT) >= 4, "a leaf of a few rows");
    // The entry damaged where one entry is: the first after entry 0 whose row has a name of a
    // few letters at least, so that its string has bytes to damage.
    let d = (1..u16_at(p, COUNT))
        .find(|&i| !spilled(p, i) && entry(p, i).1.len() > FIXED_END + 2)
        .unwrap();
    let (first, damaged_key) = (key_of(p, 0), key_of(p, d));
    let mut out = Vec::new();
    let mut case = |what, probe, must_fail, damage: &dyn Fn(&mut [u8])| {
        let mut f = file.to_vec();
        damage(page_mut(&mut f, leaf));
        reseal(&mut f, leaf);
        out.push(Case { what, file: f, named: leaf, probe, must_fail });
    };
    let row = entry(p, d).1;
    // A point lookup and a range scan from a key in the leaf trust its order.
    case("(a) two entries swapped", first, ALL_FORWARD | ALL_REVERSE, &|p| {
        for b in 0..SLOT {
            p.swap(SLOTS + b, SLOTS + SLOT + b);
        }
    });
    // Reads of the row fail; a delete takes it out unread, and an insert reads no other row.
    let unreadable = FULL | PROBE | UPDATE_BY;
    let name_at = row.start + ROW_NAME;
    case("(b) a string's offset past the row", damaged_key, unreadable, &|p| {
        p[name_at..name_at + 2].copy_from_slice(&0xFFF0u16.to_le_bytes());
    });
    let string = row.start + u16_at(p, name_at);
    case("(b2) a string not UTF-8", damaged_key, unreadable, &|p| p[string] = 0xFF);
    // Only `check` holds a row to its entry's key.
    let k_at = row.start + ROW_K;
    case("(c) a row's key not its entry's", damaged_key, 0, &|p| {
        p[k_at..k_at + 8].copy_from_slice(&(damaged_key - 1).to_le_bytes());
    });
    let len_at = entry(p, d).0;
    case("(d) a value length past the page", damaged_key, EVERY, &|p| {
        p[len_at..len_at + 2].copy_from_slice(&u16::MAX.to_le_bytes());
    });
    // Table scans find the leaves from the inner nodes; a range scan walking back from the
    // probe never follows the leaf's right link.
    let links = FROM_PROBE | ALL_FORWARD | ALL_REVERSE;
    let skip = tree.leaves[mid + 2];
    case("(e) a right link skipping a leaf", first, links, &|p| {
        p[NEXT..NEXT + 8].copy_from_slice(&skip.to_le_bytes());
    });
    case("(e2) a right link to the leaf itself", first, links, &|p| {
        p[NEXT..NEXT + 8].copy_from_slice(&leaf.to_le_bytes());
    });
    let other = tree.other_id;
    case("(f) another index's id", first, EVERY, &|p| {
        p[INDEX_ID..INDEX_ID + 4].copy_from_slice(&other.to_le_bytes());
    });
    case("(g) leaf values of an unknown kind", first, EVERY, &|p| p[LEAF_VALUES] = 7);
    // A leaf that says it holds row ids: no read takes their bytes for rows, and no write puts
    // a row where a row id goes.
    case("(g2) leaf values of row ids", first, EVERY, &|p| p[LEAF_VALUES] = 0);
    spill_cases(file, tree, &mut out);
    out
}

/// The cases around a spilled row: in its overflow page, its entry, and its leaf.
fn spill_cases(file: &[u8], tree: &Tree, out: &mut Vec<Case>) {
    let (leaf, e) = tree
        .leaves
        .iter()
        .find_map(|&l| {
            let p = page_of(file, l);
            (1..u16_at(p, COUNT)).find(|&i| spilled(p, i)).map(|i| (l, i))
        })
        .unwrap();
    let p = page_of(file, leaf);
    let probe = key_of(p, e);
    let reference = entry(p, e).1;
    let chain = u64_at(p, reference.start + 4);
    assert_eq!(page_of(file, chain)[16], b'O', "an overflow page");
    // Every read of the row fails, and so does a delete (it walks the chain to free its pages);
    // an insert beside it reads no other row.
    let unreadable = FULL | PROBE | UPDATE_BY | DELETE_BY;
    let mut case = |what, page: u64, must_fail, damage: &dyn Fn(&mut [u8])| {
        let mut f = file.to_vec();
        damage(page_mut(&mut f, page));
        reseal(&mut f, page);
        out.push(Case { what, file: f, named: leaf, probe, must_fail });
    };
    case("(h) an overflow page made a heap page", chain, unreadable, &|c| c[16] = b'H');
    let other = tree.other_id;
    case("(i) an overflow page of another index", chain, unreadable, &|c| {
        c[SPILL_INDEX_ID..SPILL_INDEX_ID + 4].copy_from_slice(&other.to_le_bytes());
    });
    case("(j) an overflow page a byte short", chain, unreadable, &|c| {
        let len = u32_at(c, SPILL_LEN) - 1;
        c[SPILL_LEN..SPILL_LEN + 4].copy_from_slice(&len.to_le_bytes());
    });
    let heap = (0..u64_at(file, 32)).find(|&q| page_of(file, q)[16] == b'H').unwrap();
    case("(k) a reference to a heap page", leaf, unreadable, &|p| {
        p[reference.start + 4..reference.start + 12].copy_from_slice(&heap.to_le_bytes());
    });
    // Lookups and range scans read the entry's mark; a table scan trusts the leaf's flags to
    // say whether it has chains to read.
    case("(l) a leaf's flags saying it spills nothing", leaf, SCAN | FOLD, &|p| p[FLAGS] = 0);
    // A string in the row: the name starts after the fixed part.
    case("(m) a spilled string not UTF-8", chain, FULL | PROBE | UPDATE_BY, &|c| {
        c[SPILL_DATA + FIXED_END + 3] = 0xFF;
    });
}

#[test]
fn damaged_clustered_leaves_are_reported_and_every_operation_that_walks_them_fails() {
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("db");
    let pristine = build(&db_dir);
    let tree = Tree::read(&pristine);
    assert!(tree.leaves.len() > 100, "{} leaves", tree.leaves.len());
    let cases = cases(&pristine, &tree);
    assert_eq!(cases.len(), 16);
    // Every case runs, and what each got wrong is reported together.
    let mut wrong = Vec::new();
    for c in &cases {
        for layer in Layer::compiled() {
            let what = format!("{} on {layer:?}", c.what);
            std::fs::write(db_dir.join(DATA_FILE), &c.file).unwrap();
            let db = open(&db_dir, layer);
            let report = db.check().unwrap();
            if !names(&report.damage, TREE, c.named) {
                wrong.push(format!(
                    "{what}: check did not name page {}: {:?}",
                    c.named, report.damage
                ));
            }
            let out = operate(&db, c.probe, &what);
            wrong.extend(out.wrong);
            let missed = c.must_fail & !out.failed.0;
            if missed != 0 {
                wrong.push(format!(
                    "{what}: {:?} returned without an error; these failed: {:?}",
                    op_names(missed),
                    out.errors
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // The pristine file, reopened, is sound: the damage was each case's own.
    std::fs::write(db_dir.join(DATA_FILE), &pristine).unwrap();
    for layer in Layer::compiled() {
        let db = open(&db_dir, layer);
        assert!(db.check().unwrap().is_sound());
        let out = operate(&db, cases[0].probe, "the pristine file");
        assert_eq!(out.failed, Ops(0), "{:?}", out.errors);
    }
}
