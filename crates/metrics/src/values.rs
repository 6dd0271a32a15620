//! Counters and histograms. Each is a set of relaxed atomics, so the thread that counts and
//! the HTTP thread that reads never wait for each other.
//!
//! A value counted by one thread only (a block's, on its scheduler thread) uses the `_owned`
//! methods: a plain load and store, no locked instruction, on a hot path that runs millions
//! of times a second. A value several threads count (SQL sessions) uses the others.

use std::sync::atomic::{AtomicU64, Ordering};

/// A count that only grows (Prometheus' counter).
#[derive(Default, Debug)]
pub struct Counter(AtomicU64);

impl Counter {
    pub const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    /// Adds `n`; any thread may call it.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn inc(&self) {
        self.add(1);
    }

    /// Adds `n` from the one thread that counts this value (a second writer would lose
    /// counts, never corrupt memory).
    pub fn add_owned(&self, n: u64) {
        let now = self.0.load(Ordering::Relaxed);
        self.0.store(now.wrapping_add(n), Ordering::Relaxed);
    }

    pub fn inc_owned(&self) {
        self.add_owned(1);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A value that goes up and down (Prometheus' gauge), set by the one thread that owns it.
#[derive(Default, Debug)]
pub struct Gauge(AtomicU64);

impl Gauge {
    pub fn set(&self, value: u64) {
        self.0.store(value, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Upper bounds of the latency buckets, in microseconds: 50 µs to 10 s, about three per
/// decade, which covers a key lookup (tens of µs) and a lock-wait timeout (seconds) alike.
pub const LATENCY_BUCKETS_US: [u64; 17] = [
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000,
];

/// The same bounds in seconds, as Prometheus' `le` labels show them.
pub const LATENCY_BUCKETS_SECONDS: [&str; 17] = [
    "0.00005", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05",
    "0.1", "0.25", "0.5", "1", "2.5", "5", "10",
];

/// A latency histogram over [`LATENCY_BUCKETS_US`] (Prometheus' histogram, in seconds).
#[derive(Default, Debug)]
pub struct Histogram {
    /// Observations per bucket (not cumulative), the last one above every bound.
    buckets: [Counter; LATENCY_BUCKETS_US.len() + 1],
    sum_us: Counter,
}

/// One moment of a [`Histogram`]: cumulative counts per bound, then the total.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistogramSnapshot {
    pub cumulative: [u64; LATENCY_BUCKETS_US.len()],
    pub count: u64,
    pub sum_us: u64,
}

impl Histogram {
    fn bucket_of(duration_us: u64) -> usize {
        LATENCY_BUCKETS_US.partition_point(|&bound| bound < duration_us)
    }

    /// Records one duration; any thread may call it.
    pub fn observe_us(&self, duration_us: u64) {
        self.buckets[Self::bucket_of(duration_us)].inc();
        self.sum_us.add(duration_us);
    }

    /// Records one duration from the one thread that records into this histogram.
    pub fn observe_us_owned(&self, duration_us: u64) {
        self.buckets[Self::bucket_of(duration_us)].inc_owned();
        self.sum_us.add_owned(duration_us);
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut cumulative = [0; LATENCY_BUCKETS_US.len()];
        let mut running = 0;
        for (slot, bucket) in cumulative.iter_mut().zip(&self.buckets) {
            running += bucket.get();
            *slot = running;
        }
        let count = running + self.buckets[LATENCY_BUCKETS_US.len()].get();
        HistogramSnapshot {
            cumulative,
            count,
            sum_us: self.sum_us.get(),
        }
    }
}

impl HistogramSnapshot {
    pub fn empty() -> Self {
        Self {
            cumulative: [0; LATENCY_BUCKETS_US.len()],
            count: 0,
            sum_us: 0,
        }
    }

    /// Adds another histogram's counts (several instances shown as one).
    pub fn merge(&mut self, other: &HistogramSnapshot) {
        for (mine, theirs) in self.cumulative.iter_mut().zip(&other.cumulative) {
            *mine += theirs;
        }
        self.count += other.count;
        self.sum_us += other.sum_us;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_falls_in_the_first_bucket_whose_bound_it_does_not_exceed() {
        let histogram = Histogram::default();
        histogram.observe_us(50); // on the first bound: counted in it
        histogram.observe_us(51);
        histogram.observe_us_owned(999);
        histogram.observe_us(60_000_000); // above every bound
        let snapshot = histogram.snapshot();
        assert_eq!(snapshot.cumulative[0], 1);
        assert_eq!(snapshot.cumulative[1], 2);
        assert_eq!(snapshot.cumulative[4], 3);
        assert_eq!(snapshot.cumulative[16], 3);
        assert_eq!(snapshot.count, 4);
        assert_eq!(snapshot.sum_us, 50 + 51 + 999 + 60_000_000);
    }

    #[test]
    fn the_bounds_in_seconds_are_the_bounds_in_microseconds() {
        for (us, text) in LATENCY_BUCKETS_US.iter().zip(LATENCY_BUCKETS_SECONDS) {
            let seconds: f64 = text.parse().unwrap();
            assert_eq!((seconds * 1e6).round() as u64, *us);
        }
    }

    #[test]
    fn counters_count_from_any_thread_and_from_their_owner() {
        let counter = Counter::new();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| (0..1000).for_each(|_| counter.inc()));
            }
        });
        counter.inc_owned();
        counter.add_owned(9);
        assert_eq!(counter.get(), 4010);
    }
}
