//! Online backups, the dictionary's part: the master coordinates (NDB's BACKUP master),
//! every participant writes its manifest, and every dictionary keeps the catalog of
//! complete backups (`backup/catalog.0` and `.1`, twin files).
//!
//! ```text
//! mgmd --BackupRequest--> dict (passed on to the master's)
//! master --BackupIdQuery--> every live dict --BackupIdConf(highest in its catalog)--> master
//! master --BackupBegin(id, participants)--> each participant's dict
//!        dict: writes its manifest (schema, participants) --BackupScanned--> master
//!        dict --BackupScan--> its ldms: log commits, scan partitions --BackupScanned--> master
//! master --BackupStop(stop GCI = the highest GCI any scan saw)--> every participant ldm
//!        ldm: once that GCI is saved, closes its log --BackupStopped--> master
//! master --BackupEnded(complete, entry)--> every live dict (catalog); --BackupConf--> mgmd
//! ```
//!
//! The participants are the started nodes. A backup fails (`BackupFailed`) when one of
//! them fails or a disk refuses a file: its ldms close their files, which lack their end
//! records, so a restore refuses them. While a backup runs the master refuses schema
//! changes (the manifests hold the schema at the start). Every participant's catalog
//! records a backup's id when it begins (complete once it completed), and ids go on from
//! the highest any live node's catalog holds: no id is taken twice, so no backup's files
//! mix with an earlier failed one's, even after a node missed backups while it was down.

use kista_runtime::io::{FileOperation, FileReply, FileRequest, FileStatus};
use kista_runtime::Context;
use kista_signal::wire::SECTION_BYTES_MAX;
use kista_signal::{BlockAddress, NodeId, Signal, TypedSignal};

use super::{schema_file, Dictionary};
use crate::backup_files::{self, BackupEntry, Manifest, BACKUP_ID_MAX};
use crate::cluster::NodeSet;
use crate::protocol::*;
use crate::send_with_bytes;
use crate::twin_file::{TwinKind, TwinReader, TwinWriter, WriteProgress, TAG_BITS};

/// The catalog of complete backups.
const CATALOG: TwinKind = TwinKind {
    magic: *b"KBCT",
    format_version: 1,
    path: "backup/catalog",
    request_tag: 1 << 48,
};
/// Set in the ids of the manifest's file requests.
const MANIFEST_TAG: u64 = 2 << 48;
/// Backups the catalog lists; past this the oldest are forgotten (their files stay).
const CATALOG_ENTRIES_MAX: usize = 1000;

#[derive(Default)]
pub(super) struct Backups {
    catalog: Catalog,
    /// The master's backup under way.
    running: Option<Running>,
    next_attempt: u32,
    /// This participant's manifest being written.
    manifest: Option<ManifestWrite>,
}

#[derive(Default)]
struct Catalog {
    entries: Vec<BackupEntry>,
    reading: Option<TwinReader>,
    read: bool,
    writer: Option<TwinWriter<()>>,
    /// Signals that need the catalog, waiting for it to be read.
    waiting: Vec<Waiting>,
}

enum Waiting {
    Begin(BackupRequest),
    List(BackupListRequest),
    IdQuery(BlockAddress, BackupIdQuery),
    Record(BackupEntry),
}

struct Running {
    client: BlockAddress,
    request_id: u64,
    /// 0 until every live dictionary said the highest id it knows.
    backup_id: u32,
    attempt: u32,
    participants: NodeSet,
    step: Step,
    /// The blocks whose answer to the step is awaited.
    awaiting: Vec<BlockAddress>,
    highest_id: u32,
    highest_gci: u64,
    rows: u64,
    bytes: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    AskingIds,
    Scanning,
    Stopping,
}

/// A manifest written once: opened, written a section at a time, synced, closed.
struct ManifestWrite {
    backup_id: u32,
    master: BlockAddress,
    image: Vec<u8>,
    file: u32,
    written: usize,
}

const OPENING: u64 = 1 << 32;
const WRITING: u64 = 2 << 32;
const SYNCING: u64 = 3 << 32;
const CLOSING: u64 = 4 << 32;

impl Dictionary {
    /// Runs a backup signal; `None` for any other.
    pub(super) fn backup_signal(
        &mut self,
        signal: &Signal,
        ctx: &mut Context,
    ) -> Option<Result<(), kista_signal::PayloadError>> {
        let number = signal.number();
        let from = signal.sender();
        Some(if number == BackupRequest::NUMBER {
            BackupRequest::from_signal(signal).map(|r| self.backup_requested(ctx, r))
        } else if number == BackupListRequest::NUMBER {
            BackupListRequest::from_signal(signal).map(|r| self.with_catalog(ctx, Waiting::List(r)))
        } else if number == BackupIdQuery::NUMBER {
            BackupIdQuery::from_signal(signal)
                .map(|q| self.with_catalog(ctx, Waiting::IdQuery(from, q)))
        } else if number == BackupIdConf::NUMBER {
            BackupIdConf::from_signal(signal).map(|c| self.backup_id_known(ctx, c, from))
        } else if number == BackupBegin::NUMBER {
            BackupBegin::from_signal(signal).map(|b| self.backup_begin(ctx, b, from))
        } else if number == BackupScanned::NUMBER {
            BackupScanned::from_signal(signal).map(|s| self.backup_scanned(ctx, s, from))
        } else if number == BackupStopped::NUMBER {
            BackupStopped::from_signal(signal).map(|s| self.backup_stopped(ctx, s, from))
        } else if number == BackupEnded::NUMBER {
            BackupEnded::from_signal(signal).map(|e| self.backup_ended(ctx, e))
        } else if number == BackupFailedRef::NUMBER {
            BackupFailedRef::from_signal(signal).map(|r| {
                let reason = ctx
                    .section()
                    .map(|b| String::from_utf8_lossy(&b).into_owned());
                let reason = reason.unwrap_or_else(|| "a participant failed".to_string());
                let by = format!("node {}: {reason}", from.node().0);
                self.backup_failed(ctx, r.backup_id, &by);
            })
        } else {
            return None;
        })
    }

    /// Why a schema change must wait now, if a backup runs.
    pub(super) fn backup_blocks_schema_changes(&self) -> Option<String> {
        let running = self.backups.running.as_ref()?;
        Some(format!(
            "backup {} is running: schema changes wait until it ends",
            running.backup_id
        ))
    }

    fn backup_requested(&mut self, ctx: &mut Context, request: BackupRequest) {
        let refusal = if !self.settings.keeps_data_on_disk() {
            Some("the data nodes keep nothing on disk (no data directory): no backup".into())
        } else if let Some(running) = &self.backups.running {
            Some(format!("backup {} is running already", running.backup_id))
        } else if self.backups.catalog.begin_waiting() {
            Some("a backup is starting already".to_string())
        } else if !self.changes.is_empty() {
            Some("a schema change is under way; try again once it is done".to_string())
        } else if !self.restarts.restarting_nodes().is_empty() {
            Some("a data node is restarting; try again once it started".to_string())
        } else {
            None
        };
        if let Some(message) = refusal {
            let (client, id) = (request.client, request.request_id);
            return self.refuse(ctx, client, id, ErrorCode::BackupRefused, &message);
        }
        self.with_catalog(ctx, Waiting::Begin(request));
    }

    /// Runs `waiting` once the catalog is read (reading it first, the first time).
    fn with_catalog(&mut self, ctx: &mut Context, waiting: Waiting) {
        let catalog = &mut self.backups.catalog;
        if catalog.read || !self.settings.keeps_data_on_disk() {
            return self.run_waiting(ctx, waiting);
        }
        catalog.waiting.push(waiting);
        if catalog.reading.is_none() {
            match TwinReader::start(ctx, CATALOG) {
                Ok(reader) => catalog.reading = Some(reader),
                Err(reason) => ctx.stop_node(&reason),
            }
        }
    }

    fn run_waiting(&mut self, ctx: &mut Context, waiting: Waiting) {
        match waiting {
            Waiting::Begin(request) => self.ask_backup_ids(ctx, request),
            Waiting::List(request) => {
                let mut entries = Vec::new();
                for entry in &self.backups.catalog.entries {
                    entry.encode(&mut entries);
                }
                let conf = BackupListConf {
                    request_id: request.request_id,
                    backups: self.backups.catalog.entries.len() as u32,
                };
                send_with_bytes(ctx, conf.to_signal(request.client, ctx.address()), &entries);
            }
            Waiting::IdQuery(from, query) => {
                let highest = self.backups.catalog.highest_id();
                let conf = BackupIdConf {
                    attempt: query.attempt,
                    highest,
                };
                ctx.send_typed(from, &conf);
            }
            Waiting::Record(entry) => self.record_backup(ctx, entry),
        }
    }

    /// The live dictionaries tell the highest backup id they know: the backup takes the next.
    fn ask_backup_ids(&mut self, ctx: &mut Context, request: BackupRequest) {
        let participants = self
            .cluster
            .node_set()
            .minus(self.failed_nodes)
            .minus(self.restarts.restarting_nodes());
        self.backups.next_attempt += 1;
        let attempt = self.backups.next_attempt;
        let awaiting: Vec<BlockAddress> = (participants.iter())
            .filter_map(|node| Some(self.cluster.node(node)?.dict_address()))
            .collect();
        for &dict in &awaiting {
            ctx.send_typed(dict, &BackupIdQuery { attempt });
        }
        self.backups.running = Some(Running {
            client: request.client,
            request_id: request.request_id,
            backup_id: 0,
            attempt,
            participants,
            step: Step::AskingIds,
            awaiting,
            highest_id: self.backups.catalog.highest_id(),
            highest_gci: 0,
            rows: 0,
            bytes: 0,
        });
    }

    fn backup_id_known(&mut self, ctx: &mut Context, conf: BackupIdConf, from: BlockAddress) {
        let cluster = self.cluster.clone();
        let Some(running) = self.backups.running.as_mut() else {
            return;
        };
        if running.attempt != conf.attempt || !running.answered(Step::AskingIds, from) {
            return;
        }
        running.highest_id = running.highest_id.max(conf.highest);
        if !running.awaiting.is_empty() {
            return;
        }
        if running.highest_id >= BACKUP_ID_MAX {
            let reason = format!("backup ids are used up (the highest is {BACKUP_ID_MAX})");
            return self.backup_failed(ctx, 0, &reason);
        }
        running.backup_id = running.highest_id + 1;
        running.step = Step::Scanning;
        let begin = BackupBegin {
            backup_id: running.backup_id,
            participants: running.participants,
        };
        running.awaiting.clear();
        for shape in running.participants.iter().filter_map(|n| cluster.node(n)) {
            ctx.send_typed(shape.dict_address(), &begin);
            running.awaiting.push(shape.dict_address());
            running.awaiting.extend(shape.ldm_addresses());
        }
        ctx.log(&format!(
            "backup {} begins on data nodes {:?}",
            begin.backup_id, begin.participants
        ));
    }

    /// A participant's part begins: its catalog records the id as taken, its `ldm`s log
    /// and scan, and it writes its manifest.
    fn backup_begin(&mut self, ctx: &mut Context, begin: BackupBegin, master: BlockAddress) {
        let here = ctx.address().node();
        let begun = BackupEntry {
            backup_id: begin.backup_id,
            complete: false,
            stop_gci: 0,
            rows: 0,
            bytes: 0,
            participants: begin.participants,
        };
        self.with_catalog(ctx, Waiting::Record(begun));
        let mut client_tables: Vec<u32> = (self.tables.iter())
            .filter(|(_, table)| table.index_of.is_none())
            .map(|(&id, _)| id)
            .collect();
        client_tables.sort_unstable();
        let table_ids: Vec<u8> = client_tables
            .iter()
            .flat_map(|id| id.to_le_bytes())
            .collect();
        let scan = BackupScan {
            backup_id: begin.backup_id,
            participants: begin.participants,
            master,
            partitions: self.partitions_per_table(),
        };
        if let Some(shape) = self.cluster.node(here) {
            for ldm in shape.ldm_addresses() {
                send_with_bytes(ctx, scan.to_signal(ldm, ctx.address()), &table_ids);
            }
        }
        let tables = client_tables.iter().map(|id| {
            let table = &self.tables[id];
            (*id, table.version, None, table.definition.encoded())
        });
        let schema = schema_file::encode(u64::from(begin.backup_id), self.next_table_id, tables);
        let participants: Vec<(NodeId, u16)> = (begin.participants.iter())
            .filter_map(|node| Some((node, self.cluster.node(node)?.ldm_instances)))
            .collect();
        let image = Manifest::encode(
            begin.backup_id,
            &participants,
            self.partitions_per_table(),
            &schema,
        );
        self.backups.manifest = Some(ManifestWrite {
            backup_id: begin.backup_id,
            master,
            image,
            file: 0,
            written: 0,
        });
        let open = FileRequest::open_empty(MANIFEST_TAG | OPENING);
        let path = backup_files::manifest_path(begin.backup_id, here);
        if ctx.request_io(&open, path.as_bytes()).is_err() {
            self.manifest_failed(ctx, "no section for the manifest's name");
        }
    }

    fn backup_scanned(&mut self, ctx: &mut Context, scanned: BackupScanned, from: BlockAddress) {
        let cluster = self.cluster.clone();
        let Some(running) = self.backups.running.as_mut() else {
            return;
        };
        if running.backup_id != scanned.backup_id || !running.answered(Step::Scanning, from) {
            return;
        }
        running.highest_gci = running.highest_gci.max(scanned.highest_gci);
        running.rows += scanned.rows;
        running.bytes += scanned.bytes;
        if !running.awaiting.is_empty() {
            return;
        }
        // Every row scanned was written in the highest GCI the scans saw or before, so the
        // backup may restore the end of any GCI from that one on. It takes the next: its
        // changes are all in the logs (the scans ended before any of it was saved), so the
        // backup holds what was committed until about when it is answered.
        running.highest_gci += 1;
        let stop = BackupStop {
            backup_id: running.backup_id,
            stop_gci: running.highest_gci,
        };
        running.step = Step::Stopping;
        running.awaiting = (running.participants.iter())
            .filter_map(|node| cluster.node(node))
            .flat_map(|shape| shape.ldm_addresses())
            .collect();
        for &ldm in &running.awaiting {
            ctx.send_typed(ldm, &stop);
        }
    }

    fn backup_stopped(&mut self, ctx: &mut Context, stopped: BackupStopped, from: BlockAddress) {
        let Some(running) = self.backups.running.as_mut() else {
            return;
        };
        if running.backup_id != stopped.backup_id || !running.answered(Step::Stopping, from) {
            return;
        }
        running.bytes += stopped.bytes;
        if !running.awaiting.is_empty() {
            return;
        }
        let Some(running) = self.backups.running.take() else {
            return;
        };
        let entry = BackupEntry {
            backup_id: running.backup_id,
            complete: true,
            stop_gci: running.highest_gci,
            rows: running.rows,
            bytes: running.bytes,
            participants: running.participants,
        };
        let mut bytes = Vec::new();
        entry.encode(&mut bytes);
        let ended = BackupEnded {
            backup_id: entry.backup_id,
            completed: 1,
        };
        let live = self.cluster.node_set().minus(self.failed_nodes);
        for node in live.iter() {
            if let Some(shape) = self.cluster.node(node) {
                send_with_bytes(
                    ctx,
                    ended.to_signal(shape.dict_address(), ctx.address()),
                    &bytes,
                );
            }
        }
        ctx.log(&format!(
            "backup {} completed: GCI {}, {} rows, {} bytes",
            entry.backup_id, entry.stop_gci, entry.rows, entry.bytes
        ));
        let conf = BackupConf {
            request_id: running.request_id,
            backup_id: entry.backup_id,
            stop_gci: entry.stop_gci,
            rows: entry.rows,
            bytes: entry.bytes,
        };
        ctx.send_typed(running.client, &conf);
    }

    /// A complete backup goes into this node's catalog.
    fn backup_ended(&mut self, ctx: &mut Context, ended: BackupEnded) {
        if ended.completed == 0 {
            return;
        }
        let entry = ctx
            .section()
            .and_then(|bytes| BackupEntry::decode_all(&bytes).ok())
            .and_then(|entries| entries.first().copied());
        if let Some(entry) = entry {
            self.with_catalog(ctx, Waiting::Record(entry));
        }
    }

    fn record_backup(&mut self, ctx: &mut Context, entry: BackupEntry) {
        let catalog = &mut self.backups.catalog;
        match catalog
            .entries
            .iter_mut()
            .find(|e| e.backup_id == entry.backup_id)
        {
            Some(recorded) if entry.complete => *recorded = entry,
            Some(_) => return,
            None => catalog.entries.push(entry),
        }
        catalog.entries.sort_by_key(|e| e.backup_id);
        let excess = catalog.entries.len().saturating_sub(CATALOG_ENTRIES_MAX);
        catalog.entries.drain(..excess);
        let writer = catalog
            .writer
            .get_or_insert_with(|| TwinWriter::new(CATALOG, 0));
        if writer.changed(None) {
            self.write_catalog(ctx);
        }
    }

    fn write_catalog(&mut self, ctx: &mut Context) {
        let catalog = &mut self.backups.catalog;
        let Some(writer) = catalog.writer.as_mut() else {
            return;
        };
        let bytes = catalog.entries.len() * BackupEntry::BYTES;
        let image = CATALOG.seal(writer.next_sequence(), bytes, |out| {
            for entry in &catalog.entries {
                entry.encode(out);
            }
        });
        if let Err(reason) = writer.start(ctx, image) {
            ctx.stop_node(&reason);
        }
    }

    /// Nodes failed: a backup they took part in fails.
    pub(super) fn backup_nodes_failed(&mut self, ctx: &mut Context, failed: NodeSet) {
        let Some(running) = &self.backups.running else {
            return;
        };
        let lost = NodeSet(running.participants.0 & failed.0);
        if !lost.is_empty() {
            let reason = format!("data node(s) {lost:?} failed during the backup");
            let backup_id = running.backup_id;
            self.backup_failed(ctx, backup_id, &reason);
        }
    }

    /// Ends the running backup as failed: its `ldm`s close their files and the client
    /// hears why.
    fn backup_failed(&mut self, ctx: &mut Context, backup_id: u32, reason: &str) {
        let Some(running) = self.backups.running.take_if(|r| r.backup_id == backup_id) else {
            return;
        };
        let ended = BackupEnded {
            backup_id: running.backup_id,
            completed: 0,
        };
        let live = running.participants.minus(self.failed_nodes);
        for shape in live.iter().filter_map(|node| self.cluster.node(node)) {
            for ldm in shape.ldm_addresses() {
                ctx.send_typed(ldm, &ended);
            }
        }
        let message = format!(
            "backup {} failed: {reason}; its files are incomplete (a restore refuses them)",
            running.backup_id
        );
        ctx.log(&message);
        let code = ErrorCode::BackupFailed;
        self.refuse(ctx, running.client, running.request_id, code, &message);
    }

    /// Whether `reply` answers a backup file request here (and takes it).
    pub(super) fn backup_file_replied(&mut self, ctx: &mut Context, reply: FileReply) -> bool {
        let tag = reply.request_id & TAG_BITS;
        if tag == MANIFEST_TAG {
            self.manifest_replied(ctx, reply);
        } else if tag == CATALOG.request_tag {
            self.catalog_replied(ctx, reply);
        } else {
            return false;
        }
        true
    }

    fn catalog_replied(&mut self, ctx: &mut Context, reply: FileReply) {
        let catalog = &mut self.backups.catalog;
        if let Some(reader) = catalog.reading.as_mut() {
            let files = match reader.replied(ctx, reply) {
                Ok(None) => return,
                Ok(Some(files)) => files,
                Err(reason) => return ctx.stop_node(&reason),
            };
            let decode = |bytes: &[u8]| {
                let (sequence, payload) = CATALOG.unseal(bytes).map_err(|e| e.to_string())?;
                BackupEntry::decode_all(payload).map(|entries| (sequence, entries))
            };
            let (found, refusals) =
                crate::twin_file::newest(&CATALOG, &files, decode, |(sequence, _)| *sequence);
            for refusal in refusals {
                ctx.log(&format!("backup catalog refused: {refusal}"));
            }
            let (sequence, entries) = found.unwrap_or_default();
            catalog.entries = entries;
            catalog.writer = Some(TwinWriter::new(CATALOG, sequence));
            catalog.reading = None;
            catalog.read = true;
            for waiting in std::mem::take(&mut catalog.waiting) {
                self.run_waiting(ctx, waiting);
            }
            return;
        }
        let Some(writer) = catalog.writer.as_mut() else {
            return;
        };
        match writer.replied(ctx, reply) {
            Ok(WriteProgress::Going) => {}
            Ok(WriteProgress::Durable { again, .. }) => {
                if again {
                    self.write_catalog(ctx);
                }
            }
            Err(reason) => ctx.log(&format!("the backup catalog cannot be written: {reason}")),
        }
    }

    fn manifest_replied(&mut self, ctx: &mut Context, reply: FileReply) {
        let Some(manifest) = self.backups.manifest.as_mut() else {
            return;
        };
        if reply.status != FileStatus::Ok {
            let reason = format!("its manifest failed: {:?}", reply.status);
            return self.manifest_failed(ctx, &reason);
        }
        let step = reply.request_id & !TAG_BITS & !u64::from(u32::MAX);
        let next = match step {
            OPENING => {
                manifest.file = reply.file;
                Some(WRITING)
            }
            WRITING => {
                manifest.written += reply.length as usize;
                Some(match manifest.written < manifest.image.len() {
                    true => WRITING,
                    false => SYNCING,
                })
            }
            SYNCING => Some(CLOSING),
            _ => None,
        };
        let Some(next) = next else {
            // Closed: the participant's part of the schema is on its disk.
            let Some(manifest) = self.backups.manifest.take() else {
                return;
            };
            let scanned = BackupScanned {
                backup_id: manifest.backup_id,
                highest_gci: 0,
                rows: 0,
                bytes: manifest.image.len() as u64,
            };
            return ctx.send_typed(manifest.master, &scanned);
        };
        let (operation, data) = match next {
            WRITING => {
                let end = (manifest.written + SECTION_BYTES_MAX).min(manifest.image.len());
                let offset = manifest.written as u64;
                (
                    FileOperation::Write { offset },
                    &manifest.image[manifest.written..end],
                )
            }
            SYNCING => (FileOperation::Sync, &[][..]),
            _ => (FileOperation::Close, &[][..]),
        };
        let request = FileRequest {
            request_id: MANIFEST_TAG | next,
            file: manifest.file,
            operation,
        };
        if ctx.request_io(&request, data).is_err() {
            self.manifest_failed(ctx, "no section for a manifest request");
        }
    }

    fn manifest_failed(&mut self, ctx: &mut Context, reason: &str) {
        let Some(manifest) = self.backups.manifest.take() else {
            return;
        };
        let refusal = BackupFailedRef {
            backup_id: manifest.backup_id,
        };
        send_with_bytes(
            ctx,
            refusal.to_signal(manifest.master, ctx.address()),
            reason.as_bytes(),
        );
    }
}

impl Running {
    /// Takes `from`'s answer to `step`, if it is the step under way and `from`'s answer
    /// is awaited.
    fn answered(&mut self, step: Step, from: BlockAddress) -> bool {
        let position = self.awaiting.iter().position(|&a| a == from);
        match position.filter(|_| self.step == step) {
            Some(position) => {
                self.awaiting.swap_remove(position);
                true
            }
            None => false,
        }
    }
}

impl Catalog {
    /// Whether a backup waits for the catalog to be read before it begins.
    fn begin_waiting(&self) -> bool {
        (self.waiting.iter()).any(|waiting| matches!(waiting, Waiting::Begin(_)))
    }

    fn highest_id(&self) -> u32 {
        self.entries.last().map_or(0, |entry| entry.backup_id)
    }
}
