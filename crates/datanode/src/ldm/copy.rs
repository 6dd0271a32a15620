//! Copying partitions to a restarting node (NDB's copy fragment).
//!
//! The restarting node's replica of a partition sits at the end of the partition's chain
//! as a *starting* replica from before the copy begins, so it gets every write made from
//! then on (see `tc::restart`). The copy brings it the rest: the `ldm` holding the replica
//! just before it in the chain reads every row in storage order and sends it whole.
//!
//! Each row is read under an exclusive lock held until its batch has gone. A transaction
//! that holds the row commits before the copy reads it, so the copy carries its change;
//! one that wants the row after waits, and its write reaches the starting replica after
//! the batch (both travel from this `ldm` to the same `ldm`, in order). A starting replica
//! therefore never has a row older than the copy brings, and a write of a row it lacks
//! yet may do nothing there: the copy brings the row as that write left it.
//!
//! Batches go one at a time: the next leaves when the starting replica confirms it applied
//! the last. Each `ldm` copies one partition at a time.

use std::collections::VecDeque;
use std::time::Duration;

use kista_runtime::Context;
use kista_signal::{BlockAddress, TypedSignal};
use kista_storage::locks::{LockMode, TransactionId};
use kista_storage::partition::{Outcome, ScanPosition, ScanRange};
use kista_storage::row_store::RowId;
use kista_storage::types::Value;
use rustc_hash::FxHashMap;

use super::{lock_partition, LocalDataManager};
use crate::cluster::NodeSet;
use crate::protocol::*;
use crate::send_with_bytes;

/// A batch ends once its encoded rows reach this many bytes.
const COPY_BATCH_BYTES_TARGET: usize = 64 * 1024;
/// Keys taken from the partition per step of the copy's scan.
const COPY_KEYS_PER_SCAN: usize = 512;
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

/// One partition being copied from here.
struct CopyOut {
    restart: u32,
    master: BlockAddress,
    table_id: u32,
    partition: u32,
    target: BlockAddress,
    /// Where the scan for keys goes on; `None` with `scan_done` at the end.
    position: Option<ScanPosition>,
    scan_done: bool,
    /// Keys found and not yet copied, in storage order.
    keys: VecDeque<Vec<u8>>,
    /// The front key's lock, asked for and not yet granted.
    waiting_on: Option<RowId>,
    /// Locks are held on rows of the batch being built (or on a row granted since).
    holding: bool,
    awaiting_conf: bool,
    rows: u64,
}

/// Copied rows waiting here for a row lock that an aborting transaction still holds.
struct CopyIn {
    source: BlockAddress,
    rows: VecDeque<Vec<Value>>,
}

#[derive(Default)]
pub(super) struct Copies {
    /// The front one runs.
    outgoing: VecDeque<CopyOut>,
    incoming: FxHashMap<(u32, u32), CopyIn>,
    batch: Vec<u8>,
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
        self.copies.outgoing.push_back(CopyOut {
            restart: copy.restart,
            master,
            table_id: copy.table_id,
            partition: copy.partition,
            target: copy.target,
            position: None,
            scan_done: false,
            keys: VecDeque::new(),
            waiting_on: None,
            holding: false,
            awaiting_conf: false,
            rows: 0,
        });
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
            RowsBody::start(batch);
            let mut batch_rows = 0;
            let batch_rows_max = self.settings.copy_batch_rows_max.max(1);
            let mut guard = lock_partition(&partition);
            let layout = guard.layout().clone();
            let mut retry = false;
            let mut granted = Vec::new();
            loop {
                let Some(row_key) = job.keys.front() else {
                    if job.scan_done {
                        break;
                    }
                    let keys = &mut job.keys;
                    let resume = guard.scan_committed(
                        &ScanRange::Full,
                        None,
                        job.position.as_ref(),
                        COPY_KEYS_PER_SCAN,
                        |fixed, var| {
                            let mut row_key = Vec::new();
                            layout.primary_key_of_row(fixed, var, &mut row_key);
                            keys.push_back(row_key);
                            true
                        },
                    );
                    // A full scan without a filter fails on nothing but a bug, and a copy
                    // that went on without its rows would leave the restarting replica
                    // short of them: the node stops instead.
                    let resume = resume.unwrap_or_else(|error| {
                        panic!("the copy's scan of a partition failed: {error:?}")
                    });
                    job.scan_done = resume.is_none();
                    job.position = resume;
                    continue;
                };
                match guard.read_locked(owner, row_key, LockMode::Exclusive) {
                    Ok(Outcome::Done(version)) => {
                        job.holding = true;
                        if let Some(version) = version {
                            let (fixed, var) = guard.version(version);
                            RowsBody::push(batch, &layout.values(fixed, var));
                            batch_rows += 1;
                            job.rows += 1;
                        }
                        job.keys.pop_front();
                        if batch.len() >= COPY_BATCH_BYTES_TARGET || batch_rows >= batch_rows_max {
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
                        granted.extend(guard.cancel_wait(owner, anchor));
                        if batch_rows > 0 {
                            break;
                        }
                        granted.extend(guard.abort(owner));
                        job.holding = false;
                    }
                    Err(_) => {
                        // No lock to be had (the lock table is full): free what is held
                        // and try again shortly.
                        retry = true;
                        break;
                    }
                }
            }
            if batch_rows > 0 {
                let rows = CopyRows {
                    table_id: job.table_id,
                    partition: job.partition,
                };
                send_with_bytes(ctx, rows.to_signal(job.target, ctx.address()), batch);
                job.awaiting_conf = true;
            }
            // Released only now, after the batch: a write waiting for one of these rows
            // reaches the starting replica after the row does.
            if job.holding {
                granted.extend(guard.abort(owner));
                job.holding = false;
            }
            drop(guard);
            if retry {
                job.awaiting_conf = true;
                let again = CopyRowsConf {
                    table_id: key.0,
                    partition: key.1,
                }
                .to_signal(ctx.address(), ctx.address());
                ctx.send_delayed(again, Duration::from_millis(COPY_RETRY_MS));
            }
            let finished = job.scan_done
                && job.keys.is_empty()
                && !job.awaiting_conf
                && job.waiting_on.is_none();
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
        let decoded = ctx.section().map(|bytes| RowsBody::decode(&bytes));
        let Some(Ok(decoded)) = decoded else {
            let reason = format!(
                "a batch of partition {} of table {} copied to this restarting node could \
                 not be read",
                rows.partition, rows.table_id
            );
            return ctx.stop_node(&reason);
        };
        let key = (rows.table_id, rows.partition);
        let incoming = CopyIn {
            source,
            rows: decoded.into(),
        };
        let unapplied = self.copies.incoming.insert(key, incoming);
        // A batch overwritten before it was applied would leave its rows missing here.
        assert!(
            unapplied.is_none(),
            "a copy sends its next batch only once this one applied"
        );
        self.apply_copied(ctx, key);
    }

    /// Writes the copied rows of a partition, committing them once all are in; stops at a
    /// row locked by a transaction whose abort has not arrived yet (its lock comes back
    /// through `copy_lock_granted`).
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
            while let Some(values) = incoming.rows.front() {
                match guard.write(owner, values) {
                    Ok(Outcome::Done(())) => {
                        // Index tables are copied as tables of their own.
                        guard.take_unique_changes();
                        incoming.rows.pop_front();
                    }
                    Ok(Outcome::Waiting(_)) => return,
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
            granted = guard.commit(owner);
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
