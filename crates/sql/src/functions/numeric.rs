//! Numeric functions. Integers stay integers where MySQL keeps them (ABS, FLOOR, ROUND of
//! an integer), DECIMALs round exactly, the rest computes in DOUBLE; a result that is not
//! a number (SQRT(-1), LOG(0)) is NULL, as in MySQL.

use kista_client::types::{Decimal, Value};

use super::{strict, FunctionDef, Returns};
use crate::error::SqlResult;
use crate::expr::{arithmetic, ArithmeticOp};
use crate::value::{to_f64, to_i64};

const DOUBLE: kista_client::types::ColumnType = kista_client::types::ColumnType::Double;

/// Functions whose result has their first argument's type, and functions of doubles.
const LIKE_ARGUMENT: Returns = Returns::ArgumentFrom(0);
const DOUBLE_RESULT: Returns = Returns::Type(DOUBLE);

fn double(x: f64) -> SqlResult<Value> {
    Ok(if x.is_finite() {
        Value::Double(x)
    } else {
        Value::Null
    })
}

fn number(v: &Value) -> f64 {
    to_f64(v).unwrap_or(0.0)
}

pub(super) const FUNCTIONS: &[FunctionDef] = &[
    strict(&["abs"], 1..=1, LIKE_ARGUMENT, |v, _| {
        Ok(match &v[0] {
            Value::Int(n) => Value::Int(n.checked_abs().ok_or_else(crate::expr::overflow)?),
            Value::UInt(n) => Value::UInt(*n),
            Value::Decimal(d) => Value::Decimal(Decimal {
                unscaled: d.unscaled.abs(),
                scale: d.scale,
            }),
            other => Value::Double(number(other).abs()),
        })
    }),
    strict(&["floor"], 1..=1, LIKE_ARGUMENT, |v, _| {
        Ok(rounded(&v[0], 0, Rounding::Floor))
    }),
    strict(&["ceil", "ceiling"], 1..=1, LIKE_ARGUMENT, |v, _| {
        Ok(rounded(&v[0], 0, Rounding::Ceil))
    }),
    strict(&["round"], 1..=2, LIKE_ARGUMENT, |v, _| {
        let digits = v.get(1).and_then(to_i64).unwrap_or(0);
        Ok(rounded(&v[0], digits, Rounding::HalfAway))
    }),
    strict(&["truncate"], 2..=2, LIKE_ARGUMENT, |v, _| {
        Ok(rounded(
            &v[0],
            to_i64(&v[1]).unwrap_or(0),
            Rounding::Truncate,
        ))
    }),
    strict(&["mod"], 2..=2, LIKE_ARGUMENT, |v, _| {
        arithmetic(ArithmeticOp::Modulo, &v[0], &v[1])
    }),
    strict(&["sign"], 1..=1, LIKE_ARGUMENT, |v, _| {
        Ok(Value::Int(match number(&v[0]) {
            x if x > 0.0 => 1,
            x if x < 0.0 => -1,
            _ => 0,
        }))
    }),
    strict(&["power", "pow"], 2..=2, DOUBLE_RESULT, |v, _| {
        double(number(&v[0]).powf(number(&v[1])))
    }),
    strict(&["sqrt"], 1..=1, DOUBLE_RESULT, |v, _| {
        double(number(&v[0]).sqrt())
    }),
    strict(&["exp"], 1..=1, DOUBLE_RESULT, |v, _| {
        double(number(&v[0]).exp())
    }),
    strict(&["ln"], 1..=1, DOUBLE_RESULT, |v, _| {
        double(logarithm(number(&v[0]), None))
    }),
    strict(&["log"], 1..=2, DOUBLE_RESULT, |v, _| {
        double(match v {
            [x] => logarithm(number(x), None),
            [base, x] => logarithm(number(x), Some(number(base))),
            _ => f64::NAN,
        })
    }),
    strict(&["log2"], 1..=1, DOUBLE_RESULT, |v, _| {
        double(logarithm(number(&v[0]), Some(2.0)))
    }),
    strict(&["log10"], 1..=1, DOUBLE_RESULT, |v, _| {
        double(logarithm(number(&v[0]), Some(10.0)))
    }),
    strict(&["pi"], 0..=0, DOUBLE_RESULT, |_, _| {
        double(std::f64::consts::PI)
    }),
    strict(&["degrees"], 1..=1, DOUBLE_RESULT, |v, _| {
        double(number(&v[0]).to_degrees())
    }),
    strict(&["radians"], 1..=1, DOUBLE_RESULT, |v, _| {
        double(number(&v[0]).to_radians())
    }),
];

/// The logarithm of `x` (natural without a base); NaN (so NULL) where undefined.
fn logarithm(x: f64, base: Option<f64>) -> f64 {
    if x <= 0.0 {
        return f64::NAN;
    }
    match base {
        None => x.ln(),
        Some(base) if base > 0.0 && base != 1.0 => x.ln() / base.ln(),
        Some(_) => f64::NAN,
    }
}

/// How a value between two integers is rounded.
#[derive(Clone, Copy)]
enum Rounding {
    Floor,
    Ceil,
    /// ROUND: half away from zero.
    HalfAway,
    Truncate,
}

impl Rounding {
    fn of_double(self, x: f64) -> f64 {
        match self {
            Rounding::Floor => x.floor(),
            Rounding::Ceil => x.ceil(),
            Rounding::HalfAway => x.round(),
            Rounding::Truncate => x.trunc(),
        }
    }

    /// What to add to a quotient truncated towards zero, given the remainder left over
    /// from dividing by `divisor` (the remainder has the dividend's sign).
    fn step(self, remainder: i128, divisor: i128) -> i128 {
        match self {
            Rounding::Truncate => 0,
            Rounding::Floor => -i128::from(remainder < 0),
            Rounding::Ceil => i128::from(remainder > 0),
            Rounding::HalfAway if remainder.unsigned_abs() * 2 >= divisor.unsigned_abs() => {
                remainder.signum()
            }
            Rounding::HalfAway => 0,
        }
    }
}

/// `value` rounded to `digits` after the point (before it, when negative). Integers and
/// DECIMALs stay exact; other values round as doubles, and give an integer for 0 digits.
fn rounded(value: &Value, digits: i64, rounding: Rounding) -> Value {
    let digits = digits.clamp(-38, 38);
    match value {
        Value::Int(_) | Value::UInt(_) if digits >= 0 => value.clone(),
        Value::Decimal(d) => rounded_decimal(*d, digits, rounding),
        other => {
            let scale = 10f64.powi(digits as i32);
            let result = rounding.of_double(to_f64(other).unwrap_or(0.0) * scale) / scale;
            if digits == 0 && result.abs() < 9.2e18 {
                Value::Int(result as i64)
            } else {
                Value::Double(result)
            }
        }
    }
}

/// A DECIMAL rounded exactly: its scale becomes `digits` (at least 0).
fn rounded_decimal(d: Decimal, digits: i64, rounding: Rounding) -> Value {
    let target = digits.max(0) as u8;
    if i64::from(d.scale) <= digits {
        return Value::Decimal(d);
    }
    let below_point = if digits < 0 {
        digits.unsigned_abs() as u32
    } else {
        0
    };
    let drop = u32::from(d.scale) - u32::from(target) + below_point;
    let Some(divisor) = 10i128.checked_pow(drop) else {
        return Value::Decimal(Decimal {
            unscaled: 0,
            scale: target,
        });
    };
    let remainder = d.unscaled % divisor;
    let mut unscaled = d.unscaled / divisor + rounding.step(remainder, divisor);
    if below_point > 0 {
        unscaled = unscaled.saturating_mul(10i128.pow(below_point));
    }
    Value::Decimal(Decimal {
        unscaled,
        scale: target,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decimal(unscaled: i128, scale: u8) -> Value {
        Value::Decimal(Decimal { unscaled, scale })
    }

    #[test]
    fn decimals_round_exactly_each_way() {
        let round = |v, digits, r| rounded(&decimal(v, 2), digits, r);
        assert_eq!(round(-150, 0, Rounding::Floor), decimal(-2, 0));
        assert_eq!(round(-150, 0, Rounding::Ceil), decimal(-1, 0));
        assert_eq!(round(-150, 0, Rounding::HalfAway), decimal(-2, 0));
        assert_eq!(round(125, 1, Rounding::HalfAway), decimal(13, 1));
        assert_eq!(round(124, 1, Rounding::HalfAway), decimal(12, 1));
        assert_eq!(round(199, 0, Rounding::Truncate), decimal(1, 0));
        assert_eq!(round(123_450, -2, Rounding::HalfAway), decimal(1200, 0));
        assert_eq!(round(125, 5, Rounding::HalfAway), decimal(125, 2));
    }

    #[test]
    fn integers_stay_and_doubles_round_half_away_from_zero() {
        assert_eq!(rounded(&Value::Int(7), 0, Rounding::Floor), Value::Int(7));
        assert_eq!(
            rounded(&Value::Double(2.5), 0, Rounding::HalfAway),
            Value::Int(3)
        );
        assert_eq!(
            rounded(&Value::Double(-2.5), 0, Rounding::HalfAway),
            Value::Int(-3)
        );
        assert_eq!(
            rounded(&Value::Double(1.25), 1, Rounding::Floor),
            Value::Double(1.2)
        );
    }
}
