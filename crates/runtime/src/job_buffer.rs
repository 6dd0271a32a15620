//! Job buffers: one bounded single-producer, single-consumer ring of signals per (sending
//! thread, receiving thread) pair.
//!
//! The producer writes signals into slots without publishing them and makes a whole batch
//! visible with one release store ([`Producer::publish`]); the consumer executes signals in
//! place ([`Consumer::batch`]) and frees their slots with one store per batch
//! ([`Consumer::release`]). Each side caches the other side's index and re-reads it only
//! when the cache says the ring is full (producer) or empty (consumer), so the shared cache
//! lines move between cores once per batch, not once per signal.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use kista_signal::Signal;

/// Keeps the producer's and the consumer's index on separate cache lines (128 bytes covers
/// adjacent-line prefetching).
#[repr(align(128))]
struct CachePadded<T>(T);

/// The ring shared by one producer and one consumer.
pub struct JobBuffer {
    slots: Box<[UnsafeCell<MaybeUninit<Signal>>]>,
    mask: usize,
    /// Count of signals the consumer has released (monotonic; slot = index & mask).
    head: CachePadded<AtomicUsize>,
    /// Count of signals the producer has published.
    tail: CachePadded<AtomicUsize>,
}

// SAFETY: the slots are only accessed through the single `Producer` (slots in
// [tail, head + capacity)) and the single `Consumer` (slots in [head, tail)); `new` hands out
// exactly one of each, and the release/acquire pairs on `tail` and `head` order the slot
// writes before the reads and the reads before the rewrites.
unsafe impl Sync for JobBuffer {}

impl JobBuffer {
    /// A ring of `capacity` signals (rounded up to a power of two) and its two ends.
    ///
    /// Slots are left uninitialised, so the memory of a ring that never carries a signal is
    /// never touched.
    pub fn with_capacity(capacity: usize) -> (Producer, Consumer) {
        let capacity = capacity.max(2).next_power_of_two();
        let buffer = Arc::new(JobBuffer {
            slots: (0..capacity)
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect(),
            mask: capacity - 1,
            head: CachePadded(AtomicUsize::new(0)),
            tail: CachePadded(AtomicUsize::new(0)),
        });
        let producer = Producer {
            buffer: Arc::clone(&buffer),
            tail: 0,
            head_cache: 0,
            capacity,
        };
        let consumer = Consumer {
            buffer,
            head: 0,
            tail_cache: 0,
        };
        (producer, consumer)
    }

    /// Signals published and not yet released; a snapshot for statistics.
    pub fn depth(&self) -> usize {
        let tail = self.tail.0.load(Ordering::Relaxed);
        let head = self.head.0.load(Ordering::Relaxed);
        tail.wrapping_sub(head)
    }
}

/// The writing end, owned by the sending thread.
pub struct Producer {
    buffer: Arc<JobBuffer>,
    /// Next slot to write; ahead of the shared tail by the unpublished signals.
    tail: usize,
    head_cache: usize,
    capacity: usize,
}

impl Producer {
    /// Writes `signal` into the next slot without publishing it. Returns `false`, writing
    /// nothing, when the ring is full.
    #[inline]
    pub fn try_push(&mut self, signal: &Signal) -> bool {
        if self.tail.wrapping_sub(self.head_cache) == self.capacity {
            self.head_cache = self.buffer.head.0.load(Ordering::Acquire);
            if self.tail.wrapping_sub(self.head_cache) == self.capacity {
                return false;
            }
        }
        // SAFETY: `index & mask` is below the slot count (a power of two, mask = count - 1).
        // The slot is outside [head, tail) as seen by the consumer (we checked
        // tail - head < capacity against a head the consumer released with a release store),
        // so the consumer does not read it until we publish past it.
        unsafe {
            let slot = self
                .buffer
                .slots
                .get_unchecked(self.tail & self.buffer.mask);
            (*slot.get()).write(*signal);
        }
        self.tail = self.tail.wrapping_add(1);
        true
    }

    /// Makes every pushed signal visible to the consumer.
    #[inline]
    pub fn publish(&mut self) {
        self.buffer.tail.0.store(self.tail, Ordering::Release);
    }

    pub fn buffer(&self) -> &Arc<JobBuffer> {
        &self.buffer
    }
}

/// The reading end, owned by the receiving thread.
pub struct Consumer {
    buffer: Arc<JobBuffer>,
    /// Next slot to read; the shared head trails it until `release`.
    head: usize,
    tail_cache: usize,
}

impl Consumer {
    /// Signals published and not yet released (re-reads the producer's index only when the
    /// cached one shows none).
    #[inline]
    pub fn available(&mut self) -> usize {
        if self.tail_cache == self.head {
            self.tail_cache = self.buffer.tail.0.load(Ordering::Acquire);
        }
        self.tail_cache.wrapping_sub(self.head)
    }

    /// Whether the producer has published anything not yet consumed, without disturbing the
    /// cached index; used by an idle thread deciding whether to sleep.
    #[inline]
    pub fn has_published(&self) -> bool {
        self.buffer.tail.0.load(Ordering::Acquire) != self.head
    }

    /// The `count` oldest unreleased signals, as up to two contiguous runs (the ring may wrap
    /// around its end), for executing a batch without a check per signal.
    ///
    /// # Panics
    /// If `count` exceeds the last [`Consumer::available`] result.
    #[inline]
    pub fn batch(&self, count: usize) -> (&[Signal], &[Signal]) {
        assert!(
            count <= self.tail_cache.wrapping_sub(self.head),
            "batch past published signals"
        );
        let start = self.head & self.buffer.mask;
        let first_len = count.min(self.buffer.slots.len() - start);
        let slots = self.buffer.slots.as_ptr();
        // SAFETY: both runs lie inside the slot array (start + first_len <= len, and the
        // second run starts at 0 with count - first_len <= start). Every slot in them is in
        // [head, tail_cache): written by the producer before its release store of a tail we
        // loaded with acquire, and not rewritten until we release past it, which needs
        // `&mut self` and so ends these borrows first. `UnsafeCell<MaybeUninit<Signal>>` has
        // the layout of `Signal`.
        unsafe {
            let first = std::slice::from_raw_parts(slots.add(start).cast::<Signal>(), first_len);
            let second = std::slice::from_raw_parts(slots.cast::<Signal>(), count - first_len);
            (first, second)
        }
    }

    /// Frees the `count` oldest signals' slots for the producer.
    #[inline]
    pub fn release(&mut self, count: usize) {
        assert!(
            count <= self.tail_cache.wrapping_sub(self.head),
            "release past published signals"
        );
        self.head = self.head.wrapping_add(count);
        self.buffer.head.0.store(self.head, Ordering::Release);
    }

    pub fn buffer(&self) -> &Arc<JobBuffer> {
        &self.buffer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kista_signal::{BlockAddress, SignalNumber};

    fn numbered(n: u32) -> Signal {
        let here = BlockAddress::default();
        Signal::with_words(SignalNumber(1), here, here, &[n])
    }

    #[test]
    fn pushed_signals_are_invisible_until_published() {
        let (mut producer, mut consumer) = JobBuffer::with_capacity(4);
        assert!(producer.try_push(&numbered(1)));
        assert_eq!(consumer.available(), 0);
        producer.publish();
        assert_eq!(consumer.available(), 1);
        assert_eq!(consumer.batch(1).0[0].words(), &[1]);
    }

    #[test]
    fn a_full_ring_refuses_until_the_consumer_releases() {
        let (mut producer, mut consumer) = JobBuffer::with_capacity(4);
        for n in 0..4 {
            assert!(producer.try_push(&numbered(n)));
        }
        assert!(!producer.try_push(&numbered(4)));
        producer.publish();
        assert_eq!(consumer.available(), 4);
        assert_eq!(producer.buffer().depth(), 4);
        consumer.release(1);
        assert!(producer.try_push(&numbered(4)));
        producer.publish();
        // The consumer works from its cached view until it has consumed it.
        assert_eq!(consumer.available(), 3);
        consumer.release(3);
        assert_eq!(consumer.available(), 1);
        assert_eq!(consumer.batch(1).0[0].words(), &[4]);
    }

    #[test]
    fn a_batch_that_wraps_around_the_ring_comes_in_two_runs_in_order() {
        let (mut producer, mut consumer) = JobBuffer::with_capacity(4);
        for n in 0..3 {
            producer.try_push(&numbered(n));
        }
        producer.publish();
        consumer.available();
        consumer.release(3);
        for n in 3..7 {
            assert!(producer.try_push(&numbered(n)));
        }
        producer.publish();
        assert_eq!(consumer.available(), 4);
        let (first, second) = consumer.batch(4);
        let seen: Vec<u32> = first.iter().chain(second).map(|s| s.words()[0]).collect();
        assert_eq!(seen, [3, 4, 5, 6]);
        assert_eq!((first.len(), second.len()), (1, 3));
        assert_eq!(consumer.batch(2).0.len(), 1);
    }

    #[test]
    #[should_panic(expected = "batch past published signals")]
    fn reading_past_the_published_signals_panics() {
        let (_producer, mut consumer) = JobBuffer::with_capacity(4);
        consumer.available();
        let _ = consumer.batch(1);
    }

    #[test]
    fn signals_cross_threads_in_order_without_loss() {
        const COUNT: u32 = 200_000;
        let (mut producer, mut consumer) = JobBuffer::with_capacity(64);
        let writer = std::thread::spawn(move || {
            let mut next = 0;
            while next < COUNT {
                while next < COUNT && producer.try_push(&numbered(next)) {
                    next += 1;
                }
                producer.publish();
                std::thread::yield_now();
            }
        });
        let mut expected = 0;
        while expected < COUNT {
            let available = consumer.available();
            let (first, second) = consumer.batch(available);
            for signal in first.iter().chain(second) {
                assert_eq!(signal.words()[0], expected);
                expected += 1;
            }
            consumer.release(available);
            if available == 0 {
                std::thread::yield_now();
            }
        }
        writer.join().unwrap();
    }
}
