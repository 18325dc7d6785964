//! Types: every nvpage column type as an Arrow type, and back.
//!
//! | nvpage | Arrow | notes |
//! |---|---|---|
//! | `Bool` | `Boolean` | |
//! | `I16` | `Int16` | `Int8`, `UInt8` widen to it |
//! | `I32` | `Int32` | `UInt16` widens to it |
//! | `I64` | `Int64` | `UInt32` widens to it |
//! | `Decimal { scale }` | `Decimal128(18, scale)` | an `i64` of units: any precision from 1 to 18 maps here and is not kept (a `DECIMAL(5, 2)` column holds any value of 18 digits at scale 2); a wider decimal's values are checked one by one as they are stored |
//! | `Date` | `Date32` | days since 1970-01-01 |
//! | `Char(n)` | `Utf8` | read without its trailing blanks |
//! | `VarChar(n)` | `Utf8` | a `Utf8` column with no declared length becomes `VarChar(MAX_STRING_LEN)` |
//! | `F64` | `Float64` | `Float32` widens to it |
//! | `Timestamp` | `Timestamp(Microsecond, None)` | µs since 1970-01-01 00:00:00 UTC; a timestamp of another unit is converted as it is stored (seconds and milliseconds exactly, nanoseconds truncated toward zero, as Arrow's cast does) |
//! | `Binary(n)` | `Binary` | a `Binary` column with no declared length becomes `Binary(MAX_STRING_LEN)` |
//!
//! An Arrow type with no counterpart (`UInt64`, `Float16`, time of day, intervals, timestamps
//! with a time zone, nested types) is an error naming the column.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef, TimeUnit};
use datafusion::sql::sqlparser::ast::{self, ExactNumberInfo};
use nvpage::{Column, ColumnType, MAX_STRING_LEN, Schema};

use crate::error::{Error, Result};

/// The precision every nvpage decimal reads as: an `i64` holds 18 decimal digits.
pub const DECIMAL_PRECISION: u8 = 18;

/// The Arrow type a column of `ty` reads as.
pub fn arrow_type(ty: ColumnType) -> DataType {
    match ty {
        ColumnType::I32 => DataType::Int32,
        ColumnType::I64 => DataType::Int64,
        ColumnType::Decimal { scale } => DataType::Decimal128(DECIMAL_PRECISION, scale as i8),
        ColumnType::Date => DataType::Date32,
        ColumnType::Char { .. } | ColumnType::VarChar { .. } => DataType::Utf8,
        ColumnType::Bool => DataType::Boolean,
        ColumnType::I16 => DataType::Int16,
        ColumnType::F64 => DataType::Float64,
        ColumnType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
        ColumnType::Binary { .. } => DataType::Binary,
    }
}

/// The Arrow schema rows of `schema` read as, nullability included.
pub fn arrow_schema(schema: &Schema) -> SchemaRef {
    let fields: Vec<Field> = schema
        .columns()
        .iter()
        .map(|c| Field::new(&c.name, arrow_type(c.ty), c.nullable))
        .collect();
    Arc::new(ArrowSchema::new(fields))
}

/// The column type that holds values of Arrow type `dt` (a column `name` of a query's result,
/// as `CREATE TABLE … AS` stores it).
pub fn column_type(name: &str, dt: &DataType) -> Result<ColumnType> {
    Ok(match dt {
        DataType::Boolean => ColumnType::Bool,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => ColumnType::I16,
        DataType::Int32 | DataType::UInt16 => ColumnType::I32,
        DataType::Float32 | DataType::Float64 => ColumnType::F64,
        DataType::Timestamp(_, None) => ColumnType::Timestamp,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
            ColumnType::Binary { max_len: MAX_STRING_LEN }
        }
        DataType::Int64 | DataType::UInt32 => ColumnType::I64,
        DataType::Decimal128(_, scale) | DataType::Decimal256(_, scale)
            if (0..=18).contains(scale) =>
        {
            ColumnType::Decimal { scale: *scale as u8 }
        }
        DataType::Date32 => ColumnType::Date,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            ColumnType::VarChar { max_len: MAX_STRING_LEN }
        }
        DataType::Dictionary(_, value) => return column_type(name, value),
        other => return Err(no_counterpart(name, &other.to_string())),
    })
}

/// A schema of columns that hold `schema`'s fields (see [`column_type`]).
pub fn schema_of(schema: &ArrowSchema) -> Result<Schema> {
    let cols = schema
        .fields()
        .iter()
        .map(|f| {
            let ty = column_type(f.name(), f.data_type())?;
            Ok(Column { name: f.name().clone(), ty, nullable: f.is_nullable() })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Schema::new(cols)?)
}

/// The column type a SQL column definition declares.
pub fn declared_type(name: &str, dt: &ast::DataType) -> Result<ColumnType> {
    use ast::DataType as D;
    let len = |n: &Option<ast::CharacterLength>, default: u16| -> Result<u16> {
        match n {
            None | Some(ast::CharacterLength::Max) => Ok(default),
            Some(ast::CharacterLength::IntegerLength { length, .. }) => {
                u16::try_from(*length).ok().filter(|l| *l <= MAX_STRING_LEN).ok_or_else(|| {
                    Error::Plan(format!(
                        "column {name}: length {length} is over the longest string nvpage \
                         stores ({MAX_STRING_LEN} bytes)"
                    ))
                })
            }
        }
    };
    Ok(match dt {
        D::Bool | D::Boolean => ColumnType::Bool,
        D::SmallInt(_) | D::Int2(_) | D::TinyInt(_) | D::Int16 => ColumnType::I16,
        D::Int(_) | D::Integer(_) | D::Int4(_) | D::Int32 => ColumnType::I32,
        D::Double(_) | D::DoublePrecision | D::Float8 | D::Float64 | D::Real | D::Float4 => {
            ColumnType::F64
        }
        D::Float(_) => ColumnType::F64,
        D::Timestamp(_, ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone)
        | D::Datetime(_) => ColumnType::Timestamp,
        D::Binary(n) => ColumnType::Binary { max_len: binary_len(name, *n)? },
        D::Varbinary(n) => {
            let n = match n {
                Some(ast::BinaryLength::IntegerLength { length }) => Some(*length),
                Some(ast::BinaryLength::Max) | None => None,
            };
            ColumnType::Binary { max_len: binary_len(name, n)? }
        }
        D::Bytea | D::Blob(None) => ColumnType::Binary { max_len: MAX_STRING_LEN },
        D::BigInt(_) | D::Int8(_) | D::Int64 => ColumnType::I64,
        D::Decimal(info) | D::Numeric(info) | D::Dec(info) => {
            let (precision, scale) = match info {
                ExactNumberInfo::None => (DECIMAL_PRECISION as u64, 0),
                ExactNumberInfo::Precision(p) => (*p, 0),
                ExactNumberInfo::PrecisionAndScale(p, s) => (*p, *s),
            };
            if precision == 0
                || precision > u64::from(DECIMAL_PRECISION)
                || scale < 0
                || scale as u64 > precision
            {
                return Err(Error::Plan(format!(
                    "column {name}: DECIMAL({precision}, {scale}) does not fit an nvpage \
                     decimal (precision 1 to {DECIMAL_PRECISION}, scale 0 to the precision)"
                )));
            }
            ColumnType::Decimal { scale: scale as u8 }
        }
        D::Date => ColumnType::Date,
        D::Char(n) | D::Character(n) => {
            let n = len(n, 1)?;
            if n == 0 {
                return Err(Error::Plan(format!("column {name}: CHAR(0) holds nothing")));
            }
            ColumnType::Char { len: n }
        }
        D::Varchar(n) | D::CharVarying(n) | D::CharacterVarying(n) | D::Nvarchar(n) => {
            let n = len(n, MAX_STRING_LEN)?;
            if n == 0 {
                return Err(Error::Plan(format!("column {name}: VARCHAR(0) holds nothing")));
            }
            ColumnType::VarChar { max_len: n }
        }
        D::Text | D::String(None) => ColumnType::VarChar { max_len: MAX_STRING_LEN },
        other => return Err(no_counterpart(name, &other.to_string())),
    })
}

/// A declared `BINARY(n)`/`VARBINARY(n)` length (none: the longest).
fn binary_len(name: &str, n: Option<u64>) -> Result<u16> {
    match n {
        None => Ok(MAX_STRING_LEN),
        Some(0) => Err(Error::Plan(format!("column {name}: a binary length of 0 holds nothing"))),
        Some(n) => u16::try_from(n).ok().filter(|l| *l <= MAX_STRING_LEN).ok_or_else(|| {
            Error::Plan(format!(
                "column {name}: length {n} is over the longest value nvpage stores \
                 ({MAX_STRING_LEN} bytes)"
            ))
        }),
    }
}

fn no_counterpart(column: &str, ty: &str) -> Error {
    Error::Plan(format!(
        "column {column}: type {ty} has no nvpage counterpart (nvpage stores booleans, 16-, 32- \
         and 64-bit integers, doubles, decimals of up to 18 digits, dates, timestamps without \
         a time zone, char(n), varchar(n) and binary(n))"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every column type reads as an Arrow type that maps back to a type holding its values.
    #[test]
    fn every_column_type_round_trips_through_arrow() {
        for ty in [
            ColumnType::I32,
            ColumnType::I64,
            ColumnType::Decimal { scale: 0 },
            ColumnType::Decimal { scale: 18 },
            ColumnType::Date,
            ColumnType::Bool,
            ColumnType::I16,
            ColumnType::F64,
            ColumnType::Timestamp,
        ] {
            assert_eq!(column_type("c", &arrow_type(ty)).unwrap(), ty);
        }
        for ty in [ColumnType::Char { len: 3 }, ColumnType::VarChar { max_len: 40 }] {
            assert_eq!(
                column_type("c", &arrow_type(ty)).unwrap(),
                ColumnType::VarChar { max_len: MAX_STRING_LEN }
            );
        }
        assert_eq!(
            column_type("c", &arrow_type(ColumnType::Binary { max_len: 4 })).unwrap(),
            ColumnType::Binary { max_len: MAX_STRING_LEN }
        );
        let e = column_type("price", &DataType::UInt64).unwrap_err().to_string();
        assert!(e.contains("price") && e.contains("UInt64"), "{e}");
    }
}
