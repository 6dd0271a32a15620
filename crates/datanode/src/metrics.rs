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
    redo_bytes_written: Counter,
    local_checkpoints: Counter,
}

/// Where the node's global checkpoints stand (its `gcp` block sets them).
#[derive(Default)]
pub struct CheckpointGauges {
    pub(crate) current_gci: Gauge,
    pub(crate) restorable_gci: Gauge,
}

/// Every counter of one data node's blocks.
pub struct NodeCounters {
    coordinators: Box<[Arc<CoordinatorCounters>]>,
    data_managers: Box<[Arc<DataManagerCounters>]>,
    checkpoints: Arc<CheckpointGauges>,
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
        }
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
        let coordinators = &self.coordinators;
        let sum = |count: &dyn Fn(&CoordinatorCounters) -> u64| -> f64 {
            coordinators.iter().map(|c| count(c)).sum::<u64>() as f64
        };
        let help = "Key operations clients sent to this node's coordinators, by kind.";
        let mut family = out.family("kista_operations_total", help, Kind::Counter);
        for (index, (_, kind)) in OPERATION_KINDS.iter().enumerate() {
            let value = sum(&|c| c.operations[index].get());
            family.sample(&[("node", node), ("kind", kind)], value);
        }
        let help = "Transactions this node's coordinators ended, by outcome.";
        let mut family = out.family("kista_transactions_total", help, Kind::Counter);
        let committed = sum(&|c| c.committed.get());
        family.sample(&[("node", node), ("outcome", "committed")], committed);
        let aborted = sum(&|c| c.aborted.iter().map(Counter::get).sum());
        family.sample(&[("node", node), ("outcome", "aborted")], aborted);
        let help = "Aborted transactions by error code (0: the client rolled back).";
        let mut family = out.family("kista_transaction_aborts_total", help, Kind::Counter);
        for (index, code) in std::iter::once(0)
            .chain(ErrorCode::ALL.iter().map(|&c| c as u32))
            .enumerate()
        {
            let value = sum(&|c| c.aborted[index].get());
            if value > 0.0 || code == 0 {
                family.sample(&[("node", node), ("code", &code.to_string())], value);
            }
        }
        let help = "Scans clients opened on this node's coordinators.";
        let scans = sum(&|c| c.scans.get());
        out.family("kista_scans_total", help, Kind::Counter)
            .sample(&[("node", node)], scans);
        let help = "Transactions open on this node's coordinators.";
        let open = sum(&|c| c.open_transactions.get());
        out.family("kista_open_transactions", help, Kind::Gauge)
            .sample(&[("node", node)], open);
        let mut latency = HistogramSnapshot::empty();
        for coordinator in coordinators.iter() {
            latency.merge(&coordinator.commit_latency.snapshot());
        }
        let help = "Time from a transaction's first operation at its coordinator to its commit.";
        out.family("kista_commit_duration_seconds", help, Kind::Histogram)
            .histogram(&[("node", node)], &latency);
        self.render_data_managers(node, out);
    }

    /// Every count by name, summed over instances (the `info` block's `Counters` table;
    /// the same numbers as [`NodeCounters::render`] under the Prometheus names without
    /// `kista_`, labels folded into the name).
    pub fn named_values(&self) -> Vec<(String, u64)> {
        let coordinators = &self.coordinators;
        let sum = |count: &dyn Fn(&CoordinatorCounters) -> u64| -> u64 {
            coordinators.iter().map(|c| count(c)).sum()
        };
        let mut values = Vec::new();
        for (index, (_, kind)) in OPERATION_KINDS.iter().enumerate() {
            values.push((
                format!("operations_{kind}"),
                sum(&|c| c.operations[index].get()),
            ));
        }
        values.push(("transactions_committed".into(), sum(&|c| c.committed.get())));
        let aborted = sum(&|c| c.aborted.iter().map(Counter::get).sum());
        values.push(("transactions_aborted".into(), aborted));
        let codes = std::iter::once(0).chain(ErrorCode::ALL.iter().map(|&c| c as u32));
        for (index, code) in codes.enumerate() {
            let count = sum(&|c| c.aborted[index].get());
            if count > 0 {
                values.push((format!("transaction_aborts_{code}"), count));
            }
        }
        values.push(("scans".into(), sum(&|c| c.scans.get())));
        values.push((
            "open_transactions".into(),
            sum(&|c| c.open_transactions.get()),
        ));
        let managers = |read: fn(&DataManagerCounters) -> u64| -> u64 {
            self.data_managers.iter().map(|d| read(d)).sum()
        };
        values.push(("lock_waits".into(), managers(|d| d.lock_waits.get())));
        values.push((
            "redo_written_bytes".into(),
            managers(|d| d.redo_bytes_written.get()),
        ));
        values.push((
            "local_checkpoints".into(),
            managers(|d| d.local_checkpoints.get()),
        ));
        values.push(("current_gci".into(), self.checkpoints.current_gci.get()));
        values.push((
            "restorable_gci".into(),
            self.checkpoints.restorable_gci.get(),
        ));
        values
    }

    fn render_data_managers(&self, node: &str, out: &mut Exposition) {
        type Read = fn(&DataManagerCounters) -> u64;
        let families: [(&'static str, &str, Read); 3] = [
            (
                "kista_lock_waits_total",
                "Operations that waited for a row lock.",
                |d| d.lock_waits.get(),
            ),
            (
                "kista_redo_written_bytes_total",
                "Bytes written to the REDO logs.",
                |d| d.redo_bytes_written.get(),
            ),
            (
                "kista_local_checkpoints_total",
                "Local checkpoints written (one per ldm instance and round).",
                |d| d.local_checkpoints.get(),
            ),
        ];
        for (name, help, read) in families {
            let total = self.data_managers.iter().map(|d| read(d)).sum::<u64>();
            out.family(name, help, Kind::Counter)
                .sample(&[("node", node)], total as f64);
        }
        let gauges = [
            ("kista_current_gci", "The global checkpoint commits are stamped with now.", self.checkpoints.current_gci.get()),
            ("kista_restorable_gci", "The newest global checkpoint every member saved: a restart of the whole cluster restores it.", self.checkpoints.restorable_gci.get()),
        ];
        for (name, help, value) in gauges {
            out.family(name, help, Kind::Gauge)
                .sample(&[("node", node)], value as f64);
        }
    }
}

impl CoordinatorCounters {
    pub(crate) fn operation(&self, kind: OperationKind) {
        let index = match kind {
            OperationKind::Read => 0,
            OperationKind::Insert => 1,
            OperationKind::Update => 2,
            OperationKind::Write => 3,
            OperationKind::Delete => 4,
        };
        debug_assert_eq!(OPERATION_KINDS[index].0, kind);
        self.operations[index].inc_owned();
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
