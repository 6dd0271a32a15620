//! A 2-replica cluster that keeps its data on disk, under rounds of writes: what the tests
//! of starts from disk and of node restarts from a node's own disk share.

use std::collections::BTreeMap;

use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_signal::NodeId;
use kista_storage::types::Value;

use super::{counter_op, Node, ScanSpec};

pub const LDM_INSTANCES: u16 = 2;
/// The smallest log (each `ldm`'s ring 4 files of 512 KiB, two largest records each), so
/// local checkpoints run often and a restore reads a checkpoint and then the log.
pub const REDO_LOG_BYTES: u64 = 4 << 20;
pub const GCP_INTERVAL_MS: u64 = 20;
pub const MEMORY_BYTES: u64 = 64 << 20;

pub fn node_settings(node: NodeId) -> NodeSettings {
    let mut settings = NodeSettings::new(node);
    settings.ldm_instances = LDM_INSTANCES;
    settings.redo_log_bytes = REDO_LOG_BYTES;
    settings.global_checkpoint_interval_ms = GCP_INTERVAL_MS;
    settings.checkpoint_write_bytes_per_sec = 4 << 20;
    settings
}

/// Every row of `counters` (id → value), read by a scan through `node`.
pub fn rows_through(
    cluster: &mut Node,
    node: NodeId,
    table: (u32, u32),
    scan: u64,
) -> BTreeMap<i64, i64> {
    cluster.use_node(node);
    let spec = ScanSpec::every_row(table, 256);
    let scanned = cluster.scan(scan, &spec, None);
    let int = |value: &Value| match value {
        Value::Int(int) => *int,
        other => panic!("a counters column: {other:?}"),
    };
    scanned
        .rows()
        .iter()
        .map(|row| (int(&row[0]), int(&row[1])))
        .collect()
}

/// Rows the write rounds write.
pub const ROWS: i64 = 300;

/// Rounds of writes to `ROWS` rows and deletes of every seventh, each acknowledged before
/// the next; `expected` follows what was acknowledged.
pub fn write_rounds(
    cluster: &mut Node,
    table: (u32, u32),
    client_tx: &mut u64,
    rounds: std::ops::Range<i64>,
    expected: &mut BTreeMap<i64, i64>,
) {
    for round in rounds {
        let deleted = (round * 7) % ROWS;
        let mut ops: Vec<_> = (0..ROWS)
            .filter(|&id| id != deleted)
            .map(|id| counter_op(OperationKind::Write, id, round))
            .collect();
        if expected.contains_key(&deleted) {
            ops.push(counter_op(OperationKind::Delete, deleted, 0));
        }
        let executed = cluster.execute(*client_tx, table, ops, ExecuteMode::Commit);
        *client_tx += 1;
        assert_eq!(
            executed.outcome,
            TransactionOutcome::Committed,
            "round {round}"
        );
        for id in 0..ROWS {
            expected.insert(id, round);
        }
        expected.remove(&deleted);
    }
}

/// Whether `node`'s log says its disk restores its data again after a node restart.
pub fn disk_holds_data_again(cluster: &Node, node: NodeId) -> bool {
    let log = cluster.simulation.log_of(node);
    log.iter()
        .any(|line| line.contains("disk restores its data again"))
}

/// Crashes `node` of a 2-node cluster, lets the other go on alone (requests go to it
/// from then on) and does `while_down`, then restarts `node` (it restores its own disk, if
/// usable, and copies the rest from its peer) and waits until it started.
pub fn restart_after(cluster: &mut Node, node: NodeId, while_down: impl FnOnce(&mut Node)) {
    cluster.simulation.crash(node);
    let survivor = if node == NodeId(1) {
        NodeId(2)
    } else {
        NodeId(1)
    };
    cluster.use_node(survivor);
    // The survivor detects the failure and the arbitrator lets it go on.
    cluster.run_for_ms(10_000);
    while_down(cluster);
    let since_ns = cluster.now_ns();
    cluster.restart_node(node, MEMORY_BYTES);
    let deadline_ns = since_ns + 30_000_000_000;
    let started = |cluster: &Node| {
        let heard = cluster.delivered::<NodeStarted>();
        heard.iter().any(|(at, to, started)| {
            *at >= since_ns && to.node() == node && started.node == u32::from(node.0)
        })
    };
    while !started(cluster) {
        assert!(cluster.now_ns() < deadline_ns, "{node:?} never started");
        cluster.run_for_ms(10);
    }
}

/// [`restart_after`] rounds of writes.
pub fn restart_under_writes(
    cluster: &mut Node,
    node: NodeId,
    table: (u32, u32),
    client_tx: &mut u64,
    rounds: std::ops::Range<i64>,
    expected: &mut BTreeMap<i64, i64>,
) {
    restart_after(cluster, node, |cluster| {
        write_rounds(cluster, table, client_tx, rounds, expected)
    });
}
