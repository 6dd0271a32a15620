//! `kista mgmd`: the management server. Reads and checks the cluster configuration (a bad
//! file is refused with its file, line and reason), then serves it to data nodes, hosts the
//! arbitrator and answers `kista mgm`, until SIGINT/SIGTERM or a `shutdown` whose data
//! nodes have all stopped.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use clap::Args;
use kista_datanode::arbitration::ArbitrationState;
use kista_mgm::arbitration_file::{ArbitrationFile, Found};
use kista_mgm::config::ClusterConfig;
use kista_mgm::server::{ManagementOptions, ManagementServer};

use crate::key_file::KeyFileArg;
use crate::metrics::MetricsOptions;
use crate::Failure;

#[derive(Args, Debug)]
pub struct MgmdArgs {
    /// The cluster configuration file (TOML; docs/cluster-config.md).
    #[arg(long, short = 'f', value_name = "FILE")]
    config: PathBuf,

    /// Listen on this port instead of the configuration's `[mgmd] port` (0 picks a free one,
    /// printed at start).
    #[arg(long)]
    port: Option<u16>,

    #[command(flatten)]
    metrics: MetricsOptions,

    #[command(flatten)]
    key: KeyFileArg,
}

/// How often the main thread looks for a stop request.
const STOP_POLL: Duration = Duration::from_millis(50);

pub fn run(args: &MgmdArgs) -> Result<(), Failure> {
    let (config, config_text) =
        ClusterConfig::load_with_text(&args.config).map_err(Failure::usage)?;
    let port = args.port.unwrap_or(config.mgmd.port);
    let bind: SocketAddr = (config.mgmd.host.as_str(), port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .ok_or_else(|| Failure::usage(format!("cannot listen on {}:{port}", config.mgmd.host)))?;
    let data_nodes = config.data_nodes.len();
    let stop = crate::stop_on_signals()?;
    kista_log::set_node(kista_datanode::arbitration::MANAGEMENT_NODE.0);
    let (arbitration_record, found) =
        ArbitrationFile::open(&config.mgmd.data_dir).map_err(Failure::runtime)?;
    let arbitration = match found {
        Found::Nothing => ArbitrationState::default(),
        Found::Saved(state) => {
            say(format_args!(
                "the arbitrator goes on from its record: cluster life {}, nodes {:?} let go \
                 on last",
                state.cluster_life,
                state.winner.unwrap_or_default()
            ));
            state
        }
        Found::Unusable(why) => {
            kista_log::print(
                kista_log::Level::Warn,
                "kista mgmd",
                format_args!(
                    "the arbitrator's record cannot be used ({why}): it starts knowing no \
                     split's winner, so a data node left behind by one, started alone, \
                     may be let go on"
                ),
            );
            ArbitrationState::default()
        }
    };
    let key = args.key.load_given()?;
    if key.is_none() {
        kista_log::print(
            kista_log::Level::Warn,
            "kista mgmd",
            "no cluster key (--key-file): any process that can reach this port may join the \
             cluster, lease client ids and run every management command",
        );
    }
    let server = ManagementServer::start(ManagementOptions {
        config,
        config_text,
        bind,
        arbitration,
        arbitration_record: Box::new(arbitration_record),
        key,
    })
    .map_err(Failure::runtime)?;
    let _metrics = args.metrics.serve("mgmd", server.metrics())?;
    say(format_args!(
        "listening on {} ({data_nodes} data nodes configured)",
        server.address()
    ));
    say("ready");
    while !stop.load(Ordering::SeqCst) && !server.shutdown_done() && !server.has_failed() {
        std::thread::sleep(STOP_POLL);
    }
    let failed = server.has_failed();
    say("stopping");
    server.stop().map_err(Failure::runtime)?;
    if failed {
        return Err(Failure::runtime("the arbitrator's thread failed"));
    }
    say("stopped");
    Ok(())
}

/// A line of this process's log on standard output (`kista_log`'s format).
fn say(message: impl std::fmt::Display) {
    kista_log::print(kista_log::Level::Info, "kista mgmd", message);
}
