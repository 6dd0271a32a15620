//! The `information_schema` tables tools, drivers and ORMs read, built from the catalog
//! when queried, with MySQL 8's names and columns (those Kista has a value for; the rest
//! are NULL or empty as MySQL gives them for NDB tables). Queries on them run like any
//! other in the front end: WHERE, ORDER BY, grouping, joins with each other excepted.
//!
//! Each table is one [`SystemTableDef`] in `tables.rs`: its name, its columns and the
//! function that lists its rows. `kista_info` (`kista_info.rs`), the data nodes' own
//! tables, is a second system database served the same way.

pub mod kista_info;
mod tables;
pub(crate) use tables::{CHARSET, COLLATION};

use kista_client::schema::{Column, IndexKind, TableSchema};
use kista_client::types::{ColumnType, Value};

use crate::catalog::{Catalog, SqlTable};
use crate::ddl::PRIMARY_INDEX;
use crate::error::{SqlError, SqlResult};
use crate::session::Session;

pub const DATABASE: &str = "information_schema";

/// The system databases, each with its tables: nothing of them is stored in the cluster.
const SYSTEM_DATABASES: [(&str, &[SystemTableDef]); 2] = [
    (DATABASE, tables::ALL),
    (kista_info::DATABASE, kista_info::ALL),
];

/// The system database called `name` (case-insensitive), in its own spelling.
pub fn system_database(name: &str) -> Option<&'static str> {
    SYSTEM_DATABASES
        .iter()
        .map(|(database, _)| *database)
        .find(|database| database.eq_ignore_ascii_case(name))
}

/// The tables of system database `name`, if it is one (SHOW TABLES).
pub fn system_table_names(name: &str) -> Option<impl Iterator<Item = &'static str>> {
    let (_, tables) = SYSTEM_DATABASES
        .iter()
        .find(|(database, _)| database.eq_ignore_ascii_case(name))?;
    Some(tables.iter().map(|def| def.name))
}

/// A text value of a system table's row.
fn text(s: impl Into<String>) -> Value {
    Value::Bytes(s.into().into_bytes())
}

/// A number of a system table's row.
fn number(n: u64) -> Value {
    Value::UInt(n)
}

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
    (table.constant_default(position))
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
    rows: fn(&Catalog, &mut SystemRows) -> SqlResult<()>,
    /// Which rows an account without every privilege sees.
    seen_by: SeenBy,
}

/// Which of a system table's rows an account sees: as MySQL's, only what it has some
/// privilege on (`accounts::may_see`).
#[derive(Clone, Copy)]
enum SeenBy {
    /// Every row (character sets, collations; `kista_info`, which needs SELECT on it).
    Everyone,
    /// Rows of the databases it may see: the column naming the database.
    Database(&'static str),
    /// Rows of the tables it may see: the columns naming the database and the table.
    Table(&'static str, &'static str),
    /// Its own connections (the column naming a connection's user); every one with
    /// PROCESS.
    OwnProcesses(&'static str),
}

impl SeenBy {
    /// Whether `session` sees `row` of `def`.
    fn sees(self, session: &Session, def: &SystemTableDef, row: &[Value]) -> bool {
        let text_of = |column: &str| {
            let position = def.columns.iter().position(|(name, _)| *name == column);
            match position.map(|p| &row[p]) {
                Some(Value::Bytes(bytes)) => String::from_utf8_lossy(bytes).into_owned(),
                _ => String::new(),
            }
        };
        use crate::accounts::On;
        match self {
            SeenBy::Everyone => true,
            SeenBy::Database(database) => {
                crate::accounts::may_see(session, &On::Database(text_of(database)))
            }
            SeenBy::Table(database, table) => {
                crate::accounts::may_see(session, &On::Table(text_of(database), text_of(table)))
            }
            SeenBy::OwnProcesses(user) => {
                text_of(user) == session.user || crate::accounts::may_list_processes(session)
            }
        }
    }

    /// The columns it names.
    #[cfg(test)]
    fn columns(self) -> Vec<&'static str> {
        match self {
            SeenBy::Everyone => Vec::new(),
            SeenBy::Database(column) | SeenBy::OwnProcesses(column) => vec![column],
            SeenBy::Table(database, table) => vec![database, table],
        }
    }
}

/// What a system table's rows function fills: its rows, and what its reader is warned of
/// (a data node's list cut at its bound).
#[derive(Default)]
pub(crate) struct SystemRows {
    rows: Vec<Vec<Value>>,
    warnings: Vec<String>,
}

impl SystemRows {
    fn push(&mut self, row: Vec<Value>) {
        self.rows.push(row);
    }

    fn warn(&mut self, message: String) {
        self.warnings.push(message);
    }
}

/// What a column holds.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    Number,
    Real,
}

/// A system database's table, as a query names it.
#[derive(Clone, Copy)]
pub struct SystemTable {
    database: &'static str,
    def: &'static SystemTableDef,
}

impl PartialEq for SystemTable {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.def, other.def)
    }
}

impl std::fmt::Debug for SystemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.database, self.def.name)
    }
}

impl SystemTable {
    /// Table `name` (case-insensitive) of system database `database`; error 1109 for any
    /// other (`None` if `database` is no system database).
    pub fn named(database: &str, name: &str) -> Option<SqlResult<Self>> {
        let (database, tables) = SYSTEM_DATABASES
            .iter()
            .find(|(system, _)| system.eq_ignore_ascii_case(database))?;
        let found = tables
            .iter()
            .find(|def| def.name.eq_ignore_ascii_case(name))
            .map(|def| SystemTable { database, def })
            .ok_or_else(|| {
                SqlError::new(
                    1109,
                    "42S02",
                    format!("Unknown table '{name}' in {database}"),
                )
            });
        Some(found)
    }

    pub fn name(self) -> &'static str {
        self.def.name
    }

    /// The system database it belongs to.
    pub fn database(self) -> &'static str {
        self.database
    }

    pub fn schema(self) -> TableSchema {
        let columns = self
            .def
            .columns
            .iter()
            .map(|&(name, kind)| {
                let column_type = match kind {
                    Kind::Text => crate::sql_type::default_varchar(64),
                    Kind::Number => ColumnType::Int {
                        bytes: 8,
                        signed: false,
                    },
                    Kind::Real => ColumnType::Double,
                };
                Column::new(name, column_type).nullable()
            })
            .collect();
        TableSchema {
            extra_metadata: Vec::new(),
            name: format!("{}/{}", self.database, self.def.name),
            columns,
            primary_key: vec![0],
        }
    }

    /// Every row, as the catalog describes the cluster now; what the listing warns of
    /// goes to `session`'s warnings (1105).
    pub fn rows(self, session: &Session) -> SqlResult<Vec<Vec<Value>>> {
        let mut listed = SystemRows::default();
        (self.def.rows)(session.catalog, &mut listed)?;
        for warning in listed.warnings {
            session.warn(1105, warning);
        }
        let mut rows = listed.rows;
        for row in &rows {
            assert_eq!(
                row.len(),
                self.def.columns.len(),
                "a row of {}",
                self.def.name
            );
        }
        if !session.privileges.is_all() {
            rows.retain(|row| self.def.seen_by.sees(session, self.def, row));
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_found_in_any_case_and_unknown_ones_are_1109() {
        let named = |database, name| SystemTable::named(database, name).unwrap();
        assert_eq!(
            named("information_schema", "key_column_usage")
                .unwrap()
                .name(),
            "KEY_COLUMN_USAGE"
        );
        assert_eq!(
            named("KISTA_INFO", "Threads").unwrap().database(),
            "kista_info"
        );
        assert_eq!(named("information_schema", "nope").unwrap_err().code, 1109);
        assert_eq!(named("kista_info", "tables").unwrap_err().code, 1109);
        assert!(SystemTable::named("shop", "threads").is_none());
        for (database, tables) in SYSTEM_DATABASES {
            for def in tables {
                for column in def.seen_by.columns() {
                    let named = def.columns.iter().any(|(name, _)| *name == column);
                    assert!(named, "{database}.{} has no column {column}", def.name);
                }
                let table = SystemTable { database, def };
                assert_eq!(table.schema().columns.len(), def.columns.len());
            }
        }
    }
}
