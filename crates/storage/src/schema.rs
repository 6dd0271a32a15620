//! Columns and tables.

use crate::types::{ColumnType, TypeError, Value, VAR_BYTES_MAX};

/// Columns a table may have (NDB: 512).
pub const COLUMNS_MAX: usize = 512;
/// Columns a primary key may have (NDB: 32).
pub const KEY_COLUMNS_MAX: usize = 32;
/// The largest [`TableSchema::extra_metadata`].
pub const EXTRA_METADATA_BYTES_MAX: usize = 256 * 1024;

#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub name: String,
    pub column_type: ColumnType,
    pub nullable: bool,
    /// Used when an insert gives no value; `None` means NULL (nullable columns) or "a value
    /// is required" (NOT NULL columns).
    pub default: Option<Value>,
    /// `Some` for a column added to an existing table in place (ALTER TABLE ADD COLUMN,
    /// NDB's online add column): it lives in each row's dynamic part, which rows written
    /// before it existed lack, and such a row reads this value for it (NULL, or the
    /// default it was added with). Added columns come after every other column.
    pub added: Option<Value>,
}

impl Column {
    pub fn new(name: &str, column_type: ColumnType) -> Self {
        Self {
            name: name.to_string(),
            column_type,
            nullable: false,
            default: None,
            added: None,
        }
    }

    /// The column as added in place to a table holding rows: those rows read `absent`.
    pub fn added_with(mut self, absent: Value) -> Self {
        self.added = Some(absent);
        self
    }

    pub fn nullable(mut self) -> Self {
        self.nullable = true;
        self
    }

    pub fn with_default(mut self, value: Value) -> Self {
        self.default = Some(value);
        self
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TableSchema {
    pub name: String,
    pub columns: Vec<Column>,
    /// Indexes into `columns`, in key order.
    pub primary_key: Vec<usize>,
    /// What the layer above keeps of the table's definition beyond what storage needs (the
    /// SQL front end: column types SQL has and storage does not, comments), kept and
    /// handed back with the schema but never read by a data node (NDB's "extra metadata",
    /// where MySQL keeps its table definition). At most [`EXTRA_METADATA_BYTES_MAX`].
    pub extra_metadata: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    #[error("table `{0}` has no columns")]
    NoColumns(String),
    #[error("table `{table}` has {count} columns; at most {COLUMNS_MAX} are allowed")]
    TooManyColumns { table: String, count: usize },
    #[error("table `{table}` has two columns named `{column}`")]
    DuplicateColumn { table: String, column: String },
    #[error("column `{column}` of table `{table}`: {source}")]
    BadType {
        table: String,
        column: String,
        source: TypeError,
    },
    #[error("table `{table}` has {bytes} bytes of extra metadata; at most {EXTRA_METADATA_BYTES_MAX} are allowed")]
    ExtraMetadataTooLarge { table: String, bytes: usize },
    #[error("table `{table}` needs a primary key of 1 to {KEY_COLUMNS_MAX} distinct columns")]
    BadPrimaryKey { table: String },
    #[error(
        "primary key column `{column}` of table `{table}` must be NOT NULL and not TEXT or BLOB"
    )]
    BadKeyColumn { table: String, column: String },
    #[error("index `{index}` of table `{table}`: {reason}")]
    BadIndex {
        table: String,
        index: String,
        reason: String,
    },
    #[error("column `{column}` of table `{table}` is added in place, so it must come after every column the table was created with and cannot be in the primary key")]
    BadAddedColumn { table: String, column: String },
    #[error("default of column `{column}` of table `{table}`: {reason}")]
    BadDefault {
        table: String,
        column: String,
        reason: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexKind {
    /// Refuses two rows with the same key (rows with a NULL in the key may repeat). Its
    /// entries live in a table of their own, the *index table* ([`IndexSchema::index_table`]),
    /// distributed by the unique key, so the key is unique across all partitions.
    Unique,
    /// A sorted index for range scans; keys may repeat.
    Ordered,
}

/// A secondary index: its columns, in key order, index into the table's columns.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexSchema {
    pub name: String,
    pub kind: IndexKind,
    pub columns: Vec<usize>,
}

/// The column of a unique index's table that names the row: its encoded primary key.
pub const INDEX_TABLE_ROW_COLUMN: &str = "$primary_key";

impl IndexSchema {
    /// The table holding a unique index's entries (NDB keeps a unique index the same way):
    /// its primary key is the index columns (NOT NULL: a row with a NULL in the key has no
    /// entry), and one more column holds the indexed row's encoded primary key. Its
    /// primary-key encoding of a key equals [`crate::row::RowLayout::key_of_values`] over
    /// the index columns of the indexed table, so either side can build a lookup key.
    pub fn index_table(&self, table: &TableSchema) -> TableSchema {
        let mut columns: Vec<Column> = self
            .columns
            .iter()
            .map(|&column| Column {
                nullable: false,
                default: None,
                added: None,
                ..table.columns[column].clone()
            })
            .collect();
        columns.push(Column::new(
            INDEX_TABLE_ROW_COLUMN,
            ColumnType::VarBinary {
                max_length: VAR_BYTES_MAX,
            },
        ));
        TableSchema {
            extra_metadata: Vec::new(),
            name: format!("{}/{}", table.name, self.name),
            primary_key: (0..self.columns.len()).collect(),
            columns,
        }
    }

    /// Checks that the index can exist on `table`.
    pub fn validate(&self, table: &TableSchema) -> Result<(), SchemaError> {
        let refuse = |reason: String| {
            Err(SchemaError::BadIndex {
                table: table.name.clone(),
                index: self.name.clone(),
                reason,
            })
        };
        let columns = &self.columns;
        if columns.is_empty() || columns.len() > KEY_COLUMNS_MAX {
            return refuse(format!("needs 1 to {KEY_COLUMNS_MAX} columns"));
        }
        for (position, &column) in columns.iter().enumerate() {
            let Some(found) = table.columns.get(column) else {
                return refuse(format!("column {column} does not exist"));
            };
            if columns[..position].contains(&column) {
                return refuse(format!("column `{}` appears twice", found.name));
            }
            if matches!(
                found.column_type,
                ColumnType::Text { .. } | ColumnType::Blob
            ) {
                return refuse(format!("column `{}` is TEXT or BLOB", found.name));
            }
        }
        Ok(())
    }
}

impl TableSchema {
    /// Checks that the table can exist; every later layer relies on these properties.
    pub fn validate(&self) -> Result<(), SchemaError> {
        let table = || self.name.clone();
        if self.columns.is_empty() {
            return Err(SchemaError::NoColumns(table()));
        }
        if self.columns.len() > COLUMNS_MAX {
            return Err(SchemaError::TooManyColumns {
                table: table(),
                count: self.columns.len(),
            });
        }
        if self.extra_metadata.len() > EXTRA_METADATA_BYTES_MAX {
            return Err(SchemaError::ExtraMetadataTooLarge {
                table: table(),
                bytes: self.extra_metadata.len(),
            });
        }
        for (index, column) in self.columns.iter().enumerate() {
            if self.columns[..index]
                .iter()
                .any(|other| other.name.eq_ignore_ascii_case(&column.name))
            {
                return Err(SchemaError::DuplicateColumn {
                    table: table(),
                    column: column.name.clone(),
                });
            }
            column
                .column_type
                .check()
                .map_err(|source| SchemaError::BadType {
                    table: table(),
                    column: column.name.clone(),
                    source,
                })?;
        }
        let key = &self.primary_key;
        let distinct = key.iter().enumerate().all(|(i, c)| !key[..i].contains(c));
        if key.is_empty()
            || key.len() > KEY_COLUMNS_MAX
            || !distinct
            || key.iter().any(|&c| c >= self.columns.len())
        {
            return Err(SchemaError::BadPrimaryKey { table: table() });
        }
        for &index in key {
            let column = &self.columns[index];
            let lob = matches!(
                column.column_type,
                ColumnType::Text { .. } | ColumnType::Blob
            );
            if column.nullable || lob {
                return Err(SchemaError::BadKeyColumn {
                    table: table(),
                    column: column.name.clone(),
                });
            }
        }
        let base_columns = self.base_columns();
        for (index, column) in self.columns.iter().enumerate() {
            let misplaced = (column.added.is_some() && key.contains(&index))
                || (column.added.is_none() && index >= base_columns);
            if misplaced {
                return Err(SchemaError::BadAddedColumn {
                    table: table(),
                    column: column.name.clone(),
                });
            }
            for value in column.default.iter().chain(&column.added) {
                crate::row::check_value(column, value).map_err(|error| {
                    SchemaError::BadDefault {
                        table: table(),
                        column: column.name.clone(),
                        reason: error.to_string(),
                    }
                })?;
            }
        }
        Ok(())
    }

    /// Why `self` cannot replace `old` in place, if it cannot: a change in place leaves every
    /// stored row's bytes valid (the same key and stored columns with the same types, a
    /// NOT NULL column may become nullable, names and defaults may change, columns may be
    /// added at the end), so no row is copied and operations made for `old` still apply.
    pub fn in_place_change_from(&self, old: &TableSchema) -> Result<(), String> {
        if self.primary_key != old.primary_key {
            return Err("the primary key changes".into());
        }
        if self.columns.len() < old.columns.len() || self.base_columns() != old.base_columns() {
            return Err("columns are dropped or moved".into());
        }
        for (new, was) in self.columns.iter().zip(&old.columns) {
            if new.column_type != was.column_type || new.added != was.added {
                return Err(format!("column `{}` changes its type", was.name));
            }
            if was.nullable && !new.nullable {
                return Err(format!("column `{}` becomes NOT NULL", was.name));
            }
        }
        match self.columns[old.columns.len()..]
            .iter()
            .find(|column| column.added.is_none())
        {
            Some(column) => Err(format!("column `{}` is not added in place", column.name)),
            None => Ok(()),
        }
    }

    /// The columns the table was created with (the others were added in place and follow).
    pub fn base_columns(&self) -> usize {
        self.columns
            .iter()
            .position(|column| column.added.is_some())
            .unwrap_or(self.columns.len())
    }

    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }
}
