//! Copying partitions to a restarting node (NDB's copy fragment).
//!
//! The restarting node's replica of a partition sits at the end of the partition's chain
//! as a *starting* replica from before the copy begins, so it gets every write made from
//! then on (see `tc::restart`). The copy brings it the rest: the `ldm` holding the replica
//! just before it in the chain reads the rows in storage order and sends each whole.
//!
//! **What goes.** A target that restored its own disk to GCI g (`from_gci`) gets the rows
//! written after g, then the keys deleted after g (taken once the rows are scanned, so
//! they include every delete of a row the target lacked when it came). One restored
//! nothing, or whose deletes this replica no longer knows (`Partition::deleted_after`),
//! gets every row (*whole*): its first batch has it drop the rows no transaction uses.
//! Each batch also says from which GCI on this replica knows every delete, and the
//! target knows them from then on too (it may be a copy's source itself some day).
//!
//! Each row is read under an exclusive lock held until its batch has gone. A transaction
//! that holds the row commits before the copy reads it, so the copy carries its change;
//! one that wants the row after waits, and its write reaches the starting replica after
//! the batch (both travel from this `ldm` to the same `ldm`, in order). A starting replica
//! therefore never has a row older than the copy brings, and a write of a row it lacks
//! yet may do nothing there: the copy brings the row as that write left it. A row the
//! scan skipped (not written after g) is the same on both replicas, so a write of it
//! changes both alike.
//!
//! Batches go one at a time: the next leaves when the starting replica confirms it applied
//! the last; the last goes even if empty. Each `ldm` copies one partition at a time.

use std::collections::VecDeque;
use std::time::Duration;

use kista_runtime::Context;
use kista_signal::{BlockAddress, TypedSignal};
use kista_storage::locks::{LockMode, TransactionId};
use kista_storage::partition::{Granted, OperationError, OperationErrorKind, Outcome, Partition};
use kista_storage::row_store::RowId;
use rustc_hash::FxHashMap;

use super::{lock_partition, LocalDataManager};
use crate::cluster::NodeSet;
use crate::protocol::*;
use crate::send_with_bytes;

/// A batch ends once its encoded rows reach this many bytes.
const COPY_BATCH_BYTES_TARGET: usize = 64 * 1024;
/// Rows the copy's scan looks at per step (it takes the keys of those that go).
const COPY_ROWS_PER_SCAN: usize = 512;
/// How long a copy that could not lock a row (the lock table is full) waits to try again.
const COPY_RETRY_MS: u64 = 10;

/// The lock owner of this `ldm`'s outgoing copy. Real transaction ids carry a data node id
/// (below 64) in their top byte, so these never meet one.
fn copy_out_owner(instance: u16) -> TransactionId {
    TransactionId(0xff00_0000_0000_0000 | u64::from(instance))
}

/// The lock owner of copied rows being applied here.
fn copy_in_owner(instance: u16) -> TransactionId {
    TransactionId(0xfe00_0000_0000_0000 | u64::from(instance))
}

/// A key the copy reads (under its lock) and sends as it finds it.
enum CopyKey {
    /// Of a row the scan found: sent if still there.
    Row(Vec<u8>),
    /// Deleted in this GCI (the latest that deleted it): sent as deleted unless it is
    /// there again.
    Deleted(Vec<u8>, u64),
}

impl CopyKey {
    fn key(&self) -> &[u8] {
        match self {
            CopyKey::Row(key) | CopyKey::Deleted(key, _) => key,
        }
    }
}

/// Where a copy stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Scanning rows; the scan resumes after `.0`.
    Rows(Option<RowId>),
    /// Sending the deleted keys taken once the rows were scanned.
    Deletes,
    /// Everything went: the last batch goes (even empty), then the copy is done.
    Last,
    Done,
}

/// One partition being copied from here.
struct CopyOut {
    restart: u32,
    master: BlockAddress,
    table_id: u32,
    partition: u32,
    target: BlockAddress,
    /// Rows written and keys deleted after this GCI go (ignored for a whole copy).
    from_gci: u64,
    /// Every row goes; `announce`: the first batch, which has the target drop what it
    /// holds, has not gone yet.
    whole: bool,
    announce: bool,
    phase: Phase,
    /// Keys found and not yet copied.
    keys: VecDeque<CopyKey>,
    /// The front key's lock, asked for and not yet granted.
    waiting_on: Option<RowId>,
    /// Locks are held on rows of the batch being built (or on a row granted since).
    holding: bool,
    awaiting_conf: bool,
    rows: u64,
    deleted: u64,
}

impl CopyOut {
    /// Copies every row from the start again, the target told to drop what it holds.
    fn go_whole(&mut self) {
        self.whole = true;
        self.announce = true;
        self.phase = Phase::Rows(None);
        self.keys.clear();
    }

    /// From which GCI on the target knows every delete once it has what went so far.
    fn deletes_known_from(&self, partition: &Partition) -> u64 {
        let here = partition.deletes_known_from();
        if self.whole {
            here
        } else {
            here.max(self.from_gci + 1)
        }
    }
}

/// Copied changes waiting here for a row lock that an aborting transaction still holds.
struct CopyIn {
    source: BlockAddress,
    changes: VecDeque<CopiedChange>,
}

#[derive(Default)]
pub(super) struct Copies {
    /// The front one runs.
    outgoing: VecDeque<CopyOut>,
    incoming: FxHashMap<(u32, u32), CopyIn>,
    batch: Vec<u8>,
}

/// A batch being built.
struct Batch {
    changes: u32,
    /// Locks the batch's building released (to resume their waiters).
    granted: Vec<Granted>,
    /// No lock could be had: try again shortly.
    retry: bool,
}

impl LocalDataManager {
    fn instance(&self, ctx: &Context) -> u16 {
        ctx.address().instance()
    }

    // ----- the copying side -----

    pub(super) fn copy_partition(
        &mut self,
        ctx: &mut Context,
        copy: CopyPartition,
        master: BlockAddress,
    ) {
        let mut job = CopyOut {
            restart: copy.restart,
            master,
            table_id: copy.table_id,
            partition: copy.partition,
            target: copy.target,
            from_gci: copy.from_gci,
            whole: false,
            announce: false,
            phase: Phase::Rows(None),
            keys: VecDeque::new(),
            waiting_on: None,
            holding: false,
            awaiting_conf: false,
            rows: 0,
            deleted: 0,
        };
        let partition = self.partition((copy.table_id, copy.partition));
        let knows_deletes = partition.is_some_and(|partition| {
            copy.from_gci > 0
                && lock_partition(&partition).deletes_known_from() <= copy.from_gci + 1
        });
        if !knows_deletes {
            job.go_whole();
        }
        self.copies.outgoing.push_back(job);
        if self.copies.outgoing.len() == 1 {
            self.copy_step(ctx);
        }
    }

    /// Takes the running copy as far as it goes without waiting: to a batch sent, a lock
    /// waited for, or its end (then the next copy starts).
    fn copy_step(&mut self, ctx: &mut Context) {
        let owner = copy_out_owner(self.instance(ctx));
        loop {
            let Some(job) = self.copies.outgoing.front() else {
                return;
            };
            if job.awaiting_conf || job.waiting_on.is_some() {
                return;
            }
            let key = (job.table_id, job.partition);
            let Some(partition) = self.partition(key) else {
                // Dropped meanwhile: nothing left to copy.
                self.copy_finished(ctx);
                continue;
            };
            let Copies {
                outgoing, batch, ..
            } = &mut self.copies;
            let Some(job) = outgoing.front_mut() else {
                return;
            };
            let batch_rows_max = self.settings.copy_batch_rows_max.max(1) as usize;
            let mut guard = lock_partition(&partition);
            let built = build_batch(job, &mut guard, owner, batch, batch_rows_max);
            let mut granted = built.granted;
            let last = job.phase == Phase::Last && job.keys.is_empty() && job.waiting_on.is_none();
            if built.changes > 0 || job.announce || last {
                let rows = CopyRows {
                    table_id: job.table_id,
                    partition: job.partition,
                    whole: u32::from(job.announce),
                    deletes_known_from: job.deletes_known_from(&guard),
                };
                send_with_bytes(ctx, rows.to_signal(job.target, ctx.address()), batch);
                job.announce = false;
                job.awaiting_conf = true;
                if last {
                    job.phase = Phase::Done;
                }
            }
            // Released only now, after the batch: a write waiting for one of these rows
            // reaches the starting replica after the row does.
            if job.holding {
                granted.extend(guard.abort(owner));
                job.holding = false;
            }
            drop(guard);
            if built.retry && !job.awaiting_conf {
                job.awaiting_conf = true;
                let again = CopyRowsConf {
                    table_id: key.0,
                    partition: key.1,
                }
                .to_signal(ctx.address(), ctx.address());
                ctx.send_delayed(again, Duration::from_millis(COPY_RETRY_MS));
            }
            let finished = job.phase == Phase::Done && !job.awaiting_conf;
            self.resume(ctx, key.0, key.1, granted);
            if !finished {
                return;
            }
            self.copy_finished(ctx);
        }
    }

    /// Reports the running copy done and starts the next.
    fn copy_finished(&mut self, ctx: &mut Context) {
        let Some(job) = self.copies.outgoing.pop_front() else {
            return;
        };
        let copied = PartitionCopied {
            restart: job.restart,
            table_id: job.table_id,
            partition: job.partition,
            rows: job.rows,
            deleted: job.deleted,
            whole: u32::from(job.whole),
        };
        ctx.send_typed(job.master, &copied);
    }

    /// The starting replica applied a batch (or a retry is due).
    pub(super) fn copy_rows_applied(&mut self, ctx: &mut Context, conf: CopyRowsConf) {
        let Some(job) = self.copies.outgoing.front_mut() else {
            return;
        };
        if (job.table_id, job.partition) != (conf.table_id, conf.partition) {
            return;
        }
        job.awaiting_conf = false;
        self.copy_step(ctx);
    }

    /// Whether `grant` is for a copy's lock; continues that copy if so.
    pub(super) fn copy_lock_granted(
        &mut self,
        ctx: &mut Context,
        key: (u32, u32),
        owner: TransactionId,
    ) -> bool {
        let instance = self.instance(ctx);
        if owner == copy_out_owner(instance) {
            if let Some(job) = self.copies.outgoing.front_mut() {
                if (job.table_id, job.partition) == key && job.waiting_on.take().is_some() {
                    job.holding = true;
                    self.copy_step(ctx);
                }
            }
            return true;
        }
        if owner == copy_in_owner(instance) {
            self.apply_copied(ctx, key);
            return true;
        }
        false
    }

    /// Copies to failed nodes stop (a copy whose target failed has no one to send to).
    pub(super) fn copies_lost(&mut self, ctx: &mut Context, lost: NodeSet) {
        let owner = copy_out_owner(self.instance(ctx));
        let running_lost = self
            .copies
            .outgoing
            .front()
            .is_some_and(|job| lost.contains(job.target.node()));
        if running_lost {
            if let Some(job) = self.copies.outgoing.pop_front() {
                let key = (job.table_id, job.partition);
                if let (Some(anchor), Some(partition)) = (job.waiting_on, self.partition(key)) {
                    let granted = lock_partition(&partition).cancel_wait(owner, anchor);
                    self.resume(ctx, key.0, key.1, granted);
                }
            }
        }
        self.copies
            .outgoing
            .retain(|job| !lost.contains(job.target.node()));
        if running_lost {
            self.copy_step(ctx);
        }
    }

    // ----- the starting replica's side -----

    pub(super) fn copied_rows(&mut self, ctx: &mut Context, rows: CopyRows, source: BlockAddress) {
        let decoded = ctx.section().map(|bytes| CopyBatchBody::decode(&bytes));
        let Some(Ok(decoded)) = decoded else {
            let reason = format!(
                "a batch of partition {} of table {} copied to this restarting node could \
                 not be read",
                rows.partition, rows.table_id
            );
            return ctx.stop_node(&reason);
        };
        let key = (rows.table_id, rows.partition);
        if let Some(partition) = self.partition(key) {
            let mut guard = lock_partition(&partition);
            if rows.whole != 0 {
                guard.clear_unlocked();
                guard.set_deletes_known_from(rows.deletes_known_from);
            } else if rows.deletes_known_from > guard.deletes_known_from() {
                guard.set_deletes_known_from(rows.deletes_known_from);
            }
        }
        let incoming = CopyIn {
            source,
            changes: decoded.into(),
        };
        let unapplied = self.copies.incoming.insert(key, incoming);
        // A batch overwritten before it was applied would leave its rows missing here.
        assert!(
            unapplied.is_none(),
            "a copy sends its next batch only once this one applied"
        );
        self.apply_copied(ctx, key);
    }

    /// Applies the copied changes of a partition, each committed with the GCI its source
    /// gave it; stops at a row locked by a transaction whose abort has not arrived yet
    /// (its lock comes back through `copy_lock_granted`).
    fn apply_copied(&mut self, ctx: &mut Context, key: (u32, u32)) {
        let owner = copy_in_owner(self.instance(ctx));
        let partition = self.partition(key);
        let Some(incoming) = self.copies.incoming.get_mut(&key) else {
            return;
        };
        let source = incoming.source;
        let mut granted = Vec::new();
        if let Some(partition) = partition {
            let mut guard = lock_partition(&partition);
            while let Some(change) = incoming.changes.front() {
                match apply_change(&mut guard, owner, change) {
                    Ok(Some(released)) => {
                        granted.extend(released);
                        incoming.changes.pop_front();
                    }
                    Ok(None) => {
                        drop(guard);
                        return self.resume(ctx, key.0, key.1, granted);
                    }
                    Err(error) => {
                        let reason = format!(
                            "copying partition {} of table {} to this restarting node \
                             failed: {error}",
                            key.1, key.0
                        );
                        drop(guard);
                        return ctx.stop_node(&reason);
                    }
                }
            }
        }
        self.copies.incoming.remove(&key);
        let conf = CopyRowsConf {
            table_id: key.0,
            partition: key.1,
        };
        ctx.send_typed(source, &conf);
        self.resume(ctx, key.0, key.1, granted);
    }
}

/// Writes or deletes one copied change and commits it with its GCI: the locks its commit
/// released, or `None` if it waits for a row lock.
fn apply_change(
    partition: &mut Partition,
    owner: TransactionId,
    change: &CopiedChange,
) -> Result<Option<Vec<Granted>>, OperationError> {
    let (outcome, gci) = match change {
        CopiedChange::Row { gci, values } => (partition.write(owner, values), *gci),
        CopiedChange::Deleted { gci, key } => match partition.delete(owner, key) {
            Err(error) if matches!(error.kind(), OperationErrorKind::NotFound { .. }) => {
                partition.note_deleted(key, *gci);
                return Ok(Some(Vec::new()));
            }
            outcome => (outcome, *gci),
        },
    };
    // Index tables are copied as tables of their own.
    partition.take_unique_changes();
    match outcome? {
        Outcome::Done(()) => Ok(Some(partition.commit(owner, gci))),
        Outcome::Waiting(_) => Ok(None),
    }
}

/// Fills `batch` with the copy's next changes, each read under its row's lock, until the
/// batch is full, a lock must be waited for, or nothing is left to take.
fn build_batch(
    job: &mut CopyOut,
    partition: &mut Partition,
    owner: TransactionId,
    batch: &mut Vec<u8>,
    changes_max: usize,
) -> Batch {
    CopyBatchBody::start(batch);
    let mut built = Batch {
        changes: 0,
        granted: Vec::new(),
        retry: false,
    };
    let layout = partition.layout().clone();
    loop {
        let Some(front) = job.keys.front() else {
            if take_keys(job, partition) {
                continue;
            }
            break;
        };
        match partition.read_locked(owner, front.key(), LockMode::Exclusive) {
            Ok(Outcome::Done(version)) => {
                job.holding = true;
                match (version, front) {
                    (Some(version), _) => {
                        let (fixed, var) = partition.version(version);
                        let gci = partition.committed_gci(version);
                        CopyBatchBody::push_row(batch, gci, &layout.values(fixed, var));
                        job.rows += 1;
                        built.changes += 1;
                    }
                    (None, CopyKey::Deleted(key, gci)) => {
                        CopyBatchBody::push_deleted(batch, *gci, key);
                        job.deleted += 1;
                        built.changes += 1;
                    }
                    // Deleted since the scan found it: its key comes with the deletes.
                    (None, CopyKey::Row(_)) => {}
                }
                job.keys.pop_front();
                let full = batch.len() >= COPY_BATCH_BYTES_TARGET;
                if full || built.changes as usize >= changes_max {
                    break;
                }
            }
            Ok(Outcome::Waiting(anchor)) => {
                if !job.holding {
                    job.waiting_on = Some(anchor);
                    break;
                }
                // Never wait while holding rows: send them (or free them), then ask
                // again with nothing held.
                built.granted.extend(partition.cancel_wait(owner, anchor));
                if built.changes > 0 {
                    break;
                }
                built.granted.extend(partition.abort(owner));
                job.holding = false;
            }
            Err(_) => {
                // No lock to be had (the lock table is full): free what is held and try
                // again shortly.
                built.retry = true;
                break;
            }
        }
    }
    built
}

/// Takes the copy's next keys: rows the scan finds, then, once it is over, the deleted
/// keys. False once none are left (the last batch is due).
fn take_keys(job: &mut CopyOut, partition: &Partition) -> bool {
    match job.phase {
        Phase::Rows(position) => {
            let (whole, from_gci) = (job.whole, job.from_gci);
            let layout = partition.layout();
            let keys = &mut job.keys;
            let next =
                partition.scan_with_gci(position, COPY_ROWS_PER_SCAN, |_, fixed, var, gci| {
                    if whole || gci > from_gci {
                        let mut key = Vec::new();
                        layout.primary_key_of_row(fixed, var, &mut key);
                        keys.push_back(CopyKey::Row(key));
                    }
                });
            job.phase = next.map_or(Phase::Deletes, |at| Phase::Rows(Some(at)));
        }
        Phase::Deletes => {
            let after = match job.whole {
                true => partition.deletes_known_from().saturating_sub(1),
                false => job.from_gci,
            };
            match partition.deleted_after(after) {
                Some(deleted) => {
                    let deleted = deleted
                        .into_iter()
                        .map(|(key, gci)| CopyKey::Deleted(key, gci));
                    job.keys.extend(deleted);
                    job.phase = Phase::Last;
                }
                // Forgotten while the rows were copied (the budget for deleted keys was
                // spent): every row goes after all.
                None => job.go_whole(),
            }
        }
        Phase::Last | Phase::Done => return false,
    }
    true
}
