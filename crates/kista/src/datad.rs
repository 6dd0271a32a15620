//! `kista datad`: the data node.
//!
//! `--mgm HOST:PORT --node-id N` runs data node N of the cluster the management server at
//! HOST:PORT configures: it fetches the configuration, connects to the other data nodes and
//! the management server (restarting into the cluster if the management server reports
//! another data node started), and serves until told to stop (`N restart` stops the node
//! and starts it again in the same process), until its cluster stops it (lost
//! arbitration, lost node group) or until SIGINT/SIGTERM. `--standalone` runs a one-node
//! cluster that clients reach directly. `--print-thread-config` only shows the thread layout.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use kista_datanode::membership::{
    DISK_UNRESTORABLE, RESTART_REQUESTED, RESTART_WHEN_STARTED, STALE_AT_START,
    STOPPED_BY_MANAGEMENT_SERVER,
};
use kista_datanode::node::NodeSettings;
use kista_datanode::router::ReadPolicy;
use kista_mgm::admin::AdminClient;
use kista_runtime::thread_config::ThreadLayout;
use kista_signal::NodeId;
use kista_transport::peers::Peers;

use crate::cluster_node;
use crate::data_node::{DataNodeOptions, DataNodeProcess};
use crate::key_file::KeyFileArg;
use crate::metrics::{data_node_render, DataNodeSlot, MetricsOptions};
use crate::thread_options::ThreadOptions;
use crate::Failure;
use kista_mgm::size::parse_size;

#[derive(Args, Debug)]
pub struct DatadArgs {
    #[command(flatten)]
    threads: ThreadOptions,

    #[command(flatten)]
    key: KeyFileArg,

    /// Print the thread layout, one line per thread, and exit.
    #[arg(long)]
    print_thread_config: bool,

    /// The management server to fetch the cluster configuration from, as HOST:PORT.
    #[arg(
        long,
        value_name = "HOST:PORT",
        requires = "node_id",
        conflicts_with = "standalone"
    )]
    mgm: Option<String>,

    /// This node's id in the cluster configuration (with --mgm).
    #[arg(long, value_name = "N", requires = "mgm")]
    node_id: Option<u8>,

    /// Run a one-node cluster that clients connect to directly, without a management server.
    #[arg(long, required_unless_present_any = ["print_thread_config", "mgm"])]
    standalone: bool,

    /// TCP port clients connect to (standalone); 0 picks a free one (printed at start).
    #[arg(long, default_value_t = 11860)]
    port: u16,

    /// Address to listen on (standalone).
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,

    /// Memory for rows and indexes, e.g. 512M or 4G (standalone; NDB: DataMemory).
    #[arg(long, default_value = "256M", value_parser = parse_size)]
    data_memory: u64,

    /// Allocate and write the data memory at start, as NDB does, so that writes meet no page
    /// faults; the node holds it resident from then on (docs/operations.md). A managed node
    /// also does so when the cluster configuration says `touch_memory = true`.
    #[arg(long)]
    touch_memory: bool,

    /// Where committed reads run: ldm, query, receiver or adaptive (docs/datanode.md).
    #[arg(long, default_value = "adaptive")]
    read_policy: ReadPolicy,

    /// Partitions each table gets on this node (standalone; RonDB: PartitionsPerNode).
    #[arg(long, default_value_t = 2)]
    partitions: u32,

    #[command(flatten)]
    metrics: MetricsOptions,
}

/// How often the main thread looks for a stop request.
const STOP_POLL: Duration = Duration::from_millis(50);
/// Longest one question to the management server may take while waiting for `N start`.
const MGM_WAIT: Duration = Duration::from_secs(5);

pub fn run(args: &DatadArgs) -> Result<(), Failure> {
    if args.print_thread_config {
        print!("{}", args.threads.layout()?);
        return Ok(());
    }
    let stop = crate::stop_on_signals()?;
    // A standalone node is node 1.
    kista_log::set_node(args.node_id.unwrap_or(1));
    // The first life's options before any thread starts: memory is touched on this thread
    // before any other allocates (touch_memory.rs).
    let (layout, options) = node_options(args)?;
    if options.touch_memory {
        touch_memory(options.data_memory_bytes);
    }
    let mut first_life = Some((layout, options));
    // One endpoint for every life of the node, so its port stays the same.
    let slot = DataNodeSlot::default();
    let _metrics = args
        .metrics
        .serve("datad", data_node_render(slot.clone()))?;
    // Each pass is one life of the node; `N restart` ends one and begins the next, which
    // restarts into the cluster (NDB's angel process does the same).
    loop {
        let (layout, options) = match first_life.take() {
            Some(first) => first,
            None => node_options(args)?,
        };
        match run_once(args, &layout, options, &stop, &slot)? {
            Ended::Restart => say("restarting, as the management server asked"),
            Ended::RestartToCopy { after } => {
                say(format_args!(
                    "starting again in {} ms (once the others left the start this node \
                     stopped): the start goes on from the peers, and this node copies its \
                     data from one",
                    after.as_millis()
                ));
                if !pause(after, &stop) {
                    return Ok(());
                }
            }
            Ended::RestartWhenStarted => {
                if !wait_for_start(args, &stop)? {
                    return Ok(());
                }
                say("starting, as the management server asked");
            }
            Ended::RejoinWhenServing => {
                if !wait_for_cluster_to_serve(args, &stop)? {
                    return Ok(());
                }
                say("another node serves: restarting into the cluster, copying from it");
            }
            Ended::Stopped => return Ok(()),
        }
    }
}

/// Touches the data memory (`touch_memory.rs`), saying how long it took; a refusal is
/// said and the node starts without it.
fn touch_memory(bytes: u64) {
    say(format_args!(
        "touching {} MiB of data memory (touch_memory)",
        bytes >> 20
    ));
    match crate::touch_memory::touch(bytes) {
        Ok(took) => say(format_args!(
            "touched {} MiB in {:.1} s",
            bytes >> 20,
            took.as_secs_f64()
        )),
        Err(refused) => kista_log::print(kista_log::Level::Warn, "kista datad", refused),
    }
}

/// Sleeps `duration`, unless this process is told to stop meanwhile (false).
fn pause(duration: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + duration;
    while Instant::now() < until {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(STOP_POLL);
    }
    !stop.load(Ordering::SeqCst)
}

/// After `N restart -n`: asks the management server until `N start` is given (true) or
/// this process is told to stop (false).
fn wait_for_start(args: &DatadArgs, stop: &AtomicBool) -> Result<bool, Failure> {
    let (Some(mgm), Some(id)) = (&args.mgm, args.node_id) else {
        return Ok(false);
    };
    say(format_args!(
        "node {id} stopped; waiting for `kista mgm -e \"{id} start\"`"
    ));
    let question = format!("{id} await start");
    let key = args.key.load_given()?;
    while !stop.load(Ordering::SeqCst) {
        let answer = AdminClient::connect(mgm, key.as_ref(), MGM_WAIT)
            .and_then(|mut admin| admin.request(&question));
        match answer {
            Ok(answer) if answer == "start" => return Ok(true),
            Ok(_) => {}
            // The management server may be restarting: ask again shortly.
            Err(_) => std::thread::sleep(STOP_POLL * 10),
        }
    }
    Ok(false)
}

/// After a start from disk stopped this node as behind: asks the management server until
/// another data node is started (true) or this process is told to stop (false). Started
/// before that, the node would start a cluster of its own.
fn wait_for_cluster_to_serve(args: &DatadArgs, stop: &AtomicBool) -> Result<bool, Failure> {
    let (Some(mgm), Some(id)) = (&args.mgm, args.node_id) else {
        return Ok(false);
    };
    let key = args.key.load_given()?;
    say(format_args!(
        "node {id} waits for another node to serve, then restarts into the cluster"
    ));
    while !stop.load(Ordering::SeqCst) {
        let status =
            AdminClient::connect(mgm, key.as_ref(), MGM_WAIT).and_then(|mut a| a.request("status"));
        let serving = status.map(|status| cluster_node::started_nodes(&status));
        if serving.is_ok_and(|nodes| nodes.iter().any(|&node| node != NodeId(id))) {
            return Ok(true);
        }
        std::thread::sleep(STOP_POLL * 10);
    }
    Ok(false)
}

/// How one life of the node ended.
enum Ended {
    Stopped,
    Restart,
    /// Restart once the management server says `N start`.
    RestartWhenStarted,
    /// A start from disk stopped the node as behind: restart into the cluster once
    /// another node serves.
    RejoinWhenServing,
    /// A start from disk found the node's disk unable to restore its data: start again,
    /// to be found stale (or to join, if the others started meanwhile) and copy. Not at
    /// once: the other nodes leave the start it stopped when they notice (`after`, a missed
    /// heartbeat grace, at the latest), and met there they would take it for a split.
    RestartToCopy {
        after: Duration,
    },
}

/// The node's layout and options: from the management server (fetched again for each
/// life), or standalone.
fn node_options(args: &DatadArgs) -> Result<(ThreadLayout, DataNodeOptions), Failure> {
    let (Some(mgm), Some(id)) = (&args.mgm, args.node_id) else {
        return Ok((args.threads.layout()?, standalone_options(args)?));
    };
    let node = NodeId(id);
    // Read again for each life of the node: a key file replaced meanwhile is the one used.
    let key = args.key.load_given()?;
    let mut joined = cluster_node::fetch(mgm, key.as_ref(), node)?;
    joined.settings.read_policy = args.read_policy;
    if !joined.running.is_empty() {
        let running: Vec<String> = joined.running.iter().map(|n| n.0.to_string()).collect();
        say(format_args!(
            "the cluster runs (node(s) {} started): node {} restarts into \
             it, copying its data from the others (`kista mgm -e show` says when it \
             is started)",
            running.join(", "),
            id
        ));
    }
    let options = DataNodeOptions {
        node,
        bind: joined.bind,
        data_memory_bytes: joined.data_memory_bytes,
        data_dir: Some(joined.data_dir),
        settings: joined.settings,
        peers: joined.peers,
        touch_memory: args.touch_memory || joined.touch_memory,
        key,
    };
    Ok((joined.layout, options))
}

fn run_once(
    args: &DatadArgs,
    layout: &ThreadLayout,
    options: DataNodeOptions,
    stop: &AtomicBool,
    metrics: &DataNodeSlot,
) -> Result<Ended, Failure> {
    let node_id = options.node;
    let peers: Vec<NodeId> = (options.peers.accept.iter().copied())
        .chain(options.peers.dial.iter().map(|(peer, _)| *peer))
        .collect();
    let grace_ms =
        options.settings.heartbeat_interval_ms * u64::from(options.settings.heartbeat_misses_max);
    let data_memory = options.data_memory_bytes;
    let node = DataNodeProcess::start(layout, options).map_err(Failure::runtime)?;
    *metrics.lock().unwrap_or_else(|p| p.into_inner()) = Some(node.gauges());
    say(format_args!(
        "node {} listening on {} ({} threads, data memory {} bytes, read policy {:?})",
        node_id.0,
        node.address(),
        layout.threads.len(),
        data_memory,
        args.read_policy
    ));
    wait_for_peers(&node, &peers, Duration::from_millis(grace_ms), stop);
    say("ready");
    while !stop.load(Ordering::SeqCst) && !node.has_stopped() {
        std::thread::sleep(STOP_POLL);
    }
    let stopped_by_cluster = node.stop_reason();
    let failed = node.has_stopped();
    say("stopping");
    *metrics.lock().unwrap_or_else(|p| p.into_inner()) = None;
    node.stop().map_err(Failure::runtime)?;
    if let Some(reason) = stopped_by_cluster {
        if reason == RESTART_REQUESTED {
            return Ok(Ended::Restart);
        }
        if reason == RESTART_WHEN_STARTED {
            return Ok(Ended::RestartWhenStarted);
        }
        say(format_args!("stopped: {reason}"));
        if reason.starts_with(STOPPED_BY_MANAGEMENT_SERVER) {
            return Ok(Ended::Stopped);
        }
        if reason.starts_with(STALE_AT_START) {
            return Ok(Ended::RejoinWhenServing);
        }
        if reason.starts_with(DISK_UNRESTORABLE) {
            let after = Duration::from_millis(grace_ms);
            return Ok(Ended::RestartToCopy { after });
        }
        // The cluster shut this node out or could not go on: a supervisor should know.
        return Err(Failure::runtime(format!(
            "the cluster stopped this data node ({reason}); start `kista datad` again to \
             restart it into the cluster"
        )));
    }
    if failed {
        return Err(Failure::runtime(
            "a data node thread failed; the node stopped",
        ));
    }
    say("stopped");
    Ok(Ended::Stopped)
}

fn standalone_options(args: &DatadArgs) -> Result<DataNodeOptions, Failure> {
    if args.partitions == 0 || args.partitions > 1024 {
        return Err(Failure::usage("--partitions must be 1 to 1024"));
    }
    let node = NodeId(1);
    let mut settings = NodeSettings::new(node);
    settings.read_policy = args.read_policy;
    settings.partitions_per_node = args.partitions;
    Ok(DataNodeOptions {
        node,
        bind: SocketAddr::new(args.bind, args.port),
        data_memory_bytes: args.data_memory,
        data_dir: None,
        settings,
        peers: Peers::default(),
        touch_memory: args.touch_memory,
        key: args.key.load_given()?,
    })
}

/// Waits until every peer is connected, at most `grace` (after which the membership has
/// declared the missing ones failed), reporting who is still missing.
fn wait_for_peers(node: &DataNodeProcess, peers: &[NodeId], grace: Duration, stop: &AtomicBool) {
    let started = Instant::now();
    let missing = || -> Vec<NodeId> {
        peers
            .iter()
            .copied()
            .filter(|&p| !node.is_connected(p))
            .collect()
    };
    while !missing().is_empty() && started.elapsed() < grace {
        if stop.load(Ordering::SeqCst) || node.has_stopped() {
            return;
        }
        std::thread::sleep(STOP_POLL);
    }
    let missing = missing();
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|n| n.0.to_string()).collect();
        say(format_args!(
            "not connected to node(s) {} after {} ms; going on without them",
            names.join(", "),
            grace.as_millis()
        ));
    }
}

/// A line of this process's log on standard output (`kista_log`'s format).
fn say(message: impl std::fmt::Display) {
    kista_log::print(kista_log::Level::Info, "kista datad", message);
}
