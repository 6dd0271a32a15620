//! The first bytes of a connection, where the dialer proves it belongs to the cluster.
//!
//! ```text
//! dialer -> node  Hello      magic "KSTA", version u16, role u16, node id u8, keyed u8,
//!                            6 bytes zero, nonce [16]
//! node -> dialer  Challenge  magic, version, kind 2, nonce [16], proof [32]     (keyed only)
//! dialer -> node  Proof      proof [32]                                         (keyed only)
//! node -> dialer  Welcome    magic, version, kind 1, your node id u8, node id u8,
//!                            info length u32, info bytes (what the node tells clients)
//!              or Refusal    magic, version, kind 0, reason length u32, reason
//! ```
//!
//! A cluster started with a key ([`ClusterKey`]; `kista up` makes one) admits only dialers
//! that hold it: the node proves it holds the key over the dialer's nonce and its own, and
//! the dialer answers with its proof over both (HMAC-SHA-256 under different labels, so
//! one side's proof is never the other's). Both nonces are fresh, so a recorded exchange
//! proves nothing later; the dialer checks the node's proof too, so a stranger posing as a
//! node learns nothing a client sends. A node without a key (a standalone node for
//! development) admits only dialers without one, and each side refuses the other's mode
//! with a reason that says what to give.
//!
//! A client's Hello carries the node id the management server leased it (the same id on
//! every data node of the cluster, so any node's blocks can answer it), or 0 to let a
//! standalone node pick one for the connection; a peer (another data node, the management
//! server) names its own configured id, which the node checks against the peers it expects;
//! an admin connection gets the node's own id back and then speaks the management text
//! protocol. A dialer that sends anything else, or does not finish within
//! [`HANDSHAKE_TIMEOUT`], is closed.

use std::io::{Read, Write};
use std::time::Duration;

use kista_signal::NodeId;

use crate::cluster_key::{ClusterKey, PROOF_BYTES};
use crate::CLIENT_NODE_IDS;

// The refusal message of `HandshakeError::ClientNodeId` names this range.
const _: () = assert!(*CLIENT_NODE_IDS.start() == 64 && *CLIENT_NODE_IDS.end() == 255);

pub const MAGIC: [u8; 4] = *b"KSTA";
/// The protocol this build speaks; peers must match exactly. 2: the cluster key's proofs.
pub const PROTOCOL_VERSION: u16 = 2;
pub const HELLO_BYTES: usize = 32;
const NONCE_BYTES: usize = 16;
/// Longest a node waits for a new connection's whole handshake (each read).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest info block a Welcome (or reason a Refusal) may carry.
pub const INFO_BYTES_MAX: usize = 4096;

const NODE_PROOF_LABEL: &[u8] = b"kista handshake v2: the node holds the key";
const DIALER_PROOF_LABEL: &[u8] = b"kista handshake v2: the dialer holds the key";

/// The kinds of a node's answer.
const REFUSAL: u8 = 0;
const WELCOME: u8 = 1;
const CHALLENGE: u8 = 2;

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
    #[error("unknown handshake message kind {0}")]
    Kind(u8),
    #[error("the Welcome's info block is {0} bytes, at most {INFO_BYTES_MAX} are allowed")]
    InfoTooLong(usize),
    #[error("a peer must name its node id (1-63), it named {0}")]
    PeerNodeId(u8),
    #[error("a client must name a client node id (64-255) or 0, it named {0}")]
    ClientNodeId(u8),
    /// The dialer did not prove it holds the cluster key (no key, or another one).
    #[error("{0}")]
    Unauthenticated(String),
    #[error(
        "the node did not prove it holds this process's cluster key: the key file is \
         another cluster's, or the node is not a member of this cluster"
    )]
    NodeUnproven,
    #[error("the node refused the connection: {0}")]
    Refused(String),
    #[error("handshake I/O: {0}")]
    Io(#[from] std::io::Error),
}

/// The dialer's side, whole: Hello, the proofs when keyed, then the node's Welcome (or its
/// refusal as [`HandshakeError::Refused`]).
pub fn dial(
    stream: &mut (impl Read + Write),
    role: Role,
    key: Option<&ClusterKey>,
) -> Result<Welcome, HandshakeError> {
    let hello = hello_bytes(role, key.is_some())?;
    stream.write_all(&hello)?;
    if let Some(key) = key {
        match read_kind(stream)? {
            CHALLENGE => {}
            REFUSAL => return Err(read_refusal(stream)?),
            other => return Err(HandshakeError::Kind(other)),
        }
        let mut challenge = [0u8; NONCE_BYTES + PROOF_BYTES];
        stream.read_exact(&mut challenge)?;
        let (node_nonce, node_proof) = challenge.split_at(NONCE_BYTES);
        if !key.verify(&[NODE_PROOF_LABEL, &hello, node_nonce], node_proof) {
            return Err(HandshakeError::NodeUnproven);
        }
        stream.write_all(&key.prove(&[DIALER_PROOF_LABEL, &hello, node_nonce]))?;
    }
    read_welcome(stream)
}

/// The node's side up to its decision: reads the Hello and, when this node holds a key,
/// checks the dialer's proof. A dialer in the other mode, or with another key, is refused
/// here (the refusal sent) with [`HandshakeError::Unauthenticated`]. The caller then
/// answers with [`write_welcome`] or [`write_refusal`].
pub fn accept(
    stream: &mut (impl Read + Write),
    key: Option<&ClusterKey>,
) -> Result<Role, HandshakeError> {
    let mut hello = [0u8; HELLO_BYTES];
    stream.read_exact(&mut hello)?;
    check_magic_and_version(&hello)?;
    let role = role_of(&hello)?;
    let keyed = hello[9] != 0;
    let unauthenticated = |stream: &mut dyn Write, reason: &str| {
        let _ = write_refusal(stream, reason);
        HandshakeError::Unauthenticated(reason.to_string())
    };
    match (key, keyed) {
        (None, false) => Ok(role),
        (None, true) => Err(unauthenticated(
            stream,
            "this node runs without a cluster key and admits only processes without one",
        )),
        (Some(_), false) => Err(unauthenticated(
            stream,
            "this cluster admits only processes holding its key: give --key-file \
             (or KISTA_KEY_FILE) the cluster's key file (kista up keeps it in DIR/cluster.key)",
        )),
        (Some(key), true) => {
            let mut nonce = [0u8; NONCE_BYTES];
            fill_nonce(&mut nonce)?;
            let mut challenge = Vec::with_capacity(7 + NONCE_BYTES + PROOF_BYTES);
            push_head(&mut challenge, CHALLENGE);
            challenge.extend_from_slice(&nonce);
            challenge.extend_from_slice(&key.prove(&[NODE_PROOF_LABEL, &hello, &nonce]));
            stream.write_all(&challenge)?;
            let mut proof = [0u8; PROOF_BYTES];
            if let Err(error) = stream.read_exact(&mut proof) {
                // A dialer with another cluster's key finds the node's proof wrong and
                // hangs up here.
                return Err(HandshakeError::Unauthenticated(format!(
                    "the process sent no proof of the cluster key ({error}): it holds \
                     another cluster's key, or none"
                )));
            }
            if key.verify(&[DIALER_PROOF_LABEL, &hello, &nonce], &proof) {
                Ok(role)
            } else {
                Err(unauthenticated(
                    stream,
                    "the process does not hold this cluster's key (its key file is another \
                     cluster's)",
                ))
            }
        }
    }
}

fn hello_bytes(role: Role, keyed: bool) -> std::io::Result<[u8; HELLO_BYTES]> {
    let mut hello = [0u8; HELLO_BYTES];
    hello[..4].copy_from_slice(&MAGIC);
    hello[4..6].copy_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    let (code, node) = role.code();
    hello[6..8].copy_from_slice(&code.to_le_bytes());
    hello[8] = node;
    hello[9] = u8::from(keyed);
    fill_nonce(&mut hello[HELLO_BYTES - NONCE_BYTES..])?;
    Ok(hello)
}

/// A fresh nonce from the system's random source.
fn fill_nonce(nonce: &mut [u8]) -> std::io::Result<()> {
    getrandom::fill(nonce).map_err(|e| std::io::Error::other(format!("no random nonce: {e}")))
}

fn role_of(hello: &[u8; HELLO_BYTES]) -> Result<Role, HandshakeError> {
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

/// Tells a dialer why it is turned away.
pub fn write_refusal(stream: &mut (impl Write + ?Sized), reason: &str) -> std::io::Result<()> {
    let reason = &reason.as_bytes()[..reason.len().min(INFO_BYTES_MAX)];
    let mut bytes = Vec::with_capacity(11 + reason.len());
    push_head(&mut bytes, REFUSAL);
    bytes.extend_from_slice(&(reason.len() as u32).to_le_bytes());
    bytes.extend_from_slice(reason);
    stream.write_all(&bytes)
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
    let mut bytes = Vec::with_capacity(13 + welcome.info.len());
    push_head(&mut bytes, WELCOME);
    bytes.push(welcome.client_node.0);
    bytes.push(welcome.node.0);
    bytes.extend_from_slice(&(welcome.info.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&welcome.info);
    stream.write_all(&bytes)?;
    Ok(())
}

fn read_welcome(stream: &mut impl Read) -> Result<Welcome, HandshakeError> {
    match read_kind(stream)? {
        WELCOME => {}
        REFUSAL => return Err(read_refusal(stream)?),
        other => return Err(HandshakeError::Kind(other)),
    }
    let mut ids = [0u8; 6];
    stream.read_exact(&mut ids)?;
    let info_len = u32::from_le_bytes([ids[2], ids[3], ids[4], ids[5]]) as usize;
    let info = read_bounded(stream, info_len)?;
    Ok(Welcome {
        client_node: NodeId(ids[0]),
        node: NodeId(ids[1]),
        info,
    })
}

/// The reason of a Refusal whose head was read, as the error it is.
fn read_refusal(stream: &mut impl Read) -> Result<HandshakeError, HandshakeError> {
    let mut length = [0u8; 4];
    stream.read_exact(&mut length)?;
    let reason = read_bounded(stream, u32::from_le_bytes(length) as usize)?;
    Ok(HandshakeError::Refused(
        String::from_utf8_lossy(&reason).into_owned(),
    ))
}

fn read_bounded(stream: &mut impl Read, length: usize) -> Result<Vec<u8>, HandshakeError> {
    if length > INFO_BYTES_MAX {
        return Err(HandshakeError::InfoTooLong(length));
    }
    let mut bytes = vec![0u8; length];
    stream.read_exact(&mut bytes)?;
    Ok(bytes)
}

fn push_head(bytes: &mut Vec<u8>, kind: u8) {
    bytes.extend_from_slice(&MAGIC);
    bytes.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    bytes.push(kind);
}

/// The kind of the node's next message, after its magic and version.
fn read_kind(stream: &mut impl Read) -> Result<u8, HandshakeError> {
    let mut head = [0u8; 7];
    stream.read_exact(&mut head)?;
    check_magic_and_version(&head)?;
    Ok(head[6])
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

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixStream;

    use super::*;

    /// Runs the node's side (`accept` then a Welcome) on a thread against the dialer's.
    fn shake(
        node_key: Option<ClusterKey>,
        dialer_key: Option<&ClusterKey>,
    ) -> (
        Result<Role, HandshakeError>,
        Result<Welcome, HandshakeError>,
    ) {
        let (mut dialer, mut node) = UnixStream::pair().expect("a socket pair");
        let node_side = std::thread::spawn(move || {
            let role = accept(&mut node, node_key.as_ref())?;
            let welcome = Welcome {
                client_node: NodeId(64),
                node: NodeId(1),
                info: b"info".to_vec(),
            };
            write_welcome(&mut node, &welcome)?;
            Ok(role)
        });
        let welcomed = dial(&mut dialer, Role::Client(None), dialer_key);
        drop(dialer);
        (node_side.join().expect("no panic"), welcomed)
    }

    fn key() -> ClusterKey {
        ClusterKey::generate().expect("random")
    }

    #[test]
    fn a_dialer_holding_the_clusters_key_is_welcomed() {
        let cluster = key();
        let (role, welcome) = shake(Some(cluster.clone()), Some(&cluster));
        assert_eq!(role.expect("admitted"), Role::Client(None));
        assert_eq!(welcome.expect("welcomed").info, b"info");
    }

    #[test]
    fn without_keys_on_either_side_the_handshake_is_the_open_one() {
        let (role, welcome) = shake(None, None);
        assert_eq!(role.expect("admitted"), Role::Client(None));
        assert_eq!(welcome.expect("welcomed").client_node, NodeId(64));
    }

    #[test]
    fn a_dialer_without_the_key_or_with_another_is_refused_with_a_reason() {
        let (role, welcome) = shake(Some(key()), None);
        assert!(matches!(role, Err(HandshakeError::Unauthenticated(_))));
        let refused = welcome.expect_err("refused").to_string();
        assert!(refused.contains("--key-file"), "{refused}");

        // Another cluster's key: the dialer finds the node's proof wrong and hangs up.
        let (role, welcome) = shake(Some(key()), Some(&key()));
        assert!(matches!(role, Err(HandshakeError::Unauthenticated(_))));
        assert!(matches!(welcome, Err(HandshakeError::NodeUnproven)));
    }

    #[test]
    fn a_keyed_dialer_refuses_a_node_without_a_key() {
        let (role, welcome) = shake(None, Some(&key()));
        assert!(matches!(role, Err(HandshakeError::Unauthenticated(_))));
        let refused = welcome.expect_err("refused").to_string();
        assert!(refused.contains("without a cluster key"), "{refused}");
    }

    /// The bytes a dialer sent in one handshake prove nothing in the next: the node's nonce
    /// is new each time.
    #[test]
    fn a_recorded_proof_replayed_is_refused() {
        let cluster = key();
        let (mut dialer, mut node) = UnixStream::pair().expect("a socket pair");
        let node_key = cluster.clone();
        let first = std::thread::spawn(move || accept(&mut node, Some(&node_key)));
        let hello = hello_bytes(Role::Admin, true).expect("random");
        dialer.write_all(&hello).expect("sent");
        let mut challenge = [0u8; 7 + NONCE_BYTES + PROOF_BYTES];
        dialer.read_exact(&mut challenge).expect("challenged");
        let proof = cluster.prove(&[DIALER_PROOF_LABEL, &hello, &challenge[7..7 + NONCE_BYTES]]);
        dialer.write_all(&proof).expect("sent");
        assert_eq!(
            first.join().expect("no panic").expect("admitted"),
            Role::Admin
        );

        let (mut replayer, mut node) = UnixStream::pair().expect("a socket pair");
        let replayed = std::thread::spawn(move || accept(&mut node, Some(&cluster)));
        replayer.write_all(&hello).expect("sent");
        replayer.read_exact(&mut challenge).expect("challenged");
        replayer.write_all(&proof).expect("sent");
        assert!(matches!(
            replayed.join().expect("no panic"),
            Err(HandshakeError::Unauthenticated(_))
        ));
    }

    #[test]
    fn a_hello_in_another_protocol_is_refused() {
        let (mut dialer, mut node) = UnixStream::pair().expect("a socket pair");
        let mut hello = hello_bytes(Role::Admin, false).expect("random");
        hello[4..6].copy_from_slice(&1u16.to_le_bytes());
        dialer.write_all(&hello).expect("sent");
        assert!(matches!(
            accept(&mut node, None),
            Err(HandshakeError::Version(1))
        ));
    }
}
