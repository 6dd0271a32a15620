//! The deterministic simulation runtime: the same blocks, one thread, a virtual clock, and a
//! seeded random generator choosing how deliveries interleave.
//!
//! Every signal gets a random delivery latency (up to `latency_ns_max`), but never arrives
//! before an earlier signal between the same sender and receiver block: FIFO per pair, the
//! only order the multi-threaded runtime promises for every layout. Events run in order of
//! virtual time (ties in order of sending), so a seed fixes the whole run: the same seed
//! executes the same signals in the same order at the same virtual times, byte for byte.
//!
//! The network between nodes can fail as real ones do: a node can crash (its blocks vanish
//! with what they held) and restart, two nodes can be cut apart or slowed down, and a node
//! can shut another out or stop itself through its blocks' `Context`. Signals that meet a
//! failure are dropped where a real network would lose them: at delivery.

use std::collections::{HashMap, HashSet, VecDeque};

use kista_signal::{wire, BlockAddress, NodeId, Signal};

use crate::block::{Block, Context, Sink};
use crate::fence::passes_gate;
use crate::io::SimulatedDisk;
use crate::rng::Rng;
use crate::scheduler::BlockRegistration;
use crate::section_pool::{SectionPool, SECTIONS_MAX_DEFAULT};
use crate::timed_queue::TimedQueue;

/// Signals in flight in one simulation; a run that exceeds it has a runaway block.
pub const SIMULATION_EVENTS_MAX: usize = 1 << 22;

#[derive(Clone, Debug)]
pub struct SimulationOptions {
    pub seed: u64,
    /// Each signal takes between 0 and this many virtual nanoseconds to arrive.
    pub latency_ns_max: u64,
    /// Keep the byte trace of executed signals (for replay comparisons); the digest is kept
    /// either way.
    pub record_trace: bool,
    pub sections_max: u32,
}

impl Default for SimulationOptions {
    fn default() -> Self {
        Self {
            seed: 1,
            latency_ns_max: 10_000,
            record_trace: false,
            sections_max: SECTIONS_MAX_DEFAULT,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimulationError {
    #[error("simulation still busy after {0} steps")]
    StepLimit(u64),
    #[error("two blocks registered at {0}")]
    DuplicateBlock(BlockAddress),
    #[error("node {0} is running; only a crashed node restarts")]
    NodeRunning(NodeId),
}

/// The event queue, seen by blocks as their signal sink.
pub(crate) struct Network {
    now_ns: u64,
    latency_ns_max: u64,
    rng: Rng,
    events: TimedQueue,
    /// Latest delivery time per (sender, receiver) word pair, to keep pairs FIFO.
    last_ready_ns: HashMap<(u32, u32), u64>,
    /// Crashed or stopped nodes: nothing reaches them.
    down: HashSet<NodeId>,
    /// Pairs of nodes cut apart, both ways.
    cut: HashSet<(NodeId, NodeId)>,
    /// Signals caught on a cut link, in order, until it heals. A link between cluster
    /// nodes is TCP: it delivers everything in order or breaks; a cut that heals before the
    /// nodes declare each other failed loses nothing, and one that does not is fenced.
    held_by_cut: Vec<Signal>,
    /// (at, from): `at` shut `from` out.
    shut_out: HashSet<(NodeId, NodeId)>,
    /// Extra latency between two nodes, both ways.
    slow: HashMap<(NodeId, NodeId), u64>,
    /// Nodes whose blocks asked to stop them, with why, not yet stopped.
    stop_requests: Vec<(NodeId, String)>,
    /// Paused nodes (a stopped process): what arrives for them waits, in order.
    paused: HashSet<NodeId>,
    held: Vec<Signal>,
    /// Lines the nodes' blocks logged, oldest first, the last `LOG_LINES_MAX`.
    log: VecDeque<(NodeId, String)>,
}

/// Log lines the simulation keeps.
const LOG_LINES_MAX: usize = 10_000;

impl Network {
    fn schedule(&mut self, ready_ns: u64, signal: &Signal) {
        self.events.add(ready_ns, *signal);
    }

    pub(crate) fn shut_out(&mut self, at: NodeId, node: NodeId) {
        self.shut_out.insert((at, node));
    }

    pub(crate) fn let_in(&mut self, at: NodeId, node: NodeId) {
        self.shut_out.remove(&(at, node));
    }

    pub(crate) fn log(&mut self, node: NodeId, line: &str) {
        if self.log.len() == LOG_LINES_MAX {
            self.log.pop_front();
        }
        self.log.push_back((node, line.to_string()));
    }

    pub(crate) fn stop_node(&mut self, node: NodeId, reason: &str) {
        self.stop_requests.push((node, reason.to_string()));
    }

    /// Whether `signal` is lost on its way: its receiver is down, or shut out by its
    /// sender's node (either side's fence stops it).
    fn loses(&self, signal: &Signal) -> bool {
        let (from, to) = (signal.sender().node(), signal.receiver().node());
        let fenced = self.shut_out.contains(&(to, from)) || self.shut_out.contains(&(from, to));
        self.down.contains(&to) || (from != to && fenced && !passes_gate(signal))
    }
}

impl Network {
    pub fn send(&mut self, signal: &Signal) {
        let (from, to) = (signal.sender().node(), signal.receiver().node());
        let extra = self.slow.get(&(from, to)).copied().unwrap_or(0);
        let latency = self.rng.below(self.latency_ns_max + 1) + extra;
        let pair = (signal.sender().to_word(), signal.receiver().to_word());
        let last = self.last_ready_ns.entry(pair).or_insert(0);
        let ready_ns = (self.now_ns + latency).max(*last);
        *last = ready_ns;
        self.schedule(ready_ns, signal);
    }

    pub fn send_delayed(&mut self, signal: &Signal, delay_ns: u64) {
        self.schedule(self.now_ns.saturating_add(delay_ns), signal);
    }
}

/// One or more nodes' blocks running in virtual time.
pub struct Simulation {
    blocks: HashMap<BlockAddress, Box<dyn Block>>,
    network: Network,
    block_rng: Rng,
    sections: SectionPool,
    executed: u64,
    record_trace: bool,
    trace: Vec<u8>,
    trace_digest: u64,
    /// Nodes their own blocks stopped, with the reason, in order.
    stopped: Vec<(NodeId, String)>,
    /// Each node's disk, which outlives its blocks; a crash loses what it had not synced.
    disks: HashMap<NodeId, SimulatedDisk>,
    /// Chooses what a crash keeps of unsynced writes.
    disk_rng: Rng,
}

impl Simulation {
    pub fn new(options: &SimulationOptions) -> Self {
        let mut seeds = Rng::new(options.seed);
        Self {
            blocks: HashMap::new(),
            network: Network {
                now_ns: 0,
                latency_ns_max: options.latency_ns_max,
                rng: Rng::new(seeds.next_u64()),
                events: TimedQueue::with_capacity(SIMULATION_EVENTS_MAX),
                last_ready_ns: HashMap::new(),
                down: HashSet::new(),
                cut: HashSet::new(),
                held_by_cut: Vec::new(),
                shut_out: HashSet::new(),
                slow: HashMap::new(),
                stop_requests: Vec::new(),
                paused: HashSet::new(),
                held: Vec::new(),
                log: VecDeque::new(),
            },
            block_rng: Rng::new(seeds.next_u64()),
            sections: SectionPool::new(options.sections_max),
            executed: 0,
            record_trace: options.record_trace,
            trace: Vec::new(),
            trace_digest: FNV_OFFSET,
            stopped: Vec::new(),
            disks: HashMap::new(),
            disk_rng: Rng::new(seeds.next_u64()),
        }
    }

    /// Gives `node` its disk: the file-system blocks of each of its lives must use clones
    /// of it, and each crash of the node crashes it.
    pub fn attach_disk(&mut self, node: NodeId, disk: SimulatedDisk) {
        self.disks.insert(node, disk);
    }

    pub fn add_block(
        &mut self,
        address: BlockAddress,
        block: Box<dyn Block>,
    ) -> Result<(), SimulationError> {
        if self.blocks.contains_key(&address) {
            return Err(SimulationError::DuplicateBlock(address));
        }
        self.blocks.insert(address, block);
        Ok(())
    }

    /// Adds blocks registered for the multi-threaded runtime to `node` (hosts do not matter
    /// here: the simulation has one thread).
    pub fn add_registrations(
        &mut self,
        node: NodeId,
        blocks: Vec<BlockRegistration>,
    ) -> Result<(), SimulationError> {
        for registration in blocks {
            let address = BlockAddress::new(node, registration.block, registration.instance);
            self.add_block(address, registration.implementation)?;
        }
        Ok(())
    }

    /// Sends a signal from outside the simulated blocks.
    pub fn inject(&mut self, signal: Signal) {
        self.network.send(&signal);
    }

    /// Executes the next signal (or drops it, when the network loses it); false when
    /// nothing is left to do.
    pub fn step(&mut self) -> bool {
        let Some((ready_ns, signal)) = self.network.events.pop_earliest() else {
            return false;
        };
        debug_assert!(
            ready_ns >= self.network.now_ns,
            "virtual time ran backwards"
        );
        self.network.now_ns = ready_ns;
        if self.network.loses(&signal) {
            if signal.section().is_pooled() {
                self.sections.release(signal.section());
            }
            return true;
        }
        let (from, to) = (signal.sender().node(), signal.receiver().node());
        if self.network.cut.contains(&(from, to)) {
            self.network.held_by_cut.push(signal);
            return true;
        }
        if self.network.paused.contains(&to) {
            self.network.held.push(signal);
            return true;
        }
        self.record(ready_ns, &signal);
        let receiver = signal.receiver();
        let Some(block) = self.blocks.get_mut(&receiver) else {
            panic!("signal {:?} to {receiver}: no block there", signal.number());
        };
        let now_ns = self.network.now_ns;
        let sink = Sink::Simulation(&mut self.network);
        let mut ctx = Context::new(now_ns, &mut self.block_rng, sink, &self.sections);
        ctx.execute(block.as_mut(), &signal);
        self.executed += 1;
        while let Some((node, reason)) = self.network.stop_requests.pop() {
            self.crash(node);
            self.stopped.push((node, reason));
        }
        true
    }

    /// Crashes `node` as a power failure would: its blocks and everything they held vanish,
    /// signals to it are lost from now on (also those already on their way), and its disk
    /// keeps only what was synced and a seeded part of what was not (a node stopping itself
    /// is taken as badly, the harshest case).
    pub fn crash(&mut self, node: NodeId) {
        self.blocks.retain(|address, _| address.node() != node);
        if let Some(disk) = self.disks.get(&node) {
            disk.crash(&mut self.disk_rng);
        }
        self.network.down.insert(node);
        self.network.shut_out.retain(|&(at, _)| at != node);
    }

    /// Starts a crashed node again with fresh blocks; the other nodes still shut it out
    /// if they did. What its earlier life sent or was sent and is still on its way is lost:
    /// a new process has new connections, and its old timers died with it.
    pub fn restart(
        &mut self,
        node: NodeId,
        blocks: Vec<BlockRegistration>,
    ) -> Result<(), SimulationError> {
        if !self.network.down.contains(&node) {
            return Err(SimulationError::NodeRunning(node));
        }
        let from_earlier_life =
            |signal: &Signal| signal.sender().node() == node || signal.receiver().node() == node;
        let mut lost = self.network.events.remove_where(from_earlier_life);
        for held in [&mut self.network.held, &mut self.network.held_by_cut] {
            let (gone, kept) = std::mem::take(held)
                .into_iter()
                .partition(from_earlier_life);
            *held = kept;
            lost.extend::<Vec<Signal>>(gone);
        }
        for signal in lost.iter().filter(|s| s.section().is_pooled()) {
            self.sections.release(signal.section());
        }
        self.network.down.remove(&node);
        self.add_registrations(node, blocks)
    }

    /// The lines `node`'s blocks logged (the latest `LOG_LINES_MAX` of all nodes').
    pub fn log_of(&self, node: NodeId) -> Vec<&str> {
        let lines = self.network.log.iter().filter(|(n, _)| *n == node);
        lines.map(|(_, line)| line.as_str()).collect()
    }

    /// Whether node `at` shut `node` out (its fence stops everything between them).
    pub fn shuts_out(&self, at: NodeId, node: NodeId) -> bool {
        self.network.shut_out.contains(&(at, node))
    }

    /// Whether `node` is down (crashed, or stopped by its blocks).
    pub fn is_down(&self, node: NodeId) -> bool {
        self.network.down.contains(&node)
    }

    /// Nodes their own blocks stopped, with the reason given, in order.
    pub fn stopped_nodes(&self) -> &[(NodeId, String)] {
        &self.stopped
    }

    /// Pauses `node` as SIGSTOP pauses a process: nothing runs there, not even its timers,
    /// and whatever arrives for it waits until [`Self::resume`].
    pub fn pause(&mut self, node: NodeId) {
        self.network.paused.insert(node);
    }

    /// Lets a paused node run again: everything that waited for it arrives now, in order.
    pub fn resume(&mut self, node: NodeId) {
        self.network.paused.remove(&node);
        let held = std::mem::take(&mut self.network.held);
        let now = self.network.now_ns;
        for signal in held {
            if signal.receiver().node() == node {
                self.network.schedule(now, &signal);
            } else {
                self.network.held.push(signal);
            }
        }
    }

    /// Cuts `a` and `b` apart: every signal between them waits, in order, until
    /// [`Self::heal`] (as TCP holds what it cannot deliver); one the receiver's fence or a
    /// crash makes undeliverable by then is lost.
    pub fn cut(&mut self, a: NodeId, b: NodeId) {
        self.network.cut.insert((a, b));
        self.network.cut.insert((b, a));
    }

    /// Undoes every cut and slowdown; what waited on a cut link arrives now, in order.
    pub fn heal(&mut self) {
        self.network.cut.clear();
        self.network.slow.clear();
        let now = self.network.now_ns;
        for signal in std::mem::take(&mut self.network.held_by_cut) {
            self.network.schedule(now, &signal);
        }
    }

    /// Adds `extra_ns` to the latency of every signal between `a` and `b`.
    pub fn slow_down(&mut self, a: NodeId, b: NodeId, extra_ns: u64) {
        self.network.slow.insert((a, b), extra_ns);
        self.network.slow.insert((b, a), extra_ns);
    }

    /// Runs until no signal is pending, or fails after `steps_max` steps.
    pub fn run_until_idle(&mut self, steps_max: u64) -> Result<u64, SimulationError> {
        let mut steps = 0;
        while self.step() {
            steps += 1;
            if steps >= steps_max && !self.network.events.is_empty() {
                return Err(SimulationError::StepLimit(steps));
            }
        }
        Ok(steps)
    }

    /// Runs every signal due up to virtual time `until_ns`.
    pub fn run_until(&mut self, until_ns: u64) {
        while self
            .network
            .events
            .next_due_ns()
            .is_some_and(|due| due <= until_ns)
        {
            self.step();
        }
        self.network.now_ns = self.network.now_ns.max(until_ns);
    }

    pub fn now_ns(&self) -> u64 {
        self.network.now_ns
    }

    pub fn executed(&self) -> u64 {
        self.executed
    }

    pub fn sections(&self) -> &SectionPool {
        &self.sections
    }

    /// Every executed signal as `time_ns` (8 bytes, little-endian) followed by its wire
    /// form and section; empty unless `record_trace` was set.
    pub fn trace(&self) -> &[u8] {
        &self.trace
    }

    /// FNV-1a digest of the trace, kept even when the trace itself is not.
    pub fn trace_digest(&self) -> u64 {
        self.trace_digest
    }

    fn record(&mut self, ready_ns: u64, signal: &Signal) {
        let mut entry = Vec::with_capacity(160);
        entry.extend_from_slice(&ready_ns.to_le_bytes());
        let section = signal.section();
        let encoded = if section.is_pooled() {
            wire::encode(signal, &self.sections.read(section), &mut entry)
        } else {
            wire::encode(signal, signal.inline_section(), &mut entry)
        };
        debug_assert!(encoded.is_ok(), "pool sections never exceed the wire limit");
        for &byte in &entry {
            self.trace_digest = (self.trace_digest ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
        }
        if self.record_trace {
            self.trace.extend_from_slice(&entry);
        }
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
