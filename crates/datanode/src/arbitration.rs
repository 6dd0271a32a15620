//! The arbitrator: when a failure leaves survivors that are no majority of the cluster, it
//! decides whether they may go on, so that after a network split at most one side does.
//!
//! It says yes to the first side that asks and remembers it as the winner; later it says
//! yes only to survivors within the winner (a winning side may lose more nodes), never to
//! nodes outside it. It also follows the membership the presidents report as it shrinks
//! and grows (failures that need no arbitration too), and says no to survivors outside
//! it: a node the cluster already removed, asking for itself and the nodes it still
//! thinks members, must not become the winner the real members then lose to. A node that
//! restarts and joins the winner's membership becomes part of the winner. A start from disk begins a new life of the cluster: its participants are the
//! winner from then on, whatever an earlier life's split left (a start of an earlier or the
//! same life changes nothing: a stale node cannot start a cluster of its own). The nodes
//! that start stopped as stale do not count against survivors (they stop, whichever order
//! their stops are noticed in), nor for them, until they restart into the cluster. The
//! management server hosts it, as `ndb_mgmd` hosts NDB's, and it keeps what the data
//! nodes report there ([`NodeReports`]: started or not, data memory and disk).
//!
//! What it decided outlives a restart of the management server: each change of the winner
//! or the life is saved ([`ArbitrationRecord`], the management server's disk) before the
//! answer that depends on it goes. Forgotten, the winner of a split would no longer hold
//! back a node that was left behind: started alone after the others crashed, it would be
//! let go on, and the start from disk would restore its older GCI (NDB's arbitrator keeps
//! nothing; its management server's restart opens that window).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use kista_runtime::{Block, Context};
use kista_signal::{BlockAddress, NodeId, Signal, TypedSignal};

use crate::cluster::NodeSet;
use crate::protocol::{
    ArbitrationConf, ArbitrationRequest, ClusterLifeBegins, ClusterLifeBegunConf, MembershipGrew,
    MembershipShrank, MemoryUsage, NodeStarted, NodeSuspected, ARBITRATOR_BLOCK,
};
use crate::twin_file::{SealError, TwinKind};

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

/// What the arbitrator decided, which must outlive it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArbitrationState {
    /// The survivors it last let go on.
    pub winner: Option<NodeSet>,
    /// The latest cluster life a start from disk began, and the nodes it stopped.
    pub cluster_life: u32,
    pub stopping: NodeSet,
    /// The membership as the presidents last reported it (`None`: not known yet).
    pub members: Option<NodeSet>,
}

/// The file the management server keeps an [`ArbitrationState`] in (written whole, then
/// renamed over the last, so a crash leaves one or the other).
pub const ARBITRATION_FILE: TwinKind = TwinKind {
    magic: *b"KARB",
    format_version: 1,
    path: "arbitration",
    request_tag: 0,
};

const STATE_BYTES: usize = 36;

/// Why an arbitration file cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArbitrationFileError {
    #[error("{0}")]
    Sealed(#[from] SealError),
    #[error("its content is {0} bytes, not {STATE_BYTES}")]
    Length(usize),
}

impl ArbitrationState {
    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        ARBITRATION_FILE.seal(0, STATE_BYTES, |out| {
            out.extend_from_slice(&u32::from(self.winner.is_some()).to_le_bytes());
            out.extend_from_slice(&self.winner.unwrap_or_default().0.to_le_bytes());
            out.extend_from_slice(&self.cluster_life.to_le_bytes());
            out.extend_from_slice(&self.stopping.0.to_le_bytes());
            out.extend_from_slice(&u32::from(self.members.is_some()).to_le_bytes());
            out.extend_from_slice(&self.members.unwrap_or_default().0.to_le_bytes());
        })
    }

    /// Reads a file's bytes back, checking everything.
    pub fn decode(bytes: &[u8]) -> Result<Self, ArbitrationFileError> {
        let (_, payload) = ARBITRATION_FILE.unseal(bytes)?;
        let payload: &[u8; STATE_BYTES] = payload
            .try_into()
            .map_err(|_| ArbitrationFileError::Length(payload.len()))?;
        let word = |at: usize| u32::from_le_bytes(payload[at..at + 4].try_into().expect("4"));
        let double = |at: usize| u64::from(word(at)) | (u64::from(word(at + 4)) << 32);
        Ok(Self {
            winner: (word(0) != 0).then_some(NodeSet(double(4))),
            cluster_life: word(12),
            stopping: NodeSet(double(16)),
            members: (word(24) != 0).then_some(NodeSet(double(28))),
        })
    }
}

/// Where the arbitrator's decisions are kept: saved (durably) before it answers on them.
pub trait ArbitrationRecord: Send {
    fn save(&mut self, state: &ArbitrationState) -> Result<(), String>;
}

/// A record that keeps nothing: an arbitrator that starts afresh with its process (the
/// simulation's, which never restarts).
pub struct Unrecorded;

impl ArbitrationRecord for Unrecorded {
    fn save(&mut self, _: &ArbitrationState) -> Result<(), String> {
        Ok(())
    }
}

pub struct Arbitrator {
    state: ArbitrationState,
    record: Box<dyn ArbitrationRecord>,
    reports: Arc<NodeReports>,
}

impl Default for Arbitrator {
    fn default() -> Self {
        Self::new(Arc::default())
    }
}

impl Arbitrator {
    /// An arbitrator that keeps what the data nodes report in `reports` and its decisions
    /// nowhere.
    pub fn new(reports: Arc<NodeReports>) -> Self {
        Self::recorded(reports, ArbitrationState::default(), Box::new(Unrecorded))
    }

    /// An arbitrator that goes on from `state` (what `record` last saved).
    pub fn recorded(
        reports: Arc<NodeReports>,
        state: ArbitrationState,
        record: Box<dyn ArbitrationRecord>,
    ) -> Self {
        Self {
            state,
            record,
            reports,
        }
    }

    /// A start from disk began the cluster's life `cluster_life` with `participants`;
    /// `stopping` stop. Life 1 is a new cluster's first (no node held any data): what an
    /// earlier cluster's arbitration left, kept on the management server's disk, is over.
    /// (Refusing a life none of whose participants is among the last members was tried:
    /// a start that stopped, a partial one whose decision refused, leaves its own
    /// membership as the last, and the next start was refused for good.)
    pub fn life_begins(&mut self, cluster_life: u32, participants: NodeSet, stopping: NodeSet) {
        let state = &mut self.state;
        if cluster_life > state.cluster_life || cluster_life == 1 {
            state.cluster_life = cluster_life;
            state.winner = Some(participants);
            state.stopping = stopping;
            state.members = Some(participants);
        }
    }

    /// Whether `survivors` may go on.
    pub fn decide(&mut self, survivors: NodeSet) -> bool {
        let state = &mut self.state;
        let going_on = survivors.minus(state.stopping);
        let within = |set: Option<NodeSet>| set.is_none_or(|set| going_on.is_subset_of(set));
        let granted = going_on != NodeSet::EMPTY && within(state.winner) && within(state.members);
        if granted {
            state.winner = Some(going_on);
            state.members = Some(going_on);
        }
        granted
    }

    /// The president removed nodes: the membership is `members` now. A report of a
    /// membership beyond the one known (a stale president's) changes nothing.
    pub fn membership_shrank(&mut self, members: NodeSet) {
        let state = &mut self.state;
        if state
            .members
            .is_none_or(|known| members.is_subset_of(known))
        {
            state.members = Some(members);
        }
    }

    /// `joined` joined a membership that is now `members`. When the rest of that
    /// membership is within the winner, so is `joined` from now on (a node a start from
    /// disk stopped too: it restarted into the cluster); a membership outside the winner
    /// (a side that lost) gains nothing.
    pub fn membership_grew(&mut self, members: NodeSet, joined: NodeId) {
        let mut before = members;
        before.remove(joined);
        let state = &mut self.state;
        if let Some(winner) = &mut state.winner {
            if before.is_subset_of(*winner) {
                winner.insert(joined);
                state.stopping.remove(joined);
            }
        }
        if state.members.is_none_or(|known| before.is_subset_of(known)) {
            state.members = Some(members);
        }
    }

    /// What it decided so far.
    pub fn state(&self) -> ArbitrationState {
        self.state
    }

    /// Saves the state if `before` differs: before any answer that depends on it goes. A
    /// record that fails is said, and the answer goes all the same (the cluster keeps
    /// running; only a restart of the management server would forget).
    fn save_if_changed(&mut self, ctx: &mut Context, before: ArbitrationState) {
        if self.state == before {
            return;
        }
        if let Err(why) = self.record.save(&self.state) {
            ctx.warn(&format!(
                "the arbitrator's decision could not be saved ({why}): a restart of the \
                 management server would forget it"
            ));
        }
    }
}

impl Block for Arbitrator {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        let before = self.state;
        let answer = self.take(signal);
        // Saved before the answer that may depend on it goes.
        self.save_if_changed(ctx, before);
        if let Some(answer) = answer {
            ctx.send(answer);
        }
    }
}

impl Arbitrator {
    /// Takes in one signal: what the data nodes report, or a question, whose answer (to
    /// its sender) is returned.
    fn take(&mut self, signal: &Signal) -> Option<Signal> {
        let (asker, here) = (signal.sender(), signal.receiver());
        if let Ok(usage) = MemoryUsage::from_signal(signal) {
            self.reports.usage_reported(asker.node(), usage);
        } else if let Ok(started) = NodeStarted::from_signal(signal) {
            if let Ok(node) = u8::try_from(started.node) {
                self.reports.started(NodeId(node));
            }
        } else if let Ok(lost) = NodeSuspected::from_signal(signal) {
            self.reports.lost(lost.suspects);
        } else if let Ok(shrank) = MembershipShrank::from_signal(signal) {
            self.reports.removed(shrank.removed);
            self.membership_shrank(shrank.members);
        } else if let Ok(grew) = MembershipGrew::from_signal(signal) {
            if let Ok(joined) = u8::try_from(grew.joined) {
                self.reports.rejoined(NodeId(joined));
                self.membership_grew(grew.members, NodeId(joined));
            }
        } else if let Ok(begins) = ClusterLifeBegins::from_signal(signal) {
            self.life_begins(begins.cluster_life, begins.participants, begins.stopping);
            let cluster_life = begins.cluster_life;
            return Some(ClusterLifeBegunConf { cluster_life }.to_signal(asker, here));
        } else if let Ok(request) = ArbitrationRequest::from_signal(signal) {
            let granted = u32::from(self.decide(request.survivors));
            let round = request.round;
            return Some(ArbitrationConf { round, granted }.to_signal(asker, here));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[u8]) -> NodeSet {
        NodeSet::of(ids.iter().map(|&id| NodeId(id)))
    }

    #[test]
    fn the_arbitrators_file_reads_back_as_written_and_refuses_damage() {
        for state in [
            ArbitrationState::default(),
            ArbitrationState {
                winner: Some(set(&[1, 48])),
                cluster_life: 7,
                stopping: set(&[2]),
                members: Some(set(&[1, 3, 48])),
            },
        ] {
            assert_eq!(ArbitrationState::decode(&state.encode()), Ok(state));
        }
        let mut damaged = ArbitrationState::default().encode();
        damaged[18] ^= 1;
        assert!(ArbitrationState::decode(&damaged).is_err());
    }

    #[test]
    fn an_arbitrator_started_from_its_saved_state_holds_the_loser_back_as_before() {
        let mut arbitrator = Arbitrator::default();
        arbitrator.life_begins(2, set(&[1, 2]), set(&[]));
        assert!(arbitrator.decide(set(&[1])), "node 1 goes on alone");
        // The management server restarts: its arbitrator goes on from what it saved.
        let saved = ArbitrationState::decode(&arbitrator.state().encode()).unwrap();
        let mut again = Arbitrator::recorded(Arc::default(), saved, Box::new(Unrecorded));
        assert!(
            !again.decide(set(&[2])),
            "node 2, left behind, is held back"
        );
        assert!(again.decide(set(&[1])));
        let mut forgetful = Arbitrator::default();
        assert!(
            forgetful.decide(set(&[2])),
            "what a fresh one would let go on"
        );
        // Every data directory emptied: a new cluster's first start, whatever was saved.
        again.life_begins(1, set(&[1, 2]), set(&[]));
        assert!(
            again.decide(set(&[2])),
            "a new cluster's split, decided afresh"
        );
    }

    #[test]
    fn a_node_the_cluster_removed_wins_nothing_for_the_nodes_it_still_sees() {
        let mut arbitrator = Arbitrator::default();
        arbitrator.life_begins(1, set(&[1, 2, 3, 4]), set(&[]));
        // Node 1 removed node 2 (cut off from it) without asking: {1, 3, 4} hold node
        // group 1 whole. Node 2, still seeing node 4, asks for {2, 4}.
        arbitrator.membership_shrank(set(&[1, 3, 4]));
        assert!(!arbitrator.decide(set(&[2, 4])), "node 2 is no member");
        // Node 4 fails in turn: {1, 3} go on, and so would they after a split.
        arbitrator.membership_shrank(set(&[1, 3]));
        assert!(arbitrator.decide(set(&[1, 3])));
        // A stale president's report of a larger membership changes nothing.
        arbitrator.membership_shrank(set(&[2, 3]));
        assert_eq!(arbitrator.state().members, Some(set(&[1, 3])));
        arbitrator.membership_grew(set(&[1, 2, 3]), NodeId(2));
        assert_eq!(arbitrator.state().members, Some(set(&[1, 2, 3])));
        assert!(
            arbitrator.decide(set(&[2])),
            "a node that rejoined may go on"
        );
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
        assert!(arbitrator.decide(set(&[1, 2])), "nodes 1 and 2 won a split");
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
