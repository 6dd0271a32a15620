//! Blocks and the context they execute in.
//!
//! A block is a deterministic state machine. Everything it may do besides changing its own
//! state goes through [`Context`]: send signals (now or after a delay), read the clock, draw
//! random numbers and use sections. The multi-threaded runtime and the simulation give it
//! different sinks behind the same context; the block cannot tell them apart.

use std::time::Duration;

use kista_signal::{
    BlockAddress, NodeId, SectionHandle, Signal, TypedSignal, INLINE_SECTION_BYTES_MAX,
};

use crate::io::{FileRequest, FILE_SYSTEM_BLOCK};
use crate::rng::Rng;
use crate::scheduler::Router;
use crate::section_pool::{SectionGuard, SectionPool, SectionPoolExhausted};
use crate::simulation::Network;

/// A block: all logic of a data node lives in blocks that only exchange signals.
pub trait Block: Send {
    /// Handles one signal addressed to this block.
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>);
}

/// Where a context puts the signals a block sends: one variant per runtime. A closed enum
/// rather than a trait object so that the multi-threaded send path inlines into the block.
pub(crate) enum Sink<'a> {
    Threads(&'a mut Router),
    Simulation(&'a mut Network),
}

impl Sink<'_> {
    #[inline]
    fn send(&mut self, signal: &Signal) {
        match self {
            Sink::Threads(router) => router.send(signal),
            Sink::Simulation(network) => network.send(signal),
        }
    }

    fn send_delayed(&mut self, signal: &Signal, delay_ns: u64) {
        match self {
            Sink::Threads(router) => router.send_delayed(signal, delay_ns),
            Sink::Simulation(network) => network.send_delayed(signal, delay_ns),
        }
    }

    fn shut_out(&mut self, at: NodeId, node: NodeId) {
        match self {
            Sink::Threads(router) => router.shut_out(node),
            Sink::Simulation(network) => network.shut_out(at, node),
        }
    }

    fn let_in(&mut self, at: NodeId, node: NodeId) {
        match self {
            Sink::Threads(router) => router.let_in(node),
            Sink::Simulation(network) => network.let_in(at, node),
        }
    }

    fn log(&mut self, node: NodeId, level: kista_log::Level, line: &str) {
        match self {
            Sink::Threads(_) => kista_log::eprint_for(level, Some(node.0), "data node", line),
            Sink::Simulation(network) => network.log(node, line),
        }
    }

    fn stop_node(&mut self, node: NodeId, reason: &str) {
        match self {
            Sink::Threads(router) => router.stop_node(reason),
            Sink::Simulation(network) => network.stop_node(node, reason),
        }
    }
}

/// What a block sees of the world while it executes one signal.
pub struct Context<'a> {
    address: BlockAddress,
    now_ns: u64,
    rng: &'a mut Rng,
    sink: Sink<'a>,
    sections: &'a SectionPool,
    /// The section of the signal being executed, until the block takes it.
    incoming_section: SectionHandle,
    /// The executing signal's section when it came inline (its length is in the handle),
    /// copied out so that blocks can borrow it like a pooled one.
    inline_section: [u8; INLINE_SECTION_BYTES_MAX],
}

impl<'a> Context<'a> {
    /// Made by a runtime for a batch of signals executed at one time.
    pub(crate) fn new(
        now_ns: u64,
        rng: &'a mut Rng,
        sink: Sink<'a>,
        sections: &'a SectionPool,
    ) -> Self {
        Self {
            address: BlockAddress::default(),
            now_ns,
            rng,
            sink,
            sections,
            incoming_section: SectionHandle::NONE,
            inline_section: [0; INLINE_SECTION_BYTES_MAX],
        }
    }

    /// Prepares the context for executing `signal`.
    #[inline]
    pub(crate) fn begin(&mut self, signal: &Signal) {
        self.address = signal.receiver();
        self.incoming_section = signal.section();
        if self.incoming_section.is_inline() {
            let bytes = signal.inline_section();
            self.inline_section[..bytes.len()].copy_from_slice(bytes);
        }
    }

    /// Ends a signal's execution, releasing its section unless the block took it.
    #[inline]
    pub(crate) fn finish(&mut self) {
        let untaken = std::mem::replace(&mut self.incoming_section, SectionHandle::NONE);
        if untaken.is_pooled() {
            self.sections.release(untaken);
        }
    }

    /// The address of the block executing.
    #[inline]
    pub fn address(&self) -> BlockAddress {
        self.address
    }

    /// Nanoseconds since the runtime started: real in production, virtual in simulation.
    /// Constant while one signal executes, and never earlier than that signal's arrival at
    /// the node (the clock is read after the signals of a batch are taken).
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    #[inline]
    pub fn random_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// Sends a signal now. Signals from one thread to another arrive in the order sent.
    #[inline]
    pub fn send(&mut self, signal: Signal) {
        self.sink.send(&signal);
    }

    /// Sends `message` from this block to `receiver`.
    #[inline]
    pub fn send_typed<T: TypedSignal>(&mut self, receiver: BlockAddress, message: &T) {
        let signal = message.to_signal(receiver, self.address);
        self.sink.send(&signal);
    }

    /// Sends a signal once `delay` has passed (timeouts, heartbeats, periodic work).
    pub fn send_delayed(&mut self, signal: Signal, delay: Duration) {
        let delay_ns = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
        self.sink.send_delayed(&signal, delay_ns);
    }

    /// The bytes of the executing signal's section, if it has one the block has not taken.
    pub fn section(&self) -> Option<SectionGuard<'_>> {
        let incoming = self.incoming_section;
        if incoming.is_inline() {
            let bytes = &self.inline_section[..incoming.inline_len()];
            return Some(SectionGuard::inline(bytes));
        }
        incoming.is_pooled().then(|| self.sections.read(incoming))
    }

    /// The bytes of a section the block holds (taken or allocated earlier).
    pub fn held_section(&self, handle: SectionHandle) -> SectionGuard<'_> {
        self.sections.read(handle)
    }

    /// Keeps the executing signal's section beyond this execution (to forward it or hold
    /// it); otherwise the runtime releases it when `execute` returns. `Ok(None)` when the
    /// signal has no section. A section that came inline moves to a pooled buffer here, which
    /// fails when the pool has none free.
    pub fn take_section(&mut self) -> Result<Option<SectionHandle>, SectionPoolExhausted> {
        let handle = std::mem::replace(&mut self.incoming_section, SectionHandle::NONE);
        if handle.is_inline() {
            let bytes = &self.inline_section[..handle.inline_len()];
            return self.sections.allocate(bytes).map(Some);
        }
        Ok(handle.is_pooled().then_some(handle))
    }

    /// Copies `bytes` into a new pooled section, to attach to a signal with
    /// [`Context::attach_section`].
    pub fn allocate_section(
        &mut self,
        bytes: &[u8],
    ) -> Result<SectionHandle, SectionPoolExhausted> {
        self.sections.allocate(bytes)
    }

    /// Sends `signal` with a copy of `bytes` as its section (none when empty). A signal for
    /// another node or a client goes straight to the transport, which copies the bytes into
    /// its outgoing buffer; one for this node gets a pooled section. Fails, sending nothing,
    /// when the pool has no section free.
    #[inline]
    pub fn send_with_bytes(
        &mut self,
        mut signal: Signal,
        bytes: &[u8],
    ) -> Result<(), SectionPoolExhausted> {
        debug_assert!(
            signal.section().is_none(),
            "signal already carries a section"
        );
        if !bytes.is_empty() {
            if let Sink::Threads(router) = &mut self.sink {
                if let Some(queued) = router.send_remote_with_bytes(&signal, bytes) {
                    return queued.map_err(|_| SectionPoolExhausted::TooLarge(bytes.len()));
                }
            }
            signal.header.section = self.sections.allocate(bytes)?;
        }
        self.sink.send(&signal);
        Ok(())
    }

    /// Gives a section to a signal; whoever executes the signal then owns it.
    pub fn attach_section(&self, signal: &mut Signal, section: SectionHandle) {
        debug_assert!(
            signal.section().is_none(),
            "signal already carries a section"
        );
        signal.header.section = section;
    }

    /// Asks the node's file-system block to perform `request`; `data` (a path for `Open`,
    /// the bytes for `Write`) travels in a section. The [`FileReply`](crate::io::FileReply)
    /// comes back to this block as a signal.
    pub fn request_io(
        &mut self,
        request: &FileRequest,
        data: &[u8],
    ) -> Result<(), SectionPoolExhausted> {
        let section = match data.is_empty() {
            true => None,
            false => Some(self.sections.allocate(data)?),
        };
        self.send_file_request(request, section);
        Ok(())
    }

    /// [`Context::request_io`] with `data` handed over, not copied: the `io` thread
    /// writes from it. Returns an emptied buffer for the next write (a pooled section's).
    pub fn request_io_owned(
        &mut self,
        request: &FileRequest,
        data: Vec<u8>,
    ) -> Result<Vec<u8>, SectionPoolExhausted> {
        let (section, spare) = self.sections.allocate_owned(data)?;
        self.send_file_request(request, Some(section));
        Ok(spare)
    }

    /// Sends `request`, with its data in `section`, to this node's file-system block.
    fn send_file_request(&mut self, request: &FileRequest, section: Option<SectionHandle>) {
        let file_system = BlockAddress::new(self.address.node(), FILE_SYSTEM_BLOCK, 0);
        let mut signal = request.to_signal(file_system, self.address);
        if let Some(section) = section {
            self.attach_section(&mut signal, section);
        }
        self.sink.send(&signal);
    }

    /// Drops every signal from `node` to this node and from this node to it, from now on,
    /// until [`Context::let_in`]: for a node the cluster declared failed, which may wake up.
    pub fn shut_out(&mut self, node: NodeId) {
        self.sink.shut_out(self.address.node(), node);
    }

    /// Talks to `node` again (it restarted and rejoins).
    pub fn let_in(&mut self, node: NodeId) {
        self.sink.let_in(self.address.node(), node);
    }

    /// Writes a line to the node's log, for operators (the progress of long work, what
    /// a start found on disk): standard error of a node's process, kept by the
    /// simulation for tests to read.
    pub fn log(&mut self, line: &str) {
        self.sink
            .log(self.address.node(), kista_log::Level::Info, line);
    }

    /// Writes a warning to the node's log: something an operator should look at, which
    /// the node worked around (a damaged file refused, a peer's copy taken instead).
    pub fn warn(&mut self, line: &str) {
        self.sink
            .log(self.address.node(), kista_log::Level::Warn, line);
    }

    /// Stops this whole node: it may not go on (it lost arbitration, its cluster cannot
    /// survive). Whoever started the node learns `reason`.
    pub fn stop_node(&mut self, reason: &str) {
        self.sink.stop_node(self.address.node(), reason);
    }

    /// Returns a section the block took or allocated and no longer needs.
    pub fn release_section(&mut self, section: SectionHandle) {
        self.sections.release(section);
    }

    /// Runs one signal on `block` with this context.
    #[inline]
    pub(crate) fn execute(&mut self, block: &mut dyn Block, signal: &Signal) {
        self.begin(signal);
        block.execute(signal, self);
        self.finish();
    }
}
