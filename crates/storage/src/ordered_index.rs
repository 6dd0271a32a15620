//! Ordered indexes: sorted (key, row) entries for range scans in either direction.
//!
//! Keys are encoded so that comparing bytes compares values (see [`encode_ordered`]); an
//! entry is the encoded key followed by the row, so equal keys of different rows coexist.
//! A bound on a prefix of the index columns is the encoded prefix: every key that extends a
//! prefix sorts after it and before the prefix followed by [`PREFIX_END`].

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::Arc;

use crate::memory::{DataMemory, DataMemoryExhausted, MemoryAccount};
use crate::row_store::RowId;
use crate::types::{ColumnType, Value};

/// Bytes charged per entry besides the key: the tree node share and the key's allocation.
const ENTRY_OVERHEAD_BYTES: u64 = 48;

/// Sorts after every encoded column (which all start with 0x00 or 0x01).
pub const PREFIX_END: u8 = 0xFF;

/// Appends `value` (checked against `column_type`) so that byte order is value order:
/// NULL first, then values in the order of [`crate::compare::compare_in`] under the column's
/// collation (a text column with one that does not compare bytes is encoded by its weight
/// key, so equal keys under the collation are equal bytes). Every column's
/// encoding is self-delimiting, so a concatenation of columns sorts column by column.
pub fn encode_ordered(column_type: ColumnType, value: &Value, out: &mut Vec<u8>) {
    if value.is_null() {
        out.push(0);
        return;
    }
    out.push(1);
    const SIGN64: u64 = 1 << 63;
    match (column_type, value) {
        (ColumnType::Int { signed: true, .. }, Value::Int(n)) => {
            out.extend_from_slice(&((*n as u64) ^ SIGN64).to_be_bytes())
        }
        (ColumnType::Int { signed: true, .. }, Value::UInt(n)) => {
            out.extend_from_slice(&(n ^ SIGN64).to_be_bytes())
        }
        (_, Value::Int(n)) => out.extend_from_slice(&(*n as u64).to_be_bytes()),
        (_, Value::UInt(n)) => out.extend_from_slice(&n.to_be_bytes()),
        (_, Value::Float(x)) => out.extend_from_slice(&ordered_f64(f64::from(*x)).to_be_bytes()),
        (_, Value::Double(x)) => out.extend_from_slice(&ordered_f64(*x).to_be_bytes()),
        (_, Value::Decimal(d)) => {
            out.extend_from_slice(&((d.unscaled as u128) ^ (1 << 127)).to_be_bytes())
        }
        (text_type, Value::Bytes(text)) if !text_type.compares_bytewise() => {
            let start = out.len();
            let collation = text_type.collation();
            collation.weight_key(text_type.unpadded(text), out);
            if out[start..].contains(&0) {
                // Rare (a weight with a zero byte): escape it as any string.
                let weight_key = out.split_off(start);
                push_escaped(&weight_key, out);
            } else {
                out.extend_from_slice(&[0, 0]);
            }
        }
        (_, Value::Bytes(bytes)) => push_escaped(bytes, out),
        (_, Value::Date(date)) => {
            out.extend_from_slice(&((date.to_days() as u32) ^ (1 << 31)).to_be_bytes())
        }
        (_, Value::Time(n) | Value::Timestamp(n)) => {
            out.extend_from_slice(&((*n as u64) ^ SIGN64).to_be_bytes())
        }
        (_, Value::DateTime(dt)) => {
            out.extend_from_slice(&((dt.to_micros() as u64) ^ SIGN64).to_be_bytes())
        }
        (_, Value::Null) => unreachable!("handled above"),
    }
}

/// Maps a double onto u64 in IEEE total order, with -0.0 and 0.0 the same.
fn ordered_f64(x: f64) -> u64 {
    let bits = if x == 0.0 { 0 } else { x.to_bits() };
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// One end of a range: an encoded prefix of the index columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeBound {
    pub prefix: Vec<u8>,
    pub inclusive: bool,
}

pub struct OrderedIndex {
    memory: MemoryAccount,
    entries: BTreeSet<(Box<[u8]>, RowId)>,
}

fn charge(key: &[u8]) -> u64 {
    (key.len() as u64).div_ceil(8) * 8 + ENTRY_OVERHEAD_BYTES
}

impl OrderedIndex {
    /// Bytes of `DataMemory` it holds.
    pub fn held_bytes(&self) -> u64 {
        self.memory.held_bytes()
    }

    pub fn new(memory: Arc<DataMemory>) -> Self {
        Self {
            memory: MemoryAccount::new(memory),
            entries: BTreeSet::new(),
        }
    }

    /// Adds the entry; returns false (and charges nothing) if it was already there.
    pub fn insert(&mut self, key: &[u8], row: RowId) -> Result<bool, DataMemoryExhausted> {
        // Charged first and given back when it was there: one walk down the tree. An entry
        // already there needs no memory, so a full DataMemory refuses only a new one.
        if let Err(exhausted) = self.memory.reserve(charge(key)) {
            return if self.contains(key, row) {
                Ok(false)
            } else {
                Err(exhausted)
            };
        }
        let added = self.entries.insert((Box::<[u8]>::from(key), row));
        if !added {
            self.memory.release(charge(key));
        }
        Ok(added)
    }

    pub fn contains(&self, key: &[u8], row: RowId) -> bool {
        self.entries.contains(&(Box::<[u8]>::from(key), row))
    }

    pub fn remove(&mut self, key: &[u8], row: RowId) -> bool {
        let removed = self.entries.remove(&(Box::<[u8]>::from(key), row));
        if removed {
            self.memory.release(charge(key));
        }
        removed
    }

    /// Frees up to `entries` entries of an index being dropped: how many it freed.
    pub fn release_some(&mut self, entries: usize) -> usize {
        let mut released = 0;
        while released < entries {
            let Some((key, _)) = self.entries.pop_last() else {
                break;
            };
            self.memory.release(charge(&key));
            released += 1;
        }
        released
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Visits the entries between the bounds (`None`: unbounded) in key order, or in reverse
    /// for a descending scan, until `visit` returns false. `resume_after` continues a scan
    /// past the last entry it visited, whatever changed in between.
    pub fn scan(
        &self,
        lower: Option<&RangeBound>,
        upper: Option<&RangeBound>,
        descending: bool,
        resume_after: Option<(&[u8], RowId)>,
        mut visit: impl FnMut(&[u8], RowId) -> bool,
    ) {
        type Entry = (Box<[u8]>, RowId);
        let mut low: Bound<Entry> = match lower {
            None => Bound::Unbounded,
            Some(b) if b.inclusive => Bound::Included((b.prefix.clone().into(), RowId(0))),
            Some(b) => Bound::Included((past_prefix(&b.prefix), RowId(0))),
        };
        let mut high: Bound<Entry> = match upper {
            None => Bound::Unbounded,
            Some(b) if b.inclusive => Bound::Excluded((past_prefix(&b.prefix), RowId(0))),
            Some(b) => Bound::Excluded((b.prefix.clone().into(), RowId(0))),
        };
        if let Some((key, row)) = resume_after {
            let last = Bound::Excluded((Box::<[u8]>::from(key), row));
            let narrows = |bound: &Bound<Entry>, ascending| match bound {
                Bound::Unbounded => true,
                Bound::Included(b) | Bound::Excluded(b) => {
                    let resumed = (key, row);
                    let bound = (&b.0[..], b.1);
                    if ascending {
                        resumed >= bound
                    } else {
                        resumed <= bound
                    }
                }
            };
            if descending && narrows(&high, false) {
                high = last;
            } else if !descending && narrows(&low, true) {
                low = last;
            }
        }
        if is_empty(&low, &high) {
            return;
        }
        let range = self.entries.range((low, high));
        if descending {
            for (key, row) in range.rev() {
                if !visit(key, *row) {
                    return;
                }
            }
        } else {
            for (key, row) in range {
                if !visit(key, *row) {
                    return;
                }
            }
        }
    }
}

/// Whether no entry can lie between the bounds (`BTreeSet::range` panics on such ranges).
fn is_empty<T: Ord>(low: &Bound<T>, high: &Bound<T>) -> bool {
    match (low, high) {
        (Bound::Included(l), Bound::Included(h)) => l > h,
        (Bound::Included(l) | Bound::Excluded(l), Bound::Excluded(h))
        | (Bound::Excluded(l), Bound::Included(h)) => l >= h,
        _ => false,
    }
}

/// The smallest key greater than every key that extends `prefix`.
fn past_prefix(prefix: &[u8]) -> Box<[u8]> {
    let mut end = prefix.to_vec();
    end.push(PREFIX_END);
    end.into()
}

/// Appends a string so that byte order is its order: 0x00 is escaped as 0x00 0xFF and the
/// end marked by 0x00 0x00, so a shorter string sorts before every longer one extending it.
fn push_escaped(bytes: &[u8], out: &mut Vec<u8>) {
    for &byte in bytes {
        out.push(byte);
        if byte == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

#[cfg(test)]
mod tests;
