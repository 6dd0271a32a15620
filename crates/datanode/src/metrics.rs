//! What a data node's blocks count for operators: each `tc` and `ldm` instance has its own
//! counters, written by its thread alone (`_owned` methods: no locked instruction on the
//! hot path) and read by whoever renders them (the process's metrics endpoint).
//!
//! Counting is not behaviour: a block's decisions never read these.

use std::sync::Arc;

use kista_metrics::{Counter, Exposition, Gauge, Histogram, HistogramSnapshot, Kind};

use crate::node::NodeSettings;
use crate::protocol::{ErrorCode, OperationKind};

/// The operation kinds clients send, in `OperationKind`'s order.
const OPERATION_KINDS: [(OperationKind, &str); 5] = [
    (OperationKind::Read, "read"),
    (OperationKind::Insert, "insert"),
    (OperationKind::Update, "update"),
    (OperationKind::Write, "write"),
    (OperationKind::Delete, "delete"),
];

/// One coordinator's counts. Aligned so two instances never share a cache line.
#[repr(align(128))]
#[derive(Default)]
pub struct CoordinatorCounters {
    operations: [Counter; OPERATION_KINDS.len()],
    committed: Counter,
    /// Aborts the client asked for (rollback), then one per [`ErrorCode::ALL`] entry.
    aborted: Box<[Counter]>,
    scans: Counter,
    open_transactions: Gauge,
    commit_latency: Histogram,
}

/// One data manager's counts.
#[repr(align(128))]
#[derive(Default)]
pub struct DataManagerCounters {
    lock_waits: Counter,
    redo_waits: Counter,
    redo_bytes_written: Counter,
    local_checkpoints: Counter,
}

/// Where the node's global checkpoints stand (its `gcp` block sets them).
#[derive(Default)]
pub struct CheckpointGauges {
    pub(crate) current_gci: Gauge,
    pub(crate) restorable_gci: Gauge,
}

/// The space of the file system holding the node's data directory, as its process
/// measures it (blocks read no file systems).
#[derive(Default)]
struct DiskGauges {
    free_bytes: Gauge,
    size_bytes: Gauge,
}

/// Every counter of one data node's blocks.
pub struct NodeCounters {
    coordinators: Box<[Arc<CoordinatorCounters>]>,
    data_managers: Box<[Arc<DataManagerCounters>]>,
    checkpoints: Arc<CheckpointGauges>,
    disk: DiskGauges,
}

impl NodeCounters {
    pub fn new(settings: &NodeSettings) -> Self {
        let coordinators = (0..settings.tc_instances)
            .map(|_| {
                Arc::new(CoordinatorCounters {
                    aborted: (0..=ErrorCode::ALL.len()).map(|_| Counter::new()).collect(),
                    ..CoordinatorCounters::default()
                })
            })
            .collect();
        let data_managers = (0..settings.ldm_instances)
            .map(|_| Arc::default())
            .collect();
        Self {
            coordinators,
            data_managers,
            checkpoints: Arc::default(),
            disk: DiskGauges::default(),
        }
    }

    /// (free bytes, size bytes) of the data directory's file system, as last measured
    /// (0s before the first measurement).
    pub fn measured_disk_space(&self) -> (u64, u64) {
        (self.disk.free_bytes.get(), self.disk.size_bytes.get())
    }

    /// The data directory's file system has `free_bytes` of `size_bytes` free for the
    /// node (measured by its process).
    pub fn disk_space(&self, free_bytes: u64, size_bytes: u64) {
        self.disk.free_bytes.set(free_bytes);
        self.disk.size_bytes.set(size_bytes);
    }

    pub(crate) fn coordinator(&self, instance: u16) -> Arc<CoordinatorCounters> {
        self.coordinators[usize::from(instance)].clone()
    }

    pub(crate) fn data_manager(&self, instance: u16) -> Arc<DataManagerCounters> {
        self.data_managers[usize::from(instance)].clone()
    }

    pub(crate) fn checkpoints(&self) -> Arc<CheckpointGauges> {
        self.checkpoints.clone()
    }

    /// Writes the blocks' metrics, summed over instances, each sample labelled `node`.
    pub fn render(&self, node: &str, out: &mut Exposition) {
        let counts = self.counts();
        for run in counts.chunk_by(|a, b| std::ptr::eq(a.family, b.family)) {
            let family = run[0].family;
            let mut samples = out.family(family.metric, family.help, family.kind);
            for count in run {
                let label = count
                    .label
                    .as_ref()
                    .map(|(name, value)| (*name, value.as_str()));
                let labels: Vec<(&str, &str)> = [("node", node)].into_iter().chain(label).collect();
                samples.sample(&labels, count.value as f64);
            }
        }
        let mut latency = HistogramSnapshot::empty();
        for coordinator in self.coordinators.iter() {
            latency.merge(&coordinator.commit_latency.snapshot());
        }
        let help = "Time from a transaction's first operation at its coordinator to its commit.";
        out.family("kista_commit_duration_seconds", help, Kind::Histogram)
            .histogram(&[("node", node)], &latency);
    }

    /// Every count by name, summed over instances (the `info` block's `Counters` table):
    /// the numbers [`NodeCounters::render`] shows, named by their family's `info_name`
    /// and label value (`operations_read`, `transaction_aborts_266`).
    pub fn named_values(&self) -> Vec<(String, u64)> {
        let name = |count: &Count| match &count.label {
            Some((_, value)) => format!("{}_{value}", count.family.info_name),
            None => count.family.info_name.to_string(),
        };
        self.counts()
            .iter()
            .map(|count| (name(count), count.value))
            .collect()
    }

    /// Every count, summed over the instances, in family order: what both views show.
    fn counts(&self) -> Vec<Count> {
        let coordinators = &self.coordinators;
        let sum = |count: &dyn Fn(&CoordinatorCounters) -> u64| -> u64 {
            coordinators.iter().map(|c| count(c)).sum()
        };
        let managers = |read: fn(&DataManagerCounters) -> u64| -> u64 {
            self.data_managers.iter().map(|d| read(d)).sum()
        };
        let mut counts = Vec::new();
        for (index, (_, kind)) in OPERATION_KINDS.iter().enumerate() {
            let value = sum(&|c| c.operations[index].get());
            counts.push(Count::labelled(
                &OPERATIONS,
                ("kind", kind.to_string()),
                value,
            ));
        }
        let committed = sum(&|c| c.committed.get());
        let aborted = sum(&|c| c.aborted.iter().map(Counter::get).sum());
        for (outcome, value) in [("committed", committed), ("aborted", aborted)] {
            counts.push(Count::labelled(
                &TRANSACTIONS,
                ("outcome", outcome.into()),
                value,
            ));
        }
        let codes = std::iter::once(0).chain(ErrorCode::ALL.iter().map(|&c| c as u32));
        for (index, code) in codes.enumerate() {
            let value = sum(&|c| c.aborted[index].get());
            // A code never seen is left out; a client's rollback (0) always shows.
            if value > 0 || code == 0 {
                counts.push(Count::labelled(&ABORTS, ("code", code.to_string()), value));
            }
        }
        counts.push(Count::of(&SCANS, sum(&|c| c.scans.get())));
        counts.push(Count::of(
            &OPEN_TRANSACTIONS,
            sum(&|c| c.open_transactions.get()),
        ));
        counts.push(Count::of(&LOCK_WAITS, managers(|d| d.lock_waits.get())));
        counts.push(Count::of(&REDO_WAITS, managers(|d| d.redo_waits.get())));
        counts.push(Count::of(
            &REDO_WRITTEN,
            managers(|d| d.redo_bytes_written.get()),
        ));
        counts.push(Count::of(
            &LOCAL_CHECKPOINTS,
            managers(|d| d.local_checkpoints.get()),
        ));
        counts.push(Count::of(&CURRENT_GCI, self.checkpoints.current_gci.get()));
        counts.push(Count::of(
            &RESTORABLE_GCI,
            self.checkpoints.restorable_gci.get(),
        ));
        counts.push(Count::of(&DISK_FREE, self.disk.free_bytes.get()));
        counts.push(Count::of(&DISK_SIZE, self.disk.size_bytes.get()));
        counts
    }
}

/// A metric family the blocks' counts are shown under: its Prometheus name, help and
/// type, and the name the `info` block's `Counters` table gives it.
struct Family {
    metric: &'static str,
    help: &'static str,
    kind: Kind,
    info_name: &'static str,
}

/// One number of a [`Family`], with its label if the family has one.
struct Count {
    family: &'static Family,
    label: Option<(&'static str, String)>,
    value: u64,
}

impl Count {
    fn of(family: &'static Family, value: u64) -> Self {
        Count {
            family,
            label: None,
            value,
        }
    }

    fn labelled(family: &'static Family, label: (&'static str, String), value: u64) -> Self {
        Count {
            family,
            label: Some(label),
            value,
        }
    }
}

static OPERATIONS: Family = Family {
    metric: "kista_operations_total",
    help: "Key operations clients sent to this node's coordinators, by kind.",
    kind: Kind::Counter,
    info_name: "operations",
};
static TRANSACTIONS: Family = Family {
    metric: "kista_transactions_total",
    help: "Transactions this node's coordinators ended, by outcome.",
    kind: Kind::Counter,
    info_name: "transactions",
};
static ABORTS: Family = Family {
    metric: "kista_transaction_aborts_total",
    help: "Aborted transactions by error code (0: the client rolled back).",
    kind: Kind::Counter,
    info_name: "transaction_aborts",
};
static SCANS: Family = Family {
    metric: "kista_scans_total",
    help: "Scans clients opened on this node's coordinators.",
    kind: Kind::Counter,
    info_name: "scans",
};
static OPEN_TRANSACTIONS: Family = Family {
    metric: "kista_open_transactions",
    help: "Transactions open on this node's coordinators.",
    kind: Kind::Gauge,
    info_name: "open_transactions",
};
static LOCK_WAITS: Family = Family {
    metric: "kista_lock_waits_total",
    help: "Operations that waited for a row lock.",
    kind: Kind::Counter,
    info_name: "lock_waits",
};
static REDO_WAITS: Family = Family {
    metric: "kista_redo_waits_total",
    help: "Writes that waited for room in the REDO log (a local checkpoint to free it).",
    kind: Kind::Counter,
    info_name: "redo_waits",
};
static REDO_WRITTEN: Family = Family {
    metric: "kista_redo_written_bytes_total",
    help: "Bytes written to the REDO logs.",
    kind: Kind::Counter,
    info_name: "redo_written_bytes",
};
static LOCAL_CHECKPOINTS: Family = Family {
    metric: "kista_local_checkpoints_total",
    help: "Local checkpoints written (one per ldm instance and round).",
    kind: Kind::Counter,
    info_name: "local_checkpoints",
};
static CURRENT_GCI: Family = Family {
    metric: "kista_current_gci",
    help: "The global checkpoint commits are stamped with now.",
    kind: Kind::Gauge,
    info_name: "current_gci",
};
static RESTORABLE_GCI: Family = Family {
    metric: "kista_restorable_gci",
    help: "The newest global checkpoint every member saved: a restart of the whole cluster restores it.",
    kind: Kind::Gauge,
    info_name: "restorable_gci",
};

static DISK_FREE: Family = Family {
    metric: "kista_data_dir_free_bytes",
    help: "Bytes free for the node on the file system of its data directory (0 without one).",
    kind: Kind::Gauge,
    info_name: "data_dir_free_bytes",
};
static DISK_SIZE: Family = Family {
    metric: "kista_data_dir_size_bytes",
    help: "Size of the file system of the node's data directory (0 without one).",
    kind: Kind::Gauge,
    info_name: "data_dir_size_bytes",
};

impl CoordinatorCounters {
    pub(crate) fn operation(&self, kind: OperationKind) {
        self.operations_of(kind, 1);
    }

    /// `count` operations of one kind (a client's batch).
    pub(crate) fn operations_of(&self, kind: OperationKind, count: u64) {
        let index = match kind {
            OperationKind::Read => 0,
            OperationKind::Insert => 1,
            OperationKind::Update => 2,
            OperationKind::Write => 3,
            OperationKind::Delete => 4,
        };
        debug_assert_eq!(OPERATION_KINDS[index].0, kind);
        self.operations[index].add_owned(count);
    }

    pub(crate) fn committed(&self, duration_ns: Option<u64>) {
        self.committed.inc_owned();
        if let Some(duration_ns) = duration_ns {
            self.commit_latency.observe_us_owned(duration_ns / 1_000);
        }
    }

    /// A transaction aborted, with the error that aborted it (none: its client rolled back).
    pub(crate) fn aborted(&self, code: Option<ErrorCode>) {
        let index = code.map_or(0, |code| {
            1 + ErrorCode::ALL.iter().position(|&c| c == code).unwrap_or(0)
        });
        self.aborted[index].inc_owned();
    }

    pub(crate) fn scan_opened(&self) {
        self.scans.inc_owned();
    }

    pub(crate) fn open_transactions(&self, open: usize) {
        self.open_transactions.set(open as u64);
    }
}

impl DataManagerCounters {
    pub(crate) fn lock_wait(&self) {
        self.lock_waits.inc_owned();
    }

    pub(crate) fn redo_wait(&self) {
        self.redo_waits.inc_owned();
    }

    pub(crate) fn redo_written(&self, bytes: u64) {
        self.redo_bytes_written.add_owned(bytes);
    }

    pub(crate) fn local_checkpoint_written(&self) {
        self.local_checkpoints.inc_owned();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kista_signal::NodeId;

    #[test]
    fn the_blocks_counts_are_rendered_summed_over_instances() {
        let mut settings = NodeSettings::new(NodeId(3));
        settings.tc_instances = 2;
        settings.ldm_instances = 2;
        let counters = NodeCounters::new(&settings);
        let (first, second) = (counters.coordinator(0), counters.coordinator(1));
        first.operation(OperationKind::Insert);
        second.operation(OperationKind::Insert);
        second.operation(OperationKind::Delete);
        first.committed(Some(3_000_000)); // 3 ms
        second.committed(None);
        first.aborted(None);
        second.aborted(Some(ErrorCode::LockWaitTimeout));
        second.aborted(Some(ErrorCode::LockWaitTimeout));
        counters.data_manager(1).lock_wait();
        counters.data_manager(0).redo_wait();
        counters.data_manager(0).redo_written(100);
        counters.data_manager(1).redo_written(28);
        counters.checkpoints().restorable_gci.set(41);
        let mut out = Exposition::default();
        counters.render("3", &mut out);
        let text = out.into_text();
        for line in [
            "kista_operations_total{node=\"3\",kind=\"insert\"} 2\n",
            "kista_operations_total{node=\"3\",kind=\"delete\"} 1\n",
            "kista_transactions_total{node=\"3\",outcome=\"committed\"} 2\n",
            "kista_transactions_total{node=\"3\",outcome=\"aborted\"} 3\n",
            "kista_transaction_aborts_total{node=\"3\",code=\"0\"} 1\n",
            "kista_transaction_aborts_total{node=\"3\",code=\"266\"} 2\n",
            "kista_commit_duration_seconds_bucket{node=\"3\",le=\"0.0025\"} 0\n",
            "kista_commit_duration_seconds_bucket{node=\"3\",le=\"0.005\"} 1\n",
            "kista_commit_duration_seconds_count{node=\"3\"} 1\n",
            "kista_lock_waits_total{node=\"3\"} 1\n",
            "kista_redo_waits_total{node=\"3\"} 1\n",
            "kista_redo_written_bytes_total{node=\"3\"} 128\n",
            "kista_restorable_gci{node=\"3\"} 41\n",
        ] {
            assert!(text.contains(line), "{line} in:\n{text}");
        }
        assert!(
            !text.contains("code=\"4261\""),
            "codes never seen are left out"
        );
    }
}
