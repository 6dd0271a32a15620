//! Cluster membership: heartbeats, failure detection, and the president's two-phase
//! removal of failed nodes (NDB's Qmgr), with arbitration when a split leaves no side
//! that alone can go on.
//!
//! Every member sends every other a heartbeat each interval; one silent for more than
//! `heartbeat_misses_max` intervals is *suspected* (in a first start, a member never heard
//! from only after `start_partial_timeout_ms`: its process may come up late), and the
//! suspicion goes to the president, the most senior member not suspected (today: the lowest node id, since all nodes start
//! together). The president then runs a round:
//!
//! 1. If some node group would have no survivor, the cluster cannot go on: it tells every
//!    survivor to stop ([`ClusterStop`]).
//! 2. It asks every survivor to shut the failed nodes out ([`FailPrepare`], repeated each
//!    interval until confirmed): from then on nothing a failed node sends is delivered, so
//!    a node that was only paused cannot act on the cluster when it wakes. A survivor obeys
//!    only the node it takes for president itself, so a member cut off from the president
//!    alone cannot remove it while the president removes that member.
//! 3. When the survivors hold no node group whole (of the membership), another part of a
//!    split could go on too: it asks the arbitrator, which says yes to one side only. A
//!    refusal, or no answer within `arbitration_timeout_ms`, stops the survivors. (A plain
//!    majority would not do: with three replicas a minority may hold every group.)
//! 4. Once all survivors confirmed (and arbitration, if needed, was won), it commits the new
//!    membership, whole ([`FailCommit`]: a survivor that missed an earlier commit takes it
//!    as it is); each survivor tells its blocks ([`NodeFailed`]), which finish or abort what
//!    the failed nodes left behind.
//!
//! A survivor that does not confirm within the heartbeat grace joins the failed nodes and
//! the round starts again; so does one suspected meanwhile.
//!
//! A node that restarts into a running cluster starts *joining*: each interval it asks every
//! other data node to let it in ([`JoinRequest`]; the membership is the runtime's fence
//! gate, so the request crosses the fence that shut the node's old incarnation out). The
//! president, when no failure round runs, asks every member to let the node in
//! ([`JoinPrepare`]) and, once all confirmed, commits the membership with the node as its
//! most junior member ([`JoinCommit`], to the members and the joiner) and tells the
//! arbitrator. A member that does not confirm within the grace, or a failure meanwhile,
//! abandons the join; the joiner keeps asking. A member that let the node in shuts it out
//! again if a failure commits before the join does.
//!
//! Members and the joiner tell their blocks ([`NodeJoined`]); the master's dictionary then
//! restarts the joiner (copies its data to it) and reports it started. The joiner shuts out
//! every node outside the membership it joined (removed nodes may wake believing they are
//! members); a node let in while it is a member in its own eyes (its late join request
//! arrived after the cluster removed it again) stops, and must restart.
//!
//! Members echo each other's heartbeats ([`HeartbeatEcho`]), which keeps each node's read
//! lease (see `read_lease`): no echo goes to a node this node suspects, nor, from a
//! president, to a survivor its round waits for.
//!
//! Since the gate lets a shut-out node's membership through, the membership heeds only its
//! members (not those it agreed to remove, and the management server's arbitrator and stop
//! requests); a join request is the one thing it takes from a data node outside the
//! membership. `tests/random_faults.rs` checks, over thousands of seeded schedules of
//! crashes, pauses, cuts and slow links, that every node reaching a generation has the same
//! membership in it (unless the two are fenced off from each other).
use std::sync::Arc;
use std::time::Duration;

use kista_runtime::{Block, Context};
use kista_signal::{BlockAddress, NodeId, Signal, TypedSignal};
use kista_storage::memory::DataMemory;

use crate::cluster::{ClusterShape, NodeSet, DATA_NODE_ID_LIMIT};
use crate::gcp::gcp_address;
use crate::metrics::NodeCounters;
use crate::node::NodeSettings;
use crate::protocol::*;
use crate::read_lease::{lease_end_ns, ReadLease};
use crate::send_with_bytes;

mod join;

/// Where arbitration stands in a president's round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arbitration {
    NotNeeded,
    Asked { since_ns: u64 },
    Granted,
}

/// A president's attempt to add `joining` to the membership.
struct JoinRound {
    round: u32,
    joining: NodeId,
    /// Members that have not confirmed they let it in.
    unconfirmed: NodeSet,
    started_ns: u64,
}

/// A president's attempt to remove `failed` from the membership.
struct FailureRound {
    round: u32,
    failed: NodeSet,
    /// Survivors that have not confirmed they shut the failed nodes out.
    unconfirmed: NodeSet,
    started_ns: u64,
    arbitration: Arbitration,
}

pub struct Membership {
    settings: Arc<NodeSettings>,
    cluster: Arc<ClusterShape>,
    /// Reported to the management server each interval.
    memory: Arc<DataMemory>,
    /// Where the node's process leaves the data directory's free space, reported with the
    /// memory (reported only: no decision reads it).
    counters: Arc<NodeCounters>,
    /// The members, most senior (the president) first.
    members: Vec<NodeId>,
    generation: u32,
    /// `[node]` → when its last heartbeat arrived.
    last_heard_ns: [u64; DATA_NODE_ID_LIMIT as usize],
    /// `[node]` → the send time of this node's latest heartbeat that `node` echoed (0:
    /// none yet), on this node's clock.
    echoed_ns: [u64; DATA_NODE_ID_LIMIT as usize],
    /// Renewed from the echoes; read by every block that serves reads.
    lease: Arc<ReadLease>,
    /// Members this node believes failed, until the membership drops them.
    suspects: NodeSet,
    /// Members this node agreed to remove (it confirmed a president's `FailPrepare` and
    /// shut them out), until the membership drops them: it heeds them no more, for it may
    /// already belong to a membership without them.
    shut_out: NodeSet,
    /// Nodes let in by a president's `JoinPrepare` and not yet members: a failure round
    /// committed meanwhile shuts them out again (that join was abandoned, and a president
    /// that was removed must not make them members behind the others' backs).
    letting_in: NodeSet,
    /// The president's round in progress.
    round: Option<FailureRound>,
    /// The president's join in progress.
    join: Option<JoinRound>,
    next_round: u32,
    /// Set once the node must stop: it ignores everything after.
    stopping: bool,
    /// Members heard from since this node started.
    heard_from: NodeSet,
    /// Whether the node holds its data: from the start in a first start of nodes that
    /// keep nothing on disk; else once the master's dictionary says so ([`NodeStarted`]),
    /// for a joiner when its copy is done, in a start from disk when every partition is
    /// restored.
    holds_data: bool,
    /// Whether the arbitrator knows this node started.
    start_reported: bool,
    /// When this node's membership began (its first tick); in a first start, a member
    /// never heard from is suspected only `start_partial_timeout_ms` after it.
    began_ns: Option<u64>,
    /// Whether this node is in a first start, where every member's process may come up
    /// late: not for a node joining a running cluster, whose members are all running.
    first_start: bool,
}

impl Membership {
    /// A member of a cluster whose data nodes all start together.
    pub fn new(
        settings: Arc<NodeSettings>,
        cluster: Arc<ClusterShape>,
        memory: Arc<DataMemory>,
        counters: Arc<NodeCounters>,
        lease: Arc<ReadLease>,
    ) -> Self {
        let keeps_data_on_disk = settings.keeps_data_on_disk();
        let membership = Self {
            memory,
            counters,
            lease,
            echoed_ns: [0; DATA_NODE_ID_LIMIT as usize],
            members: cluster.nodes().iter().map(|n| n.node).collect(),
            settings,
            cluster,
            generation: 1,
            last_heard_ns: [0; DATA_NODE_ID_LIMIT as usize],
            suspects: NodeSet::EMPTY,
            shut_out: NodeSet::EMPTY,
            letting_in: NodeSet::EMPTY,
            round: None,
            join: None,
            next_round: 1,
            stopping: false,
            heard_from: NodeSet::EMPTY,
            // A node that keeps its data on disk holds it once the start from disk is over.
            holds_data: !keeps_data_on_disk,
            start_reported: false,
            began_ns: None,
            first_start: true,
        };
        // A node alone in its cluster reads freely from the start; others once echoed.
        membership.renew_lease();
        membership
    }

    /// A node restarting into a running cluster: no member yet, it asks to join.
    pub fn joining(
        settings: Arc<NodeSettings>,
        cluster: Arc<ClusterShape>,
        memory: Arc<DataMemory>,
        counters: Arc<NodeCounters>,
        lease: Arc<ReadLease>,
    ) -> Self {
        Self {
            members: Vec::new(),
            generation: 0,
            holds_data: false,
            first_start: false,
            ..Self::new(settings, cluster, memory, counters, lease)
        }
    }

    /// Whether this node is still asking to join a running cluster: a member is always in
    /// its own membership.
    fn is_joining(&self) -> bool {
        self.members.is_empty()
    }

    /// The signal that starts the membership's heartbeats.
    pub fn start_signal(node: NodeId) -> Signal {
        let address = membership_address(node);
        MembershipTick {}.to_signal(address, address)
    }

    fn here(&self) -> NodeId {
        self.settings.node
    }

    fn member_set(&self) -> NodeSet {
        NodeSet::of(self.members.iter().copied())
    }

    /// The most senior member not suspected by this node.
    fn president(&self) -> Option<NodeId> {
        self.members
            .iter()
            .copied()
            .find(|&m| !self.suspects.contains(m) && !self.shut_out.contains(m))
    }

    fn grace_ns(&self) -> u64 {
        self.settings
            .heartbeat_interval_ms
            .saturating_mul(u64::from(self.settings.heartbeat_misses_max))
            .saturating_mul(1_000_000)
    }

    /// Whether `member` stayed silent too long: a heartbeat grace since it was last heard,
    /// or, in a first start, for a member never heard from, the partial-start timeout since
    /// this node began (processes started together on a loaded machine come up seconds
    /// apart, and a peer removed before it ever came would leave the cluster half-formed
    /// and racing for the arbitrator).
    fn is_silent(&self, member: NodeId, now_ns: u64, began_ns: u64) -> bool {
        if self.first_start && !self.heard_from.contains(member) {
            let wait_ns = self
                .settings
                .start_partial_timeout_ms
                .saturating_mul(1_000_000)
                .max(self.grace_ns());
            return now_ns.saturating_sub(began_ns) > wait_ns;
        }
        now_ns.saturating_sub(self.last_heard_ns[usize::from(member.0)]) > self.grace_ns()
    }

    fn tick(&mut self, ctx: &mut Context) {
        if self.stopping {
            return;
        }
        if let Some(arbitrator) = self.settings.arbitrator {
            let (free_bytes, size_bytes) = self.counters.measured_disk_space();
            let mib = |bytes: u64| u32::try_from(bytes >> 20).unwrap_or(u32::MAX);
            let usage = MemoryUsage {
                used_bytes: self.memory.used_bytes(),
                limit_bytes: self.memory.limit_bytes(),
                disk_free_mib: mib(free_bytes),
                disk_size_mib: mib(size_bytes),
            };
            ctx.send_typed(arbitrator, &usage);
        }
        if self.start_reported {
            self.tell_started(ctx);
        } else {
            self.report_start(ctx);
        }
        if self.is_joining() {
            self.ask_to_join(ctx);
            return self.tick_later(ctx);
        }
        let now = ctx.now_ns();
        let began_ns = *self.began_ns.get_or_insert(now);
        let here = self.here();
        let heartbeat = Heartbeat {
            generation: self.generation,
            sent_ns: now,
        };
        for &member in &self.members {
            if member != here {
                ctx.send_typed(membership_address(member), &heartbeat);
            }
        }
        let silent: Vec<NodeId> = self
            .members
            .iter()
            .copied()
            .filter(|&m| m != here && !self.suspects.contains(m))
            .filter(|&m| self.is_silent(m, now, began_ns))
            .collect();
        for member in silent {
            self.suspects.insert(member);
        }
        self.renew_lease();
        if !self.suspects.is_empty() {
            self.report_suspects(ctx);
        }
        self.check_round_timeouts(ctx);
        if self.stopping {
            return;
        }
        self.report_start(ctx);
        self.tick_later(ctx);
    }

    /// Tells the arbitrator this node started, so the management server shows it (clients
    /// use it at once then, and a node started later joins instead), once it holds its data
    /// and its read lease, no round runs and every member has been heard (in a first start,
    /// those that never came were removed).
    fn report_start(&mut self, ctx: &mut Context) {
        let here = self.here();
        let formed = self.holds_data
            && self.round.is_none()
            && self.suspects.is_empty()
            && self
                .members
                .iter()
                .all(|&m| m == here || self.heard_from.contains(m))
            && self.lease.check(ctx.now_ns()).is_ok();
        if self.start_reported || !formed {
            return;
        }
        ctx.log("started: the management server is told");
        self.start_reported = true;
        self.tell_started(ctx);
    }

    /// Tells the arbitrator this node started; again at every tick, since a report sent
    /// before the link to the management server was up is lost (kista up once waited for
    /// two nodes whose logs said the cluster served).
    fn tell_started(&self, ctx: &mut Context) {
        let here = self.here();
        if let Some(arbitrator) = self.settings.arbitrator {
            let started = NodeStarted {
                node: u32::from(here.0),
            };
            ctx.send_typed(arbitrator, &started);
        }
    }

    fn tick_later(&mut self, ctx: &mut Context) {
        let tick = MembershipTick {}.to_signal(ctx.address(), ctx.address());
        ctx.send_delayed(
            tick,
            Duration::from_millis(self.settings.heartbeat_interval_ms),
        );
    }

    fn heard(&mut self, ctx: &mut Context, heartbeat: Heartbeat, from: NodeId) {
        if from.0 >= DATA_NODE_ID_LIMIT {
            return;
        }
        self.last_heard_ns[usize::from(from.0)] = ctx.now_ns();
        self.heard_from.insert(from);
        // No echo to a node this node may be about to remove: its lease must run out
        // before the removal can commit (see `read_lease`).
        let may_remove = self.suspects.contains(from)
            || self
                .round
                .as_ref()
                .is_some_and(|round| round.unconfirmed.contains(from));
        if !may_remove {
            let echo = HeartbeatEcho {
                sent_ns: heartbeat.sent_ns,
            };
            ctx.send_typed(membership_address(from), &echo);
        }
    }

    fn echoed(&mut self, ctx: &mut Context, echo: HeartbeatEcho, from: NodeId) {
        // A time ahead of this node's clock is no heartbeat of this node's life.
        if from.0 >= DATA_NODE_ID_LIMIT || echo.sent_ns > ctx.now_ns() {
            return;
        }
        let latest = &mut self.echoed_ns[usize::from(from.0)];
        *latest = (*latest).max(echo.sent_ns);
        self.renew_lease();
        self.report_start(ctx);
    }

    /// The master's word that a restarted node holds its data again.
    fn node_started(&mut self, ctx: &mut Context, started: NodeStarted) {
        if started.node == u32::from(self.here().0) {
            self.holds_data = true;
            self.report_start(ctx);
        }
    }

    /// The read lease from the members' latest echoes: none while a member is suspected
    /// (a lost connection makes that member suspect this node at once too) or has not
    /// echoed yet; unbounded for a node alone in its membership.
    fn renew_lease(&self) {
        if self.is_joining() {
            return self.lease.renew_until(0);
        }
        let here = self.here();
        let mut oldest_echo_ns = u64::MAX;
        for &member in self.members.iter().filter(|&&m| m != here) {
            let echoed_ns = self.echoed_ns[usize::from(member.0)];
            if echoed_ns == 0 || self.suspects.contains(member) {
                return self.lease.renew_until(0);
            }
            oldest_echo_ns = oldest_echo_ns.min(echoed_ns);
        }
        let valid_until_ns = match oldest_echo_ns {
            u64::MAX => u64::MAX,
            oldest => lease_end_ns(oldest, self.grace_ns()),
        };
        self.lease.renew_until(valid_until_ns);
    }

    /// This node's `dict`, `gcp`, `tc` and `ldm` instances: who hears of membership
    /// changes.
    fn local_blocks(&self) -> Vec<BlockAddress> {
        let here = self.cluster.node(self.here());
        here.into_iter()
            .flat_map(|node| {
                [node.dict_address(), gcp_address(node.node)]
                    .into_iter()
                    .chain(node.tc_addresses())
                    .chain(node.ldm_addresses())
            })
            .collect()
    }

    /// Tells the president what this node suspects (or, being it, acts).
    fn report_suspects(&mut self, ctx: &mut Context) {
        match self.president() {
            Some(president) if president == self.here() => {
                let suspects = self.suspects;
                self.remove_nodes(ctx, suspects);
            }
            Some(president) => {
                let report = NodeSuspected {
                    suspects: self.suspects,
                };
                ctx.send_typed(membership_address(president), &report);
            }
            None => unreachable!("a node never suspects itself"),
        }
    }

    fn suspected(&mut self, ctx: &mut Context, report: NodeSuspected, from: NodeId) {
        if from == self.here() {
            self.stop_stale(ctx, report.suspects);
        }
        let reported = NodeSet(report.suspects.0 & self.member_set().0);
        self.suspects = self.suspects.union(reported);
        self.suspects.remove(self.here());
        self.renew_lease();
        if !self.suspects.is_empty() {
            self.report_suspects(ctx);
        }
    }

    /// A start from disk's decision, from this node's dictionary: `stale` stop for the
    /// reason in the section (`STALE_AT_START`: their processes start them again to copy).
    /// Sent from this block, the order crosses the fence the removal that follows raises.
    fn stop_stale(&mut self, ctx: &mut Context, stale: NodeSet) {
        let Some(reason) = ctx.section().map(|bytes| bytes.to_vec()) else {
            return;
        };
        for node in stale.iter().filter(|&node| node != self.here()) {
            let stop = ClusterStop {}.to_signal(membership_address(node), ctx.address());
            send_with_bytes(ctx, stop, &reason);
        }
    }

    // ----- the president's round -----

    /// Starts a round removing `failed` (with whatever an earlier round was removing), or
    /// leaves the running round alone when it already covers them.
    fn remove_nodes(&mut self, ctx: &mut Context, failed: NodeSet) {
        let failed = match &self.round {
            Some(round) if failed.is_subset_of(round.failed) => return,
            Some(round) => round.failed.union(failed),
            None => failed,
        };
        // A failure goes first; the joiner asks again.
        self.join = None;
        let members = self.member_set();
        let survivors = members.minus(failed);
        if let Some(group) = self.cluster.group_lost(survivors) {
            let reason = format!(
                "node group {group} lost every node ({failed:?} failed): the cluster lacks \
                 some of its data and stops"
            );
            return self.stop_cluster(ctx, survivors, &reason);
        }
        let round = self.next_round;
        self.next_round += 1;
        let now = ctx.now_ns();
        let arbitration = if self.cluster.holds_a_whole_group(members, survivors) {
            Arbitration::NotNeeded
        } else {
            let Some(arbitrator) = self.settings.arbitrator else {
                let reason = format!(
                    "the survivors {survivors:?} of {members:?} hold no whole node group and \
                     no arbitrator is configured to let them go on"
                );
                return self.stop_cluster(ctx, survivors, &reason);
            };
            ctx.send_typed(arbitrator, &ArbitrationRequest { round, survivors });
            Arbitration::Asked { since_ns: now }
        };
        for survivor in survivors.iter() {
            ctx.send_typed(membership_address(survivor), &FailPrepare { round, failed });
        }
        self.round = Some(FailureRound {
            round,
            failed,
            unconfirmed: survivors,
            started_ns: now,
            arbitration,
        });
    }

    fn prepare_confirmed(&mut self, ctx: &mut Context, conf: FailPrepareConf, from: NodeId) {
        let Some(round) = self.round.as_mut().filter(|r| r.round == conf.round) else {
            return;
        };
        round.unconfirmed.remove(from);
        self.try_commit(ctx);
    }

    fn arbitrated(&mut self, ctx: &mut Context, conf: ArbitrationConf) {
        let members = self.member_set();
        let Some(round) = self.round.as_mut().filter(|r| r.round == conf.round) else {
            return;
        };
        if conf.granted == 0 {
            let survivors = members.minus(round.failed);
            let reason =
                format!("the arbitrator let another part of the cluster go on: {survivors:?} stop");
            return self.stop_cluster(ctx, survivors, &reason);
        }
        round.arbitration = Arbitration::Granted;
        self.try_commit(ctx);
    }

    fn try_commit(&mut self, ctx: &mut Context) {
        let Some(round) = &self.round else {
            return;
        };
        if !round.unconfirmed.is_empty() || matches!(round.arbitration, Arbitration::Asked { .. }) {
            return;
        }
        let survivors = self.member_set().minus(round.failed);
        let commit = FailCommit {
            generation: self.generation + 1,
            members: survivors,
        };
        self.round = None;
        let here = self.here();
        for survivor in survivors.iter().filter(|&s| s != here) {
            ctx.send_typed(membership_address(survivor), &commit);
        }
        if let Some(arbitrator) = self.settings.arbitrator {
            let shrank = MembershipShrank {
                members: survivors,
                removed: self.member_set().minus(survivors),
            };
            ctx.send_typed(arbitrator, &shrank);
        }
        // At once here: a suspicion arriving before a commit to itself would start a
        // round removing the same nodes again.
        self.commit_failure(ctx, commit);
    }

    /// A round whose survivors do not all confirm within the grace loses the silent ones
    /// too; arbitration that does not answer in time stops the survivors.
    fn check_round_timeouts(&mut self, ctx: &mut Context) {
        let now = ctx.now_ns();
        let grace_ns = self.grace_ns();
        let arbitration_ns = self
            .settings
            .arbitration_timeout_ms
            .saturating_mul(1_000_000);
        if self
            .join
            .as_ref()
            .is_some_and(|join| now.saturating_sub(join.started_ns) > grace_ns)
        {
            self.join = None;
        }
        let Some(round) = &self.round else {
            return;
        };
        let prepare = FailPrepare {
            round: round.round,
            failed: round.failed,
        };
        for survivor in round.unconfirmed.iter() {
            ctx.send_typed(membership_address(survivor), &prepare);
        }
        if let Arbitration::Asked { since_ns } = round.arbitration {
            if now.saturating_sub(since_ns) > arbitration_ns {
                let survivors = self.member_set().minus(round.failed);
                let reason = format!(
                    "the arbitrator did not answer within {} ms: {survivors:?} stop rather \
                     than risk a split cluster",
                    self.settings.arbitration_timeout_ms
                );
                return self.stop_cluster(ctx, survivors, &reason);
            }
        }
        if now.saturating_sub(round.started_ns) > grace_ns && !round.unconfirmed.is_empty() {
            let silent = round.unconfirmed;
            self.suspects = self.suspects.union(silent);
            self.renew_lease();
            let failed = round.failed.union(silent);
            self.round = None;
            self.remove_nodes(ctx, failed);
        }
    }

    fn stop_cluster(&mut self, ctx: &mut Context, survivors: NodeSet, reason: &str) {
        let here = self.here();
        for survivor in survivors.iter().filter(|&s| s != here) {
            let stop = ClusterStop {}.to_signal(membership_address(survivor), ctx.address());
            send_with_bytes(ctx, stop, reason.as_bytes());
        }
        self.stop(ctx, reason);
    }

    fn stop(&mut self, ctx: &mut Context, reason: &str) {
        self.stopping = true;
        self.lease.renew_until(0);
        self.round = None;
        ctx.stop_node(reason);
    }

    // ----- every survivor -----

    fn prepare_failure(&mut self, ctx: &mut Context, prepare: FailPrepare, president: NodeId) {
        // Only this node's president may remove nodes: a member cut off from the president
        // alone would otherwise run a round of its own, removing the president, while the
        // president removes it, and the others could confirm both. It asks again each
        // interval, in case this node comes to suspect the president too.
        if self.president() != Some(president) {
            return;
        }
        for failed in prepare.failed.iter() {
            ctx.shut_out(failed);
        }
        self.shut_out = self.shut_out.union(prepare.failed);
        self.shut_out.remove(self.here());
        ctx.send_typed(
            membership_address(president),
            &FailPrepareConf {
                round: prepare.round,
            },
        );
    }

    fn commit_failure(&mut self, ctx: &mut Context, commit: FailCommit) {
        if commit.generation <= self.generation {
            return;
        }
        // Everyone this node knew that is not in the new membership left (some perhaps in
        // a generation whose commit this node missed).
        let removed = self.member_set().minus(commit.members);
        for failed in removed.iter() {
            // A commit may follow a prepare this node never saw (it was lost with an
            // earlier president): shutting out twice is harmless.
            ctx.shut_out(failed);
        }
        self.members.retain(|&m| commit.members.contains(m));
        for abandoned in self.letting_in.minus(commit.members).iter() {
            ctx.shut_out(abandoned);
        }
        self.letting_in = NodeSet::EMPTY;
        // A join whose commit this node missed: the node is the most junior.
        let missed_joins = commit.members.minus(self.member_set());
        self.members.extend(missed_joins.iter());
        self.suspects = self.suspects.minus(removed);
        self.shut_out = self.shut_out.minus(removed);
        self.generation = commit.generation;
        self.renew_lease();
        let president = self.president().unwrap_or(self.here());
        ctx.log(&format!(
            "membership generation {}: {}{}members {}, president {}",
            commit.generation,
            listed("left (failed or stopped)", removed),
            listed("joined", missed_joins),
            node_list(self.member_set()),
            president.0
        ));
        let failed = NodeFailed {
            generation: commit.generation,
            failed: removed,
            president: u32::from(president.0),
        };
        let members = self.member_set();
        for receiver in self.local_blocks() {
            ctx.send_typed(receiver, &failed);
            for joined in missed_joins.iter() {
                let joined = NodeJoined {
                    generation: commit.generation,
                    joined: u32::from(joined.0),
                    president: u32::from(president.0),
                    members,
                };
                ctx.send_typed(receiver, &joined);
            }
        }
        if !self.suspects.is_empty() {
            self.report_suspects(ctx);
        }
    }
}

/// How the reason begins when the management server stops a node for good (`N stop`,
/// `shutdown`): its process ends normally, unlike a node its cluster stopped.
pub const STOPPED_BY_MANAGEMENT_SERVER: &str = "stopped by the management server";

/// The reason the management server gives when it stops a node to have it restart
/// (`N restart`): the node's process starts it again, restarting into the cluster.
pub const RESTART_REQUESTED: &str = "restart requested by the management server (N restart)";

/// How the reason begins when a start from disk stops a node that cannot restore the GCI
/// chosen (its disk is behind, empty, or of an earlier life): the node's process starts it
/// again once another node serves, and it restarts into the cluster, copying its data
/// (NDB's node restart after a partial system restart).
pub const STALE_AT_START: &str = "behind at the start from disk";

/// How the reason begins when a start from disk found that this node's disk cannot
/// restore its data (a file damaged, missing or unreadable): its control file says so, and
/// the node's process starts it again at once; that start copies from a peer.
pub const DISK_UNRESTORABLE: &str = "this node's disk cannot restore its data";

/// The reason for `N restart -n`: the node's process waits for `N start` before it starts
/// the node again.
pub const RESTART_WHEN_STARTED: &str =
    "restart requested by the management server (N restart -n): waiting for N start";

pub fn membership_address(node: NodeId) -> BlockAddress {
    BlockAddress::new(node, MEMBERSHIP_BLOCK, 0)
}

impl Block for Membership {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        if self.stopping {
            return;
        }
        let from = signal.sender().node();
        let number = signal.number();
        // Members, this node itself, and the management server hosting the arbitrator
        // (arbitration, stop requests); a shut-out node's membership reaches this block
        // through the fence gate.
        let trusted = from == self.here()
            || (self.members.contains(&from) && !self.shut_out.contains(from))
            || self.settings.arbitrator.is_some_and(|a| a.node() == from);
        let result = if number == JoinRequest::NUMBER {
            JoinRequest::from_signal(signal).map(|_| self.join_requested(ctx, from))
        } else if number == JoinCommit::NUMBER && (trusted || self.is_joining()) {
            JoinCommit::from_signal(signal).map(|c| {
                let order = ctx
                    .section()
                    .map(|bytes| bytes.iter().map(|&id| NodeId(id)).collect())
                    .unwrap_or_default();
                self.commit_join(ctx, c, order)
            })
        } else if !trusted {
            Ok(())
        } else if number == JoinPrepare::NUMBER {
            JoinPrepare::from_signal(signal).map(|p| self.prepare_join(ctx, p, from))
        } else if number == JoinPrepareConf::NUMBER {
            JoinPrepareConf::from_signal(signal).map(|c| self.join_confirmed(ctx, c, from))
        } else if number == Heartbeat::NUMBER {
            Heartbeat::from_signal(signal).map(|h| self.heard(ctx, h, from))
        } else if number == NodeStarted::NUMBER {
            NodeStarted::from_signal(signal).map(|s| self.node_started(ctx, s))
        } else if number == HeartbeatEcho::NUMBER {
            HeartbeatEcho::from_signal(signal).map(|e| self.echoed(ctx, e, from))
        } else if number == MembershipTick::NUMBER {
            MembershipTick::from_signal(signal).map(|_| self.tick(ctx))
        } else if number == NodeSuspected::NUMBER {
            NodeSuspected::from_signal(signal).map(|r| self.suspected(ctx, r, from))
        } else if number == FailPrepare::NUMBER {
            FailPrepare::from_signal(signal).map(|p| self.prepare_failure(ctx, p, from))
        } else if number == FailPrepareConf::NUMBER {
            FailPrepareConf::from_signal(signal).map(|c| self.prepare_confirmed(ctx, c, from))
        } else if number == FailCommit::NUMBER {
            FailCommit::from_signal(signal).map(|c| self.commit_failure(ctx, c))
        } else if number == ArbitrationConf::NUMBER {
            ArbitrationConf::from_signal(signal).map(|c| self.arbitrated(ctx, c))
        } else if number == ClusterStop::NUMBER {
            let reason = ctx
                .section()
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .unwrap_or_else(|| "the president stopped the cluster".to_string());
            self.stop(ctx, &reason);
            Ok(())
        } else {
            Ok(())
        };
        debug_assert!(result.is_ok(), "malformed signal to membership: {result:?}");
    }
}

/// Node ids as `1, 2`.
pub(crate) fn node_list(nodes: NodeSet) -> String {
    let ids: Vec<String> = nodes.iter().map(|n| n.0.to_string()).collect();
    ids.join(", ")
}

/// `node(s) 1, 2 WHAT; ` for a log line, or nothing for no nodes.
fn listed(what: &str, nodes: NodeSet) -> String {
    if nodes.is_empty() {
        return String::new();
    }
    format!("node(s) {} {what}; ", node_list(nodes))
}
