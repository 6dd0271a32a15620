//! Evaluating bound expressions over one row, with MySQL's NULL and conversion rules.

use std::cmp::Ordering;

use kista_client::types::{Collation, Decimal, Value};

use super::{ArithmeticOp, CompareOp, Expr};
use crate::error::{SqlError, SqlResult};
use crate::value::{self, compare_in, to_f64, to_text, truth};

/// What an expression may refer to besides the row.
pub struct EvalContext<'a> {
    pub params: &'a [Value],
    /// The current group's aggregate values.
    pub aggregates: &'a [Value],
    pub database: Option<&'a str>,
    pub user: &'a str,
    pub connection_id: u32,
    pub last_insert_id: u64,
    /// FOUND_ROWS().
    pub found_rows: u64,
    /// `@@name` → its value.
    pub variable: &'a dyn Fn(&str) -> Option<Value>,
    /// The session's variables, which `@x := value` writes (`None`: it is refused).
    pub user_variables: Option<&'a std::cell::RefCell<std::collections::HashMap<String, Value>>>,
    /// The connection, whose KILL QUERY ends SLEEP (`None` outside one).
    pub process: Option<&'a crate::processes::Process>,
}

#[cfg(test)]
impl EvalContext<'static> {
    /// A context with nothing around the expression: no parameters, no variables, root.
    pub(crate) fn bare() -> Self {
        EvalContext {
            params: &[],
            aggregates: &[],
            database: None,
            user: "root",
            connection_id: 1,
            last_insert_id: 0,
            found_rows: 0,
            variable: &|_| None,
            user_variables: None,
            process: None,
        }
    }
}

fn bool_value(b: Option<bool>) -> Value {
    match b {
        Some(b) => Value::Int(i64::from(b)),
        None => Value::Null,
    }
}

pub fn eval(expr: &Expr, row: &[Value], ctx: &EvalContext) -> SqlResult<Value> {
    Ok(match expr {
        Expr::Literal(v) => v.clone(),
        Expr::Param(n) => ctx.params.get(*n).cloned().unwrap_or(Value::Null),
        Expr::Column(n) => row.get(*n).cloned().unwrap_or(Value::Null),
        Expr::Aggregate(n) => ctx.aggregates.get(*n).cloned().unwrap_or(Value::Null),
        Expr::SystemVariable(name) => (ctx.variable)(name).ok_or_else(|| {
            SqlError::new(1193, "HY000", format!("Unknown system variable '{name}'"))
        })?,
        Expr::UserVariable(name) => (ctx.variable)(name).unwrap_or(Value::Null),
        Expr::AssignUserVariable(name, value) => {
            let value = eval(value, row, ctx)?;
            let variables = ctx
                .user_variables
                .ok_or_else(|| SqlError::not_supported("assigning a user variable here"))?;
            variables.borrow_mut().insert(name.clone(), value.clone());
            value
        }
        Expr::Not(e) => bool_value(truth(&eval(e, row, ctx)?).map(|b| !b)),
        Expr::Negate(e) => negated(eval(e, row, ctx)?)?,
        Expr::And(a, b) => {
            let left = truth(&eval(a, row, ctx)?);
            if left == Some(false) {
                return Ok(Value::Int(0));
            }
            bool_value(and(left, truth(&eval(b, row, ctx)?)))
        }
        Expr::Or(a, b) => {
            let left = truth(&eval(a, row, ctx)?);
            if left == Some(true) {
                return Ok(Value::Int(1));
            }
            bool_value(or(left, truth(&eval(b, row, ctx)?)))
        }
        Expr::Compare(op, a, b, collation) => {
            let (a, b) = (eval(a, row, ctx)?, eval(b, row, ctx)?);
            bool_value(compare_values(*op, &a, &b, *collation))
        }
        Expr::Collate(e, _) => eval(e, row, ctx)?,
        Expr::Arithmetic(op, a, b) => arithmetic(*op, &eval(a, row, ctx)?, &eval(b, row, ctx)?)?,
        Expr::IsNull { expr, negated } => {
            Value::Int(i64::from(eval(expr, row, ctx)?.is_null() != *negated))
        }
        Expr::IsTruth {
            expr,
            truth,
            negated,
        } => {
            let holds = crate::value::truth(&eval(expr, row, ctx)?) == Some(*truth);
            Value::Int(i64::from(holds != *negated))
        }
        Expr::InList {
            expr,
            list,
            negated,
            collation,
        } => in_list(eval(expr, row, ctx)?, list, *negated, *collation, row, ctx)?,
        Expr::Between {
            expr,
            low,
            high,
            negated,
            collation,
        } => {
            let value = eval(expr, row, ctx)?;
            let (low, high) = (eval(low, row, ctx)?, eval(high, row, ctx)?);
            between(&value, (&low, &high), *negated, *collation)
        }
        Expr::Like {
            expr,
            pattern,
            negated,
            collation,
        } => {
            let (value, pattern) = (eval(expr, row, ctx)?, eval(pattern, row, ctx)?);
            like(&value, &pattern, *negated, *collation)
        }
        Expr::Call(function, args) => crate::functions::call(*function, args, row, ctx)?,
        Expr::Cast(e, column_type) => cast(eval(e, row, ctx)?, *column_type)?,
    })
}

/// SQL's AND of two truths (`None`: unknown).
fn and(left: Option<bool>, right: Option<bool>) -> Option<bool> {
    match (left, right) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

/// SQL's OR of two truths (`None`: unknown).
fn or(left: Option<bool>, right: Option<bool>) -> Option<bool> {
    match (left, right) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (Some(false), Some(false)) => Some(false),
        _ => None,
    }
}

/// `needle [NOT] IN (list)`: found, unknown when a candidate (or the needle) is NULL and
/// none equals it, otherwise not found.
fn in_list(
    needle: Value,
    list: &[Expr],
    negated: bool,
    collation: Collation,
    row: &[Value],
    ctx: &EvalContext,
) -> SqlResult<Value> {
    if needle.is_null() {
        return Ok(Value::Null);
    }
    let mut saw_null = false;
    for candidate in list {
        match compare_in(collation, &needle, &eval(candidate, row, ctx)?) {
            Some(Ordering::Equal) => return Ok(bool_value(Some(!negated))),
            None => saw_null = true,
            _ => {}
        }
    }
    Ok(bool_value((!saw_null).then_some(negated)))
}

/// `value [NOT] BETWEEN low AND high` under `collation`.
fn between(
    value: &Value,
    (low, high): (&Value, &Value),
    negated: bool,
    collation: Collation,
) -> Value {
    let above = compare_in(collation, value, low).map(|o| o != Ordering::Less);
    let below = compare_in(collation, value, high).map(|o| o != Ordering::Greater);
    bool_value(and(above, below).map(|inside| inside != negated))
}

/// `-value`: error 1690 where an integer's negation overflows.
fn negated(value: Value) -> SqlResult<Value> {
    Ok(match value {
        Value::Null => Value::Null,
        Value::Int(n) => Value::Int(n.checked_neg().ok_or_else(overflow)?),
        Value::UInt(n) => Value::Int(-i64::try_from(n).map_err(|_| overflow())?),
        Value::Decimal(d) => Value::Decimal(Decimal {
            unscaled: -d.unscaled,
            scale: d.scale,
        }),
        other => Value::Double(-to_f64(&other).unwrap_or(0.0)),
    })
}

/// `value [NOT] LIKE pattern` under `collation`; NULL when either is.
fn like(value: &Value, pattern: &Value, negated: bool, collation: Collation) -> Value {
    if value.is_null() || pattern.is_null() {
        return Value::Null;
    }
    let matches = collation.like(&to_text(value), &to_text(pattern));
    Value::Int(i64::from(matches != negated))
}

/// `CAST(value AS column_type)`; NULL stays NULL.
fn cast(value: Value, column_type: kista_client::types::ColumnType) -> SqlResult<Value> {
    use kista_client::types::ColumnType;
    if value.is_null() {
        return Ok(Value::Null);
    }
    Ok(match column_type {
        ColumnType::Text { .. } | ColumnType::Blob => Value::Bytes(to_text(&value)),
        ColumnType::Int { signed: true, .. } => {
            value::to_i64(&value).map_or(Value::Null, Value::Int)
        }
        other => value::coerce(&value, other, "CAST")?,
    })
}

/// Whether `a op b` holds under `collation`; `None` when unknown (a NULL, except for
/// `<=>`).
pub fn compare_values(op: CompareOp, a: &Value, b: &Value, collation: Collation) -> Option<bool> {
    if op == CompareOp::NullSafeEq {
        return Some(match (a.is_null(), b.is_null()) {
            (true, true) => true,
            (false, false) => compare_in(collation, a, b) == Some(Ordering::Equal),
            _ => false,
        });
    }
    compare_in(collation, a, b).map(|order| compare_holds(op, order))
}

fn compare_holds(op: CompareOp, order: Ordering) -> bool {
    match op {
        CompareOp::Eq | CompareOp::NullSafeEq => order == Ordering::Equal,
        CompareOp::NotEq => order != Ordering::Equal,
        CompareOp::Lt => order == Ordering::Less,
        CompareOp::LtEq => order != Ordering::Greater,
        CompareOp::Gt => order == Ordering::Greater,
        CompareOp::GtEq => order != Ordering::Less,
    }
}

pub(crate) fn overflow() -> SqlError {
    SqlError::new(1690, "22003", "BIGINT value is out of range")
}

/// Integers stay integers (checked), anything with a DOUBLE or a string goes to DOUBLE,
/// DECIMALs stay exact for + - *; `/` gives DOUBLE here (MySQL: DECIMAL).
pub fn arithmetic(op: ArithmeticOp, a: &Value, b: &Value) -> SqlResult<Value> {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    let integers = |v: &Value| match v {
        Value::Int(n) => Some(i128::from(*n)),
        Value::UInt(n) => Some(i128::from(*n)),
        _ => None,
    };
    if let (Some(x), Some(y)) = (integers(a), integers(b)) {
        let unsigned = matches!(a, Value::UInt(_)) || matches!(b, Value::UInt(_));
        let result = match op {
            ArithmeticOp::Add => x + y,
            ArithmeticOp::Subtract => x - y,
            ArithmeticOp::Multiply => x.checked_mul(y).ok_or_else(overflow)?,
            ArithmeticOp::Divide => {
                return Ok(if y == 0 {
                    Value::Null
                } else {
                    Value::Double(x as f64 / y as f64)
                })
            }
            ArithmeticOp::IntegerDivide | ArithmeticOp::Modulo if y == 0 => return Ok(Value::Null),
            ArithmeticOp::IntegerDivide => x / y,
            ArithmeticOp::Modulo => x % y,
        };
        return integer_result(result, unsigned);
    }
    let decimals = |v: &Value| match v {
        Value::Decimal(d) => Some(*d),
        Value::Int(n) => Some(Decimal {
            unscaled: i128::from(*n),
            scale: 0,
        }),
        Value::UInt(n) => Some(Decimal {
            unscaled: i128::from(*n),
            scale: 0,
        }),
        _ => None,
    };
    if let (Some(x), Some(y)) = (decimals(a), decimals(b)) {
        if matches!(
            op,
            ArithmeticOp::Add | ArithmeticOp::Subtract | ArithmeticOp::Multiply
        ) {
            if let Some(result) = decimal_arithmetic(op, x, y) {
                return Ok(Value::Decimal(result));
            }
        }
    }
    let (x, y) = (to_f64(a).unwrap_or(0.0), to_f64(b).unwrap_or(0.0));
    Ok(match op {
        ArithmeticOp::Add => Value::Double(x + y),
        ArithmeticOp::Subtract => Value::Double(x - y),
        ArithmeticOp::Multiply => Value::Double(x * y),
        _ if y == 0.0 => Value::Null,
        ArithmeticOp::Divide => Value::Double(x / y),
        ArithmeticOp::IntegerDivide => Value::Int((x / y).trunc() as i64),
        ArithmeticOp::Modulo => Value::Double(x % y),
    })
}

fn integer_result(result: i128, unsigned: bool) -> SqlResult<Value> {
    if unsigned {
        u64::try_from(result)
            .map(Value::UInt)
            .map_err(|_| overflow())
    } else {
        i64::try_from(result)
            .map(Value::Int)
            .map_err(|_| overflow())
    }
}

fn decimal_arithmetic(op: ArithmeticOp, x: Decimal, y: Decimal) -> Option<Decimal> {
    let scale = x.scale.max(y.scale);
    let widen = |d: Decimal| {
        d.unscaled
            .checked_mul(10i128.pow(u32::from(scale - d.scale)))
    };
    Some(match op {
        ArithmeticOp::Add => Decimal {
            unscaled: widen(x)?.checked_add(widen(y)?)?,
            scale,
        },
        ArithmeticOp::Subtract => Decimal {
            unscaled: widen(x)?.checked_sub(widen(y)?)?,
            scale,
        },
        ArithmeticOp::Multiply => Decimal {
            unscaled: x.unscaled.checked_mul(y.unscaled)?,
            scale: x.scale.checked_add(y.scale).filter(|&s| s <= 38)?,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_arithmetic_is_exact_and_overflow_is_an_error() {
        let add = arithmetic(ArithmeticOp::Add, &Value::Int(2), &Value::Int(3)).unwrap();
        assert_eq!(add, Value::Int(5));
        let big = arithmetic(
            ArithmeticOp::Multiply,
            &Value::Int(i64::MAX),
            &Value::Int(2),
        );
        assert_eq!(big.unwrap_err().code, 1690);
        let divide = arithmetic(ArithmeticOp::Divide, &Value::Int(1), &Value::Int(0)).unwrap();
        assert_eq!(divide, Value::Null);
        let text = Value::Bytes(b"2".to_vec());
        let mixed = arithmetic(ArithmeticOp::Add, &text, &Value::Int(1)).unwrap();
        assert_eq!(mixed, Value::Double(3.0));
    }
}
