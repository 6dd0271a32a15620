//! Prepared point reads answered from the client's receive thread.
//!
//! A prepared `SELECT columns FROM t WHERE pk = ?` under autocommit is most of what
//! key-value users send (sysbench's `oltp_point_select`). On the ordinary path the
//! connection's thread sends the read, sleeps until the answer arrives, wakes, and writes
//! it. Here the thread sends the read with a callback and goes back to reading the client;
//! the receive thread that gets the row writes the answer itself, so a query costs one
//! sleep and wake of the connection thread instead of two. The bytes of the answer up to
//! the row are prepared once per statement.
//!
//! The connection thread handles nothing else until the answer has gone
//! ([`Responder::wait_idle`]), so answers leave in order even if a client sends its next
//! command early. The receive thread never blocks on a client: it writes without waiting,
//! and a client too slow to take the whole answer gets the rest from a thread of its own.

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use kista_client::types::Value;
use kista_client::{Client, ClientError, ExecuteMode, Executed, LockKind};

use crate::catalog::SqlTable;
use crate::error::SqlError;
use crate::expr::Expr;
use crate::protocol::binary::{write_value, ValueShape};
use crate::protocol::results::{self, ColumnDefinition};
use crate::protocol::status;
use crate::protocol::wire::put_lenenc_int;
use crate::value::fit_exactly;

/// A bound point read: which row (key expressions over the parameters), which columns,
/// and how the answer starts.
pub struct PointRead {
    table: Arc<SqlTable>,
    key: Vec<Expr>,
    read_columns: Vec<u16>,
    /// Each output column's position among `read_columns`.
    outputs: Vec<usize>,
    /// Each output column's shape, for its binary value.
    shapes: Vec<ValueShape>,
    /// The answer's packets before the row (column count, definitions, and the EOF of
    /// clients without `DEPRECATE_EOF`), numbered from 1, and the next packet's number:
    /// `[deprecate_eof as usize]`.
    headers: [(Vec<u8>, u8); 2],
}

/// Appends one packet numbered `*sequence` (then counts on) with the body `body` writes.
fn put_packet(out: &mut Vec<u8>, sequence: &mut u8, body: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&[0, 0, 0, *sequence]);
    *sequence = sequence.wrapping_add(1);
    body(out);
    let length = (out.len() - start - 4) as u32;
    out[start..start + 3].copy_from_slice(&length.to_le_bytes()[..3]);
}

/// The packets of a result set before its rows, numbered from 1; returns the next number.
fn result_header(columns: &[ColumnDefinition], deprecate_eof: bool, out: &mut Vec<u8>) -> u8 {
    let mut sequence = 1;
    put_packet(out, &mut sequence, |o| {
        put_lenenc_int(o, columns.len() as u64)
    });
    for column in columns {
        put_packet(out, &mut sequence, |o| column.encode(o));
    }
    if !deprecate_eof {
        put_packet(out, &mut sequence, |o| {
            results::eof(o, 0, status::AUTOCOMMIT)
        });
    }
    sequence
}

impl PointRead {
    pub fn new(
        table: Arc<SqlTable>,
        key: Vec<Expr>,
        output_columns: &[usize],
        columns: Vec<ColumnDefinition>,
    ) -> Option<Self> {
        if !key
            .iter()
            .all(|e| matches!(e, Expr::Param(_) | Expr::Literal(_)))
        {
            return None;
        }
        let mut read_columns: Vec<u16> = output_columns.iter().map(|&c| c as u16).collect();
        read_columns.sort_unstable();
        read_columns.dedup();
        let outputs = output_columns
            .iter()
            .map(|&c| {
                read_columns
                    .iter()
                    .position(|&r| usize::from(r) == c)
                    .unwrap_or(0)
            })
            .collect();
        let headers = [false, true].map(|deprecate_eof| {
            let mut header = Vec::new();
            let next = result_header(&columns, deprecate_eof, &mut header);
            (header, next)
        });
        Some(Self {
            table,
            key,
            read_columns,
            outputs,
            shapes: columns.iter().map(ValueShape::from).collect(),
            headers,
        })
    }

    /// The row's key from the parameters; `None` when a value cannot be a key (the
    /// ordinary path then answers as MySQL compares).
    pub fn key_values(&self, params: &[Value]) -> Option<Vec<Value>> {
        let schema = self.table.schema();
        self.key
            .iter()
            .zip(&schema.primary_key)
            .map(|(expr, &column)| {
                let value = match expr {
                    Expr::Param(n) => params.get(*n)?,
                    Expr::Literal(v) => v,
                    _ => return None,
                };
                fit_exactly(value, schema.columns[column].column_type)
            })
            .collect()
    }

    /// Sends the read; `responder` answers the client when the row arrives. An error
    /// here means nothing was sent and no answer will come from the callback.
    pub fn send(
        self: &Arc<Self>,
        client: &Client,
        key: &[Value],
        responder: Arc<Responder>,
        capabilities: u32,
    ) -> Result<(), ClientError> {
        let mut transaction = client.transaction();
        transaction.read_columns(
            &self.table.table,
            key,
            LockKind::Committed,
            self.read_columns.clone(),
        )?;
        let read = Arc::clone(self);
        responder.begin();
        let answering = Arc::clone(&responder);
        let sent = transaction.execute_then(ExecuteMode::Commit, move |result| {
            // The table changed or went (241, 723): this answer is the error, and the
            // connection looks its tables up again before its next command.
            if matches!(&result, Err(error) if SqlError::is_stale_schema(error.code())) {
                answering.stale_schema.store(true, Ordering::Release);
            }
            if let Ok(executed) = &result {
                let found = executed.rows.first().is_some_and(Option::is_some);
                answering
                    .answered_rows
                    .store(u64::from(found), Ordering::Release);
            }
            let answer = read.answer(result, capabilities);
            answering.write(answer);
        });
        if sent.is_err() {
            responder.finish();
        }
        sent
    }

    /// The whole answer to the execute command: a result set of the row (or of none), or
    /// the error; packets numbered from 1.
    fn answer(&self, result: Result<Executed, ClientError>, capabilities: u32) -> Vec<u8> {
        let executed = match result {
            Ok(executed) => executed,
            Err(error) => {
                let error = SqlError::from_cluster(&error);
                let mut out = Vec::with_capacity(64 + error.message.len());
                put_packet(&mut out, &mut 1, |o| {
                    results::error(o, error.code, error.state, &error.message)
                });
                return out;
            }
        };
        let deprecate_eof = capabilities & crate::protocol::capability::DEPRECATE_EOF != 0;
        let (header, mut sequence) = &self.headers[usize::from(deprecate_eof)];
        let mut out = Vec::with_capacity(header.len() + 128);
        out.extend_from_slice(header);
        let columns = self.shapes.len();
        if let Some(row) = executed.rows.first().and_then(|r| r.as_deref()) {
            put_packet(&mut out, &mut sequence, |o| {
                o.push(results::OK_HEADER);
                let bitmap = o.len();
                o.resize(bitmap + (columns + 7 + 2) / 8, 0);
                for (position, (&source, &shape)) in
                    self.outputs.iter().zip(&self.shapes).enumerate()
                {
                    match row.get(source) {
                        Some(value) if !value.is_null() => write_value(o, shape, value),
                        _ => o[bitmap + (position + 2) / 8] |= 1 << ((position + 2) % 8),
                    }
                }
            });
        }
        put_packet(&mut out, &mut sequence, |o| {
            if deprecate_eof {
                results::ok(o, true, 0, 0, status::AUTOCOMMIT, 0, "")
            } else {
                results::eof(o, 0, status::AUTOCOMMIT)
            }
        });
        out
    }
}

/// Writes answers prepared off the connection's thread, and tells that thread when the
/// last one has gone.
pub struct Responder {
    stream: TcpStream,
    busy: Mutex<bool>,
    idle: Condvar,
    stale_schema: AtomicBool,
    /// Rows the last answered read found (0 or 1; [`NO_ROWS_COUNTED`]: none since the
    /// last look), for FOUND_ROWS().
    answered_rows: AtomicU64,
}

/// No read answered since the connection last looked.
const NO_ROWS_COUNTED: u64 = u64::MAX;

impl Responder {
    pub fn new(stream: TcpStream) -> Arc<Self> {
        Arc::new(Self {
            stream,
            busy: Mutex::new(false),
            idle: Condvar::new(),
            stale_schema: AtomicBool::new(false),
            answered_rows: AtomicU64::new(NO_ROWS_COUNTED),
        })
    }

    fn begin(&self) {
        *self.busy.lock().unwrap_or_else(PoisonError::into_inner) = true;
    }

    fn finish(&self) {
        *self.busy.lock().unwrap_or_else(PoisonError::into_inner) = false;
        self.idle.notify_all();
    }

    /// How many rows the last read answered since the last call found (FOUND_ROWS()).
    pub fn take_answered_rows(&self) -> Option<u64> {
        Some(self.answered_rows.swap(NO_ROWS_COUNTED, Ordering::AcqRel))
            .filter(|&rows| rows != NO_ROWS_COUNTED)
    }

    /// Whether an answer since the last call found a table changed (error 241).
    pub fn take_stale_schema(&self) -> bool {
        self.stale_schema.swap(false, Ordering::AcqRel)
    }

    /// Blocks until no answer is on its way.
    pub fn wait_idle(&self) {
        let mut busy = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        while *busy {
            busy = self.idle.wait(busy).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Writes `answer` without blocking the calling (receive) thread; what the socket does
    /// not take at once is written by a thread of its own.
    fn write(self: Arc<Self>, answer: Vec<u8>) {
        let sent = send_without_waiting(&self.stream, &answer);
        match sent {
            Ok(sent) if sent == answer.len() => self.finish(),
            Ok(sent) => {
                let rest = answer[sent..].to_vec();
                let responder = Arc::clone(&self);
                let spawned = std::thread::Builder::new()
                    .name("sql-slow-client".into())
                    .spawn(move || {
                        if (&responder.stream).write_all(&rest).is_err() {
                            let _ = responder.stream.shutdown(Shutdown::Both);
                        }
                        responder.finish();
                    });
                if spawned.is_err() {
                    let _ = self.stream.shutdown(Shutdown::Both);
                    self.finish();
                }
            }
            Err(_) => {
                // The client is gone: its connection's thread sees the closed socket.
                let _ = self.stream.shutdown(Shutdown::Both);
                self.finish();
            }
        }
    }
}

/// Sends what the socket's buffer takes now: `Ok(bytes sent)`, possibly fewer than all.
fn send_without_waiting(stream: &TcpStream, bytes: &[u8]) -> std::io::Result<usize> {
    let mut sent = 0;
    while sent < bytes.len() {
        let rest = &bytes[sent..];
        // SAFETY: `rest` is valid for `rest.len()` bytes and the descriptor stays open while
        // `stream` is borrowed; `send` only reads the buffer.
        let result = unsafe {
            libc::send(
                stream.as_raw_fd(),
                rest.as_ptr().cast(),
                rest.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if result < 0 {
            let error = std::io::Error::last_os_error();
            match error.kind() {
                std::io::ErrorKind::Interrupted => continue,
                std::io::ErrorKind::WouldBlock => return Ok(sent),
                _ => return Err(error),
            }
        }
        sent += result as usize;
    }
    Ok(sent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    #[test]
    fn an_answer_larger_than_the_socket_takes_is_finished_by_a_thread_of_its_own() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let writer = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut reader, _) = listener.accept().unwrap();
        let responder = Responder::new(writer);
        // Far more than the kernel buffers while nobody reads.
        let answer: Vec<u8> = (0..8 << 20).map(|i| i as u8).collect();
        responder.begin();
        Arc::clone(&responder).write(answer.clone());
        let mut received = vec![0; answer.len()];
        reader.read_exact(&mut received).unwrap();
        responder.wait_idle();
        assert_eq!(received, answer);
    }
}
