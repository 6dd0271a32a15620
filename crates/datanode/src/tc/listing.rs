//! The coordinator's rows of `kista_info.transactions`: its open transactions as the
//! node's `info` block gathers them.

use kista_runtime::Context;
use kista_signal::{BlockAddress, TypedSignal};

use super::{Phase, TransactionCoordinator};
use crate::protocol::*;
use crate::send_with_bytes;

impl TransactionCoordinator {
    /// Answers the `info` block with this coordinator's open transactions (none for any
    /// other table).
    pub(super) fn list_transactions(
        &self,
        ctx: &mut Context,
        request: InfoListRequest,
        info: BlockAddress,
    ) {
        let asked = InfoTable::from_u32(request.table) == Some(InfoTable::Transactions);
        let now_ns = ctx.now_ns();
        let mut rows = Vec::new();
        let open = self.transactions.iter().filter(|_| asked);
        for (&id, transaction) in open.take(INFO_ROWS_PER_BLOCK_MAX) {
            let row = TransactionRow {
                transaction: id,
                tc: u32::from(self.instance),
                client_node: u32::from(transaction.client.node().0),
                state: match transaction.phase {
                    Phase::Executing => 0,
                    Phase::Committing => 1,
                    Phase::Completing => 2,
                    Phase::Aborting => 3,
                },
                operations: transaction.operation_count() as u32,
                age_ms: now_ns.saturating_sub(transaction.started_ns) / 1_000_000,
                idle_ms: now_ns.saturating_sub(transaction.last_activity_ns) / 1_000_000,
            };
            row.encode(&mut rows);
        }
        let conf = InfoListConf {
            gather: request.gather,
            truncated: u32::from(asked && self.transactions.len() > INFO_ROWS_PER_BLOCK_MAX),
        };
        // The info block is on this node; a lost answer only leaves its client's request
        // unanswered (the client times out).
        let _ = send_with_bytes(ctx, conf.to_signal(info, ctx.address()), &rows);
    }
}
