//! One benchmark thread: keeps `parallel` transactions in flight on its own connection, each
//! a batch of operations on keys of its own slice, and tallies what came back.
//!
//! Completions arrive through a channel from callbacks on the connection's receive thread,
//! so this thread does all the bookkeeping and the key states need no locks.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use kista_client::types::Value;
use kista_client::{Client, ClientError, ErrorCategory, ExecuteMode, Executed, LockKind, Table};
use rustc_hash::FxHashMap;

use super::workload::{check_read, KeyOp, KeySlice, Payloads, Phase, ReadCheck};

/// How often a transaction failing with a temporary error is sent again before its error
/// counts as final.
pub const TEMPORARY_RETRIES_MAX: u32 = 10;
/// The wait before the first retry; each further one waits twice as long as the last, up
/// to [`RETRY_DELAY_MAX`]: ten retries span about 0.7 s, which rides out a failover
/// (during which the survivors refuse reads until the cluster's membership is settled).
pub const RETRY_DELAY_FIRST: Duration = Duration::from_millis(1);
pub const RETRY_DELAY_MAX: Duration = Duration::from_millis(200);
/// How long a thread waits for any of its transactions to answer before it gives up.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);
/// Latency the histograms can hold (longer ones are clamped), in microseconds.
const LATENCY_MAX_US: u64 = 60_000_000;
/// Tries to find a random key that is not in flight before a mixed batch is sent short.
const FREE_KEY_TRIES_MAX: u32 = 16;

/// What a thread runs.
#[derive(Clone, Debug)]
pub enum Work {
    /// Every key of the slice once, in order.
    Sequential(Phase),
    /// Random keys until `until`, each transaction the next phase of `phases` in turn.
    Mixed { phases: Vec<Phase>, until: Instant },
}

#[derive(Clone, Copy, Debug)]
pub struct WorkerSettings {
    pub parallel: u32,
    pub batch: u32,
    pub record_size: u32,
    pub locked_reads: bool,
    /// How each transaction commits (`--durable`).
    pub commit: ExecuteMode,
    pub seed: u64,
}

/// Counters every thread adds to as it goes, read by the interval reporter.
#[derive(Default)]
pub struct Progress {
    pub ops: AtomicU64,
    pub errors: AtomicU64,
}

/// What one thread saw in one phase.
pub struct Tally {
    pub ops: u64,
    pub latency_us: Histogram<u64>,
    /// Error code → (count, the first message).
    pub errors: BTreeMap<u32, (u64, String)>,
    pub reads_checked: u64,
    pub reads_missing: u64,
    pub reads_wrong: u64,
    /// The connection failed; the thread stopped early.
    pub connection_lost: Option<String>,
    /// When the last transaction succeeded, and the longest wait between two successes:
    /// the service gap a failover causes (with a thread's whole window of transactions
    /// stalled, one thread's gap is the cluster's).
    pub last_success: Option<Instant>,
    pub longest_gap_us: u64,
}

impl Tally {
    pub fn new() -> Self {
        Self {
            ops: 0,
            latency_us: Histogram::new_with_bounds(1, LATENCY_MAX_US, 3)
                .expect("constant histogram bounds are valid"),
            errors: BTreeMap::new(),
            reads_checked: 0,
            reads_missing: 0,
            reads_wrong: 0,
            connection_lost: None,
            last_success: None,
            longest_gap_us: 0,
        }
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().map(|(count, _)| count).sum()
    }

    /// Adds another thread's tally of the same phase.
    pub fn merge(&mut self, other: &Tally) {
        self.ops += other.ops;
        // Both histograms have the same bounds, so adding cannot fail.
        let _ = self.latency_us.add(&other.latency_us);
        for (code, (count, message)) in &other.errors {
            let entry = self.errors.entry(*code).or_insert((0, message.clone()));
            entry.0 += count;
        }
        self.reads_checked += other.reads_checked;
        self.reads_missing += other.reads_missing;
        self.reads_wrong += other.reads_wrong;
        if self.connection_lost.is_none() {
            self.connection_lost.clone_from(&other.connection_lost);
        }
        self.longest_gap_us = self.longest_gap_us.max(other.longest_gap_us);
    }
}

struct Flight {
    ops: Vec<(usize, KeyOp)>,
    started: Instant,
    attempts: u32,
}

type Answer = (u64, Result<Executed, ClientError>);

/// One thread's run of `work` over `slice`.
pub struct Worker<'a> {
    client: &'a Client,
    table: &'a Table,
    slice: &'a mut KeySlice,
    settings: WorkerSettings,
    progress: &'a Progress,
    tally: Tally,
    /// Transactions in flight by ticket.
    flights: FxHashMap<u64, Flight>,
    /// `[slot]` → whether a transaction in flight holds the key.
    busy: Vec<bool>,
    payloads: Payloads,
    /// Transactions to send again once their time comes.
    retries: Vec<(Instant, Flight)>,
    next_ticket: u64,
    next_slot: usize,
    transactions_started: u64,
    rng: fastrand::Rng,
    stopping: bool,
    answers: (Sender<Answer>, Receiver<Answer>),
}

impl<'a> Worker<'a> {
    pub fn new(
        client: &'a Client,
        table: &'a Table,
        slice: &'a mut KeySlice,
        settings: WorkerSettings,
        progress: &'a Progress,
    ) -> Self {
        let busy = vec![false; slice.len()];
        Self {
            client,
            table,
            slice,
            settings,
            progress,
            tally: Tally::new(),
            flights: FxHashMap::default(),
            busy,
            payloads: Payloads::new(settings.record_size),
            retries: Vec::new(),
            next_ticket: 0,
            next_slot: 0,
            transactions_started: 0,
            rng: fastrand::Rng::with_seed(settings.seed),
            stopping: false,
            answers: mpsc::channel(),
        }
    }

    pub fn run(mut self, work: &Work) -> Tally {
        loop {
            while !self.stopping && self.flights.len() < self.settings.parallel as usize {
                let flight = match self.due_retry() {
                    Some(flight) => flight,
                    None => match self.next_flight(work) {
                        Some(flight) => flight,
                        None => break,
                    },
                };
                self.launch(flight);
            }
            // A stopping thread drops the retries still waiting.
            let next_retry = self
                .retries
                .iter()
                .map(|(at, _)| *at)
                .min()
                .filter(|_| !self.stopping);
            if self.flights.is_empty() {
                match next_retry {
                    Some(at) => {
                        std::thread::sleep(at.saturating_duration_since(Instant::now()));
                        continue;
                    }
                    None => break,
                }
            }
            let wait = next_retry.map_or(ANSWER_TIMEOUT, |at| {
                ANSWER_TIMEOUT.min(at.saturating_duration_since(Instant::now()))
            });
            match self.answers.1.recv_timeout(wait) {
                Ok((ticket, result)) => self.settle(ticket, result),
                Err(RecvTimeoutError::Timeout) if wait < ANSWER_TIMEOUT => {}
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                    self.tally.connection_lost = Some(format!(
                        "{} transactions got no answer within {} s",
                        self.flights.len(),
                        ANSWER_TIMEOUT.as_secs()
                    ));
                    break;
                }
            }
        }
        self.tally
    }

    /// A retry whose wait is over, if any.
    fn due_retry(&mut self) -> Option<Flight> {
        let now = Instant::now();
        let due = self.retries.iter().position(|(at, _)| *at <= now)?;
        Some(self.retries.swap_remove(due).1)
    }

    /// The next batch of operations, or `None` when the work is done.
    fn next_flight(&mut self, work: &Work) -> Option<Flight> {
        let batch = self.settings.batch as usize;
        let mut ops = Vec::with_capacity(batch);
        match work {
            Work::Sequential(phase) => {
                while ops.len() < batch && self.next_slot < self.slice.len() {
                    let slot = self.next_slot;
                    self.next_slot += 1;
                    if let Some(op) = self.slice.op_for(*phase, slot) {
                        ops.push((slot, op));
                    }
                }
            }
            Work::Mixed { phases, until } => {
                if Instant::now() >= *until || self.slice.len() == 0 {
                    self.stopping = true;
                    return None;
                }
                let phase = phases[self.transactions_started as usize % phases.len()];
                let mut tries = 0;
                while ops.len() < batch && tries < FREE_KEY_TRIES_MAX {
                    tries += 1;
                    let slot = self.rng.usize(..self.slice.len());
                    if self.busy[slot] || ops.iter().any(|&(s, _)| s == slot) {
                        continue;
                    }
                    let op = self
                        .slice
                        .op_for(phase, slot)
                        .or_else(|| self.slice.op_for(Phase::Insert, slot));
                    if let Some(op) = op {
                        ops.push((slot, op));
                    }
                }
            }
        }
        if ops.is_empty() {
            return None;
        }
        self.transactions_started += 1;
        for &(slot, _) in &ops {
            self.busy[slot] = true;
        }
        Some(Flight {
            ops,
            started: Instant::now(),
            attempts: 0,
        })
    }

    fn launch(&mut self, flight: Flight) {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        let sent = self.send(ticket, &flight);
        self.flights.insert(ticket, flight);
        if let Err(error) = sent {
            self.settle(ticket, Err(error));
        }
    }

    fn send(&self, ticket: u64, flight: &Flight) -> Result<(), ClientError> {
        let (table, payloads) = (self.table, &self.payloads);
        let lock = if self.settings.locked_reads {
            LockKind::Shared
        } else {
            LockKind::Committed
        };
        let mut transaction = self.client.transaction();
        for &(slot, op) in &flight.ops {
            let key = self.slice.key(slot);
            let key_values = [Value::Int(key as i64)];
            match op {
                KeyOp::Insert { version } => {
                    transaction.insert(table, payloads.record(key, version))?
                }
                KeyOp::Write { version } => {
                    transaction.write(table, payloads.record(key, version))?
                }
                KeyOp::Update { version } => {
                    let changes = vec![
                        (1, Value::UInt(u64::from(version))),
                        (2, Value::Bytes(payloads.of(key, version).to_vec())),
                    ];
                    transaction.update(table, &key_values, changes)?
                }
                KeyOp::Read => transaction.read(table, &key_values, lock)?,
                KeyOp::Delete => transaction.delete(table, &key_values)?,
            };
        }
        let answers = self.answers.0.clone();
        transaction.execute_then(self.settings.commit, move |result| {
            // The worker may have given up waiting; then nobody needs the answer.
            let _ = answers.send((ticket, result));
        })
    }

    fn settle(&mut self, ticket: u64, result: Result<Executed, ClientError>) {
        let Some(mut flight) = self.flights.remove(&ticket) else {
            return;
        };
        match result {
            Ok(executed) => {
                let now = Instant::now();
                if let Some(last) = self.tally.last_success {
                    let gap_us = now.duration_since(last).as_micros() as u64;
                    self.tally.longest_gap_us = self.tally.longest_gap_us.max(gap_us);
                }
                self.tally.last_success = Some(now);
                let micros = flight.started.elapsed().as_micros() as u64;
                self.tally.latency_us.saturating_record(micros.max(1));
                for (index, &(slot, op)) in flight.ops.iter().enumerate() {
                    if op == KeyOp::Read {
                        let row = executed.rows.get(index).and_then(|row| row.as_deref());
                        let expected = self.slice.expected[slot];
                        let key = self.slice.key(slot);
                        self.tally.reads_checked += 1;
                        match check_read(key, expected, row, &self.payloads) {
                            ReadCheck::Right => {}
                            ReadCheck::Missing => self.tally.reads_missing += 1,
                            ReadCheck::Wrong => self.tally.reads_wrong += 1,
                        }
                    } else {
                        self.slice.acknowledged(slot, op);
                    }
                }
                self.tally.ops += flight.ops.len() as u64;
                self.progress
                    .ops
                    .fetch_add(flight.ops.len() as u64, Ordering::Relaxed);
                self.release(&flight);
            }
            Err(error) => {
                self.progress.errors.fetch_add(1, Ordering::Relaxed);
                let entry = self
                    .tally
                    .errors
                    .entry(error.code())
                    .or_insert_with(|| (0, error.to_string()));
                entry.0 += 1;
                if error.is_temporary() && flight.attempts < TEMPORARY_RETRIES_MAX {
                    let delay = RETRY_DELAY_FIRST
                        .saturating_mul(1 << flight.attempts.min(16))
                        .min(RETRY_DELAY_MAX);
                    flight.attempts += 1;
                    return self.retries.push((Instant::now() + delay, flight));
                }
                if error.category() == ErrorCategory::UnknownOutcome {
                    for &(slot, op) in &flight.ops {
                        self.slice.outcome_unknown(slot, op);
                    }
                }
                if let ClientError::ConnectionLost(reason) = &error {
                    self.stopping = true;
                    self.tally
                        .connection_lost
                        .get_or_insert_with(|| reason.clone());
                }
                self.release(&flight);
            }
        }
    }

    fn release(&mut self, flight: &Flight) {
        for &(slot, _) in &flight.ops {
            self.busy[slot] = false;
        }
    }
}
