//! The client side: connects to a node, shakes hands, and then sends signals through the
//! connection's send thread while a receive thread hands every arriving signal to the
//! caller's handler.

use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use kista_signal::{NodeId, Signal};

use crate::cluster_key::ClusterKey;
use crate::connection::Connection;
use crate::frames::FrameReader;
use crate::handshake::{self, HandshakeError, Role, Welcome};

/// What the receive thread reports.
pub enum Event<'a> {
    Signal(Signal, &'a [u8]),
    /// The connection to `node` is gone (`reason`); no more events follow.
    Closed {
        node: NodeId,
        reason: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot connect: {0}")]
    Io(#[from] std::io::Error),
    #[error("no address to connect to")]
    NoAddress,
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the connection is closed: {0}")]
pub struct Closed(pub String);

pub struct ClientConnection {
    connection: Arc<Connection>,
    welcome: Welcome,
    threads: Vec<JoinHandle<()>>,
}

impl ClientConnection {
    /// Connects as client node `id` (`None`: the node picks one), shakes hands (proving it
    /// holds `key`, the cluster's) and starts the send and receive threads; `handler` runs
    /// on the receive thread for every signal, then once for the close.
    pub fn connect(
        address: impl ToSocketAddrs,
        id: Option<NodeId>,
        key: Option<&ClusterKey>,
        timeout: Duration,
        mut handler: impl FnMut(Event<'_>) + Send + 'static,
    ) -> Result<Self, ConnectError> {
        let address = address
            .to_socket_addrs()?
            .next()
            .ok_or(ConnectError::NoAddress)?;
        let mut stream = TcpStream::connect_timeout(&address, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        let welcome = handshake::dial(&mut stream, Role::Client(id), key)?;
        stream.set_read_timeout(None)?;
        let connection = Connection::new(stream.try_clone()?, welcome.node)?;
        let sender = connection.spawn_sender("kista-client-send".into())?;
        let receiving = connection.clone();
        let node = welcome.node;
        let receiver = std::thread::Builder::new()
            .name("kista-client-recv".into())
            .spawn(move || {
                receive_until_closed(&receiving, &mut stream, &mut handler);
                let reason = receiving.reason().unwrap_or_default();
                handler(Event::Closed { node, reason });
            })?;
        Ok(Self {
            connection,
            welcome,
            threads: vec![sender, receiver],
        })
    }

    pub fn welcome(&self) -> &Welcome {
        &self.welcome
    }

    /// Queues a signal (with its section's bytes; empty for none) for the send thread.
    pub fn send(&self, signal: &Signal, section: &[u8]) -> Result<(), Closed> {
        if self.connection.queue(signal, section) {
            Ok(())
        } else {
            Err(Closed(self.connection.reason().unwrap_or_default()))
        }
    }

    pub fn is_closed(&self) -> bool {
        self.connection.is_closed()
    }

    /// Closes the connection for `reason` without waiting for its threads (which
    /// [`ClientConnection::close`] and dropping do); the handler hears of it as usual.
    pub fn shut_down(&self, reason: String) {
        self.connection.close(reason);
    }

    /// Closes the connection and waits for its threads.
    pub fn close(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        self.connection.close("closed by the client".into());
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Drop for ClientConnection {
    fn drop(&mut self) {
        self.shut();
    }
}

fn receive_until_closed(
    connection: &Connection,
    stream: &mut TcpStream,
    handler: &mut impl FnMut(Event<'_>),
) {
    let mut frames = FrameReader::default();
    loop {
        let read = match frames.read_from(stream) {
            Ok(read) => read,
            Err(error) => return connection.close(format!("reading failed: {error}")),
        };
        if read == 0 {
            return connection.close("the node closed the connection".into());
        }
        loop {
            match frames.next_signal() {
                Ok(Some((signal, section))) => handler(Event::Signal(signal, section)),
                Ok(None) => break,
                Err(error) => {
                    return connection.close(format!("malformed frame from the node: {error}"))
                }
            }
        }
    }
}
