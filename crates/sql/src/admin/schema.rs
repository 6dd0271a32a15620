//! Statements that change what exists: databases, tables, views, indexes, triggers
//! (`CREATE`, `DROP`, `TRUNCATE`) and `USE`.

use sqlparser::ast::{self, ObjectType, Statement};

use kista_client::types::Value;
use kista_client::ScanSpec;

use super::{foreign_keys, name_of};
use crate::catalog::{check_name, stored_name};
use crate::ddl;
use crate::error::{SqlError, SqlResult};
use crate::select::{self, split_name};
use crate::session::{Outcome, Session};

/// Rows TRUNCATE deletes per transaction.
pub const TRUNCATE_BATCH_ROWS: usize = 1000;

/// Runs `statement` if it is one of these (`None`: it is not).
pub(super) fn run(session: &mut Session, statement: &Statement) -> SqlResult<Option<Outcome>> {
    let outcome = match statement {
        Statement::Use(use_statement) => use_database(session, use_statement),
        Statement::CreateDatabase {
            db_name,
            if_not_exists,
            ..
        }
        | Statement::CreateSchema {
            schema_name: ast::SchemaName::Simple(db_name),
            if_not_exists,
            ..
        } => {
            let collation = crate::dialect::database_collation(statement);
            create_database(session, db_name, *if_not_exists, collation)
        }
        Statement::Drop {
            object_type: ObjectType::Index,
            names,
            table: Some(table),
            ..
        } => drop_indexes(session, table, names),
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
        Statement::CreateIndex(create) => create_index(session, create),
        Statement::AlterTable {
            name,
            if_exists,
            operations,
            ..
        } => alter_table(session, name, *if_exists, operations),
        Statement::RenameTable(renames) => {
            for rename in renames {
                let operation = ast::AlterTableOperation::RenameTable {
                    table_name: ast::RenameTableNameKind::To(rename.new_name.clone()),
                };
                alter_table(session, &rename.old_name, false, &[operation])?;
            }
            Ok(Outcome::done())
        }
        Statement::Truncate { table_names, .. } => {
            for target in table_names {
                truncate(session, &target.name)?;
            }
            Ok(Outcome::done())
        }
        _ => return Ok(None),
    };
    outcome.map(Some)
}

/// `USE db`.
fn use_database(session: &mut Session, use_statement: &ast::Use) -> SqlResult<Outcome> {
    let name = match use_statement {
        ast::Use::Object(name) | ast::Use::Database(name) | ast::Use::Schema(name) => name_of(name),
        _ => return Err(SqlError::not_supported(use_statement)),
    };
    session.use_database(&name)?;
    Ok(Outcome::done())
}

/// `CREATE DATABASE [IF NOT EXISTS] db` (or SCHEMA): 1007 when it exists, a warning with
/// IF NOT EXISTS.
fn create_database(
    session: &mut Session,
    db_name: &ast::ObjectName,
    if_not_exists: bool,
    collation: Option<kista_client::types::Collation>,
) -> SqlResult<Outcome> {
    match session
        .catalog
        .create_database(&name_of(db_name), collation)
    {
        Err(e) if e.code == 1007 && if_not_exists => {
            session.warn(1007, e.message);
            Ok(Outcome::done())
        }
        other => other.map(|_| Outcome::affected(1)),
    }
}

/// `DROP INDEX name[, ...] ON table`.
fn drop_indexes(
    session: &mut Session,
    table: &ast::ObjectName,
    names: &[ast::ObjectName],
) -> SqlResult<Outcome> {
    let (database, name) = split_name(session, table)?;
    for index in names {
        drop_index(session, &database, &name, &name_of(index))?;
    }
    Ok(Outcome::done())
}

/// `CREATE [UNIQUE] INDEX`: built from the table's rows while it serves; then, as after
/// ALTER TABLE ... ADD INDEX, an index made for a foreign key it now serves is dropped.
fn create_index(session: &mut Session, create: &ast::CreateIndex) -> SqlResult<Outcome> {
    let (database, name) = split_name(session, &create.table_name)?;
    let table = session.catalog.table(&database, &name)?;
    let index = ddl::create_index(create, &table)?;
    session.catalog.forget(&database, &name);
    session
        .catalog
        .client()
        .create_index(&table.table, index)
        .map_err(SqlError::from)?;
    if !table.extras.key_indexes.is_empty() {
        alter_table(session, &create.table_name, false, &[])?;
    }
    Ok(Outcome::done())
}

/// `ALTER TABLE` (and `RENAME TABLE`): in place, while the table serves (`ddl/alter.rs`).
fn alter_table(
    session: &mut Session,
    name: &ast::ObjectName,
    if_exists: bool,
    operations: &[ast::AlterTableOperation],
) -> SqlResult<Outcome> {
    let (database, table_name) = split_name(session, name)?;
    let table = match session.catalog.table(&database, &table_name) {
        Err(error) if error.code == 1146 && if_exists => return Ok(Outcome::done()),
        other => other?,
    };
    let target = |name: &ast::ObjectName| -> SqlResult<String> {
        let (database, table) = split_name(session, name)?;
        check_name("table", &table)?;
        if !session.catalog.database_exists(&database)? {
            return Err(SqlError::unknown_database(&database));
        }
        Ok(stored_name(&database, &table))
    };
    let no_variable = |_: &str| None;
    let ctx = session.eval_context(&[], &[], &no_variable);
    let mut plan = ddl::alter::plan(&table, operations, &target, &ctx)?;
    if let Some(copy) = plan.copy.take() {
        crate::table_copy::run(session, &table, copy)?;
        return Ok(Outcome::done());
    }
    for check in &plan.new_checks {
        refuse_violations(session, (&database, &table_name), check)?;
    }
    let named = (database.as_str(), table_name.as_str());
    foreign_keys::drop(session, named, &plan.drop_foreign_keys)?;
    let new_foreign_keys = std::mem::take(&mut plan.add_foreign_keys);
    let foreign_key_indexes = std::mem::take(&mut plan.foreign_key_indexes);
    let reopened = session.catalog.table(&database, &table_name)?;
    if reopened.table.schema_version != table.table.schema_version
        && plan.drop_foreign_keys.is_empty()
    {
        // The plan was made from a definition that is no longer the table's (another
        // change came between, or the first was a stale cached one): applied to the new
        // version it would undo that change. The session plans again from a fresh lookup.
        return Err(SqlError::definition_changed(&format!(
            "table {table_name} changed while ALTER TABLE was planned"
        )));
    }
    session.catalog.alter_table(&reopened, plan)?;
    // Under the name the statement may have given it.
    let renamed = session.catalog.table_named_by_id(table.table.id)?;
    let (database, table_name) = renamed.unwrap_or((database, table_name));
    let named = (database.as_str(), table_name.as_str());
    if let Err(error) = foreign_keys::add(session, named, &new_foreign_keys, true) {
        // The indexes made for the keys go with them (best effort: the keys' error is
        // what the client hears).
        for index in &foreign_key_indexes {
            let _ = drop_index(session, &database, &table_name, index);
        }
        return Err(error);
    }
    Ok(Outcome::done())
}

/// Error 3819 when a row of the table breaks `check` (ALTER TABLE ADD CHECK), as MySQL
/// checks every row before it adds one. (A row written after this reading and before the
/// constraint is published is not checked.)
fn refuse_violations(
    session: &mut Session,
    (database, table): (&str, &str),
    check: &ddl::CheckDef,
) -> SqlResult<()> {
    let sql = format!(
        "SELECT 1 FROM `{database}`.`{table}` WHERE NOT ({}) LIMIT 1",
        check.sql
    );
    let parsed = crate::session::parse(&sql)?;
    let Statement::Query(query) = &parsed.statement else {
        return Err(SqlError::syntax(sql));
    };
    match select::union::execute(session, query, &[], &[])? {
        Outcome::Rows { rows, .. } if !rows.is_empty() => Err(SqlError::new(
            3819,
            "HY000",
            format!("Check constraint '{}' is violated.", check.name),
        )),
        _ => Ok(()),
    }
}

fn drop(
    session: &mut Session,
    object_type: ObjectType,
    if_exists: bool,
    names: &[ast::ObjectName],
) -> SqlResult<Outcome> {
    match object_type {
        ObjectType::Table => {
            let tables = (names.iter())
                .map(|name| split_name(session, name))
                .collect::<SqlResult<Vec<_>>>()?;
            let tables = foreign_keys::drop_order(session, tables);
            for (position, (database, table)) in tables.iter().enumerate() {
                let (database, table) = (database.clone(), table.clone());
                let named = (database.as_str(), table.as_str());
                match foreign_keys::before_drop(session, named, &tables[position + 1..]) {
                    Err(e) if e.code == 1146 => {}
                    other => other?,
                }
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

fn create_table(session: &mut Session, create: &ast::CreateTable) -> SqlResult<Outcome> {
    if create.temporary {
        return Err(SqlError::not_supported("CREATE TEMPORARY TABLE"));
    }
    if let Some(
        ast::CreateTableLikeKind::Plain(like) | ast::CreateTableLikeKind::Parenthesized(like),
    ) = &create.like
    {
        return create_table_like(session, create, &like.name);
    }
    let (database, name) = split_name(session, &create.name)?;
    check_name("table", &name)?;
    if !session.catalog.database_exists(&database)? {
        return Err(SqlError::unknown_database(&database));
    }
    let collation = session.catalog.database_collation(&database)?;
    let definition = ddl::create_table(create, stored_name(&database, &name), collation)?;
    match session.catalog.create_table(
        &database,
        definition.schema,
        definition.indexes,
        definition.auto_increment,
    ) {
        Err(e) if e.code == 1050 && create.if_not_exists => {
            session.warn(1050, e.message);
            return Ok(Outcome::done());
        }
        other => other?,
    };
    let named = (database.as_str(), name.as_str());
    if let Err(error) = foreign_keys::add(session, named, &definition.foreign_keys, false) {
        // CREATE TABLE makes the table whole or not at all.
        let _ = session.catalog.drop_table(&database, &name);
        return Err(error);
    }
    foreign_keys::add_pending(session, named)?;
    Ok(Outcome::done())
}

/// `CREATE TABLE t LIKE source`: an empty table with the source's columns, keys, indexes
/// and CHECK constraints, as MySQL makes it (no foreign keys; an AUTO_INCREMENT column
/// counts from 1 again). It is made from the source's SHOW CREATE TABLE text, the one
/// description of a table's definition there is.
fn create_table_like(
    session: &mut Session,
    create: &ast::CreateTable,
    source: &ast::ObjectName,
) -> SqlResult<Outcome> {
    let (database, name) = split_name(session, source)?;
    let text = super::show::create_table_sql(session, &database, &name, false)?;
    let Statement::CreateTable(mut copy) = crate::session::parse(&text)?.statement else {
        unreachable!("SHOW CREATE TABLE's text is a CREATE TABLE: {text}");
    };
    copy.name = create.name.clone();
    copy.if_not_exists = create.if_not_exists;
    create_table(session, &copy)
}

/// `DROP INDEX index ON table`: any secondary index; not the primary key's. As
/// ALTER TABLE ... DROP INDEX (its checks, and what the table keeps about the index).
fn drop_index(session: &mut Session, database: &str, name: &str, index: &str) -> SqlResult<()> {
    if index.eq_ignore_ascii_case(ddl::PRIMARY_INDEX) {
        return Err(SqlError::not_supported("dropping the primary key"));
    }
    let table = ast::ObjectName::from(vec![ast::Ident::new(database), ast::Ident::new(name)]);
    let operation = ast::AlterTableOperation::DropIndex {
        name: ast::Ident::new(index),
    };
    alter_table(session, &table, false, &[operation]).map(|_| ())
}

/// Deletes every row, a batch of keys per transaction.
fn truncate(session: &mut Session, name: &ast::ObjectName) -> SqlResult<()> {
    let (database, table_name) = split_name(session, name)?;
    let table = session.catalog.table(&database, &table_name)?;
    crate::table_copy::refuse_while_copied(&table, "TRUNCATE")?;
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
