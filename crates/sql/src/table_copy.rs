//! The copying ALTER TABLE (planned by `ddl/alter/copy.rs`): a table's rows copied into a
//! new definition while the table serves reads and writes, then the new table put in its
//! place in one dictionary change.
//!
//! 1. The new table is created aside as `<table>/#copy` (a name SHOW TABLES never lists),
//!    with its new columns, indexes, constraints and triggers.
//! 2. The old table's definition gains [`CopyTarget`] in a change every front end must
//!    see before its next write (`refuses_older`), answered once the transactions open
//!    before it have ended. From then on each write of the old table is mirrored into the
//!    new one in the same transaction ([`mirror`]): the row written, converted, is
//!    upserted; a row removed is upserted and then deleted, so it is gone whether or not
//!    the copy had reached it.
//! 3. The rows are copied in batches of [`COPY_BATCH_ROWS`]: keys from a committed scan,
//!    each batch read again under a shared lock (the newest committed version; a writer
//!    holding a row is waited for) and upserted, converted, in one transaction. A
//!    mirrored write and the copy of the same row are ordered by the old row's lock, so
//!    whichever comes second carries the newer row.
//! 4. `Client::replace_table` gives the new table the old one's name. A front end still
//!    writing the old table is refused (241) and looks the name up again; a transaction
//!    that used the old table and goes on is refused too (1412), so none sees both. The
//!    old table is dropped.
//!
//! A failure before the switch (a value the new type cannot hold, a duplicate in a new
//! unique key, KILL QUERY) takes the mirror away and drops the new table: the old table is
//! as it was. Writes through the native API run no SQL and are not mirrored: a native
//! client must not write a table while an ALTER copies it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use kista_client::schema::TableSchema;
use kista_client::types::Value;
use kista_client::{ExecuteMode, LockKind, ScanSpec, Table};

use crate::catalog::{cluster_name, Catalog, SqlTable};
use crate::ddl::alter::CopyPlan;
use crate::error::{SqlError, SqlResult};
use crate::expr::{eval, EvalContext};
use crate::session::{Session, Tx};

/// Rows one copy transaction reads and writes: small enough that the locks it holds stall
/// a writer for a moment only.
pub const COPY_BATCH_ROWS: usize = 512;
/// Times a batch runs again after a temporary error (a deadlock with a writer, a lock
/// wait timeout, a node failure) before the ALTER fails.
const COPY_BATCH_ATTEMPTS: u32 = 20;
/// The pause before a batch runs again, times the attempt.
const COPY_RETRY_PAUSE: Duration = Duration::from_millis(10);
/// How often a long copy logs how far it got.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(10);
/// The new table's name while it is filled: under the old one's, hidden from SHOW TABLES.
const COPY_SUFFIX: &str = "#copy";

/// Kept in the old table's definition while the copy runs: where its writes are mirrored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CopyTarget {
    /// The new table's name in the database (`<table>/#copy`).
    pub table: String,
    /// For each column of the new table, the old table's column its value comes from.
    pub sources: Vec<Option<usize>>,
}

/// A table's writes, converted into the table its copying ALTER fills.
pub struct Mirror {
    target: Arc<SqlTable>,
    sources: Vec<Option<usize>>,
}

impl Mirror {
    /// The mirror of `copying`, a table of `database`. The copy gone by the name it had
    /// means the switch came between the two lookups: the statement looks again (241).
    pub fn open(catalog: &Catalog, database: &str, copying: &CopyTarget) -> SqlResult<Self> {
        let target = match catalog.table(database, &copying.table) {
            Err(error) if error.code == 1146 => {
                return Err(SqlError::definition_changed(&format!(
                    "the copy of a table being altered went ({})",
                    error.message
                )))
            }
            other => other?,
        };
        Ok(Mirror {
            target,
            sources: copying.sources.clone(),
        })
    }

    /// `row` of the old table as the new one holds it: each value converted as an insert
    /// converts it (strict: a value the new type cannot hold is an error), added columns
    /// filled as an insert that names no value fills them, generated columns computed.
    fn convert(&self, row: &[Value], ctx: &EvalContext) -> SqlResult<Vec<Value>> {
        let target = &self.target;
        let mut converted: Vec<Value> = (self.sources.iter().enumerate())
            .map(|(column, source)| match source {
                Some(source) => crate::dml::fit(target, column, &row[*source]),
                None => Ok(Value::Null),
            })
            .collect::<SqlResult<_>>()?;
        for (column, _) in (self.sources.iter().enumerate()).filter(|(_, s)| s.is_none()) {
            if target.prefix_source(column).is_none() {
                converted[column] = filled(target, column, &converted, ctx)?;
            }
        }
        target.generate(&mut converted);
        target.checks.verify(&converted, ctx)?;
        Ok(converted)
    }
}

/// The value an added column takes in a copied row: its computed default (which may read
/// the row), its DEFAULT, NULL, or MySQL's implicit value of a NOT NULL column.
fn filled(table: &SqlTable, column: usize, row: &[Value], ctx: &EvalContext) -> SqlResult<Value> {
    let definition = &table.schema().columns[column];
    if let Some(computed) = table.computed.default_of(column) {
        return crate::dml::fit(table, column, &eval(computed, row, ctx)?);
    }
    if let Some(default) = &definition.default {
        return Ok(default.clone());
    }
    if definition.nullable {
        return Ok(Value::Null);
    }
    crate::ddl::alter::implicit_value(definition.column_type, table.sql_type(column))
        .ok_or_else(|| SqlError::no_default(&definition.name))
}

/// Mirrors a write of `table` in `tx` into the table its copying ALTER fills, if one is
/// running: the row as it was (`old`: updated or deleted) and as it is (`new`: inserted
/// or updated).
pub(crate) fn mirror(
    tx: &mut Tx,
    table: &SqlTable,
    (old, new): (Option<&[Value]>, Option<&[Value]>),
    ctx: &EvalContext,
) -> SqlResult<()> {
    let Some(mirror) = &table.mirror else {
        return Ok(());
    };
    let target = &mirror.target;
    let old = old.map(|row| mirror.convert(row, ctx)).transpose()?;
    let new = new.map(|row| mirror.convert(row, ctx)).transpose()?;
    if let Some(old) = &old {
        // ROLLBACK TO puts back the row as the old table has it again.
        tx.undo_change(&target.table, old)?;
        let key = target.key_of(old);
        if new.as_ref().is_none_or(|new| target.key_of(new) != key) {
            // Written first: the delete finds the row whether or not it was copied.
            tx.transaction.write(&target.table, old.clone())?;
            tx.transaction.delete(&target.table, &key)?;
        }
    }
    if let Some(new) = new {
        if old.is_none() {
            tx.undo_insert(&target.table, || target.key_of(&new))?;
        }
        // Its reads of the new table (after the switch) see what it wrote.
        tx.wrote_row(target.table.id, || target.key_of(&new));
        tx.transaction.write(&target.table, new)?;
    }
    tx.wrote(target.table.id);
    tx.send_when_full()
}

/// Error 1205 (which clients retry) for what cannot run while `table` is copied: another
/// copying ALTER, TRUNCATE (whose deletes are not mirrored).
pub(crate) fn refuse_while_copied(table: &SqlTable, what: &str) -> SqlResult<()> {
    if table.extras.copying.is_none() {
        return Ok(());
    }
    Err(SqlError::new(
        1205,
        "HY000",
        format!(
            "Lock wait timeout exceeded; try restarting transaction ({what} waits: ALTER TABLE \
             is copying '{}'.'{}')",
            table.database, table.name
        ),
    ))
}

/// Runs `plan` on `table` (of the session's catalog): the copy, then the switch.
pub fn run(session: &Session, table: &SqlTable, plan: CopyPlan) -> SqlResult<()> {
    refuse_while_copied(table, "ALTER TABLE")?;
    let catalog = &session.catalog;
    let (database, name) = (table.database.as_str(), table.name.as_str());
    let copy_name = format!("{name}/{COPY_SUFFIX}");
    // A copy left by a front end that stopped in the middle of one.
    if let Ok(left) = catalog.table(database, &copy_name) {
        catalog.forget(database, &copy_name);
        catalog.client().drop_table(&left.table)?;
    }
    let schema = TableSchema {
        name: cluster_name(database, &copy_name),
        ..plan.schema
    };
    let created = catalog.client().create_table(schema, plan.indexes)?;
    let target = CopyTarget {
        table: copy_name.clone(),
        sources: plan.sources,
    };
    let copied = start_mirror(catalog, table, &target)
        .and_then(|mirrored| copy_and_switch(session, mirrored, &target, &plan.reason));
    copied.map_err(|mut error| {
        // Best effort: the copy's error is what the client hears.
        let _ = stop_mirror(catalog, database, name);
        catalog.forget(database, &copy_name);
        let _ = catalog.client().drop_table(&created);
        // A duplicate or a bad value is the table's, not the hidden copy's.
        let copy_cluster_name = cluster_name(database, &copy_name);
        error.message = (error.message).replace(&copy_cluster_name, &cluster_name(database, name));
        error
    })
}

/// Publishes `target` in `table`'s definition: the old table as every front end writes it
/// from now on (the answer waits for the transactions that wrote it without the mirror).
fn start_mirror(
    catalog: &Catalog,
    table: &SqlTable,
    target: &CopyTarget,
) -> SqlResult<Arc<SqlTable>> {
    let mut extras = table.extras.clone();
    extras.copying = Some(target.clone());
    catalog.alter_extras_drained(table, &extras)?;
    catalog.table(&table.database, &table.name)
}

/// Takes the mirror out of the old table's definition after a failed copy.
fn stop_mirror(catalog: &Catalog, database: &str, name: &str) -> SqlResult<()> {
    catalog.forget(database, name);
    let table = catalog.table(database, name)?;
    let mut extras = table.extras.clone();
    extras.copying = None;
    catalog.alter_extras(&table, &extras)
}

/// Copies `old`'s rows into its mirror's table, then puts that table in `old`'s place and
/// drops `old`.
fn copy_and_switch(
    session: &Session,
    old: Arc<SqlTable>,
    target: &CopyTarget,
    reason: &str,
) -> SqlResult<()> {
    let Some(mirror) = &old.mirror else {
        return Err(SqlError::new(
            1105,
            "HY000",
            format!("the copy of '{}' lost its mirror", old.name),
        ));
    };
    let started = Instant::now();
    let rows = copy_rows(session, &old, mirror)?;
    let copied = started.elapsed();
    let catalog = &session.catalog;
    let (database, name) = (old.database.as_str(), old.name.as_str());
    catalog.forget(database, name);
    catalog.forget(database, &target.table);
    let client = catalog.client();
    // The versions the mirror was opened at: a change since refuses the switch (241).
    client.replace_table(&old.table, &mirror.target.table, &target.sources)?;
    let switched = started.elapsed();
    catalog.superseded.record(old.table.id);
    catalog.forget_all();
    client.drop_table(&old.table)?;
    crate::log_line(
        kista_log::Level::Info,
        format_args!(
            "ALTER TABLE {database}.{name} copied {rows} rows ({reason}) in {:.1} s, \
         switched in {} ms, dropped the old table in {} ms",
            copied.as_secs_f64(),
            (switched - copied).as_millis(),
            (started.elapsed() - switched).as_millis()
        ),
    );
    Ok(())
}

/// Copies every row of `old` into `mirror`'s table, a batch per transaction: rows copied.
fn copy_rows(session: &Session, old: &SqlTable, mirror: &Mirror) -> SqlResult<u64> {
    let client = session.catalog.client();
    let keys = client.scan(&old.table, ScanSpec::full().columns(old.key_columns()))?;
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(&[], &[], &variable);
    let (mut copied, mut logged) = (0u64, Instant::now());
    let mut batch = Vec::with_capacity(COPY_BATCH_ROWS);
    let mut keys = keys.peekable();
    while let Some(key) = keys.next() {
        batch.push(key?);
        if batch.len() < COPY_BATCH_ROWS && keys.peek().is_some() {
            continue;
        }
        if let Some(process) = &session.process {
            process.check_killed()?;
        }
        copied += copy_batch_retried(client, (&old.table, mirror), &batch, &ctx)?;
        batch.clear();
        if logged.elapsed() >= PROGRESS_INTERVAL {
            logged = Instant::now();
            crate::log_line(
                kista_log::Level::Info,
                format_args!(
                    "ALTER TABLE {}.{}: {copied} rows copied",
                    old.database, old.name
                ),
            );
        }
    }
    Ok(copied)
}

/// [`copy_batch`], run again after a temporary error: its shared locks meet the writers'
/// exclusive ones in any order, so a deadlock that picks the copy is expected under load.
fn copy_batch_retried(
    client: &kista_client::Client,
    tables: (&Table, &Mirror),
    keys: &[Vec<Value>],
    ctx: &EvalContext,
) -> SqlResult<u64> {
    let mut attempt = 1;
    loop {
        match copy_batch(client, tables, keys, ctx) {
            Err(error) if error.is_temporary() && attempt < COPY_BATCH_ATTEMPTS => {
                std::thread::sleep(COPY_RETRY_PAUSE * attempt);
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// Copies the rows of `keys` (those still there) in one transaction: rows copied. A
/// batch that fails is rolled back at once, so that its locks go with it.
fn copy_batch(
    client: &kista_client::Client,
    (old, mirror): (&Table, &Mirror),
    keys: &[Vec<Value>],
    ctx: &EvalContext,
) -> SqlResult<u64> {
    let mut transaction = client.transaction();
    let copied = copy_in(&mut transaction, (old, mirror), keys, ctx);
    if copied.is_err() && transaction.has_sent() {
        // Best effort: the batch's error is what the client hears.
        let _ = (transaction.execute(ExecuteMode::Rollback)).map(|pending| pending.wait());
    }
    copied
}

fn copy_in(
    transaction: &mut kista_client::Transaction,
    (old, mirror): (&Table, &Mirror),
    keys: &[Vec<Value>],
    ctx: &EvalContext,
) -> SqlResult<u64> {
    let reads = (keys.iter())
        .map(|key| transaction.read(old, key, LockKind::Shared))
        .collect::<Result<Vec<_>, _>>()?;
    let read = transaction.execute(ExecuteMode::NoCommit)?.wait()?;
    let mut copied = 0;
    for op in reads {
        let Some(row) = read.row(op) else {
            continue;
        };
        transaction.write(&mirror.target.table, mirror.convert(row, ctx)?)?;
        copied += 1;
        if transaction.batch_is_full() {
            transaction.execute(ExecuteMode::NoCommit)?.wait()?;
        }
    }
    transaction.execute(ExecuteMode::Commit)?.wait()?;
    Ok(copied)
}
