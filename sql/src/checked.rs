//! Integer `+`, `-` and `*` that fail on overflow instead of wrapping.
//!
//! DataFusion evaluates integer arithmetic with Arrow's wrapping kernels: `BIGINT` 2^63 − 1 plus
//! one is −2^63, and two `INT` columns multiplied past 2^31 give a negative product, silently.
//! PostgreSQL refuses both ("integer out of range"), and so does an nvpage session: an analyzer
//! rule, run after DataFusion's type coercion, replaces each `+`, `-` or `*` whose operands are
//! integers of one type with a function that evaluates it with Arrow's checked kernels, and an
//! overflow fails the statement with an error naming the type and the values. The function
//! keeps the operator's column name (`a + b`), result type and nullability, so plans, column
//! headers and `CREATE TABLE … AS` tables are as before; `EXPLAIN` shows it as `checked_add`,
//! `checked_sub` or `checked_mul`. Decimal and date arithmetic are left to DataFusion (their
//! result types are widened first), as are `/` and `%`, which DataFusion already refuses for a
//! zero divisor.
//!
//! Aggregates are not covered: `sum` over `BIGINT` still wraps past 2^63 (see
//! `docs/design.md`, "SQL").

use std::sync::Arc;

use datafusion::arrow::array::Datum;
use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::arrow::error::ArrowError;
use datafusion::common::tree_node::{Transformed, TreeNode};
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

/// Makes integer `+`, `-` and `*` in statements planned with `state` fail on overflow (the
/// module's docs), as they do in every [`crate::Session`]: for a DataFusion session built
/// elsewhere over nvpage tables, such as a distributed coordinator's. The checked functions are
/// registered too, so a plan that carries them decodes where `state` does (a worker's).
pub fn install_checked_arithmetic(state: &mut SessionState) -> DFResult<()> {
    for op in [Op::Add, Op::Sub, Op::Mul] {
        state.register_udf(op.udf())?;
    }
    state.add_analyzer_rule(Arc::new(CheckedIntegerArithmetic));
    Ok(())
}

/// The arithmetic operators this module checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Add,
    Sub,
    Mul,
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

    fn symbol(self) -> Operator {
        match self {
            Op::Add => Operator::Plus,
            Op::Sub => Operator::Minus,
            Op::Mul => Operator::Multiply,
        }
    }

    fn udf(self) -> Arc<ScalarUDF> {
        Arc::new(ScalarUDF::new_from_impl(Checked {
            op: self,
            signature: Signature::any(2, Volatility::Immutable),
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
            plan.map_expressions(|e| e.transform_up(|e| checked(e, &schema)))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "nvpage_checked_integer_arithmetic"
    }
}

/// `e` with its operator replaced by the checked function, when it is `+`, `-` or `*` of two
/// integers of one type.
fn checked(e: Expr, schema: &DFSchema) -> DFResult<Transformed<Expr>> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = e else {
        return Ok(Transformed::no(e));
    };
    let integers = match (Op::of(op), left.get_type(schema), right.get_type(schema)) {
        (Some(op), Ok(l), Ok(r)) if l.is_integer() && l == r => Some(op),
        _ => None,
    };
    match integers {
        Some(op) => Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(
            op.udf(),
            vec![*left, *right],
        )))),
        None => Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr { left, op, right }))),
    }
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
        }
    }

    /// The operator's own column name, `a + b`, so nothing that names the column changes.
    fn schema_name(&self, args: &[Expr]) -> DFResult<String> {
        let [l, r] = args else { return plan_err!("{} takes two arguments", self.name()) };
        Ok(format!("{} {} {}", l.schema_name(), self.op.symbol(), r.schema_name()))
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> DFResult<DataType> {
        match arg_types {
            [l, r] if l.is_integer() && l == r => Ok(l.clone()),
            _ => plan_err!("{} takes two integers of one type, not {arg_types:?}", self.name()),
        }
    }

    /// Nullable where either operand is, as the operator's result is.
    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> DFResult<FieldRef> {
        let types: Vec<DataType> = args.arg_fields.iter().map(|f| f.data_type().clone()).collect();
        let nullable = args.arg_fields.iter().any(|f| f.is_nullable());
        Ok(Arc::new(Field::new(self.name(), self.return_type(&types)?, nullable)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DFResult<ColumnarValue> {
        let [l, r] = args.args.as_slice() else {
            return exec_err!("{} takes two arguments", self.name());
        };
        // A literal operand stays a scalar: Arrow's kernels take it as one.
        let datum = |v: &ColumnarValue| -> DFResult<Box<dyn Datum>> {
            Ok(match v {
                ColumnarValue::Array(a) => Box::new(Arc::clone(a)),
                ColumnarValue::Scalar(s) => Box::new(s.to_scalar()?),
            })
        };
        let (ld, rd) = (datum(l)?, datum(r)?);
        let out = match self.op {
            Op::Add => numeric::add(ld.as_ref(), rd.as_ref()),
            Op::Sub => numeric::sub(ld.as_ref(), rd.as_ref()),
            Op::Mul => numeric::mul(ld.as_ref(), rd.as_ref()),
        };
        let scalars = matches!((l, r), (ColumnarValue::Scalar(_), ColumnarValue::Scalar(_)));
        match out {
            Ok(a) if scalars => Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&a, 0)?)),
            Ok(a) => Ok(ColumnarValue::Array(a)),
            Err(ArrowError::ArithmeticOverflow(what)) => {
                exec_err!("integer out of range for {}: {what}", l.data_type())
            }
            Err(e) => Err(e.into()),
        }
    }
}
