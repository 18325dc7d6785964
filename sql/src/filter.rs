//! Predicates pushed into the scan: DataFusion's filter expressions compiled to a tree the page
//! fold evaluates in place, before any value is copied out ([`retain`]: a column at a time where
//! it can, row by row otherwise).
//!
//! A filter is pushed `Exact` only when this module evaluates it with SQL's semantics, so that
//! DataFusion need not evaluate it again (DESIGN S2): three-valued logic (a comparison with NULL
//! is unknown, `AND`/`OR`/`NOT` as Kleene's, a row is kept only where the predicate is true);
//! decimals compared exactly at the larger of the two scales; strings compared as bytes, as
//! Arrow compares them (a `Char` as its value without trailing blanks, which is what the scan
//! hands DataFusion); booleans with `false < true`; timestamps as their microseconds, a literal
//! of another unit only where it is a whole number of microseconds; floats as DataFusion
//! compares them: IEEE 754's total order with the two zeros equal (NaN equal to itself and above
//! every other value, a NaN with its sign bit set below every other).
//!
//! What it handles: comparisons of a column with a literal (`=`, `<>`, `<`, `<=`, `>`, `>=`,
//! either side) or with another column of its own fixed-width numeric type, `BETWEEN`, `IN` lists of literals (not on floats), `IS [NOT] NULL`,
//! `LIKE 'prefix%'`, a boolean column standing alone, and `AND`, `OR`, `NOT` of those; a column
//! may sit under a cast that keeps every value and its order (a wider integer or decimal,
//! another string type). Anything else is left to DataFusion, binary columns among it.

use std::ops::Bound;

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Like, Operator, expr::InList};
use nvpage::{Col, ColumnType, Fixed, PageBatch, PageRows, RowRef, Schema, kind};

use crate::error::Result;

/// A compiled predicate over rows of one schema.
#[derive(Clone, Debug)]
pub(crate) enum Pred {
    /// A constant: `Some(true)`, `Some(false)`, or unknown (`None`).
    Const(Option<bool>),
    And(Vec<Pred>),
    Or(Vec<Pred>),
    Not(Box<Pred>),
    /// `col IS NULL` (or `IS NOT NULL` when negated).
    IsNull {
        col: ColRef,
        negated: bool,
    },
    /// A numeric column (integers, decimals, dates, timestamps, booleans as 0 and 1) scaled by
    /// `scale_up`, against `lit`.
    Num {
        col: ColRef,
        scale_up: i128,
        op: Cmp,
        lit: i128,
    },
    /// Two numeric columns of one type (integers, decimals of one scale, dates, timestamps)
    /// against each other.
    Cols {
        left: ColRef,
        op: Cmp,
        right: ColRef,
    },
    /// A float column against `lit`, as [`Cmp::holds_float`] compares them.
    F64 {
        col: ColRef,
        op: Cmp,
        lit: f64,
    },
    /// A string column's bytes against `lit`.
    Str {
        col: ColRef,
        op: Cmp,
        lit: Vec<u8>,
    },
    /// `col IN (…)`: numeric values (scaled as in `Num`), or strings; `null` if the list holds
    /// a NULL (then a miss is unknown, not false).
    NumIn {
        col: ColRef,
        scale_up: i128,
        list: NumSet,
        null: bool,
    },
    StrIn {
        col: ColRef,
        list: Vec<Vec<u8>>,
        null: bool,
    },
    /// `col LIKE 'prefix%'`.
    Prefix {
        col: ColRef,
        prefix: Vec<u8>,
    },
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    fn from_op(op: Operator) -> Option<Cmp> {
        Some(match op {
            Operator::Eq => Cmp::Eq,
            Operator::NotEq => Cmp::Ne,
            Operator::Lt => Cmp::Lt,
            Operator::LtEq => Cmp::Le,
            Operator::Gt => Cmp::Gt,
            Operator::GtEq => Cmp::Ge,
            _ => return None,
        })
    }

    /// The operator with its operands swapped (`5 < c` is `c > 5`).
    fn flipped(self) -> Cmp {
        match self {
            Cmp::Lt => Cmp::Gt,
            Cmp::Le => Cmp::Ge,
            Cmp::Gt => Cmp::Lt,
            Cmp::Ge => Cmp::Le,
            same => same,
        }
    }

    /// [`Self::holds`] for floats, as DataFusion compares them (found by asking it): IEEE 754's
    /// total order, but with `-0.0` equal to `+0.0`.
    #[inline]
    fn holds_float(self, a: f64, b: f64) -> bool {
        self.holds(&float_order(a, b), &std::cmp::Ordering::Equal)
    }

    #[inline]
    fn holds<T: Ord + ?Sized>(self, a: &T, b: &T) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
        }
    }
}

/// A column the predicate reads, with the typed handle that reads it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ColRef {
    index: usize,
    read: Reader,
}

#[derive(Clone, Copy, Debug)]
enum Reader {
    I32(Col<kind::I32>),
    I64(Col<kind::I64>),
    Units(Col<kind::Units>),
    Date(Col<kind::Date>),
    I16(Col<kind::I16>),
    Bool(Col<kind::Bool>),
    Timestamp(Col<kind::Timestamp>),
    F64(Col<kind::F64>),
    Bytes(Col<kind::Bytes>),
}

impl ColRef {
    #[inline]
    fn is_null(&self, row: &RowRef<'_>) -> bool {
        row.is_null(self.index)
    }

    /// The column's value as a number (`None` for NULL).
    #[inline]
    fn num(&self, r: &RowRef<'_>) -> nvpage::Result<Option<i128>> {
        Ok(match self.read {
            Reader::I32(c) => r.get_opt(c)?.map(i128::from),
            Reader::I64(c) => r.get_opt(c)?.map(i128::from),
            Reader::Units(c) => r.get_opt(c)?.map(i128::from),
            Reader::Date(c) => r.get_opt(c)?.map(|d| i128::from(d.0)),
            Reader::I16(c) => r.get_opt(c)?.map(i128::from),
            Reader::Bool(c) => r.get_opt(c)?.map(i128::from),
            Reader::Timestamp(c) => r.get_opt(c)?.map(|t| i128::from(t.0)),
            Reader::F64(_) | Reader::Bytes(_) => None,
        })
    }

    /// The column's value as a float (`None` for NULL).
    #[inline]
    fn float(&self, r: &RowRef<'_>) -> nvpage::Result<Option<f64>> {
        match self.read {
            Reader::F64(c) => r.get_opt(c),
            _ => Ok(None),
        }
    }

    #[inline]
    fn bytes<'p>(&self, row: &RowRef<'p>) -> nvpage::Result<Option<&'p [u8]>> {
        match self.read {
            Reader::Bytes(c) => row.get_opt(c),
            _ => Ok(None),
        }
    }
}

impl Pred {
    /// The predicate's value on `row`: `Some(true)` keeps it.
    pub(crate) fn eval(&self, row: &RowRef<'_>) -> nvpage::Result<Option<bool>> {
        Ok(match self {
            Pred::Const(v) => *v,
            Pred::And(ps) => {
                let mut unknown = false;
                for p in ps {
                    match p.eval(row)? {
                        Some(false) => return Ok(Some(false)),
                        None => unknown = true,
                        Some(true) => {}
                    }
                }
                if unknown { None } else { Some(true) }
            }
            Pred::Or(ps) => {
                let mut unknown = false;
                for p in ps {
                    match p.eval(row)? {
                        Some(true) => return Ok(Some(true)),
                        None => unknown = true,
                        Some(false) => {}
                    }
                }
                if unknown { None } else { Some(false) }
            }
            Pred::Not(p) => p.eval(row)?.map(|b| !b),
            Pred::IsNull { col, negated } => Some(col.is_null(row) != *negated),
            Pred::Num { col, scale_up, op, lit } => {
                col.num(row)?.map(|v| op.holds(&(v * scale_up), lit))
            }
            Pred::F64 { col, op, lit } => col.float(row)?.map(|v| op.holds_float(v, *lit)),
            Pred::Cols { left, op, right } => match (left.num(row)?, right.num(row)?) {
                (Some(a), Some(b)) => Some(op.holds(&a, &b)),
                _ => None,
            },
            Pred::Str { col, op, lit } => col.bytes(row)?.map(|v| op.holds(v, lit.as_slice())),
            Pred::NumIn { col, scale_up, list, null } => {
                col.num(row)?.and_then(|v| in_list(list.contains(v * scale_up), *null))
            }
            Pred::StrIn { col, list, null } => {
                col.bytes(row)?.and_then(|v| in_list(list.iter().any(|l| l == v), *null))
            }
            Pred::Prefix { col, prefix } => col.bytes(row)?.map(|v| v.starts_with(prefix)),
        })
    }
}

/// Narrows `batch` (rows of `page`) to the rows for which `pred` is true. The conjuncts of an
/// `AND` narrow it one after another (a row is kept only where every one is true); a comparison
/// of a fixed-width column with a literal is evaluated a column at a time, reading one slot of
/// each row ([`PageBatch::retain_by`]); anything else row by row through [`Pred::eval`].
pub(crate) fn retain<'p>(
    pred: &Pred,
    page: PageRows<'p>,
    batch: &mut PageBatch<'p, '_>,
) -> nvpage::Result<()> {
    match pred {
        Pred::And(ps) => {
            // The column-wise conjuncts come first ([`compile_all`] put them there), so that the
            // others are evaluated only on the rows they keep.
            let split = ps.iter().position(|p| !p.is_columnar()).unwrap_or(ps.len());
            let (columnar, rest) = ps.split_at(split);
            for p in columnar {
                if batch.is_empty() {
                    return Ok(());
                }
                retain(p, page, batch)?;
            }
            if rest.is_empty() || batch.is_empty() {
                return Ok(());
            }
            batch.retain(|row| {
                let row = row.row();
                for p in rest {
                    if p.eval(&row)? != Some(true) {
                        return Ok(false);
                    }
                }
                Ok(true)
            })
        }
        Pred::Const(Some(true)) => Ok(()),
        Pred::Num { col, scale_up, op, lit } if col.fixed() => {
            let (scale_up, op, lit) = (*scale_up, *op, *lit);
            col.retain_num(page, batch, move |v| op.holds(&(v * scale_up), &lit))
        }
        Pred::Cols { left, op, right } => left.retain_pair(right, *op, page, batch),
        // A miss is false or unknown, and either drops the row.
        Pred::NumIn { col, scale_up, list, null: _ } if col.fixed() => {
            let scale_up = *scale_up;
            col.retain_num(page, batch, |v| list.contains(v * scale_up))
        }
        Pred::F64 { col, op, lit } => {
            let Reader::F64(c) = col.read else { unreachable!("a float predicate's column") };
            let (op, lit) = (*op, *lit);
            batch.retain_by(page.col(c)?, |v| v.is_some_and(|v| op.holds_float(v, lit)));
            Ok(())
        }
        p => batch.retain(|row| Ok(p.eval(&row.row())? == Some(true))),
    }
}

impl Pred {
    /// Appends its conjuncts (itself, if it is no `AND`) to `out`.
    fn into_conjuncts(self, out: &mut Vec<Pred>) {
        match self {
            Pred::And(list) => list.into_iter().for_each(|p| p.into_conjuncts(out)),
            p => out.push(p),
        }
    }

    /// Whether [`retain`] evaluates it a column at a time.
    fn is_columnar(&self) -> bool {
        match self {
            Pred::Num { col, .. } | Pred::NumIn { col, .. } => col.fixed(),
            Pred::F64 { .. } | Pred::Cols { .. } | Pred::Const(Some(true)) => true,
            _ => false,
        }
    }
}

impl ColRef {
    /// Whether [`ColRef::retain_num`] reads this column (a fixed-width number, not a boolean,
    /// whose byte is checked as it is read).
    fn fixed(&self) -> bool {
        !matches!(self.read, Reader::Bool(_) | Reader::F64(_) | Reader::Bytes(_))
    }

    /// Keeps the rows of `batch` whose value of this column, as a number, passes `keep` (NULL
    /// never does). Only for a column [`ColRef::fixed`] accepts.
    fn retain_num<'p>(
        &self,
        page: PageRows<'p>,
        batch: &mut PageBatch<'p, '_>,
        keep: impl Fn(i128) -> bool,
    ) -> nvpage::Result<()> {
        let pass = |v: Option<i128>| v.is_some_and(&keep);
        match self.read {
            Reader::I32(c) => batch.retain_by(page.col(c)?, |v| pass(v.map(i128::from))),
            Reader::I64(c) => batch.retain_by(page.col(c)?, |v| pass(v.map(i128::from))),
            Reader::Units(c) => batch.retain_by(page.col(c)?, |v| pass(v.map(i128::from))),
            Reader::Date(c) => batch.retain_by(page.col(c)?, |v| pass(v.map(i128::from))),
            Reader::I16(c) => batch.retain_by(page.col(c)?, |v| pass(v.map(i128::from))),
            Reader::Timestamp(c) => batch.retain_by(page.col(c)?, |v| pass(v.map(i128::from))),
            Reader::Bool(_) | Reader::F64(_) | Reader::Bytes(_) => {
                unreachable!("retain_num on a column `fixed` refuses")
            }
        }
        Ok(())
    }
}

impl ColRef {
    /// Keeps the rows of `batch` where this column `op` `other` holds (a NULL on either side
    /// never does). Only for two columns of one type that [`ColRef::fixed`] accepts.
    fn retain_pair<'p>(
        &self,
        other: &ColRef,
        op: Cmp,
        page: PageRows<'p>,
        batch: &mut PageBatch<'p, '_>,
    ) -> nvpage::Result<()> {
        fn pair<'p, K: Fixed>(
            page: PageRows<'p>,
            batch: &mut PageBatch<'p, '_>,
            (a, b): (Col<K>, Col<K>),
            op: Cmp,
        ) -> nvpage::Result<()>
        where
            K::Native: Ord,
        {
            batch.retain_by_pair(
                page.col(a)?,
                page.col(b)?,
                |x, y| matches!((x, y), (Some(x), Some(y)) if op.holds(&x, &y)),
            );
            Ok(())
        }
        match (self.read, other.read) {
            (Reader::I32(a), Reader::I32(b)) => pair(page, batch, (a, b), op),
            (Reader::I64(a), Reader::I64(b)) => pair(page, batch, (a, b), op),
            (Reader::Units(a), Reader::Units(b)) => pair(page, batch, (a, b), op),
            (Reader::Date(a), Reader::Date(b)) => pair(page, batch, (a, b), op),
            (Reader::I16(a), Reader::I16(b)) => pair(page, batch, (a, b), op),
            (Reader::Timestamp(a), Reader::Timestamp(b)) => pair(page, batch, (a, b), op),
            _ => unreachable!("a comparison of two columns of one fixed-width type"),
        }
    }
}

/// `a` against `b` in IEEE 754's total order, the two zeros taken as one.
#[inline]
fn float_order(a: f64, b: f64) -> std::cmp::Ordering {
    let zero_as_one = |x: f64| if x == 0.0 { 0.0 } else { x };
    zero_as_one(a).total_cmp(&zero_as_one(b))
}

/// The numbers of an `IN` list, kept for a lookup per row: a bitmap over their range where that
/// range is small (up to 32 KiB, or up to 2 MiB for a list of 256 values or more: the keys a
/// join's build side collected), else sorted for a binary search.
#[derive(Clone, Debug)]
pub(crate) struct NumSet {
    sorted: Vec<i128>,
    /// The smallest value and a bit for each value from it on.
    bits: Option<(i128, Vec<u64>)>,
}

impl NumSet {
    /// The bitmap's size: always allowed up to `SMALL_BITS`, up to `MAX_BITS` for a list of
    /// `LONG_LIST` values or more.
    const SMALL_BITS: i128 = 1 << 18;
    const MAX_BITS: i128 = 1 << 24;
    const LONG_LIST: usize = 256;

    fn new(mut values: Vec<i128>) -> Self {
        values.sort_unstable();
        values.dedup();
        let bits = match (values.first(), values.last()) {
            (Some(&lo), Some(&hi))
                if hi.checked_sub(lo).is_some_and(|range| {
                    range < Self::SMALL_BITS
                        || (range < Self::MAX_BITS && values.len() >= Self::LONG_LIST)
                }) =>
            {
                let mut words = vec![0u64; ((hi - lo) / 64 + 1) as usize];
                for v in &values {
                    let at = (v - lo) as usize;
                    words[at / 64] |= 1 << (at % 64);
                }
                Some((lo, words))
            }
            _ => None,
        };
        Self { sorted: values, bits }
    }

    #[inline]
    fn contains(&self, v: i128) -> bool {
        match &self.bits {
            Some((lo, words)) => {
                let Ok(at) = usize::try_from(v.wrapping_sub(*lo)) else { return false };
                v >= *lo && words.get(at / 64).is_some_and(|w| w >> (at % 64) & 1 == 1)
            }
            None => self.sorted.binary_search(&v).is_ok(),
        }
    }
}

/// `x IN list`: true on a hit; on a miss false, or unknown if the list holds a NULL.
fn in_list(hit: bool, null: bool) -> Option<bool> {
    if hit {
        Some(true)
    } else if null {
        None
    } else {
        Some(false)
    }
}

/// Compiles `expr` over rows of `schema`, or `None` if it is not one this module evaluates
/// exactly.
pub(crate) fn compile(expr: &Expr, schema: &Schema) -> Option<Pred> {
    Compiler { schema }.pred(expr)
}

/// `AND` of every filter, each compiled (all must compile), its conjuncts flattened and those
/// [`retain`] evaluates a column at a time first (a row is kept only where every conjunct is
/// true, in any order).
pub(crate) fn compile_all(filters: &[Expr], schema: &Schema) -> Result<Option<Pred>> {
    let preds = filters.iter().map(|f| compile(f, schema)).collect::<Option<Vec<_>>>();
    match preds {
        Some(p) => Ok(conjoin(p)),
        None => Err(crate::error::Error::Plan(
            "a filter was pushed into an nvpage scan that it cannot evaluate exactly".into(),
        )),
    }
}

/// The `AND` of `preds`, simplified ([`Pred::simplified`]), its conjuncts flattened and those
/// [`retain`] evaluates a column at a time first, else in the order given; `None` if nothing is
/// left to evaluate.
pub(crate) fn conjoin(preds: impl IntoIterator<Item = Pred>) -> Option<Pred> {
    let mut all = Vec::new();
    Pred::And(preds.into_iter().collect()).simplified().into_conjuncts(&mut all);
    all.retain(|p| !matches!(p, Pred::Const(Some(true))));
    // A bound every value of an `IN` list on the same column meets adds nothing (a join's
    // run-time filter gives its keys' bounds beside its keys).
    let lists: Vec<(usize, i128, i128, i128)> = all
        .iter()
        .filter_map(|p| match p {
            Pred::NumIn { col, scale_up, list, .. } => {
                Some((col.index, *scale_up, *list.sorted.first()?, *list.sorted.last()?))
            }
            _ => None,
        })
        .collect();
    all.retain(|p| match p {
        Pred::Num { col, scale_up, op: op @ (Cmp::Lt | Cmp::Le | Cmp::Gt | Cmp::Ge), lit } => {
            !lists.iter().any(|&(c, s, lo, hi)| {
                c == col.index && s == *scale_up && op.holds(&lo, lit) && op.holds(&hi, lit)
            })
        }
        _ => true,
    });
    // Stable: the order among each kind is the one given.
    all.sort_by_key(|p| !p.is_columnar());
    match all.len() {
        0 => None,
        1 => all.pop(),
        _ => Some(Pred::And(all)),
    }
}

/// A predicate true wherever one of `branches` is (and possibly elsewhere), for a filter that
/// may keep more rows than asked (`runtime.rs`): their `OR`, except that where every branch
/// that is not false requires one column to be in an `IN` list, that column in the lists'
/// union, which a page is filtered by a column at a time.
pub(crate) fn any_of_weakened(branches: Vec<Pred>) -> Pred {
    match Pred::Or(branches).simplified() {
        Pred::Or(branches) => Pred::union_of_lists(&branches).unwrap_or(Pred::Or(branches)),
        one => one,
    }
}

impl Pred {
    /// The same predicate with its constants folded where that keeps its value on every row:
    /// an `AND` without its `true`s, an `OR` with a `true` is `true`.
    fn simplified(self) -> Pred {
        match self {
            Pred::And(ps) => {
                let mut out = Vec::new();
                for p in ps {
                    p.simplified().into_conjuncts(&mut out);
                }
                out.retain(|p| !matches!(p, Pred::Const(Some(true))));
                match out.len() {
                    0 => Pred::Const(Some(true)),
                    1 => out.pop().expect("one"),
                    _ => Pred::And(out),
                }
            }
            Pred::Or(ps) => {
                let mut ps: Vec<Pred> = ps.into_iter().map(Pred::simplified).collect();
                if ps.iter().any(|p| matches!(p, Pred::Const(Some(true)))) {
                    return Pred::Const(Some(true));
                }
                ps.retain(|p| !matches!(p, Pred::Const(Some(false))));
                match ps.len() {
                    0 => Pred::Const(Some(false)),
                    1 => ps.pop().expect("one"),
                    _ => Pred::Or(ps),
                }
            }
            Pred::Not(p) => Pred::Not(Box::new(p.simplified())),
            p => p,
        }
    }

    /// For branches each of which requires column `c` in a list (a conjunct `c IN (…)`), `c IN`
    /// the union of those lists.
    fn union_of_lists(branches: &[Pred]) -> Option<Pred> {
        let mut found: Option<(ColRef, i128, Vec<i128>)> = None;
        for b in branches {
            let conjuncts = match b {
                Pred::And(ps) => ps.as_slice(),
                one => std::slice::from_ref(one),
            };
            let (col, scale_up, list) = conjuncts.iter().find_map(|p| match p {
                Pred::NumIn { col, scale_up, list, .. } => Some((*col, *scale_up, list)),
                _ => None,
            })?;
            match &mut found {
                None => found = Some((col, scale_up, list.sorted.clone())),
                Some((c, s, all)) => {
                    if c.index != col.index || *s != scale_up {
                        return None;
                    }
                    all.extend_from_slice(&list.sorted);
                }
            }
        }
        let (col, scale_up, all) = found?;
        Some(Pred::NumIn { col, scale_up, list: NumSet::new(all), null: false })
    }
}

struct Compiler<'s> {
    schema: &'s Schema,
}

/// A numeric literal: its value in units of `10^-scale`.
#[derive(Clone, Copy)]
struct Num {
    units: i128,
    scale: i8,
}

/// A column as a comparison sees it: the column, the scale its values are read at (a decimal's
/// own, 0 for the other numbers), and what literals it is compared with, after any
/// value-preserving casts.
#[derive(Clone, Copy)]
struct Operand {
    col: ColRef,
    scale: i8,
    class: Class,
}

/// What a column's values are, for the literals they may be compared with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Integers and decimals.
    Number,
    Date,
    Timestamp,
    Bool,
    Float,
    String,
}

impl Compiler<'_> {
    fn pred(&self, e: &Expr) -> Option<Pred> {
        match e {
            Expr::BinaryExpr(BinaryExpr { left, op: Operator::And, right }) => {
                Some(Pred::And(vec![self.pred(left)?, self.pred(right)?]))
            }
            Expr::BinaryExpr(BinaryExpr { left, op: Operator::Or, right }) => {
                Some(Pred::Or(vec![self.pred(left)?, self.pred(right)?]))
            }
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
                let cmp = Cmp::from_op(*op)?;
                if let (Some(col), Some(lit)) = (self.operand(left), literal(right)) {
                    self.compare(col, cmp, lit)
                } else if let (Some(lit), Some(col)) = (literal(left), self.operand(right)) {
                    self.compare(col, cmp.flipped(), lit)
                } else {
                    self.columns(self.operand(left)?, cmp, self.operand(right)?)
                }
            }
            Expr::Not(inner) => Some(Pred::Not(Box::new(self.pred(inner)?))),
            Expr::IsNull(inner) => {
                Some(Pred::IsNull { col: self.operand(inner)?.col, negated: false })
            }
            Expr::IsNotNull(inner) => {
                Some(Pred::IsNull { col: self.operand(inner)?.col, negated: true })
            }
            Expr::Between(Between { expr, negated, low, high }) => {
                let col = self.operand(expr)?;
                let both = Pred::And(vec![
                    self.compare(col, Cmp::Ge, literal(low)?)?,
                    self.compare(col, Cmp::Le, literal(high)?)?,
                ]);
                Some(if *negated { Pred::Not(Box::new(both)) } else { both })
            }
            Expr::InList(InList { expr, list, negated }) => {
                let p = self.in_list(self.operand(expr)?, list)?;
                Some(if *negated { Pred::Not(Box::new(p)) } else { p })
            }
            Expr::Like(Like {
                negated,
                expr,
                pattern,
                escape_char: None,
                case_insensitive: false,
            }) => {
                let col = self.operand(expr)?;
                let prefix = like_prefix(&string_literal(literal(pattern)?)??)?;
                if col.class != Class::String {
                    return None;
                }
                let p = Pred::Prefix { col: col.col, prefix };
                Some(if *negated { Pred::Not(Box::new(p)) } else { p })
            }
            Expr::Literal(ScalarValue::Boolean(b), _) => Some(Pred::Const(*b)),
            // A boolean column standing alone: true where it is true.
            Expr::Column(_) => {
                let col = self.operand(e)?;
                (col.class == Class::Bool).then_some(Pred::Num {
                    col: col.col,
                    scale_up: 1,
                    op: Cmp::Eq,
                    lit: 1,
                })
            }
            _ => None,
        }
    }

    /// A column, possibly under casts that keep every value and its order.
    fn operand(&self, e: &Expr) -> Option<Operand> {
        match e {
            Expr::Column(c) => {
                let index = self.schema.index_of(&c.name).ok()?;
                let ty = self.schema.columns()[index].ty;
                let name = &c.name;
                let s = self.schema;
                let (read, scale, class) = match ty {
                    ColumnType::I32 => (Reader::I32(Col::new(s, name).ok()?), 0, Class::Number),
                    ColumnType::I64 => (Reader::I64(Col::new(s, name).ok()?), 0, Class::Number),
                    ColumnType::I16 => (Reader::I16(Col::new(s, name).ok()?), 0, Class::Number),
                    ColumnType::Decimal { scale } => {
                        (Reader::Units(Col::new(s, name).ok()?), scale as i8, Class::Number)
                    }
                    ColumnType::Date => (Reader::Date(Col::new(s, name).ok()?), 0, Class::Date),
                    ColumnType::Timestamp => {
                        (Reader::Timestamp(Col::new(s, name).ok()?), 0, Class::Timestamp)
                    }
                    ColumnType::Bool => (Reader::Bool(Col::new(s, name).ok()?), 0, Class::Bool),
                    ColumnType::F64 => (Reader::F64(Col::new(s, name).ok()?), 0, Class::Float),
                    ColumnType::Char { .. } | ColumnType::VarChar { .. } => {
                        (Reader::Bytes(Col::new(s, name).ok()?), 0, Class::String)
                    }
                    // Filters on these are DataFusion's to evaluate, after the scan.
                    ColumnType::Binary { .. } => return None,
                };
                Some(Operand { col: ColRef { index, read }, scale, class })
            }
            Expr::Cast(c) => self.cast(self.operand(&c.expr)?, c.field.data_type()),
            Expr::TryCast(c) => self.cast(self.operand(&c.expr)?, c.field.data_type()),
            _ => None,
        }
    }

    /// `op` under a cast to `to`, if the cast keeps every value of the column and its order.
    fn cast(&self, op: Operand, to: &DataType) -> Option<Operand> {
        let ty = self.schema.columns()[op.col.index].ty;
        let digits: u8 = match ty {
            ColumnType::I16 => 5,
            ColumnType::I32 => 10,
            ColumnType::I64 => 19,
            ColumnType::Decimal { .. } => 18,
            _ => 0,
        };
        let keeps = match (ty, to) {
            (ColumnType::I16, DataType::Int16 | DataType::Int32 | DataType::Int64) => true,
            (ColumnType::I32, DataType::Int32 | DataType::Int64) => true,
            (ColumnType::I64, DataType::Int64) => true,
            (ColumnType::Date, DataType::Date32) => true,
            (ColumnType::Timestamp, DataType::Timestamp(TimeUnit::Microsecond, None)) => true,
            (ColumnType::Bool, DataType::Boolean) | (ColumnType::F64, DataType::Float64) => true,
            (
                ColumnType::I16 | ColumnType::I32 | ColumnType::I64 | ColumnType::Decimal { .. },
                DataType::Decimal128(p, s),
            ) => {
                // Every value fits: as many digits before the point, and at least the scale.
                *s >= op.scale
                    && i16::from(*p) - i16::from(*s) >= i16::from(digits) - i16::from(op.scale)
            }
            (
                ColumnType::Char { .. } | ColumnType::VarChar { .. },
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View,
            ) => true,
            _ => false,
        };
        // A cast that keeps every value reads the same number at the same scale.
        keeps.then_some(op)
    }

    /// Two columns compared, where both have one fixed-width type (and so one scale): their
    /// values compare as stored.
    fn columns(&self, left: Operand, op: Cmp, right: Operand) -> Option<Pred> {
        let ty = |o: &Operand| self.schema.columns()[o.col.index].ty;
        let same = ty(&left) == ty(&right) && left.scale == right.scale;
        (same && left.col.fixed()).then_some(Pred::Cols { left: left.col, op, right: right.col })
    }

    fn compare(&self, col: Operand, op: Cmp, lit: Lit) -> Option<Pred> {
        match lit {
            Lit::Null => Some(Pred::Const(None)),
            Lit::Str(s) if col.class == Class::String => {
                Some(Pred::Str { col: col.col, op, lit: s })
            }
            Lit::Float(x) if col.class == Class::Float => {
                Some(Pred::F64 { col: col.col, op, lit: x })
            }
            Lit::Num(n) if n.class == col.class => {
                let (scale_up, lit) = align(col.scale, n)?;
                Some(Pred::Num { col: col.col, scale_up, op, lit })
            }
            _ => None,
        }
    }

    fn in_list(&self, col: Operand, list: &[Expr]) -> Option<Pred> {
        let lits = list.iter().map(literal).collect::<Option<Vec<_>>>()?;
        let null = lits.iter().any(|l| matches!(l, Lit::Null));
        if col.class == Class::Float {
            // DataFusion matches a float against a list of more than three by its bits (-0.0
            // not in a list holding +0.0), against a shorter one as `=`s (it rewrites it so, and
            // the rewrite is what is pushed): left to it.
            return None;
        }
        if col.class == Class::String {
            let list = lits
                .into_iter()
                .filter(|l| !matches!(l, Lit::Null))
                .map(|l| match l {
                    Lit::Str(s) => Some(s),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            return Some(Pred::StrIn { col: col.col, list, null });
        }
        // One scale for the column across the list: the largest any literal needs.
        let nums = lits
            .iter()
            .filter(|l| !matches!(l, Lit::Null))
            .map(|l| match l {
                Lit::Num(n) if n.class == col.class => Some(n.num),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        let scale = nums.iter().map(|n| n.scale).max().unwrap_or(col.scale).max(col.scale);
        let scale_up = pow10(scale - col.scale)?;
        let list = nums
            .iter()
            .map(|n| n.units.checked_mul(pow10(scale - n.scale)?))
            .collect::<Option<Vec<_>>>()?;
        Some(Pred::NumIn { col: col.col, scale_up, list: NumSet::new(list), null })
    }
}

/// The column's multiplier and the literal's value at the larger of their two scales.
fn align(col_scale: i8, n: NumLit) -> Option<(i128, i128)> {
    let scale = col_scale.max(n.num.scale);
    // A column value is at most 19 digits, so up to 10^19 more stays inside an i128.
    Some((pow10(scale - col_scale)?, n.num.units.checked_mul(pow10(scale - n.num.scale)?)?))
}

fn pow10(k: i8) -> Option<i128> {
    (0..=19).contains(&k).then(|| 10i128.pow(k as u32))
}

/// A literal operand.
enum Lit {
    Null,
    Num(NumLit),
    Float(f64),
    Str(Vec<u8>),
}

#[derive(Clone, Copy)]
struct NumLit {
    num: Num,
    /// The columns it is compared with: a number (integer or decimal) with numbers, a date
    /// (days) with dates, a timestamp (µs) with timestamps, a boolean (0 or 1) with booleans.
    class: Class,
}

fn literal(e: &Expr) -> Option<Lit> {
    let Expr::Literal(v, _) = e else { return None };
    let of =
        |class: Class, units: i128| Some(Lit::Num(NumLit { num: Num { units, scale: 0 }, class }));
    let num = |units: i128, scale: i8| {
        Some(Lit::Num(NumLit { num: Num { units, scale }, class: Class::Number }))
    };
    // A timestamp without a zone, in µs; one of a finer unit only if it is whole µs.
    let micros = |v: i64, per_us: i64, us_per: i64| {
        let us = if per_us > 1 {
            (v % per_us == 0).then_some(i128::from(v / per_us))?
        } else {
            i128::from(v) * i128::from(us_per)
        };
        of(Class::Timestamp, us)
    };
    if v.is_null() {
        return Some(Lit::Null);
    }
    match v {
        ScalarValue::Int8(Some(x)) => num(i128::from(*x), 0),
        ScalarValue::Int16(Some(x)) => num(i128::from(*x), 0),
        ScalarValue::Int32(Some(x)) => num(i128::from(*x), 0),
        ScalarValue::Int64(Some(x)) => num(i128::from(*x), 0),
        ScalarValue::UInt8(Some(x)) => num(i128::from(*x), 0),
        ScalarValue::UInt16(Some(x)) => num(i128::from(*x), 0),
        ScalarValue::UInt32(Some(x)) => num(i128::from(*x), 0),
        ScalarValue::UInt64(Some(x)) => num(i128::from(*x), 0),
        // Literals past 10^-19 or of more than 19 digits are left to DataFusion.
        ScalarValue::Decimal128(Some(x), _, s)
            if (0..=19).contains(s) && x.unsigned_abs() < 10u128.pow(30) =>
        {
            num(*x, *s)
        }
        ScalarValue::Date32(Some(d)) => of(Class::Date, i128::from(*d)),
        ScalarValue::Boolean(Some(b)) => of(Class::Bool, i128::from(*b)),
        ScalarValue::TimestampSecond(Some(x), None) => micros(*x, 1, 1_000_000),
        ScalarValue::TimestampMillisecond(Some(x), None) => micros(*x, 1, 1_000),
        ScalarValue::TimestampMicrosecond(Some(x), None) => micros(*x, 1, 1),
        ScalarValue::TimestampNanosecond(Some(x), None) => micros(*x, 1_000, 1),
        ScalarValue::Float64(Some(x)) => Some(Lit::Float(*x)),
        ScalarValue::Float32(Some(x)) => Some(Lit::Float(f64::from(*x))),
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Some(Lit::Str(s.as_bytes().to_vec())),
        _ => None,
    }
}

/// A literal's string, `None` if it is NULL, or no string at all (the outer `Option`).
fn string_literal(l: Lit) -> Option<Option<Vec<u8>>> {
    match l {
        Lit::Str(s) => Some(Some(s)),
        Lit::Null => Some(None),
        Lit::Num(_) | Lit::Float(_) => None,
    }
}

/// The prefix of a `LIKE` pattern that is a prefix and nothing more (`'abc%'`): no `_`, no
/// `%` before the last character, no backslash (an escape in some dialects).
fn like_prefix(pattern: &[u8]) -> Option<Vec<u8>> {
    let (last, head) = pattern.split_last()?;
    (*last == b'%' && !head.iter().any(|c| matches!(c, b'%' | b'_' | b'\\'))).then(|| head.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_prefixes_are_prefixes() {
        assert_eq!(like_prefix(b"abc%"), Some(b"abc".to_vec()));
        assert_eq!(like_prefix(b"%"), Some(Vec::new()));
        for p in [&b"abc"[..], b"a%c%", b"a_c%", b"a\\%", b""] {
            assert_eq!(like_prefix(p), None, "{:?}", String::from_utf8_lossy(p));
        }
    }

    #[test]
    fn literals_align_at_the_larger_scale() {
        let n = |units, scale| NumLit { num: Num { units, scale }, class: Class::Number };
        // A decimal(…, 2) column against 0.055 (scale 3): the column's units times 10.
        assert_eq!(align(2, n(55, 3)), Some((10, 55)));
        // Against 24 (scale 0): 24.00 is 2400 units.
        assert_eq!(align(2, n(24, 0)), Some((1, 2400)));
    }

    #[test]
    fn timestamps_of_other_units_are_taken_only_as_whole_microseconds() {
        let stamp = |v: ScalarValue| match literal(&Expr::Literal(v, None)) {
            Some(Lit::Num(n)) if n.class == Class::Timestamp => Some(n.num.units),
            _ => None,
        };
        assert_eq!(stamp(ScalarValue::TimestampNanosecond(Some(-3_000), None)), Some(-3));
        assert_eq!(stamp(ScalarValue::TimestampNanosecond(Some(3_001), None)), None);
        assert_eq!(stamp(ScalarValue::TimestampMillisecond(Some(7), None)), Some(7_000));
        assert_eq!(stamp(ScalarValue::TimestampSecond(Some(2), None)), Some(2_000_000));
        assert_eq!(stamp(ScalarValue::TimestampMicrosecond(Some(5), Some("UTC".into()))), None);
    }

    #[test]
    fn floats_compare_in_total_order_with_one_zero() {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let neg_nan = -f64::NAN;
        assert_eq!(float_order(-0.0, 0.0), Equal);
        assert_eq!(float_order(f64::NAN, f64::NAN), Equal);
        assert_eq!(float_order(f64::NAN, f64::INFINITY), Greater);
        assert_eq!(float_order(neg_nan, f64::NEG_INFINITY), Less);
        assert_eq!(float_order(-1.5, -0.0), Less);
        assert!(Cmp::Ne.holds_float(1.0, f64::NAN) && !Cmp::Lt.holds_float(0.0, -0.0));
    }
}

/// A bound on one column's values that an index range can read: a number at the column's own
/// scale, or a string's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum KeyLit {
    Num(i128),
    Str(Vec<u8>),
}

/// Bounds on the values of one column that every row a predicate keeps lies within.
pub(crate) type KeyRange = (Bound<KeyLit>, Bound<KeyLit>);

impl Pred {
    /// What the predicate's conjuncts say of column `column`'s values, as an index range: its
    /// comparisons of the column with a number at the column's own scale (`=`, `<`, `<=`, `>`,
    /// `>=`, `BETWEEN`, an `IN` list's least and greatest), each narrowing the range, or its
    /// equality with a string. `None` if no
    /// conjunct bounds the column. Every row the predicate keeps lies in the range; the scan
    /// still evaluates the whole predicate on each row it reads.
    pub(crate) fn key_range(&self, column: usize) -> Option<KeyRange> {
        let mut conjuncts = Vec::new();
        self.conjuncts(&mut conjuncts);
        let (mut lo, mut hi) = (Bound::Unbounded, Bound::Unbounded);
        let mut string = None;
        for p in conjuncts {
            match p {
                Pred::Num { col, scale_up: 1, op, lit } if col.index == column => {
                    let v = *lit;
                    match op {
                        Cmp::Eq => {
                            lo = tighter(lo, Bound::Included(v), true);
                            hi = tighter(hi, Bound::Included(v), false);
                        }
                        Cmp::Lt => hi = tighter(hi, Bound::Excluded(v), false),
                        Cmp::Le => hi = tighter(hi, Bound::Included(v), false),
                        Cmp::Gt => lo = tighter(lo, Bound::Excluded(v), true),
                        Cmp::Ge => lo = tighter(lo, Bound::Included(v), true),
                        Cmp::Ne => {}
                    }
                }
                Pred::Str { col, op: Cmp::Eq, lit } if col.index == column => {
                    string = Some(lit.clone());
                }
                // Every value it keeps lies between the list's least and greatest.
                Pred::NumIn { col, scale_up: 1, list, .. } if col.index == column => {
                    if let (Some(&least), Some(&most)) = (list.sorted.first(), list.sorted.last()) {
                        lo = tighter(lo, Bound::Included(least), true);
                        hi = tighter(hi, Bound::Included(most), false);
                    }
                }
                _ => {}
            }
        }
        if let Some(s) = string {
            return Some((
                Bound::Included(KeyLit::Str(s.clone())),
                Bound::Included(KeyLit::Str(s)),
            ));
        }
        if matches!((&lo, &hi), (Bound::Unbounded, Bound::Unbounded)) {
            return None;
        }
        Some((lo.map(KeyLit::Num), hi.map(KeyLit::Num)))
    }

    fn conjuncts<'a>(&'a self, out: &mut Vec<&'a Pred>) {
        match self {
            Pred::And(list) => list.iter().for_each(|p| p.conjuncts(out)),
            p => out.push(p),
        }
    }
}

/// The narrower of two bounds of one side: the higher low bound (`low`), or the lower high one;
/// at the same value, the excluding one.
fn tighter(a: Bound<i128>, b: Bound<i128>, low: bool) -> Bound<i128> {
    let (va, vb) = match (&a, &b) {
        (Bound::Unbounded, _) => return b,
        (_, Bound::Unbounded) => return a,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            (*x, *y)
        }
    };
    if va == vb {
        return if matches!(a, Bound::Excluded(_)) { a } else { b };
    }
    if (va > vb) == low { a } else { b }
}
