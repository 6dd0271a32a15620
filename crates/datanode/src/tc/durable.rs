//! Durable commits (beyond NDB): a transaction that ends with
//! [`ExecuteMode::CommitDurable`] is acknowledged only once its GCI is restorable, that is
//! once every replica's REDO log holds it synced, so a crash of every node loses it not.
//!
//! The coordinator commits it as any other; when it has committed on every replica, the
//! client's confirmation waits here until the master's [`GcpSaved`] of its GCI or a later
//! one arrives. The first durable commit of a GCI asks the master for an early global
//! checkpoint ([`GcpHurry`], through the node's `gcp`), so the wait is one round (a few
//! round trips and one sync of each log) rather than the interval. The master runs one
//! round at a time, so durable commits decided meanwhile share the next (group commit):
//! the rate of rounds, and of syncs, is bounded by how long a round takes, not by the
//! rate of commits.

use kista_runtime::Context;
use kista_signal::BlockAddress;

use super::TransactionCoordinator;
use crate::gcp::gcp_address;
use crate::protocol::*;

/// Durable commits whose confirmation one coordinator may hold; beyond, new durable
/// commits are refused with a temporary error until the next global checkpoint frees
/// some. (Those already committing when the limit is reached are held all the same.)
pub(super) const DURABLE_COMMITS_WAITING_MAX: usize = 16_384;

/// A committed transaction's confirmation to its client.
#[derive(Clone, Copy)]
pub(super) struct CommitAck {
    pub client: BlockAddress,
    pub client_tx: u64,
    pub reads: u32,
    pub gci: u64,
}

/// The confirmations of durable commits that wait for their GCI to be saved.
#[derive(Default)]
pub(super) struct DurableCommits {
    waiting: Vec<CommitAck>,
    /// The latest GCI the master said every member saved.
    saved_gci: u64,
    /// The latest GCI this coordinator asked the master to hurry.
    hurried_gci: u64,
}

impl DurableCommits {
    pub(super) fn is_full(&self) -> bool {
        self.waiting.len() >= DURABLE_COMMITS_WAITING_MAX
    }
}

impl TransactionCoordinator {
    /// Confirms a commit to its client: at once, or for a durable one once its GCI is
    /// saved.
    pub(super) fn acknowledge_commit(&mut self, ctx: &mut Context, ack: CommitAck, durable: bool) {
        let waiting = &mut self.durable;
        if !durable || ack.gci == 0 || ack.gci <= waiting.saved_gci {
            // A transaction that changed nothing has nothing to wait for.
            return send_commit_ack(ctx, ack);
        }
        if ack.gci > waiting.hurried_gci {
            waiting.hurried_gci = ack.gci;
            let gcp = gcp_address(ctx.address().node());
            ctx.send_typed(gcp, &GcpHurry { gci: ack.gci });
        }
        waiting.waiting.push(ack);
    }

    /// Every member's logs hold `gci`: the durable commits of it and below are confirmed.
    pub(super) fn gci_saved(&mut self, ctx: &mut Context, gci: u64) {
        let durable = &mut self.durable;
        durable.saved_gci = durable.saved_gci.max(gci);
        let saved = durable.saved_gci;
        durable.waiting.retain(|&ack| {
            let done = ack.gci <= saved;
            if done {
                send_commit_ack(ctx, ack);
            }
            !done
        });
    }
}

fn send_commit_ack(ctx: &mut Context, ack: CommitAck) {
    if ack.client == BlockAddress::default() {
        return; // a transaction taken over from a failed coordinator
    }
    let conf = ExecuteConf {
        client_tx: ack.client_tx,
        outcome: TransactionOutcome::Committed,
        reads: ack.reads,
        code: 0,
        failed_op: 0,
        gci: ack.gci,
    };
    ctx.send_typed(ack.client, &conf);
}
