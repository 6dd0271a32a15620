//! The native client against a real `kista datad --standalone`: batches, isolation, errors
//! with codes and categories, many transactions in flight, and a lost connection.

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kista_client::schema::{Column, TableSchema};
use kista_client::types::{ColumnType, Value};
use kista_client::{
    Client, ClientError, ErrorCategory, ExecuteMode, LockKind, Table, TransactionOutcome,
};
use support::Datad;

fn accounts() -> TableSchema {
    TableSchema {
        extra_metadata: Vec::new(),
        name: "accounts".into(),
        columns: vec![
            Column::new("id", ColumnType::signed(8)),
            Column::new("balance", ColumnType::signed(8)),
        ],
        primary_key: vec![0],
    }
}

fn account(id: i64, balance: i64) -> Vec<Value> {
    vec![Value::Int(id), Value::Int(balance)]
}

fn balance_of(client: &Client, table: &Table, id: i64) -> Option<Value> {
    let mut read = client.transaction();
    let op = read
        .read(table, &[Value::Int(id)], LockKind::Committed)
        .unwrap();
    let done = read.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    done.row(op).map(|row| row[1].clone())
}

#[test]
fn a_client_runs_batches_sees_only_committed_data_and_gets_coded_errors() {
    let datad = Datad::start(&[
        "--thread-config",
        "ldm={count=1},query={count=1},tc={count=1},recv={count=1}",
    ]);
    let client = Client::connect(datad.address, None).unwrap();
    let table = client.create_table(accounts(), vec![]).unwrap();

    let mut setup = client.transaction();
    for id in 0..10 {
        setup.insert(&table, account(id, 100)).unwrap();
    }
    let done = setup.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    assert_eq!(done.outcome, TransactionOutcome::Committed);

    let mut transfer = client.transaction();
    transfer
        .update(&table, &[Value::Int(1)], vec![(1, Value::Int(70))])
        .unwrap();
    transfer
        .update(&table, &[Value::Int(2)], vec![(1, Value::Int(130))])
        .unwrap();
    let open = transfer
        .execute(ExecuteMode::NoCommit)
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(open.outcome, TransactionOutcome::Open);
    assert_eq!(
        balance_of(&client, &table, 1),
        Some(Value::Int(100)),
        "uncommitted is invisible"
    );
    transfer
        .execute(ExecuteMode::Commit)
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(balance_of(&client, &table, 1), Some(Value::Int(70)));
    assert_eq!(balance_of(&client, &table, 2), Some(Value::Int(130)));
    assert!(
        transfer.execute(ExecuteMode::Commit).is_err(),
        "an ended transaction refuses more"
    );

    let mut duplicate = client.transaction();
    duplicate.insert(&table, account(3, 1)).unwrap();
    let error = duplicate
        .execute(ExecuteMode::Commit)
        .unwrap()
        .wait()
        .unwrap_err();
    assert_eq!(error.code(), 630);
    assert_eq!(error.category(), ErrorCategory::Permanent);
    assert!(error.to_string().contains("accounts"), "{error}");

    let mut missing = client.transaction();
    missing.delete(&table, &[Value::Int(999)]).unwrap();
    let error = missing
        .execute(ExecuteMode::Commit)
        .unwrap()
        .wait()
        .unwrap_err();
    assert_eq!(error.code(), 626);

    let mut wrong = client.transaction();
    let error = wrong.insert(&table, vec![Value::Int(1)]).unwrap_err();
    assert!(matches!(error, ClientError::Usage(_)), "{error}");

    let mut locked = client.transaction();
    locked
        .read(&table, &[Value::Int(5)], LockKind::Exclusive)
        .unwrap();
    locked
        .execute(ExecuteMode::NoCommit)
        .unwrap()
        .wait()
        .unwrap();
    let mut blocked = client.transaction();
    blocked
        .update(&table, &[Value::Int(5)], vec![(1, Value::Int(0))])
        .unwrap();
    let started = Instant::now();
    let error = blocked
        .execute(ExecuteMode::Commit)
        .unwrap()
        .wait()
        .unwrap_err();
    assert_eq!(error.code(), 266, "{error}");
    assert!(error.is_temporary());
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "waited for the lock first"
    );
    locked
        .execute(ExecuteMode::Rollback)
        .unwrap()
        .wait()
        .unwrap();
    drop(client);
    drop(datad);
}

#[test]
fn a_batch_too_large_to_send_is_refused_before_anything_goes_and_the_client_goes_on() {
    let datad = Datad::start(&[]);
    let client = Client::connect(datad.address, None).unwrap();
    let schema = TableSchema {
        extra_metadata: Vec::new(),
        name: "blobs".into(),
        columns: vec![
            Column::new("id", ColumnType::signed(8)),
            Column::new("body", ColumnType::varchar(60_000)),
        ],
        primary_key: vec![0],
    };
    let table = client.create_table(schema, vec![]).unwrap();
    let blob = |id: i64| vec![Value::Int(id), Value::Bytes(vec![7; 60_000])];
    let rows_too_many = (kista_client::BATCH_BYTES_MAX / 60_000 + 1) as i64;

    let mut huge = client.transaction();
    for id in 0..rows_too_many {
        huge.insert(&table, blob(id)).unwrap();
        if id == 20 {
            assert!(huge.batch_is_full(), "a MiB of rows fills a batch");
        }
    }
    match huge.execute(ExecuteMode::Commit) {
        Err(ClientError::Usage(message)) => {
            assert!(message.contains("smaller batches"), "{message}")
        }
        Err(other) => panic!("refused as a usage error, not {other}"),
        Ok(_) => panic!("a batch over BATCH_BYTES_MAX was sent"),
    }
    assert!(!huge.has_sent(), "nothing went");
    drop(huge);

    // The same rows, a full batch at a time, commit.
    let mut batched = client.transaction();
    for id in 0..rows_too_many {
        batched.insert(&table, blob(id)).unwrap();
        if batched.batch_is_full() {
            let done = batched
                .execute(ExecuteMode::NoCommit)
                .unwrap()
                .wait()
                .unwrap();
            assert_eq!(done.outcome, TransactionOutcome::Open);
        }
    }
    let done = batched
        .execute(ExecuteMode::Commit)
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(done.outcome, TransactionOutcome::Committed);
    let last = [Value::Int(rows_too_many - 1)];
    let mut read = client.transaction();
    let op = read.read(&table, &last, LockKind::Committed).unwrap();
    let found = read.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    assert!(found.row(op).is_some(), "the last row committed");
}

#[test]
fn thousands_of_transactions_fly_at_once_on_one_connection() {
    let datad = Datad::start(&[
        "--thread-config",
        "ldm={count=1},tc={count=1},recv={count=1}",
    ]);
    let client = Client::connect(datad.address, None).unwrap();
    let table = client.create_table(accounts(), vec![]).unwrap();
    let committed = Arc::new(AtomicU64::new(0));
    let in_flight = 5_000;
    for id in 0..in_flight {
        let mut insert = client.transaction();
        insert.insert(&table, account(id, id)).unwrap();
        let committed = committed.clone();
        insert
            .execute_then(ExecuteMode::Commit, move |result| {
                if result.is_ok_and(|done| done.outcome == TransactionOutcome::Committed) {
                    committed.fetch_add(1, Ordering::Relaxed);
                }
            })
            .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while committed.load(Ordering::Relaxed) < in_flight as u64 {
        assert!(
            Instant::now() < deadline,
            "only {} committed",
            committed.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut pendings = Vec::new();
    for id in (0..in_flight).step_by(97) {
        let mut read = client.transaction();
        read.read(&table, &[Value::Int(id)], LockKind::Committed)
            .unwrap();
        pendings.push((id, read.execute(ExecuteMode::Commit).unwrap()));
    }
    for (id, pending) in pendings {
        let done = pending.wait().unwrap();
        assert_eq!(done.rows[0], Some(account(id, id)));
    }
}

#[test]
fn a_lost_connection_fails_what_is_in_flight_with_an_unknown_outcome() {
    let datad = Datad::start(&[
        "--thread-config",
        "ldm={count=1},tc={count=1},recv={count=1}",
    ]);
    let client = Client::connect(datad.address, None).unwrap();
    let table = client.create_table(accounts(), vec![]).unwrap();
    let mut open = client.transaction();
    open.read(&table, &[Value::Int(1)], LockKind::Shared)
        .unwrap();
    open.execute(ExecuteMode::NoCommit).unwrap().wait().unwrap();
    let (clean, _, _) = datad.stop();
    assert!(clean);
    let error = match open.execute(ExecuteMode::Commit) {
        Ok(pending) => pending.wait_timeout(Duration::from_secs(10)).unwrap_err(),
        Err(error) => error,
    };
    assert_eq!(error.category(), ErrorCategory::UnknownOutcome, "{error}");
    assert_eq!(error.code(), 4009);
}

#[test]
fn another_client_finds_a_table_by_name_and_lists_every_table() {
    let datad = Datad::start(&[]);
    let creator = Client::connect(datad.address, None).unwrap();
    let created = creator.create_table(accounts(), vec![]).unwrap();
    let mut insert = creator.transaction();
    insert.insert(&created, account(7, 700)).unwrap();
    insert.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    let mut other = accounts();
    other.name = "db/other".into();
    creator.create_table(other, vec![]).unwrap();

    let finder = Client::connect(datad.address, None).unwrap();
    let found = finder.open_table("ACCOUNTS").unwrap();
    assert_eq!(found.id, created.id);
    assert_eq!(found.schema_version, created.schema_version);
    assert_eq!(found.schema(), created.schema());
    assert_eq!(balance_of(&finder, &found, 7), Some(Value::Int(700)));
    assert_eq!(
        finder.table_names().unwrap(),
        vec!["accounts".to_string(), "db/other".to_string()]
    );

    let missing = finder.open_table("nothing").err().unwrap();
    assert_eq!(missing.code(), 723, "{missing}");
    creator.drop_table(&created).unwrap();
    assert_eq!(finder.table_names().unwrap(), vec!["db/other".to_string()]);
    assert_eq!(finder.open_table("accounts").err().unwrap().code(), 723);
}

#[test]
fn extra_metadata_changes_move_the_table_to_a_new_version_that_every_client_learns() {
    let datad = Datad::start(&[]);
    let writer = Client::connect(datad.address, None).unwrap();
    let table = writer.create_table(accounts(), vec![]).unwrap();
    let other = Client::connect(datad.address, None).unwrap();
    let stale = other.open_table("accounts").unwrap();

    let altered = writer
        .alter_extra_metadata(&table, b"{\"triggers\": []}".to_vec())
        .unwrap();
    assert!(altered.schema_version > table.schema_version);
    assert_eq!(altered.schema().extra_metadata, b"{\"triggers\": []}");
    let reopened = other.open_table("accounts").unwrap();
    assert_eq!(reopened.schema(), altered.schema());
    assert_eq!(reopened.schema_version, altered.schema_version);

    // A client still holding the old version is told the table changed (241), for its
    // writes and for a change of metadata decided on what it saw.
    let mut write = other.transaction();
    write.insert(&stale, account(1, 10)).unwrap();
    let refused = write.execute(ExecuteMode::Commit).unwrap().wait();
    assert_eq!(refused.err().map(|e| e.code()), Some(241));
    let lost_update = other.alter_extra_metadata(&stale, b"{}".to_vec());
    assert_eq!(lost_update.err().map(|e| e.code()), Some(241));
    let too_big = vec![b' '; kista_client::schema::EXTRA_METADATA_BYTES_MAX + 1];
    let refused = writer
        .alter_extra_metadata(&altered, too_big)
        .err()
        .unwrap();
    assert_ne!(refused.code(), 0, "{refused}");
    assert_eq!(balance_of(&writer, &altered, 1), None);
}

#[test]
fn a_replacement_takes_the_name_in_one_change_and_the_replaced_table_refuses_old_operations() {
    let datad = Datad::start(&[]);
    let client = Client::connect(datad.address, None).unwrap();
    let table = client.create_table(accounts(), vec![]).unwrap();
    let mut copy_schema = accounts();
    copy_schema.name = "accounts/#copy".into();
    let copy = client.create_table(copy_schema, vec![]).unwrap();
    let mut write = client.transaction();
    write.insert(&table, account(1, 10)).unwrap();
    write.insert(&copy, account(1, 20)).unwrap();
    write.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    let other = Client::connect(datad.address, None).unwrap();
    let stale = other.open_table("accounts").unwrap();

    // A replacement decided on an old version of either table is refused (241).
    let mut old_copy = copy.clone();
    old_copy.schema_version -= 1;
    let same_columns = [Some(0), Some(1)];
    let refused = (client.replace_table(&table, &old_copy, &same_columns))
        .err()
        .unwrap();
    assert_eq!(refused.code(), 241, "{refused}");

    let replaced = client.replace_table(&table, &copy, &same_columns).unwrap();
    assert_eq!(replaced.schema().name, "accounts");
    let found = other.open_table("accounts").unwrap();
    assert_eq!(
        (found.id, found.schema_version),
        (copy.id, replaced.schema_version)
    );
    assert_eq!(balance_of(&other, &found, 1), Some(Value::Int(20)));
    assert_eq!(
        other.open_table("accounts/#copy").err().map(|e| e.code()),
        Some(723)
    );
    let mut names = other.table_names().unwrap();
    names.sort();
    assert_eq!(
        names,
        vec!["accounts".to_string(), "accounts/#replaced".to_string()]
    );
    // An operation made for the replaced table is refused: its client looks again.
    let mut read = other.transaction();
    read.read(&stale, &[Value::Int(1)], LockKind::Committed)
        .unwrap();
    let refused = read
        .execute(ExecuteMode::Commit)
        .unwrap()
        .wait()
        .err()
        .unwrap();
    assert_eq!(refused.code(), 241, "{refused}");
    client.drop_table(&table).unwrap();
    assert_eq!(other.table_names().unwrap(), vec!["accounts".to_string()]);
    assert_eq!(
        client
            .replace_table(&replaced, &replaced, &same_columns)
            .err()
            .map(|e| e.code()),
        Some(4257)
    );
}

/// The row `id` as `table` reads it, every column.
fn row_of(client: &Client, table: &Table, id: i64) -> Option<Vec<Value>> {
    let mut read = client.transaction();
    let op = read
        .read(table, &[Value::Int(id)], LockKind::Committed)
        .unwrap();
    let done = read.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    done.row(op).map(<[Value]>::to_vec)
}

#[test]
fn a_table_changed_in_place_goes_on_serving_operations_made_for_its_earlier_version() {
    let datad = Datad::start(&[]);
    let writer = Client::connect(datad.address, None).unwrap();
    let table = writer.create_table(accounts(), vec![]).unwrap();
    let mut load = writer.transaction();
    for id in 0..100 {
        load.insert(&table, account(id, 10 * id)).unwrap();
    }
    load.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    let other = Client::connect(datad.address, None).unwrap();
    let stale = other.open_table("accounts").unwrap();
    let notices_before = other.table_notices();

    // A transaction of the other client is open across the change.
    let mut across = other.transaction();
    across
        .update(&stale, &[Value::Int(1)], vec![(1, Value::Int(-1))])
        .unwrap();
    across
        .execute(ExecuteMode::NoCommit)
        .unwrap()
        .wait()
        .unwrap();

    let mut schema = stale.schema().clone();
    schema.name = "accounts_v2".into();
    schema.columns[1].name = "amount".into();
    schema.columns.push(
        Column::new("note", ColumnType::varchar(20))
            .nullable()
            .added_with(Value::Bytes(b"none".to_vec())),
    );
    schema.columns.push(
        Column::new("flags", ColumnType::signed(4))
            .nullable()
            .added_with(Value::Null),
    );
    let altered = writer.alter_table(&table, schema.clone()).unwrap();
    assert!(altered.schema_version > table.schema_version);

    // The stale client's transaction goes on and commits, reading and writing as before:
    // a read of "every column" gives the columns it knows.
    across.insert(&stale, account(1000, 5)).unwrap();
    let read = across
        .read(&stale, &[Value::Int(2)], LockKind::Exclusive)
        .unwrap();
    let done = across.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    assert_eq!(done.row(read), Some(&account(2, 20)[..]));
    assert!(
        other.table_notices() > notices_before,
        "the coordinator told it"
    );
    assert!(other.table_changed_since_opened(&stale));
    assert_eq!(row_of(&other, &stale, 7), Some(account(7, 70)));

    // Under its new name the table has the added columns: rows written before read the
    // values they were added with; new rows carry their own.
    assert_eq!(
        other.open_table("accounts").err().map(|e| e.code()),
        Some(723)
    );
    let reopened = other.open_table("ACCOUNTS_V2").unwrap();
    assert_eq!(reopened.schema(), &schema);
    assert!(!other.table_changed_since_opened(&reopened));
    let absent = |id, balance| {
        let mut row = account(id, balance);
        row.extend([Value::Bytes(b"none".to_vec()), Value::Null]);
        row
    };
    assert_eq!(row_of(&other, &reopened, 1), Some(absent(1, -1)));
    assert_eq!(row_of(&other, &reopened, 1000), Some(absent(1000, 5)));
    let mut write = writer.transaction();
    let carried = vec![
        Value::Int(2000),
        Value::Int(1),
        Value::Bytes(b"new".to_vec()),
        Value::Int(3),
    ];
    write.insert(&altered, carried.clone()).unwrap();
    write
        .update(&altered, &[Value::Int(3)], vec![(3, Value::Int(9))])
        .unwrap();
    write.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    assert_eq!(row_of(&other, &reopened, 2000), Some(carried));
    let mut three = absent(3, 30);
    three[3] = Value::Int(9);
    assert_eq!(row_of(&other, &reopened, 3), Some(three));
    let scanned = other
        .scan(&reopened, kista_client::ScanSpec::full())
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    assert_eq!(scanned.len(), 102);
    assert!(scanned.iter().all(|row| row.len() == 4));

    // A change that is not in place is refused; so is a change decided on an old version.
    let mut retyped = schema.clone();
    retyped.columns[1].column_type = ColumnType::signed(4);
    let refused = writer.alter_table(&altered, retyped).err().unwrap();
    assert!(
        refused.to_string().contains("changes its type"),
        "{refused}"
    );
    let lost_update = other.alter_table(&stale, stale.schema().clone()).err();
    assert_eq!(lost_update.map(|e| e.code()), Some(241));
}
