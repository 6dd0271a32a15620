//! The REDO log in the deterministic simulation: every replica logs each change it commits,
//! and its log, read back from its disk and replayed in order, gives the committed rows.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_runtime::io::SimulatedDisk;
use kista_signal::NodeId;
use kista_storage::redo::{LogRing, LogScan, Record, ScanStep, RECORD_BYTES_MAX};
use kista_storage::row::RowLayout;
use kista_storage::types::Value;
use support::{cluster_settings, counter_op, counters, Node};

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

/// Every record of one `ldm`'s log on `disk`, in order: (gci, life, record as owned rows).
fn read_log(disk: &SimulatedDisk, ldm: u16) -> Vec<(u64, u32, Logged)> {
    let ring = ring();
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
    let mut scan = LogScan::new(ring, 0, 1);
    let mut chunk_lsn = 0;
    let mut records = Vec::new();
    loop {
        let file = &files[ring.file_of(chunk_lsn) as usize];
        let start = ring.offset_of(chunk_lsn) as usize;
        let chunk = &file[start..(start + RECORD_BYTES_MAX).min(file.len())];
        match scan.next(chunk, chunk_lsn) {
            ScanStep::Record(decoded) => records.push((
                decoded.stamp.gci,
                decoded.stamp.life,
                Logged::of(&decoded.record),
            )),
            ScanStep::Read(lsn) => chunk_lsn = lsn,
            ScanStep::End(_) => return records,
        }
    }
}

#[derive(Debug)]
enum Logged {
    Write(Vec<Value>),
    Delete(Vec<u8>),
    Other,
}

impl Logged {
    fn of(record: &Record<'_>) -> Self {
        let layout = RowLayout::new(&counters());
        match *record {
            Record::WriteRow { fixed, var, .. } => Logged::Write(layout.values(fixed, var)),
            Record::DeleteRow { key, .. } => Logged::Delete(key.to_vec()),
            _ => Logged::Other,
        }
    }
}

/// The rows a node's logs give when replayed in order: id → value.
fn replayed(disk: &SimulatedDisk) -> BTreeMap<i64, i64> {
    let layout = RowLayout::new(&counters());
    let mut rows = BTreeMap::new();
    let mut keys = BTreeMap::new();
    for ldm in 0..LDM_INSTANCES {
        for (gci, life, logged) in read_log(disk, ldm) {
            assert_eq!((gci, life), (1, 1), "the first GCI of the first life");
            match logged {
                Logged::Write(values) => {
                    let (Value::Int(id), Value::Int(value)) = (&values[0], &values[1]) else {
                        panic!("a counters row: {values:?}");
                    };
                    let mut key = Vec::new();
                    layout
                        .primary_key_of_values(&values[..1], &mut key)
                        .unwrap();
                    keys.insert(key, *id);
                    rows.insert(*id, *value);
                }
                Logged::Delete(key) => {
                    let id = keys.get(&key).expect("a row is written before its delete");
                    rows.remove(id);
                }
                Logged::Other => {}
            }
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
    cluster.run_for_ms(100);
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
    let table = cluster.create_counters();
    cluster.send_batch(
        1,
        table,
        vec![counter_op(OperationKind::Insert, 1, 1)],
        ExecuteMode::Commit,
    );
    let result = cluster.batch_result(1, u64::MAX).expect("an answer");
    assert_eq!(result.outcome, TransactionOutcome::Committed);
}
