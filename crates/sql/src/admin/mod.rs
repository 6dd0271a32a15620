//! Everything that is not a query or a row change: transactions and SET here, with the
//! server variables drivers ask for; databases, tables, views, indexes and triggers in
//! `schema.rs`; SHOW, DESCRIBE and EXPLAIN in `show.rs` (SHOW CREATE of views and
//! triggers in `show_create.rs`).

mod foreign_keys;
mod schema;
mod show;
mod show_create;

pub use schema::TRUNCATE_BATCH_ROWS;
pub(crate) use show::show_index_target;

use sqlparser::ast::{self, Set, ShowStatementFilter, Statement};
use sqlparser::tokenizer::Location;

use kista_client::types::{Collation, Value};

use crate::accounts::privileges::needed;
use crate::error::{SqlError, SqlResult};
use crate::output;
use crate::select;
use crate::session::{Outcome, Session, SERVER_VERSION};
use crate::value::truth;

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
            text(Collation::default().name())
        }
        "transaction_isolation" | "tx_isolation" => text("READ-COMMITTED"),
        "transaction_read_only" | "tx_read_only" | "read_only" => Value::Int(0),
        // Table names kept as created, found in any case (`catalog::stored_name`).
        "lower_case_table_names" => Value::Int(2),
        "time_zone" => text("SYSTEM"),
        "system_time_zone" => text("UTC"),
        "wait_timeout" | "interactive_timeout" => Value::Int(28_800),
        "net_write_timeout" => Value::Int(60),
        "net_read_timeout" => Value::Int(30),
        "net_buffer_length" => Value::Int(16_384),
        "license" => text("Apache-2.0"),
        "init_connect" => text(""),
        "performance_schema" => Value::Int(0),
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
        "unique_checks" | "sql_notes" | "sql_quote_show_create" => Value::Int(1),
        "explicit_defaults_for_timestamp" | "sql_big_selects" => Value::Int(1),
        "group_concat_max_len" => Value::Int(1024),
        "div_precision_increment" => Value::Int(4),
        "default_week_format" => Value::Int(0),
        "character_set_filesystem" => text("binary"),
        _ => return None,
    })
}

/// The names `SHOW VARIABLES` lists.
pub(super) const LISTED_VARIABLES: &[&str] = &[
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
    "require_secure_transport",
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
pub(crate) fn text_result(names: &[&str], rows: Vec<Vec<Value>>) -> Outcome {
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

pub(super) fn text(s: impl Into<String>) -> Value {
    Value::Bytes(s.into().into_bytes())
}

pub(crate) fn name_of(name: &ast::ObjectName) -> String {
    name.0
        .iter()
        .filter_map(|p| p.as_ident())
        .map(|i| i.value.clone())
        .collect::<Vec<_>>()
        .join(".")
}

pub(super) fn matches_filter(name: &str, filter: Option<&ShowStatementFilter>) -> bool {
    match filter {
        Some(ShowStatementFilter::Like(pattern))
        | Some(ShowStatementFilter::NoKeyword(pattern)) => {
            Collation::utf8mb4_general_ci.like(name.as_bytes(), pattern.as_bytes())
        }
        _ => true,
    }
}

pub fn run(
    session: &mut Session,
    statement: &Statement,
    placeholders: &[Location],
    params: &[Value],
) -> SqlResult<Outcome> {
    if let Some(outcome) = transaction_statement(session, statement)? {
        return Ok(outcome);
    }
    if let Some(outcome) = schema::run(session, statement)? {
        return Ok(outcome);
    }
    if let Some(outcome) = show::run(session, statement, placeholders)? {
        return Ok(outcome);
    }
    match statement {
        Statement::Set(set) => set_variables(session, set, placeholders, params),
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

/// BEGIN, COMMIT, ROLLBACK [TO], SAVEPOINT, RELEASE SAVEPOINT, KILL and LOCK/UNLOCK
/// TABLES.
fn transaction_statement(
    session: &mut Session,
    statement: &Statement,
) -> SqlResult<Option<Outcome>> {
    let outcome = match statement {
        Statement::StartTransaction { modes, .. } => {
            session.begin()?;
            let snapshot =
                ast::TransactionMode::IsolationLevel(ast::TransactionIsolationLevel::Snapshot);
            if modes.contains(&snapshot) {
                session.warn(
                    1235,
                    "WITH CONSISTENT SNAPSHOT reads committed rows in Kista, as NDB: each \
                     read sees the latest commit, not one point in time (a consistent copy: \
                     an online backup, `kista mgm -e \"start backup\"`)"
                        .into(),
                );
            }
            Ok(Outcome::done())
        }
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
            let only_of = (!crate::accounts::may_kill_others(session)).then_some(&*session.user);
            session.catalog.processes.kill(id, kill, only_of)?;
            Ok(Outcome::done())
        }
        Statement::LockTables { tables } => lock_tables(session, tables),
        // Ends nothing: LOCK TABLES took no locks and left no transaction open.
        Statement::UnlockTables => Ok(Outcome::done()),
        Statement::Savepoint { name } => session.savepoint(&name.value).map(|_| Outcome::done()),
        Statement::ReleaseSavepoint { name } => session
            .savepoints
            .release(&name.value)
            .map(|_| Outcome::done()),
        _ => return Ok(None),
    };
    outcome.map(Some)
}

/// `LOCK TABLES`: Kista takes no table locks (NDB's hold only on the SQL node that took
/// them; a cluster's other front ends and native clients go on writing). As MySQL's, it
/// commits the open transaction and checks each table exists and may be read; then it
/// says in a warning that it locked nothing. mysqldump locks so for a consistent copy of
/// each database: `--single-transaction` gives one here (docs/sql.md).
fn lock_tables(session: &mut Session, tables: &[ast::LockTable]) -> SqlResult<Outcome> {
    session.commit()?;
    let database = session.current_database()?.to_string();
    for locked in tables {
        let name = &locked.table.value;
        match session.catalog.table(&database, name) {
            Ok(table) => crate::accounts::check_table(session, needed::SELECT, &table)?,
            Err(error)
                if error.code == 1146 && session.catalog.view(&database, name)?.is_some() => {}
            Err(error) => return Err(error),
        }
    }
    session.warn(
        1235,
        "LOCK TABLES locks nothing in Kista: other sessions go on writing (a consistent \
         read: START TRANSACTION WITH CONSISTENT SNAPSHOT)"
            .into(),
    );
    Ok(Outcome::done())
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
        if name == crate::session::FOREIGN_KEY_CHECKS {
            session.foreign_key_checks = on;
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
