//! FOREIGN KEY constraints and column `REFERENCES`, as the data nodes enforce them
//! (`kista_client::ForeignKeySpec`): what a statement declares, the child index each one
//! needs (MySQL makes one when the child has none beginning with the columns), and the
//! checks MySQL makes before it adds one, with its error codes.

use sqlparser::ast::{self, ColumnOption, ReferentialAction, TableConstraint};

use kista_client::schema::{IndexKind, IndexSchema, TableSchema};
use kista_client::{same_key_form, ForeignKeySpec, ReferenceAction};

use crate::catalog::SqlTable;
use crate::error::{SqlError, SqlResult};

/// A foreign key as a statement declares it, its tables not looked at yet.
#[derive(Clone, Debug)]
pub struct DeclaredForeignKey {
    /// `CONSTRAINT name`; `None`: named `<table>_ibfk_<n>` when added.
    pub name: Option<String>,
    /// `FOREIGN KEY index_name (...)`: the name of the child index, if one is made.
    pub index_name: Option<String>,
    pub columns: Vec<String>,
    pub parent: ast::ObjectName,
    pub parent_columns: Vec<String>,
    pub on_delete: ReferenceAction,
    pub on_update: ReferenceAction,
}

impl DeclaredForeignKey {
    /// The clause that declares it again with its parent named whole (`db`.`table`): what
    /// a table keeps of a key whose parent is not there yet.
    pub fn clause_sql(&self, (parent_database, parent_table): (&str, &str)) -> String {
        let quote = |name: &str| format!("`{}`", name.replace('`', "``"));
        let quoted = |names: &[String]| {
            (names.iter().map(|name| quote(name)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut sql = String::new();
        if let Some(name) = &self.name {
            sql.push_str(&format!("CONSTRAINT {} ", quote(name)));
        }
        sql.push_str("FOREIGN KEY ");
        if let Some(index) = &self.index_name {
            sql.push_str(&format!("{} ", quote(index)));
        }
        sql.push_str(&format!(
            "({}) REFERENCES {}.{} ({})",
            quoted(&self.columns),
            quote(parent_database),
            quote(parent_table),
            quoted(&self.parent_columns)
        ));
        for (event, action) in [("DELETE", self.on_delete), ("UPDATE", self.on_update)] {
            if let Some(action) = action_sql(action) {
                sql.push_str(&format!(" ON {event} {action}"));
            }
        }
        sql
    }
}

/// The foreign keys of CREATE TABLE: FOREIGN KEY constraints and column REFERENCES.
pub fn declared_in_create(create: &ast::CreateTable) -> SqlResult<Vec<DeclaredForeignKey>> {
    let mut declared = Vec::new();
    for column in &create.columns {
        for option in &column.options {
            if let ColumnOption::ForeignKey {
                foreign_table,
                referred_columns,
                on_delete,
                on_update,
                ..
            } = &option.option
            {
                declared.push(DeclaredForeignKey {
                    name: option.name.as_ref().map(|name| name.value.clone()),
                    index_name: None,
                    columns: vec![column.name.value.clone()],
                    parent: foreign_table.clone(),
                    parent_columns: names(referred_columns),
                    on_delete: action(*on_delete)?,
                    on_update: action(*on_update)?,
                });
            }
        }
    }
    for constraint in &create.constraints {
        if let Some(key) = declared_constraint(constraint)? {
            declared.push(key);
        }
    }
    Ok(declared)
}

/// A FOREIGN KEY table constraint (`None`: another kind of constraint).
pub fn declared_constraint(constraint: &TableConstraint) -> SqlResult<Option<DeclaredForeignKey>> {
    let TableConstraint::ForeignKey {
        name,
        index_name,
        columns,
        foreign_table,
        referred_columns,
        on_delete,
        on_update,
        ..
    } = constraint
    else {
        return Ok(None);
    };
    Ok(Some(DeclaredForeignKey {
        name: name.as_ref().map(|name| name.value.clone()),
        index_name: index_name.as_ref().map(|name| name.value.clone()),
        columns: names(columns),
        parent: foreign_table.clone(),
        parent_columns: names(referred_columns),
        on_delete: action(*on_delete)?,
        on_update: action(*on_update)?,
    }))
}

fn names(idents: &[ast::Ident]) -> Vec<String> {
    idents.iter().map(|ident| ident.value.clone()).collect()
}

/// A referential action; none declared is NO ACTION (which MySQL checks at once, as
/// RESTRICT). SET DEFAULT is refused, as InnoDB refuses it.
fn action(declared: Option<ReferentialAction>) -> SqlResult<ReferenceAction> {
    Ok(match declared {
        None | Some(ReferentialAction::NoAction) => ReferenceAction::NoAction,
        Some(ReferentialAction::Restrict) => ReferenceAction::Restrict,
        Some(ReferentialAction::Cascade) => ReferenceAction::Cascade,
        Some(ReferentialAction::SetNull) => ReferenceAction::SetNull,
        Some(ReferentialAction::SetDefault) => {
            return Err(SqlError::not_supported("SET DEFAULT in a foreign key"))
        }
    })
}

/// How SQL writes an action (`None`: the default, not shown).
pub fn action_sql(action: ReferenceAction) -> Option<&'static str> {
    match action {
        ReferenceAction::NoAction => None,
        ReferenceAction::Restrict => Some("RESTRICT"),
        ReferenceAction::Cascade => Some("CASCADE"),
        ReferenceAction::SetNull => Some("SET NULL"),
    }
}

/// How information_schema writes an action (`NO ACTION` included).
pub fn action_rule(action: ReferenceAction) -> &'static str {
    action_sql(action).unwrap_or("NO ACTION")
}

/// The positions of the child's columns of `key` (1072 for one it lacks).
pub fn child_columns(key: &DeclaredForeignKey, schema: &TableSchema) -> SqlResult<Vec<usize>> {
    key.columns
        .iter()
        .map(|name| {
            (schema.column_index(name))
                .filter(|&c| !super::is_hidden_column(&schema.columns[c].name))
                .ok_or_else(|| {
                    SqlError::new(
                        1072,
                        "42000",
                        format!("Key column '{name}' doesn't exist in table"),
                    )
                })
        })
        .collect()
}

/// The index a foreign key on `columns` needs the child to gain: none when one of
/// `indexes` (ordered, the primary key's included) begins with them.
pub fn needed_child_index(
    key: &DeclaredForeignKey,
    columns: &[usize],
    indexes: &[IndexSchema],
) -> Option<(Option<String>, Vec<usize>)> {
    let indexed = indexes
        .iter()
        .any(|index| index.kind == IndexKind::Ordered && index.columns.starts_with(columns));
    let name = key.index_name.clone().or_else(|| key.name.clone());
    (!indexed).then(|| (name, columns.to_vec()))
}

/// The name of a foreign key declared without one: `<table>_ibfk_<n>`, the first `n`
/// not `taken` (MySQL's).
pub fn default_name(table: &str, taken: &[&str]) -> String {
    (1..)
        .map(|n| format!("{table}_ibfk_{n}"))
        .find(|name| !taken.iter().any(|t| t.eq_ignore_ascii_case(name)))
        .expect("some number is free")
}

/// What the client needs to add `key`, named `name`, to `child`, checked as MySQL checks
/// it: the parent's columns exist and are its primary key or a unique index (else 1822),
/// each pair of columns has one key form (else 3780), SET NULL columns may be NULL (1830).
pub fn spec(
    key: &DeclaredForeignKey,
    name: &str,
    child: &TableSchema,
    parent: &SqlTable,
) -> SqlResult<ForeignKeySpec> {
    let columns = child_columns(key, child)?;
    let parent_schema = parent.schema();
    let mut parent_columns = Vec::new();
    for column in &key.parent_columns {
        let found = parent.column_index(column).ok_or_else(|| {
            SqlError::new(
                3734,
                "HY000",
                format!(
                    "Failed to add the foreign key constraint. Missing column '{column}' for \
                     constraint '{name}' in the referenced table '{}'",
                    parent.name
                ),
            )
        })?;
        parent_columns.push(found);
    }
    if columns.len() != parent_columns.len() {
        return Err(SqlError::new(
            1239,
            "42000",
            format!("Incorrect foreign key definition for '{name}': Key reference and table reference don't match"),
        ));
    }
    for (&child_column, &parent_column) in columns.iter().zip(&parent_columns) {
        let (child_column, parent_column) = (
            &child.columns[child_column],
            &parent_schema.columns[parent_column],
        );
        if !same_key_form(child_column.column_type, parent_column.column_type) {
            return Err(SqlError::new(
                3780,
                "HY000",
                format!(
                    "Referencing column '{}' and referenced column '{}' in foreign key \
                     constraint '{name}' are incompatible.",
                    child_column.name, parent_column.name
                ),
            ));
        }
        let sets_null = [key.on_delete, key.on_update].contains(&ReferenceAction::SetNull);
        if sets_null && !child_column.nullable {
            return Err(SqlError::new(
                1830,
                "HY000",
                format!(
                    "Column '{}' cannot be NOT NULL: needed in a foreign key constraint \
                     '{name}' SET NULL",
                    child_column.name
                ),
            ));
        }
    }
    let parent_index = parent_key(parent, &parent_columns).ok_or_else(|| {
        SqlError::new(
            1822,
            "HY000",
            format!(
                "Failed to add the foreign key constraint. Missing index for constraint '{name}' \
                 in the referenced table '{}'",
                parent.name
            ),
        )
    })?;
    Ok(ForeignKeySpec {
        name: name.to_string(),
        columns: columns.iter().map(|&c| c as u16).collect(),
        parent_index,
        on_delete: key.on_delete,
        on_update: key.on_update,
    })
}

/// The parent's key on `columns`, in order: `Some(None)` for its primary key, the name of
/// a unique index on them, or `None` when it has neither.
fn parent_key(parent: &SqlTable, columns: &[usize]) -> Option<Option<String>> {
    if parent.schema().primary_key == columns {
        return Some(None);
    }
    (parent.table.indexes())
        .find(|(_, index)| index.kind == IndexKind::Unique && index.columns == columns)
        .map(|(_, index)| Some(index.name.clone()))
}

/// A foreign key of a table (as the child), named as SQL shows it.
#[derive(Clone, Debug)]
pub struct DescribedForeignKey {
    pub name: String,
    pub columns: Vec<String>,
    pub parent_database: String,
    pub parent_table: String,
    pub parent_columns: Vec<String>,
    /// The parent's key: `PRIMARY` or its unique index's name.
    pub parent_key: String,
    pub on_delete: ReferenceAction,
    pub on_update: ReferenceAction,
}

impl DescribedForeignKey {
    /// The clause SHOW CREATE TABLE prints.
    pub fn sql(&self, child_database: &str) -> String {
        let quoted = |names: &[String]| {
            (names.iter())
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let parent = if self.parent_database == child_database {
            format!("`{}`", self.parent_table)
        } else {
            format!("`{}`.`{}`", self.parent_database, self.parent_table)
        };
        let mut sql = format!(
            "CONSTRAINT `{}` FOREIGN KEY ({}) REFERENCES {parent} ({})",
            self.name,
            quoted(&self.columns),
            quoted(&self.parent_columns)
        );
        for (event, action) in [("DELETE", self.on_delete), ("UPDATE", self.on_update)] {
            if let Some(action) = action_sql(action) {
                sql.push_str(&format!(" ON {event} {action}"));
            }
        }
        sql
    }
}

/// The foreign keys `table` is the child of, described (a parent the catalog cannot
/// name is left out).
pub fn described(
    catalog: &crate::catalog::Catalog,
    table: &SqlTable,
) -> SqlResult<Vec<DescribedForeignKey>> {
    let schema = table.schema();
    let mut described = Vec::new();
    let child_id = table.table.id;
    for key in (table.table.foreign_keys().iter()).filter(|key| key.child_table == child_id) {
        let parent = if key.parent_table == child_id {
            None
        } else {
            match catalog.table_named_by_id(key.parent_table)? {
                Some((database, name)) => Some(catalog.table(&database, &name)?),
                None => continue,
            }
        };
        let parent = parent.as_deref().unwrap_or(table);
        let parent_schema = parent.schema();
        let names = |schema: &TableSchema, columns: &[u16]| {
            (columns.iter())
                .map(|&c| schema.columns[usize::from(c)].name.clone())
                .collect()
        };
        let parent_key = (parent.table.indexes())
            .find(|(id, _)| id.0 == key.parent_index)
            .map_or(super::PRIMARY_INDEX.to_string(), |(_, index)| {
                index.name.clone()
            });
        described.push(DescribedForeignKey {
            name: key.name.clone(),
            columns: names(schema, &key.child_columns),
            parent_database: parent.database.clone(),
            parent_table: parent.name.clone(),
            parent_columns: names(parent_schema, &key.parent_columns),
            parent_key,
            on_delete: key.on_delete,
            on_update: key.on_update,
        });
    }
    Ok(described)
}
