//! `clustered_leaf`: a clustered table's leaf read as its rows (`Node::new` at level 0, then a
//! page fold's walk from the last entry and a row-at-a-time scan's from the first, each value
//! made a row), and each row held to `check`'s test of a row, on arbitrary bytes, through
//! `nvpage::fuzzing`.

use std::sync::OnceLock;

use nvpage::{Column, ColumnType, Error, RowId, RowRef, Schema, fuzzing};

use super::Input;
use super::row::read_row;

/// Where a leaf's header keeps what the body compares the decoder's answers with
/// (engine/src/index/node.rs).
const LEVEL: usize = 17;
const COUNT: usize = 18;
const INDEX_ID: usize = 24;

/// The schemas of the clustered tables whose leaves are read: the engine's damage test's (a
/// key, a name of varying length, a number, a nullable decimal), a wide one of other types
/// (a bool, a `Char`, nullable strings and bytes, a timestamp, a float), and the engine's model
/// test's of a table with indexes beside its key (a group, a nullable code, the key in the
/// middle, a name, and a nullable note long enough to spill the row to overflow pages).
pub fn schemas() -> &'static [Schema; 3] {
    static S: OnceLock<[Schema; 3]> = OnceLock::new();
    S.get_or_init(|| {
        let c = Column::new;
        let n = Column::nullable;
        [
            Schema::new(vec![
                c("k", ColumnType::I64),
                c("name", ColumnType::VarChar { max_len: 300 }),
                c("grp", ColumnType::I32),
                n("amount", ColumnType::Decimal { scale: 2 }),
            ])
            .and_then(|s| s.with_primary_key(&["k"])),
            Schema::new(vec![
                c("id", ColumnType::I32),
                c("flag", ColumnType::Bool),
                c("code", ColumnType::Char { len: 4 }),
                n("note", ColumnType::VarChar { max_len: 60 }),
                n("blob", ColumnType::Binary { max_len: 20 }),
                c("ts", ColumnType::Timestamp),
                n("f", ColumnType::F64),
            ])
            .and_then(|s| s.with_primary_key(&["id"])),
            Schema::new(vec![
                c("grp", ColumnType::I32),
                n("code", ColumnType::I64),
                c("k", ColumnType::I64),
                c("name", ColumnType::VarChar { max_len: 200 }),
                n("note", ColumnType::VarChar { max_len: 4060 }),
            ])
            .and_then(|s| s.with_primary_key(&["k"])),
        ]
        .map(|s| s.expect("a valid schema"))
    })
}

fn le(p: &[u8], at: usize, n: usize) -> u64 {
    p[at..at + n].iter().rev().fold(0, |acc, &b| acc << 8 | u64::from(b))
}

/// Where `part` lies in `page`, if it is a sub-slice of it.
fn place(page: &[u8], part: &[u8]) -> Option<(usize, usize)> {
    let (start, at) = (page.as_ptr() as usize, part.as_ptr() as usize);
    (at >= start && at + part.len() <= start + page.len()).then(|| (at - start, part.len()))
}

/// The error of a damaged leaf: the page named, or a row that is not one.
fn typed(e: &Error, id: u64) -> bool {
    matches!(e, Error::CorruptPage { page, .. } if *page == id) || matches!(e, Error::CorruptRow(_))
}

/// A row the leaf yields: it reads as a row of `schema` (every column, every way, never a
/// panic), and `check` passes it exactly when every value decodes.
fn row(schema: &Schema, bytes: &[u8]) {
    let r = RowRef::new(schema, bytes, RowId::KEYED).expect("a yielded row is as long as a row");
    let values = read_row(&r);
    match fuzzing::sound_row(schema, bytes) {
        Ok(()) => assert!(values.is_some(), "check passes a row that does not read"),
        Err(e) => {
            assert!(matches!(e, Error::CorruptRow(_)), "{e:?}");
            assert!(values.is_none(), "check reports a row that reads ({e}): {values:?}");
        }
    }
}

/// Target `clustered_leaf`. Input: flags u8 (bits 0-1: page size 4, 8, 16 or 64 KiB; bit 2:
/// use the page's own tree id; bit 3: the schema, [`schemas`] 0 or 1; bit 4: schema 2 instead),
/// tree id u32, page id u64, then the page (zero-padded or cut to the page size).
///
/// Properties: no panic; the fold and a row-at-a-time read of the page agree: both yield rows,
/// the same ones (the fold's reversed), or both fail with an error of damage (`CorruptPage`
/// naming the page, or `CorruptRow`; which entry's error comes first may differ, as they walk
/// the page from opposite ends). A page that yields rows is a leaf of that tree, a row for each
/// of its entries, each lying inside the page and reading as a row of the schema with every
/// column readable or a `CorruptRow`, and sound to `check` exactly when every value decodes; or,
/// for an entry marked spilled, a reference to an overflow chain (12 bytes).
pub fn clustered_leaf(data: &[u8]) {
    let mut input = Input::new(data);
    let flags = input.u8();
    let size = [4096, 8192, 16384, 65536][usize::from(flags & 3)];
    let mut tree = input.u32();
    let id = input.u64();
    let mut page = input.rest().to_vec();
    page.resize(size, 0);
    if flags & 4 == 4 {
        tree = le(&page, INDEX_ID, 4) as u32;
    }
    let schema = &schemas()[if flags & 16 == 16 { 2 } else { usize::from(flags >> 3 & 1) }];
    let folded = fuzzing::clustered_leaf_fold(&page, schema, tree, id);
    let read = fuzzing::clustered_leaf_rows(&page, schema, tree, id);
    match (folded, read) {
        (Ok(folded), Ok(rows)) => {
            assert_eq!(page[LEVEL], 0, "rows of a node that is not a leaf");
            assert_eq!(le(&page, INDEX_ID, 4), u64::from(tree), "rows of another tree's node");
            assert_eq!(rows.len() as u64, le(&page, COUNT, 2), "a row for each entry");
            let at = |rows: &[(&[u8], bool)]| -> Vec<(usize, usize, bool)> {
                let inside = |r| place(&page, r).expect("a value inside the page");
                rows.iter().map(|&(r, s)| (inside(r).0, inside(r).1, s)).collect()
            };
            let mut from_last = at(&folded);
            from_last.reverse();
            assert_eq!(from_last, at(&rows), "the fold reads the rows a scan reads");
            for (r, spilled) in rows {
                if spilled {
                    assert_eq!(r.len(), 12, "a spilled row's reference");
                } else {
                    row(schema, r);
                }
            }
        }
        (Err(a), Err(b)) => {
            assert!(typed(&a, id) && typed(&b, id), "not errors of damage: {a:?}, {b:?}");
            let _ = (a.to_string(), b.to_string());
        }
        (a, b) => panic!("the fold and a row-at-a-time read disagree: {a:?}, {b:?}"),
    }
}
