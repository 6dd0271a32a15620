//! Running the account statements against the accounts table, each in one transaction.

use kista_client::{ExecuteMode, LockKind, Transaction};

use super::privileges::{needed, Grant, Level, PrivilegeSet};
use super::statements::{AccountName, AccountStatement, LevelSpec, PrivilegeList};
use super::store::{self, StoredAccount};
use super::{denied, privileges_of};
use crate::catalog::Catalog;
use crate::error::{SqlError, SqlResult};
use crate::protocol::auth::User;
use crate::session::{Outcome, Session};
use kista_client::types::Value;

pub fn run(session: &mut Session, statement: &AccountStatement) -> SqlResult<Outcome> {
    let outcome = match statement {
        AccountStatement::CreateUser {
            if_not_exists,
            accounts,
        } => create_users(session, *if_not_exists, accounts),
        AccountStatement::SetPassword {
            if_exists,
            account,
            password,
        } => set_password(session, *if_exists, account.as_ref(), password),
        AccountStatement::DropUser {
            if_exists,
            accounts,
        } => drop_users(session, *if_exists, accounts),
        AccountStatement::RenameUser(renames) => rename_users(session, renames),
        AccountStatement::Grant {
            privileges,
            level,
            accounts,
            with_grant_option,
        } => grant(session, privileges, level, accounts, *with_grant_option),
        AccountStatement::Revoke {
            privileges,
            level,
            accounts,
        } => revoke(session, privileges, level.as_ref(), accounts),
        AccountStatement::ShowGrants(account) => return show_grants(session, account.as_ref()),
        AccountStatement::FlushPrivileges => Ok(()),
    };
    outcome?;
    // The session's own account may have changed.
    let catalog = session.catalog;
    session.privileges = privileges_of(catalog, catalog.configured_users(), &session.user)?;
    Ok(Outcome::done())
}

/// Error 1227 unless the session may manage accounts (CREATE USER on `*.*`).
fn need_create_user(session: &Session) -> SqlResult<()> {
    if session.privileges.global().contains(needed::CREATE_USER) {
        Ok(())
    } else {
        Err(denied(session, needed::CREATE_USER, None, None))
    }
}

/// Error 1396, MySQL's for an account statement that cannot be done for `account`.
fn failed(operation: &str, account: &AccountName) -> SqlError {
    SqlError::new(
        1396,
        "HY000",
        format!("Operation {operation} failed for {}", account.quoted()),
    )
}

/// Whether `name` is an account that exists without a row: a configured one (root).
fn is_built_in(catalog: &Catalog, name: &str) -> bool {
    catalog.configured_users().iter().any(|u| u.name == name)
}

/// Runs `work` in a transaction of its own and commits it, or rolls it back (freeing the
/// rows it locked) when `work` fails.
fn in_transaction(
    session: &Session,
    work: impl FnOnce(&mut Transaction<'_>) -> SqlResult<()>,
) -> SqlResult<()> {
    let mut transaction = session.catalog.client().transaction();
    if let Err(error) = work(&mut transaction) {
        if transaction.has_sent() {
            let _ = (transaction.execute(ExecuteMode::Rollback)).map(|pending| pending.wait());
        }
        return Err(error);
    }
    transaction.execute(ExecuteMode::Commit)?.wait()?;
    Ok(())
}

fn create_users(
    session: &mut Session,
    if_not_exists: bool,
    accounts: &[(AccountName, Option<String>)],
) -> SqlResult<()> {
    need_create_user(session)?;
    let catalog = session.catalog;
    let mut warnings = Vec::new();
    in_transaction(session, |transaction| {
        for (account, password) in accounts {
            store::check_name(account)?;
            let exists = is_built_in(catalog, &account.name)
                || store::read(catalog, transaction, &account.name, LockKind::Exclusive)?.is_some();
            if exists {
                if if_not_exists {
                    let message = format!("Authorization ID {} already exists.", account.quoted());
                    warnings.push(message);
                    continue;
                }
                return Err(failed("CREATE USER", account));
            }
            let password = password.as_deref().unwrap_or("");
            let created = StoredAccount {
                name: account.clone(),
                user: User::new(&account.name, password),
                grants: Vec::new(),
            };
            store::write(catalog, transaction, &created, true)?;
        }
        Ok(())
    })?;
    for message in warnings {
        session.warn(3163, message);
    }
    Ok(())
}

fn set_password(
    session: &mut Session,
    if_exists: bool,
    account: Option<&AccountName>,
    password: &str,
) -> SqlResult<()> {
    let own = AccountName {
        name: session.user.clone(),
        host: "%".into(),
    };
    let account = account.unwrap_or(&own);
    if account.name != session.user {
        need_create_user(session)?;
    }
    let catalog = session.catalog;
    let built_in = is_built_in(catalog, &account.name);
    let mut missing = false;
    in_transaction(session, |transaction| {
        let stored = store::read(catalog, transaction, &account.name, LockKind::Exclusive)?;
        let (name, grants, new) = match stored {
            Some(stored) => (stored.name, stored.grants, false),
            // A built-in account's password is kept from now on; it keeps every privilege.
            None if built_in => (account.clone(), all_privileges(), true),
            None => {
                missing = true;
                return if if_exists {
                    Ok(())
                } else {
                    Err(failed("ALTER USER", account))
                };
            }
        };
        let changed = StoredAccount {
            user: User::new(&name.name, password),
            name,
            grants,
        };
        store::write(catalog, transaction, &changed, new)
    })?;
    if missing {
        let message = format!("User {} does not exist.", account.quoted());
        session.warn(3162, message);
    }
    Ok(())
}

/// Every privilege on `*.*` with GRANT OPTION: what root holds.
fn all_privileges() -> Vec<Grant> {
    vec![Grant {
        level: Level::Global,
        privileges: PrivilegeSet::all_at(&Level::Global),
        grant_option: true,
    }]
}

fn drop_users(session: &mut Session, if_exists: bool, accounts: &[AccountName]) -> SqlResult<()> {
    need_create_user(session)?;
    let catalog = session.catalog;
    let mut warnings = Vec::new();
    in_transaction(session, |transaction| {
        for account in accounts {
            if is_built_in(catalog, &account.name) {
                return Err(failed("DROP USER", account));
            }
            match store::read(catalog, transaction, &account.name, LockKind::Exclusive)? {
                Some(_) => store::delete(catalog, transaction, &account.name)?,
                None if if_exists => {
                    warnings.push(format!("User {} does not exist.", account.quoted()));
                }
                None => return Err(failed("DROP USER", account)),
            }
        }
        Ok(())
    })?;
    for message in warnings {
        session.warn(3162, message);
    }
    Ok(())
}

fn rename_users(session: &mut Session, renames: &[(AccountName, AccountName)]) -> SqlResult<()> {
    need_create_user(session)?;
    let catalog = session.catalog;
    in_transaction(session, |transaction| {
        for (from, to) in renames {
            let built_in = is_built_in(catalog, &from.name) || is_built_in(catalog, &to.name);
            store::check_name(to)?;
            let stored = store::read(catalog, transaction, &from.name, LockKind::Exclusive)?;
            let taken = store::read(catalog, transaction, &to.name, LockKind::Exclusive)?;
            let Some(stored) = stored.filter(|_| taken.is_none() && !built_in) else {
                return Err(failed("RENAME USER", from));
            };
            let (empty, native, sha2) = stored.user.hashes();
            let renamed = StoredAccount {
                name: to.clone(),
                user: User::from_hashes(&to.name, empty, native, sha2),
                grants: stored.grants,
            };
            store::delete(catalog, transaction, &from.name)?;
            store::write(catalog, transaction, &renamed, true)?;
        }
        Ok(())
    })
}

/// The privileges a GRANT or REVOKE names at `level`, checked against the level (1144)
/// and against what the session may grant there (its own, with GRANT OPTION).
fn granted_set(session: &Session, list: &PrivilegeList, level: &Level) -> SqlResult<PrivilegeSet> {
    let set = match list.privileges {
        Some(set) => {
            set.check_level(level)?;
            set
        }
        None => PrivilegeSet::all_at(level),
    };
    if !session.privileges.may_grant(set, level) {
        let (database, table) = match level {
            Level::Global => (None, None),
            Level::Database(database) => (Some(database.as_str()), None),
            Level::Table(database, table) => (Some(database.as_str()), Some(table.as_str())),
        };
        return Err(denied(session, set, database, table));
    }
    Ok(set)
}

/// Reads the row of each account a GRANT or REVOKE names, changes it with `change`, and
/// writes it back (1410 for one that does not exist; built-in accounts hold everything).
fn change_grants(
    session: &Session,
    accounts: &[AccountName],
    change: impl Fn(&mut Vec<Grant>) -> SqlResult<()>,
) -> SqlResult<()> {
    let catalog = session.catalog;
    in_transaction(session, |transaction| {
        for account in accounts {
            let Some(mut stored) =
                store::read(catalog, transaction, &account.name, LockKind::Exclusive)?
            else {
                if is_built_in(catalog, &account.name) {
                    continue;
                }
                return Err(SqlError::new(
                    1410,
                    "42000",
                    "You are not allowed to create a user with GRANT",
                ));
            };
            change(&mut stored.grants)?;
            store::write(catalog, transaction, &stored, false)?;
        }
        Ok(())
    })
}

fn grant(
    session: &mut Session,
    privileges: &PrivilegeList,
    level: &LevelSpec,
    accounts: &[AccountName],
    with_grant_option: bool,
) -> SqlResult<()> {
    let level = level.resolve(session.database.as_deref())?;
    if let Level::Table(database, table) = &level {
        session.catalog.table(database, table)?;
    }
    let set = granted_set(session, privileges, &level)?;
    let option = with_grant_option || privileges.grant_option;
    change_grants(session, accounts, |grants| {
        match grants.iter_mut().find(|grant| grant.level == level) {
            Some(grant) => {
                grant.privileges = grant.privileges | set;
                grant.grant_option |= option;
            }
            None => grants.push(Grant {
                level: level.clone(),
                privileges: set,
                grant_option: option,
            }),
        }
        Ok(())
    })
}

fn revoke(
    session: &mut Session,
    privileges: &PrivilegeList,
    level: Option<&LevelSpec>,
    accounts: &[AccountName],
) -> SqlResult<()> {
    let Some(level) = level else {
        // REVOKE ALL PRIVILEGES, GRANT OPTION FROM ...: everything, at every level.
        need_create_user(session)?;
        return change_grants(session, accounts, |grants| {
            grants.clear();
            Ok(())
        });
    };
    let level = level.resolve(session.database.as_deref())?;
    let set = granted_set(session, privileges, &level)?;
    let drops_option = privileges.grant_option;
    change_grants(session, accounts, |grants| {
        let Some(position) = grants.iter().position(|grant| grant.level == level) else {
            return Err(SqlError::new(
                1141,
                "42000",
                "There is no such grant defined for this user",
            ));
        };
        let grant = &mut grants[position];
        grant.privileges = PrivilegeSet(grant.privileges.0 & !set.0);
        grant.grant_option &= !drops_option;
        if grant.privileges.is_empty() && !grant.grant_option {
            grants.remove(position);
        }
        Ok(())
    })
}

fn show_grants(session: &mut Session, account: Option<&AccountName>) -> SqlResult<Outcome> {
    let name = account.map_or(session.user.clone(), |account| account.name.clone());
    if name != session.user {
        need_create_user(session)?;
    }
    let catalog = session.catalog;
    let stored = store::find(catalog, &name)?;
    let (host, grants) = match stored {
        Some(stored) => (stored.name.host, stored.grants),
        None if is_built_in(catalog, &name) => ("%".to_string(), all_privileges()),
        None => {
            let account = account.cloned().unwrap_or(AccountName {
                name,
                host: "%".into(),
            });
            return Err(SqlError::new(
                1141,
                "42000",
                format!(
                    "There is no such grant defined for user '{}' on host '{}'",
                    account.name, account.host
                ),
            ));
        }
    };
    let to = format!("`{name}`@`{host}`");
    let mut lines = Vec::new();
    if !grants.iter().any(|grant| grant.level == Level::Global) {
        lines.push(format!("GRANT USAGE ON *.* TO {to}"));
    }
    for grant in &grants {
        let names = if grant.privileges.is_empty() {
            "USAGE".to_string()
        } else {
            grant.privileges.names(&grant.level)
        };
        let option = if grant.grant_option {
            " WITH GRANT OPTION"
        } else {
            ""
        };
        lines.push(format!(
            "GRANT {names} ON {} TO {to}{option}",
            grant.level.sql()
        ));
    }
    let rows = lines
        .into_iter()
        .map(|line| vec![Value::Bytes(line.into_bytes())])
        .collect();
    let title = format!("Grants for {name}@{host}");
    Ok(crate::admin::text_result(&[title.as_str()], rows))
}
