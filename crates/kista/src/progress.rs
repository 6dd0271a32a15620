//! The progress line of `kista import` and `kista restore`: a bar by the share of the
//! files read, rows, rows/s, the time left (and rejected records, once there are any).

use std::io::Write;
use std::time::{Duration, Instant};

/// Characters of the bar.
const BAR_WIDTH: usize = 30;

pub(crate) struct Progress {
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
    pub(crate) fn new(total_bytes: u64, draw: bool) -> Self {
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

    pub(crate) fn loaded(&mut self, rows: u64, skipped: u64, rejected: u64) {
        self.rows += rows;
        self.skipped += skipped;
        self.rejected += rejected;
    }

    pub(crate) fn rejected(&self) -> u64 {
        self.rejected
    }

    /// Whether `interval` has passed since the line was last drawn.
    pub(crate) fn due(&self, interval: Duration) -> bool {
        self.last_drawn.elapsed() >= interval
    }

    /// Draws the line over the last one (on stderr, so that stdout keeps the summary).
    pub(crate) fn draw(&mut self, bytes_read: u64) {
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
        let rejected = match self.rejected {
            0 => String::new(),
            rejected => format!("  rejected {rejected}"),
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r[{}{}] {:3.0}%  {} rows  {:.0} rows/s  ETA {}{rejected}   ",
            "#".repeat(filled),
            ".".repeat(BAR_WIDTH - filled),
            share * 100.0,
            self.rows,
            rate,
            clock(left),
        );
        let _ = err.flush();
        self.drawn = true;
    }

    /// The last line, then a line break under it.
    pub(crate) fn finish(&mut self, bytes_read: u64) {
        self.draw(bytes_read);
        if self.drawn {
            eprintln!();
        }
    }

    /// Rows loaded, rows skipped and records rejected so far.
    pub(crate) fn counts(&self) -> (u64, u64, u64) {
        (self.rows, self.skipped, self.rejected)
    }

    pub(crate) fn seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
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
