//! Scans, unique-index reads and schema changes through the native client against a real
//! `kista datad --standalone` with several partitions: every answer is checked against a
//! model of the rows.

mod support;

use std::cmp::Reverse;

use kista_client::filter::{CompareOp, Filter};
use kista_client::schema::{Column, IndexKind, IndexSchema, TableSchema};
use kista_client::types::{ColumnType, Value};
use kista_client::{Client, ExecuteMode, IndexBound, LockKind, ScanSpec, Table};
use support::Datad;

const PEOPLE: i64 = 600;

/// id, name (nullable), age, email (unique), city.
fn people_schema() -> TableSchema {
    let mut name = Column::new("name", ColumnType::varchar(32));
    name.nullable = true;
    TableSchema {
        extra_metadata: Vec::new(),
        name: "people".into(),
        columns: vec![
            Column::new("id", ColumnType::signed(8)),
            name,
            Column::new("age", ColumnType::signed(4)),
            Column::new("email", ColumnType::varchar(64)),
            Column::new("city", ColumnType::signed(4)),
        ],
        primary_key: vec![0],
    }
}

fn person(id: i64) -> Vec<Value> {
    let name = if id % 7 == 0 {
        Value::Null
    } else {
        Value::Bytes(format!("{}-{id}", ["ada", "bob", "cy"][id as usize % 3]).into_bytes())
    };
    vec![
        Value::Int(id),
        name,
        Value::Int((id * 37) % 90),
        Value::Bytes(format!("p{id}@example.com").into_bytes()),
        Value::Int(id % 5),
    ]
}

fn age(row: &[Value]) -> i64 {
    match row[2] {
        Value::Int(age) => age,
        ref other => panic!("age is an integer, got {other:?}"),
    }
}

/// A node with 4 partitions over 2 ldm threads, holding the people table.
fn node_with_people() -> (Datad, Client, Table) {
    let datad = Datad::start(&[
        "--partitions",
        "4",
        "--thread-config",
        "ldm={count=2},query={count=1},tc={count=1},recv={count=1}",
    ]);
    let client = Client::connect(datad.address, None).unwrap();
    let indexes = vec![
        IndexSchema {
            name: "by_age".into(),
            kind: IndexKind::Ordered,
            columns: vec![2],
        },
        IndexSchema {
            name: "by_email".into(),
            kind: IndexKind::Unique,
            columns: vec![3],
        },
    ];
    let table = client.create_table(people_schema(), indexes).unwrap();
    for chunk in (0..PEOPLE).collect::<Vec<_>>().chunks(100) {
        let mut insert = client.transaction();
        for &id in chunk {
            insert.insert(&table, person(id)).unwrap();
        }
        insert.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    }
    (datad, client, table)
}

fn sorted(mut rows: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    rows.sort_by_key(|row| format!("{row:?}"));
    rows
}

fn all(
    scan: impl Iterator<Item = Result<Vec<Value>, kista_client::ClientError>>,
) -> Vec<Vec<Value>> {
    scan.collect::<Result<_, _>>().unwrap()
}

#[test]
fn scans_return_exactly_the_rows_a_model_returns_filtered_projected_and_ordered() {
    let (_datad, client, table) = node_with_people();
    let everyone: Vec<_> = (0..PEOPLE).map(person).collect();

    let full = all(client.scan(&table, ScanSpec::full().batch_rows(7)).unwrap());
    assert_eq!(sorted(full), sorted(everyone.clone()));

    // age < 30 AND NOT name IS NULL, returning (email, id).
    let filter = Filter::And(vec![
        Filter::Compare {
            column: 2,
            op: CompareOp::Lt,
            value: Value::Int(30),
        },
        Filter::Not(Box::new(Filter::IsNull(1))),
    ]);
    let spec = ScanSpec::full().filter(filter).columns(vec![3, 0]);
    let young = all(client.scan(&table, spec).unwrap());
    let expected: Vec<_> = everyone
        .iter()
        .filter(|p| age(p) < 30 && p[1] != Value::Null)
        .map(|p| vec![p[3].clone(), p[0].clone()])
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(sorted(young), sorted(expected));

    // 20 <= age < 60 on the ordered index, merged over partitions, ascending and descending,
    // small batches so the merge crosses many rounds; projected to (id) without the age.
    let bounds = || {
        (
            Some(IndexBound {
                values: vec![Value::Int(20)],
                inclusive: true,
            }),
            Some(IndexBound {
                values: vec![Value::Int(60)],
                inclusive: false,
            }),
        )
    };
    let mut in_range: Vec<_> = everyone
        .iter()
        .filter(|p| (20..60).contains(&age(p)))
        .cloned()
        .collect();
    for descending in [false, true] {
        let (lower, upper) = bounds();
        let spec = ScanSpec::index_range(&table, "by_age", lower, upper, descending)
            .unwrap()
            .batch_rows(5);
        let rows = all(client.scan(&table, spec).unwrap());
        if descending {
            in_range.sort_by_key(|p| Reverse(age(p)));
        } else {
            in_range.sort_by_key(|p| age(p));
        }
        let ages: Vec<_> = rows.iter().map(|r| age(r)).collect();
        let expected_ages: Vec<_> = in_range.iter().map(|r| age(r)).collect();
        assert_eq!(
            ages, expected_ages,
            "index order (descending: {descending})"
        );
        assert_eq!(sorted(rows), sorted(in_range.clone()));

        let (lower, upper) = bounds();
        let spec = ScanSpec::index_range(&table, "by_age", lower, upper, descending)
            .unwrap()
            .columns(vec![0])
            .limit(25)
            .batch_rows(3);
        let first: Vec<_> = all(client.scan(&table, spec).unwrap());
        assert_eq!(first.len(), 25);
        assert!(
            first.iter().all(|row| row.len() == 1),
            "only the id returns"
        );
        let ages_of_first: Vec<_> = first
            .iter()
            .map(|row| match row[0] {
                Value::Int(id) => age(&person(id)),
                _ => panic!("ids are integers"),
            })
            .collect();
        assert_eq!(ages_of_first, expected_ages[..25], "the first 25 in order");
    }
}

#[test]
fn a_scan_dropped_early_is_closed_on_the_node() {
    let (_datad, client, table) = node_with_people();
    // The coordinator holds at most 500 open scans: scans left open would run into 488.
    for _ in 0..700 {
        let mut scan = client.scan(&table, ScanSpec::full().batch_rows(2)).unwrap();
        assert!(scan.next().unwrap().is_ok());
    }
    let rows = all(client.scan(&table, ScanSpec::full()).unwrap());
    assert_eq!(rows.len() as i64, PEOPLE);
}

#[test]
fn unique_index_reads_find_rows_by_their_unique_key() {
    let (_datad, client, table) = node_with_people();
    let mut read = client.transaction();
    let email = |id: i64| vec![Value::Bytes(format!("p{id}@example.com").into_bytes())];
    let found = read
        .read_unique(&table, "by_email", &email(42), LockKind::Committed, vec![])
        .unwrap();
    let projected = read
        .read_unique(&table, "BY_EMAIL", &email(7), LockKind::Shared, vec![0, 1])
        .unwrap();
    let missing = read
        .read_unique(
            &table,
            "by_email",
            &email(PEOPLE + 1),
            LockKind::Committed,
            vec![],
        )
        .unwrap();
    let done = read.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    assert_eq!(done.row(found), Some(&person(42)[..]));
    assert_eq!(done.row(projected), Some(&[Value::Int(7), Value::Null][..]));
    assert_eq!(done.row(missing), None);

    let mut wrong = client.transaction();
    let not_unique = wrong.read_unique(
        &table,
        "by_age",
        &[Value::Int(3)],
        LockKind::Committed,
        vec![],
    );
    assert!(
        not_unique.is_err(),
        "an ordered index cannot serve a unique read"
    );
    let unknown = wrong.read_unique(&table, "by_nothing", &email(1), LockKind::Committed, vec![]);
    assert!(unknown.unwrap_err().to_string().contains("by_nothing"));
}

#[test]
fn a_unique_key_is_refused_twice_across_partitions_and_a_unique_index_is_built_from_the_rows() {
    let (_datad, client, table) = node_with_people();
    // PEOPLE rows over 4 partitions: whatever partition the new row lands in, the key is
    // taken.
    for id in PEOPLE..PEOPLE + 8 {
        let mut row = person(id);
        row[3] = person(5)[3].clone();
        let mut insert = client.transaction();
        insert.insert(&table, row).unwrap();
        let error = insert
            .execute(ExecuteMode::Commit)
            .unwrap()
            .wait()
            .unwrap_err();
        assert_eq!(error.code(), 630, "{error}");
        assert!(error.to_string().contains("by_email"), "{error}");
    }

    // Cities repeat: the build meets a duplicate, fails with 630 and leaves no index.
    let unique_city = IndexSchema {
        name: "unique_city".into(),
        kind: IndexKind::Unique,
        columns: vec![4],
    };
    let error = client.create_index(&table, unique_city).err().unwrap();
    assert_eq!(error.code(), 630, "{error}");
    assert!(error.to_string().contains("unique_city"), "{error}");
    let reopened = client.open_table("people").unwrap();
    assert!(
        reopened.index("unique_city").is_err(),
        "nothing is left behind"
    );

    // Names are unique (or NULL, which has no entry): the index is built from the rows
    // there are, and serves reads and refuses a second row with a name at once.
    let by_name = IndexSchema {
        name: "by_name".into(),
        kind: IndexKind::Unique,
        columns: vec![1],
    };
    let table = client.create_index(&table, by_name.clone()).unwrap();
    for id in [1, 8, PEOPLE - 1] {
        let mut by_key = client.transaction();
        let found = by_key
            .read_unique(
                &table,
                "by_name",
                &person(id)[1..2],
                LockKind::Committed,
                vec![0],
            )
            .unwrap();
        let done = by_key.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
        assert_eq!(done.row(found), Some(&[Value::Int(id)][..]), "person {id}");
    }
    let mut twin = client.transaction();
    let mut row = person(PEOPLE + 100);
    row[1] = person(2)[1].clone();
    twin.insert(&table, row).unwrap();
    let error = twin
        .execute(ExecuteMode::Commit)
        .unwrap()
        .wait()
        .unwrap_err();
    assert_eq!(error.code(), 630, "{error}");
    assert!(error.to_string().contains("by_name"), "{error}");

    let empty = client
        .create_table(
            TableSchema {
                extra_metadata: Vec::new(),
                name: "empty".into(),
                ..people_schema()
            },
            vec![],
        )
        .unwrap();
    let empty = client.create_index(&empty, by_name).unwrap();
    let mut insert = client.transaction();
    insert.insert(&empty, person(1)).unwrap();
    insert.insert(&empty, person(7)).unwrap();
    insert.insert(&empty, person(14)).unwrap();
    insert.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    let mut twin = client.transaction();
    let mut row = person(2);
    row[1] = person(1)[1].clone();
    twin.insert(&empty, row).unwrap();
    let error = twin
        .execute(ExecuteMode::Commit)
        .unwrap()
        .wait()
        .unwrap_err();
    assert_eq!(
        error.code(),
        630,
        "the index made later is enforced: {error}"
    );
    let mut by_key = client.transaction();
    let found = by_key
        .read_unique(
            &empty,
            "by_name",
            &person(1)[1..2],
            LockKind::Committed,
            vec![0],
        )
        .unwrap();
    let done = by_key.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    assert_eq!(done.row(found), Some(&[Value::Int(1)][..]));
    let mut null_key = client.transaction();
    assert!(
        null_key
            .read_unique(
                &empty,
                "by_name",
                &[Value::Null],
                LockKind::Committed,
                vec![]
            )
            .is_err(),
        "no row has a NULL key"
    );
    client.drop_table(&empty).unwrap();
}

#[test]
fn an_index_created_later_serves_scans_and_a_dropped_table_is_gone() {
    let (_datad, client, table) = node_with_people();
    let by_city = IndexSchema {
        name: "by_city".into(),
        kind: IndexKind::Ordered,
        columns: vec![4, 0],
    };
    let indexed = client.create_index(&table, by_city).unwrap();
    assert!(indexed.schema_version > table.schema_version);

    let city = |c: i64| IndexBound {
        values: vec![Value::Int(c)],
        inclusive: true,
    };
    let spec =
        ScanSpec::index_range(&indexed, "by_city", Some(city(3)), Some(city(3)), false).unwrap();
    let ids: Vec<_> = all(client.scan(&indexed, spec).unwrap())
        .into_iter()
        .map(|row| row[0].clone())
        .collect();
    let expected: Vec<_> = (0..PEOPLE)
        .filter(|id| id % 5 == 3)
        .map(Value::Int)
        .collect();
    assert_eq!(
        ids, expected,
        "city 3 in id order (the index's second column)"
    );

    // A new index leaves operations made for the version before valid (nothing they do
    // depends on it); their client hears the table changed. So does dropping it, but for
    // an operation that goes through it: 241, the table changed.
    let mut before = client.transaction();
    let read = before
        .read(&table, &[Value::Int(1)], LockKind::Committed)
        .unwrap();
    let done = before.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    assert_eq!(done.row(read), Some(&person(1)[..]));
    assert!(client.table_changed_since_opened(&table));
    let dropped = client.drop_index(&indexed, "by_city").unwrap();
    let range = ScanSpec::index_range(&indexed, "by_city", None, None, false).unwrap();
    let error = client
        .scan(&indexed, range)
        .unwrap()
        .next()
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code(), 241, "a scan of a dropped index: {error}");
    let indexed = dropped;

    client.drop_table(&indexed).unwrap();
    let error = client
        .scan(&indexed, ScanSpec::full())
        .unwrap()
        .next()
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code(), 723, "{error}");
    let again = client.drop_table(&indexed).unwrap_err();
    assert_eq!(again.code(), 723, "{again}");
}

#[test]
fn a_dropped_index_is_gone_and_its_rows_stay() {
    let (_datad, client, table) = node_with_people();
    let dropped = client.drop_index(&table, "by_email").unwrap();
    let dropped = client.drop_index(&dropped, "by_age").unwrap();
    assert!(dropped.schema_version > table.schema_version);
    assert!(dropped.index("by_age").is_err() && dropped.index("by_email").is_err());
    let found = client.open_table("people").unwrap();
    assert_eq!(found.indexes().count(), 0, "the dictionary forgot both");
    assert_eq!(
        all(client.scan(&dropped, ScanSpec::full()).unwrap()).len(),
        PEOPLE as usize
    );

    // Another row may now carry an e-mail address already in use: no unique index checks it.
    let mut twin = person(PEOPLE + 1);
    twin[3] = person(0)[3].clone();
    let mut insert = client.transaction();
    insert.insert(&dropped, twin).unwrap();
    insert.execute(ExecuteMode::Commit).unwrap().wait().unwrap();

    // The old definition still writes; a read through the index it names is refused.
    let mut stale = client.transaction();
    stale.insert(&table, person(PEOPLE + 2)).unwrap();
    stale.execute(ExecuteMode::Commit).unwrap().wait().unwrap();
    let mut through = client.transaction();
    let email = person(0)[3..4].to_vec();
    through
        .read_unique(&table, "by_email", &email, LockKind::Committed, vec![0])
        .unwrap();
    let refused = through
        .execute(ExecuteMode::Commit)
        .unwrap()
        .wait()
        .unwrap_err();
    assert_eq!(refused.code(), 241, "{refused}");
    assert!(
        client.drop_index(&dropped, "by_age").is_err(),
        "no such index any more"
    );
}
