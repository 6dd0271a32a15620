//! Tables a name stopped meaning: replaced by a copying ALTER TABLE's switch
//! (`table_copy.rs`), or dropped and created again. A transaction that used such a table
//! must not go on with what its name means now (it would see both definitions, and its
//! locks would not cover the new table's rows): the session refuses its next statement with
//! 1412 and rolls it back (`Session::refuse_superseded_tables`).
//!
//! A front end learns of a replacement when it makes one, or when it opens a name and finds
//! a table other than the one it had under that name.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// Superseded table ids kept; a session that fell further behind checks them all.
pub const SUPERSEDED_KEPT: usize = 256;
/// Names whose table id is remembered; past it, the memory starts afresh.
const NAMES_REMEMBERED_MAX: usize = 16_384;

#[derive(Default)]
pub struct Superseded {
    /// How many ids were ever recorded: a session compares it with what it saw.
    recorded: AtomicU64,
    recent: Mutex<VecDeque<u32>>,
    ids_by_name: Mutex<HashMap<String, u32>>,
}

impl Superseded {
    /// Notes that cluster name `name` means table `table_id` now: a different table it
    /// meant before is superseded.
    pub fn opened(&self, name: &str, table_id: u32) {
        let mut ids = self
            .ids_by_name
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if ids.len() >= NAMES_REMEMBERED_MAX {
            ids.clear();
        }
        let before = ids.insert(name.to_string(), table_id);
        drop(ids);
        if let Some(before) = before.filter(|&before| before != table_id) {
            self.record(before);
        }
    }

    /// Notes that table `table_id` no longer has its name.
    pub fn record(&self, table_id: u32) {
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        if recent.len() == SUPERSEDED_KEPT {
            recent.pop_front();
        }
        recent.push_back(table_id);
        self.recorded.fetch_add(1, Ordering::Release);
    }

    /// The ids recorded since `seen` (a count this returned before), which moves on: one
    /// atomic load when there are none.
    pub fn since(&self, seen: &mut u64) -> Vec<u32> {
        let recorded = self.recorded.load(Ordering::Acquire);
        if recorded == *seen {
            return Vec::new();
        }
        let recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        let new = usize::try_from(recorded - *seen).unwrap_or(usize::MAX);
        *seen = recorded;
        recent.iter().rev().take(new).copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_that_finds_another_table_supersedes_the_one_it_had() {
        let superseded = Superseded::default();
        let mut seen = 0;
        superseded.opened("db/t", 5);
        superseded.opened("db/t", 5);
        assert!(superseded.since(&mut seen).is_empty());
        superseded.opened("db/t", 9);
        assert_eq!(superseded.since(&mut seen), vec![5]);
        assert!(
            superseded.since(&mut seen).is_empty(),
            "each id is seen once"
        );
    }

    #[test]
    fn a_session_far_behind_checks_every_id_kept() {
        let superseded = Superseded::default();
        let mut seen = 0;
        for id in 0..(SUPERSEDED_KEPT as u32 + 10) {
            superseded.record(id);
        }
        let since = superseded.since(&mut seen);
        assert_eq!(since.len(), SUPERSEDED_KEPT);
        assert!(since.contains(&(SUPERSEDED_KEPT as u32 + 9)) && !since.contains(&9));
    }
}
