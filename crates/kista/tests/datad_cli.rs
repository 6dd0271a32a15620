//! `kista datad --print-thread-config` and `kista demo` as a user runs them.

use std::process::{Command, Output};

const SEED_LDM_SETUP: &str = "ldm={count=1,cpubind=0},query={count=1,cpubind=1},tc={count=0,cpubind=2},recv={count=2,cpubind=32,33},send={count=0,cpubind=35},main={count=0,cpubind=36},io={count=1,cpubind=33}";
const SEED_RECEIVE_SETUP: &str = "ldm={count=0,cpubind=0},query={count=0,cpubind=3},tc={count=0,cpubind=2},recv={count=4,cpubind=0,1,32,33},send={count=0,cpubind=35},main={count=0,cpubind=36},io={count=1,cpubind=33}";

fn kista(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kista"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

#[test]
fn prints_the_layouts_of_both_seed_configurations() {
    let output = kista(&[
        "datad",
        "--thread-config",
        SEED_LDM_SETUP,
        "--print-thread-config",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "thread 0 ldm modules=ldm.0 cpus=0\n\
         thread 1 query modules=query.0 cpus=1\n\
         thread 2 recv modules=recv.0,tc.0,main.0,rep.0 cpus=32\n\
         thread 3 recv modules=recv.1,tc.1 cpus=33\n\
         thread 4 io modules=io.0 cpus=33\n"
    );
    let output = kista(&[
        "datad",
        "--thread-config",
        SEED_RECEIVE_SETUP,
        "--print-thread-config",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output).lines().count(), 5);
    assert!(stdout(&output)
        .starts_with("thread 0 recv modules=recv.0,ldm.0,query.0,tc.0,main.0,rep.0 cpus=0\n"));
}

#[test]
fn prints_automatic_layouts_from_1_to_64_cpus() {
    for cpus in [1, 2, 4, 8, 16, 32, 64] {
        let output = kista(&[
            "datad",
            "--num-cpus",
            &cpus.to_string(),
            "--print-thread-config",
        ]);
        assert!(output.status.success(), "{cpus}: {}", stderr(&output));
        let text = stdout(&output);
        // One thread per CPU plus the io thread.
        assert_eq!(text.lines().count(), cpus + 1, "{text}");
        for (index, line) in text.lines().enumerate() {
            assert!(line.starts_with(&format!("thread {index} ")), "{line}");
            assert!(
                line.contains(" modules=") && line.ends_with(" cpus=any"),
                "{line}"
            );
        }
    }
}

#[test]
fn without_options_the_layout_fits_this_machine() {
    let output = kista(&["datad", "--print-thread-config"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("recv.0"));
}

#[test]
fn malformed_configurations_exit_2_naming_the_token() {
    let cases = [
        ("ldm={count=1},bogus={count=1}", "`bogus`"),
        ("ldm={count=one}", "`one`"),
        ("ldm={count=1", "missing `}`"),
        ("ldm={cpubind=}", "may not be empty"),
        ("ldm={count=2,cpubind=4,4}", "CPU 4 is listed twice"),
    ];
    for (config, expected) in cases {
        let output = kista(&["datad", "--thread-config", config, "--print-thread-config"]);
        assert_eq!(output.status.code(), Some(2), "{config}");
        assert!(stdout(&output).is_empty(), "{config} printed a layout");
        let message = stderr(&output);
        assert!(
            message.contains("invalid thread configuration"),
            "{message}"
        );
        assert!(message.contains(expected), "{config}: {message}");
    }
}

#[test]
fn impossible_cpu_counts_exit_2() {
    for cpus in ["0", "513", "many"] {
        let output = kista(&["datad", "--num-cpus", cpus, "--print-thread-config"]);
        assert_eq!(output.status.code(), Some(2), "{cpus}");
        assert!(!stderr(&output).is_empty());
    }
}

#[test]
fn demo_runs_a_layout_and_reports_clean_totals() {
    let output = kista(&[
        "demo",
        "--thread-config",
        "ldm={count=1},recv={count=1}",
        "--seconds",
        "1",
        "--interval-ms",
        "500",
        "--section-every",
        "3",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("signals/s"), "{text}");
    assert!(text.contains("out of order: 0, bad sections: 0"), "{text}");
}

#[test]
fn demo_on_a_cpu_this_machine_lacks_fails_with_a_clear_error() {
    let output = kista(&[
        "demo",
        "--thread-config",
        "recv={count=1,cpubind=1000}",
        "--seconds",
        "1",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(
        message.contains("CPU 1000") && message.contains("available"),
        "{message}"
    );
}
