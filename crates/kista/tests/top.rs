//! `kista top`: every data node's threads as their `info` blocks measured them, as JSON
//! for scripts and as a live view in a real terminal (tmux).

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::{key_file, run_kista, run_mgm, spawn_up, KistaProcess};

const LIMIT: Duration = Duration::from_secs(60);

/// Stops the cluster (and a tmux server) however the test ends, and removes its directory.
struct Cleanup {
    mgm: String,
    key_file: String,
    tmux_socket: Option<String>,
    up: Option<KistaProcess>,
    dir: std::path::PathBuf,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(socket) = &self.tmux_socket {
            let _ = Command::new("tmux")
                .args(["-L", socket, "kill-server"])
                .output();
        }
        let _ = run_mgm(&self.mgm, &self.key_file, "shutdown", LIMIT);
        // Once `kista up` has ended, nothing writes in the directory any more.
        drop(self.up.take());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start_cluster(name: &str) -> Cleanup {
    let dir = std::env::temp_dir().join(format!("kista-top-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let up = spawn_up(&dir, &["--data-memory", "64M"]);
    Cleanup {
        mgm: up.address.to_string(),
        key_file: key_file(&dir),
        tmux_socket: None,
        up: Some(up),
        dir,
    }
}

fn top_json(cluster: &Cleanup) -> serde_json::Value {
    let args = [
        "top",
        "--mgm",
        &cluster.mgm,
        "--key-file",
        &cluster.key_file,
    ];
    let (code, stdout, stderr) = run_kista(&[&args[..], &["--once", "--json"]].concat(), LIMIT);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn top_once_json_shows_every_data_nodes_threads_under_load_and_a_stopped_node() {
    let cleanup = start_cluster("json");
    let mgm = cleanup.mgm.clone();
    let (bench_mgm, key_file) = (mgm.clone(), cleanup.key_file.clone());
    let bench = std::thread::spawn(move || {
        let args = [
            "bench",
            "--mgm",
            &bench_mgm,
            "--key-file",
            &key_file,
            "--keys",
            "20000",
            "--duration",
            "5",
        ];
        run_kista(&args, LIMIT)
    });
    std::thread::sleep(Duration::from_secs(3));
    let sample = top_json(&cleanup);
    let nodes = sample["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2, "{sample:#}");
    let mut signals = 0;
    for node in nodes {
        assert_eq!(node["live"], true, "{node:#}");
        let free = node["data_dir_free_bytes"].as_u64();
        assert!(
            free.is_some_and(|bytes| bytes > 0),
            "the disk's free space: {node:#}"
        );
        let threads = node["threads"].as_array().unwrap();
        assert!(!threads.is_empty(), "{node:#}");
        let modules: Vec<&str> = threads
            .iter()
            .map(|t| t["modules"].as_str().unwrap())
            .collect();
        assert!(modules.iter().any(|m| m.contains("tc.0")), "{modules:?}");
        for thread in threads {
            for share in ["user_percent", "system_percent", "spin_percent"] {
                let percent = thread[share].as_f64().unwrap();
                assert!((0.0..=100.5).contains(&percent), "{share} {percent}");
            }
            let level = thread["load_level"].as_u64().unwrap();
            assert!((1..=5).contains(&level), "load level {level}");
            signals += thread["signals_per_second"].as_u64().unwrap();
        }
    }
    assert!(signals > 1_000, "a benchmark runs: {signals} signals/s");
    let (code, stdout, stderr) = bench.join().unwrap();
    assert_eq!(code, Some(0), "{stdout}{stderr}");

    let (code, _, stderr) = run_mgm(&mgm, &cleanup.key_file, "2 stop", LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    let deadline = Instant::now() + LIMIT;
    loop {
        let sample = top_json(&cleanup);
        let node_2 = &sample["nodes"][1];
        if node_2["live"] == false {
            assert!(node_2["error"].is_string(), "{node_2:#}");
            assert_eq!(sample["nodes"][0]["live"], true, "{sample:#}");
            break;
        }
        assert!(Instant::now() < deadline, "node 2 shown down: {sample:#}");
        std::thread::sleep(Duration::from_millis(300));
    }

    let args = ["top", "--mgm", &mgm, "--key-file", &cleanup.key_file];
    let (code, _, stderr) = run_kista(&args, LIMIT);
    assert_eq!(code, Some(2), "the live view wants a terminal: {stderr}");
    assert!(stderr.contains("--once"), "{stderr}");
}

#[test]
fn top_in_a_terminal_shows_each_thread_changes_order_on_s_and_quits_on_q() {
    let mut cleanup = start_cluster("tmux");
    let socket = format!("kista-top-{}", std::process::id());
    cleanup.tmux_socket = Some(socket.clone());
    let tmux = |args: &[&str]| {
        let output = Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .output()
            .expect("tmux runs (scripts/test-all installs it)");
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    let top = format!(
        "{} top --mgm {} --key-file {}",
        env!("CARGO_BIN_EXE_kista"),
        cleanup.mgm,
        cleanup.key_file
    );
    let (started, _) = tmux(&[
        "new-session",
        "-d",
        "-s",
        "top",
        "-x",
        "120",
        "-y",
        "20",
        &top,
    ]);
    assert!(started, "tmux starts kista top");
    let screen_shows = |wanted: &dyn Fn(&str) -> bool| {
        let deadline = Instant::now() + LIMIT;
        loop {
            let (_, screen) = tmux(&["capture-pane", "-p", "-t", "top"]);
            if wanted(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the screen never showed it:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let screen = screen_shows(&|screen| {
        let rows = |node: &str| {
            screen
                .lines()
                .any(|l| l.starts_with(node) && l.contains("tc.0"))
        };
        let disks = screen.contains("node 1 disk") && screen.contains("GiB free");
        screen.contains("2 data nodes, 2 live") && rows("1 ") && rows("2 ") && disks
    });
    assert!(screen.contains("sorted by cpu"), "{screen}");
    assert!(
        screen.contains("signals/s") && screen.contains("spin%"),
        "{screen}"
    );

    tmux(&["send-keys", "-t", "top", "s"]);
    screen_shows(&|screen| screen.contains("sorted by signals"));
    tmux(&["send-keys", "-t", "top", "q"]);
    let deadline = Instant::now() + LIMIT;
    while tmux(&["has-session", "-t", "top"]).0 {
        assert!(Instant::now() < deadline, "q ends kista top");
        std::thread::sleep(Duration::from_millis(100));
    }
}
