//! `kista up`: one command starts a cluster that serves, and SIGTERM stops all of it.

mod support;

use std::net::TcpStream;
use std::time::Duration;

use support::{run_kista, KistaProcess};

const LIMIT: Duration = Duration::from_secs(120);

/// Shuts the cluster down through its management server if the test ends early (the
/// children of `kista up` run in their own process group and outlive it).
struct ShutdownOnDrop(String);

impl Drop for ShutdownOnDrop {
    fn drop(&mut self) {
        let _ = run_kista(&["mgm", "--mgm", &self.0, "-e", "shutdown"], LIMIT);
    }
}

#[test]
fn kista_up_starts_a_cluster_that_serves_and_sigterm_stops_every_process() {
    let dir = std::env::temp_dir().join(format!("kista-up-{}", std::process::id()));
    let dir_arg = dir.display().to_string();
    let up = KistaProcess::spawn(&[
        "up",
        "--dir",
        &dir_arg,
        "--mgm-port",
        "0",
        "--data-port",
        "0",
        "--data-memory",
        "64M",
        "--sql-port",
        "0",
    ]);
    let mgm = up.address.to_string();
    let _guard = ShutdownOnDrop(mgm.clone());

    let (code, stdout, stderr) = run_kista(&["mgm", "--mgm", &mgm, "-e", "show"], LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    let started = stdout
        .lines()
        .filter(|l| l.contains(" data ") && l.contains("started"));
    assert_eq!(started.count(), 2, "both data nodes started:\n{stdout}");
    let args = ["bench", "--mgm", &mgm, "--keys", "2000", "--verify"];
    let (code, stdout, stderr) = run_kista(&args, LIMIT);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("0 missing, 0 wrong"), "{stdout}");
    assert!(dir.join("cluster.toml").exists());
    assert!(dir.join("logs").join("data-node-1.log").exists());
    let sql = up.sql_address();
    assert!(TcpStream::connect(sql).is_ok(), "the SQL front end serves");

    let (success, out, err) = up.stop();
    assert!(success, "{out}\n{err}");
    assert!(out.contains("kista up: stopped"), "{out}");
    assert!(
        TcpStream::connect(&mgm).is_err(),
        "the management server stopped with it"
    );
    assert!(
        TcpStream::connect(sql).is_err(),
        "the SQL front end stopped with it"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kista_up_refuses_data_nodes_that_do_not_fill_node_groups() {
    let (code, _, stderr) = run_kista(&["up", "--data-nodes", "3", "--replicas", "2"], LIMIT);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--data-nodes (3) must be a positive multiple of --replicas (2)"),
        "{stderr}"
    );
}
