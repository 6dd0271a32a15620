//! Connections between cluster members. Each pair of members has one connection, dialed by
//! the side whose configuration says so (a data node dials the data nodes with lower ids
//! and the management server) and accepted by the other. A dialer keeps trying while its
//! peer is away, so a peer that starts later or restarts is reached without anyone's help,
//! a peer the membership shut out included: its connection carries nothing past the
//! runtime's fence but its restarted incarnation's request to join.
//!
//! A peer connection that closes is reported at once ([`Peers::on_lost`]): a crashed peer's
//! socket closes long before it misses its heartbeats.

use kista_log::Level;
use std::collections::HashSet;
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use kista_runtime::Injector;
use kista_signal::NodeId;

use crate::connection::Connection;
use crate::handshake::{self, HandshakeError, Role};
use crate::server::Shared;

/// Called on the receive thread when a peer's (or a client's) connection closes, with its
/// node id and the node's injector.
pub type ConnectionLost = Arc<dyn Fn(NodeId, &Injector) + Send + Sync>;

/// Pause between rounds of dialing the peers that are not connected.
pub const DIAL_INTERVAL: Duration = Duration::from_millis(100);
/// Longest a dial waits for the peer to accept.
pub const DIAL_TIMEOUT: Duration = Duration::from_secs(1);

/// The cluster members a node talks to.
#[derive(Clone, Default)]
pub struct Peers {
    /// Node ids that may connect to this node as peers.
    pub accept: Vec<NodeId>,
    /// The peers this node dials itself, with their `host:port`.
    pub dial: Vec<(NodeId, String)>,
    pub on_lost: Option<ConnectionLost>,
}

impl Peers {
    /// Whether the node has no peers: a standalone node.
    pub fn is_empty(&self) -> bool {
        self.accept.is_empty() && self.dial.is_empty()
    }
}

#[derive(Debug, thiserror::Error)]
enum DialError {
    #[error("cannot connect: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0} names no address")]
    NoAddress(String),
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
    #[error("the node there is node {found}, not node {expected}")]
    WrongNode { expected: u8, found: u8 },
    #[error("connected already (the peer dialed too)")]
    Connected,
}

/// Dials every peer in `dial` that is not connected, each round, until the server stops.
/// A peer's first failure is logged, and then its recovery; not every retry.
pub(crate) fn dial_until_stopped(shared: &Arc<Shared>) {
    let mut failing: HashSet<NodeId> = HashSet::new();
    while !shared.is_stopping() {
        let Some(injector) = shared.injector() else {
            return;
        };
        if injector.is_stopped() {
            return;
        }
        for (peer, address) in &shared.options.peers.dial {
            let peer = *peer;
            // Shut-out peers too: one that restarts must be able to ask to join.
            if shared.is_connected(peer) {
                continue;
            }
            match dial(shared, peer, address) {
                Ok((connection, stream)) => {
                    if failing.remove(&peer) {
                        transport_line(
                            Level::Info,
                            format_args!("node {} at {address} reached", peer.0),
                        );
                    }
                    let for_thread = shared.clone();
                    let remote = address.clone();
                    let spawned = std::thread::Builder::new()
                        .name(format!("kista-peer-{}", peer.0))
                        .spawn(move || {
                            for_thread.run_connection(&connection, stream, remote, true)
                        });
                    match spawned {
                        Ok(handle) => shared.add_thread(handle),
                        Err(error) => shared.log_close(format!(
                            "node {} at {address}: no thread for it: {error}",
                            peer.0
                        )),
                    }
                }
                Err(error) => {
                    if failing.insert(peer) {
                        transport_line(
                            Level::Warn,
                            format_args!(
                                "dialing node {} at {address} failed: {error} \
                             (trying again every {} ms)",
                                peer.0,
                                DIAL_INTERVAL.as_millis()
                            ),
                        );
                    }
                }
            }
        }
        std::thread::sleep(DIAL_INTERVAL);
    }
}

/// Connects to `peer` and shakes hands; the connection comes back registered.
fn dial(
    shared: &Shared,
    peer: NodeId,
    address: &str,
) -> Result<(Arc<Connection>, TcpStream), DialError> {
    let socket = address
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| DialError::NoAddress(address.to_string()))?;
    let mut stream = TcpStream::connect_timeout(&socket, DIAL_TIMEOUT)?;
    stream.set_read_timeout(Some(handshake::HANDSHAKE_TIMEOUT))?;
    let key = shared.options.key.as_ref();
    let welcome = handshake::dial(&mut stream, Role::Peer(shared.options.node), key)?;
    if welcome.node != peer {
        return Err(DialError::WrongNode {
            expected: peer.0,
            found: welcome.node.0,
        });
    }
    let connection = Connection::new(stream.try_clone()?, peer)?;
    if !shared.register_peer(&connection) {
        return Err(DialError::Connected);
    }
    Ok((connection, stream))
}

/// A line of the process's log on standard error.
fn transport_line(level: Level, message: impl std::fmt::Display) {
    kista_log::eprint(level, "kista transport", message);
}
