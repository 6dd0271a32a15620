//! The first bytes of a connection.
//!
//! ```text
//! dialer -> node  Hello    magic "KSTA", version u16, role u16, node id u8, 7 bytes zero
//! node -> dialer  Welcome  magic "KSTA", version u16, your node id u8, node id u8,
//!                          info length u32, info bytes (what the node tells clients)
//! ```
//!
//! A client's Hello carries the node id the management server leased it (the same id on
//! every data node of the cluster, so any node's blocks can answer it), or 0 to let a
//! standalone node pick one for the connection; a peer (another data node, the management
//! server) names its own configured id, which the node checks against the peers it expects;
//! an admin connection gets the node's own id back and then speaks the management text
//! protocol. A dialer that sends anything else, or nothing within [`HANDSHAKE_TIMEOUT`], is
//! closed.

use std::io::{Read, Write};
use std::time::Duration;

use kista_signal::NodeId;

use crate::CLIENT_NODE_IDS;

// The refusal message of `HandshakeError::ClientNodeId` names this range.
const _: () = assert!(*CLIENT_NODE_IDS.start() == 64 && *CLIENT_NODE_IDS.end() == 255);

pub const MAGIC: [u8; 4] = *b"KSTA";
/// The protocol this build speaks; peers must match exactly.
pub const PROTOCOL_VERSION: u16 = 1;
pub const HELLO_BYTES: usize = 16;
/// Longest a node waits for a new connection's Hello.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest info block a Welcome may carry.
pub const INFO_BYTES_MAX: usize = 4096;

/// Who is dialing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// An application through the client library, with the node id the management server
    /// leased it, or `None` to let the node pick one for the connection.
    Client(Option<NodeId>),
    /// A member of the cluster with its configured node id.
    Peer(NodeId),
    /// The management client's text protocol (`kista mgm`).
    Admin,
}

impl Role {
    fn code(self) -> (u16, u8) {
        match self {
            Role::Client(id) => (1, id.map_or(0, |id| id.0)),
            Role::Peer(node) => (2, node.0),
            Role::Admin => (3, 0),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("the peer is not speaking the Kista protocol (bad magic {0:02x?})")]
    BadMagic([u8; 4]),
    #[error("the peer speaks protocol version {0}, this build speaks {PROTOCOL_VERSION}")]
    Version(u16),
    #[error("unknown peer role {0}")]
    Role(u16),
    #[error("the Welcome's info block is {0} bytes, at most {INFO_BYTES_MAX} are allowed")]
    InfoTooLong(usize),
    #[error("a peer must name its node id (1-63), it named {0}")]
    PeerNodeId(u8),
    #[error("a client must name a client node id (64-255) or 0, it named {0}")]
    ClientNodeId(u8),
    #[error("the node refused the connection: {0}")]
    Refused(String),
    #[error("handshake I/O: {0}")]
    Io(#[from] std::io::Error),
}

pub fn write_hello(stream: &mut impl Write, role: Role) -> std::io::Result<()> {
    let mut hello = [0u8; HELLO_BYTES];
    hello[..4].copy_from_slice(&MAGIC);
    hello[4..6].copy_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    let (code, node) = role.code();
    hello[6..8].copy_from_slice(&code.to_le_bytes());
    hello[8] = node;
    stream.write_all(&hello)
}

pub fn read_hello(stream: &mut impl Read) -> Result<Role, HandshakeError> {
    let mut hello = [0u8; HELLO_BYTES];
    stream.read_exact(&mut hello)?;
    check_magic_and_version(&hello)?;
    match (u16::from_le_bytes([hello[6], hello[7]]), hello[8]) {
        (1, 0) => Ok(Role::Client(None)),
        (1, id) if CLIENT_NODE_IDS.contains(&id) => Ok(Role::Client(Some(NodeId(id)))),
        (1, other) => Err(HandshakeError::ClientNodeId(other)),
        (2, node @ 1..=63) => Ok(Role::Peer(NodeId(node))),
        (2, other) => Err(HandshakeError::PeerNodeId(other)),
        (3, _) => Ok(Role::Admin),
        (other, _) => Err(HandshakeError::Role(other)),
    }
}

/// Tells a dialer why it is turned away: a Welcome without a node id, the reason as its info.
pub fn write_refusal(
    stream: &mut impl Write,
    node: NodeId,
    reason: &str,
) -> Result<(), HandshakeError> {
    let mut reason = reason.as_bytes();
    reason = &reason[..reason.len().min(INFO_BYTES_MAX)];
    let refusal = Welcome {
        client_node: NodeId(0),
        node,
        info: reason.to_vec(),
    };
    write_welcome(stream, &refusal)
}

/// What the node tells a new client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Welcome {
    /// The client's node id for this connection; its blocks' addresses use it.
    pub client_node: NodeId,
    pub node: NodeId,
    pub info: Vec<u8>,
}

pub fn write_welcome(stream: &mut impl Write, welcome: &Welcome) -> Result<(), HandshakeError> {
    if welcome.info.len() > INFO_BYTES_MAX {
        return Err(HandshakeError::InfoTooLong(welcome.info.len()));
    }
    let mut bytes = Vec::with_capacity(12 + welcome.info.len());
    bytes.extend_from_slice(&MAGIC);
    bytes.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    bytes.push(welcome.client_node.0);
    bytes.push(welcome.node.0);
    bytes.extend_from_slice(&(welcome.info.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&welcome.info);
    stream.write_all(&bytes)?;
    Ok(())
}

pub fn read_welcome(stream: &mut impl Read) -> Result<Welcome, HandshakeError> {
    let mut head = [0u8; 12];
    stream.read_exact(&mut head)?;
    check_magic_and_version(&head)?;
    let info_len = u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize;
    if info_len > INFO_BYTES_MAX {
        return Err(HandshakeError::InfoTooLong(info_len));
    }
    let mut info = vec![0u8; info_len];
    stream.read_exact(&mut info)?;
    if head[6] == 0 {
        return Err(HandshakeError::Refused(
            String::from_utf8_lossy(&info).into_owned(),
        ));
    }
    Ok(Welcome {
        client_node: NodeId(head[6]),
        node: NodeId(head[7]),
        info,
    })
}

fn check_magic_and_version(bytes: &[u8]) -> Result<(), HandshakeError> {
    let magic = [bytes[0], bytes[1], bytes[2], bytes[3]];
    if magic != MAGIC {
        return Err(HandshakeError::BadMagic(magic));
    }
    match u16::from_le_bytes([bytes[4], bytes[5]]) {
        PROTOCOL_VERSION => Ok(()),
        other => Err(HandshakeError::Version(other)),
    }
}
