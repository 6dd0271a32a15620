//! This data manager's part in an online backup (`dict/backup.rs` coordinates; the files
//! are described in `backup_files.rs`): from `BackupScan` on, every change its backed-up
//! partitions commit goes to the backup's log file, while the partitions are scanned into
//! the data file a batch of rows per step (a local checkpoint's batch, between the
//! transactions' signals). Once the master names the stop GCI and that GCI is saved here
//! (so every change of it and before committed here), the log ends with the stop mark.
//!
//! Each file has one write in flight. The scan waits while its file's write lags; the log
//! cannot wait (commits do not), so its unwritten bytes are bounded: past
//! [`LOG_BUFFER_BYTES_MAX`] the backup fails rather than the node's memory.

use rustc_hash::{FxHashMap, FxHashSet};

use kista_runtime::io::{FileOperation, FileReply, FileRequest, FileStatus};
use kista_runtime::Context;
use kista_signal::{BlockAddress, TypedSignal};
use kista_storage::checkpoint;
use kista_storage::redo::{LogWriter, Record};
use kista_storage::row_store::RowId;

use super::checkpoint::{append_batch, held_partition};
use super::LdmTable;
use crate::backup_files;
use crate::cluster::ClusterShape;
use crate::cluster::NodeSet;
use crate::dist::PartitionMap;
use crate::protocol::{
    BackupEnded, BackupFailedRef, BackupScan, BackupScanned, BackupStep, BackupStop, BackupStopped,
};

/// Request ids of a backup's file requests have this bit (a checkpoint's, a restore's and
/// the REDO log's do not).
pub(crate) const BACKUP_REQUEST: u64 = 1 << 61;
/// The low bit of a request id: which file.
const LOG_FILE: u64 = 1;
const OPENING: u64 = 1 << 32;
const WRITING: u64 = 2 << 32;
const SYNCING: u64 = 3 << 32;
const CLOSING: u64 = 4 << 32;

/// Bytes a file gathers before they are handed to the disk.
const WRITE_BYTES: u64 = 256 << 10;
/// Bytes of committed changes the log may hold unwritten: past it the disk does not keep
/// up with the writes, and the backup fails.
pub(crate) const LOG_BUFFER_BYTES_MAX: u64 = 64 << 20;

pub(crate) struct Backup {
    pub id: u32,
    pub master: BlockAddress,
    /// (table, partition) this data manager backs up.
    partitions: FxHashSet<(u32, u32)>,
    /// Partitions still to scan, the next last; the first resumes after `position`.
    todo: Vec<(u32, u32)>,
    position: Option<RowId>,
    section_begun: bool,
    rows: u64,
    data: BackupFile,
    log: BackupFile,
    /// A `BackupStep` is on its way.
    stepping: bool,
    /// Once the scan's end is appended: the highest GCI any scanned row can carry.
    scanned_gci: Option<u64>,
    stop_gci: Option<u64>,
    records: u64,
}

/// Where a backup file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FileState {
    Opening,
    Open,
    /// Its last record is appended: written out, synced, then closed.
    Ending,
    Syncing,
    /// Synced: the close goes next.
    Synced,
    Closing,
    Closed,
}

struct BackupFile {
    writer: LogWriter,
    file: u32,
    state: FileState,
    writing: bool,
    written_bytes: u64,
}

/// What a reply did to the backup.
pub(crate) enum Progress {
    Going,
    /// The data file is closed: tell the master (`BackupScanned`).
    Scanned(BackupScanned),
    /// The log is closed: tell the master (`BackupStopped`); the backup is over here.
    Stopped(BackupStopped),
}

impl Backup {
    /// Begins backup `scan.backup_id` of the partitions of `table_ids` whose first
    /// participant replica is this data manager, opening its files.
    pub fn begin(
        ctx: &mut Context,
        scan: &BackupScan,
        table_ids: &[u32],
        tables: &FxHashMap<u32, LdmTable>,
        cluster: &ClusterShape,
    ) -> Result<Self, String> {
        let here = ctx.address();
        // Every table has `scan.partitions` partitions, placed alike.
        let map = PartitionMap::for_cluster(scan.partitions.max(1), cluster);
        let mut todo = Vec::new();
        for &table_id in table_ids {
            let Some(table) = tables.get(&table_id) else {
                continue;
            };
            for &partition in table.partitions.keys() {
                if map.first_placed_on(partition, scan.participants) == Some(here) {
                    todo.push((table_id, partition));
                }
            }
        }
        todo.sort_unstable_by(|a, b| b.cmp(a));
        let id = scan.backup_id;
        let backup = Backup {
            id,
            master: scan.master,
            partitions: todo.iter().copied().collect(),
            todo,
            position: None,
            section_begun: false,
            rows: 0,
            data: BackupFile::new(checkpoint::writer(u64::from(id), u64::from(id), 1)),
            log: BackupFile::new(backup_files::log_writer(id)),
            stepping: false,
            scanned_gci: None,
            stop_gci: None,
            records: 0,
        };
        let (node, instance) = (here.node(), here.instance());
        for (kind, path) in [
            (0, backup_files::data_path(id, node, instance)),
            (LOG_FILE, backup_files::log_path(id, node, instance)),
        ] {
            let request = FileRequest::open_empty(BACKUP_REQUEST | OPENING | kind);
            ctx.request_io(&request, path.as_bytes())
                .map_err(|_| "no section for a backup file's name".to_string())?;
        }
        Ok(backup)
    }

    /// Logs the record of a change a partition's commit made (`Record::of_change`), if
    /// this backup holds the partition and its log is still open.
    pub fn log_change(&mut self, gci: u64, record: &Record<'_>) -> Result<(), String> {
        let place = match record {
            Record::WriteRow { place, .. } | Record::DeleteRow { place, .. } => place,
            _ => return Ok(()),
        };
        let logging = matches!(self.log.state, FileState::Opening | FileState::Open);
        if !logging || !self.partitions.contains(&(place.table_id, place.partition)) {
            return Ok(());
        }
        self.log.append(gci, record)?;
        self.records += 1;
        if self.log.writer.unwritten_bytes() > LOG_BUFFER_BYTES_MAX {
            return Err(format!(
                "its log holds {LOG_BUFFER_BYTES_MAX} bytes the disk has not taken yet: the \
                 disk does not keep up with the writes"
            ));
        }
        Ok(())
    }

    /// Hands the log's gathered changes to the disk, if a write's worth waits.
    pub fn write_log(&mut self, ctx: &mut Context) -> Result<(), String> {
        self.log.advance(ctx, LOG_FILE)
    }

    /// The master named the stop GCI; `marked_gci` is the latest saved here.
    pub fn stop(
        &mut self,
        ctx: &mut Context,
        stop_gci: u64,
        marked_gci: u64,
    ) -> Result<(), String> {
        self.stop_gci = Some(stop_gci);
        self.gci_saved(ctx, marked_gci)
    }

    /// GCI `gci` is saved here: every change of it and before committed here. Once that
    /// covers the stop GCI, the log ends.
    pub fn gci_saved(&mut self, ctx: &mut Context, gci: u64) -> Result<(), String> {
        let Some(stop_gci) = self.stop_gci.filter(|&stop| gci >= stop) else {
            return Ok(());
        };
        if self.log.state != FileState::Open {
            return Ok(());
        }
        self.log.append(stop_gci, &Record::GciDone)?;
        self.log.state = FileState::Ending;
        self.log.advance(ctx, LOG_FILE)
    }

    /// The delayed scan step is due.
    pub fn step_due(
        &mut self,
        ctx: &mut Context,
        tables: &FxHashMap<u32, LdmTable>,
        highest_gci: u64,
    ) -> Result<(), String> {
        self.stepping = false;
        self.step(ctx, tables, highest_gci)
    }

    /// Scans a batch into the data file and hands it to the disk once a write's worth
    /// gathered; goes on at the next step unless the file's write lags behind.
    fn step(
        &mut self,
        ctx: &mut Context,
        tables: &FxHashMap<u32, LdmTable>,
        highest_gci: u64,
    ) -> Result<(), String> {
        if self.stepping || self.data.state != FileState::Open {
            return Ok(());
        }
        if self.data.writing && self.data.writer.unwritten_bytes() >= 2 * WRITE_BYTES {
            return Ok(()); // the write's reply steps again
        }
        self.scan_batch(tables, highest_gci)?;
        self.data.advance(ctx, 0)?;
        if self.data.state == FileState::Open {
            self.stepping = true;
            ctx.send_typed(ctx.address(), &BackupStep { backup_id: self.id });
        }
        Ok(())
    }

    /// Appends the next batch of the partition being scanned, or the scan's end when no
    /// partition is left.
    fn scan_batch(
        &mut self,
        tables: &FxHashMap<u32, LdmTable>,
        highest_gci: u64,
    ) -> Result<(), String> {
        let Some(&(table_id, partition_id)) = self.todo.last() else {
            let done = Record::CheckpointDone {
                id: u64::from(self.id),
                redo_lsn: 0,
                rows: self.rows,
                marked_gci: 0,
            };
            self.data.append(highest_gci, &done)?;
            self.scanned_gci = Some(highest_gci);
            self.data.state = FileState::Ending;
            return Ok(());
        };
        let Some((place, partition)) = held_partition(tables, table_id, partition_id) else {
            return Err(format!("table {table_id} went away during the backup"));
        };
        if !self.section_begun {
            let section = Record::CheckpointPartition { place, whole: true };
            self.data.append(0, &section)?;
            self.section_begun = true;
        }
        let partition = partition
            .read()
            .unwrap_or_else(|poison| poison.into_inner());
        let every_row = |_, _| true;
        let (rows, next) = append_batch(
            &mut self.data.writer,
            (place, None),
            &partition,
            self.position,
            every_row,
        )
        .map_err(|full| format!("its data file outgrew its ring: {full}"))?;
        self.rows += rows;
        self.position = next;
        if next.is_none() {
            self.todo.pop();
            self.section_begun = false;
        }
        Ok(())
    }

    /// The file system's answer to one of the backup's requests.
    pub fn replied(
        &mut self,
        ctx: &mut Context,
        reply: FileReply,
        tables: &FxHashMap<u32, LdmTable>,
        highest_gci: u64,
    ) -> Result<Progress, String> {
        let is_log = reply.request_id & LOG_FILE != 0;
        if reply.status != FileStatus::Ok {
            let which = if is_log { "log" } else { "data" };
            return Err(format!("its {which} file failed: {:?}", reply.status));
        }
        let (file, kind) = match is_log {
            true => (&mut self.log, LOG_FILE),
            false => (&mut self.data, 0),
        };
        file.replied(reply);
        file.advance(ctx, kind)?;
        if file.state != FileState::Closed {
            if !is_log {
                self.step(ctx, tables, highest_gci)?;
            }
            return Ok(Progress::Going);
        }
        if is_log {
            return Ok(Progress::Stopped(BackupStopped {
                backup_id: self.id,
                records: self.records,
                bytes: self.log.written_bytes,
            }));
        }
        Ok(Progress::Scanned(BackupScanned {
            backup_id: self.id,
            highest_gci: self.scanned_gci.expect("closed once the scan ended"),
            rows: self.rows,
            bytes: self.data.written_bytes,
        }))
    }

    /// The backup failed: close what is open (the files lack their end records).
    pub fn abandon(&mut self, ctx: &mut Context) {
        for (file, kind) in [(&mut self.data, 0), (&mut self.log, LOG_FILE)] {
            if !matches!(file.state, FileState::Opening | FileState::Closed) {
                let close = FileRequest {
                    request_id: BACKUP_REQUEST | CLOSING | kind,
                    file: file.file,
                    operation: FileOperation::Close,
                };
                let _ = ctx.request_io(&close, &[]);
            }
        }
    }
}

impl BackupFile {
    fn new(writer: LogWriter) -> Self {
        Self {
            writer,
            file: 0,
            state: FileState::Opening,
            writing: false,
            written_bytes: 0,
        }
    }

    fn append(&mut self, gci: u64, record: &Record<'_>) -> Result<(), String> {
        (self.writer.append(gci, record))
            .map(drop)
            .map_err(|full| format!("a backup file outgrew its ring: {full}"))
    }

    /// Takes a reply to this file's request.
    fn replied(&mut self, reply: FileReply) {
        match reply.request_id & !BACKUP_REQUEST & !u64::from(u32::MAX) {
            OPENING => {
                self.file = reply.file;
                self.state = FileState::Open;
            }
            WRITING => {
                self.writing = false;
                self.written_bytes += u64::from(reply.length);
            }
            SYNCING => self.state = FileState::Synced,
            _ => self.state = FileState::Closed,
        }
    }

    /// Hands the disk its next request: a write once a write's worth gathered (or, once
    /// ending, whatever is left), then the sync, then the close.
    fn advance(&mut self, ctx: &mut Context, kind: u64) -> Result<(), String> {
        if self.writing || matches!(self.state, FileState::Opening | FileState::Closed) {
            return Ok(());
        }
        let ending = self.state == FileState::Ending;
        let unwritten = self.writer.unwritten_bytes();
        let (request_id, operation) = if unwritten >= WRITE_BYTES || (ending && unwritten > 0) {
            let Some((lsn, bytes)) = self.writer.take_write(WRITE_BYTES as usize) else {
                return Ok(());
            };
            let request = FileRequest {
                request_id: BACKUP_REQUEST | WRITING | kind,
                file: self.file,
                operation: FileOperation::Write {
                    offset: backup_files::ring().offset_of(lsn),
                },
            };
            let spare = ctx
                .request_io_owned(&request, bytes)
                .map_err(|_| "no section for a backup write".to_string())?;
            self.writer.reuse(spare);
            self.writing = true;
            return Ok(());
        } else if ending {
            self.state = FileState::Syncing;
            (SYNCING, FileOperation::Sync)
        } else if self.state == FileState::Synced {
            self.state = FileState::Closing;
            (CLOSING, FileOperation::Close)
        } else {
            return Ok(());
        };
        let request = FileRequest {
            request_id: BACKUP_REQUEST | request_id | kind,
            file: self.file,
            operation,
        };
        ctx.request_io(&request, &[])
            .map_err(|_| "no section for a backup file request".to_string())
    }
}

impl super::LocalDataManager {
    /// The dictionary's word that backup `scan.backup_id` begins here.
    pub(super) fn backup_scan(&mut self, ctx: &mut Context, scan: BackupScan) {
        let table_ids: Vec<u32> = ctx
            .section()
            .map(|bytes| {
                (bytes.chunks_exact(4))
                    .map(|id| u32::from_le_bytes(id.try_into().expect("4 bytes")))
                    .collect()
            })
            .unwrap_or_default();
        let refusal = match &self.backup {
            _ if self.redo.is_none() => Some("this node keeps nothing on disk".to_string()),
            Some(running) => Some(format!("backup {} is still running here", running.id)),
            None => None,
        };
        let begun = match refusal {
            Some(reason) => Err(reason),
            None => Backup::begin(ctx, &scan, &table_ids, &self.tables, &self.cluster),
        };
        match begun {
            Ok(backup) => self.backup = Some(backup),
            Err(reason) => refuse_backup(ctx, scan.master, scan.backup_id, &reason),
        }
    }

    pub(super) fn backup_step(&mut self, ctx: &mut Context, step: BackupStep) {
        let highest_gci = self.redo.as_ref().map_or(0, |redo| redo.highest_gci());
        let Some(backup) = self.backup.as_mut().filter(|b| b.id == step.backup_id) else {
            return;
        };
        if let Err(reason) = backup.step_due(ctx, &self.tables, highest_gci) {
            self.backup_failed(ctx, &reason);
        }
    }

    pub(super) fn backup_stop(&mut self, ctx: &mut Context, stop: BackupStop) {
        let marked_gci = self.redo.as_ref().map_or(0, |redo| redo.marked_gci());
        let Some(backup) = self.backup.as_mut().filter(|b| b.id == stop.backup_id) else {
            return;
        };
        if let Err(reason) = backup.stop(ctx, stop.stop_gci, marked_gci) {
            self.backup_failed(ctx, &reason);
        }
    }

    /// The master ended the backup as failed.
    pub(super) fn backup_ended(&mut self, ctx: &mut Context, ended: BackupEnded) {
        if ended.completed == 0 {
            if let Some(mut backup) = self.backup.take_if(|b| b.id == ended.backup_id) {
                backup.abandon(ctx);
            }
        }
    }

    /// GCI `gci` is saved here (its mark is in the REDO log).
    pub(super) fn backup_gci_saved(&mut self, ctx: &mut Context, gci: u64) {
        if let Some(Err(reason)) = self.backup.as_mut().map(|b| b.gci_saved(ctx, gci)) {
            self.backup_failed(ctx, &reason);
        }
    }

    /// The commits just logged may fill a write of the backup's log, or overflow it.
    pub(super) fn backup_logged(&mut self, ctx: &mut Context, failure: Option<String>) {
        let Some(backup) = self.backup.as_mut() else {
            return;
        };
        if let Some(reason) = failure.or_else(|| backup.write_log(ctx).err()) {
            self.backup_failed(ctx, &reason);
        }
    }

    pub(super) fn backup_replied(&mut self, ctx: &mut Context, reply: FileReply) {
        let highest_gci = self.redo.as_ref().map_or(0, |redo| redo.highest_gci());
        let Some(backup) = self.backup.as_mut() else {
            return; // the reply to a failed backup's close
        };
        match backup.replied(ctx, reply, &self.tables, highest_gci) {
            Ok(Progress::Going) => {}
            Ok(Progress::Scanned(scanned)) => ctx.send_typed(backup.master, &scanned),
            Ok(Progress::Stopped(stopped)) => {
                ctx.send_typed(backup.master, &stopped);
                self.backup = None;
            }
            Err(reason) => self.backup_failed(ctx, &reason),
        }
    }

    /// The master's node failed: the backup cannot complete.
    pub(super) fn backup_master_failed(&mut self, ctx: &mut Context, failed: NodeSet) {
        if let Some(mut backup) = self.backup.take_if(|b| failed.contains(b.master.node())) {
            backup.abandon(ctx);
        }
    }

    /// This data manager cannot go on with the backup: it closes its files and the
    /// master hears why (and fails the backup).
    fn backup_failed(&mut self, ctx: &mut Context, reason: &str) {
        if let Some(mut backup) = self.backup.take() {
            backup.abandon(ctx);
            refuse_backup(ctx, backup.master, backup.id, reason);
        }
    }
}

fn refuse_backup(ctx: &mut Context, master: BlockAddress, backup_id: u32, reason: &str) {
    let refusal = BackupFailedRef { backup_id }.to_signal(master, ctx.address());
    crate::send_with_bytes(ctx, refusal, reason.as_bytes());
}
