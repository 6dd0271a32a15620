//! Clients through a restart of every data node, with real processes: the native client
//! connects again to the nodes that come back and goes on with the same `Client`,
//! refusing requests meanwhile as temporary (4035) rather than staying on dead
//! connections; `kista sql` answers 1297 (retry) meanwhile and serves again after, and
//! exits once no node was reachable for `--cluster-lost-exit-ms`, so that its supervisor
//! starts it afresh.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use kista_client::types::Value;
use kista_client::{Client, ErrorCategory, ExecuteMode};
use support::chains::{create_chains_table, every_chains_row, write_rows, CHAINS_TABLE};
use support::cluster::TestCluster;
use support::{mysql, wait_until, KistaProcess};

/// Longest a client may take to notice every node is gone, or a front end to exit.
const NOTICE_LIMIT: Duration = Duration::from_secs(30);
/// Longest a statement may keep failing once the cluster is started again.
const SERVE_AGAIN_LIMIT: Duration = Duration::from_secs(60);

#[test]
fn the_native_client_rides_through_a_restart_of_every_data_node() {
    let mut cluster = TestCluster::start(2, 2);
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    create_chains_table(&client);
    write_rows(&client, 0..500, 1, ExecuteMode::CommitDurable);
    let table = client.open_table(CHAINS_TABLE).expect("the table");

    cluster.crash_every_node();
    let none_live = || client.data_nodes().iter().all(|node| !node.live);
    wait_until(NOTICE_LIMIT, "the client sees every node gone", none_live);
    let mut refused = client.transaction();
    refused
        .write(&table, vec![Value::Int(1), Value::Int(9)])
        .expect("a well-formed row");
    let error = match refused.execute(ExecuteMode::Commit) {
        Ok(pending) => pending.wait().expect_err("no node to commit on"),
        Err(error) => error,
    };
    assert_eq!(error.category(), ErrorCategory::Temporary, "{error}");
    assert_eq!(error.code(), 4035, "{error}");

    cluster.spawn_every_node();
    cluster.wait_for_start_from_disk();
    // The same client, never rebuilt: its writes go through again.
    write_rows(&client, 500..1_000, 2, ExecuteMode::CommitDurable);
    let mut expected: BTreeMap<i64, i64> = (0..500).map(|id| (id, 1)).collect();
    expected.extend((500..1_000).map(|id| (id, 2)));
    assert_eq!(every_chains_row(&cluster.mgm), expected);
}

#[test]
fn the_sql_front_end_answers_1297_while_every_data_node_restarts_and_then_serves() {
    let mut cluster = TestCluster::start(2, 2);
    let sql = KistaProcess::spawn(&["sql", "--mgm", &cluster.mgm, "--port", "0"]);
    let port = sql.address.port();
    // Durable, so the rows are on disk before the crash (a default commit is within a
    // global checkpoint, about a second).
    let create = "SET kista_durable_commits = ON; CREATE DATABASE r; \
                  CREATE TABLE r.t (id INT PRIMARY KEY, v INT); \
                  INSERT INTO r.t VALUES (1, 10), (2, 20);";
    mysql(port, create).expect("the table is made");

    cluster.crash_every_node();
    let mut last_error = String::new();
    wait_until(NOTICE_LIMIT, "a statement fails with 1297", || match mysql(
        port,
        "SELECT v FROM r.t WHERE id = 1",
    ) {
        Ok(_) => false,
        Err(error) => {
            last_error = error;
            last_error.contains("ERROR 1297")
        }
    });
    assert!(
        last_error.contains("no data node is connected"),
        "{last_error}"
    );

    cluster.spawn_every_node();
    cluster.wait_for_start_from_disk();
    let mut answer = Err(String::new());
    wait_until(SERVE_AGAIN_LIMIT, "the front end serves again", || {
        answer = mysql(
            port,
            "UPDATE r.t SET v = v + 1; SELECT v FROM r.t ORDER BY id",
        );
        answer.is_ok()
    });
    assert_eq!(answer.as_deref(), Ok("11\n21\n"));
}

#[test]
fn a_front_end_without_any_data_node_past_its_limit_exits_for_its_supervisor() {
    let mut cluster = TestCluster::start(2, 2);
    let mgm = cluster.mgm.clone();
    let args = [
        "sql",
        "--mgm",
        &mgm,
        "--port",
        "0",
        "--cluster-lost-exit-ms",
        "1500",
    ];
    let mut sql = KistaProcess::spawn(&args);
    cluster.crash_every_node();
    let exited = sql.wait_exit(NOTICE_LIMIT);
    let Some((success, _)) = exited else {
        panic!("the front end still runs: {}", sql.stderr());
    };
    assert!(!success, "it exits failing");
    std::thread::sleep(Duration::from_millis(100));
    let log = sql.stderr();
    assert!(
        log.contains("no data node was reachable for"),
        "it says why: {log}"
    );
}
