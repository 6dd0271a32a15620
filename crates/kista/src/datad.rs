//! `kista datad`: the data node.
//!
//! Until the management server exists, `--standalone` runs a one-node cluster that clients
//! reach directly: it prints where it listens, serves until SIGINT or SIGTERM, then stops
//! cleanly. `--print-thread-config` only shows the thread layout.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use kista_datanode::node::NodeSettings;
use kista_datanode::router::ReadPolicy;
use kista_signal::NodeId;

use crate::standalone::{StandaloneNode, StandaloneOptions};
use crate::thread_options::ThreadOptions;
use crate::Failure;
use kista_mgm::size::parse_size;

#[derive(Args, Debug)]
pub struct DatadArgs {
    #[command(flatten)]
    threads: ThreadOptions,

    /// Print the thread layout, one line per thread, and exit.
    #[arg(long)]
    print_thread_config: bool,

    /// Run a one-node cluster that clients connect to directly (until the management server
    /// exists, the only way to run a data node).
    #[arg(long, required_unless_present = "print_thread_config")]
    standalone: bool,

    /// TCP port clients connect to; 0 picks a free one (printed at start).
    #[arg(long, default_value_t = 11860)]
    port: u16,

    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,

    /// Memory for rows and indexes, e.g. 512M or 4G (NDB: DataMemory).
    #[arg(long, default_value = "256M", value_parser = parse_size)]
    data_memory: u64,

    /// Where committed reads run: ldm, query, receiver or adaptive (docs/datanode.md).
    #[arg(long, default_value = "adaptive")]
    read_policy: ReadPolicy,

    /// Partitions each table gets on this node (RonDB: PartitionsPerNode).
    #[arg(long, default_value_t = 2)]
    partitions: u32,
}

/// How often the main thread looks for a stop request.
const STOP_POLL: Duration = Duration::from_millis(50);

pub fn run(args: &DatadArgs) -> Result<(), Failure> {
    let layout = args.threads.layout()?;
    if args.print_thread_config {
        print!("{layout}");
        return Ok(());
    }
    if args.partitions == 0 || args.partitions > 1024 {
        return Err(Failure::usage("--partitions must be 1 to 1024"));
    }
    let node = NodeId(1);
    let mut settings = NodeSettings::new(node);
    settings.read_policy = args.read_policy;
    settings.partitions_per_node = args.partitions;
    let options = StandaloneOptions {
        node,
        bind: SocketAddr::new(args.bind, args.port),
        data_memory_bytes: args.data_memory,
        settings,
    };
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, stop.clone())
            .map_err(|e| Failure::runtime(format!("cannot handle signal {signal}: {e}")))?;
    }
    let node = StandaloneNode::start(&layout, options).map_err(Failure::runtime)?;
    println!(
        "kista datad: node 1 listening on {} ({} threads, data memory {} bytes, read policy {:?})",
        node.address(),
        layout.threads.len(),
        args.data_memory,
        args.read_policy
    );
    println!("kista datad: ready");
    while !stop.load(Ordering::SeqCst) && !node.has_failed() {
        std::thread::sleep(STOP_POLL);
    }
    let failed = node.has_failed();
    println!("kista datad: stopping");
    node.stop().map_err(Failure::runtime)?;
    if failed {
        return Err(Failure::runtime(
            "a data node thread failed; the node stopped",
        ));
    }
    println!("kista datad: stopped");
    Ok(())
}
