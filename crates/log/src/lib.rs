//! The one log line format of every long-running Kista process (`kista datad`, `kista
//! mgmd`, `kista sql`, and `kista up`'s own lines):
//!
//! ```text
//! 2026-11-27T15:50:01.123Z INFO  node=1 kista datad: ready
//! ```
//!
//! UTC time to the millisecond, the level, the node id (a data node's, the management
//! server's 49, a SQL front end's client id; left out until the process knows it), the
//! component that speaks and its message. A line is one line: line breaks in a message
//! are escaped. What the process does (started, listening, ready, stopping) goes to
//! standard output with [`print`], diagnostics to standard error with [`eprint`], as
//! before; `kista up` keeps both in one file per process.

use std::fmt::Display;
use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warn,
    Info,
}

impl Level {
    fn word(self) -> &'static str {
        match self {
            Level::Error => "ERROR",
            Level::Warn => "WARN ",
            Level::Info => "INFO ",
        }
    }
}

/// This process's node id for every line; 0 while unknown.
static PROCESS_NODE: AtomicU8 = AtomicU8::new(0);

/// From now on every line of this process names node `node`.
pub fn set_node(node: u8) {
    PROCESS_NODE.store(node, Ordering::Relaxed);
}

/// A line on standard output (what the process does).
pub fn print(level: Level, component: &str, message: impl Display) {
    let line = format_line(
        now_ms(),
        level,
        process_node(),
        component,
        &message.to_string(),
    );
    // A closed stdout (the supervisor gone) must not stop the process.
    write_line(&mut std::io::stdout().lock(), line);
}

/// A line on standard error (diagnostics).
pub fn eprint(level: Level, component: &str, message: impl Display) {
    eprint_for(level, process_node(), component, message);
}

/// A line on standard error naming `node` (the runtime's blocks, which know theirs).
pub fn eprint_for(level: Level, node: Option<u8>, component: &str, message: impl Display) {
    let line = format_line(now_ms(), level, node, component, &message.to_string());
    write_line(&mut std::io::stderr().lock(), line);
}

/// Writes `line` and its newline in one `write_all`: standard error is unbuffered, and
/// `writeln!` writes the line and the newline apart, so a line another thread wrote to
/// standard output (the same log file under `kista up`) could land between them.
fn write_line(out: &mut impl Write, mut line: String) {
    line.push('\n');
    let _ = out.write_all(line.as_bytes());
}

fn process_node() -> Option<u8> {
    Some(PROCESS_NODE.load(Ordering::Relaxed)).filter(|&node| node != 0)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// One line: `TIME LEVEL [node=N ]COMPONENT: MESSAGE`.
pub fn format_line(
    epoch_ms: u64,
    level: Level,
    node: Option<u8>,
    component: &str,
    message: &str,
) -> String {
    let mut line = utc_timestamp(epoch_ms);
    line.push(' ');
    line.push_str(level.word());
    line.push(' ');
    if let Some(node) = node {
        line.push_str(&format!("node={node} "));
    }
    line.push_str(component);
    line.push_str(": ");
    for c in message.chars() {
        match c {
            '\n' => line.push_str("\\n"),
            '\r' => line.push_str("\\r"),
            c => line.push(c),
        }
    }
    line
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for milliseconds since the Unix epoch.
fn utc_timestamp(epoch_ms: u64) -> String {
    let (days, ms_of_day) = (epoch_ms / 86_400_000, epoch_ms % 86_400_000);
    let (year, month, day) = civil_from_days(days as i64);
    let seconds = ms_of_day / 1000;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        ms_of_day % 1000
    )
}

/// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_has_utc_time_level_node_component_and_message() {
        // 2026-11-27T15:50:01.123Z
        let ms = 1_795_794_601_123;
        assert_eq!(
            format_line(ms, Level::Info, Some(1), "kista datad", "ready"),
            "2026-11-27T15:50:01.123Z INFO  node=1 kista datad: ready"
        );
        assert_eq!(
            format_line(ms, Level::Warn, None, "kista transport", "closed:\nreset"),
            "2026-11-27T15:50:01.123Z WARN  kista transport: closed:\\nreset"
        );
    }

    /// Counts the writes it is given, as an unbuffered standard error issues them.
    struct Writes(Vec<Vec<u8>>);

    impl Write for Writes {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.push(bytes.to_vec());
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_line_and_its_newline_go_out_in_one_write() {
        let mut out = Writes(Vec::new());
        write_line(&mut out, "2026-11-27T15:50:01.123Z INFO  x: y".into());
        assert_eq!(out.0, [b"2026-11-27T15:50:01.123Z INFO  x: y\n".to_vec()]);
    }

    #[test]
    fn dates_are_the_calendars() {
        let day_ms = 86_400_000;
        assert_eq!(utc_timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc_timestamp(59 * day_ms), "1970-03-01T00:00:00.000Z");
        // 2000-02-29, a leap day of a leap century; 2100-03-01 follows 2100-02-28.
        assert_eq!(utc_timestamp(11_016 * day_ms), "2000-02-29T00:00:00.000Z");
        assert_eq!(utc_timestamp(47_540 * day_ms), "2100-02-28T00:00:00.000Z");
        assert_eq!(utc_timestamp(47_541 * day_ms), "2100-03-01T00:00:00.000Z");
        assert_eq!(utc_timestamp(day_ms - 1), "1970-01-01T23:59:59.999Z");
    }
}
