//! The cluster configuration file (TOML), documented parameter by parameter, with defaults
//! and NDB equivalents, in `docs/cluster-config.md`.
//!
//! Parsing happens in two steps: serde reads the file into `raw` structures that keep each
//! value's place in the file (`toml::Spanned`), refusing unknown keys and wrong types; then
//! [`ClusterConfig::from_toml`] checks what serde cannot (ranges, replicas against data nodes,
//! clashing ports and node ids, thread configurations) and reports the line of the value at
//! fault.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use kista_datanode::node;
use kista_runtime::thread_config::ThreadConfig;
use toml::Spanned;

use crate::size::parse_size;

/// Data nodes a cluster may have (NDB: 144; node ids 1-48 are ours for data nodes).
pub const DATA_NODES_MAX: usize = 48;
/// Replicas of each partition at most (NDB: NoOfReplicas 1-4).
pub const REPLICAS_MAX: u8 = 4;
/// Partitions each table gets per data node at most.
pub const PARTITIONS_PER_NODE_MAX: u32 = 128;
/// The smallest heartbeat interval accepted: below it heartbeats would cost more than they
/// tell.
pub const HEARTBEAT_INTERVAL_MS_MIN: u64 = 10;
/// The smallest data memory a node may have.
pub const DATA_MEMORY_BYTES_MIN: u64 = 1 << 20;
/// REDO log per data node unless configured: room for a laptop's disk (NDB's default is
/// 1 GiB, RonDB's 64 GiB).
pub const REDO_LOG_BYTES_DEFAULT: u64 = 256 << 20;
pub const REDO_LOG_BYTES_MIN: u64 = 8 << 20;
/// Local checkpoint writes per `ldm` thread and second (NDB's MaxDiskWriteSpeed: 20M).
pub const CHECKPOINT_WRITE_BYTES_PER_SEC_DEFAULT: u64 = 20 << 20;
pub const CHECKPOINT_WRITE_BYTES_PER_SEC_MIN: u64 = 1 << 20;

/// The management server's port unless the file says otherwise (NDB's too).
pub const MGMD_PORT_DEFAULT: u16 = 1186;
/// The first data node's port unless the file says otherwise; the next ones follow.
pub const DATA_NODE_PORT_DEFAULT: u16 = 11860;
/// The SQL front end's port unless the file says otherwise (MySQL's).
pub const SQL_PORT_DEFAULT: u16 = 3306;

/// A checked cluster configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterConfig {
    pub cluster: ClusterSettings,
    pub mgmd: MgmdConfig,
    /// In node id order.
    pub data_nodes: Vec<DataNodeConfig>,
    pub sql: Vec<SqlConfig>,
}

/// Settings every data node shares.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterSettings {
    pub replicas: u8,
    pub data_memory_bytes: u64,
    /// REDO log per data node; 0: none.
    pub redo_log_bytes: u64,
    pub partitions_per_node: u32,
    pub heartbeat_interval_ms: u64,
    pub heartbeat_misses_max: u32,
    pub lock_wait_timeout_ms: u64,
    pub deadlock_detection_interval_ms: u64,
    pub transaction_inactive_timeout_ms: u64,
    pub start_partial_timeout_ms: u64,
    pub global_checkpoint_interval_ms: u64,
    /// Local checkpoint write speed per `ldm` thread while its REDO log has room; 0: no
    /// bound.
    pub checkpoint_write_bytes_per_sec: u64,
    /// Operations one transaction may have (NDB: MaxNoOfConcurrentOperations).
    pub operations_per_transaction_max: u32,
    /// Row locks one partition may track at once (NDB: MaxNoOfLocalOperations).
    pub locks_per_partition_max: u32,
    /// Data nodes allocate their `data_memory` at start and write every page of it, so
    /// that writes later meet no page faults (NDB always does).
    pub touch_memory: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MgmdConfig {
    pub host: String,
    pub port: u16,
    pub data_dir: PathBuf,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DataNodeConfig {
    pub node_id: u8,
    pub host: String,
    pub port: u16,
    pub data_dir: PathBuf,
    /// How its threads are laid out: an explicit thread configuration, a CPU count to size
    /// one for, or neither (sized for the machine it runs on).
    pub threads: DataNodeThreads,
    /// The node's node group: consecutive data nodes, `replicas` at a time.
    pub node_group: u8,
}

#[derive(Clone, Debug, PartialEq)]
pub enum DataNodeThreads {
    /// Sized for the machine the node runs on.
    Automatic,
    /// Sized as for this many CPUs (NDB: NumCPUs).
    Cpus(u32),
    /// This thread configuration, as `--thread-config` takes it (NDB: ThreadConfig).
    Config(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct SqlConfig {
    pub host: String,
    pub port: u16,
}

/// Why a configuration was refused: the file, the line (1-based, 0 when the fault is the
/// file as a whole) and the reason.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: cannot read the configuration: {source}", file.display())]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: {reason}", file.display())]
    Invalid {
        file: PathBuf,
        line: usize,
        reason: String,
    },
}

impl ConfigError {
    /// The line at fault, when there is one.
    pub fn line(&self) -> Option<usize> {
        match self {
            ConfigError::Invalid { line, .. } if *line > 0 => Some(*line),
            _ => None,
        }
    }
}

impl ClusterConfig {
    /// Reads and checks the configuration file at `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::load_with_text(path).map(|(config, _)| config)
    }

    /// Reads and checks the configuration file at `path`, keeping its text (which the
    /// management server serves to data nodes as it is).
    pub fn load_with_text(path: &Path) -> Result<(Self, String), ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            file: path.to_path_buf(),
            source,
        })?;
        Ok((Self::from_toml(&text, path)?, text))
    }

    /// Checks a configuration's `text`; `file` names it in errors.
    pub fn from_toml(text: &str, file: &Path) -> Result<Self, ConfigError> {
        let invalid = |span: Option<std::ops::Range<usize>>, reason: String| {
            let line = span.map_or(0, |span| line_of(text, span.start));
            ConfigError::Invalid {
                file: file.to_path_buf(),
                line,
                reason,
            }
        };
        let raw: raw::File = toml::from_str(text)
            .map_err(|error| invalid(error.span(), error.message().to_string()))?;
        check(raw).map_err(|(span, reason)| invalid((span != WHOLE_FILE).then_some(span), reason))
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// A fault and where its value is in the file ([`WHOLE_FILE`] when no one value is).
type Fault = (std::ops::Range<usize>, String);
const WHOLE_FILE: std::ops::Range<usize> = 0..0;

fn check(raw: raw::File) -> Result<ClusterConfig, Fault> {
    let cluster = check_cluster(&raw.cluster)?;
    let replicas = usize::from(cluster.replicas);
    let nodes = &raw.data_node;
    if nodes.is_empty() {
        return Err((WHOLE_FILE, "the cluster has no [[data_node]]".into()));
    }
    if nodes.len() > DATA_NODES_MAX {
        let span = nodes[DATA_NODES_MAX].host.span();
        return Err((
            span,
            format!("a cluster has at most {DATA_NODES_MAX} data nodes"),
        ));
    }
    if replicas > nodes.len() || nodes.len() % replicas != 0 {
        let span = raw
            .cluster
            .replicas
            .as_ref()
            .map_or(WHOLE_FILE, Spanned::span);
        return Err((
            span,
            format!(
                "replicas = {replicas} needs a whole number of node groups of {replicas} data \
                 nodes each, and the file has {} data nodes",
                nodes.len()
            ),
        ));
    }
    let mut ports = PortBook::default();
    let mgmd = check_mgmd(&raw.mgmd, &mut ports)?;
    let data_nodes = check_data_nodes(nodes, cluster.replicas, &mut ports)?;
    let sql = raw
        .sql
        .iter()
        .enumerate()
        .map(|(index, sql)| {
            let port = sql
                .port
                .as_ref()
                .map_or(SQL_PORT_DEFAULT + index as u16, |p| *p.get_ref());
            ports.claim(sql.host.get_ref(), port, sql.host.span())?;
            Ok(SqlConfig {
                host: sql.host.get_ref().clone(),
                port,
            })
        })
        .collect::<Result<_, Fault>>()?;
    Ok(ClusterConfig {
        cluster,
        mgmd,
        data_nodes,
        sql,
    })
}

fn check_cluster(raw: &raw::Cluster) -> Result<ClusterSettings, Fault> {
    let replicas = in_range(raw.replicas.as_ref(), 2, 1..=REPLICAS_MAX, "replicas")?;
    let data_memory_bytes = match &raw.data_memory {
        None => 1 << 30,
        Some(size) => match bytes_of(size)? {
            bytes if bytes < DATA_MEMORY_BYTES_MIN => {
                return Err((size.span(), "data_memory must be at least 1M".into()));
            }
            bytes => bytes,
        },
    };
    let redo_log_bytes = size_or_zero(
        raw.redo_log.as_ref(),
        REDO_LOG_BYTES_DEFAULT,
        REDO_LOG_BYTES_MIN,
        "redo_log must be 0 (none) or at least 8M",
    )?;
    let checkpoint_write_bytes_per_sec = size_or_zero(
        raw.checkpoint_write_bytes_per_sec.as_ref(),
        CHECKPOINT_WRITE_BYTES_PER_SEC_DEFAULT,
        CHECKPOINT_WRITE_BYTES_PER_SEC_MIN,
        "checkpoint_write_bytes_per_sec must be 0 (no bound) or at least 1M",
    )?;
    Ok(ClusterSettings {
        replicas,
        data_memory_bytes,
        redo_log_bytes,
        partitions_per_node: in_range(
            raw.partitions_per_node.as_ref(),
            2,
            1..=PARTITIONS_PER_NODE_MAX,
            "partitions_per_node",
        )?,
        heartbeat_interval_ms: in_range(
            raw.heartbeat_interval_ms.as_ref(),
            1500,
            HEARTBEAT_INTERVAL_MS_MIN..=60_000,
            "heartbeat_interval_ms",
        )?,
        heartbeat_misses_max: in_range(
            raw.heartbeat_misses_max.as_ref(),
            3,
            2..=100,
            "heartbeat_misses_max",
        )?,
        lock_wait_timeout_ms: in_range(
            raw.lock_wait_timeout_ms.as_ref(),
            1200,
            1..=3_600_000,
            "lock_wait_timeout_ms",
        )?,
        deadlock_detection_interval_ms: in_range(
            raw.deadlock_detection_interval_ms.as_ref(),
            50,
            0..=3_600_000,
            "deadlock_detection_interval_ms",
        )?,
        transaction_inactive_timeout_ms: in_range(
            raw.transaction_inactive_timeout_ms.as_ref(),
            10_000,
            1..=86_400_000,
            "transaction_inactive_timeout_ms",
        )?,
        start_partial_timeout_ms: in_range(
            raw.start_partial_timeout_ms.as_ref(),
            30_000,
            1..=3_600_000,
            "start_partial_timeout_ms",
        )?,
        global_checkpoint_interval_ms: in_range(
            raw.global_checkpoint_interval_ms.as_ref(),
            1000,
            10..=60_000,
            "global_checkpoint_interval_ms",
        )?,
        checkpoint_write_bytes_per_sec,
        operations_per_transaction_max: in_range(
            raw.operations_per_transaction_max.as_ref(),
            node::OPERATIONS_PER_TRANSACTION_MAX_DEFAULT,
            1_000..=100_000_000,
            "operations_per_transaction_max",
        )?,
        locks_per_partition_max: in_range(
            raw.locks_per_partition_max.as_ref(),
            node::LOCKS_PER_PARTITION_MAX_DEFAULT,
            1_000..=100_000_000,
            "locks_per_partition_max",
        )?,
        touch_memory: raw.touch_memory.unwrap_or(false),
    })
}

fn check_mgmd(raw: &raw::Mgmd, ports: &mut PortBook) -> Result<MgmdConfig, Fault> {
    let host = raw
        .host
        .as_ref()
        .map_or("127.0.0.1".into(), |h| h.get_ref().clone());
    let port = raw
        .port
        .as_ref()
        .map_or(MGMD_PORT_DEFAULT, |p| *p.get_ref());
    let span = match (&raw.port, &raw.host) {
        (Some(port), _) => port.span(),
        (None, Some(host)) => host.span(),
        (None, None) => WHOLE_FILE,
    };
    ports.claim(&host, port, span)?;
    Ok(MgmdConfig {
        host,
        port,
        data_dir: raw
            .data_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("./kista-data/mgmd")),
    })
}

fn check_data_nodes(
    raw: &[raw::DataNode],
    replicas: u8,
    ports: &mut PortBook,
) -> Result<Vec<DataNodeConfig>, Fault> {
    // Ids given in the file first, so that the ones handed out skip them.
    let mut taken = HashSet::new();
    for node in raw {
        if let Some(id) = &node.node_id {
            let value = *id.get_ref();
            if value == 0 || usize::from(value) > DATA_NODES_MAX {
                return Err((id.span(), format!("node_id must be 1-{DATA_NODES_MAX}")));
            }
            if !taken.insert(value) {
                return Err((id.span(), format!("node_id {value} is given twice")));
            }
        }
    }
    let mut next_free = 1u8;
    let mut nodes = Vec::with_capacity(raw.len());
    for (index, node) in raw.iter().enumerate() {
        let node_id = match &node.node_id {
            Some(id) => *id.get_ref(),
            None => {
                while taken.contains(&next_free) {
                    next_free += 1;
                }
                taken.insert(next_free);
                next_free
            }
        };
        let host = node.host.get_ref().clone();
        let port = match &node.port {
            Some(port) => {
                ports.claim(&host, *port.get_ref(), port.span())?;
                *port.get_ref()
            }
            None => {
                let port = DATA_NODE_PORT_DEFAULT + index as u16;
                ports.claim(&host, port, node.host.span())?;
                port
            }
        };
        let threads = match (&node.thread_config, &node.num_cpus) {
            (Some(_), Some(cpus)) => {
                return Err((
                    cpus.span(),
                    "give thread_config or num_cpus, not both".into(),
                ))
            }
            (Some(config), None) => {
                config
                    .get_ref()
                    .parse::<ThreadConfig>()
                    .map_err(|e| (config.span(), format!("thread_config: {e}")))?;
                DataNodeThreads::Config(config.get_ref().clone())
            }
            (None, Some(cpus)) => {
                DataNodeThreads::Cpus(in_range(Some(cpus), 0, 1..=1024, "num_cpus")?)
            }
            (None, None) => DataNodeThreads::Automatic,
        };
        nodes.push(DataNodeConfig {
            node_id,
            host,
            port,
            data_dir: node
                .data_dir
                .clone()
                .unwrap_or_else(|| PathBuf::from(format!("./kista-data/node-{node_id}"))),
            threads,
            node_group: (index / usize::from(replicas)) as u8,
        });
    }
    nodes.sort_by_key(|node| node.node_id);
    Ok(nodes)
}

/// `value` if it lies in `range` (or `default` when absent), else a fault naming `name`.
/// The bytes a size setting names (a count, or text such as "512M").
fn bytes_of(size: &Spanned<raw::Size>) -> Result<u64, Fault> {
    match size.get_ref() {
        raw::Size::Bytes(bytes) => Ok(*bytes),
        raw::Size::Text(text) => parse_size(text).map_err(|e| (size.span(), e)),
    }
}

/// A size that is 0 (the feature off) or at least `min`; `default` when not given.
fn size_or_zero(
    size: Option<&Spanned<raw::Size>>,
    default: u64,
    min: u64,
    refusal: &str,
) -> Result<u64, Fault> {
    let Some(size) = size else {
        return Ok(default);
    };
    match bytes_of(size)? {
        bytes if bytes != 0 && bytes < min => Err((size.span(), refusal.into())),
        bytes => Ok(bytes),
    }
}

fn in_range<T>(
    value: Option<&Spanned<T>>,
    default: T,
    range: std::ops::RangeInclusive<T>,
    name: &str,
) -> Result<T, Fault>
where
    T: Copy + PartialOrd + std::fmt::Display,
{
    let Some(value) = value else {
        return Ok(default);
    };
    if range.contains(value.get_ref()) {
        Ok(*value.get_ref())
    } else {
        Err((
            value.span(),
            format!(
                "{name} = {} is out of range ({}-{})",
                value.get_ref(),
                range.start(),
                range.end()
            ),
        ))
    }
}

/// Ports claimed so far, per host: two processes cannot listen on one.
#[derive(Default)]
struct PortBook(HashSet<(String, u16)>);

impl PortBook {
    fn claim(&mut self, host: &str, port: u16, span: std::ops::Range<usize>) -> Result<(), Fault> {
        if port == 0 {
            return Err((
                span,
                "port 0 is not a port a cluster can be found at".into(),
            ));
        }
        if !self.0.insert((host.to_string(), port)) {
            return Err((span, format!("{host}:{port} is used by two processes")));
        }
        Ok(())
    }
}

/// The file as serde reads it: every value that a later check may fault keeps its place.
mod raw {
    use std::path::PathBuf;

    use serde::Deserialize;
    use toml::Spanned;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct File {
        #[serde(default)]
        pub cluster: Cluster,
        #[serde(default)]
        pub mgmd: Mgmd,
        #[serde(default)]
        pub data_node: Vec<DataNode>,
        #[serde(default)]
        pub sql: Vec<Sql>,
    }

    #[derive(Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Cluster {
        pub replicas: Option<Spanned<u8>>,
        pub data_memory: Option<Spanned<Size>>,
        pub redo_log: Option<Spanned<Size>>,
        pub partitions_per_node: Option<Spanned<u32>>,
        pub heartbeat_interval_ms: Option<Spanned<u64>>,
        pub heartbeat_misses_max: Option<Spanned<u32>>,
        pub lock_wait_timeout_ms: Option<Spanned<u64>>,
        pub deadlock_detection_interval_ms: Option<Spanned<u64>>,
        pub transaction_inactive_timeout_ms: Option<Spanned<u64>>,
        pub start_partial_timeout_ms: Option<Spanned<u64>>,
        pub global_checkpoint_interval_ms: Option<Spanned<u64>>,
        pub checkpoint_write_bytes_per_sec: Option<Spanned<Size>>,
        pub operations_per_transaction_max: Option<Spanned<u32>>,
        pub locks_per_partition_max: Option<Spanned<u32>>,
        pub touch_memory: Option<bool>,
    }

    /// A byte count, or a size such as "512M".
    #[derive(Deserialize)]
    #[serde(untagged)]
    pub enum Size {
        Bytes(u64),
        Text(String),
    }

    #[derive(Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Mgmd {
        pub host: Option<Spanned<String>>,
        pub port: Option<Spanned<u16>>,
        pub data_dir: Option<PathBuf>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct DataNode {
        pub node_id: Option<Spanned<u8>>,
        pub host: Spanned<String>,
        pub port: Option<Spanned<u16>>,
        pub data_dir: Option<PathBuf>,
        pub thread_config: Option<Spanned<String>>,
        pub num_cpus: Option<Spanned<u32>>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Sql {
        pub host: Spanned<String>,
        pub port: Option<Spanned<u16>>,
    }
}
