//! What a statement needs: every privilege it asks, on every object it touches, derived
//! from its syntax before it runs. This is the one list [`super::check`] holds a session
//! to; a statement kind missing here runs unchecked, so each is named (the matrix in
//! `kista/tests/sql/privileges.py` tries each without and with its privilege).
//!
//! - its target: what it writes, creates, alters, renames, drops or shows;
//! - SELECT on every other table it names anywhere (subqueries of SET, DO, UPDATE, ...;
//!   CREATE TABLE ... AS SELECT), but its own WITH names and `information_schema`;
//! - REFERENCES on a foreign key's parent, SELECT on a LIKE's source, CREATE and INSERT
//!   on a RENAME's new name;
//! - a trigger's body, checked as a statement of its creator;
//! - SET GLOBAL: SUPER or SYSTEM_VARIABLES_ADMIN.
//!
//! KILL (another user's connection) and what SHOW PROCESSLIST, SHOW DATABASES and
//! `information_schema` list are decided where they run: they depend on rows, not
//! syntax.

use sqlparser::ast::{self, ObjectType, Statement};

use super::privileges::{needed, PrivilegeSet};
use crate::error::SqlResult;
use crate::select::split_name;
use crate::session::Session;

/// What a privilege is held on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum On {
    Server,
    Database(String),
    Table(String, String),
}

/// One privilege requirement of a statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// Every privilege of the set.
    Every(PrivilegeSet, On),
    /// At least one privilege of the set (SET GLOBAL: SUPER or SYSTEM_VARIABLES_ADMIN).
    OneOf(PrivilegeSet, On),
    /// Some privilege, whatever it is, to see the object at all (SHOW CREATE TABLE,
    /// DESCRIBE, SHOW TABLES FROM); `command` names the refusal (MySQL's 1142 names
    /// `SHOW` or `SELECT`).
    Sight(On, &'static str),
}

impl Need {
    fn on(&self) -> &On {
        match self {
            Need::Every(_, on) | Need::OneOf(_, on) | Need::Sight(on, _) => on,
        }
    }
}

/// Everything `statement`, run by `session`, needs.
pub(crate) fn of(session: &Session, statement: &Statement) -> SqlResult<Vec<Need>> {
    let mut needs = target_needs(session, statement)?;
    if let Statement::CreateTrigger(create) = statement {
        // Its creator is its definer: what the body does, the creator must be allowed.
        for body in create.statements.iter().flat_map(|s| s.statements()) {
            needs.extend(of(session, body)?);
        }
    }
    read_needs(session, statement, &mut needs)?;
    Ok(needs)
}

/// `name` (perhaps `db.name`) as a table of the session's database.
fn table_of(session: &Session, name: &ast::ObjectName) -> SqlResult<On> {
    let (database, table) = split_name(session, name)?;
    Ok(On::Table(database, table))
}

fn database_of(name: &ast::ObjectName) -> On {
    On::Database(crate::admin::name_of(name).to_lowercase())
}

/// The privileges the statement's kind asks on the objects it acts on.
fn target_needs(session: &Session, statement: &Statement) -> SqlResult<Vec<Need>> {
    let table = |privileges, name| Ok(Need::Every(privileges, table_of(session, name)?));
    let needs = match statement {
        Statement::Insert(insert) => match &insert.table {
            ast::TableObject::TableName(name) => {
                let mut wanted = needed::INSERT;
                if insert.replace_into {
                    wanted = wanted | needed::DELETE;
                }
                if insert.on.is_some() {
                    wanted = wanted | needed::UPDATE;
                }
                vec![table(wanted, name)?]
            }
            _ => Vec::new(),
        },
        Statement::Update { table: target, .. } => match &target.relation {
            ast::TableFactor::Table { name, .. } => vec![table(needed::UPDATE, name)?],
            _ => Vec::new(),
        },
        Statement::Delete(delete) => {
            let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) =
                &delete.from;
            match from.first().map(|t| &t.relation) {
                Some(ast::TableFactor::Table { name, .. }) => vec![table(needed::DELETE, name)?],
                _ => Vec::new(),
            }
        }
        Statement::CreateTable(create) => {
            let mut needs = vec![table(needed::CREATE, &create.name)?];
            if let Some(
                ast::CreateTableLikeKind::Plain(like)
                | ast::CreateTableLikeKind::Parenthesized(like),
            ) = &create.like
            {
                needs.push(table(needed::SELECT, &like.name)?);
            }
            for parent in referenced_by_create(create) {
                needs.push(table(needed::REFERENCES, parent)?);
            }
            needs
        }
        Statement::AlterTable {
            name, operations, ..
        } => {
            let mut needs = vec![table(needed::ALTER, name)?];
            for operation in operations {
                needs.extend(alter_operation_needs(session, name, operation)?);
            }
            needs
        }
        Statement::CreateView { name, .. } => vec![table(needed::CREATE_VIEW, name)?],
        Statement::CreateIndex(create) => vec![table(needed::INDEX, &create.table_name)?],
        Statement::RenameTable(renames) => {
            let mut needs = Vec::new();
            for rename in renames {
                needs.push(table(needed::ALTER | needed::DROP, &rename.old_name)?);
                needs.push(table(needed::CREATE | needed::INSERT, &rename.new_name)?);
            }
            needs
        }
        Statement::Truncate { table_names, .. } => (table_names.iter())
            .map(|target| table(needed::DROP, &target.name))
            .collect::<SqlResult<_>>()?,
        Statement::CreateDatabase { db_name, .. } => {
            vec![Need::Every(needed::CREATE, database_of(db_name))]
        }
        Statement::CreateSchema {
            schema_name: ast::SchemaName::Simple(name),
            ..
        } => vec![Need::Every(needed::CREATE, database_of(name))],
        Statement::Drop {
            object_type,
            names,
            table: index_table,
            ..
        } => match object_type {
            ObjectType::Database | ObjectType::Schema => (names.iter())
                .map(|name| Need::Every(needed::DROP, database_of(name)))
                .collect(),
            // DROP INDEX i ON t: the table's INDEX privilege.
            ObjectType::Index => (index_table.iter())
                .map(|name| table(needed::INDEX, name))
                .collect::<SqlResult<_>>()?,
            _ => (names.iter())
                .map(|name| table(needed::DROP, name))
                .collect::<SqlResult<_>>()?,
        },
        Statement::CreateTrigger(create) => vec![table(needed::TRIGGER, &create.table_name)?],
        Statement::Set(set) if sets_global(set) => vec![Need::OneOf(
            needed::SUPER | needed::SYSTEM_VARIABLES_ADMIN,
            On::Server,
        )],
        _ => shown_needs(session, statement)?,
    };
    Ok(needs)
}

/// What ALTER TABLE `name`'s `operation` needs beyond ALTER on the table.
fn alter_operation_needs(
    session: &Session,
    name: &ast::ObjectName,
    operation: &ast::AlterTableOperation,
) -> SqlResult<Vec<Need>> {
    let table = |privileges, name| Ok(Need::Every(privileges, table_of(session, name)?));
    let needs = match operation {
        ast::AlterTableOperation::RenameTable {
            table_name: ast::RenameTableNameKind::As(new) | ast::RenameTableNameKind::To(new),
        } => vec![
            table(needed::DROP, name)?,
            table(needed::CREATE | needed::INSERT, new)?,
        ],
        ast::AlterTableOperation::AddConstraint {
            constraint: ast::TableConstraint::ForeignKey { foreign_table, .. },
            ..
        } => vec![table(needed::REFERENCES, foreign_table)?],
        ast::AlterTableOperation::AddColumn { column_def, .. } => {
            (referenced_by_column(column_def))
                .map(|parent| table(needed::REFERENCES, parent))
                .collect::<SqlResult<_>>()?
        }
        _ => Vec::new(),
    };
    Ok(needs)
}

/// The parents of a CREATE TABLE's foreign keys (table constraints and column ones).
fn referenced_by_create(create: &ast::CreateTable) -> impl Iterator<Item = &ast::ObjectName> {
    let constraints = create.constraints.iter().filter_map(|c| match c {
        ast::TableConstraint::ForeignKey { foreign_table, .. } => Some(foreign_table),
        _ => None,
    });
    constraints.chain(create.columns.iter().flat_map(referenced_by_column))
}

fn referenced_by_column(column: &ast::ColumnDef) -> impl Iterator<Item = &ast::ObjectName> {
    column
        .options
        .iter()
        .filter_map(|option| match &option.option {
            ast::ColumnOption::ForeignKey { foreign_table, .. } => Some(foreign_table),
            _ => None,
        })
}

/// Whether a SET assigns a server-wide variable (`SET GLOBAL x`, `SET @@global.x`).
fn sets_global(set: &ast::Set) -> bool {
    let global_name = |name: &ast::ObjectName| {
        let name = crate::admin::name_of(name).to_ascii_lowercase();
        name.starts_with("@@global.") || name.starts_with("@@persist")
    };
    match set {
        ast::Set::SingleAssignment {
            scope, variable, ..
        } => *scope == Some(ast::ContextModifier::Global) || global_name(variable),
        ast::Set::MultipleAssignments { assignments } => assignments.iter().any(|assignment| {
            assignment.scope == Some(ast::ContextModifier::Global) || global_name(&assignment.name)
        }),
        _ => false,
    }
}

/// What the statements that show an object's definition need: to see it.
fn shown_needs(session: &Session, statement: &Statement) -> SqlResult<Vec<Need>> {
    let sight = |name, command| Ok(vec![Need::Sight(table_of(session, name)?, command)]);
    match statement {
        Statement::ShowCreate {
            obj_type: ast::ShowCreateObject::Table | ast::ShowCreateObject::View,
            obj_name,
        } => sight(obj_name, "SHOW"),
        Statement::ShowColumns { show_options, .. } => {
            match (show_options.show_in.as_ref()).and_then(|i| i.parent_name.as_ref()) {
                Some(name) => sight(name, "SELECT"),
                None => Ok(Vec::new()),
            }
        }
        Statement::ExplainTable { table_name, .. } => sight(table_name, "SELECT"),
        Statement::ShowTables { show_options, .. } => {
            let named = (show_options.show_in.as_ref()).and_then(|i| i.parent_name.as_ref());
            Ok((named.into_iter())
                .map(|database| Need::Sight(database_of(database), "SHOW"))
                .collect())
        }
        Statement::ShowVariable { variable } => {
            let shown = crate::admin::show_index_target(session, variable)?;
            Ok((shown.into_iter())
                .map(|(database, table)| Need::Sight(On::Table(database, table), "SELECT"))
                .collect())
        }
        _ => Ok(Vec::new()),
    }
}

/// SELECT on every table the statement names that no target need covers: its
/// subqueries' and joins' tables, wherever in the statement they are. Its WITH names
/// are no tables; `information_schema` is everyone's (its rows are filtered instead).
fn read_needs(session: &Session, statement: &Statement, needs: &mut Vec<Need>) -> SqlResult<()> {
    let mut names = Vec::new();
    let _ = ast::visit_relations(statement, |name| {
        names.push(name.clone());
        std::ops::ControlFlow::<()>::Continue(())
    });
    match statement {
        // The body's tables are checked as its statements' own needs.
        Statement::CreateTrigger(create) => names.retain(|name| *name == create.table_name),
        // What it names is a database.
        Statement::ShowTables { .. } => names.clear(),
        _ => {}
    }
    let ctes = cte_names(statement);
    let covered: Vec<On> = needs.iter().map(|need| need.on().clone()).collect();
    for name in names {
        let is_cte = name.0.len() == 1
            && (name.0[0].as_ident()).is_some_and(|ident| {
                ctes.iter()
                    .any(|cte| cte.eq_ignore_ascii_case(&ident.value))
            });
        if is_cte {
            continue;
        }
        let (database, table) = split_name(session, &name)?;
        let is_information_schema =
            database.eq_ignore_ascii_case(crate::information_schema::DATABASE);
        let on = On::Table(database, table);
        if !is_information_schema && !covered.contains(&on) {
            needs.push(Need::Every(needed::SELECT, on));
        }
    }
    Ok(())
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
