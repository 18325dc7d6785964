//! Index keys: an order-preserving byte encoding of one or more columns, so that comparing two
//! keys is comparing their bytes (`memcmp`), whatever the columns' types.
//!
//! ```text
//! key    := column* [row id]            (the row id only in a non-unique index)
//! column := 0x00                        NULL (first in the order)
//!         | 0x01 value
//! value  := bool:            1 byte, 0 or 1
//!         | i16:             2 bytes big-endian, sign bit flipped
//!         | i32 / date:      4 bytes big-endian, sign bit flipped
//!         | i64 / decimal / timestamp:
//!                            8 bytes big-endian, sign bit flipped (decimal: units at the
//!                            column's scale)
//!         | f64:             8 bytes big-endian of the bits, all flipped if the sign bit is
//!                            set, else the sign bit alone (IEEE 754's total order)
//!         | char / varchar / binary:
//!                            the bytes (a char without its trailing blanks), each 0x00 written
//!                            0x00 0xFF, then 0x00 0x00
//! row id := page u64 big-endian | slot u16 big-endian
//! ```
//!
//! Every column's encoding is self-delimiting, so a key of the first `k` columns is a byte
//! prefix of every full key that starts with those values: a prefix scan is the byte range
//! `[p, successor(p))`.

use crate::error::{Error, Result};
use crate::row::{RowRef, Value, misfit, text_bytes, wide};
use crate::schema::{Column, ColumnType, Schema};
use crate::table::RowId;

/// Bytes a row id adds to a non-unique index's keys (and a leaf entry's value).
pub const ROW_ID_LEN: usize = 10;

const NULL: u8 = 0x00;
const PRESENT: u8 = 0x01;

/// The longest key `columns` of `schema` can encode to (a string of its longest length made of
/// zero bytes, each escaped), with the row id if `with_row_id`.
pub fn max_len(schema: &Schema, columns: &[u16], with_row_id: bool) -> usize {
    let cols: usize = columns
        .iter()
        .map(|&c| {
            1 + match schema.columns()[usize::from(c)].ty {
                ColumnType::Bool => 1,
                ColumnType::I16 => 2,
                ColumnType::I32 | ColumnType::Date => 4,
                ColumnType::I64
                | ColumnType::Decimal { .. }
                | ColumnType::F64
                | ColumnType::Timestamp => 8,
                ColumnType::Char { len }
                | ColumnType::VarChar { max_len: len }
                | ColumnType::Binary { max_len: len } => 2 * usize::from(len) + 2,
            }
        })
        .sum();
    cols + if with_row_id { ROW_ID_LEN } else { 0 }
}

fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&((v as u32) ^ 0x8000_0000).to_be_bytes());
}

fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&((v as u64) ^ (1 << 63)).to_be_bytes());
}

fn put_i16(out: &mut Vec<u8>, v: i16) {
    out.extend_from_slice(&((v as u16) ^ 0x8000).to_be_bytes());
}

/// IEEE 754's total order as unsigned order: negative floats (sign bit set) reversed, positive
/// ones above them.
fn put_f64(out: &mut Vec<u8>, v: f64) {
    let bits = v.to_bits();
    let key = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
    out.extend_from_slice(&key.to_be_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_escaped(out, s);
    out.extend_from_slice(&[0, 0]);
}

/// A string's bytes, each 0x00 written 0x00 0xFF: without the terminator, the key bytes every
/// string that starts with `s` begins with.
fn put_escaped(out: &mut Vec<u8>, s: &[u8]) {
    for &b in s {
        out.push(b);
        if b == 0 {
            out.push(0xFF);
        }
    }
}

fn trim_blanks(s: &[u8]) -> &[u8] {
    let end = s.iter().rposition(|&c| c != b' ').map_or(0, |p| p + 1);
    &s[..end]
}

/// A row id's bytes: in a non-unique index's keys, and as every leaf entry's value.
pub fn row_id_bytes(id: RowId) -> [u8; ROW_ID_LEN] {
    let mut b = [0; ROW_ID_LEN];
    b[..8].copy_from_slice(&id.page.to_be_bytes());
    b[8..].copy_from_slice(&id.slot.to_be_bytes());
    b
}

/// Appends the row id, for a non-unique index's keys.
pub fn put_row_id(out: &mut Vec<u8>, id: RowId) {
    out.extend_from_slice(&row_id_bytes(id));
}

/// Reads a row id written by [`put_row_id`].
pub fn row_id(b: &[u8]) -> Option<RowId> {
    let b: &[u8; ROW_ID_LEN] = b.try_into().ok()?;
    let page = u64::from_be_bytes(b[..8].try_into().expect("8 bytes"));
    let slot = u16::from_be_bytes([b[8], b[9]]);
    Some(RowId { page, slot })
}

/// Appends the key of `row` (a row of `schema`) over `columns`.
pub fn encode_row(
    schema: &Schema,
    columns: &[u16],
    row: &RowRef<'_>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let bytes = row.bytes();
    for &c in columns {
        let i = usize::from(c);
        if row.is_null(i) {
            out.push(NULL);
            continue;
        }
        out.push(PRESENT);
        let at = schema.offset(i);
        let field = |n: usize| {
            bytes.get(at..at + n).ok_or_else(|| Error::CorruptRow("a column past the row".into()))
        };
        match schema.columns()[i].ty {
            ColumnType::Bool => match field(1)?[0] {
                b @ (0 | 1) => out.push(b),
                b => return Err(Error::CorruptRow(format!("a bool stored as {b}, not 0 or 1"))),
            },
            ColumnType::I16 => {
                put_i16(out, i16::from_le_bytes(field(2)?.try_into().expect("2 bytes")))
            }
            ColumnType::I32 | ColumnType::Date => {
                put_i32(out, i32::from_le_bytes(field(4)?.try_into().expect("4 bytes")))
            }
            ColumnType::I64 | ColumnType::Decimal { .. } | ColumnType::Timestamp => {
                put_i64(out, i64::from_le_bytes(field(8)?.try_into().expect("8 bytes")))
            }
            ColumnType::F64 => {
                put_f64(out, f64::from_le_bytes(field(8)?.try_into().expect("8 bytes")))
            }
            ColumnType::Char { len } => put_str(out, trim_blanks(field(usize::from(len))?)),
            ColumnType::VarChar { .. } | ColumnType::Binary { .. } => {
                let slot = field(4)?;
                let off = usize::from(u16::from_le_bytes([slot[0], slot[1]]));
                let len = usize::from(u16::from_le_bytes([slot[2], slot[3]]));
                let s = bytes
                    .get(off..off + len)
                    .ok_or_else(|| Error::CorruptRow("a string past the row".into()))?;
                put_str(out, s);
            }
        }
    }
    Ok(())
}

/// The bytes a key's buffer starts with: an encoded key of a few numbers or a short string.
const KEY_ROOM: usize = 32;

/// The key of `values` as [`encode_values`] appends it, in a buffer of its own made with room
/// for most keys at once (a key grown push by push was a reallocation per lookup).
pub fn encoded(schema: &Schema, columns: &[u16], values: &[Value<'_>]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(KEY_ROOM);
    encode_values(schema, columns, values, &mut out)?;
    Ok(out)
}

/// Appends the key of `values`, the first `values.len()` of `columns` (a prefix of the key when
/// fewer), checking each value against its column as an insert would.
pub fn encode_values(
    schema: &Schema,
    columns: &[u16],
    values: &[Value<'_>],
    out: &mut Vec<u8>,
) -> Result<()> {
    if values.len() > columns.len() {
        return Err(Error::WrongArity { expected: columns.len(), found: values.len() });
    }
    for (&c, v) in columns.iter().zip(values) {
        let col = &schema.columns()[usize::from(c)];
        if let Value::Null = v {
            out.push(NULL);
            continue;
        }
        out.push(PRESENT);
        match (col.ty, v) {
            (ColumnType::Bool, Value::Bool(b)) => out.push(u8::from(*b)),
            (ColumnType::I16, Value::I16(x)) => put_i16(out, *x),
            (ColumnType::I32, Value::I32(x)) => put_i32(out, *x),
            (ColumnType::I32, Value::I16(x)) => put_i32(out, i32::from(*x)),
            (ColumnType::Date, Value::Date(d)) => put_i32(out, d.0),
            (ColumnType::I64 | ColumnType::Decimal { .. }, _) => put_i64(out, wide(col, v)?),
            (ColumnType::Timestamp, Value::Timestamp(t)) => put_i64(out, t.0),
            (ColumnType::F64, Value::F64(x)) => put_f64(out, *x),
            (ColumnType::Char { .. }, _) => put_str(out, trim_blanks(text_bytes(col, v)?)),
            (ColumnType::VarChar { .. } | ColumnType::Binary { .. }, _) => {
                put_str(out, text_bytes(col, v)?)
            }
            (_, v) => return Err(misfit(col, v, None)),
        }
    }
    Ok(())
}

/// Appends the key bytes every value of string column `col` that starts with `prefix` begins
/// with (present, then the escaped bytes, with no terminator): a prefix of those keys.
pub fn put_str_prefix(col: &Column, prefix: &str, out: &mut Vec<u8>) -> Result<()> {
    if !matches!(
        col.ty,
        ColumnType::Char { .. } | ColumnType::VarChar { .. } | ColumnType::Binary { .. }
    ) {
        return Err(misfit(
            col,
            &Value::Str(prefix),
            Some("a prefix needs a string column".into()),
        ));
    }
    out.push(PRESENT);
    put_escaped(out, prefix.as_bytes());
    Ok(())
}

/// The smallest byte string greater than every string that starts with `prefix`, or `None` if
/// there is none (`prefix` empty or all 0xFF): the upper end of a prefix range.
pub fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut s = prefix[..=last].to_vec();
    s[last] += 1;
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::{Date, Decimal};

    fn key(schema: &Schema, cols: &[u16], values: &[Value<'_>]) -> Vec<u8> {
        encoded(schema, cols, values).unwrap()
    }

    #[test]
    fn byte_order_is_value_order_with_nulls_first() {
        let schema = Schema::new(vec![
            Column::nullable("i", ColumnType::I32),
            Column::new("d", ColumnType::Decimal { scale: 2 }),
            Column::new("s", ColumnType::VarChar { max_len: 20 }),
            Column::new("c", ColumnType::Char { len: 4 }),
            Column::new("t", ColumnType::Date),
        ])
        .unwrap();
        let ints =
            [Value::Null, Value::I32(i32::MIN), Value::I32(-1), Value::I32(0), Value::I32(7)];
        let keys: Vec<_> =
            ints.iter().map(|v| key(&schema, &[0], std::slice::from_ref(v))).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        let decs = [-250, -1, 0, 1, 99_999]
            .map(|u| key(&schema, &[1], &[Value::Decimal(Decimal::new(u, 2))]));
        assert!(decs.windows(2).all(|w| w[0] < w[1]));
        // A decimal at another scale encodes as its value at the column's.
        assert_eq!(
            key(&schema, &[1], &[Value::Decimal(Decimal::new(25, 1))]),
            key(&schema, &[1], &[Value::Decimal(Decimal::new(250, 2))])
        );
        // Strings: a prefix sorts first, embedded zero bytes keep the order, a longer first
        // column never spills into the next.
        let strs = ["", "a", "a\0", "a\0b", "ab", "b"];
        let ks: Vec<_> = strs
            .iter()
            .map(|s| key(&schema, &[2, 4], &[Value::Str(s), Value::Date(Date(0))]))
            .collect();
        assert!(ks.windows(2).all(|w| w[0] < w[1]), "{ks:?}");
        // A char compares without its trailing blanks.
        assert_eq!(
            key(&schema, &[3], &[Value::Str("ab  ")]),
            key(&schema, &[3], &[Value::Str("ab")])
        );
        // A prefix of the columns is a byte prefix of the full key.
        let full = key(&schema, &[2, 4], &[Value::Str("ab"), Value::Date(Date(3))]);
        assert!(full.starts_with(&key(&schema, &[2, 4], &[Value::Str("ab")])));
    }

    #[test]
    fn successor_bounds_a_prefix() {
        assert_eq!(successor(&[1, 2]), Some(vec![1, 3]));
        assert_eq!(successor(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(successor(&[0xFF, 0xFF]), None);
        assert_eq!(successor(&[]), None);
        for p in [vec![0u8, 7], vec![9, 0xFF, 0xFF]] {
            let s = successor(&p).unwrap();
            for tail in [vec![], vec![0], vec![0xFF; 4]] {
                let mut k = p.clone();
                k.extend(tail);
                assert!(p <= k && k < s);
            }
        }
    }

    #[test]
    fn wrong_values_are_typed_errors() {
        let schema = Schema::new(vec![Column::new("i", ColumnType::I32)]).unwrap();
        let mut out = Vec::new();
        assert!(matches!(
            encode_values(&schema, &[0], &[Value::I64(1)], &mut out),
            Err(Error::ValueDoesNotFit { .. })
        ));
        assert!(matches!(
            encode_values(&schema, &[0], &[Value::I32(1), Value::I32(2)], &mut out),
            Err(Error::WrongArity { .. })
        ));
        assert_eq!(row_id(&[0; 3]), None);
    }
}
