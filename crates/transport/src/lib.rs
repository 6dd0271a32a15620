//! Framed TCP between a data node and its clients, and between the members of a cluster.
//!
//! A connection opens with a handshake ([`handshake`]): the dialer says who it is and, in a
//! cluster with a key ([`cluster_key`]), proves it holds the key; the node gives a client a
//! node id for the connection's lifetime. Then both sides send a stream of
//! signals in their wire form (`kista_signal::wire`), each carrying its section; a frame
//! batch is simply whatever one `write` carries. The node side ([`server`]) reads each
//! connection on its own receive thread (`receive`), checks every signal (wire form, sender, receiver,
//! and the node's own validator) and injects it into the runtime; anything malformed or
//! hostile closes that connection alone, with the reason logged. Replies leave through the
//! runtime's remote sink into the connection's outgoing buffer, which its send thread
//! writes. [`peers`] connects the cluster's members to each other over the same
//! frames; [`client`] is the client side of the protocol.

pub mod client;
pub mod cluster_key;
mod connection;
pub mod faults;
mod frames;
pub mod handshake;
pub mod peers;
mod receive;
pub mod server;

pub use frames::FrameReader;

/// Node ids the node hands to client connections: one per connection, reused after close.
pub const CLIENT_NODE_IDS: std::ops::RangeInclusive<u8> = 64..=255;
/// Bytes a connection may have waiting to be written before it counts as not reading and
/// is closed.
pub const OUTGOING_BYTES_MAX: usize = 64 << 20;
/// Bytes read from a socket at once.
pub const READ_CHUNK_BYTES: usize = 256 * 1024;
