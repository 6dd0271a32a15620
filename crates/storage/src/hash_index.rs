//! A hash index from encoded keys to rows: the primary key of a partition, or a unique index.
//!
//! Index memory counts against `DataMemory` like row memory, so a full node refuses new
//! keys with the same clear error as new rows.

// Keys here come from users, so the hash is seeded at random per index (foldhash): an
// attacker cannot precompute colliding keys. SipHash, std's default, resists flooding
// better but costs ~200 instructions per 8-byte key, a tenth of a whole key read; foldhash
// takes ~20. Maps keyed by the node's own ids use the unseeded FxHash.
use std::collections::hash_map::{Entry, HashMap};
use std::sync::Arc;

use foldhash::fast::RandomState;
use smallvec::SmallVec;

use crate::memory::{DataMemory, DataMemoryExhausted, MemoryAccount};
use crate::row_store::RowId;

/// Bytes charged per entry besides the key: the map's slot and the key's allocation.
const ENTRY_OVERHEAD_BYTES: u64 = 48;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    #[error("duplicate key: the index already holds it")]
    Duplicate,
    #[error(transparent)]
    Memory(#[from] DataMemoryExhausted),
}

/// A key as the map holds it: up to 16 bytes in the entry itself (a primary key of a few
/// numeric columns), so adding one allocates nothing; it hashes and compares as its bytes.
type Key = SmallVec<[u8; 16]>;

/// What [`HashIndex::get_or_add`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GotOrAdded {
    /// The key led to this row already.
    Got(RowId),
    /// The key had no entry: it leads to this new row now.
    Added(RowId),
}

pub struct HashIndex {
    memory: MemoryAccount,
    entries: HashMap<Key, RowId, RandomState>,
}

fn charge(key: &[u8]) -> u64 {
    (key.len() as u64).div_ceil(8) * 8 + ENTRY_OVERHEAD_BYTES
}

impl HashIndex {
    /// Bytes of `DataMemory` it holds.
    pub fn held_bytes(&self) -> u64 {
        self.memory.held_bytes()
    }

    pub fn new(memory: Arc<DataMemory>) -> Self {
        Self {
            memory: MemoryAccount::new(memory),
            entries: HashMap::default(),
        }
    }

    /// Adds `key → row`. A key already present is refused and nothing changes.
    pub fn insert(&mut self, key: &[u8], row: RowId) -> Result<(), IndexError> {
        match self.entries.entry(Key::from_slice(key)) {
            Entry::Occupied(_) => Err(IndexError::Duplicate),
            Entry::Vacant(vacant) => {
                self.memory.reserve(charge(key))?;
                vacant.insert(row);
                Ok(())
            }
        }
    }

    /// The row `key` leads to, or, when none does, a new entry for the row `add_row`
    /// makes: one look into the table for both, where a lookup and then an insert hashed
    /// and probed twice. On error (no memory for the entry, or `add_row`'s) nothing
    /// changed.
    pub fn get_or_add<E: From<DataMemoryExhausted>>(
        &mut self,
        key: &[u8],
        add_row: impl FnOnce() -> Result<RowId, E>,
    ) -> Result<GotOrAdded, E> {
        match self.entries.entry(Key::from_slice(key)) {
            Entry::Occupied(occupied) => Ok(GotOrAdded::Got(*occupied.get())),
            Entry::Vacant(vacant) => {
                self.memory.reserve(charge(key))?;
                match add_row() {
                    Ok(row) => Ok(GotOrAdded::Added(*vacant.insert(row))),
                    Err(error) => {
                        self.memory.release(charge(key));
                        Err(error)
                    }
                }
            }
        }
    }

    pub fn get(&self, key: &[u8]) -> Option<RowId> {
        self.entries.get(key).copied()
    }

    /// Removes `key`, returning the row it pointed at.
    pub fn remove(&mut self, key: &[u8]) -> Option<RowId> {
        let row = self.entries.remove(key)?;
        self.memory.release(charge(key));
        Some(row)
    }

    /// Frees up to `entries` entries of an index being dropped: how many it freed.
    pub fn release_some(&mut self, entries: usize) -> usize {
        if self.entries.len() <= entries {
            let released = self.entries.len();
            for (key, _) in self.entries.drain() {
                self.memory.release(charge(&key));
            }
            return released;
        }
        // From the front of the table, whose emptied buckets the next slice passes quickly.
        let keys: Vec<Key> = self.entries.keys().take(entries).cloned().collect();
        for key in &keys {
            if self.entries.remove(key).is_some() {
                self.memory.release(charge(key));
            }
        }
        keys.len()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_or_add_finds_a_key_adds_a_new_one_and_changes_nothing_when_the_row_fails() {
        let memory = Arc::new(DataMemory::new(1 << 20));
        let mut index = HashIndex::new(memory.clone());
        index.insert(b"k1", RowId(1)).unwrap();
        let used = memory.used_bytes();
        let unused = || -> Result<RowId, DataMemoryExhausted> { panic!("no row is made") };
        assert_eq!(
            index.get_or_add(b"k1", unused),
            Ok(GotOrAdded::Got(RowId(1)))
        );
        assert_eq!(memory.used_bytes(), used, "a key found takes no memory");
        let exhausted = DataMemoryExhausted {
            requested_bytes: 1,
            used_bytes: 0,
            limit_bytes: 0,
        };
        assert_eq!(
            index.get_or_add(b"k2", || Err(exhausted.clone())),
            Err(exhausted)
        );
        assert_eq!((index.get(b"k2"), memory.used_bytes()), (None, used));
        let added = index.get_or_add(b"k2", || Ok::<_, DataMemoryExhausted>(RowId(2)));
        assert_eq!(added, Ok(GotOrAdded::Added(RowId(2))));
        assert_eq!(index.get(b"k2"), Some(RowId(2)));
        assert_eq!(memory.used_bytes(), used + charge(b"k2"));
    }

    #[test]
    fn keys_map_to_rows_and_duplicates_are_refused() {
        let memory = Arc::new(DataMemory::new(1 << 20));
        let mut index = HashIndex::new(memory.clone());
        index.insert(b"k1", RowId(1)).unwrap();
        index.insert(b"k2", RowId(2)).unwrap();
        assert_eq!(index.insert(b"k1", RowId(3)), Err(IndexError::Duplicate));
        assert_eq!(index.get(b"k1"), Some(RowId(1)));
        assert_eq!(index.remove(b"k1"), Some(RowId(1)));
        assert_eq!(index.get(b"k1"), None);
        assert_eq!(index.remove(b"k1"), None);
        index.insert(b"k1", RowId(4)).unwrap();
        assert_eq!(index.len(), 2);
        drop(index);
        assert_eq!(memory.used_bytes(), 0);
    }

    #[test]
    fn a_full_data_memory_refuses_new_keys_and_keeps_the_old_ones() {
        let memory = Arc::new(DataMemory::new(2 * (8 + ENTRY_OVERHEAD_BYTES)));
        let mut index = HashIndex::new(memory);
        index.insert(b"a", RowId(1)).unwrap();
        index.insert(b"b", RowId(2)).unwrap();
        assert!(matches!(
            index.insert(b"c", RowId(3)),
            Err(IndexError::Memory(_))
        ));
        assert_eq!(
            (index.get(b"a"), index.get(b"b"), index.get(b"c")),
            (Some(RowId(1)), Some(RowId(2)), None)
        );
        index.remove(b"a");
        index.insert(b"c", RowId(3)).unwrap();
    }
}
