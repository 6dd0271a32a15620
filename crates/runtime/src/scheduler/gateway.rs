//! The node's doors to the outside world. Signals a block sends to another node (or to a
//! client) leave through the [`RemoteSink`] the transport installs; signals that arrive from
//! outside enter through an [`Injector`], which queues them for the thread hosting their
//! receiver and wakes it.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use kista_signal::{BlockAddress, NodeId, Signal};

use super::routes::RouteTable;
use super::thread::Shared;
use crate::fence::passes_gate;

/// Signals from outside that may wait for one thread. Past this the injector refuses more
/// and the transport stops reading from its sockets until the thread catches up.
pub const EXTERNAL_SIGNALS_MAX: usize = 65_536;

/// Takes signals addressed to other nodes or clients (the transport).
pub trait RemoteSink: Send + Sync {
    /// Called by the thread that produced them with signals for `node` in wire form
    /// (`kista_signal::wire`, sections included), in the order they were sent: a thread
    /// collects what it sends each node during a batch of work and hands it over at once.
    /// Must not block for long: buffer and hand over to a sending thread. The sink takes
    /// the frames and leaves `frames` empty; it may swap in an empty buffer of its own, so a
    /// connection with nothing waiting takes them without a copy.
    fn send(&self, node: NodeId, frames: &mut Vec<u8>);
}

/// A [`RemoteSink`] for [`RuntimeOptions`](super::RuntimeOptions).
#[derive(Clone)]
pub struct Remote(pub Arc<dyn RemoteSink>);

impl fmt::Debug for Remote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Remote(..)")
    }
}

/// One thread's queue of signals from outside.
#[derive(Default)]
pub(crate) struct ExternalQueue {
    /// Raised when the queue has signals, so the thread need not lock to find out.
    pending: AtomicBool,
    /// Always taken whole, so a `Vec` whose buffer is swapped rather than copied, in and
    /// out, when the other side keeps up.
    queue: Mutex<Vec<Signal>>,
}

impl ExternalQueue {
    pub fn has_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Moves every queued signal into `into`, which must be empty, by swapping buffers.
    pub fn take_all(&self, into: &mut Vec<Signal>) {
        debug_assert!(into.is_empty(), "the last signals taken were not executed");
        if !self.has_pending() {
            return;
        }
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        self.pending.store(false, Ordering::Release);
        std::mem::swap(&mut *queue, into);
    }

    fn push(&self, signal: Signal) -> bool {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        if queue.len() >= EXTERNAL_SIGNALS_MAX {
            return false;
        }
        queue.push(signal);
        self.pending.store(true, Ordering::Release);
        true
    }

    /// Moves as many of `signals` as the queue has room for, from the front, in order;
    /// returns how many. All of them into an empty queue is a swap of buffers.
    fn push_all(&self, signals: &mut Vec<Signal>) -> usize {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        let room = EXTERNAL_SIGNALS_MAX.saturating_sub(queue.len());
        let taken = room.min(signals.len());
        if queue.is_empty() && taken == signals.len() {
            std::mem::swap(&mut *queue, signals);
        } else {
            queue.extend_from_slice(&signals[..taken]);
            signals.drain(..taken);
        }
        if taken > 0 {
            self.pending.store(true, Ordering::Release);
        }
        taken
    }
}

/// Signals from outside gathered for one hand-over: [`Injector::stage`] checks each and
/// puts its section in place, [`Injector::publish`] queues them with one lock and one
/// wake-up per receiving thread rather than one per signal (a socket read often carries
/// many).
#[derive(Default)]
pub struct InjectBatch {
    /// `[thread]` → signals staged for it, in arrival order.
    by_thread: Vec<Vec<Signal>>,
    /// Threads with signals staged, in the order they got their first.
    threads: Vec<usize>,
    /// Signals staged, over all threads.
    len: usize,
}

impl InjectBatch {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InjectError {
    #[error("no block at {0} on this node")]
    NoSuchBlock(BlockAddress),
    #[error("the node's section pool is exhausted")]
    SectionsExhausted,
    #[error("{EXTERNAL_SIGNALS_MAX} signals from outside already wait for the receiver's thread")]
    Overloaded,
    #[error("the node is stopping")]
    Stopped,
    #[error("node {0} was declared failed: it is shut out until it restarts")]
    ShutOut(NodeId),
}

impl InjectError {
    /// Whether waiting and trying again may succeed.
    pub fn is_temporary(&self) -> bool {
        matches!(
            self,
            InjectError::SectionsExhausted | InjectError::Overloaded
        )
    }
}

/// Puts signals from outside into a running node. Cheap to clone; usable from any thread.
#[derive(Clone)]
pub struct Injector {
    pub(crate) shared: Arc<Shared>,
    pub(crate) routes: Arc<RouteTable>,
}

impl Injector {
    /// Whether `address` names a block of this node.
    pub fn has_block(&self, address: BlockAddress) -> bool {
        self.routes.thread_of(address).is_some()
    }

    /// Whether the node's membership shut `node` out (the transport refuses its
    /// connections and stops dialing it).
    pub fn is_shut_out(&self, node: NodeId) -> bool {
        self.shared.fence.is_shut_out(node)
    }

    /// Whether the node is stopping or has stopped.
    pub fn is_stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    /// Queues `signal` (its section handle is ignored) with `section` bytes (empty: none)
    /// for its receiver's thread.
    pub fn inject(&self, signal: Signal, section: &[u8]) -> Result<(), InjectError> {
        let (thread, signal) = self.admit(signal, section)?;
        if !self.shared.external[thread].push(signal) {
            self.release_section(&signal);
            return Err(InjectError::Overloaded);
        }
        self.shared.wake[thread].after_publish();
        Ok(())
    }

    /// Adds `signal` with `section` bytes to `batch`, to be queued by
    /// [`Injector::publish`]. Fails as [`Injector::inject`] does, except that a full queue
    /// shows only at the publish.
    pub fn stage(
        &self,
        batch: &mut InjectBatch,
        signal: Signal,
        section: &[u8],
    ) -> Result<(), InjectError> {
        let (thread, signal) = self.admit(signal, section)?;
        if batch.by_thread.len() <= thread {
            batch.by_thread.resize_with(thread + 1, Vec::new);
        }
        let staged = &mut batch.by_thread[thread];
        if staged.is_empty() {
            batch.threads.push(thread);
        }
        staged.push(signal);
        batch.len += 1;
        Ok(())
    }

    /// Queues what `batch` holds, one lock and one wake-up per thread. When a thread's
    /// queue is full (`Overloaded`), what did not fit stays staged, in order, for the next
    /// publish.
    pub fn publish(&self, batch: &mut InjectBatch) -> Result<(), InjectError> {
        let mut overloaded = false;
        let (by_thread, len) = (&mut batch.by_thread, &mut batch.len);
        batch.threads.retain(|&thread| {
            let staged = &mut by_thread[thread];
            let taken = self.shared.external[thread].push_all(staged);
            if taken > 0 {
                self.shared.wake[thread].after_publish();
            }
            *len -= taken;
            overloaded |= !staged.is_empty();
            !staged.is_empty()
        });
        if overloaded {
            Err(InjectError::Overloaded)
        } else {
            Ok(())
        }
    }

    /// Drops what `batch` holds, returning pooled sections (when the node or the connection
    /// stops).
    pub fn discard(&self, batch: &mut InjectBatch) {
        for thread in batch.threads.drain(..) {
            for signal in batch.by_thread[thread].drain(..) {
                self.release_section(&signal);
            }
        }
        batch.len = 0;
    }

    /// Finds `signal`'s thread and puts its section in place: inline when it fits the
    /// payload words the signal leaves free, else in a pooled buffer.
    #[inline]
    fn admit(&self, mut signal: Signal, section: &[u8]) -> Result<(usize, Signal), InjectError> {
        if self.shared.stop.load(Ordering::Relaxed) {
            return Err(InjectError::Stopped);
        }
        let sender = signal.sender().node();
        if self.shared.fence.is_shut_out(sender) && !passes_gate(&signal) {
            return Err(InjectError::ShutOut(sender));
        }
        let receiver = signal.receiver();
        let thread = self
            .routes
            .thread_of(receiver)
            .ok_or(InjectError::NoSuchBlock(receiver))?;
        signal.header.section = kista_signal::SectionHandle::NONE;
        // A small section (a key, a short request) rides in the signal's unused payload
        // words: no pooled buffer to fill, lock and release.
        if !section.is_empty() && !signal.set_inline_section(section) {
            signal.header.section = self
                .shared
                .sections
                .allocate_from_outside(section)
                .map_err(|_| InjectError::SectionsExhausted)?;
        }
        Ok((thread, signal))
    }

    fn release_section(&self, signal: &Signal) {
        if signal.section().is_pooled() {
            self.shared.sections.release(signal.section());
        }
    }
}
