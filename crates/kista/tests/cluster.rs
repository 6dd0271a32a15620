//! A cluster of real processes on 127.0.0.1: `kista mgmd` and two data nodes replicating
//! each other, under a continuous `kista bench --mgm --duration --verify` load (its clients
//! connected to every data node) while nodes are killed, stopped and told to stop.

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kista_client::types::Value;
use kista_client::{Client, ExecuteMode, ScanSpec, TransactionOutcome};
use support::chains::{create_chains_table, every_chains_row, write_rows, CHAINS_TABLE};
use support::cluster::{TestCluster, START_LIMIT};
use support::run_kista;

/// Longest a bench run may take before the test fails (its own duration is far shorter).
const RUN_LIMIT: Duration = Duration::from_secs(120);
/// Longest a node may take to stop on its own once the cluster shut it out.
const SELF_STOP_LIMIT: Duration = Duration::from_secs(20);

/// Runs `kista bench` against the cluster in duration mode (updates and reads), with
/// verification and `extra` arguments, on a thread; `during` runs meanwhile, after the load
/// has begun.
fn load_while(
    cluster: &mut TestCluster,
    extra: &[&str],
    seconds: u32,
    during: impl FnOnce(&mut TestCluster),
) -> (Option<i32>, String, String) {
    let seconds = seconds.to_string();
    let args: Vec<String> = [
        "bench",
        "--mgm",
        &cluster.mgm,
        "--keys",
        "2000",
        "--duration",
        &seconds,
        "--phases",
        "update,read",
        "--verify",
    ]
    .iter()
    .chain(extra)
    .map(|arg| arg.to_string())
    .collect();
    let running = std::thread::spawn(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_kista(&args, RUN_LIMIT)
    });
    // Loading 2000 keys takes well under this; the failure lands in the mixed load.
    std::thread::sleep(Duration::from_millis(2500));
    during(cluster);
    running.join().expect("the bench thread")
}

/// A short `kista bench --verify` against the cluster succeeds, without a single error, and
/// finds every record.
fn bench_verifies(cluster: &TestCluster) {
    let args = ["bench", "--mgm", &cluster.mgm, "--keys", "2000", "--verify"];
    let (code, stdout, stderr) = run_kista(&args, RUN_LIMIT);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("0 missing, 0 wrong"), "{stdout}");
    assert!(!stdout.contains(": error "), "{stdout}");
}

/// Waits until `condition` holds, failing the test with `what` after `limit`.
fn wait_until(limit: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + limit;
    while !condition() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not after {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The bench finished, lost nothing and failed only transactions the failure touched:
/// aborted (4010) or, for commits in flight on the lost node, of unknown outcome (4012),
/// and reads refused while the survivors' membership was in doubt (4259, read lease).
fn assert_nothing_lost(outcome: &(Option<i32>, String, String)) {
    let (code, stdout, stderr) = outcome;
    assert_eq!(*code, Some(0), "bench failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("0 missing, 0 wrong"),
        "acknowledged writes were lost:\n{stdout}\n{stderr}"
    );
    for line in stdout.lines().filter(|l| l.contains(": error ")) {
        assert!(
            ["error 4010", "error 4012", "error 4259"]
                .iter()
                .any(|code| line.contains(code)),
            "unexpected error: {line}"
        );
    }
}

#[test]
fn a_cluster_starts_and_mgm_show_reports_every_node_started() {
    let cluster = TestCluster::start(2, 2);
    let (code, stdout, stderr) = cluster.mgm("show");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("2 data nodes in 1 node groups, 2 replicas"),
        "{stdout}"
    );
    assert!(stdout.contains("mgmd"), "{stdout}");
    assert_eq!(cluster.shown_state(1), "started");
    assert_eq!(cluster.shown_state(2), "started");
    // Each node's disk, once it measured it (every second) and reported it.
    let deadline = std::time::Instant::now() + SELF_STOP_LIMIT;
    loop {
        let (_, stdout, _) = cluster.mgm("show");
        let disks = stdout
            .lines()
            .filter(|l| l.contains(" disk: ") && l.contains("GiB free of"));
        if disks.count() == 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no disk lines: {stdout}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_client_started_as_soon_as_the_data_nodes_are_ready_waits_for_them_to_serve() {
    let cluster = TestCluster::launch(2, 2);
    bench_verifies(&cluster);
}

#[test]
fn report_memory_shows_each_data_nodes_data_memory() {
    let mut cluster = TestCluster::start(2, 2);
    let deadline = std::time::Instant::now() + SELF_STOP_LIMIT;
    let report = loop {
        let (code, stdout, stderr) = cluster.mgm("report memory");
        assert_eq!(code, Some(0), "{stderr}");
        if stdout.matches("used of 64.0 MiB").count() == 2 {
            break stdout;
        }
        assert!(std::time::Instant::now() < deadline, "{stdout}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(report.contains("node 1: data memory "), "{report}");
    cluster.node(2).kill();
    cluster.wait_for_state(2, "not connected", SELF_STOP_LIMIT);
    let (_, stdout, _) = cluster.mgm("report memory");
    assert!(stdout.contains("node 2: not connected"), "{stdout}");
}

/// The data memory `report memory` shows node `id` using, in bytes.
fn memory_used(cluster: &TestCluster, id: u8) -> f64 {
    let (_, stdout, _) = cluster.mgm("report memory");
    let line = (stdout.lines())
        .find(|line| line.starts_with(&format!("node {id}: data memory ")))
        .unwrap_or_else(|| panic!("no line for node {id}: {stdout}"));
    let used = line
        .split("data memory ")
        .nth(1)
        .and_then(|rest| rest.split(" used").next());
    let (number, unit) = used.and_then(|used| used.split_once(' ')).expect("a size");
    let number: f64 = number.parse().expect("a number");
    number
        * match unit {
            "B" => 1.0,
            "KiB" => 1024.0,
            "MiB" => 1024.0 * 1024.0,
            other => panic!("unit {other} in {line}"),
        }
}

#[test]
fn a_dropped_tables_memory_returns_to_every_node() {
    let cluster = TestCluster::start(2, 2);
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    create_chains_table(&client);
    let table = client.open_table(CHAINS_TABLE).expect("the table");
    // The reports come each heartbeat: wait until they show the table's rows.
    let empty = memory_used(&cluster, 1);
    // Enough rows for a mebibyte on each node (its two replicas): the primary hash index
    // takes ~13 bytes an entry.
    write_rows(&client, 0..50_000, 1, ExecuteMode::Commit);
    let deadline = std::time::Instant::now() + SELF_STOP_LIMIT;
    while memory_used(&cluster, 1) < empty + 1024.0 * 1024.0 {
        assert!(std::time::Instant::now() < deadline, "the rows show");
        std::thread::sleep(Duration::from_millis(100));
    }
    client.drop_table(&table).expect("dropped");
    // Freed a slice at a time (`ldm/reclaim.rs`), all of it in the end, on both nodes.
    for id in [1, 2] {
        while memory_used(&cluster, id) > empty + 256.0 * 1024.0 {
            assert!(
                std::time::Instant::now() < deadline,
                "node {id} freed the rows"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
fn clients_reach_rows_on_every_node_of_a_one_replica_cluster() {
    // Each node holds half the partitions and no copy of the other half: every read of a
    // key on the other node is answered by that node's ldm, straight to the client.
    let mut cluster = TestCluster::start(2, 1);
    let mut shown = String::new();
    let outcome = load_while(&mut cluster, &["--threads", "3"], 3, |cluster| {
        shown = cluster.mgm("show").1;
    });
    assert_nothing_lost(&outcome);
    let registered = shown.lines().filter(|l| l.contains("client")).count();
    assert_eq!(registered, 3, "one leased id per client:\n{shown}");
    let locked = load_while(&mut cluster, &["--locked-reads"], 2, |_| {});
    assert_nothing_lost(&locked);
    let after = cluster.mgm("show").1;
    assert!(
        !after.contains("registered"),
        "leases end with their clients:\n{after}"
    );
}

#[test]
fn a_cluster_data_node_refuses_a_client_without_a_leased_id() {
    let cluster = TestCluster::start(2, 2);
    let address = cluster.address(1);
    let (code, _, stderr) = run_kista(&["bench", "--connect", &address], RUN_LIMIT);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("node 1 belongs to a cluster: connect through the management server"),
        "{stderr}"
    );
}

#[test]
fn killing_the_backup_side_loses_no_acknowledged_write() {
    let mut cluster = TestCluster::start(2, 2);
    let outcome = load_while(&mut cluster, &[], 6, |cluster| cluster.node(2).kill());
    assert_nothing_lost(&outcome);
    assert_eq!(cluster.shown_state(2), "not connected");
    assert_eq!(cluster.shown_state(1), "started");
}

#[test]
fn killing_the_president_loses_no_acknowledged_write() {
    // Node 1 is the president and hosts the first coordinator; node 2 must take over.
    let mut cluster = TestCluster::start(2, 2);
    let outcome = load_while(&mut cluster, &[], 6, |cluster| cluster.node(1).kill());
    assert_nothing_lost(&outcome);
    assert_eq!(cluster.shown_state(2), "started");
}

#[test]
fn a_restarted_node_catches_up_under_load_and_then_holds_everything() {
    let mut cluster = TestCluster::start(2, 2);
    let outcome = load_while(&mut cluster, &[], 8, |cluster| {
        cluster.node(2).kill();
        cluster.wait_for_state(2, "not connected", SELF_STOP_LIMIT);
        cluster.restart(2);
        cluster.wait_for_state(2, "started", START_LIMIT);
        std::thread::sleep(Duration::from_millis(1000));
        // Node 2 now holds every row: the load goes on, and verifies, on it alone.
        cluster.node(1).kill();
    });
    assert_nothing_lost(&outcome);
    assert_eq!(cluster.shown_state(2), "started");
}

#[test]
fn a_split_between_the_data_nodes_leaves_exactly_one_side_serving_and_loses_nothing() {
    let mut cluster = TestCluster::start(2, 2);
    let outcome = load_while(&mut cluster, &[], 6, |cluster| {
        let (code, stdout, stderr) = cluster.mgm("cut 1 2");
        assert_eq!(code, Some(0), "{stdout}{stderr}");
    });
    assert_nothing_lost(&outcome);
    // The side that lost arbitration stopped itself; the other serves.
    let (loser, winner) = if cluster.shown_state(1) == "started" {
        (2, 1)
    } else {
        (1, 2)
    };
    let (exited_cleanly, stdout) = cluster
        .node(loser)
        .wait_exit(SELF_STOP_LIMIT)
        .unwrap_or_else(|| panic!("node {loser} stops itself"));
    assert!(stdout.contains("kista datad: stopped: "), "{stdout}");
    assert!(
        !exited_cleanly,
        "a node its cluster stopped exits with a failure"
    );
    assert_eq!(cluster.shown_state(winner), "started");
    assert_eq!(cluster.shown_state(loser), "not connected");
}

#[test]
fn a_cut_healed_within_the_heartbeat_grace_loses_nothing_and_splits_nothing() {
    let mut cluster = TestCluster::start(2, 2);
    let outcome = load_while(&mut cluster, &[], 5, |cluster| {
        assert_eq!(cluster.mgm("cut 1 2").0, Some(0));
        // Shorter than the grace (4 x 200 ms): what waited on the link arrives after.
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(cluster.mgm("heal 1 2").0, Some(0));
    });
    assert_nothing_lost(&outcome);
    assert_eq!(cluster.shown_state(1), "started");
    assert_eq!(cluster.shown_state(2), "started");
}

#[test]
fn a_short_delay_between_the_data_nodes_is_ridden_out_and_a_long_one_splits_them() {
    let mut cluster = TestCluster::start(2, 2);
    // 100 ms each way is well within the heartbeat grace (4 x 200 ms): both go on.
    let outcome = load_while(&mut cluster, &[], 5, |cluster| {
        let (code, stdout, stderr) = cluster.mgm("delay 1 2 100");
        assert_eq!(code, Some(0), "{stdout}{stderr}");
    });
    assert_nothing_lost(&outcome);
    assert_eq!(cluster.shown_state(1), "started");
    assert_eq!(cluster.shown_state(2), "started");
    // Beyond the grace the nodes find each other silent: one side goes on.
    let (code, stdout, stderr) = cluster.mgm("delay 1 2 3000");
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    // Wait for exactly one serving: under load the management server may show a node
    // not started for a moment (its heartbeats late) before the split itself.
    let serving = |cluster: &TestCluster| {
        [1, 2]
            .iter()
            .filter(|&&id| cluster.shown_state(id) == "started")
            .count()
    };
    wait_until(
        SELF_STOP_LIMIT,
        "a 3 s delay leaves one node serving",
        || serving(&cluster) == 1,
    );
}

#[test]
fn four_nodes_in_two_groups_survive_a_kill_in_each_group_and_a_restart() {
    // Partitions are spread over both node groups: every kill hits live data.
    let mut cluster = TestCluster::start(4, 2);
    let outcome = load_while(&mut cluster, &["--threads", "3"], 10, |cluster| {
        cluster.node(3).kill();
        cluster.wait_for_state(3, "not connected", SELF_STOP_LIMIT);
        cluster.node(2).kill();
        cluster.wait_for_state(2, "not connected", SELF_STOP_LIMIT);
        cluster.restart(3);
        cluster.wait_for_state(3, "started", START_LIMIT);
        std::thread::sleep(Duration::from_millis(500));
        // Node 3 holds its group's data again: its partner can go.
        cluster.node(4).kill();
    });
    assert_nothing_lost(&outcome);
    for (id, state) in [(1, "started"), (2, "not connected"), (3, "started")] {
        assert_eq!(cluster.shown_state(id), state, "node {id}");
    }
}

#[test]
fn four_nodes_in_two_groups_handle_a_stopped_node_and_a_split_down_the_middle() {
    let mut cluster = TestCluster::start(4, 2);
    let outcome = load_while(&mut cluster, &["--threads", "3"], 10, |cluster| {
        // A stopped node is found by its missed heartbeats; continued, it stops itself.
        cluster.node(4).signal(libc::SIGSTOP);
        cluster.wait_for_state(4, "failed", SELF_STOP_LIMIT);
        cluster.node(4).signal(libc::SIGCONT);
        assert!(
            cluster.node(4).wait_exit(SELF_STOP_LIMIT).is_some(),
            "node 4 stops"
        );
        cluster.restart(4);
        cluster.wait_for_state(4, "started", START_LIMIT);
        // {1, 3} and {2, 4}: each side one node of each group; the arbitrator picks one.
        for (a, b) in [(1, 2), (1, 4), (3, 2), (3, 4)] {
            assert_eq!(cluster.mgm(&format!("cut {a} {b}")).0, Some(0));
        }
    });
    assert_nothing_lost(&outcome);
    wait_until(SELF_STOP_LIMIT, "one side of the split stops", || {
        [1, 2, 3, 4]
            .iter()
            .filter(|&&id| cluster.shown_state(id) == "started")
            .count()
            == 2
    });
    let serving: Vec<bool> = [1, 2, 3, 4]
        .map(|id| cluster.shown_state(id) == "started")
        .into();
    assert!(
        serving == [true, false, true, false] || serving == [false, true, false, true],
        "exactly one side, holding both groups, goes on: {serving:?}"
    );
}

#[test]
fn mgm_restart_has_a_node_restart_in_its_own_process_and_catch_up() {
    let mut cluster = TestCluster::start(2, 2);
    let outcome = load_while(&mut cluster, &[], 8, |cluster| {
        let (code, stdout, stderr) = cluster.mgm("2 restart");
        assert_eq!(code, Some(0), "{stdout}{stderr}");
        wait_until(SELF_STOP_LIMIT, "node 2 goes down", || {
            cluster.shown_state(2) != "started"
        });
        cluster.wait_for_state(2, "started", START_LIMIT);
        assert!(
            cluster.node(2).is_running(),
            "the same process restarted the node"
        );
        std::thread::sleep(Duration::from_millis(500));
        cluster.node(1).kill();
    });
    assert_nothing_lost(&outcome);
    assert_eq!(cluster.shown_state(2), "started");
}

#[test]
fn restart_dash_n_leaves_the_process_waiting_until_mgm_start() {
    let mut cluster = TestCluster::start(2, 2);
    let (code, stdout, stderr) = cluster.mgm("1 start");
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stderr.contains("node 1 is running"), "{stderr}");
    let (code, stdout, stderr) = cluster.mgm("2 restart -n");
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    cluster.wait_for_state(2, "not connected", SELF_STOP_LIMIT);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(cluster.shown_state(2), "not connected", "it waits");
    assert!(
        cluster.node(2).is_running(),
        "its process waits for N start"
    );
    let (code, stdout, stderr) = cluster.mgm("2 start");
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    cluster.wait_for_state(2, "started", START_LIMIT);
    bench_verifies(&cluster);
}

#[test]
fn a_client_connects_and_runs_while_a_data_node_is_down() {
    let mut cluster = TestCluster::start(2, 2);
    cluster.node(2).kill();
    cluster.wait_for_state(2, "not connected", SELF_STOP_LIMIT);
    bench_verifies(&cluster);
}

#[test]
fn a_stopped_node_is_declared_failed_and_stops_itself_when_continued() {
    let mut cluster = TestCluster::start(2, 2);
    let outcome = load_while(&mut cluster, &[], 6, |cluster| {
        cluster.node(2).signal(libc::SIGSTOP);
    });
    assert_nothing_lost(&outcome);
    // Woken, node 2 finds itself shut out, loses arbitration and stops: it never serves.
    cluster.node(2).signal(libc::SIGCONT);
    let (_, stdout) = cluster
        .node(2)
        .wait_exit(SELF_STOP_LIMIT)
        .expect("the continued node stops itself");
    assert!(stdout.contains("kista datad: stopped: "), "{stdout}");
    assert_eq!(cluster.shown_state(1), "started");
}

#[test]
fn mgm_stop_stops_one_node_and_the_other_goes_on_serving() {
    let mut cluster = TestCluster::start(2, 2);
    let outcome = load_while(&mut cluster, &[], 5, |cluster| {
        let (code, stdout, stderr) = cluster.mgm("1 stop");
        assert_eq!(code, Some(0), "{stderr}");
        assert!(stdout.contains("node 1 is stopping"), "{stdout}");
    });
    assert_nothing_lost(&outcome);
    let (exited_cleanly, stdout) = cluster
        .node(1)
        .wait_exit(SELF_STOP_LIMIT)
        .expect("node 1 stops");
    assert!(
        stdout.contains("stopped by the management server (N stop)"),
        "{stdout}"
    );
    assert!(exited_cleanly, "a requested stop is no failure");
}

#[test]
fn shutdown_stops_every_node_and_the_management_server() {
    let mut cluster = TestCluster::start(2, 2);
    let (code, stdout, stderr) = cluster.mgm("shutdown");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("data nodes [1, 2] save a last global checkpoint and stop"),
        "{stdout}"
    );
    for id in [1, 2] {
        let (clean, stdout) = cluster
            .node(id)
            .wait_exit(SELF_STOP_LIMIT)
            .expect("the data node stops");
        assert!(clean, "node {id} stopped with a failure");
        assert!(
            stdout.contains("stopped by the management server (shutdown); GCI"),
            "node {id} stopped once its disk held the last GCI: {stdout}"
        );
    }
    let (clean, stdout) = cluster
        .mgmd
        .wait_exit(SELF_STOP_LIMIT)
        .expect("the management server stops after its nodes");
    assert!(clean && stdout.contains("kista mgmd: stopped"), "{stdout}");
}

#[test]
fn mgm_refuses_unknown_commands_and_nodes_with_a_reason() {
    let cluster = TestCluster::start(2, 2);
    let (code, _, stderr) = cluster.mgm("2 explode");
    assert_eq!(code, Some(1));
    assert!(stderr.contains("unknown command `2 explode`"), "{stderr}");
    assert!(stderr.contains("N stop"), "the help follows: {stderr}");
    let (code, _, stderr) = cluster.mgm("7 stop");
    assert_eq!(code, Some(1));
    assert!(stderr.contains("no data node 7"), "{stderr}");
}

/// A chain of dependent transactions: step s writes the chain's counter row (`chain`) and
/// row `chain_row(chain, s)`, both with value s, in one transaction.
fn chain_row(chain: i64, step: i64) -> i64 {
    1_000_000_000 * (chain + 1) + step
}

/// Writes `chain` step after step with `mode` until `stop`; returns each step acknowledged
/// with its GCI. A failed step is tried again (a write of the same values is idempotent).
fn write_chain(mgm: &str, chain: i64, mode: ExecuteMode, stop: &AtomicBool) -> Vec<(i64, u64)> {
    let client = Client::connect_cluster(mgm, None).expect("a client connects");
    let table = client.open_table(CHAINS_TABLE).expect("the chains table");
    let mut acknowledged = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let step = acknowledged.last().map_or(0, |&(step, _)| step) + 1;
        let mut transaction = client.transaction();
        for id in [chain, chain_row(chain, step)] {
            let row = vec![Value::Int(id), Value::Int(step)];
            transaction.write(&table, row).expect("a well-formed row");
        }
        let executed = transaction
            .execute(mode)
            .and_then(|pending| pending.wait_timeout(Duration::from_secs(10)));
        match executed {
            Ok(done) if done.outcome == TransactionOutcome::Committed => {
                acknowledged.push((step, done.gci));
            }
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    acknowledged
}

/// The GCI a start from disk restored, from the master's log (waited for: the master
/// logs it once every node reported what its disk holds).
fn restored_gci(cluster: &mut TestCluster) -> u64 {
    let deadline = std::time::Instant::now() + START_LIMIT;
    while std::time::Instant::now() < deadline {
        for id in [1, 2] {
            let log = cluster.node(id).stderr();
            let decision = log
                .split("restoring GCI ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|gci| gci.parse().ok());
            if let Some(gci) = decision {
                return gci;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no node logged the start's decision within {START_LIMIT:?}")
}

#[test]
fn killing_every_data_node_under_load_keeps_durable_commits_and_a_saved_state() {
    let mut cluster = TestCluster::start(2, 2);
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    create_chains_table(&client);
    drop(client);
    let mgm = cluster.mgm.clone();
    let bench_args: Vec<String> = ["bench", "--mgm", &mgm, "--keys", "2000", "--duration", "6"]
        .iter()
        .chain(&["--phases", "insert,update,read"])
        .map(|arg| arg.to_string())
        .collect();
    let bench = std::thread::spawn(move || {
        let args: Vec<&str> = bench_args.iter().map(String::as_str).collect();
        run_kista(&args, RUN_LIMIT)
    });
    // Chains 0 and 1 commit durably, 2 and 3 as by default.
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|chain| {
            let (mgm, stop) = (mgm.clone(), stop.clone());
            let mode = if chain < 2 {
                ExecuteMode::CommitDurable
            } else {
                ExecuteMode::Commit
            };
            std::thread::spawn(move || write_chain(&mgm, chain, mode, &stop))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(3500));
    cluster.crash_every_node();
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::SeqCst);
    let acknowledged: Vec<Vec<(i64, u64)>> = writers
        .into_iter()
        .map(|writer| writer.join().expect("the writer thread"))
        .collect();
    let _ = bench.join();
    for (chain, steps) in acknowledged.iter().enumerate() {
        assert!(steps.len() > 3, "chain {chain} made progress: {steps:?}");
    }

    cluster.spawn_every_node();
    let restored = restored_gci(&mut cluster);
    cluster.wait_for_start_from_disk();
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    let table = client.open_table(CHAINS_TABLE).expect("the table is back");
    let rows: BTreeMap<i64, i64> = client
        .scan(&table, ScanSpec::full())
        .expect("a scan")
        .map(|row| {
            let row = row.expect("a row");
            match (&row[0], &row[1]) {
                (Value::Int(id), Value::Int(step)) => (*id, *step),
                other => panic!("a chains row: {other:?}"),
            }
        })
        .collect();
    for (chain, steps) in acknowledged.iter().enumerate() {
        let chain = chain as i64;
        let counter = rows.get(&chain).copied().unwrap_or(0);
        let last = steps.last().map_or(0, |&(step, _)| step);
        // Nothing torn: each step's two rows came back together, or neither did.
        for step in 1..=last.max(counter) {
            let present = rows.get(&chain_row(chain, step)) == Some(&step);
            assert_eq!(present, step <= counter, "chain {chain} step {step}");
        }
        let must_have = if chain < 2 {
            last
        } else {
            let saved = steps.iter().filter(|&&(_, gci)| gci <= restored);
            saved.map(|&(step, _)| step).max().unwrap_or(0)
        };
        eprintln!(
            "chain {chain}: restored step {counter}, acknowledged {last}, must have {must_have}"
        );
        assert!(
            must_have > 0,
            "chain {chain}: a step was saved before the crash"
        );
        assert!(
            counter >= must_have,
            "chain {chain} restored to step {counter} of {last}; {must_have} must be there \
             (GCI {restored} restored)"
        );
    }
}

#[test]
fn a_node_restarted_under_load_copies_only_what_changed_while_it_was_down() {
    const ROWS: i64 = 20_000;
    let mut cluster = TestCluster::start(2, 2);
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    create_chains_table(&client);
    write_rows(&client, 0..ROWS, 0, ExecuteMode::Commit);
    // A few global checkpoints: node 2's disk records every row.
    std::thread::sleep(Duration::from_millis(3000));
    cluster.node(2).kill();
    // One row in a hundred changes while node 2 is down, and writes go on while it
    // restarts.
    write_rows(&client, 0..ROWS / 100, 1, ExecuteMode::Commit);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (mgm, stop) = (cluster.mgm.clone(), stop.clone());
        std::thread::spawn(move || {
            let client = Client::connect_cluster(&mgm, None).expect("a client connects");
            let mut round = 2;
            while !stop.load(Ordering::SeqCst) {
                write_rows(&client, 1_000..1_050, round, ExecuteMode::Commit);
                round += 1;
            }
        })
    };
    cluster.restart(2);
    cluster.wait_for_state(2, "started", START_LIMIT);
    stop.store(true, Ordering::SeqCst);
    writer.join().expect("the writer thread");
    write_rows(&client, 1_000..1_050, -1, ExecuteMode::Commit);
    drop(client);

    let master_log = cluster.node(1).stderr();
    let started = master_log
        .lines()
        .find(|line| line.contains("node 2 started"))
        .expect("the master logs the restart");
    assert!(started.contains("from its own disk"), "{started}");
    let copied: u64 = started
        .split("): ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|rows| rows.parse().ok())
        .expect("the line counts rows");
    eprintln!("{started}");
    assert!(
        copied < ROWS as u64 / 10,
        "{copied} rows copied of {ROWS}: {started}"
    );

    // Node 2 alone serves every row as acknowledged.
    cluster.node(1).kill();
    let rows = every_chains_row(&cluster.mgm);
    let expected: BTreeMap<i64, i64> = (0..ROWS)
        .map(|id| match id {
            1_000..1_050 => (id, -1),
            _ if id < ROWS / 100 => (id, 1),
            _ => (id, 0),
        })
        .collect();
    assert_eq!(rows.len(), expected.len());
    assert!(rows == expected, "node 2 holds every row as acknowledged");
}
