//! `kista sql`: the SQL front end. Connects to the cluster through its management server
//! and serves MySQL clients on `--port` until SIGINT/SIGTERM. It holds no data and no
//! schema, so several may serve one cluster.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use kista_client::Client;
use kista_metrics::Exposition;
use kista_mgm::size::parse_size;
use kista_sql::admission::{CONNECT_TIMEOUT_S_DEFAULT, WAIT_TIMEOUT_S_DEFAULT};
use kista_sql::tls::{Tls, TlsOptions};
use kista_sql::{Catalog, Limits, ServerConfig, SqlServer, User, Users, CONNECTIONS_MAX_DEFAULT};

use crate::key_file::KeyFileArg;
use crate::metrics::MetricsOptions;
use crate::Failure;

#[derive(Args, Debug)]
pub struct SqlArgs {
    /// The cluster's management server.
    #[arg(long, default_value = "127.0.0.1:1186")]
    mgm: String,

    #[command(flatten)]
    key: KeyFileArg,

    /// Port for MySQL clients (0 picks a free one, printed at start).
    #[arg(long, default_value_t = 3306)]
    port: u16,

    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind: String,

    /// An account as NAME:PASSWORD (repeatable). Without any, `root` with an empty password.
    #[arg(long = "user", value_name = "NAME:PASSWORD")]
    users: Vec<String>,

    /// Client connections served at once; more are refused with error 1040, but for one
    /// more kept for an account with CONNECTION_ADMIN or SUPER (root).
    #[arg(long, default_value_t = CONNECTIONS_MAX_DEFAULT)]
    connections_max: usize,

    /// Seconds a client has to log in before its connection is closed (MySQL's
    /// `connect_timeout`).
    #[arg(long, default_value_t = CONNECT_TIMEOUT_S_DEFAULT)]
    connect_timeout_s: u64,

    /// Seconds a logged-in connection may wait for its client's next command before it
    /// is closed (MySQL's `wait_timeout`).
    #[arg(long, default_value_t = WAIT_TIMEOUT_S_DEFAULT)]
    wait_timeout_s: u64,

    /// Print why client connections broke.
    #[arg(long)]
    verbose: bool,

    /// Every session starts with `kista_durable_commits = ON`: a commit is confirmed only
    /// once it is on disk on every replica (a session may still turn it off).
    #[arg(long)]
    durable_commits: bool,

    /// Bytes of rows one statement may collect in one place (a result before it is sent,
    /// a join's rows, the rows an UPDATE changes); past them it fails with error 1104. A
    /// size with K, M or G.
    #[arg(long, default_value = "512M", value_parser = parse_size)]
    result_memory: u64,

    /// Milliseconds the front end waits, with no data node reachable, before it exits
    /// (status 1) so that its supervisor (`kista up`) starts it afresh. Meanwhile it keeps
    /// connecting again and statements fail with 1297 (retry). 0: never exit.
    #[arg(long, default_value_t = CLUSTER_LOST_EXIT_MS_DEFAULT)]
    cluster_lost_exit_ms: u64,

    /// A certificate chain (PEM, the front end's own first) to offer MySQL clients TLS
    /// with, and --tls-key its key; both are read again when they change (`kista tls`
    /// makes a pair).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,

    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,

    /// Refuse MySQL clients that do not ask for TLS (error 3159), as MySQL's
    /// require_secure_transport.
    #[arg(long, requires = "tls_cert")]
    require_secure_transport: bool,

    #[command(flatten)]
    metrics: MetricsOptions,
}

impl SqlArgs {
    /// The TLS the front end offers, if given a certificate.
    fn tls(&self) -> Result<Option<Arc<Tls>>, Failure> {
        let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) else {
            return Ok(None);
        };
        let options = TlsOptions {
            cert: cert.clone(),
            key: key.clone(),
            require_secure_transport: self.require_secure_transport,
        };
        Tls::new(&options)
            .map(Arc::new)
            .map(Some)
            .map_err(Failure::usage)
    }
}

/// The least `--result-memory`: below it, ordinary results would be refused.
const RESULT_MEMORY_MIN_BYTES: u64 = 1 << 20;

/// How often the main thread looks for a stop request.
const STOP_POLL: Duration = Duration::from_millis(50);
/// `--cluster-lost-exit-ms`'s default: a cluster restarted whole is back within it
/// (1.8-3.3 s measured for a clean stop and start), one down for longer is not coming
/// back by itself.
const CLUSTER_LOST_EXIT_MS_DEFAULT: u64 = 60_000;

/// The accounts `--user` names, or `root` without a password.
pub fn users_of(specs: &[String]) -> Result<Users, Failure> {
    if specs.is_empty() {
        return Ok(Users::new(vec![User::new("root", "")]));
    }
    let users = specs
        .iter()
        .map(|spec| {
            let (name, password) = spec
                .split_once(':')
                .ok_or_else(|| Failure::usage(format!("--user {spec}: expected NAME:PASSWORD")))?;
            if name.is_empty() {
                return Err(Failure::usage(format!("--user {spec}: the name is empty")));
            }
            Ok(User::new(name, password))
        })
        .collect::<Result<_, _>>()?;
    Ok(Users::new(users))
}

pub fn run(args: &SqlArgs) -> Result<(), Failure> {
    let users = users_of(&args.users)?;
    let listen: SocketAddr = (args.bind.as_str(), args.port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .ok_or_else(|| Failure::usage(format!("cannot listen on {}:{}", args.bind, args.port)))?;
    if args.result_memory < RESULT_MEMORY_MIN_BYTES {
        return Err(Failure::usage("--result-memory must be at least 1M"));
    }
    if args.connections_max == 0 {
        return Err(Failure::usage("--connections-max must be at least 1"));
    }
    if args.connect_timeout_s == 0 || args.wait_timeout_s == 0 {
        return Err(Failure::usage(
            "--connect-timeout-s and --wait-timeout-s must be at least 1",
        ));
    }
    let tls = args.tls()?;
    let stop = crate::stop_on_signals()?;
    let client = Client::connect_cluster(&args.mgm, args.key.load()?.as_ref())
        .map_err(|e| Failure::runtime(format!("cannot reach the cluster at {}: {e}", args.mgm)))?;
    kista_log::set_node(client.node_id().0);
    let mut catalog = Catalog::new(client);
    catalog.log_connection_errors = args.verbose;
    catalog.durable_commits_default = args.durable_commits;
    catalog.result_bytes_max = usize::try_from(args.result_memory).unwrap_or(usize::MAX);
    catalog.configured_users = users.configured().to_vec();
    catalog.tls = tls;
    let config = ServerConfig {
        listen,
        users,
        limits: Limits {
            connections_max: args.connections_max,
            connect_timeout: Duration::from_secs(args.connect_timeout_s),
            wait_timeout: Duration::from_secs(args.wait_timeout_s),
        },
    };
    let catalog = Arc::new(catalog);
    let shown = catalog.clone();
    let render = Arc::new(move |out: &mut Exposition| shown.render_metrics(out));
    let _metrics = args.metrics.serve("sql", render)?;
    let mut server = SqlServer::start(catalog.clone(), config)
        .map_err(|e| Failure::runtime(format!("cannot listen on {listen}: {e}")))?;
    say(format_args!(
        "listening on {} for MySQL clients (cluster at {})",
        server.address(),
        args.mgm
    ));
    say("ready");
    let mut unreachable = Unreachable::new(args.cluster_lost_exit_ms);
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(STOP_POLL);
        if let Some(waited) = unreachable.observe(any_data_node_live(&catalog)) {
            let message = format!(
                "no data node was reachable for {} ms (--cluster-lost-exit-ms): exiting, so \
                 that a supervisor starts this front end afresh",
                waited.as_millis()
            );
            kista_log::print(kista_log::Level::Error, "kista sql", &message);
            server.stop();
            return Err(Failure::runtime(message));
        }
    }
    say("stopping");
    server.stop();
    say("stopped");
    Ok(())
}

/// Whether any data node is live for the front end's client.
fn any_data_node_live(catalog: &Catalog) -> bool {
    catalog.client().data_nodes().iter().any(|node| node.live)
}

/// How long the front end has been without any live data node.
struct Unreachable {
    limit: Option<Duration>,
    since: Option<std::time::Instant>,
}

impl Unreachable {
    /// `limit_ms` 0: never give up.
    fn new(limit_ms: u64) -> Self {
        Self {
            limit: (limit_ms > 0).then(|| Duration::from_millis(limit_ms)),
            since: None,
        }
    }

    /// Notes whether a node is live now; returns how long none has been, once past the
    /// limit.
    fn observe(&mut self, live: bool) -> Option<Duration> {
        if live {
            self.since = None;
            return None;
        }
        let since = *self.since.get_or_insert_with(std::time::Instant::now);
        let waited = since.elapsed();
        self.limit.filter(|&limit| waited >= limit).map(|_| waited)
    }
}

/// A line of this process's log on standard output (`kista_log`'s format).
fn say(message: impl std::fmt::Display) {
    kista_log::print(kista_log::Level::Info, "kista sql", message);
}
