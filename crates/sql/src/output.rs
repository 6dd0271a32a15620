//! How result columns describe themselves to clients: the MySQL type code, width, flags
//! and collation of a table column's type, or of whatever kind of value an expression
//! produced. Drivers convert text values by these types (PyMySQL makes an `int` of a
//! LONGLONG column and a `Decimal` of a NEWDECIMAL one), so they must be right.

use kista_client::types::{ColumnType, Value};

use crate::protocol::results::ColumnDefinition;
use crate::protocol::{column_flag, column_type as code, COLLATION_BINARY};
use crate::sql_type::SqlType;

/// (type code, display width, flags, decimals, collation) of a storage type.
pub fn protocol_type(column_type: ColumnType) -> (u8, u32, u16, u8, u16) {
    let binary = COLLATION_BINARY;
    let number = column_flag::NUM;
    match column_type {
        ColumnType::Int { bytes, signed } => {
            let (type_code, width) = match bytes {
                1 => (code::TINY, 4),
                2 => (code::SHORT, 6),
                4 => (code::LONG, 11),
                _ => (code::LONGLONG, 20),
            };
            let flags = number | if signed { 0 } else { column_flag::UNSIGNED };
            (type_code, width, flags, 0, binary)
        }
        ColumnType::Float => (code::FLOAT, 12, number, 31, binary),
        ColumnType::Double => (code::DOUBLE, 22, number, 31, binary),
        ColumnType::Decimal { precision, scale } => (
            code::NEWDECIMAL,
            u32::from(precision) + 2,
            number,
            scale,
            binary,
        ),
        ColumnType::Char { length, collation } => {
            (code::STRING, 4 * u32::from(length), 0, 0, collation.id())
        }
        ColumnType::Binary { length } => (
            code::STRING,
            u32::from(length),
            column_flag::BINARY,
            0,
            binary,
        ),
        ColumnType::VarChar {
            max_length,
            collation,
        } => (code::VAR_STRING, 4 * max_length, 0, 0, collation.id()),
        ColumnType::VarBinary { max_length } => {
            (code::VAR_STRING, max_length, column_flag::BINARY, 0, binary)
        }
        ColumnType::Text { collation } => {
            (code::BLOB, 262_140, column_flag::BLOB, 0, collation.id())
        }
        ColumnType::Blob => (
            code::BLOB,
            65_535,
            column_flag::BLOB | column_flag::BINARY,
            0,
            binary,
        ),
        ColumnType::Date => (code::DATE, 10, column_flag::BINARY, 0, binary),
        ColumnType::Time => (code::TIME, 17, column_flag::BINARY, 6, binary),
        ColumnType::DateTime => (code::DATETIME, 26, column_flag::BINARY, 6, binary),
        ColumnType::Timestamp => (code::TIMESTAMP, 26, column_flag::BINARY, 6, binary),
    }
}

/// The storage type that describes values like `value` (for computed columns).
pub fn type_of_value(value: &Value) -> Option<ColumnType> {
    Some(match value {
        Value::Null => return None,
        Value::Int(_) => ColumnType::Int {
            bytes: 8,
            signed: true,
        },
        Value::UInt(_) => ColumnType::Int {
            bytes: 8,
            signed: false,
        },
        Value::Float(_) => ColumnType::Float,
        Value::Double(_) => ColumnType::Double,
        Value::Decimal(d) => ColumnType::Decimal {
            precision: 38,
            scale: d.scale,
        },
        Value::Bytes(_) => crate::sql_type::default_varchar(16_383),
        Value::Date(_) => ColumnType::Date,
        Value::Time(_) => ColumnType::Time,
        Value::DateTime(_) => ColumnType::DateTime,
        Value::Timestamp(_) => ColumnType::Timestamp,
    })
}

/// Where a result column comes from, for its definition.
pub struct Origin<'a> {
    pub schema: &'a str,
    pub table: &'a str,
    pub column: &'a str,
    pub nullable: bool,
    /// The column's SQL type, where its storage type is not it.
    pub sql_type: Option<&'a SqlType>,
    /// A table's TIME, DATETIME or TIMESTAMP column's digits of a second (`DATETIME(3)`).
    pub fraction_digits: Option<u8>,
}

/// The definition of result column `name`: of `column_type` when known, else of the kind
/// of the first non-NULL value in `values`, else `likely` (a column of NULLs or of no row).
pub fn definition(
    name: &str,
    column_type: Option<ColumnType>,
    origin: Option<Origin>,
    mut values: impl Iterator<Item = Value>,
    likely: Option<ColumnType>,
) -> ColumnDefinition {
    let column_type = column_type
        .or_else(|| values.find_map(|v| type_of_value(&v)))
        .or(likely);
    let Some(column_type) = column_type else {
        return ColumnDefinition::expression(name, code::NULL, 0, 0, COLLATION_BINARY);
    };
    let declared = origin.as_ref().and_then(|o| o.sql_type);
    let (type_code, length, mut flags, decimals, collation) = match declared {
        Some(sql_type) => sql_type.protocol_type(),
        None => protocol_type(column_type),
    };
    let mut definition = ColumnDefinition::expression(name, type_code, flags, length, collation);
    definition.decimals = decimals;
    if let Some(origin) = origin {
        let temporal = matches!(
            column_type,
            ColumnType::Time | ColumnType::DateTime | ColumnType::Timestamp
        );
        if let Some(digits) = origin.fraction_digits.filter(|_| temporal) {
            definition.decimals = digits;
            definition.fraction_digits = Some(digits);
        }
        if !origin.nullable {
            flags |= column_flag::NOT_NULL;
        }
        definition.flags = flags;
        definition.schema = origin.schema.to_string();
        definition.table = origin.table.to_string();
        definition.org_name = origin.column.to_string();
    }
    definition
}
