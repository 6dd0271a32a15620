//! Transactions and scans waiting for a client that will not come: one idle past the
//! inactivity timeout, or one whose client's connection to this node closed (`ClientLost`,
//! NDB's API failure handling). Either is ended as soon as it waits for its client (at
//! once when idle; when its batch or round ends otherwise, found by the next tick), so its
//! locks go without waiting out the timeout for a client that crashed.

use std::time::Duration;

use kista_runtime::Context;
use kista_signal::{NodeId, TypedSignal};

use super::{Phase, TransactionCoordinator, INACTIVITY_CHECK_MS};
use crate::protocol::*;

impl TransactionCoordinator {
    pub(super) fn start_ticking(&mut self, ctx: &mut Context) {
        if !self.ticking {
            self.ticking = true;
            let tick = CoordinatorTick {}.to_signal(ctx.address(), ctx.address());
            ctx.send_delayed(tick, Duration::from_millis(INACTIVITY_CHECK_MS));
        }
    }

    pub(super) fn tick(&mut self, ctx: &mut Context) {
        self.ticking = false;
        self.end_idle_work(ctx);
        // Sampled here rather than at every open and end: the tick runs while anything is
        // open, and its last one, with nothing open, leaves 0.
        self.counters.open_transactions(self.transactions.len());
        if !self.transactions.is_empty() || !self.scans.is_empty() {
            self.start_ticking(ctx);
        }
    }

    /// The connection of client node `lost` closed: its transactions and scans here are
    /// ended now if they wait for it, else as soon as they do.
    pub(super) fn client_lost(&mut self, ctx: &mut Context, lost: ClientLost) {
        let Ok(node) = u8::try_from(lost.client_node).map(NodeId) else {
            return;
        };
        for transaction in self.transactions.values_mut() {
            if transaction.client.node() == node {
                transaction.client_lost = true;
            }
        }
        self.scans_client_lost(node);
        self.end_idle_work(ctx);
        if !self.transactions.is_empty() || !self.scans.is_empty() {
            self.start_ticking(ctx);
        }
    }

    /// Aborts the transactions, and closes the scans, that wait for a client gone quiet or
    /// gone.
    fn end_idle_work(&mut self, ctx: &mut Context) {
        let now = ctx.now_ns();
        let limit_ns = self
            .settings
            .transaction_inactive_timeout_ms
            .saturating_mul(1_000_000);
        let idle: Vec<u64> = self
            .transactions
            .iter()
            .filter(|(_, t)| {
                t.phase == Phase::Executing && t.outstanding == 0 && t.batch_end.is_none()
            })
            .filter(|(_, t)| t.client_lost || now.saturating_sub(t.last_activity_ns) > limit_ns)
            .map(|(&id, _)| id)
            .collect();
        for id in idle {
            if let Some(transaction) = self.transactions.get_mut(&id) {
                let message = if transaction.client_lost {
                    format!(
                        "the connection of its client (node {}) closed; the transaction was \
                         aborted",
                        transaction.client.node().0
                    )
                } else {
                    format!(
                        "the transaction was idle for more than {} ms and was aborted",
                        self.settings.transaction_inactive_timeout_ms
                    )
                };
                transaction.failure = Some((ErrorCode::TransactionInactive, 0, message));
                self.start_abort(ctx, id);
            }
        }
        self.close_idle_scans(ctx, now, limit_ns);
    }
}
