//! `kista up`: one command starts a cluster that serves, starts again every child that
//! dies, and SIGTERM stops all of it.

mod support;

use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::{mysql, run_kista, run_mgm, spawn_up, KistaProcess, ShutdownOnDrop};

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn kista_up_starts_a_cluster_that_serves_and_sigterm_stops_every_process() {
    let (up, dir) = start_up("serves");
    let mgm = up.address.to_string();
    let cluster = ShutdownOnDrop::new(&mgm, &dir);

    let (code, stdout, stderr) = run_mgm(&mgm, &cluster.key_file, "show", LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    let started = stdout
        .lines()
        .filter(|l| l.contains(" data ") && l.contains("started"));
    assert_eq!(started.count(), 2, "both data nodes started:\n{stdout}");
    let key_file = &cluster.key_file;
    let args = [
        "bench",
        "--mgm",
        &mgm,
        "--key-file",
        key_file,
        "--keys",
        "2000",
        "--verify",
    ];
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

/// `kista up` on free ports in a fresh directory under `name`.
fn start_up(name: &str) -> (KistaProcess, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("kista-up-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let up = spawn_up(&dir, &["--data-memory", "64M"]);
    (up, dir)
}

/// The pid `kista up` printed for its child `name` ("started NAME (pid N)").
fn pid_of(startup: &str, name: &str) -> i32 {
    startup
        .split(&format!("started {name} (pid "))
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("kista up names the pid of {name}:\n{startup}"))
}

/// Waits (LIMIT at most) until `ready` holds.
fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !ready() {
        assert!(Instant::now() < deadline, "{what} within {LIMIT:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Data nodes `show` lists as started.
fn started_data_nodes(cluster: &ShutdownOnDrop) -> usize {
    let (_, stdout, _) = run_mgm(&cluster.mgm, &cluster.key_file, "show", LIMIT);
    stdout
        .lines()
        .filter(|l| l.contains(" data ") && l.contains("started"))
        .count()
}

/// Inserts ids 1, 2, ... one statement each, each until the front end acknowledges it
/// (a duplicate means an earlier try whose answer was lost committed it), through every
/// restart of the front end; returns the highest acknowledged id when `stop` is set.
fn insert_until_stopped(port: u16, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut acknowledged = 0;
        while !stop.load(Ordering::SeqCst) {
            let id = acknowledged + 1;
            match mysql(port, &format!("INSERT INTO a.t VALUES ({id})")) {
                Ok(_) => acknowledged = id,
                Err(error) if error.contains("ERROR 1062") => acknowledged = id,
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
        acknowledged
    })
}

#[test]
fn kista_up_starts_again_each_child_killed_under_load_and_keeps_every_committed_row() {
    let (up, dir) = start_up("angel");
    let mgm = up.address.to_string();
    let cluster = ShutdownOnDrop::new(&mgm, &dir);
    let sql = up.sql_address().port();
    mysql(
        sql,
        "CREATE DATABASE a; CREATE TABLE a.t (id INT PRIMARY KEY)",
    )
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let loader = insert_until_stopped(sql, stop.clone());
    let rows =
        || mysql(sql, "SELECT COUNT(*) FROM a.t").map_or(0, |n| n.trim().parse().unwrap_or(0));
    let grows = |from: u64| wait_until("the load goes on", || rows() > from + 20);

    grows(0);
    // A data node: its peer serves alone, then the node restarts into the cluster.
    kill(pid_of(&up.startup, "data node 2"));
    wait_until("data node 2 leaves", || started_data_nodes(&cluster) < 2);
    wait_until("data node 2 is back", || started_data_nodes(&cluster) == 2);
    grows(rows());
    // The SQL front end: back on its port.
    kill(pid_of(&up.startup, "sql"));
    grows(rows());
    // The management server: back on its port; the data nodes serve on meanwhile.
    kill(pid_of(&up.startup, "mgmd"));
    grows(rows());
    wait_until("the management server is back", || {
        started_data_nodes(&cluster) == 2
    });

    stop.store(true, Ordering::SeqCst);
    let acknowledged = loader.join().unwrap();
    let kept = mysql(
        sql,
        &format!("SELECT COUNT(*) FROM a.t WHERE id <= {acknowledged}"),
    )
    .unwrap();
    assert_eq!(
        kept.trim(),
        acknowledged.to_string(),
        "every acknowledged row is kept"
    );

    let (success, out, err) = up.stop();
    assert!(success, "{out}\n{err}");
    for child in ["data node 2", "sql", "mgmd"] {
        let exited = format!("WARN  kista up: {child} exited (signal: 9");
        assert!(out.contains(&exited), "{child} is reported:\n{out}");
    }
    assert!(
        out.lines().all(is_log_line),
        "kista up's own lines are in the log format too:\n{out}"
    );
    assert_eq!(
        out.matches("starting it again in 1 s (restart 1)").count(),
        3,
        "{out}"
    );
    every_log_line_is_in_the_one_format(&dir);
    let log = |name: &str| std::fs::read_to_string(dir.join("logs").join(name)).unwrap();
    let survivor = log("data-node-1.log");
    for said in [
        "node=1 data node: membership generation 2: node(s) 2 left (failed or stopped)",
        "node=1 data node: tc.0: takeover 1: resolving the transactions node(s) 2 coordinated",
        "transaction(s) found:",
        "node=1 data node: membership generation 3: node 2 joined; members 1, 2",
    ] {
        assert!(
            survivor.contains(said),
            "{said} in data node 1's log:\n{survivor}"
        );
    }
    let restarted = log("data-node-2.log");
    let asked = "node=2 data node: restart: asking the running cluster to let this node join";
    assert!(restarted.contains(asked), "{restarted}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every line the children wrote: `2026-11-27T15:56:36.431Z INFO  node=1 component: ...`.
fn every_log_line_is_in_the_one_format(dir: &std::path::Path) {
    for name in ["mgmd.log", "data-node-1.log", "data-node-2.log", "sql.log"] {
        let text = std::fs::read_to_string(dir.join("logs").join(name)).unwrap();
        for line in text.lines() {
            assert!(is_log_line(line), "{name}: {line}");
            assert!(
                line[31..].starts_with("node="),
                "{name} names the node: {line}"
            );
        }
    }
}

/// Whether `line` begins with the time and level of the one log format (crates/log).
fn is_log_line(line: &str) -> bool {
    let bytes = line.as_bytes();
    if bytes.len() <= 36 || !line.is_char_boundary(31) {
        return false;
    }
    let separators = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    let mut timestamp = separators.iter().chain(&[(19, b'.'), (23, b'Z')]);
    let level = ["INFO  ", "WARN  ", "ERROR "]
        .iter()
        .any(|l| line[25..].starts_with(l));
    timestamp.all(|&(at, c)| bytes[at] == c) && level
}

#[test]
fn kista_up_stops_when_the_cluster_is_shut_down_and_leaves_a_stopped_data_node_stopped() {
    let (mut up, dir) = start_up("stop");
    let mgm = up.address.to_string();
    let cluster = ShutdownOnDrop::new(&mgm, &dir);
    let (code, stdout, stderr) = run_mgm(&mgm, &cluster.key_file, "2 stop", LIMIT);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    wait_until("data node 2 stops", || started_data_nodes(&cluster) == 1);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        started_data_nodes(&cluster),
        1,
        "a node stopped on request stays stopped"
    );
    let (code, stdout, stderr) = run_mgm(&mgm, &cluster.key_file, "shutdown", LIMIT);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let (success, out) = up.wait_exit(LIMIT).expect("kista up ends with its cluster");
    assert!(success, "{out}");
    assert!(
        out.contains("data node 2 stopped on request; it stays stopped"),
        "{out}"
    );
    assert!(out.contains("the cluster was shut down"), "{out}");
    assert!(!out.contains("starting it again"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kista_up_refuses_a_port_in_use_at_once_naming_it() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let dir = std::env::temp_dir().join(format!("kista-up-taken-{}", std::process::id()));
    let dir_arg = dir.display().to_string();
    for (option, other) in [("--mgm-port", "--sql-port"), ("--sql-port", "--mgm-port")] {
        let started = Instant::now();
        let args = [
            "up",
            "--dir",
            &dir_arg,
            "--data-port",
            "0",
            other,
            "0",
            option,
            &port,
        ];
        let (code, stdout, stderr) = run_kista(&args, LIMIT);
        assert_eq!(code, Some(1), "{stdout}{stderr}");
        assert!(stderr.contains(&format!("port {port}")), "{stderr}");
        assert!(stderr.contains(option), "{stderr}");
        assert!(!stdout.contains("started"), "nothing is started: {stdout}");
        assert!(started.elapsed() < LIMIT);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn kill(pid: i32) {
    // SAFETY: kill(2) with a pid `kista up` reported for its child and a valid signal.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}
