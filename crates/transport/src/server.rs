//! The node side: accepts connections and runs each from handshake to close. A client is
//! entered under the node id it names (leased by the management server) or, on a
//! standalone node, one picked for the connection; a peer (another data node, the
//! management server) is entered under its configured id, and the peers this node dials
//! itself ([`crate::peers`]) end up in the same table; an admin connection is handed to the
//! management protocol.
//! Signals for a client or a peer leave through the runtime's remote sink into that
//! connection's outgoing buffer, which its send thread writes.
//!
//! A connection is closed, with its reason logged, when its peer breaks the handshake or the
//! wire format, claims another node's address, addresses a block it may not, or stops
//! reading. Nothing a peer sends can stop the node or touch another connection.

use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use kista_metrics::{Exposition, Kind};
use kista_runtime::{Injector, Remote, RemoteSink};
use kista_signal::{NodeId, Signal};

use crate::cluster_key::ClusterKey;
use crate::connection::Connection;
use crate::faults::{LinkFaults, DELAYED_BYTES_MAX};
use crate::handshake::{self, HandshakeError, Role, Welcome};
use crate::peers::{self, Peers};
use crate::receive::{receive_until_closed, Admission};
use crate::CLIENT_NODE_IDS;

/// Checks a signal from a client before it enters the node: `Err(reason)` closes the
/// connection. Called with the signal, its section and the client's node id.
pub type Validator = Arc<dyn Fn(&Signal, &[u8], NodeId) -> Result<(), String> + Send + Sync>;

/// Serves one admin connection, after its handshake, on the connection's own thread.
pub type AdminHandler = Arc<dyn Fn(TcpStream) + Send + Sync>;

/// Close reasons the server remembers for inspection (older ones are dropped).
pub const CLOSE_LOG_MAX: usize = 1024;
/// Connections that may be shaking hands at once (each on a thread of its own, for up to
/// [`handshake::HANDSHAKE_TIMEOUT`]); a new one past it closes the one shaking hands
/// longest, so a stranger holding connections open cannot keep members out: theirs shake
/// hands in a millisecond.
pub const HANDSHAKES_MAX: usize = 64;
/// How often the accepting thread looks for a stop request.
const ACCEPT_POLL: Duration = Duration::from_millis(20);

/// Where client connections' node ids come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientIds {
    /// A standalone node: it picks a free id for each connection that names none.
    PickedHere,
    /// A cluster's data node: a client must name the id the management server leased it,
    /// the one id every data node knows it by, so that any node's blocks can answer it.
    Leased,
}

pub struct ServerOptions {
    pub node: NodeId,
    /// The cluster's key: only dialers that prove they hold it are admitted (and this node
    /// proves it to the peers it dials). `None`: a node without a key, which admits only
    /// dialers without one.
    pub key: Option<ClusterKey>,
    pub client_ids: ClientIds,
    /// What every client learns in its Welcome.
    pub info: Vec<u8>,
    pub validate: Validator,
    pub peers: Peers,
    /// The management text protocol; without it admin connections are refused.
    pub admin: Option<AdminHandler>,
    /// Called when a client's connection closes, before its node id can be given to
    /// another: the node's blocks end what the client left open.
    pub on_client_lost: Option<crate::peers::ConnectionLost>,
}

pub(crate) struct Shared {
    pub options: ServerOptions,
    /// `[node id]` → its connection.
    connections: RwLock<Vec<Option<Arc<Connection>>>>,
    injector: OnceLock<Injector>,
    stopping: AtomicBool,
    close_log: Mutex<Vec<String>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Open admin connections by a serial number, so stopping can close them too.
    admin_streams: Mutex<(u64, Vec<(u64, TcpStream)>)>,
    /// Links to peers cut for a test (`faults`).
    faults: LinkFaults,
    refusals: Refusals,
    /// Connections shaking hands, oldest first, by a serial number.
    handshaking: Mutex<(u64, std::collections::VecDeque<(u64, TcpStream)>)>,
}

/// What the node turned away, for the metrics.
#[derive(Default)]
pub(crate) struct Refusals {
    /// Dialers that did not prove they hold the cluster key.
    pub unauthenticated: AtomicU64,
    /// Connections closed for a signal the node does not take from them.
    pub signals: AtomicU64,
    /// Connections closed still shaking hands to make room for a new one.
    pub displaced: AtomicU64,
}

/// [`Refusals`] as read at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RefusalCounts {
    pub unauthenticated: u64,
    pub signals: u64,
    pub displaced: u64,
}

impl Shared {
    /// Sends frames held on delayed links once they are due (`faults`).
    fn release_delayed_until_stopped(&self) {
        self.faults.release_until_stopped(|node, frames| {
            let connections = self.connections.read().unwrap_or_else(|p| p.into_inner());
            if let Some(connection) = &connections[usize::from(node.0)] {
                connection.queue_frames(frames);
            }
        });
    }
}

impl RemoteSink for Shared {
    fn send(&self, node: NodeId, frames: &mut Vec<u8>) {
        let connections = self.connections.read().unwrap_or_else(|p| p.into_inner());
        // A signal for a client that has gone, or a peer not connected (or cut off), is
        // dropped: a peer that stays away is declared failed by the membership, which copes
        // with the loss.
        if let Some(connection) = &connections[usize::from(node.0)] {
            if !self.faults.is_delayed(node) {
                connection.queue_frames(frames);
            } else if !self.faults.hold(node, frames) {
                let reason = format!(
                    "the link to node {} held more than {DELAYED_BYTES_MAX} bytes back (a cut \
                     or delay for a test): broken off",
                    node.0
                );
                connection.close(reason);
            }
        }
        frames.clear();
    }
}

pub struct Server {
    shared: Arc<Shared>,
    listener: Option<TcpListener>,
    local_address: SocketAddr,
}

impl Server {
    /// Binds the listening socket; connections are accepted once [`Server::serve`] runs.
    pub fn bind(address: impl ToSocketAddrs, options: ServerOptions) -> std::io::Result<Self> {
        let listener = TcpListener::bind(address)?;
        listener.set_nonblocking(true)?;
        let local_address = listener.local_addr()?;
        let shared = Arc::new(Shared {
            options,
            connections: RwLock::new(vec![None; 256]),
            injector: OnceLock::new(),
            stopping: AtomicBool::new(false),
            close_log: Mutex::new(Vec::new()),
            threads: Mutex::new(Vec::new()),
            admin_streams: Mutex::new((0, Vec::new())),
            faults: LinkFaults::default(),
            refusals: Refusals::default(),
            handshaking: Mutex::new((0, std::collections::VecDeque::new())),
        });
        Ok(Self {
            shared,
            listener: Some(listener),
            local_address,
        })
    }

    pub fn local_address(&self) -> SocketAddr {
        self.local_address
    }

    /// The sink the runtime sends signals for clients and peers to.
    pub fn remote(&self) -> Remote {
        Remote(self.shared.clone())
    }

    /// Starts accepting connections and dialing peers; their signals go to the node through
    /// `injector`.
    pub fn serve(&mut self, injector: Injector) -> std::io::Result<()> {
        let _ = self.shared.injector.set(injector);
        let Some(listener) = self.listener.take() else {
            return Ok(());
        };
        let shared = self.shared.clone();
        let acceptor = std::thread::Builder::new()
            .name("kista-accept".into())
            .spawn(move || accept_until_stopped(&shared, &listener))?;
        self.shared.add_thread(acceptor);
        if !self.shared.options.peers.is_empty() {
            let shared = self.shared.clone();
            let delay_line = std::thread::Builder::new()
                .name("kista-delay-line".into())
                .spawn(move || shared.release_delayed_until_stopped())?;
            self.shared.add_thread(delay_line);
        }
        if !self.shared.options.peers.dial.is_empty() {
            let shared = self.shared.clone();
            let dialer = std::thread::Builder::new()
                .name("kista-dial".into())
                .spawn(move || peers::dial_until_stopped(&shared))?;
            self.shared.add_thread(dialer);
        }
        Ok(())
    }

    /// Open connections, clients and peers.
    pub fn connections(&self) -> usize {
        self.links().connections()
    }

    /// Whether a connection to `peer` is open.
    pub fn is_connected(&self, peer: NodeId) -> bool {
        self.shared.is_connected(peer)
    }

    /// A handle on the connections for code outside the runtime.
    pub fn links(&self) -> Links {
        Links(self.shared.clone())
    }

    /// Why connections closed, oldest first.
    pub fn close_log(&self) -> Vec<String> {
        self.shared
            .close_log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Stops accepting and dialing, closes every connection and waits for the transport's
    /// threads.
    pub fn stop(self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        let open: Vec<_> = {
            let connections = self
                .shared
                .connections
                .read()
                .unwrap_or_else(|p| p.into_inner());
            connections.iter().flatten().cloned().collect()
        };
        for connection in open {
            connection.close("the node is stopping".into());
        }
        for (_, stream) in &self.shared.admin_streams().1 {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        self.shared.faults.stop();
        let threads = std::mem::take(&mut *self.shared.threads());
        for thread in threads {
            let _ = thread.join();
        }
    }
}

/// The server's connections as seen from outside the runtime: the management server's
/// admin commands look up and signal data nodes through it.
#[derive(Clone)]
pub struct Links(Arc<Shared>);

impl Links {
    /// Open connections, clients and peers.
    pub fn connections(&self) -> usize {
        let connections = self.0.connections.read().unwrap_or_else(|p| p.into_inner());
        connections.iter().flatten().count()
    }

    pub fn is_connected(&self, node: NodeId) -> bool {
        self.0.is_connected(node)
    }

    /// How many dialers and signals this node turned away since it started.
    pub fn refusals(&self) -> RefusalCounts {
        RefusalCounts {
            unauthenticated: self.0.refusals.unauthenticated.load(Ordering::Relaxed),
            signals: self.0.refusals.signals.load(Ordering::Relaxed),
            displaced: self.0.refusals.displaced.load(Ordering::Relaxed),
        }
    }

    /// The refusals as the metrics family `kista_transport_refused_total` of node `node`
    /// (the data nodes' and the management server's).
    pub fn render_refusals(&self, node: &str, out: &mut Exposition) {
        let help = "Connections turned away: dialers without the cluster key \
                    (reason=unauthenticated), connections closed for a signal the node \
                    does not take from them (reason=signal), connections closed still \
                    shaking hands to make room for a new one (reason=displaced).";
        let counts = self.refusals();
        let mut family = out.family("kista_transport_refused_total", help, Kind::Counter);
        family.sample(
            &[("node", node), ("reason", "unauthenticated")],
            counts.unauthenticated as f64,
        );
        family.sample(
            &[("node", node), ("reason", "signal")],
            counts.signals as f64,
        );
        family.sample(
            &[("node", node), ("reason", "displaced")],
            counts.displaced as f64,
        );
    }

    /// Queues `signal` with its `section` bytes for its receiver's node; false when that
    /// node is not connected.
    pub fn send(&self, signal: &Signal, section: &[u8]) -> bool {
        let node = signal.receiver().node();
        let connections = self.0.connections.read().unwrap_or_else(|p| p.into_inner());
        connections[usize::from(node.0)]
            .as_ref()
            .is_some_and(|connection| connection.queue(signal, section))
    }
}

impl Shared {
    fn threads(&self) -> std::sync::MutexGuard<'_, Vec<JoinHandle<()>>> {
        self.threads.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn admin_streams(&self) -> std::sync::MutexGuard<'_, (u64, Vec<(u64, TcpStream)>)> {
        self.admin_streams.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn add_thread(&self, handle: JoinHandle<()>) {
        let mut threads = self.threads();
        threads.retain(|t| !t.is_finished());
        threads.push(handle);
    }

    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    pub fn injector(&self) -> Option<&Injector> {
        self.injector.get()
    }

    pub fn is_connected(&self, node: NodeId) -> bool {
        let connections = self.connections.read().unwrap_or_else(|p| p.into_inner());
        connections[usize::from(node.0)].is_some()
    }

    /// Enters an accepted connection among those shaking hands, closing the one shaking
    /// hands longest if [`HANDSHAKES_MAX`] are; returns its serial number.
    fn begin_handshake(&self, stream: &TcpStream) -> u64 {
        let mut handshaking = self.handshaking.lock().unwrap_or_else(|p| p.into_inner());
        handshaking.0 += 1;
        let serial = handshaking.0;
        if handshaking.1.len() >= HANDSHAKES_MAX {
            if let Some((_, oldest)) = handshaking.1.pop_front() {
                let _ = oldest.shutdown(std::net::Shutdown::Both);
                self.refusals.displaced.fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Ok(clone) = stream.try_clone() {
            handshaking.1.push_back((serial, clone));
        }
        serial
    }

    /// The connection `serial` is done shaking hands (admitted or not).
    fn end_handshake(&self, serial: u64) {
        let mut handshaking = self.handshaking.lock().unwrap_or_else(|p| p.into_inner());
        handshaking.1.retain(|(s, _)| *s != serial);
    }

    pub fn log_close(&self, line: String) {
        kista_log::eprint(kista_log::Level::Warn, "kista transport", &line);
        let mut log = self.close_log.lock().unwrap_or_else(|p| p.into_inner());
        if log.len() >= CLOSE_LOG_MAX {
            log.remove(0);
        }
        log.push(line);
    }

    /// Makes the connection for client node id `named`, or a free one the node picks when
    /// the client names none, and enters it in the table; `Err(reason)` when the id is taken
    /// or this node does not pick ids.
    fn register_client(
        &self,
        named: Option<NodeId>,
        make: impl FnOnce(NodeId) -> std::io::Result<Arc<Connection>>,
    ) -> Result<std::io::Result<Arc<Connection>>, String> {
        let here = self.options.node.0;
        let mut connections = self.connections.write().unwrap_or_else(|p| p.into_inner());
        let id = match (named, self.options.client_ids) {
            (Some(id), _) if connections[usize::from(id.0)].is_some() => {
                return Err(format!(
                    "client node id {} is in use on node {here} by another connection",
                    id.0
                ));
            }
            (Some(id), _) => id.0,
            (None, ClientIds::PickedHere) => CLIENT_NODE_IDS
                .clone()
                .find(|&id| connections[usize::from(id)].is_none())
                .ok_or_else(|| format!("node {here} has no node id free for another client"))?,
            (None, ClientIds::Leased) => {
                return Err(format!(
                    "node {here} belongs to a cluster: connect through the management server \
                     (kista bench --mgm HOST:PORT, Client::connect_cluster), which leases the \
                     client node id every data node knows"
                ));
            }
        };
        let connection = make(NodeId(id));
        if let Ok(connection) = &connection {
            connections[usize::from(id)] = Some(connection.clone());
        }
        Ok(connection)
    }

    /// Enters `connection` under its peer's id; false when that peer is connected already.
    pub fn register_peer(&self, connection: &Arc<Connection>) -> bool {
        let mut connections = self.connections.write().unwrap_or_else(|p| p.into_inner());
        let slot = &mut connections[usize::from(connection.peer.0)];
        if slot.is_some() {
            return false;
        }
        *slot = Some(connection.clone());
        true
    }

    fn unregister(&self, connection: &Arc<Connection>) {
        let mut connections = self.connections.write().unwrap_or_else(|p| p.into_inner());
        let slot = &mut connections[usize::from(connection.peer.0)];
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, connection)) {
            *slot = None;
        }
    }

    /// Runs a registered connection whose handshake is done until it closes: its send
    /// thread, its receive loop on this thread, then the bookkeeping of the close.
    pub fn run_connection(
        &self,
        connection: &Arc<Connection>,
        mut stream: TcpStream,
        remote: String,
        is_peer: bool,
    ) {
        let prepared = stream
            .set_read_timeout(None)
            .and_then(|()| connection.spawn_sender(format!("kista-send-{}", connection.peer.0)));
        match (prepared, self.injector.get()) {
            (Ok(sender), Some(injector)) => {
                let admission = Admission {
                    node: self.options.node,
                    validate: (!is_peer).then_some(&self.options.validate),
                    faults: is_peer.then_some(&self.faults),
                    refused_signals: &self.refusals.signals,
                };
                receive_until_closed(injector, &admission, connection, &mut stream);
                connection.close("the receive side ended".into());
                if is_peer {
                    // What waited on a cut or delayed link went down with the connection.
                    self.faults.forget(connection.peer);
                }
                let _ = sender.join();
            }
            (Ok(sender), None) => {
                connection.close("the node is not serving yet".into());
                let _ = sender.join();
            }
            (Err(error), _) => connection.close(format!("setting up failed: {error}")),
        }
        // Told before the id is free again: a client that takes it next never has its
        // transactions taken for the lost one's.
        if let (false, Some(on_lost), Some(injector)) =
            (is_peer, &self.options.on_client_lost, self.injector.get())
        {
            on_lost(connection.peer, injector);
        }
        self.unregister(connection);
        let reason = connection.reason().unwrap_or_default();
        let kind = if is_peer { "peer" } else { "client" };
        self.log_close(format!(
            "{remote} ({kind} node {}) closed: {reason}",
            connection.peer.0
        ));
        if is_peer {
            if let (Some(on_lost), Some(injector)) =
                (&self.options.peers.on_lost, self.injector.get())
            {
                on_lost(connection.peer, injector);
            }
        }
    }
}

fn accept_until_stopped(shared: &Arc<Shared>, listener: &TcpListener) {
    while !shared.is_stopping() {
        match listener.accept() {
            Ok((stream, remote)) => {
                let for_thread = shared.clone();
                let serial = shared.begin_handshake(&stream);
                let spawned = std::thread::Builder::new()
                    .name("kista-recv-conn".into())
                    .spawn(move || serve_connection(&for_thread, stream, remote, serial));
                match spawned {
                    Ok(handle) => shared.add_thread(handle),
                    Err(error) => shared.log_close(format!("{remote}: no thread for it: {error}")),
                }
            }
            Err(error) if error.kind() == ErrorKind::WouldBlock => {
                wait_for_connection(listener, ACCEPT_POLL);
            }
            Err(error) => {
                shared.log_close(format!("accepting failed: {error}"));
                std::thread::sleep(ACCEPT_POLL);
            }
        }
    }
}

/// Waits up to `timeout` for a connection to be ready to accept on `listener`: true if one
/// is. A connecting client (the importer's threads, an SQL front end) is answered at once,
/// where a sleep between tries kept it waiting up to a whole `timeout` (10 ms on average);
/// the timeout bounds how long a stop request goes unseen.
fn wait_for_connection(listener: &TcpListener, timeout: Duration) -> bool {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let mut listening = libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let timeout_ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: `listening` is one valid `pollfd` that `poll` may write `revents` of, for
        // the duration of the call; `listener` keeps its descriptor open meanwhile.
        let ready = unsafe { libc::poll(&mut listening, 1, timeout_ms) };
        ready > 0
    }
    #[cfg(not(unix))]
    {
        let _ = listener;
        std::thread::sleep(timeout);
        false
    }
}

/// Runs one accepted connection (shaking hands as `serial`) from handshake to close.
fn serve_connection(shared: &Arc<Shared>, mut stream: TcpStream, remote: SocketAddr, serial: u64) {
    let role = stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_read_timeout(Some(handshake::HANDSHAKE_TIMEOUT)))
        .map_err(HandshakeError::Io)
        .and_then(|()| handshake::accept(&mut stream, shared.options.key.as_ref()));
    shared.end_handshake(serial);
    if let Err(HandshakeError::Unauthenticated(_)) = &role {
        shared
            .refusals
            .unauthenticated
            .fetch_add(1, Ordering::Relaxed);
    }
    let opened = role.and_then(|role| match role {
        Role::Client(id) => admit_client(shared, &mut stream, id).map(|c| Some((c, false))),
        Role::Peer(node) => admit_peer(shared, &mut stream, node).map(|c| Some((c, true))),
        Role::Admin => serve_admin(shared, stream.try_clone()?).map(|()| None),
    });
    match opened {
        Ok(Some((connection, is_peer))) => {
            shared.run_connection(&connection, stream, remote.to_string(), is_peer)
        }
        Ok(None) => {}
        Err(error) => shared.log_close(format!("{remote}: handshake failed: {error}")),
    }
}

fn refuse(shared: &Shared, stream: &mut TcpStream, reason: String) -> HandshakeError {
    let _ = handshake::write_refusal(stream, &reason);
    shared.log_close(format!("refused a connection: {reason}"));
    HandshakeError::Refused(reason)
}

fn admit_client(
    shared: &Shared,
    stream: &mut TcpStream,
    named: Option<NodeId>,
) -> Result<Arc<Connection>, HandshakeError> {
    let registered = shared.register_client(named, |id| Connection::new(stream.try_clone()?, id));
    let connection = match registered {
        Ok(connection) => connection?,
        Err(reason) => return Err(refuse(shared, stream, reason)),
    };
    welcome(shared, stream, connection, shared.options.info.clone())
}

/// Tells a registered connection's dialer its node id (and `info`); a connection whose
/// Welcome cannot be sent is closed and leaves the table.
fn welcome(
    shared: &Shared,
    stream: &mut TcpStream,
    connection: Arc<Connection>,
    info: Vec<u8>,
) -> Result<Arc<Connection>, HandshakeError> {
    let welcome = Welcome {
        client_node: connection.peer,
        node: shared.options.node,
        info,
    };
    if let Err(error) = handshake::write_welcome(stream, &welcome) {
        connection.close(format!("the Welcome could not be sent: {error}"));
        shared.unregister(&connection);
        return Err(error);
    }
    Ok(connection)
}

fn admit_peer(
    shared: &Shared,
    stream: &mut TcpStream,
    node: NodeId,
) -> Result<Arc<Connection>, HandshakeError> {
    let here = shared.options.node;
    if !shared.options.peers.accept.contains(&node) {
        let reason = format!("node {} is not a peer node {} expects", node.0, here.0);
        return Err(refuse(shared, stream, reason));
    }
    // A node the cluster shut out is still admitted: the runtime's fence drops what it
    // sends, except a restarted incarnation's request to join (the fence gate).
    let connection = Connection::new(stream.try_clone()?, node)?;
    if !shared.register_peer(&connection) {
        let reason = format!("node {} is connected already", node.0);
        return Err(refuse(shared, stream, reason));
    }
    welcome(shared, stream, connection, Vec::new())
}

fn serve_admin(shared: &Shared, mut stream: TcpStream) -> Result<(), HandshakeError> {
    let Some(admin) = &shared.options.admin else {
        let reason = "this node serves no admin protocol; ask the management server".into();
        return Err(refuse(shared, &mut stream, reason));
    };
    let node = shared.options.node;
    let welcome = Welcome {
        client_node: node,
        node,
        info: Vec::new(),
    };
    handshake::write_welcome(&mut stream, &welcome)?;
    stream.set_read_timeout(None)?;
    let serial = {
        let mut open = shared.admin_streams();
        open.0 += 1;
        let serial = open.0;
        open.1.push((serial, stream.try_clone()?));
        serial
    };
    if shared.is_stopping() {
        let _ = stream.shutdown(std::net::Shutdown::Both);
    }
    admin(stream);
    shared.admin_streams().1.retain(|(s, _)| *s != serial);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_for_a_connection_sees_one_pending_and_times_out_without_one() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
        listener.set_nonblocking(true).expect("nonblocking");
        assert!(
            !wait_for_connection(&listener, Duration::from_millis(1)),
            "nobody connected"
        );
        let _client = std::net::TcpStream::connect(listener.local_addr().expect("bound"))
            .expect("the listener accepts connections");
        assert!(wait_for_connection(&listener, Duration::from_secs(10)));
        assert!(listener.accept().is_ok(), "the pending connection is there");
        assert!(!wait_for_connection(&listener, Duration::from_millis(1)));
    }
}
