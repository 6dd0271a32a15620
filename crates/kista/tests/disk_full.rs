//! A full disk, with real processes: the data directories on a small file system (a
//! tmpfs this test mounts; skipped, saying so, where it may not mount one) that a filler
//! file then fills. Local checkpoints are refused and tried again, never fatal: no data
//! node stops, reads go on, writes too until the REDO log is nearly full, then they fail
//! at once with 4262 (disk full, temporary); once the filler is removed, writes go on.
//! Each node reports the free space it has.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use kista_client::types::Value;
use kista_client::{Client, ErrorCategory, ExecuteMode, ScanSpec, TransactionOutcome};
use support::chains::{create_chains_table, CHAINS_TABLE};
use support::cluster::{TestCluster, START_LIMIT};

/// The file system's size: two 24M REDO logs and room for their checkpoints.
const FILE_SYSTEM: &str = "size=160m";
/// Longest the writes may take to fill the REDO log, or to go on once space is freed.
const WRITES_LIMIT: Duration = Duration::from_secs(120);

/// A tmpfs mounted for the test, unmounted when dropped.
struct Mounted(PathBuf);

impl Mounted {
    fn tmpfs(at: &Path) -> Option<Self> {
        std::fs::create_dir_all(at).expect("the mount point");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", FILE_SYSTEM, "tmpfs"])
            .arg(at)
            .status();
        mounted
            .is_ok_and(|status| status.success())
            .then(|| Self(at.to_path_buf()))
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Fills the file system at `dir` but for `left_bytes` with one file.
fn fill(dir: &Path, left_bytes: u64) -> PathBuf {
    let path = dir.join("filler");
    let free = free_bytes(dir);
    let file = std::fs::File::create(&path).expect("the filler");
    file.set_len(0).expect("empty");
    let chunk = vec![0x55u8; 1 << 20];
    let mut written = 0u64;
    let mut out = std::io::BufWriter::new(file);
    while written + chunk.len() as u64 + left_bytes < free {
        use std::io::Write;
        if out.write_all(&chunk).is_err() {
            break;
        }
        written += chunk.len() as u64;
    }
    drop(out);
    path
}

/// Free bytes of the file system holding `dir`, as `df` says.
fn free_bytes(dir: &Path) -> u64 {
    let output = Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(dir)
        .output()
        .expect("df runs");
    let text = String::from_utf8_lossy(&output.stdout);
    let last = text.lines().last().expect("a line").trim().to_string();
    last.parse().expect("a number of bytes")
}

/// Writes 500-row batches (1 KB rows) to rows `first..` until one fails; returns its error.
fn write_until_refused(client: &Client, first: i64) -> kista_client::ClientError {
    let table = client.open_table(CHAINS_TABLE).expect("the table");
    let deadline = Instant::now() + WRITES_LIMIT;
    let mut id = first;
    while Instant::now() < deadline {
        let mut tx = client.transaction();
        for _ in 0..500 {
            tx.write(&table, vec![Value::Int(id), Value::Int(id)])
                .expect("a row");
            id += 1;
        }
        let done = tx.execute(ExecuteMode::Commit).and_then(|p| p.wait());
        match done {
            Ok(done) if done.outcome == TransactionOutcome::Committed => {}
            Ok(done) => panic!("{done:?}"),
            Err(error) => return error,
        }
    }
    panic!("no write was refused within {WRITES_LIMIT:?}");
}

#[test]
fn a_full_disk_stops_no_node_refuses_writes_as_disk_full_and_they_go_on_once_freed() {
    let mount_point = std::env::temp_dir().join(format!("kista-full-disk-{}", std::process::id()));
    let Some(mounted) = Mounted::tmpfs(&mount_point) else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let dir = mounted.0.join("cluster");
    let settings = "redo_log = \"24M\"\ncheckpoint_write_bytes_per_sec = \"64M\"";
    let mut cluster = TestCluster::launch_in(dir.clone(), 2, 2, settings, &[1, 2]);
    for id in 1..=2 {
        cluster.wait_for_state(id, "started", START_LIMIT);
    }
    let client = Client::connect_cluster(&cluster.mgm).expect("a client connects");
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
