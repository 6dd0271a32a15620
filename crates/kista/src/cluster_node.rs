//! What a data node of a managed cluster learns from the management server: it fetches the
//! configuration over the admin protocol and turns its own entry, and its peers', into the
//! node's settings, thread layout, listening address and peer connections.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use kista_datanode::arbitration::{arbitrator_address, MANAGEMENT_NODE};
use kista_datanode::cluster::DataNodeShape;
use kista_datanode::node::NodeSettings;
use kista_mgm::admin::AdminClient;
use kista_mgm::config::{ClusterConfig, DataNodeConfig, DataNodeThreads};
use kista_runtime::thread_config::ThreadLayout;
use kista_runtime::Module;
use kista_signal::NodeId;
use kista_transport::cluster_key::ClusterKey;
use kista_transport::peers::Peers;

use crate::thread_options::layout_for;
use crate::Failure;

/// Longest the node waits for the management server at each step of fetching its
/// configuration.
const MGM_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything a data node needs to join its cluster.
pub struct ClusterNode {
    pub settings: NodeSettings,
    pub layout: ThreadLayout,
    pub bind: SocketAddr,
    pub data_memory_bytes: u64,
    /// Allocate and write the data memory at start (`touch_memory` in the configuration).
    pub touch_memory: bool,
    /// Where the node keeps its files (its REDO log).
    pub data_dir: PathBuf,
    pub peers: Peers,
    /// Other data nodes the management server reports started: when there are any, the
    /// cluster runs and this node restarts into it rather than starting with the others.
    pub running: Vec<NodeId>,
}

/// Fetches the configuration from the management server at `mgm` (proving this process
/// holds `key`) and finds `node` in it.
pub fn fetch(mgm: &str, key: Option<&ClusterKey>, node: NodeId) -> Result<ClusterNode, Failure> {
    let mut admin = AdminClient::connect(mgm, key, MGM_TIMEOUT).map_err(Failure::runtime)?;
    let text = admin.request("config").map_err(Failure::runtime)?;
    let source = format!("configuration from the management server at {mgm}");
    let config = ClusterConfig::from_toml(&text, Path::new(&source)).map_err(Failure::usage)?;
    let mut joined = from_config(&config, node, mgm)?;
    let status = admin.request("status").map_err(Failure::runtime)?;
    joined.running = started_nodes(&status)
        .into_iter()
        .filter(|&started| started != node)
        .collect();
    joined.settings.joins_running_cluster = !joined.running.is_empty();
    Ok(joined)
}

/// The data nodes a `status` answer calls started (`node N: started`).
pub(crate) fn started_nodes(status: &str) -> Vec<NodeId> {
    status
        .lines()
        .filter_map(|line| {
            let (node, state) = line.strip_prefix("node ")?.split_once(": ")?;
            (state.trim() == "started").then_some(NodeId(node.parse().ok()?))
        })
        .collect()
}

fn from_config(config: &ClusterConfig, node: NodeId, mgm: &str) -> Result<ClusterNode, Failure> {
    let own = config
        .data_nodes
        .iter()
        .find(|n| n.node_id == node.0)
        .ok_or_else(|| {
            let ids: Vec<String> = config
                .data_nodes
                .iter()
                .map(|n| n.node_id.to_string())
                .collect();
            Failure::usage(format!(
                "the configuration has no data node {} (its data nodes: {})",
                node.0,
                ids.join(", ")
            ))
        })?;
    let layout = layout_of(own)?;
    let mut settings = NodeSettings::new(node);
    let cluster = &config.cluster;
    settings.node_group = u16::from(own.node_group);
    settings.replicas = u16::from(cluster.replicas);
    settings.partitions_per_node = cluster.partitions_per_node;
    settings.heartbeat_interval_ms = cluster.heartbeat_interval_ms;
    settings.heartbeat_misses_max = cluster.heartbeat_misses_max;
    settings.lock_wait_timeout_ms = cluster.lock_wait_timeout_ms;
    settings.deadlock_detection_interval_ms = cluster.deadlock_detection_interval_ms;
    settings.transaction_inactive_timeout_ms = cluster.transaction_inactive_timeout_ms;
    settings.start_partial_timeout_ms = cluster.start_partial_timeout_ms;
    settings.global_checkpoint_interval_ms = cluster.global_checkpoint_interval_ms;
    settings.redo_log_bytes = cluster.redo_log_bytes;
    settings.checkpoint_write_bytes_per_sec = cluster.checkpoint_write_bytes_per_sec;
    settings.operations_per_transaction_max = cluster.operations_per_transaction_max as usize;
    settings.locks_per_partition_max = cluster.locks_per_partition_max as usize;
    settings.arbitrator = Some(arbitrator_address());
    settings.tc_instances = layout.instances_of(Module::Tc) as u16;
    settings.ldm_instances = layout.instances_of(Module::Ldm) as u16;
    let mut peers = Peers::default();
    for peer in config.data_nodes.iter().filter(|n| n.node_id != node.0) {
        let peer_layout = layout_of(peer)?;
        settings.peers.push(DataNodeShape {
            node: NodeId(peer.node_id),
            node_group: u16::from(peer.node_group),
            tc_instances: peer_layout.instances_of(Module::Tc) as u16,
            ldm_instances: peer_layout.instances_of(Module::Ldm) as u16,
        });
        // Of each pair of data nodes, the one with the higher id dials.
        if peer.node_id < node.0 {
            peers
                .dial
                .push((NodeId(peer.node_id), format!("{}:{}", peer.host, peer.port)));
        } else {
            peers.accept.push(NodeId(peer.node_id));
        }
    }
    peers.dial.push((MANAGEMENT_NODE, mgm.to_string()));
    let bind = format!("{}:{}", own.host, own.port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .ok_or_else(|| {
            Failure::usage(format!(
                "data node {}: cannot listen on {}:{}",
                node.0, own.host, own.port
            ))
        })?;
    Ok(ClusterNode {
        settings,
        layout,
        bind,
        data_memory_bytes: cluster.data_memory_bytes,
        touch_memory: cluster.touch_memory,
        data_dir: own.data_dir.clone(),
        peers,
        running: Vec::new(),
    })
}

/// A node's thread layout as its configuration gives it. An automatic layout is sized for
/// this machine's CPUs, which is right when every data node runs on a machine like this
/// one; nodes on unlike machines will need to tell each other their layouts when they connect.
fn layout_of(node: &DataNodeConfig) -> Result<ThreadLayout, Failure> {
    let layout = match &node.threads {
        DataNodeThreads::Automatic => layout_for(None, None),
        DataNodeThreads::Cpus(cpus) => layout_for(None, Some(*cpus)),
        DataNodeThreads::Config(text) => layout_for(Some(text), None),
    };
    layout.map_err(|failure| {
        Failure::usage(format!("data node {}: {}", node.node_id, failure.message))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_answer_names_the_started_data_nodes() {
        let status = "node 1: started\nnode 2: starting\nnode 3: not connected\nnode 4: started";
        assert_eq!(started_nodes(status), [NodeId(1), NodeId(4)]);
        assert!(started_nodes("garbage\nnode x: started").is_empty());
    }
}
