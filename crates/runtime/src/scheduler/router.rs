//! Where a thread's outgoing signals go: its own queue, or the job buffer towards the thread
//! hosting the receiver.

use std::collections::VecDeque;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;

use kista_signal::Signal;

use super::routes::RouteTable;
use super::timers::TimerQueue;
use crate::block::SignalSink;
use crate::job_buffer::Producer;

/// Signals a thread may queue for itself, or hold back towards one thread whose job buffer
/// is full. A block that floods past this is broken; the node stops rather than grow without
/// bound (NDB does the same when job buffers stay full).
pub const PENDING_SIGNALS_MAX: usize = 1 << 20;

/// How a thread is woken from sleep.
#[derive(Default)]
pub(crate) struct Wake {
    pub sleeping: AtomicBool,
    pub thread: OnceLock<Thread>,
}

impl Wake {
    /// Called after publishing signals to this thread. The fence pairs with the one the
    /// sleeper executes between raising `sleeping` and its last look at its job buffers:
    /// either it sees our signals or we see its flag.
    #[inline]
    pub fn after_publish(&self) {
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::Relaxed) && self.sleeping.swap(false, Ordering::AcqRel) {
            if let Some(thread) = self.thread.get() {
                thread.unpark();
            }
        }
    }
}

pub(crate) struct Router {
    own_thread: usize,
    routes: Arc<RouteTable>,
    /// Producer ends towards every other thread (`None` at our own index).
    outputs: Vec<Option<Producer>>,
    /// Signals that did not fit a full job buffer, sent in order once it has room.
    overflow: Vec<VecDeque<Signal>>,
    overflow_total: usize,
    /// Threads we pushed to since the last flush.
    dirty: Vec<usize>,
    is_dirty: Vec<bool>,
    /// Signals to blocks on this thread.
    pub local: VecDeque<Signal>,
    pub timers: TimerQueue,
    pub now_ns: u64,
}

impl Router {
    pub fn new(own_thread: usize, routes: Arc<RouteTable>, outputs: Vec<Option<Producer>>) -> Self {
        let threads = outputs.len();
        Self {
            own_thread,
            routes,
            outputs,
            overflow: (0..threads).map(|_| VecDeque::new()).collect(),
            overflow_total: 0,
            dirty: Vec::with_capacity(threads),
            is_dirty: vec![false; threads],
            local: VecDeque::with_capacity(1024),
            timers: TimerQueue::default(),
            now_ns: 0,
        }
    }

    /// Publishes everything pushed since the last flush and wakes sleeping receivers.
    pub fn flush(&mut self, wake: &[Wake]) {
        let mut index = 0;
        while index < self.dirty.len() {
            let thread = self.dirty[index];
            let Some(output) = self.outputs[thread].as_mut() else {
                unreachable!("thread {thread} marked dirty without an output");
            };
            let overflow = &mut self.overflow[thread];
            while let Some(signal) = overflow.front() {
                if !output.try_push(signal) {
                    break;
                }
                overflow.pop_front();
                self.overflow_total -= 1;
            }
            output.publish();
            wake[thread].after_publish();
            if overflow.is_empty() {
                self.is_dirty[thread] = false;
                self.dirty.swap_remove(index);
            } else {
                index += 1;
            }
        }
    }

    /// Whether signals are held back by full job buffers.
    pub fn has_overflow(&self) -> bool {
        self.overflow_total > 0
    }

    pub fn pending_depth(&self) -> usize {
        self.local.len() + self.overflow_total
    }

    #[cold]
    fn unroutable(&self, signal: &Signal) -> ! {
        panic!(
            "signal {:?} from {} to {}: no block at that address on this node",
            signal.number(),
            signal.sender(),
            signal.receiver()
        )
    }
}

impl SignalSink for Router {
    #[inline]
    fn send(&mut self, signal: &Signal) {
        let Some(thread) = self.routes.thread_of(signal.receiver()) else {
            self.unroutable(signal)
        };
        if thread == self.own_thread {
            assert!(
                self.local.len() < PENDING_SIGNALS_MAX,
                "local job queue overflow"
            );
            self.local.push_back(*signal);
            return;
        }
        let pushed = self.overflow[thread].is_empty()
            && self.outputs[thread]
                .as_mut()
                .is_some_and(|output| output.try_push(signal));
        if !pushed {
            assert!(
                self.overflow[thread].len() < PENDING_SIGNALS_MAX,
                "job buffer overflow from thread {} to thread {thread}",
                self.own_thread
            );
            self.overflow[thread].push_back(*signal);
            self.overflow_total += 1;
        }
        if !self.is_dirty[thread] {
            self.is_dirty[thread] = true;
            self.dirty.push(thread);
        }
    }

    fn send_delayed(&mut self, signal: &Signal, delay_ns: u64) {
        self.timers
            .add(self.now_ns.saturating_add(delay_ns), *signal);
    }
}
