//! `kista mgmd`, the management server: it serves the checked configuration to data nodes,
//! hosts the arbitrator (a one-thread runtime whose only block is
//! [`Arbitrator`]), knows which nodes are connected, and answers the admin protocol.
//!
//! Data nodes dial it as a peer with their configured node id; their connection is what
//! the management server knows of their state. Commands that act on a data node (`N stop`,
//! `shutdown`) reach it as signals over that connection. Clients register over the admin
//! protocol and hold their client node id while that connection lasts ([`crate::lease`]).

use std::collections::HashMap;
use std::io::BufReader;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use kista_datanode::arbitration::{
    arbitrator_address, ArbitrationRecord, ArbitrationState, Arbitrator, NodeReports,
    MANAGEMENT_NODE,
};
use kista_datanode::cluster::NodeSet;
use kista_datanode::gcp::gcp_address;
use kista_datanode::membership::{
    membership_address, RESTART_REQUESTED, RESTART_WHEN_STARTED, STOPPED_BY_MANAGEMENT_SERVER,
};
use kista_datanode::protocol::{
    BackupListRequest, BackupRequest, ClusterShutdown, ClusterStop, NodeSuspected,
    ARBITRATOR_BLOCK, DICT_BLOCK,
};
use kista_metrics::{Exposition, Kind, Render};
use kista_runtime::thread_config::{ThreadConfig, ThreadLayout};
use kista_runtime::{
    start, BlockRegistration, Module, ModuleInstance, RunningNode, RuntimeOptions,
};
use kista_signal::{BlockAddress, NodeId, Signal, TypedSignal};
use kista_transport::cluster_key::ClusterKey;
use kista_transport::faults::{link_fault, LinkFault};
use kista_transport::handshake::PROTOCOL_VERSION;
use kista_transport::peers::Peers;
use kista_transport::server::{ClientIds, Links, Server, ServerOptions};

use crate::admin::{read_request, write_response};
use crate::backup::{
    completed_line, list_lines, Answer, BackupAnswers, BackupClient, BACKUP_CLIENT_BLOCK,
};
use crate::command::{Command, HELP};
use crate::config::ClusterConfig;
use crate::lease::{ClientLeases, RegisteredDataNode, Registration};

pub struct ManagementOptions {
    pub config: ClusterConfig,
    /// The file's text, served to data nodes as it is.
    pub config_text: String,
    /// Where to listen; the configuration's `[mgmd]` host and port unless overridden.
    pub bind: SocketAddr,
    /// What the arbitrator decided before (as its record last saved it), and where it
    /// saves what it decides.
    pub arbitration: ArbitrationState,
    pub arbitration_record: Box<dyn ArbitrationRecord>,
    /// The cluster's key: every data node, client and `kista mgm` must prove it holds it
    /// before it is admitted (`None`: a cluster without a key admits anyone who can reach
    /// the port).
    pub key: Option<ClusterKey>,
}

pub struct ManagementServer {
    runtime: RunningNode,
    transport: Server,
    state: Arc<State>,
}

struct State {
    config: ClusterConfig,
    config_text: String,
    address: OnceLock<SocketAddr>,
    links: OnceLock<Links>,
    shutdown_requested: AtomicBool,
    leases: Mutex<ClientLeases>,
    /// What the data nodes reported: started (a connected node not started is starting)
    /// and data memory.
    reports: Arc<NodeReports>,
    /// Data nodes whose processes wait for `N start` (after `N restart -n`), with when each
    /// last asked, and those `N start` was given for; `started_wake` wakes the waiting
    /// processes' requests.
    start_gate: Mutex<(HashMap<NodeId, Instant>, NodeSet)>,
    started_wake: std::sync::Condvar,
    /// The data nodes' answers to `start backup` and `show backups`.
    backups: Arc<BackupAnswers>,
}

/// One admin connection: who it is, and the client node id it holds (released when it
/// closes).
struct AdminSession {
    holder: String,
    lease: Option<NodeId>,
}

impl ManagementServer {
    pub fn start(options: ManagementOptions) -> Result<Self, String> {
        let state = Arc::new(State {
            config: options.config,
            config_text: options.config_text,
            address: OnceLock::new(),
            links: OnceLock::new(),
            shutdown_requested: AtomicBool::new(false),
            leases: Mutex::new(ClientLeases::default()),
            reports: Arc::new(NodeReports::default()),
            start_gate: Mutex::new((HashMap::new(), NodeSet::EMPTY)),
            started_wake: std::sync::Condvar::new(),
            backups: Arc::new(BackupAnswers::default()),
        });
        let admin_state = state.clone();
        let peers = Peers {
            accept: state.data_nodes().collect(),
            dial: Vec::new(),
            // A node whose connection closed is started no more (the arbitrator forgets it;
            // its next process reports its own start).
            on_lost: Some(Arc::new(|lost, injector| {
                let address = arbitrator_address();
                let lost = NodeSuspected {
                    suspects: NodeSet::of([lost]),
                };
                let _ = injector.inject(lost.to_signal(address, address), &[]);
            })),
        };
        let transport_options = ServerOptions {
            node: MANAGEMENT_NODE,
            key: options.key,
            client_ids: ClientIds::PickedHere,
            info: Vec::new(),
            // Clients have no business with the management server's blocks.
            validate: Arc::new(|_, _, _| {
                Err("the management server takes no client signals".to_string())
            }),
            peers,
            admin: Some(Arc::new(move |stream| admin_state.serve_admin(stream))),
            on_client_lost: None,
        };
        let mut transport = Server::bind(options.bind, transport_options)
            .map_err(|e| format!("cannot listen on {}: {e}", options.bind))?;
        let _ = state.address.set(transport.local_address());
        let _ = state.links.set(transport.links());
        let runtime_options = RuntimeOptions {
            node: MANAGEMENT_NODE,
            remote: Some(transport.remote()),
            ..RuntimeOptions::default()
        };
        let arbitrator = BlockRegistration {
            block: ARBITRATOR_BLOCK,
            instance: 0,
            host: ModuleInstance {
                module: Module::Main,
                instance: 0,
            },
            implementation: Box::new(Arbitrator::recorded(
                state.reports.clone(),
                options.arbitration,
                options.arbitration_record,
            )),
        };
        let backup_client = BlockRegistration {
            block: BACKUP_CLIENT_BLOCK,
            instance: 0,
            host: ModuleInstance {
                module: Module::Main,
                instance: 0,
            },
            implementation: Box::new(BackupClient {
                answers: state.backups.clone(),
            }),
        };
        let runtime = start(
            &one_thread(),
            vec![arbitrator, backup_client],
            Vec::new(),
            &runtime_options,
        )
        .map_err(|e| format!("cannot start the arbitrator: {e}"))?;
        transport
            .serve(runtime.injector())
            .map_err(|e| format!("cannot start serving: {e}"))?;
        Ok(Self {
            runtime,
            transport,
            state,
        })
    }

    pub fn address(&self) -> SocketAddr {
        self.transport.local_address()
    }

    /// Whether `shutdown` was asked for and every data node has gone.
    pub fn shutdown_done(&self) -> bool {
        self.state.shutdown_requested.load(Ordering::SeqCst)
            && self.state.connected_data_nodes().is_empty()
    }

    /// What `kista mgmd --metrics-port` serves: every configured data node's state and
    /// reported data memory, and the client node ids leased.
    pub fn metrics(&self) -> Render {
        let state = self.state.clone();
        Arc::new(move |out: &mut Exposition| state.render_metrics(out))
    }

    /// Whether the arbitrator's thread failed.
    pub fn has_failed(&self) -> bool {
        self.runtime.has_stopped()
    }

    pub fn stop(self) -> Result<(), String> {
        self.transport.stop();
        self.runtime.stop().map(|_| ()).map_err(|e| e.to_string())
    }
}

/// One thread running everything: the arbitrator answers a handful of signals per failure.
fn one_thread() -> ThreadLayout {
    let counts = Module::ALL.map(|module| (module, u16::from(module == Module::Recv)));
    ThreadLayout::from_config(&ThreadConfig::with_counts(&counts))
}

impl State {
    fn data_nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.config.data_nodes.iter().map(|n| NodeId(n.node_id))
    }

    fn is_data_node(&self, node: NodeId) -> bool {
        self.data_nodes().any(|n| n == node)
    }

    fn is_connected(&self, node: NodeId) -> bool {
        self.links
            .get()
            .is_some_and(|links| links.is_connected(node))
    }

    fn connected_data_nodes(&self) -> Vec<NodeId> {
        self.data_nodes()
            .filter(|&n| self.is_connected(n))
            .collect()
    }

    fn serve_admin(&self, stream: TcpStream) {
        let Ok(reading) = stream.try_clone() else {
            return;
        };
        let mut session = AdminSession {
            holder: stream
                .peer_addr()
                .map_or_else(|_| "?".to_string(), |a| a.to_string()),
            lease: None,
        };
        let mut reader = BufReader::new(reading);
        let mut writer = stream;
        while let Some(line) = read_request(&mut reader) {
            let outcome = line
                .parse::<Command>()
                .map_err(|e| e.to_string())
                .and_then(|command| self.execute(command, &mut session));
            if write_response(&mut writer, &outcome).is_err() {
                break;
            }
        }
        if let Some(id) = session.lease {
            self.leases().release(id);
        }
    }

    fn leases(&self) -> std::sync::MutexGuard<'_, ClientLeases> {
        self.leases.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Leases a client node id to the connection (once: asking again returns the same id)
    /// and tells it where the data nodes are.
    fn register_client(&self, session: &mut AdminSession) -> Result<String, String> {
        let client_node = match session.lease {
            Some(id) => id,
            None => *session
                .lease
                .insert(self.leases().lease(session.holder.clone())?),
        };
        let data_nodes = self
            .config
            .data_nodes
            .iter()
            .map(|node| RegisteredDataNode {
                node: NodeId(node.node_id),
                address: format!("{}:{}", node.host, node.port),
                started: self.is_started(NodeId(node.node_id)),
            })
            .collect();
        Ok(Registration {
            client_node,
            data_nodes,
        }
        .to_text())
    }

    fn execute(&self, command: Command, session: &mut AdminSession) -> Result<String, String> {
        match command {
            Command::Show => Ok(self.show()),
            Command::Status => Ok(self
                .data_nodes()
                .map(|node| self.status_line(node))
                .collect::<Vec<_>>()
                .join("\n")),
            Command::NodeStatus(id) => self.node_status(NodeId(id)),
            Command::Restart {
                node: id,
                wait_for_start: false,
            } => self.send_stop(NodeId(id), RESTART_REQUESTED).map(|()| {
                format!(
                    "node {id} is restarting: it rejoins and gets its data copied back \
                     (`show` says starting, then started)"
                )
            }),
            Command::Restart {
                node: id,
                wait_for_start: true,
            } => self
                .send_stop(NodeId(id), RESTART_WHEN_STARTED)
                .map(|()| format!("node {id} stopped; its process waits for `{id} start`")),
            Command::Start(id) => self.start_waiting(NodeId(id)),
            Command::AwaitStart(id) => Ok(self.await_start(NodeId(id))),
            Command::Stop(id) => self.stop_node(NodeId(id), "N stop").map(|()| {
                format!("node {id} is stopping; its node group's other replicas take over")
            }),
            Command::Shutdown => {
                self.shutdown_requested.store(true, Ordering::SeqCst);
                let stopping = self.connected_data_nodes();
                for &node in &stopping {
                    // Every node hears it, so whichever is master goes on with it; a node
                    // that went meanwhile is stopped already.
                    let shutdown =
                        ClusterShutdown {}.to_signal(gcp_address(node), arbitrator_address());
                    let _ = self.send_to_node(&shutdown, &[]);
                }
                let names: Vec<String> = stopping.iter().map(|n| n.0.to_string()).collect();
                Ok(format!(
                    "shutting down: data nodes [{}] save a last global checkpoint and stop; \
                     the management server stops after them",
                    names.join(", ")
                ))
            }
            Command::Config => Ok(self.config_text.clone()),
            Command::Help => Ok(HELP.to_string()),
            Command::RegisterClient => self.register_client(session),
            Command::ReportMemory => Ok(self
                .data_nodes()
                .map(|node| self.memory_line(node))
                .collect::<Vec<_>>()
                .join("\n")),
            Command::Cut(a, b) => self.fault_link(a, b, LinkFault::Cut).map(|()| {
                format!("signals between data nodes {a} and {b} are dropped until `heal {a} {b}`")
            }),
            Command::Delay(a, b, ms) => self.fault_link(a, b, LinkFault::Delay { ms }).map(|()| {
                format!(
                    "signals between data nodes {a} and {b} are held {ms} ms each way \
                         until `heal {a} {b}`"
                )
            }),
            Command::Heal(a, b) => self
                .fault_link(a, b, LinkFault::Heal)
                .map(|()| format!("signals between data nodes {a} and {b} pass again")),
            Command::StartBackup => self.start_backup(),
            Command::ShowBackups => self.show_backups(),
        }
    }

    /// Asks a started data node's dictionary (`request` builds the signal from the request
    /// id, this server's backup block and the dictionary) and waits while that node stays
    /// connected.
    fn ask_for_backups(
        &self,
        request: impl FnOnce(u64, BlockAddress, BlockAddress) -> Signal,
    ) -> Result<Answer, String> {
        let node = (self.data_nodes())
            .find(|&node| self.is_connected(node) && self.is_started(node))
            .ok_or("no data node is started")?;
        let request_id = self.backups.next_request_id();
        let client = BlockAddress::new(MANAGEMENT_NODE, BACKUP_CLIENT_BLOCK, 0);
        let signal = request(request_id, client, BlockAddress::new(node, DICT_BLOCK, 0));
        self.send_to_node(&signal, &[])?;
        self.backups
            .wait(request_id, || self.is_connected(node))
            .ok_or_else(|| {
                format!(
                    "data node {} was lost before it answered; `show backups` tells whether \
                     the backup completed",
                    node.0
                )
            })
    }

    fn start_backup(&self) -> Result<String, String> {
        let began = Instant::now();
        let answer = self.ask_for_backups(|request_id, client, dict| {
            BackupRequest { request_id, client }.to_signal(dict, client)
        })?;
        match answer {
            Answer::Completed(conf) => Ok(completed_line(&conf, began.elapsed())),
            Answer::Refused { code, message } => Err(format!("backup refused ({code}): {message}")),
            Answer::Listed(_) => Err("the data node answered with a list".to_string()),
        }
    }

    fn show_backups(&self) -> Result<String, String> {
        let answer = self.ask_for_backups(|request_id, client, dict| {
            BackupListRequest { request_id, client }.to_signal(dict, client)
        })?;
        match answer {
            Answer::Listed(entries) => Ok(list_lines(&entries)),
            Answer::Refused { code, message } => Err(format!("refused ({code}): {message}")),
            Answer::Completed(_) => Err("the data node answered with a backup".to_string()),
        }
    }

    fn start_gate(&self) -> std::sync::MutexGuard<'_, (HashMap<NodeId, Instant>, NodeSet)> {
        self.start_gate.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `N start`: lets a process waiting after `N restart -n` start its node.
    fn start_waiting(&self, node: NodeId) -> Result<String, String> {
        if !self.is_data_node(node) {
            return Err(format!("no data node {} in the configuration", node.0));
        }
        let mut gate = self.start_gate();
        // A waiting process asks again at least every second.
        let waits = gate
            .0
            .get(&node)
            .is_some_and(|asked| asked.elapsed() < Duration::from_secs(3));
        if !waits {
            return Err(if self.is_connected(node) {
                format!("node {} is running", node.0)
            } else {
                format!(
                    "no process of node {} waits to start (only one stopped by `{} restart \
                     -n` does); start `kista datad --mgm ... --node-id {}`",
                    node.0, node.0, node.0
                )
            });
        }
        gate.1.insert(node);
        self.started_wake.notify_all();
        Ok(format!(
            "node {} is starting: it rejoins and gets its data copied back",
            node.0
        ))
    }

    /// A waiting process's question: `start` once `N start` was given, else `waiting`
    /// after at most a second (so it can ask again, or stop).
    fn await_start(&self, node: NodeId) -> String {
        let mut gate = self.start_gate();
        gate.0.insert(node, Instant::now());
        let deadline = Instant::now() + Duration::from_secs(1);
        while !gate.1.contains(node) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return "waiting".to_string();
            }
            gate = self
                .started_wake
                .wait_timeout(gate, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        gate.0.remove(&node);
        gate.1.remove(node);
        "start".to_string()
    }

    /// Tells both nodes to apply `fault` to their link to each other.
    fn fault_link(&self, a: u8, b: u8, fault: LinkFault) -> Result<(), String> {
        let (a, b) = (NodeId(a), NodeId(b));
        for node in [a, b] {
            if !self.is_data_node(node) {
                return Err(format!("no data node {} in the configuration", node.0));
            }
        }
        if a == b {
            return Err(format!("a node has no link to itself ({})", a.0));
        }
        for (at, peer) in [(a, b), (b, a)] {
            self.send_to_node(&link_fault(at, arbitrator_address(), peer, fault), &[])?;
        }
        Ok(())
    }

    /// Connected, and the cluster reported it started (a node that starts with the
    /// cluster once its first membership formed; a restarted node once its data is copied).
    fn is_started(&self, node: NodeId) -> bool {
        self.is_connected(node) && self.reports.is_started(node)
    }

    fn render_metrics(&self, out: &mut Exposition) {
        let help = "Each configured data node's state as the management server sees it (1: in it).";
        let mut family = out.family("kista_data_node_state", help, Kind::Gauge);
        for node in self.data_nodes() {
            let id = node.0.to_string();
            let now = self.state_of(node);
            for state in ["started", "starting", "failed", "not connected"] {
                let value = if state == now { 1.0 } else { 0.0 };
                family.sample(&[("node", &id), ("state", &state.replace(' ', "_"))], value);
            }
        }
        let reported: Vec<(String, (u64, u64))> = self
            .data_nodes()
            .filter(|&node| self.is_connected(node))
            .filter_map(|node| Some((node.0.to_string(), self.reports.memory_of(node)?)))
            .collect();
        let help = "Data memory in use, as each connected data node last reported it.";
        let mut family = out.family("kista_data_node_memory_used_bytes", help, Kind::Gauge);
        for (node, (used, _)) in &reported {
            family.sample(&[("node", node)], *used as f64);
        }
        let help = "Data memory each connected data node may use, as it reported it.";
        let mut family = out.family("kista_data_node_memory_limit_bytes", help, Kind::Gauge);
        for (node, (_, limit)) in &reported {
            family.sample(&[("node", node)], *limit as f64);
        }
        if let Some(links) = self.links.get() {
            links.render_refusals(&MANAGEMENT_NODE.0.to_string(), out);
        }
        let leases = self.leases().held().count();
        let help = "Client node ids leased to applications and SQL front ends.";
        out.single("kista_client_leases", help, Kind::Gauge, leases as f64);
    }

    fn state_of(&self, node: NodeId) -> &'static str {
        let connected = self.is_connected(node);
        if connected && self.reports.is_removed(node) {
            // A paused process keeps its connection; the cluster went on without it.
            return "failed";
        }
        match (connected, self.reports.is_started(node)) {
            (true, true) => "started",
            (true, false) => "starting",
            (false, _) => "not connected",
        }
    }

    /// `node N: data memory X MiB used of Y MiB (Z%)`, as the node last reported it.
    fn memory_line(&self, node: NodeId) -> String {
        let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
        match self
            .reports
            .memory_of(node)
            .filter(|_| self.is_connected(node))
        {
            Some((used, limit)) => format!(
                "node {}: data memory {:.1} MiB used of {:.1} MiB ({:.1}%)",
                node.0,
                mib(used),
                mib(limit),
                used as f64 * 100.0 / limit.max(1) as f64
            ),
            None => format!("node {}: {}", node.0, self.state_of(node)),
        }
    }

    fn status_line(&self, node: NodeId) -> String {
        format!("node {}: {}", node.0, self.state_of(node))
    }

    fn node_status(&self, node: NodeId) -> Result<String, String> {
        if node == MANAGEMENT_NODE {
            return Ok(format!("node {}: started (management server)", node.0));
        }
        if !self.is_data_node(node) {
            return Err(format!("no node {} in the configuration", node.0));
        }
        Ok(self.status_line(node))
    }

    fn stop_node(&self, node: NodeId, command: &str) -> Result<(), String> {
        let reason = format!("{STOPPED_BY_MANAGEMENT_SERVER} ({command})");
        self.send_stop(node, &reason)
    }

    /// Stops data node `node`'s blocks with `reason` (which its process reads).
    fn send_stop(&self, node: NodeId, reason: &str) -> Result<(), String> {
        if !self.is_data_node(node) {
            return Err(format!("no data node {} in the configuration", node.0));
        }
        let stop = ClusterStop {}.to_signal(membership_address(node), arbitrator_address());
        self.send_to_node(&stop, reason.as_bytes())
    }

    /// Sends `signal` (with `section`) to its receiver's data node over its connection.
    fn send_to_node(&self, signal: &Signal, section: &[u8]) -> Result<(), String> {
        let sent = self
            .links
            .get()
            .is_some_and(|links| links.send(signal, section));
        if sent {
            Ok(())
        } else {
            Err(format!(
                "node {} is not connected",
                signal.receiver().node().0
            ))
        }
    }

    fn show(&self) -> String {
        let config = &self.config;
        let groups = config.data_nodes.len() / usize::from(config.cluster.replicas.max(1));
        let mut text = format!(
            "cluster: {} data nodes in {groups} node groups, {} replicas\n",
            config.data_nodes.len(),
            config.cluster.replicas
        );
        let mut row = |id: &str, role: &str, state: &str, group: &str, version: &str, address| {
            text.push_str(&format!(
                "{id:<4} {role:<6} {state:<14} {group:<11} {version:<12} {address}\n"
            ));
        };
        row(
            "id",
            "role",
            "state",
            "node group",
            "version",
            "address".to_string(),
        );
        let own = self
            .address
            .get()
            .map_or_else(String::new, ToString::to_string);
        let own_version = concat!("kista ", env!("CARGO_PKG_VERSION"));
        row(
            &MANAGEMENT_NODE.0.to_string(),
            "mgmd",
            "started",
            "-",
            own_version,
            own,
        );
        for node in &config.data_nodes {
            let id = NodeId(node.node_id);
            // A connected node passed the handshake, which demands the same protocol.
            let version = if self.is_connected(id) {
                format!("protocol {PROTOCOL_VERSION}")
            } else {
                "-".to_string()
            };
            row(
                &node.node_id.to_string(),
                "data",
                self.state_of(id),
                &node.node_group.to_string(),
                &version,
                format!("{}:{}", node.host, node.port),
            );
        }
        for sql in &config.sql {
            let address = format!("{}:{}", sql.host, sql.port);
            row("-", "sql", "not connected", "-", "-", address);
        }
        let disks: Vec<String> = (config.data_nodes.iter())
            .filter_map(|node| self.disk_line(NodeId(node.node_id)))
            .collect();
        for (id, holder) in self.leases().held() {
            row(
                &id.0.to_string(),
                "client",
                "registered",
                "-",
                "-",
                holder.to_string(),
            );
        }
        for line in disks {
            text.push_str(&line);
            text.push('\n');
        }
        text
    }

    /// `node 1 disk: 12.3 GiB free of 50.0 GiB` (its data directory's file system), for a
    /// connected node that measured it.
    fn disk_line(&self, node: NodeId) -> Option<String> {
        let (free_mib, size_mib) = self
            .reports
            .disk_of(node)
            .filter(|_| self.is_connected(node))?;
        let gib = |mib: u32| f64::from(mib) / 1024.0;
        Some(format!(
            "node {} disk: {:.1} GiB free of {:.1} GiB",
            node.0,
            gib(free_mib),
            gib(size_mib)
        ))
    }
}
