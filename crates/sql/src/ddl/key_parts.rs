//! An index's key parts as CREATE TABLE and CREATE INDEX name them: columns, and prefixes
//! of string columns (`a(10)`: the first 10 characters of `a`, or bytes of a binary
//! column), which is how MySQL indexes TEXT and BLOB columns.
//!
//! A prefix is kept in a hidden column of its own (`#a(10)`), generated: the front end
//! fills it from its source column at every write (`SqlTable::generate`). The cluster's
//! indexes, unique ones included, work on it unchanged, so `UNIQUE (a(1))` refuses two
//! rows whose `a` begins with the same character, as MySQL does. Queries do not use a
//! prefix index to find rows (they compare the whole value).

use sqlparser::ast;

use kista_client::schema::{Column, TableSchema};
use kista_client::types::{ColumnType, Value};

use crate::error::{SqlError, SqlResult};
use crate::table_metadata::{ColumnExtras, Generated, TableExtras};

/// The longest key part, in bytes (InnoDB's limit, which MySQL applies to prefixes).
pub const KEY_PART_BYTES_MAX: u64 = 3072;

/// The columns `parts` name, in order; a prefix's hidden column is added to `schema`
/// (and `extras`) the first time a key names it, where `may_add_columns`.
pub(super) fn columns(
    parts: &[ast::IndexColumn],
    schema: &mut TableSchema,
    extras: &mut TableExtras,
    may_add_columns: bool,
) -> SqlResult<Vec<usize>> {
    parts
        .iter()
        .map(|part| {
            let (name, prefix) = named_part(&part.column.expr)?;
            let source = schema.column_index(&name).ok_or_else(|| {
                SqlError::new(
                    1072,
                    "42000",
                    format!("Key column '{name}' doesn't exist in table"),
                )
            })?;
            match prefix {
                None => refuse_lob(&schema.columns[source]).map(|()| source),
                Some(length) => prefix_column(schema, extras, source, length, may_add_columns),
            }
        })
        .collect()
}

/// A key part's column name and prefix length: `a` or `a(10)` (which the parser reads as
/// a call).
fn named_part(expr: &ast::Expr) -> SqlResult<(String, Option<u64>)> {
    match expr {
        ast::Expr::Identifier(ident) => Ok((ident.value.clone(), None)),
        ast::Expr::Function(call) if call.name.0.len() == 1 => {
            let name = call.name.0[0]
                .as_ident()
                .map(|i| i.value.clone())
                .unwrap_or_default();
            let ast::FunctionArguments::List(list) = &call.args else {
                return Err(SqlError::not_supported(format!("index on {expr}")));
            };
            match list.args.as_slice() {
                [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Value(v)))] => {
                    match &v.value {
                        ast::Value::Number(n, _) => match n.parse::<u64>() {
                            Ok(length) if length > 0 => Ok((name, Some(length))),
                            _ => Err(incorrect_prefix()),
                        },
                        _ => Err(incorrect_prefix()),
                    }
                }
                _ => Err(SqlError::not_supported(format!("index on {expr}"))),
            }
        }
        other => Err(SqlError::not_supported(format!("index on {other}"))),
    }
}

/// MySQL's 1170 for a TEXT or BLOB column in a key without a prefix length.
pub(super) fn refuse_lob(column: &Column) -> SqlResult<()> {
    if matches!(
        column.column_type,
        ColumnType::Text { .. } | ColumnType::Blob
    ) {
        return Err(SqlError::new(
            1170,
            "42000",
            format!(
                "BLOB/TEXT column '{}' used in key specification without a key length",
                column.name
            ),
        ));
    }
    Ok(())
}

fn incorrect_prefix() -> SqlError {
    SqlError::new(
        1089,
        "HY000",
        "Incorrect prefix key; the used key part isn't a string, the used length is longer than the key part, or the storage engine doesn't support unique prefix keys",
    )
}

/// The hidden column holding the first `length` characters (bytes, if binary) of column
/// `source`, added if the table has none yet.
fn prefix_column(
    schema: &mut TableSchema,
    extras: &mut TableExtras,
    source: usize,
    length: u64,
    may_add_columns: bool,
) -> SqlResult<usize> {
    let source_name = schema.columns[source].name.clone();
    // Text prefixes count characters (up to 4 bytes each), binary ones bytes.
    let (characters, declared) = match schema.columns[source].column_type {
        ColumnType::Char { length, .. } => (true, u64::from(length)),
        ColumnType::VarChar { max_length, .. } => (true, u64::from(max_length)),
        ColumnType::Text { .. } => (true, u64::MAX),
        ColumnType::Binary { length } => (false, u64::from(length)),
        ColumnType::VarBinary { max_length } => (false, u64::from(max_length)),
        ColumnType::Blob => (false, u64::MAX),
        _ => return Err(incorrect_prefix()),
    };
    if length > declared {
        return Err(incorrect_prefix());
    }
    let bytes = if characters { 4 * length } else { length };
    if bytes > KEY_PART_BYTES_MAX {
        return Err(SqlError::new(
            1071,
            "42000",
            format!("Specified key was too long; max key length is {KEY_PART_BYTES_MAX} bytes"),
        ));
    }
    let name = format!("#{source_name}({length})");
    if let Some(existing) = schema.column_index(&name) {
        return Ok(existing);
    }
    if !may_add_columns {
        return Err(SqlError::not_supported(
            "a prefix index on a table that has none on that prefix (it needs ALTER TABLE)",
        ));
    }
    let max_length = bytes as u32;
    let column_type = if characters {
        // The prefix compares as its column does: a case-insensitive column's prefix
        // index finds 'Abc' for 'abc'.
        ColumnType::varchar(max_length)
            .with_collation(schema.columns[source].column_type.collation())
    } else {
        ColumnType::VarBinary { max_length }
    };
    extras
        .columns
        .resize(schema.columns.len(), ColumnExtras::default());
    schema
        .columns
        .push(Column::new(&name, column_type).nullable());
    extras.columns.push(ColumnExtras {
        generated: Some(Generated::Prefix {
            source: source_name,
            length: length as u32,
        }),
        ..ColumnExtras::default()
    });
    Ok(schema.columns.len() - 1)
}

/// A generated column of a table, resolved to positions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrefixColumn {
    pub column: usize,
    pub source: usize,
    /// Characters (bytes, if binary) of the source it holds.
    pub length: u32,
    /// Whether `length` counts characters (a text column's prefix) or bytes.
    characters: bool,
}

impl PrefixColumn {
    /// The table's prefix columns.
    pub fn of(schema: &TableSchema, extras: &TableExtras) -> Vec<PrefixColumn> {
        extras
            .columns
            .iter()
            .enumerate()
            .filter_map(|(column, extra)| match &extra.generated {
                Some(Generated::Prefix { source, length }) => Some(PrefixColumn {
                    column,
                    source: schema.column_index(source)?,
                    length: *length,
                    characters: matches!(
                        schema.columns[column].column_type,
                        ColumnType::VarChar { .. }
                    ),
                }),
                None => None,
            })
            .collect()
    }

    /// The prefix of `value`, the source column's value (NULL stays NULL).
    pub fn prefix_of(&self, value: &Value) -> Value {
        let Value::Bytes(bytes) = value else {
            return value.clone();
        };
        let length = self.length as usize;
        let cut = match std::str::from_utf8(bytes) {
            Ok(text) if self.characters => text
                .char_indices()
                .nth(length)
                .map_or(bytes.len(), |(at, _)| at),
            _ => length.min(bytes.len()),
        };
        Value::Bytes(bytes[..cut].to_vec())
    }
}
