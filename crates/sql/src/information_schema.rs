//! The `information_schema` tables tools and drivers read: SCHEMATA, TABLES, COLUMNS and
//! STATISTICS, built from the catalog when queried (they hold a subset of MySQL's columns,
//! with MySQL's names). Queries on them run like any other in the front end: WHERE,
//! ORDER BY, grouping.

use kista_client::schema::{Column, IndexKind, TableSchema};
use kista_client::types::{ColumnType, Value};

use crate::catalog::{Catalog, SqlTable};
use crate::ddl::{type_name, PRIMARY_INDEX};
use crate::error::{SqlError, SqlResult};

pub const DATABASE: &str = "information_schema";

/// A column's `COLUMN_KEY` (and DESCRIBE's `Key`): PRI, UNI, MUL or empty.
pub fn column_key(table: &SqlTable, position: usize) -> &'static str {
    let leads = |kind: Option<IndexKind>| {
        table
            .table
            .indexes()
            .any(|(_, i)| i.columns.first() == Some(&position) && kind.is_none_or(|k| i.kind == k))
    };
    if table.schema().primary_key.contains(&position) {
        "PRI"
    } else if leads(Some(IndexKind::Unique)) {
        "UNI"
    } else if leads(None) {
        "MUL"
    } else {
        ""
    }
}

/// A column's default as text (`COLUMN_DEFAULT`, DESCRIBE's `Default`).
pub fn column_default(column: &Column) -> Value {
    column
        .default
        .as_ref()
        .map_or(Value::Null, |v| Value::Bytes(crate::value::to_text(v)))
}

/// `EXTRA`: `auto_increment` or nothing.
pub fn column_extra(table: &SqlTable, position: usize) -> &'static str {
    if table.auto_increment == Some(position) {
        "auto_increment"
    } else {
        ""
    }
}

/// One column of one index, as STATISTICS and SHOW INDEX list them.
pub struct IndexColumn {
    pub index: String,
    pub unique: bool,
    /// 1 for the index's first column.
    pub sequence: u64,
    pub column: usize,
    pub index_type: &'static str,
}

/// Every index's columns, the primary key's ordered index (`PRIMARY`) first.
pub fn index_columns(table: &SqlTable) -> Vec<IndexColumn> {
    let mut entries = Vec::new();
    for (_, index) in table.table.indexes() {
        let primary = index.name == PRIMARY_INDEX;
        if primary && table.hidden_key.is_some() {
            continue;
        }
        let unique = primary || index.kind == IndexKind::Unique;
        let index_type = if index.kind == IndexKind::Unique && !primary {
            "HASH"
        } else {
            "BTREE"
        };
        for (sequence, &column) in index.columns.iter().enumerate() {
            entries.push(IndexColumn {
                index: index.name.clone(),
                unique,
                sequence: sequence as u64 + 1,
                column,
                index_type,
            });
        }
    }
    entries
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemTable {
    Schemata,
    Tables,
    Columns,
    Statistics,
}

fn text(name: &str) -> Column {
    Column::new(name, ColumnType::VarChar { max_length: 64 }).nullable()
}

fn number(name: &str) -> Column {
    Column::new(
        name,
        ColumnType::Int {
            bytes: 8,
            signed: false,
        },
    )
    .nullable()
}

fn string(s: impl Into<String>) -> Value {
    Value::Bytes(s.into().into_bytes())
}

impl SystemTable {
    /// The table called `name` (case-insensitive); error 1109 for any other.
    pub fn named(name: &str) -> SqlResult<Self> {
        Ok(match name.to_ascii_uppercase().as_str() {
            "SCHEMATA" => SystemTable::Schemata,
            "TABLES" => SystemTable::Tables,
            "COLUMNS" => SystemTable::Columns,
            "STATISTICS" => SystemTable::Statistics,
            _ => {
                return Err(SqlError::new(
                    1109,
                    "42S02",
                    format!(
                        "Unknown table '{}' in information_schema",
                        name.to_ascii_uppercase()
                    ),
                ))
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SystemTable::Schemata => "SCHEMATA",
            SystemTable::Tables => "TABLES",
            SystemTable::Columns => "COLUMNS",
            SystemTable::Statistics => "STATISTICS",
        }
    }

    pub fn schema(self) -> TableSchema {
        let columns = match self {
            SystemTable::Schemata => vec![
                text("CATALOG_NAME"),
                text("SCHEMA_NAME"),
                text("DEFAULT_CHARACTER_SET_NAME"),
                text("DEFAULT_COLLATION_NAME"),
                text("SQL_PATH"),
            ],
            SystemTable::Tables => vec![
                text("TABLE_CATALOG"),
                text("TABLE_SCHEMA"),
                text("TABLE_NAME"),
                text("TABLE_TYPE"),
                text("ENGINE"),
                number("VERSION"),
                text("ROW_FORMAT"),
                number("TABLE_ROWS"),
                number("AUTO_INCREMENT"),
                text("TABLE_COLLATION"),
                text("TABLE_COMMENT"),
            ],
            SystemTable::Columns => vec![
                text("TABLE_CATALOG"),
                text("TABLE_SCHEMA"),
                text("TABLE_NAME"),
                text("COLUMN_NAME"),
                number("ORDINAL_POSITION"),
                text("COLUMN_DEFAULT"),
                text("IS_NULLABLE"),
                text("DATA_TYPE"),
                number("CHARACTER_MAXIMUM_LENGTH"),
                number("NUMERIC_PRECISION"),
                number("NUMERIC_SCALE"),
                text("COLUMN_TYPE"),
                text("COLUMN_KEY"),
                text("EXTRA"),
            ],
            SystemTable::Statistics => vec![
                text("TABLE_CATALOG"),
                text("TABLE_SCHEMA"),
                text("TABLE_NAME"),
                number("NON_UNIQUE"),
                text("INDEX_SCHEMA"),
                text("INDEX_NAME"),
                number("SEQ_IN_INDEX"),
                text("COLUMN_NAME"),
                text("NULLABLE"),
                text("INDEX_TYPE"),
            ],
        };
        TableSchema {
            name: format!("{DATABASE}/{}", self.name()),
            columns,
            primary_key: vec![0],
        }
    }

    /// Every row, as the catalog describes the cluster now.
    pub fn rows(self, catalog: &Catalog) -> SqlResult<Vec<Vec<Value>>> {
        let databases = catalog.databases()?;
        if self == SystemTable::Schemata {
            return Ok(databases
                .into_iter()
                .map(|d| {
                    vec![
                        string("def"),
                        string(d),
                        string("utf8mb4"),
                        string("utf8mb4_general_ci"),
                        Value::Null,
                    ]
                })
                .collect());
        }
        let mut rows = Vec::new();
        for database in databases.iter().filter(|d| *d != DATABASE) {
            for name in catalog.table_names(database)? {
                let table = match catalog.table(database, &name) {
                    Ok(table) => table,
                    // Dropped meanwhile.
                    Err(error) if error.code == 1146 => continue,
                    Err(error) => return Err(error),
                };
                let schema = table.schema();
                match self {
                    SystemTable::Schemata => {}
                    SystemTable::Tables => rows.push(vec![
                        string("def"),
                        string(database.clone()),
                        string(name.clone()),
                        string("BASE TABLE"),
                        string("ndbcluster"),
                        Value::UInt(u64::from(table.table.schema_version)),
                        string("Dynamic"),
                        Value::Null,
                        Value::Null,
                        string("utf8mb4_general_ci"),
                        string(""),
                    ]),
                    SystemTable::Columns => {
                        for (position, column) in table.visible_columns() {
                            let full_type = type_name(column.column_type);
                            let data_type =
                                full_type.split(['(', ' ']).next().unwrap_or("").to_string();
                            let (length, precision, scale) = match column.column_type {
                                ColumnType::Char { length } | ColumnType::Binary { length } => {
                                    (Value::UInt(u64::from(length)), Value::Null, Value::Null)
                                }
                                ColumnType::VarChar { max_length }
                                | ColumnType::VarBinary { max_length } => {
                                    (Value::UInt(u64::from(max_length)), Value::Null, Value::Null)
                                }
                                ColumnType::Decimal { precision, scale } => (
                                    Value::Null,
                                    Value::UInt(u64::from(precision)),
                                    Value::UInt(u64::from(scale)),
                                ),
                                ColumnType::Int { bytes, .. } => (
                                    Value::Null,
                                    Value::UInt([3, 5, 0, 10, 0, 0, 0, 19][usize::from(bytes - 1)]),
                                    Value::UInt(0),
                                ),
                                _ => (Value::Null, Value::Null, Value::Null),
                            };
                            let (default, extra) =
                                (column_default(column), column_extra(&table, position));
                            rows.push(vec![
                                string("def"),
                                string(database.clone()),
                                string(name.clone()),
                                string(column.name.clone()),
                                Value::UInt(position as u64 + 1),
                                default,
                                string(if column.nullable { "YES" } else { "NO" }),
                                string(data_type),
                                length,
                                precision,
                                scale,
                                string(full_type),
                                string(column_key(&table, position)),
                                string(extra),
                            ]);
                        }
                    }
                    SystemTable::Statistics => {
                        for entry in index_columns(&table) {
                            let column = &schema.columns[entry.column];
                            rows.push(vec![
                                string("def"),
                                string(database.clone()),
                                string(name.clone()),
                                Value::UInt(u64::from(!entry.unique)),
                                string(database.clone()),
                                string(entry.index),
                                Value::UInt(entry.sequence),
                                string(column.name.clone()),
                                string(if column.nullable { "YES" } else { "" }),
                                string(entry.index_type),
                            ]);
                        }
                    }
                }
            }
        }
        Ok(rows)
    }
}
