//! Faults injected into the links between cluster members, so tests can split a cluster or
//! slow it down without root privileges. A *cut* link delivers nothing either way while its
//! TCP connection stays open, as when a cable between two switches is pulled: what each
//! side sends waits, in order, until the link heals (TCP loses nothing; if the cut lasts,
//! the nodes declare each other failed and their fences drop it then). A *delayed* link
//! holds every signal this node sends to that peer for a while before it goes (in order),
//! as a long or congested route would. A link holding more than [`DELAYED_BYTES_MAX`] is
//! broken off: its connection closes, as TCP's would give up.
//!
//! The management server sends the instruction as a [`link_fault`] signal to
//! [`LINK_FAULT_BLOCK`] on each of the two nodes; the transport takes that signal for itself
//! (no block sees it) and only from a peer (the management server is one).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use kista_signal::{BlockAddress, BlockId, NodeId, Signal, SignalNumber};

/// The address the transport answers for itself; no block has it.
pub const LINK_FAULT_BLOCK: BlockId = BlockId(253);
const LINK_FAULT: SignalNumber = SignalNumber(1);
/// The longest delay a link may be given.
pub const LINK_DELAY_MS_MAX: u32 = 60_000;
/// Bytes the delayed and cut links may hold back together before a link that would hold
/// more is broken off.
pub const DELAYED_BYTES_MAX: usize = 256 << 20;

/// What to do to a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkFault {
    /// Drop every signal both ways.
    Cut,
    /// Hold every signal sent this long before it goes.
    Delay { ms: u32 },
    /// Back to normal.
    Heal,
}

/// Tells node `at` to apply `fault` to its link to `peer`.
pub fn link_fault(at: NodeId, from: BlockAddress, peer: NodeId, fault: LinkFault) -> Signal {
    let receiver = BlockAddress::new(at, LINK_FAULT_BLOCK, 0);
    let (kind, ms) = match fault {
        LinkFault::Heal => (0, 0),
        LinkFault::Cut => (1, 0),
        LinkFault::Delay { ms } => (2, ms.min(LINK_DELAY_MS_MAX)),
    };
    Signal::with_words(LINK_FAULT, receiver, from, &[u32::from(peer.0), kind, ms])
}

/// Frames held back on delayed or cut links, oldest first; `None` is due when the cut heals.
#[derive(Default)]
struct Delayed {
    frames: VecDeque<(Option<Instant>, NodeId, Vec<u8>)>,
    bytes: usize,
    stopping: bool,
}

/// The faults of this node's links, read on every batch sent or received.
pub struct LinkFaults {
    cut: [AtomicBool; 256],
    delay_ms: [AtomicU32; 256],
    /// Frames held back per peer (so a link whose delay ends sends them first).
    held: [AtomicU32; 256],
    delayed: Mutex<Delayed>,
    due: Condvar,
}

impl Default for LinkFaults {
    fn default() -> Self {
        Self {
            cut: std::array::from_fn(|_| AtomicBool::new(false)),
            delay_ms: std::array::from_fn(|_| AtomicU32::new(0)),
            held: std::array::from_fn(|_| AtomicU32::new(0)),
            delayed: Mutex::default(),
            due: Condvar::new(),
        }
    }
}

impl LinkFaults {
    #[inline]
    pub fn is_cut(&self, peer: NodeId) -> bool {
        self.cut[usize::from(peer.0)].load(Ordering::Relaxed)
    }

    /// Whether frames for `peer` must go through the delay line (it is cut or delayed, or
    /// frames from before still wait there).
    #[inline]
    pub fn is_delayed(&self, peer: NodeId) -> bool {
        let index = usize::from(peer.0);
        self.cut[index].load(Ordering::Relaxed)
            || self.delay_ms[index].load(Ordering::Relaxed) > 0
            || self.held[index].load(Ordering::Relaxed) > 0
    }

    /// Applies `signal` if it is a link fault instruction; whether it was one.
    pub(crate) fn apply(&self, signal: &Signal) -> bool {
        if signal.receiver().block() != LINK_FAULT_BLOCK {
            return false;
        }
        if let (LINK_FAULT, [peer, kind, ms, ..]) = (signal.number(), signal.words()) {
            if let Ok(peer) = u8::try_from(*peer) {
                let index = usize::from(peer);
                let cut = *kind == 1;
                let delay = if *kind == 2 {
                    (*ms).min(LINK_DELAY_MS_MAX)
                } else {
                    0
                };
                let mut delayed = self.delayed();
                self.cut[index].store(cut, Ordering::SeqCst);
                self.delay_ms[index].store(delay, Ordering::SeqCst);
                if !cut {
                    // What waited for the cut to heal goes now, after what was delayed.
                    let mut last = Instant::now();
                    let of_peer = delayed.frames.iter_mut().filter(|f| f.1 == NodeId(peer));
                    for (due, _, _) in of_peer {
                        match due {
                            Some(at) => last = last.max(*at),
                            None => *due = Some(last),
                        }
                    }
                    self.due.notify_all();
                }
                drop(delayed);
            }
        }
        true
    }

    fn delayed(&self) -> MutexGuard<'_, Delayed> {
        self.delayed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Holds `frames` for `peer` until its delay has passed or its cut healed (taking
    /// them); false when there is no room left, and the link must be broken off.
    #[must_use]
    pub(crate) fn hold(&self, peer: NodeId, frames: &mut Vec<u8>) -> bool {
        let index = usize::from(peer.0);
        let mut delayed = self.delayed();
        if delayed.bytes + frames.len() > DELAYED_BYTES_MAX {
            frames.clear();
            return false;
        }
        let delay_ms = u64::from(self.delay_ms[index].load(Ordering::Relaxed));
        let mut due =
            (!self.is_cut(peer)).then(|| Instant::now() + Duration::from_millis(delay_ms));
        // In order per peer: never before the frames ahead of it (a delay shortened, or a
        // cut still holding earlier frames).
        if let Some((last, _, _)) = delayed
            .frames
            .iter()
            .rev()
            .find(|(_, node, _)| *node == peer)
        {
            due = match (due, last) {
                (Some(due), Some(last)) => Some(due.max(*last)),
                _ => None,
            };
        }
        delayed.bytes += frames.len();
        self.held[index].fetch_add(1, Ordering::SeqCst);
        delayed
            .frames
            .push_back((due, peer, std::mem::take(frames)));
        self.due.notify_one();
        true
    }

    /// Drops what waits for `peer`, whose connection closed (TCP loses what a broken
    /// connection had not delivered).
    pub(crate) fn forget(&self, peer: NodeId) {
        let mut delayed = self.delayed();
        let before = delayed.frames.len();
        let mut freed = 0;
        delayed.frames.retain(|(_, node, frames)| {
            let keep = *node != peer;
            if !keep {
                freed += frames.len();
            }
            keep
        });
        let dropped = before - delayed.frames.len();
        delayed.bytes -= freed;
        self.held[usize::from(peer.0)].fetch_sub(dropped as u32, Ordering::SeqCst);
    }

    /// Runs until [`LinkFaults::stop`]: hands each held batch to `send` once it is due.
    pub(crate) fn release_until_stopped(&self, mut send: impl FnMut(NodeId, &mut Vec<u8>)) {
        let mut delayed = self.delayed();
        loop {
            if delayed.stopping {
                return;
            }
            let now = Instant::now();
            let next_due = delayed.frames.iter().filter_map(|(due, _, _)| *due).min();
            match next_due {
                Some(due) if due <= now => {
                    let position = delayed
                        .frames
                        .iter()
                        .position(|(d, _, _)| *d == Some(due))
                        .unwrap_or(0);
                    if let Some((_, peer, mut frames)) = delayed.frames.remove(position) {
                        delayed.bytes -= frames.len();
                        drop(delayed);
                        send(peer, &mut frames);
                        self.held[usize::from(peer.0)].fetch_sub(1, Ordering::SeqCst);
                        delayed = self.delayed();
                    }
                }
                Some(due) => {
                    delayed = self
                        .due
                        .wait_timeout(delayed, due - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
                None => {
                    delayed = self.due.wait(delayed).unwrap_or_else(|p| p.into_inner());
                }
            }
        }
    }

    pub(crate) fn stop(&self) {
        self.delayed().stopping = true;
        self.due.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mgmd() -> BlockAddress {
        BlockAddress::new(NodeId(49), BlockId(15), 0)
    }

    #[test]
    fn a_link_stays_cut_until_healed_and_other_signals_are_not_taken() {
        let faults = LinkFaults::default();
        assert!(faults.apply(&link_fault(NodeId(1), mgmd(), NodeId(2), LinkFault::Cut)));
        assert!(faults.is_cut(NodeId(2)));
        assert!(!faults.is_cut(NodeId(3)));
        assert!(faults.apply(&link_fault(NodeId(1), mgmd(), NodeId(2), LinkFault::Heal)));
        assert!(!faults.is_cut(NodeId(2)));
        let to_a_block = BlockAddress::new(NodeId(1), BlockId(10), 0);
        assert!(!faults.apply(&Signal::new(SignalNumber(1), to_a_block, mgmd())));
    }

    #[test]
    fn a_cut_link_holds_what_is_sent_until_it_heals() {
        let faults = std::sync::Arc::new(LinkFaults::default());
        faults.apply(&link_fault(NodeId(1), mgmd(), NodeId(2), LinkFault::Cut));
        assert!(faults.is_delayed(NodeId(2)), "a cut link's frames wait");
        assert!(faults.hold(NodeId(2), &mut vec![7]));
        let sent = std::sync::Arc::new(Mutex::new(Vec::new()));
        let (releasing, into) = (faults.clone(), sent.clone());
        let releaser = std::thread::spawn(move || {
            releasing.release_until_stopped(|_, frames| into.lock().unwrap().push(frames[0]));
        });
        std::thread::sleep(Duration::from_millis(30));
        assert!(sent.lock().unwrap().is_empty(), "nothing crosses a cut");
        faults.apply(&link_fault(NodeId(1), mgmd(), NodeId(2), LinkFault::Heal));
        while sent.lock().unwrap().is_empty() {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            *sent.lock().unwrap(),
            [7],
            "what waited arrives once healed"
        );
        faults.stop();
        releaser.join().unwrap();
    }

    #[test]
    fn delayed_frames_go_in_order_once_due() {
        let faults = std::sync::Arc::new(LinkFaults::default());
        let delay = LinkFault::Delay { ms: 30 };
        faults.apply(&link_fault(NodeId(1), mgmd(), NodeId(2), delay));
        assert!(faults.is_delayed(NodeId(2)));
        let started = Instant::now();
        assert!(faults.hold(NodeId(2), &mut vec![1]));
        assert!(faults.hold(NodeId(2), &mut vec![2]));
        let sent = std::sync::Arc::new(Mutex::new(Vec::new()));
        let (releasing, into) = (faults.clone(), sent.clone());
        let releaser = std::thread::spawn(move || {
            releasing.release_until_stopped(|_, frames| into.lock().unwrap().push(frames[0]));
        });
        while sent.lock().unwrap().len() < 2 {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            started.elapsed() >= Duration::from_millis(30),
            "held for the delay"
        );
        assert_eq!(*sent.lock().unwrap(), [1, 2]);
        faults.apply(&link_fault(NodeId(1), mgmd(), NodeId(2), LinkFault::Heal));
        assert!(!faults.is_delayed(NodeId(2)), "nothing held, no delay");
        faults.stop();
        releaser.join().unwrap();
    }
}
