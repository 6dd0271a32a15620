//! Random transactions against a partition and against a plain model of what it must show:
//! committed rows in maps, each transaction's changes beside them. After every step, scans
//! with random ranges and filters must return exactly the rows the model's committed state
//! selects, in index order, batch after batch. Each commit is a GCI of its own, and what
//! changed after any GCI (rows with their GCIs, deleted keys) must be what the model says.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use proptest::prelude::*;

use super::super::*;
use crate::compare::compare;
use crate::filter::{CompareOp, Filter, FilterProgram, Truth};
use crate::schema::{Column, IndexKind, TableSchema};
use crate::types::{Collation, ColumnType};

const BY_A_S: IndexId = IndexId(1);

/// items(id BIGINT PRIMARY KEY, a INT NULL, s VARCHAR(3) NULL, d DOUBLE), ordered on (a, s).
fn items() -> (Arc<DataMemory>, Partition) {
    let schema = TableSchema {
        extra_metadata: Vec::new(),
        name: "items".into(),
        columns: vec![
            Column::new(
                "id",
                ColumnType::Int {
                    bytes: 8,
                    signed: true,
                },
            ),
            Column::new(
                "a",
                ColumnType::Int {
                    bytes: 4,
                    signed: true,
                },
            )
            .nullable(),
            Column::new("s", ColumnType::varchar(3)).nullable(),
            Column::new("d", ColumnType::Double),
        ],
        primary_key: vec![0],
    };
    schema.validate().unwrap();
    let memory = Arc::new(DataMemory::new(1 << 24));
    let mut partition = Partition::new(
        Arc::new(RowLayout::new(&schema)),
        memory.clone(),
        PartitionLimits::default(),
    );
    let index = IndexSchema {
        name: "by_a_s".into(),
        kind: IndexKind::Ordered,
        columns: vec![1, 2],
    };
    partition.add_index(BY_A_S, index).unwrap();
    (memory, partition)
}

fn a_small_string() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        4 => "[ab]{0,3}".prop_map(|s| Value::Bytes(s.into_bytes())),
    ]
}

fn an_a() -> impl Strategy<Value = Value> {
    prop_oneof![1 => Just(Value::Null), 4 => (0..4i64).prop_map(Value::Int)]
}

fn a_d() -> impl Strategy<Value = Value> {
    (-4..4i32).prop_map(|n| Value::Double(f64::from(n) / 2.0))
}

fn a_row(id: i64) -> impl Strategy<Value = Vec<Value>> {
    (an_a(), a_small_string(), a_d()).prop_map(move |(a, s, d)| vec![Value::Int(id), a, s, d])
}

#[derive(Clone, Debug)]
enum Step {
    Insert(u64, Vec<Value>),
    Write(u64, Vec<Value>),
    Update(u64, i64, Vec<(usize, Value)>),
    Delete(u64, i64),
    Commit(u64),
    Abort(u64),
    Scan(ScanRange, Option<Filter>, usize),
    /// What changed after commit number `.0`, read `.1` rows at a time.
    Changes(u64, usize),
}

fn an_op() -> impl Strategy<Value = CompareOp> {
    prop_oneof![
        Just(CompareOp::Eq),
        Just(CompareOp::Ne),
        Just(CompareOp::Lt),
        Just(CompareOp::Le),
        Just(CompareOp::Gt),
        Just(CompareOp::Ge)
    ]
}

fn a_filter() -> impl Strategy<Value = Filter> {
    let leaf = prop_oneof![
        (an_op(), -2..12i64).prop_map(|(op, n)| Filter::Compare {
            column: 0,
            op,
            value: Value::Int(n)
        }),
        (an_op(), 0..4i64).prop_map(|(op, n)| Filter::Compare {
            column: 1,
            op,
            value: Value::Int(n)
        }),
        (an_op(), "[ab]{0,3}").prop_map(|(op, s)| Filter::Compare {
            column: 2,
            op,
            value: Value::Bytes(s.into_bytes())
        }),
        (an_op(), a_d()).prop_map(|(op, value)| Filter::Compare {
            column: 3,
            op,
            value
        }),
        (1..3usize).prop_map(Filter::IsNull),
        "[ab%_]{0,3}".prop_map(|p| Filter::Like {
            column: 2,
            pattern: p.into_bytes()
        }),
        an_op().prop_map(|op| Filter::CompareColumns {
            left: 0,
            op,
            right: 1
        }),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Filter::And),
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Filter::Or),
            inner.prop_map(|f| Filter::Not(Box::new(f))),
        ]
    })
}

fn a_bound() -> impl Strategy<Value = Option<IndexBound>> {
    let prefix = prop_oneof![
        Just(vec![]),
        an_a().prop_map(|a| vec![a]),
        (an_a(), a_small_string()).prop_map(|(a, s)| vec![a, s]),
    ];
    proptest::option::of(
        (prefix, any::<bool>()).prop_map(|(values, inclusive)| IndexBound { values, inclusive }),
    )
}

fn a_range() -> impl Strategy<Value = ScanRange> {
    prop_oneof![
        Just(ScanRange::Full),
        (a_bound(), a_bound(), any::<bool>()).prop_map(|(lower, upper, descending)| {
            ScanRange::Index {
                index: BY_A_S,
                lower,
                upper,
                descending,
            }
        }),
    ]
}

fn a_step() -> impl Strategy<Value = Step> {
    let tx = 1..4u64;
    let id = 0..10i64;
    prop_oneof![
        4 => (tx.clone(), id.clone()).prop_flat_map(|(t, id)| a_row(id).prop_map(move |row| Step::Insert(t, row))),
        2 => (tx.clone(), id.clone()).prop_flat_map(|(t, id)| a_row(id).prop_map(move |row| Step::Write(t, row))),
        3 => (tx.clone(), id.clone(), an_a(), a_small_string()).prop_map(|(t, id, a, s)| Step::Update(t, id, vec![(1, a), (2, s)])),
        2 => (tx.clone(), id).prop_map(|(t, id)| Step::Delete(t, id)),
        2 => tx.clone().prop_map(Step::Commit),
        1 => tx.prop_map(Step::Abort),
        3 => (a_range(), proptest::option::of(a_filter()), 1..5usize).prop_map(|(r, f, b)| Step::Scan(r, f, b)),
        1 => (0..12u64, 1..5usize).prop_map(|(g, b)| Step::Changes(g, b)),
    ]
}

/// What the partition must show.
#[derive(Default)]
struct Model {
    committed: BTreeMap<i64, Vec<Value>>,
    /// id → (transaction, its version: `None` deleted).
    pending: BTreeMap<i64, (u64, Option<Vec<Value>>)>,
    /// id → the transaction holding its row lock (every lock here is exclusive).
    locks: BTreeMap<i64, u64>,
    /// Commits so far: each commit is GCI `commits`.
    commits: u64,
    /// id → the GCI that wrote its committed row.
    written_in: BTreeMap<i64, u64>,
    /// (id, GCI) of every delete committed (a row inserted and deleted by one
    /// transaction too: a key deleted in vain is harmless).
    deleted: Vec<(i64, u64)>,
}

/// What an operation should do, per the model.
enum Expect {
    Wait,
    NoAnchor,
    /// The transaction holds the lock; here is the version it sees.
    Locked(Option<Vec<Value>>),
}

impl Model {
    fn before_write(&mut self, tx: u64, id: i64) -> Expect {
        match self.locks.get(&id) {
            Some(&holder) if holder != tx => return Expect::Wait,
            _ => {}
        }
        let anchored = self.committed.contains_key(&id)
            || self.pending.contains_key(&id)
            || self.locks.contains_key(&id);
        if !anchored {
            return Expect::NoAnchor;
        }
        self.locks.insert(id, tx);
        Expect::Locked(match self.pending.get(&id) {
            Some((_, version)) => version.clone(),
            None => self.committed.get(&id).cloned(),
        })
    }

    fn finish(&mut self, tx: u64, commit: bool) {
        self.commits += u64::from(commit);
        let gci = self.commits;
        let mine: Vec<i64> = self
            .pending
            .iter()
            .filter(|(_, (t, _))| *t == tx)
            .map(|(id, _)| *id)
            .collect();
        for id in mine {
            let (_, version) = self.pending.remove(&id).unwrap();
            if commit {
                match version {
                    Some(row) => {
                        self.committed.insert(id, row);
                        self.written_in.insert(id, gci);
                    }
                    None => {
                        self.committed.remove(&id);
                        self.written_in.remove(&id);
                        self.deleted.push((id, gci));
                    }
                }
            }
        }
        self.locks.retain(|_, holder| *holder != tx);
    }
}

/// NULL first, then values in `compare` order.
fn order(x: &Value, y: &Value) -> Ordering {
    match (x.is_null(), y.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => compare(x, y).unwrap(),
    }
}

fn in_range(row: &[Value], range: &ScanRange) -> bool {
    let ScanRange::Index { lower, upper, .. } = range else {
        return true;
    };
    let versus = |bound: &IndexBound| {
        let key = [&row[1], &row[2]];
        key.iter()
            .zip(&bound.values)
            .map(|(x, y)| order(x, y))
            .fold(Ordering::Equal, Ordering::then)
    };
    lower
        .as_ref()
        .is_none_or(|b| versus(b).is_gt() || (b.inclusive && versus(b).is_eq()))
        && upper
            .as_ref()
            .is_none_or(|b| versus(b).is_lt() || (b.inclusive && versus(b).is_eq()))
}

/// The filter evaluated on values, independently of the row format.
fn truth(filter: &Filter, row: &[Value]) -> Truth {
    let of = |b: bool| if b { Truth::True } else { Truth::False };
    let compared = |x: &Value, op: CompareOp, y: &Value| match compare(x, y) {
        None => Truth::Unknown,
        Some(o) => of(match op {
            CompareOp::Eq => o.is_eq(),
            CompareOp::Ne => o.is_ne(),
            CompareOp::Lt => o.is_lt(),
            CompareOp::Le => o.is_le(),
            CompareOp::Gt => o.is_gt(),
            CompareOp::Ge => o.is_ge(),
        }),
    };
    match filter {
        Filter::Compare { column, op, value } => compared(&row[*column], *op, value),
        Filter::CompareColumns { left, op, right } => compared(&row[*left], *op, &row[*right]),
        Filter::IsNull(column) => of(row[*column].is_null()),
        Filter::Like { column, pattern } => match &row[*column] {
            Value::Bytes(text) => of(Collation::utf8mb4_0900_bin.like(text, pattern)),
            _ => Truth::Unknown,
        },
        Filter::And(parts) => parts
            .iter()
            .fold(Truth::True, |acc, p| match (acc, truth(p, row)) {
                (Truth::False, _) | (_, Truth::False) => Truth::False,
                (Truth::Unknown, _) | (_, Truth::Unknown) => Truth::Unknown,
                _ => Truth::True,
            }),
        Filter::Or(parts) => parts
            .iter()
            .fold(Truth::False, |acc, p| match (acc, truth(p, row)) {
                (Truth::True, _) | (_, Truth::True) => Truth::True,
                (Truth::Unknown, _) | (_, Truth::Unknown) => Truth::Unknown,
                _ => Truth::False,
            }),
        Filter::Not(inner) => match truth(inner, row) {
            Truth::True => Truth::False,
            Truth::False => Truth::True,
            Truth::Unknown => Truth::Unknown,
        },
    }
}

/// Every batch of a scan, `batch` rows at a time.
fn scan_all(
    partition: &Partition,
    range: &ScanRange,
    filter: Option<&FilterProgram>,
    batch: usize,
) -> Vec<Vec<Value>> {
    let mut rows = Vec::new();
    let mut resume = None;
    loop {
        let mut got = 0;
        let next = partition
            .scan_committed(range, filter, resume.as_ref(), batch, |fixed, var| {
                rows.push(partition.layout().values(fixed, var));
                got += 1;
                true
            })
            .unwrap();
        assert!(got <= batch);
        match next {
            Some(position) => resume = Some(position),
            None => return rows,
        }
    }
}

fn check_write(
    outcome: Result<Outcome<()>, OperationError>,
    expected: Result<(), &str>,
) -> Result<bool, TestCaseError> {
    match (outcome, expected) {
        (Ok(Outcome::Waiting(_)), _) => Ok(true),
        (Ok(Outcome::Done(())), Ok(())) => Ok(false),
        (Err(error), Err("not found"))
            if matches!(error.kind(), OperationErrorKind::NotFound { .. }) =>
        {
            Ok(false)
        }
        (Err(error), Err("duplicate"))
            if matches!(error.kind(), OperationErrorKind::Duplicate { .. }) =>
        {
            Ok(false)
        }
        (got, want) => Err(TestCaseError::fail(format!(
            "got {got:?}, model says {want:?}"
        ))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    #[test]
    fn partitions_show_what_the_model_shows(steps in proptest::collection::vec(a_step(), 1..80)) {
        let (memory, mut partition) = items();
        let mut model = Model::default();
        for step in steps {
            match step {
                Step::Insert(tx, row) => {
                    let id = match row[0] { Value::Int(id) => id, _ => unreachable!() };
                    let expected = match model.before_write(tx, id) {
                        Expect::Wait => None,
                        Expect::Locked(Some(_)) => Some(Err("duplicate")),
                        Expect::NoAnchor | Expect::Locked(None) => {
                            model.locks.insert(id, tx);
                            model.pending.insert(id, (tx, Some(row.clone())));
                            Some(Ok(()))
                        }
                    };
                    let outcome = partition.insert(TransactionId(tx), &row);
                    settle(&mut partition, tx, outcome, expected)?;
                }
                Step::Write(tx, row) => {
                    let id = match row[0] { Value::Int(id) => id, _ => unreachable!() };
                    let expected = match model.before_write(tx, id) {
                        Expect::Wait => None,
                        _ => {
                            model.locks.insert(id, tx);
                            model.pending.insert(id, (tx, Some(row.clone())));
                            Some(Ok(()))
                        }
                    };
                    let outcome = partition.write(TransactionId(tx), &row);
                    settle(&mut partition, tx, outcome, expected)?;
                }
                Step::Update(tx, id, changes) => {
                    let expected = match model.before_write(tx, id) {
                        Expect::Wait => None,
                        Expect::NoAnchor | Expect::Locked(None) => Some(Err("not found")),
                        Expect::Locked(Some(mut row)) => {
                            for (column, value) in &changes {
                                row[*column] = value.clone();
                            }
                            model.pending.insert(id, (tx, Some(row)));
                            Some(Ok(()))
                        }
                    };
                    let key = super::key(&partition, id);
                    let outcome = partition.update(TransactionId(tx), &key, &changes);
                    settle(&mut partition, tx, outcome, expected)?;
                }
                Step::Delete(tx, id) => {
                    let expected = match model.before_write(tx, id) {
                        Expect::Wait => None,
                        Expect::NoAnchor | Expect::Locked(None) => Some(Err("not found")),
                        Expect::Locked(Some(_)) => {
                            model.pending.insert(id, (tx, None));
                            Some(Ok(()))
                        }
                    };
                    let key = super::key(&partition, id);
                    let outcome = partition.delete(TransactionId(tx), &key);
                    settle(&mut partition, tx, outcome, expected)?;
                }
                Step::Commit(tx) => {
                    model.finish(tx, true);
                    partition.commit(TransactionId(tx), model.commits);
                }
                Step::Changes(after, batch) => check_changes(&partition, &model, after, batch)?,
                Step::Abort(tx) => {
                    model.finish(tx, false);
                    partition.abort(TransactionId(tx));
                }
                Step::Scan(range, filter, batch) => {
                    let program = filter.clone().map(|f| FilterProgram::new(f, partition.layout()).unwrap());
                    let got = scan_all(&partition, &range, program.as_ref(), batch);
                    let mut expected: Vec<Vec<Value>> = model
                        .committed
                        .values()
                        .filter(|row| in_range(row, &range))
                        .filter(|row| filter.as_ref().is_none_or(|f| truth(f, row) == Truth::True))
                        .cloned()
                        .collect();
                    if let ScanRange::Index { descending, .. } = range {
                        let key_order = |x: &Vec<Value>, y: &Vec<Value>| order(&x[1], &y[1]).then(order(&x[2], &y[2]));
                        for pair in got.windows(2) {
                            let o = key_order(&pair[0], &pair[1]);
                            prop_assert!(if descending { o.is_ge() } else { o.is_le() }, "out of order: {:?}", pair);
                        }
                    }
                    let mut sorted = got.clone();
                    let by_id = |x: &Vec<Value>, y: &Vec<Value>| order(&x[0], &y[0]);
                    sorted.sort_by(by_id);
                    expected.sort_by(by_id);
                    prop_assert_eq!(sorted, expected, "range {:?} filter {:?}", range, filter);
                }
            }
            for (id, row) in &model.committed {
                let key = super::key(&partition, *id);
                let found = partition.read_committed(&key);
                prop_assert_eq!(found.map(|(f, v)| partition.layout().values(f, v)), Some(row.clone()));
            }
            prop_assert_eq!(partition.committed_rows(), model.committed.len());
        }
        for tx in 1..4 {
            partition.abort(TransactionId(tx));
        }
        drop(partition);
        prop_assert_eq!(memory.used_bytes(), 0);
    }
}

/// The rows written and keys deleted after GCI `after` are the model's.
fn check_changes(
    partition: &Partition,
    model: &Model,
    after: u64,
    batch: usize,
) -> Result<(), TestCaseError> {
    let id_of = |fixed: &[u8], var: &[u8]| match partition.layout().values(fixed, var)[0] {
        Value::Int(id) => id,
        _ => unreachable!("ids are integers"),
    };
    let mut written = BTreeMap::new();
    let mut resume = None;
    loop {
        let mut got = 0;
        resume = partition.scan_with_gci(resume, batch, |_, fixed, var, gci| {
            got += 1;
            written.insert(id_of(fixed, var), gci);
        });
        prop_assert!(got <= batch);
        if resume.is_none() {
            break;
        }
    }
    prop_assert_eq!(&written, &model.written_in, "every row with its GCI");
    let mut deleted: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    for &(id, gci) in model.deleted.iter().filter(|(_, gci)| *gci > after) {
        let latest = deleted.entry(super::key(partition, id)).or_insert(gci);
        *latest = (*latest).max(gci);
    }
    let found = partition
        .deleted_after(after)
        .expect("nothing was forgotten");
    let found: BTreeMap<Vec<u8>, u64> = found.into_iter().collect();
    prop_assert_eq!(found, deleted, "keys deleted after GCI {}", after);
    Ok(())
}

/// Checks an operation's outcome against the model's; a wait is withdrawn at once (as a
/// lock-wait timeout would), keeping the model free of waiters.
fn settle(
    partition: &mut Partition,
    tx: u64,
    outcome: Result<Outcome<()>, OperationError>,
    expected: Option<Result<(), &str>>,
) -> Result<(), TestCaseError> {
    if let Ok(Outcome::Waiting(anchor)) = outcome {
        prop_assert!(
            expected.is_none(),
            "waited, but the model expected {:?}",
            expected
        );
        partition.cancel_wait(TransactionId(tx), anchor);
        return Ok(());
    }
    let Some(expected) = expected else {
        return Err(TestCaseError::fail(format!(
            "model expected a wait, got {outcome:?}"
        )));
    };
    check_write(outcome, expected).map(|_| ())
}
