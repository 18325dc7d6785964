//! Filters DataFusion builds while a query runs and offers the scan: a hash join's, from its
//! build side (the key's bounds and, where the build side is small enough, its keys as an `IN`
//! list), and a top-N sort's, from the rows it holds so far.
//!
//! They are hints: the join still matches every row it is given, so a scan may drop a row only
//! where the filter is false or unknown, and may keep any row. That makes a weaker predicate
//! always correct, and the scan evaluates what it can of each filter ([`weaken`]): the
//! conjuncts it compiles, an `OR` only when it compiles every branch, a `CASE` (a partitioned
//! join routes keys to per-partition filters with one) as the `OR` of its branches; anything
//! else keeps every row. The result joins the statement's pushed filter in the page fold, before
//! a value is gathered. DataFusion evaluates none of them again at the scan, so the scan reports
//! them as not pushed.
//!
//! A filter changes while the scan runs (each join's once, when its build side is complete; a
//! top-N's whenever its heap improves): the fold asks for its generation at every page and
//! compiles it again, once for all partitions, when that has moved. It is evaluated on the rows
//! the pushed filter keeps, and a fold stops evaluating it once it has kept more than
//! [`KEEPS_TOO_MUCH`] per cent of the first [`TRIAL_ROWS`] rows of its generation: a join's
//! keys that span the probe side's (bounds, or a hash table the scan cannot read, of which it
//! keeps only the bounds) cost a pass per page and drop nothing.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::Column;
use datafusion::logical_expr::Operator;
use datafusion::logical_expr::{BinaryExpr, Cast, Expr, expr::InList};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{
    self as phys, CaseExpr, CastExpr, DynamicFilterPhysicalExpr, InListExpr, IsNotNullExpr,
    IsNullExpr, Literal, NotExpr,
};
use nvpage::Schema;
use parking_lot::Mutex;

use crate::filter::{self, Pred};

/// Rows a fold evaluates a run-time filter on before it judges whether the filter pays.
pub(crate) const TRIAL_ROWS: usize = 32 * 1024;

/// The share of rows, in per cent, above which a run-time filter is dropped after its trial.
pub(crate) const KEEPS_TOO_MUCH: usize = 95;

/// The run-time filters a scan accepted, and their last compiled form.
pub(crate) struct RuntimeFilters {
    filters: Vec<Arc<dyn PhysicalExpr>>,
    /// The scan's output schema, which the filters' columns index.
    output: SchemaRef,
    /// The generation last compiled, and the predicate it gave.
    compiled: Mutex<Option<(u64, Option<Arc<Pred>>)>>,
}

impl fmt::Debug for RuntimeFilters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeFilters").field("filters", &self.filters.len()).finish()
    }
}

impl RuntimeFilters {
    pub(crate) fn new(filters: Vec<Arc<dyn PhysicalExpr>>, output: SchemaRef) -> Self {
        Self { filters, output, compiled: Mutex::new(None) }
    }

    pub(crate) fn exprs(&self) -> &[Arc<dyn PhysicalExpr>] {
        &self.filters
    }

    /// A number that changes whenever one of the filters does: each is a
    /// `DynamicFilterPhysicalExpr` (the scan takes no other), whose own generation counts its
    /// updates, so no walk of its tree (asked at every page) is needed.
    pub(crate) fn generation(&self) -> u64 {
        self.filters.iter().fold(0u64, |g, f| g.wrapping_add(f.snapshot_generation()))
    }

    /// The predicate of generation `generation`: what the scan evaluates of every filter as it
    /// stands, its conjuncts in [`filter::conjoin`]'s order; `None` if nothing.
    pub(crate) fn pred(&self, generation: u64, table: &Schema) -> Option<Arc<Pred>> {
        let mut compiled = self.compiled.lock();
        if let Some((g, p)) = compiled.as_ref()
            && *g == generation
        {
            return p.clone();
        }
        let preds = self.filters.iter().map(|f| weaken(f, table, &self.output));
        let pred = filter::conjoin(preds).map(Arc::new);
        *compiled = Some((generation, pred.clone()));
        pred
    }
}

/// A predicate true wherever `e` is true (and possibly elsewhere): what the scan evaluates of
/// `e`. `Const(Some(true))` where it evaluates none of it.
pub(crate) fn weaken(e: &Arc<dyn PhysicalExpr>, table: &Schema, output: &SchemaRef) -> Pred {
    if let Some(b) = e.downcast_ref::<phys::BinaryExpr>() {
        match b.op() {
            Operator::And => {
                return Pred::And(vec![
                    weaken(b.left(), table, output),
                    weaken(b.right(), table, output),
                ]);
            }
            Operator::Or => {
                return filter::any_of_weakened(vec![
                    weaken(b.left(), table, output),
                    weaken(b.right(), table, output),
                ]);
            }
            _ => {}
        }
    }
    if let Some(c) = e.downcast_ref::<CaseExpr>() {
        // True only where the branch taken is true: the OR of the branches' values (a missing
        // ELSE is NULL, which keeps no row).
        let mut branches: Vec<Pred> =
            c.when_then_expr().iter().map(|(_, then)| weaken(then, table, output)).collect();
        if let Some(other) = c.else_expr() {
            branches.push(weaken(other, table, output));
        }
        return filter::any_of_weakened(branches);
    }
    if let Some(d) = e.downcast_ref::<DynamicFilterPhysicalExpr>()
        && let Ok(current) = d.current()
    {
        return weaken(&current, table, output);
    }
    logical(e, output).and_then(|l| filter::compile(&l, table)).unwrap_or(Pred::Const(Some(true)))
}

/// `e` as the logical expression the filter compiler reads, where it has one: columns of the
/// scan's output (by name), literals, comparisons, `AND`/`OR`/`NOT`, `IS [NOT] NULL`, casts and
/// `IN` lists of literals.
fn logical(e: &Arc<dyn PhysicalExpr>, output: &SchemaRef) -> Option<Expr> {
    if let Some(c) = e.downcast_ref::<phys::Column>() {
        let field = output.fields().get(c.index())?;
        return (field.name() == c.name()).then(|| Expr::Column(Column::from_name(c.name())));
    }
    if let Some(l) = e.downcast_ref::<Literal>() {
        return Some(Expr::Literal(l.value().clone(), None));
    }
    if let Some(b) = e.downcast_ref::<phys::BinaryExpr>() {
        return Some(Expr::BinaryExpr(BinaryExpr::new(
            Box::new(logical(b.left(), output)?),
            *b.op(),
            Box::new(logical(b.right(), output)?),
        )));
    }
    if let Some(n) = e.downcast_ref::<NotExpr>() {
        return Some(Expr::Not(Box::new(logical(n.arg(), output)?)));
    }
    if let Some(n) = e.downcast_ref::<IsNullExpr>() {
        return Some(Expr::IsNull(Box::new(logical(n.arg(), output)?)));
    }
    if let Some(n) = e.downcast_ref::<IsNotNullExpr>() {
        return Some(Expr::IsNotNull(Box::new(logical(n.arg(), output)?)));
    }
    if let Some(c) = e.downcast_ref::<CastExpr>() {
        return Some(Expr::Cast(Cast::new(
            Box::new(logical(c.expr(), output)?),
            c.cast_type().clone(),
        )));
    }
    if let Some(i) = e.downcast_ref::<InListExpr>() {
        let list = i.list().iter().map(|v| logical(v, output)).collect::<Option<Vec<_>>>()?;
        return Some(Expr::InList(InList::new(
            Box::new(logical(i.expr(), output)?),
            list,
            i.negated(),
        )));
    }
    None
}
