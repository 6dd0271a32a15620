//! `kista demo`: the data node runtime under a relay load, with live per-thread statistics.

use std::time::{Duration, Instant};

use clap::Args;
use kista_runtime::relay::{relay_on_every_module, RelayOptions};
use kista_runtime::{start, RuntimeOptions, ThreadStatsSnapshot};

use crate::thread_options::ThreadOptions;
use crate::Failure;

#[derive(Args, Debug)]
pub struct DemoArgs {
    #[command(flatten)]
    threads: ThreadOptions,

    /// How long to run, in seconds.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    seconds: u64,

    /// Statistics interval, in milliseconds.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(100..=60_000))]
    interval_ms: u64,

    /// Tokens each relay block keeps in flight (more tokens, bigger batches).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1024))]
    tokens_per_block: u32,

    /// Attach a 64-byte section to every n-th signal (0 = never).
    #[arg(long, default_value_t = 0)]
    section_every: u32,
}

pub fn run(args: &DemoArgs) -> Result<(), Failure> {
    let layout = args.threads.layout()?;
    print!("{layout}");
    let options = RelayOptions {
        tokens_per_relay: args.tokens_per_block,
        hops: u32::MAX,
        section_every: args.section_every,
        ..RelayOptions::default()
    };
    let runtime = RuntimeOptions::default();
    let load = relay_on_every_module(&layout, runtime.node, options);
    let report = load.report.clone();
    let node =
        start(&layout, load.blocks, load.initial_signals, &runtime).map_err(Failure::runtime)?;
    let started = Instant::now();
    let interval = Duration::from_millis(args.interval_ms);
    let mut previous = node.stats();
    let mut previous_at = started;
    while started.elapsed() < Duration::from_secs(args.seconds) && !node.has_stopped() {
        std::thread::sleep(interval);
        let now = Instant::now();
        let current = node.stats();
        print_interval(&previous, &current, now - previous_at);
        previous = current;
        previous_at = now;
    }
    let totals = node.stop().map_err(Failure::runtime)?;
    let executed: u64 = totals.iter().map(|t| t.signals_executed).sum();
    let seconds = started.elapsed().as_secs_f64();
    let summary = report.summary();
    println!(
        "total: {executed} signals in {seconds:.1} s ({:.0} signals/s); out of order: {}, bad sections: {}",
        executed as f64 / seconds,
        summary.out_of_order,
        summary.bad_sections
    );
    if summary.out_of_order > 0 || summary.bad_sections > 0 {
        return Err(Failure::runtime(
            "the relay saw signals out of order or damaged",
        ));
    }
    Ok(())
}

fn print_interval(
    previous: &[ThreadStatsSnapshot],
    current: &[ThreadStatsSnapshot],
    elapsed: Duration,
) {
    let seconds = elapsed.as_secs_f64().max(1e-9);
    println!(
        "{:>6} {:<6} {:>12} {:>7} {:>9} {:>6} {:>6} {:>6}  modules",
        "thread", "kind", "signals/s", "batch", "sleeps/s", "usr%", "sys%", "queue"
    );
    for (before, after) in previous.iter().zip(current) {
        let signals = after.signals_executed - before.signals_executed;
        let rounds = after.busy_rounds - before.busy_rounds;
        let percent = |b: u64, a: u64| (a - b) as f64 / 1e4 / seconds;
        let modules: Vec<String> = after.modules.iter().map(ToString::to_string).collect();
        println!(
            "{:>6} {:<6} {:>12.0} {:>7.1} {:>9.0} {:>6.1} {:>6.1} {:>6}  {}",
            after.thread,
            after.kind.name(),
            signals as f64 / seconds,
            if rounds == 0 {
                0.0
            } else {
                signals as f64 / rounds as f64
            },
            (after.sleeps - before.sleeps) as f64 / seconds,
            percent(before.cpu_user_us, after.cpu_user_us),
            percent(before.cpu_system_us, after.cpu_system_us),
            after.queue_depth,
            modules.join(",")
        );
    }
}
