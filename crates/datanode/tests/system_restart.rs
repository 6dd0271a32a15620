//! Starts from disk (system restarts) in the deterministic simulation: every data node
//! stops or crashes, every one starts again on the disk it had, and the cluster serves
//! what its checkpoints and REDO logs restore: every acknowledged write once the GCI that
//! holds it was saved, a state the cluster was in after a crash under load (nothing of a
//! transaction without the rest), alike on every replica; and goes on to take writes,
//! checkpoint and restart again.

mod support;

use std::collections::BTreeMap;

use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_signal::NodeId;
use kista_storage::partition::ScanRange;
use kista_storage::types::Value;
use support::{cluster_settings, counter_op, Node, ScanSpec};

const LDM_INSTANCES: u16 = 2;
/// A small log (each `ldm`'s ring 4 files of 512 KiB), so local checkpoints run often and
/// a restore reads a checkpoint and then the log.
const REDO_LOG_BYTES: u64 = 4 << 20;
const GCP_INTERVAL_MS: u64 = 20;
const MEMORY_BYTES: u64 = 64 << 20;

fn node_settings(node: NodeId) -> NodeSettings {
    let mut settings = NodeSettings::new(node);
    settings.ldm_instances = LDM_INSTANCES;
    settings.redo_log_bytes = REDO_LOG_BYTES;
    settings.global_checkpoint_interval_ms = GCP_INTERVAL_MS;
    settings.checkpoint_write_bytes_per_sec = 4 << 20;
    settings
}

/// Every row of `counters` (id → value), read by a scan through `node`.
fn rows_through(
    cluster: &mut Node,
    node: NodeId,
    table: (u32, u32),
    scan: u64,
) -> BTreeMap<i64, i64> {
    cluster.use_node(node);
    let spec = ScanSpec {
        table,
        body: ScanBody {
            range: ScanRange::Full,
            filter: None,
            columns: vec![],
        },
        limit: u64::MAX,
        batch_rows: 256,
        ordered: false,
    };
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

/// Rounds of writes to `rows` rows and deletes of every seventh, each acknowledged before
/// the next; `expected` follows what was acknowledged.
fn write_rounds(
    cluster: &mut Node,
    table: (u32, u32),
    client_tx: &mut u64,
    rounds: std::ops::Range<i64>,
    expected: &mut BTreeMap<i64, i64>,
) {
    const ROWS: i64 = 300;
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

/// The rows the `ldm`s logged they restored from checkpoints in the latest start.
fn rows_from_checkpoints(cluster: &Node, master: NodeId) -> u64 {
    let log = cluster.simulation.log_of(master);
    let last = log
        .iter()
        .rev()
        .find(|line| line.starts_with("start from disk done"))
        .expect("the start ended");
    let rows = last
        .split_whitespace()
        .nth(4)
        .expect("the line counts rows");
    rows.parse().expect("a count")
}

#[test]
fn every_acknowledged_row_is_back_after_every_node_stops_and_starts_again() {
    let settings = cluster_settings(2, 2, node_settings);
    let mut cluster = Node::start_cluster(settings, MEMORY_BYTES, 5);
    let table = cluster.create_counters();
    let mut client_tx = 1;
    let mut expected = BTreeMap::new();
    write_rounds(&mut cluster, table, &mut client_tx, 1..150, &mut expected);
    // Every acknowledged write's GCI is saved within two intervals; the last few rounds
    // are in no checkpoint, only in the log.
    cluster.run_for_ms(5 * GCP_INTERVAL_MS);
    write_rounds(&mut cluster, table, &mut client_tx, 150..153, &mut expected);
    cluster.run_for_ms(5 * GCP_INTERVAL_MS);
    for life in 1..=2 {
        for node in [NodeId(1), NodeId(2)] {
            cluster.simulation.crash(node);
        }
        cluster.start_again(MEMORY_BYTES);
        assert!(
            rows_from_checkpoints(&cluster, NodeId(1)) > 0,
            "start {life}: restored from local checkpoints, not the log alone"
        );
        for (scan, node) in [(1, NodeId(1)), (2, NodeId(2))] {
            let rows = rows_through(&mut cluster, node, table, 100 * life + scan);
            assert_eq!(
                rows, expected,
                "start {life}: every row read through {node:?}"
            );
        }
        // The cluster goes on: writes, checkpoints, and another start after them.
        let next = 150 * (life as i64 + 1);
        write_rounds(
            &mut cluster,
            table,
            &mut client_tx,
            next..next + 100,
            &mut expected,
        );
        cluster.run_for_ms(5 * GCP_INTERVAL_MS);
        write_rounds(
            &mut cluster,
            table,
            &mut client_tx,
            next + 100..next + 103,
            &mut expected,
        );
        cluster.run_for_ms(5 * GCP_INTERVAL_MS);
    }
    assert!(cluster.stopped().is_empty(), "no node stopped");
}

#[test]
fn the_schema_is_back_after_a_start_from_disk_and_new_tables_get_new_ids() {
    let settings = cluster_settings(2, 2, node_settings);
    let mut cluster = Node::start_cluster(settings, MEMORY_BYTES, 9);
    let kept = cluster.create_counters();
    let definition = TableDefinitionBody::new(
        kista_storage::schema::TableSchema {
            name: "db/dropped".into(),
            ..support::counters()
        },
        Vec::new(),
    );
    let dropped = cluster.create_table(&definition).expect("created");
    cluster.drop_table(dropped.0).expect("dropped");
    let mut client_tx = 1;
    let mut expected = BTreeMap::new();
    write_rounds(&mut cluster, kept, &mut client_tx, 1..5, &mut expected);
    cluster.run_for_ms(5 * GCP_INTERVAL_MS);
    for node in [NodeId(1), NodeId(2)] {
        cluster.simulation.crash(node);
    }
    cluster.start_again(MEMORY_BYTES);
    assert_eq!(rows_through(&mut cluster, NodeId(2), kept, 1), expected);
    let again = cluster.create_table(&definition).expect("created again");
    assert!(again.0 > dropped.0, "table ids are not reused: {again:?}");
}

/// A chain of dependent transactions: step s writes the chain's counter row (`chain`) and
/// row `chain_row(chain, s)`, both with value s.
fn chain_row(chain: i64, step: i64) -> i64 {
    1000 * (chain + 1) + step
}

#[test]
fn a_crash_of_every_node_under_load_restores_a_state_the_cluster_was_in() {
    const CHAINS: i64 = 4;
    for seed in 0..6 {
        let settings = cluster_settings(2, 2, node_settings);
        let mut cluster = Node::start_cluster(settings, MEMORY_BYTES, 100 + seed);
        let table = cluster.create_counters();
        let mut steps = vec![0i64; CHAINS as usize];
        // (the step acknowledged, when) per chain.
        let mut acknowledged: Vec<Vec<(i64, u64)>> = vec![Vec::new(); CHAINS as usize];
        let mut client_tx = 1;
        let rounds = 60 + seed as usize * 13;
        for _ in 0..rounds {
            let mut sent = Vec::new();
            for chain in 0..CHAINS {
                let step = steps[chain as usize] + 1;
                cluster.use_node(NodeId(1 + (client_tx % 2) as u8));
                let ops = vec![
                    counter_op(OperationKind::Write, chain, step),
                    counter_op(OperationKind::Write, chain_row(chain, step), step),
                ];
                cluster.send_batch(client_tx, table, ops, ExecuteMode::Commit);
                sent.push((client_tx, chain));
                client_tx += 1;
            }
            let until_ns = cluster.now_ns() + 2_000_000_000;
            for (tx, chain) in sent {
                let result = cluster.batch_result(tx, until_ns);
                if result.is_some_and(|r| r.outcome == TransactionOutcome::Committed) {
                    steps[chain as usize] += 1;
                    acknowledged[chain as usize].push((steps[chain as usize], cluster.now_ns()));
                }
            }
            cluster.run_for_ms(1);
        }
        // Crash amid the load: disks keep what was synced and perhaps some of the rest.
        let saved = cluster.delivered::<GcpSaved>();
        let crash_ns = cluster.now_ns();
        for node in [NodeId(1), NodeId(2)] {
            cluster.simulation.crash(node);
        }
        let last_saved = saved.iter().map(|(_, _, s)| s.gci).max().unwrap_or(0);
        let saved_at = |at_ns: u64| {
            let before = saved.iter().filter(|(ns, _, _)| *ns <= at_ns);
            before.map(|(_, _, s)| s.gci).max().unwrap_or(0)
        };
        cluster.start_again(MEMORY_BYTES);
        let one = rows_through(&mut cluster, NodeId(1), table, 1);
        let two = rows_through(&mut cluster, NodeId(2), table, 2);
        assert_eq!(one, two, "seed {seed}: both replicas restored alike");
        for chain in 0..CHAINS {
            let counter = one.get(&chain).copied().unwrap_or(0);
            for step in 1..=steps[chain as usize] {
                let present = one.get(&chain_row(chain, step)) == Some(&step);
                assert_eq!(
                    present,
                    step <= counter,
                    "seed {seed}: chain {chain} step {step}"
                );
            }
            // A commit acknowledged while GCI s was the last saved belongs to s+2 or below.
            let surely = acknowledged[chain as usize]
                .iter()
                .filter(|&&(_, at_ns)| saved_at(at_ns) + 2 <= last_saved)
                .map(|&(step, _)| step)
                .max()
                .unwrap_or(0);
            assert!(
                counter >= surely,
                "seed {seed}: chain {chain} restored to step {counter}, acknowledged {surely} \
                 before GCI {last_saved} was saved (crash at {crash_ns} ns)"
            );
        }
    }
}

#[test]
fn a_node_whose_disk_is_behind_stops_and_the_others_serve_everything() {
    let settings = cluster_settings(2, 2, node_settings);
    let mut cluster = Node::start_cluster(settings, MEMORY_BYTES, 21);
    let table = cluster.create_counters();
    let mut client_tx = 1;
    let mut expected = BTreeMap::new();
    write_rounds(&mut cluster, table, &mut client_tx, 1..20, &mut expected);
    // Node 2 fails; node 1 goes on alone (the arbitrator lets it) and takes more writes.
    cluster.simulation.crash(NodeId(2));
    cluster.run_for_ms(10_000);
    write_rounds(&mut cluster, table, &mut client_tx, 20..40, &mut expected);
    cluster.run_for_ms(5 * GCP_INTERVAL_MS);
    cluster.simulation.crash(NodeId(1));
    cluster.start_again(MEMORY_BYTES);
    let stopped = cluster.simulation.stopped_nodes().to_vec();
    let (_, reason) = stopped
        .iter()
        .find(|(node, _)| *node == NodeId(2))
        .expect("node 2 stopped");
    assert!(reason.contains("data node 2 restores GCI"), "{reason}");
    assert_eq!(rows_through(&mut cluster, NodeId(1), table, 1), expected);
}
