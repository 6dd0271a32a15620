//! What an ordered index's tree holds: an entry per (key, row), in the byte order of the
//! keys, then the rows'. Two forms: [`ShortEntry`] (a key's head, its length and the row)
//! for an index whose keys are all short (a number, a date or time, or two small ones), and
//! [`Entry`], the same and a pointer to the key past its head, for any key. The short form
//! is a quarter smaller: fewer cache lines read and moved a node, which is what an insert
//! into a large index waits for.

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

/// The most bytes a key of a [`ShortEntry`] tree holds: one fewer than the head, so that a
/// scan's bound past a prefix (the prefix and one byte) is held whole too.
pub(super) const SHORT_KEY_BYTES_MAX: usize = KEY_HEAD_BYTES - 1;

/// A key's first [`KEY_HEAD_BYTES`] zero-padded in two big-endian words, the key's length
/// and the row, in 24 bytes: the whole entry of an index whose keys never exceed
/// [`SHORT_KEY_BYTES_MAX`] bytes, and the start of every [`Entry`]. Ordered by (head,
/// length, row), which for keys the head holds whole is the byte order of the keys, then
/// the rows' (a padding zero sorts as a key that ends there, a prefix of the other). A
/// scan's bound longer than the head is cut to the head (with the head's length): every
/// key of a short tree is shorter, so it sorts against the cut bound as against the whole
/// one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ShortEntry {
    head: [u64; 2],
    len: u32,
    row: RowId,
}

const _: () = assert!(std::mem::size_of::<ShortEntry>() == 24);

impl ShortEntry {
    /// The head of `bytes`, a key `len` bytes long, and `row`.
    #[inline]
    fn of(bytes: &[u8], len: usize, row: RowId) -> Self {
        Self {
            head: [head_word(bytes, 0), head_word(bytes, 8)],
            len: u32::try_from(len).expect("index keys are bounded far below 4 GiB"),
            row,
        }
    }

    /// The head's two words as one number: comparing them is one wide comparison.
    #[inline]
    fn head_number(&self) -> u128 {
        u128::from(self.head[0]) << 64 | u128::from(self.head[1])
    }

    /// (length, row) as one number: how entries with equal heads (and tails) compare.
    #[inline]
    fn rest(&self) -> u64 {
        u64::from(self.len) << 32 | u64::from(self.row.0)
    }

    #[inline]
    fn order_key(&self) -> (u128, u64) {
        (self.head_number(), self.rest())
    }
}

impl IndexEntry for ShortEntry {
    fn new(bytes: &[u8], row: RowId) -> Self {
        Self::of(bytes, bytes.len().min(KEY_HEAD_BYTES), row)
    }

    fn key_len(&self) -> usize {
        self.len as usize
    }

    fn row(&self) -> RowId {
        self.row
    }

    /// The key's bytes the head holds, into `out` (cleared first).
    fn key_into<'a>(&self, out: &'a mut Vec<u8>) -> &'a [u8] {
        out.clear();
        out.extend_from_slice(&self.head[0].to_be_bytes());
        out.extend_from_slice(&self.head[1].to_be_bytes());
        out.truncate(self.key_len());
        out
    }
}

impl Ord for ShortEntry {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        self.order_key().cmp(&other.order_key())
    }
}

impl PartialOrd for ShortEntry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }

    #[inline]
    fn lt(&self, other: &Self) -> bool {
        self.order_key() < other.order_key()
    }

    #[inline]
    fn le(&self, other: &Self) -> bool {
        self.order_key() <= other.order_key()
    }
}

impl tree::TreeEntry for ShortEntry {
    fn heap_bytes(&self) -> usize {
        0
    }

    fn order_hint(&self) -> u128 {
        self.head_number()
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

/// An entry of any key: its [`ShortEntry`] (head, whole length, row) and the key past the
/// head on the heap (nothing for a short key). Its order (head, tail, length, row) is the
/// byte order of the keys, then the rows': where heads are equal the tails decide, and a
/// key shorter than the head is a prefix of any longer one with the same head. So most
/// comparisons are one or two integer compares, and an index on a few numeric columns
/// allocates nothing per entry (32 bytes an entry, in one array a node).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    short: ShortEntry,
    /// The key past its head, if any: one word here (a thin pointer), so that an entry is
    /// 32 bytes and a node's entries half a cache line fewer each.
    tail: Option<Box<Box<[u8]>>>,
}

// Half a cache line: a node's 64 entries are 32 lines, where 40-byte entries took 40
// (measured: random inserts into a large index 28% faster).
const _: () = assert!(std::mem::size_of::<Entry>() == 32);

impl IndexEntry for Entry {
    fn new(bytes: &[u8], row: RowId) -> Self {
        Self {
            short: ShortEntry::of(bytes, bytes.len(), row),
            tail: (bytes.get(KEY_HEAD_BYTES..))
                .filter(|tail| !tail.is_empty())
                .map(|tail| Box::new(tail.into())),
        }
    }

    fn key_len(&self) -> usize {
        self.short.key_len()
    }

    fn row(&self) -> RowId {
        self.short.row
    }

    fn key_into<'a>(&self, out: &'a mut Vec<u8>) -> &'a [u8] {
        self.short.key_into(out);
        out.extend_from_slice(self.tail.as_deref().map_or(&[], |tail| tail));
        out
    }
}

impl Entry {
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
        self.short.rest().cmp(&other.short.rest())
    }
}

impl Ord for Entry {
    /// (head, tail, length, row), written out so that keys within the head compare their
    /// words, lengths and rows only.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        match self.short.head_number().cmp(&other.short.head_number()) {
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
        let (mine, theirs) = (self.short.head_number(), other.short.head_number());
        mine < theirs || (mine == theirs && self.cmp_past_head(other).is_lt())
    }

    #[inline]
    fn le(&self, other: &Self) -> bool {
        let (mine, theirs) = (self.short.head_number(), other.short.head_number());
        mine < theirs || (mine == theirs && self.cmp_past_head(other).is_le())
    }
}

impl tree::TreeEntry for Entry {
    fn heap_bytes(&self) -> usize {
        super::tail_bytes(self.key_len())
    }

    /// The head: entries are ordered by it first.
    fn order_hint(&self) -> u128 {
        self.short.head_number()
    }
}
