//! What every Kista process tells Prometheus: counters and histograms cheap enough to keep
//! on hot paths (`values.rs`), their text exposition format (`exposition.rs`), the
//! process's own CPU and memory (`process.rs`) and the small HTTP server that answers
//! `GET /metrics` (`http.rs`).
//!
//! The owners of the numbers (a data node's blocks, the SQL sessions, the management
//! server) keep them in these types and render them themselves; this crate knows no metric
//! of theirs.

mod exposition;
mod http;
mod process;
mod values;

pub use exposition::{Exposition, Kind};
pub use http::{MetricsServer, Render};
pub use process::render_process;
pub use values::{Counter, Gauge, Histogram, HistogramSnapshot};
