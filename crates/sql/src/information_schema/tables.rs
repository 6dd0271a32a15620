//! Each `information_schema` table: its columns (MySQL 8's, in MySQL's order) and its
//! rows. Tables without a primary key list no hidden column or index; routines do not
//! exist yet, so their tables are empty.

use kista_client::types::{Collation, ColumnType, Value};

use super::{
    column_default, column_extra, column_key, index_columns, number, text, Kind, SeenBy,
    SystemRows, SystemTableDef, DATABASE,
};
use crate::catalog::{Catalog, SqlTable};
use crate::ddl::foreign_keys::{action_rule, DescribedForeignKey};
use crate::ddl::PRIMARY_INDEX;
use crate::error::SqlResult;
use crate::sql_type::SqlType;

use Kind::{Number, Text};

/// The character set and collation every table, column and database reports.
pub(crate) const CHARSET: &str = "utf8mb4";
/// The default collation of tables, databases and the character set.
pub(crate) const COLLATION: &str = "utf8mb4_0900_ai_ci";

pub(super) const ALL: &[SystemTableDef] = &[
    SystemTableDef {
        name: "SCHEMATA",
        seen_by: SeenBy::Database("SCHEMA_NAME"),
        columns: &[
            ("CATALOG_NAME", Text),
            ("SCHEMA_NAME", Text),
            ("DEFAULT_CHARACTER_SET_NAME", Text),
            ("DEFAULT_COLLATION_NAME", Text),
            ("SQL_PATH", Text),
            ("DEFAULT_ENCRYPTION", Text),
        ],
        rows: schemata,
    },
    SystemTableDef {
        name: "TABLES",
        seen_by: SeenBy::Table("TABLE_SCHEMA", "TABLE_NAME"),
        columns: &[
            ("TABLE_CATALOG", Text),
            ("TABLE_SCHEMA", Text),
            ("TABLE_NAME", Text),
            ("TABLE_TYPE", Text),
            ("ENGINE", Text),
            ("VERSION", Number),
            ("ROW_FORMAT", Text),
            ("TABLE_ROWS", Number),
            ("AVG_ROW_LENGTH", Number),
            ("DATA_LENGTH", Number),
            ("MAX_DATA_LENGTH", Number),
            ("INDEX_LENGTH", Number),
            ("DATA_FREE", Number),
            ("AUTO_INCREMENT", Number),
            ("CREATE_TIME", Text),
            ("UPDATE_TIME", Text),
            ("CHECK_TIME", Text),
            ("TABLE_COLLATION", Text),
            ("CHECKSUM", Number),
            ("CREATE_OPTIONS", Text),
            ("TABLE_COMMENT", Text),
        ],
        rows: tables,
    },
    SystemTableDef {
        name: "COLUMNS",
        seen_by: SeenBy::Table("TABLE_SCHEMA", "TABLE_NAME"),
        columns: &[
            ("TABLE_CATALOG", Text),
            ("TABLE_SCHEMA", Text),
            ("TABLE_NAME", Text),
            ("COLUMN_NAME", Text),
            ("ORDINAL_POSITION", Number),
            ("COLUMN_DEFAULT", Text),
            ("IS_NULLABLE", Text),
            ("DATA_TYPE", Text),
            ("CHARACTER_MAXIMUM_LENGTH", Number),
            ("CHARACTER_OCTET_LENGTH", Number),
            ("NUMERIC_PRECISION", Number),
            ("NUMERIC_SCALE", Number),
            ("DATETIME_PRECISION", Number),
            ("CHARACTER_SET_NAME", Text),
            ("COLLATION_NAME", Text),
            ("COLUMN_TYPE", Text),
            ("COLUMN_KEY", Text),
            ("EXTRA", Text),
            ("PRIVILEGES", Text),
            ("COLUMN_COMMENT", Text),
            ("GENERATION_EXPRESSION", Text),
            ("SRS_ID", Number),
        ],
        rows: columns,
    },
    SystemTableDef {
        name: "STATISTICS",
        seen_by: SeenBy::Table("TABLE_SCHEMA", "TABLE_NAME"),
        columns: &[
            ("TABLE_CATALOG", Text),
            ("TABLE_SCHEMA", Text),
            ("TABLE_NAME", Text),
            ("NON_UNIQUE", Number),
            ("INDEX_SCHEMA", Text),
            ("INDEX_NAME", Text),
            ("SEQ_IN_INDEX", Number),
            ("COLUMN_NAME", Text),
            ("COLLATION", Text),
            ("CARDINALITY", Number),
            ("SUB_PART", Number),
            ("PACKED", Text),
            ("NULLABLE", Text),
            ("INDEX_TYPE", Text),
            ("COMMENT", Text),
            ("INDEX_COMMENT", Text),
            ("IS_VISIBLE", Text),
            ("EXPRESSION", Text),
        ],
        rows: statistics,
    },
    SystemTableDef {
        name: "KEY_COLUMN_USAGE",
        seen_by: SeenBy::Table("TABLE_SCHEMA", "TABLE_NAME"),
        columns: &[
            ("CONSTRAINT_CATALOG", Text),
            ("CONSTRAINT_SCHEMA", Text),
            ("CONSTRAINT_NAME", Text),
            ("TABLE_CATALOG", Text),
            ("TABLE_SCHEMA", Text),
            ("TABLE_NAME", Text),
            ("COLUMN_NAME", Text),
            ("ORDINAL_POSITION", Number),
            ("POSITION_IN_UNIQUE_CONSTRAINT", Number),
            ("REFERENCED_TABLE_SCHEMA", Text),
            ("REFERENCED_TABLE_NAME", Text),
            ("REFERENCED_COLUMN_NAME", Text),
        ],
        rows: key_column_usage,
    },
    SystemTableDef {
        name: "CHECK_CONSTRAINTS",
        seen_by: SeenBy::Database("CONSTRAINT_SCHEMA"),
        columns: &[
            ("CONSTRAINT_CATALOG", Text),
            ("CONSTRAINT_SCHEMA", Text),
            ("CONSTRAINT_NAME", Text),
            ("CHECK_CLAUSE", Text),
        ],
        rows: check_constraints,
    },
    SystemTableDef {
        name: "TABLE_CONSTRAINTS",
        seen_by: SeenBy::Table("TABLE_SCHEMA", "TABLE_NAME"),
        columns: &[
            ("CONSTRAINT_CATALOG", Text),
            ("CONSTRAINT_SCHEMA", Text),
            ("CONSTRAINT_NAME", Text),
            ("TABLE_SCHEMA", Text),
            ("TABLE_NAME", Text),
            ("CONSTRAINT_TYPE", Text),
            ("ENFORCED", Text),
        ],
        rows: table_constraints,
    },
    SystemTableDef {
        name: "REFERENTIAL_CONSTRAINTS",
        seen_by: SeenBy::Table("CONSTRAINT_SCHEMA", "TABLE_NAME"),
        columns: &[
            ("CONSTRAINT_CATALOG", Text),
            ("CONSTRAINT_SCHEMA", Text),
            ("CONSTRAINT_NAME", Text),
            ("UNIQUE_CONSTRAINT_CATALOG", Text),
            ("UNIQUE_CONSTRAINT_SCHEMA", Text),
            ("UNIQUE_CONSTRAINT_NAME", Text),
            ("MATCH_OPTION", Text),
            ("UPDATE_RULE", Text),
            ("DELETE_RULE", Text),
            ("TABLE_NAME", Text),
            ("REFERENCED_TABLE_NAME", Text),
        ],
        rows: referential_constraints,
    },
    SystemTableDef {
        name: "VIEWS",
        seen_by: SeenBy::Table("TABLE_SCHEMA", "TABLE_NAME"),
        columns: &[
            ("TABLE_CATALOG", Text),
            ("TABLE_SCHEMA", Text),
            ("TABLE_NAME", Text),
            ("VIEW_DEFINITION", Text),
            ("CHECK_OPTION", Text),
            ("IS_UPDATABLE", Text),
            ("DEFINER", Text),
            ("SECURITY_TYPE", Text),
            ("CHARACTER_SET_CLIENT", Text),
            ("COLLATION_CONNECTION", Text),
        ],
        rows: views,
    },
    SystemTableDef {
        name: "ROUTINES",
        seen_by: SeenBy::Database("ROUTINE_SCHEMA"),
        columns: &[
            ("SPECIFIC_NAME", Text),
            ("ROUTINE_CATALOG", Text),
            ("ROUTINE_SCHEMA", Text),
            ("ROUTINE_NAME", Text),
            ("ROUTINE_TYPE", Text),
            ("DATA_TYPE", Text),
            ("ROUTINE_DEFINITION", Text),
            ("IS_DETERMINISTIC", Text),
            ("SQL_DATA_ACCESS", Text),
            ("SECURITY_TYPE", Text),
            ("DEFINER", Text),
            ("ROUTINE_COMMENT", Text),
        ],
        rows: none,
    },
    SystemTableDef {
        name: "TRIGGERS",
        seen_by: SeenBy::Table("EVENT_OBJECT_SCHEMA", "EVENT_OBJECT_TABLE"),
        columns: &[
            ("TRIGGER_CATALOG", Text),
            ("TRIGGER_SCHEMA", Text),
            ("TRIGGER_NAME", Text),
            ("EVENT_MANIPULATION", Text),
            ("EVENT_OBJECT_CATALOG", Text),
            ("EVENT_OBJECT_SCHEMA", Text),
            ("EVENT_OBJECT_TABLE", Text),
            ("ACTION_ORDER", Number),
            ("ACTION_STATEMENT", Text),
            ("ACTION_TIMING", Text),
            ("DEFINER", Text),
        ],
        rows: triggers,
    },
    SystemTableDef {
        name: "CHARACTER_SETS",
        seen_by: SeenBy::Everyone,
        columns: &[
            ("CHARACTER_SET_NAME", Text),
            ("DEFAULT_COLLATE_NAME", Text),
            ("DESCRIPTION", Text),
            ("MAXLEN", Number),
        ],
        rows: |_, rows| {
            rows.push(vec![
                text(CHARSET),
                text(COLLATION),
                text("UTF-8 Unicode"),
                number(4),
            ]);
            let binary = [
                text("binary"),
                text("binary"),
                text("Binary pseudo charset"),
            ];
            rows.push([binary.as_slice(), &[number(1)]].concat());
            Ok(())
        },
    },
    SystemTableDef {
        name: "COLLATIONS",
        seen_by: SeenBy::Everyone,
        columns: &[
            ("COLLATION_NAME", Text),
            ("CHARACTER_SET_NAME", Text),
            ("ID", Number),
            ("IS_DEFAULT", Text),
            ("IS_COMPILED", Text),
            ("SORTLEN", Number),
            ("PAD_ATTRIBUTE", Text),
        ],
        rows: |_, rows| {
            for def in &kista_client::types::COLLATIONS {
                let yes = |holds: bool| text(if holds { "Yes" } else { "" });
                let pad = if def.pad_space { "PAD SPACE" } else { "NO PAD" };
                rows.push(vec![
                    text(def.name),
                    text(def.charset),
                    number(u64::from(def.id)),
                    yes(def.is_default),
                    yes(true),
                    // MySQL's: the UCA collation's sort length counts weights, the others characters.
                    number(u64::from(def.collation != Collation::utf8mb4_0900_ai_ci)),
                    text(pad),
                ]);
            }
            Ok(())
        },
    },
    SystemTableDef {
        name: "PROCESSLIST",
        seen_by: SeenBy::OwnProcesses("USER"),
        columns: &[
            ("ID", Number),
            ("USER", Text),
            ("HOST", Text),
            ("DB", Text),
            ("COMMAND", Text),
            ("TIME", Number),
            ("STATE", Text),
            ("INFO", Text),
        ],
        rows: processlist,
    },
    SystemTableDef {
        name: "ENGINES",
        seen_by: SeenBy::Everyone,
        columns: &[
            ("ENGINE", Text),
            ("SUPPORT", Text),
            ("COMMENT", Text),
            ("TRANSACTIONS", Text),
            ("XA", Text),
            ("SAVEPOINTS", Text),
        ],
        rows: |_, rows| {
            let comment = "Kista: distributed, in-memory, synchronously replicated";
            let row = [text("ndbcluster"), text("DEFAULT"), text(comment)];
            rows.push([row.as_slice(), &[text("YES"), text("NO"), text("NO")]].concat());
            Ok(())
        },
    },
];

/// For tables that have no rows yet (foreign keys, routines, triggers).
fn none(_: &Catalog, _: &mut SystemRows) -> SqlResult<()> {
    Ok(())
}

/// Calls `f` with each table of each database.
fn for_each_table(
    catalog: &Catalog,
    mut f: impl FnMut(&str, &SqlTable) -> SqlResult<()>,
) -> SqlResult<()> {
    for database in catalog.databases()?.iter().filter(|d| *d != DATABASE) {
        for name in catalog.table_names(database)? {
            match catalog.table(database, &name) {
                Ok(table) => f(database, &table)?,
                // Dropped meanwhile.
                Err(error) if error.code == 1146 => continue,
                Err(error) => return Err(error),
            }
        }
    }
    Ok(())
}

fn schemata(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    let collations = catalog.database_collations()?;
    for database in catalog.databases()? {
        let collation = (collations.iter())
            .find(|(name, _)| *name == database)
            .map_or(COLLATION, |(_, collation)| collation.name());
        let row = [text("def"), text(database), text(CHARSET), text(collation)];
        rows.push([row.as_slice(), &[Value::Null, text("NO")]].concat());
    }
    Ok(())
}

fn tables(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    for_each_table(catalog, |database, table| {
        let named = [text("def"), text(database), text(table.name.clone())];
        let kind = [text("BASE TABLE"), text("ndbcluster")];
        let version = number(u64::from(table.table.schema_version));
        let sizes = [const { Value::Null }; 6];
        let auto_increment = catalog
            .next_auto_increment(table)?
            .map_or(Value::Null, number);
        let times = [const { Value::Null }; 3];
        let comment = text(table.extras.comment.clone());
        let rest = [
            text(table.extras.collation.name()),
            Value::Null,
            text(""),
            comment,
        ];
        rows.push(
            [
                &named[..],
                &kind,
                &[version, text("Dynamic")],
                &sizes,
                &[auto_increment],
                &times,
                &rest,
            ]
            .concat(),
        );
        Ok(())
    })?;
    for database in catalog.databases()?.iter().filter(|d| *d != DATABASE) {
        for view in catalog.view_names(database)? {
            let named = [text("def"), text(database.clone()), text(view)];
            let nulls = [const { Value::Null }; 16];
            rows.push([&named[..], &[text("VIEW")], &nulls, &[text("VIEW")]].concat());
        }
    }
    Ok(())
}

fn columns(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    for_each_table(catalog, |database, table| {
        for (position, column) in table.visible_columns() {
            let full_type = table.type_name(position);
            let data_type = match table.sql_type(position) {
                Some(sql_type) => sql_type.data_type().to_string(),
                None => full_type.split(['(', ' ']).next().unwrap_or("").to_string(),
            };
            let named = [text("def"), text(database), text(table.name.clone())];
            let nullable = if column.nullable { "YES" } else { "NO" };
            let described = [
                text(column.name.clone()),
                number(position as u64 + 1),
                column_default(table, position),
                text(nullable),
                text(data_type),
            ];
            let keyed = [
                text(full_type),
                text(column_key(table, position)),
                text(column_extra(table, position)),
                text("select,insert,update,references"),
                text(table.extras.columns[position].comment.clone()),
                text(""),
                Value::Null,
            ];
            let sized = match table.sql_type(position) {
                Some(sql_type) => declared_sizes_of(sql_type, column.column_type),
                None => {
                    let mut sizes = sizes_of(column.column_type);
                    if !sizes[4].is_null() {
                        // DATETIME_PRECISION: the column's digits of a second.
                        let digits = table.extras.columns[position].fraction_digits;
                        sizes[4] = number(u64::from(digits));
                    }
                    sizes
                }
            };
            rows.push([&named[..], &described, &sized, &keyed].concat());
        }
        Ok(())
    })
}

/// [`sizes_of`] for the SQL types storage lacks: ENUM and SET have their storage
/// VARCHAR's, a BIT its width as precision, YEAR and JSON none.
fn declared_sizes_of(sql_type: &SqlType, storage: ColumnType) -> [Value; 7] {
    match sql_type {
        SqlType::Enum(_) | SqlType::Set(_) => sizes_of(storage),
        SqlType::Bit(width) => {
            let mut sizes = [const { Value::Null }; 7];
            sizes[2] = number(u64::from(*width));
            sizes
        }
        SqlType::Year | SqlType::Json => [const { Value::Null }; 7],
    }
}

/// COLUMNS' CHARACTER_MAXIMUM_LENGTH, CHARACTER_OCTET_LENGTH, NUMERIC_PRECISION,
/// NUMERIC_SCALE, DATETIME_PRECISION, CHARACTER_SET_NAME and COLLATION_NAME of a type
/// (NULL where it has none).
fn sizes_of(column_type: ColumnType) -> [Value; 7] {
    let mut sizes = [const { Value::Null }; 7];
    let mut lengths = |characters: u64, bytes: u64| {
        sizes[0] = number(characters);
        sizes[1] = number(bytes);
    };
    match column_type {
        ColumnType::Char { length, .. } => lengths(u64::from(length), 4 * u64::from(length)),
        ColumnType::VarChar { max_length, .. } => {
            lengths(u64::from(max_length), 4 * u64::from(max_length))
        }
        ColumnType::Text { .. } => lengths(65_535, 65_535),
        ColumnType::Binary { length } => lengths(u64::from(length), u64::from(length)),
        ColumnType::VarBinary { max_length } => {
            lengths(u64::from(max_length), u64::from(max_length))
        }
        ColumnType::Blob => lengths(65_535, 65_535),
        ColumnType::Decimal { precision, scale } => {
            sizes[2] = number(u64::from(precision));
            sizes[3] = number(u64::from(scale));
        }
        ColumnType::Int { bytes, .. } => {
            sizes[2] = number([3, 5, 0, 10, 0, 0, 0, 19][usize::from(bytes - 1)]);
            sizes[3] = number(0);
        }
        ColumnType::Float => (sizes[2], sizes[3]) = (number(12), number(0)),
        ColumnType::Double => (sizes[2], sizes[3]) = (number(22), number(0)),
        ColumnType::Date => {}
        ColumnType::Time | ColumnType::DateTime | ColumnType::Timestamp => sizes[4] = number(0),
    }
    if matches!(
        column_type,
        ColumnType::Char { .. } | ColumnType::VarChar { .. } | ColumnType::Text { .. }
    ) {
        sizes[5] = text(CHARSET);
        sizes[6] = text(column_type.collation().name());
    }
    sizes
}

fn triggers(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    for_each_table(catalog, |database, table| {
        let defined = &table.extras.triggers;
        for (position, trigger) in defined.iter().enumerate() {
            // ACTION_ORDER counts the table's triggers of the same event and timing.
            let order = defined[..=position]
                .iter()
                .filter(|t| t.event == trigger.event && t.timing == trigger.timing)
                .count();
            let body = trigger.body_sql();
            rows.push(vec![
                text("def"),
                text(database),
                text(trigger.name.clone()),
                text(trigger.event.name()),
                text("def"),
                text(database),
                text(table.name.clone()),
                number(order as u64),
                text(body),
                text(trigger.timing.name()),
                text(format!("{}@%", trigger.definer)),
            ]);
        }
        Ok(())
    })
}

fn statistics(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    for_each_table(catalog, |database, table| {
        let schema = table.schema();
        for entry in index_columns(table) {
            let column = &schema.columns[entry.column];
            let named = [text("def"), text(database), text(table.name.clone())];
            let index = [
                number(u64::from(!entry.unique)),
                text(database),
                text(entry.index),
                number(entry.sequence),
                text(column.name.clone()),
                text("A"),
                Value::Null,
                entry.sub_part.map_or(Value::Null, |n| number(u64::from(n))),
                Value::Null,
                text(if column.nullable { "YES" } else { "" }),
                text(entry.index_type),
                text(""),
                text(""),
                text("YES"),
                Value::Null,
            ];
            rows.push([&named[..], &index].concat());
        }
        Ok(())
    })
}

/// Calls `f` with each foreign key of each table (as its child).
fn for_each_foreign_key(
    catalog: &Catalog,
    mut f: impl FnMut(&str, &SqlTable, &DescribedForeignKey),
) -> SqlResult<()> {
    for_each_table(catalog, |database, table| {
        let keys = crate::ddl::foreign_keys::described(catalog, table)?;
        keys.iter().for_each(|key| f(database, table, key));
        Ok(())
    })
}

/// The columns of the primary key, the unique indexes and the foreign keys.
fn key_column_usage(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    for_each_foreign_key(catalog, |database, table, key| {
        for (position, (column, parent_column)) in
            key.columns.iter().zip(&key.parent_columns).enumerate()
        {
            let constraint = [text("def"), text(database), text(key.name.clone())];
            let named = [text("def"), text(database), text(table.name.clone())];
            let position = number(position as u64 + 1);
            let column = [text(column.clone()), position.clone(), position];
            let references = [
                text(key.parent_database.clone()),
                text(key.parent_table.clone()),
                text(parent_column.clone()),
            ];
            rows.push([&constraint[..], &named, &column, &references].concat());
        }
    })?;
    for_each_table(catalog, |database, table| {
        let schema = table.schema();
        for entry in index_columns(table).into_iter().filter(|e| e.unique) {
            let constraint = [text("def"), text(database), text(entry.index)];
            let named = [text("def"), text(database), text(table.name.clone())];
            let column = [
                text(schema.columns[entry.column].name.clone()),
                number(entry.sequence),
            ];
            let references = [const { Value::Null }; 4];
            rows.push([&constraint[..], &named, &column, &references].concat());
        }
        Ok(())
    })
}

fn table_constraints(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    for_each_table(catalog, |database, table| {
        for entry in index_columns(table)
            .into_iter()
            .filter(|e| e.unique && e.sequence == 1)
        {
            let kind = if entry.index == PRIMARY_INDEX {
                "PRIMARY KEY"
            } else {
                "UNIQUE"
            };
            let constraint = [text("def"), text(database), text(entry.index)];
            let named = [text(database), text(table.name.clone())];
            rows.push([&constraint[..], &named, &[text(kind), text("YES")]].concat());
        }
        for check in &table.extras.checks {
            let constraint = [text("def"), text(database), text(check.name.clone())];
            let named = [text(database), text(table.name.clone())];
            let enforced = text(if check.enforced { "YES" } else { "NO" });
            rows.push([&constraint[..], &named, &[text("CHECK"), enforced]].concat());
        }
        Ok(())
    })?;
    for_each_foreign_key(catalog, |database, table, key| {
        let constraint = [text("def"), text(database), text(key.name.clone())];
        let named = [text(database), text(table.name.clone())];
        rows.push([&constraint[..], &named, &[text("FOREIGN KEY"), text("YES")]].concat());
    })
}

fn referential_constraints(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    for_each_foreign_key(catalog, |database, table, key| {
        let constraint = [text("def"), text(database), text(key.name.clone())];
        let unique = [
            text("def"),
            text(key.parent_database.clone()),
            text(key.parent_key.clone()),
        ];
        let rules = [
            text("NONE"),
            text(action_rule(key.on_update)),
            text(action_rule(key.on_delete)),
            text(table.name.clone()),
            text(key.parent_table.clone()),
        ];
        rows.push([&constraint[..], &unique, &rules].concat());
    })
}

fn check_constraints(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    for_each_table(catalog, |database, table| {
        for check in &table.extras.checks {
            let named = [text("def"), text(database), text(check.name.clone())];
            rows.push([&named[..], &[text(check.sql.clone())]].concat());
        }
        Ok(())
    })
}

fn views(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    for database in catalog.databases()?.iter().filter(|d| *d != DATABASE) {
        for view in catalog.view_names(database)? {
            let Some(definition) = catalog.view(database, &view)? else {
                continue;
            };
            let named = [text("def"), text(database.clone()), text(view)];
            let described = [
                text(definition),
                text("NONE"),
                text("NO"),
                text("root@%"),
                text("DEFINER"),
                text(CHARSET),
                text(COLLATION),
            ];
            rows.push([&named[..], &described].concat());
        }
    }
    Ok(())
}

/// This front end's connections (each front end lists its own, as each MySQL server).
fn processlist(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    for process in catalog.processes.rows() {
        let state = if process.command == "Sleep" {
            ""
        } else {
            "executing"
        };
        rows.push(vec![
            number(u64::from(process.id)),
            text(process.user),
            text(process.host),
            process.database.map_or(Value::Null, text),
            text(process.command),
            number(process.seconds),
            text(state),
            process.statement.map_or(Value::Null, text),
        ]);
    }
    Ok(())
}
