//! The SQL functions whose output can outgrow their input, sized before they build it.
//!
//! `repeat('x', 2147483647)` or `lpad(s, 1000000000)` ask DataFusion's own functions for
//! gigabytes at once, outside any memory pool. Each query's context replaces them (and
//! the `||` operator and `OVERLAY(… PLACING …)`, which the planner maps to functions of its
//! own) by wrappers that compute an upper bound of the bytes every row will hold from the
//! arguments alone, refuse a value past [`QueryBudget::max_value_bytes`] (or
//! [`QueryBudget::max_constant_bytes`] when every argument is a constant: such a value is
//! copied into every row of a batch), reserve the total in the engine's pool, and only then
//! call the function. The reservation travels with the array built (its string buffer owns
//! it), so the bytes stay charged for as long as any operator holds them.
//!
//! `levenshtein` is bounded by its work instead (it compares every character pair, and a
//! function call cannot be interrupted), and `string_agg`/`array_agg` by the size of each
//! group's value (their accumulators are checked after every batch).

use crate::SqlError;
use crate::budget::{QueryBudget, human_bytes};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, make_array};
use datafusion::arrow::buffer::Buffer;
use datafusion::arrow::datatypes::{DataType, FieldRef, Int64Type};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::MemoryReservation;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::expr::{AggregateFunctionParams, ScalarFunction, WindowFunctionParams};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, Documentation, Expr, ExprSchemable, ReturnFieldArgs,
    ReversedUDAF, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, SetMonotonicity, Signature, Volatility,
};
use datafusion::sql::sqlparser::ast::BinaryOperator;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// What bounds a wrapped function's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Growth {
    /// `repeat(s, n)`: |s|·n.
    Repeat,
    /// `lpad`/`rpad(s, n [, fill])`: |s| + n characters of the fill.
    Pad,
    /// `concat(…)` and `||`: the sum of the arguments.
    Concat,
    /// `concat_ws(sep, …)`: the arguments and a separator between each.
    ConcatWs,
    /// `replace(s, from, to)`: every occurrence of `from` (or every character boundary,
    /// when it is empty) becomes `to`.
    Replace,
    /// `translate(s, from, to)`: as many characters as `s`, each at most 4 bytes.
    Translate,
    /// `overlay(s, p, …)`: |s| + |p|.
    Overlay,
    /// `regexp_replace(s, pattern, r [, flags])`: a match at each of the |s|+1 positions,
    /// each replaced by `r` whose group references repeat parts of `s`.
    RegexpReplace,
    /// `levenshtein(a, b)`: |a|·|b| steps of work (its memory is small).
    Levenshtein,
}

/// The wrapped functions (by DataFusion's name).
const WRAPPED: &[(&str, Growth)] = &[
    ("repeat", Growth::Repeat),
    ("lpad", Growth::Pad),
    ("rpad", Growth::Pad),
    ("concat", Growth::Concat),
    ("concat_ws", Growth::ConcatWs),
    ("replace", Growth::Replace),
    ("translate", Growth::Translate),
    ("overlay", Growth::Overlay),
    ("regexp_replace", Growth::RegexpReplace),
    ("levenshtein", Growth::Levenshtein),
];

/// Aggregates whose one value grows with the group (checked per group).
const WRAPPED_AGGREGATES: &[&str] = &["string_agg", "array_agg"];

/// Character pairs `levenshtein` may compare in one call (a batch): about a second.
pub const MAX_LEVENSHTEIN_WORK: u64 = 1 << 30;

/// Bytes a value of a type that is not a string is taken to print as (a number, a date).
const NON_STRING_TEXT: u64 = 64;

/// Replaces, in the query context `builder` makes (with its default functions), the
/// functions that can grow their output by wrappers charging `budget`, and plans `||` and
/// `OVERLAY` through them.
pub fn install(builder: &mut SessionStateBuilder, budget: &Arc<QueryBudget>) {
    let mut overlay = None;
    for udf in builder.scalar_functions().iter_mut().flatten() {
        let Some(&(_, growth)) = WRAPPED.iter().find(|(name, _)| *name == udf.name()) else { continue };
        let wrapped = Arc::new(ScalarUDF::new_from_impl(Bounded {
            inner: udf.as_ref().clone(),
            growth,
            budget: Budget(budget.clone()),
        }));
        if growth == Growth::Overlay {
            overlay = Some(wrapped.clone());
        }
        *udf = wrapped;
    }
    for udaf in builder.aggregate_functions().iter_mut().flatten() {
        if WRAPPED_AGGREGATES.contains(&udaf.name()) {
            *udaf = Arc::new(AggregateUDF::new_from_impl(BoundedAggregate {
                inner: udaf.as_ref().clone(),
                budget: Budget(budget.clone()),
            }));
        }
    }
    let concat = Arc::new(ScalarUDF::new_from_impl(ConcatOperator::new(budget.clone())));
    let planner: Arc<dyn ExprPlanner> = Arc::new(BoundedPlanner { concat, overlay });
    // First, so that it is asked before DataFusion's own planners (one maps OVERLAY).
    builder.expr_planners().get_or_insert_with(Vec::new).insert(0, planner);
}

/// A query's budget, compared and hashed by identity (functions must be `Eq + Hash`).
#[derive(Debug, Clone)]
struct Budget(Arc<QueryBudget>);

impl PartialEq for Budget {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Budget {}

impl Hash for Budget {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.0) as usize).hash(state);
    }
}

/// Per-row byte lengths of an argument taken as text (0 for NULL).
enum Lengths {
    Same(u64),
    Rows(Vec<u64>),
}

impl Lengths {
    fn of(arg: &ColumnarValue) -> Lengths {
        match arg {
            ColumnarValue::Scalar(s) => Lengths::Same(scalar_len(s)),
            ColumnarValue::Array(a) => Lengths::Rows(array_lens(a.as_ref())),
        }
    }

    fn at(&self, row: usize) -> u64 {
        match self {
            Lengths::Same(n) => *n,
            Lengths::Rows(v) => v.get(row).copied().unwrap_or(0),
        }
    }
}

fn scalar_len(s: &ScalarValue) -> u64 {
    match s {
        ScalarValue::Utf8(v) | ScalarValue::LargeUtf8(v) | ScalarValue::Utf8View(v) => {
            v.as_ref().map_or(0, |v| v.len() as u64)
        }
        ScalarValue::Binary(v) | ScalarValue::LargeBinary(v) | ScalarValue::BinaryView(v) => {
            v.as_ref().map_or(0, |v| v.len() as u64)
        }
        ScalarValue::Dictionary(_, inner) => scalar_len(inner),
        s if s.is_null() => 0,
        _ => NON_STRING_TEXT,
    }
}

fn array_lens(a: &dyn Array) -> Vec<u64> {
    let rows = a.len();
    let of = |len: &dyn Fn(usize) -> usize| (0..rows).map(|i| if a.is_null(i) { 0 } else { len(i) as u64 }).collect();
    match a.data_type() {
        DataType::Utf8 => of(&|i| a.as_string::<i32>().value(i).len()),
        DataType::LargeUtf8 => of(&|i| a.as_string::<i64>().value(i).len()),
        DataType::Utf8View => of(&|i| a.as_string_view().value(i).len()),
        DataType::Binary => of(&|i| a.as_binary::<i32>().value(i).len()),
        DataType::LargeBinary => of(&|i| a.as_binary::<i64>().value(i).len()),
        DataType::Dictionary(..) => {
            match a.as_any_dictionary_opt() {
                Some(dictionary) => {
                    let values = array_lens(dictionary.values().as_ref());
                    let keys = dictionary.normalized_keys();
                    (0..rows)
                        .map(|i| {
                            if a.is_null(i) {
                                0
                            } else {
                                keys.get(i).and_then(|&k| values.get(k)).copied().unwrap_or(0)
                            }
                        })
                        .collect()
                }
                None => vec![NON_STRING_TEXT; rows],
            }
        }
        DataType::Null => vec![0; rows],
        _ => vec![NON_STRING_TEXT; rows],
    }
}

/// Per-row integers of an argument (0 for NULL or a value that is not an integer).
enum Integers {
    Same(i64),
    Rows(Vec<i64>),
}

impl Integers {
    fn of(arg: &ColumnarValue) -> Integers {
        match arg {
            ColumnarValue::Scalar(s) => Integers::Same(match s.cast_to(&DataType::Int64) {
                Ok(ScalarValue::Int64(Some(n))) => n,
                _ => 0,
            }),
            ColumnarValue::Array(a) => match datafusion::arrow::compute::cast(a, &DataType::Int64) {
                Ok(cast) => {
                    let ints = cast.as_primitive::<Int64Type>();
                    Integers::Rows((0..ints.len()).map(|i| if ints.is_null(i) { 0 } else { ints.value(i) }).collect())
                }
                Err(_) => Integers::Same(0),
            },
        }
    }

    fn at(&self, row: usize) -> i64 {
        match self {
            Integers::Same(n) => *n,
            Integers::Rows(v) => v.get(row).copied().unwrap_or(0),
        }
    }
}

/// Bytes per character of a pad's fill: 1 for an ASCII constant, else UTF-8's most.
fn fill_width(arg: Option<&ColumnarValue>) -> u64 {
    match arg {
        None => 1,
        Some(ColumnarValue::Scalar(s)) => match s {
            ScalarValue::Utf8(Some(v)) | ScalarValue::LargeUtf8(Some(v)) | ScalarValue::Utf8View(Some(v))
                if v.is_ascii() =>
            {
                1
            }
            _ => 4,
        },
        Some(ColumnarValue::Array(_)) => 4,
    }
}

/// What one call will build: the largest row's bytes and all rows' together.
struct Estimate {
    largest: u64,
    total: u64,
    /// Every argument is a constant: one value, copied into every row of a batch.
    constant: bool,
}

fn estimate(growth: Growth, args: &[ColumnarValue], rows: usize) -> Estimate {
    let constant = args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
    let rows = if constant { 1 } else { rows };
    let lengths: Vec<Lengths> = args.iter().map(Lengths::of).collect();
    let len = |arg: usize, row: usize| lengths.get(arg).map_or(0, |l| l.at(row));
    let ints = |arg: usize| args.get(arg).map(Integers::of);
    let counts = match growth {
        Growth::Repeat | Growth::Pad => ints(1),
        _ => None,
    };
    let count = |row: usize| counts.as_ref().map_or(0, |c| c.at(row)).max(0) as u64;
    let width = fill_width(args.get(2));
    let (mut largest, mut total) = (0u64, 0u64);
    for row in 0..rows {
        let s = len(0, row);
        let bytes = match growth {
            Growth::Repeat => s.saturating_mul(count(row)),
            Growth::Pad => s.saturating_add(count(row).saturating_mul(width)),
            Growth::Concat => (0..args.len()).fold(0u64, |sum, a| sum.saturating_add(len(a, row))),
            Growth::ConcatWs => {
                let parts = (1..args.len()).fold(0u64, |sum, a| sum.saturating_add(len(a, row)));
                parts.saturating_add(s.saturating_mul(args.len().saturating_sub(2) as u64))
            }
            Growth::Replace => {
                let (from, to) = (len(1, row), len(2, row));
                let occurrences = s / from.max(1) + 1;
                s.saturating_add(occurrences.saturating_mul(to))
            }
            Growth::Translate => s.saturating_mul(4),
            Growth::Overlay => s.saturating_add(len(1, row)),
            Growth::RegexpReplace => {
                // A match at every position, each replaced by `r`, whose group references
                // (fewer than |r|) copy parts of the matches (at most |s| together).
                let r = len(2, row);
                s.saturating_add((s + 1).saturating_mul(r)).saturating_add(s.saturating_mul(r))
            }
            Growth::Levenshtein => s.saturating_mul(len(1, row)),
        };
        largest = largest.max(bytes);
        total = total.saturating_add(bytes);
    }
    Estimate { largest, total, constant }
}

/// A string function that reserves what it will build before building it.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Bounded {
    inner: ScalarUDF,
    growth: Growth,
    budget: Budget,
}

fn too_large(message: String) -> DataFusionError {
    DataFusionError::External(Box::new(SqlError::TooLarge(message)))
}

/// Refuses a call of `what` (`repeat()`, `||`) whose values would pass the caps of
/// `budget`; else the reservation of the bytes it will build (`None`: nothing to reserve).
fn admit(
    what: &str,
    growth: Growth,
    budget: &QueryBudget,
    args: &[ColumnarValue],
    rows: usize,
) -> Result<Option<MemoryReservation>> {
    budget.check()?;
    let estimate = estimate(growth, args, rows);
    if growth == Growth::Levenshtein {
        if estimate.total > MAX_LEVENSHTEIN_WORK {
            return Err(too_large(format!(
                "levenshtein() would compare {} character pairs in one batch, at most {MAX_LEVENSHTEIN_WORK}; \
                 compare shorter strings",
                estimate.total
            )));
        }
        return Ok(None);
    }
    let (cap, kind) = if estimate.constant {
        (budget.max_constant_bytes, "a string built from constants")
    } else {
        (budget.max_value_bytes, "one string value")
    };
    if estimate.largest > cap as u64 {
        return Err(too_large(format!(
            "{what} would build a string of up to {}; {kind} is at most {}",
            human_bytes(estimate.largest),
            human_bytes(cap as u64)
        )));
    }
    let reservation = budget.reservation(what.to_string());
    reservation.try_grow(usize::try_from(estimate.total).unwrap_or(usize::MAX))?;
    Ok(Some(reservation))
}

impl ScalarUDFImpl for Bounded {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        self.inner.inner().schema_name(args)
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.inner().coerce_types(arg_types)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.inner().documentation()
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let what = format!("{}()", self.inner.name());
        let reservation = admit(&what, self.growth, &self.budget.0, &args.args, args.number_rows)?;
        let out = self.inner.invoke_with_args(args)?;
        Ok(match (out, reservation) {
            (ColumnarValue::Array(array), Some(reservation)) => ColumnarValue::Array(charged(array, reservation)),
            (out, _) => out,
        })
    }
}

/// A buffer and the reservation of its bytes, released when the last array holding the
/// buffer is dropped.
struct Charged {
    buffer: Buffer,
    _reservation: MemoryReservation,
}

impl AsRef<[u8]> for Charged {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_slice()
    }
}

/// `array` with its largest buffer owning `reservation`, resized to that buffer.
fn charged(array: ArrayRef, reservation: MemoryReservation) -> ArrayRef {
    let data = array.to_data();
    let Some(largest) = (0..data.buffers().len()).max_by_key(|&i| data.buffers()[i].capacity()) else {
        return array;
    };
    let mut buffers = data.buffers().to_vec();
    reservation.resize(buffers[largest].capacity());
    let owner = Charged { buffer: buffers[largest].clone(), _reservation: reservation };
    buffers[largest] = Buffer::from(bytes::Bytes::from_owner(owner));
    match data.into_builder().buffers(buffers).build() {
        Ok(data) => make_array(data),
        // Not expected (the same bytes in the same layout); the array, uncharged, then.
        Err(_) => array,
    }
}

/// `a || b` on strings, bounded like `concat` but NULL when either side is (as the operator).
#[derive(Debug, PartialEq, Eq, Hash)]
struct ConcatOperator {
    signature: Signature,
    budget: Budget,
}

impl ConcatOperator {
    fn new(budget: Arc<QueryBudget>) -> ConcatOperator {
        ConcatOperator { signature: Signature::user_defined(Volatility::Immutable), budget: Budget(budget) }
    }
}

/// The string type `||` gives for operands of these types (as DataFusion's coercion).
fn concat_type(types: &[DataType]) -> DataType {
    let text = |t: &DataType| match t {
        DataType::Dictionary(_, v) => v.as_ref().clone(),
        t => t.clone(),
    };
    if types.iter().any(|t| text(t) == DataType::LargeUtf8) {
        DataType::LargeUtf8
    } else if types.iter().any(|t| text(t) == DataType::Utf8View) {
        DataType::Utf8View
    } else {
        DataType::Utf8
    }
}

impl ScalarUDFImpl for ConcatOperator {
    fn name(&self) -> &str {
        "oxprof_concat_operator"
    }

    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        // As the operator's column name: `a || b`.
        let names: Vec<String> = args.iter().map(|a| a.schema_name().to_string()).collect();
        Ok(names.join(" || "))
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(concat_type(arg_types))
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let to = concat_type(arg_types);
        Ok(vec![to; arg_types.len()])
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let reservation = admit("||", Growth::Concat, &self.budget.0, &args.args, args.number_rows)?;
        let rows = args.number_rows;
        let constant = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let to = args.return_type().clone();
        let arrays: Vec<ArrayRef> =
            args.args.iter().map(|a| a.to_array(if constant { 1 } else { rows })).collect::<Result<_>>()?;
        // Concatenated as Utf8/LargeUtf8 (arrow's kernel), then given the operator's type.
        let work = if to == DataType::LargeUtf8 { DataType::LargeUtf8 } else { DataType::Utf8 };
        let mut out: Option<ArrayRef> = None;
        for array in &arrays {
            let array = datafusion::arrow::compute::cast(array, &work)?;
            out = Some(match out {
                None => array,
                Some(left) => datafusion::arrow::compute::kernels::concat_elements::concat_elements_dyn(&left, &array)?,
            });
        }
        let Some(out) = out else { return Ok(ColumnarValue::Scalar(ScalarValue::try_from(&to)?)) };
        let out = datafusion::arrow::compute::cast(&out, &to)?;
        if constant {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?));
        }
        Ok(ColumnarValue::Array(match reservation {
            Some(reservation) => charged(out, reservation),
            None => out,
        }))
    }
}

/// Plans `a || b` on strings and `OVERLAY(… PLACING …)` through the bounded functions.
#[derive(Debug)]
struct BoundedPlanner {
    concat: Arc<ScalarUDF>,
    overlay: Option<Arc<ScalarUDF>>,
}

fn is_text(t: &DataType) -> bool {
    match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, v) => is_text(v),
        _ => false,
    }
}

impl ExprPlanner for BoundedPlanner {
    fn plan_binary_op(&self, expr: RawBinaryExpr, schema: &DFSchema) -> Result<PlannerResult<RawBinaryExpr>> {
        if expr.op != BinaryOperator::StringConcat {
            return Ok(PlannerResult::Original(expr));
        }
        let types = (expr.left.get_type(schema), expr.right.get_type(schema));
        let text = match &types {
            (Ok(l), Ok(r)) => (is_text(l) || l.is_null()) && (is_text(r) || r.is_null()) && (is_text(l) || is_text(r)),
            _ => false,
        };
        if !text {
            // Lists, numbers: DataFusion's own rules (and errors).
            return Ok(PlannerResult::Original(expr));
        }
        Ok(PlannerResult::Planned(Expr::ScalarFunction(ScalarFunction::new_udf(
            self.concat.clone(),
            vec![expr.left, expr.right],
        ))))
    }

    fn plan_overlay(&self, args: Vec<Expr>) -> Result<PlannerResult<Vec<Expr>>> {
        match &self.overlay {
            Some(overlay) => {
                Ok(PlannerResult::Planned(Expr::ScalarFunction(ScalarFunction::new_udf(overlay.clone(), args))))
            }
            None => Ok(PlannerResult::Original(args)),
        }
    }
}

/// An aggregate whose per-group value is checked against the value cap after each batch.
#[derive(Debug, PartialEq, Eq, Hash)]
struct BoundedAggregate {
    inner: AggregateUDF,
    budget: Budget,
}

impl BoundedAggregate {
    fn wrap(&self, inner: Arc<dyn AggregateUDFImpl>) -> Arc<dyn AggregateUDFImpl> {
        Arc::new(BoundedAggregate { inner: AggregateUDF::new_from_shared_impl(inner), budget: self.budget.clone() })
    }

    fn accumulate(&self, inner: Box<dyn Accumulator>) -> Box<dyn Accumulator> {
        Box::new(BoundedAccumulator {
            inner,
            name: self.inner.name().to_string(),
            budget: self.budget.0.clone(),
            taken_in: 0,
        })
    }
}

impl AggregateUDFImpl for BoundedAggregate {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn schema_name(&self, params: &AggregateFunctionParams) -> Result<String> {
        self.inner.inner().schema_name(params)
    }

    fn human_display(&self, params: &AggregateFunctionParams) -> Result<String> {
        self.inner.inner().human_display(params)
    }

    fn window_function_schema_name(&self, params: &WindowFunctionParams) -> Result<String> {
        self.inner.inner().window_function_schema_name(params)
    }

    fn display_name(&self, params: &AggregateFunctionParams) -> Result<String> {
        self.inner.inner().display_name(params)
    }

    fn window_function_display_name(&self, params: &WindowFunctionParams) -> Result<String> {
        self.inner.inner().window_function_display_name(params)
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field(&self, arg_fields: &[FieldRef]) -> Result<FieldRef> {
        self.inner.return_field(arg_fields)
    }

    fn is_nullable(&self) -> bool {
        self.inner.is_nullable()
    }

    fn accumulator(&self, acc_args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(self.accumulate(self.inner.accumulator(acc_args)?))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.inner.state_fields(args)
    }

    /// One accumulator per group, whose size is each group's own.
    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        false
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(self.accumulate(self.inner.create_sliding_accumulator(args)?))
    }

    fn with_beneficial_ordering(
        self: Arc<Self>,
        beneficial_ordering: bool,
    ) -> Result<Option<Arc<dyn AggregateUDFImpl>>> {
        let updated = self.inner.inner().clone().with_beneficial_ordering(beneficial_ordering)?;
        Ok(updated.map(|inner| self.wrap(inner)))
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        self.inner.inner().order_sensitivity()
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        match self.inner.reverse_udf() {
            ReversedUDAF::Reversed(udf) => {
                ReversedUDAF::Reversed(Arc::new(AggregateUDF::new_from_shared_impl(self.wrap(udf.inner().clone()))))
            }
            other => other,
        }
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn is_descending(&self) -> Option<bool> {
        self.inner.is_descending()
    }

    fn default_value(&self, data_type: &DataType) -> Result<ScalarValue> {
        self.inner.default_value(data_type)
    }

    fn supports_null_handling_clause(&self) -> bool {
        self.inner.supports_null_handling_clause()
    }

    fn supports_within_group_clause(&self) -> bool {
        self.inner.supports_within_group_clause()
    }

    fn set_monotonicity(&self, data_type: &DataType) -> SetMonotonicity {
        self.inner.inner().set_monotonicity(data_type)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}

/// An aggregate's accumulator, refused once its value passes the value cap.
#[derive(Debug)]
struct BoundedAccumulator {
    inner: Box<dyn Accumulator>,
    name: String,
    budget: Arc<QueryBudget>,
    /// Bytes of the values taken in so far: an accumulator that keeps slices of its input
    /// (`array_agg`) does not count the string bytes they share in its own `size()`.
    taken_in: usize,
}

impl BoundedAccumulator {
    fn take_in(&mut self, arrays: &[ArrayRef]) {
        let bytes: usize = arrays.iter().map(|a| a.to_data().get_slice_memory_size().unwrap_or(0)).sum();
        self.taken_in = self.taken_in.saturating_add(bytes);
    }

    fn checked(&self) -> Result<()> {
        self.budget.check()?;
        let cap = self.budget.max_value_bytes;
        if self.inner.size().max(self.taken_in) > cap {
            return Err(too_large(format!(
                "{}() of one group passed {}, the most one value may hold; group by more columns or aggregate \
                 fewer rows",
                self.name,
                human_bytes(cap as u64)
            )));
        }
        Ok(())
    }
}

impl Accumulator for BoundedAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.take_in(values);
        self.checked()?;
        self.inner.update_batch(values)?;
        self.checked()
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.inner.evaluate()
    }

    fn size(&self) -> usize {
        self.inner.size()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.inner.state()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.take_in(states);
        self.checked()?;
        self.inner.merge_batch(states)?;
        self.checked()
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.inner.retract_batch(values)
    }

    fn supports_retract_batch(&self) -> bool {
        self.inner.supports_retract_batch()
    }
}
