//! The node's doors to the outside world. Signals a block sends to another node (or to a
//! client) leave through the [`RemoteSink`] the transport installs; signals that arrive from
//! outside enter through an [`Injector`], which queues them for the thread hosting their
//! receiver and wakes it.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use kista_signal::{BlockAddress, NodeId, Signal};

use super::routes::RouteTable;
use super::thread::Shared;

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
    queue: Mutex<VecDeque<Signal>>,
}

impl ExternalQueue {
    pub fn has_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Moves every queued signal to the end of `into`.
    pub fn drain_into(&self, into: &mut VecDeque<Signal>) {
        if !self.has_pending() {
            return;
        }
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        self.pending.store(false, Ordering::Release);
        into.extend(queue.drain(..));
    }

    fn push(&self, signal: Signal) -> bool {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        if queue.len() >= EXTERNAL_SIGNALS_MAX {
            return false;
        }
        queue.push_back(signal);
        self.pending.store(true, Ordering::Release);
        true
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

    /// Queues `signal` (its section handle is ignored) with `section` bytes (empty: none)
    /// for its receiver's thread.
    pub fn inject(&self, mut signal: Signal, section: &[u8]) -> Result<(), InjectError> {
        if self.shared.stop.load(Ordering::Relaxed) {
            return Err(InjectError::Stopped);
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
                .allocate(section)
                .map_err(|_| InjectError::SectionsExhausted)?;
        }
        if !self.shared.external[thread].push(signal) {
            if signal.section().is_pooled() {
                self.shared.sections.release(signal.section());
            }
            return Err(InjectError::Overloaded);
        }
        self.shared.wake[thread].after_publish();
        Ok(())
    }
}
