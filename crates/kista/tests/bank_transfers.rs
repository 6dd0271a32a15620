//! Bank transfers through restarts, with real processes: each transfer moves an amount
//! between two accounts and writes its ledger row in one durable transaction. After a
//! kill -9 of every data node, after a start with one node's directory emptied, and
//! through a full disk and the space freed, the money is all there, every balance is what
//! the ledger says, and every acknowledged transfer is in the ledger.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kista_client::schema::{Column, TableSchema};
use kista_client::types::{ColumnType, Value};
use kista_client::{
    Client, ClientError, ExecuteMode, LockKind, ScanSpec, Table, TransactionOutcome,
};
use support::chains::create_chains_table;
use support::cluster::{TestCluster, START_LIMIT};
use support::full_disk::{fill, write_until_refused, Mounted, SETTINGS, WRITES_LIMIT};
use support::wait_until;

const ACCOUNTS: i64 = 20;
const OPENING_BALANCE: i64 = 1_000;
/// How long the transfers run before a crash.
const TRANSFERS_FOR: Duration = Duration::from_millis(1_500);
/// Longest a thread of transfers runs, whatever happens.
const TRANSFERS_LIMIT: Duration = Duration::from_secs(300);
/// The pause after a refused transfer (the cluster is failing or its disk full).
const REFUSED_PAUSE: Duration = Duration::from_millis(20);
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
/// The error codes of transfers refused, with how often, shared the same way.
type Refused = Arc<Mutex<BTreeMap<u32, usize>>>;

/// Moves `amount` from `from` to `to` and writes ledger row `id`, durably: the error
/// of a transfer not made (`None` for one its transaction aborted).
fn transfer(
    client: &Client,
    tables: &(Table, Table),
    id: i64,
    from: i64,
    to: i64,
) -> Result<(), Option<ClientError>> {
    let (accounts, ledger) = tables;
    let amount = 1 + id % 50;
    let mut tx = client.transaction();
    let reads = [from, to].map(|account| {
        tx.read(accounts, &[Value::Int(account)], LockKind::Exclusive)
            .expect("a read")
    });
    let read = tx.execute(ExecuteMode::NoCommit).and_then(|p| p.wait())?;
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
    let done = (tx.execute(ExecuteMode::CommitDurable)).and_then(|p| p.wait())?;
    match done.outcome {
        TransactionOutcome::Committed => Ok(()),
        _ => Err(None),
    }
}

/// Transfers between accounts from the thread it starts, numbered from `first`, until
/// `stop` or [`TRANSFERS_LIMIT`]; returns the thread.
fn start_transfers(
    mgm: &str,
    first: i64,
    (acknowledged, refused): (Acknowledged, Refused),
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    let client = Client::connect_cluster(mgm, None).expect("a client connects");
    let tables = (
        client.open_table("accounts").expect("accounts"),
        client.open_table("ledger").expect("ledger"),
    );
    std::thread::spawn(move || {
        let started = Instant::now();
        for id in first.. {
            if stop.load(Ordering::SeqCst) || started.elapsed() > TRANSFERS_LIMIT {
                return;
            }
            let from = id % ACCOUNTS;
            let to = (id * 7 + 3) % ACCOUNTS;
            if from == to {
                continue;
            }
            match transfer(&client, &tables, id, from, to) {
                Ok(()) => {
                    acknowledged.lock().unwrap().insert(id);
                }
                Err(error) => {
                    let code = error.map_or(0, |error| error.code());
                    *refused.lock().unwrap().entry(code).or_default() += 1;
                    std::thread::sleep(REFUSED_PAUSE);
                }
            }
        }
    })
}

/// Every row of `table` (first column → the others), once a scan succeeds.
fn every_row(mgm: &str, table: &str) -> BTreeMap<i64, Vec<i64>> {
    let deadline = Instant::now() + SCAN_LIMIT;
    loop {
        let scanned = Client::connect_cluster(mgm, None).and_then(|client| {
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

/// The accounts, each with its opening balance, and an empty ledger.
fn open_the_bank(mgm: &str) {
    let client = Client::connect_cluster(mgm, None).expect("a client connects");
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
}

/// Transfers for a while, then a kill -9 of every data node amid them.
fn transfer_then_crash(cluster: &mut TestCluster, first: i64, acknowledged: &Acknowledged) {
    let stop = Arc::new(AtomicBool::new(false));
    let outcomes = (acknowledged.clone(), Refused::default());
    let transfers = start_transfers(&cluster.mgm, first, outcomes, stop.clone());
    std::thread::sleep(TRANSFERS_FOR);
    cluster.crash_every_node();
    stop.store(true, Ordering::SeqCst);
    transfers.join().expect("the transfers end");
}

#[test]
fn transfers_keep_the_books_through_a_crash_of_every_node_and_an_emptied_directory() {
    let mut cluster = TestCluster::start(2, 2);
    open_the_bank(&cluster.mgm);
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

#[test]
fn transfers_keep_the_books_through_a_full_disk_and_the_space_freed() {
    let Some(mounted) = Mounted::small_tmpfs() else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let mut cluster = TestCluster::launch_in(mounted.0.join("cluster"), 2, 2, SETTINGS, &[1, 2]);
    for id in 1..=2 {
        cluster.wait_for_state(id, "started", START_LIMIT);
    }
    open_the_bank(&cluster.mgm);
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    create_chains_table(&client);
    let (acknowledged, refused) = (Acknowledged::default(), Refused::default());
    let stop = Arc::new(AtomicBool::new(false));
    let outcomes = (acknowledged.clone(), refused.clone());
    let transfers = start_transfers(&cluster.mgm, 0, outcomes, stop.clone());

    // Bulk writes fill what the filler left, until the REDO log has no room either.
    let filler = fill(&mounted.0, 256 << 10);
    let bulk_refused = write_until_refused(&client, 0);
    assert_eq!(bulk_refused.code(), 4262, "{bulk_refused}");
    let disk_full = || refused.lock().unwrap().contains_key(&4262);
    wait_until(WRITES_LIMIT, "a transfer refused as disk full", disk_full);
    let while_full = check_the_books(&cluster.mgm, &acknowledged, "with the disk full");

    std::fs::remove_file(filler).expect("space freed");
    let made_before_freed = acknowledged.lock().unwrap().len();
    let made_again = || acknowledged.lock().unwrap().len() > made_before_freed + 10;
    wait_until(WRITES_LIMIT, "transfers made again", made_again);
    stop.store(true, Ordering::SeqCst);
    transfers.join().expect("the transfers end");
    let freed = check_the_books(&cluster.mgm, &acknowledged, "once space was freed");
    assert!(
        freed > while_full,
        "transfers were made once space was freed"
    );
    for id in 1..=2 {
        assert!(cluster.node(id).is_running(), "no node stopped");
    }

    cluster.crash_every_node();
    cluster.spawn_every_node();
    cluster.wait_for_start_from_disk();
    let after_crash = check_the_books(&cluster.mgm, &acknowledged, "after a crash");
    assert_eq!(after_crash, freed, "the ledger is all there after a crash");
    eprintln!(
        "ledger: {while_full} transfers with the disk full, {freed} once freed; refused: {:?}",
        refused.lock().unwrap()
    );
    drop(client);
    drop(cluster);
}
