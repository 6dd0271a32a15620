//! What SQL keeps of a table beyond its storage schema: the SQL types storage lacks
//! ([`SqlType`]), column and table comments. It travels as the schema's extra metadata
//! (`TableSchema::extra_metadata`), so it is created, changed and dropped with the table in
//! one dictionary change and every front end reads the same; data nodes never read it.
//!
//! The bytes are JSON, columns named rather than numbered (so a later ALTER that moves
//! columns cannot misattribute them), with a version for later formats. A table without
//! anything to keep has no extra metadata at all.

use serde::{Deserialize, Serialize};

use kista_client::schema::TableSchema;
use kista_client::types::Collation;

use crate::ddl::CheckDef;
use crate::error::{SqlError, SqlResult};
use crate::sql_type::SqlType;
use crate::trigger::TriggerDef;

/// The format this front end writes for a table without computed defaults: the first,
/// which every front end reads.
const FORMAT_VERSION: u32 = 1;
/// The format of a table with a computed default or ON UPDATE (`ddl/defaults.rs`): a
/// front end from before them refuses such a table (1033) rather than insert without them.
const FORMAT_VERSION_COMPUTED_DEFAULTS: u32 = 2;
/// The format of a table with CHECK constraints: a front end from before them refuses such a
/// table (1033) rather than write rows without checking them.
const FORMAT_VERSION_CHECKS: u32 = 3;
/// ... and a copying ALTER's target (`copying`): a front end that cannot mirror the
/// table's writes into it must not write the table.
const FORMAT_VERSION_COPYING: u32 = 4;
/// ... and foreign keys whose parent is not there yet (`admin/foreign_keys.rs`): a front end
/// from before them would drop them unseen when it rewrites the table's definition.
const FORMAT_VERSION_PENDING_FOREIGN_KEYS: u32 = 5;
/// The longest column or table comment, in characters (MySQL's limits).
pub const COLUMN_COMMENT_CHARS_MAX: usize = 1024;
pub const TABLE_COMMENT_CHARS_MAX: usize = 2048;

/// A column's SQL definition beyond its storage column.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ColumnExtras {
    /// The SQL type, where the storage type is not it.
    pub sql_type: Option<SqlType>,
    pub comment: String,
    /// How the front end computes the column's value, if it is generated.
    pub generated: Option<Generated>,
    /// A default computed per row (`CURRENT_TIMESTAMP(3)`, `(expr)`) as SQL text; empty
    /// when the default is a constant (kept in the storage column) or none.
    pub default_sql: String,
    /// `ON UPDATE CURRENT_TIMESTAMP[(fsp)]` as SQL text; empty when none.
    pub on_update_sql: String,
    /// Digits of a second a TIME, DATETIME or TIMESTAMP column keeps (`DATETIME(3)`): its
    /// values are rounded to them and shown with as many. 0: whole seconds.
    pub fraction_digits: u8,
}

/// A column whose value the front end computes from the row's others at every write.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Generated {
    /// The first `length` characters (bytes, if binary) of column `source`: a prefix
    /// index's key (`ddl/key_parts.rs`).
    Prefix { source: String, length: u32 },
}

/// A table's SQL definition beyond its storage schema.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableExtras {
    /// One per storage column, in the schema's order.
    pub columns: Vec<ColumnExtras>,
    pub comment: String,
    /// In the order they were created (the order they fire in).
    pub triggers: Vec<TriggerDef>,
    /// CHECK constraints, in the order they were declared (`ddl/checks.rs`).
    pub checks: Vec<CheckDef>,
    /// While a copying ALTER TABLE runs: the table its rows go to, which every write of
    /// this table is mirrored into (`table_copy.rs`).
    pub copying: Option<crate::table_copy::CopyTarget>,
    /// Foreign keys declared while FOREIGN_KEY_CHECKS was 0 whose parent table is not there
    /// yet, as their clauses (`CONSTRAINT ... REFERENCES db.parent ...`): added once it is.
    pub pending_foreign_keys: Vec<String>,
    /// The indexes made for a foreign key no index served when it was declared: dropped
    /// once another index serves it (MySQL's rule, `ddl/alter.rs`). An older front end
    /// reads past the list and keeps them.
    pub key_indexes: Vec<String>,
    /// The table's default collation (`DEFAULT CHARSET ... COLLATE`, else its database's
    /// when it was created): its text columns' where they name none, those ALTER TABLE
    /// adds included. An older front end reads past it (MySQL 8's default).
    pub collation: Collation,
}

#[derive(Serialize, Deserialize)]
struct Stored {
    version: u32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    comment: String,
    columns: Vec<StoredColumn>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    triggers: Vec<TriggerDef>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    checks: Vec<CheckDef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    copying: Option<crate::table_copy::CopyTarget>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pending_foreign_keys: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    key_indexes: Vec<String>,
    /// The collation's name; none for MySQL 8's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    collation: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct StoredColumn {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sql_type: Option<SqlType>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    comment: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    generated: Option<Generated>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    default_sql: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    on_update_sql: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    fraction_digits: u8,
}

fn is_zero(digits: &u8) -> bool {
    *digits == 0
}

impl TableExtras {
    /// The bytes to keep for `extras` of a table of `schema`'s columns (none when there is
    /// nothing to keep).
    pub fn encode(&self, schema: &TableSchema) -> Vec<u8> {
        let columns: Vec<StoredColumn> = schema
            .columns
            .iter()
            .zip(&self.columns)
            .filter(|(_, extras)| **extras != ColumnExtras::default())
            .map(|(column, extras)| StoredColumn {
                name: column.name.clone(),
                sql_type: extras.sql_type.clone(),
                comment: extras.comment.clone(),
                generated: extras.generated.clone(),
                default_sql: extras.default_sql.clone(),
                on_update_sql: extras.on_update_sql.clone(),
                fraction_digits: extras.fraction_digits,
            })
            .collect();
        if columns.is_empty()
            && self.comment.is_empty()
            && self.triggers.is_empty()
            && self.checks.is_empty()
            && self.copying.is_none()
            && self.pending_foreign_keys.is_empty()
            && self.key_indexes.is_empty()
            && self.collation == Collation::default()
        {
            return Vec::new();
        }
        let computed =
            (columns.iter()).any(|c| !c.default_sql.is_empty() || !c.on_update_sql.is_empty());
        let version = if !self.pending_foreign_keys.is_empty() {
            FORMAT_VERSION_PENDING_FOREIGN_KEYS
        } else if self.copying.is_some() {
            FORMAT_VERSION_COPYING
        } else if !self.checks.is_empty() {
            FORMAT_VERSION_CHECKS
        } else if computed {
            FORMAT_VERSION_COMPUTED_DEFAULTS
        } else {
            FORMAT_VERSION
        };
        let stored = Stored {
            version,
            comment: self.comment.clone(),
            columns,
            triggers: self.triggers.clone(),
            checks: self.checks.clone(),
            copying: self.copying.clone(),
            pending_foreign_keys: self.pending_foreign_keys.clone(),
            key_indexes: self.key_indexes.clone(),
            collation: (self.collation != Collation::default())
                .then(|| self.collation.name().to_string()),
        };
        serde_json::to_vec(&stored).unwrap_or_default()
    }

    /// What `schema`'s extra metadata holds, one entry per column; an error when it cannot
    /// be read (written by a newer front end, or damaged).
    pub fn decode(schema: &TableSchema) -> SqlResult<TableExtras> {
        let mut extras = TableExtras {
            columns: vec![ColumnExtras::default(); schema.columns.len()],
            ..TableExtras::default()
        };
        if schema.extra_metadata.is_empty() {
            return Ok(extras);
        }
        let unreadable = |reason: String| {
            SqlError::new(
                1033,
                "HY000",
                format!("Incorrect information in table '{}': {reason}", schema.name),
            )
        };
        let stored: Stored = serde_json::from_slice(&schema.extra_metadata)
            .map_err(|error| unreadable(error.to_string()))?;
        if !(FORMAT_VERSION..=FORMAT_VERSION_PENDING_FOREIGN_KEYS).contains(&stored.version) {
            return Err(unreadable(format!(
                "its SQL definition is of format {}, this front end reads {FORMAT_VERSION} \
                 to {FORMAT_VERSION_PENDING_FOREIGN_KEYS}",
                stored.version
            )));
        }
        extras.comment = stored.comment;
        extras.triggers = stored.triggers;
        extras.checks = stored.checks;
        extras.copying = stored.copying;
        extras.pending_foreign_keys = stored.pending_foreign_keys;
        extras.key_indexes = stored.key_indexes;
        if let Some(name) = stored.collation {
            extras.collation = Collation::named(&name)
                .ok_or_else(|| unreadable(format!("no collation `{name}`")))?;
        }
        for column in stored.columns {
            let position = schema
                .column_index(&column.name)
                .ok_or_else(|| unreadable(format!("no column `{}`", column.name)))?;
            extras.columns[position] = ColumnExtras {
                sql_type: column.sql_type,
                comment: column.comment,
                generated: column.generated,
                default_sql: column.default_sql,
                on_update_sql: column.on_update_sql,
                fraction_digits: column.fraction_digits,
            };
        }
        Ok(extras)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kista_client::schema::Column;
    use kista_client::types::ColumnType;

    fn schema() -> TableSchema {
        TableSchema {
            name: "db/t".into(),
            columns: vec![
                Column::new("id", ColumnType::signed(4)),
                Column::new("state", ColumnType::varchar(4)),
            ],
            primary_key: vec![0],
            extra_metadata: Vec::new(),
        }
    }

    #[test]
    fn a_table_with_nothing_beyond_storage_keeps_no_metadata() {
        let extras = TableExtras {
            columns: vec![ColumnExtras::default(); 2],
            ..TableExtras::default()
        };
        assert!(extras.encode(&schema()).is_empty());
        assert_eq!(TableExtras::decode(&schema()).unwrap(), extras);
    }

    #[test]
    fn types_and_comments_come_back_by_column_name() {
        let extras = TableExtras {
            columns: vec![
                ColumnExtras::default(),
                ColumnExtras {
                    sql_type: Some(SqlType::Enum(vec!["new".into(), "done".into()].into())),
                    comment: "where the order is".into(),
                    ..ColumnExtras::default()
                },
            ],
            comment: "orders".into(),
            ..TableExtras::default()
        };
        let mut schema = schema();
        schema.extra_metadata = extras.encode(&schema);
        assert_eq!(TableExtras::decode(&schema).unwrap(), extras);
        // Columns are found by name, wherever they have moved to.
        schema.columns.swap(0, 1);
        let moved = TableExtras::decode(&schema).unwrap();
        assert_eq!(moved.columns[0], extras.columns[1]);
    }

    /// A front end from before computed defaults reads format 1 only: a table with one is
    /// written as format 2, which it refuses instead of inserting without the default.
    #[test]
    fn a_computed_default_makes_the_second_format_and_comes_back() {
        let plain = TableExtras {
            columns: vec![
                ColumnExtras::default(),
                ColumnExtras {
                    comment: "c".into(),
                    ..ColumnExtras::default()
                },
            ],
            ..TableExtras::default()
        };
        let version = |extras: &TableExtras| {
            let stored: Stored = serde_json::from_slice(&extras.encode(&schema())).unwrap();
            stored.version
        };
        assert_eq!(version(&plain), FORMAT_VERSION);
        let mut computed = plain.clone();
        computed.columns[1].default_sql = "CURRENT_TIMESTAMP(3)".into();
        computed.columns[1].on_update_sql = "CURRENT_TIMESTAMP(3)".into();
        assert_eq!(version(&computed), FORMAT_VERSION_COMPUTED_DEFAULTS);
        let mut schema = schema();
        schema.extra_metadata = computed.encode(&schema);
        assert_eq!(TableExtras::decode(&schema).unwrap(), computed);
    }

    #[test]
    fn a_check_constraint_makes_the_third_format_and_comes_back() {
        let mut extras = TableExtras {
            columns: vec![ColumnExtras::default(); 2],
            ..TableExtras::default()
        };
        extras.checks.push(CheckDef {
            name: "t_chk_1".into(),
            sql: "id > 0".into(),
            enforced: false,
        });
        let mut schema = schema();
        schema.extra_metadata = extras.encode(&schema);
        let stored: Stored = serde_json::from_slice(&schema.extra_metadata).unwrap();
        assert_eq!(stored.version, FORMAT_VERSION_CHECKS);
        assert_eq!(TableExtras::decode(&schema).unwrap(), extras);
    }

    /// A front end that cannot mirror a copying ALTER's writes must not write the table.
    #[test]
    fn a_copy_target_makes_the_fourth_format_and_comes_back() {
        let extras = TableExtras {
            columns: vec![ColumnExtras::default(); 2],
            copying: Some(crate::table_copy::CopyTarget {
                table: "t/#copy".into(),
                sources: vec![Some(1), None, Some(0)],
            }),
            ..TableExtras::default()
        };
        let mut schema = schema();
        schema.extra_metadata = extras.encode(&schema);
        let stored: Stored = serde_json::from_slice(&schema.extra_metadata).unwrap();
        assert_eq!(stored.version, FORMAT_VERSION_COPYING);
        assert_eq!(TableExtras::decode(&schema).unwrap(), extras);
    }

    #[test]
    fn pending_foreign_keys_are_kept_in_a_format_older_front_ends_refuse() {
        let mut schema = schema();
        let mut extras = TableExtras::decode(&schema).unwrap();
        let clause = "FOREIGN KEY (`p`) REFERENCES `d`.`p` (`id`)".to_string();
        extras.pending_foreign_keys.push(clause);
        schema.extra_metadata = extras.encode(&schema);
        let stored: Stored = serde_json::from_slice(&schema.extra_metadata).unwrap();
        assert_eq!(stored.version, FORMAT_VERSION_PENDING_FOREIGN_KEYS);
        assert_eq!(TableExtras::decode(&schema).unwrap(), extras);
    }

    #[test]
    fn metadata_of_another_format_or_damaged_is_refused() {
        let mut schema = schema();
        schema.extra_metadata = br#"{"version": 6, "columns": []}"#.to_vec();
        assert_eq!(TableExtras::decode(&schema).unwrap_err().code, 1033);
        schema.extra_metadata = b"{not json".to_vec();
        assert_eq!(TableExtras::decode(&schema).unwrap_err().code, 1033);
        schema.extra_metadata = br#"{"version": 1, "columns": [{"name": "gone"}]}"#.to_vec();
        assert_eq!(TableExtras::decode(&schema).unwrap_err().code, 1033);
    }
}
