//! Delayed signals waiting on one thread.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use kista_signal::Signal;

/// Delayed signals one thread may hold. Blocks keep a bounded number of timers each, so
/// reaching this is a bug in a block, not load.
pub const TIMERS_PER_THREAD_MAX: usize = 65_536;

struct Timer {
    due_ns: u64,
    /// Breaks ties so timers due at once fire in the order they were set.
    sequence: u64,
    signal: Signal,
}

impl PartialEq for Timer {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Timer {}
impl PartialOrd for Timer {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timer {
    /// Reversed, so the max-heap pops the earliest timer.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.due_ns, other.sequence).cmp(&(self.due_ns, self.sequence))
    }
}

#[derive(Default)]
pub(crate) struct TimerQueue {
    heap: BinaryHeap<Timer>,
    next_sequence: u64,
}

impl TimerQueue {
    pub fn add(&mut self, due_ns: u64, signal: Signal) {
        assert!(
            self.heap.len() < TIMERS_PER_THREAD_MAX,
            "more than {TIMERS_PER_THREAD_MAX} delayed signals on one thread"
        );
        self.heap.push(Timer {
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
}
