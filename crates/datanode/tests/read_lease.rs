//! The read lease in the deterministic simulation: a data node answers reads from its own
//! replicas only while every other member has recently echoed its heartbeats, so a node
//! removed while it was paused cannot hand out values older than acknowledged writes.

mod support;

use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_signal::NodeId;
use kista_storage::types::Value;
use support::{cluster_settings, counter_op, Executed, Node, ARBITRATOR};

use ExecuteMode::Commit;
use TransactionOutcome::{Aborted, Committed};

const MS: u64 = 1_000_000;

fn node_settings(node: NodeId) -> NodeSettings {
    let mut settings = NodeSettings::new(node);
    settings.heartbeat_interval_ms = 100;
    settings.heartbeat_misses_max = 3;
    settings.arbitration_timeout_ms = 1_000;
    settings
}

fn cluster_with_counters(seed: u64) -> (Node, (u32, u32)) {
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, node_settings), 16 << 20, seed);
    let table = cluster.create_counters();
    (cluster, table)
}

fn write(cluster: &mut Node, table: (u32, u32), tx: u64, key: i64, value: i64) {
    let op = counter_op(OperationKind::Write, key, value);
    let done = cluster.execute(tx, table, vec![op], Commit);
    assert_eq!(done.outcome, Committed, "{}", done.message);
}

fn read(cluster: &mut Node, table: (u32, u32), tx: u64, key: i64) -> Executed {
    let op = counter_op(OperationKind::Read, key, 0);
    cluster.execute(tx, table, vec![op], Commit)
}

#[test]
fn every_node_serves_reads_as_soon_as_the_cluster_has_started() {
    let (mut cluster, table) = cluster_with_counters(5);
    write(&mut cluster, table, 1, 7, 70);
    for (tx, via) in [(2, 1), (3, 2)] {
        cluster.use_node(NodeId(via));
        let done = read(&mut cluster, table, tx, 7);
        assert_eq!(done.outcome, Committed, "via node {via}: {}", done.message);
        assert_eq!(done.rows[0].1[1], Value::Int(70));
    }
}

#[test]
fn a_node_removed_while_paused_answers_no_read_from_its_stale_replica_when_it_wakes() {
    let (mut cluster, table) = cluster_with_counters(6);
    cluster.use_node(NodeId(1));
    write(&mut cluster, table, 1, 7, 70);
    cluster.simulation.pause(NodeId(2));
    cluster.run_for_ms(1_000);
    // Node 1 removed node 2 and goes on alone: this write never reaches node 2.
    write(&mut cluster, table, 2, 7, 71);

    // A client still connected to node 2 asks it; node 2 sees the request when it wakes,
    // still believing itself a member. (Its link to the arbitrator is cut, so that it
    // cannot lose arbitration, and stop, before it answers.)
    cluster.simulation.cut(NodeId(2), ARBITRATOR.node());
    cluster.use_node(NodeId(2));
    let op = counter_op(OperationKind::Read, 7, 0);
    cluster.send_batch(3, table, vec![op], Commit);
    cluster.simulation.resume(NodeId(2));
    let answer = cluster
        .batch_result(3, cluster.now_ns() + 1_000 * MS)
        .expect("node 2 answers");
    assert_eq!(answer.outcome, Aborted, "rows: {:?}", answer.rows);
    assert_eq!(
        ErrorCode::from_u32(answer.code),
        Some(ErrorCode::ReadLeaseLapsed)
    );
    assert!(answer.rows.is_empty(), "no stale row: {:?}", answer.rows);

    // Node 1, alone in its membership, needs no one's echo.
    cluster.use_node(NodeId(1));
    let done = read(&mut cluster, table, 4, 7);
    assert_eq!(done.rows[0].1[1], Value::Int(71));
    cluster.run_for_ms(3_000);
    assert_eq!(cluster.stopped(), [2], "the woken node stops itself");
}
