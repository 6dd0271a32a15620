//! The scheduler loop of one thread.
//!
//! Each round: move due timers into routing, execute the signals this thread sent itself,
//! then visit every inbound job buffer and execute up to a bounded batch from each, flushing
//! what the batch produced before moving on. An idle thread spins for its `spintime`, then
//! sleeps until a producer wakes it, its next timer is due, or `idle_sleep_max` passes.

use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kista_signal::Signal;

use super::gateway::ExternalQueue;
use super::os;
use super::router::{Router, Wake};
use crate::block::{Block, Context, Sink};
use crate::fence::{NodeFence, StopReason};
use crate::job_buffer::Consumer;
use crate::rng::Rng;
use crate::section_pool::SectionPool;
use crate::stats::ThreadCounters;

/// What all threads of a node share.
pub(crate) struct Shared {
    pub stop: AtomicBool,
    pub wake: Vec<Wake>,
    pub counters: Vec<ThreadCounters>,
    pub sections: Arc<SectionPool>,
    /// `[thread]` → signals injected from outside for it.
    pub external: Vec<ExternalQueue>,
    pub started: Instant,
    /// Nodes shut out by the membership.
    pub fence: NodeFence,
    /// Why a block stopped the node, if one did.
    pub stop_reason: StopReason,
}

impl Shared {
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        for wake in &self.wake {
            wake.sleeping.store(false, Ordering::SeqCst);
            if let Some(thread) = wake.thread.get() {
                thread.unpark();
            }
        }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Blocks hosted by one thread, indexed `[block id][instance]`.
pub(crate) struct LocalBlocks(Vec<Vec<Option<Box<dyn Block>>>>);

impl LocalBlocks {
    pub fn new() -> Self {
        Self((0..256).map(|_| Vec::new()).collect())
    }

    /// Runs `signal` on the block it is addressed to.
    #[inline]
    fn execute(&mut self, ctx: &mut Context<'_>, signal: &Signal) {
        let receiver = signal.receiver();
        let instances = &mut self.0[usize::from(receiver.block().0)];
        let Some(Some(block)) = instances.get_mut(usize::from(receiver.instance())) else {
            panic!("signal routed to a thread without its block {receiver}");
        };
        ctx.execute(block.as_mut(), signal);
    }

    pub fn insert(&mut self, block: u8, instance: u16, implementation: Box<dyn Block>) {
        let instances = &mut self.0[usize::from(block)];
        let instance = usize::from(instance);
        if instances.len() <= instance {
            instances.resize_with(instance + 1, || None);
        }
        instances[instance] = Some(implementation);
    }
}

/// How often a busy thread refreshes its CPU-time statistics.
const CPU_SAMPLE_INTERVAL_NS: u64 = 1_000_000;
/// How often a spinning thread looks at the clock.
const SPIN_CLOCK_CHECK_EVERY: u32 = 64;

pub(crate) struct SchedulerThread {
    pub index: usize,
    pub blocks: LocalBlocks,
    pub inputs: Vec<Consumer>,
    pub router: Router,
    pub rng: Rng,
    pub shared: Arc<Shared>,
    pub batch_per_input: usize,
    pub spin_ns: u64,
    pub idle_sleep_max_ns: u64,
    /// Signals from outside taken for this round ([`ExternalQueue::take_all`]).
    external: Vec<Signal>,
    /// `[input]` → how many of its signals this round executes, counted before the clock
    /// is read.
    batches: Vec<usize>,
    signals_executed: u64,
    busy_rounds: u64,
    sleeps: u64,
    /// Time spent spinning for work (what `spintime` costs).
    spin_total_ns: u64,
    last_cpu_sample_ns: u64,
}

impl SchedulerThread {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        index: usize,
        blocks: LocalBlocks,
        inputs: Vec<Consumer>,
        router: Router,
        rng: Rng,
        shared: Arc<Shared>,
        batch_per_input: usize,
        spin_ns: u64,
        idle_sleep_max_ns: u64,
    ) -> Self {
        Self {
            index,
            blocks,
            inputs,
            router,
            rng,
            shared,
            batch_per_input,
            spin_ns,
            idle_sleep_max_ns,
            external: Vec::new(),
            batches: Vec::new(),
            signals_executed: 0,
            busy_rounds: 0,
            sleeps: 0,
            spin_total_ns: 0,
            last_cpu_sample_ns: 0,
        }
    }

    pub fn run(mut self) {
        while !self.shared.stop.load(Ordering::Relaxed) {
            let executed = self.round();
            if executed > 0 {
                self.signals_executed += executed as u64;
                self.busy_rounds += 1;
                self.publish_counters(false);
            } else {
                self.idle();
            }
        }
        self.publish_counters(true);
    }

    fn round(&mut self) -> usize {
        // What this round executes is in hand before the clock is read, so no signal runs
        // with a time from before it arrived, even across a pause of the process (see
        // `Context::now_ns`; a node's read lease relies on it).
        self.shared.external[self.index].take_all(&mut self.external);
        self.batches.clear();
        for input in &mut self.inputs {
            self.batches
                .push(input.available().min(self.batch_per_input));
        }
        let now_ns = self.shared.now_ns();
        self.router.now_ns = now_ns;
        while let Some(signal) = self.router.timers.pop_due(now_ns) {
            self.router.send(&signal);
        }
        let mut executed = 0;
        // Only what was queued before this round, so a block messaging itself in a loop
        // cannot starve the job buffers.
        for _ in 0..self.router.local.len() {
            let Some(signal) = self.router.local.pop_front() else {
                break;
            };
            let sink = Sink::Threads(&mut self.router);
            let mut ctx = Context::new(now_ns, &mut self.rng, sink, &self.shared.sections);
            self.blocks.execute(&mut ctx, &signal);
            executed += 1;
        }
        // Signals from outside run where they arrived, in the buffer taken from the queue.
        if !self.external.is_empty() {
            let sink = Sink::Threads(&mut self.router);
            let mut ctx = Context::new(now_ns, &mut self.rng, sink, &self.shared.sections);
            for signal in &self.external {
                self.blocks.execute(&mut ctx, signal);
            }
            executed += self.external.len();
            self.external.clear();
        }
        self.router.flush(&self.shared.wake);
        for input in 0..self.inputs.len() {
            let batch = self.batches[input];
            if batch == 0 {
                continue;
            }
            let sink = Sink::Threads(&mut self.router);
            let mut ctx = Context::new(now_ns, &mut self.rng, sink, &self.shared.sections);
            let (first, second) = self.inputs[input].batch(batch);
            for run in [first, second] {
                for signal in run {
                    self.blocks.execute(&mut ctx, signal);
                }
            }
            self.inputs[input].release(batch);
            executed += batch;
            self.router.flush(&self.shared.wake);
        }
        executed
    }

    fn has_work(&self, now_ns: u64) -> bool {
        !self.router.local.is_empty()
            || self
                .router
                .timers
                .next_due_ns()
                .is_some_and(|due| due <= now_ns)
            || self.inputs.iter().any(Consumer::has_published)
            || self.shared.external[self.index].has_pending()
    }

    fn idle(&mut self) {
        if self.router.has_overflow() {
            // A receiver's buffer is full; it frees room without telling us.
            self.router.flush(&self.shared.wake);
            std::thread::yield_now();
            return;
        }
        if self.spin_ns > 0 && self.spin() {
            return;
        }
        let wake = &self.shared.wake[self.index];
        wake.sleeping.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let now_ns = self.shared.now_ns();
        if self.has_work(now_ns) || self.shared.stop.load(Ordering::Relaxed) {
            wake.sleeping.store(false, Ordering::Relaxed);
            return;
        }
        self.sleeps += 1;
        self.publish_counters(true);
        let until_timer = self
            .router
            .timers
            .next_due_ns()
            .map_or(u64::MAX, |due| due - now_ns);
        std::thread::park_timeout(Duration::from_nanos(
            until_timer.min(self.idle_sleep_max_ns),
        ));
        self.shared.wake[self.index]
            .sleeping
            .store(false, Ordering::Relaxed);
    }

    /// Spins up to `spin_ns` waiting for work; true if work arrived.
    fn spin(&mut self) -> bool {
        let start_ns = self.shared.now_ns();
        let mut now_ns = start_ns;
        let mut iterations = 0u32;
        let mut found = false;
        while now_ns - start_ns < self.spin_ns {
            if self.has_work(now_ns) {
                found = true;
                break;
            }
            std::hint::spin_loop();
            iterations += 1;
            if iterations % SPIN_CLOCK_CHECK_EVERY == 0 {
                now_ns = self.shared.now_ns();
            }
        }
        self.spin_total_ns += now_ns - start_ns;
        found
    }

    fn publish_counters(&mut self, force_cpu_sample: bool) {
        let counters = &self.shared.counters[self.index];
        counters.publish(&counters.signals_executed, self.signals_executed);
        counters.publish(&counters.busy_rounds, self.busy_rounds);
        counters.publish(&counters.sleeps, self.sleeps);
        counters.publish(&counters.spin_us, self.spin_total_ns / 1_000);
        counters.publish(
            &counters.local_queue_depth,
            self.router.pending_depth() as u64,
        );
        let now_ns = self.router.now_ns;
        if force_cpu_sample || now_ns - self.last_cpu_sample_ns >= CPU_SAMPLE_INTERVAL_NS {
            self.last_cpu_sample_ns = now_ns;
            let (user_us, system_us) = os::current_thread_cpu_us();
            counters.publish(&counters.cpu_user_us, user_us);
            counters.publish(&counters.cpu_system_us, system_us);
        }
    }
}
