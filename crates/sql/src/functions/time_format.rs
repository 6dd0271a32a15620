//! DATE_FORMAT's and STR_TO_DATE's format strings: `%Y-%m-%d %H:%i:%s` and the rest of
//! MySQL's specifiers, except the week numbers (`%U %u %V %v %X %x`), which print as the
//! letter alone, as MySQL prints an unknown specifier.

use kista_client::types::{Date, DateTime};

use super::time::{day_of_year, weekday_from_sunday};

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// `dt` written by `format`.
pub fn format_datetime(dt: DateTime, format: &str) -> String {
    use std::fmt::Write;
    let date = dt.date;
    let seconds = dt.time_us / 1_000_000;
    let (hour, minute, second) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    let hour12 = (hour + 11) % 12 + 1;
    let month_name = MONTHS[usize::from(date.month) - 1];
    let day_name = DAYS[weekday_from_sunday(date) as usize];
    let mut out = String::with_capacity(format.len() + 8);
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(specifier) = chars.next() else {
            break;
        };
        let _ = match specifier {
            'Y' => write!(out, "{:04}", date.year),
            'y' => write!(out, "{:02}", date.year % 100),
            'm' => write!(out, "{:02}", date.month),
            'c' => write!(out, "{}", date.month),
            'M' => write!(out, "{month_name}"),
            'b' => write!(out, "{}", &month_name[..3]),
            'd' => write!(out, "{:02}", date.day),
            'e' => write!(out, "{}", date.day),
            'D' => write!(out, "{}{}", date.day, ordinal_suffix(date.day)),
            'j' => write!(out, "{:03}", day_of_year(date)),
            'W' => write!(out, "{day_name}"),
            'a' => write!(out, "{}", &day_name[..3]),
            'w' => write!(out, "{}", weekday_from_sunday(date)),
            'H' => write!(out, "{hour:02}"),
            'k' => write!(out, "{hour}"),
            'h' | 'I' => write!(out, "{hour12:02}"),
            'l' => write!(out, "{hour12}"),
            'i' => write!(out, "{minute:02}"),
            's' | 'S' => write!(out, "{second:02}"),
            'f' => write!(out, "{:06}", dt.time_us % 1_000_000),
            'p' => write!(out, "{}", if hour < 12 { "AM" } else { "PM" }),
            'T' => write!(out, "{hour:02}:{minute:02}:{second:02}"),
            'r' => {
                let noon = if hour < 12 { "AM" } else { "PM" };
                write!(out, "{hour12:02}:{minute:02}:{second:02} {noon}")
            }
            other => write!(out, "{other}"),
        };
    }
    out
}

fn ordinal_suffix(day: u8) -> &'static str {
    match (day % 10, day / 10) {
        (_, 1) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

/// What STR_TO_DATE found: a date, a date and time, or a time, by the parts its format
/// has.
#[derive(Debug, PartialEq)]
pub enum Parsed {
    Date(Date),
    DateTime(DateTime),
    Time(i64),
}

/// The parts read so far.
#[derive(Default)]
struct Fields {
    year: Option<i64>,
    month: Option<i64>,
    day: Option<i64>,
    hour: Option<i64>,
    minute: i64,
    second: i64,
    micros: i64,
    afternoon: Option<bool>,
}

/// `text` read by `format`; `None` where it does not match or names no valid date.
pub fn parse_with_format(text: &str, format: &str) -> Option<Parsed> {
    let mut fields = Fields::default();
    let mut input = text.trim_start();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            if c.is_whitespace() {
                input = input.trim_start();
            } else {
                input = input.strip_prefix(c)?;
            }
            continue;
        }
        let specifier = chars.next()?;
        input = read_field(specifier, input, &mut fields)?;
    }
    fields.into_parsed()
}

/// Reads one specifier's field off the front of `input`.
fn read_field<'a>(specifier: char, input: &'a str, fields: &mut Fields) -> Option<&'a str> {
    let digits = |max: usize| -> Option<(i64, &'a str)> {
        let end = input
            .chars()
            .take(max)
            .take_while(char::is_ascii_digit)
            .count();
        Some((input[..end].parse().ok()?, &input[end..]))
    };
    let (value, rest) = match specifier {
        'Y' => digits(4)?,
        'y' => {
            let (year, rest) = digits(2)?;
            (if year < 70 { 2000 + year } else { 1900 + year }, rest)
        }
        'm' | 'c' => digits(2)?,
        'd' | 'e' => digits(2)?,
        'H' | 'k' | 'h' | 'I' | 'l' => digits(2)?,
        'i' => digits(2)?,
        's' | 'S' => digits(2)?,
        'f' => {
            let (n, rest) = digits(6)?;
            let read = input.len() - rest.len();
            (n * 10i64.pow(6 - read as u32), rest)
        }
        'M' | 'b' => {
            let full = specifier == 'M';
            let found = MONTHS.iter().position(|name| {
                let name = if full { name } else { &name[..3] };
                input.len() >= name.len() && input[..name.len()].eq_ignore_ascii_case(name)
            })?;
            let length = if full { MONTHS[found].len() } else { 3 };
            (found as i64 + 1, &input[length..])
        }
        'p' => {
            let upper = input.get(..2)?.to_ascii_uppercase();
            fields.afternoon = Some(match upper.as_str() {
                "AM" => false,
                "PM" => true,
                _ => return None,
            });
            return Some(&input[2..]);
        }
        'T' => return read_clock(input, fields),
        '%' => return input.strip_prefix('%'),
        _ => return None,
    };
    match specifier {
        'Y' | 'y' => fields.year = Some(value),
        'm' | 'c' | 'M' | 'b' => fields.month = Some(value),
        'd' | 'e' => fields.day = Some(value),
        'H' | 'k' | 'h' | 'I' | 'l' => fields.hour = Some(value),
        'i' => fields.minute = value,
        's' | 'S' => fields.second = value,
        _ => fields.micros = value,
    }
    Some(rest)
}

/// `%T`: hh:mm:ss.
fn read_clock<'a>(input: &'a str, fields: &mut Fields) -> Option<&'a str> {
    let mut rest = input;
    for (n, specifier) in ['H', 'i', 's'].into_iter().enumerate() {
        if n > 0 {
            rest = rest.strip_prefix(':')?;
        }
        rest = read_field(specifier, rest, fields)?;
    }
    Some(rest)
}

impl Fields {
    fn into_parsed(self) -> Option<Parsed> {
        let mut hour = self.hour;
        if let (Some(h), Some(afternoon)) = (hour, self.afternoon) {
            if !(1..=12).contains(&h) {
                return None;
            }
            hour = Some(h % 12 + if afternoon { 12 } else { 0 });
        }
        let has_date = self.year.is_some() || self.month.is_some() || self.day.is_some();
        let has_time = hour.is_some();
        let time_us = if has_time {
            let (h, m, s) = (hour.unwrap_or(0), self.minute, self.second);
            if h > 23 || m > 59 || s > 59 {
                return None;
            }
            ((h * 60 + m) * 60 + s) * 1_000_000 + self.micros
        } else {
            0
        };
        if !has_date {
            return has_time.then_some(Parsed::Time(time_us));
        }
        let date = Date::new(
            u16::try_from(self.year.unwrap_or(0)).ok()?,
            u8::try_from(self.month.unwrap_or(0)).ok()?,
            u8::try_from(self.day.unwrap_or(0)).ok()?,
        )?;
        Some(if has_time {
            Parsed::DateTime(DateTime::new(date, time_us as u64)?)
        } else {
            Parsed::Date(date)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dt(y: u16, mo: u8, d: u8, h: u64, mi: u64, s: u64) -> DateTime {
        DateTime::new(
            Date::new(y, mo, d).unwrap(),
            ((h * 60 + mi) * 60 + s) * 1_000_000,
        )
        .unwrap()
    }

    #[test]
    fn formats_as_mysql_writes_them() {
        let t = dt(2026, 11, 5, 14, 7, 9);
        assert_eq!(
            format_datetime(t, "%Y-%m-%d %H:%i:%s"),
            "2026-11-05 14:07:09"
        );
        assert_eq!(
            format_datetime(t, "%W %M %D %y, %l:%i %p"),
            "Thursday November 5th 26, 2:07 PM"
        );
        assert_eq!(
            format_datetime(t, "%a %b %e %j %T %% %Q"),
            "Thu Nov 5 309 14:07:09 % Q"
        );
        assert_eq!(
            format_datetime(dt(2026, 1, 1, 0, 0, 0), "%r"),
            "12:00:00 AM"
        );
    }

    #[test]
    fn str_to_date_reads_what_the_format_says() {
        let parsed = parse_with_format("05/11/2026 2:07:09 PM", "%d/%m/%Y %h:%i:%s %p");
        assert_eq!(parsed, Some(Parsed::DateTime(dt(2026, 11, 5, 14, 7, 9))));
        let date = parse_with_format("November 5, 2026", "%M %e, %Y");
        assert_eq!(date, Some(Parsed::Date(Date::new(2026, 11, 5).unwrap())));
        assert_eq!(
            parse_with_format("14:07:09", "%T"),
            Some(Parsed::Time(50_829_000_000))
        );
        assert_eq!(parse_with_format("2026-02-30", "%Y-%m-%d"), None);
        assert_eq!(parse_with_format("2026/11/05", "%Y-%m-%d"), None);
    }
}
