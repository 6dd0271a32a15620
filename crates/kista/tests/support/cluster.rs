//! A whole cluster of processes for tests: `kista mgmd` with a configuration written to a
//! fresh directory, and `kista datad --mgm` for each data node, every port a free one on
//! 127.0.0.1. Heartbeats are fast (a failure is detected in about a second) but not so fast
//! that a busy 2-core machine trips them.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::{run_kista, KistaProcess};

// The picker `kista up` uses: below the kernel's ephemeral range, where no outgoing
// connection can take a port between its choice and the process binding it.
#[path = "../../src/free_ports.rs"]
pub mod free_ports;
use free_ports::free_ports;

/// Heartbeat settings of test clusters: a silent node is suspected after 4 × 200 ms.
pub const HEARTBEAT_INTERVAL_MS: u64 = 200;
pub const HEARTBEAT_MISSES_MAX: u32 = 4;
/// Longest a `kista mgm` command may take.
const MGM_LIMIT: Duration = Duration::from_secs(20);
/// Longest a node may take to be reported started (its first start, or a restart of a
/// test's small data).
pub const START_LIMIT: Duration = Duration::from_secs(60);

pub struct TestCluster {
    dir: PathBuf,
    pub mgm: String,
    pub mgmd: KistaProcess,
    /// `[id - 1]` → the data node's process while it runs.
    nodes: Vec<Option<KistaProcess>>,
    ports: Vec<u16>,
}

impl TestCluster {
    /// Starts the management server and `data_nodes` data nodes in node groups of
    /// `replicas`, and waits until the management server shows every one started.
    pub fn start(data_nodes: u8, replicas: u8) -> Self {
        let mut cluster = Self::launch(data_nodes, replicas);
        for id in 1..=data_nodes {
            cluster.wait_for_state(id, "started", START_LIMIT);
        }
        cluster
    }

    /// Starts the processes and returns once each says it is ready (the management server
    /// may not show the data nodes started yet).
    pub fn launch(data_nodes: u8, replicas: u8) -> Self {
        let every: Vec<u8> = (1..=data_nodes).collect();
        Self::launch_some(data_nodes, replicas, "", &every)
    }

    /// [`TestCluster::launch`] with `cluster_settings` (lines of the `[cluster]` section)
    /// added to the configuration, starting only the data nodes `spawned`.
    pub fn launch_some(
        data_nodes: u8,
        replicas: u8,
        cluster_settings: &str,
        spawned: &[u8],
    ) -> Self {
        static SERIAL: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "kista-cluster-{}-{}",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::SeqCst)
        ));
        Self::launch_in(dir, data_nodes, replicas, cluster_settings, spawned)
    }

    /// [`TestCluster::launch_some`] with everything under `dir` (made if missing). A
    /// `redo_log` in `cluster_settings` replaces the tests' own.
    pub fn launch_in(
        dir: PathBuf,
        data_nodes: u8,
        replicas: u8,
        cluster_settings: &str,
        spawned: &[u8],
    ) -> Self {
        std::fs::create_dir_all(&dir).expect("a test directory");
        let redo_log = match cluster_settings.contains("redo_log") {
            true => "",
            false => "redo_log = \"128M\"\n",
        };
        let ports = free_ports(usize::from(data_nodes) + 1).expect("free ports");
        // Under a bench's load a data node writes ~17 MB/s of REDO log, and while a
        // failure is detected no global checkpoint completes, so no local checkpoint
        // frees any: a 64M log filled and writes got error 410 (now they wait for room,
        // up to 20 s).
        let mut config = format!(
            "[cluster]\nreplicas = {replicas}\ndata_memory = \"64M\"\n{redo_log}\
             heartbeat_interval_ms = {HEARTBEAT_INTERVAL_MS}\n\
             heartbeat_misses_max = {HEARTBEAT_MISSES_MAX}\n{cluster_settings}\n\
             [mgmd]\nport = {}\ndata_dir = \"{}\"\n",
            ports[0],
            dir.join("mgmd").display()
        );
        for id in 1..=data_nodes {
            config.push_str(&format!(
                "\n[[data_node]]\nhost = \"127.0.0.1\"\nport = {}\nnum_cpus = 2\n\
                 data_dir = \"{}\"\n",
                ports[usize::from(id)],
                dir.join(format!("node-{id}")).display()
            ));
        }
        let config_path = dir.join("cluster.toml");
        std::fs::write(&config_path, config).expect("the configuration is written");
        let config_arg = config_path.display().to_string();
        let mgmd = KistaProcess::spawn(&["mgmd", "--config", &config_arg]);
        let mut cluster = Self {
            dir,
            mgm: format!("127.0.0.1:{}", ports[0]),
            mgmd,
            nodes: (0..data_nodes).map(|_| None).collect(),
            ports: ports[1..].to_vec(),
        };
        if spawned.len() == usize::from(data_nodes) {
            cluster.spawn_every_node();
        } else {
            for &id in spawned {
                cluster.restart(id);
            }
        }
        cluster
    }

    /// Starts every data node's process, together, as a cluster's start expects (after
    /// every one ended, they start from what their disks hold).
    pub fn spawn_every_node(&mut self) {
        let starting: Vec<_> = (1..=self.nodes.len())
            .map(|id| {
                let mgm = self.mgm.clone();
                std::thread::spawn(move || {
                    let id = id.to_string();
                    KistaProcess::spawn(&["datad", "--mgm", &mgm, "--node-id", &id])
                })
            })
            .collect();
        for (index, starting) in starting.into_iter().enumerate() {
            self.nodes[index] = Some(starting.join().expect("the data node starts"));
        }
    }

    /// Starts data node `id` again (its process must have ended): it restarts into the
    /// running cluster.
    pub fn restart(&mut self, id: u8) {
        let id_text = id.to_string();
        let process = KistaProcess::spawn(&["datad", "--mgm", &self.mgm, "--node-id", &id_text]);
        self.nodes[usize::from(id) - 1] = Some(process);
    }

    /// Waits until `kista mgm -e show` gives data node `id` the state `wanted`; if it
    /// never does, the failure shows every process's state and the end of its log.
    pub fn wait_for_state(&mut self, id: u8, wanted: &str, limit: Duration) {
        let deadline = std::time::Instant::now() + limit;
        loop {
            let state = self.shown_state(id);
            if state == wanted {
                return;
            }
            if std::time::Instant::now() >= deadline {
                panic!(
                    "node {id} is {state}, not {wanted}, after {limit:?}\n{}",
                    self.processes_report()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until every data node serves after a start from disk. A node whose disk was
    /// behind (it failed before the others, as a loaded machine's missed heartbeats may
    /// make it) is stopped by the start, as it should be; its process starts it again once
    /// the others serve, and it copies its data from a peer. Returns the nodes that did so
    /// (their disks began afresh), as the master of the start logged them.
    pub fn wait_for_start_from_disk(&mut self) -> Vec<u8> {
        let deadline = std::time::Instant::now() + START_LIMIT;
        let ids: Vec<u8> = (1..=self.nodes.len() as u8).collect();
        loop {
            let states: Vec<String> = ids.iter().map(|&id| self.shown_state(id)).collect();
            if states.iter().all(|state| state == "started") {
                return self.stale_at_start();
            }
            if std::time::Instant::now() >= deadline {
                panic!(
                    "the cluster did not start from disk within {START_LIMIT:?}\n{}",
                    self.processes_report()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The nodes a start from disk stopped as stale, by the master's log lines
    /// (`behind at the start from disk: data node N ...`) in the running processes' logs.
    fn stale_at_start(&self) -> Vec<u8> {
        const STALE: &str = "behind at the start from disk: data node ";
        let logs = self.nodes.iter().flatten().map(|node| node.stderr());
        let mut stale: Vec<u8> = logs
            .flat_map(|log| {
                let named = log.match_indices(STALE).map(|(at, _)| at + STALE.len());
                let ids = named.filter_map(|from| {
                    let digits = log[from..].split(|c: char| !c.is_ascii_digit()).next()?;
                    digits.parse().ok()
                });
                ids.collect::<Vec<u8>>()
            })
            .collect();
        stale.sort_unstable();
        stale.dedup();
        stale
    }

    /// Whether each process runs, and the last lines of its log, for a failure message.
    fn processes_report(&mut self) -> String {
        const LOG_LINES_SHOWN: usize = 40;
        let mut report = String::new();
        let mgmd = std::iter::once(("management server".to_string(), &mut self.mgmd));
        let nodes = self.nodes.iter_mut().enumerate();
        let nodes = nodes
            .filter_map(|(index, node)| Some((format!("data node {}", index + 1), node.as_mut()?)));
        for (name, process) in mgmd.chain(nodes) {
            let running = if process.is_running() {
                "runs"
            } else {
                "has ended"
            };
            let log = process.stderr();
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(LOG_LINES_SHOWN)..];
            report.push_str(&format!(
                "--- {name} {running}; its log ends:\n{}\n",
                tail.join("\n")
            ));
        }
        report
    }

    /// Data node `id`'s data directory.
    pub fn data_dir(&self, id: u8) -> PathBuf {
        self.dir.join(format!("node-{id}"))
    }

    /// Data node `id`'s address for clients.
    pub fn address(&self, id: u8) -> String {
        format!("127.0.0.1:{}", self.ports[usize::from(id) - 1])
    }

    pub fn node(&mut self, id: u8) -> &mut KistaProcess {
        self.nodes[usize::from(id) - 1]
            .as_mut()
            .expect("the data node runs")
    }

    /// Crashes every data node at one instant, as a power cut would: each is frozen
    /// (SIGSTOP) before any is killed. Killed one after another, the last would see the
    /// others leave and could close a global checkpoint alone, leaving their disks behind
    /// (they then copy from it rather than restore their own disk, which a test of the
    /// disk needs them to do).
    pub fn crash_every_node(&mut self) {
        for node in self.nodes.iter().flatten() {
            node.signal(libc::SIGSTOP);
        }
        for node in self.nodes.iter_mut().flatten() {
            node.kill();
        }
    }

    /// Kills the management server (`kill -9`) and starts it again on its port, with the
    /// same configuration and data directory.
    pub fn restart_mgmd(&mut self) {
        self.mgmd.kill();
        let config = self.dir.join("cluster.toml").display().to_string();
        self.mgmd = KistaProcess::spawn(&["mgmd", "--config", &config]);
    }

    /// Runs `kista mgm -e command`: (exit code, stdout, stderr).
    pub fn mgm(&self, command: &str) -> (Option<i32>, String, String) {
        run_kista(&["mgm", "--mgm", &self.mgm, "-e", command], MGM_LIMIT)
    }

    /// The state `kista mgm -e show` gives data node `id`.
    pub fn shown_state(&self, id: u8) -> String {
        let (code, stdout, stderr) = self.mgm("show");
        assert_eq!(code, Some(0), "{stderr}");
        let line = stdout
            .lines()
            .find(|line| {
                line.split_whitespace()
                    .take(2)
                    .eq([id.to_string().as_str(), "data"])
            })
            .unwrap_or_else(|| panic!("no line for node {id} in\n{stdout}"));
        let state = line.split_whitespace().skip(2);
        let state: Vec<&str> = state.take_while(|w| w.parse::<u32>().is_err()).collect();
        state.join(" ")
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        for node in self.nodes.iter_mut().flatten() {
            node.kill();
        }
        self.mgmd.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
