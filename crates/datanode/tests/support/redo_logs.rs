//! Reading a data node's REDO logs back from its simulated disk and replaying them, for
//! tests of what the logs hold (rows of the `counters` table).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use kista_runtime::io::SimulatedDisk;
use kista_storage::checkpoint::{self, CheckpointEntry, CheckpointSummary};
use kista_storage::redo::{LogRing, LogScan, Record, ScanStep, RECORD_BYTES_MAX};
use kista_storage::row::RowLayout;
use kista_storage::types::Value;

use super::counters;

/// One record read back.
#[derive(Clone, Debug)]
pub struct Entry {
    pub gci: u64,
    pub life: u32,
    pub record: Logged,
}

#[derive(Clone, Debug)]
pub enum Logged {
    /// A `counters` row written whole: (id, value).
    Write(i64, i64),
    /// A `counters` row deleted, by id.
    Delete(i64),
    GciDone,
}

/// Every record of one `ldm`'s log on `disk`, in order, up to the first it cannot trust.
pub fn read_log(disk: &SimulatedDisk, ring: LogRing, ldm: u16) -> Vec<Entry> {
    read_log_from(disk, ring, ldm, 0)
}

/// The records of one `ldm`'s log from the one at `lsn` on, up to the first it cannot
/// trust.
pub fn read_log_from(disk: &SimulatedDisk, ring: LogRing, ldm: u16, lsn: u64) -> Vec<Entry> {
    let files: Vec<Vec<u8>> = (0..ring.files)
        .map(|file| {
            let path = format!("redo/ldm-{ldm}/{file:02}.log");
            let contents = disk
                .contents(Path::new(&path))
                .expect("the log's file exists");
            assert_eq!(contents.len() as u64, ring.file_bytes, "allocated whole");
            contents
        })
        .collect();
    let layout = RowLayout::new(&counters());
    let mut scan = LogScan::new(ring, lsn, 1);
    let mut chunk_lsn = lsn;
    let mut entries = Vec::new();
    // A delete names its row by key: the key of a row written earlier in the log.
    let mut ids = HashMap::new();
    loop {
        let file = &files[ring.file_of(chunk_lsn) as usize];
        let start = ring.offset_of(chunk_lsn) as usize;
        let chunk = &file[start..(start + RECORD_BYTES_MAX).min(file.len())];
        match scan.next(chunk, chunk_lsn) {
            ScanStep::Record(decoded) => {
                let record = match decoded.record {
                    Record::WriteRow { fixed, var, .. } => {
                        let values = layout.values(fixed, var);
                        let mut key = Vec::new();
                        layout.primary_key_of_row(fixed, var, &mut key);
                        ids.insert(key, int(&values[0]));
                        Logged::Write(int(&values[0]), int(&values[1]))
                    }
                    Record::DeleteRow { key, .. } => {
                        Logged::Delete(*ids.get(key).expect("a row is written before its delete"))
                    }
                    Record::GciDone => Logged::GciDone,
                    Record::FileEnd
                    | Record::CheckpointDone { .. }
                    | Record::CheckpointStart { .. }
                    | Record::CheckpointPartition { .. }
                    | Record::WriteRows { .. } => continue,
                };
                let (gci, life) = (decoded.stamp.gci, decoded.stamp.life);
                entries.push(Entry { gci, life, record });
            }
            ScanStep::Read(lsn) => chunk_lsn = lsn,
            ScanStep::End(_) => return entries,
        }
    }
}

fn int(value: &Value) -> i64 {
    match value {
        Value::Int(int) => *int,
        other => panic!("a counters column: {other:?}"),
    }
}

/// The GCIs every log of `logs` marks done.
pub fn marked_in_all(logs: &[Vec<Entry>]) -> Vec<u64> {
    let marked = |log: &Vec<Entry>| -> Vec<u64> {
        log.iter()
            .filter(|e| matches!(e.record, Logged::GciDone))
            .map(|e| e.gci)
            .collect()
    };
    let Some((first, rest)) = logs.split_first() else {
        return Vec::new();
    };
    marked(first)
        .into_iter()
        .filter(|gci| rest.iter().all(|log| marked(log).contains(gci)))
        .collect()
}

/// The rows the logs give restored to `gci`: each log's records of `gci` and below up to
/// its mark of `gci` (which must be there), in order.
pub fn restored(logs: &[Vec<Entry>], gci: u64) -> BTreeMap<i64, i64> {
    let mut rows = BTreeMap::new();
    for log in logs {
        let mark = log
            .iter()
            .position(|e| matches!(e.record, Logged::GciDone) && e.gci == gci)
            .unwrap_or_else(|| panic!("GCI {gci} is marked in every log"));
        for entry in log[..mark].iter().filter(|e| e.gci <= gci) {
            replay(&mut rows, entry);
        }
    }
    rows
}

/// Applies one record to `rows` (id → value).
pub fn replay(rows: &mut BTreeMap<i64, i64>, entry: &Entry) {
    match entry.record {
        Logged::Write(id, value) => {
            rows.insert(id, value);
        }
        Logged::Delete(id) => {
            rows.remove(&id);
        }
        Logged::GciDone => {}
    }
}

/// One entry of a checkpoint file of the `counters` table.
#[derive(Clone, Debug)]
pub enum Saved {
    /// The partition's entries follow; when `whole`, its rows are all it holds.
    Partition {
        partition: u32,
        whole: bool,
    },
    Write {
        partition: u32,
        key: Vec<u8>,
        id: i64,
        value: i64,
    },
    Delete {
        partition: u32,
        key: Vec<u8>,
    },
}

/// The local checkpoint in one of an `ldm`'s checkpoint files: what it says of itself and
/// its entries, or `None` if the file is missing or holds no complete one.
pub fn read_checkpoint(
    disk: &SimulatedDisk,
    ldm: u16,
    slot: u32,
) -> Option<(CheckpointSummary, Vec<Saved>)> {
    let file = disk.contents(Path::new(&format!("lcp/ldm-{ldm}/{slot}.ckpt")))?;
    let layout = RowLayout::new(&counters());
    let mut entries = Vec::new();
    let summary = checkpoint::read_file(&file, |entry| {
        entries.push(match entry {
            CheckpointEntry::Partition { place, whole } => Saved::Partition {
                partition: place.partition,
                whole,
            },
            CheckpointEntry::Row {
                place, fixed, var, ..
            } => {
                let values = layout.values(fixed, var);
                let mut key = Vec::new();
                layout.primary_key_of_row(fixed, var, &mut key);
                Saved::Write {
                    partition: place.partition,
                    key,
                    id: int(&values[0]),
                    value: int(&values[1]),
                }
            }
            CheckpointEntry::Delete { place, key, .. } => Saved::Delete {
                partition: place.partition,
                key: key.to_vec(),
            },
        })
    })
    .ok()?;
    Some((summary, entries))
}

/// One `ldm`'s rows restored to `gci` as a restart would: the chain of its newest complete
/// checkpoint that needs no later GCI (every file of the chain complete), then its REDO
/// log from that checkpoint's start, the changes of `gci` and below. Returns the
/// checkpoint used too (`None`: the log from its start).
pub fn restore_ldm(
    disk: &SimulatedDisk,
    ring: LogRing,
    ldm: u16,
    gci: u64,
) -> (Option<CheckpointSummary>, BTreeMap<i64, i64>) {
    let complete: BTreeMap<u64, (CheckpointSummary, Vec<Saved>)> = (0
        ..checkpoint::CHECKPOINT_FILES)
        .filter_map(|slot| read_checkpoint(disk, ldm, slot))
        .map(|(summary, entries)| (summary.id, (summary, entries)))
        .collect();
    let newest = complete.values().rev().find(|(summary, _)| {
        summary.max_gci <= gci
            && (summary.chain_start..=summary.id).all(|id| complete.contains_key(&id))
    });
    let mut saved = BTreeMap::new();
    let (summary, redo_lsn) = match newest {
        Some((summary, _)) => {
            for id in summary.chain_start..=summary.id {
                apply_checkpoint(&mut saved, &complete[&id].1);
            }
            (Some(*summary), summary.redo_lsn)
        }
        None => (None, 0),
    };
    let mut rows: BTreeMap<i64, i64> = saved.into_values().collect();
    for entry in read_log_from(disk, ring, ldm, redo_lsn) {
        if entry.gci <= gci {
            replay(&mut rows, &entry);
        }
    }
    (summary, rows)
}

/// Applies one checkpoint file's entries to `saved` ((partition, key) → (id, value)).
fn apply_checkpoint(saved: &mut BTreeMap<(u32, Vec<u8>), (i64, i64)>, entries: &[Saved]) {
    for entry in entries {
        match entry {
            Saved::Partition {
                partition,
                whole: true,
            } => saved.retain(|(p, _), _| p != partition),
            Saved::Partition { .. } => {}
            Saved::Write {
                partition,
                key,
                id,
                value,
            } => {
                saved.insert((*partition, key.clone()), (*id, *value));
            }
            Saved::Delete { partition, key } => {
                saved.remove(&(*partition, key.clone()));
            }
        }
    }
}
