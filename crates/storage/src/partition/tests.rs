//! The partition's versions, locks and indexes, as a transaction sees them.

mod changes;
mod model;

use std::sync::Arc;

use super::*;
use crate::schema::{Column, IndexKind, TableSchema};
use crate::types::ColumnType;
use LockMode::{Exclusive, Shared};

const T1: TransactionId = TransactionId(1);
const T2: TransactionId = TransactionId(2);
const T3: TransactionId = TransactionId(3);
const BY_EMAIL: IndexId = IndexId(1);
const BY_AGE: IndexId = IndexId(2);

/// users(id BIGINT PRIMARY KEY, email VARCHAR(40) NULL UNIQUE, age INT NULL ordered)
fn users(limit_bytes: u64) -> (Arc<DataMemory>, Partition) {
    let schema = TableSchema {
        extra_metadata: Vec::new(),
        name: "users".into(),
        columns: vec![
            Column::new(
                "id",
                ColumnType::Int {
                    bytes: 8,
                    signed: true,
                },
            ),
            Column::new("email", ColumnType::varchar(40)).nullable(),
            Column::new(
                "age",
                ColumnType::Int {
                    bytes: 4,
                    signed: true,
                },
            )
            .nullable(),
        ],
        primary_key: vec![0],
    };
    schema.validate().unwrap();
    let memory = Arc::new(DataMemory::new(limit_bytes));
    let layout = Arc::new(RowLayout::new(&schema));
    let mut partition = Partition::new(layout, memory.clone(), PartitionLimits::default());
    let unique = IndexSchema {
        name: "by_email".into(),
        kind: IndexKind::Unique,
        columns: vec![1],
    };
    let ordered = IndexSchema {
        name: "by_age".into(),
        kind: IndexKind::Ordered,
        columns: vec![2],
    };
    partition.add_index(BY_EMAIL, unique).unwrap();
    partition.add_index(BY_AGE, ordered).unwrap();
    (memory, partition)
}

fn user(id: i64, email: Option<&str>, age: Option<i64>) -> Vec<Value> {
    vec![
        Value::Int(id),
        email.map_or(Value::Null, |e| Value::Bytes(e.as_bytes().to_vec())),
        age.map_or(Value::Null, Value::Int),
    ]
}

/// The encoded primary key of the row with this `id` (column 0, BIGINT).
pub(super) fn key(partition: &Partition, id: i64) -> Vec<u8> {
    let mut key = Vec::new();
    partition
        .layout()
        .primary_key_of_values(&[Value::Int(id)], &mut key)
        .unwrap();
    key
}

fn committed(partition: &Partition, id: i64) -> Option<Vec<Value>> {
    let key = key(partition, id);
    let row = partition.read_committed(&key);
    row.map(|(fixed, var)| partition.layout().values(fixed, var))
}

fn locked(
    partition: &mut Partition,
    tx: TransactionId,
    id: i64,
    mode: LockMode,
) -> Outcome<Option<Vec<Value>>> {
    let key = key(partition, id);
    match partition.read_locked(tx, &key, mode).unwrap() {
        Outcome::Done(version) => Outcome::Done(version.map(|v| {
            let (fixed, var) = partition.version(v);
            partition.layout().values(fixed, var)
        })),
        Outcome::Waiting(row) => Outcome::Waiting(row),
    }
}

fn insert(
    partition: &mut Partition,
    tx: TransactionId,
    values: Vec<Value>,
) -> Result<Outcome<()>, OperationError> {
    partition.insert(tx, &values)
}

fn update_age(
    partition: &mut Partition,
    tx: TransactionId,
    id: i64,
    age: i64,
) -> Result<Outcome<()>, OperationError> {
    let key = key(partition, id);
    partition.update(tx, &key, &[(2, Value::Int(age))])
}

fn delete(
    partition: &mut Partition,
    tx: TransactionId,
    id: i64,
) -> Result<Outcome<()>, OperationError> {
    let key = key(partition, id);
    partition.delete(tx, &key)
}

fn ages(partition: &Partition) -> Vec<i64> {
    let range = ScanRange::Index {
        index: BY_AGE,
        lower: None,
        upper: None,
        descending: false,
    };
    let mut ids = Vec::new();
    let layout = partition.layout().clone();
    partition
        .scan_committed(&range, None, None, usize::MAX, |fixed, var| {
            if let Value::Int(age) = layout.value(fixed, var, 2) {
                ids.push(age);
            }
            true
        })
        .unwrap();
    ids
}

const DONE: Outcome<()> = Outcome::Done(());

fn granted(transaction: TransactionId, row: RowId) -> Granted {
    Granted { transaction, row }
}

#[test]
fn a_committed_read_never_sees_an_uncommitted_insert() {
    let (_, mut users) = users(1 << 20);
    assert_eq!(
        insert(&mut users, T1, user(1, Some("a@x"), Some(30))),
        Ok(DONE)
    );
    assert_eq!(committed(&users, 1), None);
    assert_eq!(ages(&users), Vec::<i64>::new());
    assert_eq!(
        locked(&mut users, T1, 1, Shared),
        Outcome::Done(Some(user(1, Some("a@x"), Some(30)))),
        "a transaction reads its own writes"
    );
    assert!(users.commit(T1, 1).is_empty());
    assert_eq!(committed(&users, 1), Some(user(1, Some("a@x"), Some(30))));
    assert_eq!(ages(&users), [30]);
    assert_eq!(users.committed_rows(), 1);
}

#[test]
fn an_update_stays_beside_the_committed_version_until_commit() {
    let (_, mut users) = users(1 << 20);
    insert(&mut users, T1, user(1, Some("a@x"), Some(30))).unwrap();
    users.commit(T1, 1);
    assert_eq!(update_age(&mut users, T2, 1, 31), Ok(DONE));
    assert_eq!(
        update_age(&mut users, T2, 1, 32),
        Ok(DONE),
        "a second change replaces the first"
    );
    assert_eq!(committed(&users, 1), Some(user(1, Some("a@x"), Some(30))));
    assert_eq!(
        ages(&users),
        [30],
        "the ordered index shows committed keys only"
    );
    users.commit(T2, 1);
    assert_eq!(committed(&users, 1), Some(user(1, Some("a@x"), Some(32))));
    assert_eq!(ages(&users), [32]);
}

#[test]
fn rollback_restores_the_committed_version_and_frees_what_the_change_took() {
    let (memory, mut users) = users(1 << 20);
    insert(&mut users, T1, user(1, Some("a@x"), Some(30))).unwrap();
    insert(&mut users, T1, user(2, Some("b@x"), Some(40))).unwrap();
    users.commit(T1, 1);
    let before = memory.used_bytes();
    update_age(&mut users, T2, 1, 99).unwrap();
    users
        .update(T2, &key(&users, 2), &[(1, Value::Bytes(b"new@x".to_vec()))])
        .unwrap();
    delete(&mut users, T2, 2).unwrap();
    insert(&mut users, T2, user(3, Some("c@x"), None)).unwrap();
    users.abort(T2);
    assert_eq!(committed(&users, 1), Some(user(1, Some("a@x"), Some(30))));
    assert_eq!(committed(&users, 2), Some(user(2, Some("b@x"), Some(40))));
    assert_eq!(committed(&users, 3), None);
    assert_eq!(ages(&users), [30, 40]);
    assert_eq!(
        memory.used_bytes(),
        before,
        "copies, index entries and the new anchor are gone"
    );
    assert_eq!(users.open_transactions(), 0);
}

#[test]
fn a_delete_hides_the_row_only_once_committed() {
    let (memory, mut users) = users(1 << 20);
    let empty = memory.used_bytes();
    insert(&mut users, T1, user(1, Some("a@x"), Some(30))).unwrap();
    users.commit(T1, 1);
    assert_eq!(delete(&mut users, T2, 1), Ok(DONE));
    assert_eq!(committed(&users, 1), Some(user(1, Some("a@x"), Some(30))));
    assert_eq!(locked(&mut users, T2, 1, Shared), Outcome::Done(None));
    assert_eq!(
        delete(&mut users, T2, 1),
        Err(OperationErrorKind::NotFound {
            table: "users".into()
        }
        .into())
    );
    users.commit(T2, 1);
    assert_eq!(committed(&users, 1), None);
    assert_eq!(users.committed_rows(), 0);
    let pages_kept = memory.used_bytes() - empty;
    assert_eq!(
        pages_kept,
        crate::memory::PAGE_BYTES as u64 + users.primary.held_bytes(),
        "only the page and the hash index's buckets stay with the partition"
    );
}

#[test]
fn a_partition_holds_every_byte_it_drew_and_gives_them_all_back_when_dropped() {
    let (memory, mut users) = users(1 << 20);
    assert_eq!(users.held_bytes(), memory.used_bytes());
    for id in 0..50 {
        insert(
            &mut users,
            T1,
            user(id, Some("someone@example.com"), Some(id)),
        )
        .unwrap();
    }
    users.commit(T1, 1);
    assert!(users.held_bytes() > crate::memory::PAGE_BYTES as u64);
    assert_eq!(
        users.held_bytes(),
        memory.used_bytes(),
        "its rows, its primary key and its ordered index"
    );
    drop(users);
    assert_eq!(memory.used_bytes(), 0);
}

#[test]
fn locked_reads_wait_for_writers_and_run_again_when_granted() {
    let (_, mut users) = users(1 << 20);
    insert(&mut users, T1, user(1, None, Some(30))).unwrap();
    users.commit(T1, 1);
    update_age(&mut users, T1, 1, 31).unwrap();
    let Outcome::Waiting(anchor) = locked(&mut users, T2, 1, Shared) else {
        panic!("T1 holds it")
    };
    assert_eq!(
        locked(&mut users, T3, 1, Exclusive),
        Outcome::Waiting(anchor)
    );
    assert_eq!(
        committed(&users, 1),
        Some(user(1, None, Some(30))),
        "committed reads do not wait"
    );
    assert_eq!(users.commit(T1, 1), [granted(T2, anchor)]);
    assert_eq!(
        locked(&mut users, T2, 1, Shared),
        Outcome::Done(Some(user(1, None, Some(31))))
    );
    assert_eq!(
        update_age(&mut users, T2, 1, 5),
        Ok(DONE),
        "a sole holder upgrades ahead of T3"
    );
    assert_eq!(users.commit(T2, 1), [granted(T3, anchor)]);
    assert_eq!(
        locked(&mut users, T3, 1, Exclusive),
        Outcome::Done(Some(user(1, None, Some(5))))
    );
}

#[test]
fn a_timed_out_waiter_is_withdrawn_and_the_holder_keeps_its_lock() {
    let (_, mut users) = users(1 << 20);
    insert(&mut users, T1, user(1, None, None)).unwrap();
    users.commit(T1, 1);
    delete(&mut users, T1, 1).unwrap();
    let Ok(Outcome::Waiting(anchor)) = update_age(&mut users, T2, 1, 3) else {
        panic!("T1 holds it")
    };
    assert_eq!(locked(&mut users, T3, 1, Shared), Outcome::Waiting(anchor));
    assert!(
        users.cancel_wait(T2, anchor).is_empty(),
        "T1 still holds it"
    );
    assert_eq!(users.abort(T2), [], "T2 had nothing else");
    assert_eq!(users.commit(T1, 1), [granted(T3, anchor)]);
    assert_eq!(
        locked(&mut users, T3, 1, Shared),
        Outcome::Done(None),
        "T1 deleted it"
    );
    users.commit(T3, 1);
}

/// Every lock the partition lists: `(row, transaction, mode, granted)`, sorted.
fn listed_locks(partition: &Partition) -> Vec<(RowId, TransactionId, LockMode, bool)> {
    let mut locks = Vec::new();
    partition
        .each_lock(|row, transaction, mode, granted| locks.push((row, transaction, mode, granted)));
    locks.sort();
    locks
}

#[test]
fn a_new_rows_lock_is_implied_until_another_transaction_asks_for_the_row() {
    let (_, mut users) = users(1 << 20);
    insert(&mut users, T1, user(7, None, None)).unwrap();
    insert(&mut users, T1, user(8, None, None)).unwrap();
    assert_eq!(users.locks.entries(), 0, "the inserts entered no lock");
    let listed = listed_locks(&users);
    assert_eq!(listed.len(), 2, "yet both are listed: {listed:?}");
    assert!(listed
        .iter()
        .all(|&(_, tx, mode, granted)| (tx, mode, granted) == (T1, Exclusive, true)));
    // Its own transaction asks again: granted, still implied.
    assert_eq!(
        locked(&mut users, T1, 7, Shared),
        Outcome::Done(Some(user(7, None, None)))
    );
    assert_eq!(users.locks.entries(), 0);
    // Another asks: the holder's lock goes in the table first, and it waits behind it.
    let Outcome::Waiting(anchor) = locked(&mut users, T2, 7, Shared) else {
        panic!("T1 holds row 7")
    };
    assert_eq!(users.locks.holders(anchor), [(T1, Exclusive)]);
    assert_eq!(users.locks.waiting(anchor), [(T2, Shared)]);
    let mut blockers = Vec::new();
    users.lock_blockers(T2, anchor, &mut blockers);
    assert_eq!(blockers, [T1], "deadlock detection sees the holder");
    assert_eq!(listed_locks(&users).len(), 3);
    assert_eq!(users.commit(T1, 1), [granted(T2, anchor)]);
    assert_eq!(
        locked(&mut users, T2, 7, Shared),
        Outcome::Done(Some(user(7, None, None)))
    );
    users.commit(T2, 1);
    assert_eq!(users.locks.entries(), 0);
    assert_eq!(listed_locks(&users), []);
}

#[test]
fn a_waiter_on_an_aborted_insert_wakes_to_no_row_and_the_anchor_goes_afterwards() {
    let (memory, mut users) = users(1 << 20);
    let empty = memory.used_bytes();
    insert(&mut users, T1, user(7, Some("a@x"), None)).unwrap();
    let Ok(Outcome::Waiting(anchor)) = insert(&mut users, T2, user(7, Some("b@x"), None)) else {
        panic!("T1 holds the key")
    };
    assert_eq!(locked(&mut users, T3, 7, Shared), Outcome::Waiting(anchor));
    assert_eq!(users.abort(T1), [granted(T2, anchor)]);
    assert_eq!(
        insert(&mut users, T2, user(7, Some("b@x"), None)),
        Ok(DONE),
        "the key is free again"
    );
    assert_eq!(users.commit(T2, 1), [granted(T3, anchor)]);
    assert_eq!(
        locked(&mut users, T3, 7, Shared),
        Outcome::Done(Some(user(7, Some("b@x"), None)))
    );
    users.commit(T3, 1);
    // Now the same with nobody re-inserting: the anchor lives while T2 waits, then goes.
    insert(&mut users, T1, user(8, None, None)).unwrap();
    let Outcome::Waiting(anchor) = locked(&mut users, T2, 8, Exclusive) else {
        panic!("T1 holds it")
    };
    users.abort(T1);
    assert_eq!(locked(&mut users, T2, 8, Exclusive), Outcome::Done(None));
    assert_eq!(
        update_age(&mut users, T2, 8, 1),
        Err(OperationErrorKind::NotFound {
            table: "users".into()
        }
        .into())
    );
    users.commit(T2, 1);
    assert!(users.read_committed(&key(&users, 8)).is_none());
    let _ = anchor;
    users.abort(T2);
    delete(&mut users, T1, 7).unwrap();
    users.commit(T1, 1);
    assert!(users.primary.is_empty(), "no primary key entry is left");
    assert_eq!(
        memory.used_bytes() - empty,
        crate::memory::PAGE_BYTES as u64 + users.primary.held_bytes(),
        "no anchor or entry is left"
    );
}

/// The key `email` has in the unique index, in the form of its index table's primary key.
fn email_key(partition: &Partition, email: &str) -> Vec<u8> {
    let mut key = Vec::new();
    let value = Value::Bytes(email.as_bytes().to_vec());
    partition
        .layout()
        .key_of_values(&[1], &[value], &mut key)
        .unwrap();
    key
}

fn email_change(
    partition: &Partition,
    id: i64,
    removed: Option<&str>,
    added: Option<&str>,
) -> UniqueChange {
    UniqueChange {
        index: BY_EMAIL,
        removed: removed.map(|email| email_key(partition, email)),
        added: added.map(|email| {
            let value = Value::Bytes(email.as_bytes().to_vec());
            (email_key(partition, email), vec![value])
        }),
        primary_key: key(partition, id),
    }
}

#[test]
fn writes_report_each_change_of_a_rows_unique_key_and_nothing_else() {
    let (_, mut users) = users(1 << 20);
    let set_email = |users: &mut Partition, tx, id, email: Option<&str>| {
        let key = key(users, id);
        let value = email.map_or(Value::Null, |e| Value::Bytes(e.as_bytes().to_vec()));
        users.update(tx, &key, &[(1, value)]).unwrap();
        users.take_unique_changes()
    };
    insert(&mut users, T1, user(1, Some("a@x"), None)).unwrap();
    insert(&mut users, T1, user(2, None, None)).unwrap();
    assert_eq!(
        users.take_unique_changes(),
        vec![email_change(&users, 1, None, Some("a@x"))],
        "a row with NULL in the key has no entry"
    );
    update_age(&mut users, T1, 1, 30).unwrap();
    assert_eq!(
        users.take_unique_changes(),
        vec![],
        "the key did not change"
    );
    users.commit(T1, 1);
    assert_eq!(
        set_email(&mut users, T2, 1, Some("z@x")),
        vec![email_change(&users, 1, Some("a@x"), Some("z@x"))]
    );
    assert_eq!(
        set_email(&mut users, T2, 1, Some("y@x")),
        vec![email_change(&users, 1, Some("z@x"), Some("y@x"))],
        "relative to the transaction's own change"
    );
    assert_eq!(
        set_email(&mut users, T2, 2, Some("y@x")),
        vec![email_change(&users, 2, None, Some("y@x"))],
        "uniqueness is the index table's business"
    );
    delete(&mut users, T2, 1).unwrap();
    assert_eq!(
        users.take_unique_changes(),
        vec![email_change(&users, 1, Some("y@x"), None)]
    );
    users.write(T2, &user(1, Some("b@x"), None)).unwrap();
    assert_eq!(
        users.take_unique_changes(),
        vec![email_change(&users, 1, None, Some("b@x"))],
        "re-inserted after its own delete"
    );
    assert!(insert(&mut users, T2, user(1, Some("c@x"), None)).is_err());
    assert_eq!(
        users.take_unique_changes(),
        vec![],
        "a failed write reports nothing"
    );
    users.abort(T2);
    assert_eq!(committed(&users, 1), Some(user(1, Some("a@x"), Some(30))));
}

#[test]
fn the_primary_key_is_refused_twice_and_cannot_be_updated() {
    let (_, mut users) = users(1 << 20);
    insert(&mut users, T1, user(1, None, None)).unwrap();
    users.commit(T1, 1);
    assert_eq!(
        insert(&mut users, T2, user(1, None, None)),
        Err(OperationErrorKind::Duplicate {
            table: "users".into(),
            index: "PRIMARY".into()
        }
        .into())
    );
    assert_eq!(
        users.write(T2, &user(1, None, Some(9))),
        Ok(DONE),
        "write replaces"
    );
    let key = key(&users, 1);
    assert_eq!(
        users.update(T2, &key, &[(0, Value::Int(2))]),
        Err(OperationErrorKind::PrimaryKeyUpdate {
            table: "users".into(),
            column: "id".into()
        }
        .into())
    );
    users.commit(T2, 1);
    assert_eq!(committed(&users, 1), Some(user(1, None, Some(9))));
}

#[test]
fn exhausting_data_memory_fails_the_operation_and_deletes_make_room_again() {
    let (memory, mut users) = users(3 * crate::memory::PAGE_BYTES as u64);
    let mut inserted = 0;
    let error = loop {
        let email = format!("user{inserted}@example.com");
        match insert(&mut users, T1, user(inserted, Some(&email), Some(inserted))) {
            Ok(_) => inserted += 1,
            Err(error) => break error,
        }
        assert!(inserted < 1_000_000, "memory never ran out");
    };
    let OperationErrorKind::Memory(exhausted) = error.kind() else {
        panic!("{error:?}")
    };
    assert_eq!(exhausted.limit_bytes, memory.limit_bytes());
    assert!(exhausted.to_string().contains("DataMemory"), "{exhausted}");
    users.commit(T1, 1);
    for id in 0..inserted {
        assert_eq!(
            committed(&users, id).map(|row| row[0].clone()),
            Some(Value::Int(id))
        );
    }
    // The row refused is refused again (a smaller one may fit what is left).
    let email = format!("user{inserted}@example.com");
    let refused = user(inserted, Some(&email), Some(inserted));
    assert!(insert(&mut users, T2, refused).is_err());
    users.abort(T2);
    for id in 0..inserted / 2 {
        delete(&mut users, T3, id).unwrap();
    }
    users.commit(T3, 1);
    // Fewer than were deleted: an ordered index's nodes are counted whole, and rows put
    // back below the rest split its leaves in halves, where the load in key order had
    // filled them, so they may take more than the deletes freed.
    for id in 0..inserted / 4 {
        insert(&mut users, T2, user(id, None, None)).unwrap();
    }
    users.commit(T2, 1);
    assert_eq!(
        users.committed_rows(),
        (inserted - inserted / 2 + inserted / 4) as usize
    );
}

#[test]
fn an_ordered_index_added_later_covers_existing_rows_and_a_unique_one_holds_no_entries_here() {
    let (_, mut users) = users(1 << 20);
    insert(&mut users, T1, user(1, Some("a@x"), Some(3))).unwrap();
    insert(&mut users, T1, user(2, Some("b@x"), Some(3))).unwrap();
    users.commit(T1, 1);
    let unique_age = IndexSchema {
        name: "unique_age".into(),
        kind: IndexKind::Unique,
        columns: vec![2],
    };
    // A unique index's entries are rows of its index table, filled by the client that
    // adds it: the partition only reports the changes writes make to them.
    users.add_index(IndexId(8), unique_age).unwrap();
    users.take_unique_changes();
    update_age(&mut users, T2, 1, 4).unwrap();
    let changes = users.take_unique_changes();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].index, IndexId(8));
    users.commit(T2, 2);
    let by_id = IndexSchema {
        name: "by_id".into(),
        kind: IndexKind::Ordered,
        columns: vec![0],
    };
    users.add_index(IndexId(9), by_id).unwrap();
    let range = ScanRange::Index {
        index: IndexId(9),
        lower: None,
        upper: None,
        descending: true,
    };
    let mut ids = Vec::new();
    users
        .scan_committed(&range, None, None, 10, |fixed, var| {
            ids.push(users.layout().value(fixed, var, 0));
            true
        })
        .unwrap();
    assert_eq!(ids, [Value::Int(2), Value::Int(1)]);

    // A visitor that has no room after one row ends the batch there; the next resumes.
    let mut first = Vec::new();
    let resume = users
        .scan_committed(&range, None, None, 10, |fixed, var| {
            first.push(users.layout().value(fixed, var, 0));
            false
        })
        .unwrap();
    assert_eq!(first, [Value::Int(2)]);
    let mut rest = Vec::new();
    let end = users
        .scan_committed(&range, None, resume.as_ref(), 10, |fixed, var| {
            rest.push(users.layout().value(fixed, var, 0));
            true
        })
        .unwrap();
    assert_eq!((rest, end), (vec![Value::Int(1)], None));
    users.drop_index(IndexId(9)).unwrap();
    assert!(users.drop_index(IndexId(9)).is_err());
}

#[test]
fn a_logged_commit_shows_each_changed_row_once_as_committed_and_nothing_it_only_read() {
    let (_, mut partition) = users(1 << 20);
    for id in [2, 3, 4] {
        partition.insert(T1, &user(id, None, Some(id))).unwrap();
    }
    partition.commit(T1, 1);
    partition.insert(T2, &user(1, Some("new@x"), None)).unwrap();
    partition
        .update(T2, &key(&partition, 2), &[(2, Value::Int(20))])
        .unwrap();
    partition
        .update(T2, &key(&partition, 2), &[(2, Value::Int(21))])
        .unwrap();
    partition.delete(T2, &key(&partition, 3)).unwrap();
    partition
        .read_locked(T2, &key(&partition, 4), Exclusive)
        .unwrap();
    let mut shown = Vec::new();
    let layout = partition.layout().clone();
    partition.commit_logged(T2, 1, &mut |change| {
        shown.push(match change {
            CommittedChange::Written { fixed, var } => ("written", layout.values(fixed, var)),
            CommittedChange::Deleted { fixed, var } => {
                let mut key = Vec::new();
                layout.primary_key_of_row(fixed, var, &mut key);
                ("deleted", vec![Value::Bytes(key)])
            }
        })
    });
    shown.sort_by_key(|(kind, values)| format!("{kind} {values:?}"));
    assert_eq!(
        shown,
        [
            ("deleted", vec![Value::Bytes(key(&partition, 3))]),
            ("written", user(1, Some("new@x"), None)),
            ("written", user(2, None, Some(21))),
        ]
    );
    assert_eq!(committed(&partition, 2), Some(user(2, None, Some(21))));
}

/// Watching `age` as a foreign key's referencing columns (id 7) and `email` as a referenced
/// key (id 8).
fn watching(users: &mut Partition) {
    users.watch_keys(vec![
        WatchedKey {
            id: 7,
            side: WatchSide::Referencing,
            columns: vec![2],
        },
        WatchedKey {
            id: 8,
            side: WatchSide::Referenced,
            columns: vec![1],
        },
    ]);
}

fn age_given(users: &Partition, id: i64, age: i64) -> KeyChange {
    let mut age_key = Vec::new();
    (users.layout())
        .key_of_values(&[2], &[Value::Int(age)], &mut age_key)
        .unwrap();
    KeyChange {
        id: 7,
        side: WatchSide::Referencing,
        key: age_key,
        values: vec![Value::Int(age)],
        primary_key: key(users, id),
        new_values: None,
    }
}

/// `email` taken from user `id` by a delete (`replaced_by: None`) or by an update that
/// gave it `replaced_by`.
fn email_taken(
    users: &Partition,
    id: i64,
    email: &str,
    replaced_by: Option<Option<&str>>,
) -> KeyChange {
    let email_value = |email: Option<&str>| match email {
        Some(email) => Value::Bytes(email.as_bytes().to_vec()),
        None => Value::Null,
    };
    KeyChange {
        id: 8,
        side: WatchSide::Referenced,
        key: email_key(users, email),
        values: vec![email_value(Some(email))],
        primary_key: key(users, id),
        new_values: replaced_by.map(|email| vec![email_value(email)]),
    }
}

#[test]
fn writes_report_referencing_keys_they_give_and_referenced_keys_they_take() {
    let (_, mut users) = users(1 << 20);
    watching(&mut users);
    insert(&mut users, T1, user(1, Some("a@x"), Some(30))).unwrap();
    insert(&mut users, T1, user(2, Some("b@x"), None)).unwrap();
    assert_eq!(
        users.take_key_changes(),
        vec![age_given(&users, 1, 30)],
        "an insert gives keys and takes none; a NULL key references nothing"
    );
    users.commit(T1, 1);
    update_age(&mut users, T2, 1, 30).unwrap();
    assert_eq!(users.take_key_changes(), vec![], "the same key again");
    update_age(&mut users, T2, 1, 31).unwrap();
    assert_eq!(users.take_key_changes(), vec![age_given(&users, 1, 31)]);
    let key_2 = key(&users, 2);
    let new_email = Value::Bytes(b"c@x".to_vec());
    users.update(T2, &key_2, &[(1, new_email)]).unwrap();
    assert_eq!(
        users.take_key_changes(),
        vec![email_taken(&users, 2, "b@x", Some(Some("c@x")))],
        "an update that changes a referenced key takes the old one, saying what replaced it"
    );
    users.update(T2, &key_2, &[(1, Value::Null)]).unwrap();
    assert_eq!(
        users.take_key_changes(),
        vec![email_taken(&users, 2, "c@x", Some(None))],
        "a key made NULL is taken too"
    );
    delete(&mut users, T2, 1).unwrap();
    assert_eq!(
        users.take_key_changes(),
        vec![email_taken(&users, 1, "a@x", None)],
        "a delete takes its keys and gives none"
    );
    users.write(T2, &user(1, Some("a@x"), Some(31))).unwrap();
    assert_eq!(
        users.take_key_changes(),
        vec![age_given(&users, 1, 31)],
        "relative to the transaction's own delete"
    );
    users.abort(T2);
    assert_eq!(
        users
            .emptied(PartitionLimits::default())
            .unwrap()
            .watched
            .len(),
        2
    );
}

/// Every entry of ordered index `index`, as (key, anchor) pairs in key order.
fn entries_of(partition: &Partition, index: IndexId) -> Vec<(Vec<u8>, RowId)> {
    let position = partition.index_position(index).unwrap();
    match &partition.indexes[position].entries {
        indexes::Entries::Ordered(tree) => {
            let mut entries = Vec::new();
            tree.scan(None, None, false, None, |key, row| {
                entries.push((key.to_vec(), row));
                true
            });
            entries
        }
        indexes::Entries::InIndexTable => Vec::new(),
    }
}

#[test]
fn an_index_built_a_slice_at_a_time_under_writes_ends_as_one_built_at_once() {
    let (_, mut users) = users(1 << 20);
    for id in 0..40 {
        insert(&mut users, T1, user(id, None, Some(id % 7))).unwrap();
    }
    users.commit(T1, 1);
    let by_age_again = IndexSchema {
        name: "by_age_again".into(),
        kind: IndexKind::Ordered,
        columns: vec![2],
    };
    let building = IndexId(9);
    users.add_index_building(building, by_age_again).unwrap();
    let range = ScanRange::Index {
        index: building,
        lower: None,
        upper: None,
        descending: false,
    };
    let refused = users.scan_committed(&range, None, None, 10, |_, _| true);
    assert!(matches!(
        refused.as_ref().map_err(OperationError::kind),
        Err(OperationErrorKind::IndexBuilding { .. })
    ));
    assert!(!users.build_index_slice(building, 5).unwrap());
    // Writes behind and ahead of the builder: changed keys (one removed before it was
    // ever entered), a delete, new rows, a transaction still open.
    update_age(&mut users, T2, 1, 50).unwrap();
    update_age(&mut users, T2, 30, 51).unwrap();
    delete(&mut users, T2, 31).unwrap();
    insert(&mut users, T2, user(100, None, Some(52))).unwrap();
    users.commit(T2, 2);
    update_age(&mut users, T3, 35, 53).unwrap();
    insert(&mut users, T3, user(101, None, Some(54))).unwrap();
    let mut slices = 1;
    while !users.build_index_slice(building, 5).unwrap() {
        slices += 1;
    }
    assert!(slices > 2, "built in slices");
    assert_eq!(
        entries_of(&users, building),
        entries_of(&users, BY_AGE),
        "the same entries as the index maintained all along, the open transaction's too"
    );
    users.commit(T3, 3);
    assert_eq!(entries_of(&users, building), entries_of(&users, BY_AGE));
    assert!(users
        .scan_committed(&range, None, None, 10, |_, _| true)
        .is_ok());
}

#[test]
fn a_dropped_partition_is_freed_a_slice_at_a_time_down_to_nothing() {
    let (memory, mut users) = users(64 << 20);
    let before_rows = memory.used_bytes();
    for id in 0..3_000 {
        let email = format!("user{id}@example.com");
        insert(&mut users, T1, user(id, Some(&email), Some(id % 90))).unwrap();
    }
    users.commit(T1, 1);
    let full = memory.used_bytes();
    assert!(full > before_rows);
    let mut slices = 0;
    let mut last = full;
    while !users.release_some(1_000) {
        slices += 1;
        let now = memory.used_bytes();
        assert!(now <= last, "slice {slices}: {last} then {now}");
        last = now;
        assert!(slices < 100, "the release ends");
    }
    // 3,000 rows, their primary and ordered entries: at least 9 slices of 1,000.
    assert!(slices >= 8, "{slices} slices");
    assert!(last < full);
    drop(users);
    assert_eq!(memory.used_bytes(), 0, "freed once, nothing twice");
}
