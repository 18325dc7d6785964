//! Column types, schemas, and where each column lives in a row.
//!
//! A row is laid out so any column is read without decoding the others:
//!
//! ```text
//! +-------------+------------------------------------------+-------------------------+
//! | null bitmap | fixed area: one slot per column, at an   | variable data           |
//! | ⌈n/8⌉ bytes | offset fixed by the schema               | (var strings, in order) |
//! +-------------+------------------------------------------+-------------------------+
//! ```
//!
//! Fixed slots: `I32` and `Date` 4 bytes, `I64` and `Decimal` 8, `Char(n)` n bytes (space
//! padded), `VarChar` 4 bytes (`u16` offset from the row start, `u16` length). All integers are
//! little-endian.

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};

/// The largest `Char(n)` and `VarChar(n)` length.
pub const MAX_STRING_LEN: u16 = 32 * 1024;

/// The largest `Decimal` scale: 10^18 is the largest power of ten an `i64` holds.
pub const MAX_SCALE: u8 = 18;

/// A column's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// A 32-bit signed integer.
    I32,
    /// A 64-bit signed integer.
    I64,
    /// A fixed-point decimal: an `i64` count of `10^-scale` units (scale 0..=18).
    Decimal {
        /// Digits after the point.
        scale: u8,
    },
    /// A date, as days since 1970-01-01 (an `i32`).
    Date,
    /// A fixed-length string of exactly `len` bytes, padded with spaces (TPC-H's `CHAR(n)`).
    Char {
        /// The length in bytes.
        len: u16,
    },
    /// A variable-length string of at most `max_len` bytes.
    VarChar {
        /// The longest value allowed, in bytes.
        max_len: u16,
    },
    /// `true` or `false` (one byte: 0 or 1).
    Bool,
    /// A 16-bit signed integer.
    I16,
    /// A 64-bit IEEE 754 float. NaN and −0.0 are stored as given; index keys order floats as
    /// IEEE 754's total order does (−NaN < −∞ < … < −0.0 < +0.0 < … < +∞ < NaN), as Arrow and
    /// DataFusion compare them.
    F64,
    /// A moment, as microseconds since 1970-01-01 00:00:00 UTC (an `i64`).
    Timestamp,
    /// Variable-length bytes, at most `max_len` of them.
    Binary {
        /// The longest value allowed, in bytes.
        max_len: u16,
    },
}

impl ColumnType {
    /// Bytes of the column's slot in the fixed area.
    pub fn fixed_width(self) -> usize {
        match self {
            ColumnType::Bool => 1,
            ColumnType::I16 => 2,
            ColumnType::I32 | ColumnType::Date => 4,
            ColumnType::I64
            | ColumnType::Decimal { .. }
            | ColumnType::F64
            | ColumnType::Timestamp => 8,
            ColumnType::Char { len } => len as usize,
            ColumnType::VarChar { .. } | ColumnType::Binary { .. } => 4,
        }
    }

    /// Whether values live after the fixed area, the slot holding their offset and length.
    pub(crate) fn is_var(self) -> bool {
        matches!(self, ColumnType::VarChar { .. } | ColumnType::Binary { .. })
    }

    pub(crate) fn tag(self) -> u8 {
        match self {
            ColumnType::I32 => 1,
            ColumnType::I64 => 2,
            ColumnType::Decimal { .. } => 3,
            ColumnType::Date => 4,
            ColumnType::Char { .. } => 5,
            ColumnType::VarChar { .. } => 6,
            ColumnType::Bool => 7,
            ColumnType::I16 => 8,
            ColumnType::F64 => 9,
            ColumnType::Timestamp => 10,
            ColumnType::Binary { .. } => 11,
        }
    }

    pub(crate) fn param(self) -> u16 {
        match self {
            ColumnType::Decimal { scale } => u16::from(scale),
            ColumnType::Char { len } => len,
            ColumnType::VarChar { max_len } | ColumnType::Binary { max_len } => max_len,
            _ => 0,
        }
    }

    /// What a type's parameter passes, if it is out of range, in words that follow the type:
    /// "varchar(40000) passes the longest string, 32768 bytes".
    fn out_of_range(self) -> Option<String> {
        match self {
            ColumnType::Decimal { scale } if scale > MAX_SCALE => {
                Some(format!("passes the largest scale, {MAX_SCALE}"))
            }
            ColumnType::Char { len: 0 } => {
                Some(format!("is empty: a char holds 1 to {MAX_STRING_LEN} bytes"))
            }
            ColumnType::Char { len } | ColumnType::VarChar { max_len: len }
                if len > MAX_STRING_LEN =>
            {
                Some(format!("passes the longest string, {MAX_STRING_LEN} bytes"))
            }
            ColumnType::Binary { max_len } if max_len > MAX_STRING_LEN => {
                Some(format!("passes the longest value, {MAX_STRING_LEN} bytes"))
            }
            _ => None,
        }
    }

    /// The type a catalog's tag and parameter name, if it is valid ([`Self::out_of_range`]).
    pub(crate) fn from_tag(tag: u8, param: u16) -> Option<Self> {
        let ty = match tag {
            1 => ColumnType::I32,
            2 => ColumnType::I64,
            3 => ColumnType::Decimal { scale: u8::try_from(param).ok()? },
            4 => ColumnType::Date,
            5 => ColumnType::Char { len: param },
            6 => ColumnType::VarChar { max_len: param },
            7 => ColumnType::Bool,
            8 => ColumnType::I16,
            9 => ColumnType::F64,
            10 => ColumnType::Timestamp,
            11 => ColumnType::Binary { max_len: param },
            _ => return None,
        };
        ty.out_of_range().is_none().then_some(ty)
    }
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnType::I32 => f.write_str("i32"),
            ColumnType::I64 => f.write_str("i64"),
            ColumnType::Decimal { scale } => write!(f, "decimal(scale {scale})"),
            ColumnType::Date => f.write_str("date"),
            ColumnType::Char { len } => write!(f, "char({len})"),
            ColumnType::VarChar { max_len } => write!(f, "varchar({max_len})"),
            ColumnType::Bool => f.write_str("bool"),
            ColumnType::I16 => f.write_str("i16"),
            ColumnType::F64 => f.write_str("f64"),
            ColumnType::Timestamp => f.write_str("timestamp"),
            ColumnType::Binary { max_len } => write!(f, "binary({max_len})"),
        }
    }
}

/// One column of a schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The column's name, unique in its table.
    pub name: String,
    /// Its type.
    pub ty: ColumnType,
    /// Whether it may hold NULL.
    pub nullable: bool,
}

impl Column {
    /// A NOT NULL column.
    pub fn new(name: impl Into<String>, ty: ColumnType) -> Self {
        Self { name: name.into(), ty, nullable: false }
    }

    /// A column that may hold NULL.
    pub fn nullable(name: impl Into<String>, ty: ColumnType) -> Self {
        Self { name: name.into(), ty, nullable: true }
    }
}

/// A table's columns and the row layout they imply. Cheap to clone (shared).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schema(Arc<SchemaInner>);

#[derive(Debug, PartialEq, Eq)]
struct SchemaInner {
    columns: Vec<Column>,
    offsets: Vec<usize>,
    fixed_end: usize,
    /// Indices of the `VarChar` and `Binary` columns, whose slots [`crate::RowRef::check_values`]
    /// checks.
    var_cols: Vec<usize>,
    /// Indices of the `Bool` columns, whose bytes [`crate::RowRef::check_values`] checks.
    bool_cols: Vec<usize>,
    /// The primary key's columns, in key order (empty: none).
    primary_key: Vec<usize>,
}

impl Schema {
    /// A schema of `columns`: at least one, names unique and nonempty, types valid.
    pub fn new(columns: Vec<Column>) -> Result<Self> {
        if columns.is_empty() || columns.len() > usize::from(u16::MAX) {
            return Err(Error::InvalidSchema("a table needs 1 to 65535 columns".into()));
        }
        for (i, c) in columns.iter().enumerate() {
            if c.name.is_empty() || c.name.len() > 255 {
                return Err(Error::InvalidSchema(format!("column {i}: name must be 1-255 bytes")));
            }
            if columns[..i].iter().any(|d| d.name == c.name) {
                return Err(Error::InvalidSchema(format!("duplicate column {}", c.name)));
            }
            if let Some(limit) = c.ty.out_of_range() {
                return Err(Error::InvalidSchema(format!("column {}: {} {limit}", c.name, c.ty)));
            }
        }
        let bitmap_len = columns.len().div_ceil(8);
        let mut offsets = Vec::with_capacity(columns.len());
        let mut at = bitmap_len;
        for c in &columns {
            offsets.push(at);
            at += c.ty.fixed_width();
        }
        let of = |f: fn(ColumnType) -> bool| {
            columns.iter().enumerate().filter(|(_, c)| f(c.ty)).map(|(i, _)| i).collect()
        };
        let var_cols = of(ColumnType::is_var);
        let bool_cols = of(|ty| ty == ColumnType::Bool);
        let primary_key = Vec::new();
        let inner =
            SchemaInner { columns, offsets, fixed_end: at, var_cols, bool_cols, primary_key };
        Ok(Schema(Arc::new(inner)))
    }

    /// This schema with a primary key of `columns` (named, in key order): no two rows of the
    /// table may have one key, and its columns become NOT NULL. A table created with it gets a
    /// unique index `<table>_pkey` over those columns, made and dropped with the table
    /// ([`ReadOps::primary_key`](crate::ReadOps::primary_key)). Unknown, repeated or no columns
    /// are errors.
    ///
    /// ```
    /// use nvpage::{Column, ColumnType, Schema};
    ///
    /// let schema = Schema::new(vec![
    ///     Column::nullable("id", ColumnType::I64),
    ///     Column::new("name", ColumnType::VarChar { max_len: 40 }),
    /// ])?
    /// .with_primary_key(&["id"])?;
    /// assert_eq!(schema.primary_key(), Some(&[0][..]));
    /// assert!(!schema.columns()[0].nullable);
    /// # Ok::<(), nvpage::Error>(())
    /// ```
    pub fn with_primary_key(&self, columns: &[&str]) -> Result<Schema> {
        let mut key = Vec::with_capacity(columns.len());
        for c in columns {
            let i = self.index_of(c)?;
            if key.contains(&i) {
                return Err(Error::InvalidSchema(format!("column {c} twice in the primary key")));
            }
            key.push(i);
        }
        self.with_key_positions(key)
    }

    /// [`Self::with_primary_key`] by column positions (the catalog's form).
    pub(crate) fn with_key_positions(&self, key: Vec<usize>) -> Result<Schema> {
        if key.is_empty() {
            return Err(Error::InvalidSchema("a primary key needs at least one column".into()));
        }
        let mut columns = self.0.columns.clone();
        for &i in &key {
            columns[i].nullable = false;
        }
        let plain = Schema::new(columns)?;
        let mut inner = Arc::into_inner(plain.0).expect("a schema just made is not shared");
        inner.primary_key = key;
        Ok(Schema(Arc::new(inner)))
    }

    /// The primary key's columns, by position in key order, if the schema has one
    /// ([`Self::with_primary_key`]).
    pub fn primary_key(&self) -> Option<&[usize]> {
        Some(&self.0.primary_key[..]).filter(|k| !k.is_empty())
    }

    /// The columns, in order.
    pub fn columns(&self) -> &[Column] {
        &self.0.columns
    }

    /// The index of the column named `name`.
    pub fn index_of(&self, name: &str) -> Result<usize> {
        self.0
            .columns
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| Error::UnknownColumn(name.to_string()))
    }

    /// Byte offset of column `i`'s fixed slot in a row.
    pub(crate) fn offset(&self, i: usize) -> usize {
        self.0.offsets[i]
    }

    /// Bytes before the variable data: bitmap plus fixed slots (the smallest possible row).
    pub(crate) fn fixed_end(&self) -> usize {
        self.0.fixed_end
    }

    /// Indices of the `VarChar` and `Binary` columns.
    pub(crate) fn var_cols(&self) -> &[usize] {
        &self.0.var_cols
    }

    /// Indices of the `Bool` columns.
    pub(crate) fn bool_cols(&self) -> &[usize] {
        &self.0.bool_cols
    }
}
