//! Date and time functions. The server's clock and every session run in UTC (`time_zone`
//! is SYSTEM, and the system time zone UTC), so NOW() and UTC_TIMESTAMP() agree;
//! CONVERT_TZ knows offsets (`'+05:30'`), `UTC` and `SYSTEM`, and gives NULL for other
//! named zones, as MySQL does without its time zone tables.
//!
//! `DATE_ADD(d, INTERVAL n unit)` and `d + INTERVAL n unit` are bound to DATE_ADD or
//! DATE_SUB with three arguments: the date, the amount and the unit's name.

use kista_client::types::{ColumnType, Date, DateTime, Decimal, Value};

use super::time_format::{format_datetime, parse_with_format, Parsed};
use super::{strict, string_of, text, volatile, FunctionDef, Returns, StrictFn, BIGINT, TEXT};
use crate::value::{parse_datetime, parse_time, to_f64, to_i64};

const DAY_US: i64 = 86_400_000_000;
const SECOND_US: i64 = 1_000_000;

/// A part of a date or time, as an integer (NULL for a value that is no date).
const fn part(names: &'static [&'static str], eval: StrictFn) -> FunctionDef {
    strict(names, 1..=1, Returns::Type(BIGINT), eval)
}

pub const DATE_ADD: &str = "date_add";
pub const DATE_SUB: &str = "date_sub";

pub(super) const FUNCTIONS: &[FunctionDef] = &[
    volatile(
        &[
            "now",
            "current_timestamp",
            "sysdate",
            "localtime",
            "localtimestamp",
            "utc_timestamp",
        ],
        0..=1,
        Returns::Type(ColumnType::DateTime),
        |v, _| Ok(datetime(now_us(fraction_digits(v)))),
    ),
    volatile(
        &["curdate", "current_date", "utc_date"],
        0..=0,
        Returns::Type(ColumnType::Date),
        |_, _| Ok(DateTime::from_micros(now_us(0)).map_or(Value::Null, |dt| Value::Date(dt.date))),
    ),
    volatile(
        &["curtime", "current_time", "utc_time"],
        0..=1,
        Returns::Type(ColumnType::Time),
        |v, _| Ok(Value::Time(now_us(fraction_digits(v)).rem_euclid(DAY_US))),
    ),
    volatile(&["unix_timestamp"], 0..=1, Returns::Type(BIGINT), |v, _| {
        let micros = match v.first() {
            None => now_us(0),
            Some(value) => match datetime_of(value) {
                Some(dt) => dt.to_micros().max(0),
                None => return Ok(Value::Null),
            },
        };
        Ok(if micros % SECOND_US == 0 {
            Value::Int(micros / SECOND_US)
        } else {
            Value::Decimal(Decimal {
                unscaled: i128::from(micros),
                scale: 6,
            })
        })
    }),
    strict(
        &["from_unixtime"],
        1..=2,
        Returns::Type(ColumnType::DateTime),
        |v, _| {
            let seconds = to_f64(&v[0]).unwrap_or(-1.0);
            if seconds < 0.0 {
                return Ok(Value::Null);
            }
            let Some(dt) = DateTime::from_micros((seconds * 1e6).round() as i64) else {
                return Ok(Value::Null);
            };
            Ok(match v.get(1) {
                Some(format) => text(format_datetime(dt, &string_of(format))),
                None => Value::DateTime(dt),
            })
        },
    ),
    strict(&["date"], 1..=1, Returns::Type(ColumnType::Date), |v, _| {
        Ok(datetime_of(&v[0]).map_or(Value::Null, |dt| Value::Date(dt.date)))
    }),
    strict(&["time"], 1..=1, Returns::Type(ColumnType::Time), |v, _| {
        Ok(time_of(&v[0]).map_or(Value::Null, Value::Time))
    }),
    part(&["year"], |v, _| {
        Ok(date_part(&v[0], |d| i64::from(d.year)))
    }),
    part(&["month"], |v, _| {
        Ok(date_part(&v[0], |d| i64::from(d.month)))
    }),
    part(&["quarter"], |v, _| {
        Ok(date_part(&v[0], |d| i64::from(d.month + 2) / 3))
    }),
    part(&["day", "dayofmonth"], |v, _| {
        Ok(date_part(&v[0], |d| i64::from(d.day)))
    }),
    part(&["dayofweek"], |v, _| {
        Ok(date_part(&v[0], |d| weekday_from_sunday(d) + 1))
    }),
    part(&["weekday"], |v, _| {
        Ok(date_part(&v[0], |d| (weekday_from_sunday(d) + 6) % 7))
    }),
    part(&["dayofyear"], |v, _| Ok(date_part(&v[0], day_of_year))),
    part(&["to_days"], |v, _| {
        Ok(date_part(&v[0], |d| {
            i64::from(d.to_days()) + DAYS_0000_TO_1970
        }))
    }),
    part(&["hour"], |v, _| {
        Ok(time_part(&v[0], |us| us / 3_600_000_000))
    }),
    part(&["minute"], |v, _| {
        Ok(time_part(&v[0], |us| us / 60_000_000 % 60))
    }),
    part(&["second"], |v, _| {
        Ok(time_part(&v[0], |us| us / SECOND_US % 60))
    }),
    part(&["microsecond"], |v, _| {
        Ok(time_part(&v[0], |us| us % SECOND_US))
    }),
    strict(&["monthname"], 1..=1, Returns::Type(TEXT), |v, _| {
        Ok(datetime_of(&v[0]).map_or(Value::Null, |dt| text(format_datetime(dt, "%M"))))
    }),
    strict(&["dayname"], 1..=1, Returns::Type(TEXT), |v, _| {
        Ok(datetime_of(&v[0]).map_or(Value::Null, |dt| text(format_datetime(dt, "%W"))))
    }),
    strict(
        &["last_day"],
        1..=1,
        Returns::Type(ColumnType::Date),
        |v, _| {
            let Some(dt) = datetime_of(&v[0]) else {
                return Ok(Value::Null);
            };
            Ok(add_months(dt.date, 1)
                .and_then(|next| Date::new(next.year, next.month, 1))
                .and_then(|first| Date::from_days(first.to_days() - 1))
                .map_or(Value::Null, Value::Date))
        },
    ),
    strict(
        &["from_days"],
        1..=1,
        Returns::Type(ColumnType::Date),
        |v, _| {
            let days = to_i64(&v[0]).unwrap_or(0) - DAYS_0000_TO_1970;
            Ok(i32::try_from(days)
                .ok()
                .and_then(Date::from_days)
                .map_or(Value::Null, Value::Date))
        },
    ),
    strict(&["datediff"], 2..=2, Returns::Type(BIGINT), |v, _| {
        Ok(match (datetime_of(&v[0]), datetime_of(&v[1])) {
            (Some(a), Some(b)) => {
                Value::Int(i64::from(a.date.to_days()) - i64::from(b.date.to_days()))
            }
            _ => Value::Null,
        })
    }),
    strict(&["timestampdiff"], 3..=3, Returns::Type(BIGINT), |v, _| {
        let unit = interval_unit(&string_of(&v[0]));
        Ok(match (unit, datetime_of(&v[1]), datetime_of(&v[2])) {
            (Some(unit), Some(a), Some(b)) => Value::Int(difference(unit, a, b)),
            _ => Value::Null,
        })
    }),
    strict(
        &[DATE_ADD, "adddate"],
        2..=3,
        Returns::Type(ColumnType::DateTime),
        |v, _| Ok(shifted(v, false)),
    ),
    strict(
        &[DATE_SUB, "subdate"],
        2..=3,
        Returns::Type(ColumnType::DateTime),
        |v, _| Ok(shifted(v, true)),
    ),
    strict(
        &["convert_tz"],
        3..=3,
        Returns::Type(ColumnType::DateTime),
        |v, _| {
            let (Some(dt), Some(from), Some(to)) = (
                datetime_of(&v[0]),
                zone_offset_us(&string_of(&v[1])),
                zone_offset_us(&string_of(&v[2])),
            ) else {
                return Ok(Value::Null);
            };
            Ok(datetime(dt.to_micros() - from + to))
        },
    ),
    strict(&["date_format"], 2..=2, Returns::Type(TEXT), |v, _| {
        Ok(datetime_of(&v[0]).map_or(Value::Null, |dt| {
            text(format_datetime(dt, &string_of(&v[1])))
        }))
    }),
    strict(
        &["str_to_date"],
        2..=2,
        Returns::Type(ColumnType::DateTime),
        |v, _| {
            Ok(
                match parse_with_format(&string_of(&v[0]), &string_of(&v[1])) {
                    Some(Parsed::Date(date)) => Value::Date(date),
                    Some(Parsed::DateTime(dt)) => Value::DateTime(dt),
                    Some(Parsed::Time(us)) => Value::Time(us),
                    None => Value::Null,
                },
            )
        },
    ),
];

/// Days from year 0 (MySQL's TO_DAYS origin) to 1970-01-01.
const DAYS_0000_TO_1970: i64 = 719_528;

fn now_us(fraction_digits: u32) -> i64 {
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64);
    let unit = 10i64.pow(6 - fraction_digits.min(6));
    micros - micros % unit
}

/// NOW(fsp)'s digits of a second (0 to 6).
fn fraction_digits(v: &[Value]) -> u32 {
    v.first().and_then(to_i64).unwrap_or(0).clamp(0, 6) as u32
}

fn datetime(micros: i64) -> Value {
    DateTime::from_micros(micros).map_or(Value::Null, Value::DateTime)
}

/// A value read as a date and time, as MySQL reads one: dates at midnight, strings
/// 'YYYY-MM-DD[ hh:mm:ss[.ffffff]]', numbers YYYYMMDD[hhmmss].
pub(super) fn datetime_of(value: &Value) -> Option<DateTime> {
    match value {
        Value::Date(date) => DateTime::new(*date, 0),
        Value::DateTime(dt) => Some(*dt),
        Value::Timestamp(micros) => DateTime::from_micros(*micros),
        Value::Bytes(bytes) => parse_datetime(bytes),
        Value::Int(_) | Value::UInt(_) => {
            let n = to_i64(value)?;
            let (date, time) = if n > 99_999_999 {
                (n / 1_000_000, n % 1_000_000)
            } else {
                (n, 0)
            };
            let day = Date::new(
                (date / 10_000) as u16,
                (date / 100 % 100) as u8,
                (date % 100) as u8,
            )?;
            let time_us = ((time / 10_000 * 60 + time / 100 % 100) * 60 + time % 100) * SECOND_US;
            DateTime::new(day, u64::try_from(time_us).ok()?)
        }
        _ => None,
    }
}

/// A value read as a time of day (or a TIME), in microseconds.
fn time_of(value: &Value) -> Option<i64> {
    match value {
        Value::Time(micros) => Some(*micros),
        Value::Bytes(bytes) => {
            parse_time(bytes).or_else(|| Some(parse_datetime(bytes)?.time_us as i64))
        }
        other => datetime_of(other).map(|dt| dt.time_us as i64),
    }
}

fn date_part(value: &Value, part: fn(Date) -> i64) -> Value {
    datetime_of(value).map_or(Value::Null, |dt| Value::Int(part(dt.date)))
}

fn time_part(value: &Value, part: fn(i64) -> i64) -> Value {
    time_of(value).map_or(Value::Null, |us| Value::Int(part(us.abs())))
}

/// 0 for Sunday to 6 for Saturday (1970-01-01 was a Thursday).
pub(super) fn weekday_from_sunday(date: Date) -> i64 {
    (i64::from(date.to_days()) + 4).rem_euclid(7)
}

pub(super) fn day_of_year(date: Date) -> i64 {
    let first = Date::new(date.year, 1, 1).map_or(0, Date::to_days);
    i64::from(date.to_days() - first) + 1
}

/// The units of INTERVAL, TIMESTAMPDIFF and EXTRACT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntervalUnit {
    Microsecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
    /// A unit of several parts given as one string (`'1:30' HOUR_MINUTE`): the parts'
    /// sizes in microseconds or months, largest first.
    Compound(&'static [Part]),
}

/// One part of a compound interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Months(i64),
    Micros(i64),
}

const HOUR_US: i64 = 3_600_000_000;
const MINUTE_US: i64 = 60_000_000;

/// The unit SQL names `name` (any case): `DAY`, `HOUR_MINUTE`, ...
pub fn interval_unit(name: &str) -> Option<IntervalUnit> {
    use IntervalUnit as U;
    use Part::{Micros, Months};
    Some(match name.to_ascii_uppercase().as_str() {
        "MICROSECOND" => U::Microsecond,
        "SECOND" => U::Second,
        "MINUTE" => U::Minute,
        "HOUR" => U::Hour,
        "DAY" => U::Day,
        "WEEK" => U::Week,
        "MONTH" => U::Month,
        "QUARTER" => U::Quarter,
        "YEAR" => U::Year,
        "YEAR_MONTH" => U::Compound(&[Months(12), Months(1)]),
        "DAY_HOUR" => U::Compound(&[Micros(DAY_US), Micros(HOUR_US)]),
        "DAY_MINUTE" => U::Compound(&[Micros(DAY_US), Micros(HOUR_US), Micros(MINUTE_US)]),
        "DAY_SECOND" => U::Compound(&[
            Micros(DAY_US),
            Micros(HOUR_US),
            Micros(MINUTE_US),
            Micros(SECOND_US),
        ]),
        "HOUR_MINUTE" => U::Compound(&[Micros(HOUR_US), Micros(MINUTE_US)]),
        "HOUR_SECOND" => U::Compound(&[Micros(HOUR_US), Micros(MINUTE_US), Micros(SECOND_US)]),
        "MINUTE_SECOND" => U::Compound(&[Micros(MINUTE_US), Micros(SECOND_US)]),
        "SECOND_MICROSECOND" => U::Compound(&[Micros(SECOND_US), Micros(1)]),
        "MINUTE_MICROSECOND" => U::Compound(&[Micros(MINUTE_US), Micros(SECOND_US), Micros(1)]),
        "HOUR_MICROSECOND" => U::Compound(&[
            Micros(HOUR_US),
            Micros(MINUTE_US),
            Micros(SECOND_US),
            Micros(1),
        ]),
        "DAY_MICROSECOND" => U::Compound(&[
            Micros(DAY_US),
            Micros(HOUR_US),
            Micros(MINUTE_US),
            Micros(SECOND_US),
            Micros(1),
        ]),
        _ => return None,
    })
}

/// An interval as months and microseconds (months apply first, as in MySQL).
fn interval(unit: IntervalUnit, amount: &Value) -> Option<(i64, i64)> {
    use IntervalUnit as U;
    let whole = || to_i64(amount);
    Some(match unit {
        U::Microsecond => (0, whole()?),
        U::Second => (0, (to_f64(amount)? * 1e6).round() as i64),
        U::Minute => (0, whole()?.checked_mul(MINUTE_US)?),
        U::Hour => (0, whole()?.checked_mul(HOUR_US)?),
        U::Day => (0, whole()?.checked_mul(DAY_US)?),
        U::Week => (0, whole()?.checked_mul(7 * DAY_US)?),
        U::Month => (whole()?, 0),
        U::Quarter => (whole()?.checked_mul(3)?, 0),
        U::Year => (whole()?.checked_mul(12)?, 0),
        U::Compound(parts) => compound_interval(parts, &string_of(amount))?,
    })
}

/// `'1:30'` as HOUR_MINUTE and the like: the numbers fill the parts from the smallest
/// up; a leading `-` negates the whole.
fn compound_interval(parts: &[Part], amount: &str) -> Option<(i64, i64)> {
    let amount = amount.trim();
    let (negative, amount) = match amount.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, amount),
    };
    let numbers: Vec<i64> = amount
        .split(|c: char| !c.is_ascii_digit())
        .filter(|n| !n.is_empty())
        .map(|n| n.parse().ok())
        .collect::<Option<_>>()?;
    if numbers.len() > parts.len() {
        return None;
    }
    let (mut months, mut micros) = (0i64, 0i64);
    for (number, part) in numbers.iter().rev().zip(parts.iter().rev()) {
        match part {
            Part::Months(size) => months = months.checked_add(number.checked_mul(*size)?)?,
            Part::Micros(size) => micros = micros.checked_add(number.checked_mul(*size)?)?,
        }
    }
    Some(if negative {
        (-months, -micros)
    } else {
        (months, micros)
    })
}

fn add_months(date: Date, months: i64) -> Option<Date> {
    let index = i64::from(date.year) * 12 + i64::from(date.month) - 1 + months;
    let (year, month) = (
        u16::try_from(index.div_euclid(12)).ok()?,
        (index.rem_euclid(12) + 1) as u8,
    );
    let last = (28..=31)
        .rev()
        .find(|&day| Date::new(year, month, day).is_some())?;
    Date::new(year, month, date.day.min(last))
}

/// DATE_ADD and DATE_SUB: (date, amount, unit), or (date, days) for ADDDATE/SUBDATE. A
/// DATE moved by whole days or more stays a DATE.
fn shifted(v: &[Value], subtract: bool) -> Value {
    let unit = match v.get(2) {
        Some(unit) => interval_unit(&string_of(unit)),
        None => Some(IntervalUnit::Day),
    };
    let (Some(unit), Some(dt)) = (unit, datetime_of(&v[0])) else {
        return Value::Null;
    };
    let Some((months, micros)) = interval(unit, &v[1]) else {
        return Value::Null;
    };
    let (months, micros) = if subtract {
        (-months, -micros)
    } else {
        (months, micros)
    };
    let Some(date) = add_months(dt.date, months) else {
        return Value::Null;
    };
    let Some(moved) = DateTime::new(date, dt.time_us)
        .and_then(|d| DateTime::from_micros(d.to_micros().checked_add(micros)?))
    else {
        return Value::Null;
    };
    let is_date = match &v[0] {
        Value::Date(_) => true,
        Value::Bytes(bytes) => !bytes.contains(&b':'),
        _ => false,
    };
    if is_date && micros % DAY_US == 0 {
        Value::Date(moved.date)
    } else {
        Value::DateTime(moved)
    }
}

/// TIMESTAMPDIFF: `b - a` in whole `unit`s, truncated towards zero.
fn difference(unit: IntervalUnit, a: DateTime, b: DateTime) -> i64 {
    use IntervalUnit as U;
    let micros = b.to_micros() - a.to_micros();
    let months = || {
        let whole = (i64::from(b.date.year) - i64::from(a.date.year)) * 12
            + i64::from(b.date.month)
            - i64::from(a.date.month);
        // A month counts only once its day and time of day are reached.
        let rest = |dt: DateTime| (dt.date.day, dt.time_us);
        if whole > 0 && rest(b) < rest(a) {
            whole - 1
        } else if whole < 0 && rest(b) > rest(a) {
            whole + 1
        } else {
            whole
        }
    };
    match unit {
        U::Microsecond => micros,
        U::Second => micros / SECOND_US,
        U::Minute => micros / MINUTE_US,
        U::Hour => micros / HOUR_US,
        U::Day => micros / DAY_US,
        U::Week => micros / (7 * DAY_US),
        U::Month => months(),
        U::Quarter => months() / 3,
        U::Year => months() / 12,
        U::Compound(_) => 0,
    }
}

/// A time zone's offset from UTC: `'+hh:mm'`, `'-hh:mm'`, `UTC` or `SYSTEM` (UTC here).
fn zone_offset_us(zone: &str) -> Option<i64> {
    let zone = zone.trim();
    if zone.eq_ignore_ascii_case("UTC") || zone.eq_ignore_ascii_case("SYSTEM") {
        return Some(0);
    }
    let sign = match zone.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (hours, minutes) = zone[1..].split_once(':')?;
    let (hours, minutes): (i64, i64) = (hours.parse().ok()?, minutes.parse().ok()?);
    let offset = hours * 60 + minutes;
    // MySQL's range: -13:59 to +14:00.
    if minutes > 59 || !(-839..=840).contains(&(sign * offset)) {
        return None;
    }
    Some(sign * offset * MINUTE_US)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(text: &str) -> Value {
        Value::Bytes(text.as_bytes().to_vec())
    }

    fn shown(value: Value) -> String {
        String::from_utf8(crate::value::to_text(&value)).unwrap()
    }

    #[test]
    fn intervals_move_dates_as_mysql_does() {
        let add = |d: &str, amount: Value, unit: &str| {
            shown(shifted(&[date(d), amount, date(unit)], false))
        };
        assert_eq!(add("2020-01-31", Value::Int(1), "MONTH"), "2020-02-29");
        assert_eq!(add("2020-01-01", Value::Int(1), "DAY"), "2020-01-02");
        assert_eq!(add("2020-01-01", Value::Int(-1), "DAY"), "2019-12-31");
        assert_eq!(
            add("2020-01-01", Value::Int(90), "MINUTE"),
            "2020-01-01 01:30:00"
        );
        assert_eq!(
            add("2020-01-01 23:00:00", date("1:30"), "HOUR_MINUTE"),
            "2020-01-02 00:30:00"
        );
        assert_eq!(add("2020-02-29", Value::Int(1), "YEAR"), "2021-02-28");
        assert_eq!(add("2020-01-01", Value::Int(1), "FORTNIGHT"), "NULL");
        let sub = shifted(&[date("2020-03-01"), Value::Int(1)], true);
        assert_eq!(shown(sub), "2020-02-29");
    }

    #[test]
    fn differences_count_whole_units() {
        let dt = |s: &str| parse_datetime(s.as_bytes()).unwrap();
        let months = difference(IntervalUnit::Month, dt("2020-01-31"), dt("2020-02-29"));
        assert_eq!(months, 0);
        assert_eq!(
            difference(IntervalUnit::Month, dt("2020-01-15"), dt("2020-03-15")),
            2
        );
        assert_eq!(
            difference(IntervalUnit::Year, dt("2021-06-01"), dt("2020-06-02")),
            0
        );
        assert_eq!(
            difference(
                IntervalUnit::Day,
                dt("2020-01-01"),
                dt("2020-01-03 12:00:00")
            ),
            2
        );
    }

    #[test]
    fn zones_are_offsets_utc_or_system() {
        assert_eq!(zone_offset_us("+05:30"), Some(330 * MINUTE_US));
        assert_eq!(zone_offset_us("-01:00"), Some(-60 * MINUTE_US));
        assert_eq!(zone_offset_us("utc"), Some(0));
        assert_eq!(zone_offset_us("Europe/Stockholm"), None);
        assert_eq!(zone_offset_us("+15:00"), None);
    }

    #[test]
    fn dates_read_from_strings_numbers_and_dates() {
        let expected = parse_datetime(b"2020-01-02 03:04:05");
        assert_eq!(datetime_of(&Value::Int(20200102030405)), expected);
        assert_eq!(datetime_of(&date("2020-01-02 03:04:05")), expected);
        assert_eq!(weekday_from_sunday(Date::new(2026, 11, 25).unwrap()), 3);
        assert_eq!(day_of_year(Date::new(2020, 12, 31).unwrap()), 366);
    }
}
