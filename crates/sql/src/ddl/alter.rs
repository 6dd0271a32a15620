//! ALTER TABLE translated into what the cluster does in place: one change of the table's
//! definition (`Client::alter_table`: its name, columns renamed, added at the end or given
//! new defaults and comments, all of the statement's at once), then the index drops and
//! builds it asks for, one by one, and a new AUTO_INCREMENT start.
//!
//! A column added in place is one rows already stored do not hold: they read the value it
//! was added with (its DEFAULT, a computed default evaluated once now, NULL, or for a NOT
//! NULL column without one MySQL's implicit value: 0, ''). A change that stored rows
//! cannot follow (a type, a column dropped or moved, a column that becomes NOT NULL, a
//! prefix index) copies the rows into a new table ([`copy`], run by `table_copy`); what a
//! copy cannot do either (a new primary key, a table with foreign keys) is refused with
//! error 1846, naming the reason.

mod copy;
mod key_indexes;
pub use copy::CopyPlan;

use sqlparser::ast::{self, AlterColumnOperation, AlterTableOperation, TableConstraint};

use kista_client::schema::{Column, IndexKind, IndexSchema, TableSchema};
use kista_client::types::{ColumnType, Value};

use super::{
    checks, declared_column, defaults, fitted_default, foreign_keys, index_constraint, key_parts,
    named_index, CheckDef, PRIMARY_INDEX,
};
use crate::catalog::SqlTable;
use crate::error::{SqlError, SqlResult};
use crate::expr::{eval, EvalContext};
use crate::sql_type::SqlType;
use crate::table_metadata::{ColumnExtras, TableExtras};

/// What one ALTER TABLE statement does.
#[derive(Debug, Default)]
pub struct AlterPlan {
    /// The table's new schema (its extra metadata included), when its name or columns
    /// change.
    pub schema: Option<TableSchema>,
    /// Indexes to drop, by name, then indexes to build.
    pub drop_indexes: Vec<String>,
    pub add_indexes: Vec<IndexSchema>,
    /// `AUTO_INCREMENT = n`: the counter's next value, at least.
    pub auto_increment: Option<u64>,
    /// CHECK constraints the statement adds, enforced: the rows there must pass them.
    pub new_checks: Vec<CheckDef>,
    /// Foreign keys to drop (by name), then to add once the indexes are built.
    pub drop_foreign_keys: Vec<String>,
    pub add_foreign_keys: Vec<foreign_keys::DeclaredForeignKey>,
    /// The indexes among `add_indexes` made for the foreign keys added: dropped again if
    /// those cannot be added.
    pub foreign_key_indexes: Vec<String>,
    /// Indexes made for foreign keys that an index the statement adds now serves: dropped
    /// last, their keys moved to it (`alter/key_indexes.rs`).
    pub drop_served_key_indexes: Vec<String>,
    /// The rows copied into a new definition, when it cannot change in place (the fields
    /// above are then empty).
    pub copy: Option<CopyPlan>,
}

/// What a front end binds when it opens the table must bind with the new columns: its
/// computed defaults, CHECK constraints and triggers (a column they name may be gone or
/// renamed), or no front end could open it again.
fn check_opens(schema: &TableSchema, extras: &TableExtras) -> SqlResult<()> {
    defaults::check_computed(schema, extras)?;
    super::checks::BoundChecks::of(schema, extras)?;
    for trigger in &extras.triggers {
        crate::trigger::Trigger::prepare(trigger.clone(), schema)?;
    }
    Ok(())
}

/// Error 1091: no column or key `name` to drop.
fn cannot_drop(name: &str) -> SqlError {
    SqlError::new(
        1091,
        "42000",
        format!("Can't DROP '{name}'; check that column/key exists"),
    )
}

/// Error 1846: the change needs the table copied.
fn needs_copy(reason: impl std::fmt::Display) -> SqlError {
    SqlError::new(
        1846,
        "0A000",
        format!(
            "ALGORITHM=INPLACE is not supported. Reason: {reason}. Kista cannot copy the \
             table for this change either"
        ),
    )
}

/// The table as the statement's clauses change it, clause by clause.
struct Altering<'a> {
    table: &'a SqlTable,
    ctx: &'a EvalContext<'a>,
    schema: TableSchema,
    extras: TableExtras,
    /// The indexes the table will have (PRIMARY first), as clauses add and drop them.
    indexes: Vec<IndexSchema>,
    /// For each column of the new definition, the old column its values come from.
    sources: Vec<Option<usize>>,
    /// Why the statement needs the rows copied, once a clause does.
    copy_reason: Option<String>,
    plan: AlterPlan,
}

/// Plans `operations` on `table`; `new_name` is the cluster name a RENAME gives.
pub fn plan(
    table: &SqlTable,
    operations: &[AlterTableOperation],
    rename: &dyn Fn(&ast::ObjectName) -> SqlResult<String>,
    ctx: &EvalContext,
) -> SqlResult<AlterPlan> {
    let mut altering = Altering {
        table,
        ctx,
        schema: table.schema().clone(),
        extras: table.extras.clone(),
        indexes: table.table.indexes().map(|(_, i)| i.clone()).collect(),
        sources: (0..table.schema().columns.len()).map(Some).collect(),
        copy_reason: None,
        plan: AlterPlan::default(),
    };
    for operation in operations {
        altering.apply(operation, rename)?;
    }
    altering.drop_served_key_indexes();
    altering.refuse_needed_indexes()?;
    let Altering {
        mut schema,
        extras,
        indexes,
        sources,
        mut copy_reason,
        mut plan,
        ..
    } = altering;
    if copy_reason.is_none() {
        copy_reason = schema.in_place_change_from(table.schema()).err();
    }
    if let Some(reason) = copy_reason {
        copy::finish(
            table,
            (schema, extras),
            indexes,
            sources,
            (&mut plan, reason),
        )?;
        return Ok(plan);
    }
    check_opens(&schema, &extras)?;
    schema.extra_metadata = extras.encode(&schema);
    if schema != *table.schema() {
        plan.schema = Some(schema);
    }
    Ok(plan)
}

impl Altering<'_> {
    fn apply(
        &mut self,
        operation: &AlterTableOperation,
        rename: &dyn Fn(&ast::ObjectName) -> SqlResult<String>,
    ) -> SqlResult<()> {
        use AlterTableOperation as Op;
        match operation {
            Op::AddColumn {
                if_not_exists,
                column_def,
                column_position,
                ..
            } => self.add_column(column_def, *if_not_exists, column_position.as_ref()),
            Op::ChangeColumn {
                old_name,
                new_name,
                data_type,
                options,
                column_position,
            } => self.change_column(old_name, new_name, data_type, options, column_position),
            Op::ModifyColumn {
                col_name,
                data_type,
                options,
                column_position,
            } => self.change_column(col_name, col_name, data_type, options, column_position),
            Op::RenameColumn {
                old_column_name,
                new_column_name,
            } => self.rename_column(old_column_name, new_column_name),
            Op::AlterColumn { column_name, op } => self.alter_column(column_name, op),
            Op::DropColumn {
                column_names,
                if_exists,
                ..
            } => {
                (column_names.iter()).try_for_each(|name| self.drop_column(&name.value, *if_exists))
            }
            Op::AddConstraint { constraint, .. } => self.add_constraint(constraint),
            Op::DropIndex { name } => self.drop_index(&name.value, false),
            Op::DropConstraint {
                name, if_exists, ..
            } => self.drop_constraint(&name.value, *if_exists),
            Op::DropPrimaryKey { .. } => Err(needs_copy("dropping the primary key")),
            Op::DropForeignKey { name, .. } => self.drop_foreign_key(&name.value, false),
            Op::RenameTable { table_name } => {
                let (ast::RenameTableNameKind::As(name) | ast::RenameTableNameKind::To(name)) =
                    table_name;
                self.schema.name = rename(name)?;
                Ok(())
            }
            Op::AutoIncrement { value, .. } => {
                let start = value.to_string().parse::<u64>().map_err(|_| {
                    SqlError::syntax(format!("AUTO_INCREMENT = {value} is not a number"))
                })?;
                self.plan.auto_increment = Some(start);
                Ok(())
            }
            // What MySQL may do in place, Kista does in place (or refuses).
            Op::Algorithm { .. } | Op::Lock { .. } => Ok(()),
            other => Err(SqlError::not_supported(format!("ALTER TABLE ... {other}"))),
        }
    }

    /// The position of visible column `name`, else error 1054.
    fn column(&self, name: &ast::Ident) -> SqlResult<usize> {
        self.schema
            .column_index(&name.value)
            .filter(|&c| !super::is_hidden_column(&self.schema.columns[c].name))
            .ok_or_else(|| SqlError::unknown_column(&name.value, &self.table.name))
    }

    /// Error 1060 when another column is called `name` already.
    fn check_free_name(&self, name: &str, except: Option<usize>) -> SqlResult<()> {
        match self.schema.column_index(name) {
            Some(taken) if Some(taken) != except => Err(SqlError::new(
                1060,
                "42S21",
                format!("Duplicate column name '{name}'"),
            )),
            _ => Ok(()),
        }
    }

    fn add_column(
        &mut self,
        definition: &ast::ColumnDef,
        if_not_exists: bool,
        position: Option<&ast::MySQLColumnPosition>,
    ) -> SqlResult<()> {
        if if_not_exists && self.schema.column_index(&definition.name.value).is_some() {
            return Ok(());
        }
        self.check_free_name(&definition.name.value, None)?;
        let declared = declared_column(definition, self.table_collation())?;
        if declared.primary || declared.auto_increment {
            return Err(needs_copy(
                "a new column that is a primary key or AUTO_INCREMENT",
            ));
        }
        // A value no stored row can read in place (one computed from the row's other
        // columns): each copied row gets its own.
        let absent = match self.absent_value(&declared.column, &declared.extras) {
            Err(error) if error.code == 1846 => {
                self.copies(format!(
                    "column '{}' needs a value per row",
                    definition.name
                ));
                Value::Null
            }
            other => other?,
        };
        let mut column = self.schema.columns.len();
        let unique = declared.unique;
        self.schema.columns.push(declared.column.added_with(absent));
        self.extras.columns.push(declared.extras);
        self.sources.push(None);
        if let Some(position) = position {
            column = self.place(column, position)?;
        }
        if unique {
            self.add_index(None, IndexKind::Unique, vec![column])?;
        }
        Ok(())
    }

    /// What rows stored before `column` was added read for it.
    fn absent_value(&self, column: &Column, extras: &ColumnExtras) -> SqlResult<Value> {
        if !extras.default_sql.is_empty() {
            // A computed default, evaluated once for every row there is (MySQL evaluates
            // it per row when it copies; the rows of one ALTER get one moment's value).
            let bound = defaults::bind(&extras.default_sql, &self.schema)?;
            if defaults::reads_columns(&bound) {
                return Err(needs_copy(format!(
                    "the default of '{}' is computed from other columns",
                    column.name
                )));
            }
            let value = eval(&bound, &[], self.ctx)?;
            return crate::value::coerce(&value, column.column_type, &column.name);
        }
        if let Some(default) = &column.default {
            return Ok(default.clone());
        }
        if column.nullable {
            return Ok(Value::Null);
        }
        implicit_value(column.column_type, extras.sql_type.as_ref())
            .ok_or_else(|| needs_copy(format!("NOT NULL column '{}' needs a DEFAULT", column.name)))
    }

    /// `CHANGE old new type ...` and `MODIFY name type ...`: in place when the column keeps
    /// its type and place and stays nullable if it was (its name, default and comment may
    /// change); copied otherwise.
    fn change_column(
        &mut self,
        old: &ast::Ident,
        new: &ast::Ident,
        data_type: &ast::DataType,
        options: &[ast::ColumnOption],
        position: &Option<ast::MySQLColumnPosition>,
    ) -> SqlResult<()> {
        let mut column = self.column(old)?;
        self.check_free_name(&new.value, Some(column))?;
        if let Some(position) = position {
            column = self.place(column, position)?;
        }
        let definition = ast::ColumnDef {
            name: new.clone(),
            data_type: data_type.clone(),
            options: (options.iter().cloned())
                .map(|option| ast::ColumnOptionDef { name: None, option })
                .collect(),
        };
        let declared = declared_column(&definition, self.table_collation())?;
        let current = self.schema.columns[column].clone();
        let current_extras = self.extras.columns[column].clone();
        if declared.column.column_type != current.column_type
            || declared.extras.sql_type != current_extras.sql_type
            || declared.extras.fraction_digits != current_extras.fraction_digits
        {
            self.copies(format!("column '{}' changes its type", old.value));
        }
        let was_auto_increment = self.table.auto_increment.is_some()
            && self.sources[column] == self.table.auto_increment;
        if declared.auto_increment != was_auto_increment {
            return Err(needs_copy("AUTO_INCREMENT is added or dropped"));
        }
        if declared.primary {
            return Err(needs_copy("a new primary key"));
        }
        let is_key = self.schema.primary_key.contains(&column);
        let nullable = declared.column.nullable && !is_key;
        let generated = current_extras.generated.clone();
        self.schema.columns[column] = Column {
            nullable,
            added: current.added,
            ..declared.column
        };
        self.extras.columns[column] = ColumnExtras {
            generated,
            ..declared.extras
        };
        if declared.unique {
            self.add_index(None, IndexKind::Unique, vec![column])?;
        }
        Ok(())
    }

    fn rename_column(&mut self, old: &ast::Ident, new: &ast::Ident) -> SqlResult<()> {
        let column = self.column(old)?;
        self.check_free_name(&new.value, Some(column))?;
        if super::is_hidden_column(&new.value) {
            return Err(SqlError::new(
                1166,
                "42000",
                format!("Incorrect column name '{}'", new.value),
            ));
        }
        self.schema.columns[column].name = new.value.clone();
        Ok(())
    }

    fn alter_column(&mut self, name: &ast::Ident, op: &AlterColumnOperation) -> SqlResult<()> {
        let column = self.column(name)?;
        let definition = &mut self.schema.columns[column];
        let extras = &mut self.extras.columns[column];
        match op {
            AlterColumnOperation::SetDefault { value } => {
                let typed = (definition.column_type, extras.fraction_digits);
                let computed = defaults::computed_default(value, &definition.name, typed)?;
                extras.default_sql = computed.clone().unwrap_or_default();
                definition.default = match computed {
                    Some(_) => None,
                    None => fitted_default(definition, extras.sql_type.as_ref(), value)?,
                };
                Ok(())
            }
            AlterColumnOperation::DropDefault => {
                definition.default = None;
                extras.default_sql.clear();
                Ok(())
            }
            AlterColumnOperation::DropNotNull => {
                definition.nullable = !self.schema.primary_key.contains(&column);
                Ok(())
            }
            AlterColumnOperation::SetNotNull => {
                definition.nullable = false;
                self.copies(format!("column '{}' becomes NOT NULL", name.value));
                Ok(())
            }
            _ => Err(needs_copy(format!(
                "column '{}' changes its type",
                name.value
            ))),
        }
    }

    /// Puts `column` where FIRST or AFTER says, if it is not there already (a move copies
    /// the rows): its position now.
    fn place(&mut self, column: usize, position: &ast::MySQLColumnPosition) -> SqlResult<usize> {
        let visible: Vec<usize> = (0..self.schema.columns.len())
            .filter(|&c| !super::is_hidden_column(&self.schema.columns[c].name))
            .filter(|&c| c != column)
            .collect();
        let stays = match position {
            ast::MySQLColumnPosition::First => visible.first().is_none_or(|&first| column < first),
            // After the column before it.
            ast::MySQLColumnPosition::After(after) => {
                visible.iter().rev().find(|&&c| c < column) == Some(&self.column(after)?)
            }
        };
        if !stays {
            let name = self.schema.columns[column].name.clone();
            self.move_column(column, position)?;
            return Ok(self.schema.column_index(&name).unwrap_or(column));
        }
        Ok(column)
    }

    fn add_constraint(&mut self, constraint: &TableConstraint) -> SqlResult<()> {
        match constraint {
            TableConstraint::PrimaryKey { .. } => return Err(needs_copy("a new primary key")),
            TableConstraint::Check {
                name,
                expr,
                enforced,
            } => {
                let named = (&self.schema, self.table.name.as_str());
                let check =
                    checks::declared(name.as_ref(), expr, *enforced, named, &self.extras.checks)?;
                if check.enforced {
                    self.plan.new_checks.push(check.clone());
                }
                self.extras.checks.push(check);
                return Ok(());
            }
            TableConstraint::ForeignKey { .. } => {
                let Some(key) = foreign_keys::declared_constraint(constraint)? else {
                    return Ok(());
                };
                let columns = foreign_keys::child_columns(&key, &self.schema)?;
                let needed = foreign_keys::needed_child_index(&key, &columns, &self.indexes);
                if let Some((name, columns)) = needed {
                    let free = name.filter(|name| !self.has_index(name));
                    self.add_index(free, IndexKind::Ordered, columns)?;
                    let made = self.indexes.last().map(|index| index.name.clone());
                    self.plan.foreign_key_indexes.extend(made.clone());
                    self.extras.key_indexes.extend(made);
                }
                self.plan.add_foreign_keys.push(key);
                return Ok(());
            }
            _ => {}
        }
        let (name, kind, parts) = index_constraint(constraint)?;
        let columns = key_parts::columns(parts, &mut self.schema, &mut self.extras, true)?;
        // A new prefix column: every row needs its value, which a copy gives it.
        if self.sources.len() < self.schema.columns.len() {
            self.sources.resize(self.schema.columns.len(), None);
            self.copies("a prefix index adds a hidden column");
        }
        self.add_index(name.map(|n| n.value.clone()), kind, columns)
    }

    fn add_index(
        &mut self,
        name: Option<String>,
        kind: IndexKind,
        columns: Vec<usize>,
    ) -> SqlResult<()> {
        if let Some(taken) = name.as_ref().filter(|n| self.has_index(n)) {
            return Err(SqlError::new(
                1061,
                "42000",
                format!("Duplicate key name '{taken}'"),
            ));
        }
        let named = (&self.schema, &self.extras);
        let index = named_index(name, kind, columns, named, &self.indexes);
        self.indexes.push(index.clone());
        self.plan.add_indexes.push(index);
        Ok(())
    }

    fn has_index(&self, name: &str) -> bool {
        self.indexes
            .iter()
            .any(|i| i.name.eq_ignore_ascii_case(name))
    }

    /// DROP CONSTRAINT: a CHECK constraint of that name, else a foreign key, else a unique
    /// key.
    fn drop_constraint(&mut self, name: &str, if_exists: bool) -> SqlResult<()> {
        let check = (self.extras.checks.iter()).position(|c| c.name.eq_ignore_ascii_case(name));
        match check {
            Some(position) => {
                self.extras.checks.remove(position);
                (self.plan.new_checks).retain(|c| !c.name.eq_ignore_ascii_case(name));
                Ok(())
            }
            None if self.has_foreign_key(name) => self.drop_foreign_key(name, if_exists),
            None => self.drop_index(name, if_exists),
        }
    }

    /// Whether the table has (as the child) a foreign key called `name`.
    fn has_foreign_key(&self, name: &str) -> bool {
        let table = &self.table.table;
        (table.foreign_keys().iter())
            .any(|key| key.child_table == table.id && key.name.eq_ignore_ascii_case(name))
    }

    /// DROP FOREIGN KEY: its index stays (as in MySQL).
    fn drop_foreign_key(&mut self, name: &str, if_exists: bool) -> SqlResult<()> {
        let added = (self.plan.add_foreign_keys.iter()).position(|key| {
            key.name
                .as_deref()
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
        });
        if let Some(added) = added {
            self.plan.add_foreign_keys.remove(added);
            return Ok(());
        }
        if self.has_foreign_key(name) {
            self.plan.drop_foreign_keys.push(name.to_string());
            return Ok(());
        }
        if if_exists {
            return Ok(());
        }
        Err(cannot_drop(name))
    }

    fn drop_index(&mut self, name: &str, if_exists: bool) -> SqlResult<()> {
        if name.eq_ignore_ascii_case(PRIMARY_INDEX) {
            return Err(needs_copy("dropping the primary key"));
        }
        let Some(position) = (self.indexes.iter()).position(|i| i.name.eq_ignore_ascii_case(name))
        else {
            if if_exists {
                return Ok(());
            }
            return Err(cannot_drop(name));
        };
        self.indexes.remove(position);
        (self.extras.key_indexes).retain(|made| !made.eq_ignore_ascii_case(name));
        let added = (self.plan.add_indexes.iter()).position(|i| i.name.eq_ignore_ascii_case(name));
        match added {
            // Added by this statement: it is never built.
            Some(added) => {
                self.plan.add_indexes.remove(added);
            }
            None => self.plan.drop_indexes.push(name.to_string()),
        }
        Ok(())
    }

    /// The collation a column declared without one takes: the table's default.
    fn table_collation(&self) -> kista_client::types::Collation {
        self.extras.collation
    }
}

/// MySQL's implicit value of a NOT NULL column without a DEFAULT, which the rows a column
/// is added to get: zero, the empty string, an ENUM's first member. `None` for types
/// whose implicit value Kista cannot hold (a zero date).
pub(crate) fn implicit_value(column_type: ColumnType, sql_type: Option<&SqlType>) -> Option<Value> {
    match sql_type {
        Some(SqlType::Enum(members)) => return Some(Value::Bytes(members[0].as_bytes().to_vec())),
        Some(SqlType::Set(_)) => return Some(Value::Bytes(Vec::new())),
        Some(SqlType::Json) => return None,
        Some(SqlType::Year | SqlType::Bit(_)) | None => {}
    }
    Some(match column_type {
        ColumnType::Int { signed: true, .. } => Value::Int(0),
        ColumnType::Int { signed: false, .. } => Value::UInt(0),
        ColumnType::Float => Value::Float(0.0),
        ColumnType::Double => Value::Double(0.0),
        ColumnType::Decimal { scale, .. } => {
            Value::Decimal(kista_client::types::Decimal { unscaled: 0, scale })
        }
        ColumnType::Binary { length } => Value::Bytes(vec![0; usize::from(length)]),
        ColumnType::Char { .. }
        | ColumnType::VarChar { .. }
        | ColumnType::VarBinary { .. }
        | ColumnType::Text { .. }
        | ColumnType::Blob => Value::Bytes(Vec::new()),
        ColumnType::Time => Value::Time(0),
        ColumnType::Date | ColumnType::DateTime | ColumnType::Timestamp => return None,
    })
}
