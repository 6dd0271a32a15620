//! Per-thread statistics, kept always on.
//!
//! Each scheduler thread counts in plain locals and publishes them with relaxed stores once
//! per round, so keeping statistics costs a few stores per batch, not per signal. Readers
//! anywhere in the process take snapshots.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::module::{Module, ModuleInstance};

/// Counters one thread publishes.
#[derive(Default)]
pub(crate) struct ThreadCounters {
    pub signals_executed: AtomicU64,
    pub busy_rounds: AtomicU64,
    pub sleeps: AtomicU64,
    pub spin_us: AtomicU64,
    pub cpu_user_us: AtomicU64,
    pub cpu_system_us: AtomicU64,
    /// Signals waiting in the thread's own queue and in its overflow towards full buffers.
    pub local_queue_depth: AtomicU64,
}

impl ThreadCounters {
    pub fn publish(&self, counter: &AtomicU64, value: u64) {
        counter.store(value, Ordering::Relaxed);
    }

    fn read(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// One thread's statistics at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadStatsSnapshot {
    pub thread: usize,
    pub kind: Module,
    pub modules: Vec<ModuleInstance>,
    pub signals_executed: u64,
    /// Scheduler rounds that executed at least one signal.
    pub busy_rounds: u64,
    /// Times the thread went to sleep for lack of work.
    pub sleeps: u64,
    /// Time it spun waiting for work (part of its CPU time).
    pub spin_us: u64,
    pub cpu_user_us: u64,
    pub cpu_system_us: u64,
    /// Signals waiting for this thread right now (all its inbound job buffers plus its own
    /// queue).
    pub queue_depth: u64,
}

impl ThreadStatsSnapshot {
    pub(crate) fn new(
        thread: usize,
        kind: Module,
        modules: Vec<ModuleInstance>,
        counters: &ThreadCounters,
        inbound_depth: u64,
    ) -> Self {
        Self {
            thread,
            kind,
            modules,
            signals_executed: ThreadCounters::read(&counters.signals_executed),
            busy_rounds: ThreadCounters::read(&counters.busy_rounds),
            sleeps: ThreadCounters::read(&counters.sleeps),
            spin_us: ThreadCounters::read(&counters.spin_us),
            cpu_user_us: ThreadCounters::read(&counters.cpu_user_us),
            cpu_system_us: ThreadCounters::read(&counters.cpu_system_us),
            queue_depth: inbound_depth + ThreadCounters::read(&counters.local_queue_depth),
        }
    }

    /// Signals executed per busy round.
    pub fn average_batch(&self) -> f64 {
        if self.busy_rounds == 0 {
            return 0.0;
        }
        self.signals_executed as f64 / self.busy_rounds as f64
    }
}
