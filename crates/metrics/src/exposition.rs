//! Prometheus' text exposition format (version 0.0.4): each family's `# HELP` and `# TYPE`
//! lines, then its samples, one a line.

use std::fmt::Write;

use crate::values::{HistogramSnapshot, LATENCY_BUCKETS_SECONDS};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// The text one scrape answers with.
#[derive(Default)]
pub struct Exposition {
    text: String,
}

/// One metric family being written: its samples follow its header.
pub struct Family<'a> {
    out: &'a mut Exposition,
    name: &'static str,
}

impl Exposition {
    /// Starts a family; its name carries its unit (`_seconds`, `_bytes`) and a counter's
    /// ends in `_total`.
    pub fn family(&mut self, name: &'static str, help: &str, kind: Kind) -> Family<'_> {
        debug_assert!(kind != Kind::Counter || name.ends_with("_total"), "{name}");
        let _ = writeln!(self.text, "# HELP {name} {help}");
        let _ = writeln!(self.text, "# TYPE {name} {}", kind.word());
        Family { out: self, name }
    }

    /// A family with one sample and no labels.
    pub fn single(&mut self, name: &'static str, help: &str, kind: Kind, value: f64) {
        self.family(name, help, kind).sample(&[], value);
    }

    pub fn into_text(self) -> String {
        self.text
    }
}

impl Family<'_> {
    pub fn sample(&mut self, labels: &[(&str, &str)], value: f64) {
        self.line("", labels, None, value);
    }

    /// A histogram's buckets (cumulative, in seconds), sum and count.
    pub fn histogram(&mut self, labels: &[(&str, &str)], histogram: &HistogramSnapshot) {
        for (bound, &count) in LATENCY_BUCKETS_SECONDS.iter().zip(&histogram.cumulative) {
            self.line("_bucket", labels, Some(bound), count as f64);
        }
        self.line("_bucket", labels, Some("+Inf"), histogram.count as f64);
        let sum_seconds = histogram.sum_us as f64 / 1e6;
        self.line("_sum", labels, None, sum_seconds);
        self.line("_count", labels, None, histogram.count as f64);
    }

    fn line(&mut self, suffix: &str, labels: &[(&str, &str)], le: Option<&str>, value: f64) {
        let text = &mut self.out.text;
        text.push_str(self.name);
        text.push_str(suffix);
        let le = le.map(|bound| ("le", bound));
        let mut all = labels.iter().copied().chain(le).peekable();
        if all.peek().is_some() {
            text.push('{');
            for (index, (name, value)) in all.enumerate() {
                if index > 0 {
                    text.push(',');
                }
                text.push_str(name);
                text.push_str("=\"");
                push_escaped(text, value);
                text.push('"');
            }
            text.push('}');
        }
        let _ = writeln!(text, " {value}");
    }
}

/// A label value with `\`, `"` and line breaks escaped, as the format requires.
fn push_escaped(text: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => text.push_str("\\\\"),
            '"' => text.push_str("\\\""),
            '\n' => text.push_str("\\n"),
            c => text.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::Histogram;

    #[test]
    fn families_are_written_as_prometheus_reads_them() {
        let mut out = Exposition::default();
        let mut ops = out.family("kista_ops_total", "Operations.", Kind::Counter);
        ops.sample(&[("kind", "read"), ("node", "1")], 12.0);
        ops.sample(&[("kind", "say \"hi\"\\\n")], 1.5);
        out.single("kista_up", "Up.", Kind::Gauge, 1.0);
        assert_eq!(
            out.into_text(),
            "# HELP kista_ops_total Operations.\n# TYPE kista_ops_total counter\n\
             kista_ops_total{kind=\"read\",node=\"1\"} 12\n\
             kista_ops_total{kind=\"say \\\"hi\\\"\\\\\\n\"} 1.5\n\
             # HELP kista_up Up.\n# TYPE kista_up gauge\nkista_up 1\n"
        );
    }

    #[test]
    fn a_histogram_has_cumulative_buckets_in_seconds_a_sum_and_a_count() {
        let histogram = Histogram::default();
        histogram.observe_us(80);
        histogram.observe_us(3_000_000);
        let mut out = Exposition::default();
        out.family("kista_t_seconds", "T.", Kind::Histogram)
            .histogram(&[("node", "2")], &histogram.snapshot());
        let text = out.into_text();
        assert!(text.contains("kista_t_seconds_bucket{node=\"2\",le=\"0.00005\"} 0\n"));
        assert!(text.contains("kista_t_seconds_bucket{node=\"2\",le=\"0.0001\"} 1\n"));
        assert!(text.contains("kista_t_seconds_bucket{node=\"2\",le=\"2.5\"} 1\n"));
        assert!(text.contains("kista_t_seconds_bucket{node=\"2\",le=\"5\"} 2\n"));
        assert!(text.contains("kista_t_seconds_bucket{node=\"2\",le=\"+Inf\"} 2\n"));
        assert!(text.contains("kista_t_seconds_sum{node=\"2\"} 3.00008\n"));
        assert!(text.contains("kista_t_seconds_count{node=\"2\"} 2\n"));
    }
}
