//! A data node's blocks and the settings they share.

use std::sync::Arc;

use kista_runtime::io::{FileStorage, FileSystemBlock, FILE_SYSTEM_BLOCK};
use kista_runtime::{BlockRegistration, Module, ModuleInstance};
use kista_signal::{BlockAddress, NodeId, Signal};
use kista_storage::memory::DataMemory;

use crate::cluster::{instances, ClusterShape, DataNodeShape, ShapeError};
use crate::dict::Dictionary;
use crate::gcp::GlobalCheckpoints;
use crate::info::NodeInfoBlock;
use crate::ldm::LocalDataManager;
use crate::membership::Membership;
use crate::metrics::NodeCounters;
use crate::protocol::{
    DICT_BLOCK, GCP_BLOCK, INFO_BLOCK, LDM_BLOCK, MEMBERSHIP_BLOCK, QUERY_BLOCK, TC_BLOCK,
};
use crate::query::QueryExecutor;
use crate::read_lease::ReadLease;
use crate::registry::PartitionRegistry;
use crate::router::ReadPolicy;
use crate::tc::TransactionCoordinator;

/// Settings of one data node. Every field is documented for operators in
/// `docs/datanode.md`.
#[derive(Clone, Debug)]
pub struct NodeSettings {
    pub node: NodeId,
    pub tc_instances: u16,
    pub ldm_instances: u16,
    pub query_instances: u16,
    /// This node's node group, and the other data nodes of the cluster (none for a node
    /// that is a cluster alone).
    pub node_group: u16,
    pub peers: Vec<DataNodeShape>,
    /// Copies of each partition, one per node of a node group (NDB: NoOfReplicas).
    pub replicas: u16,
    /// Partitions each table gets per data node (RonDB: PartitionsPerNode): a table has
    /// this many times the data nodes, so each node is the primary of this many.
    pub partitions_per_node: u32,
    /// How long an operation may wait for a row lock before its transaction aborts (NDB:
    /// TransactionDeadlockDetectionTimeout).
    pub lock_wait_timeout_ms: u64,
    /// How long an operation waits for a row lock before it looks for a deadlock it closes,
    /// and how often it looks again while it waits; 0 turns deadlock detection off (then
    /// only the lock-wait timeout ends a deadlock, as in NDB).
    pub deadlock_detection_interval_ms: u64,
    /// How long a transaction may stay idle, waiting for its client, before it is aborted
    /// (NDB: TransactionInactiveTimeout).
    pub transaction_inactive_timeout_ms: u64,
    /// Row locks one partition may track at once.
    pub locks_per_partition_max: usize,
    /// Bytes of deleted keys each partition keeps (with their GCIs) so that a replica
    /// restarting from its own disk learns what was deleted while it was down; a replica
    /// down longer than these cover is copied whole.
    pub deleted_keys_per_partition_bytes_max: usize,
    /// Open transactions one coordinator may hold (NDB: MaxNoOfConcurrentTransactions).
    pub transactions_per_tc_max: usize,
    /// Operations one transaction may have (NDB: MaxNoOfConcurrentOperations, per tx).
    pub operations_per_transaction_max: usize,
    /// Where committed reads run (`docs/datanode.md`, read routing).
    pub read_policy: ReadPolicy,
    /// Scans one coordinator may have open (NDB: MaxNoOfConcurrentScans).
    pub scans_per_tc_max: usize,
    /// Partition scans one `ldm` or `query` instance may have open between batches.
    pub partition_scans_per_executor_max: usize,
    /// How often data nodes send each other heartbeats (NDB: HeartbeatIntervalDbDb).
    pub heartbeat_interval_ms: u64,
    /// Heartbeat intervals a node may stay silent before it is suspected.
    pub heartbeat_misses_max: u32,
    /// The arbitrator (in the management server) that decides which side of a split goes
    /// on; without one, survivors that are no majority stop.
    pub arbitrator: Option<BlockAddress>,
    /// How long a president waits for the arbitrator's answer before the survivors stop
    /// (NDB: ArbitrationTimeout).
    pub arbitration_timeout_ms: u64,
    /// In a first start, how long a node waits for a member it has never heard from before
    /// the others start without it (NDB: StartPartialTimeout); once heard, a member is
    /// suspected after `heartbeat_misses_max` silent intervals.
    pub start_partial_timeout_ms: u64,
    /// The node restarts into a cluster that runs without it: its membership asks to join
    /// instead of starting with every node (NDB: a node restart, not an initial start).
    pub joins_running_cluster: bool,
    /// Rows one batch of a partition's copy to a restarting node carries at most (it also
    /// stops at 64 KiB); the copy sends one batch at a time.
    pub copy_batch_rows_max: u32,
    /// Bytes of REDO log the node keeps, split among its `ldm` instances' logs; 0: no
    /// REDO log (a diskless node, as NDB's Diskless).
    pub redo_log_bytes: u64,
    /// Files each `ldm` instance's log is a ring of (NDB: NoOfFragmentLogFiles), at least 3.
    pub redo_files_per_log: u32,
    /// How often the master closes a global checkpoint: every member's REDO log is made
    /// durable up to it, so a crash of the whole cluster loses at most about this much of
    /// the latest commits (NDB: TimeBetweenGlobalCheckpoints).
    pub global_checkpoint_interval_ms: u64,
    /// How fast each `ldm` instance writes its local checkpoints while its REDO log has
    /// room (four times that once half the log is used, unbounded at three quarters); 0:
    /// unbounded (NDB: MaxDiskWriteSpeed, 20M).
    pub checkpoint_write_bytes_per_sec: u64,
}

/// Operations one transaction may have unless configured: a statement of a couple of
/// million rows works. Each costs the data nodes about 300 bytes besides its row's new
/// version, which DataMemory holds (docs/cluster-config.md).
pub const OPERATIONS_PER_TRANSACTION_MAX_DEFAULT: u32 = 2_000_000;
/// Row locks one partition may track unless configured: a transaction may lock every row
/// it writes in one partition.
pub const LOCKS_PER_PARTITION_MAX_DEFAULT: u32 = 2_000_000;

impl NodeSettings {
    /// The settings as the cluster configuration names them (docs/cluster-config.md),
    /// with the block counts the thread layout gave: `kista_info.config`.
    pub fn named_values(&self) -> Vec<(String, u64)> {
        let values = [
            ("replicas", u64::from(self.replicas)),
            ("partitions_per_node", u64::from(self.partitions_per_node)),
            ("redo_log", self.redo_log_bytes),
            ("heartbeat_interval_ms", self.heartbeat_interval_ms),
            ("heartbeat_misses_max", u64::from(self.heartbeat_misses_max)),
            ("lock_wait_timeout_ms", self.lock_wait_timeout_ms),
            (
                "deadlock_detection_interval_ms",
                self.deadlock_detection_interval_ms,
            ),
            (
                "transaction_inactive_timeout_ms",
                self.transaction_inactive_timeout_ms,
            ),
            (
                "global_checkpoint_interval_ms",
                self.global_checkpoint_interval_ms,
            ),
            (
                "checkpoint_write_bytes_per_sec",
                self.checkpoint_write_bytes_per_sec,
            ),
            (
                "operations_per_transaction_max",
                self.operations_per_transaction_max as u64,
            ),
            (
                "locks_per_partition_max",
                self.locks_per_partition_max as u64,
            ),
            ("start_partial_timeout_ms", self.start_partial_timeout_ms),
            ("arbitration_timeout_ms", self.arbitration_timeout_ms),
            (
                "transactions_per_tc_max",
                self.transactions_per_tc_max as u64,
            ),
            ("scans_per_tc_max", self.scans_per_tc_max as u64),
            ("tc_instances", u64::from(self.tc_instances)),
            ("ldm_instances", u64::from(self.ldm_instances)),
            ("query_instances", u64::from(self.query_instances)),
        ];
        values
            .iter()
            .map(|&(name, value)| (name.to_string(), value))
            .collect()
    }

    /// Defaults that suit a laptop: one of each block, two partitions per table.
    pub fn new(node: NodeId) -> Self {
        Self {
            node,
            tc_instances: 1,
            ldm_instances: 1,
            query_instances: 0,
            node_group: 0,
            peers: Vec::new(),
            replicas: 1,
            partitions_per_node: 2,
            lock_wait_timeout_ms: 1200,
            deadlock_detection_interval_ms: 50,
            transaction_inactive_timeout_ms: 10_000,
            locks_per_partition_max: LOCKS_PER_PARTITION_MAX_DEFAULT as usize,
            deleted_keys_per_partition_bytes_max: 1 << 20,
            transactions_per_tc_max: 65_536,
            operations_per_transaction_max: OPERATIONS_PER_TRANSACTION_MAX_DEFAULT as usize,
            read_policy: ReadPolicy::Adaptive,
            scans_per_tc_max: 500,
            partition_scans_per_executor_max: 4096,
            heartbeat_interval_ms: 1500,
            heartbeat_misses_max: 3,
            arbitrator: None,
            arbitration_timeout_ms: 7500,
            start_partial_timeout_ms: 30_000,
            joins_running_cluster: false,
            copy_batch_rows_max: 512,
            redo_log_bytes: 0,
            redo_files_per_log: 4,
            global_checkpoint_interval_ms: 1000,
            checkpoint_write_bytes_per_sec: 20 << 20,
        }
    }

    /// Whether the node keeps its data on disk (REDO log, checkpoints, dictionary file);
    /// a node without a REDO log keeps nothing there (NDB: Diskless).
    pub fn keeps_data_on_disk(&self) -> bool {
        self.redo_log_bytes > 0
    }

    /// This node as the others see it.
    pub fn shape(&self) -> DataNodeShape {
        DataNodeShape {
            node: self.node,
            node_group: self.node_group,
            tc_instances: self.tc_instances,
            ldm_instances: self.ldm_instances,
        }
    }

    /// The cluster: this node and its peers.
    pub fn cluster_shape(&self) -> Result<ClusterShape, ShapeError> {
        let mut nodes = self.peers.clone();
        nodes.push(self.shape());
        ClusterShape::new(self.replicas, nodes)
    }

    pub fn dict_address(&self) -> BlockAddress {
        self.shape().dict_address()
    }

    pub fn tc_addresses(&self) -> impl Iterator<Item = BlockAddress> {
        self.shape().tc_addresses()
    }

    pub fn ldm_addresses(&self) -> impl Iterator<Item = BlockAddress> {
        self.shape().ldm_addresses()
    }

    pub fn query_addresses(&self) -> impl Iterator<Item = BlockAddress> {
        instances(self.node, QUERY_BLOCK, self.query_instances)
    }
}

/// The signals that start a data node's blocks: the `gcp`'s (it reads the control file),
/// and the membership's heartbeats when the node has peers.
pub fn data_node_start_signals(settings: &NodeSettings) -> Vec<Signal> {
    let mut signals = vec![GlobalCheckpoints::start_signal(settings.node)];
    if !settings.peers.is_empty() {
        signals.push(Membership::start_signal(settings.node));
    }
    signals
}

/// The blocks of a data node, placed on their modules: `dict` on `main.0`, each `tc`,
/// `ldm` and `query` instance on the module instance of the same kind and number, and the
/// file-system block on `io.0` over `files` (the data directory, or the simulation's disk),
/// which a node with a REDO log must have. Fails when the node and its peers do not form a
/// cluster.
pub fn data_node_blocks(
    settings: &NodeSettings,
    memory: Arc<DataMemory>,
    files: Option<Box<dyn FileStorage>>,
    counters: &Arc<NodeCounters>,
) -> Result<Vec<BlockRegistration>, ShapeError> {
    assert!(
        files.is_some() || !settings.keeps_data_on_disk(),
        "a node with a REDO log has files to keep it in"
    );
    let cluster = Arc::new(settings.cluster_shape()?);
    let settings = Arc::new(settings.clone());
    let lease = Arc::new(ReadLease::default());
    let registry = Arc::new(PartitionRegistry::new(lease.clone()));
    let mut blocks = vec![BlockRegistration {
        block: DICT_BLOCK,
        instance: 0,
        host: ModuleInstance {
            module: Module::Main,
            instance: 0,
        },
        implementation: Box::new(Dictionary::new(settings.clone(), cluster.clone())),
    }];
    blocks.push(BlockRegistration {
        block: GCP_BLOCK,
        instance: 0,
        host: ModuleInstance {
            module: Module::Main,
            instance: 0,
        },
        implementation: Box::new(GlobalCheckpoints::new(
            settings.clone(),
            cluster.clone(),
            counters.checkpoints(),
        )),
    });
    blocks.push(BlockRegistration {
        block: MEMBERSHIP_BLOCK,
        instance: 0,
        host: ModuleInstance {
            module: Module::Main,
            instance: 0,
        },
        implementation: Box::new({
            let (settings, cluster) = (settings.clone(), cluster.clone());
            let (memory, counters) = (memory.clone(), counters.clone());
            match settings.joins_running_cluster {
                true => Membership::joining(settings, cluster, memory, counters, lease),
                false => Membership::new(settings, cluster, memory, counters, lease),
            }
        }),
    });
    blocks.push(BlockRegistration {
        block: INFO_BLOCK,
        instance: 0,
        host: ModuleInstance {
            module: Module::Main,
            instance: 0,
        },
        implementation: Box::new(NodeInfoBlock::new(
            counters.clone(),
            memory.clone(),
            settings.clone(),
        )),
    });
    for instance in 0..settings.tc_instances {
        blocks.push(BlockRegistration {
            block: TC_BLOCK,
            instance,
            host: ModuleInstance {
                module: Module::Tc,
                instance,
            },
            implementation: Box::new(TransactionCoordinator::new(
                settings.clone(),
                cluster.clone(),
                instance,
                registry.clone(),
                counters.coordinator(instance),
            )),
        });
    }
    for instance in 0..settings.ldm_instances {
        blocks.push(BlockRegistration {
            block: LDM_BLOCK,
            instance,
            host: ModuleInstance {
                module: Module::Ldm,
                instance,
            },
            implementation: Box::new(LocalDataManager::new(
                settings.clone(),
                cluster.clone(),
                memory.clone(),
                registry.clone(),
                instance,
                counters.data_manager(instance),
            )),
        });
    }
    for instance in 0..settings.query_instances {
        blocks.push(BlockRegistration {
            block: QUERY_BLOCK,
            instance,
            host: ModuleInstance {
                module: Module::Query,
                instance,
            },
            implementation: Box::new(QueryExecutor::new(&settings, registry.clone())),
        });
    }
    if let Some(files) = files {
        blocks.push(BlockRegistration {
            block: FILE_SYSTEM_BLOCK,
            instance: 0,
            host: ModuleInstance {
                module: Module::Io,
                instance: 0,
            },
            implementation: Box::new(FileSystemBlock::new(files)),
        });
    }
    Ok(blocks)
}

#[cfg(test)]
mod named_values_tests {
    use super::*;

    #[test]
    fn every_setting_shown_is_documented_under_its_name() {
        let configuration = include_str!("../../../docs/cluster-config.md");
        let node_settings = include_str!("../../../docs/datanode.md");
        let settings = NodeSettings::new(NodeId(1));
        for (name, _) in settings.named_values() {
            let documented = configuration.contains(&format!("`{name}`"))
                || node_settings.contains(name.as_str())
                || name.ends_with("_instances");
            assert!(
                documented,
                "{name} is in docs/cluster-config.md or docs/datanode.md"
            );
        }
    }
}
