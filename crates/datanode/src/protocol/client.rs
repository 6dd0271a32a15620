//! What a client may send a data node, and what the node tells a client when it connects.
//!
//! Clients address only the dictionary and the coordinators, with the signals of the client
//! protocol, naming themselves as the client; everything else (the node's internal signals,
//! load reports, other clients' addresses) is refused before it enters the node, and the
//! transport closes the connection.

use kista_signal::{BlockAddress, NodeId, Signal, TypedSignal};

use super::*;

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
        } else {
            return Err(format!(
                "signal {} is not one a client may send the dictionary",
                number.0
            ));
        }
    } else {
        return Err(format!("clients may not address block {}", receiver.0));
    };
    names_itself(client.map_err(malformed)?)
}

/// What a client learns when it connects: where the coordinators are, and how often to
/// check the node is alive (the cluster's own heartbeat settings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    pub tc_instances: u16,
    pub heartbeat_interval_ms: u32,
    pub heartbeat_misses_max: u32,
}

impl NodeInfo {
    const BYTES: usize = 10;

    /// `tc_instances` u16, `heartbeat_interval_ms` u32, `heartbeat_misses_max` u32, LE.
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(Self::BYTES);
        bytes.extend_from_slice(&self.tc_instances.to_le_bytes());
        bytes.extend_from_slice(&self.heartbeat_interval_ms.to_le_bytes());
        bytes.extend_from_slice(&self.heartbeat_misses_max.to_le_bytes());
        bytes
    }

    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let bytes = bytes.get(..Self::BYTES)?;
        let u32_at = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        let info = Self {
            tc_instances: u16::from_le_bytes([bytes[0], bytes[1]]),
            heartbeat_interval_ms: u32_at(2),
            heartbeat_misses_max: u32_at(6),
        };
        let usable = info.tc_instances > 0
            && info.heartbeat_interval_ms > 0
            && info.heartbeat_misses_max > 0;
        usable.then_some(info)
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
        let info = NodeInfo {
            tc_instances: 3,
            heartbeat_interval_ms: 1500,
            heartbeat_misses_max: 3,
        };
        assert_eq!(NodeInfo::decode(&info.encode()), Some(info));
        assert_eq!(NodeInfo::decode(&[]), None);
        assert_eq!(NodeInfo::decode(&[3, 0]), None);
        let no_coordinator = NodeInfo {
            tc_instances: 0,
            ..info
        };
        assert_eq!(NodeInfo::decode(&no_coordinator.encode()), None);
    }
}
