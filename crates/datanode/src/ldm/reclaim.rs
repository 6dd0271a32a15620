//! The rows of a dropped table freed a slice at a time, a slice each millisecond, between
//! the `ldm`'s other signals: freeing a million rows and their index entries in one go
//! held the thread for two seconds, which every transaction reaching this `ldm` waited
//! for (a copying ALTER drops the table it copied); freed slice after slice without a
//! pause, they took the load down to a tenth for three seconds. Memory is not needed
//! back at once: what the slices free is what the next inserts take.
//!
//! A dropped table's partitions leave the table map at once (nothing reaches them any
//! more) and wait here; their memory returns to DataMemory as they are freed.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use kista_runtime::Context;
use kista_signal::TypedSignal;
use kista_storage::partition::Partition;

use super::{lock_partition, LocalDataManager};
use crate::protocol::*;

/// Rows and index entries one slice frees at most: about a tenth of a millisecond.
pub(super) const RECLAIM_SLICE_ENTRIES: usize = 1024;
/// The pause between slices: a dropped table of a million rows (about five million
/// entries per replica) is freed in about five seconds per replica.
pub(super) const RECLAIM_PAUSE: Duration = Duration::from_millis(1);

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
    /// own, after a pause.
    pub(super) fn reclaim_slice(&mut self, ctx: &mut Context) {
        let Some(partition) = self.reclaiming.last() else {
            return;
        };
        if lock_partition(partition).release_some(RECLAIM_SLICE_ENTRIES) {
            self.reclaiming.pop();
        }
        if !self.reclaiming.is_empty() {
            let next = ReclaimSlice {}.to_signal(ctx.address(), ctx.address());
            ctx.send_delayed(next, RECLAIM_PAUSE);
        }
    }
}
