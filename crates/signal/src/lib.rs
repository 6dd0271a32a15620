//! Signals: the only way blocks talk to each other.
//!
//! This crate owns the vocabulary every other layer shares: where a signal goes
//! ([`BlockAddress`]), what it is ([`SignalNumber`], [`Signal`], [`TypedSignal`]) and how its
//! bytes look on the wire ([`wire`]). It depends on nothing of ours and does no I/O.
//!
//! A [`Signal`] is a fixed 128-byte value: a 16-byte header and up to
//! [`PAYLOAD_WORDS_MAX`] 32-bit payload words. It is `Copy` and never allocates, so job
//! buffers can hold signals in place. Bulk data (keys, rows, scan batches) travels in an
//! optional *section*, referenced from the header by a [`SectionHandle`] into a pool the
//! runtime owns.

mod address;
mod signal;
mod typed;
pub mod wire;

pub use address::{BlockAddress, BlockId, NodeId};
pub use signal::{
    SectionHandle, Signal, SignalHeader, SignalNumber, INLINE_SECTION_BYTES_MAX, PAYLOAD_WORDS_MAX,
};
pub use typed::{PayloadError, PayloadReader, PayloadWriter, TypedSignal};
