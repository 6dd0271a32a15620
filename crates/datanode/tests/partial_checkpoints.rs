//! Partial local checkpoints in the deterministic simulation: a checkpoint writes the rows
//! changed and the keys deleted since the one before, and a rotating share of the rest;
//! a start from disk reads the chain of files and restores every row, never one deleted.
//!
//! The workload: `STABLE_ROWS` rows written once, then a few updated and deleted, beside a
//! ballast of rows rewritten round after round so the log fills and checkpoints run.

mod support;

use std::collections::BTreeMap;

use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_runtime::io::SimulatedDisk;
use kista_signal::NodeId;
use kista_storage::checkpoint::{CheckpointSummary, CHECKPOINT_FILES, ROTATION_CHECKPOINTS};
use support::disk_cluster::{node_settings, rows_through, LDM_INSTANCES, MEMORY_BYTES};
use support::redo_logs::{read_checkpoint, Saved};
use support::{cluster_settings, counter_op, Node};

const STABLE_ROWS: i64 = 2_000;
const UPDATED: std::ops::Range<i64> = 0..40;
const DELETED: std::ops::Range<i64> = 100..140;
const BALLAST_FIRST_ROW: i64 = 1_000_000;
const BALLAST_ROWS: i64 = 300;

struct Workload {
    table: (u32, u32),
    client_tx: u64,
    ballast_batch: i64,
    /// The stable rows as acknowledged.
    stable: BTreeMap<i64, i64>,
}

impl Workload {
    /// Creates the table and writes the stable rows (value 1).
    fn new(cluster: &mut Node) -> Self {
        let mut workload = Self {
            table: cluster.create_counters(),
            client_tx: 1,
            ballast_batch: 0,
            stable: BTreeMap::new(),
        };
        for first in (0..STABLE_ROWS).step_by(200) {
            workload.write(cluster, (first..first + 200).map(|id| (id, Some(1))));
        }
        workload
    }

    /// Writes (`Some(value)`) or deletes (`None`) rows in one transaction.
    fn write(&mut self, cluster: &mut Node, rows: impl Iterator<Item = (i64, Option<i64>)>) {
        let mut ops = Vec::new();
        for (id, value) in rows {
            match value {
                Some(value) => ops.push(counter_op(OperationKind::Write, id, value)),
                None => ops.push(counter_op(OperationKind::Delete, id, 0)),
            }
            if id < BALLAST_FIRST_ROW {
                match value {
                    Some(value) => self.stable.insert(id, value),
                    None => self.stable.remove(&id),
                };
            }
        }
        let executed = cluster.execute(self.client_tx, self.table, ops, ExecuteMode::Commit);
        self.client_tx += 1;
        assert_eq!(executed.outcome, TransactionOutcome::Committed);
    }

    /// Rewrites the ballast until every `ldm` of `node` completed `more` checkpoints.
    fn until_checkpoints(&mut self, cluster: &mut Node, node: NodeId, more: u64) {
        let newest = |cluster: &Node| newest_ids(&cluster.disks[&node]);
        let from = newest(cluster);
        while newest(cluster)
            .iter()
            .zip(&from)
            .any(|(now, was)| *now < was + more)
        {
            self.ballast_batch += 1;
            let batch = self.ballast_batch;
            let rows = (0..BALLAST_ROWS).map(|row| (BALLAST_FIRST_ROW + row, Some(batch)));
            self.write(cluster, rows);
            cluster.run_for_ms(2);
        }
    }

    /// After a start from disk, every replica holds the stable rows as acknowledged and
    /// every ballast row from one batch.
    fn check_restored(&self, cluster: &mut Node) {
        for (scan, node) in [NodeId(1), NodeId(2)].into_iter().enumerate() {
            let mut rows = rows_through(cluster, node, self.table, scan as u64 + 1);
            let ballast = rows.split_off(&BALLAST_FIRST_ROW);
            let wrong: Vec<_> = (0..STABLE_ROWS)
                .filter(|id| rows.get(id) != self.stable.get(id))
                .map(|id| (id, rows.get(&id), self.stable.get(&id)))
                .collect();
            assert!(
                wrong.is_empty(),
                "{node:?}: (id, restored, acknowledged) {wrong:?}"
            );
            assert_eq!(rows.len(), self.stable.len());
            let batches: Vec<i64> = ballast.values().copied().collect();
            assert_eq!(batches.len(), BALLAST_ROWS as usize, "{node:?}");
            assert!(batches.iter().all(|b| *b == batches[0]), "{node:?}");
        }
    }
}

/// Each `ldm`'s newest complete checkpoint id on `disk` (0: none yet).
fn newest_ids(disk: &SimulatedDisk) -> Vec<u64> {
    (0..LDM_INSTANCES)
        .map(|ldm| {
            let ids = (0..CHECKPOINT_FILES).filter_map(|slot| read_checkpoint(disk, ldm, slot));
            ids.map(|(summary, _)| summary.id).max().unwrap_or(0)
        })
        .collect()
}

/// The newest complete checkpoint of one `ldm` and the entries of its chain's files,
/// oldest first.
fn newest_chain(disk: &SimulatedDisk, ldm: u16) -> (CheckpointSummary, Vec<Vec<Saved>>) {
    let mut files: BTreeMap<u64, (CheckpointSummary, Vec<Saved>)> = (0..CHECKPOINT_FILES)
        .filter_map(|slot| read_checkpoint(disk, ldm, slot))
        .map(|(summary, entries)| (summary.id, (summary, entries)))
        .collect();
    let (&newest, _) = files.last_key_value().expect("a complete checkpoint");
    let summary = files[&newest].0;
    let chain = (summary.chain_start..=summary.id)
        .map(|id| files.remove(&id).expect("the chain's files are complete").1)
        .collect();
    (summary, chain)
}

fn stable_id(entry: &Saved) -> Option<i64> {
    match entry {
        Saved::Write { id, .. } if *id < BALLAST_FIRST_ROW => Some(*id),
        _ => None,
    }
}

fn crash_and_start_again(cluster: &mut Node) {
    for node in [NodeId(1), NodeId(2)] {
        cluster.simulation.crash(node);
    }
    cluster.start_again(MEMORY_BYTES);
}

#[test]
fn a_partial_checkpoint_writes_what_changed_and_a_share_and_its_chain_restores_every_row() {
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, node_settings), MEMORY_BYTES, 21);
    cluster.run_for_ms(200);
    let mut workload = Workload::new(&mut cluster);
    workload.until_checkpoints(&mut cluster, NodeId(1), ROTATION_CHECKPOINTS + 1);
    workload.write(&mut cluster, UPDATED.map(|id| (id, Some(2))));
    workload.write(&mut cluster, DELETED.map(|id| (id, None)));
    workload.until_checkpoints(&mut cluster, NodeId(1), 2);

    let disk = &cluster.disks[&NodeId(1)];
    let mut deleted_in_an_earlier_file = 0;
    for ldm in 0..LDM_INSTANCES {
        let (newest, chain) = newest_chain(disk, ldm);
        assert_eq!(chain.len() as u64, ROTATION_CHECKPOINTS, "{newest:?}");
        // The newest wrote its share of the stable rows and the updated ones, no more.
        let stable: Vec<i64> = chain[chain.len() - 1]
            .iter()
            .filter_map(stable_id)
            .collect();
        let held = STABLE_ROWS as usize / usize::from(LDM_INSTANCES);
        assert!(
            stable.len() < held / 2 && !stable.is_empty(),
            "ldm {ldm}: checkpoint {} wrote {} stable rows of about {held}",
            newest.id,
            stable.len()
        );
        // A deleted row an earlier file of the chain holds is deleted by a later one.
        for (at, file) in chain.iter().enumerate() {
            let deleted_later = |key: &Vec<u8>| {
                chain[at + 1..].iter().flatten().any(
                    |later| matches!(later, Saved::Delete { key: deleted, .. } if deleted == key),
                )
            };
            deleted_in_an_earlier_file += file
                .iter()
                .filter(|entry| stable_id(entry).is_some_and(|id| DELETED.contains(&id)))
                .filter(|entry| matches!(entry, Saved::Write { key, .. } if deleted_later(key)))
                .count();
        }
    }
    assert!(
        deleted_in_an_earlier_file > 0,
        "the chain holds rows deleted later: the deletes it holds have teeth"
    );

    crash_and_start_again(&mut cluster);
    workload.check_restored(&mut cluster);
}

/// The disk cluster's settings with room for about one deleted key per partition.
fn few_deleted_keys(node: NodeId) -> NodeSettings {
    NodeSettings {
        deleted_keys_per_partition_bytes_max: 64,
        ..node_settings(node)
    }
}

#[test]
fn a_partition_that_forgot_deletes_is_written_whole_by_the_next_checkpoint() {
    let settings = cluster_settings(2, 2, few_deleted_keys);
    let mut cluster = Node::start_cluster(settings, MEMORY_BYTES, 22);
    cluster.run_for_ms(200);
    let mut workload = Workload::new(&mut cluster);
    workload.until_checkpoints(&mut cluster, NodeId(1), 2);
    workload.write(&mut cluster, DELETED.map(|id| (id, None)));
    workload.until_checkpoints(&mut cluster, NodeId(1), 1);

    let disk = &cluster.disks[&NodeId(1)];
    for ldm in 0..LDM_INSTANCES {
        let (newest, chain) = newest_chain(disk, ldm);
        let partial_with_whole_sections = chain.iter().skip(1).any(|file| {
            file.iter()
                .any(|entry| matches!(entry, Saved::Partition { whole: true, .. }))
        });
        assert!(
            partial_with_whole_sections,
            "ldm {ldm}: a checkpoint after the deletes wrote a partition whole: {newest:?}"
        );
    }

    crash_and_start_again(&mut cluster);
    workload.check_restored(&mut cluster);
}
