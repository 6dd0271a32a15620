//! What an ordered index's tree holds: an entry per (key, row), in the byte order of the
//! keys, then the rows'. Two forms: [`ShortEntry`] (the key and the row in 16 or 20
//! bytes) for an index whose keys are all short (a number, a date or time, or two small
//! ones), and [`Entry`] (a key's head, its length, the row and a pointer to the key past
//! its head: 32 bytes) for any key. The short form is a half or a third smaller: fewer
//! cache lines read and moved a node, which is what an insert into a large index waits
//! for.

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

/// A key of at most [`ShortEntry::KEY_BYTES_MAX`] bytes and its row in `WORDS` 32-bit
/// words: the key's bytes zero-padded, its length in the last byte before the row, then
/// the row; compared word by word, which is (key bytes, length, row): the byte order of
/// the keys (a padding zero sorts as a key that ends there, a prefix of the other), then
/// the rows'. The whole entry of an index whose keys its types bound that short (numbers,
/// dates and times, a few of them): 16 bytes for keys of up to 11 (a `BIGINT` or a
/// `DATETIME`), 20 for up to 15. An insert into an index larger than the cache waits for
/// each cache line of the nodes it reads and moves: at 16 bytes an entry instead of 24,
/// random inserts into four trees of 250,000 entries took 236 ns instead of 350.
///
/// A scan's bound longer than [`ShortEntry::KEY_BYTES_MAX`] keeps that many bytes and
/// the length one more: every key of the tree is shorter, so it sorts against the cut
/// bound as against the whole one (a key the bound's kept bytes start with is a prefix of
/// it; any other differs from it within them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ShortEntry<const WORDS: usize> {
    /// Least significant first (the row, then the key's words from its end), so that the
    /// most significant four are one little-endian number in memory: one load to compare.
    words: [u32; WORDS],
}

const _: () = assert!(std::mem::size_of::<ShortEntry<4>>() == 16);
const _: () = assert!(std::mem::size_of::<ShortEntry<5>>() == 20);

impl<const WORDS: usize> ShortEntry<WORDS> {
    /// Bytes of the key's words: its bytes and, last, its length.
    const KEY_WORDS_BYTES: usize = {
        assert!(
            WORDS >= 2 && WORDS <= 5,
            "the words past the first four: the row alone"
        );
        4 * (WORDS - 1)
    };
    /// The most bytes a key of the tree holds; a longer bound is cut to them.
    pub(super) const KEY_BYTES_MAX: usize = Self::KEY_WORDS_BYTES - 1;
    /// The most significant words, compared as one number (the row after them, if left).
    const NUMBER_WORDS: usize = if WORDS < 4 { WORDS } else { 4 };

    /// The most significant (up to) four words as one number: most comparisons are
    /// settled by it in one wide comparison.
    #[inline]
    fn number(&self) -> u128 {
        let low = WORDS - Self::NUMBER_WORDS;
        let number = (self.words[low..].iter().enumerate()).fold(0u128, |number, (i, &word)| {
            number | u128::from(word) << (32 * i)
        });
        number << (32 * (4 - Self::NUMBER_WORDS))
    }

    #[inline]
    fn order_key(&self) -> (u128, &[u32]) {
        (self.number(), &self.words[..WORDS - Self::NUMBER_WORDS])
    }
}

impl<const WORDS: usize> IndexEntry for ShortEntry<WORDS> {
    fn new(bytes: &[u8], row: RowId) -> Self {
        let held = bytes.len().min(Self::KEY_BYTES_MAX);
        let mut key = [0u8; 16];
        key[..held].copy_from_slice(&bytes[..held]);
        key[Self::KEY_BYTES_MAX] = bytes.len().min(Self::KEY_BYTES_MAX + 1) as u8;
        let mut words = [0u32; WORDS];
        words[0] = row.0;
        let key_words = key[..Self::KEY_WORDS_BYTES].chunks(4);
        for (word, chunk) in words[1..].iter_mut().rev().zip(key_words) {
            *word = u32::from_be_bytes(chunk.try_into().expect("chunks of four"));
        }
        Self { words }
    }

    fn key_len(&self) -> usize {
        (self.words[1] & 0xFF) as usize
    }

    fn row(&self) -> RowId {
        RowId(self.words[0])
    }

    /// The key's bytes, into `out` (cleared first).
    fn key_into<'a>(&self, out: &'a mut Vec<u8>) -> &'a [u8] {
        out.clear();
        for word in self.words[1..].iter().rev() {
            out.extend_from_slice(&word.to_be_bytes());
        }
        out.truncate(self.key_len().min(Self::KEY_BYTES_MAX));
        out
    }
}

impl<const WORDS: usize> Ord for ShortEntry<WORDS> {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        self.order_key().cmp(&other.order_key())
    }
}

impl<const WORDS: usize> PartialOrd for ShortEntry<WORDS> {
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

impl<const WORDS: usize> tree::TreeEntry for ShortEntry<WORDS> {
    fn heap_bytes(&self) -> usize {
        0
    }

    /// The words compared first: entries are ordered by them first.
    fn order_hint(&self) -> u128 {
        self.number()
    }
}

/// A key's first [`KEY_HEAD_BYTES`] zero-padded in two big-endian words, the key's
/// (whole) length and the row: the start of every [`Entry`].
#[derive(Clone, Debug, PartialEq, Eq)]
struct EntryHead {
    head: [u64; 2],
    len: u32,
    row: RowId,
}

impl EntryHead {
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

    /// The key's bytes the head holds, into `out` (cleared first).
    fn key_into(&self, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.head[0].to_be_bytes());
        out.extend_from_slice(&self.head[1].to_be_bytes());
        out.truncate(self.len as usize);
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

/// An entry of any key: its [`EntryHead`] (head, whole length, row) and the key past the
/// head on the heap (nothing for a short key). Its order (head, tail, length, row) is the
/// byte order of the keys, then the rows': where heads are equal the tails decide, and a
/// key shorter than the head is a prefix of any longer one with the same head. So most
/// comparisons are one or two integer compares, and an index on a few numeric columns
/// allocates nothing per entry (32 bytes an entry, in one array a node).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    head: EntryHead,
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
            head: EntryHead::of(bytes, bytes.len(), row),
            tail: (bytes.get(KEY_HEAD_BYTES..))
                .filter(|tail| !tail.is_empty())
                .map(|tail| Box::new(tail.into())),
        }
    }

    fn key_len(&self) -> usize {
        self.head.len as usize
    }

    fn row(&self) -> RowId {
        self.head.row
    }

    fn key_into<'a>(&self, out: &'a mut Vec<u8>) -> &'a [u8] {
        self.head.key_into(out);
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
        self.head.rest().cmp(&other.head.rest())
    }
}

impl Ord for Entry {
    /// (head, tail, length, row), written out so that keys within the head compare their
    /// words, lengths and rows only.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        match self.head.head_number().cmp(&other.head.head_number()) {
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
        let (mine, theirs) = (self.head.head_number(), other.head.head_number());
        mine < theirs || (mine == theirs && self.cmp_past_head(other).is_lt())
    }

    #[inline]
    fn le(&self, other: &Self) -> bool {
        let (mine, theirs) = (self.head.head_number(), other.head.head_number());
        mine < theirs || (mine == theirs && self.cmp_past_head(other).is_le())
    }
}

impl tree::TreeEntry for Entry {
    fn heap_bytes(&self) -> usize {
        super::tail_bytes(self.key_len())
    }

    /// The head: entries are ordered by it first.
    fn order_hint(&self) -> u128 {
        self.head.head_number()
    }
}
