//! `kista bench` as a user runs it, against a real `kista datad --standalone`: phases and
//! loops, the mixed load for a fixed time, verification, JSON output, bad input, and a node
//! that dies under the load.

mod support;

use std::time::Duration;

use serde_json::Value as Json;
use support::{run_kista, Datad};

/// Longest one benchmark run in these tests may take.
const RUN_LIMIT: Duration = Duration::from_secs(120);

fn bench(datad: &Datad, args: &[&str]) -> (Option<i32>, String, String) {
    let address = datad.address.to_string();
    let mut all = vec!["bench", "--connect", address.as_str()];
    all.extend_from_slice(args);
    run_kista(&all, RUN_LIMIT)
}

fn json(stdout: &str) -> Json {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

#[test]
fn phases_run_over_every_key_for_each_loop_and_verify_finds_every_record() {
    let datad = Datad::start(&["--partitions", "4"]);
    let (code, stdout, stderr) = bench(
        &datad,
        &[
            "--threads",
            "2",
            "--parallel",
            "8",
            "--batch",
            "4",
            "--keys",
            "3001",
            "--loops",
            "2",
            "--record-size",
            "48",
            "--phases",
            "insert,update,read,delete,insert",
            "--verify",
            "--json",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let report = json(&stdout);
    for phase in ["insert", "update", "read", "delete"] {
        let results = &report["phases"][phase];
        assert_eq!(results["errors"], 0, "{phase}: {results}");
        assert!(
            results["ops_per_sec"]["min"].as_f64().unwrap() > 0.0,
            "{phase}"
        );
        let latency = &results["latency_us"];
        assert!(latency["p50"].as_u64().unwrap() <= latency["p99"].as_u64().unwrap());
    }
    // insert runs twice per loop (the second time the keys are gone again), the rest once.
    assert_eq!(report["phases"]["insert"]["loops"], 4);
    assert_eq!(report["phases"]["insert"]["ops"], 4 * 3001);
    assert_eq!(report["phases"]["read"]["ops"], 2 * 3001);
    assert_eq!(report["phases"]["read"]["reads_missing"], 0);
    assert_eq!(report["phases"]["read"]["reads_wrong"], 0);
    let verify = &report["verify"];
    assert_eq!(verify["checked"], 3001);
    assert_eq!(verify["missing"], 0);
    assert_eq!(verify["wrong"], 0);
}

#[test]
fn a_mixed_load_runs_for_its_duration_reports_intervals_and_verifies() {
    let datad = Datad::start(&["--read-policy", "query"]);
    let (code, stdout, stderr) = bench(
        &datad,
        &[
            "--threads",
            "2",
            "--parallel",
            "16",
            "--keys",
            "5000",
            "--duration",
            "2",
            "--interval",
            "200",
            "--phases",
            "read,update,delete,insert",
            "--locked-reads",
            "--verify",
            "--json",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let report = json(&stdout);
    let mixed = &report["phases"]["read+update+delete+insert"];
    assert!(mixed["ops"].as_u64().unwrap() > 0, "{mixed}");
    assert_eq!(mixed["reads_wrong"], 0);
    assert_eq!(mixed["reads_missing"], 0);
    let intervals = report["intervals"].as_array().unwrap();
    let mixed_intervals = intervals
        .iter()
        .filter(|i| i["phase"] == "read+update+delete+insert")
        .count();
    assert!(mixed_intervals >= 5, "2 s at 200 ms: {intervals:?}");
    assert_eq!(report["verify"]["checked"], 5000);
    assert_eq!(report["verify"]["missing"], 0);
    assert_eq!(report["verify"]["wrong"], 0);
    assert!(
        stderr.contains("ops/s"),
        "progress goes to stderr: {stderr}"
    );
}

#[test]
fn the_table_output_lists_each_phase_with_rates_latency_and_errors() {
    let datad = Datad::start(&[]);
    let (code, stdout, stderr) = bench(
        &datad,
        &["--keys", "500", "--phases", "insert,read", "--verify"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("phase") && lines[0].contains("p99 us"),
        "{stdout}"
    );
    assert!(lines[1].starts_with("insert"), "{stdout}");
    assert!(lines[2].starts_with("read"), "{stdout}");
    assert!(
        stdout.contains("verify: 500 keys checked, 0 missing, 0 wrong"),
        "{stdout}"
    );
}

#[test]
fn bad_options_are_refused_with_a_clear_message() {
    let datad = Datad::start(&[]);
    for (args, says) in [
        (vec!["--threads", "0"], "threads"),
        (vec!["--phases", "insert,scan"], "scan"),
        (vec!["--record-size", "70000"], "record-size"),
        (
            vec!["--duration", "1", "--keys", "10"],
            "--keys must be at least",
        ),
    ] {
        let (code, _, stderr) = bench(&datad, &args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    let nobody = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = nobody.local_addr().unwrap().to_string();
    drop(nobody);
    let (code, _, stderr) = run_kista(&["bench", "--connect", &closed], RUN_LIMIT);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("cannot connect"), "{stderr}");
}

#[test]
fn a_node_dying_under_the_load_ends_the_run_with_an_error_not_a_hang() {
    let mut datad = Datad::start(&[]);
    let address = datad.address.to_string();
    let running = std::thread::spawn(move || {
        run_kista(
            &[
                "bench",
                "--connect",
                &address,
                "--keys",
                "20000",
                "--duration",
                "60",
                "--phases",
                "update,read",
                "--verify",
            ],
            RUN_LIMIT,
        )
    });
    std::thread::sleep(Duration::from_millis(1500));
    datad.kill();
    let (code, _, stderr) = running.join().unwrap();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("connection failed"), "{stderr}");
}
