//! Where a thread's outgoing signals go: its own queue, or the job buffer towards the thread
//! hosting the receiver.

use std::collections::VecDeque;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;

use kista_signal::wire::{self, WireError};
use kista_signal::{NodeId, Signal};

use super::gateway::RemoteSink;
use super::routes::RouteTable;
use super::thread::Shared;
use crate::fence::passes_gate;
use crate::job_buffer::Producer;
use crate::section_pool::SectionPool;
use crate::timed_queue::TimedQueue;

/// Signals a thread may queue for itself, or hold back towards one thread whose job buffer
/// is full. A block that floods past this is broken; the node stops rather than grow without
/// bound (NDB does the same when job buffers stay full).
pub const PENDING_SIGNALS_MAX: usize = 1 << 20;

/// Delayed signals one thread may hold.
pub const TIMERS_PER_THREAD_MAX: usize = 65_536;

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

/// The way to one other thread.
struct Destination {
    /// `None` only for the router's own thread.
    producer: Option<Producer>,
    /// Signals that did not fit a full job buffer, sent in order once it has room.
    overflow: VecDeque<Signal>,
    /// Pushed to since the last flush.
    dirty: bool,
}

/// Bytes of signals for one node a thread collects before handing them to the transport
/// without waiting for the end of its batch.
pub const REMOTE_FRAMES_BYTES_MAX: usize = 256 * 1024;

/// The way out of the node, for signals to other nodes and clients.
pub(crate) struct RemoteRoute {
    pub sink: Arc<dyn RemoteSink>,
    pub sections: Arc<SectionPool>,
}

/// Signals for other nodes, encoded per node while a batch runs and handed to the
/// transport at the flush: one call (one lock, one wake-up of the send thread) per node
/// and batch instead of per signal.
struct RemoteFrames {
    route: RemoteRoute,
    buffers: NodeBuffers,
}

struct NodeBuffers {
    /// `[node id]` → wire-form signals waiting for it.
    by_node: Vec<Vec<u8>>,
    /// Nodes with frames waiting, in the order they got their first.
    waiting: Vec<NodeId>,
}

impl NodeBuffers {
    fn new() -> Self {
        Self {
            by_node: vec![Vec::new(); usize::from(u8::MAX) + 1],
            waiting: Vec::new(),
        }
    }

    #[inline]
    fn push(
        &mut self,
        sink: &dyn RemoteSink,
        signal: &Signal,
        section: &[u8],
    ) -> Result<(), WireError> {
        let node = signal.receiver().node();
        let frames = &mut self.by_node[usize::from(node.0)];
        if frames.is_empty() {
            self.waiting.push(node);
        }
        wire::encode(signal, section, frames)?;
        if frames.len() >= REMOTE_FRAMES_BYTES_MAX {
            sink.send(node, frames);
            debug_assert!(frames.is_empty(), "the sink takes every frame");
        }
        Ok(())
    }

    fn flush(&mut self, sink: &dyn RemoteSink) {
        for node in self.waiting.drain(..) {
            let frames = &mut self.by_node[usize::from(node.0)];
            if !frames.is_empty() {
                sink.send(node, frames);
                debug_assert!(frames.is_empty(), "the sink takes every frame");
            }
            if frames.capacity() > REMOTE_FRAMES_BYTES_MAX {
                frames.shrink_to(REMOTE_FRAMES_BYTES_MAX);
            }
        }
    }
}

pub(crate) struct Router {
    own_thread: usize,
    remote: Option<RemoteFrames>,
    routes: Arc<RouteTable>,
    destinations: Vec<Destination>,
    overflow_total: usize,
    /// Destinations with `dirty` set, in the order they became dirty.
    dirty: Vec<usize>,
    /// Signals to blocks on this thread.
    pub local: VecDeque<Signal>,
    pub timers: TimedQueue,
    pub now_ns: u64,
    /// The node's fence and stop flag.
    shared: Arc<Shared>,
}

impl Router {
    /// `producers[t]` is the job buffer towards thread `t` (`None` at `own_thread`).
    pub fn new(
        own_thread: usize,
        routes: Arc<RouteTable>,
        producers: Vec<Option<Producer>>,
        remote: Option<RemoteRoute>,
        shared: Arc<Shared>,
    ) -> Self {
        let threads = producers.len();
        let destinations = producers
            .into_iter()
            .map(|producer| Destination {
                producer,
                overflow: VecDeque::new(),
                dirty: false,
            })
            .collect();
        Self {
            own_thread,
            remote: remote.map(|route| RemoteFrames {
                route,
                buffers: NodeBuffers::new(),
            }),
            routes,
            destinations,
            overflow_total: 0,
            dirty: Vec::with_capacity(threads),
            local: VecDeque::with_capacity(1024),
            timers: TimedQueue::with_capacity(TIMERS_PER_THREAD_MAX),
            now_ns: 0,
            shared,
        }
    }

    /// Publishes everything pushed since the last flush and wakes sleeping receivers;
    /// hands what was sent to other nodes to the transport.
    pub fn flush(&mut self, wake: &[Wake]) {
        if let Some(remote) = &mut self.remote {
            remote.buffers.flush(&*remote.route.sink);
        }
        let mut index = 0;
        while index < self.dirty.len() {
            let thread = self.dirty[index];
            let destination = &mut self.destinations[thread];
            let Some(producer) = destination.producer.as_mut() else {
                unreachable!("thread {thread} marked dirty without a job buffer");
            };
            while let Some(signal) = destination.overflow.front() {
                if !producer.try_push(signal) {
                    break;
                }
                destination.overflow.pop_front();
                self.overflow_total -= 1;
            }
            producer.publish();
            wake[thread].after_publish();
            if destination.overflow.is_empty() {
                destination.dirty = false;
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

    /// Hands a signal for another node to the transport, with its section's bytes; the
    /// section returns to the pool.
    fn send_remote(&mut self, signal: &Signal) {
        let Some(remote) = self
            .remote
            .as_mut()
            .filter(|_| !self.routes.is_local(signal.receiver()))
        else {
            self.unroutable(signal)
        };
        let (route, buffers) = (&remote.route, &mut remote.buffers);
        let section = signal.section();
        if self.shared.fence.is_shut_out(signal.receiver().node()) && !passes_gate(signal) {
            if section.is_pooled() {
                route.sections.release(section);
            }
            return;
        }
        let encoded = if section.is_pooled() {
            let encoded = buffers.push(&*route.sink, signal, &route.sections.read(section));
            route.sections.release(section);
            encoded
        } else {
            buffers.push(&*route.sink, signal, signal.inline_section())
        };
        // Pooled sections never exceed the wire's limit.
        debug_assert!(encoded.is_ok(), "{encoded:?}");
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

impl Router {
    /// Routes `signal` to its receiver's thread: this thread's queue, or the job buffer
    /// towards the receiver (published at the next flush).
    #[inline]
    pub fn send(&mut self, signal: &Signal) {
        let Some(thread) = self.routes.thread_of(signal.receiver()) else {
            return self.send_remote(signal);
        };
        if thread == self.own_thread {
            assert!(
                self.local.len() < PENDING_SIGNALS_MAX,
                "local job queue overflow"
            );
            self.local.push_back(*signal);
            return;
        }
        let overflow_total = self.overflow_total;
        let destination = &mut self.destinations[thread];
        // Nothing may overtake signals already waiting in overflow.
        let may_push = overflow_total == 0 || destination.overflow.is_empty();
        let pushed = may_push
            && destination
                .producer
                .as_mut()
                .is_some_and(|p| p.try_push(signal));
        if !pushed {
            assert!(
                destination.overflow.len() < PENDING_SIGNALS_MAX,
                "job buffer overflow from thread {} to thread {thread}",
                self.own_thread
            );
            destination.overflow.push_back(*signal);
            self.overflow_total += 1;
        }
        if !destination.dirty {
            destination.dirty = true;
            self.dirty.push(thread);
        }
    }

    /// Queues a signal for another node or a client for the transport with `bytes` as its
    /// section, skipping the section pool: the bytes would only be copied in and out.
    /// `None` when its receiver is on this node.
    #[inline]
    pub fn send_remote_with_bytes(
        &mut self,
        signal: &Signal,
        bytes: &[u8],
    ) -> Option<Result<(), WireError>> {
        match &mut self.remote {
            Some(_)
                if self.shared.fence.is_shut_out(signal.receiver().node())
                    && !passes_gate(signal) =>
            {
                Some(Ok(()))
            }
            Some(remote) if !self.routes.is_local(signal.receiver()) => {
                Some(remote.buffers.push(&*remote.route.sink, signal, bytes))
            }
            _ => None,
        }
    }

    /// Drops every signal from and to `node` from now on, until it is let in again.
    pub fn shut_out(&self, node: NodeId) {
        self.shared.fence.shut_out(node);
    }

    pub fn let_in(&self, node: NodeId) {
        self.shared.fence.let_in(node);
    }

    /// Stops every thread of the node, keeping `reason` for whoever started it.
    pub fn stop_node(&self, reason: &str) {
        self.shared.stop_reason.record(reason);
        self.shared.request_stop();
    }

    pub fn send_delayed(&mut self, signal: &Signal, delay_ns: u64) {
        self.timers
            .add(self.now_ns.saturating_add(delay_ns), *signal);
    }
}
