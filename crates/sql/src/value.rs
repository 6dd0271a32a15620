//! Values under MySQL's rules: how they print in the text protocol, how strings and
//! numbers convert into each other, how values of different kinds compare, and how a value
//! is made to fit a column (an INSERT's `'0'` into an INT column).

use std::borrow::Cow;
use std::cmp::Ordering;

use kista_client::types::{integer_range, Collation, ColumnType, Date, DateTime, Decimal, Value};

use crate::error::{SqlError, SqlResult};

mod plain_text;
pub(crate) use plain_text::plain_text_value;

/// Writes `value` as the text protocol shows it (NULL is the caller's business).
pub fn write_text(value: &Value, out: &mut Vec<u8>) {
    use std::io::Write;
    match value {
        Value::Null => out.extend_from_slice(b"NULL"),
        Value::Int(n) => {
            let _ = write!(out, "{n}");
        }
        Value::UInt(n) => {
            let _ = write!(out, "{n}");
        }
        Value::Float(x) => {
            let _ = write!(out, "{x}");
        }
        Value::Double(x) => {
            let _ = write!(out, "{x}");
        }
        Value::Decimal(d) => {
            let _ = write!(out, "{d}");
        }
        Value::Bytes(bytes) => out.extend_from_slice(bytes),
        Value::Date(date) => {
            let _ = write!(out, "{:04}-{:02}-{:02}", date.year, date.month, date.day);
        }
        Value::Time(micros) => write_time(*micros, out),
        Value::DateTime(datetime) => write_datetime(*datetime, out),
        Value::Timestamp(micros) => match DateTime::from_micros(*micros) {
            Some(datetime) => write_datetime(datetime, out),
            None => {
                let _ = write!(out, "{micros}");
            }
        },
    }
}

fn write_datetime(datetime: DateTime, out: &mut Vec<u8>) {
    write_text(&Value::Date(datetime.date), out);
    out.push(b' ');
    write_time(datetime.time_us as i64, out);
}

/// [`write_text`], but a TIME, DATETIME or TIMESTAMP shows exactly `digits` of a second
/// (a column's, `DATETIME(3)`: `12:00:00.500`), as MySQL shows a column's values.
pub fn write_text_with_fraction(value: &Value, digits: u8, out: &mut Vec<u8>) {
    use std::io::Write;
    // Only temporal columns have a fraction to show: their values copy cheaply.
    let (whole, fraction_us) = match round_fraction(value.clone(), digits) {
        Value::Time(us) => (
            Value::Time(us - us % 1_000_000),
            us.unsigned_abs() % 1_000_000,
        ),
        Value::Timestamp(us) => {
            let fraction = us.rem_euclid(1_000_000);
            (Value::Timestamp(us - fraction), fraction as u64)
        }
        Value::DateTime(datetime) => {
            let fraction = datetime.time_us % 1_000_000;
            let time_us = datetime.time_us - fraction;
            (
                Value::DateTime(DateTime {
                    time_us,
                    ..datetime
                }),
                fraction,
            )
        }
        other => return write_text(&other, out),
    };
    write_text(&whole, out);
    if digits > 0 {
        let shown = fraction_us / 10u64.pow(6 - u32::from(digits));
        let _ = write!(out, ".{shown:0width$}", width = usize::from(digits));
    }
}

/// A TIME, DATETIME or TIMESTAMP rounded to `digits` of a second (half away from zero,
/// as MySQL stores a value in a column of fewer digits); other values as they are.
#[inline]
pub fn round_fraction(value: Value, digits: u8) -> Value {
    let temporal = matches!(
        value,
        Value::Time(_) | Value::Timestamp(_) | Value::DateTime(_)
    );
    if digits >= 6 || !temporal {
        return value; // every column of every row a load converts passes here
    }
    let unit = 10i64.pow(6 - u32::from(digits));
    let round = |micros: i64| {
        let half = if micros < 0 { -unit / 2 } else { unit / 2 };
        (micros + half) / unit * unit
    };
    match value {
        Value::Time(micros) => Value::Time(round(micros)),
        Value::Timestamp(micros) => Value::Timestamp(round(micros)),
        // A day is whole units, so only the time of day can need rounding; a time that
        // needs none (most: every row of a load) skips the trip through the calendar.
        Value::DateTime(datetime) if datetime.time_us % unit.unsigned_abs() == 0 => {
            Value::DateTime(datetime)
        }
        Value::DateTime(datetime) => DateTime::from_micros(round(datetime.to_micros()))
            .map_or(Value::DateTime(datetime), Value::DateTime),
        other => other,
    }
}

fn write_time(micros: i64, out: &mut Vec<u8>) {
    use std::io::Write;
    let sign = if micros < 0 { "-" } else { "" };
    let magnitude = micros.unsigned_abs();
    let seconds = magnitude / 1_000_000;
    let fraction = magnitude % 1_000_000;
    let _ = write!(
        out,
        "{sign}{:02}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    );
    if fraction != 0 {
        let _ = write!(out, ".{fraction:06}");
    }
}

/// The value as text, borrowed when it is text already (to parse it: no copy).
fn text_of(value: &Value) -> Cow<'_, [u8]> {
    match value {
        Value::Bytes(bytes) => Cow::Borrowed(bytes),
        other => Cow::Owned(to_text(other)),
    }
}

/// The value as text (for string functions and comparisons with strings).
pub fn to_text(value: &Value) -> Vec<u8> {
    match value {
        Value::Bytes(bytes) => bytes.clone(),
        other => {
            let mut out = Vec::new();
            write_text(other, &mut out);
            out
        }
    }
}

/// The value as a number, as MySQL reads one: strings by their longest numeric prefix
/// ('12abc' is 12, 'abc' is 0), dates as YYYYMMDD.
pub fn to_f64(value: &Value) -> Option<f64> {
    Some(match value {
        Value::Null => return None,
        Value::Int(n) => *n as f64,
        Value::UInt(n) => *n as f64,
        Value::Float(x) => f64::from(*x),
        Value::Double(x) => *x,
        Value::Decimal(d) => d.unscaled as f64 / 10f64.powi(i32::from(d.scale)),
        Value::Bytes(bytes) => numeric_prefix(bytes),
        Value::Date(d) => f64::from(d.year) * 1e4 + f64::from(d.month) * 100.0 + f64::from(d.day),
        Value::Time(micros) | Value::Timestamp(micros) => *micros as f64 / 1e6,
        Value::DateTime(dt) => dt.to_micros() as f64 / 1e6,
    })
}

/// The value as a signed integer (rounded, saturating), `None` for NULL.
pub fn to_i64(value: &Value) -> Option<i64> {
    match value {
        Value::Int(n) => Some(*n),
        Value::UInt(n) => Some(i64::try_from(*n).unwrap_or(i64::MAX)),
        other => to_f64(other).map(|x| x.round() as i64),
    }
}

fn numeric_prefix(bytes: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_start();
    let mut end = 0;
    let mut seen_digit = false;
    let mut seen_point = false;
    let mut seen_exponent = false;
    let chars: Vec<char> = text.chars().collect();
    while end < chars.len() {
        let c = chars[end];
        let ok = match c {
            '0'..='9' => {
                seen_digit = true;
                true
            }
            '+' | '-' => end == 0 || matches!(chars[end - 1], 'e' | 'E'),
            '.' if !seen_point && !seen_exponent => {
                seen_point = true;
                true
            }
            'e' | 'E' if seen_digit && !seen_exponent => {
                seen_exponent = true;
                true
            }
            _ => false,
        };
        if !ok {
            break;
        }
        end += 1;
    }
    let prefix: String = chars[..end].iter().collect();
    let prefix = prefix.trim_end_matches(['e', 'E', '+', '-']);
    prefix.parse().unwrap_or(0.0)
}

/// Whether the value counts as true in a condition (`None`: NULL, unknown).
pub fn truth(value: &Value) -> Option<bool> {
    match value {
        Value::Null => None,
        Value::Int(n) => Some(*n != 0),
        Value::UInt(n) => Some(*n != 0),
        other => to_f64(other).map(|x| x != 0.0),
    }
}

fn is_numeric(value: &Value) -> bool {
    matches!(
        value,
        Value::Int(_) | Value::UInt(_) | Value::Float(_) | Value::Double(_) | Value::Decimal(_)
    )
}

/// Whether two values are the same, NULL matching NULL (as DISTINCT and keys see it).
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a.is_null(), b.is_null()) {
        (true, true) => true,
        (false, false) => compare(a, b) == Some(Ordering::Equal),
        _ => false,
    }
}

/// [`same_value`] column by column.
pub fn same_values(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
}

/// [`compare`], with two strings compared under `collation`.
pub fn compare_in(collation: Collation, a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Bytes(x), Value::Bytes(y)) => Some(collation.compare(x, y)),
        _ => compare(a, b),
    }
}

/// MySQL's comparison of two values: same kinds directly; numbers with anything as
/// numbers; strings with dates as dates; `None` if either is NULL.
pub fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    if a.is_null() || b.is_null() {
        return None;
    }
    if let Some(order) = kista_client::compare::compare(a, b) {
        return Some(order);
    }
    match (a, b) {
        (Value::Bytes(_), Value::Bytes(_)) => None,
        (Value::Decimal(x), Value::Decimal(y)) => Some(compare_decimals(*x, *y)),
        (text @ Value::Bytes(_), other) | (other, text @ Value::Bytes(_)) if !is_numeric(other) => {
            let parsed = coerce(text, kind_of(other), "")
                .ok()
                .filter(|v| !v.is_null())?;
            let order = kista_client::compare::compare(&parsed, other)?;
            Some(if matches!(a, Value::Bytes(_)) {
                order
            } else {
                order.reverse()
            })
        }
        _ => to_f64(a)?.partial_cmp(&to_f64(b)?),
    }
}

fn compare_decimals(x: Decimal, y: Decimal) -> Ordering {
    let scale = x.scale.max(y.scale);
    let widen = |d: Decimal| {
        d.unscaled
            .saturating_mul(10i128.pow(u32::from(scale - d.scale)))
    };
    widen(x).cmp(&widen(y))
}

/// A column type of the value's own kind, for converting strings to it.
fn kind_of(value: &Value) -> ColumnType {
    match value {
        Value::Date(_) => ColumnType::Date,
        Value::Time(_) => ColumnType::Time,
        Value::DateTime(_) => ColumnType::DateTime,
        Value::Timestamp(_) => ColumnType::Timestamp,
        _ => ColumnType::Double,
    }
}

/// Makes `value` fit a column of `column_type` as MySQL's strict mode does: numbers from
/// numeric strings, strings from numbers, dates from 'YYYY-MM-DD[ hh:mm:ss[.ffffff]]';
/// an error naming `column` when it cannot (out of range, not a number, too long).
pub fn coerce(value: &Value, column_type: ColumnType, column: &str) -> SqlResult<Value> {
    if value.is_null() {
        return Ok(Value::Null);
    }
    match column_type {
        ColumnType::Int { bytes, signed } => coerce_integer(value, bytes, signed, column),
        ColumnType::Float => match number_of(value, "double", column)? {
            x if x.abs() > f64::from(f32::MAX) => Err(SqlError::out_of_range(column)),
            x => Ok(Value::Float(x as f32)),
        },
        ColumnType::Double => Ok(Value::Double(number_of(value, "double", column)?)),
        ColumnType::Decimal { precision, scale } => coerce_decimal(value, precision, scale, column),
        ColumnType::Char { .. }
        | ColumnType::Binary { .. }
        | ColumnType::VarChar { .. }
        | ColumnType::VarBinary { .. }
        | ColumnType::Text { .. }
        | ColumnType::Blob => {
            let bytes = to_text(value);
            check_text(column_type, &bytes, column)?;
            Ok(Value::Bytes(bytes))
        }
        ColumnType::Date => match value {
            Value::Date(_) => Ok(value.clone()),
            Value::DateTime(dt) => Ok(Value::Date(dt.date)),
            other => parse_datetime(&text_of(other))
                .map(|dt| Value::Date(dt.date))
                .ok_or_else(|| wrong("date", other, column)),
        },
        ColumnType::DateTime => match value {
            Value::DateTime(_) => Ok(value.clone()),
            Value::Date(d) => Ok(Value::DateTime(DateTime {
                date: *d,
                time_us: 0,
            })),
            other => parse_datetime(&text_of(other))
                .map(Value::DateTime)
                .ok_or_else(|| wrong("datetime", other, column)),
        },
        ColumnType::Timestamp => match value {
            Value::Timestamp(_) => Ok(value.clone()),
            Value::DateTime(dt) => Ok(Value::Timestamp(dt.to_micros())),
            other => parse_datetime(&text_of(other))
                .map(|dt| Value::Timestamp(dt.to_micros()))
                .ok_or_else(|| wrong("datetime", other, column)),
        },
        ColumnType::Time => match value {
            Value::Time(_) => Ok(value.clone()),
            other => parse_time(&text_of(other))
                .map(Value::Time)
                .ok_or_else(|| wrong("time", other, column)),
        },
    }
}

/// Whether `text` goes into a column of string type `column_type` as it is: it fits
/// ([`check_text_fits`]) and its characters are the column's ([`check_characters`]).
pub(crate) fn check_text(column_type: ColumnType, text: &[u8], column: &str) -> SqlResult<()> {
    check_text_fits(column_type, text, column)?;
    check_characters(column_type, text, column)
}

/// Whether `text` fits a column of string type `column_type` as it is (error 1406 where
/// it is longer than the column's length): all [`coerce`] asks of text for such a column.
pub(crate) fn check_text_fits(column_type: ColumnType, text: &[u8], column: &str) -> SqlResult<()> {
    let length_max = match column_type {
        ColumnType::Char { length, .. } | ColumnType::Binary { length } => usize::from(length),
        ColumnType::VarChar { max_length, .. } | ColumnType::VarBinary { max_length } => {
            max_length as usize
        }
        _ => usize::MAX,
    };
    if text.len() > length_max {
        return Err(SqlError::data_too_long(column));
    }
    Ok(())
}

/// Whether `text` is valid in the character set of a column of `column_type` (every
/// character column is utf8mb4): MySQL's strict mode refuses any other (1366), naming the
/// first bytes that are not, as `\xFF\x10`.
pub(crate) fn check_characters(
    column_type: ColumnType,
    text: &[u8],
    column: &str,
) -> SqlResult<()> {
    let collation = match column_type {
        ColumnType::Char { collation, .. }
        | ColumnType::VarChar { collation, .. }
        | ColumnType::Text { collation } => collation,
        _ => return Ok(()),
    };
    if collation == Collation::binary {
        return Ok(());
    }
    let Err(error) = std::str::from_utf8(text) else {
        return Ok(());
    };
    let bad = &text[error.valid_up_to()..];
    let shown: String = bad.iter().take(6).map(|b| format!("\\x{b:02X}")).collect();
    Err(SqlError::wrong_value("string", &shown, column))
}

/// `bytes` as hex digits, two a byte (`HEX()`, `X'..'` literals).
pub(crate) fn hex_digits(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut digits = String::with_capacity(2 * bytes.len());
    for byte in bytes {
        let _ = write!(digits, "{byte:02X}");
    }
    digits
}

/// What a lenient load (`LOAD DATA LOCAL`, or with IGNORE) keeps of a `value` that
/// [`coerce`] refused for a column of `column_type`, as MySQL does outside strict mode: the
/// closest value the column holds, and the warning that says so. A number out of range is
/// clipped to the column's limit (1264); a string with a number at its start gives that
/// number (1265, data truncated), one with none gives 0 (1366); a string too long is cut to
/// the column's length (1265). `None` where Kista has no such value (a date that is not
/// one: MySQL's would be the zero date).
pub fn closest_fit(
    value: &Value,
    column_type: ColumnType,
    column: &str,
) -> Option<(Value, SqlError)> {
    let cut_to = |max_bytes: usize| {
        let text = to_text(value);
        // Bytes a text column cannot hold become '?', as MySQL's lenient mode makes them.
        if let Err(invalid) = check_characters(column_type, &text, column) {
            let mut replaced = Vec::with_capacity(text.len());
            for chunk in text.utf8_chunks() {
                replaced.extend_from_slice(chunk.valid().as_bytes());
                if !chunk.invalid().is_empty() {
                    replaced.push(b'?');
                }
            }
            let text = cut(replaced, max_bytes, column_type);
            return Some((Value::Bytes(text), invalid));
        }
        let text = cut(text, max_bytes, column_type);
        Some((Value::Bytes(text), SqlError::data_truncated(column)))
    };
    match column_type {
        ColumnType::Char { length, .. } | ColumnType::Binary { length } => {
            return cut_to(usize::from(length))
        }
        ColumnType::VarChar { max_length, .. } | ColumnType::VarBinary { max_length } => {
            return cut_to(max_length as usize)
        }
        ColumnType::Text { .. } | ColumnType::Blob => return cut_to(usize::MAX),
        _ => {}
    }
    let (number, warning) = match value {
        Value::Bytes(text) => match leading_number(text) {
            Some((number, true)) => (number, SqlError::out_of_range(column)),
            Some((number, false)) => (number, SqlError::data_truncated(column)),
            None => (0.0, wrong(number_kind(column_type), value, column)),
        },
        other => (to_f64(other)?, SqlError::out_of_range(column)),
    };
    let fitted = match column_type {
        ColumnType::Int { bytes, signed } => {
            let (min, max) = integer_range(bytes, signed);
            integer_value((number.round() as i128).clamp(min, max), signed)
        }
        ColumnType::Float => {
            Value::Float(number.clamp(f64::from(f32::MIN), f64::from(f32::MAX)) as f32)
        }
        ColumnType::Double => Value::Double(number),
        ColumnType::Decimal { precision, scale } => {
            let limit = (POWERS_OF_TEN.get(usize::from(precision))).map_or(i128::MAX, |p| p - 1);
            // So that its unscaled form fits an i128; clipped to the column below.
            let bound = 1e37 / 10f64.powi(i32::from(scale));
            let bounded = number.clamp(-bound, bound);
            let exact = parse_decimal(&format!("{bounded:.*}", usize::from(scale)), scale)?;
            Value::Decimal(Decimal {
                unscaled: exact.unscaled.clamp(-limit, limit),
                scale,
            })
        }
        _ => return None,
    };
    Some((fitted, warning))
}

/// MySQL's implicit default of a column of `column_type` (what a lenient load puts for NULL
/// in a NOT NULL column): 0, or the empty string; `None` for the temporal types (theirs is
/// the zero date, which Kista does not have).
pub fn implicit_default(column_type: ColumnType) -> Option<Value> {
    closest_fit(&Value::Bytes(Vec::new()), column_type, "").map(|(value, _)| value)
}

/// The number a text starts with (after spaces: a sign, digits, a fraction, an exponent),
/// and whether nothing but spaces follows it; `None` when it starts with none.
fn leading_number(text: &[u8]) -> Option<(f64, bool)> {
    let start = text.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let rest = &text[start..];
    let digits_from = |at: usize| {
        rest[at.min(rest.len())..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let mut end = usize::from(matches!(rest.first(), Some(b'+' | b'-')));
    let whole_digits = digits_from(end);
    end += whole_digits;
    let mut fraction_digits = 0;
    if rest.get(end) == Some(&b'.') {
        fraction_digits = digits_from(end + 1);
        end += 1 + fraction_digits;
    }
    if whole_digits + fraction_digits == 0 {
        return None;
    }
    if matches!(rest.get(end), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(rest.get(end + 1), Some(b'+' | b'-')));
        let exponent_digits = digits_from(end + 1 + sign);
        if exponent_digits > 0 {
            end += 1 + sign + exponent_digits;
        }
    }
    let number = std::str::from_utf8(&rest[..end])
        .ok()?
        .parse::<f64>()
        .ok()?;
    let only_spaces_after = rest[end..].iter().all(u8::is_ascii_whitespace);
    Some((number, only_spaces_after))
}

/// `text` cut to at most `max_bytes`, at a character's start for a text column.
fn cut(mut text: Vec<u8>, max_bytes: usize, column_type: ColumnType) -> Vec<u8> {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    if matches!(
        column_type,
        ColumnType::Char { .. } | ColumnType::VarChar { .. }
    ) {
        while end > 0 && (text[end] & 0xC0) == 0x80 {
            end -= 1;
        }
    }
    text.truncate(end);
    text
}

/// `value` as a value of `column_type` that compares equal to it, if there is one: a key
/// or a bound the data nodes may use in its place (`'7'` for an INT column is 7; `7.5` or
/// `'abc'` have none, and MySQL compares those as numbers, so the front end must).
pub fn fit_exactly(value: &Value, column_type: ColumnType) -> Option<Value> {
    let fitted = coerce(value, column_type, "").ok()?;
    (!fitted.is_null() && compare(&fitted, value) == Some(Ordering::Equal)).then_some(fitted)
}

fn wrong(kind: &str, value: &Value, column: &str) -> SqlError {
    let text = String::from_utf8_lossy(&to_text(value)).into_owned();
    SqlError::wrong_value(kind, &text, column)
}

/// A number from a number, or from a string that is wholly one (strict mode, as MySQL's):
/// a string that only begins with one ('1x') is data truncated (1265), one that is none
/// (`kind` names what it is not: 'integer', 'double') an incorrect value (1366), and one
/// too large for a double out of range (1264). Rust's own parser is not asked: it reads
/// 'inf' and 'NaN', which no column holds.
fn number_of(value: &Value, kind: &str, column: &str) -> SqlResult<f64> {
    match value {
        Value::Bytes(text) => match leading_number(text) {
            Some((number, true)) if number.is_finite() => Ok(number),
            Some((_, true)) => Err(SqlError::out_of_range(column)),
            Some((_, false)) => Err(SqlError::data_truncated(column)),
            None => Err(wrong(kind, value, column)),
        },
        other => to_f64(other).ok_or_else(|| wrong(kind, other, column)),
    }
}

/// The strict-mode error for text that a parser of `kind` refused: data truncated (1265)
/// where a number begins it but does not make all of it, else an incorrect value (1366).
fn not_a_number(kind: &str, value: &Value, column: &str) -> SqlError {
    match value {
        Value::Bytes(text) if matches!(leading_number(text), Some((_, false))) => {
            SqlError::data_truncated(column)
        }
        _ => wrong(kind, value, column),
    }
}

/// How error 1366 names the kind of number a column of `column_type` holds.
fn number_kind(column_type: ColumnType) -> &'static str {
    match column_type {
        ColumnType::Float | ColumnType::Double => "double",
        ColumnType::Decimal { .. } => "decimal",
        _ => "integer",
    }
}

/// `n` (within the column's limits) as an integer column's value.
fn integer_value(n: i128, signed: bool) -> Value {
    match signed {
        true => Value::Int(n as i64),
        false => Value::UInt(n as u64),
    }
}

fn coerce_integer(value: &Value, bytes: u8, signed: bool, column: &str) -> SqlResult<Value> {
    let (min, max) = integer_range(bytes, signed);
    let n: i128 = match value {
        Value::Int(n) => i128::from(*n),
        Value::UInt(n) => i128::from(*n),
        Value::Bytes(text) if text.iter().all(|b| b.is_ascii_digit() || *b == b'-') => {
            integer_of_text(text).ok_or_else(|| not_a_number("integer", value, column))?
        }
        other => {
            let x = number_of(other, "integer", column)?.round();
            if !x.is_finite() || x.abs() > 1.8e19 {
                return Err(SqlError::out_of_range(column));
            }
            x as i128
        }
    };
    if !(min..=max).contains(&n) {
        return Err(SqlError::out_of_range(column));
    }
    Ok(integer_value(n, signed))
}

/// Text of digits and minus signs (every integer field of a load) as the integer it
/// spells, if it spells one: `-?digits`. Up to 18 digits, which no i64 overflows, are
/// read without the general parser.
fn integer_of_text(text: &[u8]) -> Option<i128> {
    match short_integer_of_text(text) {
        Some(n) => Some(i128::from(n)),
        // ASCII throughout: valid UTF-8, read in place.
        None => std::str::from_utf8(text).ok()?.parse().ok(),
    }
}

/// `-?digits` with 1 to 18 digits (no i64 overflows) as the integer it spells; `None` for
/// any other text.
fn short_integer_of_text(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let magnitude = digits_value(digits);
    Some(if negative { -magnitude } else { magnitude })
}

/// The value of at most 18 ASCII digits.
fn digits_value(digits: &[u8]) -> i64 {
    debug_assert!(digits.len() <= 18 && digits.iter().all(u8::is_ascii_digit));
    (digits.iter()).fold(0, |n, digit| n * 10 + i64::from(digit - b'0'))
}

fn coerce_decimal(value: &Value, precision: u8, scale: u8, column: &str) -> SqlResult<Value> {
    let text: Cow<str> = match value {
        Value::Decimal(d) => d.to_string().into(),
        Value::Int(n) => n.to_string().into(),
        Value::UInt(n) => n.to_string().into(),
        // Valid UTF-8 (every decimal field of a load) is read in place.
        Value::Bytes(b) => match std::str::from_utf8(b) {
            Ok(text) => text.trim().into(),
            Err(_) => String::from_utf8_lossy(b).trim().to_string().into(),
        },
        other => format!("{:.*}", usize::from(scale), to_f64(other).unwrap_or(0.0)).into(),
    };
    let decimal = (parse_decimal(&text, scale))
        .or_else(|| parse_decimal(&without_exponent(&text)?, scale))
        .ok_or_else(|| not_a_number("decimal", value, column))?;
    if !fits_precision(decimal, precision) {
        return Err(SqlError::out_of_range(column));
    }
    Ok(Value::Decimal(decimal))
}

/// Powers of ten an i128 holds: 10^0 to 10^38.
const POWERS_OF_TEN: [i128; 39] = {
    let mut powers = [1i128; 39];
    let mut i = 1;
    while i < powers.len() {
        powers[i] = powers[i - 1] * 10;
        i += 1;
    }
    powers
};

/// Whether `decimal` has at most `precision` digits (any i128 fits 39 or more).
fn fits_precision(decimal: Decimal, precision: u8) -> bool {
    POWERS_OF_TEN
        .get(usize::from(precision))
        .is_none_or(|&limit| decimal.unscaled.abs() < limit)
}

/// Exponents past which a decimal in scientific notation is not written out (no DECIMAL
/// has more than 65 digits).
const DECIMAL_EXPONENT_MAX: usize = 80;

/// A decimal in scientific notation ('[-]digits[.digits]e[+-]digits', as MySQL takes for a
/// DECIMAL) as the plain text [`parse_decimal`] reads: exact, where a double would round
/// ('1.005e0' is 1.01 at scale 2, as 1.005 is).
fn without_exponent(text: &str) -> Option<String> {
    let (mantissa, exponent) = text.split_once(['e', 'E'])?;
    let exponent: i64 = exponent.parse().ok()?;
    if exponent.unsigned_abs() as usize > DECIMAL_EXPONENT_MAX {
        return None;
    }
    let (sign, unsigned) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa.strip_prefix('+').unwrap_or(mantissa)),
    };
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let digits = format!("{whole}{fraction}");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Where the point goes among the digits.
    let point = whole.len() as i64 + exponent;
    Some(if point <= 0 {
        format!(
            "{sign}0.{}{digits}",
            "0".repeat(point.unsigned_abs() as usize)
        )
    } else if point as usize >= digits.len() {
        format!(
            "{sign}{digits}{}",
            "0".repeat(point as usize - digits.len())
        )
    } else {
        let (before, after) = digits.split_at(point as usize);
        format!("{sign}{before}.{after}")
    })
}

/// '[-]digits[.digits]' at `scale`, rounding half away from zero.
pub fn parse_decimal(text: &str, scale: u8) -> Option<Decimal> {
    parse_decimal_bytes(text.as_bytes(), scale)
}

/// [`parse_decimal`] of text as bytes: every decimal field of a load passes here, and
/// `str`'s pattern searches cost more than the digits.
fn parse_decimal_bytes(text: &[u8], scale: u8) -> Option<Decimal> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, text),
    };
    let (whole, fraction) = match digits.iter().position(|&b| b == b'.') {
        Some(point) => (&digits[..point], &digits[point + 1..]),
        None => (digits, &[][..]),
    };
    if whole.is_empty() && fraction.is_empty()
        || !whole.iter().chain(fraction).all(u8::is_ascii_digit)
        || whole.len() > 38
    {
        return None;
    }
    let scale_digits = usize::from(scale);
    let rounds_up = fraction.get(scale_digits).is_some_and(|&b| b >= b'5');
    let mut unscaled: i128 = if whole.len() + scale_digits <= 18 {
        // Every digit kept, and the one rounding adds, fit an i64 (a load's decimals).
        let mut kept = digits_value(whole);
        for position in 0..scale_digits {
            kept = kept * 10 + fraction.get(position).map_or(0, |b| i64::from(b - b'0'));
        }
        i128::from(kept + i64::from(rounds_up))
    } else {
        // Only ASCII digits: valid UTF-8.
        let whole = std::str::from_utf8(whole).ok()?;
        let mut unscaled: i128 = if whole.is_empty() {
            0
        } else {
            whole.parse().ok()?
        };
        for position in 0..scale_digits {
            let digit = fraction.get(position).map_or(0, |b| i128::from(b - b'0'));
            unscaled = unscaled.checked_mul(10)?.checked_add(digit)?;
        }
        unscaled.checked_add(i128::from(rounds_up))?
    };
    if negative {
        unscaled = -unscaled;
    }
    Some(Decimal { unscaled, scale })
}

/// 'YYYY-MM-DD', 'YYYY-MM-DD hh:mm:ss[.ffffff]' (or with 'T').
pub fn parse_datetime(bytes: &[u8]) -> Option<DateTime> {
    parse_canonical_datetime(bytes).or_else(|| parse_any_datetime(bytes))
}

/// 'YYYY-MM-DD hh:mm:ss', the form dumps and data files hold, read at fixed places (a
/// load converts millions); `None` for any other form, which [`parse_any_datetime`]
/// reads as it would this one.
fn parse_canonical_datetime(bytes: &[u8]) -> Option<DateTime> {
    let text: &[u8; 19] = bytes.try_into().ok()?;
    let separators = [(4, b'-'), (7, b'-'), (10, b' '), (13, b':'), (16, b':')];
    if separators.iter().any(|&(at, byte)| text[at] != byte) {
        return None;
    }
    let number = |from: usize, to: usize| {
        text[from..to].iter().try_fold(0u32, |n, &digit| {
            digit
                .is_ascii_digit()
                .then(|| n * 10 + u32::from(digit - b'0'))
        })
    };
    let date = Date::new(
        u16::try_from(number(0, 4)?).ok()?,
        u8::try_from(number(5, 7)?).ok()?,
        u8::try_from(number(8, 10)?).ok()?,
    )?;
    let (hours, minutes, seconds) = (number(11, 13)?, number(14, 16)?, number(17, 19)?);
    if minutes > 59 || seconds > 59 {
        return None;
    }
    let seconds_of_day = u64::from((hours * 60 + minutes) * 60 + seconds);
    DateTime::new(date, seconds_of_day * 1_000_000)
}

fn parse_any_datetime(bytes: &[u8]) -> Option<DateTime> {
    let text = std::str::from_utf8(bytes).ok()?.trim();
    let (date, time) = match text.split_once([' ', 'T']) {
        Some((date, time)) => (date, Some(time)),
        None => (text, None),
    };
    let mut parts = date.splitn(3, '-');
    let year = parts.next()?.parse().ok()?;
    let month = parts.next()?.parse().ok()?;
    let day = parts.next()?.parse().ok()?;
    let date = Date::new(year, month, day)?;
    let time_us = match time {
        Some(time) => {
            let micros = parse_time(time.as_bytes())?;
            u64::try_from(micros).ok()?
        }
        None => 0,
    };
    DateTime::new(date, time_us)
}

/// '[-]hh:mm:ss[.ffffff]' as signed microseconds.
pub fn parse_time(bytes: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(bytes).ok()?.trim();
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (clock, fraction) = text.split_once('.').unwrap_or((text, ""));
    let mut parts = clock.splitn(3, ':');
    let hours: i64 = parts.next()?.parse().ok()?;
    let minutes: i64 = parts.next().unwrap_or("0").parse().ok()?;
    let seconds: i64 = parts.next().unwrap_or("0").parse().ok()?;
    if minutes > 59 || seconds > 59 || fraction.len() > 6 {
        return None;
    }
    let fraction: i64 = if fraction.is_empty() {
        0
    } else {
        format!("{fraction:0<6}").parse().ok()?
    };
    let micros = ((hours * 60 + minutes) * 60 + seconds) * 1_000_000 + fraction;
    Some(if negative { -micros } else { micros })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(value: &Value) -> String {
        let mut out = Vec::new();
        write_text(value, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_decimal_of_any_precision_is_checked_without_overflow() {
        // An expression's DECIMAL has a precision of 65, past what an i128's powers of ten
        // reach: every i128 fits it.
        let wide = ColumnType::Decimal {
            precision: 65,
            scale: 2,
        };
        let big = Value::Bytes(b"99999999999999999999999999999999999.5".to_vec());
        assert!(coerce(&big, wide, "c").is_ok());
        let text = Value::Bytes(b"12x".to_vec());
        assert!(closest_fit(&text, wide, "c").is_some());
        let narrow = ColumnType::Decimal {
            precision: 3,
            scale: 1,
        };
        assert!(coerce(&Value::Bytes(b"99.9".to_vec()), narrow, "c").is_ok());
        assert!(coerce(&Value::Bytes(b"100.0".to_vec()), narrow, "c").is_err());
    }

    #[test]
    fn integer_text_reads_as_the_general_parser_reads_it() {
        let mut cases: Vec<String> = ["", "-", "--1", "1-2", "-0", "007", "-9"]
            .map(String::from)
            .to_vec();
        for digits in 1..=40 {
            let nines = "9".repeat(digits);
            cases.extend([
                nines.clone(),
                format!("-{nines}"),
                format!("1{}", "0".repeat(digits)),
            ]);
        }
        cases.push(i64::MAX.to_string());
        cases.push(i128::MIN.to_string());
        for case in cases {
            let general = case.parse::<i128>().ok();
            assert_eq!(integer_of_text(case.as_bytes()), general, "{case:?}");
        }
    }

    #[test]
    fn decimals_of_any_number_of_whole_digits_read_alike() {
        // Up to 36: two fraction digits more still fit an i128.
        for digits in 1..=36 {
            let whole = "7".repeat(digits);
            let decimal = parse_decimal(&format!("-{whole}.125"), 2).unwrap();
            let expected = -(whole.parse::<i128>().unwrap() * 100 + 13);
            assert_eq!(decimal.unscaled, expected, "{digits} digits");
        }
        assert_eq!(parse_decimal(&"9".repeat(39), 0), None, "past 38 digits");
        // Either side of 18 digits kept, rounding up or not, with or without a whole part.
        let cases = [
            ("999999999999999.9995", 3, 999_999_999_999_999_999_i128 + 1),
            ("9999999999999999.9995", 3, 9_999_999_999_999_999_999 + 1),
            ("-.125", 2, -13),
            (".5", 0, 1),
            ("12", 4, 120_000),
            ("1.2", 0, 1),
        ];
        for (text, scale, unscaled) in cases {
            assert_eq!(
                parse_decimal(text, scale).map(|d| d.unscaled),
                Some(unscaled),
                "{text}"
            );
        }
    }

    /// The reading of decimal text before it went by bytes: every string of up to six of
    /// `-+.059` reads alike at scales 0 to 3.
    #[test]
    fn decimal_text_reads_as_it_read_by_str() {
        fn by_str(text: &str, scale: u8) -> Option<Decimal> {
            let (negative, digits) = match text.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, text.strip_prefix('+').unwrap_or(text)),
            };
            let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
            let all_digits = whole
                .bytes()
                .chain(fraction.bytes())
                .all(|b| b.is_ascii_digit());
            if whole.is_empty() && fraction.is_empty() || !all_digits || whole.len() > 38 {
                return None;
            }
            let mut unscaled: i128 = if whole.is_empty() {
                0
            } else {
                whole.parse().ok()?
            };
            let fraction = fraction.as_bytes();
            for position in 0..usize::from(scale) {
                let digit = fraction.get(position).map_or(0, |b| i128::from(b - b'0'));
                unscaled = unscaled.checked_mul(10)?.checked_add(digit)?;
            }
            if fraction.get(usize::from(scale)).is_some_and(|&b| b >= b'5') {
                unscaled = unscaled.checked_add(1)?;
            }
            let unscaled = if negative { -unscaled } else { unscaled };
            Some(Decimal { unscaled, scale })
        }
        let alphabet = b"-+.059";
        let (mut texts, mut of_length) = (vec![String::new()], vec![String::new()]);
        for _ in 0..6 {
            of_length = (of_length.iter())
                .flat_map(|t| alphabet.iter().map(move |&c| format!("{t}{}", c as char)))
                .collect();
            texts.extend(of_length.iter().cloned());
        }
        for text in &texts {
            for scale in 0..=3 {
                assert_eq!(
                    parse_decimal(text, scale),
                    by_str(text, scale),
                    "{text:?} at {scale}"
                );
            }
        }
    }

    #[test]
    fn values_print_as_mysql_prints_them() {
        assert_eq!(text(&Value::Int(-5)), "-5");
        let decimal = Value::Decimal(Decimal {
            unscaled: -1234,
            scale: 2,
        });
        assert_eq!(text(&decimal), "-12.34");
        let datetime = parse_datetime(b"2024-02-29 13:05:09.5").unwrap();
        for canonical in [
            &b"2024-02-29 13:05:09"[..],
            b"0001-01-01 00:00:00",
            b"9999-12-31 23:59:59",
            b"2023-02-29 10:00:00",
            b"2024-13-01 10:00:00",
            b"2024-01-01 24:00:00",
            b"2024-01-01 10:60:00",
            b"2024-01-01 10:00:60",
            b"0000-01-01 10:00:00",
            b"2024-01-01T10:00:00",
            b"2024-0a-01 10:00:00",
            b"+024-01-01 10:00:00",
        ] {
            assert_eq!(
                parse_canonical_datetime(canonical).or_else(|| parse_any_datetime(canonical)),
                parse_any_datetime(canonical),
                "{}",
                String::from_utf8_lossy(canonical)
            );
        }
        assert!(parse_canonical_datetime(b"2024-02-29 13:05:09").is_some());
        assert_eq!(
            text(&Value::DateTime(datetime)),
            "2024-02-29 13:05:09.500000"
        );
        assert_eq!(text(&Value::Time(-3_600_000_000)), "-01:00:00");
    }

    #[test]
    fn bytes_that_are_not_utf8_fit_a_text_column_only_leniently_as_question_marks() {
        let text = ColumnType::VarChar {
            max_length: 20,
            collation: Collation::utf8mb4_0900_ai_ci,
        };
        let bytes = Value::Bytes(b"ok\xFF\x10\x80".to_vec());
        let refused = coerce(&bytes, text, "s").unwrap_err();
        assert_eq!(refused.code, 1366);
        assert!(refused.message.contains("'\\xFF\\x10\\x80'"), "{refused:?}");
        let (fitted, warning) = closest_fit(&bytes, text, "s").unwrap();
        assert_eq!(
            (fitted, warning.code),
            (Value::Bytes(b"ok?\x10?".to_vec()), 1366)
        );
        // Binary columns take any bytes.
        for column_type in [ColumnType::VarBinary { max_length: 20 }, ColumnType::Blob] {
            assert_eq!(coerce(&bytes, column_type, "b"), Ok(bytes.clone()));
        }
    }

    #[test]
    fn strings_fit_numeric_columns_only_when_they_are_numbers() {
        let int = ColumnType::Int {
            bytes: 4,
            signed: true,
        };
        assert_eq!(
            coerce(&Value::Bytes(b"0".to_vec()), int, "k"),
            Ok(Value::Int(0))
        );
        assert_eq!(
            coerce(&Value::Bytes(b"abc".to_vec()), int, "k")
                .unwrap_err()
                .code,
            1366
        );
        assert_eq!(
            coerce(&Value::Int(1 << 40), int, "k").unwrap_err().code,
            1264
        );
        let tiny = ColumnType::Int {
            bytes: 1,
            signed: false,
        };
        assert_eq!(coerce(&Value::Int(-1), tiny, "t").unwrap_err().code, 1264);
        let char3 = ColumnType::char(3);
        assert_eq!(
            coerce(&Value::Bytes(b"abcd".to_vec()), char3, "c")
                .unwrap_err()
                .code,
            1406
        );
        assert_eq!(
            coerce(&Value::Int(12), char3, "c"),
            Ok(Value::Bytes(b"12".to_vec()))
        );
        let money = ColumnType::Decimal {
            precision: 5,
            scale: 2,
        };
        let price = coerce(&Value::Bytes(b"12.345".to_vec()), money, "p").unwrap();
        assert_eq!(
            price,
            Value::Decimal(Decimal {
                unscaled: 1235,
                scale: 2
            })
        );
    }

    #[test]
    fn mixed_kinds_compare_as_mysql_compares_them() {
        let s = |t: &str| Value::Bytes(t.as_bytes().to_vec());
        assert_eq!(compare(&Value::Int(10), &s("9")), Some(Ordering::Greater));
        assert_eq!(
            compare(&s("10"), &s("9")),
            Some(Ordering::Less),
            "as strings"
        );
        assert_eq!(
            compare(&Value::Int(1), &Value::Double(1.0)),
            Some(Ordering::Equal)
        );
        let day = Value::Date(Date::new(2024, 1, 2).unwrap());
        assert_eq!(compare(&day, &s("2024-01-01")), Some(Ordering::Greater));
        assert_eq!(compare(&s("2024-01-03"), &day), Some(Ordering::Greater));
        assert_eq!(compare(&Value::Null, &Value::Int(1)), None);
        assert_eq!(to_f64(&s("12abc")), Some(12.0));
    }
}

#[cfg(test)]
mod fraction_tests {
    use super::*;
    use kista_client::types::Date;

    fn datetime(text: &str) -> Value {
        let (date, time) = text.split_once(' ').unwrap();
        let parts: Vec<u32> = date.split('-').map(|p| p.parse().unwrap()).collect();
        let date = Date::new(parts[0] as u16, parts[1] as u8, parts[2] as u8).unwrap();
        let (hms, fraction) = time.split_once('.').unwrap_or((time, "0"));
        let hms: Vec<u64> = hms.split(':').map(|p| p.parse().unwrap()).collect();
        let micros = format!("{fraction:0<6}").parse::<u64>().unwrap();
        let time_us = ((hms[0] * 60 + hms[1]) * 60 + hms[2]) * 1_000_000 + micros;
        Value::DateTime(DateTime::new(date, time_us).unwrap())
    }

    fn shown(value: &Value, digits: u8) -> String {
        let mut out = Vec::new();
        write_text_with_fraction(value, digits, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_column_rounds_half_up_to_its_digits_and_shows_exactly_them() {
        let cases = [
            ("2020-01-01 10:00:00.1236", 3, "2020-01-01 10:00:00.124"),
            ("2020-01-01 10:00:00.5", 0, "2020-01-01 10:00:01"),
            ("2020-12-31 23:59:59.9996", 3, "2021-01-01 00:00:00.000"),
            ("2020-01-01 10:00:00", 6, "2020-01-01 10:00:00.000000"),
            (
                "2020-01-01 10:00:00.000001",
                6,
                "2020-01-01 10:00:00.000001",
            ),
            ("2020-01-01 10:00:00.04", 1, "2020-01-01 10:00:00.0"),
        ];
        for (given, digits, expected) in cases {
            assert_eq!(
                shown(&datetime(given), digits),
                expected,
                "{given} in {digits}"
            );
        }
        // A negative TIME rounds away from zero.
        assert_eq!(shown(&Value::Time(-3_723_456_000), 2), "-01:02:03.46");
        assert_eq!(shown(&Value::Time(-500_000), 0), "-00:00:01");
        assert_eq!(round_fraction(Value::Int(7), 0), Value::Int(7));
    }

    #[test]
    fn a_lenient_load_keeps_the_closest_value_and_says_why() {
        let int = ColumnType::Int {
            bytes: 4,
            signed: true,
        };
        let fit = |text: &str, column_type| {
            let text = Value::Bytes(text.as_bytes().to_vec());
            closest_fit(&text, column_type, "c").map(|(value, warning)| (value, warning.code))
        };
        assert_eq!(fit("abc", int), Some((Value::Int(0), 1366)));
        assert_eq!(fit("12abc", int), Some((Value::Int(12), 1265)));
        assert_eq!(fit(" 7.6 x", int), Some((Value::Int(8), 1265)));
        assert_eq!(
            fit("99999999999", int),
            Some((Value::Int(i32::MAX.into()), 1264))
        );
        assert_eq!(fit("-1e20", int), Some((Value::Int(i32::MIN.into()), 1264)));
        let tiny_unsigned = ColumnType::Int {
            bytes: 1,
            signed: false,
        };
        assert_eq!(fit("-5", tiny_unsigned), Some((Value::UInt(0), 1264)));
        let money = ColumnType::Decimal {
            precision: 5,
            scale: 2,
        };
        let decimal = |unscaled| Value::Decimal(Decimal { unscaled, scale: 2 });
        assert_eq!(fit("123456", money), Some((decimal(99_999), 1264)));
        assert_eq!(fit("-1e300", money), Some((decimal(-99_999), 1264)));
        assert_eq!(fit("1.5abc", money), Some((decimal(150), 1265)));
        let short = |max_length| ColumnType::VarChar {
            max_length,
            collation: Collation::utf8mb4_0900_ai_ci,
        };
        let bytes = |text: &str| Value::Bytes(text.as_bytes().to_vec());
        assert_eq!(fit("abcdef", short(3)), Some((bytes("abc"), 1265)));
        assert_eq!(fit("héllo", short(3)), Some((bytes("hé"), 1265)));
        assert_eq!(
            fit("héllo", short(2)),
            Some((bytes("h"), 1265)),
            "no half character"
        );
        assert_eq!(fit("not a date", ColumnType::Date), None);
        assert_eq!(implicit_default(int), Some(Value::Int(0)));
        assert_eq!(implicit_default(ColumnType::Blob), Some(bytes("")));
        assert_eq!(implicit_default(ColumnType::DateTime), None);
    }

    /// Strict mode's errors for text that is not a number, as MariaDB 10.11 gives them
    /// (MySQL's codes): one that only begins with a number is data truncated.
    #[test]
    fn a_text_that_is_not_wholly_a_number_is_refused_with_mysqls_error() {
        let int = ColumnType::Int {
            bytes: 4,
            signed: true,
        };
        let money = ColumnType::Decimal {
            precision: 6,
            scale: 2,
        };
        let refused = |text: &str, column_type| {
            let value = Value::Bytes(text.as_bytes().to_vec());
            coerce(&value, column_type, "c").map_err(|e| (e.code, e.message))
        };
        let code = |text: &str, column_type| refused(text, column_type).map_err(|e| e.0);
        for (text, column_type, expected) in [
            ("x", ColumnType::Double, 1366),
            ("x", ColumnType::Float, 1366),
            ("", ColumnType::Double, 1366),
            ("1.5e3x", ColumnType::Double, 1265),
            ("1e400", ColumnType::Double, 1264),
            ("1e39", ColumnType::Float, 1264),
            ("inf", ColumnType::Double, 1366),
            ("NaN", ColumnType::Double, 1366),
            ("1x", int, 1265),
            ("0x10", int, 1265),
            ("1-2", int, 1265),
            ("x", int, 1366),
            ("", int, 1366),
            ("1x", money, 1265),
            ("x", money, 1366),
        ] {
            assert_eq!(
                code(text, column_type),
                Err(expected),
                "{text:?} {column_type:?}"
            );
        }
        // A DECIMAL in scientific notation, read exactly (MariaDB's answers).
        let cents = |unscaled| Ok(Value::Decimal(Decimal { unscaled, scale: 2 }));
        assert_eq!(code("1e3", money), cents(100_000));
        assert_eq!(code("1.005e0", money), cents(101));
        assert_eq!(code("1e-3", money), cents(0));
        assert_eq!(code("-2.5E+2", money), cents(-25_000));
        assert_eq!(code(" 1e2 ", money), cents(10_000));
        assert_eq!(code("1e4", money), Err(1264));
        assert_eq!(code("1e", money), Err(1265));
        assert_eq!(code("1.2.3", money), Err(1265));
        let message = refused("x", ColumnType::Double).unwrap_err().1;
        assert!(
            message.starts_with("Incorrect double value: 'x'"),
            "{message}"
        );
        assert_eq!(code(" 1.5 ", ColumnType::Double), Ok(Value::Double(1.5)));
        assert_eq!(code("1e3", int), Ok(Value::Int(1000)));
        assert_eq!(code(" 12 ", int), Ok(Value::Int(12)));
    }

    #[test]
    fn the_number_a_text_starts_with() {
        assert_eq!(leading_number(b"1e5x"), Some((100_000.0, false)));
        assert_eq!(leading_number(b"1e"), Some((1.0, false)));
        assert_eq!(leading_number(b" -.5 "), Some((-0.5, true)));
        assert_eq!(leading_number(b"+3."), Some((3.0, true)));
        assert_eq!(leading_number(b"."), None);
        assert_eq!(leading_number(b"-"), None);
        assert_eq!(leading_number(b""), None);
    }
}
