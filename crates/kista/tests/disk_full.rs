//! A full disk, with real processes: the data directories on a small file system (a
//! tmpfs this test mounts; skipped, saying so, where it may not mount one) that a filler
//! file then fills. Local checkpoints are refused and tried again, never fatal: no data
//! node stops, reads go on, writes too until the REDO log is nearly full, then they fail
//! at once with 4262 (disk full, temporary); once the filler is removed, writes go on.
//! Each node reports the free space it has.

mod support;

use std::time::{Duration, Instant};

use kista_client::types::Value;
use kista_client::{Client, ErrorCategory, ExecuteMode, ScanSpec, TransactionOutcome};
use support::chains::{create_chains_table, CHAINS_TABLE};
use support::cluster::{TestCluster, START_LIMIT};
use support::full_disk::{fill, write_until_refused, Mounted, SETTINGS, WRITES_LIMIT};

#[test]
fn a_full_disk_stops_no_node_refuses_writes_as_disk_full_and_they_go_on_once_freed() {
    let Some(mounted) = Mounted::small_tmpfs() else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let dir = mounted.0.join("cluster");
    let mut cluster = TestCluster::launch_in(dir, 2, 2, SETTINGS, &[1, 2]);
    for id in 1..=2 {
        cluster.wait_for_state(id, "started", START_LIMIT);
    }
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    create_chains_table(&client);
    let filler = fill(&mounted.0, 256 << 10);

    // Each node tells how little is left (Prometheus, kista_info.counters).
    let free_of = |node| {
        let counters = client.node_counters(node).expect("the node's counters");
        let free = counters
            .iter()
            .find(|(name, _)| name == "data_dir_free_bytes");
        free.map(|(_, bytes)| *bytes)
            .expect("the free space counted")
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while free_of(kista_client::NodeId(1)) > 1 << 20 {
        assert!(
            Instant::now() < deadline,
            "the node never saw its disk fill"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    let refused = write_until_refused(&client, 0);
    assert_eq!(
        refused.code(),
        4262,
        "{refused}\n---- node 1:\n{}",
        cluster.node(1).stderr()
    );
    assert_eq!(refused.category(), ErrorCategory::Temporary, "{refused}");
    for id in 1..=2 {
        let node = cluster.node(id);
        assert!(node.is_running(), "node {id} runs: {}", node.stderr());
        assert!(
            node.stderr().contains("not written: the disk is full"),
            "{}",
            node.stderr()
        );
    }
    let table = client.open_table(CHAINS_TABLE).expect("the table");
    let rows = client
        .scan(&table, ScanSpec::full())
        .expect("a scan")
        .count();
    assert!(rows >= 500, "reads go on: {rows} rows");

    std::fs::remove_file(filler).expect("space freed");
    let deadline = Instant::now() + WRITES_LIMIT;
    loop {
        let mut tx = client.transaction();
        tx.write(&table, vec![Value::Int(-1), Value::Int(1)])
            .expect("a row");
        let done = tx
            .execute(ExecuteMode::CommitDurable)
            .and_then(|p| p.wait());
        if done.is_ok_and(|done| done.outcome == TransactionOutcome::Committed) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "writes go on once space is freed"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(cluster.shown_state(1), "started");
    assert_eq!(cluster.shown_state(2), "started");
    drop(client);
    drop(cluster);
}
