//! Row locks: shared and exclusive, with a first-come wait queue per row.
//!
//! The table only decides who holds and who waits. Waiting itself belongs to the caller: the
//! `ldm` block parks the operation, sets a lock-wait timer, and on expiry calls
//! [`LockTable::cancel`] and aborts the transaction. [`LockTable::blockers`] gives the edges
//! of the wait-for graph that the `ldm` blocks' deadlock detection follows (NDB has none and
//! leaves deadlocks to the timeout). Every call that can let waiters in returns exactly the
//! requests it granted.

use std::collections::hash_map::Entry;
use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::hash::Hash;

/// A transaction, as numbered by its coordinator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TransactionId(pub u64);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LockMode {
    Shared,
    Exclusive,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockOutcome {
    Granted,
    /// Queued behind conflicting holders; granted later by a release or cancel.
    Waiting,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    #[error(
        "too many row locks: {0} are held or waited for (raise the concurrent-operations limit)"
    )]
    TooMany(usize),
    #[error("transaction {0:?} already waits for this row")]
    AlreadyWaiting(TransactionId),
}

#[derive(Default, Debug)]
struct RowLock {
    /// Inline for one holder, the common case: a lock taken costs no allocation.
    holders: SmallVec<[(TransactionId, LockMode); 1]>,
    waiting: VecDeque<(TransactionId, LockMode)>,
}

impl RowLock {
    fn held_by(&self, tx: TransactionId) -> Option<LockMode> {
        self.holders
            .iter()
            .find(|(holder, _)| *holder == tx)
            .map(|&(_, mode)| mode)
    }

    /// Whether `tx` could hold `mode` alongside the current holders.
    fn compatible(&self, tx: TransactionId, mode: LockMode) -> bool {
        let others = self.holders.iter().filter(|(holder, _)| *holder != tx);
        match mode {
            LockMode::Exclusive => others.count() == 0,
            LockMode::Shared => others.into_iter().all(|&(_, m)| m == LockMode::Shared),
        }
    }

    fn hold(&mut self, tx: TransactionId, mode: LockMode) {
        match self.holders.iter_mut().find(|(holder, _)| *holder == tx) {
            Some(held) => held.1 = held.1.max(mode),
            None => self.holders.push((tx, mode)),
        }
    }

    /// Grants waiters from the front of the queue while they fit.
    fn grant_waiters(&mut self, granted: &mut Vec<(TransactionId, LockMode)>) {
        while let Some(&(tx, mode)) = self.waiting.front() {
            if !self.compatible(tx, mode) {
                break;
            }
            self.waiting.pop_front();
            self.hold(tx, mode);
            granted.push((tx, mode));
        }
    }
}

/// The locks of one partition, keyed by row.
pub struct LockTable<K> {
    rows: FxHashMap<K, RowLock>,
    /// Holds plus waits the table may track at once.
    entries_max: usize,
    entries: usize,
}

impl<K: Hash + Eq + Copy> LockTable<K> {
    pub fn new(entries_max: usize) -> Self {
        Self {
            rows: FxHashMap::default(),
            entries_max,
            entries: 0,
        }
    }

    /// Asks for `mode` on `row` for `tx`. A transaction already holding the row at that
    /// mode or stronger gets it at once; an upgrade from shared waits at the front of the
    /// queue (ahead of newcomers, which would otherwise wait for it forever).
    pub fn acquire(
        &mut self,
        row: K,
        tx: TransactionId,
        mode: LockMode,
    ) -> Result<LockOutcome, LockError> {
        // One look into the table: a row no one locks gets its entry only if there is room
        // (an entry in the table always holds or queues someone).
        let full = self.entries >= self.entries_max;
        let lock = match self.rows.entry(row) {
            Entry::Occupied(occupied) => occupied.into_mut(),
            Entry::Vacant(_) if full => return Err(LockError::TooMany(self.entries)),
            Entry::Vacant(vacant) => vacant.insert(RowLock::default()),
        };
        let held = lock.held_by(tx);
        if held.is_some_and(|held| held >= mode) {
            return Ok(LockOutcome::Granted);
        }
        if lock.waiting.iter().any(|(waiter, _)| *waiter == tx) {
            return Err(LockError::AlreadyWaiting(tx));
        }
        let upgrade = held.is_some();
        let grant = lock.compatible(tx, mode) && (lock.waiting.is_empty() || upgrade);
        let adds_entry = !(upgrade && grant);
        if adds_entry && full {
            return Err(LockError::TooMany(self.entries));
        }
        let outcome = if grant {
            lock.hold(tx, mode);
            LockOutcome::Granted
        } else {
            if upgrade {
                lock.waiting.push_front((tx, mode));
            } else {
                lock.waiting.push_back((tx, mode));
            }
            LockOutcome::Waiting
        };
        self.entries += usize::from(adds_entry);
        Ok(outcome)
    }

    /// Releases everything `tx` holds or waits for on `row` (its transaction committed or
    /// aborted) and returns the waiters that got the lock.
    pub fn release(&mut self, row: K, tx: TransactionId) -> Vec<(TransactionId, LockMode)> {
        self.change(row, |lock| {
            lock.holders.retain(|(holder, _)| *holder != tx);
            lock.waiting.retain(|(waiter, _)| *waiter != tx);
        })
    }

    /// Withdraws `tx`'s waiting request on `row` (its lock-wait timeout expired), keeping what
    /// it holds, and returns the waiters that got the lock because of it.
    pub fn cancel(&mut self, row: K, tx: TransactionId) -> Vec<(TransactionId, LockMode)> {
        self.change(row, |lock| lock.waiting.retain(|(waiter, _)| *waiter != tx))
    }

    /// Applies `edit` to a row's lock, grants whichever waiters now fit, and keeps the entry
    /// count exact (a granted upgrade merges its waiting entry into its hold).
    fn change(
        &mut self,
        row: K,
        edit: impl FnOnce(&mut RowLock),
    ) -> Vec<(TransactionId, LockMode)> {
        let mut granted = Vec::new();
        let Entry::Occupied(mut entry) = self.rows.entry(row) else {
            return granted;
        };
        let lock = entry.get_mut();
        let before = lock.holders.len() + lock.waiting.len();
        edit(lock);
        lock.grant_waiters(&mut granted);
        let after = lock.holders.len() + lock.waiting.len();
        self.entries = self.entries + after - before;
        if after == 0 {
            entry.remove();
        }
        granted
    }

    /// Adds to `blockers` the transactions `tx`'s waiting request on `row` waits for: the
    /// holders but `tx`, and the waiters queued ahead of it (first come, first served); none
    /// when `tx` does not wait for `row`. Deadlock detection follows these edges.
    pub fn blockers(&self, row: K, tx: TransactionId, blockers: &mut Vec<TransactionId>) {
        let Some(lock) = self.rows.get(&row) else {
            return;
        };
        let Some(position) = lock.waiting.iter().position(|(waiter, _)| *waiter == tx) else {
            return;
        };
        let holders = lock.holders.iter().map(|&(holder, _)| holder);
        let ahead = lock
            .waiting
            .iter()
            .take(position)
            .map(|&(waiter, _)| waiter);
        blockers.extend(holders.chain(ahead).filter(|&other| other != tx));
    }

    /// Whether `tx` holds `row` (at any mode).
    pub fn holds(&self, row: K, tx: TransactionId) -> bool {
        self.rows
            .get(&row)
            .is_some_and(|lock| lock.held_by(tx).is_some())
    }

    /// Whether anyone holds or waits for `row`.
    pub fn is_locked(&self, row: K) -> bool {
        self.rows.contains_key(&row)
    }

    /// Holds and waits tracked now.
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// Every lock held or waited for: `(row, transaction, mode, granted)` (diagnostics:
    /// `kista_info.locks`).
    pub fn each(&self, mut visit: impl FnMut(K, TransactionId, LockMode, bool)) {
        for (&row, lock) in &self.rows {
            for &(tx, mode) in &lock.holders {
                visit(row, tx, mode, true);
            }
            for &(tx, mode) in &lock.waiting {
                visit(row, tx, mode, false);
            }
        }
    }

    /// What holds `row` now, for tests and diagnostics.
    pub fn holders(&self, row: K) -> Vec<(TransactionId, LockMode)> {
        self.rows
            .get(&row)
            .map(|lock| lock.holders.to_vec())
            .unwrap_or_default()
    }

    pub fn waiting(&self, row: K) -> Vec<(TransactionId, LockMode)> {
        self.rows
            .get(&row)
            .map(|lock| lock.waiting.iter().copied().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use LockMode::{Exclusive, Shared};
    use LockOutcome::{Granted, Waiting};

    const T1: TransactionId = TransactionId(1);
    const T2: TransactionId = TransactionId(2);
    const T3: TransactionId = TransactionId(3);

    #[test]
    fn shared_locks_coexist_and_an_exclusive_one_waits_for_them() {
        let mut locks = LockTable::new(100);
        assert_eq!(locks.acquire(7, T1, Shared), Ok(Granted));
        assert_eq!(locks.acquire(7, T2, Shared), Ok(Granted));
        assert_eq!(locks.acquire(7, T3, Exclusive), Ok(Waiting));
        assert!(locks.release(7, T1).is_empty());
        assert_eq!(locks.release(7, T2), [(T3, Exclusive)]);
        assert_eq!(locks.holders(7), [(T3, Exclusive)]);
        assert!(locks.release(7, T3).is_empty());
        assert_eq!(locks.entries(), 0);
    }

    #[test]
    fn newcomers_queue_behind_waiters_even_when_compatible() {
        let mut locks = LockTable::new(100);
        locks.acquire(1, T1, Shared).unwrap();
        assert_eq!(locks.acquire(1, T2, Exclusive), Ok(Waiting));
        assert_eq!(
            locks.acquire(1, T3, Shared),
            Ok(Waiting),
            "no overtaking the exclusive waiter"
        );
        assert_eq!(locks.release(1, T1), [(T2, Exclusive)]);
        assert_eq!(locks.release(1, T2), [(T3, Shared)]);
    }

    #[test]
    fn an_upgrade_waits_at_the_front_and_merges_into_the_hold() {
        let mut locks = LockTable::new(100);
        locks.acquire(1, T1, Shared).unwrap();
        locks.acquire(1, T2, Shared).unwrap();
        assert_eq!(locks.acquire(1, T3, Exclusive), Ok(Waiting));
        assert_eq!(locks.acquire(1, T1, Exclusive), Ok(Waiting));
        assert_eq!(locks.waiting(1), [(T1, Exclusive), (T3, Exclusive)]);
        assert_eq!(locks.release(1, T2), [(T1, Exclusive)]);
        assert_eq!(locks.holders(1), [(T1, Exclusive)]);
        assert_eq!(locks.entries(), 2, "T1's hold and T3's wait");
        assert_eq!(
            locks.acquire(1, T1, Shared),
            Ok(Granted),
            "held at a stronger mode"
        );
    }

    #[test]
    fn a_sole_shared_holder_upgrades_at_once() {
        let mut locks = LockTable::new(100);
        locks.acquire(1, T1, Shared).unwrap();
        assert_eq!(locks.acquire(1, T1, Exclusive), Ok(Granted));
        assert_eq!(locks.entries(), 1);
    }

    #[test]
    fn a_timed_out_waiter_is_cancelled_and_lets_the_next_one_in() {
        let mut locks = LockTable::new(100);
        locks.acquire(1, T1, Shared).unwrap();
        locks.acquire(1, T2, Exclusive).unwrap();
        assert_eq!(locks.acquire(1, T3, Shared), Ok(Waiting));
        assert_eq!(locks.cancel(1, T2), [(T3, Shared)]);
        assert_eq!(locks.holders(1), [(T1, Shared), (T3, Shared)]);
        assert_eq!(locks.acquire(1, T3, Exclusive), Ok(Waiting));
        assert_eq!(
            locks.acquire(1, T3, Exclusive),
            Err(LockError::AlreadyWaiting(T3))
        );
    }

    #[test]
    fn a_waiter_is_blocked_by_the_other_holders_and_the_waiters_ahead_of_it() {
        let mut locks = LockTable::new(100);
        let mut blockers = Vec::new();
        locks.acquire(1, T1, Shared).unwrap();
        locks.acquire(1, T2, Shared).unwrap();
        locks.acquire(1, T3, Exclusive).unwrap();
        locks.acquire(1, TransactionId(4), Shared).unwrap();
        locks.blockers(1, TransactionId(4), &mut blockers);
        assert_eq!(blockers, [T1, T2, T3]);
        locks.acquire(1, T1, Exclusive).unwrap();
        blockers.clear();
        locks.blockers(1, T1, &mut blockers);
        assert_eq!(
            blockers,
            [T2],
            "an upgrade waits for the other holders only"
        );
        blockers.clear();
        locks.blockers(1, T2, &mut blockers);
        assert!(
            blockers.is_empty(),
            "a holder that does not wait is blocked by nothing"
        );
    }

    #[test]
    fn the_table_refuses_locks_past_its_limit() {
        let mut locks = LockTable::new(2);
        locks.acquire(1, T1, Exclusive).unwrap();
        locks.acquire(2, T1, Exclusive).unwrap();
        assert_eq!(locks.acquire(3, T1, Exclusive), Err(LockError::TooMany(2)));
        assert!(!locks.is_locked(3), "a refused row gets no entry");
        assert_eq!(locks.acquire(1, T2, Shared), Err(LockError::TooMany(2)));
        assert_eq!(locks.holders(1), [(T1, Exclusive)]);
        locks.release(2, T1);
        assert!(!locks.is_locked(2), "its last holder gone, the entry goes");
        assert_eq!(locks.acquire(3, T1, Exclusive), Ok(Granted));
    }

    #[derive(Clone, Debug)]
    enum Step {
        Acquire(u8, u64, bool),
        Release(u8, u64),
        Cancel(u8, u64),
    }

    fn a_step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0..3u8, 1..5u64, any::<bool>()).prop_map(|(r, t, x)| Step::Acquire(r, t, x)),
            (0..3u8, 1..5u64).prop_map(|(r, t)| Step::Release(r, t)),
            (0..3u8, 1..5u64).prop_map(|(r, t)| Step::Cancel(r, t)),
        ]
    }

    proptest! {
        #[test]
        fn holders_never_conflict_and_the_count_stays_exact(steps in proptest::collection::vec(a_step(), 1..200)) {
            let mut locks = LockTable::new(1000);
            for step in steps {
                match step {
                    Step::Acquire(row, tx, exclusive) => {
                        let mode = if exclusive { Exclusive } else { Shared };
                        let _ = locks.acquire(row, TransactionId(tx), mode);
                    }
                    Step::Release(row, tx) => { locks.release(row, TransactionId(tx)); }
                    Step::Cancel(row, tx) => { locks.cancel(row, TransactionId(tx)); }
                }
                let mut counted = 0;
                for row in 0..3u8 {
                    let holders = locks.holders(row);
                    let waiting = locks.waiting(row);
                    counted += holders.len() + waiting.len();
                    let exclusive = holders.iter().filter(|(_, m)| *m == Exclusive).count();
                    prop_assert!(exclusive == 0 || holders.len() == 1, "{holders:?}");
                    for (index, (tx, _)) in holders.iter().enumerate() {
                        prop_assert!(!holders[..index].iter().any(|(t, _)| t == tx));
                    }
                    if let Some(&(tx, mode)) = waiting.first() {
                        let mut others = holders.iter().filter(|(t, _)| *t != tx);
                        let fits = match mode {
                            Exclusive => others.next().is_none(),
                            Shared => others.all(|(_, m)| *m == Shared),
                        };
                        prop_assert!(!fits, "front waiter {:?} {:?} fits beside {:?} yet waits", tx, mode, holders);
                    }
                }
                prop_assert_eq!(counted, locks.entries());
            }
        }
    }
}
