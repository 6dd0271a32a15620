//! Foreign keys enforced by the data nodes' coordinators, through the native client against
//! a real `kista datad --standalone` (`crates/datanode/src/tc/foreign_keys.rs`): a child
//! needs its parent (255), a parent with children cannot go under RESTRICT (256), CASCADE
//! and SET NULL act in the same transaction (on delete and on update, a chain of them at
//! most 15 deep: 4263), and checks may be turned off for loads.

mod support;

use std::time::Duration;

use kista_client::schema::{Column, IndexKind, IndexSchema, TableSchema};
use kista_client::types::{ColumnType, Value};
use kista_client::{
    Client, ClientError, ExecuteMode, ForeignKeySpec, LockKind, ReferenceAction, Table,
};
use support::Datad;

const NO_PARENT_ROW: u32 = 255;
const ROW_REFERENCED: u32 = 256;
const CASCADE_TOO_DEEP: u32 = 4263;

/// `name`(id BIGINT PRIMARY KEY, parent BIGINT NULL, note VARCHAR(20) NULL, INDEX by_parent
/// (parent)).
fn table(client: &Client, name: &str) -> Table {
    let schema = TableSchema {
        extra_metadata: Vec::new(),
        name: name.into(),
        columns: vec![
            Column::new("id", ColumnType::signed(8)),
            Column::new("parent", ColumnType::signed(8)).nullable(),
            Column::new("note", ColumnType::varchar(20)).nullable(),
        ],
        primary_key: vec![0],
    };
    let by_parent = IndexSchema {
        name: "by_parent".into(),
        kind: IndexKind::Ordered,
        columns: vec![1],
    };
    client.create_table(schema, vec![by_parent]).unwrap()
}

/// `child`.parent references `parent`.id with `on_delete` (ON UPDATE RESTRICT).
fn references(client: &Client, child: &Table, parent: &Table, on_delete: ReferenceAction) -> Table {
    let rules = (on_delete, ReferenceAction::Restrict);
    references_with(client, child, parent, rules)
}

/// `child`.parent references `parent`.id with these ON DELETE and ON UPDATE rules.
fn references_with(
    client: &Client,
    child: &Table,
    parent: &Table,
    (on_delete, on_update): (ReferenceAction, ReferenceAction),
) -> Table {
    let spec = ForeignKeySpec {
        name: format!("{}_parent", child.schema().name),
        columns: vec![1],
        parent_index: None,
        on_delete,
        on_update,
    };
    client.add_foreign_key(child, parent, spec).unwrap()
}

/// Changes the primary key of `table`'s row `from` (with `parent`) to `to`, as SQL does:
/// the delete half carries the new row.
fn move_key(
    client: &Client,
    table: &Table,
    (from, to): (i64, i64),
    parent: Option<i64>,
) -> Result<(), ClientError> {
    commit(client, |tx| {
        let new_row = row(to, parent);
        tx.delete_moving_key(table, &[Value::Int(from)], &new_row)
            .unwrap();
        tx.insert(table, new_row).unwrap();
    })
}

fn row(id: i64, parent: Option<i64>) -> Vec<Value> {
    vec![
        Value::Int(id),
        parent.map_or(Value::Null, Value::Int),
        Value::Null,
    ]
}

/// Runs `build` in one transaction and commits it.
fn commit(
    client: &Client,
    build: impl FnOnce(&mut kista_client::Transaction<'_>),
) -> Result<(), ClientError> {
    let mut transaction = client.transaction();
    build(&mut transaction);
    transaction.execute(ExecuteMode::Commit)?.wait().map(|_| ())
}

fn insert(client: &Client, table: &Table, rows: &[Vec<Value>]) -> Result<(), ClientError> {
    commit(client, |tx| {
        for row in rows {
            tx.insert(table, row.clone()).unwrap();
        }
    })
}

fn delete(client: &Client, table: &Table, ids: &[i64]) -> Result<(), ClientError> {
    commit(client, |tx| {
        for &id in ids {
            tx.delete(table, &[Value::Int(id)]).unwrap();
        }
    })
}

/// The row with `id`: its parent column, if it exists.
fn parent_of(client: &Client, table: &Table, id: i64) -> Option<Value> {
    let mut read = client.transaction();
    let op = read
        .read(table, &[Value::Int(id)], LockKind::Committed)
        .unwrap();
    let done = read.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    done.row(op).map(|row| row[1].clone())
}

fn code(result: Result<(), ClientError>) -> u32 {
    result.expect_err("the transaction should fail").code()
}

fn node() -> (Datad, Client) {
    let datad = Datad::start(&[
        "--partitions",
        "4",
        "--thread-config",
        "ldm={count=2},query={count=1},tc={count=1},recv={count=1}",
    ]);
    let client = Client::connect(datad.address, None).unwrap();
    (datad, client)
}

#[test]
fn a_child_row_needs_its_parent_and_a_null_reference_needs_none() {
    let (_datad, client) = node();
    let parents = table(&client, "parents");
    let children = table(&client, "children");
    let children = references(&client, &children, &parents, ReferenceAction::Restrict);
    assert_eq!(
        code(insert(&client, &children, &[row(1, Some(7))])),
        NO_PARENT_ROW
    );
    assert_eq!(
        parent_of(&client, &children, 1),
        None,
        "nothing was written"
    );
    insert(&client, &children, &[row(2, None)]).unwrap();
    // A batch is checked once it has run: the child may come before its parent.
    commit(&client, |tx| {
        tx.insert(&children, row(3, Some(7))).unwrap();
        tx.insert(&parents, row(7, None)).unwrap();
    })
    .unwrap();
    let moved = commit(&client, |tx| {
        tx.update(&children, &[Value::Int(3)], vec![(1, Value::Int(8))])
            .unwrap();
    });
    assert_eq!(
        code(moved),
        NO_PARENT_ROW,
        "an update gives a new reference"
    );
    commit(&client, |tx| {
        tx.update(
            &children,
            &[Value::Int(3)],
            vec![(2, Value::Bytes(b"n".to_vec()))],
        )
        .unwrap();
    })
    .unwrap();
    assert_eq!(parent_of(&client, &children, 3), Some(Value::Int(7)));
}

#[test]
fn a_parent_with_children_stays_under_restrict_until_they_go() {
    let (_datad, client) = node();
    let parents = table(&client, "parents");
    let children = table(&client, "children");
    let children = references(&client, &children, &parents, ReferenceAction::Restrict);
    insert(&client, &parents, &[row(1, None), row(2, None)]).unwrap();
    insert(&client, &children, &[row(10, Some(1)), row(11, Some(1))]).unwrap();
    assert_eq!(code(delete(&client, &parents, &[1])), ROW_REFERENCED);
    delete(&client, &parents, &[2]).expect("a parent without children goes");
    // Children and their parent deleted in one batch, in any order.
    commit(&client, |tx| {
        tx.delete(&parents, &[Value::Int(1)]).unwrap();
        tx.delete(&children, &[Value::Int(10)]).unwrap();
        tx.delete(&children, &[Value::Int(11)]).unwrap();
    })
    .unwrap();
    assert_eq!(parent_of(&client, &parents, 1), None);
}

#[test]
fn a_child_written_by_the_same_open_transaction_keeps_its_parent() {
    let (_datad, client) = node();
    let parents = table(&client, "parents");
    let children = table(&client, "children");
    let children = references(&client, &children, &parents, ReferenceAction::Restrict);
    insert(&client, &parents, &[row(1, None)]).unwrap();
    let mut transaction = client.transaction();
    transaction.insert(&children, row(10, Some(1))).unwrap();
    transaction
        .execute(ExecuteMode::NoCommit)
        .unwrap()
        .wait()
        .unwrap();
    // The child is not committed: only a search that sees every version finds it.
    transaction.delete(&parents, &[Value::Int(1)]).unwrap();
    let failed = transaction.execute(ExecuteMode::Commit).unwrap().wait();
    assert_eq!(code(failed.map(|_| ())), ROW_REFERENCED);
    assert_eq!(parent_of(&client, &parents, 1), Some(Value::Null));
}

#[test]
fn a_parent_deleted_while_another_transaction_writes_a_child_waits_and_fails() {
    let (datad, client) = node();
    let parents = table(&client, "parents");
    let children = table(&client, "children");
    let children = references(&client, &children, &parents, ReferenceAction::Restrict);
    insert(&client, &parents, &[row(1, None)]).unwrap();
    let mut writer = client.transaction();
    writer.insert(&children, row(10, Some(1))).unwrap();
    writer
        .execute(ExecuteMode::NoCommit)
        .unwrap()
        .wait()
        .unwrap();
    let deleting = std::thread::spawn({
        let (address, parents) = (datad.address, parents.clone());
        move || {
            let other = Client::connect(address, None).unwrap();
            delete(&other, &parents, &[1])
        }
    });
    // The delete waits for the writer's shared lock on the parent, then finds the child.
    std::thread::sleep(Duration::from_millis(200));
    writer.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    assert_eq!(code(deleting.join().unwrap()), ROW_REFERENCED);
    assert_eq!(parent_of(&client, &children, 10), Some(Value::Int(1)));
}

#[test]
fn cascade_deletes_children_and_theirs_and_set_null_clears_references() {
    let (_datad, client) = node();
    let top = table(&client, "top");
    let middle = table(&client, "middle");
    let bottom = table(&client, "bottom");
    let loose = table(&client, "loose");
    let middle = references(&client, &middle, &top, ReferenceAction::Cascade);
    let bottom = references(&client, &bottom, &middle, ReferenceAction::Cascade);
    let loose = references(&client, &loose, &top, ReferenceAction::SetNull);
    insert(&client, &top, &[row(1, None), row(2, None)]).unwrap();
    insert(
        &client,
        &middle,
        &[row(10, Some(1)), row(11, Some(1)), row(20, Some(2))],
    )
    .unwrap();
    insert(
        &client,
        &bottom,
        &[row(100, Some(10)), row(110, Some(11)), row(200, Some(20))],
    )
    .unwrap();
    insert(&client, &loose, &[row(5, Some(1)), row(6, Some(2))]).unwrap();
    delete(&client, &top, &[1]).unwrap();
    for (table, id) in [(&middle, 10), (&middle, 11), (&bottom, 100), (&bottom, 110)] {
        assert_eq!(
            parent_of(&client, table, id),
            None,
            "row {id} cascaded away"
        );
    }
    assert_eq!(parent_of(&client, &middle, 20), Some(Value::Int(2)));
    assert_eq!(parent_of(&client, &bottom, 200), Some(Value::Int(20)));
    assert_eq!(
        parent_of(&client, &loose, 5),
        Some(Value::Null),
        "set to NULL"
    );
    assert_eq!(parent_of(&client, &loose, 6), Some(Value::Int(2)));
}

#[test]
fn a_cascade_that_meets_a_restrict_fails_whole() {
    let (_datad, client) = node();
    let top = table(&client, "top");
    let middle = table(&client, "middle");
    let bottom = table(&client, "bottom");
    let middle = references(&client, &middle, &top, ReferenceAction::Cascade);
    let bottom = references(&client, &bottom, &middle, ReferenceAction::Restrict);
    insert(&client, &top, &[row(1, None)]).unwrap();
    insert(&client, &middle, &[row(10, Some(1))]).unwrap();
    insert(&client, &bottom, &[row(100, Some(10))]).unwrap();
    assert_eq!(code(delete(&client, &top, &[1])), ROW_REFERENCED);
    assert_eq!(parent_of(&client, &top, 1), Some(Value::Null));
    assert_eq!(parent_of(&client, &middle, 10), Some(Value::Int(1)));
}

#[test]
fn an_index_a_key_uses_may_go_once_another_serves_the_key_which_keeps_acting() {
    let (_datad, client) = node();
    let top = table(&client, "top");
    let middle = table(&client, "middle");
    let middle = references(&client, &middle, &top, ReferenceAction::Cascade);
    let refused = client.drop_index(&middle, "by_parent");
    assert!(
        refused.is_err_and(|e| e.to_string().contains("needed by foreign key")),
        "the only index serving the key stays"
    );
    let wider = IndexSchema {
        name: "by_parent_note".into(),
        kind: IndexKind::Ordered,
        columns: vec![1, 2],
    };
    let middle = client.create_index(&middle, wider).unwrap();
    let middle = client.drop_index(&middle, "by_parent").unwrap();
    let (wider_id, _) = middle.index("by_parent_note").unwrap();
    let key = &middle.foreign_keys()[0];
    assert_eq!(
        key.child_index, wider_id.0,
        "the key moved to the index serving it"
    );
    let top = client.open_table("top").unwrap();
    assert_eq!(
        top.foreign_keys()[0].child_index,
        wider_id.0,
        "and the parent knows"
    );
    insert(&client, &top, &[row(1, None)]).unwrap();
    insert(&client, &middle, &[row(10, Some(1)), row(11, Some(1))]).unwrap();
    assert_eq!(
        code(insert(&client, &middle, &[row(12, Some(9))])),
        NO_PARENT_ROW
    );
    delete(&client, &top, &[1]).unwrap();
    assert_eq!(
        parent_of(&client, &middle, 10),
        None,
        "cascaded through the new index"
    );
    assert_eq!(parent_of(&client, &middle, 11), None);
    assert!(client.drop_index(&middle, "by_parent_note").is_err());
}

#[test]
fn a_key_change_follows_the_on_update_rule() {
    let (_datad, client) = node();
    let parents = table(&client, "parents");
    let children = table(&client, "children");
    // ON DELETE CASCADE, ON UPDATE RESTRICT: moving the parent's key must not delete.
    let children = references(&client, &children, &parents, ReferenceAction::Cascade);
    insert(&client, &parents, &[row(1, None)]).unwrap();
    insert(&client, &children, &[row(10, Some(1))]).unwrap();
    assert_eq!(
        code(move_key(&client, &parents, (1, 2), None)),
        ROW_REFERENCED
    );
    assert_eq!(parent_of(&client, &children, 10), Some(Value::Int(1)));
}

#[test]
fn on_update_cascade_gives_the_children_and_theirs_the_new_key() {
    let (_datad, client) = node();
    let top = table(&client, "top");
    let middle = table(&client, "middle");
    let bottom = table(&client, "bottom");
    let cascade = (ReferenceAction::Restrict, ReferenceAction::Cascade);
    let middle = references_with(&client, &middle, &top, cascade);
    let bottom = references_with(&client, &bottom, &middle, cascade);
    insert(&client, &top, &[row(1, None), row(2, None)]).unwrap();
    insert(
        &client,
        &middle,
        &[row(10, Some(1)), row(11, Some(1)), row(12, Some(2))],
    )
    .unwrap();
    insert(&client, &bottom, &[row(100, Some(10)), row(101, Some(12))]).unwrap();

    move_key(&client, &top, (1, 5), None).unwrap();
    assert_eq!(parent_of(&client, &middle, 10), Some(Value::Int(5)));
    assert_eq!(parent_of(&client, &middle, 11), Some(Value::Int(5)));
    assert_eq!(
        parent_of(&client, &middle, 12),
        Some(Value::Int(2)),
        "another parent's"
    );

    move_key(&client, &middle, (10, 20), Some(5)).unwrap();
    assert_eq!(
        parent_of(&client, &bottom, 100),
        Some(Value::Int(20)),
        "a grandchild"
    );
    assert_eq!(parent_of(&client, &bottom, 101), Some(Value::Int(12)));
    assert_eq!(
        code(insert(&client, &bottom, &[row(102, Some(10))])),
        NO_PARENT_ROW,
        "the old key is gone"
    );
}

#[test]
fn on_update_cascade_moves_a_child_whose_primary_key_holds_the_reference() {
    let (_datad, client) = node();
    let users = table(&client, "users");
    // memberships(parent BIGINT, id BIGINT, note, PRIMARY KEY (parent, id)): a join table.
    let memberships = client
        .create_table(
            TableSchema {
                extra_metadata: Vec::new(),
                name: "memberships".into(),
                columns: vec![
                    Column::new("id", ColumnType::signed(8)),
                    Column::new("parent", ColumnType::signed(8)),
                    Column::new("note", ColumnType::varchar(20)).nullable(),
                ],
                primary_key: vec![1, 0],
            },
            vec![IndexSchema {
                name: "by_parent".into(),
                kind: IndexKind::Ordered,
                columns: vec![1, 0],
            }],
        )
        .unwrap();
    let cascade = (ReferenceAction::Cascade, ReferenceAction::Cascade);
    let memberships = references_with(&client, &memberships, &users, cascade);
    insert(&client, &users, &[row(1, None), row(2, None)]).unwrap();
    let membership = |id: i64, user: i64, note: &str| {
        vec![
            Value::Int(id),
            Value::Int(user),
            Value::Bytes(note.as_bytes().to_vec()),
        ]
    };
    let rows = [
        membership(7, 1, "a"),
        membership(8, 1, "b"),
        membership(7, 2, "c"),
    ];
    insert(&client, &memberships, &rows).unwrap();

    move_key(&client, &users, (1, 5), None).unwrap();
    let read = |user: i64, id: i64| {
        let mut read = client.transaction();
        let key = [Value::Int(user), Value::Int(id)];
        let op = read.read(&memberships, &key, LockKind::Committed).unwrap();
        let done = read.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
        done.row(op).map(|row| row[2].clone())
    };
    let note = |text: &str| Some(Value::Bytes(text.as_bytes().to_vec()));
    assert_eq!(
        (read(5, 7), read(5, 8)),
        (note("a"), note("b")),
        "moved, whole"
    );
    assert_eq!(
        (read(1, 7), read(1, 8)),
        (None, None),
        "gone from the old key"
    );
    assert_eq!(read(2, 7), note("c"), "another parent's");
    delete(&client, &users, &[5]).unwrap();
    assert_eq!(
        (read(5, 7), read(5, 8)),
        (None, None),
        "deleted with their parent"
    );
}

#[test]
fn on_update_set_null_clears_the_references_and_keeps_the_rows() {
    let (_datad, client) = node();
    let parents = table(&client, "parents");
    let children = table(&client, "children");
    let set_null = (ReferenceAction::Cascade, ReferenceAction::SetNull);
    let children = references_with(&client, &children, &parents, set_null);
    insert(&client, &parents, &[row(1, None)]).unwrap();
    insert(&client, &children, &[row(10, Some(1))]).unwrap();
    move_key(&client, &parents, (1, 2), None).unwrap();
    assert_eq!(parent_of(&client, &children, 10), Some(Value::Null));
}

#[test]
fn a_chain_of_cascades_deeper_than_fifteen_fails_whole() {
    let (_datad, client) = node();
    let cascade = (ReferenceAction::Cascade, ReferenceAction::Cascade);
    // t0 <- t1 <- ... <- t16, each row 1 referencing its parent's row 1.
    let mut tables = vec![table(&client, "t0")];
    for depth in 1..=16 {
        let child = table(&client, &format!("t{depth}"));
        let child = references_with(&client, &child, &tables[depth - 1], cascade);
        tables.push(child);
    }
    insert(&client, &tables[0], &[row(1, None)]).unwrap();
    for child in &tables[1..] {
        insert(&client, child, &[row(1, Some(1))]).unwrap();
    }
    assert_eq!(code(delete(&client, &tables[0], &[1])), CASCADE_TOO_DEEP);
    assert_eq!(
        parent_of(&client, &tables[0], 1),
        Some(Value::Null),
        "nothing changed"
    );
    assert_eq!(parent_of(&client, &tables[16], 1), Some(Value::Int(1)));

    // Fifteen generations below the write are allowed: t1's row starts the chain.
    delete(&client, &tables[1], &[1]).unwrap();
    assert_eq!(
        parent_of(&client, &tables[16], 1),
        None,
        "deleted down the chain"
    );
    assert_eq!(parent_of(&client, &tables[0], 1), Some(Value::Null));
}

#[test]
fn writes_with_checks_off_neither_check_nor_act() {
    let (_datad, client) = node();
    let parents = table(&client, "parents");
    let children = table(&client, "children");
    let children = references(&client, &children, &parents, ReferenceAction::Cascade);
    let unchecked = |build: &dyn Fn(&mut kista_client::Transaction<'_>)| {
        commit(&client, |tx| {
            tx.set_foreign_key_checks(false);
            build(tx);
        })
    };
    unchecked(&|tx| {
        tx.insert(&children, row(10, Some(1))).unwrap();
    })
    .expect("a load may write children before their parents");
    insert(&client, &parents, &[row(1, None)]).unwrap();
    unchecked(&|tx| {
        tx.delete(&parents, &[Value::Int(1)]).unwrap();
    })
    .unwrap();
    assert_eq!(
        parent_of(&client, &children, 10),
        Some(Value::Int(1)),
        "no cascade"
    );
}

#[test]
fn a_unique_key_may_be_referenced() {
    let (_datad, client) = node();
    let parents = table(&client, "parents");
    let parents = client
        .create_index(
            &parents,
            IndexSchema {
                name: "by_note".into(),
                kind: IndexKind::Unique,
                columns: vec![2],
            },
        )
        .unwrap();
    let children = client
        .create_table(
            TableSchema {
                extra_metadata: Vec::new(),
                name: "children".into(),
                columns: vec![
                    Column::new("id", ColumnType::signed(8)),
                    Column::new("note", ColumnType::varchar(40)).nullable(),
                ],
                primary_key: vec![0],
            },
            vec![IndexSchema {
                name: "by_note".into(),
                kind: IndexKind::Ordered,
                columns: vec![1],
            }],
        )
        .unwrap();
    let spec = ForeignKeySpec {
        name: "children_note".into(),
        columns: vec![1],
        parent_index: Some("by_note".into()),
        on_delete: ReferenceAction::Restrict,
        on_update: ReferenceAction::NoAction,
    };
    let children = client.add_foreign_key(&children, &parents, spec).unwrap();
    let note = |text: &str| Value::Bytes(text.as_bytes().to_vec());
    insert(
        &client,
        &parents,
        &[vec![Value::Int(1), Value::Null, note("a")]],
    )
    .unwrap();
    let child = |text: &str| vec![Value::Int(10), note(text)];
    assert_eq!(
        code(insert(&client, &children, &[child("b")])),
        NO_PARENT_ROW
    );
    insert(&client, &children, &[child("a")]).unwrap();
    let renamed = commit(&client, |tx| {
        tx.update(&parents, &[Value::Int(1)], vec![(2, note("c"))])
            .unwrap();
    });
    assert_eq!(
        code(renamed),
        ROW_REFERENCED,
        "the referenced key may not change"
    );
    let moved = commit(&client, |tx| {
        let new_row = vec![Value::Int(2), Value::Null, note("a")];
        tx.delete_moving_key(&parents, &[Value::Int(1)], &new_row)
            .unwrap();
        tx.insert(&parents, new_row).unwrap();
    });
    moved.expect("a change of the primary key that keeps the referenced key");
}

#[test]
fn the_dictionary_refuses_what_would_break_a_foreign_key() {
    let (_datad, client) = node();
    let parents = table(&client, "parents");
    let children = table(&client, "children");
    let bad_type = ForeignKeySpec {
        name: "bad".into(),
        columns: vec![2],
        parent_index: None,
        on_delete: ReferenceAction::Restrict,
        on_update: ReferenceAction::Restrict,
    };
    let refused = client.add_foreign_key(&children, &parents, bad_type);
    assert!(refused.is_err(), "a VARCHAR cannot reference a BIGINT");
    let children = references(&client, &children, &parents, ReferenceAction::Restrict);
    let parents = client.open_table("parents").unwrap();
    assert_eq!(
        parents.foreign_keys().len(),
        1,
        "the parent knows its child"
    );
    assert!(
        client.drop_table(&parents).is_err(),
        "a referenced table stays"
    );
    assert!(
        client.drop_index(&children, "by_parent").is_err(),
        "the index that finds the children stays"
    );
    let children = client
        .drop_foreign_key(&children, "children_parent")
        .unwrap();
    assert!(children.foreign_keys().is_empty());
    insert(&client, &children, &[row(1, Some(99))]).expect("no key, no check");
    let children = references(&client, &children, &parents, ReferenceAction::Restrict);
    client.drop_table(&children).unwrap();
    let parents = client.open_table("parents").unwrap();
    assert!(
        parents.foreign_keys().is_empty(),
        "a dropped child leaves its parent"
    );
    client.drop_table(&parents).unwrap();
}
