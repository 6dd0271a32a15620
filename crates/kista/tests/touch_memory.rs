//! `kista datad --touch-memory`: the node allocates and writes its data memory at start
//! and then loads rows without the page faults an untouched node takes for them.

mod support;

use kista_client::schema::{Column, TableSchema};
use kista_client::types::{ColumnType, Value};
use kista_client::{Client, ExecuteMode, TransactionOutcome};
use support::KistaProcess;

/// The data memory `KistaProcess::start` gives a node.
const DATA_MEMORY_BYTES: u64 = 64 << 20;
const ROWS: i64 = 100_000;
const ROWS_PER_TRANSACTION: i64 = 1_000;

/// Field `field` (1-based, as proc(5) numbers them) of the process's stat line.
fn stat_field(pid: i32, field: usize) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("proc mounted");
    // The command, in parentheses, may hold spaces: count from the state after it (field 3).
    let after_command = &stat[stat.rfind(')').expect("a stat line") + 2..];
    let value = after_command.split(' ').nth(field - 3).expect("the field");
    value.parse().expect("a number")
}

fn resident_bytes(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc mounted");
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .expect("VmRSS");
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

/// Loads `ROWS` rows (a key, a number and some text) in transactions of
/// `ROWS_PER_TRANSACTION`: the page faults (minor ones, every thread's) the node took.
fn page_faults_of_a_load(node: &KistaProcess) -> u64 {
    let client = Client::connect(node.address, None).unwrap();
    let schema = TableSchema {
        extra_metadata: Vec::new(),
        name: "rows".into(),
        columns: vec![
            Column::new("id", ColumnType::signed(8)),
            Column::new("n", ColumnType::signed(8)),
            Column::new("text", ColumnType::varchar(40)),
        ],
        primary_key: vec![0],
    };
    let table = client.create_table(schema, vec![]).unwrap();
    let before = stat_field(node.pid(), 10);
    for first in (0..ROWS).step_by(ROWS_PER_TRANSACTION as usize) {
        let mut load = client.transaction();
        for id in first..first + ROWS_PER_TRANSACTION {
            let text = Value::Bytes(format!("row number {id} of the load").into_bytes());
            load.insert(&table, vec![Value::Int(id), Value::Int(id * 7), text])
                .unwrap();
        }
        let done = load.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
        assert_eq!(done.outcome, TransactionOutcome::Committed);
    }
    stat_field(node.pid(), 10) - before
}

#[test]
fn a_node_that_touched_its_memory_loads_rows_without_page_faults() {
    let untouched = KistaProcess::start(&[]);
    let untouched_faults = page_faults_of_a_load(&untouched);
    untouched.stop();

    let touched = KistaProcess::start(&["--touch-memory"]);
    let said = format!("{}{}", touched.startup, touched.stderr());
    assert!(
        said.contains("touched 64 MiB"),
        "the node says it touched its memory:\n{said}"
    );
    assert!(
        resident_bytes(touched.pid()) >= DATA_MEMORY_BYTES,
        "the data memory is resident from the start"
    );
    let touched_faults = page_faults_of_a_load(&touched);
    touched.stop();

    // The load writes ~10 MB of rows and indexes: thousands of new pages untouched.
    assert!(
        untouched_faults >= 1_000,
        "an untouched node faults for its new pages ({untouched_faults})"
    );
    assert!(
        touched_faults * 10 < untouched_faults,
        "touched: {touched_faults} page faults, untouched: {untouched_faults}"
    );
}
