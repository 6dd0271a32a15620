//! This data manager's local checkpoints (NDB's LCP): its partitions written to a
//! checkpoint file in the background, so that the REDO log before the checkpoint's start
//! can be released and a restart restores the checkpoint, then replays the REDO log from
//! where the checkpoint began.
//!
//! Checkpoints are partial (see `kista_storage::checkpoint`): each writes what changed
//! in a partition since the one before began (the rows written and the keys deleted in a
//! GCI after the one marked before its start) and every row of a rotating share, so a
//! restore reads the files of the last few checkpoints (a chain). The first checkpoint of
//! a node's life (after a fresh start, a restore or a copy) writes every partition whole,
//! and so does any checkpoint for a partition that forgot deletes it would need.
//!
//! A checkpoint is fuzzy: it scans the partitions in batches while commits go on. Every
//! commit after its start is in the REDO log after its `redo_lsn`, and a row's record is
//! its whole after-image, so replaying the log from there over the checkpoint's rows gives
//! every row its latest state. A row the scan reached after a commit of GCI g holds g's
//! state, so the checkpoint serves only restarts to GCI `max_gci` (the highest GCI
//! committed here before it ended) or later; until every member saved that GCI, the
//! previous checkpoint and the log from its start stay needed.
//!
//! Checkpoints rotate through `CHECKPOINT_FILES` files (`lcp/ldm-<instance>/0.ckpt` to
//! `5.ckpt`), so writing one never harms the chains of the two latest complete ones, and
//! the log is kept from the start of the usable checkpoint *before* the newest: a restore
//! whose newest file is lost or damaged falls back to the one before and still finds
//! every change since. One runs
//! at a time, started once the REDO log holds a quarter of its ring since the newest
//! usable checkpoint's start (or half its ring in all), and writes at
//! `checkpoint_write_bytes_per_sec`, faster as the log fills.
//!
//! A checkpoint the disk refuses for want of space is tried again at once into the space
//! held in reserve for it ([`reserve`]), if any; else it is abandoned, not fatal: the node
//! goes on serving reads, and writes while its REDO log (allocated whole at its creation)
//! has room; the same checkpoint is tried again every [`NO_SPACE_RETRY`] until the disk
//! takes it (its half-written file is no checkpoint a restore would use).

use std::sync::{Arc, RwLock};
use std::time::Duration;

use kista_runtime::io::{FileOperation, FileReply, FileRequest, FileStatus};
use kista_runtime::Context;
use kista_signal::TypedSignal;
use kista_storage::checkpoint::{self, CheckpointSummary, PackedRows, CHECKPOINT_FILES};
use kista_storage::partition::Partition;
use kista_storage::redo::{LogFull, LogWriter, Record, RowPlace};
use kista_storage::row_store::RowId;
use rustc_hash::FxHashMap;

mod reserve;

use super::redo::RedoLog;
use super::LdmTable;
use crate::protocol::LocalCheckpointStep;

/// Request ids of the checkpoint's file requests have this bit (the REDO log's do not).
pub(crate) const CHECKPOINT_REQUEST: u64 = 1 << 63;
const OPENING: u64 = CHECKPOINT_REQUEST | 1;
const WRITING: u64 = CHECKPOINT_REQUEST | 2;
const SYNCING: u64 = CHECKPOINT_REQUEST | 3;
const CLOSING: u64 = CHECKPOINT_REQUEST | 4;

/// Bytes a checkpoint appends before handing them to the disk.
const WRITE_BYTES: u64 = 256 << 10;
/// Rows one scan batch takes at most (a backup's scan too). A step runs on the `ldm` thread between
/// transactions' signals and holds a partition's lock: it must be short (a batch takes
/// about 0.1 ms with 1 KB rows). A partial checkpoint may scan many rows to write a few,
/// so steps are bounded by rows scanned, not by bytes written.
pub(super) const BATCH_ROWS_MAX: usize = 256;
/// Batches a step scans once five eighths of the REDO log are in use: the checkpoint must
/// then free it faster than the writes fill it, and one batch per round of the thread's
/// signals may not (a busy round takes about a millisecond).
const HURRIED_BATCHES_PER_STEP: usize = 16;
/// How long a checkpoint the disk refused for want of space waits before it is tried
/// again: long enough not to flood the log with warnings, short enough that the log
/// (which fills meanwhile) is freed soon after space is.
pub(crate) const NO_SPACE_RETRY: Duration = Duration::from_secs(5);

pub(crate) struct LocalCheckpoints {
    instance: u16,
    write_bytes_per_sec: u64,
    next_id: u64,
    running: Option<Running>,
    /// Checkpoints written whose GCI not every member has saved yet, oldest first.
    written: Vec<CheckpointSummary>,
    /// Where the newest usable checkpoint's REDO replay starts (None: no checkpoint is
    /// usable yet, and a restore replays the log from where this node's log began).
    newest_usable_lsn: Option<u64>,
    /// The last checkpoint written in this life, which the next one writes the changes
    /// since (None: the next one writes every partition whole).
    previous: Option<CheckpointSummary>,
    after_copy: AfterCopy,
    /// A checkpoint the disk refused for want of space, to be started again.
    abandoned: Option<Abandoned>,
    /// Checkpoints skipped in a row because their file could not be opened.
    skipped_in_a_row: u32,
    reserve: reserve::CheckpointReserve,
}

/// A checkpoint abandoned on a full disk: the same id, at the same pace, once due again.
#[derive(Clone, Copy, Debug)]
struct Abandoned {
    id: u64,
    write_bytes_per_sec: u64,
    retry_at_ns: u64,
}

/// A node that restarted into a running cluster copied its rows from peers, which its log
/// never held: its disk restores them once a checkpoint begun after the copy is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AfterCopy {
    /// The node started from disk (or is still copying).
    NotNeeded,
    /// The copy is over: the next checkpoint is due at once.
    Due,
    Checkpointing {
        id: u64,
    },
}

/// What a checkpoint writes of the partition it scans.
#[derive(Clone, Copy, Debug)]
enum Share {
    /// Every row.
    Whole,
    /// The rows written in a GCI after this one, and those of the checkpoint's rotating
    /// share (its keys deleted after this GCI come first).
    ChangedAfter(u64),
}

/// The checkpoint being written.
struct Running {
    id: u64,
    /// The GCI whose later changes it writes (None: it writes every partition whole).
    changes_after_gci: Option<u64>,
    chain_start: u64,
    /// Its file's number at the file-system block, once open.
    file: Option<u32>,
    writer: LogWriter,
    redo_lsn: u64,
    /// The latest GCI marked done in the log before `redo_lsn`.
    marked_gci: u64,
    /// Partitions still to scan, the next last; the first one's scan resumes after
    /// `position`, with `share` once its section is begun.
    todo: Vec<(u32, u32)>,
    position: Option<RowId>,
    share: Option<Share>,
    rows: u64,
    /// Where a batch's rows are packed into one record (empty between batches: kept for
    /// its buffer).
    packed: PackedRows,
    /// A write (or the sync) is in flight, or the next step waits for its delay.
    busy: bool,
    /// Once the end record is appended: the highest GCI committed here before it.
    max_gci: Option<u64>,
    /// Its pace while the log has room (0: unbounded).
    write_bytes_per_sec: u64,
}

impl LocalCheckpoints {
    pub fn new(instance: u16, write_bytes_per_sec: u64) -> Self {
        Self {
            instance,
            write_bytes_per_sec,
            next_id: 1,
            running: None,
            written: Vec::new(),
            newest_usable_lsn: None,
            previous: None,
            after_copy: AfterCopy::NotNeeded,
            abandoned: None,
            skipped_in_a_row: 0,
            reserve: reserve::CheckpointReserve::new(instance),
        }
    }

    /// Every member saved `restorable`: the checkpoints that need no later GCI are usable,
    /// and the log before the start of the usable one before the newest is needed no more.
    pub fn restorable(&mut self, restorable: u64, redo: &mut RedoLog) {
        let usable = self
            .written
            .iter()
            .rposition(|done| done.max_gci <= restorable);
        if let Some(newest) = usable {
            let newest_lsn = self.written[newest].redo_lsn;
            if let Some(previous_lsn) = self.newest_usable_lsn.replace(newest_lsn) {
                redo.release_until(previous_lsn);
            }
            self.written.drain(..=newest);
        }
    }

    /// Whether checkpoint `id`, just written, is the one after a node restart's copy
    /// (once: the node's disk restores its rows from it on).
    pub fn is_after_copy(&mut self, id: u64) -> bool {
        let after_copy = self.after_copy == AfterCopy::Checkpointing { id };
        if after_copy {
            self.after_copy = AfterCopy::NotNeeded;
        }
        after_copy
    }

    /// The node restarted into a running cluster and holds every row now: a checkpoint of
    /// them all is due.
    pub fn copy_done(&mut self) {
        self.after_copy = AfterCopy::Due;
        self.previous = None;
    }

    /// Whether the disk refused the last checkpoint for want of space (it is tried again).
    pub fn held_by_full_disk(&self) -> bool {
        self.abandoned.is_some()
    }

    /// Whether a checkpoint is being written, written and waiting to become usable, or due
    /// to start at the next global checkpoint: one that will release REDO log
    /// (`ldm/redo_wait.rs` waits for it).
    pub fn will_free_log(&self, redo: &RedoLog) -> bool {
        let retried = self.abandoned.is_some();
        self.running.is_some() || retried || !self.written.is_empty() || self.due(redo)
    }

    /// Whether the log has filled a quarter of its ring since the newest usable checkpoint
    /// began, or holds half the ring in all: past half, the log kept for the one before
    /// the newest must go, and the next checkpoint releases it.
    fn due(&self, redo: &RedoLog) -> bool {
        let since_usable_bytes =
            redo.head_lsn() - self.newest_usable_lsn.unwrap_or(redo.tail_lsn());
        since_usable_bytes >= redo.ring_bytes() / 4 || redo.used_bytes() >= redo.ring_bytes() / 2
    }

    /// Starts a checkpoint if none runs and, unless one is due after a copy, none waits to
    /// become usable and the log has filled a quarter of its ring since the newest usable
    /// one began (or holds half the ring in all).
    pub fn start_if_due(
        &mut self,
        ctx: &mut Context,
        tables: &FxHashMap<u32, LdmTable>,
        redo: &RedoLog,
    ) -> Result<(), String> {
        if self.running.is_some() || self.abandoned.is_some() || !redo.is_open() {
            return Ok(());
        }
        if self.after_copy == AfterCopy::Due {
            self.after_copy = AfterCopy::Checkpointing { id: self.next_id };
            return self.start(ctx, tables, redo, self.write_bytes_per_sec);
        }
        // One waiting to become usable frees the log at the next global checkpoint.
        if !self.written.is_empty() || !self.due(redo) {
            return Ok(());
        }
        self.start(ctx, tables, redo, self.write_bytes_per_sec)
    }

    /// Starts checkpoint `id` at once, written as fast as the disk takes it: a start from
    /// disk's checkpoint of the rows it restored (the ids go on from the one restored).
    pub fn start_restored(
        &mut self,
        ctx: &mut Context,
        tables: &FxHashMap<u32, LdmTable>,
        redo: &RedoLog,
        id: u64,
    ) -> Result<(), String> {
        assert!(
            self.running.is_none(),
            "a restore's checkpoint is the node's first"
        );
        self.next_id = id;
        self.previous = None;
        // The log was resumed from the start of the checkpoint restored (or of the log).
        self.newest_usable_lsn = Some(redo.tail_lsn());
        self.start(ctx, tables, redo, 0)
    }

    fn start(
        &mut self,
        ctx: &mut Context,
        tables: &FxHashMap<u32, LdmTable>,
        redo: &RedoLog,
        write_bytes_per_sec: u64,
    ) -> Result<(), String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut todo: Vec<(u32, u32)> = tables
            .iter()
            .flat_map(|(&table, t)| t.partitions.keys().map(move |&p| (table, p)))
            .collect();
        todo.sort_unstable_by(|a, b| b.cmp(a));
        let chain_start = checkpoint::chain_start(id, self.previous.map(|p| p.chain_start));
        self.running = Some(Running {
            id,
            changes_after_gci: self.previous.map(|previous| previous.marked_gci),
            chain_start,
            file: None,
            writer: checkpoint::writer(id, chain_start, 1),
            redo_lsn: redo.head_lsn(),
            marked_gci: redo.marked_gci(),
            todo,
            position: None,
            share: None,
            rows: 0,
            packed: PackedRows::default(),
            busy: true,
            max_gci: None,
            write_bytes_per_sec,
        });
        self.reserve.open_once(ctx);
        let request = FileRequest::open_empty(OPENING);
        ctx.request_io(&request, checkpoint_path(self.instance, id).as_bytes())
            .map_err(|_| "no section for a checkpoint file's name".to_string())
    }

    /// The delayed step of checkpoint `id` is due.
    pub fn step_due(
        &mut self,
        ctx: &mut Context,
        step: LocalCheckpointStep,
        tables: &FxHashMap<u32, LdmTable>,
        redo: &RedoLog,
    ) -> Result<(), String> {
        match (&mut self.running, self.abandoned) {
            (Some(running), _) if running.id == step.id => {
                running.busy = false;
                self.step(ctx, tables, redo)
            }
            (None, Some(abandoned))
                if abandoned.id == step.id && ctx.now_ns() >= abandoned.retry_at_ns =>
            {
                self.abandoned = None;
                self.next_id = abandoned.id;
                self.start(ctx, tables, redo, abandoned.write_bytes_per_sec)
            }
            _ => Ok(()),
        }
    }

    /// The running checkpoint's file cannot be opened (`status`: its owner or mode
    /// changed, say): that id is skipped and the next one written whole, into the next
    /// file, so no chain needs the file. With every file refused in a row, the node stops.
    fn skip_unopenable(
        &mut self,
        ctx: &mut Context,
        tables: &FxHashMap<u32, LdmTable>,
        redo: &RedoLog,
        status: FileStatus,
    ) -> Result<(), String> {
        let running = self.running.take().expect("a checkpoint runs");
        let path = checkpoint_path(self.instance, running.id);
        self.skipped_in_a_row += 1;
        if self.skipped_in_a_row >= CHECKPOINT_FILES {
            return Err(format!(
                "no local checkpoint file of ldm {} can be opened (the last, {path}: \
                 {status:?}): look at the owner and mode of lcp/ldm-{}/",
                self.instance, self.instance
            ));
        }
        ctx.warn(&format!(
            "ldm {}: local checkpoint file {path} cannot be opened ({status:?}): checkpoint \
             {} skipped, the next written whole instead",
            self.instance, running.id
        ));
        self.previous = None;
        if self.after_copy == (AfterCopy::Checkpointing { id: running.id }) {
            self.after_copy = AfterCopy::Checkpointing { id: self.next_id };
        }
        self.start(ctx, tables, redo, running.write_bytes_per_sec)
    }

    /// The disk refused checkpoint `running` for want of space: its file is closed and
    /// the same checkpoint started again, at once into the space the reserve gives back,
    /// or after [`NO_SPACE_RETRY`] with none.
    fn abandon_for_space(&mut self, ctx: &mut Context) -> Result<(), String> {
        let running = self.running.take().expect("a checkpoint runs");
        let retry_after = match self.reserve.release(ctx) {
            Some(held_bytes) => {
                ctx.warn(&format!(
                    "ldm {}: the disk is full: local checkpoint {} is written again into \
                     the {} KiB held in reserve for it; free space on the data directory's \
                     disk (the checkpoint after it needs room)",
                    self.instance,
                    running.id,
                    held_bytes >> 10
                ));
                Duration::ZERO
            }
            None => {
                self.warn_not_written(ctx, &running);
                NO_SPACE_RETRY
            }
        };
        self.abandoned = Some(Abandoned {
            id: running.id,
            write_bytes_per_sec: running.write_bytes_per_sec,
            retry_at_ns: ctx.now_ns() + retry_after.as_nanos() as u64,
        });
        let retry = LocalCheckpointStep { id: running.id };
        ctx.send_delayed(retry.to_signal(ctx.address(), ctx.address()), retry_after);
        running.file.map_or(Ok(()), |file| close(ctx, file))
    }

    fn warn_not_written(&self, ctx: &mut Context, running: &Running) {
        ctx.warn(&format!(
            "ldm {}: local checkpoint {} not written: the disk is full ({}); tried again \
             every {} s. Reads go on, and writes while the REDO log has room (then they \
             fail with 4262, disk full): free space on the data directory's disk",
            self.instance,
            running.id,
            checkpoint_path(self.instance, running.id),
            NO_SPACE_RETRY.as_secs()
        ));
    }

    /// Scans a batch of rows (more once the log fills, or when unpaced); once a
    /// write's worth is appended (or the partitions end), hands the write to the disk,
    /// else lets the signals waiting run before the next batch; once all is written,
    /// syncs the file.
    fn step(
        &mut self,
        ctx: &mut Context,
        tables: &FxHashMap<u32, LdmTable>,
        redo: &RedoLog,
    ) -> Result<(), String> {
        let Some(running) = self.running.as_mut().filter(|r| !r.busy) else {
            return Ok(());
        };
        let unpaced = running.write_bytes_per_sec == 0;
        let batches = match unpaced || hurried(redo) {
            true => HURRIED_BATCHES_PER_STEP,
            false => 1,
        };
        for _ in 0..batches {
            if running.write_due() {
                break;
            }
            running.scan_batch(tables, redo.highest_gci())?;
        }
        if !running.write_due() {
            running.busy = true;
            let step = LocalCheckpointStep { id: running.id };
            ctx.send_typed(ctx.address(), &step);
            return Ok(());
        }
        let file = running.file.expect("the step runs once the file is open");
        match running.writer.take_write(WRITE_BYTES as usize) {
            Some((lsn, bytes)) => {
                let offset = checkpoint::ring().offset_of(lsn);
                let request = FileRequest {
                    request_id: WRITING,
                    file,
                    operation: FileOperation::Write { offset },
                };
                let spare = ctx
                    .request_io_owned(&request, bytes)
                    .map_err(|_| "no section for a checkpoint write".to_string())?;
                running.writer.reuse(spare);
            }
            None => {
                let request = FileRequest {
                    request_id: SYNCING,
                    file,
                    operation: FileOperation::Sync,
                };
                ctx.request_io(&request, &[])
                    .map_err(|_| "no section for a checkpoint sync".to_string())?;
            }
        }
        running.busy = true;
        Ok(())
    }

    /// The file system's answer to one of the checkpoint's requests; the checkpoint
    /// just written whole and synced, if any.
    pub fn replied(
        &mut self,
        ctx: &mut Context,
        reply: FileReply,
        tables: &FxHashMap<u32, LdmTable>,
        redo: &RedoLog,
    ) -> Result<Option<CheckpointSummary>, String> {
        if reply.request_id == CLOSING {
            return Ok(None);
        }
        if reserve::is_reserve_request(reply.request_id) {
            self.reserve.replied(ctx, reply);
            return Ok(None);
        }
        let Some(running) = self.running.as_mut() else {
            return Ok(None);
        };
        if reply.status == FileStatus::NoSpace {
            return self.abandon_for_space(ctx).map(|()| None);
        }
        if reply.request_id == OPENING && reply.status != FileStatus::Ok {
            return (self.skip_unopenable(ctx, tables, redo, reply.status)).map(|()| None);
        }
        if reply.status != FileStatus::Ok {
            return Err(format!(
                "the local checkpoint file {} of this data node failed: {:?}",
                checkpoint_path(self.instance, running.id),
                reply.status
            ));
        }
        match reply.request_id {
            OPENING => {
                self.skipped_in_a_row = 0;
                running.file = Some(reply.file);
                running.busy = false;
                self.step(ctx, tables, redo).map(|()| None)
            }
            WRITING => {
                let delay = delay_after(running.write_bytes_per_sec, u64::from(reply.length), redo);
                let step = LocalCheckpointStep { id: running.id };
                ctx.send_delayed(step.to_signal(ctx.address(), ctx.address()), delay);
                Ok(None)
            }
            SYNCING => {
                let summary = running.summary();
                ctx.log(&running.written_line(self.instance));
                let file_bytes = running.writer.head_lsn() - checkpoint::first_lsn(running.id);
                self.running = None;
                self.written.push(summary);
                self.previous = Some(summary);
                close(ctx, reply.file)?;
                self.reserve.checkpoint_written(ctx, file_bytes);
                Ok(Some(summary))
            }
            _ => Ok(None),
        }
    }
}

/// Closes a checkpoint's file (written whole, or abandoned); the reply is ignored.
fn close(ctx: &mut Context, file: u32) -> Result<(), String> {
    let close = FileRequest {
        request_id: CLOSING,
        file,
        operation: FileOperation::Close,
    };
    ctx.request_io(&close, &[])
        .map_err(|_| "no section to close a checkpoint file".to_string())
}

/// The file checkpoint `id` of `ldm` instance `instance` goes to (`id` may be the file's
/// slot itself).
pub(crate) fn checkpoint_path(instance: u16, id: u64) -> String {
    format!("lcp/ldm-{instance}/{}.ckpt", checkpoint::file_slot(id))
}

/// How many times `checkpoint_write_bytes_per_sec` a checkpoint writes, by how much of
/// the REDO log is in use: twice with a quarter of the ring, doubling with each eighth
/// more, sixteen times from five eighths (and sixteen batches per step: [`hurried`]);
/// `None`, as fast as the disk takes it, from three quarters. A checkpoint
/// must keep up with the writes that fill the log: a bulk load logs as fast as the
/// configured pace writes, and the log is freed only once a checkpoint begun after it
/// became usable. (In normal running a log holds about half its ring: checkpoints start
/// each quarter, and the log is kept from the start of the one before the newest.)
fn pace_factor(redo: &RedoLog) -> Option<u64> {
    match redo.used_bytes() / (redo.ring_bytes() / 8).max(1) {
        0..=1 => Some(1),
        eighths @ 2..=5 => Some(1 << (eighths - 1)),
        _ => None,
    }
}

/// Whether a step scans sixteen batches: five eighths of the log are in use.
fn hurried(redo: &RedoLog) -> bool {
    pace_factor(redo).is_none_or(|factor| factor >= 16)
}

/// How long to wait after writing `bytes` at `bytes_per_sec` (0: unbounded) times the
/// log's [`pace_factor`].
fn delay_after(bytes_per_sec: u64, bytes: u64, redo: &RedoLog) -> Duration {
    match pace_factor(redo) {
        Some(factor) if bytes_per_sec > 0 => {
            Duration::from_micros(bytes.saturating_mul(1_000_000) / (bytes_per_sec * factor))
        }
        _ => Duration::ZERO,
    }
}

impl Running {
    /// Whether the disk is to get what was appended: a write's worth, or the rest once
    /// the end record is appended.
    fn write_due(&self) -> bool {
        self.writer.unwritten_bytes() >= WRITE_BYTES || self.max_gci.is_some()
    }

    /// Appends the rows of the next batch of the partition being scanned, or the end
    /// record when no partition is left (stamped `highest_gci`, the highest GCI any of the
    /// rows can carry).
    fn scan_batch(
        &mut self,
        tables: &FxHashMap<u32, LdmTable>,
        highest_gci: u64,
    ) -> Result<(), String> {
        let Some(&(table_id, partition_id)) = self.todo.last() else {
            let done = Record::CheckpointDone {
                id: self.id,
                redo_lsn: self.redo_lsn,
                rows: self.rows,
                marked_gci: self.marked_gci,
            };
            self.append(highest_gci, &done)?;
            self.max_gci = Some(highest_gci);
            return Ok(());
        };
        let Some((place, partition)) = held_partition(tables, table_id, partition_id) else {
            // Dropped meanwhile: nothing of it is needed.
            self.partition_done();
            return Ok(());
        };
        let partition = partition
            .read()
            .unwrap_or_else(|poison| poison.into_inner());
        let share = match self.share {
            Some(share) => share,
            None => self.begin_section(place, &partition)?,
        };
        let id = self.id;
        let written = |anchor: RowId, gci: u64| match share {
            Share::Whole => true,
            Share::ChangedAfter(after) => {
                gci > after || checkpoint::in_rotating_share(id, anchor.0)
            }
        };
        let to = (place, Some(&mut self.packed));
        let (rows, next) = append_batch(&mut self.writer, to, &partition, self.position, written)
            .map_err(outgrew)?;
        self.rows += rows;
        self.position = next;
        if self.position.is_none() {
            self.partition_done();
        }
        Ok(())
    }

    /// Begins the partition's section: whole in a checkpoint that writes every partition
    /// whole or where the partition forgot deletes since the GCI the changes are written
    /// after; else the keys deleted since then, and its changed rows to follow.
    fn begin_section(&mut self, place: RowPlace, partition: &Partition) -> Result<Share, String> {
        let changes = self
            .changes_after_gci
            .and_then(|after| Some((after, partition.deleted_after(after)?)));
        let (share, deleted) = match changes {
            Some((after, deleted)) => (Share::ChangedAfter(after), deleted),
            None => (Share::Whole, Vec::new()),
        };
        let whole = matches!(share, Share::Whole);
        self.append(0, &Record::CheckpointPartition { place, whole })?;
        for (key, gci) in deleted {
            self.append(gci, &Record::DeleteRow { place, key: &key })?;
        }
        self.share = Some(share);
        Ok(share)
    }

    /// The partition being scanned is written: the next one's section begins.
    fn partition_done(&mut self) {
        self.todo.pop();
        self.position = None;
        self.share = None;
    }

    fn append(&mut self, gci: u64, record: &Record<'_>) -> Result<(), String> {
        self.writer.append(gci, record).map(drop).map_err(outgrew)
    }

    /// What the node's log says of it once written (NDB logs each LCP too): operators
    /// see how much a checkpoint writes, and so how a partial one saves.
    fn written_line(&self, instance: u16) -> String {
        let what = match self.changes_after_gci {
            Some(gci) => format!("partial: the rows changed after GCI {gci} and a share"),
            None => "every partition whole".to_string(),
        };
        format!(
            "ldm {instance}: local checkpoint {} written: {} rows, {} bytes ({what})",
            self.id,
            self.rows,
            self.writer.head_lsn() - checkpoint::first_lsn(self.id)
        )
    }

    fn summary(&self) -> CheckpointSummary {
        CheckpointSummary {
            id: self.id,
            chain_start: self.chain_start,
            max_gci: self.max_gci.expect("synced once ended"),
            redo_lsn: self.redo_lsn,
            rows: self.rows,
            marked_gci: self.marked_gci,
        }
    }
}

/// Where partition `partition_id` of table `table_id` is, if this data manager still
/// holds it: the place its rows' records name, and the partition.
pub(super) fn held_partition(
    tables: &FxHashMap<u32, LdmTable>,
    table_id: u32,
    partition_id: u32,
) -> Option<(RowPlace, &Arc<RwLock<Partition>>)> {
    let table = tables.get(&table_id)?;
    let place = RowPlace {
        table_id,
        table_version: table.versions.current,
        partition: partition_id,
    };
    Some((place, table.partitions.get(&partition_id)?))
}

/// Appends the committed rows of the next batch of `partition` (at most
/// [`BATCH_ROWS_MAX`], after `position`) that `wanted` picks by anchor and GCI to `writer`,
/// each stamped with the GCI that last wrote it, as rows of `place`: packed into one
/// record with `packed` (a checkpoint's), or a `WriteRow` record each (a backup's, whose
/// readers take those). How many it appended, and where the next batch resumes (`None`:
/// the partition is done).
pub(super) fn append_batch(
    writer: &mut LogWriter,
    (place, mut packed): (RowPlace, Option<&mut PackedRows>),
    partition: &Partition,
    position: Option<RowId>,
    wanted: impl Fn(RowId, u64) -> bool,
) -> Result<(u64, Option<RowId>), LogFull> {
    let mut failure = None;
    let mut rows = 0;
    let next = partition.scan_with_gci(position, BATCH_ROWS_MAX, |anchor, fixed, var, gci| {
        if wanted(anchor, gci) && failure.is_none() {
            let appended = match packed.as_deref_mut() {
                Some(packed) => packed.push(writer, place, (gci, fixed, var)),
                None => (writer.append(gci, &Record::WriteRow { place, fixed, var })).map(drop),
            };
            failure = appended.err();
            rows += 1;
        }
    });
    if let (None, Some(packed)) = (&failure, packed) {
        failure = packed.append_to(writer, place).err();
    }
    failure.map_or(Ok((rows, next)), Err)
}

fn outgrew(full: LogFull) -> String {
    format!("a local checkpoint outgrew its file: {full}")
}
