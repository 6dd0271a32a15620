//! The standard `process_*` metrics (CPU, memory, file descriptors, start time) of this
//! process, read from Linux's `/proc` at each scrape. Elsewhere they are left out.

use crate::exposition::{Exposition, Kind};

/// What `/proc/self/stat` says, in the units Prometheus wants.
struct ProcessStat {
    cpu_seconds: f64,
    start_time_seconds: f64,
    virtual_memory_bytes: f64,
    resident_memory_bytes: f64,
}

pub fn render_process(out: &mut Exposition) {
    let Some(stat) = read_stat() else {
        return;
    };
    let cpu_help = "User and system CPU time the process used.";
    out.single(
        "process_cpu_seconds_total",
        cpu_help,
        Kind::Counter,
        stat.cpu_seconds,
    );
    let start_help = "When the process started, in seconds since the Unix epoch.";
    out.single(
        "process_start_time_seconds",
        start_help,
        Kind::Gauge,
        stat.start_time_seconds,
    );
    let rss_help = "Resident memory of the process.";
    out.single(
        "process_resident_memory_bytes",
        rss_help,
        Kind::Gauge,
        stat.resident_memory_bytes,
    );
    let vsize_help = "Virtual memory of the process.";
    out.single(
        "process_virtual_memory_bytes",
        vsize_help,
        Kind::Gauge,
        stat.virtual_memory_bytes,
    );
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        let help = "File descriptors the process has open.";
        out.single("process_open_fds", help, Kind::Gauge, fds.count() as f64);
    }
}

fn read_stat() -> Option<ProcessStat> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let boot_time_seconds = boot_time_seconds()?;
    // SAFETY: sysconf reads a constant of the system; it touches no memory of ours.
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    // SAFETY: as above.
    let page_bytes = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as f64;
    if ticks_per_second <= 0.0 || page_bytes <= 0.0 {
        return None;
    }
    // The command name (field 2) may hold spaces and parentheses: fields are counted from
    // the last ')', field 3 first.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |number: usize| -> Option<f64> { fields.get(number - 3)?.parse().ok() };
    Some(ProcessStat {
        cpu_seconds: (field(14)? + field(15)?) / ticks_per_second,
        start_time_seconds: boot_time_seconds + field(22)? / ticks_per_second,
        virtual_memory_bytes: field(23)?,
        resident_memory_bytes: field(24)? * page_bytes,
    })
}

fn boot_time_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|line| line.starts_with("btime "))?;
    line["btime ".len()..].trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_started_before_now_and_has_memory() {
        let stat = read_stat().expect("Linux has /proc");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(stat.start_time_seconds <= now + 1.0);
        assert!(stat.start_time_seconds > now - 24.0 * 3600.0);
        assert!(stat.resident_memory_bytes > 0.0);
        let mut out = Exposition::default();
        render_process(&mut out);
        assert!(out
            .into_text()
            .contains("# TYPE process_cpu_seconds_total counter\n"));
    }
}
