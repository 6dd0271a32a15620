//! The processes `kista up` starts, and how it watches them, as NDB's angel process
//! watches a data node: a child that exits unexpectedly (a crash, a kill, a node the
//! cluster shut out) is started again after a pause that doubles while it keeps failing
//! soon after its start; a data node stopped on request (`kista mgm -e "N stop"`: it exits
//! with status 0) stays stopped; the management server stopping on request (`kista mgm -e
//! shutdown`, which stops the data nodes first) ends the run. Losing the management server
//! never stops the data nodes: it is started again on its port and they reconnect.

use std::fs::{File, OpenOptions};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kista_log::Level;
use kista_mgm::admin::AdminClient;
use kista_transport::cluster_key::ClusterKey;

use super::say;
use crate::Failure;

/// How often the supervisor looks at its children and for a stop request.
pub(super) const POLL: Duration = Duration::from_millis(100);
/// Longest wait for one admin request.
pub(super) const ADMIN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a child may take to say it is ready before `kista up` gives up.
pub(super) const START_LIMIT: Duration = Duration::from_secs(120);
/// How long the cluster may take to stop cleanly before its processes are killed.
const STOP_LIMIT: Duration = Duration::from_secs(30);
/// The pause before a child that exited is started again, doubled after each exit that
/// came sooner than [`RAN_WELL`] after its start, up to [`RESTART_PAUSE_MAX`].
const RESTART_PAUSE_FIRST: Duration = Duration::from_secs(1);
const RESTART_PAUSE_MAX: Duration = Duration::from_secs(30);
/// A child that ran this long before it exited is started again after the first pause.
const RAN_WELL: Duration = Duration::from_secs(60);
/// Lines of a child's log quoted when it cannot start.
const LOG_TAIL_LINES: usize = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    ManagementServer,
    DataNode,
    SqlFrontEnd,
}

/// One process `kista up` started, and how to start it again.
pub(super) struct Child {
    pub(super) name: String,
    pub(super) role: Role,
    args: Vec<String>,
    pub(super) log: PathBuf,
    dir: PathBuf,
    process: Option<std::process::Child>,
    started_at: Instant,
    /// Set after an unexpected exit: when it starts again.
    restart_at: Option<Instant>,
    pause: Duration,
    restarts: u32,
}

impl Child {
    /// Starts `kista ARGS` as `name`, its output in `DIR/logs/NAME.log` (a new log).
    pub(super) fn spawn(
        name: &str,
        role: Role,
        args: &[&str],
        dir: &Path,
    ) -> Result<Self, Failure> {
        let log = dir
            .join("logs")
            .join(format!("{}.log", name.replace(' ', "-")));
        let mut child = Child {
            name: name.to_string(),
            role,
            args: args.iter().map(|a| a.to_string()).collect(),
            log,
            dir: dir.to_path_buf(),
            process: None,
            started_at: Instant::now(),
            restart_at: None,
            pause: RESTART_PAUSE_FIRST,
            restarts: 0,
        };
        let output = File::create(&child.log)
            .map_err(|e| Failure::runtime(format!("cannot create {}: {e}", child.log.display())))?;
        child.start(output)?;
        Ok(child)
    }

    fn start(&mut self, output: File) -> Result<(), Failure> {
        let errors = output
            .try_clone()
            .map_err(|e| Failure::runtime(format!("{}: {e}", self.log.display())))?;
        let program = std::env::current_exe()
            .map_err(|e| Failure::runtime(format!("cannot find the kista binary: {e}")))?;
        let process = Command::new(program)
            .args(&self.args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(errors)
            // Its own process group: a terminal's Ctrl-C reaches only `kista up`.
            .process_group(0)
            .spawn()
            .map_err(|e| Failure::runtime(format!("cannot start {}: {e}", self.name)))?;
        say(
            Level::Info,
            format_args!(
                "started {} (pid {}), log {}",
                self.name,
                process.id(),
                self.log.display()
            ),
        );
        self.process = Some(process);
        self.started_at = Instant::now();
        Ok(())
    }

    /// Starts it again, its output added to its log.
    fn restart(&mut self) -> Result<(), Failure> {
        let output = OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.log)
            .map_err(|e| Failure::runtime(format!("cannot open {}: {e}", self.log.display())))?;
        self.restarts += 1;
        self.start(output)
    }

    /// From now on it starts on `port` (the one it picked when asked for any).
    pub(super) fn keep_port(&mut self, port: u16) {
        if let Some(at) = self.args.iter().position(|a| a == "--port") {
            if let Some(value) = self.args.get_mut(at + 1) {
                *value = port.to_string();
            }
        }
    }

    pub(super) fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(std::process::Child::id)
    }

    /// Its exit status, once it has exited (then it has no process any more).
    fn exited(&mut self) -> Option<ExitStatus> {
        let status = self.process.as_mut()?.try_wait().ok().flatten()?;
        self.process = None;
        Some(status)
    }

    /// Fails, naming it, its log and the log's last lines, if it has exited.
    pub(super) fn check_running(&mut self) -> Result<(), Failure> {
        match self.exited() {
            Some(status) => Err(Failure::runtime(format!(
                "{} exited ({status}); the end of {}:\n{}",
                self.name,
                self.log.display(),
                log_tail(&self.log)
            ))),
            None => Ok(()),
        }
    }

    /// Waits until its log holds `line`; fails if it exits, a stop is asked, or
    /// [`START_LIMIT`] passes.
    pub(super) fn wait_for_log_line(
        &mut self,
        line: &str,
        stop: &AtomicBool,
    ) -> Result<(), Failure> {
        let deadline = Instant::now() + START_LIMIT;
        while !std::fs::read_to_string(&self.log).is_ok_and(|log| log.contains(line)) {
            self.check_running()?;
            if stop.load(Ordering::SeqCst) || Instant::now() > deadline {
                return Err(Failure::runtime(format!(
                    "{} did not get ready: see {}",
                    self.name,
                    self.log.display()
                )));
            }
            std::thread::sleep(POLL);
        }
        Ok(())
    }

    /// After it exited with `status`: whether and when it starts again.
    fn plan_restart(&mut self, status: ExitStatus) {
        let ran = self.started_at.elapsed();
        self.pause = if ran >= RAN_WELL || self.restarts == 0 {
            RESTART_PAUSE_FIRST
        } else {
            (self.pause * 2).min(RESTART_PAUSE_MAX)
        };
        self.restart_at = Some(Instant::now() + self.pause);
        say(
            Level::Warn,
            format_args!(
                "{} exited ({status}) after {:.1} s; starting it again in {} s \
             (restart {}), see {}",
                self.name,
                ran.as_secs_f64(),
                self.pause.as_secs(),
                self.restarts + 1,
                self.log.display()
            ),
        );
    }

    /// Starts it again if its pause is over; a start that fails waits a longer pause.
    fn restart_if_due(&mut self) {
        if self.restart_at.is_none_or(|at| Instant::now() < at) {
            return;
        }
        self.restart_at = None;
        if let Err(failure) = self.restart() {
            say(Level::Warn, &failure.message);
            self.pause = (self.pause * 2).min(RESTART_PAUSE_MAX);
            self.restart_at = Some(Instant::now() + self.pause);
        }
    }
}

/// The last [`LOG_TAIL_LINES`] lines of `log`, indented.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(LOG_TAIL_LINES);
    lines[start..]
        .iter()
        .map(|line| format!("  {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs until a stop request (Ok) or until the management server stops on request (the
/// cluster was shut down: Ok), starting again every child that exits unexpectedly.
pub(super) fn supervise(children: &mut [Child], stop: &AtomicBool) -> Result<(), Failure> {
    while !stop.load(Ordering::SeqCst) {
        for child in children.iter_mut() {
            if let Some(status) = child.exited() {
                match (child.role, status.success()) {
                    (Role::ManagementServer, true) => {
                        say(
                            Level::Info,
                            "the management server stopped: the cluster was shut down",
                        );
                        return Ok(());
                    }
                    (Role::DataNode, true) => say(
                        Level::Info,
                        format_args!(
                            "{} stopped on request; it stays stopped until kista up \
                         starts again",
                            child.name
                        ),
                    ),
                    _ => child.plan_restart(status),
                }
            }
            child.restart_if_due();
        }
        std::thread::sleep(POLL);
    }
    Ok(())
}

/// Stops the SQL front end, asks the management server to shut the cluster down, waits
/// for every child, and kills what is left after [`STOP_LIMIT`].
pub(super) fn shut_down(mgm: &str, key: &ClusterKey, children: &mut [Child]) {
    // The SQL front end first: its clients' connections close before the cluster goes.
    for sql in children.iter_mut().filter(|c| c.role == Role::SqlFrontEnd) {
        if let Some(pid) = sql.pid() {
            // SAFETY: kill(2) on our own child's pid; no memory is touched.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        }
        let deadline = Instant::now() + STOP_LIMIT;
        while sql.process.is_some() && sql.exited().is_none() && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
    }
    say(Level::Info, "stopping the cluster");
    let asked = AdminClient::connect(mgm, Some(key), ADMIN_TIMEOUT)
        .and_then(|mut admin| admin.request("shutdown"))
        .is_ok();
    let deadline = Instant::now() + STOP_LIMIT;
    for child in children.iter_mut() {
        // Without the management server nothing stops the data nodes cleanly; killing
        // them loses the commits after the last saved global checkpoint, as a crash does.
        while asked
            && child.process.is_some()
            && child.exited().is_none()
            && Instant::now() < deadline
        {
            std::thread::sleep(POLL);
        }
        if let Some(mut process) = child.process.take() {
            say(
                Level::Warn,
                format_args!("{} did not stop; killing it", child.name),
            );
            let _ = process.kill();
            let _ = process.wait();
        }
    }
}
