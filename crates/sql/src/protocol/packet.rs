//! MySQL packets: a 3-byte little-endian length, a sequence number, the payload. A payload
//! of 16 MiB - 1 or more continues in the next packet; a command's packets are numbered
//! from 0 and the answer continues the numbering.

use std::io::{self, Read, Write};

/// The largest payload one packet carries; longer ones continue in the next.
pub const PACKET_PAYLOAD_MAX: usize = 0xFF_FFFF;
/// The largest command this server accepts (MySQL's `max_allowed_packet` default: 64 MiB).
pub const COMMAND_BYTES_MAX: usize = 64 << 20;
/// The largest payload a client that has not logged in may send (its handshake response:
/// user, proof, database, plugin and connection attributes, a few hundred bytes from any
/// driver): a stranger cannot make the server hold more for it.
pub const LOGIN_BYTES_MAX: usize = 64 << 10;
/// A payload grows by at most this much ahead of the bytes that arrived: what a client
/// declares is not allocated before it is sent.
const PAYLOAD_GROWTH_BYTES: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum PacketError {
    #[error("connection: {0}")]
    Io(#[from] io::Error),
    #[error("packet numbered {got}, expected {expected}")]
    OutOfSequence { expected: u8, got: u8 },
    #[error("payload of more than {0} bytes (max_allowed_packet)")]
    TooLarge(usize),
}

/// Bytes read from the client at once: a command's header and body usually arrive in one
/// read (one system call, not two).
const READ_BUFFER_BYTES: usize = 16 * 1024;

/// One connection's packet stream: reads whole (reassembled) payloads through a buffer,
/// buffers what it writes until `flush`, and keeps the sequence numbers.
pub struct PacketStream<S> {
    stream: S,
    sequence: u8,
    out: Vec<u8>,
    input: Box<[u8]>,
    /// `input[start..end]` is read and not yet consumed.
    start: usize,
    end: usize,
    /// The largest payload `read_payload` takes ([`LOGIN_BYTES_MAX`] until the client has
    /// logged in).
    payload_bytes_max: usize,
}

impl<S: Read + Write> PacketStream<S> {
    pub fn new(stream: S) -> Self {
        Self {
            stream,
            sequence: 0,
            out: Vec::with_capacity(16 * 1024),
            input: vec![0; READ_BUFFER_BYTES].into_boxed_slice(),
            start: 0,
            end: 0,
            payload_bytes_max: LOGIN_BYTES_MAX,
        }
    }

    /// The client has logged in: it may send commands up to [`COMMAND_BYTES_MAX`].
    pub fn logged_in(&mut self) {
        self.payload_bytes_max = COMMAND_BYTES_MAX;
    }

    /// Fills `buffer` from what is buffered, then from the stream. `Ok(false)`: the stream
    /// ended before the first byte and `eof_allowed`.
    fn read_exact_buffered(&mut self, buffer: &mut [u8], eof_allowed: bool) -> io::Result<bool> {
        let mut filled = 0;
        while filled < buffer.len() {
            if self.start == self.end {
                let wanted = buffer.len() - filled;
                if wanted >= self.input.len() {
                    // A large payload goes straight to its place.
                    let read = read_some(&mut self.stream, &mut buffer[filled..])?;
                    if read == 0 {
                        return end_of_stream(filled == 0 && eof_allowed);
                    }
                    filled += read;
                    continue;
                }
                let read = read_some(&mut self.stream, &mut self.input)?;
                if read == 0 {
                    return end_of_stream(filled == 0 && eof_allowed);
                }
                self.start = 0;
                self.end = read;
            }
            let take = (self.end - self.start).min(buffer.len() - filled);
            buffer[filled..filled + take]
                .copy_from_slice(&self.input[self.start..self.start + take]);
            self.start += take;
            filled += take;
        }
        Ok(true)
    }

    /// Reads the next payload into `payload` (cleared first). A new command starts the
    /// numbering again (`reset_sequence`); `Ok(false)` is a clean end of stream before a packet.
    pub fn read_payload(&mut self, payload: &mut Vec<u8>) -> Result<bool, PacketError> {
        payload.clear();
        loop {
            let mut header = [0u8; 4];
            if !self.read_exact_buffered(&mut header, payload.is_empty())? {
                return Ok(false);
            }
            let length =
                usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
            if header[3] != self.sequence {
                return Err(PacketError::OutOfSequence {
                    expected: self.sequence,
                    got: header[3],
                });
            }
            self.sequence = self.sequence.wrapping_add(1);
            if payload.len() + length > self.payload_bytes_max {
                return Err(PacketError::TooLarge(self.payload_bytes_max));
            }
            let end = payload.len() + length;
            while payload.len() < end {
                let start = payload.len();
                payload.resize(end.min(start + PAYLOAD_GROWTH_BYTES), 0);
                self.read_exact_buffered(&mut payload[start..], false)?;
            }
            if length < PACKET_PAYLOAD_MAX {
                return Ok(true);
            }
        }
    }

    /// Numbers the next packet 0: each command starts a new exchange.
    pub fn reset_sequence(&mut self) {
        self.sequence = 0;
    }

    /// Queues one payload (split into packets as needed).
    pub fn write_payload(&mut self, payload: &[u8]) {
        let mut rest = payload;
        loop {
            let chunk = rest.len().min(PACKET_PAYLOAD_MAX);
            self.out
                .extend_from_slice(&(chunk as u32).to_le_bytes()[..3]);
            self.out.push(self.sequence);
            self.sequence = self.sequence.wrapping_add(1);
            self.out.extend_from_slice(&rest[..chunk]);
            rest = &rest[chunk..];
            if chunk < PACKET_PAYLOAD_MAX {
                return;
            }
        }
    }

    /// Starts a payload written in place (`finish_payload` closes it): rows are encoded
    /// straight into the output buffer, with no copy per row.
    pub fn begin_payload(&mut self) -> usize {
        let start = self.out.len();
        self.out.extend_from_slice(&[0, 0, 0, 0]);
        start
    }

    pub fn out(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// Fills in the header of the payload begun at `start`; a payload too long for one
    /// packet is moved out and written as several.
    pub fn finish_payload(&mut self, start: usize) {
        let length = self.out.len() - start - 4;
        if length >= PACKET_PAYLOAD_MAX {
            let payload = self.out.split_off(start + 4);
            self.out.truncate(start);
            return self.write_payload(&payload);
        }
        self.out[start..start + 3].copy_from_slice(&(length as u32).to_le_bytes()[..3]);
        self.out[start + 3] = self.sequence;
        self.sequence = self.sequence.wrapping_add(1);
    }

    /// Bytes queued and not yet sent.
    pub fn pending_bytes(&self) -> usize {
        self.out.len()
    }

    pub fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            self.stream.write_all(&self.out)?;
            self.out.clear();
        }
        self.stream.flush()
    }

    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    /// The stream, the next sequence number and the bytes read past the last payload (a
    /// client that asked for TLS sends its TLS handshake at once): to go on over TLS.
    pub fn into_parts(self) -> (S, u8, Vec<u8>) {
        let unread = self.input[self.start..self.end].to_vec();
        (self.stream, self.sequence, unread)
    }

    /// A stream that goes on from `sequence` (the connection phase after TLS began).
    pub fn resume(stream: S, sequence: u8) -> Self {
        Self {
            sequence,
            ..Self::new(stream)
        }
    }
}

/// One read, retried when interrupted.
fn read_some(stream: &mut impl Read, buffer: &mut [u8]) -> io::Result<usize> {
    loop {
        match stream.read(buffer) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// The stream ended: cleanly if nothing of a packet was read (and that is allowed).
fn end_of_stream(clean: bool) -> io::Result<bool> {
    if clean {
        Ok(false)
    } else {
        Err(io::ErrorKind::UnexpectedEof.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A duplex stand-in: reads from `input`, writes to `output`.
    struct Duplex {
        input: Cursor<Vec<u8>>,
        output: Vec<u8>,
    }

    impl Read for Duplex {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.input.read(buf)
        }
    }

    impl Write for Duplex {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.output.write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn stream_of(input: Vec<u8>) -> PacketStream<Duplex> {
        PacketStream::new(Duplex {
            input: Cursor::new(input),
            output: Vec::new(),
        })
    }

    #[test]
    fn a_payload_of_16_mib_or_more_travels_split_and_comes_back_whole() {
        let payload: Vec<u8> = (0..PACKET_PAYLOAD_MAX + 10).map(|i| i as u8).collect();
        let mut writer = stream_of(Vec::new());
        writer.write_payload(&payload);
        writer.flush().unwrap();
        let wire = writer.stream.output;
        assert_eq!(wire.len(), payload.len() + 8, "two packet headers");
        assert_eq!(wire[3], 0);
        assert_eq!(wire[4 + PACKET_PAYLOAD_MAX + 3], 1);

        let mut reader = stream_of(wire);
        reader.logged_in();
        let mut read = Vec::new();
        assert!(reader.read_payload(&mut read).unwrap());
        assert_eq!(read, payload);
        assert!(!reader.read_payload(&mut read).unwrap(), "clean end");
    }

    #[test]
    fn a_packet_out_of_sequence_or_cut_short_is_an_error_not_a_hang() {
        let mut reader = stream_of(vec![1, 0, 0, 5, b'x']);
        let error = reader.read_payload(&mut Vec::new()).unwrap_err();
        assert!(
            matches!(error, PacketError::OutOfSequence { .. }),
            "{error}"
        );
        let mut reader = stream_of(vec![9, 0, 0, 0, b'x']);
        let error = reader.read_payload(&mut Vec::new()).unwrap_err();
        assert!(matches!(error, PacketError::Io(_)), "{error}");
    }

    #[test]
    fn a_stranger_sends_at_most_a_login_and_a_declared_length_is_not_allocated_ahead() {
        let mut header = vec![0xFF, 0xFF, 0x01, 0]; // 128 KiB declared before login
        header.extend_from_slice(&[b'x'; 100]);
        let mut reader = stream_of(header.clone());
        let error = reader.read_payload(&mut Vec::new()).unwrap_err();
        assert!(
            matches!(error, PacketError::TooLarge(LOGIN_BYTES_MAX)),
            "{error}"
        );

        // Logged in, the same header is taken; only what arrived (and one step) is held
        // when the client stops short.
        let mut reader = stream_of(header);
        reader.logged_in();
        let mut payload = Vec::new();
        let error = reader.read_payload(&mut payload).unwrap_err();
        assert!(matches!(error, PacketError::Io(_)), "{error}");
        let mut reader = stream_of(vec![0xFF, 0xFF, 0xFF, 0]);
        reader.logged_in();
        let mut payload = Vec::new();
        assert!(reader.read_payload(&mut payload).is_err());
        assert!(
            payload.capacity() <= 2 * PAYLOAD_GROWTH_BYTES,
            "{}",
            payload.capacity()
        );
    }

    #[test]
    fn commands_arriving_in_one_read_are_each_read_whole_and_in_order() {
        let mut reader = stream_of(b"\x01\x00\x00\x00a\x02\x00\x00\x00bc".to_vec());
        let mut payload = Vec::new();
        assert!(reader.read_payload(&mut payload).unwrap());
        assert_eq!(payload, b"a");
        reader.reset_sequence();
        assert!(reader.read_payload(&mut payload).unwrap());
        assert_eq!(payload, b"bc");
        reader.reset_sequence();
        assert!(!reader.read_payload(&mut payload).unwrap());
    }

    #[test]
    fn a_payload_written_in_place_gets_its_header_and_number() {
        let mut writer = stream_of(Vec::new());
        writer.write_payload(b"ab");
        let start = writer.begin_payload();
        writer.out().extend_from_slice(b"xyz");
        writer.finish_payload(start);
        writer.flush().unwrap();
        assert_eq!(
            writer.stream.output,
            b"\x02\x00\x00\x00ab\x03\x00\x00\x01xyz"
        );
    }
}
