//! Global checkpoints in the deterministic simulation: every GCI the master reports saved is
//! marked in every member's REDO log, and the logs restored to any marked GCI give a state
//! the cluster was in (no transaction in part, none without one it followed), the same on
//! every replica; through the master's failure and a crash of every node.
//!
//! The workload: `CHAINS` chains of transactions run side by side, coordinated by each node
//! in turn. Step i of chain c writes the chain's counter (row c) and row `row_of(c, i)` in
//! one transaction, both to `tagged(i, transaction)`, and starts only once step i-1
//! committed. So in any state the cluster was in, chain c's counter is at some step v, rows
//! `row_of(c, 1..=v)` exist, and no later one does.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kista_datanode::dist::PartitionMap;
use kista_datanode::metrics::NodeCounters;
use kista_datanode::node::{data_node_blocks, data_node_start_signals, NodeSettings};
use kista_datanode::protocol::*;
use kista_runtime::io::SimulatedDisk;
use kista_signal::NodeId;
use kista_storage::memory::DataMemory;
use kista_storage::redo::LogRing;
use kista_storage::types::Value;
use support::redo_logs::{marked_in_all, read_log, restored, Entry, Logged};
use support::{cluster_settings, counter_op, counters, primary_key, Node};

const LDM_INSTANCES: u16 = 2;
const REDO_LOG_BYTES: u64 = 16 << 20;
const CHAINS: i64 = 4;
const GCP_INTERVAL_MS: u64 = 20;

fn node_settings(node: NodeId) -> NodeSettings {
    let mut settings = NodeSettings::new(node);
    settings.ldm_instances = LDM_INSTANCES;
    settings.tc_instances = 2;
    settings.redo_log_bytes = REDO_LOG_BYTES;
    settings.global_checkpoint_interval_ms = GCP_INTERVAL_MS;
    settings
}

fn ring() -> LogRing {
    LogRing {
        file_bytes: REDO_LOG_BYTES / u64::from(LDM_INSTANCES) / 4,
        files: 4,
    }
}

fn row_of(chain: i64, step: i64) -> i64 {
    1000 * (chain + 1) + step
}

/// The value a step writes: its step and its transaction (the client's number), so a step
/// tried again is told apart.
fn tagged(step: i64, client_tx: u64) -> i64 {
    step * 1_000_000 + client_tx as i64
}

fn step_of(value: i64) -> i64 {
    value / 1_000_000
}

/// Every `ldm` log of a node.
fn logs_of(disk: &SimulatedDisk) -> Vec<Vec<Entry>> {
    (0..LDM_INSTANCES)
        .map(|ldm| read_log(disk, ring(), ldm))
        .collect()
}

/// The chains' workload and what it knows of their progress.
struct Chains {
    table: (u32, u32),
    /// Per chain: the last step acknowledged as committed.
    committed: Vec<i64>,
    client_tx: u64,
}

impl Chains {
    fn new(cluster: &mut Node) -> Self {
        Self {
            table: cluster.create_counters(),
            committed: vec![0; CHAINS as usize],
            client_tx: 1,
        }
    }

    /// One step of every chain at once, each coordinated by one of `nodes` in turn.
    fn step(&mut self, cluster: &mut Node, nodes: &[NodeId]) {
        let sent = self.send_step(cluster, nodes);
        self.collect(cluster, sent);
    }

    /// Sends one step of every chain; returns what was sent.
    fn send_step(&mut self, cluster: &mut Node, nodes: &[NodeId]) -> Vec<(u64, i64, i64)> {
        let mut sent = Vec::new();
        for chain in 0..CHAINS {
            let step = self.committed[chain as usize] + 1;
            let node = nodes[(self.client_tx as usize + chain as usize) % nodes.len()];
            cluster.use_node(node);
            let value = tagged(step, self.client_tx);
            let ops = vec![
                counter_op(OperationKind::Write, chain, value),
                counter_op(OperationKind::Write, row_of(chain, step), value),
            ];
            cluster.send_batch(self.client_tx, self.table, ops, ExecuteMode::Commit);
            sent.push((self.client_tx, chain, step));
            self.client_tx += 1;
        }
        sent
    }

    /// Waits for the steps' outcomes. A step whose outcome is not known (its coordinator
    /// failed) is tried again next time: a step only writes, so doing it twice changes
    /// nothing.
    fn collect(&mut self, cluster: &mut Node, sent: Vec<(u64, i64, i64)>) {
        let until_ns = cluster.now_ns() + 2_000_000_000;
        for (client_tx, chain, step) in sent {
            let result = cluster.batch_result(client_tx, until_ns);
            if result.is_some_and(|r| r.outcome == TransactionOutcome::Committed) {
                self.committed[chain as usize] = step;
            }
        }
    }
}

/// Checks that `rows` is a state the chains were in; returns each chain's counter.
fn chains_consistent(rows: &BTreeMap<i64, i64>, gci: u64) -> Vec<i64> {
    (0..CHAINS)
        .map(|chain| {
            let counter = rows.get(&chain).copied().map_or(0, step_of);
            for step in 1..=counter {
                assert_eq!(
                    rows.get(&row_of(chain, step)).copied().map(step_of),
                    Some(step),
                    "GCI {gci}: chain {chain} at {counter} lacks step {step}"
                );
            }
            assert!(
                !rows.contains_key(&row_of(chain, counter + 1)),
                "GCI {gci}: chain {chain} at {counter} has step {} already",
                counter + 1
            );
            counter
        })
        .collect()
}

/// Checks every GCI marked in all of a node's logs, in order; returns them with the state
/// each restores to.
fn check_node(disk: &SimulatedDisk) -> BTreeMap<u64, BTreeMap<i64, i64>> {
    let logs = logs_of(disk);
    for log in &logs {
        marks_follow_their_gcis(log);
    }
    let mut states = BTreeMap::new();
    let mut previous = vec![0; CHAINS as usize];
    for gci in marked_in_all(&logs) {
        let rows = restored(&logs, gci);
        let counters = chains_consistent(&rows, gci);
        for (chain, (now, before)) in counters.iter().zip(&previous).enumerate() {
            assert!(now >= before, "GCI {gci}: chain {chain} went back");
        }
        previous = counters;
        states.insert(gci, rows);
    }
    states
}

/// Checks that a log's mark of GCI n follows every change of n and below: a change of n
/// after it would be missing from n restored.
fn marks_follow_their_gcis(log: &[Entry]) {
    let mut marked = 0;
    for entry in log {
        match entry.record {
            Logged::GciDone => marked = marked.max(entry.gci),
            _ => assert!(
                entry.gci > marked,
                "a change of GCI {} after the mark of GCI {marked}",
                entry.gci
            ),
        }
    }
}

/// Checks that each transaction's changes carry one GCI in every log of `disks`.
fn one_gci_per_transaction(disks: &[&SimulatedDisk]) {
    let mut gci_of: HashMap<i64, u64> = HashMap::new();
    let mut writes = 0;
    for disk in disks {
        for entry in logs_of(disk).into_iter().flatten() {
            let Logged::Write(_, value) = entry.record else {
                continue;
            };
            writes += 1;
            let gci = *gci_of.entry(value).or_insert(entry.gci);
            assert_eq!(gci, entry.gci, "transaction {value} in two GCIs");
        }
    }
    // Each transaction writes two rows on every replica.
    assert_eq!(
        writes,
        gci_of.len() * 2 * disks.len(),
        "every replica logs both rows"
    );
}

/// The GCIs the master reported saved, in order.
fn saved_gcis(cluster: &Node) -> Vec<u64> {
    let mut saved: Vec<u64> = cluster
        .delivered::<GcpSaved>()
        .into_iter()
        .map(|(_, _, saved)| saved.gci)
        .collect();
    saved.dedup();
    saved
}

#[test]
fn every_saved_gci_restores_every_replica_to_a_state_the_cluster_was_in() {
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, node_settings), 64 << 20, 7);
    cluster.run_for_ms(200);
    let mut chains = Chains::new(&mut cluster);
    let nodes = [NodeId(1), NodeId(2)];
    for _ in 0..150 {
        chains.step(&mut cluster, &nodes);
    }
    cluster.run_for_ms(5 * GCP_INTERVAL_MS);
    let saved = saved_gcis(&cluster);
    assert!(saved.len() >= 10, "GCIs advance: {saved:?}");
    assert!(saved.windows(2).all(|w| w[0] < w[1]), "{saved:?}");

    let states: Vec<_> = nodes
        .iter()
        .map(|n| check_node(&cluster.disks[n]))
        .collect();
    for gci in &saved {
        for (node, node_states) in nodes.iter().zip(&states) {
            assert!(
                node_states.contains_key(gci),
                "saved GCI {gci} marked on {node:?}"
            );
        }
        assert_eq!(
            states[0][gci], states[1][gci],
            "both replicas restore GCI {gci} alike"
        );
    }
    let last = saved.last().unwrap();
    assert_eq!(
        chains_consistent(&states[0][last], *last),
        chains.committed,
        "the last saved GCI holds every committed step"
    );
    let restored_steps: usize = states[0].values().map(|rows| rows.len()).max().unwrap();
    assert!(
        restored_steps > 100,
        "the GCIs hold the work: {restored_steps}"
    );
    one_gci_per_transaction(&[&cluster.disks[&nodes[0]], &cluster.disks[&nodes[1]]]);
}

/// Every round waits for each member's control file write: each twin is opened once and
/// then overwritten in place, a sync of its data alone (emptying it first would make each
/// sync commit the file system's journal too).
#[test]
fn the_control_file_is_overwritten_in_place_round_after_round() {
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, node_settings), 64 << 20, 7);
    cluster.run_for_ms(40 * GCP_INTERVAL_MS);
    let saved = saved_gcis(&cluster);
    assert!(saved.len() >= 20, "GCIs advance: {saved:?}");
    for node in [NodeId(1), NodeId(2)] {
        for twin in ["control/node.0", "control/node.1"] {
            // Once by the start's read, once by the first write to it.
            let opens = cluster.disks[&node].opens(std::path::Path::new(twin));
            assert!(opens <= 2, "{twin} of {node:?} opened {opens} times");
        }
    }
}

#[test]
fn checkpoints_go_on_when_the_master_fails_amid_a_round() {
    // The crash lands in a different step of a round for each seed.
    for seed in 0..12u64 {
        let settings = cluster_settings(3, 3, node_settings);
        let mut cluster = Node::start_cluster(settings, 64 << 20, 100 + seed);
        cluster.run_for_ms(200);
        let mut chains = Chains::new(&mut cluster);
        let all = [NodeId(1), NodeId(2), NodeId(3)];
        for _ in 0..20 {
            chains.step(&mut cluster, &all);
        }
        // Node 1 is the president, so the master, and coordinates a third of the steps:
        // it crashes with some of them committing.
        let sent = chains.send_step(&mut cluster, &all);
        cluster
            .simulation
            .run_until(cluster.now_ns() + seed * 20_000);
        cluster.simulation.crash(NodeId(1));
        let saved_before = *saved_gcis(&cluster).last().unwrap();
        chains.collect(&mut cluster, sent);
        let survivors = [NodeId(2), NodeId(3)];
        for _ in 0..30 {
            chains.step(&mut cluster, &survivors);
        }
        cluster.run_for_ms(5 * GCP_INTERVAL_MS);
        let saved = saved_gcis(&cluster);
        let after: Vec<u64> = saved.into_iter().filter(|&g| g > saved_before).collect();
        assert!(
            after.len() >= 5,
            "seed {seed}: GCIs advance after the master failed"
        );
        let states: Vec<_> = survivors
            .iter()
            .map(|n| check_node(&cluster.disks[n]))
            .collect();
        for gci in &after {
            assert_eq!(states[0][gci], states[1][gci], "seed {seed}: GCI {gci}");
        }
        let last = after.last().unwrap();
        assert_eq!(
            chains_consistent(&states[0][last], *last),
            chains.committed,
            "seed {seed}: the last saved GCI holds every committed step"
        );
        one_gci_per_transaction(&[&cluster.disks[&survivors[0]], &cluster.disks[&survivors[1]]]);
    }
}

#[test]
fn after_every_node_crashed_each_log_still_holds_every_saved_gci() {
    for seed in 0..12u64 {
        let settings = cluster_settings(2, 2, node_settings);
        let mut cluster = Node::start_cluster(settings, 64 << 20, 200 + seed);
        cluster.run_for_ms(200);
        let mut chains = Chains::new(&mut cluster);
        let nodes = [NodeId(1), NodeId(2)];
        for _ in 0..40 + seed {
            chains.step(&mut cluster, &nodes);
        }
        // Crash both while commits and a round are under way.
        for chain in 0..CHAINS {
            cluster.use_node(nodes[chain as usize % 2]);
            let ops = vec![counter_op(OperationKind::Write, row_of(chain, 900), -1)];
            cluster.send_batch(
                10_000 + chain as u64,
                chains.table,
                ops,
                ExecuteMode::Commit,
            );
        }
        cluster.run_for_ms(seed);
        let saved = saved_gcis(&cluster);
        for node in nodes {
            cluster.simulation.crash(node);
        }
        let last = *saved.last().expect("some GCI was saved");
        for node in nodes {
            let states = check_node(&cluster.disks[&node]);
            assert!(
                states.contains_key(&last),
                "seed {seed}: {node:?} holds saved GCI {last} after the crash"
            );
        }
    }
}

#[test]
fn no_commit_is_stamped_with_a_closed_gci_however_slow_the_masters_link() {
    // Two nodes of one replica each, so a transaction on one node's rows stays on it.
    let settings = cluster_settings(2, 1, node_settings);
    let shape = settings[0].cluster_shape().unwrap();
    let mut cluster = Node::start_cluster(settings, 64 << 20, 11);
    cluster.run_for_ms(200);
    let table = cluster.create_counters();
    let map = PartitionMap::for_cluster(2 * 2, &shape);
    let owner = |id: i64| {
        let key = primary_key(&counters(), &[Value::Int(id)]);
        map.chain(map.partition_of(&key)).current().node()
    };
    // Rows held by node 1 and node 2 in turn, each written by a transaction its holder
    // coordinates, one after the other. The master's commit of a new GCI reaches node 2
    // 3 ms after node 1: were node 2 still stamping the old GCI while node 1 stamps the new
    // one, a row of node 2 would belong to an earlier GCI than the row of node 1 before it.
    let (mut on_1, mut on_2) = (Vec::new(), Vec::new());
    for id in 0..20_000 {
        match owner(id) {
            NodeId(1) => on_1.push(id),
            _ => on_2.push(id),
        }
    }
    let ids: Vec<i64> = on_1
        .into_iter()
        .zip(on_2)
        .flat_map(|(a, b)| [a, b])
        .collect();
    cluster
        .simulation
        .slow_down(NodeId(1), NodeId(2), 3_000_000);
    let until_ns = cluster.now_ns() + 400_000_000;
    let mut written = 0;
    for (client_tx, &id) in ids.iter().enumerate() {
        if cluster.now_ns() > until_ns {
            break;
        }
        cluster.use_node(owner(id));
        let ops = vec![counter_op(OperationKind::Write, id, 1)];
        cluster.send_batch(client_tx as u64, table, ops, ExecuteMode::Commit);
        let result = cluster.batch_result(client_tx as u64, u64::MAX).unwrap();
        assert_eq!(result.outcome, TransactionOutcome::Committed);
        written += 1;
    }
    cluster.run_for_ms(100);
    let logs: Vec<Vec<Entry>> = [NodeId(1), NodeId(2)]
        .iter()
        .flat_map(|node| logs_of(&cluster.disks[node]))
        .collect();
    logs.iter().for_each(|log| marks_follow_their_gcis(log));
    let marked = marked_in_all(&logs);
    assert!(marked.len() >= 10, "GCIs advance: {marked:?}");
    for gci in marked {
        let rows = restored(&logs, gci);
        let prefix = ids.iter().take_while(|id| rows.contains_key(id)).count();
        assert_eq!(
            rows.len(),
            prefix,
            "GCI {gci} lacks write {prefix} (of {written}) but holds later ones"
        );
    }
}

#[test]
fn a_gci_is_saved_only_once_its_slowest_commit_is_logged() {
    // Three replicas of everything; commits pass between nodes 2 and 3 on a slow link, while
    // the master (node 1) reaches both quickly: its rounds outpace the commits.
    let settings = cluster_settings(3, 3, node_settings);
    let mut cluster = Node::start_cluster(settings, 64 << 20, 12);
    cluster.run_for_ms(200);
    let mut chains = Chains::new(&mut cluster);
    cluster
        .simulation
        .slow_down(NodeId(2), NodeId(3), 30_000_000);
    for _ in 0..10 {
        chains.step(&mut cluster, &[NodeId(1)]);
    }
    cluster.run_for_ms(5 * GCP_INTERVAL_MS);
    let saved = saved_gcis(&cluster);
    assert!(saved.len() >= 10, "GCIs advance: {saved:?}");
    let nodes = [NodeId(1), NodeId(2), NodeId(3)];
    let states: Vec<_> = nodes
        .iter()
        .map(|n| check_node(&cluster.disks[n]))
        .collect();
    let last = saved.last().unwrap();
    for node_states in &states {
        assert_eq!(node_states[last], states[0][last]);
    }
    assert_eq!(chains_consistent(&states[0][last], *last), chains.committed);
}

#[test]
fn a_node_late_to_the_start_is_waited_for_and_then_checkpoints_go_on() {
    let settings = cluster_settings(2, 2, node_settings);
    let late = settings[1].clone();
    let mut cluster = Node::begin_cluster(settings, 64 << 20, 13);
    // Node 2's process is not up yet: what the master sends it meanwhile is lost.
    cluster.simulation.crash(NodeId(2));
    cluster.run_for_ms(10 * GCP_INTERVAL_MS);
    assert!(
        saved_gcis(&cluster).is_empty(),
        "no round runs before the cluster started, which waits for node 2"
    );
    let memory = Arc::new(DataMemory::new(64 << 20));
    let disk = cluster.disks[&NodeId(2)].clone();
    let blocks = data_node_blocks(
        &late,
        memory,
        Some(Box::new(disk)),
        &Arc::new(NodeCounters::new(&late)),
    )
    .unwrap();
    cluster.simulation.restart(NodeId(2), blocks).unwrap();
    for signal in data_node_start_signals(&late) {
        cluster.simulation.inject(signal);
    }
    cluster.wait_for_start();
    let mut chains = Chains::new(&mut cluster);
    for _ in 0..20 {
        chains.step(&mut cluster, &[NodeId(1), NodeId(2)]);
    }
    cluster.run_for_ms(5 * GCP_INTERVAL_MS);
    let saved = saved_gcis(&cluster);
    assert!(
        saved.len() >= 5,
        "GCIs advance once node 2 is up: {saved:?}"
    );
    let last = saved.last().unwrap();
    let state = &check_node(&cluster.disks[&NodeId(2)])[last];
    assert_eq!(chains_consistent(state, *last), chains.committed);
}
