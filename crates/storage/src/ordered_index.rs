//! Ordered indexes: sorted (key, row) entries for range scans in either direction.
//!
//! Keys are encoded so that comparing bytes compares values (see [`encode_ordered`]); an
//! entry is the encoded key followed by the row, so equal keys of different rows coexist.
//! A bound on a prefix of the index columns is the encoded prefix: every key that extends a
//! prefix sorts after it and before the prefix followed by [`PREFIX_END`].

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use crate::memory::{DataMemory, DataMemoryExhausted, MemoryAccount};
use crate::row_store::RowId;
use crate::types::{ColumnType, Value};
use tree::EntryTree;

mod tree;

/// Bytes of a key held in the entry itself; only the bytes past them are allocated.
const KEY_HEAD_BYTES: usize = 16;

/// Sorts after every encoded column (which all start with 0x00 or 0x01).
pub const PREFIX_END: u8 = 0xFF;

/// Appends `value` (checked against `column_type`) so that byte order is value order:
/// NULL first, then values in the order of [`crate::compare::compare_in`] under the column's
/// collation (a text column with one that does not compare bytes is encoded by its weight
/// key, so equal keys under the collation are equal bytes). Every column's
/// encoding is self-delimiting, so a concatenation of columns sorts column by column.
pub fn encode_ordered(column_type: ColumnType, value: &Value, out: &mut Vec<u8>) {
    if value.is_null() {
        out.push(0);
        return;
    }
    out.push(1);
    let signed = matches!(column_type, ColumnType::Int { signed: true, .. });
    match (column_type, value) {
        (_, Value::Int(n)) => out.extend_from_slice(&ordered_int(*n as u64, signed)),
        (_, Value::UInt(n)) => out.extend_from_slice(&ordered_int(*n, signed)),
        (_, Value::Float(x)) => out.extend_from_slice(&ordered_f64(f64::from(*x)).to_be_bytes()),
        (_, Value::Double(x)) => out.extend_from_slice(&ordered_f64(*x).to_be_bytes()),
        (_, Value::Decimal(d)) => {
            out.extend_from_slice(&((d.unscaled as u128) ^ (1 << 127)).to_be_bytes())
        }
        (text_type, Value::Bytes(text)) if !text_type.compares_bytewise() => {
            let start = out.len();
            let collation = text_type.collation();
            collation.weight_key(text_type.unpadded(text), out);
            if out[start..].contains(&0) {
                // Rare (a weight with a zero byte): escape it as any string.
                let weight_key = out.split_off(start);
                push_escaped(&weight_key, out);
            } else {
                out.extend_from_slice(&[0, 0]);
            }
        }
        (_, Value::Bytes(bytes)) => push_escaped(bytes, out),
        (_, Value::Date(date)) => {
            out.extend_from_slice(&((date.to_days() as u32) ^ (1 << 31)).to_be_bytes())
        }
        (_, Value::Time(n) | Value::Timestamp(n)) => {
            out.extend_from_slice(&ordered_int(*n as u64, true))
        }
        (_, Value::DateTime(dt)) => {
            out.extend_from_slice(&ordered_int(dt.to_micros() as u64, true))
        }
        (_, Value::Null) => unreachable!("handled above"),
    }
}

/// An integer's 8 encoded bytes: in a signed column its sign bit flipped (two's complement
/// then sorts as unsigned), big-endian so that byte order is value order.
pub(crate) fn ordered_int(n: u64, signed: bool) -> [u8; 8] {
    let flipped = if signed { n ^ (1 << 63) } else { n };
    flipped.to_be_bytes()
}

/// Maps a double onto u64 in IEEE total order, with -0.0 and 0.0 the same.
fn ordered_f64(x: f64) -> u64 {
    let bits = if x == 0.0 { 0 } else { x.to_bits() };
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// One end of a range: an encoded prefix of the index columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeBound {
    pub prefix: Vec<u8>,
    pub inclusive: bool,
}

/// An entry as the tree keeps it: the encoded key's first [`KEY_HEAD_BYTES`] zero-padded
/// in two big-endian words, the rest on the heap (nothing for a short key), its length,
/// and the row. Its order (head, tail, length, row) is the byte order of the keys, then
/// the rows': where heads differ, the first differing byte decides (a padding zero sorts
/// as a key that ends there, which is a prefix of the other); where they are equal, the
/// tails decide, and a key shorter than the head is a prefix of any longer one with the
/// same head. So most comparisons are one or two integer compares, and an index on a few
/// numeric columns allocates nothing per entry (32 bytes an entry, in one array a node).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    head: [u64; 2],
    /// The key past its head, if any: one word here (a thin pointer), so that an entry is
    /// 32 bytes and a node's entries half a cache line fewer each.
    tail: Option<Box<Box<[u8]>>>,
    len: u32,
    row: RowId,
}

// Half a cache line: a node's 64 entries are 32 lines, where 40-byte entries took 40
// (measured: random inserts into a large index 28% faster).
const _: () = assert!(std::mem::size_of::<Entry>() == 32);

impl Entry {
    fn new(bytes: &[u8], row: RowId) -> Self {
        Self {
            head: [head_word(bytes, 0), head_word(bytes, 8)],
            tail: (bytes.get(KEY_HEAD_BYTES..))
                .filter(|tail| !tail.is_empty())
                .map(|tail| Box::new(tail.into())),
            len: u32::try_from(bytes.len()).expect("index keys are bounded far below 4 GiB"),
            row,
        }
    }

    fn key_len(&self) -> usize {
        self.len as usize
    }

    /// The encoded key, into `out` (cleared first).
    fn key_into<'a>(&self, out: &'a mut Vec<u8>) -> &'a [u8] {
        out.clear();
        out.extend_from_slice(&self.head[0].to_be_bytes());
        out.extend_from_slice(&self.head[1].to_be_bytes());
        out.truncate(self.key_len());
        out.extend_from_slice(self.tail.as_deref().map_or(&[], |tail| tail));
        out
    }
}

/// The big-endian word of `bytes` from `at`, zero-padded past their end: one load when 8
/// bytes are there (a copy of run-time length would call `memcpy`).
#[inline]
fn head_word(bytes: &[u8], at: usize) -> u64 {
    let part = bytes.get(at..).unwrap_or_default();
    match part.first_chunk::<8>() {
        Some(word) => u64::from_be_bytes(*word),
        None => (part.iter().enumerate())
            .fold(0, |word, (i, &byte)| word | u64::from(byte) << (56 - 8 * i)),
    }
}

impl Entry {
    /// The head's two words as one number: comparing them is one wide comparison.
    #[inline]
    fn head_number(&self) -> u128 {
        u128::from(self.head[0]) << 64 | u128::from(self.head[1])
    }

    /// The order of entries whose heads are equal: (tail, length, row).
    #[inline]
    fn cmp_past_head(&self, other: &Self) -> Ordering {
        if self.tail.is_some() || other.tail.is_some() {
            // No tail sorts as an empty one: first.
            let tails = self.tail.cmp(&other.tail);
            if tails != Ordering::Equal {
                return tails;
            }
        }
        let rest = |entry: &Self| u64::from(entry.len) << 32 | u64::from(entry.row.0);
        rest(self).cmp(&rest(other))
    }
}

impl Ord for Entry {
    /// (head, tail, length, row), written out so that keys within the head compare their
    /// words, lengths and rows only.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        match self.head_number().cmp(&other.head_number()) {
            Ordering::Equal => self.cmp_past_head(other),
            unequal => unequal,
        }
    }
}

/// `<` and `<=` written out too: a search in a node asks them, and most entries differ in
/// their heads, which one wide comparison settles.
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }

    #[inline]
    fn lt(&self, other: &Self) -> bool {
        let (mine, theirs) = (self.head_number(), other.head_number());
        mine < theirs || (mine == theirs && self.cmp_past_head(other).is_lt())
    }

    #[inline]
    fn le(&self, other: &Self) -> bool {
        let (mine, theirs) = (self.head_number(), other.head_number());
        mine < theirs || (mine == theirs && self.cmp_past_head(other).is_le())
    }
}

impl tree::TreeEntry for Entry {
    fn heap_bytes(&self) -> usize {
        tail_bytes(self.key_len())
    }
}

/// An index's memory: each entry's tail (its key past the head) as it comes and goes, and
/// the tree's nodes through a reservation kept ahead of what they hold, so the shared
/// `DataMemory` is asked only once in a while.
pub struct OrderedIndex {
    memory: MemoryAccount,
    entries: EntryTree<Entry>,
    /// What `memory` holds for the tree; at least [`EntryTree::heap_bytes`] always.
    tree_reserved_bytes: u64,
}

/// Bytes the tree's reservation may hold past what the next insert may need before
/// removals give them back (about two nodes: a node freed and made again does not ask
/// the shared `DataMemory` twice). It grows only when the tree does, about once a node.
const TREE_RESERVE_SLACK_BYTES: u64 = 8 << 10;

/// Heap bytes of a key's tail: its bytes, rounded up as the allocator does, and the
/// slice's pointer and length (the entry keeps a pointer to them).
fn tail_bytes(key_bytes: usize) -> usize {
    match key_bytes.saturating_sub(KEY_HEAD_BYTES) {
        0 => 0,
        tail => tail.div_ceil(8) * 8 + std::mem::size_of::<Box<[u8]>>(),
    }
}

impl OrderedIndex {
    /// Bytes of `DataMemory` it holds.
    pub fn held_bytes(&self) -> u64 {
        self.memory.held_bytes()
    }

    pub fn new(memory: Arc<DataMemory>) -> Self {
        Self {
            memory: MemoryAccount::new(memory),
            entries: EntryTree::new(),
            tree_reserved_bytes: 0,
        }
    }

    /// Adds the entry; returns false (and charges nothing) if it was already there.
    pub fn insert(&mut self, key: &[u8], row: RowId) -> Result<bool, DataMemoryExhausted> {
        // Charged first and given back when it was there: one walk down the tree. An entry
        // already there needs no memory, so a full DataMemory refuses only a new one.
        if let Err(exhausted) = self.reserve_for_insert(key.len()) {
            return if self.contains(key, row) {
                Ok(false)
            } else {
                Err(exhausted)
            };
        }
        let added = self.entries.insert(Entry::new(key, row));
        if !added && tail_bytes(key.len()) > 0 {
            self.memory.release(tail_bytes(key.len()) as u64);
        }
        debug_assert!(self.entries.heap_bytes() as u64 <= self.tree_reserved_bytes);
        Ok(added)
    }

    /// Reserves the new entry's tail, and tops the tree's reservation up to what any one
    /// insert may leave it holding.
    fn reserve_for_insert(&mut self, key_bytes: usize) -> Result<(), DataMemoryExhausted> {
        let tail = tail_bytes(key_bytes);
        let tree_max = self.entries.heap_bytes_after_insert_max(tail) as u64;
        if tree_max > self.tree_reserved_bytes {
            let more = tree_max - self.tree_reserved_bytes;
            self.memory.reserve(more)?;
            self.tree_reserved_bytes = tree_max;
        }
        match tail {
            0 => Ok(()), // short keys, most: the shared DataMemory is not asked
            _ => self.memory.reserve(tail as u64),
        }
    }

    /// Gives back what the tree's reservation holds past the next insert's need, once
    /// that is more than [`TREE_RESERVE_SLACK_BYTES`]; all of it once the index is empty.
    fn release_spare(&mut self) {
        let keep = match self.entries.len() {
            0 => 0,
            _ => self.entries.heap_bytes_after_insert_max(0) as u64,
        };
        let spare = self.tree_reserved_bytes.saturating_sub(keep);
        if spare > TREE_RESERVE_SLACK_BYTES || (keep == 0 && spare > 0) {
            self.memory.release(self.tree_reserved_bytes - keep);
            self.tree_reserved_bytes = keep;
        }
    }

    pub fn contains(&self, key: &[u8], row: RowId) -> bool {
        self.entries.contains(&Entry::new(key, row))
    }

    pub fn remove(&mut self, key: &[u8], row: RowId) -> bool {
        let removed = self.entries.remove(&Entry::new(key, row));
        if removed {
            self.memory.release(tail_bytes(key.len()) as u64);
            self.release_spare();
        }
        removed
    }

    /// Frees up to `entries` entries of an index being dropped: how many it freed.
    pub fn release_some(&mut self, entries: usize) -> usize {
        let mut released = 0;
        while released < entries {
            let Some(last) = self.entries.last().cloned() else {
                break;
            };
            self.entries.remove(&last);
            self.memory.release(tail_bytes(last.key_len()) as u64);
            released += 1;
        }
        self.release_spare();
        released
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.len() == 0
    }

    /// Visits the entries between the bounds (`None`: unbounded) in key order, or in reverse
    /// for a descending scan, until `visit` returns false. `resume_after` continues a scan
    /// past the last entry it visited, whatever changed in between.
    pub fn scan(
        &self,
        lower: Option<&RangeBound>,
        upper: Option<&RangeBound>,
        descending: bool,
        resume_after: Option<(&[u8], RowId)>,
        mut visit: impl FnMut(&[u8], RowId) -> bool,
    ) {
        let mut low: Bound<Entry> = match lower {
            None => Bound::Unbounded,
            Some(b) if b.inclusive => Bound::Included(Entry::new(&b.prefix, RowId(0))),
            Some(b) => Bound::Included(past_prefix(&b.prefix)),
        };
        let mut high: Bound<Entry> = match upper {
            None => Bound::Unbounded,
            Some(b) if b.inclusive => Bound::Excluded(past_prefix(&b.prefix)),
            Some(b) => Bound::Excluded(Entry::new(&b.prefix, RowId(0))),
        };
        if let Some((key, row)) = resume_after {
            let resumed = Entry::new(key, row);
            let narrows = |bound: &Bound<Entry>, ascending| match bound {
                Bound::Unbounded => true,
                Bound::Included(b) | Bound::Excluded(b) => {
                    if ascending {
                        &resumed >= b
                    } else {
                        &resumed <= b
                    }
                }
            };
            if descending && narrows(&high, false) {
                high = Bound::Excluded(resumed);
            } else if !descending && narrows(&low, true) {
                low = Bound::Excluded(resumed);
            }
        }
        if is_empty(&low, &high) {
            return;
        }
        let mut key_bytes = Vec::new();
        self.entries.visit_range(
            low.as_ref(),
            high.as_ref(),
            descending,
            &mut |entry: &Entry| visit(entry.key_into(&mut key_bytes), entry.row),
        );
    }
}

/// Whether no entry can lie between the bounds.
fn is_empty<T: Ord>(low: &Bound<T>, high: &Bound<T>) -> bool {
    match (low, high) {
        (Bound::Included(l), Bound::Included(h)) => l > h,
        (Bound::Included(l) | Bound::Excluded(l), Bound::Excluded(h))
        | (Bound::Excluded(l), Bound::Included(h)) => l >= h,
        _ => false,
    }
}

/// The first entry past every key that extends `prefix`.
fn past_prefix(prefix: &[u8]) -> Entry {
    let mut end = prefix.to_vec();
    end.push(PREFIX_END);
    Entry::new(&end, RowId(0))
}

/// Appends a string so that byte order is its order: 0x00 is escaped as 0x00 0xFF and the
/// end marked by 0x00 0x00, so a shorter string sorts before every longer one extending it.
pub(crate) fn push_escaped(bytes: &[u8], out: &mut Vec<u8>) {
    for &byte in bytes {
        out.push(byte);
        if byte == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

#[cfg(test)]
mod tests;
