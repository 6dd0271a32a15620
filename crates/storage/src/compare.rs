//! How values order: one rule shared by filters, ordered indexes and the tests' reference
//! models, so a range scan and a filter never disagree about which rows match.
//!
//! Integers compare by value whatever their signedness; FLOAT and DOUBLE by IEEE total order
//! with -0.0 equal to 0.0; strings and binaries byte by byte, or under a collation
//! ([`compare_in`]); calendar types chronologically. NULL compares with nothing (SQL's
//! unknown).

use std::cmp::Ordering;

use crate::types::{Collation, Value};

/// The order of two non-null values of comparable kinds; `None` for NULL or a kind mismatch.
pub fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    use Value::*;
    Some(match (a, b) {
        (Int(_) | UInt(_), Int(_) | UInt(_)) => integer(a).cmp(&integer(b)),
        (Float(x), Float(y)) => total(f64::from(*x), f64::from(*y)),
        (Double(x), Double(y)) => total(*x, *y),
        (Decimal(x), Decimal(y)) if x.scale == y.scale => x.unscaled.cmp(&y.unscaled),
        (Bytes(x), Bytes(y)) => x.cmp(y),
        (Date(x), Date(y)) => x.cmp(y),
        (Time(x), Time(y)) | (Timestamp(x), Timestamp(y)) => x.cmp(y),
        (DateTime(x), DateTime(y)) => x.to_micros().cmp(&y.to_micros()),
        _ => return None,
    })
}

/// [`compare`], with strings compared under `collation` (a text column's).
pub fn compare_in(collation: Collation, a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Bytes(x), Value::Bytes(y)) => Some(collation.compare(x, y)),
        _ => compare(a, b),
    }
}

fn integer(value: &Value) -> i128 {
    match *value {
        Value::Int(n) => i128::from(n),
        Value::UInt(n) => i128::from(n),
        _ => unreachable!("only called on integers"),
    }
}

/// Total order on doubles that treats the two zeros as one value.
pub(crate) fn total(x: f64, y: f64) -> Ordering {
    let zero = |v: f64| if v == 0.0 { 0.0 } else { v };
    zero(x).total_cmp(&zero(y))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Decimal;

    #[test]
    fn integers_compare_by_value_across_signedness() {
        assert_eq!(
            compare(&Value::Int(-1), &Value::UInt(0)),
            Some(Ordering::Less)
        );
        assert_eq!(
            compare(&Value::UInt(u64::MAX), &Value::Int(i64::MAX)),
            Some(Ordering::Greater)
        );
    }

    #[test]
    fn null_and_mismatched_kinds_compare_with_nothing() {
        assert_eq!(compare(&Value::Null, &Value::Null), None);
        assert_eq!(compare(&Value::Int(1), &Value::Null), None);
        assert_eq!(compare(&Value::Int(1), &Value::Bytes(b"1".to_vec())), None);
        let cents = |n| {
            Value::Decimal(Decimal {
                unscaled: n,
                scale: 2,
            })
        };
        let mills = Value::Decimal(Decimal {
            unscaled: 1,
            scale: 3,
        });
        assert_eq!(compare(&cents(1), &mills), None);
        assert_eq!(compare(&cents(1), &cents(2)), Some(Ordering::Less));
    }

    #[test]
    fn the_zeros_are_equal_and_nan_sorts_last() {
        assert_eq!(
            compare(&Value::Double(-0.0), &Value::Double(0.0)),
            Some(Ordering::Equal)
        );
        assert_eq!(
            compare(&Value::Double(f64::NAN), &Value::Double(f64::INFINITY)),
            Some(Ordering::Greater)
        );
    }
}
