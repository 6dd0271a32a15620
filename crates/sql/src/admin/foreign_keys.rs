//! Foreign keys added and dropped by CREATE TABLE, ALTER TABLE and DROP TABLE: the parent
//! resolved by name, MySQL's checks (`ddl/foreign_keys.rs`), the rows already there
//! checked for ALTER TABLE ADD FOREIGN KEY, and a parent's drop refused while a child
//! references it. With FOREIGN_KEY_CHECKS 0 a key may name a parent not created yet (a
//! dump creates tables in name order): the child keeps it pending, and it is added when a
//! table of that name is created in the child's database.

use sqlparser::ast::Statement;

use kista_client::{ClientError, ForeignKey};

use crate::ddl::foreign_keys::{self, DeclaredForeignKey};
use crate::error::{SqlError, SqlResult};
use crate::select::{self, split_name};
use crate::session::{Outcome, Session};

/// Adds `declared` to table `database`.`table` one by one; with `check_rows`, the rows
/// there must each have their parent (else the key is dropped again: 1452).
pub(super) fn add(
    session: &mut Session,
    (database, table): (&str, &str),
    declared: &[DeclaredForeignKey],
    check_rows: bool,
) -> SqlResult<()> {
    for key in declared {
        session.catalog.forget(database, table);
        let child = session.catalog.table(database, table)?;
        let (parent_database, parent_name) = split_name(session, &key.parent)?;
        let parent = match session.catalog.table(&parent_database, &parent_name) {
            Err(error) if error.code == 1146 && !session.foreign_key_checks => {
                let parent = (parent_database.as_str(), parent_name.as_str());
                keep_pending(session, (database, table), key.clause_sql(parent))?;
                continue;
            }
            Err(error) if error.code == 1146 => {
                return Err(SqlError::new(
                    1824,
                    "HY000",
                    format!("Failed to open the referenced table '{parent_name}'"),
                ))
            }
            other => other?,
        };
        let name = match &key.name {
            Some(name) => {
                refuse_taken_name(session, database, name)?;
                name.clone()
            }
            None => {
                let taken: Vec<&str> = (child.table.foreign_keys().iter())
                    .map(|key| key.name.as_str())
                    .collect();
                foreign_keys::default_name(table, &taken)
            }
        };
        let spec = foreign_keys::spec(key, &name, child.schema(), &parent)?;
        let client = session.catalog.client();
        let added = client
            .add_foreign_key(&child.table, &parent.table, spec)
            .map_err(|error| refused(&name, error))?;
        session.catalog.forget(&parent_database, &parent_name);
        session.catalog.forget(database, table);
        if check_rows && session.foreign_key_checks {
            let parent = (parent_database.as_str(), parent_name.as_str());
            if let Err(error) = refuse_orphans(session, (database, table), parent, key) {
                let _ = client.drop_foreign_key(&added, &name);
                session.catalog.forget(database, table);
                return Err(error);
            }
        }
    }
    Ok(())
}

/// Keeps `clause`, a key whose parent is not there (declared with FOREIGN_KEY_CHECKS 0, as
/// a dump declares a child created before its parent), in the child's definition until
/// the parent is created ([`add_pending`]).
fn keep_pending(
    session: &mut Session,
    (database, table): (&str, &str),
    clause: String,
) -> SqlResult<()> {
    let child = session.catalog.table(database, table)?;
    let mut extras = child.extras.clone();
    extras.pending_foreign_keys.push(clause);
    session.catalog.alter_extras(&child, &extras)?;
    session.catalog.forget(database, table);
    Ok(())
}

/// Adds the keys the tables of `database` keep pending for `parent`, just created. As
/// MySQL does then, the child's rows are not checked: they were written without checks.
pub(super) fn add_pending(
    session: &mut Session,
    (database, parent): (&str, &str),
) -> SqlResult<()> {
    let references = format!("REFERENCES `{database}`.`{parent}` (").to_lowercase();
    for table_name in session.catalog.table_names(database)? {
        let child = match session.catalog.table(database, &table_name) {
            Err(error) if error.code == 1146 => continue, // dropped meanwhile
            other => other?,
        };
        let pending = child.extras.pending_foreign_keys.iter().cloned();
        let (ready, waiting): (Vec<String>, Vec<String>) =
            pending.partition(|clause| clause.to_lowercase().contains(&references));
        if ready.is_empty() {
            continue;
        }
        let mut extras = child.extras.clone();
        extras.pending_foreign_keys = waiting;
        session.catalog.alter_extras(&child, &extras)?;
        session.catalog.forget(database, &table_name);
        let checks = std::mem::replace(&mut session.foreign_key_checks, false);
        let added = ready.iter().try_for_each(|clause| {
            let sql = format!("ALTER TABLE `{database}`.`{table_name}` ADD {clause}");
            session
                .execute(&crate::session::parse(&sql)?, &[])
                .map(|_| ())
        });
        session.foreign_key_checks = checks;
        added?;
    }
    Ok(())
}

/// Error 1826 when a table of `database` has a foreign key called `name` (MySQL's names
/// are unique per database; the dictionary checks them per table).
fn refuse_taken_name(session: &Session, database: &str, name: &str) -> SqlResult<()> {
    for table in session.catalog.table_names(database)? {
        let opened = match session.catalog.table(database, &table) {
            Err(error) if error.code == 1146 => continue,
            other => other?,
        };
        let id = opened.table.id;
        let taken = (opened.table.foreign_keys().iter())
            .any(|key| key.child_table == id && key.name.eq_ignore_ascii_case(name));
        if taken {
            return Err(duplicate_name(name));
        }
    }
    Ok(())
}

/// Error 1826: a foreign key of that name exists in the database.
fn duplicate_name(name: &str) -> SqlError {
    SqlError::new(
        1826,
        "HY000",
        format!("Duplicate foreign key constraint name '{name}'"),
    )
}

/// A refusal of the dictionary's as MySQL words it: a duplicate name (1826), else 1215.
fn refused(name: &str, error: ClientError) -> SqlError {
    match error {
        ClientError::Node {
            code: 4256,
            message,
            ..
        } if message.contains("exists") => duplicate_name(name),
        ClientError::Node {
            code: 4256,
            message,
            ..
        } => SqlError::new(
            1215,
            "HY000",
            format!("Cannot add foreign key constraint ({message})"),
        ),
        other => other.into(),
    }
}

/// Error 1452 when a row of the child references no parent row (ALTER TABLE ADD FOREIGN
/// KEY checks the rows there are, as MySQL does).
fn refuse_orphans(
    session: &mut Session,
    (database, table): (&str, &str),
    (parent_database, parent): (&str, &str),
    key: &DeclaredForeignKey,
) -> SqlResult<()> {
    let pairs: Vec<(&String, &String)> = key.columns.iter().zip(&key.parent_columns).collect();
    let join = (pairs.iter())
        .map(|(child, parent)| format!("c.`{child}` = p.`{parent}`"))
        .collect::<Vec<_>>()
        .join(" AND ");
    let referencing = (pairs.iter())
        .map(|(child, _)| format!("c.`{child}` IS NOT NULL"))
        .collect::<Vec<_>>()
        .join(" AND ");
    let (_, first_parent) = pairs[0];
    let sql = format!(
        "SELECT 1 FROM `{database}`.`{table}` c LEFT JOIN `{parent_database}`.`{parent}` p \
         ON {join} WHERE {referencing} AND p.`{first_parent}` IS NULL LIMIT 1"
    );
    let parsed = crate::session::parse(&sql)?;
    let Statement::Query(query) = &parsed.statement else {
        return Err(SqlError::syntax(sql));
    };
    match select::union::execute(session, query, &[], &[])? {
        Outcome::Rows { rows, .. } if !rows.is_empty() => Err(SqlError::new(
            1452,
            "23000",
            format!(
                "Cannot add or update a child row: a foreign key constraint fails (`{database}`.`{table}`)"
            ),
        )),
        _ => Ok(()),
    }
}

/// Drops the foreign keys of table `database`.`table` called `names`.
pub(super) fn drop(
    session: &mut Session,
    (database, table): (&str, &str),
    names: &[String],
) -> SqlResult<()> {
    for name in names {
        session.catalog.forget(database, table);
        let child = session.catalog.table(database, table)?;
        let parent = (child.table.foreign_keys().iter())
            .find(|key| key.child_table == child.table.id && key.name.eq_ignore_ascii_case(name))
            .map(|key| key.parent_table);
        session
            .catalog
            .client()
            .drop_foreign_key(&child.table, name)?;
        forget_by_id(session, parent)?;
    }
    session.catalog.forget(database, table);
    Ok(())
}

/// Before DROP TABLE: error 3730 while another table's foreign key references the table,
/// unless `foreign_key_checks` is off, when those keys are dropped first (MySQL keeps them,
/// dangling; Kista's keys need both tables). `dropping`: tables the statement drops too
/// (their keys go with them).
pub(super) fn before_drop(
    session: &mut Session,
    (database, table): (&str, &str),
    dropping: &[(String, String)],
) -> SqlResult<()> {
    let dropped = session.catalog.table(database, table)?;
    let referencing: Vec<ForeignKey> = (dropped.table.foreign_keys().iter())
        .filter(|key| key.parent_table == dropped.table.id && key.child_table != dropped.table.id)
        .cloned()
        .collect();
    for key in referencing {
        let Some((child_database, child_name)) =
            session.catalog.table_named_by_id(key.child_table)?
        else {
            continue;
        };
        let child = (child_database.clone(), child_name.clone());
        if dropping.contains(&child) {
            continue;
        }
        if session.foreign_key_checks {
            return Err(SqlError::new(
                3730,
                "HY000",
                format!(
                    "Cannot drop table '{table}' referenced by a foreign key constraint '{}' on \
                     table '{child_name}'.",
                    key.name
                ),
            ));
        }
        drop(
            session,
            (&child_database, &child_name),
            std::slice::from_ref(&key.name),
        )?;
    }
    Ok(())
}

/// The order to drop `tables` in: a table after those that reference it.
pub(super) fn drop_order(
    session: &Session,
    tables: Vec<(String, String)>,
) -> Vec<(String, String)> {
    let referenced = |name: &(String, String)| -> Vec<u32> {
        session
            .catalog
            .table(&name.0, &name.1)
            .map(|table| {
                (table.table.foreign_keys().iter())
                    .filter(|key| key.child_table == table.table.id)
                    .map(|key| key.parent_table)
                    .collect()
            })
            .unwrap_or_default()
    };
    let ids: Vec<Option<u32>> = (tables.iter())
        .map(|(database, name)| {
            session
                .catalog
                .table(database, name)
                .ok()
                .map(|t| t.table.id)
        })
        .collect();
    let mut ordered = Vec::with_capacity(tables.len());
    let mut left: Vec<usize> = (0..tables.len()).collect();
    while !left.is_empty() {
        // A table no table left references goes next (any, if they reference in a cycle).
        let next = (0..left.len())
            .find(|&position| {
                let id = ids[left[position]];
                !left.iter().any(|&other| {
                    other != left[position]
                        && id.is_some_and(|id| referenced(&tables[other]).contains(&id))
                })
            })
            .unwrap_or(0);
        ordered.push(tables[left.remove(next)].clone());
    }
    ordered
}

/// Forgets the table numbered `table_id` (a foreign key's other table changed with it).
fn forget_by_id(session: &Session, table_id: Option<u32>) -> SqlResult<()> {
    if let Some(table_id) = table_id {
        if let Some((database, name)) = session.catalog.table_named_by_id(table_id)? {
            session.catalog.forget(&database, &name);
        }
    }
    Ok(())
}
