//! A participant's manifest (`backup/BACKUP-<id>/node-<n>.manifest`, `backup_files.rs`):
//! the backup's participants and the schema at its start, written once (opened, written a
//! section at a time, synced, closed) while the node's `ldm`s begin their part; the master
//! hears `BackupScanned` once it is on disk.

use kista_runtime::io::{FileOperation, FileReply, FileRequest, FileStatus};
use kista_runtime::Context;
use kista_signal::wire::SECTION_BYTES_MAX;
use kista_signal::{BlockAddress, NodeId, TypedSignal};

use super::super::schema_file;
use super::catalog::Waiting;
use super::Dictionary;
use crate::backup_files::{self, BackupEntry, Manifest};
use crate::protocol::*;
use crate::send_with_bytes;
use crate::twin_file::TAG_BITS;

/// Set in the ids of the manifest's file requests.
pub(super) const MANIFEST_TAG: u64 = 2 << 48;

/// A manifest written once: opened, written a section at a time, synced, closed.
pub(super) struct ManifestWrite {
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
    /// A participant's part begins: its catalog records the id as taken, its `ldm`s log
    /// and scan, and it writes its manifest.
    pub(super) fn backup_begin(
        &mut self,
        ctx: &mut Context,
        begin: BackupBegin,
        master: BlockAddress,
    ) {
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

    pub(super) fn manifest_replied(&mut self, ctx: &mut Context, reply: FileReply) {
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

    pub(super) fn manifest_failed(&mut self, ctx: &mut Context, reason: &str) {
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
