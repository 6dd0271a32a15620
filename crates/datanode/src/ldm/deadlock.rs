//! Deadlock detection by edge chasing (after Chandy, Misra and Haas), so a cycle of lock
//! waits ends at once with error 4261 instead of at the lock-wait timeout (NDB waits for the
//! timeout).
//!
//! No block sees the whole wait-for graph: each data manager knows only who its parked
//! operations wait for ([`kista_storage::locks::LockTable::blockers`]). So a wait, when it
//! begins, sends a *probe* along its edges: to each blocker's coordinator, which passes it to
//! the data managers of the partitions the blocker uses while it has operations running; one
//! where the blocker is parked follows its edges in turn. A probe that reaches its initiator
//! again has found a cycle. Every cycle closes when some transaction parks, and that park's
//! probe goes round the whole cycle, so it is found at once. The look repeats every
//! `deadlock_detection_interval_ms` while the wait lasts, for cycles whose closing probe
//! raced past a wait not yet parked.
//!
//! The victim is the highest-ranked transaction of the cycle ([`rank`]): the probe carries
//! the highest-ranked one on its path and where it waits, so every probe that finds the same
//! cycle picks the same victim, and only its wait ends (a second find finds it over). Probes
//! that find nothing die out: a transaction is expanded once per probe here, and a probe
//! passes through at most [`PROBE_HOPS_MAX`] transactions.
//!
//! Edges are stable enough for this to find no phantom cycle: a transaction keeps its locks
//! until it ends (so an edge to it lasts until it ends, and a probe to an ended transaction
//! goes nowhere), and a victim's wait ends only if it is still the wait the probe saw
//! (`wait_id`).

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
    /// Has the wait `wait_id` look for a deadlock: right after it parks (the look runs as
    /// its own signal, once the park is done), and again every interval. Nothing when
    /// detection is off.
    pub(super) fn start_deadlock_checks(&self, ctx: &mut Context, transaction: u64, wait_id: u32) {
        if self.settings.deadlock_detection_interval_ms != 0 {
            let check = DeadlockCheck {
                transaction,
                wait_id,
            };
            ctx.send_typed(ctx.address(), &check);
        }
    }

    /// A look for a deadlock behind a wait, if it still waits; the next one is armed.
    pub(super) fn deadlock_check(&mut self, ctx: &mut Context, check: DeadlockCheck) {
        if self.waiting(check.transaction, check.wait_id).is_none() {
            return; // granted, timed out or aborted meanwhile
        }
        self.deadlocks.next_probe_id = self.deadlocks.next_probe_id.wrapping_add(1);
        let here = ctx.address();
        let probe = DeadlockProbe {
            initiator: check.transaction,
            target: check.transaction,
            origin: here,
            wait_id: check.wait_id,
            probe_id: self.deadlocks.next_probe_id,
            hops: 0,
            victim: check.transaction,
            victim_at: here,
            victim_wait: check.wait_id,
        };
        self.follow(ctx, probe);
        let next = check.to_signal(here, here);
        let interval = Duration::from_millis(self.settings.deadlock_detection_interval_ms);
        ctx.send_delayed(next, interval);
    }

    /// A probe for a transaction that may be parked here.
    pub(super) fn deadlock_probe(&mut self, ctx: &mut Context, probe: DeadlockProbe) {
        let followed = &mut self.deadlocks.followed;
        if followed.len() >= PROBES_REMEMBERED_MAX {
            followed.clear();
        }
        if followed.insert((probe.origin.to_word(), probe.probe_id, probe.target)) {
            self.follow(ctx, probe);
        }
    }

    /// A probe found a cycle whose victim waits here.
    pub(super) fn deadlock_found(&mut self, ctx: &mut Context, found: DeadlockFound) {
        self.end_wait(ctx, found.transaction, found.wait_id, |table_id| {
            let message = format!(
                "deadlock: the transaction waited for a row lock on table {table_id} in a cycle of waits and was chosen to break it; it is aborted"
            );
            (ErrorCode::Deadlock, message)
        });
    }

    /// Follows the edges of `probe.target`'s waits here, if it is parked here.
    fn follow(&mut self, ctx: &mut Context, mut probe: DeadlockProbe) {
        let mut blockers = std::mem::take(&mut self.deadlocks.blockers);
        blockers.clear();
        if let Some(target) = self.transactions.get(&probe.target) {
            for (&key, queue) in &target.parked {
                let Some((anchor, wait_id)) = queue
                    .front()
                    .and_then(|parked| Some((parked.waiting.lock()?, parked.wait_id)))
                else {
                    continue;
                };
                let Some(partition) = self.partition(key) else {
                    continue;
                };
                let partition = partition
                    .read()
                    .unwrap_or_else(|poison| poison.into_inner());
                partition.lock_blockers(TransactionId(probe.target), anchor, &mut blockers);
                if rank(probe.target) > rank(probe.victim) {
                    probe.victim = probe.target;
                    probe.victim_at = ctx.address();
                    probe.victim_wait = wait_id;
                }
            }
        }
        for &TransactionId(blocker) in &blockers {
            if blocker == probe.initiator {
                let found = DeadlockFound {
                    transaction: probe.victim,
                    wait_id: probe.victim_wait,
                };
                ctx.send_typed(probe.victim_at, &found);
            } else if probe.hops < PROBE_HOPS_MAX {
                // A blocker with no record here is a partition copy's, which waits for nothing.
                if let Some(record) = self.transactions.get(&blocker) {
                    let next = DeadlockProbe {
                        target: blocker,
                        hops: probe.hops + 1,
                        ..probe
                    };
                    ctx.send_typed(record.tc, &next);
                }
            }
        }
        self.deadlocks.blockers = blockers;
    }
}
