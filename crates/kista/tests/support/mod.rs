//! `kista` processes for tests: a long-running role (`datad`, `mgmd`) started and awaited
//! until it prints `ready`, stopped (and killed if it will not stop) when dropped; a
//! standalone data node on a free port; and whole clusters ([`cluster`]).

// Shared by several test binaries, each of which uses only part of it.
#![allow(dead_code)]

pub mod chains;
pub mod cluster;
pub mod full_disk;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Longest a node may take to start or stop before the test fails.
pub const PROCESS_TIMEOUT: Duration = Duration::from_secs(30);

/// A standalone data node (`kista datad --standalone` on a free port).
pub type Datad = KistaProcess;

/// A long-running `kista` process.
pub struct KistaProcess {
    child: Option<Child>,
    pub address: SocketAddr,
    /// What it printed up to `ready`.
    pub startup: String,
    stdout: Option<BufReader<ChildStdout>>,
    /// Drained by a thread so the node never blocks on a full pipe.
    stderr: Arc<Mutex<String>>,
}

/// Waits until `done` holds, at most `limit`; panics saying `what` otherwise.
pub fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `sql` through the mysql client on `port` as root: its output without column names,
/// or its error output as the error.
pub fn mysql(port: u16, sql: &str) -> Result<String, String> {
    let port = port.to_string();
    let args = [
        "-h",
        "127.0.0.1",
        "-P",
        &port,
        "-u",
        "root",
        "-N",
        "-e",
        sql,
    ];
    let output = Command::new("mysql")
        .args(args)
        .output()
        .expect("the mysql client runs");
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// Shuts a cluster down through its management server (at `mgm`, with the key file
/// `key_file`) however a test ends: the children of `kista up` run in their own process
/// group and outlive it.
pub struct ShutdownOnDrop {
    pub mgm: String,
    pub key_file: String,
}

impl ShutdownOnDrop {
    /// For the cluster `kista up --dir dir` serves at `mgm`.
    pub fn new(mgm: &str, dir: &std::path::Path) -> Self {
        Self {
            mgm: mgm.to_string(),
            key_file: key_file(dir),
        }
    }
}

impl Drop for ShutdownOnDrop {
    fn drop(&mut self) {
        let _ = run_mgm(
            &self.mgm,
            &self.key_file,
            "shutdown",
            Duration::from_secs(120),
        );
    }
}

/// The cluster key file `kista up --dir dir` made, as `--key-file`'s value.
pub fn key_file(dir: &std::path::Path) -> String {
    dir.join("cluster.key").display().to_string()
}

/// `kista mgm -e command` against the cluster at `mgm` whose key is in `key_file`.
pub fn run_mgm(
    mgm: &str,
    key_file: &str,
    command: &str,
    limit: Duration,
) -> (Option<i32>, String, String) {
    let args = ["mgm", "--mgm", mgm, "--key-file", key_file, "-e", command];
    run_kista(&args, limit)
}

/// `kista up` on `dir` with every port picked free, and `extra` options.
pub fn spawn_up(dir: &std::path::Path, extra: &[&str]) -> KistaProcess {
    let dir = dir.display().to_string();
    let mut args = vec![
        "up",
        "--dir",
        &dir,
        "--mgm-port",
        "0",
        "--data-port",
        "0",
        "--sql-port",
        "0",
    ];
    args.extend_from_slice(extra);
    KistaProcess::spawn(&args)
}

impl KistaProcess {
    /// A standalone data node on a free port, with `extra` options.
    pub fn start(extra: &[&str]) -> Self {
        let mut args = vec![
            "datad",
            "--standalone",
            "--port",
            "0",
            "--data-memory",
            "64M",
        ];
        args.extend_from_slice(extra);
        Self::spawn(&args)
    }

    /// Runs `kista args` and waits until it prints `ready` and the address it listens on.
    pub fn spawn(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kista"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kista starts");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().unwrap();
        let collected = stderr.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(read @ 1..) = pipe.read(&mut chunk) {
                collected
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push_str(&String::from_utf8_lossy(&chunk[..read]));
            }
        });
        let deadline = Instant::now() + PROCESS_TIMEOUT;
        let mut address = None;
        let mut startup = String::new();
        let mut line = String::new();
        while Instant::now() < deadline {
            line.clear();
            if stdout.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            startup.push_str(&line);
            if let Some(rest) = line.split("listening on ").nth(1) {
                address = rest.split_whitespace().next().and_then(|a| a.parse().ok());
            }
            if line.contains("ready") {
                break;
            }
        }
        let Some(address) = address else {
            let _ = child.kill();
            let _ = child.wait();
            std::thread::sleep(Duration::from_millis(100));
            panic!(
                "kista {args:?} did not start:\n{startup}{}",
                stderr.lock().unwrap()
            );
        };
        Self {
            child: Some(child),
            address,
            startup,
            stdout: Some(stdout),
            stderr,
        }
    }

    /// The address `kista up` printed for its SQL front end.
    pub fn sql_address(&self) -> SocketAddr {
        self.startup
            .split("SQL front end (MySQL protocol) at ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|address| address.parse().ok())
            .unwrap_or_else(|| panic!("kista up names its SQL address:\n{}", self.startup))
    }

    /// The node's stderr as it grows.
    pub fn stderr_handle(&self) -> Arc<Mutex<String>> {
        self.stderr.clone()
    }

    /// What the node has written to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    /// Sends `signal` (SIGSTOP, SIGCONT, ...) to the process.
    pub fn signal(&self, signal: i32) {
        if let Some(child) = &self.child {
            // SAFETY: kill(2) with a process id we own and a valid signal number.
            unsafe {
                libc::kill(child.id() as i32, signal);
            }
        }
    }

    /// Waits up to `limit` for the process to end on its own: (exit success, stdout after
    /// start), or `None` while it still runs.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<(bool, String)> {
        let deadline = Instant::now() + limit;
        let child = self.child.as_mut()?;
        let status = loop {
            if let Some(status) = child.try_wait().ok().flatten() {
                break status;
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        self.child = None;
        let mut out = String::new();
        if let Some(mut stdout) = self.stdout.take() {
            let _ = stdout.read_to_string(&mut out);
        }
        Some((status.success(), out))
    }

    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }

    /// Sends SIGTERM and waits: (exit success, stdout after start, stderr).
    pub fn stop(mut self) -> (bool, String, String) {
        self.signal(libc::SIGTERM);
        let Some((success, out)) = self.wait_exit(PROCESS_TIMEOUT) else {
            self.kill();
            panic!("the process did not stop after SIGTERM");
        };
        // The draining thread ends at end of file, right after the process exits.
        std::thread::sleep(Duration::from_millis(100));
        (success, out, self.stderr())
    }
}

impl KistaProcess {
    /// Kills the process at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs `kista` with `args` to its end, killing it if it takes longer than `limit`:
/// (exit code, stdout, stderr).
pub fn run_kista(args: &[&str], limit: Duration) -> (Option<i32>, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kista"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kista starts");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kista {args:?} ran longer than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status.code(),
        stdout.join().unwrap(),
        stderr.join().unwrap(),
    )
}

/// How long a dropped process has to stop after SIGTERM before it is killed.
const DROP_STOP_TIMEOUT: Duration = Duration::from_secs(15);

impl Drop for KistaProcess {
    /// Stops the process as Ctrl-C would, and kills it if it does not end in time: killed
    /// at once, a `kista up` would leave the processes it started running (each is in a
    /// process group of its own), and a SQL front end would run on without them.
    fn drop(&mut self) {
        // Continued too, in case the test left it stopped (SIGSTOP).
        self.signal(libc::SIGTERM);
        self.signal(libc::SIGCONT);
        let Some(mut child) = self.child.take() else {
            return;
        };
        let deadline = Instant::now() + DROP_STOP_TIMEOUT;
        while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The `http://127.0.0.1:PORT/metrics` addresses `kista up` printed, as `host:port`.
pub fn metrics_targets(startup: &str) -> Vec<String> {
    startup
        .split("http://")
        .skip(1)
        .filter_map(|rest| rest.split("/metrics").next())
        .map(str::to_string)
        .collect()
}

/// The body `GET path` answers at `address` (HTTP/1.0), if it answers within 5 s.
pub fn http_get(address: &str, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(address).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
}
