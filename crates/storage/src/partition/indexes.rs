//! A partition's secondary indexes and how entries follow row versions.
//!
//! An anchor has entries for the keys of its committed version and of its pending version;
//! a key both have is one entry. Writes add the new version's keys before writing it and
//! remove the replaced version's keys after; commit and abort remove the losing version's.

use std::sync::Arc;

use super::{NewVersion, OperationError, Partition, RowState};
use crate::hash_index::{HashIndex, IndexError};
use crate::locks::TransactionId;
use crate::memory::DataMemory;
use crate::ordered_index::{encode_ordered, OrderedIndex};
use crate::row::{check_value, RowError, RowLayout};
use crate::row_store::RowId;
use crate::schema::{IndexKind, IndexSchema};
use crate::types::Value;

/// A secondary index as numbered by the dictionary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IndexId(pub u32);

pub(super) struct SecondaryIndex {
    pub id: IndexId,
    pub schema: IndexSchema,
    pub entries: Entries,
}

pub(super) enum Entries {
    Unique(HashIndex),
    Ordered(OrderedIndex),
}

impl SecondaryIndex {
    fn new(id: IndexId, schema: IndexSchema, memory: Arc<DataMemory>) -> Self {
        let entries = match schema.kind {
            IndexKind::Unique => Entries::Unique(HashIndex::new(memory)),
            IndexKind::Ordered => Entries::Ordered(OrderedIndex::new(memory)),
        };
        Self {
            id,
            schema,
            entries,
        }
    }

    /// Appends this index's key of a stored row to `out`; false when the row has no entry
    /// (a unique key with a NULL column: SQL lets such rows repeat).
    pub fn key_of_row(
        &self,
        layout: &RowLayout,
        fixed: &[u8],
        var: &[u8],
        out: &mut Vec<u8>,
    ) -> bool {
        let unique = self.schema.kind == IndexKind::Unique;
        for &column in &self.schema.columns {
            if unique && layout.is_null(fixed, column) {
                return false;
            }
            let column_type = layout.column(column).expect("validated index").column_type;
            encode_ordered(column_type, &layout.value(fixed, var, column), out);
        }
        true
    }

    /// The key made of `values` for the first `values.len()` index columns.
    pub fn key_of_values(&self, layout: &RowLayout, values: &[Value]) -> Result<Vec<u8>, RowError> {
        index_key_of_values(layout, &self.schema, values)
    }

    pub fn find_unique(&self, key: &[u8]) -> Option<RowId> {
        match &self.entries {
            Entries::Unique(map) => map.get(key),
            Entries::Ordered(_) => None,
        }
    }

    fn remove(&mut self, key: &[u8], anchor: RowId) {
        match &mut self.entries {
            Entries::Unique(map) => {
                let removed = map.remove(key);
                debug_assert_eq!(removed, Some(anchor), "a unique entry names its anchor");
            }
            Entries::Ordered(tree) => {
                let removed = tree.remove(key, anchor);
                debug_assert!(removed, "an ordered entry exists for each version key");
            }
        }
    }
}

/// Per index, the key of a stored row (`None`: no entry).
pub(super) fn keys_of_row(
    indexes: &[SecondaryIndex],
    layout: &RowLayout,
    fixed: &[u8],
    var: &[u8],
) -> Vec<Option<Vec<u8>>> {
    indexes
        .iter()
        .map(|index| {
            let mut key = Vec::new();
            index
                .key_of_row(layout, fixed, var, &mut key)
                .then_some(key)
        })
        .collect()
}

/// Entries added by [`add_entries`], to take back if the write fails.
pub(super) type Added = Vec<(usize, Vec<u8>)>;

/// Adds `anchor`'s entries for `keys` that it lacks. A unique key held by another anchor
/// is a duplicate (or busy, while that anchor's change is unfinished); then nothing changed.
pub(super) fn add_entries(
    partition: &mut Partition,
    transaction: TransactionId,
    anchor: RowId,
    keys: &[Option<Vec<u8>>],
) -> Result<Added, OperationError> {
    let mut added = Added::new();
    for (position, key) in keys.iter().enumerate() {
        let Some(key) = key else { continue };
        let result = match &partition.indexes[position].entries {
            Entries::Unique(map) => match map.get(key) {
                Some(owner) if owner == anchor => Ok(false),
                Some(owner) => Err(unique_conflict(
                    partition,
                    transaction,
                    position,
                    owner,
                    key,
                )),
                None => Ok(true),
            },
            Entries::Ordered(tree) => Ok(!tree.contains(key, anchor)),
        };
        let inserted = result.and_then(|needed| {
            if !needed {
                return Ok(false);
            }
            let memory = match &mut partition.indexes[position].entries {
                Entries::Unique(map) => map.insert(key, anchor).map_err(|error| match error {
                    IndexError::Memory(error) => error,
                    IndexError::Duplicate => unreachable!("looked up first"),
                }),
                Entries::Ordered(tree) => tree.insert(key, anchor).map(|_| ()),
            };
            memory.map(|()| true).map_err(OperationError::from)
        });
        match inserted {
            Ok(true) => added.push((position, key.clone())),
            Ok(false) => {}
            Err(error) => {
                remove_added(partition, anchor, added);
                return Err(error);
            }
        }
    }
    Ok(added)
}

/// Why a unique key held by `owner` cannot be taken: a row this transaction sees has it
/// (duplicate), or an unfinished change of `owner` may still give it up (busy: retry).
fn unique_conflict(
    partition: &Partition,
    transaction: TransactionId,
    position: usize,
    owner: RowId,
    key: &[u8],
) -> OperationError {
    let table = partition.table();
    let index = partition.indexes[position].schema.name.clone();
    let changed_by_another = partition
        .pending
        .get(&owner)
        .is_some_and(|pending| pending.transaction != transaction);
    let seen_with_key = partition
        .version_for(transaction, owner)
        .is_some_and(|version| {
            let (fixed, var) = partition.rows.get(version);
            let mut found = Vec::new();
            partition.indexes[position].key_of_row(&partition.layout, fixed, var, &mut found)
                && found == key
        });
    if seen_with_key && !changed_by_another {
        OperationError::Duplicate { table, index }
    } else {
        OperationError::UniqueKeyBusy { table, index }
    }
}

pub(super) fn remove_added(partition: &mut Partition, anchor: RowId, added: Added) {
    for (position, key) in added {
        partition.indexes[position].remove(&key, anchor);
    }
}

/// Removes `anchor`'s entries for `keys`, except keys another version still has (`keep`).
pub(super) fn remove_entries(
    partition: &mut Partition,
    anchor: RowId,
    keys: &[Option<Vec<u8>>],
    keep: &[&[Option<Vec<u8>>]],
) {
    for (position, key) in keys.iter().enumerate() {
        let Some(key) = key else { continue };
        if keep
            .iter()
            .any(|other| other[position].as_ref() == Some(key))
        {
            continue;
        }
        partition.indexes[position].remove(key, anchor);
    }
}

/// Builds a new index from every version in the partition, then adds it.
pub(super) fn add_index(
    partition: &mut Partition,
    id: IndexId,
    schema: IndexSchema,
) -> Result<(), OperationError> {
    if partition.index_position(id).is_ok() {
        return Err(partition.duplicate(&schema.name));
    }
    if let Some(&column) = schema
        .columns
        .iter()
        .find(|&&column| partition.layout.column(column).is_none())
    {
        return Err(OperationError::NoSuchColumn {
            table: partition.table(),
            column,
        });
    }
    let mut index = SecondaryIndex::new(id, schema, partition.memory.clone());
    let anchors: Vec<RowId> = partition
        .rows
        .row_ids()
        .filter(|&row| {
            matches!(
                partition.state(row),
                RowState::Committed | RowState::Pending
            )
        })
        .collect();
    for anchor in anchors {
        let mut versions = Vec::with_capacity(2);
        if partition.committed_version(anchor).is_some() {
            versions.push(anchor);
        }
        match partition.pending.get(&anchor).map(|pending| pending.new) {
            Some(NewVersion::Copy(copy)) => versions.push(copy),
            Some(NewVersion::InAnchor) => versions.push(anchor),
            Some(NewVersion::Absent) | None => {}
        }
        for version in versions {
            let (fixed, var) = partition.rows.get(version);
            let mut key = Vec::new();
            if !index.key_of_row(&partition.layout, fixed, var, &mut key) {
                continue;
            }
            match &mut index.entries {
                Entries::Unique(map) => match map.insert(&key, anchor) {
                    Ok(()) => {}
                    Err(IndexError::Duplicate) if map.get(&key) == Some(anchor) => {}
                    Err(IndexError::Duplicate) => {
                        return Err(partition.duplicate(&index.schema.name));
                    }
                    Err(IndexError::Memory(error)) => return Err(error.into()),
                },
                Entries::Ordered(tree) => {
                    tree.insert(&key, anchor)?;
                }
            }
        }
    }
    partition.indexes.push(index);
    Ok(())
}

/// The key of index `index` of the table laid out as `layout`, made of `values` for its first
/// `values.len()` columns (a prefix is a scan bound; a unique lookup needs them all). Clients
/// build unique-lookup keys with it, so they match the node's byte for byte. `index` must
/// have passed validation against the table (`IndexSchema::validate`).
pub fn index_key_of_values(
    layout: &RowLayout,
    index: &IndexSchema,
    values: &[Value],
) -> Result<Vec<u8>, RowError> {
    if values.len() > index.columns.len() {
        return Err(RowError::ColumnCount {
            table: format!("{} (index {})", layout.table(), index.name),
            expected: index.columns.len(),
            given: values.len(),
        });
    }
    let mut key = Vec::new();
    for (&column, value) in index.columns.iter().zip(values) {
        let found = layout
            .column(column)
            .expect("indexes are validated against their table");
        if !value.is_null() {
            check_value(found, value)?;
        }
        encode_ordered(found.column_type, value, &mut key);
    }
    Ok(key)
}
