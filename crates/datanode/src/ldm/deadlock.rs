//! Deadlock detection by edge chasing (Chandy, Misra and Haas), so a cycle of lock waits
//! ends in milliseconds with error 4261 instead of the lock-wait timeout (NDB waits for the
//! timeout).
//!
//! No block sees the whole wait-for graph: each data manager knows only who its parked
//! operations wait for ([`kista_storage::locks::LockTable::blockers`]). So a wait that has
//! lasted `deadlock_detection_interval_ms` sends a *probe* along its edges: to each blocker's
//! coordinator, which passes it to the data managers of the partitions the blocker uses while
//! it has operations running; one where the blocker is parked follows its edges in turn. A
//! probe that reaches its initiator again has found a cycle, and the initiator's wait ends.
//!
//! A probe goes on only to transactions that rank below its initiator ([`rank`]), so of a
//! cycle's members only the highest-ranked finds it: one victim per cycle, the youngest of its
//! coordinator. The check repeats while the wait lasts, because a cycle may close after a
//! member's probe went by. Probes that find nothing die out: a transaction is expanded once
//! per probe here, and a probe passes through at most [`PROBE_HOPS_MAX`] transactions.
//!
//! Edges are stable enough for this to find no phantom cycle: a transaction keeps its locks
//! until it ends (so an edge to it lasts until it ends, and a probe to an ended transaction
//! goes nowhere), and the victim is chosen only if the wait the probe started from is still
//! the same wait (`wait_id`).

use std::time::Duration;

use rustc_hash::FxHashSet;

use kista_runtime::Context;
use kista_signal::TypedSignal;
use kista_storage::locks::TransactionId;

use super::LocalDataManager;
use crate::protocol::*;

/// Transactions a probe passes through before it is dropped: longer cycles are left to the
/// lock-wait timeout.
pub const PROBE_HOPS_MAX: u32 = 16;
/// Probes remembered so each expands a transaction only once here; past this many they are
/// all forgotten (which costs at most some repeated work, bounded by the hop limit).
const PROBES_REMEMBERED_MAX: usize = 4096;

/// The order that picks a cycle's victim: the highest rank. Transaction ids carry the node
/// and coordinator in their top 24 bits and a sequence number below; ranking by the sequence
/// first makes the victim the transaction its coordinator began last, not always one of the
/// highest-numbered node.
pub fn rank(transaction: u64) -> u64 {
    transaction.rotate_left(24)
}

#[derive(Default)]
pub(super) struct DeadlockDetection {
    next_probe_id: u32,
    /// (origin, probe id, target) of probes already followed here.
    followed: FxHashSet<(u32, u32, u64)>,
    /// Who the target waits for (kept for its capacity).
    blockers: Vec<TransactionId>,
}

impl LocalDataManager {
    /// Arms the next look for a deadlock behind the wait `wait_id` (none when detection is off).
    pub(super) fn schedule_deadlock_check(
        &self,
        ctx: &mut Context,
        transaction: u64,
        wait_id: u32,
    ) {
        let interval_ms = self.settings.deadlock_detection_interval_ms;
        if interval_ms == 0 {
            return;
        }
        let check = DeadlockCheck {
            transaction,
            wait_id,
        }
        .to_signal(ctx.address(), ctx.address());
        ctx.send_delayed(check, Duration::from_millis(interval_ms));
    }

    /// A wait has lasted another interval: probe its edges, and look again later.
    pub(super) fn deadlock_check(&mut self, ctx: &mut Context, check: DeadlockCheck) {
        if self.waiting(check.transaction, check.wait_id).is_none() {
            return; // granted, timed out or aborted meanwhile
        }
        self.deadlocks.next_probe_id = self.deadlocks.next_probe_id.wrapping_add(1);
        let probe = DeadlockProbe {
            initiator: check.transaction,
            target: check.transaction,
            origin: ctx.address(),
            wait_id: check.wait_id,
            probe_id: self.deadlocks.next_probe_id,
            hops: 0,
        };
        self.follow(ctx, &probe);
        self.schedule_deadlock_check(ctx, check.transaction, check.wait_id);
    }

    /// A probe for a transaction that may be parked here.
    pub(super) fn deadlock_probe(&mut self, ctx: &mut Context, probe: DeadlockProbe) {
        let followed = &mut self.deadlocks.followed;
        if followed.len() >= PROBES_REMEMBERED_MAX {
            followed.clear();
        }
        if followed.insert((probe.origin.to_word(), probe.probe_id, probe.target)) {
            self.follow(ctx, &probe);
        }
    }

    /// A probe of this data manager's came back: its initiator's wait closes a cycle.
    pub(super) fn deadlock_found(&mut self, ctx: &mut Context, found: DeadlockFound) {
        self.end_wait(ctx, found.transaction, found.wait_id, |table_id| {
            let message = format!(
                "deadlock: the transaction waited for a row lock on table {table_id} in a cycle of waits and was chosen to break it; it is aborted"
            );
            (ErrorCode::Deadlock, message)
        });
    }

    /// Follows the edges of `probe.target`'s waits here, if it is parked here.
    fn follow(&mut self, ctx: &mut Context, probe: &DeadlockProbe) {
        let mut blockers = std::mem::take(&mut self.deadlocks.blockers);
        blockers.clear();
        if let Some(target) = self.transactions.get(&probe.target) {
            for (&key, queue) in &target.parked {
                let Some(anchor) = queue.front().and_then(|parked| parked.waiting_on) else {
                    continue;
                };
                let Some(partition) = self.partition(key) else {
                    continue;
                };
                let partition = partition
                    .read()
                    .unwrap_or_else(|poison| poison.into_inner());
                partition.lock_blockers(TransactionId(probe.target), anchor, &mut blockers);
            }
        }
        for &TransactionId(blocker) in &blockers {
            if blocker == probe.initiator {
                let found = DeadlockFound {
                    transaction: probe.initiator,
                    wait_id: probe.wait_id,
                };
                ctx.send_typed(probe.origin, &found);
            } else if rank(blocker) < rank(probe.initiator) && probe.hops < PROBE_HOPS_MAX {
                // A blocker with no record here is a partition copy's, which waits for nothing.
                if let Some(record) = self.transactions.get(&blocker) {
                    let next = DeadlockProbe {
                        target: blocker,
                        hops: probe.hops + 1,
                        ..*probe
                    };
                    ctx.send_typed(record.tc, &next);
                }
            }
        }
        self.deadlocks.blockers = blockers;
    }
}
