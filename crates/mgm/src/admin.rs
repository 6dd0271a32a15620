//! The admin protocol between `kista mgm` (and data nodes fetching their configuration)
//! and `kista mgmd`, after a transport handshake with the admin role:
//!
//! ```text
//! request   one line of UTF-8 text ending in '\n', at most REQUEST_BYTES_MAX bytes
//! response  status u8 (0 ok, 1 error), length u32 LE, that many bytes of UTF-8 text
//! ```
//!
//! Requests and responses alternate until the client closes. The commands themselves are
//! in [`crate::command`].

use std::io::{BufRead, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use kista_transport::cluster_key::ClusterKey;
use kista_transport::handshake::{self, HandshakeError, Role};

/// The longest request line accepted.
pub const REQUEST_BYTES_MAX: usize = 1024;
/// The longest response accepted (the configuration file is the largest).
pub const RESPONSE_BYTES_MAX: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("cannot reach the management server at {address}: {source}")]
    Connect {
        address: String,
        source: std::io::Error,
    },
    #[error("{address} names no address")]
    NoAddress { address: String },
    #[error("the management server at {address} refused the connection: {source}")]
    Handshake {
        address: String,
        source: HandshakeError,
    },
    #[error("talking to the management server failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("the management server sent a response of {0} bytes, more than {RESPONSE_BYTES_MAX}")]
    ResponseTooLong(usize),
    #[error("{0}")]
    Refused(String),
}

/// A connection to the management server's admin protocol.
pub struct AdminClient {
    stream: TcpStream,
}

impl AdminClient {
    /// Connects to `address` (`host:port`) and shakes hands, proving this process holds
    /// `key` (the cluster's), waiting at most `timeout` for each step.
    pub fn connect(
        address: &str,
        key: Option<&ClusterKey>,
        timeout: Duration,
    ) -> Result<Self, AdminError> {
        let connect_error = |source| AdminError::Connect {
            address: address.to_string(),
            source,
        };
        let socket = address
            .to_socket_addrs()
            .map_err(connect_error)?
            .next()
            .ok_or_else(|| AdminError::NoAddress {
                address: address.to_string(),
            })?;
        let mut stream = TcpStream::connect_timeout(&socket, timeout).map_err(connect_error)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_nodelay(true)?;
        let handshake_error = |source| AdminError::Handshake {
            address: address.to_string(),
            source,
        };
        handshake::dial(&mut stream, Role::Admin, key).map_err(handshake_error)?;
        Ok(Self { stream })
    }

    /// How long an answer may take from now on (`None`: no limit; `connect`'s timeout
    /// until this is called).
    pub fn set_answer_timeout(&mut self, timeout: Option<Duration>) -> Result<(), AdminError> {
        self.stream.set_read_timeout(timeout)?;
        Ok(())
    }

    /// Sends one command and returns the server's text; an error response is
    /// [`AdminError::Refused`] with the server's reason.
    pub fn request(&mut self, command: &str) -> Result<String, AdminError> {
        let line = command.trim();
        if line.len() >= REQUEST_BYTES_MAX || line.contains('\n') {
            return Err(AdminError::Refused(format!(
                "a command is one line of at most {} bytes",
                REQUEST_BYTES_MAX - 1
            )));
        }
        self.stream.write_all(format!("{line}\n").as_bytes())?;
        let mut head = [0u8; 5];
        self.stream.read_exact(&mut head)?;
        let length = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
        if length > RESPONSE_BYTES_MAX {
            return Err(AdminError::ResponseTooLong(length));
        }
        let mut text = vec![0u8; length];
        self.stream.read_exact(&mut text)?;
        let text = String::from_utf8_lossy(&text).into_owned();
        match head[0] {
            0 => Ok(text),
            _ => Err(AdminError::Refused(text)),
        }
    }
}

/// Reads the next request line; `None` when the client closed or sent a line too long
/// (which ends the connection).
pub fn read_request(reader: &mut impl BufRead) -> Option<String> {
    let mut line = Vec::new();
    let mut limited = reader.take(REQUEST_BYTES_MAX as u64);
    match limited.read_until(b'\n', &mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) if line.last() != Some(&b'\n') => None,
        Ok(_) => Some(String::from_utf8_lossy(&line).trim().to_string()),
    }
}

/// Writes a response: the text of a success, or the reason of a failure.
pub fn write_response(
    stream: &mut impl Write,
    outcome: &Result<String, String>,
) -> std::io::Result<()> {
    let (status, text) = match outcome {
        Ok(text) => (0u8, text.as_bytes()),
        Err(reason) => (1u8, reason.as_bytes()),
    };
    let text = &text[..text.len().min(RESPONSE_BYTES_MAX)];
    let mut bytes = Vec::with_capacity(5 + text.len());
    bytes.push(status);
    bytes.extend_from_slice(&(text.len() as u32).to_le_bytes());
    bytes.extend_from_slice(text);
    stream.write_all(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_one_line_and_an_overlong_one_ends_the_connection() {
        let mut input: &[u8] = b"show\n2 stop\n";
        assert_eq!(read_request(&mut input).as_deref(), Some("show"));
        assert_eq!(read_request(&mut input).as_deref(), Some("2 stop"));
        assert_eq!(read_request(&mut input), None);
        let long = vec![b'x'; REQUEST_BYTES_MAX + 10];
        assert_eq!(read_request(&mut long.as_slice()), None);
    }

    #[test]
    fn a_response_carries_its_status_and_text() {
        let mut bytes = Vec::new();
        write_response(&mut bytes, &Err("no such node".into())).unwrap();
        assert_eq!(bytes[0], 1);
        assert_eq!(&bytes[5..], b"no such node");
    }
}
