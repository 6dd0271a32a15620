//! A partition's primary key index: encoded key → the row holding it.
//!
//! Linear hashing, as NDB's DBACC: the table grows one bucket at a time, splitting the
//! buckets in turn, so no insert rehashes the whole table (a hash map doubling a table of
//! millions of entries holds its thread for milliseconds and writes every entry anew). An
//! entry is 8 bytes, the key's 32-bit hash and the row; the key itself is compared in the
//! row (`has_key`), where a lookup goes next anyway. A bucket is one cache line of seven
//! entries, so a lookup misses once in the index; a full bucket chains to overflow buckets.
//! Like a hash map, the table keeps its buckets when entries are removed.
//!
//! Index memory counts against `DataMemory` like row memory (a segment of buckets at a
//! time), so a full node refuses new keys with the same clear error as new rows.

// Keys here come from users, so the hash is seeded at random per index (foldhash): an
// attacker cannot precompute colliding keys. SipHash, std's default, resists flooding
// better but costs ~200 instructions per 8-byte key, a tenth of a whole key read; foldhash
// takes ~20. Maps keyed by the node's own ids use the unseeded FxHash.
mod buckets;

use std::hash::BuildHasher;
use std::sync::Arc;

use buckets::{Bucket, Buckets, BUCKET_ENTRIES, SEGMENT_BYTES};
use foldhash::fast::RandomState;

use crate::memory::{DataMemory, DataMemoryExhausted, MemoryAccount};
use crate::row_store::RowId;

/// Entries per bucket, on average, beyond which the next bucket is split: 5 of 7 slots, so
/// about one bucket in ten overflows.
const SPLIT_ABOVE_ENTRIES_PER_BUCKET: usize = 5;

/// A key's hash, as [`HashIndex::probe`] found it absent, for [`HashIndex::add`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyHash(u32);

/// What [`HashIndex::probe`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// This row holds the key.
    Found(RowId),
    /// No row holds the key; adding it takes its hash.
    Absent(KeyHash),
}

pub struct HashIndex {
    hasher: RandomState,
    /// Bucket `b` heads the chain of the keys whose hash addresses `b`; there are
    /// `2^level + next_split` of them (linear hashing).
    buckets: Buckets,
    overflow: Buckets,
    free_overflow: Vec<u32>,
    level: u32,
    /// The next bucket to split: the buckets before it are split at this level.
    next_split: u32,
    entries: usize,
    memory: MemoryAccount,
    /// The entries of the bucket being split (kept for its allocation).
    splitting: Vec<(u32, u32)>,
}

impl HashIndex {
    pub fn new(memory: Arc<DataMemory>) -> Self {
        Self {
            hasher: RandomState::default(),
            buckets: Buckets::default(),
            overflow: Buckets::default(),
            free_overflow: Vec::new(),
            level: 0,
            next_split: 0,
            entries: 0,
            memory: MemoryAccount::new(memory),
            splitting: Vec::new(),
        }
    }

    /// Bytes of `DataMemory` it holds.
    pub fn held_bytes(&self) -> u64 {
        self.memory.held_bytes()
    }

    pub fn len(&self) -> usize {
        self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    pub fn hash(&self, key: &[u8]) -> KeyHash {
        let hash = self.hasher.hash_one(key);
        KeyHash((hash ^ (hash >> 32)) as u32)
    }

    /// The row holding `key`: `has_key(row)` tells whether a row whose hash matches holds it.
    #[cfg(test)]
    fn get(&self, key: &[u8], has_key: impl FnMut(RowId) -> bool) -> Option<RowId> {
        match self.probe(key, has_key) {
            Probe::Found(row) => Some(row),
            Probe::Absent(_) => None,
        }
    }

    /// The row holding `key`, or its hash for [`HashIndex::add`].
    #[inline]
    pub fn probe(&self, key: &[u8], has_key: impl FnMut(RowId) -> bool) -> Probe {
        self.probe_hashed(self.hash(key), has_key)
    }

    #[inline]
    fn probe_hashed(&self, hash: KeyHash, mut has_key: impl FnMut(RowId) -> bool) -> Probe {
        if self.buckets.len() > 0 {
            let mut bucket = self.buckets.get(self.address(hash.0));
            loop {
                let mut slots = bucket.slots_with(hash.0);
                while slots != 0 {
                    let row = RowId(bucket.row_at(slots.trailing_zeros() as usize));
                    if has_key(row) {
                        return Probe::Found(row);
                    }
                    slots &= slots - 1;
                }
                match bucket.next() {
                    Some(next) => bucket = self.overflow.get(next),
                    None => break,
                }
            }
        }
        Probe::Absent(hash)
    }

    /// Hints the CPU to load the bucket `key` hashes to, for a probe soon after.
    pub fn prefetch(&self, hash: KeyHash) {
        if self.buckets.len() > 0 {
            self.buckets.prefetch(self.address(hash.0));
        }
    }

    /// Adds the entry of a key [`HashIndex::probe`] found absent, now held by `row`. On
    /// error (no memory for an overflow bucket) nothing changed.
    pub fn add(&mut self, hash: KeyHash, row: RowId) -> Result<(), DataMemoryExhausted> {
        if self.buckets.len() == 0 {
            self.memory.reserve(SEGMENT_BYTES)?;
            self.buckets.push();
        }
        self.add_to_chain(self.address(hash.0), hash.0, row.0)?;
        self.entries += 1;
        if self.entries > SPLIT_ABOVE_ENTRIES_PER_BUCKET * self.buckets.len() as usize {
            // Without memory for a new segment the chains grow longer instead.
            let _ = self.split_next();
        }
        Ok(())
    }

    /// Removes the entry of `key` held by `row`: whether there was one.
    pub fn remove(&mut self, key: &[u8], row: RowId) -> bool {
        let hash = self.hash(key).0;
        if self.buckets.len() == 0 {
            return false;
        }
        let (mut previous, mut at) = (None, Chained::Main(self.address(hash)));
        loop {
            let bucket = self.bucket_mut(at);
            if let Some(position) = bucket.position(hash, row.0) {
                bucket.swap_remove(position);
                if let (Chained::Overflow(emptied), true) = (at, bucket.len() == 0) {
                    self.unlink(previous, emptied);
                }
                self.entries -= 1;
                return true;
            }
            let Some(next) = bucket.next() else {
                return false;
            };
            (previous, at) = (Some(at), Chained::Overflow(next));
        }
    }

    /// Frees up to about `entries` entries of an index being dropped (a bucket's chain goes
    /// whole): how many it freed, at most `entries`. Nothing reads the index meanwhile.
    pub fn release_some(&mut self, entries: usize) -> usize {
        let mut freed = 0;
        while self.buckets.len() > 0 && freed < entries {
            let last = self.buckets.len() - 1;
            freed += self.take_chain(last, |_| {});
            if self.buckets.pop() {
                self.memory.release(SEGMENT_BYTES);
            }
        }
        if self.buckets.len() == 0 {
            let segments = self.overflow.clear() as u64;
            self.memory.release(segments * SEGMENT_BYTES);
            self.free_overflow.clear();
            (self.level, self.next_split) = (0, 0);
        }
        self.entries -= freed;
        freed.min(entries)
    }

    /// The bucket heading the chain of keys with `hash`.
    fn address(&self, hash: u32) -> u32 {
        let low = hash & ((1u32 << self.level) - 1);
        if low < self.next_split {
            (u64::from(hash) & ((1u64 << (self.level + 1)) - 1)) as u32
        } else {
            low
        }
    }

    /// Puts an entry into the first bucket of `head`'s chain with room, chaining a new
    /// overflow bucket when all are full. On error nothing changed.
    fn add_to_chain(&mut self, head: u32, hash: u32, row: u32) -> Result<(), DataMemoryExhausted> {
        let mut at = Chained::Main(head);
        loop {
            let bucket = self.bucket_mut(at);
            if !bucket.is_full() {
                bucket.push(hash, row);
                return Ok(());
            }
            match bucket.next() {
                Some(next) => at = Chained::Overflow(next),
                None => break,
            }
        }
        let added = self.new_overflow()?;
        self.bucket_mut(at).set_next(Some(added));
        self.overflow.get_mut(added).push(hash, row);
        Ok(())
    }

    fn new_overflow(&mut self) -> Result<u32, DataMemoryExhausted> {
        if let Some(bucket) = self.free_overflow.pop() {
            return Ok(bucket);
        }
        if self.overflow.push_needs_segment() {
            self.memory.reserve(SEGMENT_BYTES)?;
        }
        Ok(self.overflow.push())
    }

    /// Takes overflow bucket `emptied` out of its chain.
    fn unlink(&mut self, previous: Option<Chained>, emptied: u32) {
        let previous = previous.expect("an overflow bucket follows another");
        let next = self.overflow.get_mut(emptied).clear();
        self.bucket_mut(previous).set_next(next);
        self.free_overflow.push(emptied);
    }

    /// Splits the next bucket in turn: its entries whose hash has bit `level` set move to
    /// a new bucket at the end. Needs no overflow bucket beyond those it frees.
    fn split_next(&mut self) -> Result<(), DataMemoryExhausted> {
        if self.buckets.push_needs_segment() {
            self.memory.reserve(SEGMENT_BYTES)?;
        }
        let added = self.buckets.push();
        let split = self.next_split;
        let moving_bit = 1u32 << self.level;
        assert_eq!(
            added,
            split + moving_bit,
            "linear hashing appends the split bucket's pair"
        );
        let mut entries = std::mem::take(&mut self.splitting);
        self.take_chain(split, |entry| entries.push(entry));
        self.next_split += 1;
        if self.next_split == moving_bit {
            (self.level, self.next_split) = (self.level + 1, 0);
        }
        for (hash, row) in entries.drain(..) {
            let to = if hash & moving_bit == 0 { split } else { added };
            self.add_to_chain(to, hash, row)
                .expect("a split reuses the overflow buckets it freed");
        }
        self.splitting = entries;
        self.prefetch_next_splits();
        Ok(())
    }

    /// Asks for what the next splits read: the bucket two splits ahead and the first
    /// overflow bucket of the next one's chain (whose number that bucket, asked for by the
    /// split before, now gives). Splits walk the buckets in order, a few inserts apart, and
    /// the load's random accesses in between push them out of the cache: a split's reads
    /// waited for memory, half of `add`'s time in a load (perf annotate).
    fn prefetch_next_splits(&self) {
        let next = self.next_split;
        if let Some(overflow) = self.buckets.get(next).next() {
            self.overflow.prefetch(overflow);
        }
        if next + 1 < 1 << self.level {
            self.buckets.prefetch(next + 1);
        }
    }

    /// Empties bucket `head` and frees its overflow chain, handing each entry to `each`:
    /// how many there were.
    fn take_chain(&mut self, head: u32, mut each: impl FnMut((u32, u32))) -> usize {
        let mut taken = 0;
        let mut bucket = self.buckets.get_mut(head);
        loop {
            bucket.entries().for_each(&mut each);
            taken += bucket.len();
            let Some(next) = bucket.clear() else {
                return taken;
            };
            self.free_overflow.push(next);
            bucket = self.overflow.get_mut(next);
        }
    }

    fn bucket_mut(&mut self, at: Chained) -> &mut Bucket {
        match at {
            Chained::Main(bucket) => self.buckets.get_mut(bucket),
            Chained::Overflow(bucket) => self.overflow.get_mut(bucket),
        }
    }
}

/// A bucket of a chain: its head, or an overflow bucket.
#[derive(Clone, Copy)]
enum Chained {
    Main(u32),
    Overflow(u32),
}

const _: () = assert!(BUCKET_ENTRIES > SPLIT_ABOVE_ENTRIES_PER_BUCKET);

#[cfg(test)]
mod tests;
