//! The `chains` table of the process tests, `chains(id BIGINT PRIMARY KEY, step BIGINT)`:
//! created, written in batches and read back whole through the native client.

use std::collections::BTreeMap;
use std::time::Duration;

use kista_client::schema::{Column, TableSchema};
use kista_client::types::{ColumnType, Value};
use kista_client::{Client, ExecuteMode, ScanSpec, TransactionOutcome};

/// Longest writes or a scan may keep failing (a node failing or starting meanwhile).
const RETRY_LIMIT: Duration = Duration::from_secs(120);

pub const CHAINS_TABLE: &str = "chains";

/// chains(id BIGINT PRIMARY KEY, step BIGINT).
pub fn create_chains_table(client: &Client) {
    create_table_like_chains(client, CHAINS_TABLE);
}

/// A table of the chains table's columns named `name`.
pub fn create_table_like_chains(client: &Client, name: &str) {
    let int = ColumnType::Int {
        bytes: 8,
        signed: true,
    };
    let schema = TableSchema {
        extra_metadata: Vec::new(),
        name: name.into(),
        columns: vec![Column::new("id", int), Column::new("step", int)],
        primary_key: vec![0],
    };
    client.create_table(schema, vec![]).expect("created");
}

/// Writes `value` to rows `ids` of the chains table, 500 to a transaction committed with
/// `mode`, each transaction tried again until committed (a node may be failing meanwhile).
pub fn write_rows(client: &Client, ids: std::ops::Range<i64>, value: i64, mode: ExecuteMode) {
    let deadline = std::time::Instant::now() + RETRY_LIMIT;
    // The lookup, too, may meet a node failing.
    let table = loop {
        match client.open_table(CHAINS_TABLE) {
            Ok(table) => break table,
            Err(error) if error.is_temporary() && std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(error) => panic!("the chains table: {error}"),
        }
    };
    let ids: Vec<i64> = ids.collect();
    for batch in ids.chunks(500) {
        loop {
            assert!(
                std::time::Instant::now() < deadline,
                "writes never committed"
            );
            let mut transaction = client.transaction();
            for &id in batch {
                let row = vec![Value::Int(id), Value::Int(value)];
                transaction.write(&table, row).expect("a well-formed row");
            }
            let executed = transaction
                .execute(mode)
                .and_then(|pending| pending.wait_timeout(Duration::from_secs(10)));
            if matches!(executed, Ok(done) if done.outcome == TransactionOutcome::Committed) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Every row of the chains table, once a scan succeeds.
pub fn every_chains_row(mgm: &str) -> BTreeMap<i64, i64> {
    let deadline = std::time::Instant::now() + RETRY_LIMIT;
    loop {
        let scanned = Client::connect_cluster(mgm, None).and_then(|client| {
            let table = client.open_table(CHAINS_TABLE)?;
            client
                .scan(&table, ScanSpec::full())?
                .map(|row| {
                    row.map(|row| match (&row[0], &row[1]) {
                        (Value::Int(id), Value::Int(value)) => (*id, *value),
                        other => panic!("a chains row: {other:?}"),
                    })
                })
                .collect::<Result<BTreeMap<i64, i64>, _>>()
        });
        match scanned {
            Ok(rows) => return rows,
            Err(error) => {
                assert!(std::time::Instant::now() < deadline, "no scan: {error}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}
