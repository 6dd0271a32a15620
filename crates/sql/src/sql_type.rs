//! Column types SQL has and storage does not: `YEAR`, `ENUM`, `SET`, `BIT` and `JSON`.
//!
//! Each is kept in a storage type (below) and its SQL type in the table's extra metadata
//! ([`crate::table_metadata`]), so data nodes never learn of them; the front end checks and
//! converts values on the way in, and describes the columns to clients as MySQL does.
//!
//! | SQL type      | stored as                       | value in expressions      |
//! |---------------|---------------------------------|---------------------------|
//! | `YEAR`        | SMALLINT UNSIGNED (0, 1901-2155)| the year, a number         |
//! | `ENUM(...)`   | VARCHAR of the longest member   | the member, a string       |
//! | `SET(...)`    | VARCHAR of all members          | members in declared order  |
//! | `BIT(M)`      | BIGINT UNSIGNED                 | a number; bytes to clients |
//! | `JSON`        | TEXT, in MySQL's normal form    | the document's text        |
//!
//! ENUM and SET keep the member's text rather than its number, so comparisons, LIKE and
//! pushed filters work on the text as MySQL's do; unlike MySQL, ORDER BY sorts them by
//! text, not by the members' declared order.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sqlparser::ast::{DataType, EnumMember};

use kista_client::types::{Collation, ColumnType, Value};

use crate::error::{SqlError, SqlResult};
use crate::protocol::{column_flag, column_type as code, COLLATION_BINARY, COLLATION_UTF8MB4};
use crate::value::{coerce, to_text};

/// A VARCHAR under MySQL's default collation: the type of string expressions and of the
/// string columns of derived tables and `information_schema`.
pub const fn default_varchar(max_length: u32) -> ColumnType {
    ColumnType::VarChar {
        max_length,
        collation: Collation::utf8mb4_0900_ai_ci,
    }
}

/// TEXT under MySQL's default collation.
pub const DEFAULT_TEXT: ColumnType = ColumnType::Text {
    collation: Collation::utf8mb4_0900_ai_ci,
};

/// The most members an ENUM may have (MySQL's limit).
pub const ENUM_MEMBERS_MAX: usize = 65_535;
/// The most members a SET may have (one bit each in MySQL).
pub const SET_MEMBERS_MAX: usize = 64;
/// The longest ENUM or SET member, in characters (MySQL's limit).
pub const MEMBER_CHARS_MAX: usize = 255;
/// The widest BIT column.
pub const BIT_WIDTH_MAX: u8 = 64;

/// A column type SQL declares beyond its storage type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SqlType {
    Year,
    Enum(Arc<[String]>),
    Set(Arc<[String]>),
    Bit(u8),
    Json,
}

impl SqlType {
    /// The SQL type `data_type` declares, if storage has no type of its own for it
    /// (`None`: the storage type is the SQL type).
    pub fn declared(data_type: &DataType, column: &str) -> SqlResult<Option<SqlType>> {
        Ok(Some(match data_type {
            DataType::Enum(members, _) => {
                let names = members.iter().map(|m| match m {
                    EnumMember::Name(name) | EnumMember::NamedValue(name, _) => name.clone(),
                });
                SqlType::Enum(members_of("ENUM", names, ENUM_MEMBERS_MAX, column)?)
            }
            DataType::Set(members) => {
                let members = members_of("SET", members.iter().cloned(), SET_MEMBERS_MAX, column)?;
                if members.iter().any(|m| m.contains(',')) {
                    return Err(SqlError::new(
                        1367,
                        "HY000",
                        format!("Illegal set '{}' value found during parsing", column),
                    ));
                }
                SqlType::Set(members)
            }
            DataType::Bit(width) => SqlType::Bit(bit_width(width.unwrap_or(1), column)?),
            DataType::JSON => SqlType::Json,
            DataType::Custom(name, modifiers) if name.to_string().eq_ignore_ascii_case("YEAR") => {
                if !matches!(modifiers.as_slice(), [] | [_]) || modifiers.iter().any(|m| m != "4") {
                    return Err(SqlError::new(
                        1818,
                        "HY000",
                        "Supports only YEAR or YEAR(4) column.",
                    ));
                }
                SqlType::Year
            }
            _ => return Ok(None),
        }))
    }

    /// The storage type holding the column's values.
    pub fn storage_type(&self) -> ColumnType {
        let longest = |members: &[String]| members.iter().map(String::len).max().unwrap_or(0);
        match self {
            SqlType::Year => ColumnType::unsigned(2),
            SqlType::Enum(members) => ColumnType::varchar(longest(members).max(1) as u32),
            SqlType::Set(members) => ColumnType::varchar(
                (members.iter().map(|m| m.len() + 1).sum::<usize>()).max(1) as u32,
            ),
            SqlType::Bit(_) => ColumnType::unsigned(8),
            SqlType::Json => ColumnType::TEXT,
        }
    }

    /// `value` as the column keeps it, or MySQL's strict-mode error naming `column`.
    pub fn coerce(&self, value: &Value, column: &str) -> SqlResult<Value> {
        if value.is_null() {
            return Ok(Value::Null);
        }
        match self {
            SqlType::Year => year(value, column),
            SqlType::Enum(members) => enum_member(members, value, column),
            SqlType::Set(members) => set_members(members, value, column),
            SqlType::Bit(width) => bits(*width, value, column),
            SqlType::Json => match value {
                Value::Bytes(text) => Ok(Value::Bytes(crate::json::normalize(text, column)?)),
                _ => Err(SqlError::new(
                    3140,
                    "22032",
                    format!("Invalid JSON text: \"not a JSON text, may need CAST\" at position 0 in value for column '{column}'."),
                )),
            },
        }
    }

    /// (type code, display width, flags, decimals, collation), as MySQL describes the type.
    pub fn protocol_type(&self) -> (u8, u32, u16, u8, u16) {
        let text_width = |column_type: ColumnType| match column_type {
            ColumnType::VarChar { max_length, .. } => 4 * max_length,
            _ => 0,
        };
        match self {
            SqlType::Year => (
                code::YEAR,
                4,
                column_flag::UNSIGNED | column_flag::ZEROFILL | column_flag::NUM,
                0,
                COLLATION_BINARY,
            ),
            SqlType::Enum(_) => (
                code::STRING,
                text_width(self.storage_type()),
                column_flag::ENUM,
                0,
                COLLATION_UTF8MB4,
            ),
            SqlType::Set(_) => (
                code::STRING,
                text_width(self.storage_type()),
                column_flag::SET,
                0,
                COLLATION_UTF8MB4,
            ),
            SqlType::Bit(width) => (
                code::BIT,
                u32::from(*width),
                column_flag::UNSIGNED,
                0,
                COLLATION_BINARY,
            ),
            SqlType::Json => (
                code::JSON,
                u32::MAX,
                column_flag::BLOB | column_flag::BINARY,
                0,
                COLLATION_BINARY,
            ),
        }
    }

    /// The type as SHOW CREATE TABLE prints it (`enum('a','b')`, `bit(8)`, ...).
    pub fn type_name(&self) -> String {
        let listed = |members: &[String]| {
            members
                .iter()
                .map(|m| format!("'{}'", m.replace('\'', "''")))
                .collect::<Vec<_>>()
                .join(",")
        };
        match self {
            SqlType::Year => "year".into(),
            SqlType::Enum(members) => format!("enum({})", listed(members)),
            SqlType::Set(members) => format!("set({})", listed(members)),
            SqlType::Bit(width) => format!("bit({width})"),
            SqlType::Json => "json".into(),
        }
    }

    /// The type's name alone, as `information_schema.COLUMNS.DATA_TYPE` gives it.
    pub fn data_type(&self) -> &'static str {
        match self {
            SqlType::Year => "year",
            SqlType::Enum(_) => "enum",
            SqlType::Set(_) => "set",
            SqlType::Bit(_) => "bit",
            SqlType::Json => "json",
        }
    }
}

/// ENUM or SET members as MySQL keeps them: trailing spaces removed, no two alike
/// (ignoring case, as the default collation does), none too long.
fn members_of(
    kind: &str,
    names: impl Iterator<Item = String>,
    max: usize,
    column: &str,
) -> SqlResult<Arc<[String]>> {
    let mut members: Vec<String> = Vec::new();
    for name in names {
        let name = name.trim_end_matches(' ').to_string();
        if name.chars().count() > MEMBER_CHARS_MAX {
            return Err(SqlError::new(
                1097,
                "HY000",
                format!("Too long enumeration/set value for column {column}."),
            ));
        }
        if members
            .iter()
            .any(|m| m.to_lowercase() == name.to_lowercase())
        {
            return Err(SqlError::new(
                1291,
                "HY000",
                format!("Column '{column}' has duplicated value '{name}' in {kind}"),
            ));
        }
        members.push(name);
    }
    if members.is_empty() || members.len() > max {
        return Err(SqlError::new(
            1097,
            "HY000",
            format!("Too many strings for column {column} and SET"),
        ));
    }
    Ok(members.into())
}

fn bit_width(width: u64, column: &str) -> SqlResult<u8> {
    match u8::try_from(width) {
        Ok(width @ 1..=BIT_WIDTH_MAX) => Ok(width),
        _ => Err(SqlError::new(
            1439,
            "42000",
            format!("Display width out of range for column '{column}' (max = {BIT_WIDTH_MAX})"),
        )),
    }
}

fn truncated(column: &str) -> SqlError {
    SqlError::new(
        1265,
        "01000",
        format!("Data truncated for column '{column}'"),
    )
}

/// A YEAR: 1901-2155 or 0; one or two digits name 1970-2069 (`'0'` and `'00'` are 2000,
/// the number 0 is the zero year).
fn year(value: &Value, column: &str) -> SqlResult<Value> {
    let (number, digits) = match value {
        Value::Bytes(text) => {
            let text = String::from_utf8_lossy(text);
            let trimmed = text.trim();
            let number: i64 = trimmed
                .parse()
                .map_err(|_| SqlError::wrong_value("integer", &text, column))?;
            (number, trimmed.trim_start_matches(['-', '+']).len())
        }
        Value::Date(date) => (i64::from(date.year), 4),
        Value::DateTime(datetime) => (i64::from(datetime.date.year), 4),
        other => {
            let integer = coerce(other, ColumnType::signed(8), column)?;
            let Value::Int(number) = integer else {
                return Err(SqlError::out_of_range(column));
            };
            (number, if number == 0 { 4 } else { 0 })
        }
    };
    let year = match number {
        0 if digits == 4 => 0,
        0..=69 => 2000 + number,
        70..=99 => 1900 + number,
        1901..=2155 => number,
        _ => return Err(SqlError::out_of_range(column)),
    };
    Ok(Value::UInt(year as u64))
}

fn enum_member(members: &[String], value: &Value, column: &str) -> SqlResult<Value> {
    if let Value::Int(_) | Value::UInt(_) = value {
        let number = crate::value::to_i64(value).unwrap_or(0);
        return usize::try_from(number)
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| members.get(i))
            .map(|m| Value::Bytes(m.clone().into_bytes()))
            .ok_or_else(|| truncated(column));
    }
    let text = String::from_utf8_lossy(&to_text(value)).into_owned();
    member_named(members, &text)
        .map(|m| Value::Bytes(m.as_bytes().to_vec()))
        .ok_or_else(|| truncated(column))
}

fn member_named<'m>(members: &'m [String], name: &str) -> Option<&'m String> {
    let name = name.trim_end_matches(' ').to_lowercase();
    members.iter().find(|m| m.to_lowercase() == name)
}

/// A SET: members named in any order and repeated, or a number whose bits pick them;
/// kept as the members in declared order, separated by commas.
fn set_members(members: &[String], value: &Value, column: &str) -> SqlResult<Value> {
    let chosen: u64 = match value {
        Value::Int(_) | Value::UInt(_) => {
            let number = crate::value::to_i64(value).unwrap_or(-1);
            let all = if members.len() == 64 {
                u64::MAX
            } else {
                (1u64 << members.len()) - 1
            };
            match u64::try_from(number) {
                Ok(bits) if bits & !all == 0 => bits,
                _ => return Err(truncated(column)),
            }
        }
        other => {
            let text = String::from_utf8_lossy(&to_text(other)).into_owned();
            let mut bits = 0u64;
            for name in text.split(',').filter(|n| !n.is_empty()) {
                let member = member_named(members, name).ok_or_else(|| truncated(column))?;
                let position = members.iter().position(|m| m == member).unwrap_or(0);
                bits |= 1 << position;
            }
            bits
        }
    };
    let text = members
        .iter()
        .enumerate()
        .filter(|(i, _)| chosen & (1 << i) != 0)
        .map(|(_, m)| m.as_str())
        .collect::<Vec<_>>()
        .join(",");
    Ok(Value::Bytes(text.into_bytes()))
}

/// A BIT(width): a number, or a string's bytes read as a big-endian number (as MySQL
/// takes `b'101'`, `x'05'` and `'a'`), that fits in `width` bits.
fn bits(width: u8, value: &Value, column: &str) -> SqlResult<Value> {
    let number: u64 = match value {
        Value::Bytes(bytes) if bytes.len() <= 8 => {
            bytes.iter().fold(0, |n, &b| (n << 8) | u64::from(b))
        }
        Value::Bytes(_) => return Err(SqlError::data_too_long(column)),
        Value::UInt(n) => *n,
        Value::Int(n) => *n as u64,
        other => match coerce(other, ColumnType::signed(8), column)? {
            Value::Int(n) => n as u64,
            _ => return Err(SqlError::data_too_long(column)),
        },
    };
    if width < 64 && number >> width != 0 {
        return Err(SqlError::data_too_long(column));
    }
    Ok(Value::UInt(number))
}

/// A BIT column's value as clients receive it: `(width + 7) / 8` bytes, big-endian.
pub fn bit_bytes(value: &Value, width: u32) -> Vec<u8> {
    let number = match value {
        Value::UInt(n) => *n,
        other => crate::value::to_i64(other).unwrap_or(0) as u64,
    };
    let length = (width.clamp(1, 64) as usize).div_ceil(8);
    number.to_be_bytes()[8 - length..].to_vec()
}

#[cfg(test)]
mod tests;
