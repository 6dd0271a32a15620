//! A result set on the wire: the column count and definitions, then each row in the text
//! or the binary protocol; the connection sends its end. Rows go out every
//! [`FLUSH_BYTES`], so a long result never piles up in the front end and a slow client
//! slows the scan feeding it instead.

use std::io::{Read, Write};

use kista_client::types::Value;

use crate::error::{SqlError, SqlResult};
use crate::protocol::binary::write_value;
use crate::protocol::column_type;
use crate::protocol::packet::PacketStream;
use crate::protocol::results::{self, ColumnDefinition};
use crate::protocol::wire::put_lenenc_int;
use crate::select::RowSink;

/// Bytes of rows queued before they are written to the client.
pub const FLUSH_BYTES: usize = 64 * 1024;

/// How the client takes a result set.
#[derive(Clone, Copy)]
pub struct ResultForm {
    /// Rows in the binary protocol (a prepared statement's), else in text.
    pub binary: bool,
    /// No EOF after the column definitions (CLIENT_DEPRECATE_EOF).
    pub deprecate_eof: bool,
    /// The status flags that EOF carries.
    pub status: u16,
}

/// Writes one result set's columns and rows to the client.
pub struct ResultWriter<'s, S> {
    stream: &'s mut PacketStream<S>,
    form: ResultForm,
    columns: Vec<ColumnDefinition>,
    started: bool,
}

impl<'s, S: Read + Write> ResultWriter<'s, S> {
    pub fn new(stream: &'s mut PacketStream<S>, form: ResultForm) -> Self {
        Self {
            stream,
            form,
            columns: Vec::new(),
            started: false,
        }
    }

    /// Writes what is queued once it is [`FLUSH_BYTES`] or more.
    fn flush_when_full(&mut self) -> SqlResult<()> {
        if self.stream.pending_bytes() < FLUSH_BYTES {
            return Ok(());
        }
        self.stream.flush().map_err(|error| {
            let message = format!("Got an error writing communication packets: {error}");
            SqlError::new(1160, "08S01", message)
        })
    }
}

impl<S: Read + Write> RowSink for ResultWriter<'_, S> {
    fn columns(&mut self, columns: Vec<ColumnDefinition>) -> SqlResult<()> {
        self.started = true;
        let mut out = Vec::with_capacity(64);
        put_lenenc_int(&mut out, columns.len() as u64);
        self.stream.write_payload(&out);
        for column in &columns {
            out.clear();
            column.encode(&mut out);
            self.stream.write_payload(&out);
        }
        if !self.form.deprecate_eof {
            out.clear();
            results::eof(&mut out, 0, self.form.status);
            self.stream.write_payload(&out);
        }
        self.columns = columns;
        self.flush_when_full()
    }

    fn row(&mut self, row: &[Value]) -> SqlResult<()> {
        let start = self.stream.begin_payload();
        let out = self.stream.out();
        if self.form.binary {
            write_binary_row(out, &self.columns, row);
        } else {
            write_text_row(out, &self.columns, row);
        }
        self.stream.finish_payload(start);
        self.flush_when_full()
    }

    fn started(&self) -> bool {
        self.started
    }
}

fn write_text_row(out: &mut Vec<u8>, columns: &[ColumnDefinition], row: &[Value]) {
    let mut text = Vec::new();
    for (column, value) in columns.iter().zip(row) {
        match value {
            Value::Null => out.push(results::TEXT_NULL),
            Value::Bytes(bytes) => crate::protocol::wire::put_lenenc_bytes(out, bytes),
            // A BIT column's value is its bytes; a YEAR has four digits (`0000`).
            _ if column.type_code == column_type::BIT => {
                let bytes = crate::sql_type::bit_bytes(value, column.length);
                crate::protocol::wire::put_lenenc_bytes(out, &bytes);
            }
            Value::Time(_) | Value::DateTime(_) | Value::Timestamp(_)
                if column.fraction_digits.is_some() =>
            {
                text.clear();
                let digits = column.fraction_digits.unwrap_or_default();
                crate::value::write_text_with_fraction(value, digits, &mut text);
                crate::protocol::wire::put_lenenc_bytes(out, &text);
            }
            Value::UInt(year) if column.type_code == column_type::YEAR => {
                text.clear();
                let _ = std::io::Write::write_fmt(&mut text, format_args!("{year:04}"));
                crate::protocol::wire::put_lenenc_bytes(out, &text);
            }
            other => {
                text.clear();
                crate::value::write_text(other, &mut text);
                crate::protocol::wire::put_lenenc_bytes(out, &text);
            }
        }
    }
}

fn write_binary_row(out: &mut Vec<u8>, columns: &[ColumnDefinition], row: &[Value]) {
    out.push(results::OK_HEADER);
    let bitmap_start = out.len();
    out.resize(bitmap_start + (columns.len() + 7 + 2) / 8, 0);
    for (position, (column, value)) in columns.iter().zip(row).enumerate() {
        if value.is_null() || column.type_code == column_type::NULL {
            let bit = position + 2;
            out[bitmap_start + bit / 8] |= 1 << (bit % 8);
        } else {
            write_value(out, column.into(), value);
        }
    }
}
