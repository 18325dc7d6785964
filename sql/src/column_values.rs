//! A literal that its column cannot hold, refused with the column's name before anything runs.
//!
//! DataFusion plans `INSERT … VALUES` and `UPDATE … SET` with each value cast to its column's
//! type, and folds the casts of literals while it optimizes the plan. A literal the type
//! cannot hold (40000 for a `SMALLINT`, `'x'` for an `INT`) failed there with "Optimizer rule
//! 'simplify_expressions' failed … Can't cast value 40000 to type Int16": the message named
//! neither the column nor the statement's part at fault. An analyzer rule, run before the
//! optimizer, checks each such literal cast first, with the cast the optimizer would run, and
//! refuses the statement with an error naming the column: "column small (Int16) cannot hold
//! 40000: Cast error: Can't cast value 40000 to type Int16". Nothing has changed then, so a
//! transaction the statement ran in stays usable.
//!
//! A value the statement computes (an expression such as `1 + 40000`, a `SELECT`'s column, a
//! value from another column) fails its cast with Arrow's message, which names the value and
//! the type but not the column: at planning where it folds to a constant, else as the rows are
//! written.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::{Result as DFResult, plan_err};
use datafusion::config::ConfigOptions;
use datafusion::execution::SessionState;
use datafusion::logical_expr::expr::{Alias, Cast};
use datafusion::logical_expr::{Expr, LogicalPlan, WriteOp};
use datafusion::optimizer::AnalyzerRule;

/// Makes statements planned with `state` refuse a literal its column cannot hold, naming the
/// column (the module's docs), as every [`crate::Session`] does: for a DataFusion session built
/// elsewhere over nvpage tables, such as a distributed coordinator's.
pub fn install_column_value_checks(state: &mut SessionState) {
    state.add_analyzer_rule(Arc::new(ColumnValuesFit));
}

/// The analyzer rule (the module's docs).
#[derive(Debug)]
struct ColumnValuesFit;

impl AnalyzerRule for ColumnValuesFit {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DFResult<LogicalPlan> {
        if let LogicalPlan::Dml(d) = &plan
            && matches!(d.op, WriteOp::Insert(_) | WriteOp::Update)
        {
            check(&d.input)?;
        }
        Ok(plan)
    }

    fn name(&self) -> &str {
        "nvpage_column_values_fit"
    }
}

/// Checks the literals that a write's input casts to its columns' types: in the projection that
/// names each column (an `UPDATE`'s `SET`s, an `INSERT`'s columns in the table's order) and in
/// the `VALUES` under it, whose fields that projection names.
fn check(plan: &LogicalPlan) -> DFResult<()> {
    let LogicalPlan::Projection(p) = plan else { return Ok(()) };
    // The column each of the input's fields fills, where the projection passes it on.
    let mut names = HashMap::new();
    for e in &p.expr {
        if let Expr::Alias(Alias { expr, name, .. }) = e {
            fits(expr, name)?;
            let inner = match expr.as_ref() {
                Expr::Cast(Cast { expr, .. }) => expr.as_ref(),
                e => e,
            };
            if let Expr::Column(c) = inner {
                names.insert(c.name.as_str(), name.as_str());
            }
        }
    }
    if let LogicalPlan::Values(v) = p.input.as_ref() {
        for row in &v.values {
            for (e, field) in row.iter().zip(v.schema.fields()) {
                let name = field.name().as_str();
                fits(e, names.get(name).copied().unwrap_or(name))?;
            }
        }
    }
    Ok(())
}

/// Whether `e`, if it is a literal cast to a type, is a value of that type: else the error
/// naming `column`.
fn fits(e: &Expr, column: &str) -> DFResult<()> {
    if let Expr::Cast(Cast { expr, field }) = e
        && let Expr::Literal(v, _) = expr.as_ref()
        && let Err(err) = v.cast_to(field.data_type())
    {
        return plan_err!("column {column} ({}) cannot hold {v}: {err}", field.data_type());
    }
    Ok(())
}
