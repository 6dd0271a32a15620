//! This data manager's REDO log: every change its partitions commit, as an after-image
//! stamped with the transaction's GCI, appended to a [`LogWriter`] and written through the
//! node's file-system block (never by the block itself), one write in flight at a time, so
//! writes grow to what accumulated while the last one ran (group writes). A write waits
//! for 64 KiB of records, or for a global checkpoint's mark.
//!
//! The log is a ring of `redo_files_per_log` files of equal size under
//! `redo/ldm-<instance>/`, resumed or created afresh once the node knows its life (the
//! start count its records are stamped with): by a start from disk (`ldm/restore.rs`), or,
//! on a node restarting into a running cluster, once its control file is read
//! (`gcp/control_file.rs`). Nothing is logged before.
//!
//! A global checkpoint's save (`GcpSave` of GCI n) appends the mark `GciDone(n)`: every
//! record of n and below is before it, since the master asks only once all of n's
//! transactions committed. Once the write holding the mark is done, every file written
//! since the last sync is synced, then the master hears that n is saved here. Syncs happen
//! only there: records not yet under a mark belong to no restorable GCI.
//!
//! The log's records are needed until a local checkpoint that began after them is usable
//! (`ldm/checkpoint.rs` releases them). Each prepared write reserves the bytes its record
//! will take at commit, until its transaction completes or aborts here: a commit always
//! finds room, however large its transaction (a commit that found none would stop the
//! node, and every replica of it at once). Once less than an eighth of the ring is free
//! besides what is reserved, new writes wait for room while the checkpoint hurries
//! (`ldm/redo_wait.rs`); a transaction that alone needs more than the log holds is refused
//! with a temporary error (`RedoLogFull`), and aborts.

use std::sync::Arc;

use kista_runtime::io::{FileOperation, FileReply, FileRequest, FileStatus};
use kista_runtime::Context;
use kista_signal::wire::SECTION_BYTES_MAX;
use kista_signal::BlockAddress;
use kista_storage::redo::{LogRing, LogWriter, Record, RECORD_BYTES_MAX};

use crate::metrics::DataManagerCounters;
use crate::node::NodeSettings;
use crate::protocol::GcpSaveConf;

/// Largest write handed to the file system at once (one section).
const WRITE_BYTES_MAX: usize = SECTION_BYTES_MAX;
/// Bytes the log gathers before it hands them to the file system, unless a global
/// checkpoint's save waits for its mark. A commit does not wait for the disk, so writing
/// sooner buys nothing, and a write per few commits cost the io thread a wake-up each
/// (a sixth of a core under `kista bench` on two cores).
const WRITE_BYTES_MIN: u64 = 64 << 10;
/// What a file-system request was for: the high half of its id (the low half is the file).
const OPENING: u64 = 1 << 32;
const ALLOCATING: u64 = 2 << 32;
const WRITING: u64 = 3 << 32;
const SYNCING: u64 = 4 << 32;

/// A global checkpoint's save: confirmed to `master` once the log is durable through `lsn`.
struct Save {
    lsn: u64,
    gci: u64,
    master: BlockAddress,
}

/// How the ring is laid out for one log, from the node's settings; `None` for a node
/// without a REDO log.
pub(crate) fn ring_for(settings: &NodeSettings) -> Option<LogRing> {
    if !settings.keeps_data_on_disk() {
        return None;
    }
    let files = settings.redo_files_per_log.max(3);
    let per_log = settings.redo_log_bytes / u64::from(settings.ldm_instances.max(1));
    let file_bytes = (per_log / u64::from(files)).max(2 * RECORD_BYTES_MAX as u64);
    Some(LogRing { file_bytes, files })
}

/// File `file` of the ring of `ldm` instance `instance`'s log.
pub(crate) fn log_path(instance: u16, file: u32) -> String {
    format!("redo/ldm-{instance}/{file:02}.log")
}

pub(crate) struct RedoLog {
    writer: LogWriter,
    instance: u16,
    /// `[ring file]` → its number at the file-system block once open and allocated.
    files: Vec<Option<u32>>,
    /// The write in flight: its LSN and length.
    writing: Option<(u64, usize)>,
    /// Where the writes done so far end.
    written_lsn: u64,
    /// `[ring file]`: written since its last sync.
    unsynced: Vec<bool>,
    /// Syncs in flight, and the saves they make durable.
    syncs_in_flight: u32,
    syncing: Vec<Save>,
    /// Saves waiting for their mark to be written.
    saves: Vec<Save>,
    /// The highest GCI of a change logged here.
    highest_gci: u64,
    /// The latest GCI marked done here (or restored: the log goes on after it).
    marked_gci: u64,
    /// Whether the log was opened or resumed for this life. Before, nothing is logged: a
    /// restarting node learns its life from its control file first, and its disk restores
    /// nothing of this life until a local checkpoint begun after the opening is usable.
    opened: bool,
    /// Bytes prepared writes will log at commit ([`RedoLog::reserve`]).
    reserved_bytes: u64,
    /// What the log counts for operators (never read here).
    counters: Arc<DataManagerCounters>,
}

impl RedoLog {
    pub fn new(ring: LogRing, instance: u16, counters: Arc<DataManagerCounters>) -> Self {
        Self {
            writer: LogWriter::new(ring, 1, 0, 0),
            instance,
            files: vec![None; ring.files as usize],
            writing: None,
            written_lsn: 0,
            unsynced: vec![false; ring.files as usize],
            syncs_in_flight: 0,
            syncing: Vec::new(),
            saves: Vec::new(),
            highest_gci: 0,
            marked_gci: 0,
            opened: false,
            reserved_bytes: 0,
            counters,
        }
    }

    /// Where the next record goes: every change logged so far lies before it.
    pub fn head_lsn(&self) -> u64 {
        self.writer.head_lsn()
    }

    /// The oldest record still needed: the ring may not be written over from here on.
    pub fn tail_lsn(&self) -> u64 {
        self.writer.tail_lsn()
    }

    pub fn ring_bytes(&self) -> u64 {
        self.writer.ring().ring_bytes()
    }

    /// Bytes of the ring holding records still needed.
    pub fn used_bytes(&self) -> u64 {
        self.ring_bytes() - self.writer.free_bytes()
    }

    /// Whether new writes must wait for a local checkpoint to free space: less than an
    /// eighth of the ring is free besides what prepared writes reserved. The eighth keeps
    /// room for global checkpoints' marks and for the one write that runs after the check
    /// and reserves its record then (at most `RECORD_BYTES_MAX`).
    pub fn nearly_full(&self) -> bool {
        let free = self.writer.free_bytes().saturating_sub(self.reserved_bytes);
        free < self.ring_bytes() / 8
    }

    /// Whether the log can have room for new writes once local checkpoints release what
    /// they may: what prepared writes reserved leaves an eighth of the ring.
    pub fn room_possible(&self) -> bool {
        self.ring_bytes().saturating_sub(self.reserved_bytes) >= self.ring_bytes() / 8
    }

    /// What prepared writes reserved for their commits' records.
    pub fn reserved_bytes(&self) -> u64 {
        self.reserved_bytes
    }

    /// Keeps `bytes` free for the record a prepared write logs at commit.
    pub fn reserve(&mut self, bytes: u64) {
        self.reserved_bytes += bytes;
    }

    /// Frees what a transaction reserved, once it completed (its records are in the log)
    /// or aborted here.
    pub fn release(&mut self, bytes: u64) {
        assert!(
            bytes <= self.reserved_bytes,
            "released {bytes} REDO bytes of {} reserved",
            self.reserved_bytes
        );
        self.reserved_bytes -= bytes;
    }

    pub fn is_open(&self) -> bool {
        self.opened
    }

    pub fn highest_gci(&self) -> u64 {
        self.highest_gci
    }

    pub fn marked_gci(&self) -> u64 {
        self.marked_gci
    }

    pub fn ring(&self) -> LogRing {
        self.writer.ring()
    }

    /// Goes on with a log a start restored: records go at `head_lsn` (where the scan found
    /// its end) in the ring's open `files`, stamped `life`; those from `tail_lsn` on are
    /// still needed. The restored rows are of GCI `gci` and below.
    pub fn resume(&mut self, files: &[u32], head_lsn: u64, tail_lsn: u64, life: u32, gci: u64) {
        self.writer = LogWriter::new(self.writer.ring(), life, head_lsn, tail_lsn);
        self.files = files.iter().copied().map(Some).collect();
        self.written_lsn = head_lsn;
        self.highest_gci = gci;
        self.marked_gci = gci;
        self.opened = true;
    }

    /// Records before `lsn` are needed no more (a usable local checkpoint holds them).
    pub fn release_until(&mut self, lsn: u64) {
        self.writer.release_until(lsn);
    }

    fn path(&self, file: usize) -> String {
        log_path(self.instance, file as u32)
    }

    /// Creates the ring's files afresh (the node starts with empty tables), its records
    /// stamped `life`.
    pub fn open(&mut self, ctx: &mut Context, life: u32) -> Result<(), String> {
        self.writer = LogWriter::new(self.writer.ring(), life, 0, 0);
        self.marked_gci = 0;
        self.opened = true;
        for file in 0..self.files.len() {
            let request = FileRequest::open_empty(OPENING | file as u64);
            ctx.request_io(&request, self.path(file).as_bytes())
                .map_err(|_| "no section for a REDO file's name".to_string())?;
        }
        Ok(())
    }

    /// Appends the record of a change one partition's commit made (`Record::of_change`).
    pub fn log_change(&mut self, gci: u64, record: &Record<'_>) -> Result<(), String> {
        if !self.opened {
            return Ok(());
        }
        self.writer
            .append(gci, record)
            .map_err(|full| format!("the REDO log has no room for a commit's change: {full}"))?;
        self.highest_gci = self.highest_gci.max(gci);
        Ok(())
    }

    /// Marks `gci` done (every record of it and below is already appended) and confirms it
    /// to `master` once the log is durable through the mark (at once before the log
    /// opened: it holds nothing to save).
    pub fn save(
        &mut self,
        ctx: &mut Context,
        gci: u64,
        master: BlockAddress,
    ) -> Result<(), String> {
        if !self.opened {
            ctx.send_typed(master, &GcpSaveConf { gci });
            return Ok(());
        }
        self.writer
            .append(gci, &Record::GciDone)
            .map_err(|full| format!("no room in the REDO log for a global checkpoint: {full}"))?;
        self.marked_gci = self.marked_gci.max(gci);
        let lsn = self.writer.head_lsn();
        self.saves.push(Save { lsn, gci, master });
        self.write_more(ctx)
    }

    /// Syncs every file written since its last sync once a save's mark is written, unless
    /// syncs are in flight (the next round covers it).
    fn sync_for_saves(&mut self, ctx: &mut Context) -> Result<(), String> {
        if self.syncs_in_flight > 0 {
            return Ok(());
        }
        let written = self.written_lsn;
        let (ready, waiting) = self.saves.drain(..).partition(|save| save.lsn <= written);
        self.saves = waiting;
        self.syncing = ready;
        if self.syncing.is_empty() {
            return Ok(());
        }
        for index in 0..self.unsynced.len() {
            let Some(file) = self.files[index].filter(|_| self.unsynced[index]) else {
                continue;
            };
            let request = FileRequest {
                request_id: SYNCING | index as u64,
                file,
                operation: FileOperation::Sync,
            };
            ctx.request_io(&request, &[])
                .map_err(|_| "no section for a REDO sync".to_string())?;
            self.unsynced[index] = false;
            self.syncs_in_flight += 1;
        }
        if self.syncs_in_flight == 0 {
            self.saved(ctx);
        }
        Ok(())
    }

    /// The saves being synced are durable: tell their masters.
    fn saved(&mut self, ctx: &mut Context) {
        for save in self.syncing.drain(..) {
            ctx.send_typed(save.master, &GcpSaveConf { gci: save.gci });
        }
    }

    /// Hands the next write to the file system, unless one is in flight, its file is not
    /// ready yet, or fewer than `WRITE_BYTES_MIN` bytes wait and no save does.
    pub fn write_more(&mut self, ctx: &mut Context) -> Result<(), String> {
        if self.writing.is_some()
            || (self.saves.is_empty() && self.writer.unwritten_bytes() < WRITE_BYTES_MIN)
        {
            return Ok(());
        }
        let Some(lsn) = self.writer.unwritten_lsn() else {
            return Ok(());
        };
        let ring = self.writer.ring();
        let index = ring.file_of(lsn) as usize;
        let Some(file) = self.files[index] else {
            return Ok(()); // written once the file is allocated
        };
        let request = FileRequest {
            request_id: WRITING | index as u64,
            file,
            operation: FileOperation::Write {
                offset: ring.offset_of(lsn),
            },
        };
        let (_, bytes) = self.writer.take_write(WRITE_BYTES_MAX).expect("bytes wait");
        let length = bytes.len();
        let spare = ctx
            .request_io_owned(&request, bytes)
            .map_err(|_| "no section for a REDO write".to_string())?;
        self.writer.reuse(spare);
        self.writing = Some((lsn, length));
        Ok(())
    }

    /// The file system's answer to one of this log's requests.
    pub fn replied(&mut self, ctx: &mut Context, reply: FileReply) -> Result<(), String> {
        let index = (reply.request_id & u64::from(u32::MAX)) as usize;
        if reply.status != FileStatus::Ok {
            return Err(format!(
                "the REDO log file {} of this data node failed: {:?}",
                self.path(index),
                reply.status
            ));
        }
        match reply.request_id & !u64::from(u32::MAX) {
            OPENING => {
                let request = FileRequest {
                    request_id: ALLOCATING | index as u64,
                    file: reply.file,
                    operation: FileOperation::Allocate {
                        bytes: self.writer.ring().file_bytes,
                    },
                };
                ctx.request_io(&request, &[])
                    .map_err(|_| "no section for a REDO allocation".to_string())?;
            }
            ALLOCATING => self.files[index] = Some(reply.file),
            WRITING => {
                let (lsn, length) = self.writing.take().expect("a write was in flight");
                self.written_lsn = lsn + length as u64;
                self.counters.redo_written(length as u64);
                self.unsynced[index] = true;
                self.sync_for_saves(ctx)?;
            }
            SYNCING => {
                self.syncs_in_flight -= 1;
                if self.syncs_in_flight == 0 {
                    self.saved(ctx);
                    self.sync_for_saves(ctx)?;
                }
            }
            other => unreachable!("the log asked for nothing of kind {other:#x}"),
        }
        self.write_more(ctx)
    }
}
