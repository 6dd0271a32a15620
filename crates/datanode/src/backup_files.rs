//! What an online backup leaves on each participant's disk, and how `kista restore` reads it
//! back (NDB's `BACKUP-<id>` directories: a control file, a data file and a log file per
//! `ldm`).
//!
//! ```text
//! backup/BACKUP-<id>/node-<n>.manifest      sealed: backup id, participants, their ldm
//!                                           counts, partitions per table, the schema
//!                                           (client tables, as the schema file keeps them)
//! backup/BACKUP-<id>/node-<n>.ldm-<i>.data  a whole local checkpoint (`checkpoint.rs`'s
//!                                           format, checkpoint id = backup id) of the
//!                                           partitions this ldm backs up
//! backup/BACKUP-<id>/node-<n>.ldm-<i>.log   every change those partitions committed while
//!                                           the backup ran: a start record, write/delete
//!                                           records stamped with their GCI, and a
//!                                           `GciDone` stamped with the stop GCI
//! ```
//!
//! Each partition is backed up by one replica: the first in its placement chain on a
//! participant. Its rows are scanned while commits go on (a fuzzy copy, each row stamped
//! with the GCI that last wrote it), and every change committed from before the scan began
//! until the stop GCI is saved is in the log. The stop GCI is at least every GCI the scans
//! saw, so the backup restores the cluster as it was at the end of the stop GCI: a row is
//! the last change of GCI ≤ stop the log holds for its key, or, if it has none, the scanned
//! row.

use std::collections::HashMap;

use kista_signal::NodeId;
use kista_storage::checkpoint::{self, CheckpointEntry};
use kista_storage::redo::{LogRing, LogScan, LogWriter, Record, ScanStep, RECORD_BYTES_MAX};
use kista_storage::row::RowLayout;

use crate::cluster::NodeSet;
use crate::dict::schema_file::{self, SchemaImage};
use crate::twin_file::TwinKind;

/// The largest backup id: ids are checkpoint ids of the data files, whose LSN laps repeat
/// after 2^24.
pub const BACKUP_ID_MAX: u32 = (1 << 24) - 1;

/// Seals the manifest (the path is unused: a manifest is written once, not as twins).
const MANIFEST: TwinKind = TwinKind {
    magic: *b"KBAK",
    format_version: 1,
    path: "backup/manifest",
    request_tag: 0,
};

/// The directory of backup `id`, under a data directory.
pub fn directory(id: u32) -> String {
    format!("backup/BACKUP-{id}")
}

/// The manifest node `node` writes for backup `id`.
pub fn manifest_path(id: u32, node: NodeId) -> String {
    format!("{}/node-{}.manifest", directory(id), node.0)
}

/// The data file `ldm` instance `instance` of node `node` writes for backup `id`.
pub fn data_path(id: u32, node: NodeId, instance: u16) -> String {
    format!("{}/node-{}.ldm-{instance}.data", directory(id), node.0)
}

/// The log file `ldm` instance `instance` of node `node` writes for backup `id`.
pub fn log_path(id: u32, node: NodeId, instance: u16) -> String {
    format!("{}/node-{}.ldm-{instance}.log", directory(id), node.0)
}

/// A backup as the catalog keeps it and `show backups` lists it: every backup begun is
/// recorded (so its id is never taken again), complete once it completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackupEntry {
    pub backup_id: u32,
    /// False for a backup that failed or whose outcome this node never heard: its files
    /// are incomplete.
    pub complete: bool,
    pub stop_gci: u64,
    pub rows: u64,
    pub bytes: u64,
    pub participants: NodeSet,
}

impl BackupEntry {
    pub const BYTES: usize = 40;

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.backup_id.to_le_bytes());
        out.extend_from_slice(&u32::from(self.complete).to_le_bytes());
        for word in [self.stop_gci, self.rows, self.bytes, self.participants.0] {
            out.extend_from_slice(&word.to_le_bytes());
        }
    }

    /// Entries back to back, as `encode` wrote them.
    pub fn decode_all(bytes: &[u8]) -> Result<Vec<BackupEntry>, String> {
        if bytes.len() % Self::BYTES != 0 {
            return Err(format!(
                "a backup list of {} bytes is not whole entries",
                bytes.len()
            ));
        }
        let u64_at = |entry: &[u8], at: usize| {
            u64::from_le_bytes(entry[at..at + 8].try_into().expect("8 bytes"))
        };
        Ok(bytes
            .chunks_exact(Self::BYTES)
            .map(|entry| BackupEntry {
                backup_id: u32::from_le_bytes(entry[..4].try_into().expect("4 bytes")),
                complete: entry[4] != 0,
                stop_gci: u64_at(entry, 8),
                rows: u64_at(entry, 16),
                bytes: u64_at(entry, 24),
                participants: NodeSet(u64_at(entry, 32)),
            })
            .collect())
    }
}

/// What a participant's manifest says.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    pub backup_id: u32,
    /// (node, its ldm instances) of every participant: each wrote a data and a log file
    /// per instance, and a restore needs them all.
    pub participants: Vec<(NodeId, u16)>,
    pub partitions_per_table: u32,
    /// The client tables at the backup's start (index tables are rebuilt by a restore).
    pub schema: SchemaImage,
}

impl Manifest {
    /// The manifest's bytes; `schema` is a schema file's image of the client tables.
    pub fn encode(
        backup_id: u32,
        participants: &[(NodeId, u16)],
        partitions_per_table: u32,
        schema: &[u8],
    ) -> Vec<u8> {
        let bytes = 12 + 4 * participants.len() + schema.len();
        MANIFEST.seal(u64::from(backup_id), bytes, |out| {
            out.extend_from_slice(&backup_id.to_le_bytes());
            out.extend_from_slice(&partitions_per_table.to_le_bytes());
            out.extend_from_slice(&(participants.len() as u32).to_le_bytes());
            for &(node, ldms) in participants {
                out.extend_from_slice(&u16::from(node.0).to_le_bytes());
                out.extend_from_slice(&ldms.to_le_bytes());
            }
            out.extend_from_slice(schema);
        })
    }

    pub fn decode(bytes: &[u8]) -> Result<Manifest, String> {
        let (_, payload) = MANIFEST.unseal(bytes).map_err(|e| e.to_string())?;
        let word = |at: usize| -> Result<u32, String> {
            payload
                .get(at..at + 4)
                .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")))
                .ok_or_else(|| "the manifest is cut short".to_string())
        };
        let backup_id = word(0)?;
        let partitions_per_table = word(4)?;
        let count = word(8)? as usize;
        let schema_at = 12 + 4 * count;
        let mut participants = Vec::with_capacity(count.min(64));
        for at in (12..schema_at).step_by(4) {
            let pair = word(at)?;
            let node = u8::try_from(pair & 0xffff)
                .map_err(|_| format!("the manifest names node {}", pair & 0xffff))?;
            participants.push((NodeId(node), (pair >> 16) as u16));
        }
        let schema = schema_file::decode(&payload[schema_at..])
            .map_err(|e| format!("the manifest's schema: {e}"))?;
        Ok(Manifest {
            backup_id,
            participants,
            partitions_per_table,
            schema,
        })
    }
}

/// The one-file ring a backup's data and log files are (a local checkpoint file's).
pub fn ring() -> LogRing {
    checkpoint::ring()
}

/// A writer for backup `id`'s log file, its start record appended (the record a
/// checkpoint file opens with, naming the backup).
pub fn log_writer(id: u32) -> LogWriter {
    checkpoint::writer(u64::from(id), u64::from(id), 1)
}

/// One change of a backup's log.
#[derive(Debug, PartialEq, Eq)]
pub enum LogChange<'a> {
    Write {
        table_id: u32,
        fixed: &'a [u8],
        var: &'a [u8],
        gci: u64,
    },
    Delete {
        table_id: u32,
        key: &'a [u8],
        gci: u64,
    },
}

/// What a [`BackupLogScan`] found next.
#[derive(Debug, PartialEq, Eq)]
pub enum LogStep<'a> {
    Change(LogChange<'a>),
    /// Read the file from this offset and call again.
    Read(u64),
    /// The log is complete: it restores GCI `stop_gci`.
    Done {
        stop_gci: u64,
    },
    /// The log cannot be used: the reason.
    Broken(String),
}

/// A walk over one backup log file, fed with the bytes it asks for.
pub struct BackupLogScan {
    id: u32,
    scan: LogScan,
    started: bool,
}

impl BackupLogScan {
    pub fn new(id: u32) -> Self {
        Self {
            id,
            scan: LogScan::new(ring(), checkpoint::first_lsn(u64::from(id)), 0),
            started: false,
        }
    }

    /// The next change or outcome from `chunk`: the file's bytes from `offset` on.
    pub fn next<'a>(&mut self, chunk: &'a [u8], offset: u64) -> LogStep<'a> {
        let lap_start = checkpoint::first_lsn(u64::from(self.id));
        let decoded = match self.scan.next(chunk, lap_start + offset) {
            ScanStep::Record(decoded) => decoded,
            ScanStep::Read(lsn) => return LogStep::Read(ring().offset_of(lsn)),
            ScanStep::End(end) => {
                return LogStep::Broken(format!("the log ends before its stop mark ({end})"))
            }
        };
        let gci = decoded.stamp.gci;
        match (self.started, decoded.record) {
            (false, Record::CheckpointStart { id, .. }) if id == u64::from(self.id) => {
                self.started = true;
                self.next(chunk, offset)
            }
            (false, _) => LogStep::Broken(format!("not a log of backup {}", self.id)),
            (true, Record::WriteRow { place, fixed, var }) => LogStep::Change(LogChange::Write {
                table_id: place.table_id,
                fixed,
                var,
                gci,
            }),
            (true, Record::DeleteRow { place, key }) => LogStep::Change(LogChange::Delete {
                table_id: place.table_id,
                key,
                gci,
            }),
            (true, Record::GciDone) => LogStep::Done { stop_gci: gci },
            (true, other) => LogStep::Broken(format!("a {other:?} record in a backup log")),
        }
    }
}

/// A row as a backup holds it: its fixed and variable parts, as its table's layout stores
/// them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowImage {
    pub fixed: Vec<u8>,
    pub var: Vec<u8>,
}

/// What one `ldm`'s backup log restores.
#[derive(Debug, Default)]
pub struct LoggedChanges {
    pub stop_gci: u64,
    /// Table → encoded primary key → its last change of a GCI up to the stop GCI: the row
    /// then, or `None` once deleted.
    pub last: HashMap<u32, HashMap<Vec<u8>, Option<RowImage>>>,
}

/// Reads backup `id`'s log from `file`, a chunk at a time; `layouts` has every table's row layout.
pub fn read_log(
    id: u32,
    file: &mut (impl std::io::Read + std::io::Seek),
    layouts: &HashMap<u32, RowLayout>,
) -> Result<LoggedChanges, String> {
    read_log_in_chunks(id, file, layouts, LOG_CHUNK_BYTES)
}

/// [`read_log`], `chunk_bytes` (at least [`RECORD_BYTES_MAX`]) at a time.
fn read_log_in_chunks(
    id: u32,
    file: &mut (impl std::io::Read + std::io::Seek),
    layouts: &HashMap<u32, RowLayout>,
    chunk_bytes: usize,
) -> Result<LoggedChanges, String> {
    let mut scan = BackupLogScan::new(id);
    let mut changes = LoggedChanges::default();
    let mut pending = Vec::new();
    let mut chunk = Vec::new();
    let mut offset = 0;
    let chunk_bytes = chunk_bytes.max(RECORD_BYTES_MAX);
    let mut read = |offset, chunk: &mut Vec<u8>| {
        checkpoint::read_chunk(file, offset, chunk_bytes, chunk).map_err(|e| e.to_string())
    };
    read(offset, &mut chunk)?;
    let stop_gci = loop {
        match scan.next(&chunk, offset) {
            LogStep::Change(change) => pending.push(owned(change, layouts)?),
            LogStep::Done { stop_gci } => break stop_gci,
            LogStep::Read(at) if at != offset => {
                offset = at;
                read(offset, &mut chunk)?;
            }
            LogStep::Read(_) => return Err("the log is cut short".to_string()),
            LogStep::Broken(reason) => return Err(reason),
        }
    };
    // Changes of a row are in the order they committed, which is their GCIs' order.
    for (gci, (table_id, key), state) in pending {
        if gci <= stop_gci {
            changes.last.entry(table_id).or_default().insert(key, state);
        }
    }
    changes.stop_gci = stop_gci;
    Ok(changes)
}

type OwnedChange = (u64, (u32, Vec<u8>), Option<RowImage>);

fn owned(change: LogChange<'_>, layouts: &HashMap<u32, RowLayout>) -> Result<OwnedChange, String> {
    let layout_of = |table_id: u32| {
        (layouts.get(&table_id))
            .ok_or_else(|| format!("the log changes table {table_id}, which the schema lacks"))
    };
    Ok(match change {
        LogChange::Write {
            table_id,
            fixed,
            var,
            gci,
        } => {
            let mut key = Vec::new();
            layout_of(table_id)?.primary_key_of_row(fixed, var, &mut key);
            let image = RowImage {
                fixed: fixed.to_vec(),
                var: var.to_vec(),
            };
            (gci, (table_id, key), Some(image))
        }
        LogChange::Delete { table_id, key, gci } => {
            layout_of(table_id)?;
            (gci, (table_id, key.to_vec()), None)
        }
    })
}

/// Bytes of the data file `restore_ldm` reads at a time.
const DATA_CHUNK_BYTES: usize = 8 << 20;
/// Bytes of the log file [`read_log`] reads at a time.
const LOG_CHUNK_BYTES: usize = 8 << 20;

/// The rows one `ldm`'s files of backup `id` restore (its data file's rows, each replaced
/// by its log's last change up to the stop GCI), given to `row` as (table, fixed, var);
/// returns the stop GCI and the rows given. Both files are read a chunk at a time; what
/// is kept of the log is each changed row's changes (what changed while the backup ran).
pub fn restore_ldm(
    id: u32,
    data: &mut (impl std::io::Read + std::io::Seek),
    log: &mut (impl std::io::Read + std::io::Seek),
    layouts: &HashMap<u32, RowLayout>,
    mut row: impl FnMut(u32, &[u8], &[u8]),
) -> Result<(u64, u64), String> {
    let logged = read_log(id, log, layouts).map_err(|e| format!("log: {e}"))?;
    let mut given = 0;
    let mut failure = None;
    let mut key = Vec::new();
    let summary = checkpoint::read_stream(data, DATA_CHUNK_BYTES, |entry| {
        let CheckpointEntry::Row {
            place, fixed, var, ..
        } = entry
        else {
            return;
        };
        let Some(layout) = layouts.get(&place.table_id) else {
            failure.get_or_insert(format!(
                "rows of table {}, which the schema lacks",
                place.table_id
            ));
            return;
        };
        key.clear();
        layout.primary_key_of_row(fixed, var, &mut key);
        // A row the log changed is restored as the log left it, below.
        let changed =
            (logged.last.get(&place.table_id)).is_some_and(|keys| keys.contains_key(&key));
        if !changed {
            row(place.table_id, fixed, var);
            given += 1;
        }
    })
    .map_err(|e| format!("data: {e}"))?;
    if let Some(failure) = failure {
        return Err(failure);
    }
    if summary.id != u64::from(id) {
        return Err(format!(
            "data: the file is of backup {}, not {id}",
            summary.id
        ));
    }
    if summary.max_gci > logged.stop_gci {
        return Err(format!(
            "data: rows of GCI {} past the stop GCI {}",
            summary.max_gci, logged.stop_gci
        ));
    }
    for (&table_id, keys) in &logged.last {
        for image in keys.values().flatten() {
            row(table_id, &image.fixed, &image.var);
            given += 1;
        }
    }
    Ok((logged.stop_gci, given))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kista_storage::redo::RowPlace;

    #[test]
    fn a_log_reads_back_its_changes_and_its_stop_gci() {
        let mut writer = log_writer(7);
        let place = RowPlace {
            table_id: 3,
            table_version: 1,
            partition: 0,
        };
        let row = Record::WriteRow {
            place,
            fixed: &[1, 2],
            var: &[],
        };
        writer.append(5, &row).unwrap();
        let delete = Record::DeleteRow { place, key: &[9] };
        writer.append(6, &delete).unwrap();
        writer.append(6, &Record::GciDone).unwrap();
        let (_, bytes) = writer.take_write(1 << 20).unwrap();
        let mut scan = BackupLogScan::new(7);
        let mut seen = Vec::new();
        loop {
            match scan.next(&bytes, 0) {
                LogStep::Change(change) => seen.push(format!("{change:?}")),
                LogStep::Done { stop_gci } => {
                    assert_eq!(stop_gci, 6);
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(seen.len(), 2);
        assert!(seen[0].contains("gci: 5") && seen[1].contains("Delete"));
    }

    #[test]
    fn a_log_longer_than_a_chunk_is_read_a_chunk_at_a_time() {
        use kista_storage::schema::{Column, TableSchema};
        use kista_storage::types::{ColumnType, Value};
        let schema = TableSchema {
            name: "d/t".into(),
            columns: vec![
                Column::new(
                    "id",
                    ColumnType::Int {
                        bytes: 8,
                        signed: true,
                    },
                ),
                Column::new("v", ColumnType::VarBinary { max_length: 100 }),
            ],
            primary_key: vec![0],
            extra_metadata: Vec::new(),
        };
        let layout = RowLayout::new(&schema);
        let place = RowPlace {
            table_id: 3,
            table_version: 1,
            partition: 0,
        };
        let mut writer = log_writer(7);
        let (mut fixed, mut var) = (vec![0; layout.fixed_bytes()], Vec::new());
        // About 1 MB of records: four chunks of the smallest size a chunk may have.
        let rows = 12_000;
        for id in 0..rows {
            let values = [Value::Int(id), Value::Bytes(vec![b'x'; 60])];
            layout.encode(&values, &mut fixed, &mut var).unwrap();
            let row = Record::WriteRow {
                place,
                fixed: &fixed,
                var: &var,
            };
            writer.append(5, &row).unwrap();
        }
        writer.append(5, &Record::GciDone).unwrap();
        let mut bytes = Vec::new();
        while let Some((_, written)) = writer.take_write(usize::MAX) {
            bytes.extend_from_slice(&written);
        }
        assert!(bytes.len() > 3 * RECORD_BYTES_MAX, "{} bytes", bytes.len());
        let layouts = HashMap::from([(3, layout)]);
        let mut file = std::io::Cursor::new(&bytes);
        let read = read_log_in_chunks(7, &mut file, &layouts, RECORD_BYTES_MAX).unwrap();
        assert_eq!((read.stop_gci, read.last[&3].len()), (5, rows as usize));
    }

    #[test]
    fn a_log_cut_before_its_stop_mark_is_refused() {
        let mut writer = log_writer(2);
        let (_, bytes) = writer.take_write(1 << 20).unwrap();
        let mut scan = BackupLogScan::new(2);
        assert!(matches!(scan.next(&bytes, 0), LogStep::Read(_)));
        assert!(read_log(2, &mut std::io::Cursor::new(&bytes), &HashMap::new()).is_err());
        let mut other = BackupLogScan::new(3);
        assert!(matches!(other.next(&bytes, 0), LogStep::Broken(_)));
    }

    #[test]
    fn a_manifest_and_entries_round_trip() {
        let schema = schema_file::encode(9, 4, std::iter::empty());
        let bytes = Manifest::encode(9, &[(NodeId(1), 2), (NodeId(2), 2)], 8, &schema);
        let manifest = Manifest::decode(&bytes).unwrap();
        assert_eq!(manifest.participants, vec![(NodeId(1), 2), (NodeId(2), 2)]);
        assert_eq!((manifest.backup_id, manifest.partitions_per_table), (9, 8));
        let entry = BackupEntry {
            backup_id: 4,
            complete: true,
            stop_gci: 77,
            rows: 10,
            bytes: 4096,
            participants: NodeSet::of([NodeId(1), NodeId(3)]),
        };
        let mut out = Vec::new();
        entry.encode(&mut out);
        entry.encode(&mut out);
        assert_eq!(BackupEntry::decode_all(&out).unwrap(), vec![entry, entry]);
        assert!(BackupEntry::decode_all(&out[1..]).is_err());
        assert!(Manifest::decode(&bytes[..bytes.len() - 1]).is_err());
    }
}
