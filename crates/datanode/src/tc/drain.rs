//! Waiting for the transactions open at one moment to end, for whoever must know that no
//! transaction begun before it still runs: a node restart (`tc/restart.rs`: transactions
//! begun before a starting replica joined the chains do not write it) and a unique index
//! being built (transactions begun before the index existed keep none of its entries).
//! Takeovers running hold back every answer: their transactions count too.

use rustc_hash::FxHashSet;

use kista_runtime::Context;
use kista_signal::BlockAddress;

use super::TransactionCoordinator;
use crate::protocol::*;

/// Who waits, and how to answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Waiter {
    /// `AddStartingReplica` of restart `restart`: answered with `StartingReplicaAdded`.
    Restart { restart: u32, master: BlockAddress },
    /// `DrainTransactions`: answered with `TransactionsDrained`.
    Dictionary { request_id: u64, dict: BlockAddress },
}

pub(super) struct Drain {
    pub(super) waiter: Waiter,
    open: FxHashSet<u64>,
}

impl TransactionCoordinator {
    /// Answers `waiter` once every transaction open now has ended.
    pub(super) fn drain(&mut self, ctx: &mut Context, waiter: Waiter) {
        let open = self.transactions.keys().copied().collect();
        self.drains.push(Drain { waiter, open });
        self.drained(ctx, None);
    }

    /// Notes that transaction `ended` ended; answers every drain whose transactions all
    /// have, unless a takeover runs.
    pub(super) fn drained(&mut self, ctx: &mut Context, ended: Option<u64>) {
        if self.drains.is_empty() {
            return;
        }
        if let Some(id) = ended {
            for drain in &mut self.drains {
                drain.open.remove(&id);
            }
        }
        if self.takeover.is_some() {
            return;
        }
        self.drains.retain(|drain| {
            if !drain.open.is_empty() {
                return true;
            }
            match drain.waiter {
                Waiter::Restart { restart, master } => {
                    ctx.send_typed(master, &StartingReplicaAdded { restart })
                }
                Waiter::Dictionary { request_id, dict } => {
                    ctx.send_typed(dict, &TransactionsDrained { request_id })
                }
            }
            false
        });
    }

    /// Makes every drain wait for transaction `id` too (one a takeover took on).
    pub(super) fn drain_also(&mut self, id: u64) {
        for drain in &mut self.drains {
            drain.open.insert(id);
        }
    }
}
