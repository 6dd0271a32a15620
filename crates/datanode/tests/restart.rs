//! Node restart in the deterministic simulation: a crashed node comes back empty, joins,
//! gets its partitions copied while writes go on, and is started; afterwards it holds every
//! acknowledged write, which the test proves by crashing the *other* node and reading
//! everything from the restarted one.

mod support;

use std::collections::BTreeMap;

use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_signal::{BlockAddress, NodeId, TypedSignal};
use kista_storage::schema::{Column, TableSchema};
use kista_storage::types::{ColumnType, Value};
use support::{cluster_settings, primary_key, with_unique_index, Node, Op};

use ExecuteMode::Commit;
use TransactionOutcome::{Aborted, Committed};

const MS: u64 = 1_000_000;
const DATA_MEMORY_BYTES: u64 = 32 << 20;

fn int() -> ColumnType {
    ColumnType::Int {
        bytes: 8,
        signed: true,
    }
}

/// `id` → `value`, with `code` unique (always `value` + 1_000_000).
fn accounts() -> TableSchema {
    TableSchema {
        extra_metadata: Vec::new(),
        name: "accounts".into(),
        columns: vec![
            Column::new("id", int()),
            Column::new("value", int()),
            Column::new("code", int()),
        ],
        primary_key: vec![0],
    }
}

fn code_of(value: i64) -> i64 {
    value + 1_000_000
}

fn key_op(kind: OperationKind, id: i64, value: i64) -> Op {
    let key = primary_key(&accounts(), &[Value::Int(id)]);
    let (columns, values) = match kind {
        OperationKind::Insert | OperationKind::Write => (
            vec![],
            vec![
                Value::Int(id),
                Value::Int(value),
                Value::Int(code_of(value)),
            ],
        ),
        OperationKind::Update => (
            vec![1, 2],
            vec![Value::Int(value), Value::Int(code_of(value))],
        ),
        _ => (vec![], vec![]),
    };
    Op::by_primary_key(kind, key, columns, values)
}

fn node_settings(node: NodeId) -> NodeSettings {
    let mut settings = NodeSettings::new(node);
    settings.ldm_instances = 2;
    settings.heartbeat_interval_ms = 100;
    settings.lock_wait_timeout_ms = 300;
    // Small batches, so the copy takes long enough for writes to land in the middle.
    settings.copy_batch_rows_max = 2;
    settings
}

/// What the test expects each row to hold: `None` once deleted.
type Model = BTreeMap<i64, Option<i64>>;

/// One round of writes, one per row, all in flight at once through node 1: updates,
/// deletes and inserts (so a starting replica sees writes of rows it lacks). Returns how
/// many committed; the model follows what committed.
fn write_round(cluster: &mut Node, table: (u32, u32), model: &mut Model, round: i64) -> usize {
    cluster.use_node(NodeId(1));
    let mut sent = Vec::new();
    for (&id, &value) in model.iter() {
        let (kind, new) = match value {
            None => (OperationKind::Insert, Some(round * 1000 + id)),
            Some(_) if (id + round) % 7 == 0 => (OperationKind::Delete, None),
            Some(_) => (OperationKind::Update, Some(round * 1000 + id)),
        };
        let tx = (round as u64) << 32 | id as u64;
        let op = key_op(kind, id, new.unwrap_or(0));
        cluster.send_batch(tx, table, vec![op], Commit);
        sent.push((tx, id, new));
    }
    let mut committed = 0;
    for (tx, id, new) in sent {
        let done = cluster
            .batch_result(tx, cluster.now_ns() + 5_000 * MS)
            .unwrap_or_else(|| panic!("round {round}: row {id} got no answer"));
        match done.outcome {
            Committed => {
                model.insert(id, new);
                committed += 1;
            }
            Aborted => {
                let code = ErrorCode::from_u32(done.code);
                assert_eq!(
                    code.map(ErrorCode::category),
                    Some(ErrorCategory::Temporary),
                    "round {round}: row {id}: {}",
                    done.message
                );
            }
            other => panic!("{other:?}"),
        }
    }
    committed
}

/// Whether node `node` heard that node 2 started.
fn started(cluster: &Node, node: u8) -> bool {
    heard_started(cluster, node, 2).is_some()
}

/// When node `node` heard that node `restarted` started, if it did.
fn heard_started(cluster: &Node, node: u8, restarted: u8) -> Option<u64> {
    cluster
        .delivered::<NodeStarted>()
        .iter()
        .find(|(_, receiver, started)| {
            receiver.node() == NodeId(node)
                && receiver.block() == TC_BLOCK
                && started.node == u32::from(restarted)
        })
        .map(|(at, _, _)| *at)
}

/// Every row as node `via` reads it, by primary key and by its unique code.
fn check_rows(cluster: &mut Node, table: (u32, u32), model: &Model, via: u8, seed: u64) {
    cluster.use_node(NodeId(via));
    for (&id, &value) in model {
        let read = cluster.execute(
            900_000 + id as u64,
            table,
            vec![key_op(OperationKind::Read, id, 0)],
            Commit,
        );
        assert_eq!(read.outcome, Committed, "seed {seed}: {}", read.message);
        let found = read.rows.first().map(|(_, row)| row[1].clone());
        assert_eq!(found, value.map(Value::Int), "seed {seed}: row {id}");
        let Some(value) = value else { continue };
        let by_code = Op {
            kind: OperationKind::Read,
            lock: LockKind::Shared,
            index_id: 1,
            body: KeyBody {
                key: primary_key(
                    &TableSchema {
                        extra_metadata: Vec::new(),
                        name: "code".into(),
                        columns: vec![Column::new("code", int())],
                        primary_key: vec![0],
                    },
                    &[Value::Int(code_of(value))],
                ),
                columns: vec![],
                values: vec![],
            },
        };
        let read = cluster.execute(950_000 + id as u64, table, vec![by_code], Commit);
        assert_eq!(read.outcome, Committed, "seed {seed}: {}", read.message);
        let found = read.rows.first().map(|(_, row)| row[0].clone());
        assert_eq!(found, Some(Value::Int(id)), "seed {seed}: code of row {id}");
    }
}

#[test]
fn a_restarted_node_catches_up_under_load_and_then_holds_every_acknowledged_write() {
    for seed in 0..8 {
        let nodes = cluster_settings(2, 2, node_settings);
        let mut cluster = Node::start_cluster(nodes, DATA_MEMORY_BYTES, 500 + seed);
        let definition = with_unique_index(accounts(), "by_code", 2);
        let table = cluster.create_table(&definition).expect("created");
        let mut model: Model = (0..120).map(|id| (id, None)).collect();
        assert_eq!(write_round(&mut cluster, table, &mut model, 1), 120);

        cluster.simulation.crash(NodeId(2));
        cluster.run_for_ms(1_000);
        write_round(&mut cluster, table, &mut model, 2);
        cluster.restart_node(NodeId(2), DATA_MEMORY_BYTES);

        // Writes go on while node 2 joins and its partitions are copied.
        let mut round = 3;
        while !started(&cluster, 1) {
            assert!(round < 200, "seed {seed}: node 2 never started");
            write_round(&mut cluster, table, &mut model, round);
            round += 1;
        }
        assert!(round > 4, "seed {seed}: the restart ran under load");
        let copied: u64 = cluster
            .delivered::<PartitionCopied>()
            .iter()
            .map(|(_, _, copied)| copied.rows)
            .sum();
        let upkeep_passed = cluster.delivered::<StartingUpkeep>().len();
        eprintln!("seed {seed}: {round} rounds, {copied} rows copied, {upkeep_passed} upkeeps");
        assert!(copied > 0, "seed {seed}: rows were copied");
        assert!(
            upkeep_passed > 0,
            "seed {seed}: writes reached the starting replica"
        );
        assert!(started(&cluster, 2), "seed {seed}: node 2 knows it started");
        let committed = write_round(&mut cluster, table, &mut model, round);
        assert!(committed > 0, "seed {seed}: writes go on once started");

        // Node 2 now holds everything: lose node 1 and read it all there.
        cluster.simulation.crash(NodeId(1));
        cluster.run_for_ms(1_000);
        check_rows(&mut cluster, table, &model, 2, seed);
    }
}

/// A cluster of `nodes` data nodes holding `rows` accounts, whose node 2 crashed and was
/// removed, with a transaction (client number 7) that inserted row 500 through node 1
/// along chains without node 2 and is left open.
fn cluster_with_open_insert(nodes: u8, rows: i64, seed: u64) -> (Node, (u32, u32), Model) {
    let mut cluster = Node::start_cluster(
        cluster_settings(nodes, 2, node_settings),
        DATA_MEMORY_BYTES,
        seed,
    );
    let table = cluster
        .create_table(&with_unique_index(accounts(), "by_code", 2))
        .expect("created");
    let mut model: Model = (0..rows).map(|id| (id, None)).collect();
    write_round(&mut cluster, table, &mut model, 1);
    cluster.simulation.crash(NodeId(2));
    cluster.run_for_ms(1_000);
    cluster.use_node(NodeId(1));
    let open = cluster.execute(
        7,
        table,
        vec![key_op(OperationKind::Insert, 500, 500)],
        ExecuteMode::NoCommit,
    );
    assert_eq!(open.outcome, TransactionOutcome::Open, "{}", open.message);
    (cluster, table, model)
}

#[test]
fn a_transaction_open_when_the_restart_begins_holds_the_copy_back_until_it_ends() {
    let (mut cluster, table, mut model) = cluster_with_open_insert(2, 20, 77);
    cluster.restart_node(NodeId(2), DATA_MEMORY_BYTES);
    cluster.run_for_ms(2_000);
    assert!(
        cluster.delivered::<CopyPartition>().is_empty(),
        "no partition is copied while a transaction may still write outside the new chains"
    );
    let committed = cluster.execute(7, table, vec![], Commit);
    assert_eq!(committed.outcome, Committed, "{}", committed.message);
    model.insert(500, Some(500));
    cluster.run_for_ms(2_000);
    assert!(
        started(&cluster, 1),
        "node 2 started once the transaction ended"
    );

    cluster.simulation.crash(NodeId(1));
    cluster.run_for_ms(1_000);
    check_rows(&mut cluster, table, &model, 2, 77);
}

#[test]
fn a_failure_during_a_restart_stops_the_restarting_node_which_then_restarts_again() {
    // The transaction left open holds node 2's restart in its second step.
    let (mut cluster, table, mut model) = cluster_with_open_insert(4, 100, 91);
    cluster.restart_node(NodeId(2), DATA_MEMORY_BYTES);
    cluster.run_for_ms(1_000);
    assert!(!cluster.delivered::<AddStartingReplica>().is_empty());
    // Node 3 (the other node group) fails in the middle of node 2's restart.
    cluster.simulation.crash(NodeId(3));
    cluster.run_for_ms(2_000);
    assert_eq!(cluster.stopped(), [2], "node 2 gave up its restart");
    assert!(!started(&cluster, 1));
    let ended = cluster.execute(7, table, vec![], Commit);
    if ended.outcome == Committed {
        model.insert(500, Some(500));
    }
    write_round(&mut cluster, table, &mut model, 2);

    cluster.restart_node(NodeId(2), DATA_MEMORY_BYTES);
    cluster.run_for_ms(3_000);
    assert!(started(&cluster, 1), "the second restart completes");
    cluster.simulation.crash(NodeId(1));
    cluster.run_for_ms(1_000);
    check_rows(&mut cluster, table, &model, 2, 91);
}

/// Three data nodes in one group with three replicas, holding `rows` accounts.
fn three_replica_cluster(rows: i64, seed: u64) -> (Node, (u32, u32), Model) {
    let nodes = cluster_settings(3, 3, node_settings);
    let mut cluster = Node::start_cluster(nodes, DATA_MEMORY_BYTES, seed);
    let table = cluster
        .create_table(&with_unique_index(accounts(), "by_code", 2))
        .expect("created");
    let mut model: Model = (0..rows).map(|id| (id, None)).collect();
    assert_eq!(
        write_round(&mut cluster, table, &mut model, 1),
        rows as usize
    );
    (cluster, table, model)
}

#[test]
fn a_node_that_joins_while_another_restarts_gets_its_rows_from_a_started_replica() {
    // Three replicas: nodes 2 and 3 crash, then restart together; node 3 joins while node
    // 2's restart runs and waits its turn, holding nothing yet. Node 2's rows must come
    // from node 1, the one started replica.
    let (mut cluster, table, mut model) = three_replica_cluster(60, 41);
    cluster.simulation.crash(NodeId(2));
    cluster.simulation.crash(NodeId(3));
    cluster.run_for_ms(1_000);
    write_round(&mut cluster, table, &mut model, 2);
    // A transaction left open holds the first restart back until both nodes joined.
    cluster.use_node(NodeId(1));
    let insert = vec![key_op(OperationKind::Insert, 500, 500)];
    let open = cluster.execute(7, table, insert, ExecuteMode::NoCommit);
    assert_eq!(open.outcome, TransactionOutcome::Open, "{}", open.message);
    cluster.restart_node(NodeId(2), DATA_MEMORY_BYTES);
    cluster.restart_node(NodeId(3), DATA_MEMORY_BYTES);
    cluster.run_for_ms(1_000);
    let committed = cluster.execute(7, table, vec![], Commit);
    assert_eq!(committed.outcome, Committed, "{}", committed.message);
    model.insert(500, Some(500));
    cluster.run_for_ms(3_000);

    let (Some(node_2_started), Some(node_3_started)) =
        (heard_started(&cluster, 1, 2), heard_started(&cluster, 1, 3))
    else {
        panic!("both restarted nodes started");
    };
    let joined_at = |node: u32| {
        cluster
            .delivered::<NodeJoined>()
            .iter()
            .find(|(_, receiver, joined)| receiver.node() == NodeId(1) && joined.joined == node)
            .map(|(at, _, _)| *at)
            .expect("joined")
    };
    let (first_started, second_joined) = if node_2_started < node_3_started {
        (node_2_started, joined_at(3))
    } else {
        (node_3_started, joined_at(2))
    };
    assert!(
        second_joined < first_started,
        "one node joined during the other's restart"
    );
    for (at, copier, copy) in cluster.delivered::<CopyPartition>() {
        let copier_started = match copier.node().0 {
            1 => Some(0),
            other => heard_started(&cluster, 1, other),
        };
        assert!(
            copier_started.is_some_and(|started| started < at),
            "node {} copied partition {} before it had started",
            copier.node().0,
            copy.partition
        );
    }

    // Both restarted nodes hold every row: lose node 1 and read through each.
    cluster.simulation.crash(NodeId(1));
    cluster.run_for_ms(1_000);
    check_rows(&mut cluster, table, &model, 2, 41);
    check_rows(&mut cluster, table, &model, 3, 41);
}

#[test]
fn a_restarted_node_shuts_out_a_node_the_cluster_removed_while_it_was_down() {
    // Three replicas. Node 3 is paused and removed; node 2 crashes, restarts and joins
    // node 1. Node 3 wakes still believing in the first membership and takes writes:
    // node 1 ignores it, and so must node 2, whose restart came after the removal, or
    // node 3 would leave rows locked there (or commit with node 2 alone).
    let (mut cluster, table, mut model) = three_replica_cluster(24, 43);
    cluster.simulation.pause(NodeId(3));
    cluster.run_for_ms(1_000);
    cluster.simulation.crash(NodeId(2));
    cluster.run_for_ms(1_000);
    cluster.restart_node(NodeId(2), DATA_MEMORY_BYTES);
    cluster.run_for_ms(2_000);
    assert!(started(&cluster, 1), "node 2 restarted");

    // Writes sent to node 3 while it sleeps run when it wakes.
    cluster.use_node(NodeId(3));
    for id in 0..24 {
        let op = key_op(OperationKind::Update, id, 3_000 + id);
        cluster.send_batch(800_000 + id as u64, table, vec![op], Commit);
    }
    cluster.simulation.resume(NodeId(3));
    cluster.run_for_ms(3_000);
    let stopped = cluster.stopped();
    assert!(stopped.contains(&3), "node 3 stopped: {stopped:?}");
    for (signal, _) in cluster.take_inbox() {
        if let Ok(conf) = ExecuteConf::from_signal(&signal) {
            assert_ne!(
                conf.outcome, Committed,
                "node 3 committed {}",
                conf.client_tx
            );
        }
    }

    // Nothing node 3 did committed, and nothing is left locked: every row takes a write.
    check_rows(&mut cluster, table, &model, 1, 43);
    assert_eq!(write_round(&mut cluster, table, &mut model, 2), 24);
    check_rows(&mut cluster, table, &model, 2, 43);
}

/// The master's word that a restarted node started and the membership's word that it
/// joined reach its coordinator from different blocks, in either order (`random_faults`
/// seed 33166 had the first come 50 ms early). Until it joined, the coordinator knows
/// neither the members (its chains named a node that had failed before it started, and
/// the transaction waited for that node forever) nor its incarnation (its transaction ids
/// repeated its earlier life's): it serves no client yet.
#[test]
fn a_restarted_coordinator_told_it_started_before_it_joined_serves_no_client_yet() {
    let nodes = cluster_settings(2, 2, node_settings);
    let mut cluster = Node::start_cluster(nodes, DATA_MEMORY_BYTES, 33);
    let table = cluster
        .create_table(&with_unique_index(accounts(), "by_code", 2))
        .expect("created");
    let mut model: Model = (0..20).map(|id| (id, None)).collect();
    write_round(&mut cluster, table, &mut model, 1);
    cluster.simulation.crash(NodeId(2));
    cluster.run_for_ms(1_000);
    let restarted_at = cluster.now_ns();
    cluster.restart_node(NodeId(2), DATA_MEMORY_BYTES);
    // The membership's word waits on the cut; the word that it started comes first.
    cluster.simulation.cut(NodeId(1), NodeId(2));
    let coordinator = BlockAddress::new(NodeId(2), TC_BLOCK, 0);
    // Injected as from the node itself: the cut holds what comes from node 1.
    let sender = BlockAddress::new(NodeId(2), DICT_BLOCK, 0);
    (cluster.simulation).inject(NodeStarted { node: 2 }.to_signal(coordinator, sender));
    cluster.run_for_ms(1);
    let joined = (cluster.delivered::<NodeJoined>().iter())
        .any(|&(at, receiver, _)| at >= restarted_at && receiver == coordinator);
    assert!(
        heard_started(&cluster, 2, 2).is_some() && !joined,
        "started, not joined yet"
    );

    cluster.use_node(NodeId(2));
    let early = cluster.execute(9, table, vec![key_op(OperationKind::Update, 1, 7)], Commit);
    assert_eq!(
        ErrorCode::from_u32(early.code),
        Some(ErrorCode::NodeStarting),
        "{}",
        early.message
    );
    cluster.simulation.heal();
    cluster.run_for_ms(3_000);
    assert!(started(&cluster, 1), "node 2 restarts as usual");
    let later = cluster.execute(10, table, vec![key_op(OperationKind::Update, 1, 8)], Commit);
    assert_eq!(later.outcome, Committed, "{}", later.message);
}
