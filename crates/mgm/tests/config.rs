//! The cluster configuration file: what a valid one means, and that every mistake is refused
//! at start with the file, the line and the reason.

use std::path::Path;

use kista_mgm::config::{DataNodeThreads, MGMD_PORT_DEFAULT};
use kista_mgm::{ClusterConfig, ConfigError};

fn parse(text: &str) -> Result<ClusterConfig, ConfigError> {
    ClusterConfig::from_toml(text, Path::new("cluster.toml"))
}

/// The refusal of `text`: its line and message.
fn refusal(text: &str) -> (Option<usize>, String) {
    let error = parse(text).expect_err("the configuration is refused");
    (error.line(), error.to_string())
}

const TWO_NODES: &str = r#"
[[data_node]]
host = "127.0.0.1"

[[data_node]]
host = "127.0.0.1"
"#;

#[test]
fn a_minimal_file_gets_the_documented_defaults() {
    let config = parse(TWO_NODES).unwrap();
    assert_eq!(config.cluster.replicas, 2);
    assert_eq!(config.cluster.data_memory_bytes, 1 << 30);
    assert_eq!(config.cluster.partitions_per_node, 2);
    assert_eq!(config.cluster.heartbeat_interval_ms, 1500);
    assert_eq!(config.cluster.heartbeat_misses_max, 3);
    assert_eq!(config.cluster.lock_wait_timeout_ms, 1200);
    assert_eq!(config.cluster.deadlock_detection_interval_ms, 50);
    assert_eq!(config.cluster.transaction_inactive_timeout_ms, 10_000);
    assert_eq!(config.cluster.start_partial_timeout_ms, 30_000);
    assert_eq!(config.cluster.global_checkpoint_interval_ms, 1000);
    assert_eq!(config.cluster.redo_log_bytes, 256 << 20);
    assert_eq!(config.cluster.checkpoint_write_bytes_per_sec, 20 << 20);
    assert_eq!(config.cluster.operations_per_transaction_max, 2_000_000);
    assert_eq!(config.cluster.locks_per_partition_max, 2_000_000);
    assert!(
        !config.cluster.touch_memory,
        "memory is touched only when asked"
    );
    assert_eq!(config.mgmd.port, MGMD_PORT_DEFAULT);
    let ids: Vec<_> = config
        .data_nodes
        .iter()
        .map(|n| (n.node_id, n.port, n.node_group))
        .collect();
    assert_eq!(ids, [(1, 11860, 0), (2, 11861, 0)]);
    assert_eq!(
        config.data_nodes[1].data_dir,
        Path::new("./kista-data/node-2")
    );
    assert_eq!(config.data_nodes[0].threads, DataNodeThreads::Automatic);
    assert!(config.sql.is_empty());
}

#[test]
fn every_parameter_can_be_set() {
    let text = r#"
[cluster]
replicas = 2
data_memory = "512M"
partitions_per_node = 4
heartbeat_interval_ms = 500
heartbeat_misses_max = 3
lock_wait_timeout_ms = 2000
deadlock_detection_interval_ms = 0
transaction_inactive_timeout_ms = 60000
start_partial_timeout_ms = 5000
global_checkpoint_interval_ms = 2000
redo_log = "1G"
checkpoint_write_bytes_per_sec = "100M"
operations_per_transaction_max = 5000000
locks_per_partition_max = 3000000
touch_memory = true

[mgmd]
host = "127.0.0.1"
port = 2186
data_dir = "/var/lib/kista/mgmd"

[[data_node]]
node_id = 7
host = "127.0.0.1"
port = 12000
data_dir = "/var/lib/kista/7"
thread_config = "ldm={count=2},recv={count=1}"

[[data_node]]
host = "127.0.0.1"
num_cpus = 8

[[data_node]]
host = "10.0.0.3"

[[data_node]]
host = "10.0.0.4"

[[sql]]
host = "127.0.0.1"
port = 3307
"#;
    let config = parse(text).unwrap();
    assert_eq!(config.cluster.data_memory_bytes, 512 << 20);
    assert_eq!(config.cluster.partitions_per_node, 4);
    assert_eq!(config.cluster.deadlock_detection_interval_ms, 0, "off");
    assert_eq!(config.cluster.start_partial_timeout_ms, 5_000);
    assert_eq!(config.cluster.global_checkpoint_interval_ms, 2_000);
    assert_eq!(config.cluster.redo_log_bytes, 1 << 30);
    assert_eq!(config.cluster.checkpoint_write_bytes_per_sec, 100 << 20);
    assert_eq!(config.cluster.operations_per_transaction_max, 5_000_000);
    assert_eq!(config.cluster.locks_per_partition_max, 3_000_000);
    assert!(config.cluster.touch_memory);
    let none = parse(&format!("[cluster]\nredo_log = 0\n{TWO_NODES}")).unwrap();
    assert_eq!(none.cluster.redo_log_bytes, 0, "no REDO log");
    assert_eq!(config.mgmd.port, 2186);
    let nodes: Vec<_> = config
        .data_nodes
        .iter()
        .map(|n| (n.node_id, n.host.as_str(), n.port, n.node_group))
        .collect();
    assert_eq!(
        nodes,
        [
            (1, "127.0.0.1", 11861, 0),
            (2, "10.0.0.3", 11862, 1),
            (3, "10.0.0.4", 11863, 1),
            (7, "127.0.0.1", 12000, 0),
        ],
        "ids handed out skip the one given; node groups follow the file's order"
    );
    assert_eq!(config.data_nodes[0].threads, DataNodeThreads::Cpus(8));
    assert_eq!(
        config.data_nodes[3].threads,
        DataNodeThreads::Config("ldm={count=2},recv={count=1}".into())
    );
    assert_eq!(config.sql[0].port, 3307);
}

#[test]
fn an_unknown_key_is_refused_at_its_line() {
    let (line, message) = refusal("[cluster]\nreplicas = 1\nreplica_count = 2\n");
    assert_eq!(line, Some(3), "{message}");
    assert!(message.starts_with("cluster.toml:3: "), "{message}");
    assert!(message.contains("replica_count"), "{message}");
}

#[test]
fn a_value_of_the_wrong_type_is_refused_at_its_line() {
    let (line, message) = refusal("[cluster]\n\nreplicas = \"two\"\n");
    assert_eq!(line, Some(3), "{message}");
    let (line, message) = refusal(&format!("{TWO_NODES}\n[cluster]\ndata_memory = \"12X\"\n"));
    assert_eq!(line, Some(9), "{message}");
    assert!(message.contains("unit"), "{message}");
}

#[test]
fn more_replicas_than_data_nodes_is_refused_at_the_replicas_line() {
    let text = format!("[cluster]\nreplicas = 3\n{TWO_NODES}");
    let (line, message) = refusal(&text);
    assert_eq!(line, Some(2), "{message}");
    assert!(message.contains("2 data nodes"), "{message}");

    let three = format!("{TWO_NODES}\n[[data_node]]\nhost = \"127.0.0.1\"\n");
    let (line, message) = refusal(&format!("[cluster]\nreplicas = 2\n{three}"));
    assert_eq!(
        line,
        Some(2),
        "a partial node group is refused too: {message}"
    );
}

#[test]
fn impossible_values_are_refused_with_the_reason() {
    let cases = [
        ("[cluster]\nreplicas = 0\n", 2, "out of range"),
        ("[cluster]\nheartbeat_interval_ms = 1\n", 2, "out of range"),
        ("[cluster]\ndata_memory = \"4K\"\n", 2, "at least"),
        (
            "[cluster]\nredo_log = \"1M\"\n",
            2,
            "0 (none) or at least 8M",
        ),
        (
            "[cluster]\ncheckpoint_write_bytes_per_sec = 1000\n",
            2,
            "0 (no bound) or at least 1M",
        ),
        (
            "[cluster]\noperations_per_transaction_max = 10\n",
            2,
            "out of range",
        ),
        ("[mgmd]\nport = 11860\n", 0, "used by two processes"),
    ];
    for (head, line_in_head, reason) in cases {
        let (line, message) = refusal(&format!("{head}{TWO_NODES}"));
        if line_in_head > 0 {
            assert_eq!(line, Some(line_in_head), "{message}");
        } else {
            assert!(line.is_some(), "{message}");
        }
        assert!(message.contains(reason), "{message}");
    }
    let (line, message) = refusal("[cluster]\nreplicas = 1\n");
    assert_eq!(line, None, "{message}");
    assert!(message.contains("no [[data_node]]"), "{message}");
}

#[test]
fn data_node_mistakes_are_refused_at_their_line() {
    let node = |extra: &str| format!("[[data_node]]\nhost = \"127.0.0.1\"\n{extra}\n");
    let cases = [
        (node("node_id = 0"), "node_id must be"),
        (node("thread_config = \"ldm={count=x}\""), "thread_config"),
        (
            node("thread_config = \"ldm={count=1}\"\nnum_cpus = 4"),
            "not both",
        ),
        (
            format!("{}{}", node("node_id = 5"), node("node_id = 5")),
            "given twice",
        ),
        (
            format!("{}{}", node("port = 9000"), node("port = 9000")),
            "used by two",
        ),
    ];
    for (text, reason) in cases {
        let text = format!("[cluster]\nreplicas = 1\n{text}");
        let (line, message) = refusal(&text);
        assert!(line.is_some_and(|line| line >= 5), "{message}");
        assert!(message.contains(reason), "{message}");
    }
}

#[test]
fn a_missing_file_is_refused_with_its_name() {
    let error = ClusterConfig::load(Path::new("/nonexistent/kista.toml")).unwrap_err();
    assert!(error
        .to_string()
        .starts_with("/nonexistent/kista.toml: cannot read"));
}
