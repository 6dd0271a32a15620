//! Bank transfers through restarts, with real processes: each transfer moves an amount
//! between two accounts and writes its ledger row in one durable transaction. After a
//! kill -9 of every data node, and after a start with one node's directory emptied, the
//! money is all there, every balance is what the ledger says, and every acknowledged
//! transfer is in the ledger.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kista_client::schema::{Column, TableSchema};
use kista_client::types::{ColumnType, Value};
use kista_client::{Client, ExecuteMode, LockKind, ScanSpec, Table, TransactionOutcome};
use support::cluster::TestCluster;

const ACCOUNTS: i64 = 20;
const OPENING_BALANCE: i64 = 1_000;
/// Longest the transfers run before the crash, and the most they make.
const TRANSFERS_FOR: Duration = Duration::from_millis(1_500);
const TRANSFERS_MAX: i64 = 2_000;
/// Longest a scan may keep failing (the cluster starting meanwhile).
const SCAN_LIMIT: Duration = Duration::from_secs(60);

fn int() -> ColumnType {
    ColumnType::Int {
        bytes: 8,
        signed: true,
    }
}

fn create(client: &Client, name: &str, columns: &[&str]) -> Table {
    let schema = TableSchema {
        extra_metadata: Vec::new(),
        name: name.into(),
        columns: columns.iter().map(|c| Column::new(c, int())).collect(),
        primary_key: vec![0],
    };
    client.create_table(schema, vec![]).expect("created")
}

/// The ids of the transfers acknowledged, shared with the thread making them.
type Acknowledged = Arc<Mutex<BTreeSet<i64>>>;

/// Moves `amount` from `from` to `to` and writes ledger row `id`, durably.
fn transfer(client: &Client, tables: &(Table, Table), id: i64, from: i64, to: i64) -> bool {
    let (accounts, ledger) = tables;
    let amount = 1 + id % 50;
    let mut tx = client.transaction();
    let reads = [from, to].map(|account| {
        tx.read(accounts, &[Value::Int(account)], LockKind::Exclusive)
            .expect("a read")
    });
    let Ok(Ok(read)) = tx.execute(ExecuteMode::NoCommit).map(|p| p.wait()) else {
        return false;
    };
    let balance = |op| match read.row(op).map(|row| &row[1]) {
        Some(Value::Int(balance)) => *balance,
        other => panic!("an account's balance: {other:?}"),
    };
    let (from_balance, to_balance) = (balance(reads[0]), balance(reads[1]));
    let rows = [
        (accounts, vec![from, from_balance - amount]),
        (accounts, vec![to, to_balance + amount]),
        (ledger, vec![id, from, to, amount]),
    ];
    for (table, row) in rows {
        let row: Vec<Value> = row.into_iter().map(Value::Int).collect();
        tx.write(table, row).expect("a well-formed row");
    }
    let committed = tx.execute(ExecuteMode::CommitDurable).map(|p| p.wait());
    matches!(committed, Ok(Ok(done)) if done.outcome == TransactionOutcome::Committed)
}

/// Transfers between accounts from the thread it starts, numbered from `first`, until
/// `stop` or the limits; returns the thread.
fn start_transfers(
    mgm: &str,
    first: i64,
    acknowledged: Acknowledged,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    let client = Client::connect_cluster(mgm).expect("a client connects");
    let tables = (
        client.open_table("accounts").expect("accounts"),
        client.open_table("ledger").expect("ledger"),
    );
    std::thread::spawn(move || {
        let started = Instant::now();
        for id in first..first + TRANSFERS_MAX {
            if stop.load(Ordering::SeqCst) || started.elapsed() > TRANSFERS_FOR * 10 {
                return;
            }
            let from = id % ACCOUNTS;
            let to = (id * 7 + 3) % ACCOUNTS;
            if from != to && transfer(&client, &tables, id, from, to) {
                acknowledged.lock().unwrap().insert(id);
            }
        }
    })
}

/// Every row of `table` (first column → the others), once a scan succeeds.
fn every_row(mgm: &str, table: &str) -> BTreeMap<i64, Vec<i64>> {
    let deadline = Instant::now() + SCAN_LIMIT;
    loop {
        let scanned = Client::connect_cluster(mgm).and_then(|client| {
            let table = client.open_table(table)?;
            let rows = client.scan(&table, ScanSpec::full())?;
            rows.map(|row| {
                row.map(|row| {
                    let ints: Vec<i64> = (row.iter())
                        .map(|v| match v {
                            Value::Int(int) => *int,
                            other => panic!("an integer column: {other:?}"),
                        })
                        .collect();
                    (ints[0], ints[1..].to_vec())
                })
            })
            .collect::<Result<BTreeMap<_, _>, _>>()
        });
        match scanned {
            Ok(rows) => return rows,
            Err(error) => {
                assert!(Instant::now() < deadline, "no scan of {table}: {error}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// The money is all there, every balance is the ledger's, and every acknowledged
/// transfer is in it.
fn check_the_books(mgm: &str, acknowledged: &Acknowledged, when: &str) -> usize {
    let accounts = every_row(mgm, "accounts");
    let ledger = every_row(mgm, "ledger");
    let mut expected: BTreeMap<i64, i64> = (0..ACCOUNTS).map(|a| (a, OPENING_BALANCE)).collect();
    for entry in ledger.values() {
        let (from, to, amount) = (entry[0], entry[1], entry[2]);
        *expected.get_mut(&from).expect("an account") -= amount;
        *expected.get_mut(&to).expect("an account") += amount;
    }
    let balances: BTreeMap<i64, i64> = accounts.iter().map(|(&a, row)| (a, row[0])).collect();
    assert_eq!(balances, expected, "{when}: every balance is the ledger's");
    let total: i64 = balances.values().sum();
    assert_eq!(
        total,
        ACCOUNTS * OPENING_BALANCE,
        "{when}: no money made or lost"
    );
    let missing: Vec<i64> = (acknowledged.lock().unwrap().iter())
        .filter(|id| !ledger.contains_key(id))
        .copied()
        .collect();
    assert!(
        missing.is_empty(),
        "{when}: acknowledged transfers lost: {missing:?}"
    );
    ledger.len()
}

/// Transfers for a while, then a kill -9 of every data node amid them.
fn transfer_then_crash(cluster: &mut TestCluster, first: i64, acknowledged: &Acknowledged) {
    let stop = Arc::new(AtomicBool::new(false));
    let transfers = start_transfers(&cluster.mgm, first, acknowledged.clone(), stop.clone());
    std::thread::sleep(TRANSFERS_FOR);
    cluster.crash_every_node();
    stop.store(true, Ordering::SeqCst);
    transfers.join().expect("the transfers end");
}

#[test]
fn transfers_keep_the_books_through_a_crash_of_every_node_and_an_emptied_directory() {
    let mut cluster = TestCluster::start(2, 2);
    let client = Client::connect_cluster(&cluster.mgm).expect("a client connects");
    let accounts = create(&client, "accounts", &["id", "balance"]);
    create(
        &client,
        "ledger",
        &["id", "from_account", "to_account", "amount"],
    );
    let mut open = client.transaction();
    for account in 0..ACCOUNTS {
        let row = [Value::Int(account), Value::Int(OPENING_BALANCE)];
        open.insert(&accounts, row).expect("a row");
    }
    let opened = open
        .execute(ExecuteMode::CommitDurable)
        .expect("sent")
        .wait();
    assert_eq!(
        opened.expect("opened").outcome,
        TransactionOutcome::Committed
    );
    drop(client);
    let acknowledged = Acknowledged::default();

    transfer_then_crash(&mut cluster, 0, &acknowledged);
    cluster.spawn_every_node();
    cluster.wait_for_start_from_disk();
    let after_crash = check_the_books(&cluster.mgm, &acknowledged, "after the crash");
    assert!(after_crash > 0, "transfers were made");

    transfer_then_crash(&mut cluster, 1_000_000, &acknowledged);
    std::fs::remove_dir_all(cluster.data_dir(1)).expect("node 1's directory is emptied");
    cluster.spawn_every_node();
    cluster.wait_for_start_from_disk();
    let after_emptied = check_the_books(&cluster.mgm, &acknowledged, "with node 1 emptied");
    assert!(after_emptied > after_crash, "more transfers were made");
    cluster.node(2).kill();
    let alone = check_the_books(&cluster.mgm, &acknowledged, "node 1 alone");
    assert_eq!(alone, after_emptied, "node 1 copied the whole ledger");
    eprintln!(
        "ledger: {after_crash} transfers after the crash, {after_emptied} after the start \
         with node 1 emptied; {} acknowledged",
        acknowledged.lock().unwrap().len()
    );
}
