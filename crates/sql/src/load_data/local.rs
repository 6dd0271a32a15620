//! LOAD DATA LOCAL: the file is the client's. The server names it in a packet that begins
//! with 0xFB; the client sends its bytes in packets and an empty packet after the last.
//! The load reads them as it goes ([`LocalFile`]), so a file of any size passes through
//! one packet's worth of memory.

use std::io::{self, Read, Write};

use crate::error::{SqlError, SqlResult};
use crate::protocol::packet::PacketStream;
use crate::session::{Outcome, Session};

use super::LoadData;

/// Runs `load` (LOCAL) with the file the client sends over `stream`.
pub fn run<S: Read + Write>(
    session: &mut Session,
    stream: &mut PacketStream<S>,
    load: &LoadData,
) -> SqlResult<Outcome> {
    session.warnings.get_mut().clear();
    let mut request = vec![0xFB];
    request.extend_from_slice(load.file.as_bytes());
    stream.write_payload(&request);
    stream
        .flush()
        .map_err(|error| SqlError::new(2013, "HY000", format!("Lost connection: {error}")))?;
    let mut file = LocalFile {
        stream,
        payload: Vec::new(),
        at: 0,
        ended: false,
    };
    let outcome = super::run(session, load, &mut file);
    // The client sends its whole file whatever the load made of it: what is left is read
    // (and dropped) before the answer.
    let drained = file.drain();
    match (outcome, drained) {
        (Ok(_), Err(error)) => Err(SqlError::new(
            2013,
            "HY000",
            format!("Lost connection: {error}"),
        )),
        (outcome, _) => outcome,
    }
}

/// The client's file, read from its packets as the load asks for bytes.
struct LocalFile<'s, S> {
    stream: &'s mut PacketStream<S>,
    payload: Vec<u8>,
    at: usize,
    /// The empty packet came.
    ended: bool,
}

impl<S: Read + Write> LocalFile<'_, S> {
    fn drain(&mut self) -> io::Result<()> {
        let mut scratch = [0u8; 64 * 1024];
        while self.read(&mut scratch)? > 0 {}
        Ok(())
    }
}

impl<S: Read + Write> Read for LocalFile<'_, S> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        while self.at == self.payload.len() {
            if self.ended {
                return Ok(0);
            }
            match self.stream.read_payload(&mut self.payload) {
                Ok(true) => {
                    self.at = 0;
                    self.ended = self.payload.is_empty();
                }
                Ok(false) => {
                    self.ended = true;
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the client closed the connection while sending its file",
                    ));
                }
                Err(error) => {
                    self.ended = true;
                    return Err(io::Error::other(error.to_string()));
                }
            }
        }
        let count = buffer.len().min(self.payload.len() - self.at);
        buffer[..count].copy_from_slice(&self.payload[self.at..self.at + count]);
        self.at += count;
        Ok(count)
    }
}
