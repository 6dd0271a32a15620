//! The REDO log in the deterministic simulation: every replica logs each change it commits,
//! and its log, read back from its disk and replayed in order, gives the committed rows.

mod support;

use std::collections::BTreeMap;

use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_runtime::io::SimulatedDisk;
use kista_signal::NodeId;
use kista_storage::redo::LogRing;
use support::redo_logs::{read_log, replay};
use support::{cluster_settings, counter_op, Node};

const LDM_INSTANCES: u16 = 2;
const REDO_LOG_BYTES: u64 = 16 << 20;

fn node_settings(node: NodeId) -> NodeSettings {
    let mut settings = NodeSettings::new(node);
    settings.ldm_instances = LDM_INSTANCES;
    settings.redo_log_bytes = REDO_LOG_BYTES;
    settings
}

/// The ring each log of these nodes is (as `ldm/redo.rs` lays it out).
fn ring() -> LogRing {
    LogRing {
        file_bytes: REDO_LOG_BYTES / u64::from(LDM_INSTANCES) / 4,
        files: 4,
    }
}

/// The rows a node's logs give when replayed in order, every record of the first life.
fn replayed(disk: &SimulatedDisk) -> BTreeMap<i64, i64> {
    let mut rows = BTreeMap::new();
    for ldm in 0..LDM_INSTANCES {
        for entry in read_log(disk, ring(), ldm) {
            assert_eq!(entry.life, 1, "the first life");
            replay(&mut rows, &entry);
        }
    }
    rows
}

#[test]
fn every_replica_logs_each_committed_change_and_its_log_replays_to_the_committed_rows() {
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, node_settings), 16 << 20, 41);
    cluster.run_for_ms(200);
    let table = cluster.create_counters();
    let mut expected = BTreeMap::new();
    let mut client_tx = 1;
    let mut run = |cluster: &mut Node, ops: Vec<(OperationKind, i64, i64)>, commit: bool| {
        let batch = ops
            .iter()
            .map(|&(kind, id, value)| counter_op(kind, id, value));
        let mode = if commit {
            ExecuteMode::Commit
        } else {
            ExecuteMode::Rollback
        };
        cluster.send_batch(client_tx, table, batch.collect(), mode);
        let result = cluster
            .batch_result(client_tx, u64::MAX)
            .expect("an answer");
        client_tx += 1;
        result.outcome
    };
    for id in 0..40 {
        let outcome = run(
            &mut cluster,
            vec![(OperationKind::Insert, id, id * 10)],
            true,
        );
        assert_eq!(outcome, TransactionOutcome::Committed);
        expected.insert(id, id * 10);
    }
    // Transactions of several rows across partitions: updates, writes, deletes.
    for round in 0..10i64 {
        let ops = vec![
            (OperationKind::Update, round, 1000 + round),
            (OperationKind::Write, 100 + round, round),
            (OperationKind::Delete, 20 + round, 0),
        ];
        assert_eq!(run(&mut cluster, ops, true), TransactionOutcome::Committed);
        expected.insert(round, 1000 + round);
        expected.insert(100 + round, round);
        expected.remove(&(20 + round));
    }
    // A rolled-back transaction logs nothing.
    let outcome = run(&mut cluster, vec![(OperationKind::Insert, 500, 5)], false);
    assert_eq!(outcome, TransactionOutcome::Aborted);
    // A log writes once it gathered 64 KiB or a global checkpoint marks its GCI done:
    // these few changes reach the disk with the next one.
    cluster.run_for_ms(1_500);
    for node in [NodeId(1), NodeId(2)] {
        assert_eq!(replayed(&cluster.disks[&node]), expected, "node {node:?}");
    }
}

#[test]
fn a_node_whose_disk_cannot_hold_its_log_stops_naming_the_file_and_the_cluster_goes_on() {
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, node_settings), 16 << 20, 42);
    cluster.disks[&NodeId(2)].set_capacity(Some(1 << 20));
    cluster.run_for_ms(3_000);
    assert_eq!(cluster.stopped(), [2]);
    let (_, reason) = &cluster.simulation.stopped_nodes()[0];
    assert!(
        reason.contains("REDO log file redo/ldm-") && reason.contains("NoSpace"),
        "{reason}"
    );
    // Once the cluster removed node 2 (a request racing that news may get error 4010):
    cluster.run_for_ms(5_000);
    let table = cluster.create_counters();
    cluster.send_batch(
        1,
        table,
        vec![counter_op(OperationKind::Insert, 1, 1)],
        ExecuteMode::Commit,
    );
    let result = cluster.batch_result(1, u64::MAX).expect("an answer");
    assert_eq!(
        result.outcome,
        TransactionOutcome::Committed,
        "{}",
        result.message
    );
}
