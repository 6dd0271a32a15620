//! What changed in a partition since a global checkpoint: what a node restarted from its
//! own disk copies from a live replica instead of every row (NDB keeps a GCI in every row
//! for the same end).
//!
//! **Rows** carry the GCI of the commit that last wrote them (a restored or copied row,
//! the GCI its source gave). A row whose GCI is at most g is as it was at g.
//!
//! **Deletes** leave no row to carry a GCI, so the partition keeps the keys it deleted,
//! with their GCIs, within a byte budget ([`PartitionLimits::deleted_keys_bytes_max`]).
//! When the budget is spent the oldest keys go, and the partition knows every delete only
//! from a later GCI on ([`Partition::deletes_known_from`]): a replica restored to an
//! earlier GCI cannot learn its deletes from here and is copied whole.
//!
//! [`PartitionLimits::deleted_keys_bytes_max`]: super::PartitionLimits

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::{indexes, Partition, RowState};
use crate::row_store::RowId;

/// What a kept deleted key costs beyond its bytes (its box, its GCI, the queue's slot).
const DELETED_KEY_OVERHEAD_BYTES: usize = 32;

/// A partition's deleted keys, oldest first.
pub(super) struct DeletedKeys {
    keys: VecDeque<(Box<[u8]>, u64)>,
    bytes: usize,
    bytes_max: usize,
    /// Every delete of this GCI or later is kept.
    known_from_gci: u64,
}

impl DeletedKeys {
    pub fn new(bytes_max: usize) -> Self {
        Self {
            keys: VecDeque::new(),
            bytes: 0,
            bytes_max,
            known_from_gci: 0,
        }
    }

    fn push(&mut self, key: &[u8], gci: u64) {
        if gci < self.known_from_gci {
            return;
        }
        self.keys.push_back((key.into(), gci));
        self.bytes += key.len() + DELETED_KEY_OVERHEAD_BYTES;
        while self.bytes > self.bytes_max {
            let Some((oldest, oldest_gci)) = self.keys.pop_front() else {
                break;
            };
            self.bytes -= oldest.len() + DELETED_KEY_OVERHEAD_BYTES;
            // Keys arrive in about GCI order, not exactly (a copy's come in the copy's
            // order): a key dropped of GCI n leaves deletes known from n + 1 only.
            self.known_from_gci = self.known_from_gci.max(oldest_gci + 1);
        }
    }

    fn known_from(&mut self, gci: u64) {
        self.known_from_gci = gci;
        self.keys.retain(|(_, deleted)| *deleted >= gci);
        self.bytes = self
            .keys
            .iter()
            .map(|(key, _)| key.len() + DELETED_KEY_OVERHEAD_BYTES)
            .sum();
    }
}

impl Partition {
    /// The GCI of the commit that last wrote the committed version at `anchor`.
    pub fn committed_gci(&self, anchor: RowId) -> u64 {
        self.gcis.get(anchor.0 as usize).copied().unwrap_or(0)
    }

    /// Visits committed rows in storage order with the GCI that last wrote them, as
    /// (anchor, fixed part, variable part, GCI), at most `rows_max`; returns where to
    /// resume, or `None` when no row is left.
    pub fn scan_with_gci(
        &self,
        resume_after: Option<RowId>,
        rows_max: usize,
        mut visit: impl FnMut(RowId, &[u8], &[u8], u64),
    ) -> Option<RowId> {
        let first = resume_after.map_or(RowId(0), |row| RowId(row.0 + 1));
        let mut visited = 0;
        for row in self.rows.row_ids_from(first) {
            if let Some(version) = self.committed_version(row) {
                let (fixed, var) = self.rows.get(version);
                visit(row, fixed, var, self.committed_gci(row));
                visited += 1;
                if visited >= rows_max {
                    return Some(row);
                }
            }
        }
        None
    }

    /// From which GCI on every delete here is known (0: since the partition was created).
    pub fn deletes_known_from(&self) -> u64 {
        self.deleted.known_from_gci
    }

    /// Deletes are known from `gci` on: what a restore or a copy gave the partition,
    /// whose earlier deletes it never saw. Keys deleted before `gci` are forgotten.
    pub fn set_deletes_known_from(&mut self, gci: u64) {
        self.deleted.known_from(gci);
    }

    /// A delete of GCI `gci` whose row this replica did not hold (a copy brings it).
    pub fn note_deleted(&mut self, key: &[u8], gci: u64) {
        self.deleted.push(key, gci);
    }

    /// Every key deleted in a GCI after `gci`, once, with the latest GCI that deleted it;
    /// `None` when deletes are not known that far back.
    pub fn deleted_after(&self, gci: u64) -> Option<Vec<(Vec<u8>, u64)>> {
        if self.deleted.known_from_gci > gci + 1 {
            return None;
        }
        let mut latest: FxHashMap<&[u8], u64> = FxHashMap::default();
        for (key, deleted) in self.deleted.keys.iter().filter(|(_, d)| *d > gci) {
            let entry = latest.entry(key).or_insert(*deleted);
            *entry = (*entry).max(*deleted);
        }
        Some(latest.into_iter().map(|(k, g)| (k.to_vec(), g)).collect())
    }

    /// Drops every committed row no transaction holds or waits for, and every deleted key:
    /// a replica about to be copied whole from a peer, whose rows the copy brings again.
    /// A row a transaction uses stays; that transaction holds it on the peer too, so the
    /// copy brings it once the transaction ended.
    pub fn clear_unlocked(&mut self) {
        let anchors: Vec<RowId> = self.rows.row_ids_from(RowId(0)).collect();
        for anchor in anchors {
            if self.state(anchor) != RowState::Committed || self.locks.is_locked(anchor) {
                continue;
            }
            self.with_scratch_keys(|this, [keys, ..]| {
                let keys = this.version_keys(Some(anchor), keys);
                indexes::remove_entries(this, anchor, keys, &[]);
            });
            self.set_state(anchor, RowState::Empty);
            self.free_if_unused(anchor);
        }
        self.deleted.known_from(u64::MAX);
    }

    /// Keeps the GCI of a commit: the written row's, or the deleted key's.
    pub(super) fn committed_at(&mut self, anchor: RowId, gci: u64) {
        if self.state(anchor) == RowState::Committed {
            let index = anchor.0 as usize;
            if index >= self.gcis.len() {
                self.gcis.resize(index + 1, 0);
            }
            self.gcis[index] = gci;
        } else {
            let key = self.primary_key_of(anchor);
            self.deleted.push(&key, gci);
            self.key = key;
        }
    }
}
