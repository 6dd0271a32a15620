//! A load's rows encoded straight from the file's fields into what the cluster is sent:
//! `kista import`'s way into a plain table (and a LOAD DATA's outside a
//! transaction, `mod.rs` `Batch`), where the general way ([`Loader::convert`]
//! then `dml::insert_given`) made each field a `Value` on the heap, each row two lists,
//! and each batch a statement's machinery, for rows nothing else looks at.
//!
//! Plain means the general way would only convert each field and insert the row: every
//! column given, in order, by a field, but an AUTO_INCREMENT column the file leaves out,
//! which takes the counter's next value (no SET, no variables, no hidden key or prefix
//! columns), no triggers or CHECKs, no copying ALTER to mirror to, only the storage
//! types, and a duplicate key an error or skipped. Each field goes through the
//! same conversion (`dml::fit`; a text column's length and character checks are the ones
//! `coerce` makes),
//! so the row's encoded values are the bytes `Transaction::insert` would send for it.
//! Unique indexes and foreign keys are the data nodes' to enforce, for either way.

use std::sync::Arc;

use kista_client::codec::{read_values, write_bytes_value, write_value, Reader, Writer};
use kista_client::types::Value;
use kista_client::{ClientError, ExecuteMode, Transaction};

use super::FIELD_TEXT;
use super::{field_count_mismatch, field_value, with_line, Loader, OnDuplicate, Record, Target};
use crate::catalog::{Counter, SqlTable};
use crate::dml;
use crate::dml::GivenRow;
use crate::error::{SqlError, SqlResult};
use crate::session::Session;
use crate::value::plain_text_value;

/// [`Loader`]'s direct way, for a plain table ([`Loader::direct`]).
pub struct DirectLoader {
    table: Arc<SqlTable>,
    /// Whether each column holds text, kept as its field's bytes.
    holds_text: Vec<bool>,
    /// The AUTO_INCREMENT column when the file leaves it out: each row takes the
    /// counter's next value (the record's fields are the other columns, in order).
    numbered: Option<usize>,
}

/// Rows encoded by [`DirectLoader::encode`]: each `codec::write_values`' bytes of one
/// row's values, one after another. Cleared and filled again, chunk after chunk.
#[derive(Default)]
pub struct EncodedRows {
    bytes: Vec<u8>,
    /// Where each row ends in `bytes`.
    ends: Vec<usize>,
    /// A row's values after its numbered column, until the number is taken.
    after_numbered: Vec<u8>,
}

impl EncodedRows {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn rows(&self) -> impl Iterator<Item = &[u8]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| &self.bytes[start..end])
    }
}

impl Loader {
    /// The direct way of this load, if its table is plain (see the module) and a taken key
    /// stops the load or skips the row (its caller's to do: the cluster refuses the
    /// batch); else why only the general way gives the same rows.
    pub fn direct(&self) -> Result<DirectLoader, &'static str> {
        let table = &self.table;
        let columns = table.schema().columns.len();
        let targeted =
            |column| (self.targets.iter()).any(|t| matches!(t, Target::Column(c) if *c == column));
        let numbered = table.auto_increment.filter(|&column| !targeted(column));
        let given = (0..columns).filter(|&column| Some(column) != numbered);
        let fields_are_columns = self.targets.len() == given.clone().count()
            && (self.targets.iter().zip(given))
                .all(|(target, column)| matches!(target, Target::Column(c) if *c == column));
        let why_not = [
            (
                !fields_are_columns,
                "its fields are not all its columns in order",
            ),
            (!self.set.is_empty(), "SET computes columns"),
            (
                self.on_duplicate == OnDuplicate::Replace,
                "taken keys replace the rows that hold them",
            ),
            (
                table.auto_increment.is_some() && numbered.is_none(),
                "the file gives its AUTO_INCREMENT column",
            ),
            (table.hidden_key.is_some(), "it has no primary key"),
            (!table.prefix_columns.is_empty(), "it has a prefix index"),
            (!table.triggers.is_empty(), "it has triggers"),
            (!table.checks.is_empty(), "it has CHECK constraints"),
            (table.mirror.is_some(), "a copying ALTER TABLE runs on it"),
            (
                (0..columns).any(|column| table.sql_type(column).is_some()),
                "a column is of an SQL type (ENUM, SET, BIT, YEAR, JSON, ...)",
            ),
        ];
        if let Some((_, reason)) = why_not.iter().find(|(applies, _)| *applies) {
            return Err(reason);
        }
        Ok(DirectLoader {
            table: table.clone(),
            holds_text: (table.schema().columns.iter())
                .map(|column| column.column_type.holds_strings())
                .collect(),
            numbered,
        })
    }
}

impl DirectLoader {
    /// Adds `record`'s row to `rows`, or the error [`Loader::convert`] gives for it
    /// (`rows` then as it was).
    pub fn encode(
        &self,
        session: &Session,
        record: &Record,
        rows: &mut EncodedRows,
    ) -> SqlResult<()> {
        let fields = self.holds_text.len() - usize::from(self.numbered.is_some());
        if record.len() != fields {
            return Err(field_count_mismatch(record, fields));
        }
        let start = rows.bytes.len();
        let encoded =
            FIELD_TEXT.with_borrow_mut(|text| self.encode_row(session, record, text, rows));
        match encoded {
            Ok(()) => {
                rows.ends.push(rows.bytes.len());
                Ok(())
            }
            Err(error) => {
                rows.bytes.truncate(start);
                Err(with_line(error, record.line))
            }
        }
    }

    /// `record`'s row appended to `rows.bytes`: its fields, and the numbered column's next
    /// value, taken once every field converted (a record refused takes none, as in the
    /// general way, which numbers the rows it made).
    fn encode_row(
        &self,
        session: &Session,
        record: &Record,
        text: &mut Value,
        rows: &mut EncodedRows,
    ) -> SqlResult<()> {
        let columns = self.holds_text.len();
        Writer(&mut rows.bytes).u32(columns as u32);
        let Some(numbered) = self.numbered else {
            return self.encode_fields(record.fields().enumerate(), text, &mut rows.bytes);
        };
        let mut fields = record.fields();
        let before = (0..numbered).zip(fields.by_ref());
        self.encode_fields(before, text, &mut rows.bytes)?;
        rows.after_numbered.clear();
        let after = (numbered + 1..columns).zip(fields);
        self.encode_fields(after, text, &mut rows.after_numbered)?;
        let next = (session.catalog).next_values(&self.table, Counter::AutoIncrement, 1)?;
        let number = dml::fit(&self.table, numbered, &Value::UInt(next))?;
        write_value(&mut Writer(&mut rows.bytes), &number);
        rows.bytes.extend_from_slice(&rows.after_numbered);
        Ok(())
    }

    /// Each field as its column's value: a text column's bytes as they are (checked as
    /// `coerce` checks them), a number or datetime in a plain form as `plain_text_value`
    /// reads it, any other through `dml::fit` of its text (in `text`) or NULL.
    fn encode_fields<'r>(
        &self,
        fields: impl Iterator<Item = (usize, Option<&'r [u8]>)>,
        text: &mut Value,
        bytes: &mut Vec<u8>,
    ) -> SqlResult<()> {
        let mut out = Writer(bytes);
        let definitions = &self.table.schema().columns;
        for (column, field) in fields {
            let definition = &definitions[column];
            match field {
                Some(bytes) if self.holds_text[column] => {
                    crate::value::check_text(definition.column_type, bytes, &definition.name)?;
                    write_bytes_value(&mut out, bytes);
                }
                _ => {
                    // A plain number or datetime (most fields of a data file) is read
                    // without `fit`'s general parsers; the same value either way.
                    let plain =
                        field.and_then(|bytes| plain_text_value(bytes, definition.column_type));
                    match plain {
                        Some(value) => write_value(&mut out, &value),
                        None => {
                            let value = field_value(field, text);
                            write_value(&mut out, &dml::fit(&self.table, column, value)?);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Inserts `rows` in the session's transaction (outside one, in a transaction of
    /// their own), as [`Loader::insert`] inserts the same rows converted: rows inserted,
    /// or the same error (a taken key named as that names it).
    pub fn insert(&self, session: &mut Session, rows: &EncodedRows) -> SqlResult<u64> {
        let table = &self.table;
        let inserted = session.transactional(|tx, _| {
            tx.wrote(table.table.id);
            for row in rows.rows() {
                tx.wrote_row(table.table.id, || self.key_of(row));
                tx.undo_insert(&table.table, || self.key_of(row))?;
                tx.transaction.insert_encoded(&table.table, row)?;
                tx.send_when_full()?;
            }
            tx.execute(true)?;
            Ok(rows.len() as u64)
        });
        inserted.map_err(|error| self.refused(error, rows))
    }

    /// `rows` added to `transaction` as inserts, full batches sent on the way (not
    /// committed; the caller executes the rest).
    pub(super) fn add_inserts(
        &self,
        transaction: &mut Transaction,
        rows: &EncodedRows,
    ) -> Result<(), ClientError> {
        for row in rows.rows() {
            transaction.insert_encoded(&self.table.table, row)?;
            if transaction.batch_is_full() {
                transaction.execute(ExecuteMode::NoCommit)?.wait()?;
            }
        }
        Ok(())
    }

    /// `error`, which the cluster gave for `rows`, as [`Loader::insert`] gives it: a taken
    /// key named with its value.
    pub(super) fn refused(&self, error: SqlError, rows: &EncodedRows) -> SqlError {
        match error.code {
            1062 => dml::duplicate_message(error, &self.table, &self.decode(rows)),
            _ => error,
        }
    }

    /// The rows as the general way takes them ([`Loader::insert`]).
    pub(super) fn given_rows(&self, rows: &EncodedRows) -> Vec<GivenRow> {
        (rows.rows())
            .map(|row| values_of(row).into_iter().map(Some).collect())
            .collect()
    }

    /// The rows' values (to name a taken key).
    fn decode(&self, rows: &EncodedRows) -> Vec<Vec<Value>> {
        rows.rows().map(values_of).collect()
    }

    /// The primary key of an encoded row, for a transaction that remembers what it wrote
    /// (a load in an open transaction; rare).
    fn key_of(&self, row: &[u8]) -> Vec<Value> {
        self.table.key_of(&values_of(row))
    }
}

/// The values of a row [`DirectLoader::encode`] encoded.
fn values_of(row: &[u8]) -> Vec<Value> {
    read_values(&mut Reader::new(row)).expect("encoded by `encode`")
}
