//! Starts that meet a missing, late or stale data node, with real processes: a node left
//! out of a first start joins the running cluster later and stays; a node whose disk is
//! behind or empty at a start from disk is stopped by it and, once the others serve,
//! restarts into the cluster by itself, copying its data; a node left behind by a split
//! is held back from starting alone, even after the management server restarted.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use kista_client::{Client, ExecuteMode};
use support::chains::{create_chains_table, every_chains_row, write_rows};
use support::cluster::{TestCluster, START_LIMIT};

/// How long the test watches a joined node stay.
const STAYS_FOR: Duration = Duration::from_secs(5);

#[test]
fn a_node_left_out_of_the_first_start_joins_later_and_stays() {
    // Node 2 starts alone once node 1 was not heard from for 2 s.
    let mut cluster = TestCluster::launch_some(2, 2, "start_partial_timeout_ms = 2000", &[2]);
    cluster.wait_for_state(2, "started", START_LIMIT);
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    create_chains_table(&client);
    write_rows(&client, 0..2_000, 1, ExecuteMode::Commit);

    cluster.restart(1);
    cluster.wait_for_state(1, "started", START_LIMIT);
    std::thread::sleep(STAYS_FOR);
    assert!(
        cluster.node(1).is_running(),
        "node 1 stays: {}",
        cluster.node(1).stderr()
    );
    assert_eq!(cluster.shown_state(1), "started");
    assert_eq!(cluster.shown_state(2), "started");
    // Node 1 holds every row: node 2 gone, it serves them alone.
    cluster.node(2).kill();
    let rows = every_chains_row(&cluster.mgm);
    assert_eq!(rows, (0..2_000).map(|id| (id, 1)).collect());
}

/// Writes rows 0..500 durably; then node `behind` dies, the other goes on alone (the
/// arbitrator lets it) and takes rows 500..1000: the rows every start must keep.
fn leave_behind(cluster: &mut TestCluster, behind: u8) -> BTreeMap<i64, i64> {
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    create_chains_table(&client);
    write_rows(&client, 0..500, 1, ExecuteMode::CommitDurable);
    cluster.node(behind).kill();
    // Once the cluster saw it go (a commit it was part of would end unknown).
    cluster.wait_for_state(behind, "not connected", START_LIMIT);
    write_rows(&client, 500..1_000, 2, ExecuteMode::CommitDurable);
    (0..500)
        .map(|id| (id, 1))
        .chain((500..1_000).map(|id| (id, 2)))
        .collect()
}

#[test]
fn a_node_behind_or_emptied_at_a_start_from_disk_rejoins_by_itself_and_copies() {
    let mut cluster = TestCluster::start(2, 2);
    let expected = leave_behind(&mut cluster, 1);

    cluster.crash_every_node();
    cluster.spawn_every_node();
    let rejoined = cluster.wait_for_start_from_disk();
    assert_eq!(rejoined, [1], "node 1 was behind and rejoined");
    assert!(cluster.node(1).is_running(), "its process never ended");
    assert_eq!(every_chains_row(&cluster.mgm), expected);

    // Its directory emptied, node 1 holds nothing to restore: the same.
    cluster.crash_every_node();
    std::fs::remove_dir_all(cluster.data_dir(1)).expect("node 1's directory is emptied");
    cluster.spawn_every_node();
    let rejoined = cluster.wait_for_start_from_disk();
    assert_eq!(rejoined, [1], "node 1 held no data and rejoined");
    let log = cluster.node(1).stderr();
    assert!(log.contains("holds no data to restore"), "{log}");
    cluster.node(2).kill();
    assert_eq!(
        every_chains_row(&cluster.mgm),
        expected,
        "node 1 alone holds every row"
    );
}

#[test]
fn a_node_left_behind_never_starts_alone_even_after_the_management_server_restarted() {
    // A node alone starts after 3 s without the other.
    let mut cluster = TestCluster::launch_some(2, 2, "start_partial_timeout_ms = 3000", &[1, 2]);
    cluster.wait_for_state(1, "started", START_LIMIT);
    cluster.wait_for_state(2, "started", START_LIMIT);
    let expected = leave_behind(&mut cluster, 2);

    // Everything stops; the management server comes back first, then node 2 alone.
    cluster.crash_every_node();
    cluster.restart_mgmd();
    assert!(
        cluster
            .mgmd
            .startup
            .contains("the arbitrator goes on from its record"),
        "{}",
        cluster.mgmd.startup
    );
    cluster.restart(2);
    // Node 2 would start alone after the partial-start timeout: the arbitrator holds it
    // back, as node 1 won the split.
    let held_back = cluster.node(2).wait_exit(Duration::from_secs(60));
    let log = cluster.node(2).stderr();
    assert!(
        matches!(held_back, Some((false, _))),
        "node 2 stops rather than start alone: {log}"
    );
    assert!(log.contains("the arbitrator let another part"), "{log}");

    // With node 1 back, the cluster starts from its disk: nothing acknowledged is lost.
    cluster.spawn_every_node();
    let rejoined = cluster.wait_for_start_from_disk();
    assert_eq!(rejoined, [2], "node 2 was behind and copies");
    assert_eq!(every_chains_row(&cluster.mgm), expected);
}

#[test]
fn a_cluster_that_never_had_a_table_starts_again_from_disk() {
    // No node has a schema file (none was refused): there is no table to lose.
    let mut cluster = TestCluster::start(2, 2);
    cluster.crash_every_node();
    cluster.spawn_every_node();
    cluster.wait_for_start_from_disk();
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    create_chains_table(&client);
    write_rows(&client, 0..10, 1, ExecuteMode::CommitDurable);
    assert_eq!(every_chains_row(&cluster.mgm).len(), 10);
}
