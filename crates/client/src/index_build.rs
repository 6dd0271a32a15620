//! Filling a unique index added to a table that holds rows (NDB builds its unique indexes
//! the same way, from a scan, while triggers keep the entries of the rows written).
//!
//! The dictionary publishes the index as *being built* and answers only once every
//! transaction begun before has ended, so from then on every write keeps the entries of the
//! rows it changes (the coordinators remove nothing for an entry not made yet). The client
//! then scans the table's primary keys and, batch by batch in one transaction each, reads
//! the rows under a shared lock (so no write changes them meanwhile), reads the entries of
//! their keys under an exclusive lock, and inserts the missing ones. An entry there already
//! names the row (a write made it) or another row: a duplicate, which fails the build. Once
//! the scan is over every row has its entry, and the dictionary makes the index readable.

use kista_storage::schema::IndexSchema;
use kista_storage::types::Value;

use crate::{Client, ClientError, ExecuteMode, LockKind, ScanSpec, Table};

/// Rows one transaction of a build takes at a time.
pub const BUILD_BATCH_ROWS: usize = 256;
/// Times a batch is run again after a temporary error (a lock wait, a deadlock with a
/// write) before the build gives up.
const BATCH_ATTEMPTS_MAX: u32 = 30;

/// Enters an entry of `index` (whose entries are rows of `index_table`) for every row of
/// `table`; returns how many it entered. A duplicate key fails with error 630.
pub(crate) fn fill_unique_index(
    client: &Client,
    table: &Table,
    index: &IndexSchema,
    index_table: &Table,
) -> Result<u64, ClientError> {
    let key_columns: Vec<u16> = table.schema.primary_key.iter().map(|&c| c as u16).collect();
    let scan = client.scan(table, ScanSpec::full().columns(key_columns))?;
    let mut keys = Vec::with_capacity(BUILD_BATCH_ROWS);
    let mut entered = 0;
    for key in scan {
        keys.push(key?);
        if keys.len() == BUILD_BATCH_ROWS {
            entered += enter_batch(client, table, index, index_table, &keys)?;
            keys.clear();
        }
    }
    if !keys.is_empty() {
        entered += enter_batch(client, table, index, index_table, &keys)?;
    }
    Ok(entered)
}

/// [`enter_entries`] for the rows with `keys`, again after a temporary error.
fn enter_batch(
    client: &Client,
    table: &Table,
    index: &IndexSchema,
    index_table: &Table,
    keys: &[Vec<Value>],
) -> Result<u64, ClientError> {
    let mut attempt = 1;
    loop {
        match enter_entries(client, table, index, index_table, keys) {
            Err(error) if error.is_temporary() && attempt < BATCH_ATTEMPTS_MAX => attempt += 1,
            outcome => return outcome,
        }
    }
}

/// One transaction: the rows with `keys` locked, their entries read, the missing ones
/// inserted.
fn enter_entries(
    client: &Client,
    table: &Table,
    index: &IndexSchema,
    index_table: &Table,
    keys: &[Vec<Value>],
) -> Result<u64, ClientError> {
    let index_columns: Vec<u16> = index.columns.iter().map(|&c| c as u16).collect();
    let mut transaction = client.transaction();
    let mut rows = Vec::with_capacity(keys.len());
    for key in keys {
        rows.push(transaction.read_columns(table, key, LockKind::Shared, index_columns.clone())?);
    }
    let locked = transaction.execute(ExecuteMode::NoCommit)?.wait()?;
    // (the row's encoded primary key, its index key) of every row still there whose key
    // has no NULL (such a row has no entry).
    let mut wanted = Vec::with_capacity(keys.len());
    for (key, op) in keys.iter().zip(rows) {
        let Some(index_key) = locked.row(op).filter(|k| !k.iter().any(Value::is_null)) else {
            continue;
        };
        let mut primary_key = Vec::new();
        (table.layout)
            .primary_key_of_values(key, &mut primary_key)
            .map_err(|e| ClientError::Usage(e.to_string()))?;
        let entry = transaction.read(index_table, index_key, LockKind::Exclusive)?;
        wanted.push((primary_key, index_key.to_vec(), entry));
    }
    let entries = transaction.execute(ExecuteMode::NoCommit)?.wait()?;
    let mut entered = 0;
    for (primary_key, index_key, entry) in wanted {
        match entries.row(entry).and_then(|entry| entry.last()) {
            None => {
                let mut row = index_key;
                row.push(Value::Bytes(primary_key));
                transaction.insert(index_table, row)?;
                entered += 1;
            }
            Some(Value::Bytes(named)) if *named == primary_key => {}
            Some(_) => {
                transaction.execute(ExecuteMode::Rollback)?.wait().ok();
                return Err(duplicate(index, &index_key));
            }
        }
    }
    transaction.execute(ExecuteMode::Commit)?.wait()?;
    Ok(entered)
}

/// Error 630, as a write that meets the same key gets it.
fn duplicate(index: &IndexSchema, key: &[Value]) -> ClientError {
    let shown: Vec<String> = key.iter().map(|value| format!("{value:?}")).collect();
    ClientError::node(
        630,
        format!(
            "duplicate key ({}) in unique index `{}`: two rows have it",
            shown.join(", "),
            index.name
        ),
    )
}
