//! The multi-threaded runtime carries signals between blocks on any layout: in order per
//! sender, none lost, none duplicated, sections intact.

use std::time::{Duration, Instant};

use kista_runtime::relay::{relay_on_every_module, RelayOptions, RelaySummary};
use kista_runtime::thread_config::{automatic_config, ThreadConfig, ThreadLayout};
use kista_runtime::{start, RuntimeOptions, StartError};
use kista_signal::NodeId;

const SEED_LDM_SETUP: &str = "ldm={count=1,cpubind=0},query={count=1,cpubind=1},tc={count=0,cpubind=2},recv={count=2,cpubind=32,33},send={count=0,cpubind=35},main={count=0,cpubind=36},io={count=1,cpubind=33}";
const SEED_RECEIVE_SETUP: &str = "ldm={count=0,cpubind=0},query={count=0,cpubind=3},tc={count=0,cpubind=2},recv={count=4,cpubind=0,1,32,33},send={count=0,cpubind=35},main={count=0,cpubind=36},io={count=1,cpubind=33}";

/// Generous: a run takes seconds; this only keeps a broken runtime from hanging CI.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

fn layout(text: &str) -> ThreadLayout {
    // The seed strings name CPUs this machine may lack; the placement is what is tested.
    ThreadLayout::from_config(&text.parse::<ThreadConfig>().unwrap()).unbound()
}

/// Runs a relay load until every token finished, then stops the node and checks it.
fn run_relay(
    layout: &ThreadLayout,
    options: RelayOptions,
    runtime: RuntimeOptions,
) -> RelaySummary {
    let load = relay_on_every_module(layout, runtime.node, options);
    let report = load.report.clone();
    let node = start(layout, load.blocks, load.initial_signals, &runtime).unwrap();
    let deadline = Instant::now() + RUN_TIMEOUT;
    while !report.all_tokens_finished() && !node.has_stopped() {
        assert!(
            Instant::now() < deadline,
            "relay did not finish: {:?}",
            report.summary()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let sections_in_use = node.sections().in_use();
    let stats = node.stop().unwrap();
    let executed: u64 = stats.iter().map(|s| s.signals_executed).sum();
    assert_eq!(
        executed,
        report.total_signals(),
        "executed signals in {layout}"
    );
    assert_eq!(sections_in_use, 0, "sections leaked");
    let summary = report.summary();
    assert_eq!(
        summary.mismatched_pairs, 0,
        "lost or duplicated pings: {summary:?}"
    );
    assert_eq!(summary.out_of_order, 0, "{summary:?}");
    assert_eq!(summary.bad_sections, 0, "{summary:?}");
    assert_eq!(summary.pings_sent, summary.pings_received);
    summary
}

fn million_signal_relay(layout: &ThreadLayout) {
    let relays = layout
        .threads
        .iter()
        .map(|t| t.modules.len())
        .sum::<usize>() as u32;
    let tokens_per_relay = 16;
    let hops = 2_000_000 / (relays * tokens_per_relay);
    let options = RelayOptions {
        tokens_per_relay,
        hops,
        section_every: 7,
        ..RelayOptions::default()
    };
    let summary = run_relay(layout, options, RuntimeOptions::default());
    assert!(summary.pings_received >= 1_900_000, "{summary:?}");
}

#[test]
fn millions_of_signals_cross_the_ldm_setup_in_order() {
    million_signal_relay(&layout(SEED_LDM_SETUP));
}

#[test]
fn millions_of_signals_cross_the_receive_setup_in_order() {
    million_signal_relay(&layout(SEED_RECEIVE_SETUP));
}

#[test]
fn millions_of_signals_cross_every_automatic_layout_in_order() {
    for cpus in [1, 2, 4, 8, 16, 32, 64] {
        million_signal_relay(&ThreadLayout::from_config(&automatic_config(cpus).unwrap()));
    }
}

#[test]
fn tiny_job_buffers_hold_back_signals_without_losing_or_reordering_them() {
    let runtime = RuntimeOptions {
        job_buffer_signals: 2,
        ..RuntimeOptions::default()
    };
    let options = RelayOptions {
        tokens_per_relay: 64,
        hops: 2_000,
        section_every: 3,
        ..RelayOptions::default()
    };
    run_relay(&layout(SEED_RECEIVE_SETUP), options, runtime);
}

#[test]
fn spinning_threads_carry_signals_like_sleeping_ones() {
    let options = RelayOptions {
        tokens_per_relay: 1,
        hops: 20_000,
        section_every: 0,
        ..RelayOptions::default()
    };
    run_relay(
        &layout("ldm={count=1,spintime=200},recv={count=1,spintime=200},io={count=0}"),
        options,
        RuntimeOptions::default(),
    );
}

#[test]
fn statistics_count_signals_rounds_sleeps_and_cpu_time() {
    let layout = layout("ldm={count=1},recv={count=1},io={count=0}");
    let options = RelayOptions {
        tokens_per_relay: 1,
        hops: 50_000,
        section_every: 0,
        ..RelayOptions::default()
    };
    let load = relay_on_every_module(&layout, NodeId(1), options);
    let report = load.report.clone();
    let node = start(
        &layout,
        load.blocks,
        load.initial_signals,
        &RuntimeOptions::default(),
    )
    .unwrap();
    while !report.all_tokens_finished() {
        std::thread::sleep(Duration::from_millis(5));
    }
    // Let both threads go idle; a one-token ping-pong sleeps between signals anyway.
    std::thread::sleep(Duration::from_millis(50));
    let stats = node.stats();
    node.stop().unwrap();
    assert_eq!(stats.len(), 2);
    for thread in &stats {
        assert!(thread.signals_executed > 0);
        assert!(thread.busy_rounds > 0 && thread.busy_rounds <= thread.signals_executed);
        assert!(thread.average_batch() >= 1.0);
        assert!(thread.sleeps > 0, "{thread:?}");
        assert!(thread.cpu_user_us + thread.cpu_system_us > 0, "{thread:?}");
        assert_eq!(thread.queue_depth, 0);
    }
}

#[test]
fn binding_to_a_cpu_the_machine_lacks_fails_before_any_thread_starts() {
    let layout =
        ThreadLayout::from_config(&"recv={count=1,cpubind=1023},io={count=0}".parse().unwrap());
    let error = match start(&layout, Vec::new(), Vec::new(), &RuntimeOptions::default()) {
        Err(error) => error,
        Ok(_) => panic!("started on CPU 1023"),
    };
    assert!(
        matches!(error, StartError::CpuNotAvailable { cpu: 1023, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("CPU 1023"), "{error}");
}

#[test]
fn binding_to_available_cpus_and_lowering_priority_runs() {
    let cpus = kista_runtime::scheduler::available_cpus().unwrap();
    let text = format!(
        "recv={{count=1,cpubind={}}},io={{count=1,cpuset={},thread_prio=0}}",
        cpus[0], cpus[0]
    );
    let options = RelayOptions {
        tokens_per_relay: 4,
        hops: 1_000,
        section_every: 0,
        ..RelayOptions::default()
    };
    run_relay(
        &ThreadLayout::from_config(&text.parse().unwrap()),
        options,
        RuntimeOptions::default(),
    );
}

#[test]
fn a_panicking_block_stops_the_node_and_is_reported() {
    use kista_runtime::{Block, BlockRegistration, Context, Module, ModuleInstance};
    use kista_signal::{BlockAddress, BlockId, Signal, SignalNumber};
    struct Broken;
    impl Block for Broken {
        fn execute(&mut self, _: &Signal, _: &mut Context<'_>) {
            panic!("invariant broken");
        }
    }
    let layout = layout("ldm={count=1},recv={count=1}");
    let block = BlockRegistration {
        block: BlockId(1),
        instance: 0,
        host: ModuleInstance {
            module: Module::Ldm,
            instance: 0,
        },
        implementation: Box::new(Broken),
    };
    let address = BlockAddress::new(NodeId(1), BlockId(1), 0);
    let kick = Signal::new(SignalNumber(1), address, address);
    let node = start(&layout, vec![block], vec![kick], &RuntimeOptions::default()).unwrap();
    let deadline = Instant::now() + RUN_TIMEOUT;
    while !node.has_stopped() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(1));
    }
    let failure = node.stop().unwrap_err();
    assert_eq!(failure.kind, Module::Ldm);
    assert!(failure.message.contains("invariant broken"));
}

#[test]
fn delayed_signals_fire_after_their_delay_in_order() {
    use kista_runtime::{Block, BlockRegistration, Context, Module, ModuleInstance};
    use kista_signal::{BlockAddress, BlockId, Signal, SignalNumber};
    use std::sync::{Arc, Mutex};

    /// On its first signal sets three timers (30, 10, 20 ms); records when each fires.
    struct Alarm {
        fired: Arc<Mutex<Vec<(u32, u64)>>>,
        started_ns: u64,
    }
    impl Block for Alarm {
        fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
            if signal.number() == SignalNumber(1) {
                self.started_ns = ctx.now_ns();
                for delay_ms in [30u32, 10, 20] {
                    let timer = Signal::with_words(
                        SignalNumber(2),
                        ctx.address(),
                        ctx.address(),
                        &[delay_ms],
                    );
                    ctx.send_delayed(timer, Duration::from_millis(u64::from(delay_ms)));
                }
            } else {
                let elapsed_ns = ctx.now_ns() - self.started_ns;
                self.fired
                    .lock()
                    .unwrap()
                    .push((signal.words()[0], elapsed_ns));
            }
        }
    }
    let fired = Arc::new(Mutex::new(Vec::new()));
    let layout = layout("ldm={count=1},recv={count=1}");
    let block = BlockRegistration {
        block: BlockId(1),
        instance: 0,
        host: ModuleInstance {
            module: Module::Ldm,
            instance: 0,
        },
        implementation: Box::new(Alarm {
            fired: fired.clone(),
            started_ns: 0,
        }),
    };
    let address = BlockAddress::new(NodeId(1), BlockId(1), 0);
    let kick = Signal::new(SignalNumber(1), address, address);
    let node = start(&layout, vec![block], vec![kick], &RuntimeOptions::default()).unwrap();
    let deadline = Instant::now() + RUN_TIMEOUT;
    while fired.lock().unwrap().len() < 3 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    }
    node.stop().unwrap();
    let fired = fired.lock().unwrap();
    let order: Vec<u32> = fired.iter().map(|&(delay_ms, _)| delay_ms).collect();
    assert_eq!(order, [10, 20, 30]);
    for &(delay_ms, elapsed_ns) in fired.iter() {
        assert!(
            elapsed_ns >= u64::from(delay_ms) * 1_000_000,
            "{delay_ms} ms timer fired after {elapsed_ns} ns"
        );
    }
}
