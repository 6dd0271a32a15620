//! The simulation runtime replays a run exactly from its seed.

use std::time::Duration;

use kista_runtime::relay::{relay_on_every_module, RelayOptions};
use kista_runtime::simulation::{Simulation, SimulationError, SimulationOptions};
use kista_runtime::thread_config::{ThreadConfig, ThreadLayout};
use kista_runtime::{Block, Context};
use kista_signal::{BlockAddress, BlockId, NodeId, Signal, SignalNumber};

const STEPS_MAX: u64 = 10_000_000;

/// Runs the relay load of the Receive setup layout in a simulation and returns it.
fn simulated_relay(seed: u64) -> Simulation {
    let config: ThreadConfig = "recv={count=4},io={count=1}".parse().unwrap();
    let layout = ThreadLayout::from_config(&config);
    let options = RelayOptions {
        tokens_per_relay: 8,
        hops: 200,
        section_every: 5,
        ..RelayOptions::default()
    };
    let load = relay_on_every_module(&layout, NodeId(1), options);
    let mut simulation = Simulation::new(&SimulationOptions {
        seed,
        record_trace: true,
        ..SimulationOptions::default()
    });
    simulation
        .add_registrations(NodeId(1), load.blocks)
        .unwrap();
    for signal in load.initial_signals {
        simulation.inject(signal);
    }
    simulation.run_until_idle(STEPS_MAX).unwrap();
    let summary = load.report.summary();
    assert!(load.report.all_tokens_finished(), "{summary:?}");
    assert_eq!(summary.out_of_order, 0);
    assert_eq!(summary.bad_sections, 0);
    assert_eq!(summary.mismatched_pairs, 0);
    assert_eq!(simulation.executed(), load.report.total_signals());
    assert_eq!(simulation.sections().in_use(), 0);
    simulation
}

/// The sequence of receivers, which shows the interleaving.
fn receivers(trace: &[u8]) -> Vec<u32> {
    let mut receivers = Vec::new();
    let mut rest = trace;
    while !rest.is_empty() {
        let decoded = kista_signal::wire::decode(&rest[8..]).unwrap();
        receivers.push(decoded.signal.receiver().to_word());
        rest = &rest[8 + decoded.frame_len..];
    }
    receivers
}

#[test]
fn the_same_seed_replays_the_same_trace_byte_for_byte() {
    let first = simulated_relay(42);
    let second = simulated_relay(42);
    assert!(first.trace().len() > 100_000);
    assert_eq!(first.trace(), second.trace());
    assert_eq!(first.trace_digest(), second.trace_digest());
    assert_eq!(first.now_ns(), second.now_ns());
}

#[test]
fn different_seeds_interleave_deliveries_differently() {
    let digests: Vec<u64> = (1..=5)
        .map(|seed| simulated_relay(seed).trace_digest())
        .collect();
    for (index, digest) in digests.iter().enumerate() {
        assert!(
            !digests[..index].contains(digest),
            "seeds share a trace: {digests:?}"
        );
    }
    let (one, two) = (simulated_relay(1), simulated_relay(2));
    assert_ne!(receivers(one.trace()), receivers(two.trace()));
}

/// Counts down with a delayed signal to itself, recording when each tick ran.
struct Ticker {
    ticks_left: u32,
    seen_at_ns: std::sync::Arc<std::sync::Mutex<Vec<u64>>>,
}

impl Block for Ticker {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        self.seen_at_ns.lock().unwrap().push(ctx.now_ns());
        if self.ticks_left > 0 {
            self.ticks_left -= 1;
            ctx.send_delayed(*signal, Duration::from_millis(100));
        }
    }
}

#[test]
fn delayed_signals_advance_the_virtual_clock() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let address = BlockAddress::new(NodeId(1), BlockId(1), 0);
    let mut simulation = Simulation::new(&SimulationOptions {
        latency_ns_max: 0,
        ..SimulationOptions::default()
    });
    let ticker = Ticker {
        ticks_left: 3,
        seen_at_ns: seen.clone(),
    };
    simulation.add_block(address, Box::new(ticker)).unwrap();
    simulation.inject(Signal::new(SignalNumber(1), address, address));
    simulation.run_until(150_000_000);
    assert_eq!(*seen.lock().unwrap(), [0, 100_000_000]);
    simulation.run_until_idle(10).unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [0, 100_000_000, 200_000_000, 300_000_000]
    );
    assert_eq!(simulation.now_ns(), 300_000_000);
}

#[test]
fn a_run_that_never_goes_idle_is_cut_off_at_the_step_limit() {
    let address = BlockAddress::new(NodeId(1), BlockId(1), 0);
    let mut simulation = Simulation::new(&SimulationOptions::default());
    let forever = Ticker {
        ticks_left: u32::MAX,
        seen_at_ns: Default::default(),
    };
    simulation.add_block(address, Box::new(forever)).unwrap();
    assert_eq!(
        simulation.add_block(
            address,
            Box::new(Ticker {
                ticks_left: 0,
                seen_at_ns: Default::default()
            })
        ),
        Err(SimulationError::DuplicateBlock(address))
    );
    simulation.inject(Signal::new(SignalNumber(1), address, address));
    assert_eq!(
        simulation.run_until_idle(100),
        Err(SimulationError::StepLimit(100))
    );
}
