//! The nodes this node no longer talks to, and its own request to stop.
//!
//! A node the cluster declared failed may only be paused (a stopped process, a cut cable),
//! not dead: when it wakes up it must not act on the cluster that went on without it. So
//! the membership shuts it out: nothing more is delivered from it or sent to it until it has
//! restarted and been let in again (NDB's Qmgr tells the transporters the same).
//!
//! One door stays open: signals between the [`FENCE_GATE_BLOCK`]s of two nodes cross the
//! fence, so that a restarted node can ask to be let in. The block with that id (the data
//! node's membership) must therefore check who each signal comes from itself.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use kista_signal::{BlockId, NodeId, Signal};

/// The block whose signals to and from the same block on a shut-out node still pass.
pub const FENCE_GATE_BLOCK: BlockId = BlockId(252);

/// Whether `signal` goes between two gate blocks, and so passes a fence.
#[inline]
pub fn passes_gate(signal: &Signal) -> bool {
    signal.sender().block() == FENCE_GATE_BLOCK && signal.receiver().block() == FENCE_GATE_BLOCK
}

/// One flag per node id, read on every signal that crosses the node's boundary.
pub struct NodeFence {
    shut_out: [AtomicBool; 256],
}

impl Default for NodeFence {
    fn default() -> Self {
        Self {
            shut_out: std::array::from_fn(|_| AtomicBool::new(false)),
        }
    }
}

impl NodeFence {
    pub fn shut_out(&self, node: NodeId) {
        self.shut_out[usize::from(node.0)].store(true, Ordering::SeqCst);
    }

    pub fn let_in(&self, node: NodeId) {
        self.shut_out[usize::from(node.0)].store(false, Ordering::SeqCst);
    }

    #[inline]
    pub fn is_shut_out(&self, node: NodeId) -> bool {
        self.shut_out[usize::from(node.0)].load(Ordering::Relaxed)
    }
}

/// Why a block stopped its node, kept for whoever started the node.
#[derive(Default)]
pub struct StopReason(Mutex<Option<String>>);

impl StopReason {
    /// Records the first reason given.
    pub fn record(&self, reason: &str) {
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert_with(|| reason.to_string());
    }

    pub fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_stays_shut_out_until_let_in() {
        let fence = NodeFence::default();
        assert!(!fence.is_shut_out(NodeId(2)));
        fence.shut_out(NodeId(2));
        assert!(fence.is_shut_out(NodeId(2)));
        assert!(!fence.is_shut_out(NodeId(3)));
        fence.let_in(NodeId(2));
        assert!(!fence.is_shut_out(NodeId(2)));
    }

    #[test]
    fn the_first_stop_reason_is_kept() {
        let reason = StopReason::default();
        reason.record("arbitration lost");
        reason.record("later");
        assert_eq!(reason.get().as_deref(), Some("arbitration lost"));
    }
}
