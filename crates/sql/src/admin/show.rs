//! Statements that describe: `SHOW` (those not answered as queries of
//! `information_schema`, `dialect/show.rs`), `DESCRIBE` and `EXPLAIN`.

use sqlparser::ast::{self, Statement};
use sqlparser::tokenizer::Location;

use kista_client::types::{ColumnType, Value};

use super::{matches_filter, name_of, text, text_result, LISTED_VARIABLES};
use crate::catalog::SqlTable;
use crate::ddl;
use crate::error::{SqlError, SqlResult};
use crate::information_schema;
use crate::select::{self, split_name};
use crate::session::{Outcome, Session};
use crate::subquery;

/// Runs `statement` if it is one of these (`None`: it is not).
pub(super) fn run(
    session: &mut Session,
    statement: &Statement,
    placeholders: &[Location],
) -> SqlResult<Option<Outcome>> {
    let outcome = match statement {
        Statement::ShowDatabases { show_options, .. } => show_databases(session, show_options),
        Statement::ShowTables {
            full, show_options, ..
        } => show_tables(session, *full, show_options),
        Statement::ShowVariables { filter, .. } => Ok(show_variables(session, filter.as_ref())),
        Statement::ShowStatus { filter, .. } => {
            let secure = session.secure.as_ref();
            let status = [
                (
                    "Threads_connected",
                    session.catalog.connections().to_string(),
                ),
                ("Uptime", session.catalog.uptime_s().to_string()),
                ("Ssl_cipher", secure.map_or("", |s| &s.cipher).to_string()),
                ("Ssl_version", secure.map_or("", |s| &s.version).to_string()),
            ];
            let shown = status.into_iter();
            let rows = (shown.filter(|(name, _)| matches_filter(name, filter.as_ref())))
                .map(|(name, value)| vec![text(name), text(value)])
                .collect();
            Ok(text_result(&["Variable_name", "Value"], rows))
        }
        Statement::ShowVariable { variable } => show_words(session, statement, variable),
        Statement::ShowCreate {
            obj_type: ast::ShowCreateObject::Table,
            obj_name,
        } => {
            let (database, name) = split_name(session, obj_name)?;
            // A table (from the cache) before a view (a read of the cluster's views).
            let create = match create_table_sql(session, &database, &name, true) {
                Err(error) if error.code == 1146 => {
                    return Ok(Some(
                        super::show_create::view(session, obj_name)?.ok_or(error)?,
                    ));
                }
                create => create?,
            };
            Ok(text_result(
                &["Table", "Create Table"],
                vec![vec![text(name), text(create)]],
            ))
        }
        Statement::ShowCreate {
            obj_type: ast::ShowCreateObject::View,
            obj_name,
        } => match super::show_create::view(session, obj_name)? {
            Some(view) => Ok(view),
            None => {
                let (database, name) = split_name(session, obj_name)?;
                session.catalog.table(&database, &name)?;
                let message = format!("'{database}.{name}' is not VIEW");
                Err(SqlError::new(1347, "HY000", message))
            }
        },
        Statement::ShowCreate {
            obj_type: ast::ShowCreateObject::Trigger,
            obj_name,
        } => super::show_create::trigger(session, obj_name),
        Statement::ShowColumns { show_options, .. } => {
            let table = (show_options.show_in.as_ref()).and_then(|i| i.parent_name.as_ref());
            let table = table.ok_or_else(|| SqlError::syntax("SHOW COLUMNS needs FROM table"))?;
            let (database, name) = split_name(session, table)?;
            describe(session, &database, &name)
        }
        Statement::ExplainTable { table_name, .. } => {
            let (database, name) = split_name(session, table_name)?;
            describe(session, &database, &name)
        }
        Statement::Explain { statement, .. } => explain(session, statement, placeholders),
        _ => return Ok(None),
    };
    outcome.map(Some)
}

/// `SHOW VARIABLES [LIKE ...]`: the listed variables the filter keeps, with their values.
/// `SHOW DATABASES [LIKE 'pattern']`. `kista_info` is listed only where a pattern is given
/// (and matches it): tools that dump every database SHOW DATABASES lists (mysqldump
/// `--all-databases`) skip the system schemas they know by name, as MySQL's skips NDB's
/// `ndbinfo`, and a dump of `kista_info`'s live figures could not be loaded back.
/// `information_schema.SCHEMATA` lists it always.
fn show_databases(session: &Session, options: &ast::ShowStatementOptions) -> SqlResult<Outcome> {
    let filter = options
        .filter_position
        .as_ref()
        .map(|position| match position {
            ast::ShowStatementFilterPosition::Infix(filter)
            | ast::ShowStatementFilterPosition::Suffix(filter) => filter,
        });
    let kista_info = crate::information_schema::kista_info::DATABASE;
    let rows = (session.catalog.databases()?.into_iter())
        .filter(|name| name != kista_info || filter.is_some())
        .filter(|name| matches_filter(name, filter))
        .filter(|name| crate::accounts::may_list_database(session, name))
        .map(|name| vec![text(name)])
        .collect();
    Ok(text_result(&["Database"], rows))
}

fn show_variables(session: &Session, filter: Option<&ast::ShowStatementFilter>) -> Outcome {
    let value_of = |name: &&str| {
        let value = session.variable(name)?;
        let value = String::from_utf8_lossy(&crate::value::to_text(&value)).into_owned();
        Some(vec![text(*name), text(value)])
    };
    let rows = (LISTED_VARIABLES.iter())
        .filter(|name| matches_filter(name, filter))
        .filter_map(value_of)
        .collect();
    text_result(&["Variable_name", "Value"], rows)
}

/// The SHOW statements sqlparser leaves as words: `SHOW {WARNINGS | ERRORS} [LIMIT
/// [offset,] count]` (`dialect::keep_show_warnings_limit` keeps the numbers; errors are
/// the diagnostics of level `Error`), `SHOW COUNT(*) {WARNINGS | ERRORS}`,
/// `SHOW INDEX FROM t [FROM db]` (and INDEXES, KEYS).
fn show_words(
    session: &Session,
    statement: &Statement,
    variable: &[ast::Ident],
) -> SqlResult<Outcome> {
    let words: Vec<String> = variable.iter().map(|v| v.value.to_lowercase()).collect();
    match words.first().map(String::as_str) {
        Some(listed @ ("warnings" | "errors")) => {
            let (skip, take) = match &words[1..] {
                [] => (0, usize::MAX),
                [limit, count] if limit == "limit" => (0, number(count, statement)?),
                [limit, offset, count] if limit == "limit" => {
                    (number(offset, statement)?, number(count, statement)?)
                }
                _ => return Err(SqlError::not_supported(statement)),
            };
            let warnings = session.warnings.borrow();
            let shown = (warnings.iter()).filter(|w| listed == "warnings" || w.level == "Error");
            let rows = (shown.skip(skip).take(take))
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
        Some("count")
            if words
                .get(1)
                .is_some_and(|w| w == "warnings" || w == "errors") =>
        {
            let warnings = session.warnings.borrow();
            let (name, count) = match words[1].as_str() {
                "warnings" => ("@@session.warning_count", warnings.len()),
                _ => {
                    let errors = warnings.iter().filter(|w| w.level == "Error").count();
                    ("@@session.error_count", errors)
                }
            };
            Ok(text_result(&[name], vec![vec![Value::Int(count as i64)]]))
        }
        _ => match show_index_target(session, variable)? {
            Some((database, name)) => show_index(session, &database, &name),
            None => Err(SqlError::not_supported(statement)),
        },
    }
}

/// The table `SHOW {INDEX | INDEXES | KEYS} FROM t [FROM db]` names (as sqlparser leaves
/// it: words), if `variable` is that statement.
pub(crate) fn show_index_target(
    session: &Session,
    variable: &[ast::Ident],
) -> SqlResult<Option<(String, String)>> {
    let words: Vec<String> = variable.iter().map(|v| v.value.to_lowercase()).collect();
    if !matches!(
        words.first().map(String::as_str),
        Some("index" | "indexes" | "keys")
    ) || words.len() < 3
    {
        return Ok(None);
    }
    let (database, name) = match words.get(3..) {
        Some([_, database]) => (database.clone(), words[2].clone()),
        _ => (session.current_database()?.to_string(), words[2].clone()),
    };
    Ok(Some((database, name)))
}

/// A count in a SHOW statement's LIMIT.
fn number(word: &str, statement: &Statement) -> SqlResult<usize> {
    word.parse().map_err(|_| SqlError::not_supported(statement))
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
    let mut listed: Vec<(String, &str)> =
        match crate::information_schema::system_table_names(&database) {
            Some(system) => system.map(|t| (t.to_string(), "SYSTEM VIEW")).collect(),
            None => {
                let tables = session.catalog.table_names(&database)?.into_iter();
                let views = session.catalog.view_names(&database)?.into_iter();
                tables
                    .map(|t| (t, "BASE TABLE"))
                    .chain(views.map(|v| (v, "VIEW")))
                    .collect()
            }
        };
    listed.retain(|(table, _)| {
        let on = crate::accounts::On::Table(database.clone(), table.clone());
        crate::accounts::may_see(session, &on)
    });
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

fn describe(session: &mut Session, database: &str, name: &str) -> SqlResult<Outcome> {
    let table = match session.catalog.table(database, name) {
        Err(error) if error.code == 1146 => {
            return super::show_create::describe_view(session, database, name)?.ok_or(error);
        }
        table => table?,
    };
    let rows = table
        .visible_columns()
        .map(|(position, column)| {
            let key = information_schema::column_key(&table, position);
            let default = information_schema::column_default(&table, position);
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

/// The `CREATE TABLE` statement SHOW CREATE TABLE prints for the table (`shown`), or
/// the one `CREATE TABLE ... LIKE` runs: without the foreign keys and the AUTO_INCREMENT
/// counter's value, as MySQL's copies neither.
pub(super) fn create_table_sql(
    session: &Session,
    database: &str,
    name: &str,
    shown: bool,
) -> SqlResult<String> {
    let table = session.catalog.table(database, name)?;
    let schema = table.schema();
    let mut lines = Vec::new();
    for (position, column) in table.visible_columns() {
        let mut line = format!("  `{}` {}", column.name, table.type_name(position));
        let collation = column.column_type.collation();
        let is_text = table.sql_type(position).is_none()
            && matches!(
                column.column_type,
                ColumnType::Char { .. } | ColumnType::VarChar { .. } | ColumnType::Text { .. }
            );
        if is_text && collation != table.extras.collation {
            line.push_str(&format!(" COLLATE {}", collation.name()));
        }
        if !column.nullable {
            line.push_str(" NOT NULL");
        }
        let extras = &table.extras.columns[position];
        if table.auto_increment == Some(position) {
            line.push_str(" AUTO_INCREMENT");
        } else if !extras.default_sql.is_empty() {
            line.push_str(&format!(" DEFAULT {}", extras.default_sql));
        } else if let Some(default) = table.constant_default(position) {
            line.push_str(&format!(
                " DEFAULT {}",
                default_literal(&table, position, default)
            ));
        } else if column.nullable {
            line.push_str(" DEFAULT NULL");
        }
        if !extras.on_update_sql.is_empty() {
            line.push_str(&format!(" ON UPDATE {}", extras.on_update_sql));
        }
        let comment = &extras.comment;
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
    if shown {
        for key in ddl::foreign_keys::described(session.catalog, &table)? {
            lines.push(format!("  {}", key.sql(&table.database)));
        }
        for clause in &table.extras.pending_foreign_keys {
            lines.push(format!("  {clause}"));
        }
    }
    for check in &table.extras.checks {
        let enforced = if check.enforced {
            ""
        } else {
            " /*!80016 NOT ENFORCED */"
        };
        lines.push(format!(
            "  CONSTRAINT `{}` CHECK ({}){enforced}",
            check.name, check.sql
        ));
    }
    let comment = match table.extras.comment.as_str() {
        "" => String::new(),
        comment => format!(" COMMENT={}", quoted(comment)),
    };
    let auto_increment = match session.catalog.next_auto_increment(&table)? {
        Some(next) if shown && next > 1 => format!(" AUTO_INCREMENT={next}"),
        _ => String::new(),
    };
    let collation = table.extras.collation.def();
    Ok(format!(
        "CREATE TABLE `{}` (\n{}\n) ENGINE=ndbcluster{auto_increment} DEFAULT CHARSET={} \
         COLLATE={}{comment}",
        table.name,
        lines.join(",\n"),
        collation.charset,
        collation.name
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
                (&[], None),
                placeholders,
                (None, None),
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
                (&[], None),
                placeholders,
                (None, None),
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
