//! Text in the plain forms data files hold ('123', '-4.50', '2024-01-02 10:00:00') read as
//! the value [`coerce`](super::coerce) makes of it for a column, without its general
//! parsers and `Value`s on the way: a load converts every field of millions of rows.
//! `None` where the text is in any other form or does not fit the column: `coerce` then
//! decides, with its errors. A property test holds the two to the same values.

use kista_client::types::{integer_range, ColumnType, Value};

use super::parse_decimal_bytes;
use super::{fits_precision, integer_value, parse_canonical_datetime, short_integer_of_text};

/// The value `coerce` gives `text` for a column of `column_type`, when the text is in a
/// plain form: an integer as `-?digits` (18 at most), a decimal as
/// `[-+]?digits[.digits]`, a DATETIME as 'YYYY-MM-DD hh:mm:ss' (whole seconds, which no
/// column's fraction digits round). Always inlined: called, it returned its `Value` through
/// memory that the caller then read back across the callee's narrower stores (a stall
/// each field; as `codec::read_value_ref`).
#[inline(always)]
pub(crate) fn plain_text_value(text: &[u8], column_type: ColumnType) -> Option<Value> {
    match column_type {
        ColumnType::Int { bytes, signed } => {
            let n = i128::from(short_integer_of_text(text)?);
            let (min, max) = integer_range(bytes, signed);
            (min..=max).contains(&n).then(|| integer_value(n, signed))
        }
        ColumnType::Decimal { precision, scale } => {
            let decimal = parse_decimal_bytes(text, scale)?;
            fits_precision(decimal, precision).then_some(Value::Decimal(decimal))
        }
        ColumnType::DateTime => parse_canonical_datetime(text).map(Value::DateTime),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{coerce, round_fraction};
    use proptest::prelude::*;

    const TYPES: [ColumnType; 7] = [
        ColumnType::Int {
            bytes: 1,
            signed: true,
        },
        ColumnType::Int {
            bytes: 2,
            signed: false,
        },
        ColumnType::Int {
            bytes: 8,
            signed: true,
        },
        ColumnType::Int {
            bytes: 8,
            signed: false,
        },
        ColumnType::Decimal {
            precision: 5,
            scale: 2,
        },
        ColumnType::Decimal {
            precision: 20,
            scale: 0,
        },
        ColumnType::DateTime,
    ];

    #[test]
    fn the_plain_forms_of_a_data_file_are_read_here() {
        let read = |text: &str, column_type| plain_text_value(text.as_bytes(), column_type);
        assert_eq!(read("-120", TYPES[0]), Some(Value::Int(-120)));
        assert_eq!(read("65535", TYPES[1]), Some(Value::UInt(65535)));
        assert_eq!(read("-1", TYPES[1]), None, "out of range: coerce's error");
        assert!(read("-4.50", TYPES[4]).is_some());
        assert!(read("2024-01-02 10:00:00", ColumnType::DateTime).is_some());
        assert_eq!(read(" 5", TYPES[2]), None, "not plain: coerce reads it");
    }

    proptest! {
        // Numbers and datetimes in plain forms and near them (signs, points, spaces,
        // exponents, too many digits, impossible dates): where the quick reading gives a
        // value, coerce gives the same, and the column's rounding keeps it.
        #[test]
        fn a_plain_text_is_the_value_coerce_makes_of_it(
            text in "[-+ ]?[0-9]{0,20}(\\.[0-9]{0,4})?(e[0-9])?|[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}",
            type_index in 0..TYPES.len(),
            fraction_digits in 0..=6u8,
        ) {
            let column_type = TYPES[type_index];
            if let Some(quick) = plain_text_value(text.as_bytes(), column_type) {
                let coerced = coerce(&Value::Bytes(text.into_bytes()), column_type, "c");
                let fitted = coerced.map(|value| round_fraction(value, fraction_digits));
                prop_assert_eq!(fitted, Ok(quick));
            }
        }
    }
}
