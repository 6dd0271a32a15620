//! INSERT, REPLACE, UPDATE and DELETE, as key operations in the session's transaction.
//!
//! - Every statement sends its writes a full batch at a time (`Tx::send_when_full`), the
//!   last with its commit under autocommit, so a statement of a million rows is as many
//!   round trips of about a thousand operations each.
//! - INSERT's AUTO_INCREMENT values come from the
//!   catalog's reserve. `INSERT ... SELECT` runs its query first and inserts the rows it
//!   answers as VALUES rows. INSERT IGNORE and ON DUPLICATE KEY UPDATE first read the keys
//!   under an exclusive lock, by primary key and by each unique index (an operation the
//!   cluster refuses aborts the whole transaction, so a duplicate must be found before it
//!   is written); see `duplicates`.
//! - REPLACE writes (upserts) each row.
//! - UPDATE and DELETE find their rows like SELECT (`select::fetch`) under an exclusive
//!   lock, order and cut them (ORDER BY, LIMIT), then change them in the same
//!   transaction; an UPDATE that changes the primary key deletes the row and inserts it under its new key. Inside a transaction their
//!   writes go with its next batch when nothing can refuse them (`Tx::finish_writes`).

mod duplicates;

use std::sync::Arc;

use sqlparser::ast::{
    self, Assignment, AssignmentTarget, FromTable, OnInsert, SetExpr, TableObject,
};
use sqlparser::tokenizer::Location;

use kista_client::types::Value;
use kista_client::LockKind;

use crate::catalog::{Counter, SqlTable};
use crate::error::{SqlError, SqlResult};
use crate::expr::{bind, eval, Binder, Expr};
use crate::select::{self, split_name, SelectPlan};
use crate::session::{Outcome, Parsed, Session, Tx};
use crate::subquery::Correlation;
use crate::table_copy;
use crate::trigger::{self, Event, Firing, Timing};
use crate::value::{same_value, to_i64};
pub(crate) use duplicates::duplicate_message;
use duplicates::{insert_unless_duplicate, read_unique_keys, unique_indexes};

/// Makes `value` fit column `column` of `table` (NULL refused in NOT NULL columns).
pub(crate) fn fit(table: &SqlTable, column: usize, value: &Value) -> SqlResult<Value> {
    let definition = &table.schema().columns[column];
    if value.is_null() {
        if !definition.nullable {
            return Err(SqlError::not_null(&definition.name));
        }
        return Ok(Value::Null);
    }
    table.coerce(column, value)
}

pub fn insert(
    session: &mut Session,
    insert: &ast::Insert,
    placeholders: &[Location],
    params: &[Value],
) -> SqlResult<Outcome> {
    let (table, targets) = insert_target(session, insert)?;
    let given = match &insert.source {
        Some(source) => match source.body.as_ref() {
            SetExpr::Values(values) => {
                values_given(session, &table, &targets, values, placeholders, params)?
            }
            _ => selected_given(session, &table, &targets, source, placeholders, params)?,
        },
        None => set_given(session, &table, &insert.assignments, placeholders, params)?,
    };
    let mut prepared = prepare_insert(session, table, insert, given, placeholders)?;
    let outcome = session.transactional(|tx, session| {
        write_insert(tx, session, &mut prepared, params, &mut Firing::default())
    });
    let (affected, ignored) =
        outcome.map_err(|e| duplicate_message(e, &prepared.table, &prepared.rows))?;
    session.warn_duplicates(&prepared.table.name, ignored);
    if prepared.first_auto > 0 {
        session.last_insert_id = prepared.first_auto;
    }
    Ok(Outcome::Done {
        affected_rows: affected,
        last_insert_id: prepared.first_auto,
        info: String::new(),
    })
}

/// The table an INSERT writes and the columns it gives values for.
fn insert_target(
    session: &Session,
    insert: &ast::Insert,
) -> SqlResult<(Arc<SqlTable>, Vec<usize>)> {
    let TableObject::TableName(name) = &insert.table else {
        return Err(SqlError::not_supported("INSERT INTO TABLE FUNCTION"));
    };
    let (database, table_name) = split_name(session, name)?;
    let table = session.catalog.table(&database, &table_name)?;
    let targets = target_columns(&table, &insert.columns)?;
    Ok((table, targets))
}

/// An INSERT's rows made whole and what it does with duplicates: ready to write.
struct PreparedInsert {
    table: Arc<SqlTable>,
    rows: Vec<Vec<Value>>,
    /// The first AUTO_INCREMENT value the statement generated (0: none).
    first_auto: u64,
    /// ON DUPLICATE KEY UPDATE's assignments.
    duplicate_update: Option<Vec<(usize, Expr)>>,
    replace: bool,
    ignore: bool,
}

fn prepare_insert(
    session: &Session,
    table: Arc<SqlTable>,
    insert: &ast::Insert,
    given: Vec<GivenRow>,
    placeholders: &[Location],
) -> SqlResult<PreparedInsert> {
    let duplicate_update = match &insert.on {
        Some(OnInsert::DuplicateKeyUpdate(assignments)) => Some(bind_assignments(
            session,
            &table,
            assignments,
            placeholders,
            (Some(table.schema().columns.len()), None),
        )?),
        Some(_) => return Err(SqlError::not_supported("ON CONFLICT")),
        None => None,
    };
    let on_duplicate = (insert.replace_into, insert.ignore, duplicate_update);
    prepare_rows(session, table, (given, Given::AsWritten), on_duplicate)
}

/// Whether given values still need fitting to their columns.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Given {
    AsWritten,
    /// Fitted already (`load_data::Loader::convert` fits each to name its line).
    Fitted,
}

/// `given` made whole rows (defaults, AUTO_INCREMENT, hidden keys), with what the
/// statement does with duplicates: (REPLACE, IGNORE, ON DUPLICATE KEY UPDATE).
fn prepare_rows(
    session: &Session,
    table: Arc<SqlTable>,
    (given, form): (Vec<GivenRow>, Given),
    (replace, ignore, duplicate_update): (bool, bool, Option<Vec<(usize, Expr)>>),
) -> SqlResult<PreparedInsert> {
    if !table.triggers.is_empty() && (replace || ignore || duplicate_update.is_some()) {
        return Err(SqlError::not_supported(
            "REPLACE, INSERT IGNORE and ON DUPLICATE KEY UPDATE on a table with triggers",
        ));
    }
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(&[], &[], &variable);
    let mut rows = (given.into_iter().enumerate())
        .map(|(index, row)| complete_row(&table, row, form, &ctx).map_err(|e| e.at_row(index + 1)))
        .collect::<SqlResult<Vec<_>>>()?;
    let first_auto = number_auto_increment(session, &table, &mut rows)?;
    number_hidden_keys(session, &table, &mut rows)?;
    Ok(PreparedInsert {
        table,
        rows,
        first_auto,
        duplicate_update,
        replace,
        ignore,
    })
}

/// Rows given values for some columns, each fitted to its column already (LOAD DATA's,
/// `kista import`'s: `load_data::Loader::convert`), inserted as
/// `INSERT ... VALUES` inserts them: defaults, AUTO_INCREMENT, hidden keys, triggers,
/// CHECKs; a duplicate key fails the batch, or replaces (`replace`) or skips (`ignore`)
/// the row. In the session's transaction (or one of their own): (rows affected, ignored).
pub(crate) fn insert_given(
    session: &mut Session,
    table: Arc<SqlTable>,
    given: Vec<GivenRow>,
    (replace, ignore): (bool, bool),
) -> SqlResult<(u64, u64)> {
    let given = (given, Given::Fitted);
    let mut prepared = prepare_rows(session, table, given, (replace, ignore, None))?;
    let outcome = session.transactional(|tx, session| {
        write_insert(tx, session, &mut prepared, &[], &mut Firing::default())
    });
    outcome.map_err(|e| duplicate_message(e, &prepared.table, &prepared.rows))
}

/// Writes a prepared INSERT in `tx`, its rows' triggers firing: rows affected and ignored.
fn write_insert(
    tx: &mut Tx,
    session: &Session,
    prepared: &mut PreparedInsert,
    params: &[Value],
    firing: &mut Firing,
) -> SqlResult<(u64, u64)> {
    let table = prepared.table.clone();
    firing.statement(tx, &table, |tx, firing| {
        insert_firing_triggers(tx, session, (&table, prepared), params, firing)
    })
}

fn insert_firing_triggers(
    tx: &mut Tx,
    session: &Session,
    (table, prepared): (&SqlTable, &mut PreparedInsert),
    params: &[Value],
    firing: &mut Firing,
) -> SqlResult<(u64, u64)> {
    tx.wrote(table.table.id);
    let event = (Timing::Before, Event::Insert);
    for row in prepared.rows.iter_mut() {
        trigger::fire(tx, session, table, event, None, Some(row), firing)?;
    }
    if !table.checks.is_empty() {
        let variable = |name: &str| session.variable(name);
        let ctx = session.eval_context(params, &[], &variable);
        for row in &prepared.rows {
            table.checks.verify(row, &ctx)?;
        }
    }
    let rows = &prepared.rows;
    let (affected, ignored) = if !prepared.ignore && prepared.duplicate_update.is_none() {
        let variable = |name: &str| session.variable(name);
        let ctx = session.eval_context(params, &[], &variable);
        (insert_rows(tx, table, rows, prepared.replace, &ctx)?, 0)
    } else {
        let found = read_unique_keys(tx, table, rows)?;
        let variable = |name: &str| session.variable(name);
        let ctx = session.eval_context(params, &[], &variable);
        let update = prepared.duplicate_update.as_deref();
        let outcome = insert_unless_duplicate(tx, table, rows, &found, update, &ctx)?;
        tx.execute(true)?;
        (outcome.affected, outcome.ignored)
    };
    let event = (Timing::After, Event::Insert);
    for row in prepared.rows.iter_mut() {
        trigger::fire(tx, session, table, event, None, Some(row), firing)?;
    }
    Ok((affected, ignored))
}

/// Runs a write a trigger's body holds (its `NEW.col` and `OLD.col` replaced by values)
/// in the transaction of the statement that fired it.
pub(crate) fn write_from_trigger(
    tx: &mut Tx,
    session: &Session,
    parsed: &Parsed,
    firing: &mut Firing,
) -> SqlResult<()> {
    if let ast::Statement::Insert(insert) = &parsed.statement {
        let (table, targets) = insert_target(session, insert)?;
        let Some(SetExpr::Values(values)) = insert.source.as_deref().map(|q| q.body.as_ref())
        else {
            return Err(SqlError::not_supported(
                "INSERT without VALUES in a trigger",
            ));
        };
        let given = values_given(session, &table, &targets, values, &[], &[])?;
        let mut prepared = prepare_insert(session, table, insert, given, &[])?;
        write_insert(tx, session, &mut prepared, &[], firing)?;
        return Ok(());
    }
    let plan = bind_write(session, parsed)?
        .ok_or_else(|| SqlError::not_supported(format!("{} in a trigger", parsed.statement)))?;
    write_rows(tx, session, &plan, &[], firing)?;
    Ok(())
}

/// Inserts (or with REPLACE, writes) `rows`; a duplicate key fails the statement.
fn insert_rows(
    tx: &mut Tx,
    table: &SqlTable,
    rows: &[Vec<Value>],
    replace: bool,
    ctx: &crate::expr::EvalContext,
) -> SqlResult<u64> {
    let replaced = match replace && tx.recording_undo() {
        true => record_replaced_rows(tx, table, rows)?,
        false => Vec::new(),
    };
    for (n, row) in rows.iter().enumerate() {
        tx.wrote_row(table.table.id, || table.key_of(row));
        if replace {
            tx.transaction.write(&table.table, row)?;
        } else {
            tx.undo_insert(&table.table, || table.key_of(row))?;
            tx.transaction.insert(&table.table, row)?;
        }
        let old = replaced.get(n).and_then(Option::as_deref);
        table_copy::mirror(tx, table, (old, Some(row)), ctx)?;
        tx.send_when_full()?;
    }
    tx.execute(true)?;
    Ok(rows.len() as u64)
}

/// Under a savepoint, REPLACE first reads the rows it will overwrite (locked), so that
/// ROLLBACK TO can write them back, or delete the rows it adds.
/// Returns the rows replaced, in the order of `rows` (which a copying ALTER's mirror undoes
/// alike).
fn record_replaced_rows(
    tx: &mut Tx,
    table: &SqlTable,
    rows: &[Vec<Value>],
) -> SqlResult<Vec<Option<Vec<Value>>>> {
    let add = |tx: &mut Tx, row: &Vec<Value>| {
        let key = table.key_of(row);
        Ok(tx
            .transaction
            .read(&table.table, &key, LockKind::Exclusive)?)
    };
    let mut replaced = Vec::with_capacity(rows.len());
    tx.in_batches(rows, false, add, |tx, row, read, found| {
        let existing = found.row(read);
        replaced.push(existing.map(<[Value]>::to_vec));
        match existing {
            Some(existing) => tx.undo_change(&table.table, existing),
            None => tx.undo_insert(&table.table, || table.key_of(row)),
        }
    })?;
    Ok(replaced)
}

/// The columns an INSERT names (all SQL sees, in order, when it names none).
fn target_columns(table: &SqlTable, columns: &[ast::Ident]) -> SqlResult<Vec<usize>> {
    if columns.is_empty() {
        return Ok(table
            .visible_columns()
            .map(|(position, _)| position)
            .collect());
    }
    let mut targets = Vec::with_capacity(columns.len());
    for c in columns {
        let position = table
            .column_index(&c.value)
            .ok_or_else(|| SqlError::unknown_column(&c.value, "field list"))?;
        if targets.contains(&position) {
            let message = format!("Column '{}' specified twice", c.value);
            return Err(SqlError::new(1110, "42000", message));
        }
        targets.push(position);
    }
    Ok(targets)
}

/// The row of `INSERT ... SET column = value, ...`: a VALUES row of the columns it sets.
fn set_given(
    session: &Session,
    table: &SqlTable,
    assignments: &[Assignment],
    placeholders: &[Location],
    params: &[Value],
) -> SqlResult<Vec<GivenRow>> {
    let mut columns = Vec::with_capacity(assignments.len());
    let mut row = Vec::with_capacity(assignments.len());
    for assignment in assignments {
        let AssignmentTarget::ColumnName(name) = &assignment.target else {
            return Err(SqlError::not_supported("tuple assignment"));
        };
        let column = name.0.last().and_then(|p| p.as_ident()).cloned();
        columns.push(column.ok_or_else(|| SqlError::not_supported(format!("SET {name}")))?);
        row.push(assignment.value.clone());
    }
    let targets = target_columns(table, &columns)?;
    let values = ast::Values {
        explicit_row: false,
        rows: vec![row],
    };
    values_given(session, table, &targets, &values, placeholders, params)
}

/// A row as an INSERT gives it: a value for each column of the table it names (`None`:
/// not given, or `DEFAULT`).
/// A row's values for the columns a statement names (`None`: not given).
pub(crate) type GivenRow = Vec<Option<Value>>;

/// The rows of `INSERT ... VALUES`.
fn values_given(
    session: &Session,
    table: &SqlTable,
    targets: &[usize],
    values: &ast::Values,
    placeholders: &[Location],
    params: &[Value],
) -> SqlResult<Vec<GivenRow>> {
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(params, &[], &variable);
    let width = table.schema().columns.len();
    let mut rows = Vec::with_capacity(values.rows.len());
    for exprs in &values.rows {
        if exprs.len() != targets.len() {
            return Err(SqlError::column_count(targets.len(), exprs.len()));
        }
        let values = exprs.iter().map(|e| {
            if matches!(e, ast::Expr::Identifier(ident) if ident.value.eq_ignore_ascii_case("DEFAULT") && ident.quote_style.is_none())
            {
                return Ok(None);
            }
            let mut binder = Binder::without_columns(placeholders, "field list");
            let bound = bind(&mut binder, e)?;
            Ok(Some(eval(&bound, &[], &ctx)?))
        });
        rows.push(given_row(
            width,
            targets,
            values.collect::<SqlResult<Vec<_>>>()?,
        ));
    }
    Ok(rows)
}

/// A row of the table's width holding `values` at the `targets`' positions.
fn given_row(
    width: usize,
    targets: &[usize],
    values: impl IntoIterator<Item = Option<Value>>,
) -> GivenRow {
    let mut given: GivenRow = vec![None; width];
    for (&column, value) in targets.iter().zip(values) {
        given[column] = value;
    }
    given
}

/// The rows of `INSERT ... SELECT`: the query runs first, in the statement's
/// transaction when one is open (so `INSERT INTO t SELECT ... FROM t` reads `t` as it was
/// before the statement), and its rows are inserted as VALUES rows would be.
fn selected_given(
    session: &mut Session,
    table: &SqlTable,
    targets: &[usize],
    query: &ast::Query,
    placeholders: &[Location],
    params: &[Value],
) -> SqlResult<Vec<GivenRow>> {
    let Outcome::Rows { columns, rows } =
        select::union::execute(session, query, placeholders, params)?
    else {
        unreachable!("a query answers with rows");
    };
    if columns.len() != targets.len() {
        return Err(SqlError::column_count(targets.len(), columns.len()));
    }
    let width = table.schema().columns.len();
    let given = rows
        .into_iter()
        .map(|row| given_row(width, targets, row.into_iter().map(Some)));
    Ok(given.collect())
}

const _: () = assert!(
    size_of::<Option<Value>>() == size_of::<Value>(),
    "complete_row collects a row into its given buffer"
);

/// A given row made whole: each value fitted to its column, the columns not given set to
/// their defaults (a computed one evaluated in `ctx`); an AUTO_INCREMENT column given no
/// value (or NULL or 0) is left NULL for [`number_auto_increment`], and the hidden key
/// (never given) for [`number_hidden_keys`].
fn complete_row(
    table: &SqlTable,
    given: GivenRow,
    form: Given,
    ctx: &crate::expr::EvalContext,
) -> SqlResult<Vec<Value>> {
    if form == Given::Fitted && table.auto_increment.is_none() && given.iter().all(Option::is_some)
    {
        // Every column given a fitted value, none to number (a load's rows, most): nothing
        // to decide a column at a time, and a plain map collects in place.
        let mut row: Vec<Value> = (given.into_iter())
            .map(|value| value.unwrap_or(Value::Null))
            .collect();
        table.generate(&mut row);
        return Ok(row);
    }
    let schema = table.schema();
    // Columns whose computed default reads the row: evaluated once the rest is there.
    let mut computed_later = Vec::new();
    // Collected into the given row's own buffer (an `Option<Value>` and a `Value` are the
    // same size): a loaded row allocates no second list.
    let complete = |(column, value): (usize, Option<Value>)| {
        let definition = &schema.columns[column];
        let is_auto = table.auto_increment == Some(column);
        let value = match value {
            Some(v) if is_auto && (v.is_null() || to_i64(&v) == Some(0)) => None,
            other => other,
        };
        Ok(match value {
            Some(v) if form == Given::Fitted => v,
            Some(v) => fit(table, column, &v)?,
            None if is_auto || table.hidden_key == Some(column) => Value::Null,
            None => match (table.computed.default_of(column), &definition.default) {
                (Some(_), _) => {
                    computed_later.push(column);
                    Value::Null
                }
                (None, Some(default)) => default.clone(),
                (None, None) if definition.nullable => Value::Null,
                (None, None) => return Err(SqlError::no_default(&definition.name)),
            },
        })
    };
    let mut row = given
        .into_iter()
        .enumerate()
        .map(complete)
        .collect::<SqlResult<Vec<Value>>>()?;
    // In column order, as MySQL: a default may read the given values and the defaults of
    // the columns before it.
    for column in computed_later {
        if let Some(computed) = table.computed.default_of(column) {
            row[column] = fit(table, column, &eval(computed, &row, ctx)?)?;
        }
    }
    table.generate(&mut row);
    Ok(row)
}

/// Gives the rows' AUTO_INCREMENT column its next values where it is NULL, and has the
/// catalog's counter pass the highest value given. Returns the first value generated (0:
/// none).
fn number_auto_increment(
    session: &Session,
    table: &SqlTable,
    rows: &mut [Vec<Value>],
) -> SqlResult<u64> {
    let Some(column) = table.auto_increment else {
        return Ok(0);
    };
    let needed = rows.iter().filter(|row| row[column].is_null()).count() as u64;
    let first_auto = match needed {
        0 => 0,
        _ => session
            .catalog
            .next_values(table, Counter::AutoIncrement, needed)?,
    };
    let mut next = first_auto;
    let mut highest_given = None;
    for row in rows.iter_mut() {
        if row[column].is_null() {
            row[column] = fit(table, column, &Value::UInt(next))?;
            next += 1;
        } else if let Some(v) = to_i64(&row[column]).filter(|v| *v > 0) {
            highest_given = Some(highest_given.map_or(v as u64, |h: u64| h.max(v as u64)));
        }
    }
    if let Some(highest) = highest_given {
        session.catalog.saw_auto_increment_value(table, highest)?;
    }
    Ok(first_auto)
}

/// Gives each row the next value of the table's hidden key, if it has one.
fn number_hidden_keys(
    session: &Session,
    table: &SqlTable,
    rows: &mut [Vec<Value>],
) -> SqlResult<()> {
    let Some(column) = table.hidden_key.filter(|_| !rows.is_empty()) else {
        return Ok(());
    };
    let first = session
        .catalog
        .next_values(table, Counter::HiddenKey, rows.len() as u64)?;
    for (row, key) in rows.iter_mut().zip(first..) {
        row[column] = Value::UInt(key);
    }
    Ok(())
}

/// `SET col = expr, ...` bound over the table's row (and, for ON DUPLICATE KEY UPDATE,
/// the row that was to be inserted after it).
/// `correlation`: where correlated subqueries bind (an UPDATE's); `None` refuses them.
pub(crate) fn bind_assignments(
    session: &Session,
    table: &SqlTable,
    assignments: &[Assignment],
    placeholders: &[Location],
    (inserted_row_at, correlation): (Option<usize>, Option<&Correlation>),
) -> SqlResult<Vec<(usize, Expr)>> {
    let scope = table.scope(&table.name);
    assignments
        .iter()
        .map(|assignment| {
            let AssignmentTarget::ColumnName(name) = &assignment.target else {
                return Err(SqlError::not_supported("tuple assignment"));
            };
            let column_name = name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(|i| i.value.clone())
                .unwrap_or_default();
            let column = table
                .column_index(&column_name)
                .ok_or_else(|| SqlError::unknown_column(&column_name, "field list"))?;
            let mut binder = Binder {
                inserted_row_at,
                subqueries: Some(&session.subqueries),
                correlation,
                ..Binder::over(&scope, placeholders, "field list")
            };
            Ok((column, bind(&mut binder, &assignment.value)?))
        })
        .collect()
}

fn evaluate_assignments(
    table: &SqlTable,
    assignments: &[(usize, Expr)],
    row: &[Value],
    ctx: &crate::expr::EvalContext,
) -> SqlResult<Vec<(u16, Value)>> {
    let mut changes = assignments
        .iter()
        .map(|(column, expr)| Ok((*column as u16, fit(table, *column, &eval(expr, row, ctx)?)?)))
        .collect::<SqlResult<Vec<_>>>()?;
    stamp_updated(table, row, &mut changes, ctx)?;
    table.generated_changes(row, &mut changes);
    Ok(changes)
}

/// Adds to `changes` (of `row`) the table's ON UPDATE CURRENT_TIMESTAMP columns, when a
/// change makes a value differ and the statement does not set them itself (MySQL's rule:
/// an UPDATE that changes nothing leaves the timestamp).
fn stamp_updated(
    table: &SqlTable,
    row: &[Value],
    changes: &mut Vec<(u16, Value)>,
    ctx: &crate::expr::EvalContext,
) -> SqlResult<()> {
    if table.computed.on_update.is_empty() {
        return Ok(());
    }
    let differs = |(column, value): &(u16, Value)| {
        !crate::value::same_value(&row[usize::from(*column)], value)
    };
    if !changes.iter().any(differs) {
        return Ok(());
    }
    for (column, now) in &table.computed.on_update {
        if !changes.iter().any(|(c, _)| usize::from(*c) == *column) {
            changes.push((*column as u16, fit(table, *column, &eval(now, &[], ctx)?)?));
        }
    }
    Ok(())
}

/// A bound UPDATE or DELETE: what a prepared one keeps from one execution to the next
/// (binding cost more than the statement's key read).
pub struct WritePlan {
    table: Arc<SqlTable>,
    /// How the rows are found, ordered and cut.
    rows: SelectPlan,
    change: Change,
    /// Its writes may wait for the transaction's next batch (`Tx::finish_writes`).
    may_wait: bool,
}

/// What a bound write does to each row it finds.
enum Change {
    Update {
        /// `SET column = expr`, ...
        assignments: Vec<(usize, Expr)>,
        /// A primary key column changes: each row is deleted and inserted again.
        changes_key: bool,
    },
    Delete,
}

/// Binds an UPDATE or DELETE; `None` for any other statement.
pub fn bind_write(session: &Session, parsed: &Parsed) -> SqlResult<Option<WritePlan>> {
    let plan = match &parsed.statement {
        ast::Statement::Update {
            table,
            assignments,
            from,
            selection,
            limit,
            ..
        } => {
            if from.is_some() {
                return Err(SqlError::not_supported("UPDATE ... FROM"));
            }
            let bound = bind_update(
                session,
                table,
                assignments,
                selection.as_ref(),
                limit.as_ref(),
                parsed,
            );
            bound.map(Some)
        }
        ast::Statement::Delete(delete) => {
            bind_delete(session, delete, &parsed.placeholders).map(Some)
        }
        _ => Ok(None),
    }?;
    if let Some(plan) = &plan {
        refuse_reading_target(&parsed.statement, &plan.table)?;
    }
    Ok(plan)
}

/// MySQL's 1093: a subquery of an UPDATE or DELETE may not read the table it changes
/// (Kista would read it as it was before the statement; MySQL refuses the statement).
fn refuse_reading_target(statement: &ast::Statement, table: &SqlTable) -> SqlResult<()> {
    let mut named = 0;
    let _ = ast::visit_relations(statement, |name| {
        let last = name.0.last().and_then(|part| part.as_ident());
        if last.is_some_and(|ident| ident.value.eq_ignore_ascii_case(&table.name)) {
            named += 1;
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    if named > 1 {
        return Err(SqlError::new(
            1093,
            "HY000",
            format!(
                "You can't specify target table '{}' for update in FROM clause",
                table.name
            ),
        ));
    }
    Ok(())
}

/// UPDATE; `parsed` gives the placeholders and the ORDER BY the parser left out.
fn bind_update(
    session: &Session,
    target: &ast::TableWithJoins,
    assignments: &[Assignment],
    selection: Option<&ast::Expr>,
    limit: Option<&ast::Expr>,
    parsed: &Parsed,
) -> SqlResult<WritePlan> {
    let (placeholders, order_by) = (&parsed.placeholders, &parsed.update_order_by);
    if !target.joins.is_empty() {
        return Err(SqlError::not_supported("multi-table UPDATE"));
    }
    let (table, _) = select::table_of(session, &target.relation)?;
    // SET and WHERE may hold correlated subqueries: their values follow the row's.
    let correlation = Correlation::new(session, None, table.schema().columns.len());
    let correlated = (None, Some(&correlation));
    let assignments = bind_assignments(session, &table, assignments, placeholders, correlated)?;
    let rows = SelectPlan::for_write(
        &table,
        selection,
        (order_by, limit),
        placeholders,
        (Some(&session.subqueries), Some(&correlation)),
    )?
    .with_correlated(correlation.into_found());
    let changes_key = assignments
        .iter()
        .any(|(c, _)| table.schema().primary_key.contains(c));
    let may_wait = !changes_key && writes_may_wait(&table);
    Ok(WritePlan {
        table,
        rows,
        change: Change::Update {
            assignments,
            changes_key,
        },
        may_wait,
    })
}

/// Whether an UPDATE or DELETE of a row its transaction locked may wait for the next
/// batch (`Tx::finish_writes`): not when the cluster could refuse it for a reason the
/// statement must report, a unique key (1062) or a foreign key (1451, 1452).
fn writes_may_wait(table: &SqlTable) -> bool {
    unique_indexes(table).is_empty() && table.table.foreign_keys().is_empty()
}

fn bind_delete(
    session: &Session,
    delete: &ast::Delete,
    placeholders: &[Location],
) -> SqlResult<WritePlan> {
    let from = match &delete.from {
        FromTable::WithFromKeyword(from) | FromTable::WithoutKeyword(from) => from,
    };
    let [target] = from.as_slice() else {
        return Err(SqlError::not_supported("multi-table DELETE"));
    };
    if !delete.tables.is_empty() || delete.using.is_some() || !target.joins.is_empty() {
        return Err(SqlError::not_supported("multi-table DELETE"));
    }
    let (table, _) = select::table_of(session, &target.relation)?;
    let correlation = Correlation::new(session, None, table.schema().columns.len());
    let rows = SelectPlan::for_write(
        &table,
        delete.selection.as_ref(),
        (&delete.order_by, delete.limit.as_ref()),
        placeholders,
        (Some(&session.subqueries), Some(&correlation)),
    )?
    .with_correlated(correlation.into_found());
    let may_wait = writes_may_wait(&table);
    Ok(WritePlan {
        table,
        rows,
        change: Change::Delete,
        may_wait,
    })
}

/// Runs a bound UPDATE or DELETE with `params` for its `?`s.
pub fn run_write(session: &mut Session, plan: &WritePlan, params: &[Value]) -> SqlResult<Outcome> {
    let affected = session.transactional(|tx, session| {
        write_rows(tx, session, plan, params, &mut Firing::default())
    })?;
    Ok(match &plan.change {
        Change::Update { .. } => Outcome::Done {
            affected_rows: affected,
            last_insert_id: 0,
            info: format!("Rows matched: {affected}  Changed: {affected}  Warnings: 0"),
        },
        Change::Delete => Outcome::affected(affected),
    })
}

/// Runs a bound UPDATE or DELETE in `tx`, its rows' triggers firing: rows affected.
fn write_rows(
    tx: &mut Tx,
    session: &Session,
    plan: &WritePlan,
    params: &[Value],
    firing: &mut Firing,
) -> SqlResult<u64> {
    firing.statement(tx, &plan.table, |tx, firing| {
        write_found_rows(tx, session, plan, params, firing)
    })
}

fn write_found_rows(
    tx: &mut Tx,
    session: &Session,
    plan: &WritePlan,
    params: &[Value],
    firing: &mut Firing,
) -> SqlResult<u64> {
    let table = &plan.table;
    tx.wrote(table.table.id);
    // Each row, with its correlated subqueries' values after its columns.
    let rows = select::read_in(tx, session, &plan.rows, params, false)?;
    let mut rows = plan.rows.limited(session, rows, params)?;
    let affected = match &plan.change {
        Change::Update {
            assignments,
            changes_key,
        } => {
            let change = (assignments.as_slice(), *changes_key);
            update_rows(tx, session, table, &rows, change, params, firing)?
        }
        Change::Delete => {
            let width = table.schema().columns.len();
            rows.iter_mut().for_each(|row| row.truncate(width));
            delete_rows(tx, session, table, &rows, firing)?
        }
    };
    if affected > 0 {
        tx.finish_writes(plan.may_wait && table.triggers.is_empty())?;
    }
    Ok(affected)
}

fn update_rows(
    tx: &mut Tx,
    session: &Session,
    table: &SqlTable,
    rows: &[Vec<Value>],
    (assignments, changes_key): (&[(usize, Expr)], bool),
    params: &[Value],
    firing: &mut Firing,
) -> SqlResult<u64> {
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(params, &[], &variable);
    let mut affected = 0;
    let mut updated = Vec::new();
    for (index, read) in rows.iter().enumerate() {
        let mut changed: Vec<(u16, Value)> = evaluate_assignments(table, assignments, read, &ctx)
            .map_err(|e| e.at_row(index + 1))?
            .into_iter()
            .filter(|(c, v)| !same_value(&read[usize::from(*c)], v))
            .collect();
        // The row as stored, without its correlated subqueries' values.
        let row = &read[..table.schema().columns.len()];
        let mut changes_key = changes_key;
        if !table.triggers.is_empty() {
            let new_row = fire_before_update(tx, session, table, row, &changed, firing)?;
            changed = (0..row.len())
                .filter(|&c| !same_value(&row[c], &new_row[c]))
                .map(|c| (c as u16, new_row[c].clone()))
                .collect();
            let key = &table.schema().primary_key;
            changes_key = changed.iter().any(|(c, _)| key.contains(&usize::from(*c)));
            updated.push((row, new_row));
        }
        if changed.is_empty() {
            continue;
        }
        if !table.checks.is_empty() {
            table.checks.verify(&with_changes(row, &changed), &ctx)?;
        }
        affected += 1;
        let key = table.key_of(row);
        if changes_key {
            let new_row = with_changes(row, &changed);
            tx.wrote_row(table.table.id, || table.key_of(&new_row));
            tx.undo_change(&table.table, row)?;
            tx.undo_insert(&table.table, || table.key_of(&new_row))?;
            // Foreign keys referencing the row follow their ON UPDATE rule.
            tx.transaction
                .delete_moving_key(&table.table, &key, &new_row)?;
            table_copy::mirror(tx, table, (Some(row), Some(&new_row)), &ctx)?;
            tx.transaction.insert(&table.table, new_row)?;
        } else {
            tx.wrote_row(table.table.id, || key.clone());
            tx.undo_change(&table.table, row)?;
            if table.mirror.is_some() {
                let new_row = with_changes(row, &changed);
                table_copy::mirror(tx, table, (Some(row), Some(&new_row)), &ctx)?;
            }
            tx.transaction.update(&table.table, &key, changed)?;
        }
        tx.send_when_full()?;
    }
    for (row, mut new_row) in updated {
        trigger::fire(
            tx,
            session,
            table,
            (Timing::After, Event::Update),
            Some(row),
            Some(&mut new_row),
            firing,
        )?;
    }
    Ok(affected)
}

/// `row` with `changes` made.
pub(super) fn with_changes(row: &[Value], changes: &[(u16, Value)]) -> Vec<Value> {
    let mut changed = row.to_vec();
    for (column, value) in changes {
        changed[usize::from(*column)] = value.clone();
    }
    changed
}

/// The row an UPDATE writes: `row` with `changes`, as the BEFORE UPDATE triggers left it.
fn fire_before_update(
    tx: &mut Tx,
    session: &Session,
    table: &SqlTable,
    row: &[Value],
    changes: &[(u16, Value)],
    firing: &mut Firing,
) -> SqlResult<Vec<Value>> {
    let mut new_row = with_changes(row, changes);
    trigger::fire(
        tx,
        session,
        table,
        (Timing::Before, Event::Update),
        Some(row),
        Some(&mut new_row),
        firing,
    )?;
    Ok(new_row)
}

fn delete_rows(
    tx: &mut Tx,
    session: &Session,
    table: &SqlTable,
    rows: &[Vec<Value>],
    firing: &mut Firing,
) -> SqlResult<u64> {
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(&[], &[], &variable);
    for timing in [Timing::Before, Timing::After] {
        if timing == Timing::After {
            for row in rows {
                let key = table.key_of(row);
                tx.undo_change(&table.table, row)?;
                tx.transaction.delete(&table.table, &key)?;
                table_copy::mirror(tx, table, (Some(row), None), &ctx)?;
                tx.send_when_full()?;
            }
        }
        for row in rows {
            trigger::fire(
                tx,
                session,
                table,
                (timing, Event::Delete),
                Some(row),
                None,
                firing,
            )?;
        }
    }
    Ok(rows.len() as u64)
}
