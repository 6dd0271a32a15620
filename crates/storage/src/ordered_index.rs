//! Ordered indexes: sorted (key, row) entries for range scans in either direction.
//!
//! Keys are encoded so that comparing bytes compares values (see [`encode_ordered`]); an
//! entry is the encoded key followed by the row, so equal keys of different rows coexist.
//! A bound on a prefix of the index columns is the encoded prefix: every key that extends a
//! prefix sorts after it and before the prefix followed by [`PREFIX_END`].

use std::ops::Bound;
use std::sync::Arc;

use crate::memory::{DataMemory, DataMemoryExhausted, MemoryAccount};
use crate::row_store::RowId;
use crate::types::{ColumnType, Value};
use entry::{Entry, IndexEntry, ShortEntry};
use tree::EntryTree;

mod entry;
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

/// An index's memory: each entry's tail (its key past the head) as it comes and goes, and
/// the tree's nodes through a reservation kept ahead of what they hold, so the shared
/// `DataMemory` is asked only once in a while.
pub struct OrderedIndex {
    memory: MemoryAccount,
    entries: Tree,
    /// What `memory` holds for the tree; at least [`EntryTree::heap_bytes`] always.
    tree_reserved_bytes: u64,
}

/// An index's tree, in the entry form its keys allow.
enum Tree {
    /// Every key at most 11 bytes (the index's column types say so): 16-byte entries.
    Short16(EntryTree<ShortEntry<4>>),
    /// Every key at most 15 bytes: 20-byte entries.
    Short20(EntryTree<ShortEntry<5>>),
    Long(EntryTree<Entry>),
}

/// `$body` with `$tree` the index's tree, whichever its form: the same code for each.
macro_rules! with_tree {
    ($entries:expr, $tree:ident => $body:expr) => {
        match $entries {
            Tree::Short16($tree) => $body,
            Tree::Short20($tree) => $body,
            Tree::Long($tree) => $body,
        }
    };
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

/// The most bytes [`encode_ordered`] writes for a value of any of these types, if their
/// types bound it (text does not).
pub(crate) fn encoded_key_bytes_max(
    column_types: impl IntoIterator<Item = ColumnType>,
) -> Option<usize> {
    column_types.into_iter().try_fold(0, |bytes, column_type| {
        let value_bytes = match column_type {
            ColumnType::Date => 4,
            ColumnType::Int { .. }
            | ColumnType::Float
            | ColumnType::Double
            | ColumnType::Time
            | ColumnType::Timestamp
            | ColumnType::DateTime => 8,
            ColumnType::Decimal { .. } => 16,
            ColumnType::Char { .. }
            | ColumnType::Binary { .. }
            | ColumnType::VarChar { .. }
            | ColumnType::VarBinary { .. }
            | ColumnType::Text { .. }
            | ColumnType::Blob => return None,
        };
        Some(bytes + 1 + value_bytes) // the NULL marker, then the value
    })
}

impl OrderedIndex {
    /// Bytes of `DataMemory` it holds.
    pub fn held_bytes(&self) -> u64 {
        self.memory.held_bytes()
    }

    /// An index for keys of any length.
    pub fn new(memory: Arc<DataMemory>) -> Self {
        Self {
            memory: MemoryAccount::new(memory),
            entries: Tree::Long(EntryTree::new()),
            tree_reserved_bytes: 0,
        }
    }

    /// An index for keys of columns of these types: in the short form where their keys
    /// allow it ([`encoded_key_bytes_max`]).
    pub(crate) fn for_columns(
        memory: Arc<DataMemory>,
        column_types: impl IntoIterator<Item = ColumnType>,
    ) -> Self {
        let mut index = Self::new(memory);
        match encoded_key_bytes_max(column_types) {
            Some(max) if max <= ShortEntry::<4>::KEY_BYTES_MAX => {
                index.entries = Tree::Short16(EntryTree::new())
            }
            Some(max) if max <= ShortEntry::<5>::KEY_BYTES_MAX => {
                index.entries = Tree::Short20(EntryTree::new())
            }
            _ => {}
        }
        index
    }

    /// Whether a key of `key_bytes` can be in the tree as it is (no: a short tree's key
    /// longer than its form holds, which no key of its columns is).
    fn holds_key_of(&self, key_bytes: usize) -> bool {
        match self.entries {
            Tree::Short16(_) => key_bytes <= ShortEntry::<4>::KEY_BYTES_MAX,
            Tree::Short20(_) => key_bytes <= ShortEntry::<5>::KEY_BYTES_MAX,
            Tree::Long(_) => true,
        }
    }

    /// Adds the entry; returns false (and charges nothing) if it was already there.
    pub fn insert(&mut self, key: &[u8], row: RowId) -> Result<bool, DataMemoryExhausted> {
        if !self.holds_key_of(key.len()) {
            self.widen()?;
        }
        // Charged first and given back when it was there: one walk down the tree. An entry
        // already there needs no memory, so a full DataMemory refuses only a new one.
        if let Err(exhausted) = self.reserve_for_insert(key.len()) {
            return if self.contains(key, row) {
                Ok(false)
            } else {
                Err(exhausted)
            };
        }
        let added = with_tree!(&mut self.entries, tree => tree.insert(IndexEntry::new(key, row)));
        if !added && tail_bytes(key.len()) > 0 {
            self.memory.release(tail_bytes(key.len()) as u64);
        }
        debug_assert!(self.heap_bytes() as u64 <= self.tree_reserved_bytes);
        Ok(added)
    }

    /// A short tree given a longer key (its columns' types changed under it, say) becomes
    /// a tree of the general form, with the same entries. On error nothing changed.
    #[cold]
    fn widen(&mut self) -> Result<(), DataMemoryExhausted> {
        let long = match &self.entries {
            Tree::Short16(short) => widened(short),
            Tree::Short20(short) => widened(short),
            Tree::Long(_) => return Ok(()),
        };
        let needed = long.heap_bytes_after_insert_max(0) as u64;
        if needed > self.tree_reserved_bytes {
            self.memory.reserve(needed - self.tree_reserved_bytes)?;
            self.tree_reserved_bytes = needed;
        }
        self.entries = Tree::Long(long);
        Ok(())
    }

    fn heap_bytes(&self) -> usize {
        with_tree!(&self.entries, tree => tree.heap_bytes())
    }

    fn heap_bytes_after_insert_max(&self, entry_heap_bytes: usize) -> usize {
        with_tree!(&self.entries, tree => tree.heap_bytes_after_insert_max(entry_heap_bytes))
    }

    /// Reserves the new entry's tail, and tops the tree's reservation up to what any one
    /// insert may leave it holding.
    fn reserve_for_insert(&mut self, key_bytes: usize) -> Result<(), DataMemoryExhausted> {
        let tail = tail_bytes(key_bytes);
        let tree_max = self.heap_bytes_after_insert_max(tail) as u64;
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
        let keep = match self.len() {
            0 => 0,
            _ => self.heap_bytes_after_insert_max(0) as u64,
        };
        let spare = self.tree_reserved_bytes.saturating_sub(keep);
        if spare > TREE_RESERVE_SLACK_BYTES || (keep == 0 && spare > 0) {
            self.memory.release(self.tree_reserved_bytes - keep);
            self.tree_reserved_bytes = keep;
        }
    }

    pub fn contains(&self, key: &[u8], row: RowId) -> bool {
        self.holds_key_of(key.len())
            && with_tree!(&self.entries, tree => tree.contains(&IndexEntry::new(key, row)))
    }

    pub fn remove(&mut self, key: &[u8], row: RowId) -> bool {
        if !self.holds_key_of(key.len()) {
            return false;
        }
        let removed =
            with_tree!(&mut self.entries, tree => tree.remove(&IndexEntry::new(key, row)));
        if removed {
            self.memory.release(tail_bytes(key.len()) as u64);
            self.release_spare();
        }
        removed
    }

    /// Frees up to `entries` entries of an index being dropped: how many it freed.
    pub fn release_some(&mut self, entries: usize) -> usize {
        let released = with_tree!(&mut self.entries, tree => release_last(tree, entries));
        self.memory.release(released.tail_bytes as u64);
        self.release_spare();
        released.entries
    }

    pub fn len(&self) -> usize {
        with_tree!(&self.entries, tree => tree.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
        let range = ScanRequest {
            lower,
            upper,
            descending,
            resume_after,
        };
        with_tree!(&self.entries, tree => scan_tree(tree, &range, &mut visit));
    }
}

/// What [`release_last`] freed.
struct Released {
    entries: usize,
    tail_bytes: usize,
}

/// A tree of the general form with `short`'s entries.
fn widened<E: IndexEntry>(short: &EntryTree<E>) -> EntryTree<Entry> {
    let mut long = EntryTree::new();
    let mut key = Vec::new();
    short.visit_range(Bound::Unbounded, Bound::Unbounded, false, &mut |entry| {
        long.insert(Entry::new(entry.key_into(&mut key), entry.row()));
        true
    });
    long
}

/// Removes up to `entries` entries from the end of `tree`.
fn release_last<E: IndexEntry>(tree: &mut EntryTree<E>, entries: usize) -> Released {
    let mut released = Released {
        entries: 0,
        tail_bytes: 0,
    };
    while released.entries < entries {
        let Some(last) = tree.last().cloned() else {
            break;
        };
        tree.remove(&last);
        released.tail_bytes += tail_bytes(last.key_len());
        released.entries += 1;
    }
    released
}

/// [`OrderedIndex::scan`]'s arguments but the visitor.
struct ScanRequest<'a> {
    lower: Option<&'a RangeBound>,
    upper: Option<&'a RangeBound>,
    descending: bool,
    resume_after: Option<(&'a [u8], RowId)>,
}

/// [`OrderedIndex::scan`] in a tree of either form.
fn scan_tree<E: IndexEntry>(
    tree: &EntryTree<E>,
    request: &ScanRequest,
    visit: &mut dyn FnMut(&[u8], RowId) -> bool,
) {
    let mut low: Bound<E> = match request.lower {
        None => Bound::Unbounded,
        Some(b) if b.inclusive => Bound::Included(E::new(&b.prefix, RowId(0))),
        Some(b) => Bound::Included(past_prefix(&b.prefix)),
    };
    let mut high: Bound<E> = match request.upper {
        None => Bound::Unbounded,
        Some(b) if b.inclusive => Bound::Excluded(past_prefix(&b.prefix)),
        Some(b) => Bound::Excluded(E::new(&b.prefix, RowId(0))),
    };
    if let Some((key, row)) = request.resume_after {
        let resumed = E::new(key, row);
        let narrows = |bound: &Bound<E>, ascending| match bound {
            Bound::Unbounded => true,
            Bound::Included(b) | Bound::Excluded(b) => {
                if ascending {
                    &resumed >= b
                } else {
                    &resumed <= b
                }
            }
        };
        if request.descending && narrows(&high, false) {
            high = Bound::Excluded(resumed);
        } else if !request.descending && narrows(&low, true) {
            low = Bound::Excluded(resumed);
        }
    }
    if is_empty(&low, &high) {
        return;
    }
    let mut key_bytes = Vec::new();
    tree.visit_range(
        low.as_ref(),
        high.as_ref(),
        request.descending,
        &mut |entry: &E| visit(entry.key_into(&mut key_bytes), entry.row()),
    );
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
fn past_prefix<E: IndexEntry>(prefix: &[u8]) -> E {
    let mut end = prefix.to_vec();
    end.push(PREFIX_END);
    E::new(&end, RowId(0))
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
