//! Where a committed read runs: on the `ldm` that owns the partition, on a `query`
//! instance, or right in the coordinator that received it (the `recv`/`tc` thread).
//!
//! The adaptive policy follows RonDB's: the owning `ldm` is the first choice, since its
//! thread already has the partition in cache and no lock is contended; once its load level
//! passes [`OWNER_LEVEL_PREFERRED_MAX`], the read goes to the least loaded of the query
//! instances and the coordinator itself, if any is less loaded than the owner. Load levels
//! (1 idle .. 5 overloaded) arrive in `LoadReport` signals that the node's monitor sends
//! every [`LOAD_REPORT_INTERVAL_MS`], so the router stays a deterministic function of the
//! signals it has seen. Each forced policy exists for experiments.

use rustc_hash::FxHashMap;
use std::str::FromStr;

use kista_runtime::{Module, ThreadStatsSnapshot};
use kista_signal::{BlockAddress, NodeId};

use crate::protocol::{LDM_BLOCK, QUERY_BLOCK, TC_BLOCK};

/// How often the node's monitor reports load levels to the coordinators.
pub const LOAD_REPORT_INTERVAL_MS: u64 = 100;
/// The owner keeps its reads while its load level is at most this.
pub const OWNER_LEVEL_PREFERRED_MAX: u8 = 2;
/// Queued signals at which a thread counts as overloaded whatever its CPU use.
pub const QUEUE_DEPTH_OVERLOADED: u64 = 512;
/// Executors one load report may list.
pub const LOAD_REPORT_ENTRIES_MAX: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadPolicy {
    /// Always the owning `ldm`.
    Owner,
    /// Always a `query` instance, round robin (the owner when the node has none).
    Query,
    /// Always the coordinator that received the read.
    Receiver,
    /// Decided per read from load levels.
    Adaptive,
}

impl FromStr for ReadPolicy {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "ldm" | "owner" => Ok(ReadPolicy::Owner),
            "query" => Ok(ReadPolicy::Query),
            "receiver" | "tc" => Ok(ReadPolicy::Receiver),
            "adaptive" => Ok(ReadPolicy::Adaptive),
            other => Err(format!(
                "unknown read policy {other:?}: expected ldm, query, receiver or adaptive"
            )),
        }
    }
}

/// Where the router placed a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadPlace {
    /// Send it to this executor (`ldm` or `query`).
    Executor(BlockAddress),
    /// Run it here, in the coordinator.
    Here,
}

pub struct ReadRouter {
    policy: ReadPolicy,
    query_instances: Vec<BlockAddress>,
    next_query: usize,
    /// The last reported load level of each executor; unreported ones count as idle.
    levels: FxHashMap<BlockAddress, u8>,
}

impl ReadRouter {
    pub fn new(policy: ReadPolicy, query_instances: Vec<BlockAddress>) -> Self {
        Self {
            policy,
            query_instances,
            next_query: 0,
            levels: FxHashMap::default(),
        }
    }

    pub fn policy(&self) -> ReadPolicy {
        self.policy
    }

    /// Takes in a load report: (executor, level) pairs.
    pub fn update(&mut self, levels: impl IntoIterator<Item = (BlockAddress, u8)>) {
        for (executor, level) in levels {
            self.levels.insert(executor, level.clamp(1, 5));
        }
    }

    fn level(&self, executor: BlockAddress) -> u8 {
        self.levels.get(&executor).copied().unwrap_or(1)
    }

    fn next_query_instance(&mut self) -> Option<BlockAddress> {
        let count = self.query_instances.len();
        if count == 0 {
            return None;
        }
        let chosen = self.query_instances[self.next_query % count];
        self.next_query = (self.next_query + 1) % count;
        Some(chosen)
    }

    /// Places a committed key read of a partition owned by `owner`, received by `here`.
    /// Only the owner can read a partition of another node.
    pub fn place_read(&mut self, owner: BlockAddress, here: BlockAddress) -> ReadPlace {
        if owner.node() != here.node() {
            return ReadPlace::Executor(owner);
        }
        match self.policy {
            ReadPolicy::Owner => ReadPlace::Executor(owner),
            ReadPolicy::Query => ReadPlace::Executor(self.next_query_instance().unwrap_or(owner)),
            ReadPolicy::Receiver => ReadPlace::Here,
            ReadPolicy::Adaptive => self.place_adaptively(owner, Some(here)),
        }
    }

    /// Places one partition's share of a scan. Scans keep state between batches, so they
    /// run on an executor, never in the coordinator.
    pub fn place_scan(&mut self, owner: BlockAddress, here: BlockAddress) -> BlockAddress {
        if owner.node() != here.node() {
            return owner;
        }
        let place = match self.policy {
            ReadPolicy::Owner | ReadPolicy::Receiver => ReadPlace::Executor(owner),
            ReadPolicy::Query => ReadPlace::Executor(self.next_query_instance().unwrap_or(owner)),
            ReadPolicy::Adaptive => self.place_adaptively(owner, None),
        };
        match place {
            ReadPlace::Executor(executor) => executor,
            ReadPlace::Here => owner,
        }
    }

    fn place_adaptively(&mut self, owner: BlockAddress, here: Option<BlockAddress>) -> ReadPlace {
        let owner_level = self.level(owner);
        if owner_level <= OWNER_LEVEL_PREFERRED_MAX {
            return ReadPlace::Executor(owner);
        }
        // Start the search at the round-robin position so equally loaded query instances
        // share the reads.
        let count = self.query_instances.len();
        let start = self.next_query;
        let mut best = (owner_level, ReadPlace::Executor(owner));
        for offset in 0..count {
            let candidate = self.query_instances[(start + offset) % count];
            let level = self.level(candidate);
            if level < best.0 {
                best = (level, ReadPlace::Executor(candidate));
            }
        }
        if let Some(here) = here {
            if self.level(here) < best.0 {
                best = (self.level(here), ReadPlace::Here);
            }
        }
        if count > 0 {
            self.next_query = (start + 1) % count;
        }
        best.1
    }
}

/// A thread's load level (1 idle .. 5 overloaded) from the share of an interval it spent
/// on the CPU and the signals waiting for it.
pub fn load_level(busy_percent: u64, queue_depth: u64) -> u8 {
    if queue_depth >= QUEUE_DEPTH_OVERLOADED {
        return 5;
    }
    match busy_percent {
        0..30 => 1,
        30..50 => 2,
        50..70 => 3,
        70..85 => 4,
        _ => 5,
    }
}

/// The load level of every executor block of `node`, from two snapshots of the thread
/// statistics `interval_us` apart. Blocks on one thread share its level.
pub fn load_report(
    node: NodeId,
    before: &[ThreadStatsSnapshot],
    now: &[ThreadStatsSnapshot],
    interval_us: u64,
) -> Vec<(BlockAddress, u8)> {
    let mut report = Vec::new();
    for thread in now {
        let cpu_now = thread.cpu_user_us + thread.cpu_system_us;
        let cpu_before = before
            .iter()
            .find(|b| b.thread == thread.thread)
            .map_or(cpu_now, |b| b.cpu_user_us + b.cpu_system_us);
        let busy_percent = cpu_now.saturating_sub(cpu_before) * 100 / interval_us.max(1);
        let level = load_level(busy_percent, thread.queue_depth);
        for module in &thread.modules {
            let block = match module.module {
                Module::Ldm => LDM_BLOCK,
                Module::Query => QUERY_BLOCK,
                Module::Tc => TC_BLOCK,
                _ => continue,
            };
            report.push((BlockAddress::new(node, block, module.instance), level));
        }
    }
    report.truncate(LOAD_REPORT_ENTRIES_MAX);
    report
}

#[cfg(test)]
mod tests;
