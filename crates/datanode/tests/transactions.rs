//! Transactions through the real blocks (dict, tc, ldm) in the deterministic simulation:
//! isolation, rollback, lock waits and their timeout, the inactivity timeout, unique keys,
//! schema versions and DataMemory exhaustion, each over the commit protocol.

mod support;

use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_signal::NodeId;
use kista_storage::schema::{Column, TableSchema};
use kista_storage::types::{ColumnType, Value};
use support::{primary_key, with_unique_index, Node, Op};

use ExecuteMode::{Commit, NoCommit, Rollback};
use TransactionOutcome::{Aborted, Committed, Open};

const MS: u64 = 1_000_000;

fn accounts() -> TableSchema {
    TableSchema {
        extra_metadata: Vec::new(),
        name: "accounts".into(),
        columns: vec![
            Column::new(
                "id",
                ColumnType::Int {
                    bytes: 8,
                    signed: true,
                },
            ),
            Column::new("owner", ColumnType::varchar(20)).nullable(),
            Column::new(
                "balance",
                ColumnType::Int {
                    bytes: 8,
                    signed: true,
                },
            ),
        ],
        primary_key: vec![0],
    }
}

const BY_OWNER: u32 = 1;

/// A node with the accounts table (unique index on owner); returns (node, table id + version).
fn node_with_accounts(settings: NodeSettings, memory_bytes: u64) -> (Node, (u32, u32)) {
    let mut node = Node::start(settings, memory_bytes, 7);
    let definition = with_unique_index(accounts(), "by_owner", 1);
    let table = node
        .create_table(&definition)
        .expect("the table is created");
    (node, table)
}

fn settings() -> NodeSettings {
    let mut settings = NodeSettings::new(NodeId(1));
    settings.ldm_instances = 2;
    settings
}

fn account(id: i64, owner: &str, balance: i64) -> Vec<Value> {
    vec![
        Value::Int(id),
        Value::Bytes(owner.as_bytes().to_vec()),
        Value::Int(balance),
    ]
}

fn key(id: i64) -> Vec<u8> {
    primary_key(&accounts(), &[Value::Int(id)])
}

fn insert(id: i64, owner: &str, balance: i64) -> Op {
    Op {
        kind: OperationKind::Insert,
        lock: LockKind::Exclusive,
        index_id: PRIMARY_KEY,
        body: KeyBody {
            key: key(id),
            columns: vec![],
            values: account(id, owner, balance),
        },
    }
}

fn read(id: i64, lock: LockKind) -> Op {
    Op {
        kind: OperationKind::Read,
        lock,
        index_id: PRIMARY_KEY,
        body: KeyBody {
            key: key(id),
            columns: vec![],
            values: vec![],
        },
    }
}

fn set_balance(id: i64, balance: i64) -> Op {
    Op {
        kind: OperationKind::Update,
        lock: LockKind::Exclusive,
        index_id: PRIMARY_KEY,
        body: KeyBody {
            key: key(id),
            columns: vec![2],
            values: vec![Value::Int(balance)],
        },
    }
}

fn delete(id: i64) -> Op {
    Op {
        kind: OperationKind::Delete,
        lock: LockKind::Exclusive,
        index_id: PRIMARY_KEY,
        body: KeyBody {
            key: key(id),
            columns: vec![],
            values: vec![],
        },
    }
}

fn balance_of(node: &mut Node, table: (u32, u32), client_tx: u64, id: i64) -> Option<i64> {
    let result = node.execute(
        client_tx,
        table,
        vec![read(id, LockKind::Committed)],
        Commit,
    );
    assert_eq!(
        (result.outcome, result.code),
        (Committed, 0),
        "{}",
        result.message
    );
    result.rows.first().map(|(_, row)| balance(row))
}

/// An account row's balance.
fn balance(row: &[Value]) -> i64 {
    match row[2] {
        Value::Int(balance) => balance,
        ref other => panic!("balance is {other:?}"),
    }
}

#[test]
fn committed_reads_see_a_write_only_once_it_commits() {
    let (mut node, table) = node_with_accounts(settings(), 1 << 24);
    let result = node.execute(
        1,
        table,
        vec![insert(1, "ann", 100), insert(2, "bob", 50)],
        NoCommit,
    );
    assert_eq!(
        (result.outcome, result.code),
        (Open, 0),
        "{}",
        result.message
    );
    assert_eq!(
        balance_of(&mut node, table, 2, 1),
        None,
        "uncommitted insert is invisible"
    );
    let result = node.execute(1, table, vec![set_balance(2, 60)], Commit);
    assert_eq!((result.outcome, result.code), (Committed, 0));
    assert_eq!(balance_of(&mut node, table, 3, 1), Some(100));
    assert_eq!(balance_of(&mut node, table, 4, 2), Some(60));
}

#[test]
fn rollback_restores_the_committed_versions() {
    let (mut node, table) = node_with_accounts(settings(), 1 << 24);
    node.execute(
        1,
        table,
        vec![insert(1, "ann", 100), insert(2, "bob", 50)],
        Commit,
    );
    let result = node.execute(
        2,
        table,
        vec![set_balance(1, 0), delete(2), insert(3, "cy", 1)],
        NoCommit,
    );
    assert_eq!(result.outcome, Open);
    let result = node.execute(2, table, vec![read(1, LockKind::Exclusive)], Rollback);
    assert_eq!((result.outcome, result.code), (Aborted, 0));
    assert_eq!(balance_of(&mut node, table, 3, 1), Some(100));
    assert_eq!(balance_of(&mut node, table, 4, 2), Some(50));
    assert_eq!(balance_of(&mut node, table, 5, 3), None);
}

#[test]
fn a_locked_read_waits_for_the_writer_and_sees_its_commit() {
    let (mut node, table) = node_with_accounts(settings(), 1 << 24);
    node.execute(1, table, vec![insert(1, "ann", 100)], Commit);
    node.execute(2, table, vec![set_balance(1, 70)], NoCommit);
    node.send_batch(3, table, vec![read(1, LockKind::Shared)], Commit);
    let deadline = node.now_ns() + 500 * MS;
    assert!(
        node.batch_result(3, deadline).is_none(),
        "the shared read waits for the exclusive lock"
    );
    assert_eq!(
        balance_of(&mut node, table, 4, 1),
        Some(100),
        "committed reads do not wait"
    );
    node.execute(2, table, vec![], Commit);
    let result = node
        .batch_result(3, u64::MAX)
        .expect("the waiter runs once the writer commits");
    assert_eq!(result.outcome, Committed);
    assert_eq!(result.rows[0].1[2], Value::Int(70));
}

#[test]
fn a_lock_wait_longer_than_the_timeout_aborts_the_waiting_transaction() {
    let (mut node, table) = node_with_accounts(settings(), 1 << 24);
    node.execute(1, table, vec![insert(1, "ann", 100)], Commit);
    node.execute(2, table, vec![set_balance(1, 70)], NoCommit);
    let started = node.now_ns();
    node.send_batch(3, table, vec![set_balance(1, 5)], Commit);
    let result = node
        .batch_result(3, u64::MAX)
        .expect("the timeout ends the wait");
    let waited_ms = (node.now_ns() - started) / MS;
    assert_eq!(
        (result.outcome, result.code),
        (Aborted, ErrorCode::LockWaitTimeout as u32),
        "{}",
        result.message
    );
    assert!((1200..1300).contains(&waited_ms), "waited {waited_ms} ms");
    assert!(
        result.message.contains("lock wait timeout"),
        "{}",
        result.message
    );
    let result = node.execute(2, table, vec![], Commit);
    assert_eq!(result.outcome, Committed, "the holder is not disturbed");
    assert_eq!(balance_of(&mut node, table, 4, 1), Some(70));
}

#[test]
fn an_idle_transaction_is_aborted_after_the_inactivity_timeout() {
    let mut settings = settings();
    settings.transaction_inactive_timeout_ms = 2_000;
    let (mut node, table) = node_with_accounts(settings, 1 << 24);
    node.execute(1, table, vec![insert(1, "ann", 100)], NoCommit);
    let result = node
        .batch_result(1, u64::MAX)
        .expect("the coordinator gives up on the client");
    assert_eq!(
        (result.outcome, result.code),
        (Aborted, ErrorCode::TransactionInactive as u32)
    );
    assert!(node.now_ns() >= 2_000 * MS);
    assert_eq!(balance_of(&mut node, table, 2, 1), None);
    let result = node.execute(1, table, vec![insert(1, "ann", 5)], Commit);
    assert_eq!(result.outcome, Committed, "the row lock was freed");
}

#[test]
fn a_lost_clients_transactions_are_aborted_at_once_freeing_their_locks() {
    let mut settings = settings();
    settings.transaction_inactive_timeout_ms = 60_000;
    let (mut node, table) = node_with_accounts(settings, 1 << 24);
    node.execute(1, table, vec![insert(1, "ann", 100)], Commit);
    // One transaction idle between batches, one waiting for a lock the first holds.
    let idle = node.execute(2, table, vec![set_balance(1, 5)], NoCommit);
    assert_eq!(idle.outcome, Open);
    node.send_batch(3, table, vec![set_balance(1, 7)], NoCommit);
    node.run_for_ms(100);
    let lost_at_ns = node.now_ns();
    node.lose_client();
    // The idle one ends at once; the waiter gets the lock, then ends as its batch does.
    let result = node
        .batch_result(2, u64::MAX)
        .expect("the lost client's idle transaction is aborted");
    assert_eq!(result.outcome, Aborted);
    assert!(
        result.message.contains("connection of its client"),
        "{}",
        result.message
    );
    let result = node
        .batch_result(3, u64::MAX)
        .expect("the waiter's batch ends");
    assert_eq!(
        result.outcome, Open,
        "the waiter got the lock the aborted one freed"
    );
    let result = node
        .batch_result(3, u64::MAX)
        .expect("the lost client's transaction ends once it waits for the client");
    assert_eq!(result.outcome, Aborted);
    let result = node.execute(4, table, vec![set_balance(1, 9)], Commit);
    assert_eq!(
        result.outcome, Committed,
        "no lock of the lost client is left"
    );
    assert!(
        node.now_ns() - lost_at_ns < 1_000 * MS,
        "freed well within the inactivity timeout and the lock wait timeout"
    );
    assert_eq!(balance_of(&mut node, table, 5, 1), Some(9));
}

fn set_owner(id: i64, owner: &str) -> Op {
    Op {
        kind: OperationKind::Update,
        lock: LockKind::Exclusive,
        index_id: PRIMARY_KEY,
        body: KeyBody {
            key: key(id),
            columns: vec![1],
            values: vec![Value::Bytes(owner.as_bytes().to_vec())],
        },
    }
}

/// Reads the id of the account `owner` holds, through the unique index.
fn by_owner(owner: &str, lock: LockKind) -> Op {
    let layout = kista_storage::row::RowLayout::new(&accounts());
    let mut key = Vec::new();
    let owner = Value::Bytes(owner.as_bytes().to_vec());
    layout.key_of_values(&[1], &[owner], &mut key).unwrap();
    Op {
        kind: OperationKind::Read,
        lock,
        index_id: BY_OWNER,
        body: KeyBody {
            key,
            columns: vec![0],
            values: vec![],
        },
    }
}

/// The ids `owners` lead to through the unique index (`None`: no such owner).
fn owners_ids(
    node: &mut Node,
    table: (u32, u32),
    client_tx: u64,
    owners: &[&str],
) -> Vec<Option<i64>> {
    let ops = owners
        .iter()
        .map(|o| by_owner(o, LockKind::Committed))
        .collect();
    let result = node.execute(client_tx, table, ops, Commit);
    assert_eq!(result.outcome, Committed, "{}", result.message);
    (0..owners.len() as u32)
        .map(|op| {
            result
                .rows
                .iter()
                .find(|(index, _)| *index == op)
                .map(|(_, row)| match row[..] {
                    [Value::Int(id)] => id,
                    _ => panic!("{row:?}"),
                })
        })
        .collect()
}

/// A unique key is unique across every partition (its entries live in an index table
/// distributed by the key), and lookups follow the key as rows change.
#[test]
fn unique_keys_are_unique_across_partitions_and_found_by_lookup() {
    let mut many_partitions = settings();
    many_partitions.partitions_per_node = 8;
    let (mut node, table) = node_with_accounts(many_partitions, 1 << 24);
    let rows: Vec<Op> = (0..40)
        .map(|n| insert(n, &format!("owner{n}"), n))
        .collect();
    assert_eq!(node.execute(1, table, rows, Commit).outcome, Committed);
    for (tx, id) in [(2, 100), (3, 101), (4, 102)] {
        let result = node.execute(tx, table, vec![insert(id, "owner7", 0)], Commit);
        assert_eq!(
            (result.outcome, result.code),
            (Aborted, ErrorCode::Duplicate as u32),
            "row {id} lands in another partition than row 7, yet the key is taken"
        );
        assert!(
            result
                .message
                .contains("unique index `by_owner` of table `accounts`"),
            "{}",
            result.message
        );
    }
    assert_eq!(
        balance_of(&mut node, table, 5, 100),
        None,
        "the failed insert left nothing"
    );
    assert_eq!(
        owners_ids(&mut node, table, 6, &["owner13", "nobody", "owner39"]),
        [Some(13), None, Some(39)]
    );

    // A changed key moves the entry; the old key is free at once for others.
    let result = node.execute(
        7,
        table,
        vec![set_owner(13, "new13"), insert(200, "owner13", 0)],
        Commit,
    );
    assert_eq!(result.outcome, Committed, "{}", result.message);
    assert_eq!(
        owners_ids(&mut node, table, 8, &["owner13", "new13"]),
        [Some(200), Some(13)]
    );
    // Deleting a row frees its key; rolling back gives it back to the row.
    assert_eq!(
        node.execute(9, table, vec![delete(200)], Commit).outcome,
        Committed
    );
    let result = node.execute(
        10,
        table,
        vec![set_owner(13, "owner13"), set_owner(14, "new13")],
        Rollback,
    );
    assert_eq!(result.outcome, Aborted);
    assert_eq!(
        owners_ids(&mut node, table, 11, &["owner13", "new13", "owner14"]),
        [None, Some(13), Some(14)]
    );
    // Two rows of one transaction cannot share a key: the whole transaction aborts.
    let result = node.execute(
        12,
        table,
        vec![insert(300, "twin", 0), insert(301, "twin", 0)],
        Commit,
    );
    assert_eq!(
        (result.outcome, result.code),
        (Aborted, ErrorCode::Duplicate as u32)
    );
    assert_eq!(owners_ids(&mut node, table, 13, &["twin"]), [None]);
}

#[test]
fn rows_without_a_unique_key_may_repeat_and_are_not_found_by_it() {
    let (mut node, table) = node_with_accounts(settings(), 1 << 24);
    let no_owner = |id: i64| Op {
        body: KeyBody {
            values: vec![Value::Int(id), Value::Null, Value::Int(0)],
            ..insert(id, "", 0).body
        },
        ..insert(id, "", 0)
    };
    let result = node.execute(
        1,
        table,
        vec![no_owner(1), no_owner(2), no_owner(3)],
        Commit,
    );
    assert_eq!(result.outcome, Committed, "{}", result.message);
    assert_eq!(
        node.execute(2, table, vec![set_owner(2, "ann")], Commit)
            .outcome,
        Committed
    );
    assert_eq!(owners_ids(&mut node, table, 3, &["ann"]), [Some(2)]);
}

/// A second writer of a key waits for the first to finish instead of failing at once: it
/// gets the duplicate error only if the first commits.
#[test]
fn a_key_being_inserted_by_an_open_transaction_makes_a_second_insert_wait_for_its_outcome() {
    let (mut node, table) = node_with_accounts(settings(), 1 << 24);
    assert_eq!(
        node.execute(1, table, vec![insert(1, "ann", 0)], NoCommit)
            .outcome,
        Open
    );
    node.send_batch(2, table, vec![insert(2, "ann", 0)], Commit);
    assert!(
        node.batch_result(2, node.now_ns() + 200 * MS).is_none(),
        "waits on the key's entry"
    );
    assert_eq!(node.execute(1, table, vec![], Rollback).outcome, Aborted);
    let result = node.batch_result(2, u64::MAX).unwrap();
    assert_eq!(
        result.outcome, Committed,
        "the first gave the key up: {}",
        result.message
    );

    assert_eq!(
        node.execute(3, table, vec![insert(3, "bob", 0)], NoCommit)
            .outcome,
        Open
    );
    node.send_batch(4, table, vec![insert(4, "bob", 0)], Commit);
    assert!(node.batch_result(4, node.now_ns() + 200 * MS).is_none());
    assert_eq!(node.execute(3, table, vec![], Commit).outcome, Committed);
    let result = node.batch_result(4, u64::MAX).unwrap();
    assert_eq!(
        (result.outcome, result.code),
        (Aborted, ErrorCode::Duplicate as u32)
    );
}

/// A locked unique read holds the key's entry: the row cannot take another key (or be
/// deleted) until the reader ends, so what it read stays true.
#[test]
fn a_locked_unique_read_keeps_the_key_on_its_row_until_the_reader_ends() {
    let (mut node, table) = node_with_accounts(settings(), 1 << 24);
    assert_eq!(
        node.execute(1, table, vec![insert(1, "ann", 5)], Commit)
            .outcome,
        Committed
    );
    let read = node.execute(2, table, vec![by_owner("ann", LockKind::Shared)], NoCommit);
    assert_eq!(
        (read.outcome, read.rows.clone()),
        (Open, vec![(0, vec![Value::Int(1)])])
    );
    node.send_batch(3, table, vec![set_owner(1, "bob")], Commit);
    assert!(
        node.batch_result(3, node.now_ns() + 200 * MS).is_none(),
        "the rename waits for the reader"
    );
    assert_eq!(node.execute(2, table, vec![], Commit).outcome, Committed);
    let rename = node.batch_result(3, u64::MAX).unwrap();
    assert_eq!(rename.outcome, Committed, "{}", rename.message);
    assert_eq!(
        owners_ids(&mut node, table, 4, &["ann", "bob"]),
        [None, Some(1)]
    );
}

#[test]
fn an_operation_with_an_old_schema_version_is_refused() {
    let (mut node, (table_id, version)) = node_with_accounts(settings(), 1 << 24);
    let result = node.execute(
        1,
        (table_id, version + 1),
        vec![insert(1, "ann", 1)],
        Commit,
    );
    assert_eq!(
        (result.outcome, result.code),
        (Aborted, ErrorCode::SchemaVersion as u32)
    );
    assert!(
        result.message.contains("schema version"),
        "{}",
        result.message
    );
    let result = node.execute(
        2,
        (table_id + 100, version),
        vec![insert(1, "ann", 1)],
        Commit,
    );
    assert_eq!(
        (result.outcome, result.code),
        (Aborted, ErrorCode::NoSuchTable as u32)
    );
}

#[test]
fn a_full_data_memory_aborts_the_transaction_and_keeps_what_was_committed() {
    let (mut node, table) = node_with_accounts(settings(), 8 * 32 * 1024);
    let mut committed = 0;
    let code = loop {
        let ops: Vec<Op> = (0..50)
            .map(|n| insert(committed + n, &format!("o{}", committed + n), 1))
            .collect();
        let result = node.execute(1_000 + committed as u64, table, ops, Commit);
        if result.outcome != Committed {
            assert!(result.message.contains("DataMemory"), "{}", result.message);
            break result.code;
        }
        committed += 50;
        assert!(committed < 100_000, "memory never ran out");
    };
    assert_eq!(code, ErrorCode::DataMemoryFull as u32);
    assert_eq!(
        ErrorCode::DataMemoryFull.category(),
        ErrorCategory::Temporary
    );
    for id in [0, committed / 2, committed - 1] {
        assert_eq!(
            balance_of(&mut node, table, 900_000 + id as u64, id),
            Some(1)
        );
    }
    assert_eq!(
        balance_of(&mut node, table, 999_999, committed),
        None,
        "the failed batch left nothing"
    );
    let deletes: Vec<Op> = (0..50).map(delete).collect();
    assert_eq!(node.execute(2, table, deletes, Commit).outcome, Committed);
    let again: Vec<Op> = (0..50)
        .map(|n| insert(n, &format!("again{n}"), 2))
        .collect();
    assert_eq!(
        node.execute(3, table, again, Commit).outcome,
        Committed,
        "deletes made room"
    );
}

/// The index-table operations a write causes count against the operations a transaction
/// may have, like the client's own.
#[test]
fn index_upkeep_counts_against_the_operations_a_transaction_may_have() {
    let mut few_operations = settings();
    few_operations.operations_per_transaction_max = 3;
    let (mut node, table) = node_with_accounts(few_operations, 1 << 24);
    let result = node.execute(1, table, vec![insert(1, "ann", 0)], Commit);
    assert_eq!(
        result.outcome, Committed,
        "1 write + 1 entry: {}",
        result.message
    );
    let result = node.execute(
        2,
        table,
        vec![insert(2, "bob", 0), insert(3, "cy", 0)],
        Commit,
    );
    assert_eq!(
        (result.outcome, result.code),
        (Aborted, ErrorCode::TooManyLocks as u32),
        "2 writes + 2 entries: {}",
        result.message
    );
    assert_eq!(
        owners_ids(&mut node, table, 3, &["bob", "cy"]),
        [None, None]
    );
}

#[test]
fn a_read_sees_the_writes_its_transaction_made_earlier_in_the_same_batch() {
    let (mut node, table) = node_with_accounts(settings(), 1 << 24);
    node.execute(1, table, vec![insert(1, "ann", 100)], Commit);
    let result = node.execute(
        2,
        table,
        vec![
            set_balance(1, 70),
            read(1, LockKind::Exclusive),
            insert(2, "bob", 5),
            read(2, LockKind::Shared),
            delete(2),
            read(2, LockKind::Exclusive),
        ],
        NoCommit,
    );
    assert_eq!(
        (result.outcome, result.code),
        (Open, 0),
        "{}",
        result.message
    );
    let mut rows = result.rows;
    rows.sort_by_key(|(op, _)| *op);
    let balances: Vec<(u32, i64)> = rows.iter().map(|(op, row)| (*op, balance(row))).collect();
    assert_eq!(
        balances,
        [(1, 70), (3, 5)],
        "the read after the delete finds nothing"
    );
}
