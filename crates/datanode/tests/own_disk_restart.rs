//! Node restarts from the node's own disk in the deterministic simulation: a data node that
//! failed restores its checkpoint and REDO log to the latest GCI it recorded, then copies
//! from its peer only the rows written and the keys deleted since. One whose peer no
//! longer knows the deletes that far back, or whose own disk is damaged, is copied whole.
//! Either way it then holds what its peer holds: read through it alone, every row
//! acknowledged is there and no deleted one.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_signal::NodeId;
use support::disk_cluster::*;
use support::{cluster_settings, counter_op, Node};

/// The master's line saying how `node` started.
fn how_it_started(cluster: &Node, master: NodeId, node: NodeId) -> String {
    let prefix = format!("node {} started", node.0);
    let log = cluster.simulation.log_of(master);
    let line = log.iter().rev().find(|line| line.starts_with(&prefix));
    line.expect("the master logged the restart").to_string()
}

/// A row a transaction writes (`Some` value) or deletes (`None`).
type Change = (i64, Option<i64>);

/// A 2-node cluster that took rounds of writes, all saved, whose node 2 then failed and
/// restarted after node 1 alone committed `changes` in one transaction: the cluster, its
/// `counters` table and the rows it holds.
fn node_2_restarted_after(
    settings: impl Fn(NodeId) -> NodeSettings,
    seed: u64,
    changes: Vec<Change>,
) -> (Node, (u32, u32), BTreeMap<i64, i64>) {
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, settings), MEMORY_BYTES, seed);
    let table = cluster.create_counters();
    let mut client_tx = 1;
    let mut expected = BTreeMap::new();
    write_rounds(&mut cluster, table, &mut client_tx, 1..20, &mut expected);
    // Every write's GCI is recorded within two intervals: node 2's disk holds them all.
    cluster.run_for_ms(5 * GCP_INTERVAL_MS);
    let ops = changes.iter().map(|&(id, value)| match value {
        Some(value) => counter_op(OperationKind::Write, id, value),
        None => counter_op(OperationKind::Delete, id, 0),
    });
    let ops: Vec<_> = ops.collect();
    restart_after(&mut cluster, NodeId(2), |cluster| {
        let done = cluster.execute(client_tx, table, ops, ExecuteMode::Commit);
        assert_eq!(
            done.outcome,
            TransactionOutcome::Committed,
            "{}",
            done.message
        );
    });
    for (id, value) in changes {
        match value {
            Some(value) => expected.insert(id, value),
            None => expected.remove(&id),
        };
    }
    (cluster, table, expected)
}

/// Every row, read through node 2 once node 1 failed: what node 2 alone holds.
fn rows_on_node_2_alone(cluster: &mut Node, table: (u32, u32)) -> BTreeMap<i64, i64> {
    cluster.simulation.crash(NodeId(1));
    cluster.use_node(NodeId(2));
    cluster.run_for_ms(10_000);
    rows_through(cluster, NodeId(2), table, 1)
}

fn writes(ids: impl IntoIterator<Item = i64>, value: i64) -> Vec<Change> {
    ids.into_iter().map(|id| (id, Some(value))).collect()
}

fn deletes(ids: impl IntoIterator<Item = i64>) -> Vec<Change> {
    ids.into_iter().map(|id| (id, None)).collect()
}

#[test]
fn a_node_restarted_from_its_own_disk_copies_only_what_changed_while_it_was_down() {
    // Five rows updated, two inserted, three deleted while node 2 was down.
    let mut changes = writes((0..5).chain([5_000, 5_001]), 1_000);
    changes.extend(deletes(10..13));
    let (mut cluster, table, expected) = node_2_restarted_after(node_settings, 3, changes);
    let started = how_it_started(&cluster, NodeId(1), NodeId(2));
    assert!(started.contains("from its own disk"), "{started}");
    assert!(
        started.contains("7 rows and 3 deleted keys copied"),
        "{started}"
    );
    assert!(
        started.contains("(0 of 4 partitions copied whole"),
        "{started}"
    );
    assert_eq!(rows_on_node_2_alone(&mut cluster, table), expected);
}

#[test]
fn a_node_whose_peer_forgot_the_deletes_since_its_disk_is_copied_whole() {
    // Each partition keeps three deleted keys (8 bytes and 32 more each): forty deletes
    // while node 2 is down outrun every partition's memory of them.
    let forgetful = |node| NodeSettings {
        deleted_keys_per_partition_bytes_max: 120,
        ..node_settings(node)
    };
    let (mut cluster, table, expected) = node_2_restarted_after(forgetful, 5, deletes(20..60));
    let started = how_it_started(&cluster, NodeId(1), NodeId(2));
    assert!(started.contains("from its own disk"), "{started}");
    assert!(
        started.contains("(4 of 4 partitions copied whole"),
        "{started}"
    );
    assert_eq!(rows_on_node_2_alone(&mut cluster, table), expected);
}

#[test]
fn a_node_whose_log_is_damaged_is_copied_whole() {
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, node_settings), MEMORY_BYTES, 7);
    let table = cluster.create_counters();
    let mut client_tx = 1;
    let mut expected = BTreeMap::new();
    write_rounds(&mut cluster, table, &mut client_tx, 1..20, &mut expected);
    cluster.run_for_ms(5 * GCP_INTERVAL_MS);
    let disk = cluster.disks[&NodeId(2)].clone();
    restart_after(&mut cluster, NodeId(2), |cluster| {
        // Every file of ldm 0's log reads as zeros: its GCIs' marks are gone.
        for file in 0..4 {
            let path = format!("redo/ldm-0/{file:02}.log");
            let bytes = disk.contents(Path::new(&path)).expect("a log file");
            disk.put(Path::new(&path), vec![0; bytes.len()]);
        }
        write_rounds(cluster, table, &mut client_tx, 20..22, &mut expected);
    });
    let node_2_log = cluster.simulation.log_of(NodeId(2)).join("\n");
    assert!(
        node_2_log.contains("ldm 0: this node's disk cannot be restored before its copy")
            && node_2_log.contains("redo/ldm-0/ is damaged or missing"),
        "{node_2_log}"
    );
    let started = how_it_started(&cluster, NodeId(1), NodeId(2));
    assert!(
        started.contains("its disk held nothing usable"),
        "{started}"
    );
    assert_eq!(rows_on_node_2_alone(&mut cluster, table), expected);
}
