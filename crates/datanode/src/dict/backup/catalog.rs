//! The catalog of backups every dictionary keeps (`backup/catalog.0` and `.1`, twin
//! files): each backup its node took part in, recorded when it begins (so its id is never
//! taken again) and again once complete (`show backups` lists it). Read the first time a
//! backup signal needs it; what needs it meanwhile waits.

use kista_runtime::io::FileReply;
use kista_runtime::Context;
use kista_signal::{BlockAddress, TypedSignal};

use super::Dictionary;
use crate::backup_files::BackupEntry;
use crate::protocol::*;
use crate::send_with_bytes;
use crate::twin_file::{TwinKind, TwinReader, TwinWriter, WriteProgress};

/// The catalog's twin files.
pub(super) const CATALOG: TwinKind = TwinKind {
    magic: *b"KBCT",
    format_version: 1,
    path: "backup/catalog",
    request_tag: 1 << 48,
};

/// Backups the catalog lists; past this the oldest are forgotten (their files stay).
const CATALOG_ENTRIES_MAX: usize = 1000;

#[derive(Default)]
pub(super) struct Catalog {
    entries: Vec<BackupEntry>,
    reading: Option<TwinReader>,
    read: bool,
    writer: Option<TwinWriter<()>>,
    /// Signals that need the catalog, waiting for it to be read.
    waiting: Vec<Waiting>,
}

/// What waits for the catalog to be read.
pub(super) enum Waiting {
    Begin(BackupRequest),
    List(BackupListRequest),
    IdQuery(BlockAddress, BackupIdQuery),
    Record(BackupEntry),
}

impl Catalog {
    /// Whether a backup waits for the catalog to be read before it begins.
    pub(super) fn begin_waiting(&self) -> bool {
        (self.waiting.iter()).any(|waiting| matches!(waiting, Waiting::Begin(_)))
    }

    pub(super) fn highest_id(&self) -> u32 {
        self.entries.last().map_or(0, |entry| entry.backup_id)
    }
}

impl Dictionary {
    /// Runs `waiting` once the catalog is read (reading it first, the first time).
    pub(super) fn with_catalog(&mut self, ctx: &mut Context, waiting: Waiting) {
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

    pub(super) fn run_waiting(&mut self, ctx: &mut Context, waiting: Waiting) {
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

    /// A complete backup goes into this node's catalog.
    pub(super) fn backup_ended(&mut self, ctx: &mut Context, ended: BackupEnded) {
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

    pub(super) fn record_backup(&mut self, ctx: &mut Context, entry: BackupEntry) {
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

    pub(super) fn write_catalog(&mut self, ctx: &mut Context) {
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

    pub(super) fn catalog_replied(&mut self, ctx: &mut Context, reply: FileReply) {
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
                ctx.warn(&format!("backup catalog refused: {refusal}"));
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
}
