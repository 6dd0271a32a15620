//! A data node in this process: the runtime with the data node's blocks, the transport
//! serving clients and connecting it to its peers, and the monitor that feeds load levels
//! to the read router. A standalone node is a one-node cluster with no peers.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kista_datanode::cluster::NodeSet;
use kista_datanode::info::{measure_thread_loads, THREAD_LOADS_INTERVAL_MS};
use kista_datanode::membership::membership_address;
use kista_datanode::metrics::NodeCounters;
use kista_datanode::node::{data_node_blocks, data_node_start_signals, NodeSettings};
use kista_datanode::protocol::{
    check_client_signal, ClientLost, LoadLevelsBody, LoadReport, NodeInfo, NodeSuspected,
    ThreadLoadsBody, ThreadLoadsReport, INFO_BLOCK,
};
use kista_datanode::router::{load_report, LOAD_REPORT_INTERVAL_MS};
use kista_runtime::io::{DiskStorage, FileStorage};
use kista_runtime::thread_config::ThreadLayout;
use kista_runtime::{start, Injector, Module, RunningNode, RuntimeOptions, ThreadStatsSnapshot};
use kista_signal::{BlockAddress, NodeId, TypedSignal};
use kista_storage::memory::DataMemory;
use kista_transport::cluster_key::ClusterKey;
use kista_transport::peers::{ConnectionLost, Peers};
use kista_transport::server::{ClientIds, Server, ServerOptions};

use crate::metrics::DataNodeGauges;

pub struct DataNodeOptions {
    pub node: NodeId,
    pub bind: SocketAddr,
    pub data_memory_bytes: u64,
    /// Where the node keeps its files; `None`: nowhere (a standalone node keeps no REDO
    /// log).
    pub data_dir: Option<PathBuf>,
    pub settings: NodeSettings,
    /// The other data nodes and the management server; empty for a standalone node.
    pub peers: Peers,
    /// Allocate and write `data_memory_bytes` at the process's start (`touch_memory.rs`).
    pub touch_memory: bool,
    /// The cluster's key (`None`: a node without one admits only dialers without one).
    pub key: Option<ClusterKey>,
}

pub struct DataNodeProcess {
    runtime: RunningNode,
    server: Server,
    /// What the node shows operators (`--metrics-port`).
    gauges: DataNodeGauges,
    stop_monitor: Arc<AtomicBool>,
    monitor: Option<JoinHandle<()>>,
}

impl DataNodeProcess {
    /// Starts everything and begins serving clients and dialing peers. `settings` gets its
    /// block counts from `layout`.
    pub fn start(layout: &ThreadLayout, mut options: DataNodeOptions) -> Result<Self, String> {
        let settings = &mut options.settings;
        settings.node = options.node;
        settings.tc_instances = layout.instances_of(Module::Tc) as u16;
        settings.ldm_instances = layout.instances_of(Module::Ldm) as u16;
        settings.query_instances = layout.instances_of(Module::Query) as u16;
        let cluster = settings
            .cluster_shape()
            .map_err(|e| format!("the data node does not form a cluster: {e}"))?;
        let info = NodeInfo {
            cluster,
            heartbeat_interval_ms: u32::try_from(settings.heartbeat_interval_ms)
                .unwrap_or(u32::MAX),
            heartbeat_misses_max: settings.heartbeat_misses_max,
        };
        let server_options = ServerOptions {
            node: options.node,
            key: options.key.clone(),
            client_ids: if options.peers.is_empty() {
                ClientIds::PickedHere
            } else {
                ClientIds::Leased
            },
            info: info.encode(),
            validate: Arc::new(|signal, _section, client| check_client_signal(signal, client)),
            peers: with_suspicion_on_loss(options.peers, options.node),
            admin: None,
            on_client_lost: Some(abort_lost_clients_work(settings)),
        };
        let mut server = Server::bind(options.bind, server_options)
            .map_err(|e| format!("cannot listen on {}: {e}", options.bind))?;
        let memory = Arc::new(DataMemory::new(options.data_memory_bytes));
        let runtime_options = RuntimeOptions {
            node: options.node,
            remote: Some(server.remote()),
            ..RuntimeOptions::default()
        };
        let files = options
            .data_dir
            .as_ref()
            .map(|directory| Box::new(DiskStorage::new(directory)) as Box<dyn FileStorage>);
        let counters = Arc::new(NodeCounters::new(settings));
        let blocks = data_node_blocks(settings, memory.clone(), files, &counters)
            .map_err(|e| format!("the data node does not form a cluster: {e}"))?;
        let start_signals = data_node_start_signals(settings);
        let runtime = start(layout, blocks, start_signals, &runtime_options)
            .map_err(|e| format!("cannot start the data node: {e}"))?;
        server
            .serve(runtime.injector())
            .map_err(|e| format!("cannot start serving: {e}"))?;
        let stop_monitor = Arc::new(AtomicBool::new(false));
        let watched = Watched {
            data_dir: options.data_dir.clone(),
            counters: counters.clone(),
        };
        let monitor = spawn_monitor(&runtime, settings, watched, stop_monitor.clone())
            .map_err(|e| format!("cannot start the load monitor: {e}"))?;
        let gauges = DataNodeGauges {
            node: options.node.0,
            counters,
            memory,
            threads: runtime.stats_source(),
            links: server.links(),
        };
        Ok(Self {
            runtime,
            server,
            gauges,
            stop_monitor,
            monitor: Some(monitor),
        })
    }

    pub fn gauges(&self) -> DataNodeGauges {
        self.gauges.clone()
    }

    pub fn address(&self) -> SocketAddr {
        self.server.local_address()
    }

    /// Whether the node stopped: a thread failed or a block stopped it (see
    /// [`DataNodeProcess::stop_reason`]).
    pub fn has_stopped(&self) -> bool {
        self.runtime.has_stopped()
    }

    /// Why a block stopped the node (lost arbitration, lost node group, told to stop).
    pub fn stop_reason(&self) -> Option<String> {
        self.runtime.stop_reason()
    }

    /// Whether a connection to `peer` is open.
    pub fn is_connected(&self, peer: NodeId) -> bool {
        self.server.is_connected(peer)
    }

    /// Stops serving, then stops the node; `Err` names a thread that failed.
    pub fn stop(mut self) -> Result<(), String> {
        self.stop_monitor.store(true, Ordering::SeqCst);
        if let Some(monitor) = self.monitor.take() {
            let _ = monitor.join();
        }
        self.server.stop();
        self.runtime.stop().map(|_| ()).map_err(|e| e.to_string())
    }
}

/// Adds to `peers` what a lost peer connection means: the membership suspects that node at
/// once (a crashed node's socket closes long before its heartbeats are missed).
fn with_suspicion_on_loss(mut peers: Peers, node: NodeId) -> Peers {
    if peers.is_empty() {
        return peers;
    }
    peers.on_lost = Some(Arc::new(move |lost, injector| {
        let membership = membership_address(node);
        let suspicion = NodeSuspected {
            suspects: NodeSet::of([lost]),
        };
        // A stopping node needs no news; the management server is no data node and the
        // membership ignores it.
        let _ = injector.inject(suspicion.to_signal(membership, membership), &[]);
    }));
    peers
}

/// What a lost client connection means: every coordinator ends the client's transactions
/// and scans, freeing their locks at once (NDB's API failure handling).
fn abort_lost_clients_work(settings: &NodeSettings) -> ConnectionLost {
    let coordinators: Vec<_> = settings.tc_addresses().collect();
    Arc::new(move |lost, injector| {
        let notice = ClientLost {
            client_node: u32::from(lost.0),
        };
        for &tc in &coordinators {
            // A stopping node needs no news.
            let _ = injector.inject(notice.to_signal(tc, tc), &[]);
        }
    })
}

/// Every [`LOAD_REPORT_INTERVAL_MS`], turns the thread statistics into load levels and
/// sends them to every coordinator; every [`THREAD_LOADS_INTERVAL_MS`], tells the `info`
/// block how each thread was loaded (`kista top`, `kista_info.threads`).
fn spawn_monitor(
    runtime: &RunningNode,
    settings: &NodeSettings,
    watched: Watched,
    stop: Arc<AtomicBool>,
) -> std::io::Result<JoinHandle<()>> {
    let injector = runtime.injector();
    let stats = runtime.stats_source();
    let node = settings.node;
    let coordinators: Vec<_> = settings.tc_addresses().collect();
    let info = BlockAddress::new(node, INFO_BLOCK, 0);
    std::thread::Builder::new()
        .name("kista-monitor".into())
        .spawn(move || {
            let interval = Duration::from_millis(LOAD_REPORT_INTERVAL_MS);
            let mut before = stats.snapshot();
            let mut since = Instant::now();
            let mut second = (before.clone(), since);
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(interval);
                let now = stats.snapshot();
                let elapsed_us = since.elapsed().as_micros() as u64;
                since = Instant::now();
                if second.1.elapsed() >= Duration::from_millis(THREAD_LOADS_INTERVAL_MS) {
                    report_thread_loads(&injector, info, &second.0, &now, second.1.elapsed());
                    second = (now.clone(), Instant::now());
                    watched.measure_disk();
                }
                let levels = load_report(node, &before, &now, elapsed_us);
                before = now;
                let mut body = Vec::new();
                LoadLevelsBody::encode(&levels, &mut body);
                for &tc in &coordinators {
                    let report = LoadReport {
                        entries: levels.len() as u32,
                    };
                    // A full node skips a report; the next one comes soon.
                    let _ = injector.inject(report.to_signal(tc, tc), &body);
                }
            }
        })
}

/// What the monitor measures for the node besides its threads.
struct Watched {
    data_dir: Option<std::path::PathBuf>,
    counters: Arc<NodeCounters>,
}

impl Watched {
    /// The data directory's free space, into the node's gauges (Prometheus,
    /// `kista_info.counters`).
    fn measure_disk(&self) {
        let Some(dir) = &self.data_dir else {
            return;
        };
        if let Some((free_bytes, size_bytes)) = disk_space(dir) {
            self.counters.disk_space(free_bytes, size_bytes);
        }
    }
}

/// (bytes free for an unprivileged user, size) of the file system holding `dir`.
fn disk_space(dir: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `path` is a NUL-terminated string that outlives the call, and `stats` is
    // written by statvfs(3) before it is read, only when it succeeds.
    let stats = unsafe {
        if libc::statvfs(path.as_ptr(), stats.as_mut_ptr()) != 0 {
            return None;
        }
        stats.assume_init()
    };
    let fragment = stats.f_frsize as u64;
    Some((
        stats.f_bavail as u64 * fragment,
        stats.f_blocks as u64 * fragment,
    ))
}

fn report_thread_loads(
    injector: &Injector,
    info: BlockAddress,
    before: &[ThreadStatsSnapshot],
    now: &[ThreadStatsSnapshot],
    elapsed: Duration,
) {
    let loads = measure_thread_loads(before, now, elapsed.as_micros() as u64);
    let mut body = Vec::new();
    ThreadLoadsBody::encode(&loads, &mut body);
    let report = ThreadLoadsReport {
        threads: loads.len() as u32,
    };
    // A full node skips a report; the next one comes in a second.
    let _ = injector.inject(report.to_signal(info, info), &body);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_disk_space_of_a_directory_is_its_file_systems() {
        let dir = std::env::temp_dir();
        let (free_bytes, size_bytes) = disk_space(&dir).expect("a file system");
        assert!(
            size_bytes > 0 && free_bytes <= size_bytes,
            "{free_bytes} of {size_bytes}"
        );
        assert_eq!(disk_space(&dir.join("no such directory here")), None);
    }
}
