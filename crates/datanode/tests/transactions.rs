//! Transactions through the real blocks (dict, tc, ldm) in the deterministic simulation:
//! isolation, rollback, lock waits and their timeout, the inactivity timeout, unique keys,
//! schema versions and DataMemory exhaustion, each over the commit protocol.

mod support;

use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_signal::NodeId;
use kista_storage::schema::{Column, IndexKind, IndexSchema, TableSchema};
use kista_storage::types::{ColumnType, Value};
use support::{primary_key, Node, Op};

use ExecuteMode::{Commit, NoCommit, Rollback};
use TransactionOutcome::{Aborted, Committed, Open};

const MS: u64 = 1_000_000;

fn accounts() -> TableSchema {
    TableSchema {
        name: "accounts".into(),
        columns: vec![
            Column::new(
                "id",
                ColumnType::Int {
                    bytes: 8,
                    signed: true,
                },
            ),
            Column::new("owner", ColumnType::VarChar { max_length: 20 }).nullable(),
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
    let definition = TableDefinitionBody {
        schema: accounts(),
        indexes: vec![(
            0,
            IndexSchema {
                name: "by_owner".into(),
                kind: IndexKind::Unique,
                columns: vec![1],
            },
        )],
    };
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
    result.rows.first().map(|(_, row)| match row[2] {
        Value::Int(balance) => balance,
        ref other => panic!("balance is {other:?}"),
    })
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

/// Unique keys are checked per partition for now: with one partition the check is whole.
/// (Across partitions this needs NDB's hidden unique-index table, distributed by the unique
/// key; see the issue notes.) Lookups by unique key ask every partition.
#[test]
fn unique_keys_are_enforced_and_found_by_lookup() {
    let mut one_partition = settings();
    one_partition.partitions_per_table = 1;
    let (mut node, table) = node_with_accounts(one_partition, 1 << 24);
    let rows: Vec<Op> = (0..20)
        .map(|n| insert(n, &format!("owner{n}"), n))
        .collect();
    assert_eq!(node.execute(1, table, rows, Commit).outcome, Committed);
    let result = node.execute(2, table, vec![insert(100, "owner7", 0)], Commit);
    assert_eq!(
        (result.outcome, result.code),
        (Aborted, ErrorCode::Duplicate as u32)
    );
    assert!(result.message.contains("by_owner"), "{}", result.message);
    let by_owner = |owner: &str| {
        let schema = accounts();
        let layout = kista_storage::row::RowLayout::new(&schema);
        let mut key = Vec::new();
        kista_storage::ordered_index::encode_ordered(
            layout.column(1).unwrap().column_type,
            &Value::Bytes(owner.as_bytes().to_vec()),
            &mut key,
        );
        Op {
            kind: OperationKind::Read,
            lock: LockKind::Committed,
            index_id: BY_OWNER,
            body: KeyBody {
                key,
                columns: vec![0],
                values: vec![],
            },
        }
    };
    let result = node.execute(
        3,
        table,
        vec![by_owner("owner13"), by_owner("nobody")],
        Commit,
    );
    assert_eq!(
        (result.outcome, result.code),
        (Committed, 0),
        "{}",
        result.message
    );
    assert_eq!(result.rows, [(0, vec![Value::Int(13)])]);
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
        (table_id + 1, version),
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
