//! Faults injected into the links between cluster members, so tests can split a cluster
//! without root privileges: a cut link drops every signal both ways while its TCP
//! connection stays open, as when a cable between two switches is pulled.
//!
//! The management server asks for a cut by sending a [`link_fault`] signal to
//! [`LINK_FAULT_BLOCK`] on each of the two nodes; the transport takes that signal for itself
//! (no block sees it) and only from a peer (the management server is one).

use std::sync::atomic::{AtomicBool, Ordering};

use kista_signal::{BlockAddress, BlockId, NodeId, Signal, SignalNumber};

/// The address the transport answers for itself; no block has it.
pub const LINK_FAULT_BLOCK: BlockId = BlockId(253);
const LINK_FAULT: SignalNumber = SignalNumber(1);

/// Tells node `at` to cut (`cut` true) or restore its link to `peer`.
pub fn link_fault(at: NodeId, from: BlockAddress, peer: NodeId, cut: bool) -> Signal {
    let receiver = BlockAddress::new(at, LINK_FAULT_BLOCK, 0);
    Signal::with_words(
        LINK_FAULT,
        receiver,
        from,
        &[u32::from(peer.0), u32::from(cut)],
    )
}

/// The links this node has cut, read on every batch sent or received.
pub struct LinkFaults {
    cut: [AtomicBool; 256],
}

impl Default for LinkFaults {
    fn default() -> Self {
        Self {
            cut: std::array::from_fn(|_| AtomicBool::new(false)),
        }
    }
}

impl LinkFaults {
    #[inline]
    pub fn is_cut(&self, peer: NodeId) -> bool {
        self.cut[usize::from(peer.0)].load(Ordering::Relaxed)
    }

    /// Applies `signal` if it is a link fault instruction; whether it was one.
    pub(crate) fn apply(&self, signal: &Signal) -> bool {
        if signal.receiver().block() != LINK_FAULT_BLOCK {
            return false;
        }
        if let (LINK_FAULT, [peer, cut, ..]) = (signal.number(), signal.words()) {
            if let Ok(peer) = u8::try_from(*peer) {
                self.cut[usize::from(peer)].store(*cut != 0, Ordering::SeqCst);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_stays_cut_until_restored_and_other_signals_are_not_taken() {
        let faults = LinkFaults::default();
        let mgmd = BlockAddress::new(NodeId(49), BlockId(15), 0);
        assert!(faults.apply(&link_fault(NodeId(1), mgmd, NodeId(2), true)));
        assert!(faults.is_cut(NodeId(2)));
        assert!(!faults.is_cut(NodeId(3)));
        assert!(faults.apply(&link_fault(NodeId(1), mgmd, NodeId(2), false)));
        assert!(!faults.is_cut(NodeId(2)));
        let other = Signal::new(
            SignalNumber(1),
            BlockAddress::new(NodeId(1), BlockId(10), 0),
            mgmd,
        );
        assert!(!faults.apply(&other));
    }
}
