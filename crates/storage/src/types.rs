//! Column types and values.
//!
//! Limits (documented in `docs/data-types.md`): CHAR/BINARY up to 255 bytes, VARCHAR/VARBINARY
//! up to 65,535 bytes, TEXT/BLOB up to [`LOB_BYTES_MAX`], DECIMAL precision up to 38 digits.
//! Lengths are in bytes.

use std::fmt;

pub use kista_collation::{Collation, COLLATIONS};

/// The largest TEXT or BLOB value.
pub const LOB_BYTES_MAX: u32 = 256 * 1024;
/// The largest CHAR or BINARY length.
pub const FIXED_BYTES_MAX: u16 = 255;
/// The largest VARCHAR or VARBINARY length.
pub const VAR_BYTES_MAX: u32 = 65_535;
/// The largest DECIMAL precision (digits); values are kept as 128-bit integers.
pub const DECIMAL_PRECISION_MAX: u8 = 38;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// Integer of 1, 2, 4 or 8 bytes.
    Int {
        bytes: u8,
        signed: bool,
    },
    Float,
    Double,
    /// `precision` digits, `scale` of them after the point.
    Decimal {
        precision: u8,
        scale: u8,
    },
    /// Fixed length, padded with spaces; trailing spaces are removed when read (as MySQL).
    Char {
        length: u16,
        collation: Collation,
    },
    /// Fixed length, padded with zero bytes; read back at full length (as MySQL).
    Binary {
        length: u16,
    },
    VarChar {
        max_length: u32,
        collation: Collation,
    },
    VarBinary {
        max_length: u32,
    },
    Text {
        collation: Collation,
    },
    Blob,
    Date,
    /// A signed duration of up to ±838:59:59.999999 (as MySQL).
    Time,
    DateTime,
    /// Microseconds since 1970-01-01 00:00:00 UTC.
    Timestamp,
}

/// A column type that cannot exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TypeError {
    #[error("integers are 1, 2, 4 or 8 bytes, not {0}")]
    IntegerWidth(u8),
    #[error("DECIMAL({precision},{scale}): precision must be 1..={DECIMAL_PRECISION_MAX} and scale at most the precision")]
    DecimalShape { precision: u8, scale: u8 },
    #[error("fixed-length columns are 1..={FIXED_BYTES_MAX} bytes, not {0}")]
    FixedLength(u16),
    #[error("variable-length columns are 1..={VAR_BYTES_MAX} bytes, not {0}")]
    VarLength(u32),
}

impl ColumnType {
    /// A signed integer of 1, 2, 4 or 8 bytes (TINYINT, SMALLINT, INT, BIGINT).
    pub const fn signed(bytes: u8) -> Self {
        ColumnType::Int {
            bytes,
            signed: true,
        }
    }

    /// An unsigned integer of 1, 2, 4 or 8 bytes.
    pub const fn unsigned(bytes: u8) -> Self {
        ColumnType::Int {
            bytes,
            signed: false,
        }
    }

    pub fn check(self) -> Result<Self, TypeError> {
        match self {
            ColumnType::Int { bytes, .. } if !matches!(bytes, 1 | 2 | 4 | 8) => {
                Err(TypeError::IntegerWidth(bytes))
            }
            ColumnType::Decimal { precision, scale }
                if precision == 0 || precision > DECIMAL_PRECISION_MAX || scale > precision =>
            {
                Err(TypeError::DecimalShape { precision, scale })
            }
            ColumnType::Char { length, .. } | ColumnType::Binary { length }
                if length == 0 || length > FIXED_BYTES_MAX =>
            {
                Err(TypeError::FixedLength(length))
            }
            ColumnType::VarChar { max_length, .. } | ColumnType::VarBinary { max_length }
                if max_length == 0 || max_length > VAR_BYTES_MAX =>
            {
                Err(TypeError::VarLength(max_length))
            }
            _ => Ok(self),
        }
    }

    /// Bytes the column takes in a row's fixed part; 0 for columns stored in the variable part.
    pub fn fixed_bytes(self) -> usize {
        match self {
            ColumnType::Int { bytes, .. } => usize::from(bytes),
            ColumnType::Float | ColumnType::Date => 4,
            ColumnType::Double
            | ColumnType::Time
            | ColumnType::DateTime
            | ColumnType::Timestamp => 8,
            ColumnType::Decimal { .. } => 16,
            ColumnType::Char { length, .. } | ColumnType::Binary { length } => usize::from(length),
            ColumnType::VarChar { .. }
            | ColumnType::VarBinary { .. }
            | ColumnType::Text { .. }
            | ColumnType::Blob => 0,
        }
    }

    pub fn is_variable(self) -> bool {
        self.fixed_bytes() == 0
    }

    /// The most bytes a value of a variable-length type may have.
    pub fn max_var_bytes(self) -> u32 {
        match self {
            ColumnType::VarChar { max_length, .. } | ColumnType::VarBinary { max_length } => {
                max_length
            }
            ColumnType::Text { .. } | ColumnType::Blob => LOB_BYTES_MAX,
            _ => 0,
        }
    }

    /// Whether the column holds strings (text or binary).
    pub fn holds_strings(self) -> bool {
        matches!(
            self,
            ColumnType::Char { .. }
                | ColumnType::VarChar { .. }
                | ColumnType::Text { .. }
                | ColumnType::Binary { .. }
                | ColumnType::VarBinary { .. }
                | ColumnType::Blob
        )
    }

    /// How the column's values compare: a text type's collation, `binary` for the others
    /// (numbers and dates never compare as strings).
    pub fn collation(self) -> Collation {
        match self {
            ColumnType::Char { collation, .. }
            | ColumnType::VarChar { collation, .. }
            | ColumnType::Text { collation } => collation,
            _ => Collation::binary,
        }
    }

    /// A text value as the column reads it back: CHAR without its trailing spaces.
    pub fn unpadded(self, text: &[u8]) -> &[u8] {
        match self {
            ColumnType::Char { .. } => kista_collation::trim_spaces(text),
            _ => text,
        }
    }

    /// Whether values compare as they are stored, byte for byte: no weight key to compute.
    pub fn compares_bytewise(self) -> bool {
        self.collation().is_bytewise()
    }

    /// The type holding the same strings under `collation`: a text type takes it; under
    /// `binary` a text type becomes its binary twin (MySQL's `CHARACTER SET binary`).
    /// Other types are returned as they are.
    pub fn with_collation(self, collation: Collation) -> Self {
        match (self, collation) {
            (ColumnType::Char { length, .. }, Collation::binary) => ColumnType::Binary { length },
            (ColumnType::VarChar { max_length, .. }, Collation::binary) => {
                ColumnType::VarBinary { max_length }
            }
            (ColumnType::Text { .. }, Collation::binary) => ColumnType::Blob,
            (ColumnType::Char { length, .. }, _) => ColumnType::Char { length, collation },
            (ColumnType::VarChar { max_length, .. }, _) => ColumnType::VarChar {
                max_length,
                collation,
            },
            (ColumnType::Text { .. }, _) => ColumnType::Text { collation },
            (other, _) => other,
        }
    }

    /// VARCHAR(`max_length`) compared byte for byte (`utf8mb4_0900_bin`), as the native
    /// API's tables have them.
    pub const fn varchar(max_length: u32) -> Self {
        ColumnType::VarChar {
            max_length,
            collation: Collation::utf8mb4_0900_bin,
        }
    }

    /// CHAR(`length`) compared byte for byte.
    pub const fn char(length: u16) -> Self {
        ColumnType::Char {
            length,
            collation: Collation::utf8mb4_0900_bin,
        }
    }

    /// TEXT compared byte for byte.
    pub const TEXT: Self = ColumnType::Text {
        collation: Collation::utf8mb4_0900_bin,
    };
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ColumnType::Int { bytes, signed } => {
                let name = match bytes {
                    1 => "TINYINT",
                    2 => "SMALLINT",
                    4 => "INT",
                    _ => "BIGINT",
                };
                write!(f, "{name}{}", if signed { "" } else { " UNSIGNED" })
            }
            ColumnType::Float => f.write_str("FLOAT"),
            ColumnType::Double => f.write_str("DOUBLE"),
            ColumnType::Decimal { precision, scale } => write!(f, "DECIMAL({precision},{scale})"),
            ColumnType::Char { length, .. } => write!(f, "CHAR({length})"),
            ColumnType::Binary { length } => write!(f, "BINARY({length})"),
            ColumnType::VarChar { max_length, .. } => write!(f, "VARCHAR({max_length})"),
            ColumnType::VarBinary { max_length } => write!(f, "VARBINARY({max_length})"),
            ColumnType::Text { .. } => f.write_str("TEXT"),
            ColumnType::Blob => f.write_str("BLOB"),
            ColumnType::Date => f.write_str("DATE"),
            ColumnType::Time => f.write_str("TIME"),
            ColumnType::DateTime => f.write_str("DATETIME"),
            ColumnType::Timestamp => f.write_str("TIMESTAMP"),
        }
    }
}

/// A fixed-point number: `unscaled / 10^scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Decimal {
    pub unscaled: i128,
    pub scale: u8,
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.unscaled < 0 { "-" } else { "" };
        let magnitude = self.unscaled.unsigned_abs();
        if self.scale == 0 {
            return write!(f, "{sign}{magnitude}");
        }
        let divisor = 10u128.pow(u32::from(self.scale));
        let width = usize::from(self.scale);
        write!(
            f,
            "{sign}{}.{:0width$}",
            magnitude / divisor,
            magnitude % divisor
        )
    }
}

/// A calendar date (proleptic Gregorian), years 1..=9999.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    pub year: u16,
    pub month: u8,
    pub day: u8,
}

impl Date {
    pub fn new(year: u16, month: u8, day: u8) -> Option<Self> {
        let valid = (1..=9999).contains(&year)
            && (1..=12).contains(&month)
            && day >= 1
            && day <= days_in_month(year, month);
        valid.then_some(Self { year, month, day })
    }

    /// Days since 1970-01-01 (negative before).
    pub fn to_days(self) -> i32 {
        let (year, month) = (i64::from(self.year), i64::from(self.month));
        let shifted_year = if month <= 2 { year - 1 } else { year };
        let era = shifted_year.div_euclid(400);
        let year_of_era = shifted_year - era * 400;
        let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + i64::from(self.day) - 1;
        let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
        (era * 146_097 + day_of_era - 719_468) as i32
    }

    /// Whether [`Date::from_days`] takes `days` (a date in years 1 to 9999), without
    /// working out the date.
    pub fn days_valid(days: i32) -> bool {
        (DATE_DAYS_MIN..=DATE_DAYS_MAX).contains(&days)
    }

    pub fn from_days(days: i32) -> Option<Self> {
        let z = i64::from(days) + 719_468;
        let era = z.div_euclid(146_097);
        let day_of_era = z - era * 146_097;
        let year_of_era =
            (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
        let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
        let shifted_month = (5 * day_of_year + 2) / 153;
        let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
        let month = if shifted_month < 10 {
            shifted_month + 3
        } else {
            shifted_month - 9
        };
        let year = year_of_era + era * 400 + i64::from(month <= 2);
        Date::new(u16::try_from(year).ok()?, month as u8, day as u8)
    }
}

fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
}

/// Microseconds per day.
const DAY_US: i64 = 86_400_000_000;
/// The days (since 1970-01-01) of 0001-01-01 and 9999-12-31, the first and last dates.
const DATE_DAYS_MIN: i32 = -719_162;
const DATE_DAYS_MAX: i32 = 2_932_896;
/// The largest TIME magnitude: 838:59:59.999999.
pub const TIME_US_MAX: i64 = (838 * 3600 + 59 * 60 + 59) * 1_000_000 + 999_999;

/// A date and a time of day with microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DateTime {
    pub date: Date,
    /// Microseconds since midnight, below one day.
    pub time_us: u64,
}

impl DateTime {
    pub fn new(date: Date, time_us: u64) -> Option<Self> {
        (time_us < DAY_US as u64).then_some(Self { date, time_us })
    }

    /// Microseconds since 1970-01-01 00:00:00.
    pub fn to_micros(self) -> i64 {
        i64::from(self.date.to_days()) * DAY_US + self.time_us as i64
    }

    /// Whether [`DateTime::from_micros`] takes `micros`, without working out the date.
    pub fn micros_valid(micros: i64) -> bool {
        let first = i64::from(DATE_DAYS_MIN) * DAY_US;
        let last = (i64::from(DATE_DAYS_MAX) + 1) * DAY_US - 1;
        (first..=last).contains(&micros)
    }

    pub fn from_micros(micros: i64) -> Option<Self> {
        let days = i32::try_from(micros.div_euclid(DAY_US)).ok()?;
        DateTime::new(Date::from_days(days)?, micros.rem_euclid(DAY_US) as u64)
    }
}

/// What a column holds. Integer values carry the widest type; the column type bounds them.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    UInt(u64),
    Float(f32),
    Double(f64),
    Decimal(Decimal),
    /// CHAR, BINARY, VARCHAR, VARBINARY, TEXT and BLOB values.
    Bytes(Vec<u8>),
    Date(Date),
    /// Signed microseconds, at most [`TIME_US_MAX`] either way.
    Time(i64),
    DateTime(DateTime),
    /// Microseconds since the epoch, UTC.
    Timestamp(i64),
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
}

/// Why a value does not fit a column type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("a {value} value does not fit a {column_type} column")]
    WrongType {
        value: &'static str,
        column_type: ColumnType,
    },
    #[error("{value} is out of range for {column_type}")]
    OutOfRange {
        value: String,
        column_type: ColumnType,
    },
    #[error("a value of {length} bytes exceeds {column_type}")]
    TooLong {
        length: usize,
        column_type: ColumnType,
    },
}

impl Value {
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Int(_) => "signed integer",
            Value::UInt(_) => "unsigned integer",
            Value::Float(_) => "FLOAT",
            Value::Double(_) => "DOUBLE",
            Value::Decimal(_) => "DECIMAL",
            Value::Bytes(_) => "string",
            Value::Date(_) => "DATE",
            Value::Time(_) => "TIME",
            Value::DateTime(_) => "DATETIME",
            Value::Timestamp(_) => "TIMESTAMP",
        }
    }
}

/// Range of an integer column as i128, which holds every 64-bit value of either sign.
pub fn integer_range(bytes: u8, signed: bool) -> (i128, i128) {
    let bits = u32::from(bytes) * 8;
    if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

pub(crate) fn decimal_fits(decimal: Decimal, precision: u8, scale: u8) -> bool {
    // At most `precision` digits: below 10^precision (every i128 is, past 38 digits). A
    // compare instead of counting digits by u128 divisions: every written row checks it.
    let magnitude = decimal.unscaled.unsigned_abs();
    decimal.scale == scale
        && 10u128
            .checked_pow(u32::from(precision))
            .is_none_or(|limit| magnitude < limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_column_types_are_rejected() {
        assert!(ColumnType::Int {
            bytes: 3,
            signed: true
        }
        .check()
        .is_err());
        assert!(ColumnType::Decimal {
            precision: 39,
            scale: 2
        }
        .check()
        .is_err());
        assert!(ColumnType::Decimal {
            precision: 5,
            scale: 6
        }
        .check()
        .is_err());
        assert!(ColumnType::char(256).check().is_err());
        assert!(ColumnType::varchar(0).check().is_err());
        assert!(ColumnType::VarBinary { max_length: 70_000 }
            .check()
            .is_err());
        assert!(ColumnType::Decimal {
            precision: 38,
            scale: 38
        }
        .check()
        .is_ok());
    }

    #[test]
    fn dates_convert_to_days_and_back() {
        let epoch = Date::new(1970, 1, 1).unwrap();
        assert_eq!(epoch.to_days(), 0);
        assert_eq!(Date::new(2000, 3, 1).unwrap().to_days(), 11_017);
        assert_eq!(Date::new(1969, 12, 31).unwrap().to_days(), -1);
        for days in (-719_162..2_932_896).step_by(997) {
            let date = Date::from_days(days).unwrap();
            assert_eq!(date.to_days(), days, "{date:?}");
        }
        assert_eq!(Date::from_days(-719_162), Date::new(1, 1, 1));
        assert_eq!(Date::from_days(2_932_896), Date::new(9999, 12, 31));
        assert_eq!(Date::from_days(2_932_897), None);
    }

    #[test]
    fn the_valid_days_and_microseconds_are_those_the_conversions_take() {
        let first = Date::new(1, 1, 1).unwrap().to_days();
        let last = Date::new(9999, 12, 31).unwrap().to_days();
        assert_eq!((first, last), (DATE_DAYS_MIN, DATE_DAYS_MAX));
        for days in [i32::MIN, first - 1, first, 0, last, last + 1, i32::MAX] {
            assert_eq!(
                Date::days_valid(days),
                Date::from_days(days).is_some(),
                "{days}"
            );
        }
        let first_us = i64::from(first) * DAY_US;
        let last_us = (i64::from(last) + 1) * DAY_US - 1;
        for micros in [
            i64::MIN,
            first_us - 1,
            first_us,
            0,
            -1,
            last_us,
            last_us + 1,
            i64::MAX,
        ] {
            let valid = DateTime::from_micros(micros).is_some();
            assert_eq!(DateTime::micros_valid(micros), valid, "{micros}");
        }
    }

    #[test]
    fn invalid_dates_are_refused() {
        assert!(Date::new(2023, 2, 29).is_none());
        assert!(Date::new(2024, 2, 29).is_some());
        assert!(Date::new(1900, 2, 29).is_none());
        assert!(Date::new(2000, 2, 29).is_some());
        assert!(Date::new(2024, 4, 31).is_none());
        assert!(Date::new(0, 1, 1).is_none());
        assert!(Date::new(2024, 13, 1).is_none());
    }

    #[test]
    fn decimals_print_with_their_scale() {
        assert_eq!(
            Decimal {
                unscaled: -12_345,
                scale: 2
            }
            .to_string(),
            "-123.45"
        );
        assert_eq!(
            Decimal {
                unscaled: 5,
                scale: 3
            }
            .to_string(),
            "0.005"
        );
        assert_eq!(
            Decimal {
                unscaled: 42,
                scale: 0
            }
            .to_string(),
            "42"
        );
        assert!(decimal_fits(
            Decimal {
                unscaled: 99_999,
                scale: 2
            },
            5,
            2
        ));
        assert!(!decimal_fits(
            Decimal {
                unscaled: 100_000,
                scale: 2
            },
            5,
            2
        ));
        let widest = |unscaled| Decimal { unscaled, scale: 0 };
        assert!(decimal_fits(widest(-(10i128.pow(38) - 1)), 38, 0));
        assert!(!decimal_fits(widest(10i128.pow(38)), 38, 0));
        assert!(
            decimal_fits(widest(i128::MIN + 1), 65, 0),
            "past 38 digits every i128 fits"
        );
        assert!(decimal_fits(widest(0), 1, 0));
    }
}
