//! Batches of whole-row writes to one partition (`KeyRequest::BATCH`, a `KeyBatchBody`):
//! one signal carries them through the coordinator and along the chain, yet each write
//! behaves as if sent alone: its failure names it and aborts the transaction, a lock it
//! must wait for parks the batch there, and a table that needs index upkeep has its
//! writes run one by one.

mod support;

use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_signal::NodeId;
use kista_storage::types::Value;
use support::{counter_op, counters, primary_key, with_unique_index, Node};

use ExecuteMode::{Commit, NoCommit};
use OperationKind::{Insert, Write};
use TransactionOutcome::{Aborted, Committed, Open};

const MS: u64 = 1_000_000;

fn settings() -> NodeSettings {
    let mut settings = NodeSettings::new(NodeId(1));
    settings.ldm_instances = 2;
    settings
}

/// A node with the counters table (id, value), plain or with a unique index on `value`.
fn node_with_counters(unique_value: bool) -> (Node, (u32, u32)) {
    let mut node = Node::start(settings(), 1 << 24, 7);
    let definition = match unique_value {
        true => with_unique_index(counters(), "by_value", 1),
        false => TableDefinitionBody::new(counters(), vec![]),
    };
    let table = node
        .create_table(&definition)
        .expect("the table is created");
    (node, table)
}

fn key(id: i64) -> Vec<u8> {
    primary_key(&counters(), &[Value::Int(id)])
}

fn row(id: i64, value: i64) -> KeyBody {
    counter_op(Insert, id, value).body
}

fn rows_of(ids: &[i64], value: impl Fn(i64) -> i64) -> Vec<KeyBody> {
    ids.iter().map(|&id| row(id, value(id))).collect()
}

/// `count` ids whose rows share one partition (and one more in another, last).
fn ids_in_one_partition(node: &Node, count: usize) -> (Vec<i64>, i64) {
    let map = node.partition_map();
    let partition_of = |id: i64| map.partition_of(&key(id));
    let first = partition_of(1);
    let same = (1..).filter(|&id| partition_of(id) == first).take(count);
    let other = (1..).find(|&id| partition_of(id) != first).unwrap();
    (same.collect(), other)
}

fn value_of(node: &mut Node, table: (u32, u32), client_tx: u64, id: i64) -> Option<i64> {
    let read = counter_op(OperationKind::Read, id, 0);
    let result = node.execute(client_tx, table, vec![read], Commit);
    assert_eq!(
        (result.outcome, result.code),
        (Committed, 0),
        "{}",
        result.message
    );
    result.rows.first().map(|(_, row)| match row[1] {
        Value::Int(value) => value,
        ref other => panic!("value is {other:?}"),
    })
}

/// The transaction aborted with `code`, naming the operation `failed_op`.
fn assert_refused(result: &support::Executed, code: ErrorCode, failed_op: u32) {
    assert_eq!(
        (result.outcome, result.code, result.failed_op),
        (Aborted, code as u32, failed_op),
        "{}",
        result.message
    );
}

fn batch_result(node: &mut Node, client_tx: u64) -> support::Executed {
    node.batch_result(client_tx, u64::MAX)
        .expect("the batch ends")
}

#[test]
fn a_batch_of_inserts_writes_every_row_as_one_operation() {
    let (mut node, table) = node_with_counters(false);
    let (ids, _) = ids_in_one_partition(&node, 5);
    let rows = rows_of(&ids, |id| 10 * id);
    node.send_key_batch(1, table, Insert, &rows, Commit, None);
    let result = batch_result(&mut node, 1);
    assert_eq!(
        (result.outcome, result.code),
        (Committed, 0),
        "{}",
        result.message
    );
    for (tx, &id) in (2..).zip(&ids) {
        assert_eq!(value_of(&mut node, table, tx, id), Some(10 * id));
    }
}

#[test]
fn a_failed_write_of_a_batch_aborts_the_transaction_and_is_named() {
    let (mut node, table) = node_with_counters(false);
    let (ids, _) = ids_in_one_partition(&node, 5);
    node.execute(1, table, vec![counter_op(Insert, ids[2], 7)], Commit);
    let rows = rows_of(&ids, |_| 1);
    node.send_key_batch(2, table, Insert, &rows, Commit, None);
    let result = batch_result(&mut node, 2);
    assert_refused(&result, ErrorCode::Duplicate, 2);
    for (tx, &id) in (3..).zip(&ids) {
        let expected = (id == ids[2]).then_some(7);
        assert_eq!(value_of(&mut node, table, tx, id), expected, "id {id}");
    }
}

#[test]
fn a_batch_waits_for_a_lock_at_the_write_that_needs_it_and_runs_the_rest_once_granted() {
    let (mut node, table) = node_with_counters(false);
    let (ids, _) = ids_in_one_partition(&node, 5);
    node.execute(1, table, vec![counter_op(Insert, ids[3], 7)], Commit);
    let delete = counter_op(OperationKind::Delete, ids[3], 0);
    let holder = node.execute(2, table, vec![delete], NoCommit);
    assert_eq!(holder.outcome, Open);
    // Inserts: were the batch run again from its start, its first rows would meet
    // themselves as duplicates.
    let rows = rows_of(&ids, |_| 2);
    node.send_key_batch(3, table, Insert, &rows, Commit, None);
    let deadline = node.now_ns() + 500 * MS;
    assert!(
        node.batch_result(3, deadline).is_none(),
        "the batch waits at ids[3]"
    );
    let result = node.execute(2, table, vec![], Commit);
    assert_eq!(result.outcome, Committed);
    let result = batch_result(&mut node, 3);
    assert_eq!(
        (result.outcome, result.code),
        (Committed, 0),
        "{}",
        result.message
    );
    for (tx, &id) in (4..).zip(&ids) {
        assert_eq!(value_of(&mut node, table, tx, id), Some(2), "id {id}");
    }
}

#[test]
fn a_batch_waiting_past_the_lock_wait_timeout_is_refused_at_the_waiting_write() {
    let (mut node, table) = node_with_counters(false);
    let (ids, _) = ids_in_one_partition(&node, 5);
    node.execute(1, table, vec![counter_op(Insert, ids[1], 7)], NoCommit);
    let rows = rows_of(&ids, |_| 2);
    node.send_key_batch(2, table, Write, &rows, Commit, None);
    let result = batch_result(&mut node, 2);
    assert_refused(&result, ErrorCode::LockWaitTimeout, 1);
    assert_eq!(node.execute(1, table, vec![], Commit).outcome, Committed);
    assert_eq!(value_of(&mut node, table, 3, ids[0]), None, "rolled back");
    assert_eq!(
        value_of(&mut node, table, 4, ids[1]),
        Some(7),
        "the holder's"
    );
}

#[test]
fn a_batch_for_a_table_with_a_unique_index_runs_its_writes_one_by_one() {
    let (mut node, table) = node_with_counters(true);
    let (ids, _) = ids_in_one_partition(&node, 4);
    let rows = rows_of(&ids, |id| 100 + id);
    node.send_key_batch(1, table, Insert, &rows, Commit, None);
    let result = batch_result(&mut node, 1);
    assert_eq!(
        (result.outcome, result.code),
        (Committed, 0),
        "{}",
        result.message
    );
    // The unique index's upkeep ran for each: a second row with a taken `v` is refused.
    let taken = 100 + ids[2];
    let rows = [row(1_000, 5), row(1_001, taken)];
    node.send_key_batch(2, table, Insert, &rows, Commit, None);
    let result = batch_result(&mut node, 2);
    assert_refused(&result, ErrorCode::Duplicate, 1);
    assert_eq!(value_of(&mut node, table, 3, 1_000), None);
    assert_eq!(value_of(&mut node, table, 4, ids[2]), Some(taken));
}

#[test]
fn a_batch_across_partitions_of_reads_cut_short_or_with_malformed_values_is_a_bad_request() {
    let (mut node, table) = node_with_counters(false);
    let (ids, other) = ids_in_one_partition(&node, 2);
    let across = [row(ids[0], 1), row(other, 1)];
    node.send_key_batch(1, table, Insert, &across, Commit, None);
    let reads = [row(ids[0], 1), row(ids[1], 1)];
    node.send_key_batch(2, table, OperationKind::Read, &reads, Commit, None);
    let mut cut = Vec::new();
    KeyBatchBody::start(&mut cut);
    let mut body = Vec::new();
    row(ids[0], 1).encode(&mut body);
    KeyBatchBody::push(&mut cut, 0, &body);
    cut.pop();
    node.send_key_batch(3, table, Insert, &[], Commit, Some(cut));
    // A whole body whose row values run on past the row's last column.
    let mut values_run_on = Vec::new();
    KeyBatchBody::start(&mut values_run_on);
    body.push(0);
    KeyBatchBody::push(&mut values_run_on, 0, &body);
    node.send_key_batch(4, table, Insert, &[], Commit, Some(values_run_on));
    for (tx, reason) in [
        (1, "one partition"),
        (2, "inserts or upserts"),
        (3, "a bad batch"),
        (4, "values are malformed: 1 bytes left over"),
    ] {
        let result = batch_result(&mut node, tx);
        assert_eq!(
            (result.outcome, result.code),
            (Aborted, ErrorCode::BadRequest as u32),
            "{}",
            result.message
        );
        assert!(result.message.contains(reason), "{}", result.message);
    }
    assert_eq!(value_of(&mut node, table, 5, ids[0]), None);
}
