//! The node side: accepts client connections, gives each a node id, reads and checks its
//! signals on a receive thread and injects them into the runtime, and sends the node's
//! replies back through the connection's send thread.
//!
//! A connection is closed, with its reason logged, when its peer breaks the handshake or the
//! wire format, claims another node's address, addresses a block it may not, or stops
//! reading. Nothing a peer sends can stop the node or touch another connection.

use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use kista_runtime::{InjectBatch, InjectError, Injector, Remote, RemoteSink};
use kista_signal::{NodeId, Signal};

use crate::connection::Connection;
use crate::frames::FrameReader;
use crate::handshake::{self, Welcome};
use crate::CLIENT_NODE_IDS;

/// Checks a signal from a client before it enters the node: `Err(reason)` closes the
/// connection. Called with the signal, its section and the client's node id.
pub type Validator = Arc<dyn Fn(&Signal, &[u8], NodeId) -> Result<(), String> + Send + Sync>;

/// Close reasons the server remembers for inspection (older ones are dropped).
pub const CLOSE_LOG_MAX: usize = 1024;
/// How often the accepting thread looks for a stop request.
const ACCEPT_POLL: Duration = Duration::from_millis(20);
/// Signals a receive thread stages before it hands them to the node, even in mid-read.
const STAGED_SIGNALS_MAX: usize = 256;
/// How long a receive thread waits when the node cannot take more signals yet.
const BACKPRESSURE_WAIT: Duration = Duration::from_micros(200);

pub struct ServerOptions {
    pub node: NodeId,
    /// What every client learns in its Welcome.
    pub info: Vec<u8>,
    pub validate: Validator,
}

struct Shared {
    options: ServerOptions,
    /// `[node id]` → its connection.
    connections: RwLock<Vec<Option<Arc<Connection>>>>,
    injector: OnceLock<Injector>,
    stopping: AtomicBool,
    close_log: Mutex<Vec<String>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl RemoteSink for Shared {
    fn send(&self, node: NodeId, frames: &mut Vec<u8>) {
        let connections = self.connections.read().unwrap_or_else(|p| p.into_inner());
        // A reply to a client that has gone is dropped: nobody is left to read it.
        if let Some(connection) = &connections[usize::from(node.0)] {
            connection.queue_frames(frames);
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

    /// The sink the runtime sends signals for clients to.
    pub fn remote(&self) -> Remote {
        Remote(self.shared.clone())
    }

    /// Starts accepting connections; their signals go to the node through `injector`.
    pub fn serve(&mut self, injector: Injector) -> std::io::Result<()> {
        let _ = self.shared.injector.set(injector);
        let Some(listener) = self.listener.take() else {
            return Ok(());
        };
        let shared = self.shared.clone();
        let acceptor = std::thread::Builder::new()
            .name("kista-accept".into())
            .spawn(move || accept_until_stopped(&shared, &listener))?;
        self.shared.threads().push(acceptor);
        Ok(())
    }

    /// Open connections.
    pub fn connections(&self) -> usize {
        let connections = self
            .shared
            .connections
            .read()
            .unwrap_or_else(|p| p.into_inner());
        connections.iter().flatten().count()
    }

    /// Why connections closed, oldest first.
    pub fn close_log(&self) -> Vec<String> {
        self.shared
            .close_log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Stops accepting, closes every connection and waits for the transport's threads.
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
        let threads = std::mem::take(&mut *self.shared.threads());
        for thread in threads {
            let _ = thread.join();
        }
    }
}

impl Shared {
    fn threads(&self) -> std::sync::MutexGuard<'_, Vec<JoinHandle<()>>> {
        self.threads.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn log_close(&self, line: String) {
        eprintln!("kista transport: {line}");
        let mut log = self.close_log.lock().unwrap_or_else(|p| p.into_inner());
        if log.len() >= CLOSE_LOG_MAX {
            log.remove(0);
        }
        log.push(line);
    }

    /// Makes the connection for a free client node id and enters it in the table; `None`
    /// when every client node id is taken.
    fn register(
        &self,
        make: impl FnOnce(NodeId) -> std::io::Result<Arc<Connection>>,
    ) -> Option<std::io::Result<Arc<Connection>>> {
        let mut connections = self.connections.write().unwrap_or_else(|p| p.into_inner());
        let id = CLIENT_NODE_IDS
            .clone()
            .find(|&id| connections[usize::from(id)].is_none())?;
        let connection = make(NodeId(id));
        if let Ok(connection) = &connection {
            connections[usize::from(id)] = Some(connection.clone());
        }
        Some(connection)
    }

    fn unregister(&self, connection: &Connection) {
        let mut connections = self.connections.write().unwrap_or_else(|p| p.into_inner());
        connections[usize::from(connection.peer.0)] = None;
    }
}

fn accept_until_stopped(shared: &Arc<Shared>, listener: &TcpListener) {
    while !shared.stopping.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, peer)) => {
                let for_thread = shared.clone();
                let spawned = std::thread::Builder::new()
                    .name("kista-recv-conn".into())
                    .spawn(move || serve_connection(&for_thread, stream, peer));
                match spawned {
                    Ok(handle) => {
                        let mut threads = shared.threads();
                        threads.retain(|t| !t.is_finished());
                        threads.push(handle);
                    }
                    Err(error) => shared.log_close(format!("{peer}: no thread for it: {error}")),
                }
            }
            Err(error) if error.kind() == ErrorKind::WouldBlock => std::thread::sleep(ACCEPT_POLL),
            Err(error) => {
                shared.log_close(format!("accepting failed: {error}"));
                std::thread::sleep(ACCEPT_POLL);
            }
        }
    }
}

/// Runs one connection from handshake to close.
fn serve_connection(shared: &Arc<Shared>, mut stream: TcpStream, peer: SocketAddr) {
    let opened = stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_read_timeout(Some(handshake::HANDSHAKE_TIMEOUT)))
        .map_err(handshake::HandshakeError::Io)
        .and_then(|()| handshake::read_hello(&mut stream))
        .and_then(|_role| {
            let registered = shared.register(|id| {
                let connection = Connection::new(stream.try_clone()?, id)?;
                Ok(connection)
            });
            match registered {
                None => {
                    let refusal = Welcome {
                        client_node: NodeId(0),
                        node: shared.options.node,
                        info: Vec::new(),
                    };
                    let _ = handshake::write_welcome(&mut stream, &refusal);
                    Err(handshake::HandshakeError::NoNodeIdFree)
                }
                Some(connection) => Ok(connection?),
            }
        });
    let connection = match opened {
        Ok(connection) => connection,
        Err(error) => return shared.log_close(format!("{peer}: handshake failed: {error}")),
    };
    let welcome = Welcome {
        client_node: connection.peer,
        node: shared.options.node,
        info: shared.options.info.clone(),
    };
    let sender = handshake::write_welcome(&mut stream, &welcome)
        .map_err(|e| e.to_string())
        .and_then(|()| stream.set_read_timeout(None).map_err(|e| e.to_string()))
        .and_then(|()| {
            connection
                .spawn_sender(format!("kista-send-{}", connection.peer.0))
                .map_err(|e| e.to_string())
        });
    match sender {
        Ok(sender) => {
            receive_until_closed(shared, &connection, &mut stream);
            connection.close("the receive side ended".into());
            let _ = sender.join();
        }
        Err(reason) => connection.close(format!("setting up failed: {reason}")),
    }
    shared.unregister(&connection);
    let reason = connection.reason().unwrap_or_default();
    shared.log_close(format!(
        "{peer} (node {}) closed: {reason}",
        connection.peer.0
    ));
}

fn receive_until_closed(shared: &Shared, connection: &Connection, stream: &mut TcpStream) {
    let Some(injector) = shared.injector.get() else {
        return connection.close("the node is not serving yet".into());
    };
    let mut frames = FrameReader::default();
    let mut batch = InjectBatch::default();
    loop {
        let read = match frames.read_from(stream) {
            Ok(read) => read,
            Err(error) => return connection.close(format!("reading failed: {error}")),
        };
        if read == 0 {
            let reason = match frames.partial_bytes() {
                0 => "the peer closed the connection".to_string(),
                partial => format!("the peer closed the connection {partial} bytes into a signal (truncated frame)"),
            };
            return connection.close(reason);
        }
        // The signals before a fault still enter the node, as they would one by one.
        let staged = stage_whole_signals(shared, injector, connection, &mut frames, &mut batch);
        let outcome = staged.and_then(|()| publish(injector, connection, &mut batch));
        if let Err(reason) = outcome {
            injector.discard(&mut batch);
            return connection.close(reason);
        }
        if connection.is_closed() {
            injector.discard(&mut batch);
            return;
        }
    }
}

/// Checks and stages every whole signal `frames` holds, publishing on the way when the batch
/// is full or the section pool has to wait for the node.
fn stage_whole_signals(
    shared: &Shared,
    injector: &Injector,
    connection: &Connection,
    frames: &mut FrameReader,
    batch: &mut InjectBatch,
) -> Result<(), String> {
    loop {
        let (signal, section) = match frames.next_signal() {
            Ok(Some(next)) => next,
            Ok(None) => return Ok(()),
            Err(error) => return Err(format!("malformed frame: {error}")),
        };
        check(shared, connection, &signal, section)?;
        loop {
            match injector.stage(batch, signal, section) {
                Ok(()) => break,
                Err(error) if error.is_temporary() && !connection.is_closed() => {
                    // No section free: let the node work through what is staged first.
                    publish(injector, connection, batch)?;
                    std::thread::sleep(BACKPRESSURE_WAIT);
                }
                Err(InjectError::NoSuchBlock(address)) => {
                    return Err(format!(
                        "a signal is addressed to {address}, where no block is"
                    ));
                }
                Err(error) => return Err(error.to_string()),
            }
        }
        if batch.len() >= STAGED_SIGNALS_MAX {
            publish(injector, connection, batch)?;
        }
    }
}

fn check(
    shared: &Shared,
    connection: &Connection,
    signal: &Signal,
    section: &[u8],
) -> Result<(), String> {
    let sender = signal.sender().node();
    if sender != connection.peer {
        return Err(format!(
            "a signal claims to come from node {}, the connection is node {}",
            sender.0, connection.peer.0
        ));
    }
    let receiver = signal.receiver();
    if receiver.node() != shared.options.node {
        return Err(format!(
            "a signal is addressed to node {}, this is node {}",
            receiver.node().0,
            shared.options.node.0
        ));
    }
    (shared.options.validate)(signal, section, connection.peer)
}

/// Hands the staged signals to the node, waiting while a receiving thread's queue is full.
fn publish(
    injector: &Injector,
    connection: &Connection,
    batch: &mut InjectBatch,
) -> Result<(), String> {
    loop {
        match injector.publish(batch) {
            Ok(()) => return Ok(()),
            Err(error) if error.is_temporary() && !connection.is_closed() => {
                std::thread::sleep(BACKPRESSURE_WAIT);
            }
            Err(error) => return Err(error.to_string()),
        }
    }
}
