//! Instructions per signal hop, for callgrind: `scripts/callgrind-hop-cost` runs this twice
//! with different hop counts and divides the difference in instructions by the difference in
//! hops, which leaves the marginal cost of one hop (send + job buffer + dispatch) with start-up
//! and shutdown cancelled out.
//!
//! Two bounce blocks on two threads toss `KISTA_TOKENS` tokens (default 256, fewer than a job
//! buffer holds, so no signal ever waits in overflow) back and forth for `KISTA_HOPS` hops in
//! all. A bounce block does no work beyond decrementing a counter and sending the signal back.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kista_runtime::thread_config::{ThreadConfig, ThreadLayout};
use kista_runtime::{
    start, Block, BlockRegistration, Context, Module, ModuleInstance, RuntimeOptions,
};
use kista_signal::{BlockAddress, BlockId, Signal, SignalNumber};

const BOUNCE: BlockId = BlockId(1);
const BALL: SignalNumber = SignalNumber(1);

struct Bounce {
    finished: Arc<AtomicU64>,
}

impl Block for Bounce {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        let hops_left = signal.payload[0];
        if hops_left == 0 {
            self.finished.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut ball = Signal::new(BALL, signal.sender(), ctx.address());
        ball.payload[0] = hops_left - 1;
        ball.header.payload_words = 1;
        ctx.send(ball);
    }
}

fn env_u32(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let hops = env_u32("KISTA_HOPS", 1_000_000);
    let tokens = env_u32("KISTA_TOKENS", 256).max(1);
    let config: ThreadConfig = "ldm={count=1},recv={count=1},io={count=0}".parse().unwrap();
    let layout = ThreadLayout::from_config(&config);
    let options = RuntimeOptions::default();
    let finished = Arc::new(AtomicU64::new(0));
    let hosts = [(Module::Ldm, 0), (Module::Recv, 1)];
    let blocks = hosts
        .iter()
        .map(|&(module, instance)| BlockRegistration {
            block: BOUNCE,
            instance,
            host: ModuleInstance {
                module,
                instance: 0,
            },
            implementation: Box::new(Bounce {
                finished: Arc::clone(&finished),
            }),
        })
        .collect();
    let a = BlockAddress::new(options.node, BOUNCE, 0);
    let b = BlockAddress::new(options.node, BOUNCE, 1);
    let balls = (0..tokens).map(|token| {
        // Spread the hops so that they add up to exactly `hops` (each ball executes its
        // count + 1 times; the initial delivery is counted as a hop).
        let share = hops / tokens + u32::from(token < hops % tokens);
        let mut ball = Signal::new(BALL, a, b);
        ball.payload[0] = share.saturating_sub(1);
        ball.header.payload_words = 1;
        ball
    });
    let node = start(&layout, blocks, balls.collect(), &options).unwrap();
    while finished.load(Ordering::Relaxed) < u64::from(tokens) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let stats = node.stop().unwrap();
    let executed: u64 = stats.iter().map(|s| s.signals_executed).sum();
    println!("hops={hops} tokens={tokens} executed={executed}");
}
