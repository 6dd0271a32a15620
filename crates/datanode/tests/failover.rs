//! Failover in the deterministic simulation: when a data node crashes under a write load,
//! the survivors' coordinators finish or abort what it touched, the president takes over
//! the transactions it coordinated, backups become primaries, and no acknowledged write is
//! lost or left locked.

mod support;

use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_signal::NodeId;
use kista_storage::types::Value;
use support::{cluster_settings, counter_op, Node};

use ExecuteMode::Commit;
use TransactionOutcome::{Aborted, Committed};

const MS: u64 = 1_000_000;

fn node_settings(node: NodeId) -> NodeSettings {
    let mut settings = NodeSettings::new(node);
    settings.ldm_instances = 2;
    settings.heartbeat_interval_ms = 100;
    settings.lock_wait_timeout_ms = 300;
    settings
}

fn cluster_with_counters(nodes: u8, seed: u64) -> (Node, (u32, u32)) {
    let mut cluster =
        Node::start_cluster(cluster_settings(nodes, 2, node_settings), 32 << 20, seed);
    let table = cluster.create_counters();
    (cluster, table)
}

fn value_of(cluster: &mut Node, table: (u32, u32), tx: u64, id: i64) -> Option<i64> {
    let done = cluster.execute(
        tx,
        table,
        vec![counter_op(OperationKind::Read, id, 0)],
        Commit,
    );
    assert_eq!(done.outcome, Committed, "{}", done.message);
    done.rows.first().map(|(_, row)| match row[1] {
        Value::Int(value) => value,
        ref other => panic!("{other:?}"),
    })
}

/// Sends `count` one-row writes (key `i` gets `round * 1000 + i`) without waiting, through
/// `via`; returns their client transaction numbers.
fn send_writes(
    cluster: &mut Node,
    table: (u32, u32),
    via: NodeId,
    round: i64,
    count: i64,
) -> Vec<(u64, i64)> {
    cluster.use_node(via);
    (0..count)
        .map(|id| {
            let tx = (round as u64) << 32 | id as u64;
            let kind = if round == 0 {
                OperationKind::Insert
            } else {
                OperationKind::Update
            };
            cluster.send_batch(
                tx,
                table,
                vec![counter_op(kind, id, round * 1000 + id)],
                Commit,
            );
            (tx, id)
        })
        .collect()
}

#[test]
fn a_backup_crashing_mid_load_loses_no_acknowledged_write_and_leaves_nothing_locked() {
    for seed in 0..12 {
        let (mut cluster, table) = cluster_with_counters(2, 100 + seed);
        let rows = 40;
        for (tx, _) in send_writes(&mut cluster, table, NodeId(1), 0, rows) {
            let done = cluster.batch_result(tx, u64::MAX).expect("answered");
            assert_eq!(done.outcome, Committed);
        }
        // Updates in flight through node 1 while node 2 crashes after a seed-chosen delay.
        let sent = send_writes(&mut cluster, table, NodeId(1), 1, rows);
        let crash_at = cluster.now_ns() + seed * 15_000;
        cluster.simulation.run_until(crash_at);
        cluster.simulation.crash(NodeId(2));
        let mut expected = Vec::new();
        for (tx, id) in sent {
            let done = cluster
                .batch_result(tx, cluster.now_ns() + 3_000 * MS)
                .unwrap_or_else(|| panic!("seed {seed}: transaction {id} got no answer"));
            match done.outcome {
                Committed => expected.push((id, 1000 + id)),
                Aborted => {
                    assert_eq!(done.code, ErrorCode::NodeFailure as u32, "{}", done.message);
                    expected.push((id, id));
                }
                other => panic!("{other:?}"),
            }
        }
        cluster.use_node(NodeId(1));
        for (id, value) in expected {
            let read = value_of(&mut cluster, table, 9_000 + id as u64, id);
            assert_eq!(read, Some(value), "seed {seed}: row {id}");
        }
        // Once the failure is handled, nothing is left locked: every row takes a new write
        // at once, on node 1 alone.
        cluster.run_for_ms(1_000);
        for (tx, _) in send_writes(&mut cluster, table, NodeId(1), 2, rows) {
            let done = cluster.batch_result(tx, u64::MAX).expect("answered");
            assert_eq!(done.outcome, Committed, "seed {seed}: {}", done.message);
        }
    }
}

#[test]
fn the_president_takes_over_a_crashed_coordinators_transactions() {
    for seed in 0..12 {
        let (mut cluster, table) = cluster_with_counters(2, 200 + seed);
        let rows = 40;
        for (tx, _) in send_writes(&mut cluster, table, NodeId(1), 0, rows) {
            assert_eq!(
                cluster.batch_result(tx, u64::MAX).unwrap().outcome,
                Committed
            );
        }
        // Updates coordinated by node 2, which crashes with them in flight.
        let sent = send_writes(&mut cluster, table, NodeId(2), 1, rows);
        let crash_at = cluster.now_ns() + seed * 15_000;
        cluster.simulation.run_until(crash_at);
        let mut acknowledged = Vec::new();
        for (tx, id) in &sent {
            if let Some(done) = cluster.batch_result(*tx, crash_at) {
                if done.outcome == Committed {
                    acknowledged.push(*id);
                }
            }
        }
        cluster.simulation.crash(NodeId(2));
        cluster.run_for_ms(2_000);
        // Each update happened entirely or not at all, and every acknowledged one did.
        cluster.use_node(NodeId(1));
        for id in 0..rows {
            let value = value_of(&mut cluster, table, 9_000 + id as u64, id);
            assert!(
                value == Some(id) || value == Some(1000 + id),
                "seed {seed}: row {id} is {value:?}"
            );
            if acknowledged.contains(&id) {
                assert_eq!(value, Some(1000 + id), "seed {seed}: acknowledged row {id}");
            }
        }
        // The takeover freed every lock.
        for (tx, _) in send_writes(&mut cluster, table, NodeId(1), 2, rows) {
            let done = cluster.batch_result(tx, u64::MAX).expect("answered");
            assert_eq!(done.outcome, Committed, "seed {seed}: {}", done.message);
        }
    }
}

#[test]
fn a_node_failure_during_a_scan_fails_the_scan_with_a_retryable_error() {
    let (mut cluster, table) = cluster_with_counters(4, 300);
    for (tx, _) in send_writes(&mut cluster, table, NodeId(1), 0, 40) {
        assert_eq!(
            cluster.batch_result(tx, u64::MAX).unwrap().outcome,
            Committed
        );
    }
    // Node 1 reads the other group's partitions on their primaries, nodes 3 and 4.
    cluster.simulation.pause(NodeId(3));
    cluster.use_node(NodeId(1));
    let spec = support::ScanSpec::every_row(table, 4);
    let scanned = cluster.scan(1, &spec, None);
    assert_eq!(
        scanned.code,
        ErrorCode::NodeFailure as u32,
        "{}",
        scanned.message
    );
    // The next scan reads node 3's partitions on node 4, their primary now.
    let scanned = cluster.scan(2, &spec, None);
    assert_eq!(scanned.code, 0, "{}", scanned.message);
    assert_eq!(scanned.rows().len(), 40);
}

#[test]
fn a_write_aborted_by_a_node_failure_while_on_its_way_along_the_chain_leaves_no_lock() {
    // Three replicas. Transaction A holds a row's lock on every replica; B's write of the
    // row waits for it at the primary (node 2). Node 1 fails: both abort. A's abort lets
    // B's write go on along the chain to node 3 just as B's own abort arrives there; the
    // row must be free afterwards whichever comes first.
    for seed in 0..40 {
        let mut cluster =
            Node::start_cluster(cluster_settings(3, 3, node_settings), 32 << 20, 500 + seed);
        let table = cluster.create_counters();
        let shape = cluster.settings.cluster_shape().unwrap();
        let map = kista_datanode::dist::PartitionMap::for_cluster(2 * 3, &shape);
        let id = (0..1000)
            .find(|&id| {
                let key = support::primary_key(&support::counters(), &[Value::Int(id)]);
                let chain = map.chain(map.partition_of(&key));
                chain.current().node() == NodeId(2) && chain.replicas[1].node() == NodeId(3)
            })
            .expect("a row whose chain runs from node 2 to node 3");
        cluster.use_node(NodeId(2));
        let write = |value| vec![counter_op(OperationKind::Write, id, value)];
        cluster.send_batch(1, table, write(1), ExecuteMode::NoCommit);
        let held = cluster.batch_result(1, u64::MAX).unwrap();
        assert_eq!(held.outcome, TransactionOutcome::Open);
        cluster.use_node(NodeId(3));
        cluster.send_batch(2, table, write(2), Commit);
        cluster.run_for_ms(5);
        cluster.simulation.crash(NodeId(1));
        cluster.run_for_ms(2_000);
        assert_eq!(cluster.batch_result(2, u64::MAX).unwrap().outcome, Aborted);
        let after = cluster.execute(3, table, write(3), Commit);
        assert_eq!(after.outcome, Committed, "seed {seed}: {}", after.message);
    }
}
