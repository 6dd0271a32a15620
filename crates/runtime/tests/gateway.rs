//! Signals cross the node's boundary: injected from outside they reach their block, and a
//! block's signals to another node leave through the remote sink with their sections.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use kista_runtime::thread_config::{ThreadConfig, ThreadLayout};
use kista_runtime::{
    start, Block, BlockRegistration, Context, InjectBatch, InjectError, Module, ModuleInstance,
    Remote, RemoteSink, RunningNode, RuntimeOptions, EXTERNAL_SIGNALS_MAX,
};
use kista_signal::{wire, BlockAddress, BlockId, NodeId, Signal, SignalNumber};

const NODE: NodeId = NodeId(1);
const OUTSIDE: NodeId = NodeId(9);
const ECHO: BlockAddress = BlockAddress::new(NODE, BlockId(20), 0);

/// Sends every signal back to its sender with the same payload and section.
struct Echo;

impl Block for Echo {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        let mut reply = Signal::with_words(
            signal.number(),
            signal.sender(),
            ctx.address(),
            signal.words(),
        );
        if let Some(section) = ctx.take_section().expect("the pool has room") {
            ctx.attach_section(&mut reply, section);
        }
        ctx.send(reply);
    }
}

#[derive(Default)]
struct Collected(Mutex<Vec<(Signal, Vec<u8>)>>);

impl RemoteSink for Collected {
    fn send(&self, node: NodeId, taken: &mut Vec<u8>) {
        let owned = std::mem::take(taken);
        let mut frames = owned.as_slice();
        while !frames.is_empty() {
            let decoded = wire::decode(frames).unwrap();
            assert_eq!(decoded.signal.receiver().node(), node);
            let section = decoded.section.to_vec();
            self.0.lock().unwrap().push((decoded.signal, section));
            frames = &frames[decoded.frame_len..];
        }
    }
}

/// Starts a node with `block` at `ECHO` on an `ldm` thread and a pool of `sections_max`
/// sections; what it sends outside is collected.
fn start_node(block: Box<dyn Block>, sections_max: u32) -> (RunningNode, Arc<Collected>) {
    let config: ThreadConfig = "ldm={count=1},recv={count=1}".parse().unwrap();
    let layout = ThreadLayout::from_config(&config).unbound();
    let collected = Arc::new(Collected::default());
    let options = RuntimeOptions {
        node: NODE,
        remote: Some(Remote(collected.clone())),
        sections_max,
        ..RuntimeOptions::default()
    };
    let registration = BlockRegistration {
        block: ECHO.block(),
        instance: 0,
        host: ModuleInstance {
            module: Module::Ldm,
            instance: 0,
        },
        implementation: block,
    };
    (
        start(&layout, vec![registration], vec![], &options).unwrap(),
        collected,
    )
}

/// The section injected with signal `sequence`: none, one small enough to ride inline in the
/// signal, or one that needs a pooled buffer.
fn section_of(sequence: u32) -> Vec<u8> {
    match sequence % 3 {
        0 => sequence.to_le_bytes().to_vec(),
        1 => vec![sequence as u8; 300],
        _ => vec![],
    }
}

#[test]
fn injected_signals_reach_their_block_and_replies_leave_through_the_remote_sink() {
    let (node, collected) = start_node(Box::new(Echo), RuntimeOptions::default().sections_max);
    let injector = node.injector();
    let client = BlockAddress::new(OUTSIDE, BlockId(1), 3);
    for sequence in 0..1000u32 {
        let signal = Signal::with_words(SignalNumber(7), ECHO, client, &[sequence]);
        injector.inject(signal, &section_of(sequence)).unwrap();
    }
    let nowhere = Signal::with_words(
        SignalNumber(7),
        BlockAddress::new(NODE, BlockId(99), 0),
        client,
        &[],
    );
    assert_eq!(
        injector.inject(nowhere, &[]),
        Err(InjectError::NoSuchBlock(nowhere.receiver()))
    );

    let deadline = Instant::now() + Duration::from_secs(30);
    while collected.0.lock().unwrap().len() < 1000 {
        assert!(Instant::now() < deadline, "replies did not all arrive");
        std::thread::sleep(Duration::from_millis(2));
    }
    let sections_in_use = node.sections().in_use();
    node.stop().unwrap();
    let replies = collected.0.lock().unwrap();
    for (sequence, (signal, section)) in replies.iter().enumerate() {
        assert_eq!(signal.receiver(), client);
        assert_eq!(signal.words(), [sequence as u32], "in order, none lost");
        assert_eq!(section, &section_of(sequence as u32));
    }
    assert_eq!(
        sections_in_use, 0,
        "sections of remote signals return to the pool"
    );
}

/// Answers with the length of the section it read and what taking it gave: 1 a pooled
/// section, 0 none, 2 no room in the pool.
struct Taker;

impl Block for Taker {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        let read = ctx.section().map_or(0, |bytes| bytes.len() as u32);
        let taken = match ctx.take_section() {
            Ok(Some(section)) => {
                ctx.release_section(section);
                1
            }
            Ok(None) => 0,
            Err(_) => 2,
        };
        let reply = Signal::with_words(
            signal.number(),
            signal.sender(),
            ctx.address(),
            &[read, taken],
        );
        ctx.send(reply);
    }
}

#[test]
fn an_inline_section_is_read_without_the_pool_and_taking_it_fails_cleanly_when_the_pool_is_empty() {
    let (node, collected) = start_node(Box::new(Taker), 0);
    let injector = node.injector();
    let client = BlockAddress::new(OUTSIDE, BlockId(1), 3);
    let signal = Signal::with_words(SignalNumber(7), ECHO, client, &[1, 2, 3]);
    injector.inject(signal, &[9; 40]).unwrap();
    assert_eq!(
        injector.inject(signal, &[9; 400]),
        Err(InjectError::SectionsExhausted),
        "a section too large to ride inline needs the pool"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while collected.0.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "no reply");
        std::thread::sleep(Duration::from_millis(2));
    }
    node.stop().unwrap();
    let replies = collected.0.lock().unwrap();
    assert_eq!(
        replies[0].0.words(),
        [40, 2],
        "read whole; taking it found no room"
    );
}

/// An [`Echo`] that, on a signal whose first word is `HOLD`, keeps its thread until the test
/// opens the gate: signals from outside then pile up in the thread's queue.
struct GatedEcho {
    held: Arc<AtomicBool>,
    gate: Arc<(Mutex<bool>, Condvar)>,
}

const HOLD: u32 = u32::MAX;

impl Block for GatedEcho {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        if signal.words().first() == Some(&HOLD) {
            self.held.store(true, Ordering::SeqCst);
            let (open, opened) = &*self.gate;
            let mut open = open.lock().unwrap();
            while !*open {
                open = opened.wait(open).unwrap();
            }
            return;
        }
        Echo.execute(signal, ctx);
    }
}

#[test]
fn staged_signals_arrive_in_order_and_what_a_full_queue_cannot_take_stays_staged() {
    let held = Arc::new(AtomicBool::new(false));
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let block = GatedEcho {
        held: held.clone(),
        gate: gate.clone(),
    };
    let sections_max = RuntimeOptions::default().sections_max;
    let (node, collected) = start_node(Box::new(block), sections_max);
    let injector = node.injector();
    let client = BlockAddress::new(OUTSIDE, BlockId(1), 3);
    let hold = Signal::with_words(SignalNumber(7), ECHO, client, &[HOLD]);
    injector.inject(hold, &[]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !held.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "the block never ran");
        std::thread::sleep(Duration::from_millis(1));
    }

    // The thread is held: its queue takes EXTERNAL_SIGNALS_MAX signals and no more.
    let signals = EXTERNAL_SIGNALS_MAX as u32 + 10;
    let mut batch = InjectBatch::default();
    for sequence in 0..signals {
        let signal = Signal::with_words(SignalNumber(7), ECHO, client, &[sequence]);
        let section = if sequence % 1000 == 1 {
            section_of(sequence)
        } else {
            vec![]
        };
        injector.stage(&mut batch, signal, &section).unwrap();
    }
    assert_eq!(injector.publish(&mut batch), Err(InjectError::Overloaded));
    assert_eq!(batch.len(), 10, "what did not fit stays staged");

    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
    while let Err(error) = injector.publish(&mut batch) {
        assert_eq!(error, InjectError::Overloaded);
        assert!(Instant::now() < deadline, "the queue never drained");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(batch.is_empty());
    while collected.0.lock().unwrap().len() < signals as usize {
        assert!(Instant::now() < deadline, "replies did not all arrive");
        std::thread::sleep(Duration::from_millis(2));
    }

    // Discarding staged signals gives their pooled sections back.
    let signal = Signal::with_words(SignalNumber(7), ECHO, client, &[0]);
    injector.stage(&mut batch, signal, &[5; 300]).unwrap();
    assert_eq!(node.sections().in_use(), 1);
    injector.discard(&mut batch);
    assert_eq!(node.sections().in_use(), 0);
    node.stop().unwrap();

    let replies = collected.0.lock().unwrap();
    for (sequence, (signal, section)) in replies.iter().enumerate() {
        assert_eq!(signal.words(), [sequence as u32], "in order, none lost");
        let expected = if sequence % 1000 == 1 {
            section_of(sequence as u32)
        } else {
            vec![]
        };
        assert_eq!(section, &expected);
    }
}
