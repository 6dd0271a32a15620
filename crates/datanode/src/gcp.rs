//! Global checkpoints (NDB's GCP, run by the master's Dbdih): the cluster-wide cuts that a
//! system restart restores to.
//!
//! Every commit is stamped by its coordinator with a global checkpoint id (GCI), and every
//! replica logs the transaction's changes with it (see `ldm/redo.rs`). One `gcp` block runs
//! on each node's `main`; the president's is the master. Every
//! `global_checkpoint_interval_ms` the master closes the current GCI n in one round:
//!
//! 1. **Prepare** ([`GcpPrepare`] of n+1 to every member's `tc`): each coordinator holds the
//!    commits it decides from then on, and confirms.
//! 2. **Commit** ([`GcpCommit`] of n+1): each stamps n+1 from then on, starts the held
//!    commits, and confirms once every transaction it stamped n or below has committed on
//!    every replica (`tc/gcp.rs`). No coordinator stamps n after any stamped n+1, so the
//!    changes up to n are a state the cluster was in: nothing of n depends on n+1.
//! 3. **Save** ([`GcpSave`] of n to every member's `ldm`): each marks n done in its REDO log
//!    (after every change of n and below), writes and syncs the log through the mark, and
//!    confirms.
//! 4. **Record** ([`GcpRecord`] of n to every member's `gcp`): each writes n into its
//!    control file, which a start from disk decides from, and confirms once synced (NDB's
//!    COPY_GCIREQ of the sysfile). Then n is *restorable*: [`GcpSaved`] tells every
//!    member's `gcp` and `tc`.
//!
//! One round runs at a time; at each tick the master asks again whoever has not answered (a
//! request to a peer not yet connected, or over a link that broke, is lost; every request
//! may come twice). Node failures: the master stops waiting for the failed nodes,
//! and a round in its commit step asks every coordinator again, counting only
//! confirmations given in the new membership (so the president's coordinator, which takes
//! over the failed coordinators' transactions and commits them with their own GCIs, has
//! begun to: it confirms once they committed). A new master (the president failed) first
//! asks every coordinator which GCI it stamps ([`GcpStateQuery`]) and closes the highest.
//!
//! A durable commit (`tc/durable.rs`) waits for its GCI to be saved: its coordinator asks
//! the master to hurry ([`GcpHurry`]), which begins a round at once if none runs, or right
//! after the one under way, rather than at the next tick; [`GcpSaved`] goes to every
//! member's `tc` too, which then confirms the commits waiting for it.
//!
//! A clean shutdown ([`ClusterShutdown`], from the management server to every node) loses
//! no acknowledged commit: the master runs one more round at once, which closes the GCI
//! commits are stamped with then, and once every member recorded it stops every node.
//! Every node hears the request, so a new master (the old one failed amid the shutdown)
//! goes on with it.

use std::sync::Arc;
use std::time::Duration;

use kista_runtime::io::FileReply;
use kista_runtime::{Block, Context};
use kista_signal::{BlockAddress, NodeId, Signal, TypedSignal};

use crate::cluster::{ClusterShape, NodeSet};
use crate::membership::{membership_address, STOPPED_BY_MANAGEMENT_SERVER};
use crate::metrics::CheckpointGauges;
use crate::node::NodeSettings;
use crate::protocol::*;
use crate::tc::FIRST_GCI;

pub mod control_file;
mod own_disk;

/// Where the master's round stands; each step waits for some blocks' confirmations.
#[derive(Clone, Copy, Debug)]
enum Round {
    Idle,
    /// A new master learns the GCIs the coordinators stamp (`highest` so far).
    Learning {
        highest: u64,
    },
    Preparing {
        gci: u64,
    },
    Committing {
        gci: u64,
    },
    /// Saving `gci`: every change of it and below is in the logs.
    Saving {
        gci: u64,
    },
    /// Every member's control file records `gci`; `holding`: those whose disk holds
    /// their data, so far.
    Recording {
        gci: u64,
        holding: NodeSet,
    },
}

/// Where a shutdown the management server asked for stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shutdown {
    NotAsked,
    /// The next round to begin closes the last GCI (a round under way may close one that
    /// acknowledged commits are not in).
    Asked,
    /// The round under way closes `gci`, the last.
    Closing {
        gci: u64,
    },
    /// Every member recorded the last GCI; the nodes were told to stop.
    Stopping,
}

pub struct GlobalCheckpoints {
    settings: Arc<NodeSettings>,
    cluster: Arc<ClusterShape>,
    /// The node whose `gcp` runs the rounds: the president.
    master: NodeId,
    members: NodeSet,
    /// The membership generation of the latest failure: a coordinator's confirmation
    /// counts only if it knew that one.
    failure_generation: u32,
    /// The master's: the GCI coordinators stamp commits with (elsewhere a lower bound of
    /// it; 0 on a node that joined the membership and has not learned it yet).
    current_gci: u64,
    /// The latest GCI every member's log holds whole.
    restorable_gci: u64,
    round: Round,
    /// The blocks the round's step waits for.
    awaiting: Vec<BlockAddress>,
    /// The node's control file; `None` on a node that keeps nothing on disk.
    control: Option<control_file::NodeControl>,
    /// Whether the cluster serves, so a master runs rounds: from the start on a node
    /// that keeps nothing on disk, else once the start from disk is over.
    started: bool,
    shutdown: Shutdown,
    /// The master's: the latest GCI a durable commit waits for.
    hurried_gci: u64,
    /// The master's: a node group whose members' disks hold none of its data (its last
    /// such member failed while another copied its rows), since GCI `.1`: the GCIs
    /// recorded meanwhile are not restorable.
    group_without_data: Option<(u16, u64)>,
    /// A restarting node's restore from its own disk, while it runs.
    own_disk: Option<own_disk::OwnDisk>,
    /// Where the checkpoints stand, for operators (never read here).
    gauges: Arc<CheckpointGauges>,
}

impl GlobalCheckpoints {
    pub fn new(
        settings: Arc<NodeSettings>,
        cluster: Arc<ClusterShape>,
        gauges: Arc<CheckpointGauges>,
    ) -> Self {
        // A restarting node learns the members, their president and the GCI when it joins.
        let joining = settings.joins_running_cluster;
        Self {
            master: cluster.nodes().first().map_or(settings.node, |n| n.node),
            members: if joining {
                NodeSet::EMPTY
            } else {
                cluster.node_set()
            },
            failure_generation: 0,
            current_gci: if joining { 0 } else { FIRST_GCI },
            restorable_gci: 0,
            gauges,
            round: Round::Idle,
            awaiting: Vec::new(),
            control: settings.keeps_data_on_disk().then(|| {
                let shape = control_file::DiskShape {
                    data_nodes: cluster.node_set(),
                    replicas: u32::from(cluster.replicas()),
                    partitions_per_node: settings.partitions_per_node,
                    ldm_instances: u32::from(settings.ldm_instances),
                };
                control_file::NodeControl::new(joining, shape)
            }),
            started: !settings.keeps_data_on_disk() || joining,
            shutdown: Shutdown::NotAsked,
            hurried_gci: 0,
            group_without_data: None,
            own_disk: None,
            settings,
            cluster,
        }
    }

    /// The signal that starts the node's global-checkpoint timer.
    pub fn start_signal(node: NodeId) -> Signal {
        let address = gcp_address(node);
        GcpTick {}.to_signal(address, address)
    }

    fn is_master(&self) -> bool {
        self.master == self.settings.node && self.members.contains(self.master)
    }

    fn tick(&mut self, ctx: &mut Context) {
        if let Some(control) = self.control.as_mut().filter(|c| !c.is_read()) {
            // The first tick is the node's start: the control file is read first.
            if let Err(reason) = control.start(ctx) {
                ctx.stop_node(&reason);
            }
        } else if self.is_master() && self.started {
            match self.round {
                Round::Idle if self.shutdown == Shutdown::Stopping => {}
                Round::Idle => self.begin_round(ctx),
                // A request sent before a peer was connected, or over a link that broke
                // and came back, is lost: ask again (every request may come twice).
                round => {
                    let awaited = self.awaiting.clone();
                    send_step(ctx, round, &awaited, self.restorable_gci);
                }
            }
        }
        let tick = GcpTick {}.to_signal(ctx.address(), ctx.address());
        let interval_ms = self.settings.global_checkpoint_interval_ms.max(1);
        ctx.send_delayed(tick, Duration::from_millis(interval_ms));
    }

    fn member_tcs(&self) -> Vec<BlockAddress> {
        let nodes = self
            .members
            .iter()
            .filter_map(|node| self.cluster.node(node));
        nodes.flat_map(|node| node.tc_addresses()).collect()
    }

    fn member_ldms(&self) -> Vec<BlockAddress> {
        let nodes = self
            .members
            .iter()
            .filter_map(|node| self.cluster.node(node));
        nodes.flat_map(|node| node.ldm_addresses()).collect()
    }

    fn member_gcps(&self) -> Vec<BlockAddress> {
        self.members.iter().map(gcp_address).collect()
    }

    /// Starts a round: it closes the GCI commits are stamped with now.
    fn begin_round(&mut self, ctx: &mut Context) {
        let gci = self.current_gci + 1;
        self.begin(ctx, Round::Preparing { gci });
    }

    /// Starts a step of the round: tells the blocks it involves, then waits for them.
    fn begin(&mut self, ctx: &mut Context, round: Round) {
        let targets = match round {
            Round::Idle => Vec::new(),
            Round::Saving { .. } => self.member_ldms(),
            Round::Recording { .. } => self.member_gcps(),
            _ => self.member_tcs(),
        };
        if let (Round::Preparing { gci }, Shutdown::Asked) = (round, self.shutdown) {
            self.shutdown = Shutdown::Closing { gci: gci - 1 };
        }
        send_step(ctx, round, &targets, self.restorable_gci);
        self.round = round;
        self.awaiting = targets;
        self.step_done(ctx);
    }

    /// `from` confirmed the round's step.
    fn confirmed(&mut self, ctx: &mut Context, from: BlockAddress) {
        if let Some(at) = self.awaiting.iter().position(|&block| block == from) {
            self.awaiting.swap_remove(at);
            self.step_done(ctx);
        }
    }

    /// Goes on to the round's next step once the current one waits for nobody.
    fn step_done(&mut self, ctx: &mut Context) {
        if !self.awaiting.is_empty() {
            return;
        }
        match self.round {
            Round::Idle => {}
            Round::Learning { highest } => {
                self.current_gci = self.current_gci.max(highest);
                if self.current_gci == 0 {
                    // Starting from GCI 1 again would stamp commits with GCIs already
                    // restorable: the cluster stops rather than mix them up.
                    return ctx.stop_node(
                        "this node became master moments after it joined, before it \
                         learned the cluster's global checkpoint, and no coordinator knows \
                         it: the cluster stops rather than reuse GCIs",
                    );
                }
                let gci = self.current_gci + 1;
                self.begin(ctx, Round::Preparing { gci });
            }
            Round::Preparing { gci } => self.begin(ctx, Round::Committing { gci }),
            Round::Committing { gci } => {
                self.current_gci = gci;
                self.begin(ctx, Round::Saving { gci: gci - 1 });
            }
            Round::Saving { gci } => {
                let holding = NodeSet::EMPTY;
                self.begin(ctx, Round::Recording { gci, holding })
            }
            Round::Recording { gci, holding } => {
                self.round = Round::Idle;
                let restorable = self.restorable(ctx, gci, holding);
                if restorable {
                    let told = self.member_gcps().into_iter().chain(self.member_tcs());
                    for block in told.collect::<Vec<_>>() {
                        ctx.send_typed(block, &GcpSaved { gci });
                    }
                }
                // Not restorable: the next round waits for the tick (the restarted node's
                // checkpoint takes a while), durable commits and a shutdown too.
                match self.shutdown {
                    _ if !restorable => {}
                    Shutdown::NotAsked if self.hurried_gci > gci => self.begin_round(ctx),
                    Shutdown::Closing { gci: last } if gci >= last => {
                        self.shutdown = Shutdown::Stopping;
                        self.stop_cluster(ctx, gci);
                    }
                    Shutdown::Asked | Shutdown::Closing { .. } => self.begin_round(ctx),
                    Shutdown::NotAsked | Shutdown::Stopping => {}
                }
            }
        }
    }

    /// Whether `gci`, recorded by every member, is restorable: a member of every node
    /// group whose disk holds its data recorded it (`holding`). A group whose only such
    /// member failed while the others copied their rows has none until one of them
    /// checkpointed what it copied; a start from disk meanwhile restores an earlier GCI.
    fn restorable(&mut self, ctx: &mut Context, gci: u64, holding: NodeSet) -> bool {
        let bare = self.cluster.group_lost(holding);
        match (bare, self.group_without_data) {
            (Some(group), None) => {
                ctx.log(&format!(
                    "GCI {gci} and later are not restorable yet: no member of node group \
                     {group} has its data on disk (a restarted node writes its first local \
                     checkpoint); durable commits wait"
                ));
                self.group_without_data = Some((group, gci));
            }
            (None, Some((group, since))) => {
                ctx.log(&format!(
                    "GCI {gci} is restorable: node group {group} has its data on disk again \
                     (GCIs {since} to {} were not)",
                    gci - 1
                ));
                self.group_without_data = None;
            }
            _ => {}
        }
        bare.is_none()
    }

    /// A durable commit of `gci` waits for it to be saved: the master closes it as soon as
    /// it can; another node passes the request on to the master.
    fn hurry(&mut self, ctx: &mut Context, gci: u64) {
        if gci <= self.restorable_gci {
            return;
        }
        if !self.is_master() {
            if self.master != self.settings.node {
                ctx.send_typed(gcp_address(self.master), &GcpHurry { gci });
            }
            return;
        }
        self.hurried_gci = self.hurried_gci.max(gci);
        let idle = matches!(self.round, Round::Idle);
        if idle && self.started && self.shutdown == Shutdown::NotAsked {
            self.begin_round(ctx);
        }
    }

    /// The management server asked for a clean shutdown.
    fn shutdown_asked(&mut self, ctx: &mut Context) {
        if self.control.is_none() || !self.started {
            // Nothing to save: the node keeps nothing on disk, or its start from disk is
            // under way (the next start restores what this one would have).
            return ctx.stop_node(&format!("{STOPPED_BY_MANAGEMENT_SERVER} (shutdown)"));
        }
        if self.shutdown == Shutdown::NotAsked {
            self.shutdown = Shutdown::Asked;
        }
        if self.is_master() && matches!(self.round, Round::Idle) {
            self.begin_round(ctx);
        }
    }

    /// At a shutdown, every member's control file records `gci` as restorable: every
    /// configured node stops (one not yet a member, joining, too), this one last.
    fn stop_cluster(&mut self, ctx: &mut Context, gci: u64) {
        ctx.log(&format!("shutdown: GCI {gci} saved on every node"));
        let reason = format!("{STOPPED_BY_MANAGEMENT_SERVER} (shutdown); GCI {gci} is restorable");
        let own = self.settings.node;
        let others = self.cluster.nodes().iter().map(|n| n.node);
        for node in others.filter(|&node| node != own).chain([own]) {
            let stop = ClusterStop {}.to_signal(membership_address(node), ctx.address());
            crate::send_with_bytes(ctx, stop, reason.as_bytes());
        }
    }

    /// The master's `GcpRecord`: every member's log holds `gci`; confirmed once the
    /// control file records it.
    fn record(&mut self, ctx: &mut Context, gci: u64, master: BlockAddress) {
        let Some(control) = self.control.as_mut() else {
            // Nothing on disk: every GCI is as restorable as such a node makes it.
            let holds_data = 1;
            return ctx.send_typed(master, &GcpRecordConf { gci, holds_data });
        };
        if let Err(reason) = control.record(ctx, gci, master) {
            ctx.stop_node(&reason);
        }
    }

    /// The answer to one of the round's requests, if it is for the step under way.
    fn answered(&mut self, ctx: &mut Context, answer: Answer, from: BlockAddress) {
        let current = match (&mut self.round, answer) {
            (Round::Learning { highest }, Answer::State { gci }) => {
                *highest = (*highest).max(gci);
                true
            }
            (Round::Preparing { gci }, Answer::Prepared { gci: answered }) => *gci == answered,
            (
                Round::Committing { gci },
                Answer::Committed {
                    gci: answered,
                    generation,
                },
            ) => *gci == answered && generation >= self.failure_generation,
            (Round::Saving { gci }, Answer::Saved { gci: answered }) => *gci == answered,
            (
                Round::Recording { gci, holding },
                Answer::Recorded {
                    gci: answered,
                    holds_data,
                },
            ) => {
                if *gci == answered && holds_data {
                    holding.insert(from.node());
                }
                *gci == answered
            }
            _ => false,
        };
        if current {
            self.confirmed(ctx, from);
        }
    }

    fn node_failed(&mut self, ctx: &mut Context, failed: NodeFailed) {
        self.failure_generation = self.failure_generation.max(failed.generation);
        self.members = self.members.minus(failed.failed);
        let was_master = self.is_master();
        self.master = NodeId(u8::try_from(failed.president).unwrap_or(0));
        if !self.is_master() || !self.started {
            self.round = Round::Idle;
            self.awaiting.clear();
        } else if !was_master {
            // The old master may have failed amid a round: learn where the coordinators are.
            self.begin(ctx, Round::Learning { highest: 0 });
        } else if let Round::Committing { gci } = self.round {
            // Ask again: only confirmations given in the new membership count.
            self.begin(ctx, Round::Committing { gci });
        } else {
            self.awaiting
                .retain(|block| !failed.failed.contains(block.node()));
            self.step_done(ctx);
        }
    }

    /// Every member saved `gci`: a system restart could restore it; commits are stamped
    /// with a later one.
    fn saved(&mut self, gci: u64) {
        self.restorable_gci = self.restorable_gci.max(gci);
        self.current_gci = self.current_gci.max(gci + 1);
    }

    /// The master's word to a node that joined: where the global checkpoints stand.
    fn learned(&mut self, ctx: &mut Context, state: GcpJoinState) {
        self.current_gci = self.current_gci.max(state.current_gci);
        self.restorable_gci = self.restorable_gci.max(state.restorable_gci);
        if let Some(control) = self.control.as_mut() {
            control.joined_life(state.cluster_life);
        }
        self.own_disk_go_on(ctx);
    }

    /// The master's `dict` asks this restarting node to load its partitions from its own
    /// disk before its copy.
    fn own_disk_asked(&mut self, ctx: &mut Context, asked: OwnDiskRestore, from: BlockAddress) {
        self.own_disk = Some(own_disk::OwnDisk::asked(asked.restart, from));
        self.own_disk_go_on(ctx);
    }

    fn own_disk_go_on(&mut self, ctx: &mut Context) {
        let ldms = self.settings.ldm_instances;
        let answered = self
            .own_disk
            .as_mut()
            .is_some_and(|own| own.go_on(ctx, self.control.as_ref(), ldms));
        if answered {
            self.own_disk = None;
        }
    }

    fn own_disk_loaded(&mut self, ctx: &mut Context, conf: LdmRestoreConf) {
        let answered = self
            .own_disk
            .as_mut()
            .is_some_and(|own| own.ldm_loaded(ctx, conf));
        if answered {
            self.own_disk = None;
        }
    }

    fn control_file_replied(&mut self, ctx: &mut Context, reply: FileReply) {
        let result = self
            .control
            .as_mut()
            .map_or(Ok(()), |c| c.replied(ctx, reply));
        if let Err(reason) = result {
            return ctx.stop_node(&reason);
        }
        // A restore from the node's own disk waits for the file's read.
        self.own_disk_go_on(ctx);
    }

    /// An `ldm` of this node (`from`) found its disk unable to restore the GCI a start from
    /// disk ordered (why in the section).
    fn disk_unusable(&mut self, ctx: &mut Context, from: BlockAddress) {
        if from.node() != self.settings.node {
            return;
        }
        let why = ctx
            .section()
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        let why = why.unwrap_or_else(|| format!("ldm {}'s restore failed", from.instance()));
        let result = match self.control.as_mut() {
            Some(control) => control.disk_unusable(ctx, &why),
            None => Err(why),
        };
        if let Err(reason) = result {
            ctx.stop_node(&reason);
        }
    }

    /// The start from disk is over: the cluster was restored to `gci` and goes on with
    /// the next.
    fn system_started(&mut self, started: SystemStarted) {
        self.started = true;
        self.members = started.members;
        self.current_gci = started.gci + 1;
        self.restorable_gci = started.gci;
    }

    fn node_joined(&mut self, ctx: &mut Context, joined: NodeJoined) {
        self.members = joined.members;
        self.master = NodeId(u8::try_from(joined.president).unwrap_or(0));
        let joiner = NodeId(u8::try_from(joined.joined).unwrap_or(0));
        if self.is_master() && joiner != self.settings.node {
            // A round under way may have coordinators stamp its GCI already.
            let stamped = match self.round {
                Round::Preparing { gci } | Round::Committing { gci } => gci,
                _ => self.current_gci,
            };
            let state = GcpJoinState {
                current_gci: stamped.max(self.current_gci),
                restorable_gci: self.restorable_gci,
                cluster_life: self.control.as_ref().map_or(0, |c| c.cluster_life()),
            };
            let tcs = self.cluster.node(joiner).map(|n| n.tc_addresses());
            let told = std::iter::once(gcp_address(joiner)).chain(tcs.into_iter().flatten());
            for block in told.collect::<Vec<_>>() {
                ctx.send_typed(block, &state);
            }
        }
    }
}

/// Sends a round's step's request to `targets`; `restorable` is the latest GCI the master
/// knows every member saved.
fn send_step(ctx: &mut Context, round: Round, targets: &[BlockAddress], restorable: u64) {
    for &target in targets {
        match round {
            Round::Idle => {}
            Round::Learning { .. } => ctx.send_typed(target, &GcpStateQuery {}),
            Round::Preparing { gci } => ctx.send_typed(target, &GcpPrepare { gci }),
            Round::Committing { gci } => ctx.send_typed(target, &GcpCommit { gci }),
            Round::Saving { gci } => ctx.send_typed(target, &GcpSave { gci, restorable }),
            Round::Recording { gci, .. } => ctx.send_typed(target, &GcpRecord { gci }),
        }
    }
}

/// A confirmation of one step of a round.
#[derive(Clone, Copy)]
enum Answer {
    State { gci: u64 },
    Prepared { gci: u64 },
    Committed { gci: u64, generation: u32 },
    Saved { gci: u64 },
    Recorded { gci: u64, holds_data: bool },
}

pub fn gcp_address(node: NodeId) -> BlockAddress {
    BlockAddress::new(node, GCP_BLOCK, 0)
}

impl Block for GlobalCheckpoints {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        let number = signal.number();
        let from = signal.sender();
        let result = if number == GcpTick::NUMBER {
            GcpTick::from_signal(signal).map(|_| self.tick(ctx))
        } else if number == GcpState::NUMBER {
            GcpState::from_signal(signal)
                .map(|s| self.answered(ctx, Answer::State { gci: s.gci }, from))
        } else if number == GcpPrepareConf::NUMBER {
            GcpPrepareConf::from_signal(signal)
                .map(|c| self.answered(ctx, Answer::Prepared { gci: c.gci }, from))
        } else if number == GcpCommitConf::NUMBER {
            GcpCommitConf::from_signal(signal).map(|c| {
                let answer = Answer::Committed {
                    gci: c.gci,
                    generation: c.generation,
                };
                self.answered(ctx, answer, from)
            })
        } else if number == GcpSaveConf::NUMBER {
            GcpSaveConf::from_signal(signal)
                .map(|c| self.answered(ctx, Answer::Saved { gci: c.gci }, from))
        } else if number == GcpSaved::NUMBER {
            GcpSaved::from_signal(signal).map(|saved| self.saved(saved.gci))
        } else if number == FileReply::NUMBER {
            FileReply::from_signal(signal).map(|reply| self.control_file_replied(ctx, reply))
        } else if number == DiskStateSet::NUMBER {
            DiskStateSet::from_signal(signal).map(|set| {
                let result = self.control.as_mut().map_or(Ok(()), |control| {
                    control.set(ctx, set.cluster_life, set.gci, from)
                });
                if let Err(reason) = result {
                    ctx.stop_node(&reason);
                }
            })
        } else if number == GcpHurry::NUMBER {
            GcpHurry::from_signal(signal).map(|hurry| self.hurry(ctx, hurry.gci))
        } else if number == ClusterShutdown::NUMBER {
            ClusterShutdown::from_signal(signal).map(|_| self.shutdown_asked(ctx))
        } else if number == GcpRecord::NUMBER {
            GcpRecord::from_signal(signal).map(|r| self.record(ctx, r.gci, from))
        } else if number == GcpRecordConf::NUMBER {
            GcpRecordConf::from_signal(signal).map(|c| {
                let answer = Answer::Recorded {
                    gci: c.gci,
                    holds_data: c.holds_data != 0,
                };
                self.answered(ctx, answer, from)
            })
        } else if number == LdmHoldsData::NUMBER {
            LdmHoldsData::from_signal(signal).map(|_| {
                if let Some(control) = self.control.as_mut() {
                    control.ldm_holds_data(from.instance());
                }
            })
        } else if number == SystemStarted::NUMBER {
            SystemStarted::from_signal(signal).map(|started| self.system_started(started))
        } else if number == NodeFailed::NUMBER {
            NodeFailed::from_signal(signal).map(|failed| self.node_failed(ctx, failed))
        } else if number == NodeJoined::NUMBER {
            NodeJoined::from_signal(signal).map(|joined| self.node_joined(ctx, joined))
        } else if number == NodeStarted::NUMBER {
            NodeStarted::from_signal(signal).map(|started| {
                let own = started.node == u32::from(self.settings.node.0);
                let result = match self.control.as_mut() {
                    Some(control) if own => control.copy_done(ctx),
                    _ => Ok(()),
                };
                if let Err(reason) = result {
                    ctx.stop_node(&reason);
                }
            })
        } else if number == GcpJoinState::NUMBER {
            GcpJoinState::from_signal(signal).map(|state| self.learned(ctx, state))
        } else if number == OwnDiskRestore::NUMBER {
            OwnDiskRestore::from_signal(signal).map(|asked| self.own_disk_asked(ctx, asked, from))
        } else if number == LdmRestoreConf::NUMBER {
            LdmRestoreConf::from_signal(signal).map(|conf| self.own_disk_loaded(ctx, conf))
        } else if number == LdmDiskUnusable::NUMBER {
            LdmDiskUnusable::from_signal(signal).map(|_| self.disk_unusable(ctx, from))
        } else {
            Ok(())
        };
        debug_assert!(result.is_ok(), "malformed signal to gcp: {result:?}");
        self.gauges.current_gci.set(self.current_gci);
        self.gauges.restorable_gci.set(self.restorable_gci);
    }
}
