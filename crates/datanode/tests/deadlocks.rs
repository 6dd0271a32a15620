//! Deadlock detection in the deterministic simulation: cycles of lock waits, on one node and
//! across coordinators of two nodes, end at once with error 4261 for one transaction of the
//! cycle (its coordinator's youngest), whichever wait closed it, and the others go on; waits
//! that are no deadlock are left alone however long they last (and look again every
//! interval); with detection off the lock-wait timeout ends a deadlock.

mod support;

use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_signal::{NodeId, TypedSignal};
use support::{cluster_settings, counter_op, Executed, Node};

use ExecuteMode::{Commit, NoCommit};
use OperationKind::{Insert, Read, Update};
use TransactionOutcome::{Aborted, Committed, Open};

const MS: u64 = 1_000_000;
/// Rows 1..=ROWS exist with value 0.
const ROWS: i64 = 8;

fn settings(node: NodeId) -> NodeSettings {
    let mut settings = NodeSettings::new(node);
    settings.ldm_instances = 2;
    settings
}

/// A node (or cluster) with `counters` holding rows 1..=ROWS.
fn with_counters(mut node: Node) -> (Node, (u32, u32)) {
    let table = node.create_counters();
    let rows = (1..=ROWS).map(|id| counter_op(Insert, id, 0)).collect();
    assert_eq!(node.execute(1_000, table, rows, Commit).outcome, Committed);
    (node, table)
}

fn value_of(node: &mut Node, table: (u32, u32), client_tx: u64, id: i64) -> i64 {
    let read = node.execute(client_tx, table, vec![counter_op(Read, id, 0)], Commit);
    match read.rows[0].1[1] {
        kista_storage::types::Value::Int(value) => value,
        ref other => panic!("not an integer: {other:?}"),
    }
}

/// Each of `cycle`'s transactions (client_tx, row) takes its row's lock, in order; then each
/// asks for the next one's row, so the last request closes the cycle.
fn lock_in_a_cycle(node: &mut Node, table: (u32, u32), cycle: &[(u64, i64)]) {
    for &(client_tx, row) in cycle {
        let result = node.execute(client_tx, table, vec![counter_op(Update, row, 1)], NoCommit);
        assert_eq!(result.outcome, Open, "{}", result.message);
    }
    for (index, &(client_tx, _)) in cycle.iter().enumerate() {
        let next_row = cycle[(index + 1) % cycle.len()].1;
        node.send_batch(
            client_tx,
            table,
            vec![counter_op(Update, next_row, 2)],
            NoCommit,
        );
    }
}

/// The first transaction to abort, whichever it is, if one does before `until_ns`.
fn first_aborted(node: &mut Node, until_ns: u64) -> Option<ExecuteConf> {
    let (signal, _) = node.wait_for(until_ns, |s| {
        ExecuteConf::from_signal(s).is_ok_and(|c| c.outcome == Aborted)
    })?;
    ExecuteConf::from_signal(&signal).ok()
}

fn assert_deadlock_victim(result: &Executed) {
    assert_eq!(
        (result.outcome, result.code),
        (Aborted, ErrorCode::Deadlock as u32),
        "{}",
        result.message
    );
    assert!(result.message.contains("deadlock"), "{}", result.message);
}

#[test]
fn two_transactions_waiting_for_each_other_end_at_once_with_the_younger_aborted() {
    let (mut node, table) = with_counters(Node::start(settings(NodeId(1)), 1 << 24, 11));
    let started = node.now_ns();
    lock_in_a_cycle(&mut node, table, &[(1, 1), (2, 2)]);
    let victim = node
        .batch_result(2, started + 1_000 * MS)
        .expect("the deadlock ends before the lock wait timeout");
    assert_deadlock_victim(&victim);
    let waited_ms = (node.now_ns() - started) / MS;
    assert!(waited_ms < 10, "found after {waited_ms} ms");
    let survivor = node.batch_result(1, u64::MAX).expect("the other goes on");
    assert_eq!(survivor.outcome, Open, "{}", survivor.message);
    assert_eq!(node.execute(1, table, vec![], Commit).outcome, Committed);
    assert_eq!(value_of(&mut node, table, 3, 1), 1);
    assert_eq!(value_of(&mut node, table, 4, 2), 2, "the survivor's write");
}

#[test]
fn a_cycle_of_three_has_one_victim_and_the_others_commit() {
    let (mut node, table) = with_counters(Node::start(settings(NodeId(1)), 1 << 24, 12));
    lock_in_a_cycle(&mut node, table, &[(1, 1), (2, 2), (3, 3)]);
    let victim = node.batch_result(3, u64::MAX).expect("answered");
    assert_deadlock_victim(&victim);
    for client_tx in [2, 1] {
        let result = node.batch_result(client_tx, u64::MAX).expect("answered");
        assert_eq!(result.outcome, Open, "{}", result.message);
        let commit = node.execute(client_tx, table, vec![], Commit);
        assert_eq!(commit.outcome, Committed);
    }
    assert_eq!(value_of(&mut node, table, 4, 2), 2, "1's write of 2");
    assert_eq!(value_of(&mut node, table, 5, 3), 2, "2's write of 3");
    assert_eq!(value_of(&mut node, table, 6, 1), 1, "3's writes are gone");
}

#[test]
fn a_deadlock_between_coordinators_of_two_nodes_is_found() {
    let nodes = cluster_settings(2, 2, settings);
    let (mut node, table) = with_counters(Node::start_cluster(nodes, 1 << 24, 13));
    let started = node.now_ns();
    node.use_node(NodeId(1));
    assert_eq!(
        node.execute(1, table, vec![counter_op(Update, 1, 1)], NoCommit)
            .outcome,
        Open
    );
    node.use_node(NodeId(2));
    assert_eq!(
        node.execute(2, table, vec![counter_op(Update, 2, 1)], NoCommit)
            .outcome,
        Open
    );
    node.use_node(NodeId(1));
    node.send_batch(1, table, vec![counter_op(Update, 2, 2)], NoCommit);
    node.use_node(NodeId(2));
    node.send_batch(2, table, vec![counter_op(Update, 1, 2)], NoCommit);
    let conf = first_aborted(&mut node, started + 1_000 * MS)
        .expect("one transaction ends before the lock wait timeout");
    assert_eq!(conf.code, ErrorCode::Deadlock as u32);
    assert!((node.now_ns() - started) / MS < 10, "found at once");
    let survivor = if conf.client_tx == 1 { 2 } else { 1 };
    let result = node.batch_result(survivor, u64::MAX).expect("answered");
    assert_eq!(result.outcome, Open, "{}", result.message);
}

#[test]
fn the_wait_closing_a_cycle_finds_it_and_the_youngest_is_the_victim_whoever_closed_it() {
    let (mut node, table) = with_counters(Node::start(settings(NodeId(1)), 1 << 24, 16));
    node.execute(1, table, vec![counter_op(Update, 1, 1)], NoCommit);
    node.execute(2, table, vec![counter_op(Update, 2, 1)], NoCommit);
    // The younger waits first; its looks find the older waiting for its client.
    node.send_batch(2, table, vec![counter_op(Update, 1, 2)], NoCommit);
    node.run_for_ms(120);
    let closed = node.now_ns();
    // The older closes the cycle; its own look goes round it.
    node.send_batch(1, table, vec![counter_op(Update, 2, 2)], NoCommit);
    let victim = node
        .batch_result(2, closed + 1_000 * MS)
        .expect("found before the lock wait timeout");
    assert_deadlock_victim(&victim);
    assert!((node.now_ns() - closed) / MS < 10);
    let survivor = node.batch_result(1, u64::MAX).expect("answered");
    assert_eq!(survivor.outcome, Open, "{}", survivor.message);
}

#[test]
fn a_long_wait_that_is_no_deadlock_looks_again_every_interval_and_lasts_until_the_holder_commits() {
    // Two nodes, so the simulation keeps the trace the looks are counted in.
    let nodes = cluster_settings(2, 2, settings);
    let (mut node, table) = with_counters(Node::start_cluster(nodes, 1 << 24, 14));
    node.execute(1, table, vec![counter_op(Update, 1, 1)], NoCommit);
    node.execute(2, table, vec![counter_op(Update, 2, 1)], NoCommit);
    node.send_batch(2, table, vec![counter_op(Update, 1, 2)], NoCommit);
    assert!(
        node.batch_result(2, node.now_ns() + 600 * MS).is_none(),
        "waits through many detection intervals"
    );
    let looks = node.delivered::<DeadlockCheck>().len();
    assert!((11..=14).contains(&looks), "{looks} looks in 600 ms");
    assert_eq!(node.execute(1, table, vec![], Commit).outcome, Committed);
    let result = node.batch_result(2, u64::MAX).expect("granted");
    assert_eq!(result.outcome, Open, "{}", result.message);
}

#[test]
fn with_detection_off_a_deadlock_ends_by_the_lock_wait_timeout() {
    let mut settings = settings(NodeId(1));
    settings.deadlock_detection_interval_ms = 0;
    let (mut node, table) = with_counters(Node::start(settings, 1 << 24, 15));
    let started = node.now_ns();
    lock_in_a_cycle(&mut node, table, &[(1, 1), (2, 2)]);
    let conf = first_aborted(&mut node, u64::MAX).expect("the timeout ends it");
    assert_eq!(conf.code, ErrorCode::LockWaitTimeout as u32);
    assert!((node.now_ns() - started) / MS >= 1200);
}
