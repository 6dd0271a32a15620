//! What an ordered index's tree holds: an entry per (key, row), in the byte order of the
//! keys, then the rows'. Two forms: [`Entry`] for any key, and [`ShortEntry`] for an index
//! whose keys are all short (a number, a date or time, or two small ones), a quarter
//! smaller: fewer cache lines read and moved a node, which is what an insert into a large
//! index waits for.

use std::cmp::Ordering;

use super::{tree, KEY_HEAD_BYTES};
use crate::row_store::RowId;

/// An entry of either form, as [`super::OrderedIndex`] makes and reads it.
pub(super) trait IndexEntry: tree::TreeEntry {
    /// The entry of `bytes` (an encoded key, or a scan's bound) and `row`.
    fn new(bytes: &[u8], row: RowId) -> Self;
    fn key_len(&self) -> usize;
    fn row(&self) -> RowId;
    /// The encoded key, into `out` (cleared first).
    fn key_into<'a>(&self, out: &'a mut Vec<u8>) -> &'a [u8];
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
pub(super) struct Entry {
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

impl IndexEntry for Entry {
    fn new(bytes: &[u8], row: RowId) -> Self {
        Self {
            head: head_of(bytes),
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

    fn row(&self) -> RowId {
        self.row
    }

    fn key_into<'a>(&self, out: &'a mut Vec<u8>) -> &'a [u8] {
        head_into(self.head, self.key_len(), out);
        out.extend_from_slice(self.tail.as_deref().map_or(&[], |tail| tail));
        out
    }
}

/// A key's first [`KEY_HEAD_BYTES`] as two big-endian words, zero-padded.
#[inline]
fn head_of(bytes: &[u8]) -> [u64; 2] {
    [head_word(bytes, 0), head_word(bytes, 8)]
}

/// The head's two words as one number: comparing them is one wide comparison.
#[inline]
fn head_number(head: [u64; 2]) -> u128 {
    u128::from(head[0]) << 64 | u128::from(head[1])
}

/// The key's bytes the head holds (`len` of them at most), into `out` (cleared first).
fn head_into(head: [u64; 2], len: usize, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&head[0].to_be_bytes());
    out.extend_from_slice(&head[1].to_be_bytes());
    out.truncate(len);
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
    #[inline]
    fn head_number(&self) -> u128 {
        head_number(self.head)
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
        super::tail_bytes(self.key_len())
    }
}

/// The most bytes a key of a [`ShortEntry`] tree holds: one fewer than the head, so that a
/// scan's bound past a prefix (the prefix and one byte) is held whole too.
pub(super) const SHORT_KEY_BYTES_MAX: usize = KEY_HEAD_BYTES - 1;

/// An entry of an index whose keys never exceed [`SHORT_KEY_BYTES_MAX`] bytes: the head, the
/// key's length and the row, in 24 bytes (an [`Entry`] is 32). Ordered as an [`Entry`] of
/// the same key and row is. A scan's bound longer than the head is cut to the head (with
/// the head's length): every key of the tree is shorter, so it sorts against the cut bound
/// as against the whole one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ShortEntry {
    head: [u64; 2],
    len: u32,
    row: RowId,
}

const _: () = assert!(std::mem::size_of::<ShortEntry>() == 24);

impl ShortEntry {
    /// (length, row) as one number: how entries with equal heads compare.
    #[inline]
    fn rest(&self) -> u64 {
        u64::from(self.len) << 32 | u64::from(self.row.0)
    }
}

impl IndexEntry for ShortEntry {
    fn new(bytes: &[u8], row: RowId) -> Self {
        Self {
            head: head_of(bytes),
            len: bytes.len().min(KEY_HEAD_BYTES) as u32,
            row,
        }
    }

    fn key_len(&self) -> usize {
        self.len as usize
    }

    fn row(&self) -> RowId {
        self.row
    }

    fn key_into<'a>(&self, out: &'a mut Vec<u8>) -> &'a [u8] {
        head_into(self.head, self.key_len(), out);
        out
    }
}

impl Ord for ShortEntry {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        (head_number(self.head), self.rest()).cmp(&(head_number(other.head), other.rest()))
    }
}

impl PartialOrd for ShortEntry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }

    #[inline]
    fn lt(&self, other: &Self) -> bool {
        (head_number(self.head), self.rest()) < (head_number(other.head), other.rest())
    }

    #[inline]
    fn le(&self, other: &Self) -> bool {
        (head_number(self.head), self.rest()) <= (head_number(other.head), other.rest())
    }
}

impl tree::TreeEntry for ShortEntry {
    fn heap_bytes(&self) -> usize {
        0
    }
}
