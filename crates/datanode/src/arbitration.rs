//! The arbitrator: when a failure leaves survivors that are no majority of the cluster, it
//! decides whether they may go on, so that after a network split at most one side does.
//!
//! It says yes to the first side that asks and remembers it as the winner; later it says
//! yes only to survivors within the winner (a winning side may lose more nodes), never to
//! nodes outside it, until the membership grows again. The management server hosts it, as
//! `ndb_mgmd` hosts NDB's.

use kista_runtime::{Block, Context};
use kista_signal::{BlockAddress, NodeId, Signal, TypedSignal};

use crate::cluster::NodeSet;
use crate::protocol::{ArbitrationConf, ArbitrationRequest, ARBITRATOR_BLOCK};

/// The management server's node id: data nodes have 1-48, clients 64 and up.
pub const MANAGEMENT_NODE: NodeId = NodeId(49);

/// Where the management server's arbitrator runs.
pub const fn arbitrator_address() -> BlockAddress {
    BlockAddress::new(MANAGEMENT_NODE, ARBITRATOR_BLOCK, 0)
}

#[derive(Default)]
pub struct Arbitrator {
    /// The survivors it last let go on.
    winner: Option<NodeSet>,
}

impl Arbitrator {
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

    /// The cluster's membership grew (a node restarted and joined): any of its members may
    /// win the next split.
    pub fn membership_grew(&mut self) {
        self.winner = None;
    }
}

impl Block for Arbitrator {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        if let Ok(request) = ArbitrationRequest::from_signal(signal) {
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
        arbitrator.membership_grew();
        assert!(arbitrator.decide(set(&[1, 3])));
    }
}
