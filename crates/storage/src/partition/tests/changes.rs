//! What changed since a GCI, as a restarting replica's copy reads it.

use super::*;

fn ages(partition: &Partition) -> Vec<Value> {
    let range = ScanRange::Index {
        index: BY_AGE,
        lower: None,
        upper: None,
        descending: false,
    };
    let mut ages = Vec::new();
    partition
        .scan_committed(&range, None, None, 100, |fixed, var| {
            ages.push(partition.layout().value(fixed, var, 2));
            true
        })
        .unwrap();
    ages
}

#[test]
fn rows_carry_the_gci_that_last_wrote_them_and_deletes_are_kept_with_theirs() {
    let (_, mut partition) = users(1 << 20);
    for id in 1..=3 {
        partition.insert(T1, &user(id, None, Some(id))).unwrap();
    }
    partition.commit(T1, 5);
    partition
        .update(T2, &key(&partition, 2), &[(2, Value::Int(20))])
        .unwrap();
    partition.delete(T2, &key(&partition, 3)).unwrap();
    partition.commit(T2, 7);
    // A transaction that only read leaves every GCI as it was.
    partition
        .read_locked(T3, &key(&partition, 1), Exclusive)
        .unwrap();
    partition.commit(T3, 9);

    let mut written = Vec::new();
    let end = partition.scan_with_gci(None, 10, |_, fixed, var, gci| {
        written.push((partition.layout().value(fixed, var, 0), gci));
    });
    written.sort_by_key(|(id, _)| format!("{id:?}"));
    assert_eq!(end, None);
    assert_eq!(written, [(Value::Int(1), 5), (Value::Int(2), 7)]);
    assert_eq!(
        partition.deleted_after(6),
        Some(vec![(key(&partition, 3), 7)])
    );
    assert_eq!(partition.deleted_after(7), Some(vec![]));
}

#[test]
fn once_the_budget_for_deleted_keys_is_spent_deletes_are_known_only_from_a_later_gci() {
    let (_, partition) = users(1 << 20);
    let limits = PartitionLimits {
        deleted_keys_bytes_max: 200,
        ..PartitionLimits::default()
    };
    let mut partition = partition.emptied(limits).unwrap();
    for id in 1..=10 {
        partition.insert(T1, &user(id, None, None)).unwrap();
    }
    partition.commit(T1, 1);
    for id in 1..=10u64 {
        partition.delete(T1, &key(&partition, id as i64)).unwrap();
        partition.commit(T1, 1 + id);
    }
    // Each kept key costs its 8 bytes and 32 more: 200 bytes keep the last five.
    assert_eq!(partition.deletes_known_from(), 7);
    assert_eq!(partition.deleted_after(5), None);
    let mut kept: Vec<u64> = partition
        .deleted_after(6)
        .unwrap()
        .into_iter()
        .map(|(_, gci)| gci)
        .collect();
    kept.sort_unstable();
    assert_eq!(kept, [7, 8, 9, 10, 11]);

    // A restore's word: deletes before GCI 10 are no concern of this replica.
    partition.set_deletes_known_from(10);
    let kept = partition.deleted_after(9).unwrap();
    assert_eq!(kept.len(), 2);
}

#[test]
fn clearing_for_a_whole_copy_keeps_only_rows_a_transaction_uses() {
    let (memory, mut partition) = users(1 << 20);
    for id in 1..=4 {
        partition.insert(T1, &user(id, None, Some(id))).unwrap();
    }
    partition.commit(T1, 1);
    partition.delete(T1, &key(&partition, 4)).unwrap();
    partition.commit(T1, 2);
    let used_before_bytes = memory.used_bytes();
    partition
        .update(T2, &key(&partition, 2), &[(2, Value::Int(20))])
        .unwrap();

    partition.clear_unlocked();
    assert_eq!(committed(&partition, 1), None);
    assert_eq!(committed(&partition, 3), None);
    assert_eq!(committed(&partition, 2), Some(user(2, None, Some(2))));
    assert_eq!(ages(&partition), [Value::Int(2)]);
    assert_eq!(
        partition.deleted_after(0),
        None,
        "no delete is known any more"
    );
    assert!(memory.used_bytes() < used_before_bytes);

    partition.commit(T2, 3);
    assert_eq!(committed(&partition, 2), Some(user(2, None, Some(20))));
    assert_eq!(ages(&partition), [Value::Int(20)]);
    assert_eq!(partition.committed_rows(), 1);
}
