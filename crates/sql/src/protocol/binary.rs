//! The binary protocol of prepared statements: parameter values as `COM_STMT_EXECUTE`
//! sends them, and result rows as the server returns them.

use kista_client::types::{Date, DateTime, Value};

use super::column_type as code;
use super::results::ColumnDefinition;
use super::wire::{put_lenenc_bytes, Input, Malformed};
use crate::value::{to_f64, to_i64, to_text};

/// The "unsigned" bit of a parameter's type flags.
pub const PARAMETER_UNSIGNED: u8 = 0x80;

/// Reads one parameter value of `type_code` (a NULL is marked in the bitmap, not here).
pub fn read_parameter(
    input: &mut Input,
    type_code: u8,
    unsigned: bool,
) -> Result<Value, Malformed> {
    let what = "parameter value";
    Ok(match type_code {
        code::NULL => Value::Null,
        code::TINY => {
            let b = input.u8(what)?;
            if unsigned {
                Value::UInt(u64::from(b))
            } else {
                Value::Int(i64::from(b as i8))
            }
        }
        code::SHORT | code::YEAR => {
            let n = input.u16(what)?;
            if unsigned {
                Value::UInt(u64::from(n))
            } else {
                Value::Int(i64::from(n as i16))
            }
        }
        code::LONG | code::INT24 => {
            let n = input.u32(what)?;
            if unsigned {
                Value::UInt(u64::from(n))
            } else {
                Value::Int(i64::from(n as i32))
            }
        }
        code::LONGLONG => {
            let n = input.u64(what)?;
            if unsigned {
                Value::UInt(n)
            } else {
                Value::Int(n as i64)
            }
        }
        code::FLOAT => Value::Float(f32::from_bits(input.u32(what)?)),
        code::DOUBLE => Value::Double(f64::from_bits(input.u64(what)?)),
        code::DATE | code::DATETIME | code::TIMESTAMP => read_date_time(input, type_code)?,
        code::TIME => read_time(input)?,
        // Strings, decimals, blobs, JSON, ENUM, SET, BIT: length-encoded bytes.
        _ => Value::Bytes(input.lenenc_bytes(what)?.to_vec()),
    })
}

/// A DATE, DATETIME or TIMESTAMP parameter: its length (0: NULL, 4: a date, 7: with the
/// time, 11: with microseconds), then year, month, day, hour, minute, second, micros.
fn read_date_time(input: &mut Input, type_code: u8) -> Result<Value, Malformed> {
    let what = "parameter value";
    let length = input.u8(what)?;
    let bytes = input.take(usize::from(length), what)?;
    if length == 0 {
        return Ok(Value::Null);
    }
    if length < 4 {
        return Err(Malformed(what));
    }
    let date = Date::new(u16::from_le_bytes([bytes[0], bytes[1]]), bytes[2], bytes[3])
        .ok_or(Malformed("date"))?;
    if type_code == code::DATE {
        return Ok(Value::Date(date));
    }
    let (hour, minute, second) = if length >= 7 {
        (bytes[4], bytes[5], bytes[6])
    } else {
        (0, 0, 0)
    };
    let micros = if length >= 11 {
        u32::from_le_bytes([bytes[7], bytes[8], bytes[9], bytes[10]])
    } else {
        0
    };
    let time_us = (u64::from(hour) * 3600 + u64::from(minute) * 60 + u64::from(second)) * 1_000_000
        + u64::from(micros);
    Ok(Value::DateTime(
        DateTime::new(date, time_us).ok_or(Malformed("datetime"))?,
    ))
}

/// A TIME parameter: its length (0: zero, 8: without, 12: with microseconds), then the
/// sign, days, hours, minutes, seconds and micros.
fn read_time(input: &mut Input) -> Result<Value, Malformed> {
    let what = "parameter value";
    let length = input.u8(what)?;
    let bytes = input.take(usize::from(length), what)?;
    if length == 0 {
        return Ok(Value::Time(0));
    }
    if length < 8 {
        return Err(Malformed(what));
    }
    let negative = bytes[0] == 1;
    let days = u32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
    let seconds = i64::from(days) * 86_400
        + i64::from(bytes[5]) * 3600
        + i64::from(bytes[6]) * 60
        + i64::from(bytes[7]);
    let micros = if length >= 12 {
        i64::from(u32::from_le_bytes([
            bytes[8], bytes[9], bytes[10], bytes[11],
        ]))
    } else {
        0
    };
    // Saturating: a client may send any day count (4 billion days does not fit in
    // microseconds); a TIME column clips what it gets to its range anyway.
    let total = seconds.saturating_mul(1_000_000).saturating_add(micros);
    Ok(Value::Time(if negative { -total } else { total }))
}

/// What a binary-row value needs of its column's definition.
#[derive(Clone, Copy, Debug)]
pub struct ValueShape {
    pub type_code: u8,
    /// The display width (a BIT column's width in bits).
    pub length: u32,
}

impl From<&ColumnDefinition> for ValueShape {
    fn from(column: &ColumnDefinition) -> Self {
        Self {
            type_code: column.type_code,
            length: column.length,
        }
    }
}

/// Writes `value` as a binary-row value of a column of `shape` (converting it, so the
/// bytes always match what the column definition said).
pub fn write_value(out: &mut Vec<u8>, shape: ValueShape, value: &Value) {
    let type_code = shape.type_code;
    match type_code {
        code::TINY => out.push(to_i64(value).unwrap_or(0) as u8),
        code::SHORT | code::YEAR => {
            out.extend_from_slice(&(to_i64(value).unwrap_or(0) as u16).to_le_bytes())
        }
        code::LONG | code::INT24 => {
            out.extend_from_slice(&(to_i64(value).unwrap_or(0) as u32).to_le_bytes())
        }
        code::LONGLONG => {
            let n = match value {
                Value::UInt(n) => *n,
                other => to_i64(other).unwrap_or(0) as u64,
            };
            out.extend_from_slice(&n.to_le_bytes());
        }
        code::FLOAT => out.extend_from_slice(
            &(to_f64(value).unwrap_or(0.0) as f32)
                .to_bits()
                .to_le_bytes(),
        ),
        code::DOUBLE => {
            out.extend_from_slice(&to_f64(value).unwrap_or(0.0).to_bits().to_le_bytes())
        }
        code::DATE | code::DATETIME | code::TIMESTAMP => write_date_time(out, type_code, value),
        code::TIME => write_time(out, value),
        code::BIT => put_lenenc_bytes(out, &crate::sql_type::bit_bytes(value, shape.length)),
        _ => put_lenenc_bytes(out, &to_text(value)),
    }
}

/// A DATE, DATETIME or TIMESTAMP value as the binary row carries it (length 0 for
/// anything else).
fn write_date_time(out: &mut Vec<u8>, type_code: u8, value: &Value) {
    let datetime = match value {
        Value::Date(d) => DateTime {
            date: *d,
            time_us: 0,
        },
        Value::DateTime(dt) => *dt,
        Value::Timestamp(micros) => DateTime::from_micros(*micros).unwrap_or(DateTime {
            date: Date {
                year: 1970,
                month: 1,
                day: 1,
            },
            time_us: 0,
        }),
        _ => {
            out.push(0);
            return;
        }
    };
    let seconds = datetime.time_us / 1_000_000;
    let micros = (datetime.time_us % 1_000_000) as u32;
    let date = datetime.date;
    let length: u8 = if type_code == code::DATE {
        4
    } else if micros != 0 {
        11
    } else {
        7
    };
    out.push(length);
    out.extend_from_slice(&date.year.to_le_bytes());
    out.push(date.month);
    out.push(date.day);
    if length >= 7 {
        out.push((seconds / 3600) as u8);
        out.push((seconds / 60 % 60) as u8);
        out.push((seconds % 60) as u8);
    }
    if length == 11 {
        out.extend_from_slice(&micros.to_le_bytes());
    }
}

/// A TIME value as the binary row carries it (length 0 for anything else).
fn write_time(out: &mut Vec<u8>, value: &Value) {
    let Value::Time(micros) = value else {
        out.push(0);
        return;
    };
    let magnitude = micros.unsigned_abs();
    let seconds = magnitude / 1_000_000;
    let fraction = (magnitude % 1_000_000) as u32;
    out.push(if fraction != 0 { 12 } else { 8 });
    out.push(u8::from(*micros < 0));
    out.extend_from_slice(&((seconds / 86_400) as u32).to_le_bytes());
    out.push((seconds / 3600 % 24) as u8);
    out.push((seconds / 60 % 60) as u8);
    out.push((seconds % 60) as u8);
    if fraction != 0 {
        out.extend_from_slice(&fraction.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_of_four_billion_days_reads_saturated_not_as_an_overflow() {
        // Found by tests/fuzz.rs: the day count times a day's microseconds overflowed.
        let bytes = [
            12, 0, 0xff, 0xff, 0xff, 0xff, 23, 59, 59, 0xff, 0xff, 0xff, 0xff,
        ];
        let value = read_parameter(&mut Input::new(&bytes), code::TIME, false).unwrap();
        assert_eq!(value, Value::Time(i64::MAX));
    }

    fn round_trip(type_code: u8, value: Value) -> Value {
        let mut out = Vec::new();
        let shape = ValueShape {
            type_code,
            length: 0,
        };
        write_value(&mut out, shape, &value);
        read_parameter(
            &mut Input::new(&out),
            type_code,
            matches!(value, Value::UInt(_)),
        )
        .unwrap()
    }

    #[test]
    fn values_survive_the_binary_encoding_of_their_type() {
        assert_eq!(round_trip(code::LONGLONG, Value::Int(-7)), Value::Int(-7));
        assert_eq!(
            round_trip(code::LONGLONG, Value::UInt(u64::MAX)),
            Value::UInt(u64::MAX)
        );
        assert_eq!(
            round_trip(code::LONG, Value::Int(-70_000)),
            Value::Int(-70_000)
        );
        assert_eq!(
            round_trip(code::DOUBLE, Value::Double(1.5)),
            Value::Double(1.5)
        );
        assert_eq!(
            round_trip(code::VAR_STRING, Value::Bytes(b"abc".to_vec())),
            Value::Bytes(b"abc".to_vec())
        );
        let datetime = DateTime::new(Date::new(2024, 2, 29).unwrap(), 3_723_000_456).unwrap();
        assert_eq!(
            round_trip(code::DATETIME, Value::DateTime(datetime)),
            Value::DateTime(datetime)
        );
        assert_eq!(
            round_trip(code::TIME, Value::Time(-3_723_000_456)),
            Value::Time(-3_723_000_456)
        );
    }

    #[test]
    fn a_truncated_parameter_is_malformed() {
        assert!(read_parameter(&mut Input::new(&[1, 2]), code::LONG, false).is_err());
        assert!(read_parameter(&mut Input::new(&[7, 1]), code::DATETIME, false).is_err());
    }
}
