//! The benchmark's results: per phase ops/s over loops, latency percentiles and errors, the
//! interval samples, and the verification; printed as a table or as one JSON document.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::worker::Tally;

#[derive(Serialize, Default)]
pub struct Report {
    pub phases: BTreeMap<String, PhaseReport>,
    pub intervals: Vec<Interval>,
    pub verify: Option<VerifyReport>,
    /// Phase names in the order they ran (the JSON object has no order).
    #[serde(skip)]
    pub order: Vec<String>,
}

#[derive(Serialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct MinAvgMax {
    pub min: f64,
    pub avg: f64,
    pub max: f64,
}

#[derive(Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Percentiles {
    pub p50: u64,
    pub p95: u64,
    pub p99: u64,
}

#[derive(Serialize)]
pub struct PhaseReport {
    pub ops_per_sec: MinAvgMax,
    pub latency_us: Percentiles,
    /// Failed attempts, temporary ones that a retry then got through included.
    pub errors: u64,
    pub errors_by_code: BTreeMap<u32, u64>,
    pub ops: u64,
    pub loops: usize,
    /// Reads that did not find the record the run last wrote.
    pub reads_missing: u64,
    pub reads_wrong: u64,
    /// The longest wait between two successful transactions of one client thread (a
    /// failover shows up here).
    pub longest_gap_us: u64,
    #[serde(skip)]
    messages: BTreeMap<u32, String>,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Interval {
    pub phase: String,
    /// Since the benchmark started.
    pub at_ms: u64,
    pub ops: u64,
    pub ops_per_sec: f64,
    pub errors: u64,
}

#[derive(Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    pub checked: u64,
    pub missing: u64,
    pub wrong: u64,
}

impl VerifyReport {
    pub fn passed(&self) -> bool {
        self.missing == 0 && self.wrong == 0
    }
}

/// One phase's results gathered over its loops.
pub struct PhaseResults {
    ops_per_sec: Vec<f64>,
    tally: Tally,
}

impl PhaseResults {
    pub fn new() -> Self {
        Self {
            ops_per_sec: Vec::new(),
            tally: Tally::new(),
        }
    }

    /// One loop of the phase: every thread's tally and the phase's wall time.
    pub fn add_loop(&mut self, tallies: &[Tally], seconds: f64) {
        let mut ops = 0;
        for tally in tallies {
            ops += tally.ops;
            self.tally.merge(tally);
        }
        self.ops_per_sec.push(ops as f64 / seconds.max(1e-9));
    }

    pub fn report(&self) -> PhaseReport {
        let rates = &self.ops_per_sec;
        let ops_per_sec = if rates.is_empty() {
            MinAvgMax::default()
        } else {
            MinAvgMax {
                min: rates.iter().copied().fold(f64::INFINITY, f64::min),
                avg: rates.iter().sum::<f64>() / rates.len() as f64,
                max: rates.iter().copied().fold(0.0, f64::max),
            }
        };
        let latency = &self.tally.latency_us;
        PhaseReport {
            ops_per_sec,
            latency_us: Percentiles {
                p50: latency.value_at_quantile(0.50),
                p95: latency.value_at_quantile(0.95),
                p99: latency.value_at_quantile(0.99),
            },
            errors: self.tally.error_count(),
            errors_by_code: self
                .tally
                .errors
                .iter()
                .map(|(&c, &(n, _))| (c, n))
                .collect(),
            ops: self.tally.ops,
            loops: rates.len(),
            reads_missing: self.tally.reads_missing,
            reads_wrong: self.tally.reads_wrong,
            longest_gap_us: self.tally.longest_gap_us,
            messages: self
                .tally
                .errors
                .iter()
                .map(|(&c, (_, m))| (c, m.clone()))
                .collect(),
        }
    }
}

impl Report {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the report holds only plain values")
    }

    pub fn to_table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<14} {:>12} {:>12} {:>12} {:>8} {:>8} {:>8} {:>8}",
            "phase", "ops/s min", "avg", "max", "p50 us", "p95 us", "p99 us", "errors"
        );
        for name in &self.order {
            let Some(phase) = self.phases.get(name) else {
                continue;
            };
            let rate = phase.ops_per_sec;
            let latency = phase.latency_us;
            let _ = writeln!(
                out,
                "{name:<14} {:>12.0} {:>12.0} {:>12.0} {:>8} {:>8} {:>8} {:>8}",
                rate.min, rate.avg, rate.max, latency.p50, latency.p95, latency.p99, phase.errors
            );
        }
        for name in &self.order {
            let Some(phase) = self.phases.get(name) else {
                continue;
            };
            let _ = writeln!(
                out,
                "{name}: longest gap between successful transactions {:.1} ms",
                phase.longest_gap_us as f64 / 1000.0
            );
            for (code, count) in &phase.errors_by_code {
                let message = phase.messages.get(code).map_or("", String::as_str);
                let _ = writeln!(out, "{name}: error {code} x {count}: {message}");
            }
            if phase.reads_missing + phase.reads_wrong > 0 {
                let _ = writeln!(
                    out,
                    "{name}: {} reads found no row and {} a wrong one",
                    phase.reads_missing, phase.reads_wrong
                );
            }
        }
        if let Some(verify) = &self.verify {
            let _ = writeln!(
                out,
                "verify: {} keys checked, {} missing, {} wrong",
                verify.checked, verify.missing, verify.wrong
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_give_min_avg_max_and_the_json_has_the_documented_shape() {
        let mut results = PhaseResults::new();
        let mut tally = Tally::new();
        tally.ops = 100;
        tally.latency_us.record(250).unwrap();
        tally.errors.insert(266, (2, "lock wait timeout".into()));
        results.add_loop(&[tally], 1.0);
        let mut faster = Tally::new();
        faster.ops = 300;
        results.add_loop(&[faster], 1.0);
        let phase = results.report();
        assert_eq!(
            phase.ops_per_sec,
            MinAvgMax {
                min: 100.0,
                avg: 200.0,
                max: 300.0
            }
        );
        assert_eq!(phase.errors, 2);

        let mut report = Report::default();
        report.phases.insert("read".into(), phase);
        report.order.push("read".into());
        report.verify = Some(VerifyReport {
            checked: 10,
            missing: 0,
            wrong: 0,
        });
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["phases"]["read"]["ops_per_sec"]["avg"], 200.0);
        assert!(
            json["phases"]["read"]["latency_us"]["p99"]
                .as_u64()
                .unwrap()
                >= 250
        );
        assert_eq!(json["phases"]["read"]["errors"], 2);
        assert_eq!(json["verify"]["checked"], 10);
        assert!(json["intervals"].is_array());
        assert!(report
            .to_table()
            .contains("error 266 x 2: lock wait timeout"));
    }
}
