//! `kista up`: the cluster in a box. Writes a configuration for this machine (two data
//! nodes, two replicas by default, each sized to its share of the CPUs), starts `kista mgmd`
//! and every `kista datad` as child processes with their logs under `--dir`, waits until the
//! management server shows every data node started, prints `kista up: ready` with how to
//! connect, and on Ctrl-C or SIGTERM shuts the cluster down cleanly (`shutdown`: data nodes
//! first, then the management server). While it runs it supervises its children
//! (`children.rs`): one that exits unexpectedly is started again.
//!
//! The children run in their own process group, so a terminal's Ctrl-C reaches only this
//! process, which stops them in order.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use kista_log::Level;
use kista_mgm::admin::AdminClient;
use kista_mgm::size::parse_size;
use kista_transport::cluster_key::ClusterKey;

use crate::key_file::KEY_FILE_NAME;

use crate::Failure;
use children::{shut_down, supervise, Child, Role, ADMIN_TIMEOUT, POLL, START_LIMIT};

mod children;

#[derive(Args, Debug)]
pub struct UpArgs {
    /// Data nodes to start (a multiple of --replicas, at most 48).
    #[arg(long, default_value_t = 2)]
    data_nodes: u8,

    /// Copies of each partition (1-4).
    #[arg(long, default_value_t = 2)]
    replicas: u8,

    /// Directory for the configuration, the nodes' data directories and the logs.
    #[arg(long, default_value = "./kista-data")]
    dir: PathBuf,

    /// The management server's port (clients and `kista mgm` connect here). 0 picks a
    /// free one, printed at start.
    #[arg(long, default_value_t = 1186)]
    mgm_port: u16,

    /// The first data node's port; the next ones follow it. 0 picks free ports.
    #[arg(long, default_value_t = 11860)]
    data_port: u16,

    /// Memory for rows and indexes per data node, e.g. 512M or 2G.
    #[arg(long, default_value = "512M", value_parser = parse_size)]
    data_memory: u64,

    /// REDO log per data node, e.g. 256M or 1G (at least 8M); 0 keeps none.
    #[arg(long, default_value = "256M", value_parser = parse_size)]
    redo_log: u64,

    /// Data nodes allocate and write their --data-memory at start, as NDB's do: loads and
    /// writes then meet no page faults, and each node holds that much memory from its start
    /// (`touch_memory` in the cluster configuration; docs/operations.md).
    #[arg(long)]
    touch_memory: bool,

    /// The SQL front end's port for MySQL clients (`kista sql`, user root, without a
    /// password unless --root-password). 0 picks a free one, printed at start.
    #[arg(long, default_value_t = 3306)]
    sql_port: u16,

    /// The password of the SQL front end's `root` account (`kista sql --user root:PW`;
    /// it shows in the process list: `ALTER USER root IDENTIFIED BY ...` keeps one in the
    /// cluster instead). Empty by default.
    #[arg(long, default_value = "")]
    root_password: String,

    /// SQL sessions start with `kista_durable_commits = ON` (`kista sql --durable-commits`):
    /// every commit is confirmed once on disk on every replica.
    #[arg(long)]
    durable_commits: bool,

    /// MySQL clients may use TLS: the first run makes DIR/tls (a certificate authority and
    /// the front end's certificate, as `kista tls`), later runs keep it; clients verify the
    /// front end with DIR/tls/ca.pem.
    #[arg(long)]
    tls: bool,

    /// With --tls: refuse MySQL clients that do not use it (error 3159).
    #[arg(long, requires = "tls")]
    require_secure_transport: bool,

    /// The first Prometheus metrics port: the management server's; data node N's is
    /// this + N and the SQL front end's the one after the last data node's. 0 picks free
    /// ones. Each is printed as http://127.0.0.1:PORT/metrics.
    #[arg(long, default_value_t = 0)]
    metrics_port: u16,
}

/// Where each child serves its metrics.
struct MetricsPorts {
    mgmd: u16,
    data_nodes: Vec<u16>,
    sql: u16,
}

/// How often `kista up` says what it waits for while the data nodes start.
const START_REPORT_INTERVAL: Duration = Duration::from_secs(5);
/// Days the front end's certificate `kista up --tls` makes is valid (`kista tls` renews).
const TLS_CERTIFICATE_DAYS: u32 = 365;

pub fn run(args: &UpArgs) -> Result<(), Failure> {
    if args.replicas == 0 || args.data_nodes == 0 || args.data_nodes % args.replicas != 0 {
        return Err(Failure::usage(format!(
            "--data-nodes ({}) must be a positive multiple of --replicas ({})",
            args.data_nodes, args.replicas
        )));
    }
    let stop = crate::stop_on_signals()?;
    let logs = args.dir.join("logs");
    std::fs::create_dir_all(&logs)
        .map_err(|e| Failure::runtime(format!("cannot create {}: {e}", logs.display())))?;
    let dir = args
        .dir
        .canonicalize()
        .map_err(|e| Failure::runtime(format!("{}: {e}", args.dir.display())))?;
    let ports = data_node_ports(args)?;
    let metrics = metrics_ports(args)?;
    check_ports_free(args, &ports, &metrics)?;
    let config = configuration(args, &dir, &ports);
    let config_path = dir.join("cluster.toml");
    std::fs::write(&config_path, config)
        .map_err(|e| Failure::runtime(format!("cannot write {}: {e}", config_path.display())))?;
    // Made once per directory and kept: every process of the cluster proves it holds it.
    let key_path = dir.join(KEY_FILE_NAME);
    let key = ClusterKey::load_or_create(&key_path).map_err(Failure::runtime)?;
    let key_file = key_path.display().to_string();
    let setup = Setup {
        dir: &dir,
        key: &key,
        key_file: &key_file,
    };
    // With --mgm-port 0 the management server's log says where it listens.
    let mut mgm = format!("127.0.0.1:{}", args.mgm_port);
    say(
        Level::Info,
        format_args!(
            "{} data nodes, {} replicas, data memory {} bytes each; configuration {}",
            args.data_nodes,
            args.replicas,
            args.data_memory,
            config_path.display()
        ),
    );

    let mut processes: Vec<Child> = Vec::new();
    let started = start_all(
        args,
        &setup,
        &config_path,
        &mut mgm,
        &mut processes,
        &stop,
        &metrics,
    );
    if let Err(failure) = started {
        shut_down(&mgm, &key, &mut processes);
        return Err(failure);
    }
    let sql = match start_sql(args, &setup, &mgm, &mut processes, &stop, metrics.sql) {
        Ok(sql) => sql,
        Err(failure) => {
            shut_down(&mgm, &key, &mut processes);
            return Err(failure);
        }
    };
    say(
        Level::Info,
        format_args!("management server listening on {mgm}"),
    );
    say(
        Level::Info,
        format_args!("SQL front end (MySQL protocol) at {sql}"),
    );
    print_metrics_addresses(&metrics);
    say(
        Level::Info,
        format_args!("ready: the cluster serves at --mgm {mgm} and SQL at {sql}"),
    );
    say(
        Level::Info,
        format_args!("  mysql -h {} -P {} -u root", sql.ip(), sql.port()),
    );
    if args.tls {
        let ca = dir.join("tls").join("ca.pem");
        say(
            Level::Info,
            format_args!(
                "  mysql -h {} -P {} -u root --ssl --ssl-ca={} --ssl-verify-server-cert",
                sql.ip(),
                sql.port(),
                ca.display()
            ),
        );
    }
    say(
        Level::Info,
        format_args!("  kista mgm --mgm {mgm} --key-file {key_file} -e show"),
    );
    say(
        Level::Info,
        format_args!("  kista bench --mgm {mgm} --key-file {key_file}"),
    );
    say(Level::Info, "Ctrl-C or SIGTERM stops it");
    let outcome = supervise(&mut processes, &stop);
    shut_down(&mgm, &key, &mut processes);
    say(Level::Info, "stopped");
    outcome
}

/// The data nodes' ports: `--data-port` and the ones after it, or free ones (below the
/// kernel's ephemeral range, see `free_ports`).
fn data_node_ports(args: &UpArgs) -> Result<Vec<u16>, Failure> {
    if args.data_port != 0 {
        let last = u32::from(args.data_port) + u32::from(args.data_nodes) - 1;
        if last > u32::from(u16::MAX) {
            return Err(Failure::usage(
                "--data-port leaves no room for every data node",
            ));
        }
        return Ok((0..u16::from(args.data_nodes))
            .map(|i| args.data_port + i)
            .collect());
    }
    crate::free_ports::free_ports(usize::from(args.data_nodes))
        .map_err(|e| Failure::runtime(format!("no free port for the data nodes: {e}")))
}

/// `--metrics-port` and the ports after it, or free ones.
fn metrics_ports(args: &UpArgs) -> Result<MetricsPorts, Failure> {
    let count = usize::from(args.data_nodes) + 2;
    let ports = if args.metrics_port != 0 {
        let last = usize::from(args.metrics_port) + count - 1;
        if last > usize::from(u16::MAX) {
            return Err(Failure::usage(
                "--metrics-port leaves no room for every process",
            ));
        }
        (0..count as u16).map(|i| args.metrics_port + i).collect()
    } else {
        crate::free_ports::free_ports(count)
            .map_err(|e| Failure::runtime(format!("no free port for the metrics: {e}")))?
    };
    Ok(MetricsPorts {
        mgmd: ports[0],
        data_nodes: ports[1..count - 1].to_vec(),
        sql: ports[count - 1],
    })
}

/// A line of `kista up`'s own on its standard output, in the log format of every Kista
/// process (crates/log): its children's exits and restarts sit beside theirs in a log
/// collector, in time order.
fn say(level: Level, message: impl std::fmt::Display) {
    kista_log::print(level, "kista up", message);
}

fn print_metrics_addresses(metrics: &MetricsPorts) {
    let url = |port: u16| format!("http://127.0.0.1:{port}/metrics");
    say(Level::Info, "metrics (Prometheus):");
    say(
        Level::Info,
        format_args!("  {} management server", url(metrics.mgmd)),
    );
    for (index, &port) in metrics.data_nodes.iter().enumerate() {
        say(
            Level::Info,
            format_args!("  {} data node {}", url(port), index + 1),
        );
    }
    say(
        Level::Info,
        format_args!("  {} SQL front end", url(metrics.sql)),
    );
}

/// Refuses at once a port that another program listens on: the child would fail to
/// listen, and clients told the port would reach the other program.
fn check_ports_free(
    args: &UpArgs,
    data_ports: &[u16],
    metrics: &MetricsPorts,
) -> Result<(), Failure> {
    let mut wanted = vec![
        (args.mgm_port, "--mgm-port", "the management server's"),
        (args.sql_port, "--sql-port", "the SQL front end's"),
    ];
    if args.data_port != 0 {
        wanted.extend(
            data_ports
                .iter()
                .map(|&port| (port, "--data-port", "a data node's")),
        );
    }
    if args.metrics_port != 0 {
        let all = std::iter::once(metrics.mgmd)
            .chain(metrics.data_nodes.iter().copied())
            .chain([metrics.sql]);
        wanted.extend(all.map(|port| (port, "--metrics-port", "a metrics endpoint's")));
    }
    for (port, option, whose) in wanted.into_iter().filter(|(port, ..)| *port != 0) {
        if let Err(error) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            return Err(Failure::runtime(format!(
                "port {port} ({whose}) cannot be used: {error}; stop the program that holds \
                 it, or choose another with {option} (0 picks a free one)"
            )));
        }
    }
    Ok(())
}

/// The cluster configuration (docs/cluster-config.md): every data node on 127.0.0.1 with
/// its share of this machine's CPUs.
fn configuration(args: &UpArgs, dir: &Path, ports: &[u16]) -> String {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpus_per_node = (cpus / usize::from(args.data_nodes)).max(1);
    let mut config = format!(
        "# Written by `kista up`; rewritten at each start.\n\
         [cluster]\nreplicas = {}\ndata_memory = \"{}\"\nredo_log = \"{}\"\n\
         touch_memory = {}\n\n\
         [mgmd]\nhost = \"127.0.0.1\"\nport = {}\ndata_dir = \"{}\"\n",
        args.replicas,
        args.data_memory,
        args.redo_log,
        args.touch_memory,
        // `kista mgmd --port` overrides it; a file's port is never 0.
        args.mgm_port.max(1),
        dir.join("mgmd").display()
    );
    for (index, port) in ports.iter().enumerate() {
        config.push_str(&format!(
            "\n[[data_node]]\nnode_id = {}\nhost = \"127.0.0.1\"\nport = {port}\n\
             num_cpus = {cpus_per_node}\ndata_dir = \"{}\"\n",
            index + 1,
            dir.join(format!("node-{}", index + 1)).display()
        ));
    }
    config
}

/// What every child is started with: the directory (its working directory) and the
/// cluster's key.
struct Setup<'a> {
    dir: &'a Path,
    key: &'a ClusterKey,
    key_file: &'a str,
}

fn start_all(
    args: &UpArgs,
    setup: &Setup<'_>,
    config_path: &Path,
    mgm: &mut String,
    processes: &mut Vec<Child>,
    stop: &AtomicBool,
    metrics: &MetricsPorts,
) -> Result<(), Failure> {
    let config = config_path.display().to_string();
    let port = args.mgm_port.to_string();
    let metrics_port = metrics.mgmd.to_string();
    let mgmd = [
        "mgmd",
        "--config",
        &config,
        "--port",
        &port,
        "--metrics-port",
        &metrics_port,
        "--key-file",
        setup.key_file,
    ];
    processes.push(Child::spawn(
        "mgmd",
        Role::ManagementServer,
        &mgmd,
        setup.dir,
    )?);
    let management = &mut processes[0];
    management.wait_for_log_line("kista mgmd: ready", stop)?;
    let address = address_in_log(management)?;
    // Started again on the port the data nodes and clients know.
    management.keep_port(address.port());
    *mgm = address.to_string();
    let mgm = mgm.as_str();
    for (id, metrics_port) in (1..=args.data_nodes).zip(&metrics.data_nodes) {
        let id = id.to_string();
        let name = format!("data node {id}");
        let metrics_port = metrics_port.to_string();
        let datad = [
            "datad",
            "--mgm",
            mgm,
            "--node-id",
            &id,
            "--metrics-port",
            &metrics_port,
            "--key-file",
            setup.key_file,
        ];
        processes.push(Child::spawn(&name, Role::DataNode, &datad, setup.dir)?);
    }
    let deadline = Instant::now() + START_LIMIT;
    let mut last_report = Instant::now();
    loop {
        if stop.load(Ordering::SeqCst) {
            return Err(Failure::runtime("stopped before the cluster was ready"));
        }
        for process in processes.iter_mut() {
            process.check_running()?;
        }
        let status = AdminClient::connect(mgm, Some(setup.key), ADMIN_TIMEOUT)
            .and_then(|mut admin| admin.request("status"))
            .unwrap_or_default();
        let started = status.lines().filter(|l| l.ends_with(": started")).count();
        if started == usize::from(args.data_nodes) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Failure::runtime(format!(
                "the data nodes did not all start within {} s:\n{status}",
                START_LIMIT.as_secs()
            )));
        }
        if last_report.elapsed() > START_REPORT_INTERVAL {
            say(
                Level::Info,
                format_args!("waiting for the data nodes: {}", status.replace('\n', "; ")),
            );
            last_report = Instant::now();
        }
        std::thread::sleep(POLL);
    }
}

/// Starts `kista sql` on the cluster and returns the address it serves MySQL clients at.
fn start_sql(
    args: &UpArgs,
    setup: &Setup<'_>,
    mgm: &str,
    processes: &mut Vec<Child>,
    stop: &AtomicBool,
    metrics_port: u16,
) -> Result<SocketAddr, Failure> {
    let port = args.sql_port.to_string();
    let root = format!("root:{}", args.root_password);
    let metrics_port = metrics_port.to_string();
    let mut sql_args = vec![
        "sql",
        "--mgm",
        mgm,
        "--port",
        &port,
        "--metrics-port",
        &metrics_port,
        "--key-file",
        setup.key_file,
    ];
    if !args.root_password.is_empty() {
        sql_args.extend(["--user", root.as_str()]);
    }
    if args.durable_commits {
        sql_args.push("--durable-commits");
    }
    let tls_args = tls_options(args, setup.dir)?;
    sql_args.extend(tls_args.iter().map(String::as_str));
    processes.push(Child::spawn(
        "sql",
        Role::SqlFrontEnd,
        &sql_args,
        setup.dir,
    )?);
    let sql = processes.last_mut().expect("just pushed");
    sql.wait_for_log_line("kista sql: ready", stop)?;
    let address = address_in_log(sql)?;
    sql.keep_port(address.port());
    Ok(address)
}

/// The front end's TLS options under --tls, its certificate made the first time.
fn tls_options(args: &UpArgs, dir: &Path) -> Result<Vec<String>, Failure> {
    if !args.tls {
        return Ok(Vec::new());
    }
    let tls_dir = dir.join("tls");
    let (cert, key) = (tls_dir.join("sql.pem"), tls_dir.join("sql.key"));
    if !cert.exists() || !key.exists() {
        crate::tls::make(&tls_dir, &[], TLS_CERTIFICATE_DAYS)?;
    }
    let mut options = vec![
        "--tls-cert".to_string(),
        cert.display().to_string(),
        "--tls-key".to_string(),
        key.display().to_string(),
    ];
    if args.require_secure_transport {
        options.push("--require-secure-transport".into());
    }
    Ok(options)
}

/// The address a started server's log says it listens on.
fn address_in_log(process: &Child) -> Result<SocketAddr, Failure> {
    let log = std::fs::read_to_string(&process.log).unwrap_or_default();
    log.split("listening on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|address| address.parse().ok())
        .ok_or_else(|| {
            Failure::runtime(format!(
                "{} did not say where it listens: see {}",
                process.name,
                process.log.display()
            ))
        })
}
