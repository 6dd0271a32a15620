//! The relay load: blocks that pass numbered tokens between each other at random, checking
//! as they go that signals from each sender arrive in order, once, with their sections
//! intact.
//!
//! It drives `kista demo`, the runtime benchmarks and the runtime's own tests: one relay
//! block on every module instance of a layout makes every thread send to and receive from
//! every other.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kista_signal::{
    BlockAddress, BlockId, NodeId, PayloadError, PayloadReader, PayloadWriter, Signal,
    SignalNumber, TypedSignal,
};

use crate::block::{Block, Context};
use crate::module::ModuleInstance;
use crate::scheduler::BlockRegistration;
use crate::thread_config::ThreadLayout;

/// The block id relay blocks use; instance `k` is the `k`-th relay.
pub const RELAY_BLOCK: BlockId = BlockId(250);

/// Bytes of the section a relay attaches to every `section_every`-th ping.
const SECTION_BYTES: usize = 64;

/// Starts a relay: it sends its tokens.
struct Start;

impl TypedSignal for Start {
    const NUMBER: SignalNumber = SignalNumber(1);
    fn write(&self, _: &mut PayloadWriter<'_>) {}
    fn read(_: &mut PayloadReader<'_>) -> Result<Self, PayloadError> {
        Ok(Start)
    }
}

/// A token on its way: `sequence` numbers the pings from its sender to its receiver.
struct Ping {
    sequence: u64,
    hops_left: u32,
}

impl TypedSignal for Ping {
    const NUMBER: SignalNumber = SignalNumber(2);
    fn write(&self, payload: &mut PayloadWriter<'_>) {
        payload.put_u64(self.sequence);
        payload.put_u32(self.hops_left);
    }
    fn read(payload: &mut PayloadReader<'_>) -> Result<Self, PayloadError> {
        Ok(Ping {
            sequence: payload.u64()?,
            hops_left: payload.u32()?,
        })
    }
}

/// What the relays observed, shared with whoever runs them.
pub struct RelayReport {
    starters: usize,
    /// `[from * relays + to]`.
    sent: Vec<AtomicU64>,
    received: Vec<AtomicU64>,
    finished_tokens: AtomicU64,
    out_of_order: AtomicU64,
    bad_sections: AtomicU64,
    pub tokens: u64,
    pub hops: u32,
}

/// Totals after a relay run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelaySummary {
    pub pings_sent: u64,
    pub pings_received: u64,
    /// Sender/receiver pairs whose counts differ (lost or duplicated pings).
    pub mismatched_pairs: usize,
    pub out_of_order: u64,
    pub bad_sections: u64,
    pub finished_tokens: u64,
}

impl RelayReport {
    pub fn finished_tokens(&self) -> u64 {
        self.finished_tokens.load(Ordering::Relaxed)
    }

    pub fn all_tokens_finished(&self) -> bool {
        self.finished_tokens() == self.tokens
    }

    /// Signals the load executes in all when every token finishes: one start per starter plus
    /// every hop of every token.
    pub fn total_signals(&self) -> u64 {
        self.starters as u64 + self.tokens * (u64::from(self.hops) + 1)
    }

    pub fn summary(&self) -> RelaySummary {
        let load = |counters: &[AtomicU64]| -> Vec<u64> {
            counters.iter().map(|c| c.load(Ordering::Relaxed)).collect()
        };
        let (sent, received) = (load(&self.sent), load(&self.received));
        RelaySummary {
            pings_sent: sent.iter().sum(),
            pings_received: received.iter().sum(),
            mismatched_pairs: sent.iter().zip(&received).filter(|(s, r)| s != r).count(),
            out_of_order: self.out_of_order.load(Ordering::Relaxed),
            bad_sections: self.bad_sections.load(Ordering::Relaxed),
            finished_tokens: self.finished_tokens(),
        }
    }
}

/// The blocks and start signals of a relay load, and the report they fill.
pub struct RelayLoad {
    pub blocks: Vec<BlockRegistration>,
    pub initial_signals: Vec<Signal>,
    pub report: Arc<RelayReport>,
}

/// Shape of a relay load.
#[derive(Clone, Copy, Debug)]
pub struct RelayOptions {
    /// Tokens each relay starts.
    pub tokens_per_relay: u32,
    /// Hops each token makes before it finishes.
    pub hops: u32,
    /// Every n-th ping a relay sends carries a section (0 = never).
    pub section_every: u32,
    /// Only the first this many relays start tokens (`usize::MAX`: all of them); one
    /// starter with one token makes a strict ping-pong.
    pub starters: usize,
}

impl Default for RelayOptions {
    fn default() -> Self {
        Self {
            tokens_per_relay: 16,
            hops: 1000,
            section_every: 0,
            starters: usize::MAX,
        }
    }
}

/// One relay on every module instance of `layout`: signals flow within threads and between
/// every pair of them.
pub fn relay_on_every_module(
    layout: &ThreadLayout,
    node: NodeId,
    options: RelayOptions,
) -> RelayLoad {
    let hosts = layout
        .threads
        .iter()
        .flat_map(|t| t.modules.iter().copied());
    relay_load(hosts.collect(), node, options)
}

/// One relay per thread of `layout`: every ping crosses from one thread to another.
pub fn relay_on_every_thread(
    layout: &ThreadLayout,
    node: NodeId,
    options: RelayOptions,
) -> RelayLoad {
    let hosts = layout.threads.iter().map(|t| t.modules[0]);
    relay_load(hosts.collect(), node, options)
}

fn relay_load(hosts: Vec<ModuleInstance>, node: NodeId, options: RelayOptions) -> RelayLoad {
    let relays = hosts.len();
    let starters = relays.min(options.starters);
    let addresses: Vec<BlockAddress> = (0..relays)
        .map(|k| BlockAddress::new(node, RELAY_BLOCK, k as u16))
        .collect();
    let report = Arc::new(RelayReport {
        starters,
        sent: (0..relays * relays).map(|_| AtomicU64::new(0)).collect(),
        received: (0..relays * relays).map(|_| AtomicU64::new(0)).collect(),
        finished_tokens: AtomicU64::new(0),
        out_of_order: AtomicU64::new(0),
        bad_sections: AtomicU64::new(0),
        tokens: starters as u64 * u64::from(options.tokens_per_relay),
        hops: options.hops,
    });
    let blocks = hosts
        .iter()
        .enumerate()
        .map(|(index, &host)| BlockRegistration {
            block: RELAY_BLOCK,
            instance: index as u16,
            host,
            implementation: Box::new(RelayBlock {
                index,
                peers: addresses.clone(),
                next_sequence: vec![0; relays],
                expected_sequence: vec![0; relays],
                sends: 0,
                options,
                report: Arc::clone(&report),
            }),
        })
        .collect();
    let initial_signals = addresses[..starters]
        .iter()
        .map(|&to| Start.to_signal(to, to))
        .collect();
    RelayLoad {
        blocks,
        initial_signals,
        report,
    }
}

struct RelayBlock {
    index: usize,
    peers: Vec<BlockAddress>,
    next_sequence: Vec<u64>,
    expected_sequence: Vec<u64>,
    sends: u64,
    options: RelayOptions,
    report: Arc<RelayReport>,
}

impl Block for RelayBlock {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        if let Ok(ping) = Ping::from_signal(signal) {
            self.receive(signal, &ping, ctx);
        } else if Start::from_signal(signal).is_ok() {
            for _ in 0..self.options.tokens_per_relay {
                self.send_ping(self.options.hops, ctx);
            }
        }
    }
}

impl RelayBlock {
    fn receive(&mut self, signal: &Signal, ping: &Ping, ctx: &mut Context<'_>) {
        let from = usize::from(signal.sender().instance());
        let pair = from * self.peers.len() + self.index;
        self.report.received[pair].fetch_add(1, Ordering::Relaxed);
        if ping.sequence != self.expected_sequence[from] {
            self.report.out_of_order.fetch_add(1, Ordering::Relaxed);
        }
        self.expected_sequence[from] = ping.sequence + 1;
        if let Some(section) = ctx.section() {
            if section.len() != SECTION_BYTES || section[..8] != ping.sequence.to_le_bytes() {
                self.report.bad_sections.fetch_add(1, Ordering::Relaxed);
            }
        }
        if ping.hops_left == 0 {
            self.report.finished_tokens.fetch_add(1, Ordering::Relaxed);
        } else {
            self.send_ping(ping.hops_left - 1, ctx);
        }
    }

    fn send_ping(&mut self, hops_left: u32, ctx: &mut Context<'_>) {
        let to = if self.peers.len() == 1 {
            0
        } else {
            // Any peer but ourselves.
            let pick = ctx.random_u64() % (self.peers.len() as u64 - 1);
            let pick = pick as usize;
            if pick >= self.index {
                pick + 1
            } else {
                pick
            }
        };
        let sequence = self.next_sequence[to];
        self.next_sequence[to] += 1;
        let mut signal = Ping {
            sequence,
            hops_left,
        }
        .to_signal(self.peers[to], ctx.address());
        self.sends += 1;
        let every = u64::from(self.options.section_every);
        if every > 0 && self.sends % every == 0 {
            let mut bytes = [0u8; SECTION_BYTES];
            bytes[..8].copy_from_slice(&sequence.to_le_bytes());
            // A full pool only means this ping travels without a section; the receiver
            // checks sections where they arrive, so nothing is miscounted.
            if let Ok(section) = ctx.allocate_section(&bytes) {
                ctx.attach_section(&mut signal, section);
            }
        }
        self.report.sent[self.index * self.peers.len() + to].fetch_add(1, Ordering::Relaxed);
        ctx.send(signal);
    }
}
