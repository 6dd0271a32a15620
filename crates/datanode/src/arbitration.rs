//! The arbitrator: when a failure leaves survivors that are no majority of the cluster, it
//! decides whether they may go on, so that after a network split at most one side does.
//!
//! It says yes to the first side that asks and remembers it as the winner; later it says
//! yes only to survivors within the winner (a winning side may lose more nodes), never to
//! nodes outside it. A node that restarts and joins the winner's membership becomes part of
//! the winner. The management server hosts it, as
//! `ndb_mgmd` hosts NDB's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kista_runtime::{Block, Context};
use kista_signal::{BlockAddress, NodeId, Signal, TypedSignal};

use crate::cluster::NodeSet;
use crate::protocol::{
    ArbitrationConf, ArbitrationRequest, MembershipGrew, NodeStarted, NodeSuspected,
    ARBITRATOR_BLOCK,
};

/// The management server's node id: data nodes have 1-48, clients 64 and up.
pub const MANAGEMENT_NODE: NodeId = NodeId(49);

/// Where the management server's arbitrator runs.
pub const fn arbitrator_address() -> BlockAddress {
    BlockAddress::new(MANAGEMENT_NODE, ARBITRATOR_BLOCK, 0)
}

/// The data nodes the cluster reported started: written by the [`Arbitrator`] block (a
/// node reports its first start, the master a restarted node's; a lost connection, which
/// the management server reports as a `NodeSuspected`, clears it), read by the management
/// server's admin commands.
#[derive(Debug, Default)]
pub struct StartedNodes(AtomicU64);

impl StartedNodes {
    pub fn contains(&self, node: NodeId) -> bool {
        NodeSet(self.0.load(Ordering::Acquire)).contains(node)
    }

    fn insert(&self, node: NodeId) {
        self.0.fetch_or(NodeSet::of([node]).0, Ordering::AcqRel);
    }

    fn remove(&self, nodes: NodeSet) {
        self.0.fetch_and(!nodes.0, Ordering::AcqRel);
    }
}

#[derive(Default)]
pub struct Arbitrator {
    /// The survivors it last let go on.
    winner: Option<NodeSet>,
    started: Arc<StartedNodes>,
}

impl Arbitrator {
    /// An arbitrator that keeps the started nodes in `started`.
    pub fn new(started: Arc<StartedNodes>) -> Self {
        Self {
            winner: None,
            started,
        }
    }

    /// Whether `survivors` may go on.
    pub fn decide(&mut self, survivors: NodeSet) -> bool {
        let granted = self
            .winner
            .is_none_or(|winner| survivors.is_subset_of(winner));
        if granted {
            self.winner = Some(survivors);
        }
        granted
    }

    /// `joined` joined a membership that is now `members`. When the rest of that
    /// membership is within the winner, so is `joined` from now on; a membership outside
    /// the winner (a side that lost) gains nothing.
    pub fn membership_grew(&mut self, members: NodeSet, joined: NodeId) {
        let mut before = members;
        before.remove(joined);
        if let Some(winner) = &mut self.winner {
            if before.is_subset_of(*winner) {
                winner.insert(joined);
            }
        }
    }
}

impl Block for Arbitrator {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        if let Ok(started) = NodeStarted::from_signal(signal) {
            if let Ok(node) = u8::try_from(started.node) {
                self.started.insert(NodeId(node));
            }
        } else if let Ok(lost) = NodeSuspected::from_signal(signal) {
            self.started.remove(lost.suspects);
        } else if let Ok(grew) = MembershipGrew::from_signal(signal) {
            if let Ok(joined) = u8::try_from(grew.joined) {
                self.membership_grew(grew.members, NodeId(joined));
            }
        } else if let Ok(request) = ArbitrationRequest::from_signal(signal) {
            let granted = self.decide(request.survivors);
            let conf = ArbitrationConf {
                round: request.round,
                granted: u32::from(granted),
            };
            ctx.send_typed(signal.sender(), &conf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[u8]) -> NodeSet {
        NodeSet::of(ids.iter().map(|&id| NodeId(id)))
    }

    #[test]
    fn only_one_side_of_a_split_wins() {
        let mut arbitrator = Arbitrator::default();
        assert!(arbitrator.decide(set(&[1, 2])));
        assert!(!arbitrator.decide(set(&[3, 4])), "the other side loses");
        assert!(arbitrator.decide(set(&[2])), "the winner may shrink");
        assert!(!arbitrator.decide(set(&[1])), "but not to a node it lost");
        arbitrator.membership_grew(set(&[2, 1]), NodeId(1));
        assert!(arbitrator.decide(set(&[1])), "node 1 rejoined the winner");
        arbitrator.membership_grew(set(&[3, 4]), NodeId(4));
        assert!(
            !arbitrator.decide(set(&[4])),
            "a losing side's join wins nothing"
        );
    }
}
