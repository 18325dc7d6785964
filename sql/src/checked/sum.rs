//! `sum` of `BIGINT` that fails when its result does not fit, instead of wrapping.
//!
//! DataFusion's `sum` of an `Int64` adds with wrapping: a sum past 2^63 − 1 comes back negative.
//! PostgreSQL sums `bigint` into `numeric`, so no order of the rows overflows part-way:
//! 2^63 − 1, 1 and −5 sum to 2^63 − 5. `checked_sum` does the same up to its result: each
//! group keeps a 128-bit running sum (and hands partitions' partial sums on as a
//! `Decimal128(38, 0)`), so neither the order of the rows nor the split into partitions can
//! overflow part-way, and only a final sum outside `Int64` fails the statement ("integer out
//! of range for Int64"). The result stays an `Int64` named as `sum`'s (`sum(t.a)`), NULL where
//! no value was summed; `EXPLAIN` shows `checked_sum`.
//!
//! 128 bits hold the sum of 2^64 values of 64 bits, more than a table holds. The adds check
//! anyway, so a partial sum from elsewhere that would pass 128 bits is an error too.

mod groups;
mod one;
mod total;

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result as DFResult, exec_err, plan_err};
use datafusion::functions_aggregate::sum::{Sum, sum_udaf};
use datafusion::logical_expr::expr::{AggregateFunctionParams, WindowFunctionParams};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::{AggregateOrderSensitivity, format_state_name};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Expr, ExprSchemable, GroupsAccumulator,
    ReversedUDAF, Signature, Volatility, WindowFunctionDefinition,
};

/// The checked `sum`, as registered.
pub(super) fn udaf() -> Arc<AggregateUDF> {
    Arc::new(AggregateUDF::new_from_impl(CheckedSum {
        signature: Signature::exact(vec![DataType::Int64], Volatility::Immutable),
    }))
}

/// `e` with each `sum` of one `Int64` replaced by `checked_sum`, as an aggregate and as a
/// window function; `sum(DISTINCT …)` is left as it is.
pub(super) fn checked_sums(e: Expr, schema: &DFSchema) -> DFResult<Transformed<Expr>> {
    let one_int64 = |args: &[Expr]| match args {
        [x] => x.get_type(schema).is_ok_and(|t| t == DataType::Int64),
        _ => false,
    };
    e.transform(|e| match e {
        Expr::AggregateFunction(mut a)
            if a.func.inner().is::<Sum>() && !a.params.distinct && one_int64(&a.params.args) =>
        {
            a.func = udaf();
            Ok(Transformed::yes(Expr::AggregateFunction(a)))
        }
        Expr::WindowFunction(mut w)
            if matches!(&w.fun, WindowFunctionDefinition::AggregateUDF(f) if f.inner().is::<Sum>())
                && !w.params.distinct
                && one_int64(&w.params.args) =>
        {
            w.fun = WindowFunctionDefinition::AggregateUDF(udaf());
            Ok(Transformed::yes(Expr::WindowFunction(w)))
        }
        e => Ok(Transformed::no(e)),
    })
}

/// `sum` of an `Int64` into an `Int64` that fails where the sum does not fit (the module's
/// docs).
#[derive(Debug, PartialEq, Eq, Hash)]
struct CheckedSum {
    signature: Signature,
}

impl CheckedSum {
    /// Refuses what the accumulators do not do: each value is summed once.
    fn refuse_distinct(&self, args: &AccumulatorArgs<'_>) -> DFResult<()> {
        if args.is_distinct {
            return exec_err!("{} does not take DISTINCT", self.name());
        }
        Ok(())
    }
}

impl AggregateUDFImpl for CheckedSum {
    fn name(&self) -> &str {
        "checked_sum"
    }

    /// `sum`'s own column name, so nothing that names the column changes.
    fn schema_name(&self, params: &AggregateFunctionParams) -> DFResult<String> {
        sum_udaf().schema_name(params)
    }

    /// `sum`'s own column name as a window function.
    fn window_function_schema_name(&self, params: &WindowFunctionParams) -> DFResult<String> {
        sum_udaf().window_function_schema_name(params)
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> DFResult<DataType> {
        match arg_types {
            [DataType::Int64] => Ok(DataType::Int64),
            _ => plan_err!("{} takes one Int64, not {arg_types:?}", self.name()),
        }
    }

    fn accumulator(&self, args: AccumulatorArgs<'_>) -> DFResult<Box<dyn Accumulator>> {
        self.refuse_distinct(&args)?;
        Ok(Box::new(one::SumOne::new(args.name)))
    }

    /// One field, the 128-bit partial sum: NULL where the partition summed no value.
    fn state_fields(&self, args: StateFieldsArgs<'_>) -> DFResult<Vec<FieldRef>> {
        let name = format_state_name(args.name, "sum");
        Ok(vec![Arc::new(Field::new(name, total::STATE_TYPE, true))])
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs<'_>) -> bool {
        !args.is_distinct
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs<'_>,
    ) -> DFResult<Box<dyn GroupsAccumulator>> {
        self.refuse_distinct(&args)?;
        Ok(Box::new(groups::SumGroups::new(args.name)))
    }

    /// A sum is the same whichever way the rows come.
    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }
}
