//! The import's progress line (a bar by the share of the files read, rows, rows/s, the
//! time left) and its closing summary.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::Failure;

/// Characters of the bar.
const BAR_WIDTH: usize = 30;

pub(super) struct Progress {
    started: Instant,
    last_drawn: Instant,
    total_bytes: u64,
    draw: bool,
    drawn: bool,
    rows: u64,
    skipped: u64,
    rejected: u64,
}

impl Progress {
    pub(super) fn new(total_bytes: u64, draw: bool) -> Self {
        let now = Instant::now();
        Progress {
            started: now,
            last_drawn: now,
            total_bytes,
            draw,
            drawn: false,
            rows: 0,
            skipped: 0,
            rejected: 0,
        }
    }

    pub(super) fn loaded(&mut self, rows: u64, skipped: u64, rejected: u64) {
        self.rows += rows;
        self.skipped += skipped;
        self.rejected += rejected;
    }

    pub(super) fn rejected(&self) -> u64 {
        self.rejected
    }

    /// Whether `interval` has passed since the line was last drawn.
    pub(super) fn due(&self, interval: Duration) -> bool {
        self.last_drawn.elapsed() >= interval
    }

    /// Draws the line over the last one (on stderr, so that stdout keeps the summary).
    pub(super) fn draw(&mut self, bytes_read: u64) {
        self.last_drawn = Instant::now();
        if !self.draw {
            return;
        }
        let share = if self.total_bytes == 0 {
            1.0
        } else {
            (bytes_read as f64 / self.total_bytes as f64).min(1.0)
        };
        let filled = (share * BAR_WIDTH as f64) as usize;
        let seconds = self.started.elapsed().as_secs_f64();
        let rate = self.rows as f64 / seconds.max(0.001);
        let left = if share > 0.0 {
            seconds * (1.0 - share) / share
        } else {
            0.0
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r[{}{}] {:3.0}%  {} rows  {:.0} rows/s  ETA {}  rejected {}   ",
            "#".repeat(filled),
            ".".repeat(BAR_WIDTH - filled),
            share * 100.0,
            self.rows,
            rate,
            clock(left),
            self.rejected
        );
        let _ = err.flush();
        self.drawn = true;
    }

    /// The last line, then a line break under it.
    pub(super) fn finish(&mut self, bytes_read: u64) {
        self.draw(bytes_read);
        if self.drawn {
            eprintln!();
        }
    }

    pub(super) fn summary(&self, rejects: &Path) -> Summary {
        Summary {
            rows: self.rows,
            skipped: self.skipped,
            rejected: self.rejected,
            seconds: self.started.elapsed().as_secs_f64(),
            rejects: rejects.to_path_buf(),
        }
    }
}

/// `m:ss` (or `h:mm:ss`).
fn clock(seconds: f64) -> String {
    let total = seconds.round() as u64;
    let (hours, minutes, seconds) = (total / 3600, total / 60 % 60, total % 60);
    if hours > 0 {
        format!("{hours}:{minutes:02}:{seconds:02}")
    } else {
        format!("{minutes}:{seconds:02}")
    }
}

/// What an import did.
pub(super) struct Summary {
    pub rows: u64,
    pub skipped: u64,
    pub rejected: u64,
    pub seconds: f64,
    pub rejects: PathBuf,
}

impl Summary {
    /// Fails when more records were rejected than allowed.
    pub(super) fn verdict(&self, max_rejects: u64) -> Result<(), Failure> {
        if self.rejected > max_rejects {
            return Err(Failure::runtime(format!(
                "{} records rejected, more than --max-rejects ({max_rejects}): see {}",
                self.rejected,
                self.rejects.display()
            )));
        }
        Ok(())
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kista import: {} rows loaded in {:.1} s ({:.0} rows/s), {} skipped as loaded \
             before, {} rejected",
            self.rows,
            self.seconds,
            self.rows as f64 / self.seconds.max(0.001),
            self.skipped,
            self.rejected
        )?;
        if self.rejected > 0 {
            write!(f, " (see {})", self.rejects.display())?;
        }
        Ok(())
    }
}
