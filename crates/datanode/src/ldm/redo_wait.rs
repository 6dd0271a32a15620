//! Writes that wait for room in the REDO log (NDB's `DefaultOperationRedoProblemAction =
//! QUEUE`), where they were refused.
//!
//! Once less than an eighth of the log is free besides what prepared writes reserved
//! ([`RedoLog::nearly_full`]), a write arriving here is parked, as a lock waiter is: in its
//! transaction's queue for the partition ([`Wait::Redo`]), so the transaction's later
//! operations there keep their order. Parked writes run oldest first once there is room
//! again: a global checkpoint's save made a local checkpoint usable and released the log
//! before it, or a transaction completed or aborted and gave its reservation back. Writes
//! arriving while others wait queue behind them, so none waits for ever behind newcomers.
//!
//! Refusing instead (a temporary error, `RedoLogFull`) threw work away: the refused write's
//! transaction aborted, undoing the rows it had written (a thousand a transaction for
//! `kista import`: 69-105 such aborts in four 1M-row loads in a row, `bench/import-rounds.sh`),
//! its client slept and wrote them all again, and a `LOAD DATA` or an application saw an
//! error, while the checkpoint everyone waited for ran as it would have anyway.
//!
//! A wait is bounded. A write is refused as before when [`REDO_WAITERS_MAX`] writes wait
//! already, when waiting cannot help (what prepared writes reserved leaves less than an
//! eighth of the log even once every checkpointed record is released: a transaction larger
//! than the log; or nothing will free room: no local checkpoint runs, is written or is
//! due, and no other transaction holds a reservation), and when it waited
//! [`REDO_WAIT_MS_MAX`].

use std::collections::VecDeque;
use std::time::Duration;

use kista_runtime::Context;
use kista_signal::SectionHandle;

use super::redo::RedoLog;
use super::{LocalDataManager, Parked, Wait};
use crate::protocol::{ErrorCode, Prepare};

/// Writes that may wait for REDO room at once in one data manager; more are refused. Each
/// holds its signal's section (a batch of up to a few hundred rows) while it waits.
pub(super) const REDO_WAITERS_MAX: usize = 1024;

/// Longest a write waits for REDO room before it is refused (NDB gives a REDO problem 20 s
/// times three before it aborts): a checkpoint that frees room takes seconds under a bulk
/// load, and one that takes longer than this has stalled, or the disk cannot keep up.
pub(super) const REDO_WAIT_MS_MAX: u64 = 20_000;

/// The writes waiting for REDO room, in the order they began to wait.
#[derive(Default)]
pub(super) struct RedoWaits {
    queue: VecDeque<Waiter>,
}

/// Where a waiting write is parked: the front of its transaction's queue for the partition
/// while its wait `wait_id` lasts.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Waiter {
    transaction: u64,
    key: (u32, u32),
    wait_id: u32,
}

impl RedoWaits {
    pub(super) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Drops a wait that ended otherwise (it expired, or its transaction aborted).
    pub(super) fn forget(&mut self, transaction: u64, wait_id: u32) {
        self.queue
            .retain(|w| (w.transaction, w.wait_id) != (transaction, wait_id));
    }

    /// Drops every wait of a transaction that is gone.
    pub(super) fn forget_transaction(&mut self, transaction: u64) {
        self.queue.retain(|w| w.transaction != transaction);
    }
}

/// Why a write that must wait for REDO room is refused at once, if it is: waiting cannot
/// help, or too many wait already. Waiting helps while what prepared writes reserved leaves
/// an eighth of the log and something will free room: a local checkpoint written, being
/// written or due (usable at a global checkpoint's save, it releases the log before the one
/// before it), or other transactions' reservations (they come back when those end).
fn refusal_now(
    redo: &RedoLog,
    waits: &RedoWaits,
    (checkpointing, own_reserved_bytes): (bool, u64),
    disk_full: bool,
) -> Option<(ErrorCode, String)> {
    let others_reserved = redo.reserved_bytes() > own_reserved_bytes;
    if disk_full && !others_reserved {
        // Waiting would only end in 410 after the wait's limit.
        let why = "the REDO log is nearly full, and the local checkpoint that would free it \
                   cannot be written: the data directory's disk is full (free space on it; \
                   reads go on meanwhile)";
        return Some((ErrorCode::DiskFull, why.to_string()));
    }
    let why = if !redo.room_possible() {
        "prepared writes reserve nearly all of the REDO log for their commits: a \
         transaction this large never fits (a larger redo_log helps)"
            .to_string()
    } else if !checkpointing && !others_reserved {
        "the REDO log is nearly full with nothing to free it soon: no local checkpoint \
         runs and no other transaction holds a reservation (a larger redo_log helps)"
            .to_string()
    } else if waits.queue.len() >= REDO_WAITERS_MAX {
        format!(
            "the REDO log is nearly full and the most writes that may wait for room \
             ({REDO_WAITERS_MAX}) wait already (a larger redo_log or \
             checkpoint_write_bytes_per_sec helps)"
        )
    } else {
        return None;
    };
    Some((ErrorCode::RedoLogFull, why))
}

/// The refusal of a write that waited [`REDO_WAIT_MS_MAX`] for REDO room: disk full
/// (4262) when the checkpoint that would have freed it is held back by a full disk (the
/// write waited because other transactions' reservations were still to come back).
pub(super) fn expired_refusal(disk_full: bool) -> (ErrorCode, String) {
    if disk_full {
        let why = "the REDO log stayed nearly full, and the local checkpoint that would free \
                   it cannot be written: the data directory's disk is full (free space on \
                   it; reads go on meanwhile)";
        return (ErrorCode::DiskFull, why.to_string());
    }
    let message = format!(
        "the REDO log stayed nearly full for {} s, counting what prepared writes will log \
         at commit: a local checkpoint frees it (a larger redo_log or \
         checkpoint_write_bytes_per_sec helps)",
        REDO_WAIT_MS_MAX / 1000
    );
    (ErrorCode::RedoLogFull, message)
}

impl LocalDataManager {
    /// Whether a write must wait for REDO room: the log is nearly full, or others wait
    /// already (newcomers queue behind them; those that can run now do first).
    pub(super) fn must_wait_for_redo(&mut self, ctx: &mut Context) -> bool {
        let nearly_full = self.redo.as_ref().is_some_and(RedoLog::nearly_full);
        if !nearly_full && !self.redo_waits.is_empty() {
            self.resume_redo_waits(ctx);
        }
        let nearly_full = self.redo.as_ref().is_some_and(RedoLog::nearly_full);
        self.redo.is_some() && (nearly_full || !self.redo_waits.is_empty())
    }

    /// Why a write of `transaction` that must wait for REDO room is refused instead.
    pub(super) fn redo_refusal(&self, transaction: u64) -> Option<(ErrorCode, String)> {
        let redo = self.redo.as_ref()?;
        let checkpointing = (self.checkpoints.as_ref()).is_some_and(|c| c.will_free_log(redo));
        let own_reserved_bytes =
            (self.transactions.get(&transaction)).map_or(0, |t| t.redo_reserved_bytes);
        let disk_full = (self.checkpoints.as_ref()).is_some_and(|c| c.held_by_full_disk());
        let room = (checkpointing, own_reserved_bytes);
        refusal_now(redo, &self.redo_waits, room, disk_full)
    }

    /// Parks a write until the REDO log has room (its transaction's record exists).
    pub(super) fn park_for_redo(
        &mut self,
        ctx: &mut Context,
        prepare: Prepare,
        section: Option<SectionHandle>,
    ) {
        let limit = Duration::from_millis(REDO_WAIT_MS_MAX);
        let wait_id = self.start_wait(ctx, prepare.transaction, limit);
        self.counters.redo_wait();
        let key = (prepare.table_id, prepare.partition);
        self.redo_waits.queue.push_back(Waiter {
            transaction: prepare.transaction,
            key,
            wait_id,
        });
        let transaction = self.transactions.entry(prepare.transaction).or_default();
        transaction
            .parked
            .entry(key)
            .or_default()
            .push_back(Parked {
                prepare,
                section,
                waiting: Wait::Redo,
                wait_id,
                batch_offset: None,
            });
    }

    /// Runs the writes waiting for REDO room, oldest first, while the log has it.
    pub(super) fn resume_redo_waits(&mut self, ctx: &mut Context) {
        while !self.redo_waits.is_empty()
            && self.redo.as_ref().is_some_and(|redo| !redo.nearly_full())
        {
            let Some(waiter) = self.redo_waits.queue.pop_front() else {
                return;
            };
            let front = self
                .transactions
                .get_mut(&waiter.transaction)
                .and_then(|t| t.parked.get_mut(&waiter.key))
                .and_then(VecDeque::front_mut)
                .filter(|p| p.wait_id == waiter.wait_id && p.waiting == Wait::Redo);
            if let Some(parked) = front {
                parked.waiting = Wait::Behind;
                self.run_queue(ctx, waiter.transaction, waiter.key);
            }
        }
    }
}
