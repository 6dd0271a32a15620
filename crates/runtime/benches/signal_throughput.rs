//! Cross-thread signal throughput and latency of the multi-threaded runtime.
//!
//! `cargo bench -p kista-runtime --bench signal_throughput` prints Markdown table rows for
//! `docs/benchmarks.md`. Every ping crosses threads (one relay block per thread).
//! `KISTA_BENCH_SECONDS` sets the measuring time of each throughput case (default 3).

use std::time::{Duration, Instant};

use kista_runtime::relay::{relay_on_every_thread, RelayOptions};
use kista_runtime::thread_config::{ThreadConfig, ThreadLayout};
use kista_runtime::{start, RuntimeOptions};

const TWO_THREADS: &str = "ldm={count=1},recv={count=1},io={count=0}";
const FOUR_THREADS: &str = "ldm={count=2},query={count=1},recv={count=1},io={count=0}";

fn layout(text: &str, spintime_us: u32) -> ThreadLayout {
    let mut config: ThreadConfig = text.parse().unwrap();
    for module in kista_runtime::Module::ALL {
        config.entry_mut(module).spintime_us = spintime_us;
    }
    ThreadLayout::from_config(&config)
}

fn executed(node: &kista_runtime::RunningNode) -> u64 {
    node.stats().iter().map(|s| s.signals_executed).sum()
}

/// Signals per second with many tokens in flight.
fn throughput(layout: &ThreadLayout, seconds: u64) -> f64 {
    let options = RelayOptions {
        tokens_per_relay: 64,
        hops: u32::MAX,
        ..RelayOptions::default()
    };
    let runtime = RuntimeOptions::default();
    let load = relay_on_every_thread(layout, runtime.node, options);
    let node = start(layout, load.blocks, load.initial_signals, &runtime).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let (before, started) = (executed(&node), Instant::now());
    std::thread::sleep(Duration::from_secs(seconds));
    let (after, elapsed) = (executed(&node), started.elapsed());
    node.stop().unwrap();
    (after - before) as f64 / elapsed.as_secs_f64()
}

/// One-way latency in microseconds: a single token bounced between two threads.
fn one_way_latency_us(layout: &ThreadLayout, hops: u32) -> f64 {
    let options = RelayOptions {
        tokens_per_relay: 1,
        hops,
        starters: 1,
        ..RelayOptions::default()
    };
    let runtime = RuntimeOptions::default();
    let load = relay_on_every_thread(layout, runtime.node, options);
    let report = load.report.clone();
    let started = Instant::now();
    let node = start(layout, load.blocks, load.initial_signals, &runtime).unwrap();
    while !report.all_tokens_finished() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let elapsed = started.elapsed();
    node.stop().unwrap();
    elapsed.as_secs_f64() * 1e6 / f64::from(hops)
}

fn main() {
    let seconds = std::env::var("KISTA_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    println!("| measurement | threads | idle policy | result |");
    println!("|---|---|---|---|");
    for (name, text) in [("2", TWO_THREADS), ("4", FOUR_THREADS)] {
        for (policy, spin) in [("sleep", 0), ("spin 500 µs", 500)] {
            let rate = throughput(&layout(text, spin), seconds);
            println!(
                "| throughput | {name} | {policy} | {:.2} M signals/s |",
                rate / 1e6
            );
        }
    }
    for (policy, spin, hops) in [("sleep", 0, 20_000), ("spin 500 µs", 500, 400_000)] {
        let one_way = one_way_latency_us(&layout(TWO_THREADS, spin), hops);
        println!(
            "| one-way latency | 2 | {policy} | {one_way:.2} µs (round trip {:.2} µs) |",
            2.0 * one_way
        );
    }
}
