//! Goal: a row whose `VarChar` slot points into the row's fixed area (its null bitmap and fixed
//! slots, where no string is ever stored) or past its end is damage that every reader reports
//! alike: `check`'s test of a row (`RowRef::check_values`) and each getter that reads the string
//! (`get` and `get_opt` as `Str` or `Bytes`, `value`) give `CorruptRow`, never the bytes of other
//! columns read as a string, nor `""`. A slot inside the row's variable area reads its bytes.

use nvpage::fuzzing;
use nvpage::{Col, Column, ColumnType, Error, OwnedValue, RowId, RowRef, Schema, Value, kind};

/// Row layout (docs/design.md, "Rows"): a null bitmap of one byte per eight columns, then each
/// column's fixed slot in order; a `VarChar`'s slot is its value's offset in the row (u16) and
/// its length (u16), the value itself after the fixed area.
///
/// ```text
/// | bitmap 1 | a: i64 8 | s: offset u16, len u16 | b: i32 4 | s's bytes ... |
///   0          1          9                         13         17
/// ```
const SLOT: usize = 9;
const FIXED_END: usize = 17;

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("a", ColumnType::I64),
        Column::nullable("s", ColumnType::VarChar { max_len: 20 }),
        Column::new("b", ColumnType::I32),
    ])
    .unwrap()
}

fn is_corrupt<T: std::fmt::Debug>(r: nvpage::Result<T>, what: &str) -> bool {
    match r {
        Err(Error::CorruptRow(_)) => true,
        Ok(_) => false,
        other => panic!("{what}: expected CorruptRow or a value, got {other:?}"),
    }
}

#[test]
fn every_reader_of_a_string_agrees_with_check() {
    let schema = schema();
    let row =
        fuzzing::encode(&schema, &[Value::I64(-1), Value::Str("hello"), Value::I32(7)]).unwrap();
    assert_eq!(row.len(), FIXED_END + 5);
    assert_eq!(&row[SLOT..SLOT + 4], &[FIXED_END as u8, 0, 5, 0], "the layout drawn above");
    let (s_str, s_bytes) = (
        Col::<kind::Str>::new(&schema, "s").unwrap(),
        Col::<kind::Bytes>::new(&schema, "s").unwrap(),
    );
    let mut wrong = Vec::new();
    for off in 0..row.len() + 2 {
        for len in [0, 1, 3, 5] {
            let mut bytes = row.clone();
            bytes[SLOT..SLOT + 2].copy_from_slice(&(off as u16).to_le_bytes());
            bytes[SLOT + 2..SLOT + 4].copy_from_slice(&(len as u16).to_le_bytes());
            let r = RowRef::new(&schema, &bytes, RowId { page: 2, slot: 0 }).unwrap();
            let damaged = off < FIXED_END || off + len > bytes.len();
            let what = format!("slot ({off}, {len})");
            let verdicts = [
                ("check_values", is_corrupt(r.check_values(), &what)),
                ("get Str", is_corrupt(r.get(s_str), &what)),
                ("get_opt Str", is_corrupt(r.get_opt(s_str), &what)),
                ("get Bytes", is_corrupt(r.get(s_bytes), &what)),
                ("get_opt Bytes", is_corrupt(r.get_opt(s_bytes), &what)),
                ("value", is_corrupt(r.value(1), &what)),
            ];
            for (reader, corrupt) in verdicts {
                if corrupt != damaged {
                    wrong.push(format!("{what}: {reader} says corrupt = {corrupt}"));
                }
            }
            if !damaged {
                assert_eq!(r.get(s_bytes).unwrap(), &bytes[off..off + len], "{what}");
                let text = String::from_utf8(bytes[off..off + len].to_vec()).unwrap();
                assert_eq!(r.value(1).unwrap(), OwnedValue::Str(text), "{what}");
            }
        }
    }
    assert!(wrong.is_empty(), "readers that disagree with check:\n{}", wrong.join("\n"));
}
