//! Rows from delimited text files: `LOAD DATA [LOCAL] INFILE` and the loader `kista import`
//! runs on many threads. A file's records (`fields.rs`) become rows as `INSERT ... VALUES`
//! makes them (each field converted to its column's type as a quoted value would be,
//! defaults, AUTO_INCREMENT, hidden keys, triggers, CHECKs), inserted a batch per
//! transaction.
//!
//! Outside a transaction LOAD DATA commits every [`LOAD_BATCH_ROWS`] rows, as NDB's LOAD
//! DATA does: an error stops it with the batches before committed (the OK's message counts
//! them). Inside one, its rows are the transaction's.

use std::cell::RefCell;
use std::io::Read;
use std::sync::Arc;

use kista_client::types::Value;

use crate::accounts::privileges::needed;
use crate::catalog::SqlTable;
use crate::dml::{self, GivenRow};
use crate::error::{SqlError, SqlResult};
use crate::expr::Expr;
use crate::session::{Outcome, Session};

mod direct;
pub mod fields;
pub mod local;
mod pipeline;
pub mod statement;

pub use direct::{DirectLoader, EncodedRows};
use pipeline::Pipeline;

pub use fields::{FieldError, FieldFormat, Record, RecordReader};
pub use sqlparser::ast::Assignment;
pub use statement::{parse_assignments, LoadData};

/// Rows a LOAD DATA outside a transaction commits at once.
pub const LOAD_BATCH_ROWS: usize = 1000;

/// What a row whose key is taken does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnDuplicate {
    /// Error 1062.
    Error,
    /// It replaces the row that has the key (REPLACE).
    Replace,
    /// It is skipped, with a warning (IGNORE).
    Ignore,
}

/// A table to load, and where a record's fields go in order.
pub struct Loader {
    table: Arc<SqlTable>,
    targets: Vec<Target>,
    /// `SET column = expr`, bound to the table's row.
    set: Vec<(usize, Expr)>,
    on_duplicate: OnDuplicate,
}

/// Where one field goes.
#[derive(Clone)]
enum Target {
    Column(usize),
    /// A user variable (`@name`, lowercase) the SET expressions read.
    Variable(String),
}

impl Loader {
    /// The loader of `database.table` (the session's database when `None`), its fields
    /// going to `columns` (names; `@name` a user variable; every column SQL sees when
    /// `None`), then `set` computed.
    pub fn open(
        session: &Session,
        (database, table): (Option<&str>, &str),
        columns: Option<&[String]>,
        set: &[Assignment],
        on_duplicate: OnDuplicate,
    ) -> SqlResult<Self> {
        let database = match database {
            Some(database) => database.to_string(),
            None => session.database.clone().ok_or_else(SqlError::no_database)?,
        };
        let table = session.catalog.table(&database, table)?;
        let targets = match columns {
            Some(names) => names
                .iter()
                .map(|name| match name.strip_prefix('@') {
                    Some(_) => Ok(Target::Variable(name.to_lowercase())),
                    None => (table.column_index(name).map(Target::Column))
                        .ok_or_else(|| SqlError::unknown_column(name, "field list")),
                })
                .collect::<SqlResult<Vec<_>>>()?,
            None => (table.visible_columns())
                .map(|(column, _)| Target::Column(column))
                .collect(),
        };
        let set = dml::bind_assignments(session, &table, set, &[], (None, None))?;
        Ok(Loader {
            table,
            targets,
            set,
            on_duplicate,
        })
    }

    /// The target columns past a short record's `fields`: a NOT NULL one that has no
    /// default (nor AUTO_INCREMENT) gets its implicit default, as MySQL's lenient load
    /// gives it (the others get their defaults as any INSERT's missing columns).
    fn default_missing_leniently(&self, row: &mut GivenRow, fields: usize) {
        for target in self.targets.iter().skip(fields) {
            let Target::Column(column) = *target else {
                continue;
            };
            let definition = &self.table.schema().columns[column];
            let needs_one = !definition.nullable
                && definition.default.is_none()
                && self.table.auto_increment != Some(column)
                && self.table.computed.default_of(column).is_none();
            if needs_one && self.table.sql_type(column).is_none() {
                row[column] = crate::value::implicit_default(definition.column_type);
            }
        }
    }

    /// Whether a row whose key is taken is skipped (IGNORE).
    fn skips_taken_keys(&self) -> bool {
        self.on_duplicate == OnDuplicate::Ignore
    }

    /// The same loader, doing `on_duplicate` with a row whose key is taken.
    pub fn with_duplicates(&self, on_duplicate: OnDuplicate) -> Loader {
        Loader {
            table: self.table.clone(),
            targets: self.targets.clone(),
            set: self.set.clone(),
            on_duplicate,
        }
    }

    /// `record` as the row an INSERT naming the target columns would be given: each field
    /// converted to its column's type, a variable's set in `session`, then the SET
    /// columns computed (`Err`: why the record makes no row, naming its line and column).
    pub fn convert(&self, session: &Session, record: &Record) -> SqlResult<GivenRow> {
        self.convert_with(session, record, None)
    }

    /// [`Loader::convert`] as a lenient load takes a record (`LOAD DATA LOCAL`, or with
    /// IGNORE, as MySQL): a wrong number of fields, or a field its column cannot hold, is a
    /// warning added to `warnings`, and the row is made of the closest values
    /// ([`fit_leniently`]; missing fields are their columns' defaults).
    pub fn convert_leniently(
        &self,
        session: &Session,
        record: &Record,
        warnings: &mut Vec<SqlError>,
    ) -> SqlResult<GivenRow> {
        self.convert_with(session, record, Some(warnings))
    }

    fn convert_with(
        &self,
        session: &Session,
        record: &Record,
        mut warnings: Option<&mut Vec<SqlError>>,
    ) -> SqlResult<GivenRow> {
        if record.len() != self.targets.len() {
            let mismatch = field_count_mismatch(record, self.targets.len());
            match warnings.as_deref_mut() {
                Some(warnings) => warnings.push(mismatch),
                None => return Err(mismatch),
            }
        }
        let at_line = |error: SqlError| with_line(error, record.line);
        let mut row: GivenRow = vec![None; self.table.schema().columns.len()];
        FIELD_TEXT
            .with_borrow_mut(|text| {
                self.convert_fields(session, record, warnings.as_deref_mut(), &mut row, text)
            })
            .map_err(at_line)?;
        if warnings.is_some() {
            self.default_missing_leniently(&mut row, record.len());
        }
        if !self.set.is_empty() {
            let variable = |name: &str| session.variable(name);
            let ctx = session.eval_context(&[], &[], &variable);
            let given: Vec<Value> = row
                .iter()
                .map(|v| v.clone().unwrap_or(Value::Null))
                .collect();
            for (column, expr) in &self.set {
                let value = crate::expr::eval(expr, &given, &ctx).map_err(at_line)?;
                row[*column] = Some(dml::fit(&self.table, *column, &value).map_err(at_line)?);
            }
        }
        Ok(row)
    }

    /// Puts `record`'s fields into `row` (a column's) or the session (a variable's), each
    /// field's text going through `text` (errors without the line: the caller adds it).
    fn convert_fields(
        &self,
        session: &Session,
        record: &Record,
        mut warnings: Option<&mut Vec<SqlError>>,
        row: &mut GivenRow,
        text: &mut Value,
    ) -> SqlResult<()> {
        for (target, field) in self.targets.iter().zip(record.fields()) {
            let value = field_value(field, text);
            match target {
                Target::Column(column) => {
                    let fitted = match warnings.as_deref_mut() {
                        None => dml::fit(&self.table, *column, value)?,
                        Some(warnings) => {
                            let (fitted, warning) = fit_leniently(&self.table, *column, value)?;
                            warnings.extend(warning.map(|w| with_line(w, record.line)));
                            fitted
                        }
                    };
                    row[*column] = Some(fitted);
                }
                Target::Variable(name) => {
                    (session.variables.borrow_mut()).insert(name.clone(), value.clone());
                }
            }
        }
        Ok(())
    }

    /// Inserts `rows` in the session's transaction (outside one, in a transaction of their
    /// own): (rows inserted or replaced, rows skipped as duplicates).
    pub fn insert(&self, session: &mut Session, rows: Vec<GivenRow>) -> SqlResult<(u64, u64)> {
        let modes = (
            self.on_duplicate == OnDuplicate::Replace,
            self.on_duplicate == OnDuplicate::Ignore,
        );
        dml::insert_given(session, self.table.clone(), rows, modes)
    }
}

thread_local! {
    /// Each field's text on its way to its column's value: one buffer a thread for every
    /// record of a load (a number, date or time converted from it allocates nothing), where
    /// each record made its own.
    static FIELD_TEXT: RefCell<Value> = const { RefCell::new(Value::Null) };
}

/// The value a field is converted from: its text, copied into `text` (a buffer kept from
/// field to field, so a number, date or time allocates nothing), or NULL (`\N`).
fn field_value<'t>(field: Option<&[u8]>, text: &'t mut Value) -> &'t Value {
    let Some(bytes) = field else {
        return &Value::Null;
    };
    match &mut *text {
        Value::Bytes(buffer) => {
            buffer.clear();
            buffer.extend_from_slice(bytes);
        }
        other => *other = Value::Bytes(bytes.to_vec()),
    }
    text
}

/// `error` naming the line of the record it came from.
fn with_line(error: SqlError, line: u64) -> SqlError {
    let message = format!("{} at row {line}", error.message);
    SqlError::new(error.code, error.state, message)
}

/// Error (strict) or warning (lenient) 1261 or 1262: `record` has fewer or more fields
/// than the load has targets.
fn field_count_mismatch(record: &Record, targets: usize) -> SqlError {
    let (code, what) = if record.len() < targets {
        (1261, "doesn't contain data for all columns")
    } else {
        (
            1262,
            "was truncated; it contained more data than there were input columns",
        )
    };
    let fields = record.len();
    let message = format!(
        "Row {} {what} ({fields} fields, {targets} columns)",
        record.line
    );
    SqlError::new(code, "01000", message)
}

/// `value` fitted to `column` as a lenient load fits it: as [`dml::fit`] does where it
/// can; else the closest value the column holds (NULL in a NOT NULL column: its implicit
/// default, 0 or the empty string) and the warning that says so. Still an error where
/// there is no such value (a date that is not one; an ENUM, SET, YEAR or BIT column).
fn fit_leniently(
    table: &SqlTable,
    column: usize,
    value: &Value,
) -> SqlResult<(Value, Option<SqlError>)> {
    let refused = match dml::fit(table, column, value) {
        Ok(fitted) => return Ok((fitted, None)),
        Err(refused) => refused,
    };
    let definition = &table.schema().columns[column];
    if table.sql_type(column).is_some() {
        return Err(refused);
    }
    let closest = if value.is_null() {
        let set_to_default = SqlError::new(
            1263,
            "22004",
            format!(
                "Column set to default value; NULL supplied to NOT NULL column '{}'",
                definition.name
            ),
        );
        crate::value::implicit_default(definition.column_type).map(|v| (v, set_to_default))
    } else {
        crate::value::closest_fit(value, definition.column_type, &definition.name)
    };
    let (closest, warning) = closest.ok_or(refused)?;
    // The closest value is one the column holds: fitted as any other (a fraction rounded).
    Ok((dml::fit(table, column, &closest)?, Some(warning)))
}

/// Runs `load` with the file's bytes from `input`: the OK's counts, as MySQL's
/// (`Records: N  Deleted: 0  Skipped: N  Warnings: N`).
pub fn run(session: &mut Session, load: &LoadData, input: &mut dyn Read) -> SqlResult<Outcome> {
    let columns = load.columns.as_deref();
    let table = (load.database.as_deref(), load.table.as_str());
    let loader = Loader::open(session, table, columns, &load.set, load.on_duplicate)?;
    crate::accounts::check_table(session, needed::INSERT, &loader.table)?;
    // MySQL: with LOCAL the server cannot stop the client's sending, so a taken key is
    // skipped with a warning, as if IGNORE were given (not on a table with triggers, where
    // Kista cannot skip yet: there it is an error).
    let implied_ignore =
        load.local && load.on_duplicate == OnDuplicate::Error && loader.table.triggers.is_empty();
    let loader = if implied_ignore {
        loader.with_duplicates(OnDuplicate::Ignore)
    } else {
        loader
    };
    // MySQL: with LOCAL or IGNORE, a field that does not fit is a warning, not an error.
    let lenient = load.local || load.on_duplicate == OnDuplicate::Ignore;
    let mut reader = RecordReader::new(input, load.format.clone()).map_err(file_error)?;
    reader.skip_lines(load.ignore_lines).map_err(file_error)?;
    // Outside a transaction (each batch its own), a plain table's rows are encoded
    // straight from the fields, as `kista import` loads them, several batches in flight.
    let direct = (session.autocommit && session.transaction.is_none())
        .then(|| loader.direct().ok())
        .flatten();
    let mut batch = match direct {
        Some(direct) => Batch::Pipelined(Pipeline::new(direct), EncodedRows::default()),
        None => Batch::Values(Vec::with_capacity(LOAD_BATCH_ROWS)),
    };
    let mut counts = LoadCounts::default();
    let read = load_records(
        session,
        (&loader, lenient),
        &mut reader,
        &mut batch,
        &mut counts,
    );
    // The batches sent before a record the load stopped at are committed all the same,
    // as they would have been one at a time (an error of theirs comes first in the
    // file); the rows read since the last batch was sent are not.
    counts.add(batch.finish(session, &loader)?);
    read?;
    session.warn_duplicates(&loader.table.name, counts.skipped);
    Ok(Outcome::Done {
        affected_rows: counts.affected,
        last_insert_id: 0,
        info: format!(
            "Records: {}  Deleted: 0  Skipped: {}  Warnings: {}",
            counts.records,
            counts.skipped,
            counts.skipped + counts.warnings
        ),
    })
}

/// Reads `reader`'s records into `batch`, sending each full batch: stops at the first
/// record that makes no row (strict) or batch the cluster refuses.
fn load_records<'c>(
    session: &mut Session<'c>,
    (loader, lenient): (&Loader, bool),
    reader: &mut RecordReader<&mut dyn Read>,
    batch: &mut Batch<'c>,
    counts: &mut LoadCounts,
) -> SqlResult<()> {
    let mut record = Record::default();
    let mut warnings = Vec::new();
    while reader.next_record(&mut record).map_err(file_error)? {
        counts.records += 1;
        counts.add(batch.add(session, (loader, lenient), &record, &mut warnings)?);
        counts.warnings += warnings.len() as u64;
        for warning in warnings.drain(..) {
            session.warn(warning.code, warning.message);
        }
        if batch.len() == LOAD_BATCH_ROWS {
            counts.add(batch.send(session, loader)?);
        }
    }
    if batch.len() > 0 {
        counts.add(batch.send(session, loader)?);
    }
    Ok(())
}

/// LOAD DATA INFILE (not LOCAL): the file is read on the front end's host, by an account
/// with the FILE privilege. (LOCAL is the connection's: it asks the client for the file.)
pub fn run_server_file(session: &mut Session, load: &LoadData) -> SqlResult<Outcome> {
    if load.local {
        return Err(SqlError::not_supported(
            "LOAD DATA LOCAL in a prepared statement",
        ));
    }
    crate::accounts::check_file(session)?;
    let mut file = std::fs::File::open(&load.file).map_err(|error| {
        SqlError::new(
            29,
            "HY000",
            format!("File '{}' not found ({error})", load.file),
        )
    })?;
    run(session, load, &mut file)
}

/// A LOAD DATA's rows on their way to the cluster, [`LOAD_BATCH_ROWS`] at a time.
enum Batch<'c> {
    /// Encoded straight from the fields ([`Loader::direct`]), several batches in flight.
    Pipelined(Pipeline<'c>, EncodedRows),
    Values(Vec<GivenRow>),
}

impl<'c> Batch<'c> {
    fn len(&self) -> usize {
        match self {
            Batch::Pipelined(_, rows) => rows.len(),
            Batch::Values(rows) => rows.len(),
        }
    }

    /// Adds `record`'s row, encoded straight from its fields where it can be, else
    /// converted the general way ([`Loader::convert`]): a lenient load's record whose
    /// fields do not all fit their columns as they are takes the general way's warnings
    /// and closest values, and the load goes the general way from it on. The counts of
    /// what was committed meanwhile.
    fn add(
        &mut self,
        session: &mut Session<'c>,
        (loader, lenient): (&Loader, bool),
        record: &Record,
        warnings: &mut Vec<SqlError>,
    ) -> SqlResult<(u64, u64)> {
        let mut committed = (0, 0);
        if let Batch::Pipelined(pipeline, rows) = self {
            match pipeline.direct().encode(session, record, rows) {
                Ok(()) => return Ok(committed),
                Err(error) if !lenient => return Err(error),
                Err(_) => committed = self.switch_to_values(session, loader)?,
            }
        }
        let Batch::Values(rows) = self else {
            unreachable!("a pipelined batch switched to values above");
        };
        rows.push(match lenient {
            true => loader.convert_leniently(session, record, warnings)?,
            false => loader.convert(session, record)?,
        });
        Ok(committed)
    }

    /// Sends the batch's rows, emptying it: (rows affected, skipped) of what was committed
    /// meanwhile.
    fn send(&mut self, session: &mut Session<'c>, loader: &Loader) -> SqlResult<(u64, u64)> {
        match self {
            Batch::Pipelined(pipeline, rows) => {
                let full = std::mem::replace(rows, pipeline.buffer());
                pipeline.send(session, loader, full)
            }
            Batch::Values(rows) => loader.insert(session, std::mem::take(rows)),
        }
    }

    /// Waits for every batch sent to commit: (rows affected, skipped) meanwhile.
    fn finish(&mut self, session: &mut Session<'c>, loader: &Loader) -> SqlResult<(u64, u64)> {
        match self {
            Batch::Pipelined(pipeline, _) => pipeline.finish(session, loader),
            Batch::Values(_) => Ok((0, 0)),
        }
    }

    /// The general way from here on: the batches in flight committed (their counts), the
    /// rows encoded since as values.
    fn switch_to_values(
        &mut self,
        session: &mut Session<'c>,
        loader: &Loader,
    ) -> SqlResult<(u64, u64)> {
        let Batch::Pipelined(pipeline, rows) = self else {
            return Ok((0, 0));
        };
        let committed = pipeline.finish(session, loader)?;
        let mut values = pipeline.direct().given_rows(rows);
        values.reserve(LOAD_BATCH_ROWS);
        *self = Batch::Values(values);
        Ok(committed)
    }
}

#[derive(Default)]
struct LoadCounts {
    records: u64,
    affected: u64,
    skipped: u64,
    /// Fields a lenient load fitted to their columns, or records with a field too many or
    /// too few.
    warnings: u64,
}

impl LoadCounts {
    fn add(&mut self, (affected, skipped): (u64, u64)) {
        self.affected += affected;
        self.skipped += skipped;
    }
}

fn file_error(error: FieldError) -> SqlError {
    match error {
        FieldError::Io(error) => SqlError::new(29, "HY000", format!("File not read: {error}")),
        other => SqlError::new(1083, "42000", other.to_string()),
    }
}
