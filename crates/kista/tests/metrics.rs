//! Every process of `kista up` serves Prometheus metrics: a real Prometheus server
//! (Debian's `prometheus`) scrapes them all, and its query API shows the work the cluster
//! did, by the names docs/operations.md lists.

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::cluster::free_ports::free_ports;
use support::{http_get, key_file, metrics_targets, mysql, run_mgm, spawn_up};

const LIMIT: Duration = Duration::from_secs(90);
const ROWS: usize = 120;

/// A PromQL expression yielding one number, and what that number must satisfy.
type Expectation = (&'static str, fn(f64) -> bool);

/// Stops the cluster and the Prometheus server however the test ends.
struct Cleanup {
    mgm: String,
    key_file: String,
    prometheus: Option<Child>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(mut prometheus) = self.prometheus.take() {
            let _ = prometheus.kill();
            let _ = prometheus.wait();
        }
        let _ = run_mgm(&self.mgm, &self.key_file, "shutdown", LIMIT);
    }
}

#[test]
fn prometheus_scrapes_every_process_and_sees_the_clusters_work() {
    let dir = std::env::temp_dir().join(format!("kista-metrics-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let up = spawn_up(&dir, &["--data-memory", "64M"]);
    let mut cleanup = Cleanup {
        mgm: up.address.to_string(),
        key_file: key_file(&dir),
        prometheus: None,
    };
    let targets = metrics_targets(&up.startup);
    assert_eq!(
        targets.len(),
        4,
        "mgmd, two data nodes, sql:\n{}",
        up.startup
    );

    let sql_port = up.sql_address().port();
    let mut statements =
        String::from("CREATE DATABASE m; CREATE TABLE m.t (id INT PRIMARY KEY, v INT);");
    for id in 0..ROWS {
        statements.push_str(&format!("INSERT INTO m.t VALUES ({id}, {id});"));
    }
    mysql(sql_port, &statements).expect("the inserts run");
    let error = mysql(sql_port, "SELECT nosuch FROM m.t").unwrap_err();
    assert!(error.contains("1054"), "{error}");
    mysql(sql_port, "BEGIN; INSERT INTO m.t VALUES (-1, 0); ROLLBACK").unwrap();
    // A row lock held for a second makes a second writer wait for it.
    let holder = std::thread::spawn(move || {
        let hold = "BEGIN; UPDATE m.t SET v = v + 1 WHERE id = 1; SELECT SLEEP(1); COMMIT";
        mysql(sql_port, hold)
    });
    std::thread::sleep(Duration::from_millis(300));
    let waiter = mysql(sql_port, "UPDATE m.t SET v = v + 1 WHERE id = 1");
    holder.join().unwrap().expect("the holder commits");
    waiter.expect("the waiter gets the lock once the holder commits");

    let api = start_prometheus(&dir, &targets, &mut cleanup);
    let every_target_up = || query(&api, "count(up{job=\"kista\"} == 1)") == Some(4.0);
    wait_until("Prometheus scrapes all four processes", every_target_up);

    // Each gauge and counter as the cluster's work left it, once Prometheus has scraped it.
    let expectations: [Expectation; 10] = [
        ("sum(kista_data_node_state{state=\"started\"})", |v| {
            v == 2.0
        }),
        (
            "sum(kista_transactions_total{outcome=\"committed\"})",
            |v| v >= ROWS as f64,
        ),
        ("sum(kista_operations_total{kind=\"insert\"})", |v| {
            v >= ROWS as f64
        }),
        ("kista_sql_commands_total{command=\"Query\"}", |v| v >= 2.0),
        ("kista_sql_errors_total{code=\"1054\"}", |v| v == 1.0),
        ("sum(kista_thread_cpu_seconds_total)", |v| v > 0.0),
        ("min(kista_data_memory_used_bytes)", |v| v > 0.0),
        ("min(kista_redo_written_bytes_total)", |v| v > 0.0),
        ("sum(kista_transaction_aborts_total{code=\"0\"})", |v| {
            v >= 1.0
        }),
        ("sum(kista_lock_waits_total)", |v| v >= 1.0),
    ];
    for (expression, holds) in expectations {
        let deadline = Instant::now() + LIMIT;
        loop {
            let value = query(&api, expression);
            if value.is_some_and(holds) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{expression}: {value:?} after {LIMIT:?}"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    every_dashboard_metric_is_scraped(&api);
    let p99 = "histogram_quantile(0.99, sum by (le) (kista_commit_duration_seconds_bucket))";
    let seconds = query(&api, p99).expect("the commit latency histogram has a quantile");
    assert!(
        seconds > 0.0 && seconds <= 10.0,
        "p99 commit latency {seconds} s"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The Grafana dashboard the repository ships (docs/grafana/kista.json) asks only for
/// metrics the processes serve.
fn every_dashboard_metric_is_scraped(api: &str) {
    let dashboard = include_str!("../../../docs/grafana/kista.json");
    let dashboard: serde_json::Value = serde_json::from_str(dashboard).expect("valid JSON");
    let names = http_get(api, "/api/v1/label/__name__/values").expect("metric names");
    let names: serde_json::Value = serde_json::from_str(&names).unwrap();
    let scraped: Vec<&str> = names["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    let mut asked = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expression = target["expr"].as_str().unwrap();
            for word in expression.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if word.starts_with("kista_") || word.starts_with("process_") {
                    asked += 1;
                    assert!(scraped.contains(&word), "the dashboard's {word} is scraped");
                }
            }
        }
    }
    assert!(asked > 20, "the dashboard asks for the metrics ({asked})");
}

/// Starts Prometheus scraping `targets` every second; returns its `host:port`.
fn start_prometheus(dir: &Path, targets: &[String], cleanup: &mut Cleanup) -> String {
    let port = free_ports(1).expect("a free port")[0];
    let listen = format!("127.0.0.1:{port}");
    let quoted: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  \
         - job_name: kista\n    static_configs:\n      - targets: [{}]\n",
        quoted.join(", ")
    );
    let config_path = dir.join("prometheus.yml");
    std::fs::write(&config_path, config).unwrap();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config_path.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address={listen}"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("Debian's prometheus is installed (scripts/test-all installs it)");
    cleanup.prometheus = Some(child);
    listen
}

/// The value of an instant query that yields one number, if it yields one.
fn query(api: &str, expression: &str) -> Option<f64> {
    let body = http_get(
        api,
        &format!("/api/v1/query?query={}", percent_encoded(expression)),
    )?;
    let answer: serde_json::Value = serde_json::from_str(&body).ok()?;
    let result = answer.pointer("/data/result")?.as_array()?;
    let [only] = result.as_slice() else {
        return None;
    };
    only.pointer("/value/1")?.as_str()?.parse().ok()
}

fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn wait_until(what: &str, mut holds: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !holds() {
        assert!(Instant::now() < deadline, "{what} within {LIMIT:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
}
