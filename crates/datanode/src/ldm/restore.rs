//! This data manager's part in a start from disk (NDB's restore of fragments and REDO
//! execution): its partitions restored to the GCI the master chose, from its own disk.
//!
//! 1. **Checkpoint.** Of its checkpoint files, the newest checkpoint's chain (the files
//!    of the checkpoints its start record names, oldest first: see
//!    `kista_storage::checkpoint`) is read, each partition emptied where its whole
//!    section begins, the keys deleted and the rows written into the partitions as they
//!    come. A chain with a file missing, unfinished or damaged, or whose newest needs a
//!    GCI later than the one restored, is undone (the partitions emptied) and the next
//!    newest checkpoint's is read instead; with none, the partitions start empty and the
//!    log from LSN 0. The files of the checkpoints passed over are emptied (synced): the
//!    node's next checkpoints take their ids, and a later start must not read a chain of
//!    both lives.
//! 2. **REDO.** The log is read from the checkpoint's `redo_lsn` to its end (the first
//!    record it cannot trust), replaying every change of the GCI restored or below.
//!    Ordered indexes are kept up as rows are written: they are rebuilt, not read.
//! 3. **Checkpoint of the result.** The log goes on after its end, stamped with the node's
//!    new life, and a local checkpoint of the restored rows is written at once (unpaced):
//!    once it is synced the log before its start is released, so the changes of later
//!    GCIs that this start dropped are never replayed by another.
//!
//! Rows keep the GCI that wrote them (a checkpoint's row records carry it), and each
//! partition knows deletes from the GCI after the one restored on (see
//! `kista_storage::partition::changes`).
//!
//! A start with nothing to restore empties every checkpoint file and the log instead.
//! Everything read is checked (the formats carry checksums); what cannot be used stops
//! the node with a message naming the file.
//!
//! A node restarting into a running cluster restores the same way before its copy
//! ([`RestoreKind::BeforeCopy`]) but stops after step 2 and writes nothing: its log and
//! checkpoints start afresh once the copy is over. What cannot be used there leaves the
//! partitions empty instead, and the copy brings every row.

use kista_runtime::io::{FileOperation, FileReply, FileRequest, FileStatus};
use kista_runtime::Context;
use kista_signal::wire::SECTION_BYTES_MAX;
use kista_signal::BlockAddress;
use kista_storage::checkpoint::{
    self, CheckpointEntry, CheckpointScan, CheckpointStart, CheckpointStep, CheckpointSummary,
    CHECKPOINT_FILES,
};
use kista_storage::locks::TransactionId;
use kista_storage::partition::{OperationError, OperationErrorKind, Outcome, PartitionLimits};
use kista_storage::redo::{LogEnd, LogRing, LogScan, Record, RowPlace, ScanStep};
use rustc_hash::FxHashMap;

use super::checkpoint::checkpoint_path;
use super::redo::log_path;
use super::{lock_partition, LdmTable};
use crate::protocol::RestoreKind;

/// Request ids of the restore's file requests have this bit (the REDO log's and the
/// checkpoint's do not).
pub(crate) const RESTORE_REQUEST: u64 = 1 << 62;
/// The step a request belongs to: the bits above the low half (which hold the file).
const OPEN_CHECKPOINT: u64 = RESTORE_REQUEST | (1 << 32);
const READ_CHECKPOINT: u64 = RESTORE_REQUEST | (2 << 32);
const OPEN_LOG: u64 = RESTORE_REQUEST | (3 << 32);
const READ_LOG: u64 = RESTORE_REQUEST | (4 << 32);
const CLEAR_CHECKPOINT: u64 = RESTORE_REQUEST | (5 << 32);
const CLOSE: u64 = RESTORE_REQUEST | (6 << 32);
const READ_HEADER: u64 = RESTORE_REQUEST | (7 << 32);
const SYNC_CLEARED: u64 = RESTORE_REQUEST | (8 << 32);
const CLOSE_CLEARED: u64 = RESTORE_REQUEST | (9 << 32);
const STEP_MASK: u64 = !(u32::MAX as u64);

/// Bytes asked of the disk per read (one section).
const READ_BYTES: u32 = SECTION_BYTES_MAX as u32;

/// The lock owner of restored rows. Real transaction ids carry a data node id (below 64)
/// in their top byte, and copies use 0xfe and 0xff, so these never meet another.
fn restore_owner(instance: u16) -> TransactionId {
    TransactionId(0xfd00_0000_0000_0000 | u64::from(instance))
}

/// One checkpoint file found at the start: its slot, its file, and what its start record
/// says.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    slot: u32,
    file: u32,
    start: CheckpointStart,
}

enum Step {
    /// Opening (and reading the first record of) checkpoint slot `slot`.
    Probing,
    /// Reading `reading`, a file of a checkpoint's chain; `chain` holds the files still to
    /// read after it, the next last (none: `reading` is the checkpoint restored). When
    /// `verifying`, `reading` is that checkpoint read first, only to learn whether it is
    /// complete and usable before its chain is.
    Checkpoint {
        reading: Candidate,
        chain: Vec<Candidate>,
        scan: CheckpointScan,
        verifying: bool,
    },
    /// Opening the log's files; `[file]` → its number once open.
    OpeningLog(Vec<Option<u32>>),
    Replaying {
        files: Vec<u32>,
        scan: LogScan,
    },
    /// Waiting for the checkpoint of the restored rows.
    Checkpointing {
        id: u64,
    },
    /// Emptying every checkpoint file for a start with nothing to restore.
    Clearing {
        closed: u32,
    },
    /// Emptying the files of the checkpoints newer than the one restored, `left` of them
    /// still to close; then the log is read.
    Erasing {
        left: u32,
    },
}

/// What the restore asks of the data manager when a step is over.
pub(crate) enum Next {
    Going,
    /// Replay is over: go on logging at `head_lsn` (records from `tail_lsn` on still
    /// needed) in `files`, then checkpoint as `checkpoint_id`.
    Resume {
        files: Vec<u32>,
        head_lsn: u64,
        tail_lsn: u64,
        checkpoint_id: u64,
    },
    /// Nothing to restore: start a fresh log.
    Fresh,
    /// A restore before a copy is over: the partitions are as of the GCI restored.
    Loaded,
}

/// Why a restore cannot go on.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RestoreError {
    /// What the disk holds cannot restore the GCI asked: a log or checkpoint file is
    /// damaged, missing or unreadable. Its peers may hold the rows; this disk never will.
    #[error("{0}")]
    DiskUnusable(String),
    /// Anything else (no memory for the rows, no section for a request): the disk may be
    /// sound, and a later start may restore it.
    #[error("{0}")]
    Failed(String),
}

impl From<String> for RestoreError {
    fn from(reason: String) -> Self {
        Self::Failed(reason)
    }
}

pub(crate) struct Restore {
    pub gci: u64,
    pub life: u32,
    pub kind: RestoreKind,
    pub master: BlockAddress,
    instance: u16,
    limits: PartitionLimits,
    ring: LogRing,
    step: Step,
    /// The complete-looking checkpoints not yet tried, the newest last.
    candidates: Vec<Candidate>,
    /// The checkpoints tried and not used, newest first (the one restored, once chosen,
    /// too).
    tried: Vec<Candidate>,
    /// The checkpoint files opened (their numbers), closed once the checkpoints are read.
    opened_files: Vec<u32>,
    chosen: Option<CheckpointSummary>,
    /// Rows read from the checkpoint used, and REDO records replayed.
    pub rows: u64,
    pub records: u64,
    /// Records and rows of tables or partitions this node no longer holds.
    pub skipped: u64,
    /// The latest GCI whose mark the replay passed.
    marked_gci: u64,
    /// Where the read in flight began.
    read_offset: Option<u64>,
    /// Checkpoint slots whose file exists but could not be read (permission denied, an
    /// I/O error): damaged as far as this start can tell, and not emptied either.
    unreadable_slots: u32,
    /// The highest checkpoint id any readable file named.
    highest_id: u64,
}

impl Restore {
    /// Starts restoring to `gci`, or clearing the disk for a fresh start.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        ctx: &mut Context,
        gci: u64,
        life: u32,
        kind: RestoreKind,
        master: BlockAddress,
        ring: LogRing,
        limits: PartitionLimits,
    ) -> Result<Self, String> {
        let instance = ctx.address().instance();
        let mut restore = Self {
            gci,
            life,
            kind,
            master,
            instance,
            limits,
            ring,
            step: Step::Probing,
            candidates: Vec::new(),
            tried: Vec::new(),
            opened_files: Vec::new(),
            chosen: None,
            rows: 0,
            records: 0,
            skipped: 0,
            marked_gci: 0,
            read_offset: None,
            unreadable_slots: 0,
            highest_id: 0,
        };
        if kind != RestoreKind::Fresh {
            restore.open(
                ctx,
                OPEN_CHECKPOINT,
                0,
                &checkpoint_path(instance, 0),
                false,
            )?;
        } else {
            restore.step = Step::Clearing { closed: 0 };
            for slot in 0..CHECKPOINT_FILES {
                restore.open(
                    ctx,
                    CLEAR_CHECKPOINT,
                    slot,
                    &checkpoint_path(instance, u64::from(slot)),
                    true,
                )?;
            }
        }
        Ok(restore)
    }

    fn open(
        &self,
        ctx: &mut Context,
        step: u64,
        index: u32,
        path: &str,
        empty: bool,
    ) -> Result<(), String> {
        let request = FileRequest {
            request_id: step | u64::from(index),
            file: 0,
            operation: FileOperation::Open {
                create: empty,
                truncate: empty,
            },
        };
        ctx.request_io(&request, path.as_bytes())
            .map_err(|_| "no section for a file's name".to_string())
    }

    fn request(
        &self,
        ctx: &mut Context,
        step: u64,
        index: u32,
        file: u32,
        operation: FileOperation,
    ) -> Result<(), String> {
        let request = FileRequest {
            request_id: step | u64::from(index),
            file,
            operation,
        };
        ctx.request_io(&request, &[])
            .map_err(|_| "no section for a file request".to_string())
    }

    /// The checkpoint being written for the restored rows was synced (or the one after
    /// it, written whole when its file could not be opened).
    pub fn checkpointed(&self, id: u64) -> bool {
        matches!(self.step, Step::Checkpointing { id: waited } if id >= waited)
    }

    /// The file system's answer to one of the restore's requests.
    pub fn replied(
        &mut self,
        ctx: &mut Context,
        reply: FileReply,
        tables: &FxHashMap<u32, LdmTable>,
    ) -> Result<Next, RestoreError> {
        let index = (reply.request_id & u64::from(u32::MAX)) as u32;
        let step = reply.request_id & STEP_MASK;
        match (step, reply.status) {
            (OPEN_CHECKPOINT, FileStatus::NotFound) => return Ok(self.probed(ctx, index, None)?),
            (_, FileStatus::Ok) => {}
            (OPEN_CHECKPOINT | READ_HEADER, status) => {
                return Ok(self.unreadable_checkpoint(ctx, step, index, reply.file, status)?)
            }
            (_, status) => {
                let why = format!(
                    "restoring from disk failed: {} of ldm {}: {status:?}",
                    self.path_of(step, index),
                    self.instance
                );
                // A file the restore reads failed it; one it empties (a full disk) did not.
                let read = matches!(step, OPEN_LOG | READ_LOG | READ_CHECKPOINT);
                return Err(match read {
                    true => RestoreError::DiskUnusable(why),
                    false => RestoreError::Failed(why),
                });
            }
        }
        match step {
            OPEN_CHECKPOINT => {
                let read = FileOperation::Read {
                    offset: 0,
                    length: checkpoint::START_RECORD_BYTES as u32,
                };
                self.request(ctx, READ_HEADER, index, reply.file, read)?;
                Ok(Next::Going)
            }
            READ_HEADER => {
                let start = match ctx.section() {
                    Some(first_bytes) => checkpoint::read_start(&first_bytes),
                    None => Err(checkpoint::CheckpointError::NoStart),
                };
                self.opened_files.push(reply.file);
                let candidate = start.ok().map(|start| Candidate {
                    slot: index,
                    file: reply.file,
                    start,
                });
                Ok(self.probed(ctx, index, candidate)?)
            }
            READ_CHECKPOINT => Ok(self.checkpoint_read(ctx, tables)?),
            OPEN_LOG => Ok(self.log_opened(ctx, index, reply.file)?),
            READ_LOG => self.log_read(ctx, tables),
            CLEAR_CHECKPOINT => {
                // Synced empty: a crash must not bring back an old checkpoint, which a
                // later start would take for the newest.
                self.request(ctx, SYNC_CLEARED, index, reply.file, FileOperation::Sync)?;
                Ok(Next::Going)
            }
            SYNC_CLEARED => {
                self.request(ctx, CLOSE_CLEARED, index, reply.file, FileOperation::Close)?;
                Ok(Next::Going)
            }
            CLOSE_CLEARED => Ok(self.cleared(ctx)?),
            CLOSE => Ok(Next::Going),
            other => unreachable!("the restore asked for nothing of kind {other:#x}"),
        }
    }

    /// Checkpoint slot `slot`'s file exists but cannot be read (`status`): it counts as
    /// damaged, and the restore falls back to the checkpoints before it, as for a lost
    /// file. It cannot be emptied either, so this life's checkpoint ids go on past any it
    /// could hold ([`Restore::first_id_of_this_life`]).
    fn unreadable_checkpoint(
        &mut self,
        ctx: &mut Context,
        step: u64,
        slot: u32,
        file: u32,
        status: FileStatus,
    ) -> Result<Next, String> {
        ctx.warn(&format!(
            "ldm {}: checkpoint file {} cannot be read ({status:?}): it counts as damaged, \
             the checkpoints before it serve",
            self.instance,
            checkpoint_path(self.instance, u64::from(slot))
        ));
        if step == READ_HEADER {
            self.opened_files.push(file);
        }
        self.unreadable_slots += 1;
        self.probed(ctx, slot, None)
    }

    /// The id of the checkpoint of the restored rows, the first of this life: the one
    /// after the checkpoint restored, or, with a file that could not be read (holding any
    /// id up to a rotation past the highest seen), past every id it could hold, so that
    /// file never passes for the newest of this life's.
    fn first_id_of_this_life(&self) -> u64 {
        let after_restored = self.chosen.map_or(1, |c| c.id + 1);
        match self.unreadable_slots {
            0 => after_restored,
            _ => after_restored.max(self.highest_id + u64::from(CHECKPOINT_FILES) + 1),
        }
    }

    fn path_of(&self, step: u64, index: u32) -> String {
        match step {
            OPEN_LOG | READ_LOG => log_path(self.instance, index),
            _ => checkpoint_path(self.instance, u64::from(index)),
        }
    }

    /// Slot `slot` was looked at: probe the next, or read the newest candidate.
    fn probed(
        &mut self,
        ctx: &mut Context,
        slot: u32,
        candidate: Option<Candidate>,
    ) -> Result<Next, String> {
        if let Some(candidate) = &candidate {
            self.highest_id = self.highest_id.max(candidate.start.id);
        }
        self.candidates.extend(candidate);
        let next = slot + 1;
        if next < CHECKPOINT_FILES {
            self.step = Step::Probing;
            let path = checkpoint_path(self.instance, u64::from(next));
            self.open(ctx, OPEN_CHECKPOINT, next, &path, false)?;
            return Ok(Next::Going);
        }
        // Newest last, so the next to try is popped.
        self.candidates.sort_by_key(|candidate| candidate.start.id);
        self.next_candidate(ctx)
    }

    /// Reads the chain of the newest checkpoint not yet tried; with none left, replays the
    /// log from its beginning.
    fn next_candidate(&mut self, ctx: &mut Context) -> Result<Next, String> {
        let Some(newest) = self.candidates.pop() else {
            self.close_checkpoints(ctx)?;
            return self.erase_newer(ctx);
        };
        self.tried.push(newest);
        let ids = newest.start.chain_start..=newest.start.id;
        let chain: Option<Vec<Candidate>> = ids
            .rev()
            .map(|id| {
                let found = self.candidates.iter().find(|c| c.start.id == id);
                found.copied().or((id == newest.start.id).then_some(newest))
            })
            .collect();
        // The newest first, the next to read (the oldest) last.
        let Some(mut chain) = chain else {
            ctx.log(&format!(
                "ldm {}: checkpoint {} not used (a file of its chain, checkpoints {} to {}, \
                 is missing or damaged); trying the one before",
                self.instance, newest.start.id, newest.start.chain_start, newest.start.id
            ));
            return self.next_candidate(ctx);
        };
        // A crash amid a checkpoint leaves the newest unfinished: its chain is not read
        // in vain, the newest is read alone first (a chain of one file needs no check).
        let verifying = chain.len() > 1;
        let reading = match verifying {
            true => newest,
            false => chain.pop().expect("a chain holds its newest checkpoint"),
        };
        self.read_chain_file(ctx, reading, chain, verifying)
    }

    /// Reads `reading`, a file of a checkpoint's chain (`chain`: the files to read after
    /// it, the next last).
    fn read_chain_file(
        &mut self,
        ctx: &mut Context,
        reading: Candidate,
        chain: Vec<Candidate>,
        verifying: bool,
    ) -> Result<Next, String> {
        self.step = Step::Checkpoint {
            reading,
            chain,
            scan: CheckpointScan::new(),
            verifying,
        };
        let read = FileOperation::Read {
            offset: 0,
            length: READ_BYTES,
        };
        self.request(ctx, READ_CHECKPOINT, reading.slot, reading.file, read)?;
        Ok(Next::Going)
    }

    /// A chunk of the checkpoint file being read: its entries go into the partitions.
    fn checkpoint_read(
        &mut self,
        ctx: &mut Context,
        tables: &FxHashMap<u32, LdmTable>,
    ) -> Result<Next, String> {
        let data = ctx.section().map(|data| data.to_vec()).unwrap_or_default();
        let start = self.read_offset.take().unwrap_or(0);
        let Step::Checkpoint {
            reading,
            scan,
            verifying,
            ..
        } = &mut self.step
        else {
            return Ok(Next::Going);
        };
        let reading = *reading;
        let mut entries = Vec::new();
        let outcome = loop {
            match scan.next(&data, start) {
                CheckpointStep::Entry(_) if *verifying => {}
                CheckpointStep::Entry(entry) => entries.push(entry),
                CheckpointStep::Read(at) => break Ok(at),
                CheckpointStep::Done(summary) => break Err(Ok(summary)),
                CheckpointStep::Broken(error) => break Err(Err(error)),
            }
        };
        for entry in entries {
            self.apply(entry, tables)?;
        }
        match outcome {
            Ok(at) => {
                self.read_offset = Some(at);
                let read = FileOperation::Read {
                    offset: at,
                    length: READ_BYTES,
                };
                self.request(ctx, READ_CHECKPOINT, reading.slot, reading.file, read)?;
                Ok(Next::Going)
            }
            Err(Ok(summary)) => self.file_read(ctx, reading, summary, tables),
            Err(Err(error)) => self.chain_unusable(ctx, reading, &error.to_string(), tables),
        }
    }

    /// A file of the chain was read whole: read the next, or, with the newest read, replay
    /// the log over it (if it needs no later GCI than the one restored).
    fn file_read(
        &mut self,
        ctx: &mut Context,
        reading: Candidate,
        summary: CheckpointSummary,
        tables: &FxHashMap<u32, LdmTable>,
    ) -> Result<Next, String> {
        let Step::Checkpoint {
            chain, verifying, ..
        } = &mut self.step
        else {
            return Ok(Next::Going);
        };
        let verifying = *verifying;
        let restored = chain.is_empty() || verifying;
        if restored && summary.max_gci > self.gci {
            let why = format!("it needs GCI {}", summary.max_gci);
            return self.chain_unusable(ctx, reading, &why, tables);
        }
        if let Some(next) = chain.pop() {
            let chain = std::mem::take(chain);
            return self.read_chain_file(ctx, next, chain, false);
        }
        self.chosen = Some(summary);
        self.close_checkpoints(ctx)?;
        self.erase_newer(ctx)
    }

    /// A file of the chain being read proved unusable (`why`): undo what it and the
    /// chain's earlier files wrote, and try the checkpoint before.
    fn chain_unusable(
        &mut self,
        ctx: &mut Context,
        reading: Candidate,
        why: &str,
        tables: &FxHashMap<u32, LdmTable>,
    ) -> Result<Next, String> {
        ctx.log(&format!(
            "ldm {}: checkpoint file {} not used (checkpoint {}: {why}); trying the \
             checkpoint before",
            self.instance,
            checkpoint_path(self.instance, u64::from(reading.slot)),
            reading.start.id
        ));
        self.rows = 0;
        self.empty_partitions(tables)?;
        self.next_candidate(ctx)
    }

    /// Applies one entry of a checkpoint file to the partitions.
    fn apply(
        &mut self,
        entry: CheckpointEntry<'_>,
        tables: &FxHashMap<u32, LdmTable>,
    ) -> Result<(), String> {
        match entry {
            CheckpointEntry::Partition { place, whole } => {
                match partition_of(tables, place).filter(|_| whole) {
                    Some((_, partition)) => self.empty_partition(place.table_id, partition),
                    None => Ok(()),
                }
            }
            CheckpointEntry::Delete { place, key, gci } => self.delete_row(place, key, gci, tables),
            CheckpointEntry::Row {
                place,
                fixed,
                var,
                gci,
            } => {
                self.rows += 1;
                self.write_row(place, fixed, var, gci, tables)
            }
        }
    }

    /// Empties the files of the checkpoints newer than the one restored (damaged, or of
    /// a chain not whole, or needing a later GCI), then reads the log. The checkpoints
    /// this node writes next take their ids from the one restored on, and a later start
    /// must never find one of this life in the chain of one that this start passed over:
    /// it would restore rows of two lives mixed. A restore before a copy writes nothing:
    /// after the copy every checkpoint file is emptied anyway.
    fn erase_newer(&mut self, ctx: &mut Context) -> Result<Next, String> {
        let chosen_id = self.chosen.map_or(0, |chosen| chosen.id);
        let newer: Vec<Candidate> = match self.kind {
            RestoreKind::BeforeCopy => Vec::new(),
            _ => self
                .tried
                .iter()
                .copied()
                .filter(|c| c.start.id > chosen_id)
                .collect(),
        };
        if newer.is_empty() {
            return self.open_log(ctx);
        }
        let ids: Vec<String> = newer.iter().map(|c| c.start.id.to_string()).collect();
        ctx.log(&format!(
            "ldm {}: checkpoints {} emptied: newer than the one restored, a later start \
             must not take them for this life's",
            self.instance,
            ids.join(", ")
        ));
        self.step = Step::Erasing {
            left: newer.len() as u32,
        };
        for candidate in newer {
            let path = checkpoint_path(self.instance, u64::from(candidate.slot));
            self.open(ctx, CLEAR_CHECKPOINT, candidate.slot, &path, true)?;
        }
        Ok(Next::Going)
    }

    /// A checkpoint file was emptied, synced and closed.
    fn cleared(&mut self, ctx: &mut Context) -> Result<Next, String> {
        match &mut self.step {
            Step::Clearing { closed } => {
                *closed += 1;
                Ok(if *closed == CHECKPOINT_FILES {
                    Next::Fresh
                } else {
                    Next::Going
                })
            }
            Step::Erasing { left } => {
                *left -= 1;
                match *left {
                    0 => self.open_log(ctx),
                    _ => Ok(Next::Going),
                }
            }
            _ => Ok(Next::Going),
        }
    }

    /// Closes every checkpoint file opened: their reading is over.
    fn close_checkpoints(&mut self, ctx: &mut Context) -> Result<(), String> {
        for file in std::mem::take(&mut self.opened_files) {
            self.request(ctx, CLOSE, 0, file, FileOperation::Close)?;
        }
        Ok(())
    }
}

impl Restore {
    fn open_log(&mut self, ctx: &mut Context) -> Result<Next, String> {
        self.step = Step::OpeningLog(vec![None; self.ring.files as usize]);
        for file in 0..self.ring.files {
            self.open(ctx, OPEN_LOG, file, &self.path_of(OPEN_LOG, file), false)?;
        }
        Ok(Next::Going)
    }

    fn log_opened(&mut self, ctx: &mut Context, index: u32, file: u32) -> Result<Next, String> {
        let Step::OpeningLog(opened) = &mut self.step else {
            return Ok(Next::Going);
        };
        opened[index as usize] = Some(file);
        let Some(files) = opened.iter().copied().collect::<Option<Vec<u32>>>() else {
            return Ok(Next::Going);
        };
        let from = self.chosen.map_or(0, |c| c.redo_lsn);
        self.step = Step::Replaying {
            files,
            scan: LogScan::new(self.ring, from, 0),
        };
        self.read_log_at(ctx, from)
    }

    fn read_log_at(&mut self, ctx: &mut Context, lsn: u64) -> Result<Next, String> {
        let Step::Replaying { files, .. } = &self.step else {
            return Ok(Next::Going);
        };
        let index = self.ring.file_of(lsn);
        let offset = self.ring.offset_of(lsn);
        let length = (self.ring.file_bytes - offset).min(u64::from(READ_BYTES)) as u32;
        let file = files[index as usize];
        self.read_offset = Some(lsn);
        let read = FileOperation::Read { offset, length };
        self.request(ctx, READ_LOG, index, file, read)?;
        Ok(Next::Going)
    }

    /// A chunk of the log: its changes of the GCI restored or below are replayed.
    fn log_read(
        &mut self,
        ctx: &mut Context,
        tables: &FxHashMap<u32, LdmTable>,
    ) -> Result<Next, RestoreError> {
        let data = ctx.section().map(|data| data.to_vec()).unwrap_or_default();
        let chunk_lsn = self.read_offset.take().unwrap_or(0);
        let Step::Replaying { scan, .. } = &mut self.step else {
            return Ok(Next::Going);
        };
        let from = self.chosen.map_or(0, |c| c.redo_lsn);
        let mut changes = Vec::new();
        let end = loop {
            let at = scan.next_lsn();
            match scan.next(&data, chunk_lsn) {
                ScanStep::Record(decoded) if decoded.record == Record::GciDone => {
                    self.marked_gci = self.marked_gci.max(decoded.stamp.gci);
                }
                ScanStep::Record(decoded) if decoded.stamp.gci <= self.gci => {
                    changes.push((decoded.record, decoded.stamp.gci))
                }
                ScanStep::Record(_) => {}
                ScanStep::Read(lsn) => break Ok(lsn),
                ScanStep::End(LogEnd::EarlierLap { found }) if at == from && found > at => {
                    break Err(Some(found))
                }
                ScanStep::End(_) => break Err(None),
            }
        };
        let head_lsn = scan.next_lsn();
        for (change, gci) in changes {
            self.records += 1;
            match change {
                Record::WriteRow { place, fixed, var } => {
                    self.write_row(place, fixed, var, gci, tables)?
                }
                Record::DeleteRow { place, key } => self.delete_row(place, key, gci, tables)?,
                _ => self.records -= 1,
            }
        }
        match end {
            Ok(lsn) => Ok(self.read_log_at(ctx, lsn)?),
            Err(Some(found)) => Err(RestoreError::DiskUnusable(format!(
                "the REDO log of ldm {} was overwritten where the restore must begin (LSN \
                 {from}, found {found}): its local checkpoints are missing or damaged, and \
                 the log alone no longer holds every change",
                self.instance
            ))),
            Err(None) => self.replayed(ctx, head_lsn),
        }
    }

    /// The log's end is reached: the data manager goes on logging there and checkpoints
    /// (before a copy: the log's files close, and the partitions are loaded).
    fn replayed(&mut self, ctx: &mut Context, head_lsn: u64) -> Result<Next, RestoreError> {
        let Step::Replaying { files, .. } = &mut self.step else {
            return Ok(Next::Going);
        };
        let files = std::mem::take(files);
        let reached = self.chosen.map_or(0, |c| c.marked_gci).max(self.marked_gci);
        if reached < self.gci {
            // The node recorded the GCI only once every change of it was synced here: the
            // log lost records (a file damaged or missing), and what it holds is less.
            return Err(RestoreError::DiskUnusable(format!(
                "the REDO log of ldm {} ends before GCI {}, which this node recorded as \
                 saved (its last mark is of GCI {reached}): a log file under redo/ldm-{}/ \
                 is damaged or missing",
                self.instance, self.gci, self.instance
            )));
        }
        if self.kind == RestoreKind::BeforeCopy {
            for file in files {
                self.request(ctx, CLOSE, 0, file, FileOperation::Close)?;
            }
            return Ok(Next::Loaded);
        }
        let checkpoint_id = self.first_id_of_this_life();
        self.step = Step::Checkpointing { id: checkpoint_id };
        Ok(Next::Resume {
            files,
            head_lsn,
            tail_lsn: self.chosen.map_or(0, |c| c.redo_lsn),
            checkpoint_id,
        })
    }

    /// Writes a restored row (its whole committed image, written in `gci`) into its
    /// partition.
    fn write_row(
        &mut self,
        place: RowPlace,
        fixed: &[u8],
        var: &[u8],
        gci: u64,
        tables: &FxHashMap<u32, LdmTable>,
    ) -> Result<(), String> {
        let Some((table, partition)) = partition_of(tables, place) else {
            self.skipped += 1;
            return Ok(());
        };
        let values = table.layout.values(fixed, var);
        let mut partition = lock_partition(partition);
        let owner = restore_owner(self.instance);
        let outcome = partition.write(owner, &values);
        self.done(place, outcome)?;
        let granted = partition.commit(owner, gci);
        assert!(granted.is_empty(), "nobody waits for a restored row");
        Ok(())
    }

    fn delete_row(
        &mut self,
        place: RowPlace,
        key: &[u8],
        gci: u64,
        tables: &FxHashMap<u32, LdmTable>,
    ) -> Result<(), String> {
        let Some((_, partition)) = partition_of(tables, place) else {
            self.skipped += 1;
            return Ok(());
        };
        let mut partition = lock_partition(partition);
        let owner = restore_owner(self.instance);
        match partition.delete(owner, key) {
            // Replay is idempotent: the row may be gone already.
            Err(error) if matches!(error.kind(), OperationErrorKind::NotFound { .. }) => Ok(()),
            outcome => {
                self.done(place, outcome)?;
                let granted = partition.commit(owner, gci);
                assert!(granted.is_empty(), "nobody waits for a restored row");
                Ok(())
            }
        }
    }

    fn done(
        &self,
        place: RowPlace,
        outcome: Result<Outcome<()>, OperationError>,
    ) -> Result<(), String> {
        match outcome {
            Ok(Outcome::Done(())) => Ok(()),
            Ok(Outcome::Waiting(_)) => unreachable!("nothing but the restore locks rows"),
            Err(error) => Err(format!(
                "restoring partition {} of table {} failed: {error}",
                place.partition, place.table_id
            )),
        }
    }

    /// Every partition is as of the GCI restored: it knows the deletes after it.
    pub fn partitions_restored(&self, tables: &FxHashMap<u32, LdmTable>) {
        for table in tables.values() {
            for partition in table.partitions.values() {
                lock_partition(partition).set_deletes_known_from(self.gci + 1);
            }
        }
    }

    /// Undoes a checkpoint that proved unusable (or a restore before a copy that failed):
    /// every partition empty again.
    pub fn empty_partitions(&mut self, tables: &FxHashMap<u32, LdmTable>) -> Result<(), String> {
        for (&table_id, table) in tables {
            for partition in table.partitions.values() {
                self.empty_partition(table_id, partition)?;
            }
        }
        Ok(())
    }

    fn empty_partition(&self, table_id: u32, partition: &SharedPartition) -> Result<(), String> {
        let mut guard = lock_partition(partition);
        let empty = guard.emptied(self.limits).map_err(|error| {
            format!("emptying a partition of table {table_id} for a restore failed: {error}")
        })?;
        *guard = empty;
        Ok(())
    }
}

type SharedPartition = std::sync::Arc<std::sync::RwLock<kista_storage::partition::Partition>>;

fn partition_of(
    tables: &FxHashMap<u32, LdmTable>,
    place: RowPlace,
) -> Option<(&LdmTable, &SharedPartition)> {
    let table = tables.get(&place.table_id)?;
    Some((table, table.partitions.get(&place.partition)?))
}
