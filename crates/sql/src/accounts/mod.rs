//! Accounts and privileges, as MySQL has them: accounts created, changed, renamed and
//! dropped by SQL and kept in the cluster (`store.rs`), so every SQL front end sees them
//! and they live as long as the cluster's data; privileges granted and revoked at the
//! server, database and table levels (`privileges.rs`), checked before every statement of
//! a session whose account lacks some (`check`), with MySQL's errors (1044, 1142, 1227).
//!
//! The accounts `kista sql --user` names (`root` without a password when it names none;
//! `kista up --root-password` sets that) hold every privilege; their passwords are the
//! configured ones until SQL sets one (which the table then keeps). An
//! account's host part is kept and shown, but every account matches every host. A
//! session takes its account's privileges when it logs in (COM_CHANGE_USER included)
//! and again after an account statement about its own account: grants made by other
//! sessions apply to connections made after them.

pub mod privileges;
mod run;
pub mod statements;
pub mod store;

pub use privileges::{PrivilegeSet, Privileges};
pub use run::run;
pub use statements::AccountStatement;

use sqlparser::ast::{self, ObjectType, Statement};

use crate::catalog::Catalog;
use crate::error::{SqlError, SqlResult};
use crate::protocol::auth::User;
use crate::select::split_name;
use crate::session::Session;
use privileges::needed;

/// The account a login as `name` checks its password against: the table's, if it holds
/// one (`None` when it does not, or cannot be read: the configured accounts then).
pub fn stored_login(catalog: &Catalog, name: &str) -> Option<User> {
    store::find(catalog, name)
        .ok()
        .flatten()
        .map(|stored| stored.user)
}

/// What `name`, logged in, may do: every privilege for the configured accounts (root,
/// unless `--user` names others), else the grants the table keeps.
pub fn privileges_of(catalog: &Catalog, configured: &[User], name: &str) -> SqlResult<Privileges> {
    if configured.iter().any(|user| user.name == name) {
        return Ok(Privileges::all());
    }
    let stored = store::find(catalog, name)?;
    Ok(Privileges::granted(
        stored.map(|a| a.grants).unwrap_or_default(),
    ))
}

/// The privileges of a session logged in as `name`; none when the accounts table cannot
/// be read (a refusal the next statement reports, never a privilege too many).
pub fn at_login(catalog: &Catalog, name: &str) -> Privileges {
    privileges_of(catalog, catalog.configured_users(), name)
        .unwrap_or_else(|_| Privileges::granted(Vec::new()))
}

/// Error 1044/1142/1227 unless the session's account may run `statement`.
pub fn check(session: &Session, statement: &Statement) -> SqlResult<()> {
    if session.privileges.is_all() {
        return Ok(());
    }
    for (privileges, database, table) in needs(session, statement)? {
        let allowed = match (&database, &table) {
            (None, _) => session.privileges.global().contains(privileges),
            (Some(database), table) => {
                session
                    .privileges
                    .allow(privileges, database, table.as_deref())
            }
        };
        if !allowed {
            return Err(denied(
                session,
                privileges,
                database.as_deref(),
                table.as_deref(),
            ));
        }
    }
    Ok(())
}

/// Error 1142 unless the session's account holds `privileges` on `table`.
pub fn check_table(
    session: &Session,
    privileges: PrivilegeSet,
    table: &crate::catalog::SqlTable,
) -> SqlResult<()> {
    let (database, name) = (table.database.as_str(), table.name.as_str());
    if session.privileges.is_all() || session.privileges.allow(privileges, database, Some(name)) {
        return Ok(());
    }
    Err(denied(session, privileges, Some(database), Some(name)))
}

/// Error 1227 unless the session's account holds every global privilege, which the FILE
/// privilege (reading the server's files) comes with.
pub fn check_file(session: &Session) -> SqlResult<()> {
    if session.privileges.is_all() {
        return Ok(());
    }
    Err(SqlError::new(
        1227,
        "42000",
        "Access denied; you need (at least one of) the FILE privilege(s) for this operation",
    ))
}

/// Error 1044 unless the session's account has some privilege in `database` (USE).
pub fn check_use(session: &Session, database: &str) -> SqlResult<()> {
    let reachable = session.privileges.any_in(database)
        || crate::information_schema::system_database(database).is_some();
    if reachable {
        Ok(())
    } else {
        Err(denied(session, PrivilegeSet::NONE, Some(database), None))
    }
}

/// MySQL's refusal: per table (1142), per database (1044), or of a global privilege
/// (1227).
pub fn denied(
    session: &Session,
    privileges: PrivilegeSet,
    database: Option<&str>,
    table: Option<&str>,
) -> SqlError {
    let account = format!("'{}'@'%'", session.user);
    match (database, table) {
        (Some(_), Some(table)) => {
            let command = privileges.names(&privileges::Level::Global);
            SqlError::new(
                1142,
                "42000",
                format!("{command} command denied to user {account} for table '{table}'"),
            )
        }
        (Some(database), None) => SqlError::new(
            1044,
            "42000",
            format!("Access denied for user {account} to database '{database}'"),
        ),
        (None, _) => SqlError::new(
            1227,
            "42000",
            format!(
                "Access denied; you need (at least one of) the {} privilege(s) for this operation",
                privileges.names(&privileges::Level::Global)
            ),
        ),
    }
}

/// A privilege a statement needs: on the server (`None`), a database, or a table of one.
type Need = (PrivilegeSet, Option<String>, Option<String>);

/// What `statement` needs: the privilege its kind asks on its target, and SELECT on every
/// other table it reads ([`reads`]).
fn needs(session: &Session, statement: &Statement) -> SqlResult<Vec<Need>> {
    let table = |name: &ast::ObjectName, privileges| -> SqlResult<Need> {
        let (database, table) = split_name(session, name)?;
        Ok((privileges, Some(database), Some(table)))
    };
    let database = |name: &ast::ObjectName, privileges| -> Need {
        (
            privileges,
            Some(crate::admin::name_of(name).to_lowercase()),
            None,
        )
    };
    let mut needs = Vec::new();
    let target = match statement {
        Statement::Insert(insert) => match &insert.table {
            ast::TableObject::TableName(name) => {
                let mut wanted = needed::INSERT;
                if insert.replace_into {
                    wanted = wanted | needed::DELETE;
                }
                if insert.on.is_some() {
                    wanted = wanted | needed::UPDATE;
                }
                Some(table(name, wanted)?)
            }
            _ => None,
        },
        Statement::Update { table: target, .. } => match &target.relation {
            ast::TableFactor::Table { name, .. } => Some(table(name, needed::UPDATE)?),
            _ => None,
        },
        Statement::Delete(delete) => {
            let from = match &delete.from {
                ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from) => {
                    from
                }
            };
            match from.first().map(|t| &t.relation) {
                Some(ast::TableFactor::Table { name, .. }) => Some(table(name, needed::DELETE)?),
                _ => None,
            }
        }
        Statement::CreateTable(create) => Some(table(&create.name, needed::CREATE)?),
        Statement::CreateView { name, .. } => Some(table(name, needed::CREATE_VIEW)?),
        Statement::CreateIndex(create) => Some(table(&create.table_name, needed::INDEX)?),
        Statement::AlterTable { name, .. } => Some(table(name, needed::ALTER)?),
        Statement::RenameTable(renames) => {
            for rename in renames {
                needs.push(table(&rename.old_name, needed::ALTER | needed::DROP)?);
                needs.push(table(&rename.new_name, needed::CREATE | needed::INSERT)?);
            }
            None
        }
        Statement::Truncate { table_names, .. } => {
            for target in table_names {
                needs.push(table(&target.name, needed::DROP)?);
            }
            None
        }
        Statement::CreateDatabase { db_name, .. } => Some(database(db_name, needed::CREATE)),
        Statement::CreateSchema {
            schema_name: ast::SchemaName::Simple(name),
            ..
        } => Some(database(name, needed::CREATE)),
        Statement::Drop {
            object_type, names, ..
        } => {
            for name in names {
                needs.push(match object_type {
                    ObjectType::Database | ObjectType::Schema => database(name, needed::DROP),
                    _ => table(name, needed::DROP)?,
                });
            }
            None
        }
        Statement::CreateTrigger(create) => Some(table(&create.table_name, needed::TRIGGER)?),
        _ => None,
    };
    needs.extend(target.clone());
    let written = target.and_then(|(_, db, table)| Some((db?, table?)));
    needs.extend(reads(session, statement, written)?);
    Ok(needs)
}

/// SELECT on every table `statement` reads: the tables it names but the one it
/// `written`, its WITH names, `information_schema` and a view it creates.
fn reads(
    session: &Session,
    statement: &Statement,
    written: Option<(String, String)>,
) -> SqlResult<Vec<Need>> {
    let reads_tables = matches!(
        statement,
        Statement::Query(_)
            | Statement::Insert(_)
            | Statement::Update { .. }
            | Statement::Delete(_)
            | Statement::CreateView { .. }
    );
    if !reads_tables {
        return Ok(Vec::new());
    }
    let mut names = Vec::new();
    let _ = ast::visit_relations(statement, |name| {
        names.push(name.clone());
        std::ops::ControlFlow::<()>::Continue(())
    });
    let ctes = cte_names(statement);
    let mut needs = Vec::new();
    for name in names {
        let (db, read) = split_name(session, &name)?;
        let is_cte = name.0.len() == 1 && ctes.iter().any(|cte| cte.eq_ignore_ascii_case(&read));
        let is_written = written.as_ref() == Some(&(db.clone(), read.clone()));
        let is_system = crate::information_schema::system_database(&db).is_some();
        let is_view_name =
            matches!(statement, Statement::CreateView { name: view, .. } if *view == name);
        if !is_cte && !is_written && !is_system && !is_view_name {
            needs.push((needed::SELECT, Some(db), Some(read)));
        }
    }
    Ok(needs)
}

/// The names a statement's WITH clauses give (they are no tables).
fn cte_names(statement: &Statement) -> Vec<String> {
    let mut names = Vec::new();
    let _ = ast::visit_statements(statement, |statement| {
        if let Statement::Query(query) = statement {
            if let Some(with) = &query.with {
                names.extend(
                    with.cte_tables
                        .iter()
                        .map(|cte| cte.alias.name.value.clone()),
                );
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    names
}
