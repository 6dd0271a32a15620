//! A start from disk (NDB's system restart), run by the master's dictionary. Every start
//! of a cluster whose nodes keep their data on disk is one: an initial start is the case
//! where no node holds any data.
//!
//! 1. Each node's `gcp` reads its control file, counts the node's new life into it and
//!    tells the node's `dict` what the disk holds ([`DiskState`]); the `dict` reads its
//!    schema file and reports both to the master ([`StartReport`]), again to a new master
//!    should the president fail meanwhile.
//! 2. Once every member reported (in a first start the membership removes members that
//!    never came after `start_partial_timeout_ms`), the master decides ([`decide`]): the
//!    latest cluster life any node holds data of, and the latest GCI that some such node
//!    of every node group restores. Nodes that cannot restore it (an older life, an
//!    earlier GCI, no data) are stopped: started again, they join and copy from a peer.
//!    A node group with no node able to restore stops the whole cluster, saying so.
//! 3. It orders every participant to record the cluster's new life and the GCI in its
//!    control file ([`StartOrder`]); from then on that disk claims no later GCI, so a
//!    crash amid the restore cannot make a later start take what this one dropped.
//! 4. It ships its own dictionary (read from its schema file) to every participant's
//!    `dict`, `ldm` and `tc` (when its schema file is suspect, it first takes a sound
//!    participant's: [`super::handover`]), then has every `ldm` restore its partitions ([`LdmRestore`]:
//!    newest usable local checkpoint, REDO log up to the GCI, then a local checkpoint of
//!    the result, so records of GCIs this restart dropped are never replayed again).
//! 5. When all are restored, it tells every participant that the cluster started
//!    ([`SystemStarted`]): coordinators take transactions, stamping the GCI after the
//!    restored one, and the management server shows the nodes started.
//!
//! A participant failing after the order stops the others (as NDB's system restart does):
//! the cluster is started again. Progress goes to the master's log.

use std::collections::BTreeMap;

use rustc_hash::FxHashSet;

use kista_runtime::io::FileReply;
use kista_runtime::Context;
use kista_signal::{BlockAddress, NodeId, TypedSignal};

use super::schema_file::{self, SchemaImage, SCHEMA_FILE};
use super::{Definition, DictTable, Dictionary};
use crate::cluster::{ClusterShape, NodeSet};
use crate::membership::{membership_address, STALE_AT_START};
use crate::protocol::*;
use crate::send_with_bytes;
use crate::twin_file::{newest, TwinFiles, TwinReader};

/// Request ids of definitions shipped in a start from disk (a node restart's are
/// `1 << 62`; schema changes count up from 1).
const STARTING_DEFINITION: u64 = 1 << 61;
/// Longest time between a starting node's reports to the master.
const START_TICK_MS_MAX: u64 = 200;

/// Where this node's dictionary is in the start.
pub(super) enum Phase {
    /// Waiting for the control file's word from `gcp`.
    ReadingControl,
    ReadingSchema {
        disk: DiskState,
        reader: TwinReader,
    },
    /// Reported to the master; waiting for its order.
    Reported(StartReport),
    /// Ordered to take part; recording it in the control file, then confirmed.
    Ordered {
        participants: NodeSet,
        /// On the participant whose dictionary the master takes: its tables on their way.
        handover: Option<super::handover::Handover>,
    },
    Started,
}

/// The master's side of the start.
#[derive(Default)]
pub(super) struct MasterStart {
    reports: BTreeMap<u8, StartReport>,
    pub(super) step: Option<Step>,
    /// Rows and REDO records the `ldm`s restored so far.
    rows: u64,
    records: u64,
}

pub(super) enum Step {
    /// The arbitrator is yet to hear of the new life.
    Arbitrating(Decision),
    /// Participants' `dict`s yet to record the order.
    Ordering(Decision, Vec<BlockAddress>),
    /// The participant whose dictionary the cluster takes is yet to hand it over.
    HandingOver(Decision),
    /// (block, table) yet to apply a shipped definition.
    Definitions(Decision, FxHashSet<(BlockAddress, u32)>),
    /// `ldm`s yet to restore.
    Restoring(Decision, Vec<BlockAddress>),
}

/// What the master decided from the reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The cluster's life from this start on.
    pub cluster_life: u32,
    /// The GCI every participant restores (0: an initial start, nothing to restore).
    pub gci: u64,
    pub participants: NodeSet,
    /// Nodes that cannot restore it, with why: they stop, and join when started again.
    pub stale: Vec<(NodeId, String)>,
    pub next_table_id: u32,
    /// The participant whose dictionary the cluster takes, when not the master's own.
    pub dictionary_from: Option<NodeId>,
}

impl Decision {
    /// The order every participant records.
    fn order(&self) -> StartOrder {
        StartOrder {
            cluster_life: self.cluster_life,
            gci: self.gci,
            participants: self.participants,
            dictionary_from: self.dictionary_from.map_or(0, |node| u32::from(node.0)),
        }
    }
}

/// Decides a start from the members' reports: every node group must have a member that
/// holds data of the latest life any member holds, and the GCI restored is the latest
/// that such a member of every group restores. No member with data: an initial start,
/// unless a member holds data it cannot restore (then nothing starts).
pub fn decide(cluster: &ClusterShape, reports: &[StartReport]) -> Result<Decision, String> {
    let holding = |r: &&StartReport| holds(r, DiskHolds::Data) && r.cluster_life > 0;
    let next_table_id = reports.iter().map(|r| r.next_table_id).max().unwrap_or(1);
    let all = NodeSet::of(reports.iter().filter_map(|r| node_of(r.node)));
    let Some(life) = reports.iter().filter(holding).map(|r| r.cluster_life).max() else {
        refuse_unrestorable(reports)?;
        return Ok(Decision {
            cluster_life: 1,
            gci: 0,
            participants: all,
            stale: Vec::new(),
            next_table_id: next_table_id.max(1),
            dictionary_from: None,
        });
    };
    let current = |r: &StartReport| holding(&r) && r.cluster_life == life;
    let gci = latest_every_group_restores(cluster, reports, &current, life)?;
    refuse_losing_what_only_unrestorable_disks_held(reports, life, gci)?;
    let restores =
        |r: &StartReport| current(r) && r.restores_from_gci <= gci && gci <= r.restorable_gci;
    for (group, nodes) in cluster.node_groups().iter().enumerate() {
        let in_group = |r: &&StartReport| node_of(r.node).is_some_and(|n| nodes.contains(&n));
        if !reports.iter().filter(in_group).any(&restores) {
            // Its nodes copied their rows in node restarts after `gci`: their checkpoints
            // hold later rows, and the older checkpoints are gone.
            return Err(format!(
                "no data node of node group {group} can restore GCI {gci}, the latest every \
                 node group restores: its nodes restore only later GCIs (they copied their \
                 rows in node restarts since)"
            ));
        }
    }
    let mut participants = NodeSet::EMPTY;
    let mut stale = Vec::new();
    for report in reports {
        let Some(node) = node_of(report.node) else {
            continue;
        };
        if restores(report) {
            participants.insert(node);
        } else {
            stale.push((node, stale_reason(report, life, gci)));
        }
    }
    Ok(Decision {
        cluster_life: life + 1,
        gci,
        participants,
        stale,
        next_table_id,
        dictionary_from: None,
    })
}

/// With no member holding data it can restore, a member whose disk holds data it cannot
/// restore, or that belonged to a cluster's life already (it copied its rows in a node
/// restart and had not checkpointed them: the rows are on its peers' disks), makes the
/// start fail: an initial start would begin an empty cluster, and its tables' rows would be
/// lost for good. Only nodes that never held anything start a new cluster.
fn refuse_unrestorable(reports: &[StartReport]) -> Result<(), String> {
    let unrestorable = reports.iter().filter(|r| holds(r, DiskHolds::Unrestorable));
    let nodes: Vec<u32> = unrestorable.map(|r| r.node).collect();
    if !nodes.is_empty() {
        return Err(format!(
            "data node(s) {nodes:?} hold data their disks cannot restore (see their logs), \
             and no other data node that started holds any: start the cluster's other \
             nodes, or restore their data directories (or the cluster, from a backup). \
             Nothing starts empty in their place"
        ));
    }
    let of_a_life = reports.iter().filter(|r| r.cluster_life > 0);
    let nodes: Vec<u32> = of_a_life.map(|r| r.node).collect();
    if nodes.is_empty() {
        return Ok(());
    }
    Err(format!(
        "data node(s) {nodes:?} belong to a running cluster's life but hold none of its data \
         on disk (they copied it from peers and had not checkpointed it yet), and no data \
         node that started holds any: start the cluster's other nodes. Nothing starts \
         empty in their place (to begin a new, empty cluster, empty every data directory)"
    ))
}

/// A node whose disk proved unable to restore its data may have recorded a later GCI (or
/// life) than the one the others restore: it was then the only one to hold its commits
/// (the others were behind), and starting without them would lose them. Nothing starts;
/// emptying that node's directory says to start without them. (A node whose control file
/// itself is lost reports no GCI: this cannot be checked for it.)
fn refuse_losing_what_only_unrestorable_disks_held(
    reports: &[StartReport],
    life: u32,
    gci: u64,
) -> Result<(), String> {
    let unrestorable = reports.iter().filter(|r| holds(r, DiskHolds::Unrestorable));
    let Some(later) = unrestorable
        .filter(|r| (r.cluster_life, r.restorable_gci) > (life, gci))
        .max_by_key(|r| (r.cluster_life, r.restorable_gci))
    else {
        return Ok(());
    };
    Err(format!(
        "data node {} recorded GCI {} of the cluster's life {}, later than GCI {gci} of life \
         {life}, the latest the other nodes restore, but its disk cannot restore it (see its \
         log): starting would lose the commits made since. Repair or restore its data \
         directory; or, to start from GCI {gci} and lose them, empty it (it then copies \
         from a peer)",
        later.node, later.restorable_gci, later.cluster_life
    ))
}

/// The latest GCI that a node of every node group restores, among the nodes holding
/// data of the cluster's latest life (`current`). Every membership holds a node of every
/// group, and a GCI is restorable once every member recorded it: a group whose nodes here
/// restore less than another group's, while one of its nodes is missing or cannot restore
/// its disk, may lack the node that recorded what was restorable since, and starting
/// without it could lose commits acknowledged as restorable: the start waits for it
/// (also when the later GCI was cut short by the crash amid its round, which cannot be
/// told apart). With every node of the group here and sound, no disk holds more: its
/// member since then had copied its rows and not yet checkpointed them, and no GCI was
/// announced restorable meanwhile.
fn latest_every_group_restores(
    cluster: &ClusterShape,
    reports: &[StartReport],
    current: &impl Fn(&StartReport) -> bool,
    life: u32,
) -> Result<u64, String> {
    let mut best_of_groups = Vec::new();
    for (group, nodes) in cluster.node_groups().iter().enumerate() {
        let in_group = |r: &&StartReport| node_of(r.node).is_some_and(|n| nodes.contains(&n));
        let best = reports.iter().filter(|r| current(r)).filter(in_group);
        let ids: Vec<u8> = nodes.iter().map(|n| n.0).collect();
        let Some(best) = best.map(|r| r.restorable_gci).max() else {
            return Err(format!(
                "no started data node of node group {group} holds the data of the cluster's \
                 latest life ({life}): start its nodes {ids:?}"
            ));
        };
        let sound = |id: &u8| {
            let report = reports.iter().find(|r| r.node == u32::from(*id));
            report.is_some_and(|r| !holds(r, DiskHolds::Unrestorable))
        };
        let whole = ids.iter().all(sound);
        best_of_groups.push((best, group, ids, whole));
    }
    let latest = best_of_groups
        .iter()
        .map(|(best, ..)| *best)
        .max()
        .unwrap_or(0);
    let behind = (best_of_groups.iter()).find(|(best, .., whole)| !whole && *best < latest);
    if let Some((best, group, ids, _)) = behind {
        return Err(format!(
            "the data nodes of node group {group} here restore GCI {best} only, while \
             another group's restore GCI {latest}: the node of group {group} that recorded \
             the GCIs since is not here (or its disk cannot restore them), and starting \
             without it would lose their commits. Start its nodes {ids:?}, or repair the \
             one whose disk failed"
        ));
    }
    Ok(best_of_groups
        .iter()
        .map(|(best, ..)| *best)
        .min()
        .unwrap_or(0))
}

/// Why a node does not take part in a start from disk restoring `gci` of `life`.
fn stale_reason(report: &StartReport, life: u32, gci: u64) -> String {
    let why = match report {
        r if holds(r, DiskHolds::Unrestorable) && r.cluster_life == 0 => {
            "holds data its disk cannot restore, its control file lost (see its log): if it \
             ran on after the others stopped, the commits it alone held are lost"
                .into()
        }
        r if holds(r, DiskHolds::Unrestorable) => {
            "holds data its disk cannot restore (a file damaged or unreadable: see its log)".into()
        }
        r if r.holds_data == 0 || r.cluster_life == 0 => "holds no data to restore".into(),
        r if r.cluster_life < life => {
            format!("holds data of the cluster's life {}", r.cluster_life)
        }
        r if r.restores_from_gci > gci => {
            format!("restores GCI {} and later only", r.restores_from_gci)
        }
        r => format!("restores GCI {} only", r.restorable_gci),
    };
    format!(
        "{STALE_AT_START}: data node {} {why}, while the cluster restores GCI {gci} of its \
         life {life}: it stops, and copies its data from a peer when started again (its \
         process does so once another node serves)",
        report.node
    )
}

/// Before any node stops (the master too, if it cannot take part), the arbitrator hears
/// that the participants begin a new life: their survivors' arbitration is of it, not of
/// an earlier life's split.
fn tell_arbitrator(ctx: &mut Context, arbitrator: Option<BlockAddress>, decision: &Decision) {
    if let Some(arbitrator) = arbitrator {
        let begins = ClusterLifeBegins {
            cluster_life: decision.cluster_life,
            participants: decision.participants,
            stopping: NodeSet::of(decision.stale.iter().map(|(node, _)| *node)),
        };
        ctx.send_typed(arbitrator, &begins);
    }
}

/// Whether `report`'s disk holds `what`.
fn holds(report: &StartReport, what: DiskHolds) -> bool {
    report.holds_data == what as u32
}

pub(super) fn node_of(word: u32) -> Option<NodeId> {
    u8::try_from(word).ok().map(NodeId)
}

impl Dictionary {
    /// What this node's disk holds, from `gcp`: the schema file is read next.
    pub(super) fn disk_state(&mut self, ctx: &mut Context, disk: DiskState) {
        if !matches!(self.start, Phase::ReadingControl) {
            return;
        }
        match TwinReader::start(ctx, SCHEMA_FILE) {
            Ok(reader) => self.start = Phase::ReadingSchema { disk, reader },
            Err(reason) => ctx.stop_node(&reason),
        }
    }

    /// Whether `reply` answers the start's read of the schema file (and takes it).
    pub(super) fn schema_read_replied(&mut self, ctx: &mut Context, reply: FileReply) -> bool {
        let Phase::ReadingSchema { disk, reader } = &mut self.start else {
            return false;
        };
        if !TwinReader::answers(&SCHEMA_FILE, &reply) {
            return false;
        }
        let disk = *disk;
        match reader.replied(ctx, reply) {
            Ok(None) => {}
            Ok(Some(files)) => {
                let (image, suspect) = self.schema_read(ctx, &files, disk.holds_data != 0);
                self.report(ctx, disk, image, suspect);
            }
            Err(reason) => ctx.stop_node(&reason),
        }
        true
    }

    /// The newest valid schema file, if any, and whether this dictionary is suspect
    /// (`StartReport::schema_suspect`): a twin was refused (it may have been the newer),
    /// or a disk holding data has none. The writer goes on after it.
    fn schema_read(
        &mut self,
        ctx: &mut Context,
        files: &TwinFiles,
        holds_data: bool,
    ) -> (Option<SchemaImage>, u32) {
        let (found, refusals) = newest(&SCHEMA_FILE, files, schema_file::decode, |i| i.sequence);
        for refusal in &refusals {
            ctx.warn(&format!("schema file refused: {refusal}"));
        }
        let suspect = match (refusals.is_empty(), found.is_none() && holds_data) {
            (false, _) => SCHEMA_REFUSED,
            (true, true) => SCHEMA_MISSING,
            (true, false) => 0,
        };
        if suspect != 0 {
            ctx.warn(
                "this node's dictionary may lack the latest schema changes: the start takes \
                 the dictionary of a node whose schema files are sound, if one takes part",
            );
        }
        let sequence = found.as_ref().map_or(0, |image| image.sequence);
        self.schema_writer = Some(schema_file::SchemaWriter::new(SCHEMA_FILE, sequence));
        (found, suspect)
    }

    fn report(
        &mut self,
        ctx: &mut Context,
        disk: DiskState,
        image: Option<SchemaImage>,
        suspect: u32,
    ) {
        let report = StartReport {
            node: u32::from(ctx.address().node().0),
            node_life: disk.node_life,
            cluster_life: disk.cluster_life,
            restorable_gci: disk.restorable_gci,
            holds_data: disk.holds_data,
            restores_from_gci: disk.restores_from_gci,
            next_table_id: image.as_ref().map_or(0, |i| i.next_table_id),
            schema_suspect: suspect,
        };
        self.saved_schema = image;
        self.start = Phase::Reported(report);
        self.send_report(ctx);
        self.start_tick(ctx);
    }

    /// Sends the report again each tick until the master's order came.
    pub(super) fn start_tick(&mut self, ctx: &mut Context) {
        if !matches!(self.start, Phase::Reported(_)) {
            return;
        }
        self.send_report(ctx);
        let tick = StartTick {}.to_signal(ctx.address(), ctx.address());
        let interval_ms = self
            .settings
            .heartbeat_interval_ms
            .clamp(1, START_TICK_MS_MAX);
        ctx.send_delayed(tick, std::time::Duration::from_millis(interval_ms));
    }

    fn send_report(&mut self, ctx: &mut Context) {
        if let (Phase::Reported(report), Some(master)) = (&self.start, self.master()) {
            ctx.send_typed(master, report);
        }
    }

    /// A member's report, at the master.
    pub(super) fn start_reported(&mut self, ctx: &mut Context, report: StartReport) {
        let Some(node) = node_of(report.node) else {
            return;
        };
        let arbitrator = self.settings.arbitrator;
        let master = self.master_start.get_or_insert_with(MasterStart::default);
        match &master.step {
            None => {
                master.reports.insert(node.0, report);
                self.decide_when_reported(ctx);
            }
            // The order was lost (sent before the connection was up): again.
            Some(Step::Ordering(decision, awaiting)) => {
                let order = decision.order();
                let dicts: Vec<BlockAddress> = awaiting
                    .iter()
                    .copied()
                    .filter(|d| d.node() == node)
                    .collect();
                for dict in dicts {
                    ctx.send_typed(dict, &order);
                }
            }
            // The arbitrator's answer was lost (or not yet sent): ask again.
            Some(Step::Arbitrating(decision)) => tell_arbitrator(ctx, arbitrator, decision),
            Some(_) => {}
        }
    }

    /// Once every member reported: decide, have the arbitrator hear of the new life, then
    /// stop the nodes that cannot take part and order the others.
    fn decide_when_reported(&mut self, ctx: &mut Context) {
        let members: Vec<NodeId> = self.members().map(|n| n.node).collect();
        let Some(master) = self.master_start.as_mut().filter(|m| m.step.is_none()) else {
            return;
        };
        master
            .reports
            .retain(|&node, _| members.contains(&NodeId(node)));
        if master.reports.len() < members.len() {
            return;
        }
        let reports: Vec<StartReport> = master.reports.values().copied().collect();
        let own = ctx.address().node();
        let decided = decide(&self.cluster, &reports).and_then(|mut decision| {
            decision.dictionary_from =
                super::handover::dictionary_source(&reports, &decision, own)?;
            Ok(decision)
        });
        let decision = match decided {
            Ok(decision) => decision,
            Err(reason) => return self.stop_cluster(ctx, &reason),
        };
        if self.settings.arbitrator.is_some() {
            tell_arbitrator(ctx, self.settings.arbitrator, &decision);
            master.step = Some(Step::Arbitrating(decision));
        } else {
            self.carry_out(ctx, decision);
        }
    }

    /// The arbitrator heard of life `cluster_life`: the start goes on.
    pub(super) fn life_begun(&mut self, ctx: &mut Context, cluster_life: u32) {
        let Some(master) = self.master_start.as_mut() else {
            return;
        };
        match master.step.take() {
            Some(Step::Arbitrating(decision)) if decision.cluster_life == cluster_life => {
                self.carry_out(ctx, decision);
            }
            other => master.step = other,
        }
    }

    /// Stops the nodes that cannot take part (this one, if it cannot: the others elect a
    /// new president, which decides again) and orders the others.
    fn carry_out(&mut self, ctx: &mut Context, decision: Decision) {
        let own = ctx.address().node();
        // The other stale nodes stop first: the survivors of this node's stop must be
        // the participants the arbitrator heard of. This node's membership tells each to
        // stop and removes it now, as failed (left a member, it would be removed only once
        // silent for the partial-start timeout, 30 s by default, and until then, restarted
        // to copy its data, its join would be ignored as a member's). The order goes from
        // membership to membership, through the fence gate: sent from here, the removal's
        // fence could drop it on its way, and the node would wait at its start until the
        // arbitrator stopped it, not knowing to copy.
        for (node, reason) in decision.stale.iter().filter(|(n, _)| *n != own) {
            ctx.log(reason);
            let stop = NodeSuspected {
                suspects: NodeSet::of([*node]),
            }
            .to_signal(membership_address(own), ctx.address());
            send_with_bytes(ctx, stop, reason.as_bytes());
        }
        if let Some((_, reason)) = decision.stale.iter().find(|(n, _)| *n == own) {
            // The participants elect a new president, which decides again without it.
            ctx.log(reason);
            return ctx.stop_node(reason);
        }
        ctx.log(&format!(
            "start from disk: cluster life {}, restoring GCI {} on data nodes {:?}",
            decision.cluster_life,
            decision.gci,
            decision
                .participants
                .iter()
                .map(|n| n.0)
                .collect::<Vec<_>>()
        ));
        if let Some(source) = decision.dictionary_from {
            // Its own dictionary is not the cluster's: the source's replaces it.
            self.saved_schema = None;
            ctx.warn(&format!(
                "start from disk: this node's schema file is suspect, the cluster takes \
                 the dictionary of data node {}",
                source.0
            ));
        }
        let order = decision.order();
        let dicts = self.dicts_of(decision.participants);
        for &dict in &dicts {
            ctx.send_typed(dict, &order);
        }
        if let Some(master) = &mut self.master_start {
            master.step = Some(Step::Ordering(decision, dicts));
        }
    }

    fn dicts_of(&self, nodes: NodeSet) -> Vec<BlockAddress> {
        let shapes = nodes.iter().filter_map(|n| self.cluster.node(n));
        shapes.map(|n| n.dict_address()).collect()
    }

    fn stop_cluster(&mut self, ctx: &mut Context, reason: &str) {
        ctx.log(reason);
        let nodes: Vec<NodeId> = self.members().map(|n| n.node).collect();
        for node in nodes {
            let stop = ClusterStop {}.to_signal(membership_address(node), ctx.address());
            send_with_bytes(ctx, stop, reason.as_bytes());
        }
    }

    /// The master's order: record it in the control file, then confirm.
    pub(super) fn start_ordered(&mut self, ctx: &mut Context, order: StartOrder) {
        if !matches!(self.start, Phase::Reported(_)) {
            return;
        }
        self.start = Phase::Ordered {
            participants: order.participants,
            handover: None,
        };
        let here = ctx.address().node();
        if self.master_node != here && order.dictionary_from != u32::from(here.0) {
            // The master ships the cluster's dictionary.
            self.saved_schema = None;
        }
        let gcp = crate::gcp::gcp_address(here);
        let set = DiskStateSet {
            cluster_life: order.cluster_life,
            gci: order.gci,
        };
        ctx.send_typed(gcp, &set);
    }

    /// The control file records the order.
    pub(super) fn disk_state_set(&mut self, ctx: &mut Context) {
        if let (Phase::Ordered { .. }, Some(master)) = (&self.start, self.master()) {
            ctx.send_typed(master, &StartOrderConf {});
        }
    }

    /// A participant recorded the order, at the master.
    pub(super) fn start_order_confirmed(&mut self, ctx: &mut Context, from: BlockAddress) {
        let Some(MasterStart {
            step: Some(Step::Ordering(decision, awaiting)),
            ..
        }) = &mut self.master_start
        else {
            return;
        };
        awaiting.retain(|&dict| dict != from);
        if awaiting.is_empty() {
            let decision = decision.clone();
            self.take_dictionary(ctx, decision);
        }
    }

    /// Takes the saved dictionary, if any, as this dictionary's tables.
    pub(super) fn take_saved_schema(&mut self) {
        if let Some(image) = self.saved_schema.take() {
            for mut saved in image.tables {
                // An ordered index still being built when the cluster stopped is built
                // whole as the partitions are restored.
                let body = &mut saved.definition;
                let unique: Vec<u32> = body.index_tables.iter().map(|&(index, _)| index).collect();
                body.building.retain(|index| unique.contains(index));
                let table = DictTable {
                    version: saved.version,
                    oldest_version: saved.version,
                    next_index_id: saved.definition.next_number(saved.table_id),
                    definition: Definition::new(saved.definition),
                    index_of: saved.index_of,
                };
                self.tables.insert(saved.table_id, table);
            }
        }
    }

    /// Takes the master's saved dictionary (or the one a participant handed over) as the
    /// cluster's and ships it to every participant's `dict` (but its own and the one that
    /// handed it over), `ldm` and `tc`.
    pub(super) fn ship_definitions(&mut self, ctx: &mut Context, decision: Decision) {
        self.take_saved_schema();
        self.next_table_id = self.next_table_id.max(decision.next_table_id);
        let here = ctx.address();
        let source = decision.dictionary_from.and_then(|n| self.cluster.node(n));
        let source = source.map(|n| n.dict_address());
        let receivers: Vec<BlockAddress> = decision
            .participants
            .iter()
            .filter_map(|n| self.cluster.node(n))
            .flat_map(|n| {
                let dict = Some(n.dict_address()).filter(|&d| d != here && Some(d) != source);
                dict.into_iter()
                    .chain(n.ldm_addresses())
                    .chain(n.tc_addresses())
            })
            .collect();
        let awaiting = self.send_definitions(ctx, &receivers, STARTING_DEFINITION);
        ctx.log(&format!(
            "start from disk: {} table definitions shipped",
            self.tables.len()
        ));
        if let Some(master) = &mut self.master_start {
            master.step = Some(Step::Definitions(decision, awaiting));
        }
        self.definitions_progress(ctx);
    }

    /// Whether `conf` answers a definition shipped in the start (and takes it).
    pub(super) fn starting_definition_applied(
        &mut self,
        ctx: &mut Context,
        conf: &TableDefinitionConf,
        from: BlockAddress,
    ) -> bool {
        if conf.request_id != STARTING_DEFINITION {
            return false;
        }
        if conf.code != 0 {
            let reason = format!(
                "data node {} could not apply table {}'s definition (error {}) in the start \
                 from disk",
                from.node().0,
                conf.table_id,
                conf.code
            );
            self.stop_cluster(ctx, &reason);
            return true;
        }
        if let Some(MasterStart {
            step: Some(Step::Definitions(_, awaiting)),
            ..
        }) = &mut self.master_start
        {
            awaiting.remove(&(from, conf.table_id));
        }
        self.definitions_progress(ctx);
        true
    }

    /// Once every participant holds the definitions, every `ldm` restores.
    fn definitions_progress(&mut self, ctx: &mut Context) {
        let Some(MasterStart {
            step: Some(Step::Definitions(decision, awaiting)),
            reports,
            ..
        }) = &mut self.master_start
        else {
            return;
        };
        if !awaiting.is_empty() {
            return;
        }
        let decision = decision.clone();
        let mut ldms = Vec::new();
        for node in decision.participants.iter() {
            let Some(shape) = self.cluster.node(node) else {
                continue;
            };
            let restore = LdmRestore {
                gci: decision.gci,
                node_life: reports.get(&node.0).map_or(1, |r| r.node_life),
                restores: if decision.gci > 0 {
                    RestoreKind::SystemStart as u32
                } else {
                    RestoreKind::Fresh as u32
                },
            };
            for ldm in shape.ldm_addresses() {
                ctx.send_typed(ldm, &restore);
                ldms.push(ldm);
            }
        }
        if let Some(master) = &mut self.master_start {
            master.step = Some(Step::Restoring(decision, ldms));
        }
    }

    /// An `ldm` restored its partitions, at the master.
    pub(super) fn ldm_restored(
        &mut self,
        ctx: &mut Context,
        conf: LdmRestoreConf,
        from: BlockAddress,
    ) {
        let Some(MasterStart {
            step: Some(Step::Restoring(decision, awaiting)),
            rows,
            records,
            ..
        }) = &mut self.master_start
        else {
            return;
        };
        let Some(at) = awaiting.iter().position(|&ldm| ldm == from) else {
            return;
        };
        awaiting.swap_remove(at);
        *rows += conf.rows;
        *records += conf.records;
        ctx.log(&format!(
            "start from disk: ldm {} of data node {} restored {} rows from its checkpoint \
             and replayed {} REDO records; {} ldm instances to go",
            from.instance(),
            from.node().0,
            conf.rows,
            conf.records,
            awaiting.len()
        ));
        if awaiting.is_empty() {
            let decision = decision.clone();
            self.system_started(ctx, decision);
        }
    }

    /// Every partition is restored: every participant starts.
    fn system_started(&mut self, ctx: &mut Context, decision: Decision) {
        let started = SystemStarted {
            gci: decision.gci,
            members: decision.participants,
        };
        for node in decision.participants.iter() {
            let Some(shape) = self.cluster.node(node) else {
                continue;
            };
            let receivers = std::iter::once(shape.dict_address())
                .chain(std::iter::once(crate::gcp::gcp_address(node)))
                .chain(shape.tc_addresses());
            for receiver in receivers.collect::<Vec<_>>() {
                ctx.send_typed(receiver, &started);
            }
            let node_started = NodeStarted {
                node: u32::from(node.0),
            };
            ctx.send_typed(membership_address(node), &node_started);
        }
        if let Some(master) = self.master_start.take() {
            ctx.log(&format!(
                "start from disk done: {} rows restored from checkpoints, {} REDO records \
                 replayed; the cluster serves from GCI {}",
                master.rows,
                master.records,
                decision.gci + 1
            ));
        }
    }

    /// The cluster serves.
    pub(super) fn started(&mut self) {
        self.start = Phase::Started;
    }

    /// Whether this node's dictionary still runs the start (schema changes wait).
    pub(super) fn is_starting(&self) -> bool {
        !matches!(self.start, Phase::Started)
    }

    /// A failure amid the start: before the order, a new master collects the reports
    /// again; after it, a participant's failure stops the others.
    pub(super) fn start_lost(&mut self, ctx: &mut Context, failed: NodeSet) {
        match &self.start {
            Phase::Started => {}
            Phase::Ordered { participants, .. } if participants.intersects(failed) => {
                let reason = format!(
                    "data node(s) {:?} failed during the start from disk; start the cluster \
                     again",
                    failed.iter().map(|n| n.0).collect::<Vec<_>>()
                );
                ctx.stop_node(&reason);
            }
            _ => {
                self.send_report(ctx);
                self.decide_when_reported(ctx);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::DataNodeShape;

    /// Four data nodes in two node groups of two.
    fn cluster() -> ClusterShape {
        let nodes = (1..=4)
            .map(|id| DataNodeShape {
                node: NodeId(id),
                node_group: u16::from(id - 1) / 2,
                tc_instances: 1,
                ldm_instances: 1,
            })
            .collect();
        ClusterShape::new(2, nodes).unwrap()
    }

    fn report(node: u32, cluster_life: u32, restorable_gci: u64, holds_data: bool) -> StartReport {
        StartReport {
            node,
            node_life: 3,
            cluster_life,
            restorable_gci,
            holds_data: u32::from(holds_data),
            restores_from_gci: 0,
            next_table_id: node,
            schema_suspect: 0,
        }
    }

    /// A node that copied its rows in a node restart and checkpointed them: its disk
    /// restores GCI `from` and later only.
    fn report_since_copy(node: u32, restorable_gci: u64, from: u64) -> StartReport {
        StartReport {
            restores_from_gci: from,
            ..report(node, 2, restorable_gci, true)
        }
    }

    fn nodes(ids: &[u8]) -> NodeSet {
        NodeSet::of(ids.iter().map(|&id| NodeId(id)))
    }

    #[test]
    fn no_node_with_data_is_an_initial_start_of_them_all() {
        let reports = [report(1, 0, 0, false), report(2, 0, 0, false)];
        let decision = decide(&cluster(), &reports).unwrap();
        assert_eq!((decision.cluster_life, decision.gci), (1, 0));
        assert_eq!(decision.participants, nodes(&[1, 2]));
        assert!(decision.stale.is_empty());
        // A node of a cluster's life holding nothing yet (its copy not checkpointed): the
        // data is on the nodes not here.
        let copied = [report(1, 0, 0, false), report(2, 4, 90, false)];
        let refused = decide(&cluster(), &copied).unwrap_err();
        assert!(refused.contains("data node(s) [2] belong to"), "{refused}");
    }

    #[test]
    fn the_gci_is_the_latest_some_node_of_every_group_restores() {
        let reports = [
            report(1, 2, 40, true),
            report(2, 2, 38, true),
            report(3, 2, 35, true),
            report(4, 2, 39, true),
        ];
        let decision = decide(&cluster(), &reports).unwrap();
        assert_eq!((decision.cluster_life, decision.gci), (3, 39));
        assert_eq!(decision.participants, nodes(&[1, 4]));
        let stale: Vec<u8> = decision.stale.iter().map(|(n, _)| n.0).collect();
        assert_eq!(stale, vec![2, 3]);
        assert!(
            decision.stale[0].1.contains("restores GCI 38 only"),
            "{:?}",
            decision.stale
        );
        assert_eq!(decision.next_table_id, 4);
    }

    #[test]
    fn a_node_that_copied_its_rows_restores_no_gci_before_its_checkpoint() {
        // Node 2 copied its rows and checkpointed them with rows of GCI 42 and below.
        let later = [
            report(1, 2, 40, true),
            report_since_copy(2, 45, 42),
            report(3, 2, 41, true),
            report(4, 2, 44, true),
        ];
        let decision = decide(&cluster(), &later).unwrap();
        assert_eq!(decision.gci, 44);
        assert_eq!(decision.participants, nodes(&[2, 4]));

        let earlier = [
            report(1, 2, 41, true),
            report_since_copy(2, 45, 42),
            report(3, 2, 41, true),
            report(4, 2, 39, true),
        ];
        let decision = decide(&cluster(), &earlier).unwrap();
        assert_eq!(decision.gci, 41);
        assert_eq!(decision.participants, nodes(&[1, 3]));
        let (stale, why) = &decision.stale[0];
        assert_eq!(stale.0, 2);
        assert!(why.contains("restores GCI 42 and later only"), "{why}");

        // Node group 0 can go back to no GCI group 1 reaches.
        let apart = [
            report(1, 2, 40, true),
            report_since_copy(2, 45, 42),
            report(3, 2, 41, true),
            report(4, 2, 39, true),
        ];
        let refused = decide(&cluster(), &apart).unwrap_err();
        assert!(
            refused.contains("node group 0 can restore GCI 41"),
            "{refused}"
        );
    }

    #[test]
    fn a_group_behind_another_waits_for_its_missing_node_that_recorded_the_later_gcis() {
        // Node 1 of group 0 went on to GCI 21 with node 4 and is absent; node 2 stopped
        // at 19.
        let without_node_1 = [
            report(2, 2, 19, true),
            report(3, 2, 17, true),
            report(4, 2, 21, true),
        ];
        let refused = decide(&cluster(), &without_node_1).unwrap_err();
        assert!(
            refused.contains("node group 0 here restore GCI 19 only")
                && refused.contains("Start its nodes [1, 2]"),
            "{refused}"
        );
        // One GCI apart too: node 2 may have been removed after recording 20, and 21
        // announced restorable by nodes 1 and 4.
        let one_apart = [
            report(2, 2, 20, true),
            report(3, 2, 17, true),
            report(4, 2, 21, true),
        ];
        assert!(decide(&cluster(), &one_apart).is_err());
        // Every node of the group here and sound: no disk holds more.
        let all_here = [
            report(1, 2, 0, false),
            report(2, 2, 19, true),
            report(3, 2, 17, true),
            report(4, 2, 21, true),
        ];
        assert_eq!(decide(&cluster(), &all_here).unwrap().gci, 19);
    }

    /// A node whose control file, or a log its restore needed, proved damaged.
    fn report_unrestorable(node: u32) -> StartReport {
        StartReport {
            holds_data: DiskHolds::Unrestorable as u32,
            ..report(node, 0, 0, false)
        }
    }

    #[test]
    fn a_node_whose_disk_cannot_restore_copies_from_a_peer_and_never_starts_an_empty_cluster() {
        let reports = [
            report_unrestorable(1),
            report(2, 2, 41, true),
            report(3, 2, 41, true),
            report(4, 2, 41, true),
        ];
        let decision = decide(&cluster(), &reports).unwrap();
        assert_eq!((decision.cluster_life, decision.gci), (3, 41));
        assert_eq!(decision.participants, nodes(&[2, 3, 4]));
        let (stale, why) = &decision.stale[0];
        assert_eq!(stale.0, 1);
        assert!(why.contains("holds data its disk cannot restore"), "{why}");
        assert!(why.starts_with(STALE_AT_START), "{why}");

        // Having recorded a later GCI than the others restore, it held commits no other
        // node did: nothing starts.
        let alone_ahead = [
            StartReport {
                restorable_gci: 44,
                cluster_life: 2,
                ..report_unrestorable(1)
            },
            report(2, 2, 41, true),
            report(3, 2, 41, true),
            report(4, 2, 41, true),
        ];
        let refused = decide(&cluster(), &alone_ahead).unwrap_err();
        assert!(
            refused.contains("data node 1 recorded GCI 44") && refused.contains("empty it"),
            "{refused}"
        );

        // Alone, or beside nodes without data, it is no reason for an initial start.
        for reports in [
            vec![report_unrestorable(1)],
            vec![report_unrestorable(1), report(2, 0, 0, false)],
        ] {
            let refused = decide(&cluster(), &reports).unwrap_err();
            assert!(refused.contains("data node(s) [1] hold data"), "{refused}");
            assert!(refused.contains("Nothing starts empty"), "{refused}");
        }
    }

    #[test]
    fn data_of_an_older_life_or_without_its_copy_does_not_count() {
        let reports = [
            report(1, 2, 40, true),
            // Older life: its GCIs are of a history the cluster left behind.
            report(2, 1, 90, true),
            report(3, 2, 35, true),
            // Copied its data in a node restart: its log lacks what was copied.
            report(4, 2, 50, false),
        ];
        let decision = decide(&cluster(), &reports).unwrap();
        assert_eq!(decision.gci, 35);
        assert_eq!(decision.participants, nodes(&[1, 3]));
        assert!(decision.stale[0].1.contains("of the cluster's life 1"));
        assert!(decision.stale[1].1.contains("holds no data to restore"));
    }

    #[test]
    fn a_node_group_without_a_node_that_can_restore_stops_the_start() {
        let reports = [report(1, 2, 40, true), report(3, 1, 35, true)];
        let refused = decide(&cluster(), &reports).unwrap_err();
        assert!(
            refused.contains("node group 1") && refused.contains("[3, 4]"),
            "{refused}"
        );
    }
}
