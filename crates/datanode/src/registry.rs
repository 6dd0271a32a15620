//! The node's partitions, shared between the `ldm` instance that owns each and the `query`
//! instances that read them, and the node's [`ReadLease`], which every reader checks first.
//!
//! Each partition sits behind its own reader/writer lock, like NDB's fragment mutexes for
//! query threads: the owning `ldm` takes it exclusively for each operation it runs, readers
//! take it shared to copy a committed row out. No read ever sees a half-written row.

use rustc_hash::FxHashMap;
use std::sync::{Arc, RwLock, RwLockReadGuard};

use kista_storage::partition::Partition;

use crate::protocol::ErrorCode;
use crate::read_lease::ReadLease;

/// Takes a partition's shared lock, for one read or one scan batch.
pub fn read_partition(partition: &RwLock<Partition>) -> RwLockReadGuard<'_, Partition> {
    // A poisoned lock means a thread panicked, which stops the node; go on regardless.
    partition
        .read()
        .unwrap_or_else(|poison| poison.into_inner())
}

/// The schema versions of a table whose operations apply: the current one, and those
/// before it back to the last change that was not in place (see `dict`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Versions {
    pub oldest: u32,
    pub current: u32,
}

impl Versions {
    #[inline]
    pub fn accept(&self, table_id: u32, version: u32) -> Result<(), (ErrorCode, String)> {
        if (self.oldest..=self.current).contains(&version) {
            return Ok(());
        }
        let message = format!(
            "table {table_id} is at schema version {} (operations of {} on apply), the \
             request carries {version}",
            self.current, self.oldest
        );
        Err((ErrorCode::SchemaVersion, message))
    }
}

/// A table's partition as readers find it.
#[derive(Clone)]
pub struct SharedPartition {
    pub versions: Versions,
    pub partition: Arc<RwLock<Partition>>,
}

pub struct PartitionRegistry {
    partitions: RwLock<FxHashMap<(u32, u32), SharedPartition>>,
    lease: Arc<ReadLease>,
}

impl PartitionRegistry {
    pub fn new(lease: Arc<ReadLease>) -> Self {
        Self {
            partitions: RwLock::default(),
            lease,
        }
    }

    /// Whether the node has held its read lease at all since it started (see [`ReadLease`]).
    pub fn read_lease_was_held(&self) -> bool {
        self.lease.was_ever_held()
    }

    /// Whether a read that arrived by `now_ns` may be answered here (see [`ReadLease`]).
    #[inline]
    pub fn check_read_lease(&self, now_ns: u64) -> Result<(), (ErrorCode, String)> {
        self.lease.check(now_ns)
    }

    pub fn publish(&self, table_id: u32, partition: u32, shared: SharedPartition) {
        self.write().insert((table_id, partition), shared);
    }

    pub fn withdraw(&self, table_id: u32, partition: u32) {
        self.write().remove(&(table_id, partition));
    }

    pub fn get(&self, table_id: u32, partition: u32) -> Option<SharedPartition> {
        let partitions = self
            .partitions
            .read()
            .unwrap_or_else(|poison| poison.into_inner());
        partitions.get(&(table_id, partition)).cloned()
    }

    /// The partition, if the table accepts `schema_version`; otherwise the error to report.
    pub fn get_at_version(
        &self,
        table_id: u32,
        partition: u32,
        schema_version: u32,
    ) -> Result<SharedPartition, (ErrorCode, String)> {
        self.with_partition_at_version(table_id, partition, schema_version, |shared| shared.clone())
    }

    /// Runs `read` on the partition if the table accepts `schema_version`, holding the
    /// registry's shared lock instead of a clone of the partition's handle (a key read is
    /// short; publishing waits for it); otherwise the error to report.
    pub fn with_partition_at_version<R>(
        &self,
        table_id: u32,
        partition: u32,
        schema_version: u32,
        read: impl FnOnce(&SharedPartition) -> R,
    ) -> Result<R, (ErrorCode, String)> {
        let partitions = self
            .partitions
            .read()
            .unwrap_or_else(|poison| poison.into_inner());
        let shared = partitions.get(&(table_id, partition)).ok_or_else(|| {
            let message = format!("no partition {partition} of table {table_id} here");
            (ErrorCode::NoSuchTable, message)
        })?;
        shared.versions.accept(table_id, schema_version)?;
        Ok(read(shared))
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, FxHashMap<(u32, u32), SharedPartition>> {
        // A panicking thread stops the node; the map itself is never left half-changed.
        self.partitions
            .write()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}
