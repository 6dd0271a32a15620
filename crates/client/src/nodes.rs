//! The client's data nodes: one connection to each, all under one client node id, so that
//! whichever node's block answers (a coordinator's commit, another node's `ldm` with a row,
//! a dictionary relaying a schema answer) reaches this client. In a cluster the management
//! server leases that id; a standalone node picks it for the one connection.
//!
//! A connection that closes takes its node out of the live set ([`InFlight::lose_node`]);
//! new transactions go to coordinators on live nodes only. A node is live once connected
//! and started: one the management server reported starting (restarting, copying its data)
//! is connected but joins the live set only when its heartbeat answer says it started. The
//! client connects again to a node it lost (`heartbeat::reconnect`).

use std::net::ToSocketAddrs;
use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::time::Duration;

use kista_datanode::cluster::{ClusterShape, NodeSet};
use kista_datanode::protocol::{
    ClientPing, ErrorCode, NodeInfo, ReplicaChain, DICT_BLOCK, TC_BLOCK,
};
use kista_signal::{BlockAddress, NodeId, Signal, TypedSignal};
use kista_transport::client::{ClientConnection, Event};
use kista_transport::cluster_key::ClusterKey;

use crate::in_flight::InFlight;
use crate::{ClientError, CLIENT_BLOCK};

/// One data node as the client reaches it.
pub(crate) struct DataNodeLink {
    pub node: NodeId,
    /// The client's node id on this connection (the same on every link of a client).
    pub client_node: NodeId,
    connection: ClientConnection,
    /// The node's first coordinator, which answers heartbeats.
    coordinator: BlockAddress,
    /// (interval ms, misses max): the cluster's heartbeat settings, from the Welcome.
    heartbeat: (u32, u32),
    /// The cluster as this node plans with it, from the Welcome.
    cluster: ClusterShape,
}

impl DataNodeLink {
    /// Connects to the data node at `address` as client node `id` (`None`: the node picks
    /// one), proving the process holds `key`, waiting at most `timeout` for each step; what
    /// arrives goes to `in_flight`. The node is live at once when `started`, else once it
    /// answers a heartbeat as started.
    pub fn connect(
        address: impl ToSocketAddrs,
        id: Option<NodeId>,
        key: Option<&ClusterKey>,
        timeout: Duration,
        in_flight: &Arc<InFlight>,
        started: bool,
    ) -> Result<Self, String> {
        let receiving = in_flight.clone();
        let handler = move |event: Event<'_>| receiving.receive(event);
        let connection = ClientConnection::connect(address, id, key, timeout, handler)
            .map_err(|e| e.to_string())?;
        let welcome = connection.welcome().clone();
        let info = NodeInfo::decode(&welcome.info)
            .ok_or_else(|| format!("node {} sent no usable node info", welcome.node.0))?;
        if info.cluster.node(welcome.node).is_none() {
            return Err(format!("node {} is not in its own cluster", welcome.node.0));
        }
        let coordinator = BlockAddress::new(welcome.node, TC_BLOCK, 0);
        in_flight.connected(welcome.node, started);
        if !started {
            // Ask at once whether it serves, not a heartbeat interval later.
            let me = BlockAddress::new(welcome.client_node, CLIENT_BLOCK, 0);
            let ping = ClientPing {
                client: me,
                sequence: in_flight.pings_sent(),
            };
            let _ = connection.send(&ping.to_signal(coordinator, me), &[]);
        }
        // A connection that closed before its node was marked live stays out of the set.
        if connection.is_closed() {
            in_flight.lose_node(welcome.node, "the connection closed at once".into());
        }
        Ok(Self {
            node: welcome.node,
            client_node: welcome.client_node,
            connection,
            coordinator,
            heartbeat: (info.heartbeat_interval_ms, info.heartbeat_misses_max),
            cluster: info.cluster,
        })
    }

    /// The coordinator that answers heartbeats.
    pub fn coordinator(&self) -> BlockAddress {
        self.coordinator
    }

    pub fn send(&self, signal: &Signal, section: &[u8]) -> Result<(), String> {
        self.connection
            .send(signal, section)
            .map_err(|closed| format!("data node {}: {}", self.node.0, closed.0))
    }

    /// Closes the connection; its receive thread reports the loss.
    pub fn shut_down(&self, reason: String) {
        self.connection.shut_down(reason);
    }

    pub fn is_closed(&self) -> bool {
        self.connection.is_closed()
    }
}

/// One data node of the cluster: where it listens, and the connection to it, if any.
pub(crate) struct NodeSlot {
    pub node: NodeId,
    /// `host:port` to connect to again; `None` for a standalone node.
    pub address: Option<String>,
    pub link: RwLock<Option<DataNodeLink>>,
}

impl NodeSlot {
    pub fn link(&self) -> RwLockReadGuard<'_, Option<DataNodeLink>> {
        self.link.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a connection to the node is wanted: there is none, or it closed.
    pub fn needs_connection(&self) -> bool {
        self.address.is_some() && self.link().as_ref().is_none_or(DataNodeLink::is_closed)
    }

    pub fn replace(&self, link: DataNodeLink) {
        *self.link.write().unwrap_or_else(|p| p.into_inner()) = Some(link);
    }
}

pub(crate) struct DataNodes {
    slots: Vec<NodeSlot>,
    /// The cluster's shape, as the first node connected told it (every node plans with the
    /// same one).
    cluster: ClusterShape,
    /// (interval ms, misses max) for the client's heartbeats: the strictest any node gave.
    heartbeat: (u32, u32),
    /// The cluster's key, proven again on every connection made later.
    key: Option<ClusterKey>,
}

impl DataNodes {
    /// `links` must not be empty; `addresses` names every data node (those not connected
    /// now too), for connecting again.
    pub fn new(
        links: Vec<DataNodeLink>,
        addresses: Vec<(NodeId, String)>,
        key: Option<ClusterKey>,
    ) -> Self {
        assert!(!links.is_empty(), "a client needs a data node");
        let cluster = links[0].cluster.clone();
        let strictest = |(i, m): (u32, u32), (li, lm): (u32, u32)| (i.min(li), m.min(lm));
        let heartbeat = links.iter().map(|link| link.heartbeat).reduce(strictest);
        let heartbeat = heartbeat.expect("a client has a data node");
        let mut slots: Vec<NodeSlot> = addresses
            .into_iter()
            .map(|(node, address)| NodeSlot {
                node,
                address: Some(address),
                link: RwLock::new(None),
            })
            .collect();
        for link in links {
            match slots.iter_mut().find(|slot| slot.node == link.node) {
                Some(slot) => slot.link = RwLock::new(Some(link)),
                None => slots.push(NodeSlot {
                    node: link.node,
                    address: None,
                    link: RwLock::new(Some(link)),
                }),
            }
        }
        Self {
            slots,
            cluster,
            heartbeat,
            key,
        }
    }

    pub fn key(&self) -> Option<&ClusterKey> {
        self.key.as_ref()
    }

    pub fn cluster(&self) -> &ClusterShape {
        &self.cluster
    }

    pub fn slots(&self) -> &[NodeSlot] {
        &self.slots
    }

    pub fn heartbeat(&self) -> (u32, u32) {
        self.heartbeat
    }

    /// Whether the client connects again to nodes it lost (it knows their addresses: a
    /// cluster's client, not a standalone node's).
    pub fn connects_again(&self) -> bool {
        self.slots.iter().any(|slot| slot.address.is_some())
    }

    /// The coordinators of `node`, as the cluster's shape counts them.
    fn coordinators(&self, node: NodeId) -> u16 {
        self.cluster.node(node).map_or(1, |n| n.tc_instances.max(1))
    }

    /// A coordinator on a live node; `spread` (a transaction's or scan's id) spreads the
    /// choices over the live nodes and their `tc` instances.
    pub fn any_coordinator(&self, live: NodeSet, spread: u64) -> Option<BlockAddress> {
        let count = live.len() as u64;
        if count == 0 {
            return None;
        }
        let node = live.iter().nth((spread % count) as usize)?;
        let instance = (spread / count) % u64::from(self.coordinators(node));
        Some(BlockAddress::new(node, TC_BLOCK, instance as u16))
    }

    /// A coordinator on the first live node of `chain` (a partition's replicas, primary
    /// first), where the transaction's first operation runs without a hop between nodes;
    /// `spread` picks among that node's `tc` instances.
    pub fn coordinator_for(
        &self,
        live: NodeSet,
        chain: &ReplicaChain,
        spread: u64,
    ) -> Option<BlockAddress> {
        let node = first_live_replica(chain, live)?;
        let instance = spread % u64::from(self.coordinators(node));
        Some(BlockAddress::new(node, TC_BLOCK, instance as u16))
    }

    /// The dictionary of a live node (any will do: those that are not the master pass the
    /// request on and the answer back).
    pub fn dict(&self, live: NodeSet) -> Option<BlockAddress> {
        let node = live.iter().next()?;
        Some(BlockAddress::new(node, DICT_BLOCK, 0))
    }

    /// Sends `signal` over the connection to its receiver's node; `Err(reason)` when that
    /// node is not connected.
    pub fn send(&self, signal: &Signal, section: &[u8]) -> Result<(), String> {
        let node = signal.receiver().node();
        let not_connected = || format!("data node {} is not connected", node.0);
        let slot = self.slots.iter().find(|slot| slot.node == node);
        let link = slot.ok_or_else(not_connected)?.link();
        link.as_ref()
            .ok_or_else(not_connected)?
            .send(signal, section)
    }
}

/// The node of `chain`'s first replica that is live: the primary, or the backup that took
/// its place.
fn first_live_replica(chain: &ReplicaChain, live: NodeSet) -> Option<NodeId> {
    chain.replicas[..chain.count as usize]
        .iter()
        .map(|replica| replica.node())
        .find(|&node| live.contains(node))
}

/// The error for what was in flight through a data node whose connection was lost: a
/// commit may or may not have happened; anything else the cluster aborts.
pub(crate) fn lost_connection_error(node: NodeId, committing: bool, reason: &str) -> ClientError {
    if committing {
        ClientError::node(
            ErrorCode::OutcomeUnknown as u32,
            format!(
                "the connection to data node {} was lost while the transaction was committing \
                 ({reason}): it may or may not have committed",
                node.0
            ),
        )
    } else {
        ClientError::node(
            ErrorCode::NodeFailure as u32,
            format!(
                "the connection to data node {} was lost before the transaction committed \
                 ({reason}): the cluster aborts it; retry",
                node.0
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kista_datanode::protocol::LDM_BLOCK;

    #[test]
    fn a_transaction_goes_to_its_partitions_primary_or_the_backup_that_took_over() {
        let ldm = |node: u8| BlockAddress::new(NodeId(node), LDM_BLOCK, 0);
        let chain = ReplicaChain::of(&[ldm(2), ldm(1)]);
        let both = NodeSet::of([NodeId(1), NodeId(2)]);
        assert_eq!(first_live_replica(&chain, both), Some(NodeId(2)));
        assert_eq!(
            first_live_replica(&chain, NodeSet::of([NodeId(1)])),
            Some(NodeId(1))
        );
        assert_eq!(first_live_replica(&chain, NodeSet::of([NodeId(3)])), None);
    }
}
