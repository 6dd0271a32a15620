//! Starts from disk (system restarts) in the deterministic simulation: every data node
//! stops or crashes, every one starts again on the disk it had, and the cluster serves
//! what its checkpoints and REDO logs restore: every acknowledged write once the GCI that
//! holds it was saved, a state the cluster was in after a crash under load (nothing of a
//! transaction without the rest), alike on every replica; and goes on to take writes,
//! checkpoint and restart again.

mod support;

use std::collections::BTreeMap;

use kista_datanode::gcp::gcp_address;
use kista_datanode::membership::STALE_AT_START;
use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_runtime::io::SimulatedDisk;
use kista_signal::{NodeId, TypedSignal};
use support::disk_cluster::*;
use support::{cluster_settings, counter_op, Node, ARBITRATOR};

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
            extra_metadata: Vec::new(),
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

/// Chains of dependent transactions, each step acknowledged before the next is sent:
/// step s of chain c writes the chain's counter row (`c`) and row `chain_row(c, s)`, both
/// with value s. Restored rows are a state the cluster was in if each chain holds every
/// step up to its counter.
struct Chains {
    table: (u32, u32),
    mode: ExecuteMode,
    /// Per chain, the steps acknowledged with when, in order.
    acknowledged: Vec<Vec<(i64, u64)>>,
    client_tx: u64,
}

const CHAINS: i64 = 4;

fn chain_row(chain: i64, step: i64) -> i64 {
    1000 * (chain + 1) + step
}

impl Chains {
    fn new(table: (u32, u32), mode: ExecuteMode) -> Self {
        Self {
            table,
            mode,
            acknowledged: vec![Vec::new(); CHAINS as usize],
            client_tx: 1,
        }
    }

    /// The last step of `chain` acknowledged.
    fn last(&self, chain: i64) -> i64 {
        self.acknowledged[chain as usize]
            .last()
            .map_or(0, |&(step, _)| step)
    }

    /// Sends every chain's next step, through either node in turn.
    fn send_round(&mut self, cluster: &mut Node) -> Vec<(u64, i64)> {
        let mut sent = Vec::new();
        for chain in 0..CHAINS {
            let step = self.last(chain) + 1;
            cluster.use_node(NodeId(1 + (self.client_tx % 2) as u8));
            let ops = vec![
                counter_op(OperationKind::Write, chain, step),
                counter_op(OperationKind::Write, chain_row(chain, step), step),
            ];
            cluster.send_batch(self.client_tx, self.table, ops, self.mode);
            sent.push((self.client_tx, chain));
            self.client_tx += 1;
        }
        sent
    }

    /// Waits for a round's answers and counts the steps acknowledged.
    fn collect(&mut self, cluster: &mut Node, sent: Vec<(u64, i64)>) {
        let until_ns = cluster.now_ns() + 2_000_000_000;
        for (tx, chain) in sent {
            let result = cluster.batch_result(tx, until_ns);
            if result.is_some_and(|r| r.outcome == TransactionOutcome::Committed) {
                let step = self.last(chain) + 1;
                self.acknowledged[chain as usize].push((step, cluster.now_ns()));
            }
        }
    }

    /// Checks rows restored on both replicas alike, each chain whole up to its counter;
    /// returns the counters.
    fn restored(&self, cluster: &mut Node, what: &str) -> Vec<i64> {
        let one = rows_through(cluster, NodeId(1), self.table, 1);
        let two = rows_through(cluster, NodeId(2), self.table, 2);
        assert_eq!(one, two, "{what}: both replicas restored alike");
        let counters: Vec<i64> = (0..CHAINS)
            .map(|c| one.get(&c).copied().unwrap_or(0))
            .collect();
        for chain in 0..CHAINS {
            let steps = self.last(chain).max(counters[chain as usize]);
            for step in 1..=steps {
                let present = one.get(&chain_row(chain, step)) == Some(&step);
                let expected = step <= counters[chain as usize];
                assert_eq!(present, expected, "{what}: chain {chain} step {step}");
            }
        }
        counters
    }
}

#[test]
fn a_crash_of_every_node_under_load_restores_a_state_the_cluster_was_in() {
    for seed in 0..6 {
        let settings = cluster_settings(2, 2, node_settings);
        let mut cluster = Node::start_cluster(settings, MEMORY_BYTES, 100 + seed);
        let mut chains = Chains::new(cluster.create_counters(), ExecuteMode::Commit);
        for _ in 0..60 + seed as usize * 13 {
            let sent = chains.send_round(&mut cluster);
            chains.collect(&mut cluster, sent);
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
        let counters = chains.restored(&mut cluster, &format!("seed {seed}"));
        for chain in 0..CHAINS {
            // A commit acknowledged while GCI s was the last saved belongs to s+2 or below.
            let surely = chains.acknowledged[chain as usize]
                .iter()
                .filter(|&&(_, at_ns)| saved_at(at_ns) + 2 <= last_saved)
                .map(|&(step, _)| step)
                .max()
                .unwrap_or(0);
            let counter = counters[chain as usize];
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

/// Node 2's settings with twice the `ldm` threads (the others as they were).
fn more_ldm_threads_on_node_2(node: NodeId) -> NodeSettings {
    let mut settings = node_settings(node);
    if node == NodeId(2) {
        settings.ldm_instances *= 2;
    }
    settings
}

#[test]
fn a_start_from_disk_refuses_data_placed_for_another_shape_and_the_emptied_node_copies() {
    let settings = cluster_settings(2, 2, node_settings);
    let mut cluster = Node::start_cluster(settings, MEMORY_BYTES, 23);
    let table = cluster.create_counters();
    let mut client_tx = 1;
    let mut expected = BTreeMap::new();
    write_rounds(&mut cluster, table, &mut client_tx, 1..20, &mut expected);
    cluster.run_for_ms(5 * GCP_INTERVAL_MS);
    for node in [NodeId(1), NodeId(2)] {
        cluster.simulation.crash(node);
    }

    // The configuration gives node 2 twice the ldm threads: its partitions now sit in
    // other ldm instances, so its disk is refused, saying why; node 1 restores alone.
    for settings in cluster_settings(2, 2, more_ldm_threads_on_node_2) {
        cluster.reconfigure(settings);
    }
    let start = cluster.try_start_again(MEMORY_BYTES);
    let stopped = cluster.simulation.stopped_nodes().to_vec();
    let (_, reason) = stopped
        .iter()
        .find(|(node, _)| *node == NodeId(2))
        .expect("node 2 stopped");
    assert!(
        reason.contains("placed for data nodes {1, 2}, 2 replicas")
            && reason.contains(&format!("{} ldm threads on this node", LDM_INSTANCES * 2))
            && reason.contains("empty this node's directory"),
        "{reason}"
    );
    start.expect("the start ends without node 2");
    assert_eq!(rows_through(&mut cluster, NodeId(1), table, 1), expected);

    // Emptied, node 2 copies every row into its new ldm instances.
    cluster.disks.insert(NodeId(2), SimulatedDisk::new());
    restart_after(&mut cluster, NodeId(2), |_| {});
    cluster.simulation.crash(NodeId(1));
    cluster.run_for_ms(10_000);
    assert_eq!(rows_through(&mut cluster, NodeId(2), table, 2), expected);
}

/// A 2-node cluster (`settings` per node, seeded `seed`) that took writes, whose node 2
/// then failed and restarted by copying from node 1, under more writes: the cluster, its
/// `counters` table, the next client transaction and the rows acknowledged.
fn node_2_restarted_by_copy(
    settings: impl Fn(NodeId) -> NodeSettings,
    seed: u64,
) -> (Node, (u32, u32), u64, BTreeMap<i64, i64>) {
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, settings), MEMORY_BYTES, seed);
    let table = cluster.create_counters();
    let mut client_tx = 1;
    let mut expected = BTreeMap::new();
    write_rounds(&mut cluster, table, &mut client_tx, 1..20, &mut expected);
    let rounds = 20..30;
    restart_under_writes(
        &mut cluster,
        NodeId(2),
        table,
        &mut client_tx,
        rounds,
        &mut expected,
    );
    (cluster, table, client_tx, expected)
}

#[test]
fn nodes_that_restarted_by_copying_restore_their_rows_in_a_start_from_disk() {
    let settings = cluster_settings(2, 2, node_settings);
    let mut cluster = Node::start_cluster(settings, MEMORY_BYTES, 61);
    let table = cluster.create_counters();
    let mut client_tx = 1;
    let mut expected = BTreeMap::new();
    write_rounds(&mut cluster, table, &mut client_tx, 1..20, &mut expected);
    // Each node in turn fails and copies its rows back from the other: neither log holds
    // the rows written before its restart.
    for (node, rounds) in [(NodeId(2), 20..40), (NodeId(1), 60..80)] {
        restart_under_writes(
            &mut cluster,
            node,
            table,
            &mut client_tx,
            rounds.clone(),
            &mut expected,
        );
        let next = rounds.end..rounds.end + 20;
        write_rounds(&mut cluster, table, &mut client_tx, next, &mut expected);
    }
    for _ in 0..100 {
        if [NodeId(1), NodeId(2)]
            .iter()
            .all(|&n| disk_holds_data_again(&cluster, n))
        {
            break;
        }
        cluster.run_for_ms(GCP_INTERVAL_MS);
    }
    for node in [NodeId(1), NodeId(2)] {
        assert!(
            disk_holds_data_again(&cluster, node),
            "{node:?} in 100 rounds"
        );
    }
    // Node 1 fails first, so node 2's disk alone holds the latest GCI: the start from
    // disk restores every row from a node that copied them all from its peer.
    cluster.simulation.crash(NodeId(1));
    cluster.run_for_ms(10_000);
    write_rounds(&mut cluster, table, &mut client_tx, 100..110, &mut expected);
    cluster.run_for_ms(5 * GCP_INTERVAL_MS);
    cluster.simulation.crash(NodeId(2));
    cluster.start_again(MEMORY_BYTES);
    assert_eq!(cluster.stopped(), vec![1], "node 1's disk is behind");
    assert_eq!(rows_through(&mut cluster, NodeId(2), table, 1), expected);
}

#[test]
fn while_a_group_has_no_node_with_its_data_on_disk_no_gci_is_claimed_restorable() {
    // Checkpoints crawl, so a restarted node's first one takes about a minute.
    let slow_checkpoints = |node| NodeSettings {
        checkpoint_write_bytes_per_sec: 300,
        ..node_settings(node)
    };
    for checkpointed in [false, true] {
        let (mut cluster, table, mut client_tx, mut expected) =
            node_2_restarted_by_copy(slow_checkpoints, 71);
        // Node 1 fails before node 2 wrote what it copied to disk (but after the writes
        // so far are restorable): node 2 alone holds the rows, in memory. It goes on; a
        // durable commit waits.
        cluster.run_for_ms(5 * GCP_INTERVAL_MS);
        let on_disk = expected.clone();
        cluster.simulation.crash(NodeId(1));
        cluster.use_node(NodeId(2));
        cluster.run_for_ms(10_000);
        write_rounds(&mut cluster, table, &mut client_tx, 30..35, &mut expected);
        let durable = vec![counter_op(OperationKind::Write, 1_000, 1)];
        cluster.send_batch(client_tx, table, durable, ExecuteMode::CommitDurable);
        let confirmed = cluster.batch_result(client_tx, cluster.now_ns() + 5_000_000_000);
        assert!(
            confirmed.is_none(),
            "a durable commit waits for the checkpoint"
        );
        let log = cluster.simulation.log_of(NodeId(2));
        let said = log
            .iter()
            .any(|line| line.contains("are not restorable yet"));
        assert!(said, "the master says why: {log:?}");
        if checkpointed {
            let confirmed = cluster.batch_result(client_tx, cluster.now_ns() + 120_000_000_000);
            let confirmed = confirmed.expect("confirmed once node 2's checkpoint is written");
            assert_eq!(confirmed.outcome, TransactionOutcome::Committed);
            assert!(disk_holds_data_again(&cluster, NodeId(2)));
            expected.insert(1_000, 1);
        }
        cluster.simulation.crash(NodeId(2));
        cluster.start_again(MEMORY_BYTES);
        // The node behind is told why it stops, so that its process restarts it to copy.
        let stopped = cluster.simulation.stopped_nodes();
        assert!(
            stopped.len() == 1 && stopped[0].1.starts_with(STALE_AT_START),
            "{stopped:?}"
        );
        if checkpointed {
            // Node 2's disk restores everything, the durable commit too; node 1 is behind.
            assert_eq!(cluster.stopped(), vec![1]);
            assert_eq!(rows_through(&mut cluster, NodeId(2), table, 1), expected);
        } else {
            // Node 2's disk holds nothing to restore: node 1's older state is the latest
            // restorable one, and nothing acknowledged as durable is lost.
            assert_eq!(cluster.stopped(), vec![2]);
            assert_eq!(rows_through(&mut cluster, NodeId(1), table, 1), on_disk);
        }
    }
}

#[test]
fn a_node_that_becomes_master_moments_after_it_joined_goes_on_from_the_clusters_gci() {
    let (mut cluster, table, mut client_tx, mut expected) =
        node_2_restarted_by_copy(node_settings, 81);
    // The master fails before any round reached node 2's coordinators.
    let saved = cluster.delivered::<GcpSaved>();
    let last_saved = saved.iter().map(|(_, _, s)| s.gci).max().unwrap_or(0);
    let crash_ns = cluster.now_ns();
    cluster.simulation.crash(NodeId(1));
    cluster.use_node(NodeId(2));
    cluster.run_for_ms(10_000);
    write_rounds(&mut cluster, table, &mut client_tx, 30..35, &mut expected);
    let stamped: Vec<u64> = cluster
        .delivered::<ExecuteConf>()
        .iter()
        .filter(|(at, _, conf)| *at > crash_ns && conf.outcome == TransactionOutcome::Committed)
        .map(|(_, _, conf)| conf.gci)
        .collect();
    assert!(!stamped.is_empty(), "node 2 went on");
    assert!(
        stamped.iter().all(|&gci| gci > last_saved),
        "commits after the master's failure are stamped {stamped:?}, GCI {last_saved} was \
         restorable before it"
    );
}

/// Asks every data node for a clean shutdown, as the management server does.
fn ask_for_shutdown(cluster: &mut Node, nodes: &[NodeId]) {
    for &node in nodes {
        let request = ClusterShutdown {}.to_signal(gcp_address(node), ARBITRATOR);
        cluster.simulation.inject(request);
    }
}

/// Runs until every one of `nodes` stopped; returns their reasons.
fn wait_for_stops(cluster: &mut Node, nodes: &[NodeId]) -> Vec<String> {
    // Long enough for a failure amid the shutdown to be detected and arbitrated.
    for _ in 0..3000 {
        if cluster.stopped().len() >= nodes.len() {
            break;
        }
        cluster.run_for_ms(10);
    }
    let stopped = cluster.simulation.stopped_nodes();
    assert_eq!(
        stopped.len(),
        nodes.len(),
        "every node stopped: {stopped:?}"
    );
    stopped.iter().map(|(_, reason)| reason.clone()).collect()
}

#[test]
fn a_shutdown_amid_load_keeps_every_commit_acknowledged_before_it() {
    for seed in 0..4 {
        let settings = cluster_settings(2, 2, node_settings);
        let mut cluster = Node::start_cluster(settings, MEMORY_BYTES, 300 + seed);
        let mut chains = Chains::new(cluster.create_counters(), ExecuteMode::Commit);
        for _ in 0..40 + seed as usize * 9 {
            let sent = chains.send_round(&mut cluster);
            chains.collect(&mut cluster, sent);
        }
        // The last round's commits are under way when the shutdown is asked for.
        chains.send_round(&mut cluster);
        ask_for_shutdown(&mut cluster, &[NodeId(1), NodeId(2)]);
        let reasons = wait_for_stops(&mut cluster, &[NodeId(1), NodeId(2)]);
        for reason in &reasons {
            assert!(reason.contains("(shutdown); GCI"), "seed {seed}: {reason}");
        }
        cluster.start_again(MEMORY_BYTES);
        let counters = chains.restored(&mut cluster, &format!("seed {seed}"));
        for chain in 0..CHAINS {
            let (counter, acknowledged) = (counters[chain as usize], chains.last(chain));
            assert!(
                counter >= acknowledged,
                "seed {seed}: chain {chain} restored to step {counter}, acknowledged {acknowledged}"
            );
        }
    }
}

#[test]
fn when_the_master_fails_amid_a_shutdown_the_new_master_finishes_it() {
    let settings = cluster_settings(2, 2, node_settings);
    let mut cluster = Node::start_cluster(settings, MEMORY_BYTES, 41);
    let table = cluster.create_counters();
    let mut client_tx = 1;
    let mut expected = BTreeMap::new();
    write_rounds(&mut cluster, table, &mut client_tx, 1..30, &mut expected);
    ask_for_shutdown(&mut cluster, &[NodeId(1), NodeId(2)]);
    cluster.simulation.crash(NodeId(1));
    let reasons = wait_for_stops(&mut cluster, &[NodeId(2)]);
    assert!(reasons[0].contains("(shutdown); GCI"), "{}", reasons[0]);
    // Node 1's disk misses what node 2 saved alone: it stops, and node 2 serves it all.
    cluster.start_again(MEMORY_BYTES);
    assert_eq!(rows_through(&mut cluster, NodeId(2), table, 1), expected);
}

#[test]
fn a_durable_commit_is_confirmed_within_a_round_and_survives_a_crash_of_every_node() {
    // Global checkpoints are far apart: a durable commit hurries its own.
    const INTERVAL_MS: u64 = 10_000;
    const ROUNDS: i64 = 25;
    let rare_checkpoints = |node| NodeSettings {
        global_checkpoint_interval_ms: INTERVAL_MS,
        ..node_settings(node)
    };
    for seed in 0..4 {
        let settings = cluster_settings(2, 2, rare_checkpoints);
        let mut cluster = Node::start_cluster(settings, MEMORY_BYTES, 500 + seed);
        let mut chains = Chains::new(cluster.create_counters(), ExecuteMode::CommitDurable);
        let began_ns = cluster.now_ns();
        for _ in 0..ROUNDS {
            let sent = chains.send_round(&mut cluster);
            chains.collect(&mut cluster, sent);
        }
        let took_ms = (cluster.now_ns() - began_ns) / 1_000_000;
        for chain in 0..CHAINS {
            assert_eq!(
                chains.last(chain),
                ROUNDS,
                "seed {seed}: every commit confirmed"
            );
        }
        assert!(
            took_ms < INTERVAL_MS,
            "seed {seed}: {ROUNDS} rounds of durable commits took {took_ms} ms of simulated \
             time: they waited for the interval"
        );
        // Every node crashes right after the last confirmation.
        for node in [NodeId(1), NodeId(2)] {
            cluster.simulation.crash(node);
        }
        cluster.start_again(MEMORY_BYTES);
        let counters = chains.restored(&mut cluster, &format!("seed {seed}"));
        assert_eq!(counters, vec![ROUNDS; CHAINS as usize], "seed {seed}");
    }
}
