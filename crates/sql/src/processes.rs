//! The front end's connections as `SHOW PROCESSLIST` and `information_schema.PROCESSLIST`
//! list them, and `KILL` reaches them.
//!
//! Each connection registers a [`Process`] for its life. Its thread notes each command
//! as it begins (under an uncontended lock: the statement's text is copied into a buffer
//! that keeps its capacity) and ends (one atomic store): a prepared point read costs the
//! front end 8,295 instructions with this against 8,230 without (bench/callgrind-sql.sh,
//! under 1%). A sleeping connection's `Time` counts from its last command's start. `KILL QUERY id` marks the process: the running
//! statement stops at its next check (each round trip to the data nodes, every
//! [`ROWS_PER_KILL_CHECK`] rows a scan returns, SLEEP's waits) with error 1317.
//! `KILL [CONNECTION] id` marks it too and shuts its socket, so the connection ends even
//! while it waits for its client; what it had open is rolled back.

use std::collections::{BTreeMap, HashMap};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use kista_metrics::{Counter, Exposition, Histogram, HistogramSnapshot, Kind};

use crate::error::{SqlError, SqlResult};

/// Rows a scan returns between two looks at the kill mark.
pub const ROWS_PER_KILL_CHECK: usize = 1024;
/// Longest statement text a process shows (MySQL's `SHOW FULL PROCESSLIST` shows all;
/// this bounds what each connection keeps).
pub const STATEMENT_SHOWN_BYTES_MAX: usize = 64 * 1024;

const NOT_KILLED: u8 = 0;
const KILL_QUERY: u8 = 1;
const KILL_CONNECTION: u8 = 2;

/// The commands a connection runs statements with, as MySQL names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Query,
    Prepare,
    Execute,
}

impl Command {
    pub const ALL: [Command; 3] = [Command::Query, Command::Prepare, Command::Execute];

    pub fn name(self) -> &'static str {
        match self {
            Command::Query => "Query",
            Command::Prepare => "Prepare",
            Command::Execute => "Execute",
        }
    }
}

/// What one connection counts for the metrics, written by its own thread alone (a plain
/// load and store per statement); [`Processes::render_metrics`] sums them.
#[derive(Default)]
struct ConnectionCounters {
    commands: [Counter; Command::ALL.len()],
    /// From a command's start to its answer's flush.
    duration: Histogram,
}

/// What KILL ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kill {
    Query,
    Connection,
}

/// One connection.
pub struct Process {
    pub id: u32,
    host: String,
    user: Mutex<String>,
    activity: Mutex<Activity>,
    /// Whether a command runs (else the connection waits for its client: "Sleep").
    busy: AtomicBool,
    kill: AtomicU8,
    /// When the running statement must stop (`max_execution_time`), in ms since
    /// `registered`; 0: never.
    deadline_ms: AtomicU64,
    registered: Instant,
    /// When the running command began, in µs since `registered`.
    began_us: AtomicU64,
    counters: ConnectionCounters,
    /// A handle on the connection's socket, shut down by KILL CONNECTION.
    socket: Option<TcpStream>,
    /// Whether its client logged in (until then it is bound by `connect_timeout`).
    logged_in: AtomicBool,
}

/// What a connection does or last did.
struct Activity {
    database: Option<String>,
    /// MySQL's command names: Query, Execute, Prepare, ...
    command: &'static str,
    statement: String,
    since: Instant,
}

/// A process as a listing shows it.
pub struct ProcessRow {
    pub id: u32,
    pub user: String,
    pub host: String,
    pub database: Option<String>,
    pub command: &'static str,
    pub seconds: u64,
    pub statement: Option<String>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Process {
    pub fn new(id: u32, host: String, socket: Option<TcpStream>) -> Self {
        Self {
            id,
            host,
            user: Mutex::new(String::new()),
            activity: Mutex::new(Activity {
                database: None,
                command: "Connect",
                statement: String::new(),
                since: Instant::now(),
            }),
            busy: AtomicBool::new(true),
            kill: AtomicU8::new(NOT_KILLED),
            deadline_ms: AtomicU64::new(0),
            registered: Instant::now(),
            began_us: AtomicU64::new(0),
            counters: ConnectionCounters::default(),
            socket,
            logged_in: AtomicBool::new(false),
        }
    }

    /// Its client logged in as `user`.
    pub fn log_in(&self, user: &str) {
        self.set_user(user);
        // It waits for its client's first command from now (`wait_timeout`).
        lock(&self.activity).since = Instant::now();
        self.busy.store(false, Ordering::Release);
        self.logged_in.store(true, Ordering::Release);
    }

    /// Ends the connection: marks it killed and shuts its socket, so a thread blocked
    /// reading from its client wakes.
    fn close(&self) {
        self.kill.store(KILL_CONNECTION, Ordering::Relaxed);
        if let Some(socket) = &self.socket {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }

    /// Whether it overstayed: still logging in after `connect_timeout`, or waiting for
    /// its client longer than `wait_timeout`.
    fn overdue(&self, connect_timeout: Duration, wait_timeout: Duration) -> bool {
        if !self.logged_in.load(Ordering::Acquire) {
            return self.registered.elapsed() > connect_timeout;
        }
        !self.busy.load(Ordering::Acquire) && lock(&self.activity).since.elapsed() > wait_timeout
    }

    pub fn set_user(&self, user: &str) {
        user.clone_into(&mut lock(&self.user));
    }

    /// A command begins: `statement` is its text (empty for none). A KILL QUERY that
    /// came while the connection was idle is forgotten, as in MySQL.
    pub fn begin(&self, command: Command, database: Option<&str>, statement: &str) {
        // A plain load first: the exchange (a locked instruction) only when one came.
        if self.kill.load(Ordering::Relaxed) == KILL_QUERY {
            let _ = self.kill.compare_exchange(
                KILL_QUERY,
                NOT_KILLED,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        if self.deadline_ms.load(Ordering::Relaxed) != 0 {
            self.deadline_ms.store(0, Ordering::Relaxed);
        }
        self.counters.commands[command as usize].inc_owned();
        let mut activity = lock(&self.activity);
        activity.command = command.name();
        if activity.database.as_deref() != database {
            activity.database = database.map(str::to_string);
        }
        activity.statement.clear();
        let mut shown = statement.len().min(STATEMENT_SHOWN_BYTES_MAX);
        while !statement.is_char_boundary(shown) {
            shown -= 1;
        }
        activity.statement.push_str(&statement[..shown]);
        let now = Instant::now();
        activity.since = now;
        let began_us = now.duration_since(self.registered).as_micros() as u64;
        self.began_us.store(began_us, Ordering::Relaxed);
        self.busy.store(true, Ordering::Release);
    }

    /// The command ended: the connection waits for its client.
    pub fn end(&self) {
        if self.busy.load(Ordering::Relaxed) {
            let now_us = self.registered.elapsed().as_micros() as u64;
            let began_us = self.began_us.load(Ordering::Relaxed);
            self.counters
                .duration
                .observe_us_owned(now_us.saturating_sub(began_us));
        }
        self.busy.store(false, Ordering::Release);
    }

    /// Error 1317 if a KILL marked this process, 3024 if the statement ran past its
    /// `max_execution_time`; checked by long work.
    pub fn check_killed(&self) -> SqlResult<()> {
        if self.killed() {
            return Err(SqlError::query_interrupted());
        }
        if self.past_deadline() {
            return Err(SqlError::new(
                3024,
                "HY000",
                "Query execution was interrupted, maximum statement execution time exceeded",
            ));
        }
        Ok(())
    }

    /// Gives the running statement `max_ms` milliseconds from now (MySQL's
    /// `max_execution_time`, for SELECT); the next command starts without a limit.
    pub fn limit_statement(&self, max_ms: u64) {
        let now_ms = self.registered.elapsed().as_millis() as u64;
        self.deadline_ms
            .store(now_ms.saturating_add(max_ms).max(1), Ordering::Relaxed);
    }

    fn past_deadline(&self) -> bool {
        let deadline = self.deadline_ms.load(Ordering::Relaxed);
        deadline != 0 && self.registered.elapsed().as_millis() as u64 >= deadline
    }

    /// Whether the running statement must stop (killed, or past its time).
    pub fn interrupted(&self) -> bool {
        self.killed() || self.past_deadline()
    }

    pub fn killed(&self) -> bool {
        self.kill.load(Ordering::Relaxed) != NOT_KILLED
    }

    fn row(&self) -> ProcessRow {
        let activity = lock(&self.activity);
        let busy = self.busy.load(Ordering::Acquire);
        ProcessRow {
            id: self.id,
            user: lock(&self.user).clone(),
            host: self.host.clone(),
            database: activity.database.clone(),
            command: if busy { activity.command } else { "Sleep" },
            seconds: activity.since.elapsed().as_secs(),
            statement: Some(activity.statement.clone()).filter(|s| busy && !s.is_empty()),
        }
    }
}

/// Every connection of this front end, by id, and what ended ones counted.
#[derive(Default)]
pub struct Processes {
    by_id: Mutex<HashMap<u32, Arc<Process>>>,
    /// Counts of connections that ended, so totals never go back.
    ended: Mutex<EndedCounts>,
    /// Errors sent to clients, by code (a few hundred codes exist: bounded).
    errors: Mutex<BTreeMap<u16, u64>>,
    accepted: Counter,
    refused: Counter,
    /// Connections closed for logging in too slowly, or waiting too long for their client.
    closed_overdue: Counter,
    /// Connections closed to make room for a new one to log in.
    closed_logging_in: Counter,
}

#[derive(Default)]
struct EndedCounts {
    commands: [u64; Command::ALL.len()],
    duration: Option<HistogramSnapshot>,
}

impl Processes {
    /// Registers `process` until the returned guard is dropped.
    pub fn register(self: &Arc<Self>, process: Arc<Process>) -> Registered {
        lock(&self.by_id).insert(process.id, process.clone());
        Registered {
            processes: self.clone(),
            id: process.id,
        }
    }

    /// Every process, by id.
    pub fn rows(&self) -> Vec<ProcessRow> {
        let processes: Vec<Arc<Process>> = lock(&self.by_id).values().cloned().collect();
        let mut rows: Vec<ProcessRow> = processes.iter().map(|p| p.row()).collect();
        rows.sort_by_key(|row| row.id);
        rows
    }

    /// A connection was accepted, or refused for the connection limit.
    pub fn count_connection(&self, accepted: bool) {
        if accepted {
            self.accepted.inc()
        } else {
            self.refused.inc()
        }
    }

    /// An error went to a client.
    pub fn count_error(&self, code: u16) {
        *lock(&self.errors).entry(code).or_default() += 1;
    }

    /// The front end's metrics (docs/operations.md): connections, commands, their
    /// latency and the errors sent.
    pub fn render_metrics(&self, open_connections: usize, out: &mut Exposition) {
        let help = "Client connections open now.";
        out.single(
            "kista_sql_connections",
            help,
            Kind::Gauge,
            open_connections as f64,
        );
        let help = "Client connections accepted, refused at the connection limit (1040), \
                    closed for overstaying connect_timeout or wait_timeout, or closed still \
                    logging in to make room for a new one.";
        let mut family = out.family("kista_sql_connections_total", help, Kind::Counter);
        family.sample(&[("outcome", "accepted")], self.accepted.get() as f64);
        family.sample(&[("outcome", "refused")], self.refused.get() as f64);
        family.sample(
            &[("outcome", "timed_out")],
            self.closed_overdue.get() as f64,
        );
        let displaced = self.closed_logging_in.get() as f64;
        family.sample(&[("outcome", "displaced")], displaced);
        let (commands, duration) = self.command_totals();
        let help = "Commands clients ran statements with (Query, Prepare, Execute).";
        let mut family = out.family("kista_sql_commands_total", help, Kind::Counter);
        for (command, count) in Command::ALL.iter().zip(commands) {
            family.sample(&[("command", command.name())], count as f64);
        }
        let help = "Time from a command's arrival to its answer's sending.";
        out.family("kista_sql_command_duration_seconds", help, Kind::Histogram)
            .histogram(&[], &duration);
        let help = "Errors sent to clients, by MySQL error code.";
        let mut family = out.family("kista_sql_errors_total", help, Kind::Counter);
        for (code, count) in lock(&self.errors).iter() {
            family.sample(&[("code", &code.to_string())], *count as f64);
        }
    }

    /// Commands and their latency over the connections open and those that ended.
    fn command_totals(&self) -> ([u64; Command::ALL.len()], HistogramSnapshot) {
        let processes: Vec<Arc<Process>> = lock(&self.by_id).values().cloned().collect();
        let ended = lock(&self.ended);
        let mut commands = ended.commands;
        let mut duration = ended
            .duration
            .clone()
            .unwrap_or_else(HistogramSnapshot::empty);
        drop(ended);
        for process in &processes {
            for (total, counter) in commands.iter_mut().zip(&process.counters.commands) {
                *total += counter.get();
            }
            duration.merge(&process.counters.duration.snapshot());
        }
        (commands, duration)
    }

    /// KILL: marks process `id` (and for a connection, shuts its socket); error 1094 for
    /// an id this front end does not serve, 1095 for another user's when the killer may
    /// kill `only_of` its own.
    pub fn kill(&self, id: u32, kill: Kill, only_of: Option<&str>) -> SqlResult<()> {
        let process = lock(&self.by_id).get(&id).cloned();
        let process = process
            .ok_or_else(|| SqlError::new(1094, "HY000", format!("Unknown thread id: {id}")))?;
        if only_of.is_some_and(|user| *lock(&process.user) != user) {
            return Err(SqlError::new(
                1095,
                "HY000",
                format!("You are not owner of thread {id}"),
            ));
        }
        match kill {
            Kill::Query => {
                let _ = process.kill.compare_exchange(
                    NOT_KILLED,
                    KILL_QUERY,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
            Kill::Connection => process.close(),
        }
        Ok(())
    }

    /// Connections still logging in.
    pub fn logging_in(&self) -> usize {
        let by_id = lock(&self.by_id);
        (by_id.values())
            .filter(|p| !p.logged_in.load(Ordering::Acquire))
            .count()
    }

    /// Closes the connection that has been logging in longest: a new one needs its
    /// place more than one that has not logged in in all that time.
    pub fn close_longest_logging_in(&self) {
        let by_id = lock(&self.by_id);
        let oldest = (by_id.values())
            .filter(|p| !p.logged_in.load(Ordering::Acquire))
            .min_by_key(|p| p.registered);
        if let Some(process) = oldest {
            process.close();
            self.closed_logging_in.inc();
        }
    }

    /// Closes every connection that overstayed ([`Process::overdue`]); returns how many.
    pub fn close_overdue(&self, connect_timeout: Duration, wait_timeout: Duration) -> usize {
        let overdue: Vec<Arc<Process>> = (lock(&self.by_id).values())
            .filter(|p| !p.killed() && p.overdue(connect_timeout, wait_timeout))
            .cloned()
            .collect();
        for process in &overdue {
            process.close();
            self.closed_overdue.inc();
        }
        overdue.len()
    }
}

/// Keeps a process listed; dropped when its connection ends.
pub struct Registered {
    processes: Arc<Processes>,
    id: u32,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let ended = lock(&self.processes.by_id).remove(&self.id);
        if let Some(process) = ended {
            let mut counts = lock(&self.processes.ended);
            for (total, counter) in counts.commands.iter_mut().zip(&process.counters.commands) {
                *total += counter.get();
            }
            let duration = process.counters.duration.snapshot();
            match &mut counts.duration {
                Some(total) => total.merge(&duration),
                None => counts.duration = Some(duration),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_shows_its_command_and_kill_query_ends_only_the_running_statement() {
        let processes = Arc::new(Processes::default());
        let process = Arc::new(Process::new(7, "127.0.0.1:5000".into(), None));
        process.set_user("app");
        let registered = processes.register(process.clone());
        process.begin(Command::Query, Some("shop"), "SELECT SLEEP(10)");
        let row = &processes.rows()[0];
        assert_eq!(
            (row.id, row.user.as_str(), row.command),
            (7, "app", "Query")
        );
        assert_eq!(row.statement.as_deref(), Some("SELECT SLEEP(10)"));
        assert_eq!(row.database.as_deref(), Some("shop"));

        let not_owner = processes.kill(7, Kill::Query, Some("other"));
        assert_eq!(not_owner.unwrap_err().code, 1095);
        assert!(
            process.check_killed().is_ok(),
            "another user's KILL is refused"
        );
        processes.kill(7, Kill::Query, Some("app")).unwrap();
        assert_eq!(process.check_killed().unwrap_err().code, 1317);
        process.end();
        let idle = &processes.rows()[0];
        assert_eq!((idle.command, idle.statement.as_deref()), ("Sleep", None));
        process.begin(Command::Query, Some("shop"), "SELECT 1");
        assert!(process.check_killed().is_ok(), "the next statement runs");

        processes.kill(7, Kill::Connection, None).unwrap();
        process.begin(Command::Query, None, "SELECT 2");
        assert!(process.killed(), "a killed connection stays killed");
        assert_eq!(processes.kill(8, Kill::Query, None).unwrap_err().code, 1094);
        drop(registered);
        assert!(processes.rows().is_empty());
    }

    #[test]
    fn a_long_statement_is_shown_cut_at_a_character_boundary() {
        let process = Process::new(1, String::new(), None);
        let long = "é".repeat(STATEMENT_SHOWN_BYTES_MAX);
        process.begin(Command::Query, None, &long);
        let shown = process.row().statement.unwrap();
        assert!(
            shown.len() <= STATEMENT_SHOWN_BYTES_MAX && shown.len() > STATEMENT_SHOWN_BYTES_MAX - 2
        );
    }
}
