//! Scans and committed-read routing through the real blocks in the deterministic
//! simulation: filters, projections, limits, ordered ranges, isolation, closing, errors,
//! and reads placed on `ldm`, `query` or the coordinator itself.

mod support;

use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_datanode::router::ReadPolicy;
use kista_signal::{BlockAddress, NodeId};
use kista_storage::filter::{CompareOp, Filter};
use kista_storage::partition::{IndexBound, IndexId, ScanRange};
use kista_storage::schema::{Column, IndexKind, IndexSchema, TableSchema};
use kista_storage::types::{ColumnType, Value};
use support::{primary_key, Node, Op, ScanSpec};

use ExecuteMode::{Commit, NoCommit};

const PEOPLE: u64 = 300;
const BY_AGE: u32 = 1;

fn people() -> TableSchema {
    let int = ColumnType::Int {
        bytes: 8,
        signed: true,
    };
    TableSchema {
        extra_metadata: Vec::new(),
        name: "people".into(),
        columns: vec![
            Column::new("id", int),
            Column::new("name", ColumnType::varchar(20)).nullable(),
            Column::new("age", int),
        ],
        primary_key: vec![0],
    }
}

fn person(id: i64) -> Vec<Value> {
    // Every seventh person has no name; ages repeat so the index has duplicates.
    let name = if id % 7 == 0 {
        Value::Null
    } else {
        Value::Bytes(format!("{}-{id}", ["ann", "bob", "cy"][id as usize % 3]).into_bytes())
    };
    vec![Value::Int(id), name, Value::Int(id % 90)]
}

fn write(kind: OperationKind, values: Vec<Value>) -> Op {
    Op {
        kind,
        lock: LockKind::Exclusive,
        index_id: PRIMARY_KEY,
        body: KeyBody {
            key: primary_key(&people(), &values[..1]),
            columns: vec![],
            values,
        },
    }
}

fn committed_read(id: i64) -> Op {
    Op {
        kind: OperationKind::Read,
        lock: LockKind::Committed,
        index_id: PRIMARY_KEY,
        body: KeyBody {
            key: primary_key(&people(), &[Value::Int(id)]),
            columns: vec![],
            values: vec![],
        },
    }
}

/// A node whose `people` table (ordered index on age) holds [`PEOPLE`] committed rows.
fn node_with_people(settings: NodeSettings) -> (Node, (u32, u32)) {
    let mut node = Node::start(settings, 64 << 20, 11);
    let by_age = IndexSchema {
        name: "by_age".into(),
        kind: IndexKind::Ordered,
        columns: vec![2],
    };
    let definition = TableDefinitionBody::new(people(), vec![(BY_AGE, by_age)]);
    let table = node
        .create_table(&definition)
        .expect("the table is created");
    for chunk in (0..PEOPLE as i64).collect::<Vec<_>>().chunks(50) {
        let ops = chunk
            .iter()
            .map(|&id| write(OperationKind::Insert, person(id)))
            .collect();
        let done = node.execute(chunk[0] as u64 + 1000, table, ops, Commit);
        assert_eq!(
            done.outcome,
            TransactionOutcome::Committed,
            "{}",
            done.message
        );
    }
    (node, table)
}

fn settings() -> NodeSettings {
    let mut settings = NodeSettings::new(NodeId(1));
    settings.ldm_instances = 2;
    settings.partitions_per_node = 4;
    settings
}

fn full(filter: Option<Filter>, columns: Vec<u16>) -> ScanBody {
    ScanBody {
        range: ScanRange::Full,
        filter,
        columns,
        versions: kista_storage::partition::ScanVersions::Committed,
    }
}

fn spec(table: (u32, u32), body: ScanBody) -> ScanSpec {
    ScanSpec {
        table,
        body,
        limit: u64::MAX,
        batch_rows: 16,
        ordered: false,
    }
}

fn sorted(mut rows: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    rows.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    rows
}

#[test]
fn a_full_scan_returns_every_committed_row_once_over_all_partitions() {
    let (mut node, table) = node_with_people(settings());
    let scanned = node.scan(1, &spec(table, full(None, vec![])), None);
    assert_eq!(scanned.code, 0, "{}", scanned.message);
    assert_eq!(scanned.by_partition.len(), 4, "every partition holds rows");
    let expected: Vec<_> = (0..PEOPLE as i64).map(person).collect();
    assert_eq!(sorted(scanned.rows()), sorted(expected));
    assert!(scanned.rounds > 1, "batches of 16 rows take several rounds");
    let mut done = scanned.partitions_done.clone();
    done.sort_unstable();
    assert_eq!(
        done,
        vec![0, 1, 2, 3],
        "each partition says once that it is done"
    );
    assert!(node.inbox_is_empty(), "no row arrives after the last round");
}

#[test]
fn a_partition_without_matching_rows_still_says_it_is_done() {
    let (mut node, table) = node_with_people(settings());
    let nobody = Filter::Compare {
        column: 2,
        op: CompareOp::Lt,
        value: Value::Int(-1),
    };
    let scanned = node.scan(3, &spec(table, full(Some(nobody), vec![])), None);
    assert_eq!(scanned.code, 0, "{}", scanned.message);
    assert!(scanned.rows().is_empty());
    assert_eq!(scanned.partitions_done.len(), 4);
    assert!(node.inbox_is_empty());
}

#[test]
fn a_filtered_projected_scan_returns_exactly_the_matching_rows() {
    let (mut node, table) = node_with_people(settings());
    // age >= 30 AND (name LIKE 'b%' OR name IS NULL), returning (age, id).
    let filter = Filter::And(vec![
        Filter::Compare {
            column: 2,
            op: CompareOp::Ge,
            value: Value::Int(30),
        },
        Filter::Or(vec![
            Filter::Like {
                column: 1,
                pattern: b"b%".to_vec(),
            },
            Filter::IsNull(1),
        ]),
    ]);
    let scanned = node.scan(2, &spec(table, full(Some(filter), vec![2, 0])), None);
    assert_eq!(scanned.code, 0, "{}", scanned.message);
    let expected: Vec<_> = (0..PEOPLE as i64)
        .map(person)
        .filter(|p| {
            let old = matches!(p[2], Value::Int(age) if age >= 30);
            let name_matches = match &p[1] {
                Value::Null => true,
                Value::Bytes(name) => name.starts_with(b"b"),
                _ => false,
            };
            old && name_matches
        })
        .map(|p| vec![p[2].clone(), p[0].clone()])
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(sorted(scanned.rows()), sorted(expected));
}

#[test]
fn an_ordered_range_scan_delivers_each_partition_in_index_order_and_merges_to_the_limit() {
    let (mut node, table) = node_with_people(settings());
    let body = ScanBody {
        range: ScanRange::Index {
            index: IndexId(BY_AGE),
            lower: Some(IndexBound {
                values: vec![Value::Int(10)],
                inclusive: false,
            }),
            upper: Some(IndexBound {
                values: vec![Value::Int(50)],
                inclusive: true,
            }),
            descending: true,
        },
        filter: None,
        columns: vec![2, 0],
        versions: kista_storage::partition::ScanVersions::Committed,
    };
    let limit = 25;
    let spec = ScanSpec {
        limit,
        batch_rows: 4,
        ordered: true,
        ..spec(table, body)
    };
    let scanned = node.scan(3, &spec, None);
    assert_eq!(scanned.code, 0, "{}", scanned.message);
    let key = |row: &Vec<Value>| match (&row[0], &row[1]) {
        (Value::Int(age), Value::Int(id)) => (*age, *id),
        other => panic!("unexpected row {other:?}"),
    };
    for rows in scanned.by_partition.values() {
        let ages: Vec<i64> = rows.iter().map(|r| key(r).0).collect();
        assert!(
            ages.windows(2).all(|w| w[0] >= w[1]),
            "descending: {ages:?}"
        );
        assert!(
            rows.len() as u64 <= limit,
            "no partition sends past the limit"
        );
    }
    // The client's merge: the first `limit` ages of all partitions, highest first.
    let mut merged: Vec<i64> = scanned.rows().iter().map(|r| key(r).0).collect();
    merged.sort_unstable_by(|a, b| b.cmp(a));
    merged.truncate(limit as usize);
    let mut expected: Vec<i64> = (0..PEOPLE as i64)
        .map(|id| id % 90)
        .filter(|&age| age > 10 && age <= 50)
        .collect();
    expected.sort_unstable_by(|a, b| b.cmp(a));
    expected.truncate(limit as usize);
    assert_eq!(merged, expected);
}

#[test]
fn an_unordered_limit_stops_the_scan_once_enough_rows_were_sent() {
    let (mut node, table) = node_with_people(settings());
    let spec = ScanSpec {
        limit: 10,
        batch_rows: 100,
        ..spec(table, full(None, vec![0]))
    };
    let scanned = node.scan(4, &spec, None);
    assert_eq!(scanned.code, 0, "{}", scanned.message);
    assert_eq!(scanned.rounds, 1);
    let rows = scanned.rows().len();
    assert!(
        (10..=40).contains(&rows),
        "{rows} rows: at most 10 per partition"
    );
}

#[test]
fn a_scan_sees_committed_versions_only() {
    let (mut node, table) = node_with_people(settings());
    let mut changed = person(5);
    changed[2] = Value::Int(1000);
    let pending = vec![
        write(OperationKind::Write, changed.clone()),
        write(OperationKind::Insert, person(5000)),
    ];
    let open = node.execute(77, table, pending, NoCommit);
    assert_eq!(open.outcome, TransactionOutcome::Open, "{}", open.message);

    let adults = || {
        Some(Filter::Compare {
            column: 2,
            op: CompareOp::Ge,
            value: Value::Int(0),
        })
    };
    let before = node.scan(5, &spec(table, full(adults(), vec![])), None);
    assert_eq!(before.rows().len() as u64, PEOPLE);
    assert!(
        before.rows().contains(&person(5)),
        "the committed version is seen"
    );
    assert!(
        !before.rows().contains(&person(5000)),
        "the pending insert is not"
    );

    let done = node.execute(77, table, vec![], Commit);
    assert_eq!(done.outcome, TransactionOutcome::Committed);
    let after = node.scan(6, &spec(table, full(adults(), vec![])), None);
    assert_eq!(after.rows().len() as u64, PEOPLE + 1);
    assert!(after.rows().contains(&changed));
    assert!(after.rows().contains(&person(5000)));
}

#[test]
fn closing_a_scan_after_one_round_ends_it_without_more_rows() {
    let (mut node, table) = node_with_people(settings());
    let spec = ScanSpec {
        batch_rows: 5,
        ..spec(table, full(None, vec![0]))
    };
    let scanned = node.scan(7, &spec, Some(1));
    assert_eq!(scanned.code, 0);
    assert_eq!(scanned.rounds, 2, "the first round, then the close");
    assert_eq!(
        scanned.rows().len(),
        20,
        "one batch of 5 from each of 4 partitions"
    );
    assert!(node.inbox_is_empty());
    // The scan id is free again: the same client scan id opens a new scan.
    let again = node.scan(7, &spec, Some(1));
    assert_eq!(again.code, 0, "{}", again.message);
}

#[test]
fn bad_scans_fail_with_a_clear_error() {
    let (mut node, table) = node_with_people(settings());
    let unknown_table = node.scan(8, &spec((99, 1), full(None, vec![])), None);
    assert_eq!(unknown_table.code, ErrorCode::NoSuchTable as u32);

    let old_version = node.scan(9, &spec((table.0, table.1 + 1), full(None, vec![])), None);
    assert_eq!(old_version.code, ErrorCode::SchemaVersion as u32);
    assert!(
        old_version.message.contains("schema version"),
        "{}",
        old_version.message
    );

    let bad_filter = Filter::Like {
        column: 2,
        pattern: b"1%".to_vec(),
    };
    let scanned = node.scan(10, &spec(table, full(Some(bad_filter), vec![])), None);
    assert_eq!(scanned.code, ErrorCode::BadRequest as u32);
    assert!(scanned.message.contains("LIKE"), "{}", scanned.message);

    let no_column = node.scan(11, &spec(table, full(None, vec![7])), None);
    assert_eq!(no_column.code, ErrorCode::BadRequest as u32);

    let not_ordered = ScanBody {
        range: ScanRange::Index {
            index: IndexId(42),
            lower: None,
            upper: None,
            descending: false,
        },
        filter: None,
        columns: vec![],
        versions: kista_storage::partition::ScanVersions::Committed,
    };
    // An index the table lacks was dropped since the client's definition was made: the
    // table changed (241), so the client opens it again.
    let scanned = node.scan(12, &spec(table, not_ordered), None);
    assert_eq!(
        scanned.code,
        ErrorCode::SchemaVersion as u32,
        "{}",
        scanned.message
    );
    assert!(node.inbox_is_empty(), "failed scans send no rows");
}

fn senders_of_reads(node: &mut Node, table: (u32, u32), client_tx: u64) -> Vec<BlockAddress> {
    let reads = (0..8).map(committed_read).collect();
    let done = node.execute(client_tx, table, reads, Commit);
    assert_eq!(
        done.outcome,
        TransactionOutcome::Committed,
        "{}",
        done.message
    );
    let expected: Vec<_> = (0..8).map(|id| (id as u32, person(id))).collect();
    assert_eq!(
        done.rows, expected,
        "every read returns its whole committed row"
    );
    done.row_senders
}

fn routed(policy: ReadPolicy) -> (Node, (u32, u32)) {
    let mut settings = settings();
    settings.query_instances = 2;
    settings.read_policy = policy;
    node_with_people(settings)
}

#[test]
fn forced_policies_run_committed_reads_where_they_say() {
    let kind_of = |senders: Vec<BlockAddress>| {
        let mut blocks: Vec<_> = senders.iter().map(|a| a.block()).collect();
        blocks.dedup();
        blocks
    };
    let (mut node, table) = routed(ReadPolicy::Owner);
    assert_eq!(kind_of(senders_of_reads(&mut node, table, 1)), [LDM_BLOCK]);

    let (mut node, table) = routed(ReadPolicy::Query);
    let senders = senders_of_reads(&mut node, table, 1);
    assert_eq!(kind_of(senders.clone()), [QUERY_BLOCK]);
    assert!(senders.iter().any(|s| s.instance() == 0) && senders.iter().any(|s| s.instance() == 1));
    let scanned = node.scan(1, &spec(table, full(None, vec![])), None);
    assert_eq!(scanned.rows().len() as u64, PEOPLE);
    assert_eq!(kind_of(scanned.senders), [QUERY_BLOCK]);

    let (mut node, table) = routed(ReadPolicy::Receiver);
    assert_eq!(kind_of(senders_of_reads(&mut node, table, 1)), [TC_BLOCK]);
}

#[test]
fn adaptive_routing_moves_reads_off_busy_data_managers_and_back() {
    let (mut node, table) = routed(ReadPolicy::Adaptive);
    let ldms: Vec<_> = node.settings.ldm_addresses().collect();
    let queries: Vec<_> = node.settings.query_addresses().collect();
    let tc = node.settings.tc_addresses().next().unwrap();
    let on = |senders: &[BlockAddress], block| senders.iter().all(|s| s.block() == block);

    assert!(
        on(&senders_of_reads(&mut node, table, 1), LDM_BLOCK),
        "idle owners keep their reads"
    );

    let mut busy: Vec<_> = ldms.iter().map(|&l| (l, 5)).collect();
    busy.extend(queries.iter().map(|&q| (q, 1)));
    busy.push((tc, 4));
    node.report_load(&busy);
    assert!(on(&senders_of_reads(&mut node, table, 2), QUERY_BLOCK));

    let mut queries_busy: Vec<_> = queries.iter().map(|&q| (q, 5)).collect();
    queries_busy.push((tc, 1));
    node.report_load(&queries_busy);
    assert!(on(&senders_of_reads(&mut node, table, 3), TC_BLOCK));

    let calm: Vec<_> = ldms.iter().map(|&l| (l, 1)).collect();
    node.report_load(&calm);
    assert!(on(&senders_of_reads(&mut node, table, 4), LDM_BLOCK));
}

#[test]
fn a_lone_committed_read_that_commits_is_answered_at_once_wherever_the_router_puts_it() {
    // Run in the coordinator: found, missing, and refused for a stale schema version.
    let (mut node, table) = routed(ReadPolicy::Receiver);
    let found = node.execute(1, table, vec![committed_read(3)], Commit);
    assert_eq!(found.outcome, TransactionOutcome::Committed);
    assert_eq!(found.rows, vec![(0, person(3))]);
    assert_eq!(found.row_senders[0].block(), TC_BLOCK);

    let missing = node.execute(2, table, vec![committed_read(PEOPLE as i64 + 5)], Commit);
    assert_eq!(missing.outcome, TransactionOutcome::Committed);
    assert!(missing.rows.is_empty(), "a missing row is no failure");

    let stale = (table.0, table.1 + 1);
    let refused = node.execute(3, stale, vec![committed_read(3)], Commit);
    assert_eq!(refused.outcome, TransactionOutcome::Aborted);
    assert_eq!(refused.code, ErrorCode::SchemaVersion as u32);
    assert!(
        refused.message.contains("schema version"),
        "{}",
        refused.message
    );

    // The same client transaction id may start again: nothing of the first one stayed.
    let again = node.execute(1, table, vec![committed_read(4)], Commit);
    assert_eq!(again.rows, vec![(0, person(4))]);

    // Placed on an executor instead, the read still gets its answer.
    let (mut node, table) = routed(ReadPolicy::Adaptive);
    let busy: Vec<_> = node.settings.ldm_addresses().map(|l| (l, 5)).collect();
    node.report_load(&busy);
    let elsewhere = node.execute(1, table, vec![committed_read(5)], Commit);
    assert_eq!(elsewhere.rows, vec![(0, person(5))]);
    assert_eq!(elsewhere.row_senders[0].block(), QUERY_BLOCK);
}

#[test]
fn committed_reads_in_a_longer_transaction_run_in_the_coordinator_and_count_in_its_batch() {
    let mut few_operations = settings();
    few_operations.query_instances = 2;
    few_operations.read_policy = ReadPolicy::Receiver;
    // The loading transactions have 50 operations each.
    few_operations.operations_per_transaction_max = 50;
    let (mut node, table) = node_with_people(few_operations);
    let renamed = |id: i64| {
        let mut values = person(id);
        values[1] = Value::Bytes(b"renamed".to_vec());
        values
    };

    // Reads answered at once next to a write that runs on its data manager: they see the
    // committed row, not the transaction's own change, and a missing row is no failure.
    let missing = PEOPLE as i64 + 5;
    let first = node.execute(
        7,
        table,
        vec![
            committed_read(1),
            committed_read(missing),
            write(OperationKind::Write, renamed(2)),
        ],
        NoCommit,
    );
    assert_eq!(first.outcome, TransactionOutcome::Open, "{}", first.message);
    assert_eq!(first.rows, vec![(0, person(1))]);
    assert_eq!(first.row_senders[0].block(), TC_BLOCK);

    let second = node.execute(7, table, vec![committed_read(2)], Commit);
    assert_eq!(
        second.outcome,
        TransactionOutcome::Committed,
        "{}",
        second.message
    );
    assert_eq!(
        second.rows,
        vec![(0, person(2))],
        "the change is not committed yet"
    );
    let after = node.execute(8, table, vec![committed_read(2)], Commit);
    assert_eq!(after.rows, vec![(0, renamed(2))]);

    // A read refused here (a stale schema version) aborts the whole transaction.
    let stale = (table.0, table.1 + 1);
    node.execute(
        9,
        table,
        vec![write(OperationKind::Write, renamed(3))],
        NoCommit,
    );
    let refused = node.execute(9, stale, vec![committed_read(4)], Commit);
    assert_eq!(
        (refused.outcome, refused.code),
        (TransactionOutcome::Aborted, ErrorCode::SchemaVersion as u32),
        "{}",
        refused.message
    );
    let unchanged = node.execute(10, table, vec![committed_read(3)], Commit);
    assert_eq!(
        unchanged.rows,
        vec![(0, person(3))],
        "the write was rolled back"
    );

    // Reads answered here count towards the operations a transaction may have.
    let reads = (20..71).map(committed_read).collect();
    let too_many = node.execute(11, table, reads, Commit);
    assert_eq!(
        (too_many.outcome, too_many.code),
        (TransactionOutcome::Aborted, ErrorCode::TooManyLocks as u32),
        "{}",
        too_many.message
    );
    let again = node.execute(11, table, vec![committed_read(20)], Commit);
    assert_eq!(
        again.rows,
        vec![(0, person(20))],
        "the aborted record was released"
    );
}
