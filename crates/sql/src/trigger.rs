//! Triggers: `CREATE TRIGGER name {BEFORE | AFTER} {INSERT | UPDATE | DELETE} ON t FOR
//! EACH ROW body` and `DROP TRIGGER`. A trigger belongs to its table: it lives in the
//! table's extra metadata ([`TriggerDef`]), so it is created and dropped by one dictionary
//! change that every front end learns of (the table's schema version moves on), and goes
//! with the table.
//!
//! A body is a statement or `BEGIN ... END` of statements, each one of:
//! - `SET NEW.col = expr` (BEFORE INSERT and BEFORE UPDATE): changes the row to be written;
//! - `INSERT ... VALUES`, `REPLACE ... VALUES`, `UPDATE`, `DELETE` on other tables, where
//!   `NEW.col` and `OLD.col` stand for the row's values.
//!
//! Triggers fire once per row, in the statement's transaction; an error in one fails the
//! statement. A trigger may not write the table whose statement fired it, directly or
//! through another trigger (1442). Unlike MySQL, which runs each row's BEFORE trigger,
//! write and AFTER trigger in turn, Kista runs every row's BEFORE triggers, then the
//! writes, then every row's AFTER triggers (different only to a trigger that reads the
//! table being written). In a BEFORE INSERT trigger an AUTO_INCREMENT column already holds
//! its new value (MySQL shows 0).

use std::ops::ControlFlow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sqlparser::ast::{self, Statement};

use kista_client::schema::TableSchema;
use kista_client::types::Value;

use crate::catalog::SqlTable;
use crate::error::{SqlError, SqlResult};
use crate::expr::{bind, eval, Binder, Expr, ScopeColumn};
use crate::session::{Parsed, Session, Tx};

/// Triggers one table may have.
pub const TRIGGERS_PER_TABLE_MAX: usize = 64;
/// Statements one trigger's body may have.
pub const STATEMENTS_PER_TRIGGER_MAX: usize = 256;
/// How deep triggers may fire triggers (each on another table).
pub const TRIGGER_DEPTH_MAX: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    Before,
    After,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    Insert,
    Update,
    Delete,
}

impl Event {
    pub fn name(self) -> &'static str {
        match self {
            Event::Insert => "INSERT",
            Event::Update => "UPDATE",
            Event::Delete => "DELETE",
        }
    }
}

impl Timing {
    pub fn name(self) -> &'static str {
        match self {
            Timing::Before => "BEFORE",
            Timing::After => "AFTER",
        }
    }
}

/// A trigger as its table's extra metadata keeps it: the body's statements as text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TriggerDef {
    pub name: String,
    pub timing: Timing,
    pub event: Event,
    pub statements: Vec<String>,
    /// When it was created (information_schema.TRIGGERS.CREATED), ms since the epoch.
    pub created_ms: u64,
    /// The account that created it, whose privileges its body runs with (MySQL's
    /// DEFINER); triggers made before accounts were kept are root's.
    #[serde(default = "root")]
    pub definer: String,
}

fn root() -> String {
    "root".into()
}

impl TriggerDef {
    /// The body as `information_schema.TRIGGERS` and SHOW CREATE TRIGGER print it: its
    /// one statement, or several in `BEGIN ... END`.
    pub fn body_sql(&self) -> String {
        match self.statements.as_slice() {
            [one] => one.clone(),
            many => format!("BEGIN {}; END", many.join("; ")),
        }
    }

    /// The CREATE TRIGGER statement that makes it again on `table`.
    pub fn create_sql(&self, table: &str) -> String {
        format!(
            "CREATE DEFINER=`{}`@`%` TRIGGER `{}` {} {} ON `{}` FOR EACH ROW {}",
            self.definer.replace('`', "``"),
            self.name.replace('`', "``"),
            self.timing.name(),
            self.event.name(),
            table.replace('`', "``"),
            self.body_sql()
        )
    }
}

/// A trigger ready to fire: its statements parsed, its SETs of NEW bound.
pub struct Trigger {
    pub def: TriggerDef,
    body: Vec<BodyStatement>,
}

enum BodyStatement {
    /// `SET NEW.col = value`, `value` bound over the row `NEW ++ OLD`.
    SetNew { column: usize, value: Expr },
    /// A write to another table, `NEW.col` and `OLD.col` in it to be replaced by values.
    Write(Box<Parsed>),
}

impl Trigger {
    /// Parses and checks `def` for a table of `schema`: MySQL's errors for a body that
    /// cannot run (1362, 1363, 1054), 1235 for statements Kista does not run in triggers.
    pub fn prepare(def: TriggerDef, schema: &TableSchema) -> SqlResult<Trigger> {
        if def.statements.len() > STATEMENTS_PER_TRIGGER_MAX {
            return Err(SqlError::not_supported(format!(
                "a trigger of more than {STATEMENTS_PER_TRIGGER_MAX} statements"
            )));
        }
        let scope = pseudo_row_scope(schema);
        let body = def
            .statements
            .iter()
            .map(|text| {
                let parsed = crate::session::parse(text)?;
                check_pseudo_rows(&parsed.statement, def.event)?;
                body_statement(parsed, &def, schema, &scope)
            })
            .collect::<SqlResult<_>>()?;
        Ok(Trigger { def, body })
    }
}

/// The columns `NEW.col` and `OLD.col` name: the row's columns twice.
fn pseudo_row_scope(schema: &TableSchema) -> Vec<ScopeColumn> {
    ["new", "old"]
        .into_iter()
        .flat_map(|row| schema.columns.iter().map(move |c| ScopeColumn::of(row, c)))
        .collect()
}

fn body_statement(
    parsed: Parsed,
    def: &TriggerDef,
    schema: &TableSchema,
    scope: &[ScopeColumn],
) -> SqlResult<BodyStatement> {
    match &parsed.statement {
        Statement::Set(set) => {
            let (target, value) = single_assignment(set)?;
            let [row, column] = target.as_slice() else {
                return Err(SqlError::not_supported(format!("{set} in a trigger")));
            };
            match row.to_ascii_lowercase().as_str() {
                "new" if def.event == Event::Delete => Err(SqlError::new(
                    1363,
                    "HY000",
                    "There is no NEW row in on DELETE trigger",
                )),
                "new" if def.timing == Timing::After => Err(SqlError::new(
                    1362,
                    "HY000",
                    "Updating of NEW row is not allowed in after trigger",
                )),
                "new" => {
                    let column = schema
                        .column_index(column)
                        .filter(|&c| !crate::ddl::is_hidden_column(&schema.columns[c].name))
                        .ok_or_else(|| SqlError::unknown_column(column, "NEW"))?;
                    let mut binder = Binder::over(scope, &[], "field list");
                    let value = bind(&mut binder, value)?;
                    Ok(BodyStatement::SetNew { column, value })
                }
                "old" => Err(SqlError::new(
                    1362,
                    "HY000",
                    "Updating of OLD row is not allowed in trigger",
                )),
                _ => Err(SqlError::not_supported(format!("{set} in a trigger"))),
            }
        }
        Statement::Insert(insert) => match insert.source.as_deref().map(|q| q.body.as_ref()) {
            Some(ast::SetExpr::Values(_)) => Ok(BodyStatement::Write(Box::new(parsed))),
            _ => Err(SqlError::not_supported(
                "INSERT without VALUES in a trigger",
            )),
        },
        Statement::Update { .. } | Statement::Delete(_) => {
            Ok(BodyStatement::Write(Box::new(parsed)))
        }
        other => Err(SqlError::not_supported(format!(
            "{} in a trigger",
            other.to_string().split_whitespace().next().unwrap_or("")
        ))),
    }
}

/// `SET a.b = value` as its target's parts and its value.
fn single_assignment(set: &ast::Set) -> SqlResult<(Vec<String>, &ast::Expr)> {
    let parts = |name: &ast::ObjectName| {
        name.0
            .iter()
            .map(|p| p.as_ident().map(|i| i.value.clone()).unwrap_or_default())
            .collect()
    };
    match set {
        ast::Set::SingleAssignment {
            variable, values, ..
        } if values.len() == 1 => Ok((parts(variable), &values[0])),
        ast::Set::MultipleAssignments { assignments } if assignments.len() == 1 => {
            Ok((parts(&assignments[0].name), &assignments[0].value))
        }
        other => Err(SqlError::not_supported(format!("{other} in a trigger"))),
    }
}

/// MySQL's 1363 for `NEW` in a DELETE trigger and `OLD` in an INSERT trigger.
fn check_pseudo_rows(statement: &Statement, event: Event) -> SqlResult<()> {
    let mut refused = None;
    let _ = ast::visit_expressions(statement, |expr| {
        if let Some((row, _)) = pseudo_reference(expr) {
            match (row, event) {
                (PseudoRow::New, Event::Delete) => refused = Some(("NEW", "DELETE")),
                (PseudoRow::Old, Event::Insert) => refused = Some(("OLD", "INSERT")),
                _ => {}
            }
        }
        ControlFlow::<()>::Continue(())
    });
    match refused {
        Some((row, event)) => Err(SqlError::new(
            1363,
            "HY000",
            format!("There is no {row} row in on {event} trigger"),
        )),
        None => Ok(()),
    }
}

#[derive(Clone, Copy)]
enum PseudoRow {
    New,
    Old,
}

/// `NEW.col` or `OLD.col`: which row, and the column's name.
fn pseudo_reference(expr: &ast::Expr) -> Option<(PseudoRow, &str)> {
    let ast::Expr::CompoundIdentifier(parts) = expr else {
        return None;
    };
    let [row, column] = parts.as_slice() else {
        return None;
    };
    let row = match row.value.to_ascii_lowercase().as_str() {
        "new" => PseudoRow::New,
        "old" => PseudoRow::Old,
        _ => return None,
    };
    Some((row, column.value.as_str()))
}

/// The tables whose statements are running, the firing one's last: a trigger may not
/// write one of them (MySQL's 1442), and may nest only [`TRIGGER_DEPTH_MAX`] deep. Held
/// inline: every write statement has one.
#[derive(Default)]
pub struct Firing {
    tables: [u32; TRIGGER_DEPTH_MAX],
    depth: usize,
}

impl Firing {
    /// Runs `work` as a statement writing `table` in `tx`: on the stack of running
    /// statements ([`Firing::writing`]), its last batch kept from committing when it is a
    /// trigger's or its table's triggers may write after it (`Tx::holding_commit`).
    pub fn statement<T>(
        &mut self,
        tx: &mut Tx,
        table: &SqlTable,
        work: impl FnOnce(&mut Tx, &mut Self) -> SqlResult<T>,
    ) -> SqlResult<T> {
        self.writing(table, |firing| {
            let hold = firing.depth > 1 || !table.triggers.is_empty();
            tx.holding_commit(hold, |tx| work(tx, firing))
        })
    }

    /// Runs `work` as a statement writing `table`.
    fn writing<T>(
        &mut self,
        table: &SqlTable,
        work: impl FnOnce(&mut Self) -> SqlResult<T>,
    ) -> SqlResult<T> {
        if self.tables[..self.depth].contains(&table.table.id) {
            return Err(SqlError::new(
                1442,
                "HY000",
                format!(
                    "Can't update table '{}' in stored function/trigger because it is already used by statement which invoked this stored function/trigger.",
                    table.name
                ),
            ));
        }
        if self.depth == TRIGGER_DEPTH_MAX {
            return Err(SqlError::not_supported(format!(
                "triggers firing triggers more than {TRIGGER_DEPTH_MAX} deep"
            )));
        }
        self.tables[self.depth] = table.table.id;
        self.depth += 1;
        let result = work(self);
        self.depth -= 1;
        result
    }
}

/// The rows a trigger sees: `OLD` (UPDATE and DELETE) and `NEW` (INSERT and UPDATE),
/// which BEFORE triggers may change.
struct Rows<'a> {
    old: Option<&'a [Value]>,
    new: Option<&'a mut Vec<Value>>,
}

/// Fires `table`'s triggers of `timing` and `event` for one row: `old` as it was (UPDATE
/// and DELETE), `new` as it is to be (INSERT and UPDATE; BEFORE triggers may change it).
pub fn fire(
    tx: &mut Tx,
    session: &Session,
    table: &SqlTable,
    (timing, event): (Timing, Event),
    old: Option<&[Value]>,
    new: Option<&mut Vec<Value>>,
    firing: &mut Firing,
) -> SqlResult<()> {
    let mut triggers = table
        .triggers
        .iter()
        .filter(|t| t.def.timing == timing && t.def.event == event)
        .peekable();
    if triggers.peek().is_none() {
        return Ok(());
    }
    let mut rows = Rows { old, new };
    for trigger in triggers {
        for statement in &trigger.body {
            match statement {
                BodyStatement::SetNew { column, value } => {
                    set_new(session, table, &mut rows, *column, value)?
                }
                BodyStatement::Write(parsed) => {
                    crate::accounts::check_definer(session, &trigger.def.definer, parsed)?;
                    let written = with_values(parsed, table, &rows);
                    crate::dml::write_from_trigger(tx, session, &written, firing)?;
                }
            }
        }
    }
    if let Some(new) = rows.new {
        table.generate(new);
    }
    Ok(())
}

fn set_new(
    session: &Session,
    table: &SqlTable,
    rows: &mut Rows,
    column: usize,
    value: &Expr,
) -> SqlResult<()> {
    let width = table.schema().columns.len();
    let Some(new) = rows.new.as_deref_mut() else {
        return Ok(());
    };
    let mut both = new.clone();
    match rows.old {
        Some(old) => both.extend_from_slice(old),
        None => both.resize(2 * width, Value::Null),
    }
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(&[], &[], &variable);
    let value = eval(value, &both, &ctx)?;
    new[column] = crate::dml::fit(table, column, &value)?;
    Ok(())
}

/// `parsed` with every `NEW.col` and `OLD.col` replaced by the row's value.
fn with_values(parsed: &Parsed, table: &SqlTable, rows: &Rows) -> Parsed {
    let mut statement = parsed.statement.clone();
    let _ = ast::visit_expressions_mut(&mut statement, |expr| {
        if let Some((row, column)) = pseudo_reference(expr) {
            let values = match row {
                PseudoRow::New => rows.new.as_deref().map(Vec::as_slice),
                PseudoRow::Old => rows.old,
            };
            let value = table
                .column_index(column)
                .and_then(|c| values.map(|v| v[c].clone()))
                .unwrap_or(Value::Null);
            *expr = literal(&value);
        }
        ControlFlow::<()>::Continue(())
    });
    Parsed {
        statement,
        placeholders: Vec::new(),
        update_order_by: parsed.update_order_by.clone(),
        calc_found_rows: false,
        account: None,
        load_data: None,
    }
}

/// `value` as an SQL literal that binds back to the same value (or one the column it is
/// given to converts to it).
fn literal(value: &Value) -> ast::Expr {
    let text = || String::from_utf8_lossy(&crate::value::to_text(value)).into_owned();
    let literal = match value {
        Value::Null => ast::Value::Null,
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) => ast::Value::Number(text(), false),
        Value::Float(x) => ast::Value::Number(format!("{:e}", f64::from(*x)), false),
        Value::Double(x) => ast::Value::Number(format!("{x:e}"), false),
        Value::Bytes(bytes) => match std::str::from_utf8(bytes) {
            Ok(s) => ast::Value::SingleQuotedString(s.to_string()),
            Err(_) => ast::Value::HexStringLiteral(crate::value::hex_digits(bytes)),
        },
        _ => ast::Value::SingleQuotedString(text()),
    };
    ast::Expr::value(literal)
}

/// `CREATE TRIGGER`: checked, then added to its table's definition.
pub fn create(session: &mut Session, create: &ast::CreateTrigger) -> SqlResult<()> {
    let (database, table_name) = crate::select::split_name(session, &create.table_name)?;
    let (trigger_database, name) = crate::select::split_name(session, &create.name)?;
    if trigger_database != database {
        return Err(SqlError::new(1435, "HY000", "Trigger in wrong schema"));
    }
    if create.referenced_table_name.is_some() {
        return Err(SqlError::not_supported("FOLLOWS and PRECEDES"));
    }
    let timing = match create.period {
        ast::TriggerPeriod::Before => Timing::Before,
        ast::TriggerPeriod::After => Timing::After,
        _ => return Err(SqlError::not_supported(create.period)),
    };
    let event = match create.events.as_slice() {
        [ast::TriggerEvent::Insert] => Event::Insert,
        [ast::TriggerEvent::Update(columns)] if columns.is_empty() => Event::Update,
        [ast::TriggerEvent::Delete] => Event::Delete,
        _ => return Err(SqlError::not_supported("that trigger event")),
    };
    if find(session, &database, &name)?.is_some() {
        return Err(SqlError::new(1359, "HY000", "Trigger already exists"));
    }
    let statements = create
        .statements
        .as_ref()
        .map(|s| s.statements().iter().map(|s| s.to_string()).collect())
        .unwrap_or_default();
    let def = TriggerDef {
        name,
        timing,
        event,
        statements,
        created_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        definer: session.user.clone(),
    };
    let table = session.catalog.table(&database, &table_name)?;
    Trigger::prepare(def.clone(), table.schema())?;
    if table.extras.triggers.len() >= TRIGGERS_PER_TABLE_MAX {
        return Err(SqlError::not_supported(format!(
            "more than {TRIGGERS_PER_TABLE_MAX} triggers on a table"
        )));
    }
    let mut extras = table.extras.clone();
    extras.triggers.push(def);
    session.catalog.alter_extras(&table, &extras)
}

/// `DROP TRIGGER [IF EXISTS] [db.]name`.
pub fn drop(session: &mut Session, drop: &ast::DropTrigger) -> SqlResult<()> {
    let (database, name) = crate::select::split_name(session, &drop.trigger_name)?;
    let Some(table) = find(session, &database, &name)? else {
        if drop.if_exists {
            session.warn(1360, "Trigger does not exist".into());
            return Ok(());
        }
        return Err(SqlError::new(1360, "HY000", "Trigger does not exist"));
    };
    let mut extras = table.extras.clone();
    extras
        .triggers
        .retain(|t| !t.name.eq_ignore_ascii_case(&name));
    session.catalog.alter_extras(&table, &extras)
}

/// The table of `database` holding trigger `name`, if one does (trigger names are
/// unique in a database, as in MySQL).
fn find(session: &Session, database: &str, name: &str) -> SqlResult<Option<Arc<SqlTable>>> {
    if !session.catalog.database_exists(database)? {
        return Err(SqlError::unknown_database(database));
    }
    for table_name in session.catalog.table_names(database)? {
        let table = session.catalog.table(database, &table_name)?;
        if table
            .extras
            .triggers
            .iter()
            .any(|t| t.name.eq_ignore_ascii_case(name))
        {
            return Ok(Some(table));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kista_client::schema::Column;
    use kista_client::types::ColumnType;

    fn schema() -> TableSchema {
        TableSchema {
            name: "db/t".into(),
            columns: vec![
                Column::new("id", ColumnType::signed(4)),
                Column::new("name", ColumnType::varchar(9)).nullable(),
            ],
            primary_key: vec![0],
            extra_metadata: Vec::new(),
        }
    }

    fn prepared(timing: Timing, event: Event, statement: &str) -> SqlResult<Trigger> {
        let def = TriggerDef {
            name: "tr".into(),
            timing,
            event,
            statements: vec![statement.into()],
            created_ms: 0,
            definer: "root".into(),
        };
        Trigger::prepare(def, &schema())
    }

    fn code(result: SqlResult<Trigger>) -> u16 {
        result.err().map_or(0, |e| e.code)
    }

    #[test]
    fn bodies_that_cannot_run_are_refused_when_the_trigger_is_created() {
        use {Event::*, Timing::*};
        assert_eq!(code(prepared(Before, Insert, "SET NEW.name = 'x'")), 0);
        assert_eq!(code(prepared(After, Insert, "SET NEW.name = 'x'")), 1362);
        assert_eq!(code(prepared(Before, Update, "SET OLD.name = 'x'")), 1362);
        assert_eq!(code(prepared(Before, Delete, "SET NEW.name = 'x'")), 1363);
        assert_eq!(code(prepared(Before, Insert, "SET NEW.nope = 1")), 1054);
        assert_eq!(
            code(prepared(After, Insert, "DELETE FROM x WHERE a = OLD.id")),
            1363
        );
        assert_eq!(
            code(prepared(After, Delete, "INSERT INTO x VALUES (NEW.id)")),
            1363
        );
        assert_eq!(
            code(prepared(After, Delete, "DELETE FROM x WHERE a = OLD.id")),
            0
        );
        assert_eq!(code(prepared(After, Insert, "SELECT 1")), 1235);
        assert_eq!(
            code(prepared(After, Insert, "INSERT INTO x SELECT 1")),
            1235
        );
    }

    #[test]
    fn row_values_become_literals_that_bind_back_to_them() {
        let values = [
            Value::Null,
            Value::Int(-7),
            Value::UInt(u64::MAX),
            Value::Double(0.1),
            Value::Bytes(b"it's".to_vec()),
            Value::Bytes(vec![0xff, 0x00]),
        ];
        for value in values {
            let mut binder = Binder::without_columns(&[], "test");
            let bound = bind(&mut binder, &literal(&value)).unwrap();
            let Expr::Literal(back) = bound else {
                panic!("{value:?} is not a literal");
            };
            assert_eq!(
                crate::value::compare(&back, &value),
                (!value.is_null()).then_some(std::cmp::Ordering::Equal),
                "{value:?} came back as {back:?}"
            );
        }
    }
}
