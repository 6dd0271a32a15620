//! `kista top` (NDB's ndb_top): every data node's scheduler threads, as each node's `info`
//! block measured them over the last second: the modules a thread runs, its user and
//! system CPU, the share of its CPU spent spinning for work, signals per second, its queue
//! and the read router's load level. A live view refreshed each second (`view.rs`, on
//! ratatui), or one sample as a table or JSON (`--once`, `--json`) for scripts.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use kista_client::Client;
use kista_datanode::protocol::ThreadLoad;
use serde::Serialize;

use crate::key_file::KeyFileArg;
use crate::Failure;

mod view;

#[derive(Args, Debug)]
pub struct TopArgs {
    /// The cluster's management server.
    #[arg(long, default_value = "127.0.0.1:1186")]
    mgm: String,

    #[command(flatten)]
    key: KeyFileArg,

    /// Print one sample and exit (a table, or JSON with --json) instead of the live view.
    #[arg(long)]
    once: bool,

    /// With --once: print the sample as one JSON document.
    #[arg(long, requires = "once")]
    json: bool,

    /// Order of the threads (the live view changes it with `s`).
    #[arg(long, value_enum, default_value_t = SortBy::Cpu)]
    sort: SortBy,
}

/// How the threads are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SortBy {
    /// Busiest first (user + system CPU).
    Cpu,
    /// Most signals per second first.
    Signals,
    /// Most spinning first.
    Spin,
    /// By node, then thread number.
    Thread,
}

impl SortBy {
    const ALL: [SortBy; 4] = [SortBy::Cpu, SortBy::Signals, SortBy::Spin, SortBy::Thread];

    fn next(self) -> SortBy {
        let at = Self::ALL.iter().position(|&s| s == self).unwrap_or(0);
        Self::ALL[(at + 1) % Self::ALL.len()]
    }

    fn name(self) -> &'static str {
        match self {
            SortBy::Cpu => "cpu",
            SortBy::Signals => "signals",
            SortBy::Spin => "spin",
            SortBy::Thread => "thread",
        }
    }
}

/// How long `--once` waits for every live node's first measured second.
const FIRST_SAMPLE_WAIT: Duration = Duration::from_secs(5);

/// One sample of the cluster.
#[derive(Debug, Serialize)]
struct Sample {
    nodes: Vec<NodeSample>,
}

#[derive(Debug, Serialize)]
struct NodeSample {
    node: u8,
    live: bool,
    /// Why its threads could not be read, if they could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// Bytes free on its data directory's file system, once it measured them.
    #[serde(skip_serializing_if = "Option::is_none")]
    data_dir_free_bytes: Option<u64>,
    threads: Vec<ThreadRow>,
}

impl NodeSample {
    /// `node 1 disk 12.3 GiB free`, when known.
    fn disk_text(&self) -> Option<String> {
        let free_gib = self.data_dir_free_bytes? as f64 / f64::from(1u32 << 30);
        Some(format!("node {} disk {free_gib:.1} GiB free", self.node))
    }
}

/// Bytes free on `node`'s data directory's file system, from its counters (0 is a node
/// that keeps nothing on disk, or has not measured yet).
fn data_dir_free_bytes(client: &Client, node: kista_client::NodeId) -> Option<u64> {
    let counters = client.node_counters(node).ok()?;
    let free = counters
        .into_iter()
        .find(|(name, _)| name == "data_dir_free_bytes");
    free.map(|(_, bytes)| bytes).filter(|&bytes| bytes > 0)
}

/// A thread as shown: percentages of one second.
#[derive(Clone, Debug, Serialize)]
struct ThreadRow {
    node: u8,
    thread: u32,
    modules: String,
    user_percent: f64,
    system_percent: f64,
    spin_percent: f64,
    signals_per_second: u64,
    queue_depth: u32,
    load_level: u32,
}

impl ThreadRow {
    fn of(node: u8, load: ThreadLoad) -> Self {
        let percent = |permille: u32| f64::from(permille) / 10.0;
        ThreadRow {
            node,
            thread: load.thread,
            modules: load.modules,
            user_percent: percent(load.user_permille),
            system_percent: percent(load.system_permille),
            spin_percent: percent(load.spin_permille),
            signals_per_second: load.signals_per_second,
            queue_depth: load.queue_depth,
            load_level: load.load_level,
        }
    }

    fn cpu_percent(&self) -> f64 {
        self.user_percent + self.system_percent
    }
}

pub fn run(args: &TopArgs) -> Result<(), Failure> {
    if !args.once && !std::io::stdout().is_terminal() {
        return Err(Failure::usage(
            "kista top's live view needs a terminal; use --once (with --json) in scripts",
        ));
    }
    let client = Client::connect_cluster(&args.mgm, args.key.load()?.as_ref())
        .map_err(|e| Failure::runtime(format!("cannot reach the cluster at {}: {e}", args.mgm)))?;
    if !args.once {
        return view::run(&client, &args.mgm, args.sort);
    }
    let sample = first_full_sample(&client);
    if args.json {
        let text = serde_json::to_string_pretty(&sample)
            .map_err(|e| Failure::runtime(format!("cannot write JSON: {e}")))?;
        println!("{text}");
    } else {
        print!("{}", table_text(&sample, args.sort));
    }
    Ok(())
}

/// A sample in which every live node reports its threads (a node reports after its first
/// second), or the last one taken within [`FIRST_SAMPLE_WAIT`].
fn first_full_sample(client: &Client) -> Sample {
    let deadline = Instant::now() + FIRST_SAMPLE_WAIT;
    loop {
        let sample = take_sample(client);
        let full = sample
            .nodes
            .iter()
            .all(|n| !n.live || !n.threads.is_empty());
        if full || Instant::now() >= deadline {
            return sample;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn take_sample(client: &Client) -> Sample {
    let nodes = client
        .data_nodes()
        .into_iter()
        .map(|status| {
            let (node, live) = (status.node, status.live);
            let loads = if live {
                Some(client.thread_loads(node))
            } else {
                None
            };
            let (threads, error) = match loads {
                Some(Ok(loads)) => (
                    loads
                        .into_iter()
                        .map(|l| ThreadRow::of(node.0, l))
                        .collect(),
                    None,
                ),
                Some(Err(error)) => (Vec::new(), Some(error.to_string())),
                None => (Vec::new(), Some("not connected".to_string())),
            };
            let data_dir_free_bytes = live.then(|| data_dir_free_bytes(client, node)).flatten();
            NodeSample {
                node: node.0,
                live: live && error.is_none(),
                error,
                data_dir_free_bytes,
                threads,
            }
        })
        .collect();
    Sample { nodes }
}

/// Every node's threads in one list, in `sort`'s order.
fn sorted_rows(sample: &Sample, sort: SortBy) -> Vec<ThreadRow> {
    let mut rows: Vec<ThreadRow> = sample
        .nodes
        .iter()
        .flat_map(|n| n.threads.clone())
        .collect();
    let by_thread = |a: &ThreadRow, b: &ThreadRow| (a.node, a.thread).cmp(&(b.node, b.thread));
    rows.sort_by(|a, b| match sort {
        SortBy::Cpu => b
            .cpu_percent()
            .total_cmp(&a.cpu_percent())
            .then(by_thread(a, b)),
        SortBy::Signals => b
            .signals_per_second
            .cmp(&a.signals_per_second)
            .then(by_thread(a, b)),
        SortBy::Spin => b
            .spin_percent
            .total_cmp(&a.spin_percent)
            .then(by_thread(a, b)),
        SortBy::Thread => by_thread(a, b),
    });
    rows
}

const COLUMNS: [&str; 9] = [
    "node",
    "thread",
    "user%",
    "sys%",
    "spin%",
    "signals/s",
    "queue",
    "load",
    "modules",
];

/// Widths of the columns before `modules`, in the table and the live view alike.
const COLUMN_WIDTHS: [usize; 8] = [4, 6, 6, 6, 6, 10, 6, 4];

/// One line of the `--once` table: the columns right-aligned, then the modules.
fn table_line(cells: &[&str; 9]) -> String {
    let mut line = String::new();
    for (index, (cell, width)) in cells.iter().zip(COLUMN_WIDTHS).enumerate() {
        if index > 0 {
            line.push(' ');
        }
        line.push_str(&format!("{cell:>width$}"));
    }
    line.push_str("  ");
    line.push_str(cells[8]);
    line.push('\n');
    line
}

fn row_cells(row: &ThreadRow) -> [String; 9] {
    [
        row.node.to_string(),
        row.thread.to_string(),
        format!("{:.1}", row.user_percent),
        format!("{:.1}", row.system_percent),
        format!("{:.1}", row.spin_percent),
        row.signals_per_second.to_string(),
        row.queue_depth.to_string(),
        row.load_level.to_string(),
        row.modules.clone(),
    ]
}

/// `--once` without `--json`: the rows as aligned text, then any node that did not answer.
fn table_text(sample: &Sample, sort: SortBy) -> String {
    let mut text = table_line(&COLUMNS);
    for row in sorted_rows(sample, sort) {
        let cells = row_cells(&row);
        text.push_str(&table_line(&cells.each_ref().map(String::as_str)));
    }
    for node in sample.nodes.iter().filter(|n| n.error.is_some()) {
        let error = node.error.as_deref().unwrap_or("");
        text.push_str(&format!("node {}: {error}\n", node.node));
    }
    for disk in sample.nodes.iter().filter_map(NodeSample::disk_text) {
        text.push_str(&disk);
        text.push('\n');
    }
    text
}
