//! The arbitrator: when a failure leaves survivors that are no majority of the cluster, it
//! decides whether they may go on, so that after a network split at most one side does.
//!
//! It says yes to the first side that asks and remembers it as the winner; later it says
//! yes only to survivors within the winner (a winning side may lose more nodes), never to
//! nodes outside it. A node that restarts and joins the winner's membership becomes part of
//! the winner. A start from disk begins a new life of the cluster: its participants are the
//! winner from then on, whatever an earlier life's split left (a start of an earlier or the
//! same life changes nothing: a stale node cannot start a cluster of its own). The nodes
//! that start stopped as stale do not count against survivors (they stop, whichever order
//! their stops are noticed in), nor for them, until they restart into the cluster. The
//! management server hosts it, as `ndb_mgmd` hosts NDB's, and it keeps what the data
//! nodes report there ([`NodeReports`]: started or not, data memory and disk).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use kista_runtime::{Block, Context};
use kista_signal::{BlockAddress, NodeId, Signal, TypedSignal};

use crate::cluster::NodeSet;
use crate::protocol::{
    ArbitrationConf, ArbitrationRequest, ClusterLifeBegins, ClusterLifeBegunConf, MembershipGrew,
    MembershipShrank, MemoryUsage, NodeStarted, NodeSuspected, ARBITRATOR_BLOCK,
};

/// The management server's node id: data nodes have 1-48, clients 64 and up.
pub const MANAGEMENT_NODE: NodeId = NodeId(49);

/// Where the management server's arbitrator runs.
pub const fn arbitrator_address() -> BlockAddress {
    BlockAddress::new(MANAGEMENT_NODE, ARBITRATOR_BLOCK, 0)
}

/// What the data nodes report to the management server, written by the [`Arbitrator`]
/// block and read by the management server's admin commands: which are started (a node
/// reports its first start, the master a restarted node's; a lost connection, which the
/// management server reports as a `NodeSuspected`, clears it) and each one's data memory and
/// disk (reported every heartbeat interval).
#[derive(Debug, Default)]
pub struct NodeReports {
    started: AtomicU64,
    /// Removed by the cluster, until their connection closes (a paused process's stays).
    removed: AtomicU64,
    /// `[node id]` → what it last reported of its memory and disk.
    usage: Mutex<Vec<Option<MemoryUsage>>>,
}

impl NodeReports {
    pub fn is_started(&self, node: NodeId) -> bool {
        NodeSet(self.started.load(Ordering::Acquire)).contains(node)
    }

    /// Whether the cluster removed `node` (and its connection has not closed since).
    pub fn is_removed(&self, node: NodeId) -> bool {
        NodeSet(self.removed.load(Ordering::Acquire)).contains(node)
    }

    fn removed(&self, nodes: NodeSet) {
        self.started.fetch_and(!nodes.0, Ordering::AcqRel);
        self.removed.fetch_or(nodes.0, Ordering::AcqRel);
    }

    /// What `node` last reported of its memory and disk.
    fn usage_of(&self, node: NodeId) -> Option<MemoryUsage> {
        let usage = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        usage.get(usize::from(node.0)).copied().flatten()
    }

    /// The latest (used bytes, limit bytes) `node` reported.
    pub fn memory_of(&self, node: NodeId) -> Option<(u64, u64)> {
        (self.usage_of(node)).map(|usage| (usage.used_bytes, usage.limit_bytes))
    }

    /// The latest (free MiB, size MiB) of `node`'s data directory's disk it reported, once
    /// its process measured it.
    pub fn disk_of(&self, node: NodeId) -> Option<(u32, u32)> {
        let usage = self
            .usage_of(node)
            .filter(|usage| usage.disk_size_mib > 0)?;
        Some((usage.disk_free_mib, usage.disk_size_mib))
    }

    fn started(&self, node: NodeId) {
        self.started
            .fetch_or(NodeSet::of([node]).0, Ordering::AcqRel);
        self.rejoined(node);
    }

    /// `node` is a member again (its removal may have been reported after the connection
    /// of its earlier life closed).
    fn rejoined(&self, node: NodeId) {
        self.removed
            .fetch_and(!NodeSet::of([node]).0, Ordering::AcqRel);
    }

    fn lost(&self, nodes: NodeSet) {
        self.started.fetch_and(!nodes.0, Ordering::AcqRel);
        self.removed.fetch_and(!nodes.0, Ordering::AcqRel);
        let mut usage = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        for node in nodes.iter() {
            if let Some(slot) = usage.get_mut(usize::from(node.0)) {
                *slot = None;
            }
        }
    }

    fn usage_reported(&self, node: NodeId, reported: MemoryUsage) {
        let mut usage = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        let index = usize::from(node.0);
        if usage.len() <= index {
            usage.resize(index + 1, None);
        }
        usage[index] = Some(reported);
    }
}

#[derive(Default)]
pub struct Arbitrator {
    /// The survivors it last let go on.
    winner: Option<NodeSet>,
    /// The latest cluster life a start from disk began, and the nodes it stopped.
    cluster_life: u32,
    stopping: NodeSet,
    reports: Arc<NodeReports>,
}

impl Arbitrator {
    /// An arbitrator that keeps what the data nodes report in `reports`.
    pub fn new(reports: Arc<NodeReports>) -> Self {
        Self {
            winner: None,
            cluster_life: 0,
            stopping: NodeSet::EMPTY,
            reports,
        }
    }

    /// A start from disk began the cluster's life `cluster_life` with `participants`;
    /// `stopping` stop.
    pub fn life_begins(&mut self, cluster_life: u32, participants: NodeSet, stopping: NodeSet) {
        if cluster_life > self.cluster_life {
            self.cluster_life = cluster_life;
            self.winner = Some(participants);
            self.stopping = stopping;
        }
    }

    /// Whether `survivors` may go on.
    pub fn decide(&mut self, survivors: NodeSet) -> bool {
        let going_on = survivors.minus(self.stopping);
        let granted = going_on != NodeSet::EMPTY
            && self
                .winner
                .is_none_or(|winner| going_on.is_subset_of(winner));
        if granted {
            self.winner = Some(going_on);
        }
        granted
    }

    /// `joined` joined a membership that is now `members`. When the rest of that
    /// membership is within the winner, so is `joined` from now on (a node a start from
    /// disk stopped too: it restarted into the cluster); a membership outside the winner
    /// (a side that lost) gains nothing.
    pub fn membership_grew(&mut self, members: NodeSet, joined: NodeId) {
        let mut before = members;
        before.remove(joined);
        if let Some(winner) = &mut self.winner {
            if before.is_subset_of(*winner) {
                winner.insert(joined);
                self.stopping.remove(joined);
            }
        }
    }
}

impl Block for Arbitrator {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        if let Ok(usage) = MemoryUsage::from_signal(signal) {
            let node = signal.sender().node();
            self.reports.usage_reported(node, usage);
        } else if let Ok(started) = NodeStarted::from_signal(signal) {
            if let Ok(node) = u8::try_from(started.node) {
                self.reports.started(NodeId(node));
            }
        } else if let Ok(lost) = NodeSuspected::from_signal(signal) {
            self.reports.lost(lost.suspects);
        } else if let Ok(shrank) = MembershipShrank::from_signal(signal) {
            self.reports.removed(shrank.removed);
        } else if let Ok(grew) = MembershipGrew::from_signal(signal) {
            if let Ok(joined) = u8::try_from(grew.joined) {
                self.reports.rejoined(NodeId(joined));
                self.membership_grew(grew.members, NodeId(joined));
            }
        } else if let Ok(begins) = ClusterLifeBegins::from_signal(signal) {
            self.life_begins(begins.cluster_life, begins.participants, begins.stopping);
            let conf = ClusterLifeBegunConf {
                cluster_life: begins.cluster_life,
            };
            ctx.send_typed(signal.sender(), &conf);
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

    #[test]
    fn a_start_from_disk_of_a_later_life_begins_arbitration_afresh() {
        let mut arbitrator = Arbitrator::default();
        arbitrator.life_begins(2, set(&[1, 2, 3]), set(&[]));
        assert!(arbitrator.decide(set(&[1])), "node 1 won a split");
        // Every node crashed; node 2's disk restores the next life alone, 1 and 3 stop.
        arbitrator.life_begins(3, set(&[2]), set(&[1, 3]));
        assert!(
            arbitrator.decide(set(&[2, 3])),
            "node 1's stop noticed before node 3's"
        );
        assert!(arbitrator.decide(set(&[2])), "the new life's side goes on");
        assert!(!arbitrator.decide(set(&[1])), "the old winner lost");
        assert!(!arbitrator.decide(set(&[3])), "a stopped node wins nothing");
        // Node 3 restarts into the cluster, and node 2 fails: node 3 goes on alone.
        arbitrator.membership_grew(set(&[2, 3]), NodeId(3));
        assert!(
            arbitrator.decide(set(&[3])),
            "a node the start stopped that rejoined is a member like any other"
        );
        // A stale node's start of an earlier life wins nothing.
        arbitrator.life_begins(3, set(&[1]), set(&[]));
        arbitrator.life_begins(2, set(&[1]), set(&[]));
        assert!(!arbitrator.decide(set(&[1])));
    }
}
