//! The `information_schema` tables tools, drivers and ORMs read, built from the catalog
//! when queried, with MySQL 8's names and columns (those Kista has a value for; the rest
//! are NULL or empty as MySQL gives them for NDB tables). Queries on them run like any
//! other in the front end: WHERE, ORDER BY, grouping, joins with each other excepted.
//!
//! Each table is one [`SystemTableDef`] in `tables.rs`: its name, its columns and the
//! function that lists its rows.

mod tables;

use kista_client::schema::{Column, IndexKind, TableSchema};
use kista_client::types::{ColumnType, Value};

use crate::catalog::{Catalog, SqlTable};
use crate::ddl::PRIMARY_INDEX;
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

/// A column's default as text (`COLUMN_DEFAULT`, DESCRIBE's `Default`): a constant's
/// value, `CURRENT_TIMESTAMP`, or a default expression without its parentheses.
pub fn column_default(table: &SqlTable, position: usize) -> Value {
    let computed = &table.extras.columns[position].default_sql;
    if !computed.is_empty() {
        let bare = computed.strip_prefix('(').and_then(|e| e.strip_suffix(')'));
        return Value::Bytes(bare.unwrap_or(computed).as_bytes().to_vec());
    }
    let column = &table.schema().columns[position];
    column
        .default
        .as_ref()
        .map_or(Value::Null, |v| Value::Bytes(crate::value::to_text(v)))
}

/// `EXTRA`: `auto_increment`, `DEFAULT_GENERATED` for a computed default, `on update
/// CURRENT_TIMESTAMP`, or nothing.
pub fn column_extra(table: &SqlTable, position: usize) -> String {
    if table.auto_increment == Some(position) {
        return "auto_increment".into();
    }
    let extras = &table.extras.columns[position];
    let mut extra = Vec::new();
    if !extras.default_sql.is_empty() {
        extra.push("DEFAULT_GENERATED".to_string());
    }
    if !extras.on_update_sql.is_empty() {
        extra.push(format!("on update {}", extras.on_update_sql));
    }
    extra.join(" ")
}

/// One column of one index, as STATISTICS and SHOW INDEX list them.
pub struct IndexColumn {
    pub index: String,
    pub unique: bool,
    /// 1 for the index's first column.
    pub sequence: u64,
    /// The column indexed (a prefix's source column).
    pub column: usize,
    /// Characters of the column indexed, for a prefix.
    pub sub_part: Option<u32>,
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
            let (column, sub_part) = match table.prefix_source(column) {
                Some((source, length)) => (source, Some(length)),
                None => (column, None),
            };
            entries.push(IndexColumn {
                index: index.name.clone(),
                unique,
                sequence: sequence as u64 + 1,
                column,
                sub_part,
                index_type,
            });
        }
    }
    entries
}

/// One `information_schema` table.
pub struct SystemTableDef {
    name: &'static str,
    columns: &'static [(&'static str, Kind)],
    /// Appends the table's rows, each with a value per column.
    rows: fn(&Catalog, &mut Vec<Vec<Value>>) -> SqlResult<()>,
}

/// What a column holds.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    Number,
}

/// An `information_schema` table, as a query names it.
#[derive(Clone, Copy)]
pub struct SystemTable(&'static SystemTableDef);

impl PartialEq for SystemTable {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl std::fmt::Debug for SystemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name)
    }
}

impl SystemTable {
    /// The table called `name` (case-insensitive); error 1109 for any other.
    pub fn named(name: &str) -> SqlResult<Self> {
        tables::ALL
            .iter()
            .find(|def| def.name.eq_ignore_ascii_case(name))
            .map(SystemTable)
            .ok_or_else(|| {
                SqlError::new(
                    1109,
                    "42S02",
                    format!(
                        "Unknown table '{}' in information_schema",
                        name.to_ascii_uppercase()
                    ),
                )
            })
    }

    pub fn name(self) -> &'static str {
        self.0.name
    }

    pub fn schema(self) -> TableSchema {
        let columns = self
            .0
            .columns
            .iter()
            .map(|&(name, kind)| {
                let column_type = match kind {
                    Kind::Text => crate::sql_type::default_varchar(64),
                    Kind::Number => ColumnType::Int {
                        bytes: 8,
                        signed: false,
                    },
                };
                Column::new(name, column_type).nullable()
            })
            .collect();
        TableSchema {
            extra_metadata: Vec::new(),
            name: format!("{DATABASE}/{}", self.0.name),
            columns,
            primary_key: vec![0],
        }
    }

    /// Every row, as the catalog describes the cluster now.
    pub fn rows(self, catalog: &Catalog) -> SqlResult<Vec<Vec<Value>>> {
        let mut rows = Vec::new();
        (self.0.rows)(catalog, &mut rows)?;
        for row in &rows {
            assert_eq!(row.len(), self.0.columns.len(), "a row of {}", self.0.name);
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_found_in_any_case_and_unknown_ones_are_1109() {
        assert_eq!(
            SystemTable::named("key_column_usage").unwrap().name(),
            "KEY_COLUMN_USAGE"
        );
        assert_eq!(SystemTable::named("nope").unwrap_err().code, 1109);
        for def in tables::ALL {
            assert_eq!(SystemTable(def).schema().columns.len(), def.columns.len());
        }
    }
}
