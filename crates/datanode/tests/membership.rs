//! Membership in the deterministic simulation: heartbeats find a crashed or paused node,
//! the president removes it with every survivor's agreement, the arbitrator lets exactly
//! one side of a split go on, a cluster that lost a whole node group stops, and a restarted
//! node joins again.

mod support;

use kista_datanode::cluster::NodeSet;
use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_signal::NodeId;
use support::{cluster_settings, Node, ARBITRATOR};

const HEARTBEAT_MS: u64 = 100;
const MISSES: u64 = 3;
const MS: u64 = 1_000_000;

fn node_settings(node: NodeId) -> NodeSettings {
    let mut settings = NodeSettings::new(node);
    settings.heartbeat_interval_ms = HEARTBEAT_MS;
    settings.heartbeat_misses_max = MISSES as u32;
    settings.arbitration_timeout_ms = 1_000;
    settings
}

fn cluster(count: u8, seed: u64) -> Node {
    Node::start_cluster(cluster_settings(count, 2, node_settings), 16 << 20, seed)
}

fn set(ids: &[u8]) -> NodeSet {
    NodeSet::of(ids.iter().map(|&id| NodeId(id)))
}

/// The `NodeFailed` each node's membership announced to its first `tc`, in order.
fn failures_seen_by(cluster: &Node, node: u8) -> Vec<(u64, NodeFailed)> {
    cluster
        .delivered::<NodeFailed>()
        .into_iter()
        .filter(|(_, receiver, _)| receiver.node() == NodeId(node) && receiver.block() == TC_BLOCK)
        .map(|(at, _, failed)| (at, failed))
        .collect()
}

fn stopped(cluster: &Node) -> Vec<u8> {
    cluster.stopped()
}

#[test]
fn a_crashed_node_is_removed_once_it_misses_its_heartbeats_and_the_survivor_goes_on() {
    let mut cluster = cluster(2, 31);
    cluster.run_for_ms(1_000);
    assert!(
        failures_seen_by(&cluster, 1).is_empty(),
        "a healthy cluster"
    );
    let crashed_at = cluster.now_ns();
    cluster.simulation.crash(NodeId(2));
    cluster.run_for_ms(2_000);
    let seen = failures_seen_by(&cluster, 1);
    assert_eq!(seen.len(), 1, "{seen:?}");
    let (at, failed) = seen[0];
    assert_eq!(
        (failed.failed, failed.generation, failed.president),
        (set(&[2]), 2, 1)
    );
    // Detected after the grace of missed heartbeats, within one more interval or two.
    let detected_after_ms = (at - crashed_at) / MS;
    assert!(
        (HEARTBEAT_MS * MISSES..=HEARTBEAT_MS * (MISSES + 2)).contains(&detected_after_ms),
        "{detected_after_ms} ms"
    );
    // One survivor of two is no majority: the arbitrator was asked and agreed.
    let asked = cluster.delivered::<ArbitrationRequest>();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].2.survivors, set(&[1]));
    assert!(stopped(&cluster).is_empty());
}

#[test]
fn a_split_between_two_nodes_leaves_exactly_one_running_whatever_the_timing() {
    for seed in 0..30 {
        let mut cluster = cluster(2, seed);
        cluster.run_for_ms(500 + seed * 7);
        cluster.simulation.cut(NodeId(1), NodeId(2));
        cluster.run_for_ms(3_000);
        let down = stopped(&cluster);
        assert_eq!(
            down.len(),
            1,
            "seed {seed}: exactly one side stops: {down:?}"
        );
        let survivor = 3 - down[0];
        let seen = failures_seen_by(&cluster, survivor);
        assert_eq!(seen.len(), 1, "seed {seed}");
        assert_eq!(seen[0].1.failed, set(&[down[0]]));
        let (_, reason) = &cluster.simulation.stopped_nodes()[0];
        assert!(reason.contains("arbitrator"), "{reason}");
    }
}

#[test]
fn a_paused_node_is_shut_out_and_when_it_wakes_it_stops_instead_of_acting() {
    let mut cluster = cluster(2, 33);
    cluster.run_for_ms(500);
    cluster.simulation.pause(NodeId(2));
    cluster.run_for_ms(2_000);
    assert_eq!(failures_seen_by(&cluster, 1).len(), 1, "node 2 was removed");
    cluster.simulation.resume(NodeId(2));
    cluster.run_for_ms(3_000);
    assert_eq!(stopped(&cluster), [2]);
    assert!(
        failures_seen_by(&cluster, 2).is_empty(),
        "node 2 never went on alone"
    );
    // What node 2 sent after it woke changed nothing at node 1: its membership (the fence
    // gate, so that a restarted node can ask to join) heeds members only.
    assert_eq!(failures_seen_by(&cluster, 1).len(), 1);
    let woke_at = 2_500 * MS;
    let prepared = cluster.delivered::<FailPrepare>();
    assert!(prepared
        .iter()
        .all(|(at, receiver, _)| *at < woke_at || receiver.node() != NodeId(1)));
}

#[test]
fn when_the_president_fails_the_next_senior_node_presides_and_a_majority_needs_no_arbitrator() {
    let mut cluster = cluster(4, 34);
    cluster.run_for_ms(500);
    cluster.simulation.crash(NodeId(1));
    cluster.run_for_ms(2_000);
    for survivor in 2..=4 {
        let seen = failures_seen_by(&cluster, survivor);
        assert_eq!(seen.len(), 1, "node {survivor}: {seen:?}");
        assert_eq!((seen[0].1.failed, seen[0].1.president), (set(&[1]), 2));
    }
    assert!(cluster.delivered::<ArbitrationRequest>().is_empty());
    // Then node 3 fails too: two of three survive, a majority again, groups intact.
    cluster.simulation.crash(NodeId(3));
    cluster.run_for_ms(2_000);
    let seen = failures_seen_by(&cluster, 4);
    assert_eq!(seen.len(), 2);
    assert_eq!((seen[1].1.failed, seen[1].1.generation), (set(&[3]), 3));
    assert!(stopped(&cluster).is_empty());
}

#[test]
fn a_cluster_that_loses_a_whole_node_group_stops() {
    let mut cluster = cluster(4, 35);
    cluster.run_for_ms(500);
    cluster.simulation.crash(NodeId(3));
    cluster.simulation.crash(NodeId(4));
    cluster.run_for_ms(2_000);
    assert_eq!(stopped(&cluster), [1, 2]);
    for (_, reason) in cluster.simulation.stopped_nodes() {
        assert!(reason.contains("node group 1 lost every node"), "{reason}");
    }
}

#[test]
fn survivors_that_are_no_majority_stop_when_the_arbitrator_cannot_be_reached() {
    let mut cluster = cluster(2, 36);
    cluster.run_for_ms(500);
    cluster.simulation.cut(NodeId(1), ARBITRATOR.node());
    cluster.simulation.crash(NodeId(2));
    cluster.run_for_ms(3_000);
    assert_eq!(stopped(&cluster), [1]);
    let (_, reason) = &cluster.simulation.stopped_nodes()[0];
    assert!(reason.contains("did not answer within 1000 ms"), "{reason}");
}

#[test]
fn without_an_arbitrator_a_lone_survivor_stops() {
    let nodes = cluster_settings(2, 2, |node| {
        let mut settings = node_settings(node);
        settings.arbitrator = None;
        settings
    })
    .into_iter()
    .map(|mut settings| {
        settings.arbitrator = None;
        settings
    })
    .collect();
    let mut cluster = Node::start_cluster(nodes, 16 << 20, 37);
    cluster.run_for_ms(500);
    cluster.simulation.crash(NodeId(2));
    cluster.run_for_ms(2_000);
    assert_eq!(stopped(&cluster), [1]);
    let (_, reason) = &cluster.simulation.stopped_nodes()[0];
    assert!(reason.contains("no arbitrator is configured"), "{reason}");
}

/// The joins `node`'s membership announced to its first `tc`, in order.
fn joins_seen_by(cluster: &Node, node: u8) -> Vec<NodeJoined> {
    cluster
        .delivered::<NodeJoined>()
        .into_iter()
        .filter(|(_, receiver, _)| receiver.node() == NodeId(node) && receiver.block() == TC_BLOCK)
        .map(|(_, _, joined)| joined)
        .collect()
}

#[test]
fn a_restarted_node_joins_as_the_most_junior_member_and_is_watched_again() {
    for seed in 0..12 {
        let mut cluster = cluster(2, 40 + seed);
        cluster.run_for_ms(400 + seed * 11);
        cluster.simulation.crash(NodeId(2));
        cluster.run_for_ms(1_500);
        assert_eq!(
            failures_seen_by(&cluster, 1).len(),
            1,
            "seed {seed}: removed"
        );
        cluster.restart_node(NodeId(2), 16 << 20);
        cluster.run_for_ms(1_000);
        for node in [1, 2] {
            let joins = joins_seen_by(&cluster, node);
            assert_eq!(joins.len(), 1, "seed {seed}: node {node} saw {joins:?}");
            assert_eq!((joins[0].generation, joins[0].joined), (3, 2));
        }
        let grew = cluster.delivered::<MembershipGrew>();
        assert_eq!(grew.len(), 1, "seed {seed}: the arbitrator heard of it");
        assert_eq!(grew[0].2.members, set(&[1, 2]));
        // A member again: a pause gets it removed again, and node 1, still the winner of
        // the last split, is let go on by the arbitrator.
        cluster.simulation.pause(NodeId(2));
        cluster.run_for_ms(2_000);
        let seen = failures_seen_by(&cluster, 1);
        assert_eq!(seen.len(), 2, "seed {seed}: {seen:?}");
        assert_eq!((seen[1].1.failed, seen[1].1.generation), (set(&[2]), 4));
        assert!(stopped(&cluster).is_empty(), "seed {seed}");
    }
}

#[test]
fn a_join_and_a_failure_at_once_both_complete_in_some_order_every_member_agrees_on() {
    let mut join_went_first = [false, false];
    for seed in 0..12 {
        // Four nodes in two groups: node 3 crashes, then restarts about when node 2 crashes:
        // at once (the join waits for a member that never confirms, the failure round
        // abandons it, and the joiner asks again) or a little later (the join is done first).
        let mut cluster = cluster(4, 51 + seed);
        cluster.run_for_ms(500);
        cluster.simulation.crash(NodeId(3));
        cluster.run_for_ms(1_500);
        cluster.restart_node(NodeId(3), 16 << 20);
        cluster.run_for_ms(seed % 3);
        cluster.simulation.crash(NodeId(2));
        cluster.run_for_ms(3_000);
        let failures: Vec<(NodeSet, u32)> = failures_seen_by(&cluster, 1)
            .into_iter()
            .map(|(_, failed)| (failed.failed, failed.generation))
            .collect();
        assert_eq!(failures.len(), 2, "seed {seed}: {failures:?}");
        assert_eq!((failures[0].0, failures[1].0), (set(&[3]), set(&[2])));
        let joins: Vec<Vec<(u32, u32)>> = [1, 3, 4]
            .map(|node| {
                let seen = joins_seen_by(&cluster, node);
                seen.iter().map(|c| (c.generation, c.joined)).collect()
            })
            .into();
        assert!(
            joins.iter().all(|j| j == &joins[0]),
            "seed {seed}: {joins:?}"
        );
        assert_eq!(joins[0].len(), 1, "seed {seed}");
        let (join_generation, joined) = joins[0][0];
        assert_eq!(joined, 3);
        // Generation 2 removed node 3; the join and node 2's removal took 3 and 4.
        let mut generations = [join_generation, failures[1].1];
        generations.sort_unstable();
        assert_eq!(generations, [3, 4], "seed {seed}");
        assert!(stopped(&cluster).is_empty(), "seed {seed}");
        join_went_first[usize::from(join_generation == 3)] = true;
    }
    assert_eq!(join_went_first, [true, true], "both orders happened");
}

#[test]
fn a_joiner_removed_before_it_heard_its_join_commit_stops_when_a_late_request_lets_it_in_again() {
    // A slow link: node 2's join commit and its first heartbeats each take longer than half
    // the grace, so node 1 removes it again; join requests node 2 sent before the commit
    // reached it still arrive afterwards, and node 1 lets it in once more. Node 2, a member
    // all along in its own eyes, missed the writes in between: it must stop and restart.
    let mut cluster = cluster(2, 61);
    cluster.run_for_ms(500);
    cluster.simulation.crash(NodeId(2));
    cluster.run_for_ms(1_000);
    cluster.restart_node(NodeId(2), 16 << 20);
    cluster.simulation.slow_down(NodeId(1), NodeId(2), 272 * MS);
    cluster.run_for_ms(3_000);
    let joined: Vec<u32> = joins_seen_by(&cluster, 1)
        .iter()
        .map(|join| join.generation)
        .collect();
    assert!(joined.len() >= 2, "node 1 let node 2 in twice: {joined:?}");
    let stops = cluster.simulation.stopped_nodes();
    assert_eq!(stops.len(), 1, "{stops:?}");
    assert_eq!(stops[0].0, NodeId(2));
    assert!(stops[0].1.contains("let it in again"), "{}", stops[0].1);
}

/// The nodes whose membership told the arbitrator they started (each tells it again at
/// every tick).
fn reported_started(cluster: &Node) -> Vec<u32> {
    let mut started: Vec<u32> = cluster
        .delivered::<NodeStarted>()
        .into_iter()
        .filter(|(_, receiver, _)| *receiver == ARBITRATOR)
        .map(|(_, _, started)| started.node)
        .collect();
    started.sort_unstable();
    started.dedup();
    started
}

#[test]
fn a_first_start_waits_for_a_peer_whose_process_comes_up_late() {
    // Processes started together on a loaded machine may come up seconds apart: a node
    // that started must not remove a peer it never heard from within one heartbeat grace.
    for late_ms in [HEARTBEAT_MS * MISSES + 50, 2_000, 5_000] {
        let mut cluster = cluster(2, 35);
        cluster.simulation.pause(NodeId(2));
        cluster.run_for_ms(late_ms);
        assert!(reported_started(&cluster).is_empty(), "node 1 waits alone");
        cluster.simulation.resume(NodeId(2));
        cluster.run_for_ms(2_000);
        assert!(stopped(&cluster).is_empty(), "late by {late_ms} ms");
        assert!(failures_seen_by(&cluster, 1).is_empty());
        assert!(failures_seen_by(&cluster, 2).is_empty());
        assert_eq!(reported_started(&cluster), [1, 2], "late by {late_ms} ms");
    }
}

#[test]
fn a_first_start_goes_on_without_a_peer_that_never_comes_once_the_partial_timeout_passes_and_it_joins_later(
) {
    let partial_ms = 2_000;
    let settings = |node| NodeSettings {
        start_partial_timeout_ms: partial_ms,
        ..node_settings(node)
    };
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, settings), 16 << 20, 36);
    cluster.simulation.pause(NodeId(2));
    cluster.run_for_ms(partial_ms - 100);
    assert!(failures_seen_by(&cluster, 1).is_empty(), "still waiting");
    cluster.run_for_ms(1_000);
    let seen = failures_seen_by(&cluster, 1);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].1.failed, set(&[2]));
    assert_eq!(reported_started(&cluster), [1]);

    // Started at last, it joins and stays: joining, it was heard (it was removed again
    // at once, as never heard from since node 1 began, and stopped by the arbitrator).
    cluster.simulation.crash(NodeId(2));
    cluster.simulation.resume(NodeId(2));
    cluster.restart_node(NodeId(2), 16 << 20);
    cluster.run_for_ms(3_000);
    assert_eq!(joins_seen_by(&cluster, 1).len(), 1, "node 2 joined");
    assert_eq!(
        failures_seen_by(&cluster, 1).len(),
        1,
        "and was not removed again"
    );
    assert!(
        stopped(&cluster).is_empty(),
        "{:?}",
        cluster.simulation.stopped_nodes()
    );
    assert_eq!(reported_started(&cluster), [1, 2]);
}
