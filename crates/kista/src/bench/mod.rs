//! `kista bench`: the flexAsynch-style benchmark (seed 002).
//!
//! Each client thread has its own connection and its own share of the key space, and keeps
//! `--parallel` transactions of `--batch` operations in flight. Phases (insert, update,
//! read, delete) each walk every key once per loop; `--duration` instead runs the listed
//! phases mixed over random keys for a fixed time. Every write's record is derived from its
//! key and version, so reads, and `--verify` at the end, check that each key holds exactly
//! what was last acknowledged. The benchmark creates its own table and drops it at the end.

mod report;
mod worker;
mod workload;

use std::sync::atomic::Ordering::Relaxed;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Args;
use kista_client::{Client, ExecuteMode, Table};

use crate::key_file::KeyFileArg;
use crate::Failure;
use report::{Interval, PhaseResults, Report, VerifyReport};
use worker::{Progress, Tally, Work, Worker, WorkerSettings};
use workload::{table_schema, KeySlice, Phase};

#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// The management server of the cluster to run against.
    #[arg(long, default_value = "127.0.0.1:1186")]
    mgm: String,

    #[command(flatten)]
    key: KeyFileArg,

    /// A standalone data node to run against instead (`kista datad --standalone`).
    #[arg(long, conflicts_with = "mgm")]
    connect: Option<String>,

    /// Client threads, each with its own connection and share of the keys.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=128))]
    threads: u32,

    /// Transactions each thread keeps in flight.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=4096))]
    parallel: u32,

    /// Operations per transaction (sent in one round trip).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    batch: u32,

    /// Payload bytes per record (besides the 8-byte key and 4-byte version).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=65_535))]
    record_size: u32,

    /// Keys in the key space.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    keys: u64,

    /// Times to run the phases (ops/s min/avg/max are over loops).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    loops: u32,

    /// Phases to run, in order; with --duration, the operations of the mixed load.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "insert,update,read,delete"
    )]
    phases: Vec<Phase>,

    /// Reads take a shared lock (held until their transaction commits) instead of reading
    /// the committed version without locking.
    #[arg(long)]
    locked_reads: bool,

    /// Commit durably: each transaction is confirmed only once its global checkpoint is on
    /// disk on every replica (docs/durability.md).
    #[arg(long)]
    durable: bool,

    /// Run the phases mixed over random keys for this many seconds (after loading every
    /// key) instead of phase by phase.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    duration: Option<u64>,

    /// Milliseconds between progress samples (printed on stderr, kept in the JSON).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=3_600_000))]
    interval: u64,

    /// Print one JSON document instead of the table.
    #[arg(long)]
    json: bool,

    /// Read back every key at the end and count keys that do not hold the record last
    /// acknowledged (exit status 1 if any).
    #[arg(long)]
    verify: bool,

    /// Seed for the random keys of --duration.
    #[arg(long, default_value_t = 1)]
    seed: u64,

    /// Leave the benchmark's table and its rows in the cluster (its name is printed on
    /// stderr) instead of dropping it at the end: to restart the cluster with data in it.
    #[arg(long)]
    keep_table: bool,
}

/// How often the main thread looks whether the workers finished.
const FINISH_POLL: Duration = Duration::from_millis(5);

pub fn run(args: &BenchArgs) -> Result<(), Failure> {
    let in_flight_keys = u64::from(args.threads * args.parallel * args.batch);
    if args.duration.is_some() && args.keys < 2 * in_flight_keys {
        return Err(Failure::usage(format!(
            "--duration picks random keys that are not in flight: --keys must be at least \
             2 x threads x parallel x batch = {}",
            2 * in_flight_keys
        )));
    }
    let key = args.key.load()?;
    let (target, connect): (_, fn(&str, _) -> _) = match &args.connect {
        Some(node) => (node, |address, key| Client::connect(address, key)),
        None => (&args.mgm, Client::connect_cluster),
    };
    let clients = (0..args.threads)
        .map(|_| connect(target, key.as_ref()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::runtime(format!("cannot connect to {target}: {e}")))?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!("kista_bench_{}_{nanos}", std::process::id());
    let table = clients[0]
        .create_table(table_schema(name, args.record_size), vec![])
        .map_err(|e| Failure::runtime(format!("cannot create the benchmark table: {e}")))?;
    let mut bench = Bench {
        args,
        clients: &clients,
        table: &table,
        slices: (0..args.threads)
            .map(|thread| KeySlice::new(thread, args.threads, args.keys))
            .collect(),
        started: Instant::now(),
        intervals: Vec::new(),
        connection_lost: None,
    };
    let report = bench.run_all();
    if args.keep_table {
        eprintln!("kista bench: the table {} is kept", table.schema().name);
    } else {
        // The table goes even when the run failed; a lost connection has taken it anyway.
        let _ = clients[0].drop_table(&table);
    }
    if args.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_table());
    }
    if let Some(reason) = bench.connection_lost {
        return Err(Failure::runtime(format!(
            "the benchmark stopped early: the connection failed: {reason}"
        )));
    }
    match report.verify {
        Some(verify) if !verify.passed() => Err(Failure::runtime(format!(
            "verify: {} keys missing and {} wrong out of {}",
            verify.missing, verify.wrong, verify.checked
        ))),
        _ => Ok(()),
    }
}

struct Bench<'a> {
    args: &'a BenchArgs,
    clients: &'a [Client],
    table: &'a Table,
    slices: Vec<KeySlice>,
    started: Instant,
    intervals: Vec<Interval>,
    connection_lost: Option<String>,
}

impl Bench<'_> {
    fn run_all(&mut self) -> Report {
        let args = self.args;
        // Phases in the order they first ran; a phase that repeats gathers all its loops.
        let mut results: Vec<(String, PhaseResults)> = Vec::new();
        let mut record = |name: &str, tallies: &[Tally], seconds: f64| {
            let at = match results.iter().position(|(n, _)| n == name) {
                Some(at) => at,
                None => {
                    results.push((name.to_string(), PhaseResults::new()));
                    results.len() - 1
                }
            };
            results[at].1.add_loop(tallies, seconds);
        };
        if args.duration.is_some() || args.phases.first() != Some(&Phase::Insert) {
            eprintln!("kista bench: loading {} keys", args.keys);
            self.run_phase("load", &Work::Sequential(Phase::Insert), args.locked_reads);
        }
        if let Some(seconds) = args.duration {
            let name = args
                .phases
                .iter()
                .map(|p| p.name())
                .collect::<Vec<_>>()
                .join("+");
            let work = Work::Mixed {
                phases: args.phases.clone(),
                until: Instant::now() + Duration::from_secs(seconds),
            };
            let (tallies, seconds) = self.run_phase(&name, &work, args.locked_reads);
            record(&name, &tallies, seconds);
        } else {
            'loops: for _ in 0..args.loops {
                for &phase in &args.phases {
                    let work = Work::Sequential(phase);
                    let (tallies, seconds) = self.run_phase(phase.name(), &work, args.locked_reads);
                    record(phase.name(), &tallies, seconds);
                    if self.connection_lost.is_some() {
                        break 'loops;
                    }
                }
            }
        }
        let mut report = Report::default();
        for (name, phase) in results {
            report.phases.insert(name.clone(), phase.report());
            report.order.push(name);
        }
        if args.verify && self.connection_lost.is_none() {
            eprintln!("kista bench: verifying {} keys", args.keys);
            let (tallies, _) = self.run_phase("verify", &Work::Sequential(Phase::Read), false);
            let mut verify = VerifyReport::default();
            for tally in &tallies {
                verify.checked += tally.reads_checked;
                verify.missing += tally.reads_missing;
                verify.wrong += tally.reads_wrong;
            }
            report.verify = Some(verify);
        }
        report.intervals = std::mem::take(&mut self.intervals);
        report
    }

    /// Runs `work` on every thread; returns their tallies and the phase's wall time in
    /// seconds (until the last thread finished).
    fn run_phase(&mut self, name: &str, work: &Work, locked_reads: bool) -> (Vec<Tally>, f64) {
        let args = self.args;
        let progress = Progress::default();
        let phase_started = Instant::now();
        let interval = Duration::from_millis(args.interval);
        let (clients, table) = (self.clients, self.table);
        let mut intervals = Vec::new();
        let bench_started = self.started;
        let finished: Vec<(Tally, Instant)> = thread::scope(|scope| {
            let workers: Vec<_> = self
                .slices
                .iter_mut()
                .zip(clients)
                .enumerate()
                .map(|(thread, (slice, client))| {
                    let settings = WorkerSettings {
                        parallel: args.parallel,
                        batch: args.batch,
                        record_size: args.record_size,
                        locked_reads,
                        commit: if args.durable {
                            ExecuteMode::CommitDurable
                        } else {
                            ExecuteMode::Commit
                        },
                        seed: args
                            .seed
                            .wrapping_mul(1_000_003)
                            .wrapping_add(thread as u64),
                    };
                    let progress = &progress;
                    scope.spawn(move || {
                        let tally = Worker::new(client, table, slice, settings, progress).run(work);
                        (tally, Instant::now())
                    })
                })
                .collect();
            let mut sampled = (phase_started, 0u64, 0u64);
            while !workers.iter().all(|w| w.is_finished()) {
                thread::sleep(FINISH_POLL);
                if sampled.0.elapsed() >= interval {
                    let sample = sample(bench_started, name, &progress, &mut sampled);
                    intervals.push(sample);
                }
            }
            workers
                .into_iter()
                .map(|w| w.join().expect("benchmark threads do not panic"))
                .collect()
        });
        self.intervals.extend(intervals);
        let last = finished
            .iter()
            .map(|(_, at)| *at)
            .max()
            .unwrap_or(phase_started);
        let seconds = last.duration_since(phase_started).as_secs_f64();
        let tallies: Vec<Tally> = finished.into_iter().map(|(tally, _)| tally).collect();
        if let Some(reason) = tallies.iter().find_map(|t| t.connection_lost.clone()) {
            self.connection_lost.get_or_insert(reason);
        }
        (tallies, seconds)
    }
}

/// An interval sample: ops and errors since the last one. `last`: (when, ops, errors).
fn sample(
    bench_started: Instant,
    phase: &str,
    progress: &Progress,
    last: &mut (Instant, u64, u64),
) -> Interval {
    let now = Instant::now();
    let (ops, errors) = (progress.ops.load(Relaxed), progress.errors.load(Relaxed));
    let seconds = now.duration_since(last.0).as_secs_f64().max(1e-9);
    let interval = Interval {
        phase: phase.to_string(),
        at_ms: now.duration_since(bench_started).as_millis() as u64,
        ops: ops - last.1,
        ops_per_sec: (ops - last.1) as f64 / seconds,
        errors: errors - last.2,
    };
    eprintln!(
        "kista bench: {:>8.1} s  {phase:<12} {:>10.0} ops/s  {} errors",
        interval.at_ms as f64 / 1000.0,
        interval.ops_per_sec,
        interval.errors
    );
    *last = (now, ops, errors);
    interval
}
