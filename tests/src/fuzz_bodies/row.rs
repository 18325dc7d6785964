//! `row_decode`: rows read in place (`RowRef::new` and every typed getter) for a few schemas,
//! heap pages (`HeapPage::new` and its rows) and the catalog blob (`Catalog::decode`), on
//! arbitrary bytes, through `nvpage::fuzzing`.

use std::sync::OnceLock;

use nvpage::fuzzing;
use nvpage::{Col, Column, ColumnType, Decimal, OwnedValue, RowId, RowRef, Schema, Value, kind};

use super::Input;

/// The schemas rows are read with: the engine tests' table, a wide TPC-H-like one (a two-byte
/// null bitmap), a single nullable `Char`, and two `VarChar`s.
pub fn schemas() -> &'static [Schema; 5] {
    static S: OnceLock<[Schema; 5]> = OnceLock::new();
    S.get_or_init(|| {
        let c = Column::new;
        let n = Column::nullable;
        [
            Schema::new(vec![
                c("key", ColumnType::I64),
                c("qty", ColumnType::I32),
                c("price", ColumnType::Decimal { scale: 2 }),
                n("note", ColumnType::VarChar { max_len: 3000 }),
            ]),
            Schema::new(vec![
                c("a", ColumnType::I32),
                c("b", ColumnType::I64),
                c("c", ColumnType::Decimal { scale: 2 }),
                c("d", ColumnType::Decimal { scale: 0 }),
                c("e", ColumnType::Date),
                c("f", ColumnType::Char { len: 1 }),
                c("g", ColumnType::Char { len: 10 }),
                c("h", ColumnType::VarChar { max_len: 44 }),
                n("i", ColumnType::Date),
                n("j", ColumnType::VarChar { max_len: 25 }),
                n("k", ColumnType::I64),
            ]),
            Schema::new(vec![n("s", ColumnType::Char { len: 3 })]),
            Schema::new(vec![
                c("x", ColumnType::VarChar { max_len: 100 }),
                c("y", ColumnType::VarChar { max_len: 0 }),
            ]),
            Schema::new(vec![
                n("bo", ColumnType::Bool),
                c("sm", ColumnType::I16),
                n("fl", ColumnType::F64),
                c("ts", ColumnType::Timestamp),
                n("bi", ColumnType::Binary { max_len: 30 }),
                c("b2", ColumnType::Bool),
            ]),
        ]
        .map(|s| s.expect("a valid schema"))
    })
}

/// Reads column `name` with kind `K` both ways; any typed error is fine.
fn try_kind<K: nvpage::Kind>(row: &RowRef<'_>, schema: &Schema, name: &str) {
    if let Ok(col) = Col::<K>::new(schema, name) {
        let _ = row.get(col).map(|_| ());
        let _ = row.get_opt(col).map(|_| ());
    }
}

/// Reads every column of `row` every way, with handles of its own schema and of the others;
/// returns the owned values if all of them decode.
pub(crate) fn read_row(row: &RowRef<'_>) -> Option<Vec<OwnedValue>> {
    for schema in schemas().iter() {
        for c in schema.columns() {
            try_kind::<kind::I32>(row, schema, &c.name);
            try_kind::<kind::I64>(row, schema, &c.name);
            try_kind::<kind::Units>(row, schema, &c.name);
            try_kind::<kind::Date>(row, schema, &c.name);
            try_kind::<kind::Bytes>(row, schema, &c.name);
            try_kind::<kind::Str>(row, schema, &c.name);
            try_kind::<kind::Decimal>(row, schema, &c.name);
            try_kind::<kind::Bool>(row, schema, &c.name);
            try_kind::<kind::I16>(row, schema, &c.name);
            try_kind::<kind::F64>(row, schema, &c.name);
            try_kind::<kind::Timestamp>(row, schema, &c.name);
        }
    }
    let n = row.schema().columns().len();
    for i in n..n + 2 {
        assert!(!row.is_null(i));
        assert!(row.value(i).is_err(), "column {i} of {n} read");
    }
    (0..n).map(|i| row.value(i).ok()).collect()
}

/// Where the decoded rows claim to live: these rows come from no table.
const ANYWHERE: RowId = RowId { page: 0, slot: 0 };

/// A row whose every value decodes encodes again (when the values fit their columns) into a
/// row that reads back the same values.
fn round_trip(schema: &Schema, values: &[OwnedValue]) {
    let borrowed: Vec<Value<'_>> = values.iter().map(OwnedValue::as_value).collect();
    let Ok(bytes) = fuzzing::encode(schema, &borrowed) else { return };
    let again = RowRef::new(schema, &bytes, ANYWHERE).expect("an encoded row reads");
    let back: Vec<OwnedValue> =
        (0..values.len()).map(|i| again.value(i).expect("an encoded value reads")).collect();
    let want: Vec<OwnedValue> = values
        .iter()
        .zip(schema.columns())
        .map(|(v, c)| match (v, c.ty) {
            // A decimal is stored at its column's scale.
            (OwnedValue::Decimal(d), ColumnType::Decimal { scale }) => {
                OwnedValue::Decimal(Decimal::new(d.rescale(scale).expect("same scale"), scale))
            }
            _ => v.clone(),
        })
        .collect();
    assert_eq!(back, want, "a row did not survive encode and decode");
}

fn rows(schema: &Schema, bytes: &[u8]) {
    match RowRef::new(schema, bytes, ANYWHERE) {
        Ok(row) => {
            let values = read_row(&row);
            // `check` and the getters hold a string to one rule: a row whose strings `check`
            // reports damaged never reads as values.
            if let Err(e) = row.check_values() {
                assert!(values.is_none(), "{e}, yet the row reads as {values:?}");
            }
            if let Some(values) = values {
                round_trip(schema, &values);
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

fn heap(schema: &Schema, table_id: u32, page: &[u8]) {
    let folded = fuzzing::heap_fold_rows(page, table_id, 5);
    match fuzzing::heap_rows(page, table_id, 5) {
        Ok((live, free)) => {
            assert!(free <= page.len(), "free space {free} in a page of {}", page.len());
            // A scan's one-pass fold checks what the page's own check does, no less.
            let mut folded = folded.expect("a page that checks folds");
            folded.reverse();
            assert_eq!(folded, live, "the fold reads the rows the page holds");
            let mut last = None;
            for (slot, bytes) in live {
                assert!(last < Some(slot), "slots in order, each once");
                last = Some(slot);
                rows(schema, bytes);
            }
        }
        Err(e) => {
            let _ = e.to_string();
            assert!(folded.is_err(), "a page that fails its check folds: {e}");
        }
    }
}

fn catalog(blob: &[u8], page_count: u64) {
    match fuzzing::catalog_tables(blob, page_count, vec![1]) {
        Ok(tables) => {
            let mut seen = std::collections::HashSet::new();
            for (_, pages) in tables {
                for p in pages {
                    assert!(p > 1 && p < page_count, "table page {p} of {page_count}");
                    assert!(seen.insert(p), "page {p} in two tables");
                }
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

/// Target `row_decode`. Input: what u8 (row, heap page or catalog) and schema selector, then:
/// a row's bytes; or a table id u32 and a page (zero-padded or cut to 4 or 8 KiB); or a page
/// count u16 and a catalog blob.
///
/// Properties: no panic; a row whose strings `check` reports damaged does not decode, and one
/// whose values decode round-trips through the encoder; a heap
/// page's rows are in slot order and its free space fits the page, and a scan's one-pass fold
/// accepts exactly the pages that check and reads the same rows; a decoded catalog's tables
/// hold distinct pages inside the file.
pub fn row_decode(data: &[u8]) {
    let mut input = Input::new(data);
    let what = input.u8();
    let schema = &schemas()[usize::from(what >> 2) % 5];
    match what % 3 {
        0 => rows(schema, input.rest()),
        1 => {
            let table_id = input.u32();
            let size = if what & 0x80 == 0 { 4096 } else { 8192 };
            let mut page = input.rest().to_vec();
            page.resize(size, 0);
            heap(schema, table_id, &page);
        }
        _ => {
            let page_count = u64::from(input.u16());
            catalog(input.rest(), page_count);
        }
    }
}
