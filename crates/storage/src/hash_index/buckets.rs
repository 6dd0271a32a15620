//! The hash index's buckets: one cache line of (hash, row) entries each, held in segments
//! so that growing the table by a bucket never moves the others.

/// Entries a bucket holds: seven (hash, row) pairs and the chain link fill a cache line.
pub(super) const BUCKET_ENTRIES: usize = 7;

/// Buckets allocated (and charged to `DataMemory`) at a time: 4 KiB. An empty index holds
/// none; a small one holds one segment.
const SEGMENT_BUCKETS: usize = 64;

/// Bytes of one segment, as charged.
pub(super) const SEGMENT_BYTES: u64 = (SEGMENT_BUCKETS * size_of::<Bucket>()) as u64;

/// Up to [`BUCKET_ENTRIES`] entries, each a key's 32-bit hash and the row holding the key,
/// and the link to the next bucket of its chain.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(super) struct Bucket {
    hashes: [u32; BUCKET_ENTRIES],
    rows: [u32; BUCKET_ENTRIES],
    /// The chain's next bucket: an overflow bucket's number plus one, or 0 for none.
    next: u32,
    len: u8,
}

const _: () = assert!(size_of::<Bucket>() == 64, "a bucket is one cache line");

impl Bucket {
    const EMPTY: Bucket = Bucket {
        hashes: [0; BUCKET_ENTRIES],
        rows: [0; BUCKET_ENTRIES],
        next: 0,
        len: 0,
    };

    pub(super) fn entries(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let len = self.len as usize;
        self.hashes[..len]
            .iter()
            .copied()
            .zip(self.rows[..len].iter().copied())
    }

    /// The slots whose entry has `hash`, a bit each (slot 0 the lowest): compared all at
    /// once, without a branch per entry.
    pub(super) fn slots_with(&self, hash: u32) -> u32 {
        let mut slots = 0;
        for (slot, &entry) in self.hashes.iter().enumerate() {
            slots |= u32::from(entry == hash) << slot;
        }
        slots & ((1 << self.len) - 1)
    }

    pub(super) fn row_at(&self, slot: usize) -> u32 {
        self.rows[slot]
    }

    pub(super) fn len(&self) -> usize {
        self.len as usize
    }

    pub(super) fn is_full(&self) -> bool {
        self.len() == BUCKET_ENTRIES
    }

    pub(super) fn push(&mut self, hash: u32, row: u32) {
        assert!(!self.is_full(), "an entry goes into a bucket with room");
        let at = self.len();
        self.hashes[at] = hash;
        self.rows[at] = row;
        self.len += 1;
    }

    pub(super) fn position(&self, hash: u32, row: u32) -> Option<usize> {
        self.entries().position(|entry| entry == (hash, row))
    }

    /// Removes the entry at `at`, moving the last one into its place.
    pub(super) fn swap_remove(&mut self, at: usize) {
        let last = self.len() - 1;
        self.hashes[at] = self.hashes[last];
        self.rows[at] = self.rows[last];
        self.len -= 1;
    }

    /// The overflow bucket this one chains to.
    pub(super) fn next(&self) -> Option<u32> {
        self.next.checked_sub(1)
    }

    pub(super) fn set_next(&mut self, next: Option<u32>) {
        self.next = next.map_or(0, |bucket| bucket + 1);
    }

    /// Empties the bucket, returning the overflow bucket it chained to.
    pub(super) fn clear(&mut self) -> Option<u32> {
        let next = self.next();
        *self = Bucket::EMPTY;
        next
    }
}

/// Buckets numbered from 0, in segments of [`SEGMENT_BUCKETS`].
#[derive(Default)]
pub(super) struct Buckets {
    segments: Vec<Box<[Bucket; SEGMENT_BUCKETS]>>,
    len: u32,
}

impl Buckets {
    pub(super) fn len(&self) -> u32 {
        self.len
    }

    /// Whether the next [`Buckets::push`] allocates a segment.
    pub(super) fn push_needs_segment(&self) -> bool {
        self.len as usize == self.segments.len() * SEGMENT_BUCKETS
    }

    /// Adds an empty bucket: its number.
    pub(super) fn push(&mut self) -> u32 {
        if self.push_needs_segment() {
            self.segments
                .push(Box::new([Bucket::EMPTY; SEGMENT_BUCKETS]));
        }
        let bucket = self.len;
        *self.get_mut(bucket) = Bucket::EMPTY;
        self.len += 1;
        bucket
    }

    /// Removes the last bucket: whether its segment went with it.
    pub(super) fn pop(&mut self) -> bool {
        assert!(self.len > 0, "a bucket to remove");
        self.len -= 1;
        let segment_freed = self.len as usize == (self.segments.len() - 1) * SEGMENT_BUCKETS;
        if segment_freed {
            self.segments.pop();
        }
        segment_freed
    }

    /// Drops every bucket: how many segments were freed.
    pub(super) fn clear(&mut self) -> usize {
        let segments = self.segments.len();
        self.segments = Vec::new();
        self.len = 0;
        segments
    }

    pub(super) fn get(&self, bucket: u32) -> &Bucket {
        let bucket = bucket as usize;
        &self.segments[bucket / SEGMENT_BUCKETS][bucket % SEGMENT_BUCKETS]
    }

    pub(super) fn get_mut(&mut self, bucket: u32) -> &mut Bucket {
        let bucket = bucket as usize;
        &mut self.segments[bucket / SEGMENT_BUCKETS][bucket % SEGMENT_BUCKETS]
    }

    /// Hints the CPU to load `bucket`'s cache line.
    pub(super) fn prefetch(&self, bucket: u32) {
        crate::prefetch::prefetch(std::slice::from_ref(self.get(bucket)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_holds_seven_entries_and_fills_holes_from_its_end() {
        let mut bucket = Bucket::EMPTY;
        for row in 0..BUCKET_ENTRIES as u32 {
            bucket.push(row * 10, row);
        }
        assert!(bucket.is_full());
        bucket.swap_remove(bucket.position(10, 1).unwrap());
        let entries: Vec<_> = bucket.entries().collect();
        assert_eq!(
            entries,
            [(0, 0), (60, 6), (20, 2), (30, 3), (40, 4), (50, 5)]
        );
        assert_eq!(bucket.position(10, 1), None);
        bucket.swap_remove(bucket.position(60, 6).unwrap());
        bucket.push(50, 9);
        assert_eq!(
            bucket.slots_with(50),
            0b10_0010,
            "slot 1 (row 5, moved) and 5"
        );
        assert_eq!((bucket.row_at(1), bucket.row_at(5)), (5, 9));
        assert_eq!(
            bucket.slots_with(60),
            0,
            "a removed entry's stale slot is not matched"
        );
    }

    #[test]
    fn buckets_grow_and_shrink_a_segment_at_a_time_without_moving() {
        let mut buckets = Buckets::default();
        assert!(buckets.push_needs_segment());
        for expected in 0..SEGMENT_BUCKETS as u32 + 1 {
            assert_eq!(buckets.push(), expected);
        }
        buckets.get_mut(3).push(7, 8);
        let third: *const Bucket = buckets.get(3);
        assert!(!buckets.push_needs_segment() && buckets.segments.len() == 2);
        buckets.prefetch(3);
        assert!(buckets.pop(), "the second segment held one bucket");
        assert!(!buckets.pop());
        assert_eq!(std::ptr::from_ref(buckets.get(3)), third);
        assert_eq!(buckets.get(3).entries().collect::<Vec<_>>(), [(7, 8)]);
        assert_eq!(buckets.clear(), 1);
        assert_eq!(buckets.len(), 0);
    }
}
