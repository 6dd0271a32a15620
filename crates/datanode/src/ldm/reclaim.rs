//! The rows of a dropped table freed a slice at a time between the `ldm`'s other signals,
//! as ordered indexes are built (`index_build.rs`): freeing a million rows and their
//! index entries in one go held the thread for two seconds, which every transaction
//! reaching this `ldm` waited for (a copying ALTER drops the table it copied).
//!
//! A dropped table's partitions leave the table map at once (nothing reaches them any
//! more) and wait here; their memory returns to DataMemory as they are freed.

use std::sync::{Arc, RwLock};

use kista_runtime::Context;
use kista_storage::partition::Partition;

use super::{lock_partition, LocalDataManager};
use crate::protocol::*;

/// Rows and index entries one slice frees at most: well under a millisecond.
pub(super) const RECLAIM_SLICE_ENTRIES: usize = 4096;

impl LocalDataManager {
    /// Frees `partitions` of a dropped table from now on, a slice per signal.
    pub(super) fn reclaim(
        &mut self,
        ctx: &mut Context,
        partitions: impl IntoIterator<Item = Arc<RwLock<Partition>>>,
    ) {
        let idle = self.reclaiming.is_empty();
        self.reclaiming.extend(partitions);
        if idle && !self.reclaiming.is_empty() {
            ctx.send_typed(ctx.address(), &ReclaimSlice {});
        }
    }

    /// One slice of the next partition waiting; the next slice follows as a signal of its
    /// own, after what is queued.
    pub(super) fn reclaim_slice(&mut self, ctx: &mut Context) {
        let Some(partition) = self.reclaiming.last() else {
            return;
        };
        if lock_partition(partition).release_some(RECLAIM_SLICE_ENTRIES) {
            self.reclaiming.pop();
        }
        if !self.reclaiming.is_empty() {
            ctx.send_typed(ctx.address(), &ReclaimSlice {});
        }
    }
}
