//! Node restart, run by the master's dictionary (NDB's DIH and DICT in a node restart).
//!
//! Once the membership let a restarted node in ([`NodeJoined`]), the master:
//!
//! 1. ships it every table definition (index tables first), which its `dict`, `ldm` and
//!    `tc` instances apply: it now holds its partitions, empty;
//! 2. has it load its partitions from its own disk ([`OwnDiskRestore`], see
//!    `gcp::own_disk`), as of the latest GCI it recorded, if its disk holds data of the
//!    cluster's life;
//! 3. asks every member's coordinators to put the node's replicas at the end of their
//!    chains as starting replicas ([`AddStartingReplica`]); each answers once the
//!    transactions it began before have ended, so from then on every write reaches the
//!    node;
//! 4. has each partition copied to the node by the replica before it in the chain
//!    ([`CopyPartition`], see `ldm::copy`): what changed after the GCI its disk restored,
//!    or every row;
//! 5. when every partition is copied, tells every block of every member and the arbitrator
//!    that the node started ([`NodeStarted`]): chains go back to their placement order, so
//!    the node's primaries return to it, and clients may use it.
//!
//! One node restarts at a time; others that join meanwhile wait their turn. A failure of
//! any node during a restart ends it: the restarting node stops itself (its own dictionary
//! sees the failure) and is started again later, as NDB does when a node fails during
//! another's start.

use std::collections::VecDeque;

use rustc_hash::FxHashSet;

use kista_runtime::Context;
use kista_signal::{BlockAddress, NodeId, TypedSignal};

use super::Dictionary;
use crate::cluster::NodeSet;
use crate::dist::PartitionMap;
use crate::gcp::gcp_address;
use crate::membership::membership_address;
use crate::protocol::*;
use crate::send_with_bytes;

/// Request ids of definitions shipped to a restarting node: far above the schema changes'
/// own numbering.
const SHIPPED_DEFINITION: u64 = 1 << 62;

enum Step {
    /// Definitions sent; (block, table) confirmations awaited.
    Definitions(FxHashSet<(BlockAddress, u32)>),
    /// The node loads its partitions from its own disk (until `restored`).
    OwnDisk { restored: bool },
    /// Coordinators that have not added the starting replica yet.
    Chains(Vec<BlockAddress>),
    /// Partitions (table, partition) still being copied.
    Copies(FxHashSet<(u32, u32)>),
}

pub(super) struct Restart {
    id: u32,
    node: NodeId,
    step: Step,
    /// The GCI the node's own disk restored its partitions to (0: none).
    from_gci: u64,
    copied: Copied,
}

/// What a restart's copies sent.
#[derive(Clone, Copy, Debug, Default)]
struct Copied {
    rows: u64,
    deleted: u64,
    partitions: u32,
    /// Partitions copied whole (every row).
    whole: u32,
}

#[derive(Default)]
pub(super) struct Restarts {
    running: Option<Restart>,
    /// Nodes that joined while another restarted.
    queued: VecDeque<NodeId>,
    next_id: u32,
}

impl Restarts {
    /// Nodes that joined and are not started yet: restarting or queued to.
    pub(super) fn restarting_nodes(&self) -> NodeSet {
        let running = self.running.as_ref().map(|restart| restart.node);
        NodeSet::of(running.into_iter().chain(self.queued.iter().copied()))
    }

    /// The running restart, if it is number `id` (answers to an abandoned one are ignored).
    fn running_with(&mut self, id: u32) -> Option<&mut Restart> {
        self.running.as_mut().filter(|restart| restart.id == id)
    }
}

impl Dictionary {
    pub(super) fn node_joined(&mut self, ctx: &mut Context, joined: NodeJoined) {
        let Ok(node) = u8::try_from(joined.joined).map(NodeId) else {
            return;
        };
        if let Ok(president) = u8::try_from(joined.president) {
            self.master_node = NodeId(president);
        }
        self.failed_nodes = self.cluster.node_set().minus(joined.members);
        if node == ctx.address().node() {
            // `restarting` is set from the start (and cleared if the master's word that
            // the restart is over came before this).
            return;
        }
        if self.is_master(ctx) {
            self.restarts.queued.push_back(node);
            self.next_restart(ctx);
        }
    }

    pub(super) fn is_master(&self, ctx: &Context) -> bool {
        self.master_node == ctx.address().node()
    }

    fn next_restart(&mut self, ctx: &mut Context) {
        if self.restarts.running.is_some() {
            return;
        }
        let Some(node) = self.restarts.queued.pop_front() else {
            return;
        };
        self.restarts.next_id += 1;
        let id = self.restarts.next_id;
        let Some(shape) = self.cluster.node(node) else {
            return;
        };
        let receivers: Vec<BlockAddress> = std::iter::once(shape.dict_address())
            .chain(shape.ldm_addresses())
            .chain(shape.tc_addresses())
            .collect();
        let request_id = SHIPPED_DEFINITION | u64::from(id);
        let awaiting = self.send_definitions(ctx, &receivers, request_id);
        self.restarts.running = Some(Restart {
            id,
            node,
            step: Step::Definitions(awaiting),
            from_gci: 0,
            copied: Copied::default(),
        });
        self.restart_progress(ctx);
    }

    /// Sends every table definition to each of `receivers`, index tables first (a table's
    /// definition names its index tables), as request `request_id`; returns the (receiver,
    /// table) confirmations to await.
    pub(super) fn send_definitions(
        &self,
        ctx: &mut Context,
        receivers: &[BlockAddress],
        request_id: u64,
    ) -> FxHashSet<(BlockAddress, u32)> {
        let mut tables: Vec<u32> = self.tables.keys().copied().collect();
        tables.sort_by_key(|id| (self.tables[id].index_of.is_none(), *id));
        let mut awaiting = FxHashSet::default();
        for table_id in tables {
            let table = &self.tables[&table_id];
            let body = table.definition.encoded();
            let definition = TableDefinition {
                request_id,
                table_id,
                schema_version: table.version,
                oldest_version: table.oldest_version,
                partitions: self.partitions_per_table(),
                dropped: 0,
                index_of: table.index_of.unwrap_or(0),
            };
            for &receiver in receivers {
                send_with_bytes(ctx, definition.to_signal(receiver, ctx.address()), body);
                awaiting.insert((receiver, table_id));
            }
        }
        awaiting
    }

    /// Whether `conf` answers a definition shipped to a restarting node (and takes it).
    pub(super) fn shipped_definition_applied(
        &mut self,
        ctx: &mut Context,
        conf: &TableDefinitionConf,
        from: BlockAddress,
    ) -> bool {
        if conf.request_id & SHIPPED_DEFINITION == 0 {
            return false;
        }
        let id = u32::try_from(conf.request_id & !SHIPPED_DEFINITION);
        let Some(restart) = id.ok().and_then(|id| self.restarts.running_with(id)) else {
            return true;
        };
        if let Step::Definitions(awaiting) = &mut restart.step {
            awaiting.remove(&(from, conf.table_id));
        }
        self.restart_progress(ctx);
        true
    }

    pub(super) fn starting_replica_added(
        &mut self,
        ctx: &mut Context,
        added: StartingReplicaAdded,
        from: BlockAddress,
    ) {
        let Some(restart) = self.restarts.running_with(added.restart) else {
            return;
        };
        if let Step::Chains(awaiting) = &mut restart.step {
            awaiting.retain(|&tc| tc != from);
        }
        self.restart_progress(ctx);
    }

    pub(super) fn partition_copied(&mut self, ctx: &mut Context, copied: PartitionCopied) {
        let Some(restart) = self.restarts.running_with(copied.restart) else {
            return;
        };
        if let Step::Copies(awaiting) = &mut restart.step {
            if awaiting.remove(&(copied.table_id, copied.partition)) {
                restart.copied.rows += copied.rows;
                restart.copied.deleted += copied.deleted;
                restart.copied.partitions += 1;
                restart.copied.whole += copied.whole;
            }
        }
        self.restart_progress(ctx);
    }

    /// The restarting node loaded its partitions from its own disk.
    pub(super) fn own_disk_restored(&mut self, ctx: &mut Context, restored: OwnDiskRestored) {
        let Some(restart) = self.restarts.running_with(restored.restart) else {
            return;
        };
        if let Step::OwnDisk { restored: false } = restart.step {
            restart.from_gci = restored.gci;
            restart.step = Step::OwnDisk { restored: true };
        }
        self.restart_progress(ctx);
    }

    /// Moves the running restart on when its step is done.
    fn restart_progress(&mut self, ctx: &mut Context) {
        let Some(restart) = &self.restarts.running else {
            return;
        };
        let (id, node) = (restart.id, restart.node);
        let done = match &restart.step {
            Step::Definitions(awaiting) => awaiting.is_empty(),
            Step::OwnDisk { restored } => *restored,
            Step::Chains(awaiting) => awaiting.is_empty(),
            Step::Copies(awaiting) => awaiting.is_empty(),
        };
        if !done {
            return;
        }
        let from_gci = restart.from_gci;
        let next = match restart.step {
            Step::Definitions(_) => {
                ctx.send_typed(gcp_address(node), &OwnDiskRestore { restart: id });
                Step::OwnDisk { restored: false }
            }
            Step::OwnDisk { .. } => {
                let coordinators: Vec<BlockAddress> =
                    self.members().flat_map(|n| n.tc_addresses()).collect();
                let add = AddStartingReplica {
                    restart: id,
                    node: u32::from(node.0),
                };
                for &tc in &coordinators {
                    ctx.send_typed(tc, &add);
                }
                Step::Chains(coordinators)
            }
            Step::Chains(_) => Step::Copies(self.start_copies(ctx, id, node, from_gci)),
            Step::Copies(_) => return self.node_started(ctx, node),
        };
        if let Some(restart) = &mut self.restarts.running {
            restart.step = next;
        }
        self.restart_progress(ctx);
    }

    /// Asks, for every partition with a replica on `node`, the replica before it in the
    /// chain to copy it there (what changed after `from_gci`); returns the partitions
    /// asked for.
    fn start_copies(
        &mut self,
        ctx: &mut Context,
        id: u32,
        node: NodeId,
        from_gci: u64,
    ) -> FxHashSet<(u32, u32)> {
        // Only started replicas hold data to copy: not `node`, nor nodes that joined
        // meanwhile and wait for their turn.
        let not_started = NodeSet::of(self.restarts.queued.iter().copied().chain([node]));
        let started = NodeSet::of(self.members().map(|n| n.node)).minus(not_started);
        let mut map = PartitionMap::for_cluster(self.partitions_per_table(), &self.cluster);
        map.arrange(started, NodeSet::of([node]));
        let mut copies = FxHashSet::default();
        for &table_id in self.tables.keys() {
            for partition in 0..map.partitions() {
                let chain = map.chain(partition);
                if chain.starting == 0 {
                    continue;
                }
                let source = chain.replicas[(chain.count - chain.starting - 1) as usize];
                let copy = CopyPartition {
                    restart: id,
                    table_id,
                    partition,
                    target: chain.last(),
                    from_gci,
                };
                ctx.send_typed(source, &copy);
                copies.insert((table_id, partition));
            }
        }
        copies
    }

    /// `node` holds all its data: every member's blocks learn it, and the node's membership,
    /// which tells the arbitrator once the node holds its read lease too.
    fn node_started(&mut self, ctx: &mut Context, node: NodeId) {
        if let Some(restart) = self.restarts.running.take() {
            ctx.log(&restart.summary());
        }
        let started = NodeStarted {
            node: u32::from(node.0),
        };
        let receivers: Vec<BlockAddress> = self
            .members()
            .flat_map(|n| {
                std::iter::once(n.dict_address())
                    .chain(n.tc_addresses())
                    .chain(n.ldm_addresses())
            })
            .chain([membership_address(node), gcp_address(node)])
            .collect();
        for receiver in receivers {
            ctx.send_typed(receiver, &started);
        }
        self.next_restart(ctx);
    }

    /// A failure ends the restart running (the restarting node stops itself, or failed);
    /// the restarting node's own dictionary stops its node.
    pub(super) fn restart_lost(&mut self, ctx: &mut Context, failed: NodeSet) {
        if self.restarting {
            let reason =
                format!("data node(s) {failed:?} failed while this node restarted; start it again");
            return ctx.stop_node(&reason);
        }
        self.restarts.queued.retain(|node| !failed.contains(*node));
        if self.restarts.running.take().is_some() {
            self.next_restart(ctx);
        }
    }

    pub(super) fn node_is_started(&mut self, ctx: &Context, started: NodeStarted) {
        if started.node == u32::from(ctx.address().node().0) {
            self.restarting = false;
        }
    }
}

impl Restart {
    /// What the restart copied, for the log.
    fn summary(&self) -> String {
        let Copied {
            rows,
            deleted,
            partitions,
            whole,
        } = self.copied;
        let node = self.node.0;
        if self.from_gci == 0 {
            return format!(
                "node {node} started: {rows} rows copied ({partitions} partitions copied \
                 whole: its disk held nothing usable)"
            );
        }
        let why = if whole > 0 {
            ": their deletes were not known that far back"
        } else {
            ""
        };
        format!(
            "node {node} started from its own disk (GCI {}): {rows} rows and {deleted} \
             deleted keys copied, changed since ({whole} of {partitions} partitions copied \
             whole{why})",
            self.from_gci
        )
    }
}
