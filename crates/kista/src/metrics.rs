//! `--metrics-port`: the Prometheus endpoint of `kista datad`, `kista sql` and `kista
//! mgmd` (`crates/metrics` serves it), and what a data node process adds to its blocks'
//! counters: its threads (CPU, spinning, signals, queues), data memory and connections.
//! The metrics are listed in docs/operations.md.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use clap::Args;
use kista_datanode::metrics::NodeCounters;
use kista_metrics::{Exposition, Kind, MetricsServer, Render};
use kista_runtime::{StatsSource, ThreadStatsSnapshot};
use kista_storage::memory::DataMemory;
use kista_transport::server::Links;

use crate::Failure;

#[derive(Args, Debug, Clone)]
pub struct MetricsOptions {
    /// Serve Prometheus metrics over HTTP on this port (`/metrics`); 0 picks a free one.
    /// Without it the process serves none.
    #[arg(long, value_name = "PORT")]
    metrics_port: Option<u16>,

    /// Address the metrics endpoint listens on.
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDRESS")]
    metrics_bind: IpAddr,
}

impl MetricsOptions {
    /// Starts the endpoint if asked, printing `kista PROCESS: metrics at http://…/metrics`.
    pub fn serve(&self, process: &str, render: Render) -> Result<Option<MetricsServer>, Failure> {
        let Some(port) = self.metrics_port else {
            return Ok(None);
        };
        let bind = SocketAddr::new(self.metrics_bind, port);
        let server = MetricsServer::start(bind, render).map_err(|e| {
            Failure::runtime(format!(
                "cannot serve metrics on {bind} (--metrics-port): {e}"
            ))
        })?;
        let address = format!("metrics at http://{}/metrics", server.local_addr());
        kista_log::print(kista_log::Level::Info, &format!("kista {process}"), address);
        Ok(Some(server))
    }
}

/// What a running data node process shows; a process that restarts its node in place
/// (`N restart`) puts each life's here.
#[derive(Clone)]
pub struct DataNodeGauges {
    pub node: u8,
    pub counters: Arc<NodeCounters>,
    pub memory: Arc<DataMemory>,
    pub threads: StatsSource,
    pub links: Links,
}

/// The data node of this process, if one runs now.
pub type DataNodeSlot = Arc<Mutex<Option<DataNodeGauges>>>;

pub fn data_node_render(slot: DataNodeSlot) -> Render {
    Arc::new(move |out: &mut Exposition| {
        let gauges = slot.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(gauges) = gauges {
            render_data_node(&gauges, out);
        }
    })
}

fn render_data_node(gauges: &DataNodeGauges, out: &mut Exposition) {
    let node = gauges.node.to_string();
    render_threads(&node, &gauges.threads.snapshot(), out);
    let help = "Data memory in use (rows, indexes).";
    let used = gauges.memory.used_bytes() as f64;
    out.family("kista_data_memory_used_bytes", help, Kind::Gauge)
        .sample(&[("node", &node)], used);
    let help = "Data memory the node may use (DataMemory).";
    let limit = gauges.memory.limit_bytes() as f64;
    out.family("kista_data_memory_limit_bytes", help, Kind::Gauge)
        .sample(&[("node", &node)], limit);
    let help = "Open connections of clients, SQL front ends, peers and the management server.";
    let connections = gauges.links.connections() as f64;
    out.family("kista_node_connections", help, Kind::Gauge)
        .sample(&[("node", &node)], connections);
    gauges.links.render_refusals(&node, out);
    gauges.counters.render(&node, out);
}

fn render_threads(node: &str, threads: &[ThreadStatsSnapshot], out: &mut Exposition) {
    let labels = |thread: &ThreadStatsSnapshot| -> (String, String) {
        let modules: Vec<String> = thread.modules.iter().map(ToString::to_string).collect();
        (thread.thread.to_string(), modules.join(","))
    };
    let seconds = |us: u64| us as f64 / 1e6;
    let help = "CPU time of a data node thread, by mode (user, system).";
    let mut cpu = out.family("kista_thread_cpu_seconds_total", help, Kind::Counter);
    for thread in threads {
        let (index, modules) = labels(thread);
        let base = [
            ("node", node),
            ("thread", index.as_str()),
            ("modules", modules.as_str()),
        ];
        for (mode, us) in [
            ("user", thread.cpu_user_us),
            ("system", thread.cpu_system_us),
        ] {
            let mut with_mode = base.to_vec();
            with_mode.push(("mode", mode));
            cpu.sample(&with_mode, seconds(us));
        }
    }
    type Read = fn(&ThreadStatsSnapshot) -> f64;
    let per_thread: [(&'static str, &str, Kind, Read); 4] = [
        (
            "kista_thread_spin_seconds_total",
            "Time a thread spun waiting for work (part of its CPU time).",
            Kind::Counter,
            |t| t.spin_us as f64 / 1e6,
        ),
        (
            "kista_thread_signals_total",
            "Signals a thread executed.",
            Kind::Counter,
            |t| t.signals_executed as f64,
        ),
        (
            "kista_thread_sleeps_total",
            "Times a thread went to sleep for lack of work.",
            Kind::Counter,
            |t| t.sleeps as f64,
        ),
        (
            "kista_thread_queue_depth",
            "Signals waiting for a thread.",
            Kind::Gauge,
            |t| t.queue_depth as f64,
        ),
    ];
    for (name, help, kind, read) in per_thread {
        let mut family = out.family(name, help, kind);
        for thread in threads {
            let (index, modules) = labels(thread);
            let labels = [
                ("node", node),
                ("thread", index.as_str()),
                ("modules", modules.as_str()),
            ];
            family.sample(&labels, read(thread));
        }
    }
}
