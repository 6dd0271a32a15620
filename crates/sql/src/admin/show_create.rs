//! `SHOW CREATE` of what is not a table: a view (also through SHOW CREATE TABLE, as
//! MySQL answers it and mysqldump asks it) and a trigger. Each prints the statement that
//! makes it again, as mysqldump copies it into a dump. (SHOW CREATE DATABASE is a query
//! of `information_schema`: `dialect/show.rs`.) And DESCRIBE of a view, whose columns
//! are its query's.

use sqlparser::ast;

use kista_client::types::Value;

use super::{text, text_result};
use crate::accounts::privileges::needed;
use crate::error::{SqlError, SqlResult};
use crate::information_schema::{CHARSET, COLLATION};
use crate::protocol::results::ColumnDefinition;
use crate::select::split_name;
use crate::session::{Outcome, Session};

/// `SHOW CREATE VIEW`, or SHOW CREATE TABLE of a view: `None` when `name` is no view.
pub(super) fn view(session: &Session, name: &ast::ObjectName) -> SqlResult<Option<Outcome>> {
    let (database, view) = split_name(session, name)?;
    let Some(query) = session.catalog.view(&database, &view)? else {
        return Ok(None);
    };
    let create = format!(
        "CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`%` SQL SECURITY DEFINER VIEW `{}` AS {query}",
        view.replace('`', "``")
    );
    Ok(Some(text_result(
        &[
            "View",
            "Create View",
            "character_set_client",
            "collation_connection",
        ],
        vec![vec![
            text(view),
            text(create),
            text(CHARSET),
            text(COLLATION),
        ]],
    )))
}

/// `SHOW CREATE TRIGGER [db.]name`.
pub(super) fn trigger(session: &Session, name: &ast::ObjectName) -> SqlResult<Outcome> {
    let (database, trigger) = split_name(session, name)?;
    for table_name in session.catalog.table_names(&database)? {
        let table = match session.catalog.table(&database, &table_name) {
            Ok(table) => table,
            Err(error) if error.code == 1146 => continue, // dropped meanwhile
            Err(error) => return Err(error),
        };
        let found = table.extras.triggers.iter();
        if let Some(def) = found
            .into_iter()
            .find(|t| t.name.eq_ignore_ascii_case(&trigger))
        {
            // MySQL's rule: the TRIGGER privilege on the trigger's table (its body may
            // name what the account must not learn of).
            crate::accounts::check_table(session, needed::TRIGGER, &table)?;
            let row = vec![
                text(def.name.clone()),
                text(""),
                text(def.create_sql(&table.name)),
                text(CHARSET),
                text(COLLATION),
                text(COLLATION),
                Value::Null,
            ];
            let columns = [
                "Trigger",
                "sql_mode",
                "SQL Original Statement",
                "character_set_client",
                "collation_connection",
                "Database Collation",
                "Created",
            ];
            return Ok(text_result(&columns, vec![row]));
        }
    }
    Err(SqlError::new(1360, "HY000", "Trigger does not exist"))
}

/// DESCRIBE (SHOW COLUMNS) of view `name`: its query's columns, typed as its result
/// describes them; `None` when `name` is no view.
pub(super) fn describe_view(
    session: &mut Session,
    database: &str,
    name: &str,
) -> SqlResult<Option<Outcome>> {
    if session.catalog.view(database, name)?.is_none() {
        return Ok(None);
    }
    let quote = |name: &str| name.replace('`', "``");
    let sql = format!(
        "SELECT * FROM `{}`.`{}` LIMIT 0",
        quote(database),
        quote(name)
    );
    let parsed = crate::session::parse(&sql)?;
    let Outcome::Rows { columns, .. } = session.execute(&parsed, &[])? else {
        return Err(SqlError::syntax(format!("view {name} is no query")));
    };
    let rows = columns
        .iter()
        .map(|column| {
            let nullable = column.flags & crate::protocol::column_flag::NOT_NULL == 0;
            vec![
                text(column.name.clone()),
                text(type_name(column)),
                text(if nullable { "YES" } else { "NO" }),
                text(""),
                Value::Null,
                text(""),
            ]
        })
        .collect();
    Ok(Some(text_result(
        &["Field", "Type", "Null", "Key", "Default", "Extra"],
        rows,
    )))
}

/// A result column's type as DESCRIBE names it, from what the result says of it.
fn type_name(column: &ColumnDefinition) -> String {
    use crate::protocol::column_type as code;
    let binary = column.collation == 63;
    let characters = column.length / 4;
    match column.type_code {
        code::TINY => "tinyint".into(),
        code::SHORT => "smallint".into(),
        code::INT24 => "mediumint".into(),
        code::LONG => "int".into(),
        code::LONGLONG => "bigint".into(),
        code::FLOAT => "float".into(),
        code::DOUBLE => "double".into(),
        code::NEWDECIMAL => "decimal".into(),
        code::DATE => "date".into(),
        code::TIME => "time".into(),
        code::DATETIME => "datetime".into(),
        code::TIMESTAMP => "timestamp".into(),
        code::YEAR => "year".into(),
        code::JSON => "json".into(),
        code::BIT => "bit".into(),
        code::BLOB if binary => "blob".into(),
        code::BLOB => "text".into(),
        code::STRING if binary => format!("binary({})", column.length),
        code::STRING => format!("char({characters})"),
        _ if binary => format!("varbinary({})", column.length),
        _ => format!("varchar({characters})"),
    }
}
