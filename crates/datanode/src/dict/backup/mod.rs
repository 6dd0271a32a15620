//! Online backups, the dictionary's part: the master coordinates (NDB's BACKUP master,
//! here), every participant writes its manifest ([`manifest`]), and every dictionary keeps
//! the catalog of backups begun and complete ([`catalog`]).
//!
//! ```text
//! mgmd --BackupRequest--> dict (passed on to the master's)
//! master --BackupIdQuery--> every live dict --BackupIdConf(highest in its catalog)--> master
//! master --BackupBegin(id, participants)--> each participant's dict
//!        dict: writes its manifest (schema, participants) --BackupScanned--> master
//!        dict --BackupScan--> its ldms: log commits, scan partitions --BackupScanned--> master
//! master --BackupStop(stop GCI: one past the highest any scan saw)--> every participant ldm
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

use kista_runtime::io::FileReply;
use kista_runtime::Context;
use kista_signal::{BlockAddress, Signal, TypedSignal};

use super::Dictionary;
use crate::backup_files::{BackupEntry, BACKUP_ID_MAX};
use crate::cluster::NodeSet;
use crate::protocol::*;
use crate::send_with_bytes;
use crate::twin_file::TAG_BITS;
use catalog::{Catalog, Waiting, CATALOG};
use manifest::{ManifestWrite, MANIFEST_TAG};

mod catalog;
mod manifest;

#[derive(Default)]
pub(super) struct Backups {
    catalog: Catalog,
    /// The master's backup under way.
    running: Option<Running>,
    next_attempt: u32,
    /// This participant's manifest being written.
    manifest: Option<ManifestWrite>,
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
        let Some(running) = self
            .backups
            .answer(Step::AskingIds, from, |r| r.attempt == conf.attempt)
        else {
            return;
        };
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

    fn backup_scanned(&mut self, ctx: &mut Context, scanned: BackupScanned, from: BlockAddress) {
        let cluster = self.cluster.clone();
        let Some(running) = self
            .backups
            .answer(Step::Scanning, from, |r| r.backup_id == scanned.backup_id)
        else {
            return;
        };
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
        let Some(running) = self
            .backups
            .answer(Step::Stopping, from, |r| r.backup_id == stopped.backup_id)
        else {
            return;
        };
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
}

impl Backups {
    /// The running backup, once it took `from`'s answer to `step` (`is_ours`: the answer
    /// names it); `None` for an answer to another backup or step, or not awaited.
    fn answer(
        &mut self,
        step: Step,
        from: BlockAddress,
        is_ours: impl Fn(&Running) -> bool,
    ) -> Option<&mut Running> {
        let running = self.running.as_mut().filter(|r| is_ours(r))?;
        running.answered(step, from).then_some(running)
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
