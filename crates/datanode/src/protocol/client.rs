//! What a client may send a data node, and what the node tells a client when it connects.
//!
//! Clients address only the dictionary and the coordinators, with the signals of the client
//! protocol, naming themselves as the client; everything else (the node's internal signals,
//! load reports, other clients' addresses) is refused before it enters the node, and the
//! transport closes the connection.

use kista_signal::{BlockAddress, NodeId, Signal, TypedSignal};

use super::*;
use crate::cluster::{ClusterShape, DataNodeShape};

/// Checks one signal from the client on connection `client_node`.
pub fn check_client_signal(signal: &Signal, client_node: NodeId) -> Result<(), String> {
    let sender = signal.sender();
    let names_itself = |client: BlockAddress| {
        if client == sender && client.node() == client_node {
            Ok(())
        } else {
            Err(format!(
                "signal {} names client {client}, but comes from {sender}",
                signal.number().0
            ))
        }
    };
    let number = signal.number();
    let receiver = signal.receiver().block();
    let malformed =
        |error: kista_signal::PayloadError| format!("malformed signal {}: {error}", number.0);
    let client = if receiver == TC_BLOCK {
        if number == KeyRequest::NUMBER {
            KeyRequest::from_signal(signal).map(|s| s.client)
        } else if number == EndBatch::NUMBER {
            EndBatch::from_signal(signal).map(|s| s.client)
        } else if number == ScanRequest::NUMBER {
            ScanRequest::from_signal(signal).map(|s| s.client)
        } else if number == ScanNext::NUMBER {
            ScanNext::from_signal(signal).map(|s| s.client)
        } else if number == ClientPing::NUMBER {
            ClientPing::from_signal(signal).map(|s| s.client)
        } else {
            return Err(format!(
                "signal {} is not one a client may send a coordinator",
                number.0
            ));
        }
    } else if receiver == DICT_BLOCK {
        if number == CreateTableRequest::NUMBER {
            CreateTableRequest::from_signal(signal).map(|s| s.client)
        } else if number == CreateIndexRequest::NUMBER {
            CreateIndexRequest::from_signal(signal).map(|s| s.client)
        } else if number == DropTableRequest::NUMBER {
            DropTableRequest::from_signal(signal).map(|s| s.client)
        } else if number == DropIndexRequest::NUMBER {
            DropIndexRequest::from_signal(signal).map(|s| s.client)
        } else if number == AlterTableRequest::NUMBER {
            AlterTableRequest::from_signal(signal).map(|s| s.client)
        } else if number == IndexBuiltRequest::NUMBER {
            IndexBuiltRequest::from_signal(signal).map(|s| s.client)
        } else if number == ForeignKeyRequest::NUMBER {
            ForeignKeyRequest::from_signal(signal).map(|s| s.client)
        } else if number == DropForeignKeyRequest::NUMBER {
            DropForeignKeyRequest::from_signal(signal).map(|s| s.client)
        } else if number == ReplaceTableRequest::NUMBER {
            ReplaceTableRequest::from_signal(signal).map(|s| s.client)
        } else if number == TableLookupRequest::NUMBER {
            TableLookupRequest::from_signal(signal).map(|s| s.client)
        } else if number == TableListRequest::NUMBER {
            TableListRequest::from_signal(signal).map(|s| s.client)
        } else {
            return Err(format!(
                "signal {} is not one a client may send the dictionary",
                number.0
            ));
        }
    } else if receiver == INFO_BLOCK {
        if number == InfoRequest::NUMBER {
            InfoRequest::from_signal(signal).map(|s| s.client)
        } else {
            return Err(format!(
                "signal {} is not one a client may send the info block",
                number.0
            ));
        }
    } else {
        return Err(format!("clients may not address block {}", receiver.0));
    };
    names_itself(client.map_err(malformed)?)
}

/// What a client learns when it connects: the cluster's shape as this node plans with it
/// (where the coordinators are, and, with a table's partition count, where its partitions
/// live), and how often to check that the node is alive (the cluster's heartbeat settings).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    pub cluster: ClusterShape,
    pub heartbeat_interval_ms: u32,
    pub heartbeat_misses_max: u32,
}

impl NodeInfo {
    /// Little-endian: `heartbeat_interval_ms` u32, `heartbeat_misses_max` u32, replicas
    /// u16, node count u16, then per node its id u8, node group u16, `tc` and `ldm`
    /// instances u16 each.
    pub fn encode(&self) -> Vec<u8> {
        let nodes = self.cluster.nodes();
        let mut bytes = Vec::with_capacity(12 + 7 * nodes.len());
        bytes.extend_from_slice(&self.heartbeat_interval_ms.to_le_bytes());
        bytes.extend_from_slice(&self.heartbeat_misses_max.to_le_bytes());
        bytes.extend_from_slice(&self.cluster.replicas().to_le_bytes());
        bytes.extend_from_slice(&(nodes.len() as u16).to_le_bytes());
        for node in nodes {
            bytes.push(node.node.0);
            for count in [node.node_group, node.tc_instances, node.ldm_instances] {
                bytes.extend_from_slice(&count.to_le_bytes());
            }
        }
        bytes
    }

    /// `None` when the bytes are short or describe no valid cluster.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let u32_of = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let heartbeat_interval_ms = u32_of(bytes.get(0..4)?);
        let heartbeat_misses_max = u32_of(bytes.get(4..8)?);
        let (replicas, count) = (
            u16::from_le_bytes([*bytes.get(8)?, *bytes.get(9)?]),
            u16::from_le_bytes([*bytes.get(10)?, *bytes.get(11)?]),
        );
        let nodes = bytes.get(12..12 + 7 * usize::from(count))?;
        let nodes = nodes
            .chunks_exact(7)
            .map(|n| DataNodeShape {
                node: NodeId(n[0]),
                node_group: u16::from_le_bytes([n[1], n[2]]),
                tc_instances: u16::from_le_bytes([n[3], n[4]]),
                ldm_instances: u16::from_le_bytes([n[5], n[6]]),
            })
            .collect();
        let cluster = ClusterShape::new(replicas, nodes).ok()?;
        let usable = heartbeat_interval_ms > 0 && heartbeat_misses_max > 0;
        usable.then_some(Self {
            cluster,
            heartbeat_interval_ms,
            heartbeat_misses_max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kista_signal::BlockId;

    const CLIENT: BlockAddress = BlockAddress::new(NodeId(70), BlockId(1), 0);
    const TC: BlockAddress = BlockAddress::new(NodeId(1), TC_BLOCK, 0);

    fn end_batch(client: BlockAddress) -> Signal {
        EndBatch {
            client,
            client_tx: 1,
            execute: ExecuteMode::Commit,
        }
        .to_signal(TC, CLIENT)
    }

    #[test]
    fn a_client_signal_naming_its_sender_passes() {
        assert_eq!(check_client_signal(&end_batch(CLIENT), NodeId(70)), Ok(()));
    }

    #[test]
    fn naming_another_client_is_refused() {
        let other = BlockAddress::new(NodeId(71), BlockId(1), 0);
        assert!(check_client_signal(&end_batch(other), NodeId(70)).is_err());
    }

    #[test]
    fn internal_signals_and_blocks_are_refused() {
        let report = LoadReport { entries: 0 }.to_signal(TC, CLIENT);
        assert!(check_client_signal(&report, NodeId(70)).is_err());
        let ldm = BlockAddress::new(NodeId(1), LDM_BLOCK, 0);
        let to_ldm = Abort {
            tc: TC,
            transaction: 1,
        }
        .to_signal(ldm, CLIENT);
        assert!(check_client_signal(&to_ldm, NodeId(70))
            .unwrap_err()
            .contains("block"));
    }

    #[test]
    fn malformed_payloads_are_refused() {
        let mut signal = end_batch(CLIENT);
        signal.header.payload_words = 1;
        assert!(check_client_signal(&signal, NodeId(70))
            .unwrap_err()
            .contains("malformed"));
        let mut bad_mode = end_batch(CLIENT);
        let words = bad_mode.header.payload_words as usize;
        bad_mode.payload[words - 1] = 77;
        assert!(check_client_signal(&bad_mode, NodeId(70)).is_err());
    }

    #[test]
    fn node_info_round_trips_and_refuses_nonsense() {
        let node = |id: u8, group: u16| DataNodeShape {
            node: NodeId(id),
            node_group: group,
            tc_instances: 2,
            ldm_instances: 4,
        };
        let cluster = ClusterShape::new(2, vec![node(1, 0), node(2, 0), node(3, 1), node(4, 1)]);
        let info = NodeInfo {
            cluster: cluster.unwrap(),
            heartbeat_interval_ms: 1500,
            heartbeat_misses_max: 3,
        };
        let bytes = info.encode();
        assert_eq!(NodeInfo::decode(&bytes), Some(info.clone()));
        assert_eq!(NodeInfo::decode(&bytes[..bytes.len() - 1]), None);
        assert_eq!(NodeInfo::decode(&[]), None);
        let mut no_coordinator = bytes.clone();
        no_coordinator[12 + 3] = 0; // node 1's tc instances
        assert_eq!(NodeInfo::decode(&no_coordinator), None);
        let never_beats = NodeInfo {
            heartbeat_interval_ms: 0,
            ..info
        };
        assert_eq!(NodeInfo::decode(&never_beats.encode()), None);
    }
}
