//! Which worker a row of a hash-split table lives on: `xxh3(key) mod workers`, where the key is
//! the row's split columns in a fixed encoding. The same on every machine and in every process
//! (no per-process seed), so rows loaded at different times by different coordinators land
//! where reads and later loads expect them.
//!
//! The encoding, per key column, one after another:
//! - NULL: the byte 0;
//! - integers and dates (days since 1970): the byte 1, then the value as an `i64`, little-endian
//!   (so `INT` 5 and `BIGINT` 5 are the same key);
//! - decimals: the byte 2, the scale as one byte, the unscaled value as an `i128`, little-endian;
//! - strings: the byte 3, the length as a `u64`, little-endian, then the UTF-8 bytes;
//! - any other type: the byte 4, then its value as DataFusion prints it.

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Int8Type, Int16Type, Int32Type, Int64Type,
};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use twox_hash::XxHash3_64;

/// The shard (`0..shards`) of each row of `batch`, keyed by the columns at `key`.
pub fn shard_of_rows(batch: &RecordBatch, key: &[usize], shards: usize) -> Result<Vec<usize>> {
    let mut buf = Vec::with_capacity(64);
    (0..batch.num_rows())
        .map(|row| {
            buf.clear();
            for &c in key {
                encode(batch.column(c).as_ref(), row, &mut buf)?;
            }
            Ok((XxHash3_64::oneshot(&buf) % shards.max(1) as u64) as usize)
        })
        .collect()
}

/// Appends the encoding of `array[row]` to `out` (see the module's docs).
fn encode(array: &dyn Array, row: usize, out: &mut Vec<u8>) -> Result<()> {
    if array.is_null(row) {
        out.push(0);
        return Ok(());
    }
    let int = |out: &mut Vec<u8>, v: i64| {
        out.push(1);
        out.extend_from_slice(&v.to_le_bytes());
    };
    match array.data_type() {
        DataType::Int8 => int(out, array.as_primitive::<Int8Type>().value(row).into()),
        DataType::Int16 => int(out, array.as_primitive::<Int16Type>().value(row).into()),
        DataType::Int32 => int(out, array.as_primitive::<Int32Type>().value(row).into()),
        DataType::Int64 => int(out, array.as_primitive::<Int64Type>().value(row)),
        DataType::Date32 => int(out, array.as_primitive::<Date32Type>().value(row).into()),
        DataType::Decimal128(_, scale) => {
            out.push(2);
            out.push(*scale as u8);
            out.extend_from_slice(&array.as_primitive::<Decimal128Type>().value(row).to_le_bytes());
        }
        DataType::Utf8 => string(out, array.as_string::<i32>().value(row)),
        DataType::LargeUtf8 => string(out, array.as_string::<i64>().value(row)),
        DataType::Utf8View => string(out, array.as_string_view().value(row)),
        _ => {
            out.push(4);
            out.extend_from_slice(ScalarValue::try_from_array(array, row)?.to_string().as_bytes());
        }
    }
    Ok(())
}

fn string(out: &mut Vec<u8>, s: &str) {
    out.push(3);
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Int32Array, Int64Array, StringArray};
    use datafusion::arrow::datatypes::{Field, Schema};

    use super::*;

    fn batch(col: Arc<dyn Array>) -> RecordBatch {
        let schema = Schema::new(vec![Field::new("k", col.data_type().clone(), true)]);
        RecordBatch::try_new(Arc::new(schema), vec![col]).unwrap()
    }

    #[test]
    fn a_key_names_the_same_shard_whatever_its_integer_width() {
        let narrow = batch(Arc::new(Int32Array::from(vec![Some(1), Some(-7), None, Some(40)])));
        let wide = batch(Arc::new(Int64Array::from(vec![Some(1), Some(-7), None, Some(40)])));
        assert_eq!(
            shard_of_rows(&narrow, &[0], 3).unwrap(),
            shard_of_rows(&wide, &[0], 3).unwrap()
        );
    }

    #[test]
    fn the_shard_of_a_key_is_pinned_and_keys_spread_over_every_shard() {
        // Pinned values: a change of the encoding or the hash moves rows between shards, which
        // would split a table loaded before it from rows loaded after.
        let keys = batch(Arc::new(Int64Array::from((0..8).collect::<Vec<i64>>())));
        assert_eq!(shard_of_rows(&keys, &[0], 4).unwrap(), [0, 3, 2, 3, 1, 3, 1, 1]);
        let many = batch(Arc::new(Int64Array::from((0..4000).collect::<Vec<i64>>())));
        let mut counts = [0usize; 4];
        for s in shard_of_rows(&many, &[0], 4).unwrap() {
            counts[s] += 1;
        }
        assert!(counts.iter().all(|&c| c > 800), "{counts:?}");
        let names = batch(Arc::new(StringArray::from(vec!["a", "b", "a"])));
        let s = shard_of_rows(&names, &[0], 5).unwrap();
        assert_eq!(s[0], s[2]);
    }
}
