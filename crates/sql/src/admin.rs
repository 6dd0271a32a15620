//! Everything that is not a query or a row change: databases and tables (DDL),
//! transactions, SET, SHOW, DESCRIBE and EXPLAIN, and the server variables drivers ask for.

use sqlparser::ast::{self, ObjectType, Set, ShowStatementFilter, Statement};
use sqlparser::tokenizer::Location;

use kista_client::types::Value;
use kista_client::ScanSpec;

use crate::catalog::SqlTable;
use crate::catalog::{check_name, cluster_name};
use crate::ddl;
use crate::error::{SqlError, SqlResult};
use crate::expr::like;
use crate::information_schema;
use crate::output;
use crate::select::{self, split_name};
use crate::session::{Outcome, Session, SERVER_VERSION};
use crate::subquery;
use crate::value::truth;

/// Rows TRUNCATE deletes per transaction.
pub const TRUNCATE_BATCH_ROWS: usize = 1000;

/// Server variables drivers and tools read on connect.
pub fn server_variable(name: &str) -> Option<Value> {
    let text = |s: &str| Value::Bytes(s.as_bytes().to_vec());
    Some(match name {
        "version" => text(SERVER_VERSION),
        "version_comment" => text("Kista SQL front end"),
        "version_compile_os" => text("Linux"),
        "version_compile_machine" => text(std::env::consts::ARCH),
        "max_allowed_packet" => Value::Int(crate::protocol::packet::COMMAND_BYTES_MAX as i64),
        "sql_mode" => text("STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION"),
        "character_set_client"
        | "character_set_connection"
        | "character_set_results"
        | "character_set_server"
        | "character_set_database" => text("utf8mb4"),
        "character_set_system" => text("utf8mb3"),
        "collation_connection" | "collation_server" | "collation_database" => {
            text("utf8mb4_general_ci")
        }
        "transaction_isolation" | "tx_isolation" => text("READ-COMMITTED"),
        "transaction_read_only" | "tx_read_only" | "read_only" => Value::Int(0),
        "lower_case_table_names" => Value::Int(1),
        "time_zone" => text("SYSTEM"),
        "system_time_zone" => text("UTC"),
        "wait_timeout" | "interactive_timeout" => Value::Int(28_800),
        "net_write_timeout" => Value::Int(60),
        "net_read_timeout" => Value::Int(30),
        "net_buffer_length" => Value::Int(16_384),
        "license" => text("Apache-2.0"),
        "init_connect" => text(""),
        "performance_schema" => Value::Int(0),
        "have_ssl" | "have_openssl" => text("DISABLED"),
        "query_cache_size" => Value::Int(0),
        "query_cache_type" => text("OFF"),
        "auto_increment_increment" | "auto_increment_offset" => Value::Int(1),
        "max_connections" => Value::Int(crate::server::CONNECTIONS_MAX_DEFAULT as i64),
        "default_storage_engine" | "storage_engine" => text("ndbcluster"),
        "lock_wait_timeout" | "innodb_lock_wait_timeout" => Value::Int(1),
        "max_execution_time" => Value::Int(0),
        "sql_select_limit" => Value::UInt(u64::MAX),
        "warning_count" | "error_count" => Value::Int(0),
        "default_authentication_plugin" => text(crate::protocol::handshake::GREETING_PLUGIN),
        // Read by ORMs at connect (Django reads sql_auto_is_null).
        "sql_auto_is_null" | "sql_safe_updates" | "sql_require_primary_key" => Value::Int(0),
        "foreign_key_checks" | "unique_checks" | "sql_notes" | "sql_quote_show_create" => {
            Value::Int(1)
        }
        "explicit_defaults_for_timestamp" | "sql_big_selects" => Value::Int(1),
        "group_concat_max_len" => Value::Int(1024),
        "div_precision_increment" => Value::Int(4),
        "default_week_format" => Value::Int(0),
        "character_set_filesystem" => text("binary"),
        _ => return None,
    })
}

/// The names `SHOW VARIABLES` lists.
const LISTED_VARIABLES: &[&str] = &[
    "auto_increment_increment",
    "auto_increment_offset",
    "autocommit",
    "character_set_client",
    "character_set_connection",
    "character_set_database",
    "character_set_results",
    "character_set_server",
    "character_set_system",
    "collation_connection",
    "collation_database",
    "collation_server",
    "default_authentication_plugin",
    "default_storage_engine",
    "have_ssl",
    "init_connect",
    "interactive_timeout",
    crate::session::DURABLE_COMMITS,
    "license",
    "lock_wait_timeout",
    "lower_case_table_names",
    "max_allowed_packet",
    "max_connections",
    "net_buffer_length",
    "net_read_timeout",
    "net_write_timeout",
    "performance_schema",
    "query_cache_size",
    "query_cache_type",
    "sql_mode",
    "system_time_zone",
    "time_zone",
    "transaction_isolation",
    "tx_isolation",
    "version",
    "version_comment",
    "version_compile_machine",
    "version_compile_os",
    "wait_timeout",
];

/// A result of text columns.
fn text_result(names: &[&str], rows: Vec<Vec<Value>>) -> Outcome {
    let columns = names
        .iter()
        .enumerate()
        .map(|(position, name)| {
            output::definition(
                name,
                None,
                None,
                rows.iter()
                    .map(|r| r[position].clone())
                    .chain(std::iter::once(Value::Bytes(Vec::new()))),
                None,
            )
        })
        .collect();
    Outcome::Rows { columns, rows }
}

fn text(s: impl Into<String>) -> Value {
    Value::Bytes(s.into().into_bytes())
}

fn name_of(name: &ast::ObjectName) -> String {
    name.0
        .iter()
        .filter_map(|p| p.as_ident())
        .map(|i| i.value.clone())
        .collect::<Vec<_>>()
        .join(".")
}

fn matches_filter(name: &str, filter: Option<&ShowStatementFilter>) -> bool {
    match filter {
        Some(ShowStatementFilter::Like(pattern))
        | Some(ShowStatementFilter::NoKeyword(pattern)) => like(
            name.to_lowercase().as_bytes(),
            pattern.to_lowercase().as_bytes(),
        ),
        _ => true,
    }
}

pub fn run(
    session: &mut Session,
    statement: &Statement,
    placeholders: &[Location],
    params: &[Value],
) -> SqlResult<Outcome> {
    match statement {
        Statement::StartTransaction { .. } => session.begin().map(|_| Outcome::done()),
        Statement::Commit { .. } => session.commit().map(|_| Outcome::done()),
        Statement::Rollback {
            savepoint: None, ..
        } => session.rollback().map(|_| Outcome::done()),
        Statement::Rollback {
            savepoint: Some(name),
            ..
        } => session
            .rollback_to_savepoint(&name.value)
            .map(|_| Outcome::done()),
        Statement::Kill { modifier, id } => {
            let kill = match modifier {
                Some(ast::KillType::Query) => crate::processes::Kill::Query,
                Some(ast::KillType::Connection) | None => crate::processes::Kill::Connection,
                Some(ast::KillType::Mutation) => {
                    return Err(SqlError::not_supported("KILL MUTATION"))
                }
            };
            let id = u32::try_from(*id)
                .map_err(|_| SqlError::new(1094, "HY000", format!("Unknown thread id: {id}")))?;
            session.catalog.processes.kill(id, kill)?;
            Ok(Outcome::done())
        }
        Statement::Savepoint { name } => session.savepoint(&name.value).map(|_| Outcome::done()),
        Statement::ReleaseSavepoint { name } => session
            .savepoints
            .release(&name.value)
            .map(|_| Outcome::done()),
        Statement::Set(set) => set_variables(session, set, placeholders, params),
        Statement::Use(use_statement) => {
            let name = match use_statement {
                ast::Use::Object(name) | ast::Use::Database(name) | ast::Use::Schema(name) => {
                    name_of(name)
                }
                _ => return Err(SqlError::not_supported(use_statement)),
            };
            session.use_database(&name)?;
            Ok(Outcome::done())
        }
        Statement::CreateDatabase {
            db_name,
            if_not_exists,
            ..
        }
        | Statement::CreateSchema {
            schema_name: ast::SchemaName::Simple(db_name),
            if_not_exists,
            ..
        } => match session.catalog.create_database(&name_of(db_name)) {
            Err(e) if e.code == 1007 && *if_not_exists => {
                session.warn(1007, e.message);
                Ok(Outcome::done())
            }
            other => other.map(|_| Outcome::affected(1)),
        },
        Statement::Drop {
            object_type: ObjectType::Index,
            names,
            table: Some(table),
            ..
        } => {
            let (database, name) = split_name(session, table)?;
            for index in names {
                drop_index(session, &database, &name, &name_of(index))?;
            }
            Ok(Outcome::done())
        }
        Statement::Drop {
            object_type,
            if_exists,
            names,
            ..
        } => drop(session, *object_type, *if_exists, names),
        Statement::CreateTable(create) => create_table(session, create),
        Statement::CreateTrigger(create) => {
            crate::trigger::create(session, create).map(|()| Outcome::done())
        }
        Statement::DropTrigger(drop) => {
            crate::trigger::drop(session, drop).map(|()| Outcome::done())
        }
        Statement::CreateView {
            or_replace,
            materialized,
            temporary,
            name,
            columns,
            query,
            ..
        } => {
            if *materialized || *temporary || !columns.is_empty() {
                return Err(SqlError::not_supported(
                    "materialized or temporary views, or views with a column list",
                ));
            }
            create_view(session, name, query, *or_replace)
        }
        Statement::CreateIndex(create) => {
            let (database, name) = split_name(session, &create.table_name)?;
            let table = session.catalog.table(&database, &name)?;
            let index = ddl::create_index(create, &table)?;
            session.catalog.forget(&database, &name);
            session
                .catalog
                .client()
                .create_index(&table.table, index)
                .map_err(SqlError::from)?;
            Ok(Outcome::done())
        }
        Statement::Truncate { table_names, .. } => {
            for target in table_names {
                truncate(session, &target.name)?;
            }
            Ok(Outcome::done())
        }
        Statement::ShowDatabases { .. } => {
            let rows = session
                .catalog
                .databases()?
                .into_iter()
                .map(|d| vec![text(d)])
                .collect();
            Ok(text_result(&["Database"], rows))
        }
        Statement::ShowTables {
            full, show_options, ..
        } => show_tables(session, *full, show_options),
        Statement::ShowVariables { filter, .. } => {
            let rows = LISTED_VARIABLES
                .iter()
                .filter(|name| matches_filter(name, filter.as_ref()))
                .filter_map(|name| {
                    session.variable(name).map(|v| {
                        vec![
                            text(*name),
                            text(String::from_utf8_lossy(&crate::value::to_text(&v)).into_owned()),
                        ]
                    })
                })
                .collect();
            Ok(text_result(&["Variable_name", "Value"], rows))
        }
        Statement::ShowStatus { .. } => Ok(text_result(
            &["Variable_name", "Value"],
            vec![
                vec![
                    text("Threads_connected"),
                    text(session.catalog.connections().to_string()),
                ],
                vec![text("Uptime"), text(session.catalog.uptime_s().to_string())],
            ],
        )),
        Statement::ShowVariable { variable } => {
            let words: Vec<String> = variable.iter().map(|v| v.value.to_lowercase()).collect();
            match words.first().map(String::as_str) {
                Some("warnings") => {
                    let rows = session
                        .warnings
                        .iter()
                        .map(|w| {
                            vec![
                                text(w.level),
                                Value::Int(i64::from(w.code)),
                                text(w.message.clone()),
                            ]
                        })
                        .collect();
                    Ok(text_result(&["Level", "Code", "Message"], rows))
                }
                Some("index" | "indexes" | "keys") if words.len() >= 3 => {
                    let (database, name) = match words.get(3..) {
                        Some([_, database]) => (database.clone(), words[2].clone()),
                        _ => (session.current_database()?.to_string(), words[2].clone()),
                    };
                    show_index(session, &database, &name)
                }
                _ => Err(SqlError::not_supported(statement)),
            }
        }
        Statement::ShowCreate {
            obj_type: ast::ShowCreateObject::Table,
            obj_name,
        } => {
            let (database, name) = split_name(session, obj_name)?;
            let create = show_create_table(session, &database, &name)?;
            Ok(text_result(
                &["Table", "Create Table"],
                vec![vec![text(name), text(create)]],
            ))
        }
        Statement::ShowColumns { show_options, .. } => {
            let Some(name) = show_options
                .show_in
                .as_ref()
                .and_then(|i| i.parent_name.as_ref())
            else {
                return Err(SqlError::syntax("SHOW COLUMNS needs FROM table"));
            };
            let (database, name) = split_name(session, name)?;
            describe(session, &database, &name)
        }
        Statement::ExplainTable { table_name, .. } => {
            let (database, name) = split_name(session, table_name)?;
            describe(session, &database, &name)
        }
        Statement::Explain { statement, .. } => explain(session, statement, placeholders),
        other => Err(SqlError::not_supported(
            other
                .to_string()
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
        )),
    }
}

/// MySQL's bound on a SELECT's time, in ms (0: none), which the session keeps.
const MAX_EXECUTION_TIME: &str = "max_execution_time";

fn set_variables(
    session: &mut Session,
    set: &Set,
    placeholders: &[Location],
    params: &[Value],
) -> SqlResult<Outcome> {
    let assignments: Vec<(String, &ast::Expr)> = match set {
        Set::SingleAssignment {
            variable, values, ..
        } => match values.as_slice() {
            [value] => vec![(name_of(variable), value)],
            _ => return Err(SqlError::not_supported(set)),
        },
        Set::MultipleAssignments { assignments } => assignments
            .iter()
            .map(|a| (name_of(&a.name), &a.value))
            .collect(),
        Set::SetNames { .. }
        | Set::SetNamesDefault {}
        | Set::SetTransaction { .. }
        | Set::SetTimeZone { .. } => return Ok(Outcome::done()),
        other => return Err(SqlError::not_supported(other)),
    };
    for (name, expr) in assignments {
        let name = name.to_lowercase();
        let name = name
            .trim_start_matches("@@")
            .trim_start_matches("session.")
            .trim_start_matches("global.")
            .to_string();
        let value = match expr {
            // SET sql_mode = STRICT_ALL_TABLES: a bare word is its own text.
            ast::Expr::Identifier(ident) if !ident.value.starts_with('@') => {
                Value::Bytes(ident.value.clone().into_bytes())
            }
            other => set_value(session, other, placeholders, params)?,
        };
        let on = match &value {
            Value::Bytes(b) => b.eq_ignore_ascii_case(b"on") || b == b"1",
            other => truth(other) == Some(true),
        };
        if name == crate::session::DURABLE_COMMITS {
            session.durable_commits = on;
            continue;
        }
        if name == MAX_EXECUTION_TIME {
            let max_ms = crate::value::to_i64(&value).filter(|ms| *ms >= 0);
            session.max_execution_time_ms = max_ms.ok_or_else(|| {
                SqlError::new(
                    1231,
                    "42000",
                    format!("Variable '{MAX_EXECUTION_TIME}' can't be set to the value given"),
                )
            })? as u64;
        }
        if name == "autocommit" {
            if on && !session.autocommit {
                // Turning autocommit on commits what is open (MySQL's rule).
                session.commit()?;
            }
            session.autocommit = on;
            continue;
        }
        session.variables.borrow_mut().insert(name, value);
    }
    Ok(Outcome::done())
}

/// A SET value, computed as `SELECT value` is: a subquery anywhere in it runs first
/// (`SET sql_mode = (SELECT CONCAT(@@sql_mode, ...))`, as drivers send at connect).
fn set_value(
    session: &mut Session,
    value: &ast::Expr,
    placeholders: &[Location],
    params: &[Value],
) -> SqlResult<Value> {
    let Statement::Query(mut query) = crate::session::parse("SELECT NULL")?.statement else {
        unreachable!("SELECT NULL is a query");
    };
    if let ast::SetExpr::Select(select) = query.body.as_mut() {
        select.projection = vec![ast::SelectItem::UnnamedExpr(value.clone())];
    }
    let Outcome::Rows { mut rows, .. } =
        select::union::execute(session, &query, placeholders, params)?
    else {
        unreachable!("a query answers with rows");
    };
    Ok(rows
        .pop()
        .and_then(|mut row| row.pop())
        .unwrap_or(Value::Null))
}

fn drop(
    session: &mut Session,
    object_type: ObjectType,
    if_exists: bool,
    names: &[ast::ObjectName],
) -> SqlResult<Outcome> {
    match object_type {
        ObjectType::Table => {
            for name in names {
                let (database, table) = split_name(session, name)?;
                match session.catalog.drop_table(&database, &table) {
                    Err(e) if (e.code == 1146 || e.code == 1051) && if_exists => {
                        session.warn(1051, format!("Unknown table '{database}.{table}'"))
                    }
                    Err(e) if e.code == 1146 => {
                        return Err(SqlError::new(
                            1051,
                            "42S02",
                            format!("Unknown table '{database}.{table}'"),
                        ))
                    }
                    other => other?,
                }
            }
            Ok(Outcome::done())
        }
        ObjectType::Schema | ObjectType::Database => {
            let mut dropped = 0;
            for name in names {
                let name = name_of(name);
                match session.catalog.drop_database(&name) {
                    Err(e) if e.code == 1008 && if_exists => session.warn(1008, e.message),
                    other => dropped += other?,
                }
                if session.database.as_deref() == Some(name.to_lowercase().as_str()) {
                    session.database = None;
                }
            }
            Ok(Outcome::affected(dropped as u64))
        }
        ObjectType::View => {
            for name in names {
                let (database, view) = split_name(session, name)?;
                if !session.catalog.drop_view(&database, &view)? {
                    let unknown = format!("Unknown table '{database}.{view}'");
                    if !if_exists {
                        return Err(SqlError::new(1051, "42S02", unknown));
                    }
                    session.warn(1051, unknown);
                }
            }
            Ok(Outcome::done())
        }
        ObjectType::Index => Err(SqlError::syntax("DROP INDEX needs ON table")),
        other => Err(SqlError::not_supported(format!("DROP {other}"))),
    }
}

/// A view is its query's text, stored in the cluster (`catalog.rs`) and run as a derived
/// table wherever a query names it (`select/bind.rs`). Its query must bind now: its
/// tables and columns exist.
fn create_view(
    session: &mut Session,
    name: &ast::ObjectName,
    query: &ast::Query,
    replace: bool,
) -> SqlResult<Outcome> {
    let (database, view) = split_name(session, name)?;
    if !select::union::is_set_operation(query) {
        match select::bind_query(session, query, &[]) {
            // Subqueries (which run only with the query) are checked when it runs.
            Err(error) if error.code != 1235 => return Err(error),
            _ => {}
        }
    }
    let definition = query.to_string();
    session
        .catalog
        .create_view(&database, &view, &definition, replace)?;
    Ok(Outcome::done())
}

/// `SHOW [FULL] TABLES`: the tables and views of a database, by name; FULL adds each
/// one's `Table_type` (`BASE TABLE` or `VIEW`).
fn show_tables(
    session: &Session,
    full: bool,
    options: &ast::ShowStatementOptions,
) -> SqlResult<Outcome> {
    let database = match options
        .show_in
        .as_ref()
        .and_then(|i| i.parent_name.as_ref())
    {
        Some(name) => name_of(name),
        None => session.current_database()?.to_string(),
    };
    let filter = options.filter_position.as_ref().map(|p| match p {
        ast::ShowStatementFilterPosition::Infix(f)
        | ast::ShowStatementFilterPosition::Suffix(f) => f,
    });
    let tables = session.catalog.table_names(&database)?;
    let views = session.catalog.view_names(&database)?;
    let mut listed: Vec<(String, &str)> = tables.into_iter().map(|t| (t, "BASE TABLE")).collect();
    listed.extend(views.into_iter().map(|v| (v, "VIEW")));
    listed.sort();
    let rows = listed
        .into_iter()
        .filter(|(name, _)| matches_filter(name, filter))
        .map(|(name, kind)| match full {
            true => vec![text(name), text(kind)],
            false => vec![text(name)],
        })
        .collect();
    let header = format!("Tables_in_{database}");
    Ok(match full {
        true => text_result(&[&header, "Table_type"], rows),
        false => text_result(&[&header], rows),
    })
}

fn create_table(session: &mut Session, create: &ast::CreateTable) -> SqlResult<Outcome> {
    if create.temporary {
        return Err(SqlError::not_supported("CREATE TEMPORARY TABLE"));
    }
    let (database, name) = split_name(session, &create.name)?;
    check_name("table", &name)?;
    if !session.catalog.database_exists(&database)? {
        return Err(SqlError::unknown_database(&database));
    }
    let definition = ddl::create_table(create, cluster_name(&database, &name))?;
    match session.catalog.create_table(
        &database,
        definition.schema,
        definition.indexes,
        definition.auto_increment,
    ) {
        Err(e) if e.code == 1050 && create.if_not_exists => {
            session.warn(1050, e.message);
            Ok(Outcome::done())
        }
        other => other.map(|_| Outcome::done()),
    }
}

/// `DROP INDEX index ON table`: any secondary index; not the primary key's.
fn drop_index(session: &mut Session, database: &str, name: &str, index: &str) -> SqlResult<()> {
    let table = session.catalog.table(database, name)?;
    if index.eq_ignore_ascii_case(ddl::PRIMARY_INDEX) {
        return Err(SqlError::not_supported("dropping the primary key"));
    }
    if table.table.index(index).is_err() {
        return Err(SqlError::new(
            1091,
            "42000",
            format!("Can't DROP '{index}'; check that column/key exists"),
        ));
    }
    session.catalog.forget(database, name);
    session.catalog.client().drop_index(&table.table, index)?;
    Ok(())
}

/// Deletes every row, a batch of keys per transaction.
fn truncate(session: &mut Session, name: &ast::ObjectName) -> SqlResult<()> {
    let (database, table_name) = split_name(session, name)?;
    let table = session.catalog.table(&database, &table_name)?;
    let key_columns = table.key_columns();
    let client = session.catalog.client();
    let keys: Vec<Vec<Value>> = client
        .scan(&table.table, ScanSpec::full().columns(key_columns))?
        .collect::<Result<_, _>>()?;
    for batch in keys.chunks(TRUNCATE_BATCH_ROWS) {
        let mut transaction = client.transaction();
        for key in batch {
            transaction.delete(&table.table, key)?;
        }
        transaction
            .execute(kista_client::ExecuteMode::Commit)?
            .wait()?;
    }
    Ok(())
}

fn describe(session: &Session, database: &str, name: &str) -> SqlResult<Outcome> {
    let table = session.catalog.table(database, name)?;
    let rows = table
        .visible_columns()
        .map(|(position, column)| {
            let key = information_schema::column_key(&table, position);
            let default = information_schema::column_default(column);
            let extra = information_schema::column_extra(&table, position);
            vec![
                text(column.name.clone()),
                text(table.type_name(position)),
                text(if column.nullable { "YES" } else { "NO" }),
                text(key),
                default,
                text(extra),
            ]
        })
        .collect();
    Ok(text_result(
        &["Field", "Type", "Null", "Key", "Default", "Extra"],
        rows,
    ))
}

fn show_index(session: &Session, database: &str, name: &str) -> SqlResult<Outcome> {
    let table = session.catalog.table(database, name)?;
    let schema = table.schema();
    let rows = information_schema::index_columns(&table)
        .into_iter()
        .map(|entry| {
            vec![
                text(table.name.clone()),
                Value::Int(i64::from(!entry.unique)),
                text(entry.index),
                Value::Int(entry.sequence as i64),
                text(schema.columns[entry.column].name.clone()),
                text(entry.index_type),
            ]
        })
        .collect();
    Ok(text_result(
        &[
            "Table",
            "Non_unique",
            "Key_name",
            "Seq_in_index",
            "Column_name",
            "Index_type",
        ],
        rows,
    ))
}

fn show_create_table(session: &Session, database: &str, name: &str) -> SqlResult<String> {
    let table = session.catalog.table(database, name)?;
    let schema = table.schema();
    let mut lines = Vec::new();
    for (position, column) in table.visible_columns() {
        let mut line = format!("  `{}` {}", column.name, table.type_name(position));
        if !column.nullable {
            line.push_str(" NOT NULL");
        }
        if table.auto_increment == Some(position) {
            line.push_str(" AUTO_INCREMENT");
        } else if let Some(default) = &column.default {
            line.push_str(&format!(
                " DEFAULT {}",
                default_literal(&table, position, default)
            ));
        } else if column.nullable {
            line.push_str(" DEFAULT NULL");
        }
        let comment = &table.extras.columns[position].comment;
        if !comment.is_empty() {
            line.push_str(&format!(" COMMENT {}", quoted(comment)));
        }
        lines.push(line);
    }
    let names = |columns: &[usize]| {
        columns
            .iter()
            .map(|&c| match table.prefix_source(c) {
                Some((source, length)) => format!("`{}`({length})", schema.columns[source].name),
                None => format!("`{}`", schema.columns[c].name),
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    if table.hidden_key.is_none() {
        lines.push(format!("  PRIMARY KEY ({})", names(&schema.primary_key)));
    }
    for (_, index) in table.table.indexes() {
        if index.name == ddl::PRIMARY_INDEX {
            continue;
        }
        let kind = if index.kind == kista_client::schema::IndexKind::Unique {
            "UNIQUE KEY"
        } else {
            "KEY"
        };
        lines.push(format!(
            "  {kind} `{}` ({})",
            index.name,
            names(&index.columns)
        ));
    }
    let comment = match table.extras.comment.as_str() {
        "" => String::new(),
        comment => format!(" COMMENT={}", quoted(comment)),
    };
    Ok(format!(
        "CREATE TABLE `{}` (\n{}\n) ENGINE=ndbcluster DEFAULT CHARSET=utf8mb4{comment}",
        table.name,
        lines.join(",\n")
    ))
}

/// A column's default as SHOW CREATE TABLE prints it (a BIT's as `b'101'`).
fn default_literal(table: &SqlTable, column: usize, default: &Value) -> String {
    match (table.sql_type(column), default) {
        (Some(crate::sql_type::SqlType::Bit(_)), Value::UInt(bits)) => format!("b'{bits:b}'"),
        _ => quoted(&String::from_utf8_lossy(&crate::value::to_text(default))),
    }
}

/// `text` as an SQL string literal.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn explain(
    session: &mut Session,
    statement: &Statement,
    placeholders: &[Location],
) -> SqlResult<Outcome> {
    let plan = match statement {
        Statement::Query(query) => {
            let (plan, _) = subquery::bind_answering(session, query, placeholders, &[])?;
            select::explain(&plan)
        }
        Statement::Update {
            table, selection, ..
        } => {
            let (table, _) = select::table_of(session, &table.relation)?;
            select::explain(&select::SelectPlan::for_write(
                &table,
                selection.as_ref(),
                &[],
                None,
                placeholders,
            )?)
        }
        Statement::Delete(delete) => {
            let from = match &delete.from {
                ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
            };
            let Some(target) = from.first() else {
                return Err(SqlError::syntax("DELETE without a table"));
            };
            let (table, _) = select::table_of(session, &target.relation)?;
            select::explain(&select::SelectPlan::for_write(
                &table,
                delete.selection.as_ref(),
                &[],
                None,
                placeholders,
            )?)
        }
        other => {
            return Err(SqlError::not_supported(format!(
                "EXPLAIN {}",
                other.to_string().split_whitespace().next().unwrap_or("")
            )))
        }
    };
    Ok(text_result(&["plan"], vec![vec![text(plan)]]))
}
