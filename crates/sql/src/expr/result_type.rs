//! The type of an expression's result column when no value shows it (no row, or only
//! NULLs). MySQL gives every such column a real type, and clients (Go's driver among them)
//! refuse a column typed NULL; where values exist, the first one decides instead, so this
//! only has to be right about the kind of value (integer, decimal, float, text, time).

use kista_client::types::ColumnType;

use super::{ArithmeticOp, Expr, Function};
use crate::functions::Returns;
use crate::output::type_of_value;

const BIGINT: ColumnType = ColumnType::Int {
    bytes: 8,
    signed: true,
};
/// What `/`, SUM and AVG give where no value says more.
pub const DECIMAL_RESULT: ColumnType = ColumnType::Decimal {
    precision: 65,
    scale: 4,
};

/// `expr`'s result type; `leaf` answers for columns and aggregates (the plan knows them).
pub fn result_type(expr: &Expr, leaf: &dyn Fn(&Expr) -> Option<ColumnType>) -> Option<ColumnType> {
    let of = |e: &Expr| result_type(e, leaf);
    match expr {
        Expr::Column(_) | Expr::Aggregate(_) => leaf(expr),
        Expr::Literal(value) => type_of_value(value),
        Expr::Param(_) | Expr::SystemVariable(_) | Expr::UserVariable(_) => None,
        Expr::AssignUserVariable(_, value) | Expr::Collate(value, _) => of(value),
        // Truth values are integers in MySQL.
        Expr::Not(_)
        | Expr::And(..)
        | Expr::Or(..)
        | Expr::Compare(..)
        | Expr::IsNull { .. }
        | Expr::IsTruth { .. }
        | Expr::InList { .. }
        | Expr::Between { .. }
        | Expr::Like { .. } => Some(BIGINT),
        Expr::Negate(inner) => of(inner).map(|t| match t {
            ColumnType::Int { .. } => BIGINT,
            other => other,
        }),
        Expr::Arithmetic(op, a, b) => Some(arithmetic_type(*op, of(a), of(b))),
        Expr::Cast(_, target) => Some(*target),
        Expr::Call(function, args) => call_type(*function, args, &of),
    }
}

/// MySQL's rules: a float on either side makes a DOUBLE, `/` or a DECIMAL on either side a
/// DECIMAL, `DIV` and integers on both sides a BIGINT.
fn arithmetic_type(op: ArithmeticOp, a: Option<ColumnType>, b: Option<ColumnType>) -> ColumnType {
    let is = |t: Option<ColumnType>, test: fn(ColumnType) -> bool| t.is_some_and(test);
    let float = |t: ColumnType| matches!(t, ColumnType::Float | ColumnType::Double);
    let textual = |t: ColumnType| {
        matches!(
            t,
            ColumnType::VarChar { .. } | ColumnType::Char { .. } | ColumnType::Text { .. }
        )
    };
    let decimal = |t: ColumnType| matches!(t, ColumnType::Decimal { .. });
    if op == ArithmeticOp::IntegerDivide {
        return BIGINT;
    }
    if is(a, float) || is(b, float) || is(a, textual) || is(b, textual) {
        return ColumnType::Double;
    }
    if op == ArithmeticOp::Divide || is(a, decimal) || is(b, decimal) {
        return DECIMAL_RESULT;
    }
    BIGINT
}

/// What the registry says a function returns.
fn call_type(
    function: Function,
    args: &[Expr],
    of: &dyn Fn(&Expr) -> Option<ColumnType>,
) -> Option<ColumnType> {
    match function.def().returns {
        Returns::Type(column_type) => Some(column_type),
        Returns::ArgumentFrom(first) => args.iter().skip(first).find_map(of),
    }
}

#[cfg(test)]
mod tests {
    use kista_client::types::Value;

    use super::*;

    fn int_column(_: &Expr) -> Option<ColumnType> {
        Some(ColumnType::Int {
            bytes: 4,
            signed: true,
        })
    }

    fn literal(value: Value) -> Box<Expr> {
        Box::new(Expr::Literal(value))
    }

    #[test]
    fn arithmetic_follows_mysql_result_types() {
        let column = || Box::new(Expr::Column(0));
        let typed = |op, b| result_type(&Expr::Arithmetic(op, column(), b), &int_column);
        assert_eq!(
            typed(ArithmeticOp::Add, literal(Value::Int(1))),
            Some(BIGINT)
        );
        assert_eq!(
            typed(ArithmeticOp::Divide, literal(Value::Int(2))),
            Some(DECIMAL_RESULT)
        );
        assert_eq!(
            typed(ArithmeticOp::IntegerDivide, literal(Value::Double(2.0))),
            Some(BIGINT)
        );
        assert_eq!(
            typed(ArithmeticOp::Multiply, literal(Value::Double(2.0))),
            Some(ColumnType::Double)
        );
        let negated = result_type(&Expr::Negate(column()), &int_column);
        assert_eq!(negated, Some(BIGINT));
    }

    #[test]
    fn truth_values_are_integers_and_a_bare_null_stays_untyped() {
        let compare = Expr::Compare(
            crate::expr::CompareOp::Gt,
            literal(Value::Null),
            Box::new(Expr::Column(0)),
            kista_client::types::Collation::default(),
        );
        assert_eq!(result_type(&compare, &int_column), Some(BIGINT));
        assert_eq!(result_type(&Expr::Literal(Value::Null), &int_column), None);
        let coalesce = Expr::Call(
            crate::functions::named("coalesce"),
            vec![Expr::Literal(Value::Null), Expr::Column(0)],
        );
        assert_eq!(
            result_type(&coalesce, &int_column),
            int_column(&Expr::Column(0))
        );
    }
}
