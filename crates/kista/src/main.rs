//! The `kista` binary: one subcommand per role and tool. Each subcommand lives in its own
//! module; this file only parses the command line and dispatches.

mod bench;
mod cluster_node;
mod data_node;
mod datad;
mod demo;
mod free_ports;
mod import;
mod key_file;
mod metrics;
mod mgm;
mod mgmd;
mod progress;
mod restore;
mod sql;
mod thread_options;
mod tls;
mod top;
mod touch_memory;
mod up;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Kista: a distributed, shared-nothing, in-memory database.
#[derive(Parser)]
#[command(name = "kista", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The flexAsynch-style benchmark: phases of inserts, updates, reads and deletes (or a
    /// mix for a fixed time) against a data node, with ops/s, latency and verification.
    Bench(bench::BenchArgs),
    /// Data node: `--mgm HOST:PORT --node-id N` joins the cluster the management server
    /// configures; `--standalone` runs a one-node cluster for clients and `kista bench`.
    Datad(datad::DatadArgs),
    /// Runs the data node runtime on a thread layout under a relay load between every module
    /// instance, printing per-thread statistics each interval.
    Demo(demo::DemoArgs),
    /// Loads delimited text files (CSV by default) into an existing table, many
    /// transactions in flight, with progress, a rejects file and `--resume`.
    Import(import::ImportArgs),
    /// Management client: `show`, `status`, `N stop`, `shutdown`, ... (`-e` runs one).
    Mgm(mgm::MgmArgs),
    /// Management server: serves the cluster configuration, arbitrates, answers `kista mgm`.
    Mgmd(mgmd::MgmdArgs),
    /// Loads an online backup (`kista mgm -e "start backup"`) into a running cluster of any
    /// size, with progress.
    Restore(restore::RestoreArgs),
    /// The SQL front end: serves MySQL clients (the mysql client, drivers, sysbench) on
    /// `--port`, running their SQL on the cluster at `--mgm`.
    Sql(sql::SqlArgs),
    /// The cluster's certificate authority and the SQL front end's certificate it signs
    /// (TLS for MySQL clients: `kista sql --tls-cert`, `kista up --tls`).
    Tls(tls::TlsArgs),
    /// Every data node's threads, live (CPU, spinning, signals/s, queues, load), or one
    /// sample as a table or JSON (`--once`, `--json`).
    Top(top::TopArgs),
    /// The cluster in a box: a management server and data nodes on this machine, until
    /// Ctrl-C.
    Up(up::UpArgs),
}

/// Exit status for a bad command line or configuration (as clap uses for usage errors).
pub const EXIT_USAGE: u8 = 2;
/// Exit status when a valid configuration cannot run on this machine.
pub const EXIT_FAILURE: u8 = 1;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(args) => bench::run(&args),
        Command::Datad(args) => datad::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Import(args) => import::run(&args),
        Command::Mgm(args) => mgm::run(&args),
        Command::Mgmd(args) => mgmd::run(&args),
        Command::Restore(args) => restore::run(&args),
        Command::Sql(args) => sql::run(&args),
        Command::Tls(args) => tls::run(&args),
        Command::Top(args) => top::run(&args),
        Command::Up(args) => up::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("kista: {}", failure.message);
            ExitCode::from(failure.exit_status)
        }
    }
}

/// A flag SIGINT and SIGTERM set: long-running subcommands poll it to stop cleanly.
pub fn stop_on_signals() -> Result<std::sync::Arc<std::sync::atomic::AtomicBool>, Failure> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, stop.clone())
            .map_err(|e| Failure::runtime(format!("cannot handle signal {signal}: {e}")))?;
    }
    Ok(stop)
}

/// Checks a count option (`--threads`, `--batch-rows`): 1 to `max`.
pub(crate) fn check_count(option: &str, value: usize, max: usize) -> Result<(), Failure> {
    match (1..=max).contains(&value) {
        true => Ok(()),
        false => Err(Failure::usage(format!("{option} must be 1 to {max}"))),
    }
}

/// Why a subcommand stopped, and the exit status that tells scripts.
pub struct Failure {
    pub message: String,
    pub exit_status: u8,
}

impl Failure {
    pub fn usage(message: impl ToString) -> Self {
        Self {
            message: message.to_string(),
            exit_status: EXIT_USAGE,
        }
    }

    pub fn runtime(message: impl ToString) -> Self {
        Self {
            message: message.to_string(),
            exit_status: EXIT_FAILURE,
        }
    }
}
