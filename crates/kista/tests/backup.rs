//! Online backup and restore with real processes: `kista mgm -e "start backup"` on a
//! two-node cluster under a write load answers with the backup's id and GCI, `show backups`
//! lists it, and `kista restore` loads it into a one-node cluster, where it is compared row
//! by row: every table written before the backup and left alone is identical, the table
//! written meanwhile holds one state it was in (no older than the last commit acknowledged
//! before the request, no newer than the first after the answer), and the foreign keys and
//! unique indexes hold again.

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kista_client::schema::{Column, IndexKind, IndexSchema, TableSchema};
use kista_client::types::{ColumnType, Value};
use kista_client::{Client, ExecuteMode, ForeignKeySpec, ReferenceAction, ScanSpec, Table};
use support::cluster::TestCluster;
use support::run_kista;

const ACCOUNTS: i64 = 3_000;
const ORDERS: i64 = 500;
const NO_PARENT_ROW: u32 = 255;
const DUPLICATE: u32 = 630;

fn int() -> ColumnType {
    ColumnType::signed(8)
}

fn table(client: &Client, name: &str, columns: &[&str], indexes: Vec<IndexSchema>) -> Table {
    let schema = TableSchema {
        extra_metadata: Vec::new(),
        name: name.into(),
        columns: columns.iter().map(|c| Column::new(c, int())).collect(),
        primary_key: vec![0],
    };
    client.create_table(schema, indexes).expect("created")
}

fn commit(client: &Client, table: &Table, rows: &[Vec<Value>]) -> Result<(), u32> {
    let mut transaction = client.transaction();
    for row in rows {
        transaction
            .write(table, row.clone())
            .expect("a well-formed row");
    }
    let executed = transaction
        .execute(ExecuteMode::Commit)
        .and_then(|p| p.wait());
    executed.map(drop).map_err(|e| e.code())
}

fn insert(client: &Client, table: &Table, row: Vec<Value>) -> Result<(), u32> {
    let mut transaction = client.transaction();
    transaction.insert(table, row).expect("a well-formed row");
    let executed = transaction
        .execute(ExecuteMode::Commit)
        .and_then(|p| p.wait());
    executed.map(drop).map_err(|e| e.code())
}

fn ints(row: &[Value]) -> Vec<i64> {
    row.iter()
        .map(|value| match value {
            Value::Int(int) => *int,
            other => panic!("an integer column: {other:?}"),
        })
        .collect()
}

/// Every row of `name` (first column → the row), read through `mgm`'s cluster.
fn every_row(mgm: &str, name: &str) -> BTreeMap<i64, Vec<i64>> {
    let client = Client::connect_cluster(mgm, None).expect("connected");
    let table = client.open_table(name).expect("the table");
    let scan = client.scan(&table, ScanSpec::full()).expect("a scan");
    scan.map(|row| {
        let row = ints(&row.expect("a row"));
        (row[0], row)
    })
    .collect()
}

/// The quiet tables: `accounts` (id, balance UNIQUE) and `orders` (id, account, amount),
/// whose `account` references `accounts`.
fn create_quiet_tables(client: &Client) {
    let unique = IndexSchema {
        name: "by_balance".into(),
        kind: IndexKind::Unique,
        columns: vec![1],
    };
    let accounts = table(client, "accounts", &["id", "balance"], vec![unique]);
    let by_account = IndexSchema {
        name: "by_account".into(),
        kind: IndexKind::Ordered,
        columns: vec![1],
    };
    let orders = table(
        client,
        "orders",
        &["id", "account", "amount"],
        vec![by_account],
    );
    let spec = ForeignKeySpec {
        name: "orders_account".into(),
        columns: vec![1],
        parent_index: None,
        on_delete: ReferenceAction::Restrict,
        on_update: ReferenceAction::Restrict,
    };
    let orders = client
        .add_foreign_key(&orders, &accounts, spec)
        .expect("a key");
    let rows: Vec<Vec<Value>> = (1..=ACCOUNTS)
        .map(|id| vec![Value::Int(id), Value::Int(id * 7)])
        .collect();
    for batch in rows.chunks(500) {
        commit(client, &accounts, batch).expect("accounts written");
    }
    let rows: Vec<Vec<Value>> = (1..=ORDERS)
        .map(|id| {
            vec![
                Value::Int(id),
                Value::Int(id % ACCOUNTS + 1),
                Value::Int(id),
            ]
        })
        .collect();
    commit(client, &orders, &rows).expect("orders written");
}

/// The moving table, `chain` (id, step): transaction n writes row 0 = n and row n = n, so
/// a state the table was in has rows 1..=row 0 (each its own id) and no other.
struct ChainWriter {
    acknowledged: Arc<AtomicI64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ChainWriter {
    fn start(mgm: &str) -> Self {
        let client = Client::connect_cluster(mgm, None).expect("connected");
        table(&client, "chain", &["id", "step"], Vec::new());
        let acknowledged = Arc::new(AtomicI64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (acknowledged, stop) = (acknowledged.clone(), stop.clone());
            std::thread::spawn(move || {
                let chain = client.open_table("chain").expect("the chain table");
                let mut step = 0;
                while !stop.load(Ordering::SeqCst) {
                    let next = step + 1;
                    let rows = [
                        vec![Value::Int(0), Value::Int(next)],
                        vec![Value::Int(next), Value::Int(next)],
                    ];
                    if commit(&client, &chain, &rows).is_ok() {
                        step = next;
                        acknowledged.store(step, Ordering::SeqCst);
                    }
                }
            })
        };
        Self {
            acknowledged,
            stop,
            thread: Some(thread),
        }
    }

    fn acknowledged(&self) -> i64 {
        self.acknowledged.load(Ordering::SeqCst)
    }

    fn stop(mut self) -> i64 {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.join().expect("the writer ends");
        }
        self.acknowledged()
    }
}

/// The backup id and GCI from `start backup`'s answer: "Backup N completed: restores GCI
/// G; ...".
fn completed(answer: &str) -> (u32, u64) {
    let words: Vec<&str> = answer.split_whitespace().collect();
    assert!(
        answer.starts_with("Backup ") && words[2] == "completed:",
        "{answer}"
    );
    let gci = words[5].trim_end_matches(';');
    (words[1].parse().unwrap(), gci.parse().unwrap())
}

#[test]
fn a_backup_under_writes_restores_into_a_cluster_of_another_size_row_by_row() {
    let source = TestCluster::start(2, 2);
    let client = Client::connect_cluster(&source.mgm, None).expect("connected");
    create_quiet_tables(&client);
    let writer = ChainWriter::start(&source.mgm);
    while writer.acknowledged() < 200 {
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = writer.acknowledged();
    let (code, answer, stderr) = source.mgm("start backup");
    assert_eq!(code, Some(0), "{answer} {stderr}");
    let after = writer.stop();
    let (backup_id, gci) = completed(answer.trim());
    assert!(after > before, "the writes went on during the backup");
    let (code, listed, _) = source.mgm("show backups");
    assert_eq!(code, Some(0));
    let expected = format!("Backup {backup_id}: complete, restores GCI {gci};");
    assert!(listed.contains(&expected), "{listed}");

    let target = TestCluster::start(1, 1);
    let (node_1, node_2) = (source.data_dir(1), source.data_dir(2));
    let (code, stdout, stderr) = run_kista(
        &[
            "restore",
            "--mgm",
            &target.mgm,
            "--threads",
            "4",
            &node_1.display().to_string(),
            &node_2.display().to_string(),
        ],
        Duration::from_secs(120),
    );
    assert_eq!(code, Some(0), "{stdout} {stderr}");
    let summary = format!("backup {backup_id} (GCI {gci}) restored:");
    assert!(stdout.contains(&summary), "{stdout}");

    for name in ["accounts", "orders"] {
        let (original, restored) = (every_row(&source.mgm, name), every_row(&target.mgm, name));
        assert_eq!(restored.len(), original.len(), "{name}");
        assert!(restored == original, "{name}: every row as it was");
    }
    let chain = every_row(&target.mgm, "chain");
    let step = chain.get(&0).map_or(0, |row| row[1]);
    assert!(
        (before..=after).contains(&step),
        "the chain restores step {step}, not in {before}..={after}"
    );
    for id in 1..=step {
        assert_eq!(chain.get(&id), Some(&vec![id, id]), "chain row {id}");
    }
    assert_eq!(chain.len() as i64, step + 1, "no row past step {step}");

    // The restored tables keep their keys.
    let target_client = Client::connect_cluster(&target.mgm, None).expect("connected");
    let orders = target_client.open_table("orders").expect("orders");
    let orphan = vec![
        Value::Int(ORDERS + 1),
        Value::Int(ACCOUNTS + 99),
        Value::Int(1),
    ];
    assert_eq!(insert(&target_client, &orders, orphan), Err(NO_PARENT_ROW));
    let accounts = target_client.open_table("accounts").expect("accounts");
    let taken_balance = vec![Value::Int(ACCOUNTS + 1), Value::Int(7)];
    assert_eq!(
        insert(&target_client, &accounts, taken_balance),
        Err(DUPLICATE)
    );
}

#[test]
fn a_restore_without_every_participants_files_is_refused() {
    let source = TestCluster::start(2, 2);
    let client = Client::connect_cluster(&source.mgm, None).expect("connected");
    table(&client, "t", &["id", "v"], Vec::new());
    let (code, answer, stderr) = source.mgm("start backup");
    assert_eq!(code, Some(0), "{answer} {stderr}");
    let node_1 = source.data_dir(1).display().to_string();
    let (code, _, stderr) = run_kista(
        &["restore", "--mgm", &source.mgm, &node_1],
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("node-2.ldm-"), "{stderr}");
}
