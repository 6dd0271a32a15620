//! A unique index added to a table that holds rows, through the native client against a
//! real `kista datad --standalone`: it is filled from the rows while writes go on, and
//! every row ends with exactly its entry (`crates/client/src/index_build.rs`).

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kista_client::schema::{Column, IndexKind, IndexSchema, TableSchema};
use kista_client::types::{ColumnType, Value};
use kista_client::{Client, ExecuteMode, LockKind, Table};
use support::Datad;

const ROWS: i64 = 3_000;

fn accounts() -> TableSchema {
    TableSchema {
        extra_metadata: Vec::new(),
        name: "accounts".into(),
        columns: vec![
            Column::new("id", ColumnType::signed(8)),
            Column::new("handle", ColumnType::varchar(32)).nullable(),
        ],
        primary_key: vec![0],
    }
}

fn handle(id: i64, generation: u32) -> Value {
    Value::Bytes(format!("h{id}-{generation}").into_bytes())
}

fn by_handle() -> IndexSchema {
    IndexSchema {
        name: "by_handle".into(),
        kind: IndexKind::Unique,
        columns: vec![1],
    }
}

fn node_with_accounts() -> (Datad, Client, Table) {
    let datad = Datad::start(&[
        "--partitions",
        "4",
        "--thread-config",
        "ldm={count=2},query={count=1},tc={count=1},recv={count=1}",
    ]);
    let client = Client::connect(datad.address, None).unwrap();
    let table = client.create_table(accounts(), vec![]).unwrap();
    for chunk in (0..ROWS).collect::<Vec<_>>().chunks(500) {
        let mut insert = client.transaction();
        for &id in chunk {
            insert
                .insert(&table, vec![Value::Int(id), handle(id, 0)])
                .unwrap();
        }
        insert.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    }
    (datad, client, table)
}

/// The row the unique index finds for `key`.
fn found_by(client: &Client, table: &Table, key: &Value) -> Option<i64> {
    let mut read = client.transaction();
    let op = read
        .read_unique(
            table,
            "by_handle",
            std::slice::from_ref(key),
            LockKind::Committed,
            vec![0],
        )
        .unwrap();
    let done = read.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    done.row(op).map(|row| match row[0] {
        Value::Int(id) => id,
        ref other => panic!("an id, got {other:?}"),
    })
}

#[test]
fn a_row_written_by_a_transaction_open_when_the_build_began_gets_its_entry() {
    let (datad, client, table) = node_with_accounts();
    let writer = Client::connect(datad.address, None).unwrap();
    let mut open = writer.transaction();
    open.insert(&table, vec![Value::Int(ROWS), handle(ROWS, 0)])
        .unwrap();
    open.execute(ExecuteMode::NoCommit).unwrap().wait().unwrap();
    // The build waits for the open transaction, which keeps no entry of the new index,
    // before it reads the rows; the transaction commits while it waits.
    let building = std::thread::spawn(move || {
        client
            .create_index(&table, by_handle())
            .map(|t| (client, t))
    });
    std::thread::sleep(Duration::from_millis(300));
    open.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    let (client, indexed) = building.join().unwrap().unwrap();
    assert_eq!(found_by(&client, &indexed, &handle(ROWS, 0)), Some(ROWS));
    assert_eq!(found_by(&client, &indexed, &handle(7, 0)), Some(7));
}

#[test]
fn writes_during_the_build_leave_every_row_with_exactly_its_entry() {
    let (datad, client, table) = node_with_accounts();
    let stop = Arc::new(AtomicBool::new(false));
    // Rows get new handles, some are deleted and others inserted, while the index fills;
    // the writer keeps what each row holds once it is done.
    let writer = {
        let (stop, table) = (stop.clone(), table.clone());
        let client = Client::connect(datad.address, None).unwrap();
        std::thread::spawn(move || {
            let mut handles: Vec<Option<u32>> = vec![Some(0); ROWS as usize];
            let mut step = 0u32;
            while !stop.load(Ordering::Relaxed) || step < 200 {
                step += 1;
                let id = (i64::from(step) * 7919) % ROWS;
                let slot = &mut handles[id as usize];
                let mut write = client.transaction();
                let new_state = match (step % 5, *slot) {
                    (0, Some(_)) => {
                        write.delete(&table, &[Value::Int(id)]).unwrap();
                        None
                    }
                    (_, None) => {
                        write
                            .insert(&table, vec![Value::Int(id), handle(id, step)])
                            .unwrap();
                        Some(step)
                    }
                    (_, Some(_)) => {
                        write
                            .update(&table, &[Value::Int(id)], vec![(1, handle(id, step))])
                            .unwrap();
                        Some(step)
                    }
                };
                match write.execute(ExecuteMode::Commit).unwrap().wait() {
                    Ok(_) => *slot = new_state,
                    // A lock wait or deadlock with the build: the row is as it was.
                    Err(error) if error.is_temporary() => {}
                    Err(error) => panic!("write of row {id} failed: {error}"),
                }
            }
            handles
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    let indexed = client.create_index(&table, by_handle()).unwrap();
    stop.store(true, Ordering::Relaxed);
    let handles = writer.join().unwrap();
    for (id, generation) in handles.iter().enumerate() {
        let id = id as i64;
        match generation {
            Some(generation) => {
                let key = handle(id, *generation);
                assert_eq!(found_by(&client, &indexed, &key), Some(id), "row {id}");
            }
            None => assert_eq!(
                found_by(&client, &indexed, &handle(id, 0)),
                None,
                "row {id}"
            ),
        }
        if *generation != Some(0) {
            let first = handle(id, 0);
            assert_eq!(
                found_by(&client, &indexed, &first),
                None,
                "row {id}'s first handle"
            );
        }
    }
}

/// Rows enough that each partition's ordered index takes several build slices.
const MANY_ROWS: i64 = 24_000;

#[test]
fn an_ordered_index_built_in_slices_under_writes_finds_every_row_by_its_current_key() {
    let (datad, client, table) = node_with_accounts();
    for chunk in (ROWS..MANY_ROWS).collect::<Vec<_>>().chunks(1000) {
        let mut insert = client.transaction();
        for &id in chunk {
            insert
                .insert(&table, vec![Value::Int(id), handle(id, 0)])
                .unwrap();
        }
        insert.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    // Rows change their handles while the data managers fill the index, slice by slice.
    let writer = {
        let (stop, table) = (stop.clone(), table.clone());
        let client = Client::connect(datad.address, None).unwrap();
        std::thread::spawn(move || {
            let mut step = 0;
            while !stop.load(Ordering::Relaxed) || step < 100 {
                step += 1;
                let id = (i64::from(step) * 7919) % MANY_ROWS;
                let mut write = client.transaction();
                write
                    .update(&table, &[Value::Int(id)], vec![(1, handle(id, step))])
                    .unwrap();
                write.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
            }
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    let by_handle_ordered = IndexSchema {
        name: "by_handle_ordered".into(),
        kind: IndexKind::Ordered,
        columns: vec![1],
    };
    let indexed = client.create_index(&table, by_handle_ordered).unwrap();
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let mut through_index: Vec<Vec<Value>> = client
        .scan(
            &indexed,
            kista_client::ScanSpec::index_range(&indexed, "by_handle_ordered", None, None, false)
                .unwrap()
                .columns(vec![1, 0]),
        )
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut expected: Vec<Vec<Value>> = client
        .scan(&indexed, kista_client::ScanSpec::full().columns(vec![1, 0]))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let by_bytes = |a: &Vec<Value>, b: &Vec<Value>| {
        let text = |row: &Vec<Value>| match &row[0] {
            Value::Bytes(bytes) => bytes.clone(),
            other => panic!("a handle, got {other:?}"),
        };
        text(a).cmp(&text(b))
    };
    through_index.sort_by(by_bytes);
    expected.sort_by(by_bytes);
    assert_eq!(through_index.len(), MANY_ROWS as usize);
    assert_eq!(
        through_index, expected,
        "every row once, under its current handle"
    );
}
