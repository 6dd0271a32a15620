//! Synchronous replication across data nodes in the deterministic simulation: schema
//! changes reach every node, writes run along each partition's replica chain and are
//! acknowledged only once every replica committed them, and any node's coordinator serves
//! any key, reading its own replicas where it holds them (read backup).

mod support;

use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_datanode::router::ReadPolicy;
use kista_signal::{BlockAddress, NodeId};
use kista_storage::schema::{Column, TableSchema};
use kista_storage::types::{ColumnType, Value};
use support::{cluster_settings, primary_key, with_unique_index, Node, Op, ScanSpec};

use ExecuteMode::Commit;
use TransactionOutcome::{Aborted, Committed};

const ROWS: i64 = 120;
const BY_NAME: u32 = 1;

fn users() -> TableSchema {
    TableSchema {
        extra_metadata: Vec::new(),
        name: "users".into(),
        columns: vec![
            Column::new(
                "id",
                ColumnType::Int {
                    bytes: 8,
                    signed: true,
                },
            ),
            Column::new("name", ColumnType::varchar(24)),
        ],
        primary_key: vec![0],
    }
}

fn user(id: i64, name: &str) -> Vec<Value> {
    vec![Value::Int(id), Value::Bytes(name.as_bytes().to_vec())]
}

fn key(id: i64) -> Vec<u8> {
    primary_key(&users(), &[Value::Int(id)])
}

fn write(kind: OperationKind, id: i64, name: &str) -> Op {
    Op {
        kind,
        lock: LockKind::Exclusive,
        index_id: PRIMARY_KEY,
        body: KeyBody {
            key: key(id),
            columns: vec![],
            values: if kind == OperationKind::Insert {
                user(id, name)
            } else {
                vec![]
            },
        },
    }
}

fn rename(id: i64, name: &str) -> Op {
    Op {
        kind: OperationKind::Update,
        lock: LockKind::Exclusive,
        index_id: PRIMARY_KEY,
        body: KeyBody {
            key: key(id),
            columns: vec![1],
            values: vec![Value::Bytes(name.as_bytes().to_vec())],
        },
    }
}

fn read(id: i64) -> Op {
    Op {
        kind: OperationKind::Read,
        lock: LockKind::Committed,
        index_id: PRIMARY_KEY,
        body: KeyBody {
            key: key(id),
            columns: vec![],
            values: vec![],
        },
    }
}

fn read_by_name(name: &str) -> Op {
    Op {
        kind: OperationKind::Read,
        lock: LockKind::Committed,
        index_id: BY_NAME,
        body: KeyBody {
            key: primary_key(
                &TableSchema {
                    extra_metadata: Vec::new(),
                    name: "by_name".into(),
                    columns: vec![users().columns[1].clone()],
                    primary_key: vec![0],
                },
                &[Value::Bytes(name.as_bytes().to_vec())],
            ),
            columns: vec![],
            values: vec![],
        },
    }
}

fn node_settings(node: NodeId) -> NodeSettings {
    let mut settings = NodeSettings::new(node);
    settings.ldm_instances = 2;
    // Reads run on the replica's own ldm, so a row's sender shows which replica answered.
    settings.read_policy = ReadPolicy::Owner;
    settings
}

/// `count` nodes with `replicas` replicas and the users table (unique index on name),
/// created through the last node (not the master: its dictionary passes the request on).
fn cluster_with_users(count: u8, replicas: u16, seed: u64) -> (Node, (u32, u32)) {
    let mut cluster = Node::start_cluster(
        cluster_settings(count, replicas, node_settings),
        64 << 20,
        seed,
    );
    cluster.use_node(NodeId(count));
    let definition = with_unique_index(users(), "by_name", 1);
    let table = cluster
        .create_table(&definition)
        .expect("the table is created");
    (cluster, table)
}

fn name_of(id: i64) -> String {
    format!("user-{id}")
}

/// Inserts rows 0..ROWS, one transaction per row, through the nodes in turn; checks each
/// commit and, right after it, that every node reads the row from its own replica.
fn insert_and_read_back_everywhere(cluster: &mut Node, table: (u32, u32), nodes: u8) {
    for id in 0..ROWS {
        let via = NodeId(1 + (id % i64::from(nodes)) as u8);
        cluster.use_node(via);
        let name = name_of(id);
        let done = cluster.execute(
            id as u64,
            table,
            vec![write(OperationKind::Insert, id, &name)],
            Commit,
        );
        assert_eq!(done.outcome, Committed, "{}", done.message);
        for reader in 1..=nodes {
            cluster.use_node(NodeId(reader));
            let done = cluster.execute(1_000 + id as u64, table, vec![read(id)], Commit);
            assert_eq!(
                done.rows,
                [(0, user(id, &name))],
                "row {id} read through node {reader}"
            );
        }
    }
}

#[test]
fn a_committed_write_is_on_every_replica_when_it_is_acknowledged() {
    let (mut cluster, table) = cluster_with_users(2, 2, 21);
    insert_and_read_back_everywhere(&mut cluster, table, 2);
    // Two replicas: each node holds every partition, so each reads its own.
    for reader in [NodeId(1), NodeId(2)] {
        cluster.use_node(reader);
        let done = cluster.execute(5_000, table, vec![read(7), read(8)], Commit);
        assert_eq!(done.rows.len(), 2);
        assert!(
            done.row_senders
                .iter()
                .all(|sender| sender.node() == reader),
            "node {reader} reads its own replicas: {:?}",
            done.row_senders
        );
    }
}

#[test]
fn updates_and_deletes_through_one_node_are_seen_through_the_other() {
    let (mut cluster, table) = cluster_with_users(2, 2, 22);
    insert_and_read_back_everywhere(&mut cluster, table, 2);
    cluster.use_node(NodeId(2));
    let ops = vec![rename(3, "renamed"), write(OperationKind::Delete, 4, "")];
    let done = cluster.execute(6_000, table, ops, Commit);
    assert_eq!(done.outcome, Committed, "{}", done.message);
    cluster.use_node(NodeId(1));
    let done = cluster.execute(6_001, table, vec![read(3), read(4)], Commit);
    assert_eq!(done.rows, [(0, user(3, "renamed"))]);
    // The unique index's entries moved with the rename on every node.
    for reader in [NodeId(1), NodeId(2)] {
        cluster.use_node(reader);
        let done = cluster.execute(6_002, table, vec![read_by_name("renamed")], Commit);
        assert_eq!(
            done.rows,
            [(0, user(3, "renamed"))],
            "through node {reader}"
        );
        let done = cluster.execute(6_003, table, vec![read_by_name(&name_of(3))], Commit);
        assert!(
            done.rows.is_empty(),
            "the old name is gone on node {reader}"
        );
    }
}

#[test]
fn a_transaction_that_aborts_leaves_no_trace_on_any_replica() {
    let (mut cluster, table) = cluster_with_users(2, 2, 23);
    insert_and_read_back_everywhere(&mut cluster, table, 2);
    cluster.use_node(NodeId(1));
    // The second insert duplicates a name: the whole transaction aborts on both nodes.
    let ops = vec![
        write(OperationKind::Insert, 500, "fresh"),
        write(OperationKind::Insert, 501, &name_of(9)),
    ];
    let done = cluster.execute(7_000, table, ops, Commit);
    assert_eq!(done.outcome, Aborted);
    assert_eq!(done.code, ErrorCode::Duplicate as u32, "{}", done.message);
    for reader in [NodeId(1), NodeId(2)] {
        cluster.use_node(reader);
        let done = cluster.execute(7_001, table, vec![read(500), read(501)], Commit);
        assert!(done.rows.is_empty(), "nothing of it on node {reader}");
    }
}

#[test]
fn four_nodes_in_two_groups_hold_each_partition_on_one_group() {
    let (mut cluster, table) = cluster_with_users(4, 2, 24);
    insert_and_read_back_everywhere(&mut cluster, table, 4);
    let expected: Vec<Vec<Value>> = (0..ROWS).map(|id| user(id, &name_of(id))).collect();
    for reader in 1..=4u8 {
        cluster.use_node(NodeId(reader));
        let spec = ScanSpec::every_row(table, 16);
        let scanned = cluster.scan(8_000 + u64::from(reader), &spec, None);
        assert_eq!(scanned.code, 0, "{}", scanned.message);
        let mut rows = scanned.rows();
        rows.sort_by_key(|row| match row[0] {
            Value::Int(id) => id,
            _ => i64::MAX,
        });
        assert_eq!(
            rows, expected,
            "a scan through node {reader} sees every row once"
        );
        // Half the partitions live on the reader's group, read there; the others on the
        // other group.
        let own_group = |node: u8| (node - 1) / 2 == (reader - 1) / 2;
        assert!(scanned
            .senders
            .iter()
            .all(|sender| !own_group(sender.node().0) || sender.node().0 == reader));
        assert!(scanned
            .senders
            .iter()
            .any(|sender| !own_group(sender.node().0)));
    }
}

#[test]
fn a_schema_change_through_a_node_that_is_not_the_master_is_answered_through_that_node() {
    // The client's address means something only to the node it is connected to, so the
    // master answers node 2's dictionary, which answers the client.
    let (cluster, _) = cluster_with_users(2, 2, 17);
    let node_2_dict = BlockAddress::new(NodeId(2), DICT_BLOCK, 0);
    let relayed = cluster.delivered::<CreateTableConf>();
    assert!(
        relayed
            .iter()
            .any(|(_, receiver, _)| *receiver == node_2_dict),
        "the master answered node 2's dictionary: {relayed:?}"
    );
}

#[test]
fn a_schema_change_passed_on_to_a_master_that_fails_ends_with_an_unknown_outcome() {
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, node_settings), 64 << 20, 5);
    cluster.use_node(NodeId(2));
    cluster.simulation.crash(NodeId(1));
    let definition = TableDefinitionBody::new(users(), vec![]);
    let (code, message) = cluster
        .create_table(&definition)
        .expect_err("the master failed before answering");
    assert_eq!(code, ErrorCode::OutcomeUnknown as u32, "{message}");
    assert!(
        message.contains("may or may not have been made"),
        "{message}"
    );
}

#[test]
fn a_locked_read_sees_the_writes_its_transaction_made_earlier_in_the_same_batch() {
    let locked_read = |id| Op {
        lock: LockKind::Exclusive,
        ..read(id)
    };
    for seed in 0..20 {
        let (mut cluster, table) = cluster_with_users(2, 2, 900 + seed);
        insert_and_read_back_everywhere(&mut cluster, table, 2);
        cluster.use_node(NodeId(1 + (seed % 2) as u8));
        let ops = vec![
            rename(3, "renamed"),
            locked_read(3),
            write(OperationKind::Delete, 4, ""),
            locked_read(4),
            rename(5, "again"),
            locked_read(5),
        ];
        let done = cluster.execute(7_000, table, ops, Commit);
        assert_eq!(done.outcome, Committed, "seed {seed}: {}", done.message);
        let mut rows = done.rows;
        rows.sort_by_key(|(op, _)| *op);
        assert_eq!(
            rows,
            [(1, user(3, "renamed")), (5, user(5, "again"))],
            "seed {seed}"
        );
    }
}
