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

mod needs;
pub mod privileges;
mod run;
pub mod statements;
pub mod store;

pub use privileges::{PrivilegeSet, Privileges};
pub use run::run;
pub use statements::AccountStatement;

use sqlparser::ast::Statement;

use crate::catalog::Catalog;
use crate::error::{SqlError, SqlResult};
use crate::protocol::auth::User;
use crate::session::Session;
use needs::Need;
pub(crate) use needs::On;
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

/// Error 1044/1142/1227 unless the session's account may run `statement`: every
/// privilege it needs ([`needs::of`]) is held.
pub fn check(session: &Session, statement: &Statement) -> SqlResult<()> {
    if session.privileges.is_all() {
        return Ok(());
    }
    let needs = needs::of(session, statement)?;
    check_needs(&session.privileges, &session.user, &needs)
}

/// Error unless `definer`, a trigger's, may run `parsed` (a statement of its body): a
/// trigger runs with its definer's privileges, as MySQL's, which a REVOKE since its
/// creation may have narrowed. The definer's privileges are read once per statement
/// (`Session::definers`), not per row.
pub(crate) fn check_definer(
    session: &Session,
    definer: &str,
    parsed: &crate::session::Parsed,
) -> SqlResult<()> {
    if definer == session.user && session.privileges.is_all() {
        return Ok(());
    }
    let mut definers = session.definers.borrow_mut();
    let position = match definers.iter().position(|(name, _)| name == definer) {
        Some(position) => position,
        None => {
            let privileges =
                privileges_of(session.catalog, session.catalog.configured_users(), definer)?;
            definers.push((definer.to_string(), privileges));
            definers.len() - 1
        }
    };
    let privileges = &definers[position].1;
    if privileges.is_all() {
        return Ok(());
    }
    let needs = needs::of(session, &parsed.statement)?;
    check_needs(privileges, definer, &needs)
}

/// Whether the session's account may see `on` at all (SHOW DATABASES, SHOW TABLES,
/// `information_schema`'s rows): it holds some privilege on it.
pub(crate) fn may_see(session: &Session, on: &On) -> bool {
    sees(&session.privileges, on)
}

/// Whether SHOW DATABASES lists `database` to the session's account: one it may see, or
/// any with the SHOW DATABASES privilege.
pub(crate) fn may_list_database(session: &Session, database: &str) -> bool {
    session.privileges.global().contains(needed::SHOW_DATABASES)
        || may_see(session, &On::Database(database.to_string()))
}

/// Whether the session's account sees every connection (PROCESS), not only its own.
pub(crate) fn may_list_processes(session: &Session) -> bool {
    session.privileges.global().contains(needed::PROCESS)
}

/// Whether the session's account may kill any connection, not only its own.
pub(crate) fn may_kill_others(session: &Session) -> bool {
    session
        .privileges
        .global_any(needed::SUPER | needed::CONNECTION_ADMIN)
}

/// Error unless `privileges`, account `user`'s, meet every one of `needs`.
fn check_needs(privileges: &Privileges, user: &str, needs: &[Need]) -> SqlResult<()> {
    match needs.iter().find(|need| !holds(privileges, need)) {
        Some(need) => Err(refusal(user, need)),
        None => Ok(()),
    }
}

/// Whether `privileges` meet `need`.
fn holds(privileges: &Privileges, need: &Need) -> bool {
    match need {
        Need::Every(wanted, On::Server) => privileges.global().contains(*wanted),
        Need::Every(wanted, On::Database(database)) => privileges.allow(*wanted, database, None),
        Need::Every(wanted, On::Table(database, table)) => {
            privileges.allow(*wanted, database, Some(table))
        }
        Need::OneOf(wanted, on) => wanted
            .each()
            .any(|one| holds(privileges, &Need::Every(one, on.clone()))),
        Need::Sight(on, _) => sees(privileges, on),
    }
}

/// Whether `privileges` hold some privilege on `on`, to see it at all.
fn sees(privileges: &Privileges, on: &On) -> bool {
    match on {
        On::Server => true,
        // information_schema is everyone's (what its rows show is filtered).
        On::Database(database) | On::Table(database, _)
            if database.eq_ignore_ascii_case(crate::information_schema::DATABASE) =>
        {
            true
        }
        On::Database(database) => privileges.any_in(database),
        On::Table(database, table) => privileges.any_on_table(database, table),
    }
}

/// MySQL's refusal of `need`: per table (1142), per database (1044), or of a server-wide
/// privilege (1227).
fn refusal(user: &str, need: &Need) -> SqlError {
    let global = privileges::Level::Global;
    let (command, on) = match need {
        Need::Every(wanted, on) => (wanted.names(&global), on),
        Need::OneOf(wanted, on) => (wanted.names(&global).replace(", ", " or "), on),
        Need::Sight(on, command) => (command.to_string(), on),
    };
    let account = format!("'{user}'@'%'");
    match on {
        On::Table(_, table) => SqlError::new(
            1142,
            "42000",
            format!("{command} command denied to user {account} for table '{table}'"),
        ),
        On::Database(database) => SqlError::new(
            1044,
            "42000",
            format!("Access denied for user {account} to database '{database}'"),
        ),
        On::Server => SqlError::new(
            1227,
            "42000",
            format!(
                "Access denied; you need (at least one of) the {command} privilege(s) for this operation"
            ),
        ),
    }
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

/// MySQL's refusal of `privileges` on `table` of `database` (1142), on `database`
/// (1044), or on the server (1227).
pub fn denied(
    session: &Session,
    privileges: PrivilegeSet,
    database: Option<&str>,
    table: Option<&str>,
) -> SqlError {
    let on = match (database, table) {
        (Some(database), Some(table)) => On::Table(database.into(), table.into()),
        (Some(database), None) => On::Database(database.into()),
        (None, _) => On::Server,
    };
    refusal(&session.user, &Need::Every(privileges, on))
}
