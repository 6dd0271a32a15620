//! Signals waiting for a moment in time, earliest first and in order of arrival among equals:
//! a scheduler thread's delayed signals, and the simulation's whole event queue.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use kista_signal::Signal;

struct Timed {
    due_ns: u64,
    /// Breaks ties so timers due at once fire in the order they were set.
    sequence: u64,
    signal: Signal,
}

impl PartialEq for Timed {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Timed {}
impl PartialOrd for Timed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timed {
    /// Reversed, so the max-heap pops the earliest timer.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.due_ns, other.sequence).cmp(&(self.due_ns, self.sequence))
    }
}

pub(crate) struct TimedQueue {
    heap: BinaryHeap<Timed>,
    next_sequence: u64,
    /// Entries the queue may hold; its owner's blocks keep a bounded number of timers each,
    /// so reaching this is a bug in a block, not load.
    capacity: usize,
}

impl TimedQueue {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            heap: BinaryHeap::new(),
            next_sequence: 0,
            capacity,
        }
    }

    pub fn add(&mut self, due_ns: u64, signal: Signal) {
        assert!(
            self.heap.len() < self.capacity,
            "more than {} signals waiting for their time",
            self.capacity
        );
        self.heap.push(Timed {
            due_ns,
            sequence: self.next_sequence,
            signal,
        });
        self.next_sequence += 1;
    }

    pub fn next_due_ns(&self) -> Option<u64> {
        self.heap.peek().map(|timer| timer.due_ns)
    }

    pub fn pop_due(&mut self, now_ns: u64) -> Option<Signal> {
        if self.next_due_ns()? > now_ns {
            return None;
        }
        self.heap.pop().map(|timer| timer.signal)
    }

    /// The earliest entry and its time, however far ahead.
    pub fn pop_earliest(&mut self) -> Option<(u64, Signal)> {
        self.heap.pop().map(|timed| (timed.due_ns, timed.signal))
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Removes the signals `drop` picks, returning them.
    pub fn remove_where(&mut self, mut drop: impl FnMut(&Signal) -> bool) -> Vec<Signal> {
        let mut removed = Vec::new();
        self.heap.retain(|timed| {
            let dropped = drop(&timed.signal);
            if dropped {
                removed.push(timed.signal);
            }
            !dropped
        });
        removed
    }
}
