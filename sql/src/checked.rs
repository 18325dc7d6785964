//! Integer `+`, `-`, `*`, unary `-` and `sum` that fail on overflow instead of wrapping.
//!
//! DataFusion evaluates integer arithmetic with Arrow's wrapping kernels: `BIGINT` 2^63 − 1 plus
//! one is −2^63, and two `INT` columns multiplied past 2^31 give a negative product, silently.
//! PostgreSQL refuses both ("integer out of range"), and so does an nvpage session: an analyzer
//! rule, run after DataFusion's type coercion, replaces each `+`, `-` or `*` whose operands are
//! integers of one type, and each `-x` of an integer, with a function that evaluates it with
//! Arrow's checked kernels, and an overflow fails the statement with an error naming the type
//! and the values. The function keeps the operator's column name (`a + b`), result type and
//! nullability, so plans, column headers and `CREATE TABLE … AS` tables are as before;
//! `EXPLAIN` shows it as `checked_add`, `checked_sub`, `checked_mul` or `checked_neg`.
//!
//! `sum` of a `BIGINT` (or of a narrower integer, which DataFusion sums as one) is replaced
//! too, by `checked_sum` (`checked/sum.rs`): it sums in 128 bits and fails only when the
//! result does not fit an `Int64`, as an aggregate and as a window function.
//!
//! Left as DataFusion has them:
//! - decimal and date arithmetic (their result types are widened first, and a decimal's sum is
//!   ten digits wider than its values), and `/` and `%`, which DataFusion already refuses for a
//!   zero divisor;
//! - the `FILTER` and `ORDER BY` of an aggregate or window function (`count(a) FILTER (WHERE
//!   a + 1 > 2)`, `array_agg(x ORDER BY a + 1)`): DataFusion names such a column after these
//!   as displayed, which shows the function's name rather than the operator, so a rewrite there
//!   would rename the column and the plan would no longer find it;
//! - `sum(DISTINCT x)`, which DataFusion sums with wrapping over the distinct values.
//!
//! As in PostgreSQL, the order in which the parts of a `WHERE` are evaluated is not defined:
//! `WHERE id % 3 = 2 AND a + 1 > 0` may evaluate `a + 1` on a row the first part excludes and
//! fail on it. `CASE WHEN id % 3 = 2 THEN a + 1 > 0 END` evaluates it only where the condition
//! holds.

mod sum;

use std::sync::Arc;

use datafusion::arrow::array::Datum;
use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::arrow::error::ArrowError;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, Result as DFResult, ScalarValue, exec_err, plan_err};
use datafusion::config::ConfigOptions;
use datafusion::execution::{FunctionRegistry, SessionState};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ReturnFieldArgs,
    ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;

/// Makes integer `+`, `-`, `*`, unary `-` and `sum` in statements planned with `state` fail on
/// overflow (the module's docs), as they do in every [`crate::Session`]: for a DataFusion
/// session built elsewhere over nvpage tables, such as a distributed coordinator's. The checked
/// functions (`checked_sum` among them) are registered too, so a plan that carries them decodes
/// where `state` does (a worker's).
pub fn install_checked_arithmetic(state: &mut SessionState) -> DFResult<()> {
    for op in [Op::Add, Op::Sub, Op::Mul, Op::Neg] {
        state.register_udf(op.udf())?;
    }
    state.register_udaf(sum::udaf())?;
    state.add_analyzer_rule(Arc::new(CheckedIntegerArithmetic));
    Ok(())
}

/// The arithmetic operators this module checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Add,
    Sub,
    Mul,
    Neg,
}

impl Op {
    fn of(op: Operator) -> Option<Self> {
        match op {
            Operator::Plus => Some(Op::Add),
            Operator::Minus => Some(Op::Sub),
            Operator::Multiply => Some(Op::Mul),
            _ => None,
        }
    }

    fn udf(self) -> Arc<ScalarUDF> {
        let arity = if self == Op::Neg { 1 } else { 2 };
        Arc::new(ScalarUDF::new_from_impl(Checked {
            op: self,
            signature: Signature::any(arity, Volatility::Immutable),
        }))
    }
}

/// The analyzer rule (the module's docs).
#[derive(Debug)]
struct CheckedIntegerArithmetic;

impl AnalyzerRule for CheckedIntegerArithmetic {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DFResult<LogicalPlan> {
        plan.transform_up_with_subqueries(|plan| {
            // The schema a node's expressions are typed against: its inputs', and a table
            // scan's own for its filters (as DataFusion's type coercion does).
            let mut schema = merge_schema(&plan.inputs());
            if let LogicalPlan::TableScan(scan) = &plan {
                schema.merge(&scan.projected_schema);
            }
            // Aggregate and window functions live in these nodes only.
            let sums = matches!(plan, LogicalPlan::Aggregate(_) | LogicalPlan::Window(_));
            plan.map_expressions(|e| {
                let e = rewrite(e, &schema)?;
                if sums { e.transform_data(|e| sum::checked_sums(e, &schema)) } else { Ok(e) }
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "nvpage_checked_integer_arithmetic"
    }
}

/// `e` with each integer operator in it checked, except in the `FILTER` and `ORDER BY` of an
/// aggregate or window function (the module's docs).
fn rewrite(e: Expr, schema: &DFSchema) -> DFResult<Transformed<Expr>> {
    e.transform_down(|e| match e {
        Expr::WindowFunction(mut w) => {
            let p = &mut w.params;
            let changed = rewrite_each(p.args.iter_mut().chain(&mut p.partition_by), schema)?;
            Ok(Transformed::new(Expr::WindowFunction(w), changed, TreeNodeRecursion::Jump))
        }
        Expr::AggregateFunction(mut a) => {
            let changed = rewrite_each(&mut a.params.args, schema)?;
            Ok(Transformed::new(Expr::AggregateFunction(a), changed, TreeNodeRecursion::Jump))
        }
        e => checked(e, schema),
    })
}

/// [`rewrite`] of each of `exprs` where it stands; whether any changed.
fn rewrite_each<'a>(
    exprs: impl IntoIterator<Item = &'a mut Expr>,
    schema: &DFSchema,
) -> DFResult<bool> {
    let mut changed = false;
    for e in exprs {
        let t = rewrite(std::mem::take(e), schema)?;
        *e = t.data;
        changed |= t.transformed;
    }
    Ok(changed)
}

/// `e` with its operator replaced by the checked function, when it is `+`, `-` or `*` of two
/// integers of one type, or `-` of an integer.
fn checked(e: Expr, schema: &DFSchema) -> DFResult<Transformed<Expr>> {
    let integer = |x: &Expr| x.get_type(schema).ok().filter(DataType::is_integer);
    match e {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            match (Op::of(op), integer(&left), integer(&right)) {
                (Some(op), Some(l), Some(r)) if l == r => {
                    Ok(Transformed::yes(call(op, vec![*left, *right])))
                }
                _ => Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr { left, op, right }))),
            }
        }
        Expr::Negative(x) if integer(&x).is_some() => Ok(Transformed::yes(call(Op::Neg, vec![*x]))),
        e => Ok(Transformed::no(e)),
    }
}

/// The checked function of `op` over `args`.
fn call(op: Op, args: Vec<Expr>) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(op.udf(), args))
}

/// The checked operator as a scalar function of two integers of one type.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Checked {
    op: Op,
    signature: Signature,
}

impl ScalarUDFImpl for Checked {
    fn name(&self) -> &str {
        match self.op {
            Op::Add => "checked_add",
            Op::Sub => "checked_sub",
            Op::Mul => "checked_mul",
            Op::Neg => "checked_neg",
        }
    }

    /// The operator's own column name, `a + b` or `(- a)`, so nothing that names the column
    /// changes.
    fn schema_name(&self, args: &[Expr]) -> DFResult<String> {
        let symbol = match self.op {
            Op::Add => Operator::Plus,
            Op::Sub => Operator::Minus,
            Op::Mul => Operator::Multiply,
            Op::Neg => {
                let [x] = args else { return plan_err!("{} takes one argument", self.name()) };
                return Ok(format!("(- {})", x.schema_name()));
            }
        };
        let [l, r] = args else { return plan_err!("{} takes two arguments", self.name()) };
        Ok(format!("{} {symbol} {}", l.schema_name(), r.schema_name()))
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> DFResult<DataType> {
        match (self.op, arg_types) {
            (Op::Neg, [x]) if x.is_integer() => Ok(x.clone()),
            (Op::Add | Op::Sub | Op::Mul, [l, r]) if l.is_integer() && l == r => Ok(l.clone()),
            _ => plan_err!("{} takes integers of one type, not {arg_types:?}", self.name()),
        }
    }

    /// Nullable where an operand is, as the operator's result is.
    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> DFResult<FieldRef> {
        let types: Vec<DataType> = args.arg_fields.iter().map(|f| f.data_type().clone()).collect();
        let nullable = args.arg_fields.iter().any(|f| f.is_nullable());
        Ok(Arc::new(Field::new(self.name(), self.return_type(&types)?, nullable)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DFResult<ColumnarValue> {
        // A literal operand stays a scalar: Arrow's kernels take it as one.
        let datum = |v: &ColumnarValue| -> DFResult<Box<dyn Datum>> {
            Ok(match v {
                ColumnarValue::Array(a) => Box::new(Arc::clone(a)),
                ColumnarValue::Scalar(s) => Box::new(s.to_scalar()?),
            })
        };
        let out = match (self.op, args.args.as_slice()) {
            (Op::Neg, [x]) => numeric::neg(x.to_array(1)?.as_ref()),
            (op, [l, r]) => {
                let (l, r) = (datum(l)?, datum(r)?);
                match op {
                    Op::Add => numeric::add(l.as_ref(), r.as_ref()),
                    Op::Sub => numeric::sub(l.as_ref(), r.as_ref()),
                    _ => numeric::mul(l.as_ref(), r.as_ref()),
                }
            }
            _ => return exec_err!("{} called with {} arguments", self.name(), args.args.len()),
        };
        let scalars = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        match out {
            Ok(a) if scalars => Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&a, 0)?)),
            Ok(a) => Ok(ColumnarValue::Array(a)),
            Err(ArrowError::ArithmeticOverflow(what)) => {
                exec_err!("integer out of range for {}: {what}", args.args[0].data_type())
            }
            Err(e) => Err(e.into()),
        }
    }
}
