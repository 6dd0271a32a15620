//! The coordinator's part in a node restart (see `dict::restart`).
//!
//! A restarting node's replicas join the end of their partitions' chains as *starting*
//! replicas ([`AddStartingReplica`]): every transaction from then on writes to them too.
//! Transactions begun before still write along the old chains, so the coordinator answers
//! only once all of them have ended; after that, a partition's copy cannot miss a write.
//! When the node is started ([`NodeStarted`]) the chains go back to their placement order:
//! its primaries return to it and reads may use it.
//!
//! The restarted node's own coordinators take no client transactions until then
//! (error 4035), and number their transactions with the generation they joined in, so
//! none is mistaken for one of the node's earlier life that a takeover may still resolve.

use kista_runtime::Context;
use kista_signal::{BlockAddress, NodeId};

use super::drain::Waiter;
use super::TransactionCoordinator;
use crate::cluster::NodeSet;
use crate::protocol::*;

impl TransactionCoordinator {
    /// Whether this coordinator's node serves clients: not while it restarts, nor before
    /// it learned the membership it joined.
    pub(super) fn node_serves(&self) -> bool {
        self.knows_membership && self.started_nodes.contains(self.settings.node)
    }

    /// The chains of every table for the nodes' states.
    pub(super) fn arrange_chains(&mut self) {
        for table in self.tables.values_mut() {
            table.map.arrange(self.started_nodes, self.starting_nodes);
        }
    }

    pub(super) fn node_joined(&mut self, joined: NodeJoined) {
        let Ok(node) = u8::try_from(joined.joined).map(NodeId) else {
            return;
        };
        if node == self.settings.node {
            // This node restarted: the others are started (and so is this one if the
            // master's word came first), and its transaction ids must differ from its
            // earlier life's.
            let started_already = self.started_nodes.contains(node);
            self.started_nodes = joined.members.minus(NodeSet::of([node]));
            if started_already {
                self.started_nodes.insert(node);
            }
            self.failed_nodes = self.cluster.node_set().minus(joined.members);
            self.incarnation = joined.generation as u8;
            self.knows_membership = true;
            self.arrange_chains();
        }
    }

    pub(super) fn add_starting_replica(
        &mut self,
        ctx: &mut Context,
        add: AddStartingReplica,
        master: BlockAddress,
    ) {
        let Ok(node) = u8::try_from(add.node).map(NodeId) else {
            return;
        };
        self.starting_nodes = NodeSet::of([node]);
        // Its earlier life's transactions were taken over before it could join (a
        // takeover still running holds back the answer below).
        self.failed_nodes.remove(node);
        self.arrange_chains();
        let waiter = Waiter::Restart {
            restart: add.restart,
            master,
        };
        self.drain(ctx, waiter);
    }

    pub(super) fn node_started(&mut self, started: NodeStarted) {
        let Ok(node) = u8::try_from(started.node).map(NodeId) else {
            return;
        };
        self.started_nodes.insert(node);
        self.starting_nodes.remove(node);
        self.arrange_chains();
    }

    /// The start from disk is over: `members` serve, and commits are stamped with the
    /// GCI after the one restored.
    pub(super) fn system_started(&mut self, started: SystemStarted) {
        self.started_nodes = started.members;
        self.checkpoints = super::gcp::CoordinatorCheckpoints::new(started.gci + 1);
        self.arrange_chains();
    }

    /// A failure abandons a restart in progress (the restarting node stops itself).
    pub(super) fn restart_failed(&mut self, lost: NodeSet) {
        self.started_nodes = self.started_nodes.minus(lost);
        if !self.starting_nodes.is_empty() {
            self.starting_nodes = NodeSet::EMPTY;
            (self.drains).retain(|drain| !matches!(drain.waiter, Waiter::Restart { .. }));
        }
    }
}

/// The error a restarting node's coordinator gives a client.
pub(super) fn not_serving_yet(node: NodeId) -> (ErrorCode, String) {
    let message = format!(
        "data node {} is restarting and takes no transactions until it holds all its data; \
         use another node or retry",
        node.0
    );
    (ErrorCode::NodeStarting, message)
}
