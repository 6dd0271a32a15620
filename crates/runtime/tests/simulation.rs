//! The simulation runtime replays a run exactly from its seed.

use std::time::Duration;

use kista_runtime::fence::FENCE_GATE_BLOCK;
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

/// (sender's node, virtual time) of every signal the echo blocks got.
type Received = std::sync::Arc<std::sync::Mutex<Vec<(NodeId, u64)>>>;

/// Records who sent each signal it gets, and when;
/// a signal numbered 99 asks it to shut out the sender's node, 98 to stop its own node.
struct Echo {
    received: Received,
}

impl Block for Echo {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        self.received
            .lock()
            .unwrap()
            .push((signal.sender().node(), ctx.now_ns()));
        match signal.number().0 {
            99 => ctx.shut_out(signal.sender().node()),
            98 => ctx.stop_node("told to stop"),
            _ => {}
        }
    }
}

fn two_echo_nodes() -> (Simulation, [BlockAddress; 2], Received) {
    let received = Received::default();
    let mut simulation = Simulation::new(&SimulationOptions {
        latency_ns_max: 1_000,
        ..SimulationOptions::default()
    });
    let addresses = [1, 2].map(|node| BlockAddress::new(NodeId(node), BlockId(1), 0));
    for address in addresses {
        let echo = Echo {
            received: received.clone(),
        };
        simulation.add_block(address, Box::new(echo)).unwrap();
    }
    (simulation, addresses, received)
}

#[test]
fn a_cut_holds_signals_both_ways_until_healed_then_delivers_them() {
    let (mut simulation, [one, two], received) = two_echo_nodes();
    simulation.cut(NodeId(1), NodeId(2));
    simulation.inject(Signal::new(SignalNumber(1), two, one));
    simulation.inject(Signal::new(SignalNumber(1), one, two));
    simulation.run_until_idle(10).unwrap();
    assert!(received.lock().unwrap().is_empty());
    simulation.heal();
    simulation.run_until_idle(10).unwrap();
    assert_eq!(
        received.lock().unwrap().len(),
        2,
        "nothing lost, as TCP loses nothing"
    );
    received.lock().unwrap().clear();
    simulation.slow_down(NodeId(1), NodeId(2), 5_000_000);
    let sent_ns = simulation.now_ns();
    simulation.inject(Signal::new(SignalNumber(1), two, one));
    simulation.run_until_idle(10).unwrap();
    let got = received.lock().unwrap().clone();
    assert_eq!(got.len(), 1);
    assert!(
        got[0].1 >= sent_ns + 5_000_000,
        "the slow link delays it: {got:?}"
    );
}

#[test]
fn a_node_shut_out_neither_reaches_nor_hears_the_node_that_shut_it_out() {
    let (mut simulation, [one, two], received) = two_echo_nodes();
    // Node 1 shuts node 2 out.
    simulation.inject(Signal::new(SignalNumber(99), one, two));
    simulation.run_until_idle(10).unwrap();
    received.lock().unwrap().clear();
    simulation.inject(Signal::new(SignalNumber(1), one, two));
    simulation.inject(Signal::new(SignalNumber(1), two, one));
    simulation.run_until_idle(10).unwrap();
    assert!(received.lock().unwrap().is_empty());
}

#[test]
fn gate_blocks_still_reach_each_other_across_a_fence() {
    let (mut simulation, [one, two], received) = two_echo_nodes();
    let gates = [1, 2].map(|node| BlockAddress::new(NodeId(node), FENCE_GATE_BLOCK, 0));
    for gate in gates {
        let echo = Echo {
            received: received.clone(),
        };
        simulation.add_block(gate, Box::new(echo)).unwrap();
    }
    simulation.inject(Signal::new(SignalNumber(99), one, two));
    simulation.run_until_idle(10).unwrap();
    received.lock().unwrap().clear();
    // From node 2's ordinary block to node 1's gate: fenced. Gate to gate: passes.
    simulation.inject(Signal::new(SignalNumber(1), gates[0], two));
    simulation.inject(Signal::new(SignalNumber(1), gates[0], gates[1]));
    simulation.inject(Signal::new(SignalNumber(1), gates[1], gates[0]));
    simulation.run_until_idle(10).unwrap();
    let senders: Vec<NodeId> = received.lock().unwrap().iter().map(|r| r.0).collect();
    assert_eq!(senders.len(), 2, "{senders:?}");
    assert!(senders.contains(&NodeId(1)) && senders.contains(&NodeId(2)));
}

#[test]
fn a_node_that_stops_itself_is_down_with_its_reason_and_restarts_fresh() {
    let (mut simulation, [one, two], received) = two_echo_nodes();
    simulation.inject(Signal::new(SignalNumber(98), two, one));
    simulation.run_until_idle(10).unwrap();
    assert!(simulation.is_down(NodeId(2)));
    assert_eq!(
        simulation.stopped_nodes(),
        [(NodeId(2), "told to stop".to_string())]
    );
    received.lock().unwrap().clear();
    simulation.inject(Signal::new(SignalNumber(1), two, one));
    simulation.run_until_idle(10).unwrap();
    assert!(received.lock().unwrap().is_empty(), "nothing reaches it");
    assert_eq!(
        simulation.restart(NodeId(1), Vec::new()),
        Err(SimulationError::NodeRunning(NodeId(1)))
    );
    simulation.restart(NodeId(2), Vec::new()).unwrap();
    let echo = Echo {
        received: received.clone(),
    };
    simulation.add_block(two, Box::new(echo)).unwrap();
    simulation.inject(Signal::new(SignalNumber(1), two, one));
    simulation.run_until_idle(10).unwrap();
    assert_eq!(received.lock().unwrap().len(), 1);
}

#[test]
fn a_paused_node_runs_nothing_until_resumed_then_gets_everything_in_order() {
    let (mut simulation, [one, two], received) = two_echo_nodes();
    simulation.pause(NodeId(2));
    for number in 1..=3 {
        simulation.inject(Signal::new(SignalNumber(number), two, one));
    }
    simulation.run_until(1_000_000_000);
    assert!(received.lock().unwrap().is_empty());
    simulation.resume(NodeId(2));
    simulation.run_until_idle(10).unwrap();
    let got = received.lock().unwrap().clone();
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|&(_, at)| at >= 1_000_000_000));
}
