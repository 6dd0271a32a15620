//! The listener: accepts MySQL clients and serves each on a thread of its own (clients
//! block on one statement at a time, so a thread per connection costs nothing a pool
//! would save, and keeps each statement's path free of hand-offs).

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::admission::{self, Admission, Limits};
use crate::catalog::Catalog;
use crate::connection;
use crate::point_read::Responder;
use crate::processes::Process;
use crate::protocol::handshake::Users;
use crate::protocol::packet::PacketStream;
use crate::protocol::results;

/// Connections served at once unless configured otherwise (MySQL's `max_connections`
/// default is 151; sysbench runs use up to a few hundred).
pub const CONNECTIONS_MAX_DEFAULT: usize = 1024;
/// Stack of each connection's thread: deep enough to parse, bind and evaluate a statement
/// nested to `session::NESTING_DEPTH_MAX` in a debug build (glibc's default for threads;
/// only the pages a thread touches are backed by memory).
pub const CONNECTION_STACK_BYTES: usize = 8 << 20;

pub struct ServerConfig {
    pub listen: SocketAddr,
    pub users: Users,
    /// How many connections, and for how long (`admission.rs`).
    pub limits: Limits,
}

/// A running server; `stop` (or dropping it) stops accepting. Open connections end when
/// their clients leave.
pub struct SqlServer {
    address: SocketAddr,
    stopping: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
    /// Closes connections that overstay their timeouts.
    timeouts: Option<JoinHandle<()>>,
}

impl SqlServer {
    pub fn start(catalog: Arc<Catalog>, config: ServerConfig) -> io::Result<Self> {
        let listener = TcpListener::bind(config.listen)?;
        let address = listener.local_addr()?;
        let stopping = Arc::new(AtomicBool::new(false));
        let (stop, watched) = (stopping.clone(), catalog.clone());
        let limits = config.limits;
        let timeouts = std::thread::Builder::new()
            .name("sql-timeouts".into())
            .spawn(move || admission::watch_timeouts(&watched, limits, &stop))?;
        let stop = stopping.clone();
        let acceptor = std::thread::Builder::new()
            .name("sql-accept".into())
            .spawn(move || {
                let stored = catalog.clone();
                let users = (config.users).with_stored(Arc::new(move |name: &str| {
                    crate::accounts::stored_login(&stored, name)
                }));
                let admission = Admission::new(config.limits);
                accept(listener, catalog, Arc::new(users), &admission, &stop)
            })?;
        Ok(Self {
            address,
            stopping,
            acceptor: Some(acceptor),
            timeouts: Some(timeouts),
        })
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Stops accepting connections and waits for the acceptor to end.
    pub fn stop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Wake the blocking accept.
        let _ = TcpStream::connect(self.address);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        if let Some(timeouts) = self.timeouts.take() {
            let _ = timeouts.join();
        }
    }

    /// Blocks until the server stops.
    pub fn wait(mut self) {
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

impl Drop for SqlServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept(
    listener: TcpListener,
    catalog: Arc<Catalog>,
    users: Arc<Users>,
    admission: &Arc<Admission>,
    stopping: &AtomicBool,
) {
    let next_id = AtomicU32::new(1);
    let limits = admission.limits();
    for stream in listener.incoming() {
        if stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let _ = stream.set_nodelay(true);
        let _ = stream.set_write_timeout(Some(admission::WRITE_TIMEOUT));
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        if catalog.processes.logging_in() >= admission::LOGGING_IN_MAX {
            catalog.processes.close_longest_logging_in();
        }
        let accepted = catalog.connections() < limits.sockets_max();
        catalog.processes.count_connection(accepted);
        if !accepted {
            refuse(stream, limits.connections_max);
            continue;
        }
        let guard = catalog.connection_opened();
        let host = stream
            .peer_addr()
            .map_or_else(|_| "?".into(), |a| a.to_string());
        let process = Arc::new(Process::new(id, host, stream.try_clone().ok()));
        let registered = catalog.processes.register(process.clone());
        let (catalog, users, admission) = (catalog.clone(), users.clone(), admission.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("sql-{id}"))
            .stack_size(CONNECTION_STACK_BYTES)
            .spawn(move || {
                let (_guard, _registered) = (guard, registered);
                let responder = stream.try_clone().ok().map(Responder::new);
                let served =
                    connection::serve(stream, responder, (&catalog, &users, &admission), process);
                if let Err(error) = served {
                    catalog.log_connection_error(id, &error.to_string());
                }
            });
        if let Err(error) = spawned {
            let message = format!("no thread for connection {id}: {error}");
            crate::log_line(kista_log::Level::Error, message);
        }
    }
}

/// Tells a client over the limit why it is refused (error 1040), then closes.
fn refuse(stream: TcpStream, connections_max: usize) {
    let mut stream = PacketStream::new(stream);
    let mut out = Vec::new();
    let error = admission::too_many_connections(connections_max);
    results::error(&mut out, error.code, error.state, &error.message);
    stream.write_payload(&out);
    let _ = stream.flush();
}
