use std::cmp::Ordering;

use proptest::prelude::*;

use super::*;
use crate::compare::compare;

const BIGINT: ColumnType = ColumnType::Int {
    bytes: 8,
    signed: true,
};
const UNSIGNED: ColumnType = ColumnType::Int {
    bytes: 8,
    signed: false,
};
const BYTES: ColumnType = ColumnType::VarBinary { max_length: 100 };

fn encoded(column_type: ColumnType, value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode_ordered(column_type, value, &mut out);
    out
}

fn a_value() -> impl Strategy<Value = (ColumnType, Value, Value)> {
    prop_oneof![
        (any::<i64>(), any::<i64>()).prop_map(|(a, b)| (BIGINT, Value::Int(a), Value::Int(b))),
        (any::<u64>(), any::<u64>()).prop_map(|(a, b)| (UNSIGNED, Value::UInt(a), Value::UInt(b))),
        (any::<f64>(), any::<f64>()).prop_map(|(a, b)| (
            ColumnType::Double,
            Value::Double(a),
            Value::Double(b)
        )),
        (any::<f32>(), any::<f32>()).prop_map(|(a, b)| (
            ColumnType::Float,
            Value::Float(a),
            Value::Float(b)
        )),
        (
            proptest::collection::vec(0..3u8, 0..6),
            proptest::collection::vec(0..3u8, 0..6)
        )
            .prop_map(|(a, b)| (BYTES, Value::Bytes(a), Value::Bytes(b))),
        (any::<i64>(), any::<i64>()).prop_map(|(a, b)| (
            ColumnType::Timestamp,
            Value::Timestamp(a),
            Value::Timestamp(b)
        )),
    ]
}

proptest! {
    #[test]
    fn byte_order_of_encoded_values_is_value_order((column_type, a, b) in a_value()) {
        let order = compare(&a, &b).unwrap();
        prop_assert_eq!(encoded(column_type, &a).cmp(&encoded(column_type, &b)), order);
    }

    #[test]
    fn composite_keys_sort_column_by_column(
        (a1, a2) in (proptest::collection::vec(0..3u8, 0..4), any::<i8>()),
        (b1, b2) in (proptest::collection::vec(0..3u8, 0..4), any::<i8>()),
    ) {
        let key = |s: &[u8], n: i8| {
            let mut out = encoded(BYTES, &Value::Bytes(s.to_vec()));
            encode_ordered(BIGINT, &Value::Int(n.into()), &mut out);
            out
        };
        let expected = a1.cmp(&b1).then(a2.cmp(&b2));
        prop_assert_eq!(key(&a1, a2).cmp(&key(&b1, b2)), expected);
    }
}

proptest! {
    // Two keys with a common start (0 to 24 bytes, so it ends before, at or past the inline
    // head) and short endings over an alphabet with zeros: often one is a prefix of the
    // other, or they differ only in padding-like zeros. Equal keys are ordered by row.
    #[test]
    fn an_entry_as_the_tree_holds_it_sorts_as_its_key_bytes_then_row_and_gives_them_back(
        common in proptest::collection::vec(0..3u8, 0..24),
        end_a in proptest::collection::vec(0..2u8, 0..4),
        end_b in proptest::collection::vec(0..2u8, 0..4),
        rows in (0..3u32, 0..3u32),
    ) {
        let a = [&common[..], &end_a[..]].concat();
        let b = [&common[..], &end_b[..]].concat();
        let (entry_a, entry_b) = (Entry::new(&a, RowId(rows.0)), Entry::new(&b, RowId(rows.1)));
        prop_assert_eq!(entry_a.cmp(&entry_b), a.cmp(&b).then(rows.0.cmp(&rows.1)));
        let mut out = Vec::new();
        prop_assert_eq!(entry_a.key_into(&mut out), &a[..]);
    }
}

/// Checks that `ShortEntry<WORDS>` orders keys `a` (cut to its most) and `b` (a key or a
/// longer bound) as the general entry does, and gives `a` back.
fn short_sorts_as_general<const WORDS: usize>(
    mut a: Vec<u8>,
    b: &[u8],
    rows: (u32, u32),
) -> Result<(), TestCaseError> {
    a.truncate(ShortEntry::<WORDS>::KEY_BYTES_MAX);
    let short_a = <ShortEntry<WORDS> as IndexEntry>::new(&a, RowId(rows.0));
    let short_b = <ShortEntry<WORDS> as IndexEntry>::new(b, RowId(rows.1));
    let (long_a, long_b) = (Entry::new(&a, RowId(rows.0)), Entry::new(b, RowId(rows.1)));
    prop_assert_eq!(short_a.cmp(&short_b), long_a.cmp(&long_b));
    prop_assert_eq!(short_a < short_b, long_a < long_b);
    prop_assert_eq!(short_a <= short_b, long_a <= long_b);
    let mut out = Vec::new();
    prop_assert_eq!(short_a.key_into(&mut out), &a[..]);
    prop_assert_eq!(short_a.key_len(), a.len());
    prop_assert_eq!(short_a.row(), RowId(rows.0));
    Ok(())
}

proptest! {
    // Keys of a short tree (up to 11 or 15 bytes) against each other and against bounds of
    // up to 24 bytes (cut in the short form): each short form orders them as the general
    // one does, and gives a key of its tree back.
    #[test]
    fn a_short_entry_sorts_as_the_general_entry_of_its_key_against_keys_and_bounds(
        common in proptest::collection::vec(0..3u8, 0..15),
        end_a in proptest::collection::vec(0..2u8, 0..4),
        end_b in proptest::collection::vec(0..2u8, 0..12),
        rows in (0..3u32, 0..3u32),
    ) {
        let a = [&common[..], &end_a[..]].concat();
        let b = [&common[..], &end_b[..]].concat();
        short_sorts_as_general::<4>(a.clone(), &b, rows)?;
        short_sorts_as_general::<5>(a, &b, rows)?;
    }
    // What `encoded_key_bytes_max` promises for a column's type holds for its values.
    #[test]
    fn an_encoded_key_is_never_longer_than_its_types_allow((column_type, a, _) in a_value()) {
        if let Some(max) = encoded_key_bytes_max([column_type]) {
            prop_assert!(encoded(column_type, &a).len() <= max);
            prop_assert!(encoded(column_type, &Value::Null).len() <= max);
        }
    }
}

#[test]
fn indexes_of_numbers_dates_and_times_take_the_short_form_and_text_or_decimals_do_not() {
    let entry_bytes = |types: &[ColumnType]| {
        let index = OrderedIndex::for_columns(Arc::new(DataMemory::new(1 << 20)), types.to_vec());
        match index.entries {
            Tree::Short16(_) => 16,
            Tree::Short20(_) => 20,
            Tree::Long(_) => 32,
        }
    };
    assert_eq!(entry_bytes(&[BIGINT]), 16, "9 bytes");
    assert_eq!(entry_bytes(&[ColumnType::DateTime]), 16);
    assert_eq!(
        entry_bytes(&[ColumnType::Date, ColumnType::Date]),
        16,
        "10 bytes"
    );
    assert_eq!(entry_bytes(&[BIGINT, ColumnType::Date]), 20, "14 bytes");
    assert_eq!(entry_bytes(&[BIGINT, BIGINT]), 32, "18 bytes");
    let decimal = ColumnType::Decimal {
        precision: 10,
        scale: 2,
    };
    assert_eq!(entry_bytes(&[decimal]), 32, "17 bytes");
    assert_eq!(entry_bytes(&[BYTES]), 32);
}

/// The index columns of each short form's twin index: one `BIGINT` (16-byte entries), and
/// a `BIGINT` and a `DATE` (20-byte), whose trees the tests fill with `BIGINT` keys.
const SHORT_FORMS: [&[ColumnType]; 2] = [&[BIGINT], &[BIGINT, ColumnType::Date]];

/// Single-column BIGINT keys, some repeated, in a short index on `columns` and in a general
/// one.
fn twin_indexes(columns: &[ColumnType]) -> (OrderedIndex, OrderedIndex) {
    let memory = Arc::new(DataMemory::new(1 << 24));
    let mut short = OrderedIndex::for_columns(memory.clone(), columns.to_vec());
    let mut long = OrderedIndex::new(memory);
    assert!(matches!(short.entries, Tree::Short16(_) | Tree::Short20(_)));
    for n in 0..500u32 {
        let k = i64::from(n.wrapping_mul(2_654_435_761) % 97) - 40;
        for index in [&mut short, &mut long] {
            index.insert(&key(&[k]), RowId(n)).unwrap();
        }
    }
    (short, long)
}

#[test]
fn a_short_index_scans_as_a_general_one_with_bounds_longer_than_its_keys() {
    // Bounds of two and three columns are longer than any key of a short index: cut.
    let bounds: Vec<Option<(&[i64], bool)>> = vec![
        None,
        Some((&[3], true)),
        Some((&[3], false)),
        Some((&[-7, 2], true)),
        Some((&[-7, 2], false)),
        Some((&[-7, 2, 1], false)),
        Some((&[60], true)),
    ];
    for columns in SHORT_FORMS {
        let (short, long) = twin_indexes(columns);
        for_each_range(&bounds, |lower, upper, descending| {
            assert_eq!(
                scanned(&short, lower, upper, descending),
                scanned(&long, lower, upper, descending),
                "{columns:?}: lower {lower:?} upper {upper:?} descending {descending}"
            );
        });
    }
}

#[test]
fn a_short_index_given_a_longer_key_widens_and_keeps_its_entries() {
    for columns in SHORT_FORMS {
        let (mut short, mut long) = twin_indexes(columns);
        let longer = key(&[5, 6]);
        assert!(!short.contains(&longer, RowId(1)));
        assert!(!short.remove(&longer, RowId(1)));
        for index in [&mut short, &mut long] {
            assert!(index.insert(&longer, RowId(1)).unwrap());
        }
        assert!(matches!(short.entries, Tree::Long(_)));
        assert_eq!(short.len(), long.len());
        assert!(short.contains(&longer, RowId(1)));
        assert_eq!(
            scanned(&short, None, None, false),
            scanned(&long, None, None, false)
        );
        assert_covered(&short, tail_bytes(longer.len()) as u64);
    }
}

#[test]
fn null_sorts_before_every_value_and_the_zeros_are_one_key() {
    assert!(encoded(BIGINT, &Value::Null) < encoded(BIGINT, &Value::Int(i64::MIN)));
    assert_eq!(
        encoded(ColumnType::Double, &Value::Double(-0.0)),
        encoded(ColumnType::Double, &Value::Double(0.0))
    );
}

/// An index over (a, b), both small integers, with one row per pair.
fn two_column_index() -> (OrderedIndex, Vec<(i64, i64, RowId)>) {
    let mut index = OrderedIndex::new(Arc::new(DataMemory::new(1 << 20)));
    let mut rows = Vec::new();
    for a in 0..4 {
        for b in 0..3 {
            let row = RowId((a * 3 + b) as u32);
            index.insert(&key(&[a, b]), row).unwrap();
            rows.push((a, b, row));
        }
    }
    (index, rows)
}

fn key(columns: &[i64]) -> Vec<u8> {
    let mut out = Vec::new();
    for &n in columns {
        encode_ordered(BIGINT, &Value::Int(n), &mut out);
    }
    out
}

fn scanned(
    index: &OrderedIndex,
    lower: Option<(&[i64], bool)>,
    upper: Option<(&[i64], bool)>,
    descending: bool,
) -> Vec<RowId> {
    let bound = |(columns, inclusive): (&[i64], bool)| RangeBound {
        prefix: key(columns),
        inclusive,
    };
    let (lower, upper) = (lower.map(bound), upper.map(bound));
    let mut rows = Vec::new();
    index.scan(
        lower.as_ref(),
        upper.as_ref(),
        descending,
        None,
        |_, row| {
            rows.push(row);
            true
        },
    );
    rows
}

fn model(
    rows: &[(i64, i64, RowId)],
    lower: Option<(&[i64], bool)>,
    upper: Option<(&[i64], bool)>,
    descending: bool,
) -> Vec<RowId> {
    // Compares a row with a bound on a prefix: only the prefix's columns count.
    let versus = |a: i64, b: i64, prefix: &[i64]| -> Ordering {
        [a, b]
            .iter()
            .zip(prefix)
            .map(|(x, y)| x.cmp(y))
            .fold(Ordering::Equal, Ordering::then)
    };
    let mut matching: Vec<RowId> = rows
        .iter()
        .filter(|(a, b, _)| {
            lower.is_none_or(|(p, inclusive)| {
                let order = versus(*a, *b, p);
                order.is_gt() || (inclusive && order.is_eq())
            }) && upper.is_none_or(|(p, inclusive)| {
                let order = versus(*a, *b, p);
                order.is_lt() || (inclusive && order.is_eq())
            })
        })
        .map(|&(_, _, row)| row)
        .collect();
    if descending {
        matching.reverse();
    }
    matching
}

#[test]
fn prefix_bounds_select_what_a_reference_model_selects() {
    let (index, rows) = two_column_index();
    let bounds: Vec<Option<(&[i64], bool)>> = vec![
        None,
        Some((&[1], true)),
        Some((&[1], false)),
        Some((&[2, 1], true)),
        Some((&[2, 1], false)),
        Some((&[0, 5], true)),
        Some((&[9], true)),
    ];
    for_each_range(&bounds, |lower, upper, descending| {
        assert_eq!(
            scanned(&index, lower, upper, descending),
            model(&rows, lower, upper, descending),
            "lower {lower:?} upper {upper:?} descending {descending}"
        );
    });
}

type Bounds<'a> = Option<(&'a [i64], bool)>;

/// `check` of every (lower, upper) pair of `bounds`, in both directions.
fn for_each_range<'a>(bounds: &[Bounds<'a>], mut check: impl FnMut(Bounds<'a>, Bounds<'a>, bool)) {
    for &lower in bounds {
        for &upper in bounds {
            for descending in [false, true] {
                check(lower, upper, descending);
            }
        }
    }
}

#[test]
fn a_scan_resumes_past_the_last_entry_in_either_direction() {
    let (index, _) = two_column_index();
    for descending in [false, true] {
        let all = scanned(&index, None, None, descending);
        let mut resumed = Vec::new();
        let mut last: Option<(Vec<u8>, RowId)> = None;
        loop {
            let mut batch = Vec::new();
            let resume = last.as_ref().map(|(k, r)| (&k[..], *r));
            index.scan(None, None, descending, resume, |key, row| {
                batch.push((key.to_vec(), row));
                batch.len() < 5
            });
            if batch.is_empty() {
                break;
            }
            resumed.extend(batch.iter().map(|(_, row)| *row));
            last = batch.pop();
        }
        assert_eq!(resumed, all);
    }
}

/// What the index holds in DataMemory covers its tree's buffers (at their real capacities)
/// and its entries' key tails.
fn assert_covered(index: &OrderedIndex, tails: u64) {
    let exact = with_tree!(&index.entries, tree => tree.heap_bytes_exact()) as u64 + tails;
    assert!(
        index.held_bytes() >= exact,
        "held {} bytes for {exact}",
        index.held_bytes()
    );
}

/// A key of `len` bytes numbered `n` (its first bytes spread the keys apart).
fn numbered_key(n: u32, len: usize) -> Vec<u8> {
    let mut key = n.wrapping_mul(2_654_435_761).to_be_bytes().to_vec();
    key.resize(len, b'x');
    key
}

#[test]
fn entries_are_charged_to_data_memory_and_given_back() {
    let memory = Arc::new(DataMemory::new(64 << 20));
    let mut index = OrderedIndex::new(memory.clone());
    assert!(index.insert(b"k", RowId(1)).unwrap());
    assert!(!index.insert(b"k", RowId(1)).unwrap(), "already there");
    assert!(index.remove(b"k", RowId(1)));
    assert!(!index.remove(b"k", RowId(1)));
    // Out of key order (half-full leaves), short keys and keys with tails.
    let mut tails = 0;
    for n in 0..20_000u32 {
        let len = [9, 40][n as usize % 2];
        assert!(index.insert(&numbered_key(n, len), RowId(n)).unwrap());
        tails += tail_bytes(len) as u64;
    }
    assert_covered(&index, tails);
    let full = memory.used_bytes();
    for n in (0..20_000u32).filter(|n| n % 4 != 0) {
        let len = [9, 40][n as usize % 2];
        assert!(index.remove(&numbered_key(n, len), RowId(n)));
        tails -= tail_bytes(len) as u64;
    }
    assert_covered(&index, tails);
    assert!(memory.used_bytes() < full, "removals give memory back");
    while index.release_some(1_000) > 0 {}
    assert!(
        index.held_bytes() < 2 * TREE_RESERVE_SLACK_BYTES,
        "an emptied index keeps little: {}",
        index.held_bytes()
    );
    drop(index);
    assert_eq!(memory.used_bytes(), 0);
}

#[test]
fn a_full_data_memory_refuses_a_new_entry_but_not_one_already_there() {
    let memory = Arc::new(DataMemory::new(1 << 20));
    let mut index = OrderedIndex::new(memory.clone());
    assert!(index.insert(b"k", RowId(1)).unwrap());
    let rest = memory.limit_bytes() - memory.used_bytes();
    memory.reserve(rest).unwrap();
    assert!(
        !index.insert(b"k", RowId(1)).unwrap(),
        "already there: no memory needed"
    );
    // New entries fill what the index reserved ahead, then are refused, and never
    // hold more than it reserved.
    let mut tails = 0;
    let refused = (0..100_000u32).find(|&n| {
        let added = index.insert(&numbered_key(n, 24), RowId(n));
        tails += tail_bytes(24) as u64 * u64::from(added.is_ok());
        assert_covered(&index, tails);
        added.is_err()
    });
    assert!(refused.is_some(), "a new entry needs memory at last");
    assert_eq!(
        memory.used_bytes(),
        memory.limit_bytes(),
        "nothing charged twice"
    );
    memory.release(rest);
}

proptest! {
    #[test]
    fn a_case_insensitive_column_encodes_in_its_collations_order(
        a in "[aAbBéÉß ]{0,5}",
        b in "[aAbBéÉß ]{0,5}",
    ) {
        let collation = crate::types::Collation::utf8mb4_0900_ai_ci;
        let ci = ColumnType::varchar(20).with_collation(collation);
        let text = |s: &str| Value::Bytes(s.as_bytes().to_vec());
        let order = crate::compare::compare_in(collation, &text(&a), &text(&b)).unwrap();
        prop_assert_eq!(encoded(ci, &text(&a)).cmp(&encoded(ci, &text(&b))), order);
    }
}

/// Inserts as `bench/import.sh` makes them on a data node, timed for each of its table's
/// two ordered indexes: 1M rows over four partitions, loaded a transaction of 1000
/// consecutive ids at a time (the coordinator sends each partition its rows of it in one
/// batch, in order), eight transactions' batches interleaved; one index on the id, one on
/// `k = id * 7 % 100000`. Measures time, so it asserts nothing and runs only when asked:
/// `cargo test --release -p kista-storage --lib -- --ignored import_like --nocapture`.
#[test]
#[ignore = "a measurement"]
fn import_like_inserts() {
    const ROWS: i64 = 1_000_000;
    const PARTITIONS: usize = 4;
    let partition_of = |id: i64| ((id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 62) as usize;
    let mut order = Vec::with_capacity(ROWS as usize);
    for first in (0..ROWS).step_by(8000) {
        for partition in 0..PARTITIONS {
            for loader in 0..8 {
                let start = first + loader * 1000;
                let rows = start..(start + 1000).min(ROWS);
                order.extend(rows.filter(|&id| partition_of(id) == partition));
            }
        }
    }
    for (name, key_of) in [
        (
            "id",
            Box::new(|id: i64| key(&[id])) as Box<dyn Fn(i64) -> Vec<u8>>,
        ),
        ("k", Box::new(|id: i64| key(&[id * 7 % 100_000]))),
    ] {
        let memory = Arc::new(DataMemory::new(4 << 30));
        let mut indexes: Vec<OrderedIndex> = (0..PARTITIONS)
            .map(|_| OrderedIndex::for_columns(memory.clone(), [BIGINT]))
            .collect();
        let keys: Vec<Vec<u8>> = order.iter().map(|&id| key_of(id)).collect();
        let started = std::time::Instant::now();
        for (&id, key) in order.iter().zip(&keys) {
            indexes[partition_of(id)]
                .insert(key, RowId(id as u32))
                .unwrap();
        }
        let nanos = started.elapsed().as_nanos() as f64 / order.len() as f64;
        eprintln!("index on {name}: {nanos:.0} ns an insert");
    }
}
