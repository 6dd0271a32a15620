//! A small file system for the full-disk tests: a tmpfs the test mounts (only where it may:
//! CI runs as root), a filler file that fills it, and writes until the cluster refuses them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use kista_client::types::Value;
use kista_client::{Client, ExecuteMode, TransactionOutcome};

use super::chains::CHAINS_TABLE;

/// Cluster settings that fit the file system: two 24M REDO logs, checkpoints written fast.
pub const SETTINGS: &str = "redo_log = \"24M\"\ncheckpoint_write_bytes_per_sec = \"64M\"";
/// The file system's size: two 24M REDO logs and room for their checkpoints.
const FILE_SYSTEM: &str = "size=160m";
/// Longest the writes may take to fill the REDO log, or to go on once space is freed.
pub const WRITES_LIMIT: Duration = Duration::from_secs(120);

/// A tmpfs mounted for the test, unmounted when dropped.
pub struct Mounted(pub PathBuf);

impl Mounted {
    /// A tmpfs of [`FILE_SYSTEM`]'s size in a new directory, or `None` where this
    /// process may not mount one.
    pub fn small_tmpfs() -> Option<Self> {
        let at = std::env::temp_dir().join(format!("kista-full-disk-{}", std::process::id()));
        std::fs::create_dir_all(&at).expect("the mount point");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", FILE_SYSTEM, "tmpfs"])
            .arg(&at)
            .status();
        if !mounted.is_ok_and(|status| status.success()) {
            let _ = std::fs::remove_dir(&at);
            return None;
        }
        Some(Self(at))
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Fills the file system at `dir` but for `left_bytes` with one file.
pub fn fill(dir: &Path, left_bytes: u64) -> PathBuf {
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
pub fn free_bytes(dir: &Path) -> u64 {
    let output = Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(dir)
        .output()
        .expect("df runs");
    let text = String::from_utf8_lossy(&output.stdout);
    let last = text.lines().last().expect("a line").trim().to_string();
    last.parse().expect("a number of bytes")
}

/// Writes 500-row batches of the chains table to rows `first..` until one fails; returns its error.
pub fn write_until_refused(client: &Client, first: i64) -> kista_client::ClientError {
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
