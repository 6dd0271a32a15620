//! What the benchmark does to each key: the table, the records, each thread's share of the
//! key space with the state it expects every key to be in, and which operation a phase runs
//! on a key.

use clap::ValueEnum;
use kista_client::schema::{Column, TableSchema};
use kista_client::types::{ColumnType, Value};

/// A phase of the benchmark (flexAsynch's order: insert, update, read, delete).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ValueEnum)]
pub enum Phase {
    Insert,
    Update,
    Read,
    Delete,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Insert => "insert",
            Phase::Update => "update",
            Phase::Read => "read",
            Phase::Delete => "delete",
        }
    }
}

/// One operation on one key, as sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyOp {
    Insert {
        version: u32,
    },
    /// Insert or replace (used where the key may exist).
    Write {
        version: u32,
    },
    Update {
        version: u32,
    },
    Read,
    Delete,
}

impl KeyOp {
    /// The version the key holds if the operation commits (0: absent); `None` for reads.
    pub fn resulting_version(self) -> Option<u32> {
        match self {
            KeyOp::Insert { version } | KeyOp::Write { version } | KeyOp::Update { version } => {
                Some(version)
            }
            KeyOp::Delete => Some(0),
            KeyOp::Read => None,
        }
    }
}

/// The benchmark table: `id BIGINT PRIMARY KEY, version INT UNSIGNED, payload
/// VARBINARY(record_size)`.
pub fn table_schema(name: String, record_size: u32) -> TableSchema {
    TableSchema {
        extra_metadata: Vec::new(),
        name,
        columns: vec![
            Column::new("id", ColumnType::signed(8)),
            Column::new("version", ColumnType::unsigned(4)),
            Column::new(
                "payload",
                ColumnType::VarBinary {
                    max_length: record_size,
                },
            ),
        ],
        primary_key: vec![0],
    }
}

/// The payloads of one record size. A key's payload at a version is derived from both, so a
/// read proves it saw the whole record that was written and not a mix: byte `i` is
/// `seed + i` (mod 256). Every payload is then a window of one repeating 0..=255 ramp, and
/// a read is checked against that window without building the payload.
pub struct Payloads {
    ramp: Vec<u8>,
    record_size: usize,
}

impl Payloads {
    pub fn new(record_size: u32) -> Self {
        let record_size = record_size as usize;
        Self {
            ramp: (0..256 + record_size).map(|i| i as u8).collect(),
            record_size,
        }
    }

    /// The payload `key` holds at `version`.
    pub fn of(&self, key: u64, version: u32) -> &[u8] {
        let seed = key
            .wrapping_mul(31)
            .wrapping_add(u64::from(version).wrapping_mul(17));
        let start = usize::from(seed as u8);
        &self.ramp[start..start + self.record_size]
    }

    /// The whole record `key` holds at `version`.
    pub fn record(&self, key: u64, version: u32) -> Vec<Value> {
        vec![
            Value::Int(key as i64),
            Value::UInt(u64::from(version)),
            Value::Bytes(self.of(key, version).to_vec()),
        ]
    }
}

/// What the run knows about a key: the version last acknowledged (0: absent), and a
/// version a write whose outcome is unknown may have left instead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Expected {
    pub version: u32,
    pub maybe: Option<u32>,
}

impl Expected {
    fn certain(self) -> bool {
        self.maybe.is_none()
    }

    fn next_version(self) -> u32 {
        self.version
            .max(self.maybe.unwrap_or(0))
            .wrapping_add(1)
            .max(1)
    }

    /// Whether a read that found `found` (a version, or `None` for no row) is consistent
    /// with what was acknowledged.
    pub fn accepts(self, found: Option<u32>) -> bool {
        let found = found.unwrap_or(0);
        found == self.version || self.maybe == Some(found)
    }
}

/// How a read compared with the expected state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadCheck {
    Right,
    /// The key should hold a row and none was found.
    Missing,
    /// A row with the wrong version or payload, or a row that should not exist.
    Wrong,
}

/// Checks a row read for `key` against its expected state.
pub fn check_read(
    key: u64,
    expected: Expected,
    row: Option<&[Value]>,
    payloads: &Payloads,
) -> ReadCheck {
    let Some(row) = row else {
        return if expected.accepts(None) {
            ReadCheck::Right
        } else {
            ReadCheck::Missing
        };
    };
    let version = match row.get(1) {
        Some(Value::UInt(v)) => u32::try_from(*v).ok(),
        _ => None,
    };
    let Some(version) = version.filter(|&v| v != 0) else {
        return ReadCheck::Wrong;
    };
    let payload_right = matches!(row.get(2), Some(Value::Bytes(bytes))
        if bytes.as_slice() == payloads.of(key, version));
    if payload_right
        && row.first() == Some(&Value::Int(key as i64))
        && expected.accepts(Some(version))
    {
        ReadCheck::Right
    } else {
        ReadCheck::Wrong
    }
}

/// One thread's keys: `first`, `first + stride`, ... below the key space, each with its
/// expected state. Threads own disjoint keys, so their transactions never conflict.
pub struct KeySlice {
    first: u64,
    stride: u64,
    pub expected: Vec<Expected>,
}

impl KeySlice {
    pub fn new(thread: u32, threads: u32, keys: u64) -> Self {
        let (first, stride) = (u64::from(thread), u64::from(threads));
        let count = keys.saturating_sub(first).div_ceil(stride);
        Self {
            first,
            stride,
            expected: vec![Expected::default(); count as usize],
        }
    }

    pub fn len(&self) -> usize {
        self.expected.len()
    }

    pub fn key(&self, slot: usize) -> u64 {
        self.first + slot as u64 * self.stride
    }

    /// The operation `phase` runs on the key in `slot`, or `None` if there is nothing to do
    /// (deleting a key known to be absent). Inserts of keys that may exist and updates of
    /// keys that may not become writes, so loops and mixes never fail on the key's state.
    pub fn op_for(&self, phase: Phase, slot: usize) -> Option<KeyOp> {
        let expected = self.expected[slot];
        let version = expected.next_version();
        let present = expected.certain() && expected.version != 0;
        let absent = expected.certain() && expected.version == 0;
        Some(match phase {
            Phase::Insert if absent => KeyOp::Insert { version },
            Phase::Update if present => KeyOp::Update { version },
            Phase::Insert | Phase::Update => KeyOp::Write { version },
            Phase::Read => KeyOp::Read,
            Phase::Delete if absent => return None,
            Phase::Delete => KeyOp::Delete,
        })
    }

    /// An operation was acknowledged.
    pub fn acknowledged(&mut self, slot: usize, op: KeyOp) {
        if let Some(version) = op.resulting_version() {
            self.expected[slot] = Expected {
                version,
                maybe: None,
            };
        }
    }

    /// An operation's outcome is unknown: the key may hold either state from now on.
    pub fn outcome_unknown(&mut self, slot: usize, op: KeyOp) {
        if let Some(version) = op.resulting_version() {
            self.expected[slot].maybe = Some(version);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_of_all_threads_cover_the_key_space_once() {
        let mut seen = vec![0; 103];
        for thread in 0..4 {
            let slice = KeySlice::new(thread, 4, 103);
            for slot in 0..slice.len() {
                seen[slice.key(slot) as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 1));
    }

    #[test]
    fn phases_pick_operations_that_fit_the_key_state() {
        let mut slice = KeySlice::new(0, 1, 1);
        assert_eq!(slice.op_for(Phase::Delete, 0), None);
        assert_eq!(
            slice.op_for(Phase::Update, 0),
            Some(KeyOp::Write { version: 1 })
        );
        let insert = slice.op_for(Phase::Insert, 0).unwrap();
        assert_eq!(insert, KeyOp::Insert { version: 1 });
        slice.acknowledged(0, insert);
        assert_eq!(
            slice.op_for(Phase::Insert, 0),
            Some(KeyOp::Write { version: 2 })
        );
        assert_eq!(
            slice.op_for(Phase::Update, 0),
            Some(KeyOp::Update { version: 2 })
        );
        slice.outcome_unknown(0, KeyOp::Delete);
        assert_eq!(
            slice.op_for(Phase::Update, 0),
            Some(KeyOp::Write { version: 2 })
        );
    }

    #[test]
    fn a_read_is_right_only_for_an_acknowledged_or_possible_record() {
        let payloads = Payloads::new(16);
        let row = |version: u32| payloads.record(7, version);
        let check = |expected, row: Option<&[Value]>| check_read(7, expected, row, &payloads);
        let known = Expected {
            version: 3,
            maybe: None,
        };
        assert_eq!(check(known, Some(&row(3))), ReadCheck::Right);
        assert_eq!(check(known, Some(&row(2))), ReadCheck::Wrong);
        assert_eq!(check(known, None), ReadCheck::Missing);
        let mut torn = row(3);
        torn[2] = Value::Bytes(payloads.of(7, 2).to_vec());
        assert_eq!(check(known, Some(&torn)), ReadCheck::Wrong);
        let mut short = row(3);
        short[2] = Value::Bytes(payloads.of(7, 3)[..15].to_vec());
        assert_eq!(check(known, Some(&short)), ReadCheck::Wrong);
        let unsure = Expected {
            version: 3,
            maybe: Some(0),
        };
        assert_eq!(check(unsure, None), ReadCheck::Right);
        assert_eq!(check(Expected::default(), Some(&row(1))), ReadCheck::Wrong);
    }

    #[test]
    fn a_payload_is_the_seeded_byte_sequence_of_its_key_and_version() {
        let payloads = Payloads::new(300);
        for (key, version) in [(0, 1), (7, 3), (u64::MAX, u32::MAX)] {
            let seed = key
                .wrapping_mul(31)
                .wrapping_add(u64::from(version).wrapping_mul(17));
            let expected: Vec<u8> = (0..300u64).map(|i| seed.wrapping_add(i) as u8).collect();
            assert_eq!(payloads.of(key, version), &expected[..]);
        }
        assert_ne!(payloads.of(7, 3), payloads.of(7, 4));
    }
}
