use std::collections::HashMap;

use proptest::prelude::*;

use super::*;

/// Rows as the index sees them: row `r` holds key `rows[r]` (`None` once deleted).
#[derive(Default)]
struct Rows(Vec<Option<Vec<u8>>>);

impl Rows {
    fn has_key<'a>(&'a self, key: &'a [u8]) -> impl FnMut(RowId) -> bool + 'a {
        move |row| self.0[row.0 as usize].as_deref() == Some(key)
    }

    fn insert(&mut self, key: &[u8]) -> RowId {
        self.0.push(Some(key.to_vec()));
        RowId(self.0.len() as u32 - 1)
    }
}

/// Adds `key` as a new row unless a row holds it already: the row holding it.
fn get_or_add(index: &mut HashIndex, rows: &mut Rows, key: &[u8]) -> Probe {
    let probe = index.probe(key, rows.has_key(key));
    if let Probe::Absent(hash) = probe {
        let row = rows.insert(key);
        index.add(hash, row).unwrap();
    }
    probe
}

/// Every entry sits in the chain its hash addresses, the count and the charged memory
/// agree with the buckets, and no overflow bucket is both chained and free.
fn check_invariants(index: &HashIndex) {
    let mut entries = 0;
    let mut chained = Vec::new();
    for head in 0..index.buckets.len() {
        let mut bucket = index.buckets.get(head);
        loop {
            for (hash, _) in bucket.entries() {
                assert_eq!(index.address(hash), head, "an entry in the wrong chain");
            }
            entries += bucket.len();
            let Some(next) = bucket.next() else { break };
            chained.push(next);
            bucket = index.overflow.get(next);
        }
    }
    assert_eq!(entries, index.len());
    let count = index.buckets.len();
    if count > 0 {
        assert_eq!(count, (1 << index.level) + index.next_split);
    }
    chained.extend(&index.free_overflow);
    chained.sort_unstable();
    let before = chained.len();
    chained.dedup();
    assert_eq!(
        before,
        chained.len(),
        "an overflow bucket chained twice or chained and free"
    );
    assert_eq!(
        chained.len() as u32,
        index.overflow.len(),
        "no overflow bucket lost"
    );
    let segments = |buckets: &Buckets| {
        let mut probe = Buckets::default();
        (0..buckets.len())
            .filter(|_| {
                let new = probe.push_needs_segment();
                probe.push();
                new
            })
            .count()
    };
    let charged = (segments(&index.buckets) + segments(&index.overflow)) as u64 * SEGMENT_BYTES;
    assert_eq!(index.held_bytes(), charged);
}

#[test]
fn a_key_leads_to_its_row_until_removed() {
    let memory = Arc::new(DataMemory::new(1 << 20));
    let (mut index, mut rows) = (HashIndex::new(memory.clone()), Rows::default());
    assert_eq!(index.get(b"k1", rows.has_key(b"k1")), None);
    assert_eq!(index.held_bytes(), 0, "an empty index holds no memory");
    assert!(matches!(
        get_or_add(&mut index, &mut rows, b"k1"),
        Probe::Absent(_)
    ));
    assert!(matches!(
        get_or_add(&mut index, &mut rows, b"k2"),
        Probe::Absent(_)
    ));
    assert_eq!(
        get_or_add(&mut index, &mut rows, b"k1"),
        Probe::Found(RowId(0))
    );
    assert_eq!(index.get(b"k2", rows.has_key(b"k2")), Some(RowId(1)));
    assert!(!index.remove(b"k1", RowId(1)), "the entry is k1's at row 0");
    assert!(index.remove(b"k1", RowId(0)));
    assert_eq!(index.get(b"k1", rows.has_key(b"k1")), None);
    assert!(!index.remove(b"k1", RowId(0)));
    assert_eq!(index.len(), 1);
    check_invariants(&index);
    drop(index);
    assert_eq!(memory.used_bytes(), 0);
}

#[test]
fn keys_with_the_same_hash_are_told_apart_in_their_rows() {
    let memory = Arc::new(DataMemory::new(1 << 20));
    let (mut index, mut rows) = (HashIndex::new(memory), Rows::default());
    let same = KeyHash(0x5eed);
    let keys: Vec<Vec<u8>> = (0..20u8).map(|k| vec![k; 3]).collect();
    for key in &keys {
        assert_eq!(
            index.probe_hashed(same, rows.has_key(key)),
            Probe::Absent(same)
        );
        let row = rows.insert(key);
        index.add(same, row).unwrap();
    }
    for (row, key) in keys.iter().enumerate() {
        let found = index.probe_hashed(same, rows.has_key(key));
        assert_eq!(found, Probe::Found(RowId(row as u32)));
    }
    assert!(
        index.overflow.len() >= 2,
        "twenty entries of one hash chain overflow buckets"
    );
    check_invariants(&index);
}

#[test]
fn a_full_data_memory_refuses_new_keys_and_keeps_the_old_ones() {
    // One segment of buckets: the table splits until it fills it, then its chains fill.
    let memory = Arc::new(DataMemory::new(SEGMENT_BYTES));
    let (mut index, mut rows) = (HashIndex::new(memory.clone()), Rows::default());
    let key = |k: u32| k.to_le_bytes().to_vec();
    let refused = (0u32..)
        .find(|&k| {
            let Probe::Absent(hash) = index.probe(&key(k), rows.has_key(&key(k))) else {
                panic!("a new key");
            };
            let row = rows.insert(&key(k));
            index.add(hash, row).is_err()
        })
        .unwrap();
    assert_eq!(
        index.len(),
        refused as usize,
        "the refused key left nothing"
    );
    check_invariants(&index);
    for k in 0..refused {
        assert_eq!(index.get(&key(k), rows.has_key(&key(k))), Some(RowId(k)));
    }
    // A removed key's place takes the refused one.
    let address = index.address(index.hash(&key(refused)).0);
    let (_, row) = index.buckets.get(address).entries().next().unwrap();
    assert!(index.remove(rows.0[row as usize].clone().unwrap().as_slice(), RowId(row)));
    let Probe::Absent(hash) = index.probe(&key(refused), rows.has_key(&key(refused))) else {
        panic!("still absent");
    };
    index.add(hash, RowId(refused)).unwrap();
    assert_eq!(memory.used_bytes(), SEGMENT_BYTES);
}

#[test]
fn a_dropped_index_is_freed_in_slices() {
    let memory = Arc::new(DataMemory::new(1 << 24));
    let (mut index, mut rows) = (HashIndex::new(memory.clone()), Rows::default());
    for k in 0..10_000u32 {
        get_or_add(&mut index, &mut rows, &k.to_le_bytes());
    }
    let mut slices = 0;
    while !index.is_empty() {
        let freed = index.release_some(1000);
        assert!(freed > 0 && freed <= 1000);
        slices += 1;
    }
    assert!(slices >= 10, "{slices} slices");
    assert_eq!((index.held_bytes(), memory.used_bytes()), (0, 0));
    get_or_add(&mut index, &mut rows, b"again");
    check_invariants(&index);
}

#[derive(Clone, Debug)]
enum Step {
    Add(u16),
    Remove(u16),
    Get(u16),
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    // Few distinct keys, so removes and duplicates hit; runs long enough for many splits.
    let step = prop_oneof![
        4 => (0..3000u16).prop_map(Step::Add),
        2 => (0..3000u16).prop_map(Step::Remove),
        1 => (0..3000u16).prop_map(Step::Get),
    ];
    proptest::collection::vec(step, 1..4000)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn the_index_answers_as_a_hash_map_does(steps in steps()) {
        let memory = Arc::new(DataMemory::new(1 << 26));
        let (mut index, mut rows) = (HashIndex::new(memory), Rows::default());
        let mut model: HashMap<Vec<u8>, RowId> = HashMap::new();
        for step in steps {
            match step {
                Step::Add(k) => {
                    let key = k.to_be_bytes();
                    let expected = model.get(&key[..]).copied();
                    match get_or_add(&mut index, &mut rows, &key) {
                        Probe::Found(row) => prop_assert_eq!(Some(row), expected),
                        Probe::Absent(_) => {
                            prop_assert_eq!(expected, None);
                            model.insert(key.to_vec(), RowId(rows.0.len() as u32 - 1));
                        }
                    }
                }
                Step::Remove(k) => {
                    let key = k.to_be_bytes();
                    if let Some(row) = model.remove(&key[..]) {
                        prop_assert!(index.remove(&key, row));
                        rows.0[row.0 as usize] = None;
                    }
                }
                Step::Get(k) => {
                    let key = k.to_be_bytes();
                    prop_assert_eq!(index.get(&key, rows.has_key(&key)), model.get(&key[..]).copied());
                }
            }
        }
        check_invariants(&index);
        prop_assert_eq!(index.len(), model.len());
        for (key, row) in &model {
            prop_assert_eq!(index.get(key, rows.has_key(key)), Some(*row));
        }
    }
}

/// The longest single insert while 4M keys go in, against a hash map that rehashes all
/// its entries when it doubles. Measures time, so it asserts nothing and runs only when
/// asked: `cargo test --release -p kista-storage -- --ignored longest_insert --nocapture`.
#[test]
#[ignore = "a measurement"]
fn longest_insert_against_a_doubling_hash_map() {
    const KEYS: u32 = 4_000_000;
    let longest = |mut insert: Box<dyn FnMut(u32)>| {
        let mut longest = std::time::Duration::ZERO;
        let started = std::time::Instant::now();
        for k in 0..KEYS {
            let before = std::time::Instant::now();
            insert(k);
            longest = longest.max(before.elapsed());
        }
        (longest, started.elapsed())
    };
    let memory = Arc::new(DataMemory::new(1 << 30));
    let mut index = HashIndex::new(memory);
    let linear = longest(Box::new(move |k| {
        let Probe::Absent(hash) = index.probe(&k.to_le_bytes(), |_| false) else {
            unreachable!("a new key");
        };
        index.add(hash, RowId(k)).unwrap();
    }));
    let mut map: HashMap<smallvec::SmallVec<[u8; 16]>, RowId> = HashMap::new();
    let doubling = longest(Box::new(move |k| {
        map.insert(smallvec::SmallVec::from_slice(&k.to_le_bytes()), RowId(k));
    }));
    eprintln!("{KEYS} keys: linear hashing longest insert {:?} (all {:?}); doubling hash map {:?} (all {:?})",
        linear.0, linear.1, doubling.0, doubling.1);
}
