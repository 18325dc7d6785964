//! Values, row encoding, and rows read in place through a borrowed view.
//!
//! Rows are encoded once, on insert and update ([`encode_row`]), with every value checked against
//! its column. They are read in place: [`RowRef`] borrows the page's bytes and its typed getters
//! read one column's slot without decoding the rest. A typed column handle ([`Col`]) is checked
//! against the schema once, when it is made, so the per-row getters only bound-check.

use std::fmt;
use std::marker::PhantomData;

use crate::error::{Error, Result};
use crate::schema::{Column, ColumnType, Schema};
use crate::table::RowId;

/// A fixed-point decimal: `units × 10^-scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Decimal {
    /// The value in units of `10^-scale`.
    pub units: i64,
    /// Digits after the point (0..=18).
    pub scale: u8,
}

impl Decimal {
    /// `units × 10^-scale`.
    pub fn new(units: i64, scale: u8) -> Self {
        Self { units, scale }
    }

    /// The same value at `scale`, if it is exact there and fits an `i64`.
    pub fn rescale(self, scale: u8) -> Option<i64> {
        if scale >= self.scale {
            10i64.checked_pow(u32::from(scale - self.scale))?.checked_mul(self.units)
        } else {
            let div = 10i64.checked_pow(u32::from(self.scale - scale))?;
            (self.units % div == 0).then_some(self.units / div)
        }
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        format_scaled(f, i128::from(self.units), self.scale)
    }
}

/// Writes `units × 10^-scale` with exactly `scale` digits after the point, for any scale (a
/// [`Decimal`] built with a scale past a column's maximum still prints: an error naming such a
/// value must not fail while it is written).
pub fn format_scaled(f: &mut impl fmt::Write, units: i128, scale: u8) -> fmt::Result {
    if scale == 0 {
        return write!(f, "{units}");
    }
    let sign = if units < 0 { "-" } else { "" };
    let a = units.unsigned_abs();
    match 10u128.checked_pow(u32::from(scale)) {
        Some(p) => write!(f, "{sign}{}.{:0w$}", a / p, a % p, w = usize::from(scale)),
        // 10^39 and beyond overflow a u128, and every i128's magnitude is below them: no
        // integer part, the digits zero-padded on the left.
        None => write!(f, "{sign}0.{a:0w$}", w = usize::from(scale)),
    }
}

/// A date as days since 1970-01-01.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date(pub i32);

impl Date {
    /// The date of a proleptic Gregorian `year-month-day`, if valid.
    /// A `const fn`, so a query's constant dates cost nothing per row.
    #[inline]
    pub const fn from_ymd(year: i32, month: u32, day: u32) -> Option<Date> {
        if month < 1 || month > 12 || day == 0 || day > days_in_month(year, month) {
            return None;
        }
        // Howard Hinnant's days_from_civil, in i64: every i32 year fits; the day count may not
        // fit a `Date` (years beyond about ±5.8 million), which is `None`.
        let y = year as i64 - (month <= 2) as i64;
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = month as i64;
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day as i64 - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        if days < i32::MIN as i64 || days > i32::MAX as i64 {
            return None;
        }
        Some(Date(days as i32))
    }

    /// `(year, month, day)`. Computed in i64, so every `Date` has one (its year fits an i32).
    pub fn ymd(self) -> (i32, u32, u32) {
        let z = i64::from(self.0) + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        // |year| stays below 5.9 million for every i32 day count.
        ((yoe + era * 400 + i64::from(m <= 2)) as i32, m, d)
    }

    /// Parses `YYYY-MM-DD`.
    pub fn parse(s: &str) -> Option<Date> {
        let mut it = s.splitn(3, '-');
        let y = it.next()?.parse().ok()?;
        let m = it.next()?.parse().ok()?;
        let d = it.next()?.parse().ok()?;
        Date::from_ymd(y, m, d)
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (y, m, d) = self.ymd();
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}

/// A moment, as microseconds since 1970-01-01 00:00:00 UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

/// Microseconds in a day.
const DAY_MICROS: i64 = 86_400_000_000;

impl Timestamp {
    /// The moment `micros` microseconds into the UTC day `date`.
    pub fn from_date(date: Date, micros: i64) -> Option<Timestamp> {
        // In i128: the first day of the range begins before the first timestamp.
        let t = i128::from(date.0) * i128::from(DAY_MICROS) + i128::from(micros);
        i64::try_from(t).ok().map(Timestamp)
    }

    /// The UTC day it falls on, and the microseconds since that day began.
    pub fn date_and_micros(self) -> (Date, i64) {
        // |i64::MAX / DAY_MICROS| is about 1.07e8 days: it fits an i32.
        (Date(self.0.div_euclid(DAY_MICROS) as i32), self.0.rem_euclid(DAY_MICROS))
    }
}

/// `YYYY-MM-DD HH:MM:SS`, then `.ffffff` if the microseconds are not zero (UTC).
impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (date, us) = self.date_and_micros();
        let secs = us / 1_000_000;
        let (h, m, sec) = (secs / 3600, secs / 60 % 60, secs % 60);
        write!(f, "{date} {h:02}:{m:02}:{sec:02}")?;
        match us % 1_000_000 {
            0 => Ok(()),
            frac => write!(f, ".{frac:06}"),
        }
    }
}

const fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A value to store in a column.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    /// NULL (nullable columns only).
    Null,
    /// For `I32` columns, and `I64` and `Decimal` columns, which take it widened.
    I32(i32),
    /// For `I64` columns, and `Decimal` columns, which take it if it fits at their scale.
    I64(i64),
    /// For `Decimal` columns; rescaled to the column's scale if that is exact.
    Decimal(Decimal),
    /// For `Date` columns.
    Date(Date),
    /// For `Char` and `VarChar` columns, and `Binary` ones (its bytes).
    Str(&'a str),
    /// For `Bool` columns.
    Bool(bool),
    /// For `I16` columns, and `I32`, `I64` and `Decimal` columns, which take it widened.
    I16(i16),
    /// For `F64` columns.
    F64(f64),
    /// For `Timestamp` columns.
    Timestamp(Timestamp),
    /// For `Binary` columns, and `Char` and `VarChar` ones if the bytes are UTF-8.
    Bytes(&'a [u8]),
}

/// A value as a user writes it, SQL's way: `NULL`, `42`, `12.50`, `1998-12-01`, `'text'` (a
/// quote inside doubled, control characters escaped; a string longer than 40 characters is
/// cut short with `…`).
impl fmt::Display for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::I32(x) => write!(f, "{x}"),
            Value::I64(x) => write!(f, "{x}"),
            Value::Decimal(d) => write!(f, "{d}"),
            Value::Date(d) => write!(f, "{d}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::I16(x) => write!(f, "{x}"),
            Value::F64(x) => write!(f, "{x}"),
            Value::Timestamp(t) => write!(f, "{t}"),
            Value::Bytes(b) => {
                f.write_str("x'")?;
                for byte in b.iter().take(SHOWN_CHARS) {
                    write!(f, "{byte:02x}")?;
                }
                let cut = if b.len() > SHOWN_CHARS { "…" } else { "" };
                write!(f, "{cut}'")
            }
            Value::Str(s) => {
                f.write_str("'")?;
                for c in s.chars().take(SHOWN_CHARS) {
                    match c {
                        '\'' => f.write_str("''")?,
                        c if c.is_control() => write!(f, "{}", c.escape_default())?,
                        c => write!(f, "{c}")?,
                    }
                }
                let cut = if s.chars().nth(SHOWN_CHARS).is_some() { "…" } else { "" };
                write!(f, "{cut}'")
            }
        }
    }
}

/// The characters of a string a message shows.
const SHOWN_CHARS: usize = 40;

/// `impl From<T> for Value` for each owned type, as the variant given.
macro_rules! value_from {
    ($($ty:ty => $variant:ident,)*) => {$(
        impl From<$ty> for Value<'_> {
            fn from(x: $ty) -> Self {
                Value::$variant(x)
            }
        }
    )*};
}

value_from! {
    bool => Bool,
    i16 => I16,
    i32 => I32,
    i64 => I64,
    f64 => F64,
    Decimal => Decimal,
    Date => Date,
    Timestamp => Timestamp,
}

impl<'a> From<&'a [u8]> for Value<'a> {
    fn from(b: &'a [u8]) -> Self {
        Value::Bytes(b)
    }
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(s: &'a str) -> Self {
        Value::Str(s)
    }
}

impl<'a> From<&'a String> for Value<'a> {
    fn from(s: &'a String) -> Self {
        Value::Str(s)
    }
}

/// `None` is NULL.
impl<'a, T: Into<Value<'a>>> From<Option<T>> for Value<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

impl<'a> From<&'a OwnedValue> for Value<'a> {
    fn from(v: &'a OwnedValue) -> Self {
        v.as_value()
    }
}

impl Value<'_> {
    /// What kind of value this is, in words for a message: "a string", "an i64", ... A string
    /// cut short by its `Display` says its length.
    fn kind(&self) -> String {
        match self {
            Value::Null => "no value".into(),
            Value::I32(_) => "an i32".into(),
            Value::I64(_) => "an i64".into(),
            Value::Decimal(_) => "a decimal".into(),
            Value::Date(_) => "a date".into(),
            Value::Bool(_) => "a bool".into(),
            Value::I16(_) => "an i16".into(),
            Value::F64(_) => "an f64".into(),
            Value::Timestamp(_) => "a timestamp".into(),
            Value::Bytes(b) => format!("{} bytes", b.len()),
            Value::Str(s) if s.chars().nth(SHOWN_CHARS).is_some() => {
                format!("a string of {} bytes", s.len())
            }
            Value::Str(_) => "a string".into(),
        }
    }
}

/// The error for value `v` that column `column` cannot hold, and why (`None`: not its type):
/// "'one' (a string) for column qty (i64)", "12.345 (a decimal) for column price
/// (decimal(scale 2)): not exact at scale 2".
pub(crate) fn misfit(column: &Column, v: &Value<'_>, why: Option<String>) -> Error {
    let (name, ty) = (&column.name, column.ty);
    let why = why.map(|w| format!(": {w}")).unwrap_or_default();
    let reason = match v {
        Value::Null => format!("NULL for column {name} ({ty}){why}"),
        v => format!("{v} ({}) for column {name} ({ty}){why}", v.kind()),
    };
    Error::ValueDoesNotFit { column: name.clone(), reason }
}

/// Why decimal `d` does not fit a column of scale `scale`: it needs more digits after the point,
/// or (at a larger scale) its units pass an `i64`.
pub(crate) fn decimal_misfit(d: Decimal, scale: u8) -> String {
    if scale < d.scale {
        format!("not exact at scale {scale}")
    } else {
        format!("out of range at scale {scale}")
    }
}

/// What an `I64` or `Decimal` column `c` stores for `v` (not NULL): an `I64` column takes an
/// `i64`, or an `i32` or `i16` widened; a `Decimal` column its units at its scale of a decimal or
/// an integer, if exact there and in range.
pub(crate) fn wide(c: &Column, v: &Value<'_>) -> Result<i64> {
    let d = match (c.ty, v) {
        (ColumnType::I64, Value::I64(x)) => return Ok(*x),
        (ColumnType::I64, Value::I32(x)) => return Ok(i64::from(*x)),
        (ColumnType::I64, Value::I16(x)) => return Ok(i64::from(*x)),
        (ColumnType::Decimal { .. }, Value::Decimal(d)) => *d,
        (ColumnType::Decimal { .. }, Value::I64(x)) => Decimal::new(*x, 0),
        (ColumnType::Decimal { .. }, Value::I32(x)) => Decimal::new(i64::from(*x), 0),
        (ColumnType::Decimal { .. }, Value::I16(x)) => Decimal::new(i64::from(*x), 0),
        _ => return Err(misfit(c, v, None)),
    };
    let ColumnType::Decimal { scale } = c.ty else { unreachable!("matched above") };
    d.rescale(scale).ok_or_else(|| misfit(c, v, Some(decimal_misfit(d, scale))))
}

/// The bytes column `c` (a `Char`, `VarChar` or `Binary`) stores for `v` (a string or bytes):
/// bytes given for a string column must be UTF-8.
pub(crate) fn text_bytes<'v>(c: &Column, v: &Value<'v>) -> Result<&'v [u8]> {
    match (c.ty, v) {
        (_, Value::Str(s)) => Ok(s.as_bytes()),
        (ColumnType::Binary { .. }, Value::Bytes(b)) => Ok(b),
        (_, Value::Bytes(b)) if std::str::from_utf8(b).is_ok() => Ok(b),
        (_, Value::Bytes(_)) => Err(misfit(c, v, Some("the bytes are not UTF-8".into()))),
        _ => Err(misfit(c, v, None)),
    }
}

/// Encodes `values` as a row of `schema`, checking each against its column.
pub fn encode_row(schema: &Schema, values: &[Value<'_>], out: &mut Vec<u8>) -> Result<()> {
    let cols = schema.columns();
    if values.len() != cols.len() {
        return Err(Error::WrongArity { expected: cols.len(), found: values.len() });
    }
    out.clear();
    out.resize(schema.fixed_end(), 0);
    for (i, (c, v)) in cols.iter().zip(values).enumerate() {
        let at = schema.offset(i);
        let too_long = |len: u16| misfit(c, v, Some(format!("longer than {len} bytes")));
        match (c.ty, v) {
            (_, Value::Null) if c.nullable => out[i / 8] |= 1 << (i % 8),
            (_, Value::Null) => return Err(misfit(c, v, Some("it is NOT NULL".into()))),
            (ColumnType::I32, Value::I32(x)) => out[at..at + 4].copy_from_slice(&x.to_le_bytes()),
            (ColumnType::I32, Value::I16(x)) => {
                out[at..at + 4].copy_from_slice(&i32::from(*x).to_le_bytes())
            }
            (ColumnType::I16, Value::I16(x)) => out[at..at + 2].copy_from_slice(&x.to_le_bytes()),
            (ColumnType::Bool, Value::Bool(b)) => out[at] = u8::from(*b),
            (ColumnType::F64, Value::F64(x)) => out[at..at + 8].copy_from_slice(&x.to_le_bytes()),
            (ColumnType::Timestamp, Value::Timestamp(t)) => {
                out[at..at + 8].copy_from_slice(&t.0.to_le_bytes())
            }
            (ColumnType::Date, Value::Date(d)) => {
                out[at..at + 4].copy_from_slice(&d.0.to_le_bytes())
            }
            (ColumnType::I64 | ColumnType::Decimal { .. }, _) => {
                out[at..at + 8].copy_from_slice(&wide(c, v)?.to_le_bytes());
            }
            (ColumnType::Char { len }, Value::Str(_) | Value::Bytes(_)) => {
                let s = text_bytes(c, v)?;
                if s.len() > usize::from(len) {
                    return Err(too_long(len));
                }
                out[at..at + s.len()].copy_from_slice(s);
                out[at + s.len()..at + usize::from(len)].fill(b' ');
            }
            (
                ColumnType::VarChar { max_len } | ColumnType::Binary { max_len },
                Value::Str(_) | Value::Bytes(_),
            ) => {
                let s = text_bytes(c, v)?;
                if s.len() > usize::from(max_len) {
                    return Err(too_long(max_len));
                }
                let off = out.len();
                if off + s.len() > usize::from(u16::MAX) {
                    return Err(Error::RowTooLarge {
                        bytes: off + s.len(),
                        max: usize::from(u16::MAX),
                    });
                }
                out[at..at + 2].copy_from_slice(&(off as u16).to_le_bytes());
                out[at + 2..at + 4].copy_from_slice(&(s.len() as u16).to_le_bytes());
                out.extend_from_slice(s);
            }
            (_, v) => return Err(misfit(c, v, None)),
        }
    }
    Ok(())
}

/// A row read in place: borrowed bytes plus the schema that reads them.
#[derive(Clone, Copy, Debug)]
pub struct RowRef<'r> {
    schema: &'r Schema,
    bytes: &'r [u8],
    id: RowId,
}

/// The error for a row of `len` bytes where its schema needs at least `needs`.
#[cold]
#[inline(never)]
fn short_row(len: usize, needs: usize) -> Error {
    Error::CorruptRow(format!("{len} bytes, the schema needs at least {needs}"))
}

impl<'r> RowRef<'r> {
    /// Checks that `bytes` can be read as a row of `schema`: long enough for its null bitmap and
    /// fixed area, so that every fixed-width getter reads inside it. A string's slot is checked
    /// when the string is read (one pointing into the fixed area or past the row's end is then
    /// [`Error::CorruptRow`]), so a scan that reads no string pays nothing for them;
    /// [`RowRef::check_values`] checks every one at once. `id` is where the row lives.
    #[inline]
    pub fn new(schema: &'r Schema, bytes: &'r [u8], id: RowId) -> Result<Self> {
        if bytes.len() < schema.fixed_end() {
            return Err(short_row(bytes.len(), schema.fixed_end()));
        }
        Ok(Self { schema, bytes, id })
    }

    /// A row already checked to be as long as `schema`'s fixed area (as [`RowRef::new`] checks).
    #[inline(always)]
    pub(crate) fn from_checked(schema: &'r Schema, bytes: &'r [u8], id: RowId) -> Self {
        debug_assert!(bytes.len() >= schema.fixed_end());
        Self { schema, bytes, id }
    }

    /// Checks where every value lies, at once: each non-NULL variable-length value among the
    /// row's values, after its fixed area and inside the row, and each `Bool` 0 or 1. Not what a
    /// value holds: a `VarChar` whose bytes are not UTF-8 passes, and its getter refuses it
    /// (`check` reads every value of every row besides).
    pub fn check_values(&self) -> Result<()> {
        for &i in self.schema.bool_cols() {
            if !self.is_null(i) && self.bytes[self.schema.offset(i)] > 1 {
                let name = &self.schema.columns()[i].name;
                return Err(Error::CorruptRow(format!(
                    "column {name} holds a bool that is not 0 or 1"
                )));
            }
        }
        for &i in self.schema.var_cols() {
            if !self.is_null(i) {
                let at = self.schema.offset(i);
                if var_bytes(self.bytes, at, self.schema.fixed_end()).is_none() {
                    let name = &self.schema.columns()[i].name;
                    return Err(Error::CorruptRow(format!(
                        "column {name} points outside the row's values"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Where the row lives (its page and slot), for an update or a delete of it.
    pub fn id(&self) -> RowId {
        self.id
    }

    /// The row's encoded bytes.
    pub fn bytes(&self) -> &'r [u8] {
        self.bytes
    }

    /// The schema.
    pub fn schema(&self) -> &'r Schema {
        self.schema
    }

    /// Whether column `i` is NULL.
    #[inline]
    pub fn is_null(&self, i: usize) -> bool {
        i < self.schema.columns().len() && self.bytes[i / 8] & (1 << (i % 8)) != 0
    }

    /// Column `c`'s value; NULL is [`Error::Null`].
    // Always inlined: a scan calls it per column per row, and through a call its `Result`
    // travelled through memory (perf annotate of Q1).
    #[inline(always)]
    pub fn get<K: Kind>(&self, c: Col<K>) -> Result<K::Out<'r>> {
        match self.get_opt(c)? {
            Some(v) => Ok(v),
            None => Err(self.null_error(c.index)),
        }
    }

    /// [`Error::Null`] for column `i`, out of the getters' inlined bodies.
    #[cold]
    #[inline(never)]
    fn null_error(&self, i: usize) -> Error {
        Error::Null(self.schema.columns()[i].name.clone())
    }

    /// Column `c`'s value, or `None` for NULL.
    #[inline(always)]
    pub fn get_opt<K: Kind>(&self, c: Col<K>) -> Result<Option<K::Out<'r>>> {
        c.check(self.schema)?;
        self.read_opt(c)
    }

    /// Column `c`'s value, or `None` for NULL, for a handle already checked against this row's
    /// schema ([`Col::check`]): the fixed slot it reads lies inside the row, which
    /// [`RowRef::new`] checked is as long as the schema's fixed area.
    #[inline(always)]
    fn read_opt<K: Kind>(&self, c: Col<K>) -> Result<Option<K::Out<'r>>> {
        if c.nullable && self.is_null(c.index) {
            return Ok(None);
        }
        K::decode(self.bytes, c.offset, c.ty, c.fixed_end).map(Some)
    }

    /// The value of the column named `name`, read as `K` (NULL is [`Error::Null`]): one call
    /// for one value, where a loop over many rows makes a [`Col`] once and calls
    /// [`RowRef::get`].
    ///
    /// ```
    /// # use nvpage::{Column, ColumnType, Database, Decimal, ReadOps, Schema, Value, kind};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path().join("db"))?;
    /// let schema = Schema::new(vec![
    ///     Column::new("name", ColumnType::VarChar { max_len: 20 }),
    ///     Column::new("balance", ColumnType::Decimal { scale: 2 }),
    /// ])?;
    /// let mut w = db.begin_write()?;
    /// let t = w.create_table("users", schema)?;
    /// let id = w.insert(&t, &["ada".into(), Decimal::new(1050, 2).into()])?;
    /// let g = w.get(&t, id)?;
    /// assert_eq!(g.row()?.get_named::<kind::Decimal>("balance")?.to_string(), "10.50");
    /// assert_eq!(g.row()?.get_named::<kind::Str>("name")?, "ada");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_named<K: Kind>(&self, name: &str) -> Result<K::Out<'r>> {
        self.get(Col::<K>::new(self.schema, name)?)
    }

    /// Column `i` as an owned [`OwnedValue`], whatever its type (slower than typed getters).
    pub fn value(&self, i: usize) -> Result<OwnedValue> {
        let col =
            self.schema.columns().get(i).ok_or_else(|| Error::UnknownColumn(format!("#{i}")))?;
        if self.is_null(i) {
            return Ok(OwnedValue::Null);
        }
        let at = self.schema.offset(i);
        Ok(match col.ty {
            ColumnType::I32 => OwnedValue::I32(read_i32(self.bytes, at)),
            ColumnType::Date => OwnedValue::Date(Date(read_i32(self.bytes, at))),
            ColumnType::I64 => OwnedValue::I64(read_i64(self.bytes, at)),
            ColumnType::Decimal { scale } => {
                OwnedValue::Decimal(Decimal::new(read_i64(self.bytes, at), scale))
            }
            ColumnType::Char { .. } | ColumnType::VarChar { .. } => {
                let fixed_end = self.schema.fixed_end();
                OwnedValue::Str(kind::Str::decode(self.bytes, at, col.ty, fixed_end)?.to_string())
            }
            ColumnType::Bool => OwnedValue::Bool(kind::Bool::decode(self.bytes, at, col.ty, 0)?),
            ColumnType::I16 => OwnedValue::I16(i16::from_le_bytes(read_n(self.bytes, at))),
            ColumnType::F64 => OwnedValue::F64(f64::from_le_bytes(read_n(self.bytes, at))),
            ColumnType::Timestamp => OwnedValue::Timestamp(Timestamp(read_i64(self.bytes, at))),
            ColumnType::Binary { .. } => {
                let fixed_end = self.schema.fixed_end();
                OwnedValue::Bytes(kind::Bytes::decode(self.bytes, at, col.ty, fixed_end)?.to_vec())
            }
        })
    }
}

/// An owned value, as [`RowRef::value`] returns it. Equal as its bytes are: an `F64` equals an
/// `F64` of the same bits (NaN equals the same NaN, −0.0 differs from +0.0), so that `Eq` and
/// `Hash` hold.
#[derive(Clone, Debug)]
pub enum OwnedValue {
    /// NULL.
    Null,
    /// An `I32`.
    I32(i32),
    /// An `I64`.
    I64(i64),
    /// A `Decimal`.
    Decimal(Decimal),
    /// A `Date`.
    Date(Date),
    /// A `Char` (without its padding) or `VarChar`.
    Str(String),
    /// A `Bool`.
    Bool(bool),
    /// An `I16`.
    I16(i16),
    /// An `F64`.
    F64(f64),
    /// A `Timestamp`.
    Timestamp(Timestamp),
    /// A `Binary`.
    Bytes(Vec<u8>),
}

impl OwnedValue {
    /// What equality and hashing compare: the variant and its bytes.
    fn identity(&self) -> (u8, i128, &[u8]) {
        match self {
            OwnedValue::Null => (0, 0, &[]),
            OwnedValue::I32(x) => (1, i128::from(*x), &[]),
            OwnedValue::I64(x) => (2, i128::from(*x), &[]),
            OwnedValue::Decimal(d) => (3, i128::from(d.units) << 8 | i128::from(d.scale), &[]),
            OwnedValue::Date(d) => (4, i128::from(d.0), &[]),
            OwnedValue::Str(s) => (5, 0, s.as_bytes()),
            OwnedValue::Bool(b) => (6, i128::from(*b), &[]),
            OwnedValue::I16(x) => (7, i128::from(*x), &[]),
            OwnedValue::F64(x) => (8, i128::from(x.to_bits()), &[]),
            OwnedValue::Timestamp(t) => (9, i128::from(t.0), &[]),
            OwnedValue::Bytes(b) => (10, 0, b),
        }
    }
}

impl PartialEq for OwnedValue {
    fn eq(&self, other: &Self) -> bool {
        self.identity() == other.identity()
    }
}

impl Eq for OwnedValue {}

impl std::hash::Hash for OwnedValue {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.identity().hash(state);
    }
}

impl OwnedValue {
    /// The value borrowed as a [`Value`], for inserting it again.
    pub fn as_value(&self) -> Value<'_> {
        match self {
            OwnedValue::Null => Value::Null,
            OwnedValue::I32(x) => Value::I32(*x),
            OwnedValue::I64(x) => Value::I64(*x),
            OwnedValue::Decimal(d) => Value::Decimal(*d),
            OwnedValue::Date(d) => Value::Date(*d),
            OwnedValue::Str(s) => Value::Str(s),
            OwnedValue::Bool(b) => Value::Bool(*b),
            OwnedValue::I16(x) => Value::I16(*x),
            OwnedValue::F64(x) => Value::F64(*x),
            OwnedValue::Timestamp(t) => Value::Timestamp(*t),
            OwnedValue::Bytes(b) => Value::Bytes(b),
        }
    }
}

#[inline]
fn read_i32(b: &[u8], at: usize) -> i32 {
    // One bounds check and one load (indexing byte by byte checked each byte and assembled
    // the value from four loads).
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    i32::from_le_bytes(a)
}

#[inline]
fn read_n<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[at..at + N]);
    a
}

#[inline]
fn read_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_le_bytes(a)
}

#[inline]
fn var_slot(b: &[u8], at: usize) -> (usize, usize) {
    (
        usize::from(u16::from_le_bytes([b[at], b[at + 1]])),
        usize::from(u16::from_le_bytes([b[at + 2], b[at + 3]])),
    )
}

/// The value of the `VarChar` whose slot is at `at` in `row`, if it lies where values are
/// stored: between the fixed area's end (`fixed_end`) and the row's. One rule for `check` and
/// every getter, so that no reader takes bytes of the fixed area for a string.
#[inline(always)]
fn var_bytes(row: &[u8], at: usize, fixed_end: usize) -> Option<&[u8]> {
    let (off, len) = var_slot(row, at);
    if off < fixed_end { None } else { row.get(off..off + len) }
}

/// A column handle checked once against its schema: `Col<kind::I64>` reads an `I64` column.
#[derive(Debug)]
pub struct Col<K> {
    index: usize,
    offset: usize,
    ty: ColumnType,
    nullable: bool,
    fixed_end: usize,
    _kind: PhantomData<K>,
}

impl<K> Clone for Col<K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K> Copy for Col<K> {}

impl<K: Kind> Col<K> {
    /// The handle for column `name` of `schema`, if its type is read by `K`.
    pub fn new(schema: &Schema, name: &str) -> Result<Self> {
        let index = schema.index_of(name)?;
        let c = &schema.columns()[index];
        if !K::matches(c.ty) {
            return Err(Error::ColumnType {
                column: name.to_string(),
                actual: c.ty,
                wanted: K::NAME,
            });
        }
        Ok(Self {
            index,
            offset: schema.offset(index),
            ty: c.ty,
            nullable: c.nullable,
            fixed_end: schema.fixed_end(),
            _kind: PhantomData,
        })
    }

    /// The column's index in its schema.
    pub fn index(&self) -> usize {
        self.index
    }
}

impl<K> Col<K> {
    /// Whether this handle can read rows of `schema`: made for a schema with the same fixed
    /// area, so its slot lies inside every row [`RowRef::new`] accepts, and naming one of its
    /// columns. [`Error::ColumnMismatch`] if not.
    #[inline(always)]
    fn check(&self, schema: &Schema) -> Result<()> {
        if self.fixed_end != schema.fixed_end() || self.index >= schema.columns().len() {
            return Err(Error::ColumnMismatch);
        }
        Ok(())
    }
}

/// A lifetime that cannot be shortened or lengthened (`PhantomData` of a function from and to
/// it). [`PageRows`](crate::PageRows), [`PageCol`] and [`PageRow`] all carry their page's, and
/// the fold's closure is called for every lifetime, so two pages' lifetimes never agree: a
/// handle checked against one page's schema reads only that page's rows.
pub(crate) type Brand<'p> = PhantomData<fn(&'p ()) -> &'p ()>;

/// A column handle checked against one page's schema, by
/// [`PageRows::col`](crate::PageRows::col): reading it from a row of that page
/// ([`PageRow::get`]) needs no check of the handle, only of the value (NULL).
///
/// It reads only that page's rows. A fold nested in another reads its own page's rows with
/// its own page's handles:
///
/// ```
/// # use nvpage::{Database, ReadOps, Result, Table, kind};
/// fn nested(db: &Database, t: &Table) -> Result<i64> {
///     let a = t.col::<kind::I64>("a")?;
///     db.begin_read()?.par_fold_pages(t, 1, || 0, |n, _page| {
///         let inner = db.begin_read()?.par_fold_pages(t, 1, || 0, |m, other| {
///             let a = other.col(a)?;
///             other.fold(m, |m, r| Ok(m + r.get(a)?))
///         }, |x, y| x + y)?;
///         Ok(n + inner)
///     }, |x, y| x + y)
/// }
/// ```
///
/// and the outer page's handle does not compile there:
///
/// ```compile_fail
/// # use nvpage::{Database, ReadOps, Result, Table, kind};
/// fn nested(db: &Database, t: &Table) -> Result<i64> {
///     let a = t.col::<kind::I64>("a")?;
///     db.begin_read()?.par_fold_pages(t, 1, || 0, |n, page| {
///         let a = page.col(a)?;
///         let inner = db.begin_read()?.par_fold_pages(t, 1, || 0, |m, other| {
///             other.fold(m, |m, r| Ok(m + r.get(a)?))
///         }, |x, y| x + y)?;
///         Ok(n + inner)
///     }, |x, y| x + y)
/// }
/// ```
///
/// nor does one made from the outer page there, even with both pages' lifetimes forced to one:
///
/// ```compile_fail
/// # use nvpage::{Database, PageRows, ReadOps, Result, Table, kind};
/// fn join<'c>(a: PageRows<'c>, b: PageRows<'c>) -> (PageRows<'c>, PageRows<'c>) {
///     (a, b)
/// }
/// fn nested(db: &Database, t: &Table, u: &Table) -> Result<i64> {
///     let a = t.col::<kind::I64>("a")?;
///     db.begin_read()?.par_fold_pages(t, 1, || 0, |n, page| {
///         let inner = db.begin_read()?.par_fold_pages(u, 1, || 0, |m, other| {
///             let (page, other) = join(page, other);
///             let a = page.col(a)?;
///             other.fold(m, |m, r| Ok(m + r.get(a)?))
///         }, |x, y| x + y)?;
///         Ok(n + inner)
///     }, |x, y| x + y)
/// }
/// ```
#[derive(Debug)]
pub struct PageCol<'p, K> {
    col: Col<K>,
    _page: Brand<'p>,
}

impl<K> Clone for PageCol<'_, K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K> Copy for PageCol<'_, K> {}

impl<'p, K> PageCol<'p, K> {
    /// `col`, checked against `schema` (the page's) more closely than a row's getter can afford
    /// to, once a page: besides [`Col::check`]'s fixed area and index, the column at that index
    /// must have the handle's place, type and nullability.
    #[inline(always)]
    pub(crate) fn new(col: Col<K>, schema: &Schema) -> Result<Self> {
        col.check(schema)?;
        let c = &schema.columns()[col.index];
        if schema.offset(col.index) != col.offset || c.ty != col.ty || c.nullable != col.nullable {
            return Err(Error::ColumnMismatch);
        }
        Ok(Self { col, _page: PhantomData })
    }

    /// The column's index in its schema.
    pub(crate) fn index(&self) -> usize {
        self.col.index
    }

    /// Where its slot lies in a row.
    pub(crate) fn offset(&self) -> usize {
        self.col.offset
    }

    /// Its type.
    pub(crate) fn ty(&self) -> ColumnType {
        self.col.ty
    }

    /// Whether it may hold NULL.
    pub(crate) fn nullable(&self) -> bool {
        self.col.nullable
    }
}

/// A row of a page-at-a-time fold ([`ReadOps::par_fold_pages`](crate::ReadOps::par_fold_pages)),
/// read in place: [`RowRef`]'s getters for the handles checked against its page.
#[derive(Clone, Copy, Debug)]
pub struct PageRow<'p> {
    row: RowRef<'p>,
    _page: Brand<'p>,
}

impl<'p> PageRow<'p> {
    #[inline(always)]
    pub(crate) fn new(row: RowRef<'p>) -> Self {
        Self { row, _page: PhantomData }
    }

    /// Column `c`'s value; NULL is [`Error::Null`].
    #[inline(always)]
    pub fn get<K: Kind>(&self, c: PageCol<'p, K>) -> Result<K::Out<'p>> {
        match self.row.read_opt(c.col)? {
            Some(v) => Ok(v),
            None => Err(self.row.null_error(c.col.index)),
        }
    }

    /// Column `c`'s value, or `None` for NULL.
    #[inline(always)]
    pub fn get_opt<K: Kind>(&self, c: PageCol<'p, K>) -> Result<Option<K::Out<'p>>> {
        self.row.read_opt(c.col)
    }

    /// The row as a [`RowRef`] (its id, its bytes, every other getter).
    pub fn row(&self) -> RowRef<'p> {
        self.row
    }
}

/// How a [`Col`] reads its column. Implemented by the markers in [`kind`].
pub trait Kind: Copy {
    /// What the getter returns.
    type Out<'r>;
    /// A name for errors.
    const NAME: &'static str;
    /// Whether columns of `ty` can be read this way.
    fn matches(ty: ColumnType) -> bool;
    /// Reads the slot at `at` of a validated row whose fixed area ends at `fixed_end` (where a
    /// variable-length value may begin).
    fn decode(row: &[u8], at: usize, ty: ColumnType, fixed_end: usize) -> Result<Self::Out<'_>>;
}

/// Column kinds for [`Col`].
pub mod kind {
    use super::*;

    /// Reads `I32` columns as `i32`.
    #[derive(Clone, Copy, Debug)]
    pub struct I32;
    /// Reads `I64` columns as `i64`.
    #[derive(Clone, Copy, Debug)]
    pub struct I64;
    /// Reads `Decimal` columns as [`Decimal`](super::Decimal)s (their units at the column's
    /// scale).
    #[derive(Clone, Copy, Debug)]
    pub struct Decimal;
    /// Reads `Decimal` columns as their bare `i64` units (the scale is the column's): what a
    /// scan that sums or compares a column of one scale wants.
    #[derive(Clone, Copy, Debug)]
    pub struct Units;
    /// Reads `Date` columns as [`Date`](super::Date)s.
    #[derive(Clone, Copy, Debug)]
    pub struct Date;
    /// The former name of [`kind::Date`](Date).
    #[deprecated = "named `kind::Date` now, as every kind is named after its column type"]
    pub type DateK = Date;
    /// Reads `Char` (without trailing blanks), `VarChar` and `Binary` columns as bytes.
    #[derive(Clone, Copy, Debug)]
    pub struct Bytes;
    /// Reads `Bool` columns as `bool`.
    #[derive(Clone, Copy, Debug)]
    pub struct Bool;
    /// Reads `I16` columns as `i16`.
    #[derive(Clone, Copy, Debug)]
    pub struct I16;
    /// Reads `F64` columns as `f64`.
    #[derive(Clone, Copy, Debug)]
    pub struct F64;
    /// Reads `Timestamp` columns as [`Timestamp`](super::Timestamp)s.
    #[derive(Clone, Copy, Debug)]
    pub struct Timestamp;

    impl Kind for Bool {
        type Out<'r> = bool;
        const NAME: &'static str = "bool";
        fn matches(ty: ColumnType) -> bool {
            ty == ColumnType::Bool
        }
        #[inline(always)]
        fn decode(row: &[u8], at: usize, _: ColumnType, _: usize) -> Result<bool> {
            match row[at] {
                0 => Ok(false),
                1 => Ok(true),
                b => Err(Error::CorruptRow(format!("a bool stored as {b}, not 0 or 1"))),
            }
        }
    }

    impl Kind for I16 {
        type Out<'r> = i16;
        const NAME: &'static str = "i16";
        fn matches(ty: ColumnType) -> bool {
            ty == ColumnType::I16
        }
        #[inline(always)]
        fn decode(row: &[u8], at: usize, _: ColumnType, _: usize) -> Result<i16> {
            Ok(i16::from_le_bytes(read_n(row, at)))
        }
    }

    impl Kind for F64 {
        type Out<'r> = f64;
        const NAME: &'static str = "f64";
        fn matches(ty: ColumnType) -> bool {
            ty == ColumnType::F64
        }
        #[inline(always)]
        fn decode(row: &[u8], at: usize, _: ColumnType, _: usize) -> Result<f64> {
            Ok(f64::from_le_bytes(read_n(row, at)))
        }
    }

    impl Kind for Timestamp {
        type Out<'r> = super::Timestamp;
        const NAME: &'static str = "timestamp";
        fn matches(ty: ColumnType) -> bool {
            ty == ColumnType::Timestamp
        }
        #[inline(always)]
        fn decode(row: &[u8], at: usize, _: ColumnType, _: usize) -> Result<super::Timestamp> {
            Ok(super::Timestamp(read_i64(row, at)))
        }
    }
    /// Reads `Char` (without trailing blanks) and `VarChar` columns as `&str`.
    #[derive(Clone, Copy, Debug)]
    pub struct Str;

    impl Kind for I32 {
        type Out<'r> = i32;
        const NAME: &'static str = "i32";
        fn matches(ty: ColumnType) -> bool {
            ty == ColumnType::I32
        }
        #[inline(always)]
        fn decode(row: &[u8], at: usize, _: ColumnType, _: usize) -> Result<i32> {
            Ok(read_i32(row, at))
        }
    }

    impl Kind for I64 {
        type Out<'r> = i64;
        const NAME: &'static str = "i64";
        fn matches(ty: ColumnType) -> bool {
            ty == ColumnType::I64
        }
        #[inline(always)]
        fn decode(row: &[u8], at: usize, _: ColumnType, _: usize) -> Result<i64> {
            Ok(read_i64(row, at))
        }
    }

    impl Kind for Units {
        type Out<'r> = i64;
        const NAME: &'static str = "decimal";
        fn matches(ty: ColumnType) -> bool {
            matches!(ty, ColumnType::Decimal { .. })
        }
        #[inline(always)]
        fn decode(row: &[u8], at: usize, _: ColumnType, _: usize) -> Result<i64> {
            Ok(read_i64(row, at))
        }
    }

    impl Kind for Decimal {
        type Out<'r> = super::Decimal;
        const NAME: &'static str = "decimal";
        fn matches(ty: ColumnType) -> bool {
            Units::matches(ty)
        }
        #[inline(always)]
        fn decode(row: &[u8], at: usize, ty: ColumnType, _: usize) -> Result<super::Decimal> {
            let ColumnType::Decimal { scale } = ty else {
                return Err(Error::CorruptRow(format!("a {ty} column read as a decimal")));
            };
            Ok(super::Decimal::new(read_i64(row, at), scale))
        }
    }

    impl Kind for Date {
        type Out<'r> = super::Date;
        const NAME: &'static str = "date";
        fn matches(ty: ColumnType) -> bool {
            ty == ColumnType::Date
        }
        #[inline(always)]
        fn decode(row: &[u8], at: usize, _: ColumnType, _: usize) -> Result<super::Date> {
            Ok(super::Date(read_i32(row, at)))
        }
    }

    impl Kind for Bytes {
        type Out<'r> = &'r [u8];
        const NAME: &'static str = "string";
        fn matches(ty: ColumnType) -> bool {
            matches!(
                ty,
                ColumnType::Char { .. } | ColumnType::VarChar { .. } | ColumnType::Binary { .. }
            )
        }
        #[inline(always)]
        fn decode(row: &[u8], at: usize, ty: ColumnType, fixed_end: usize) -> Result<&[u8]> {
            string_bytes(row, at, ty, fixed_end)
        }
    }

    impl Kind for Str {
        type Out<'r> = &'r str;
        const NAME: &'static str = "string";
        fn matches(ty: ColumnType) -> bool {
            matches!(ty, ColumnType::Char { .. } | ColumnType::VarChar { .. })
        }
        #[inline(always)]
        fn decode(row: &[u8], at: usize, ty: ColumnType, fixed_end: usize) -> Result<&str> {
            std::str::from_utf8(string_bytes(row, at, ty, fixed_end)?)
                .map_err(|_| Error::CorruptRow("a string is not UTF-8".into()))
        }
    }

    /// A `Char`'s bytes without trailing blanks, or a `VarChar`'s bytes. The fixed slot at `at`
    /// lies inside the row (`get` checked the handle against the row's fixed area); a
    /// `VarChar`'s value outside the row's values (`var_bytes`) is [`Error::CorruptRow`], as
    /// [`RowRef::check_values`] reports it, never the bytes of other columns read as a string.
    #[inline(always)]
    fn string_bytes(row: &[u8], at: usize, ty: ColumnType, fixed_end: usize) -> Result<&[u8]> {
        let b = match ty {
            ColumnType::Char { len } => {
                let b = row.get(at..at + usize::from(len)).unwrap_or_default();
                let end = b.iter().rposition(|&c| c != b' ').map_or(0, |p| p + 1);
                &b[..end]
            }
            _ => var_bytes(row, at, fixed_end).ok_or_else(|| {
                let (off, len) = var_slot(row, at);
                Error::CorruptRow(format!(
                    "a string at {off}, {len} bytes, outside the row's values ({fixed_end} to {})",
                    row.len()
                ))
            })?,
        };
        Ok(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A decimal of any scale a `u8` holds prints with exactly that many digits after the
    /// point, past 38 too, where a power of ten overflows an i128.
    #[test]
    fn decimals_of_every_scale_print() {
        assert_eq!(Decimal::new(12345, 2).to_string(), "123.45");
        assert_eq!(Decimal::new(-5, 3).to_string(), "-0.005");
        assert_eq!(Decimal::new(i64::MIN, 0).to_string(), i64::MIN.to_string());
        let long = |digits: &str, scale: usize| format!("0.{digits:0>scale$}");
        assert_eq!(Decimal::new(1, 39).to_string(), long("1", 39));
        assert_eq!(Decimal::new(-7, 255).to_string(), format!("-{}", long("7", 255)));
        let mut s = String::new();
        format_scaled(&mut s, i128::MIN, 38).unwrap();
        assert_eq!(s, "-1.70141183460469231731687303715884105728");
        s.clear();
        format_scaled(&mut s, i128::MAX, 39).unwrap();
        assert_eq!(s, "0.170141183460469231731687303715884105727");
    }

    /// Every `Date`, to the ends of its range, has a calendar date that maps back to it; a
    /// calendar date past the range is `None`, never an overflow.
    #[test]
    fn dates_round_trip_to_the_ends_of_their_range() {
        for d in [i32::MIN, i32::MIN + 1, -719_468, -1, 0, 1, 10_957, i32::MAX - 1, i32::MAX] {
            let (y, m, day) = Date(d).ymd();
            assert_eq!(Date::from_ymd(y, m, day), Some(Date(d)), "{d}");
            if y >= 0 {
                // `parse` reads years 0 and up (YYYY-MM-DD).
                assert_eq!(Date::parse(&Date(d).to_string()), Some(Date(d)), "{d}");
            }
        }
        assert_eq!(Date::parse("1970-01-01"), Some(Date(0)));
        assert_eq!(Date::parse("2147483647-01-01"), None);
        assert_eq!(Date::parse("-2147483648-01-01"), None);
        assert_eq!(Date::from_ymd(i32::MAX, 12, 31), None);
        assert_eq!(Date::from_ymd(i32::MIN, 1, 1), None);
    }
}
