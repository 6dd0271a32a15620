//! A partition's secondary indexes and how entries follow row versions.
//!
//! An anchor has entries in an ordered index for the keys of its committed version and of
//! its pending version; a key both have is one entry. Writes add the new version's keys
//! before writing it and remove the replaced version's keys after; commit and abort remove
//! the losing version's.
//!
//! A unique index has no entries here: they live in its own table, distributed by the
//! unique key, so uniqueness holds across partitions. A write reports how it changed the
//! row's unique keys ([`UniqueChange`]); the coordinator applies that to the index table in
//! the same transaction.

use std::sync::Arc;

use super::{NewVersion, OperationError, OperationErrorKind, Partition, RowState};
use crate::memory::DataMemory;
use crate::ordered_index::{encode_ordered, OrderedIndex};
use crate::row::{check_value, RowError, RowLayout};
use crate::row_store::RowId;
use crate::schema::{IndexKind, IndexSchema};
use crate::types::{ColumnType, Value};

/// A secondary index as numbered by the dictionary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IndexId(pub u32);

pub(super) struct SecondaryIndex {
    pub id: IndexId,
    pub schema: IndexSchema,
    pub entries: Entries,
    /// While an ordered index is built a slice at a time: the row slots from here on may
    /// lack their entries (`None`: every row has them).
    pub built_below: Option<RowId>,
}

pub(super) enum Entries {
    /// A unique index: its entries are rows of its index table.
    InIndexTable,
    Ordered(OrderedIndex),
}

/// How a transaction's write changed a row's key in a unique index: the index table loses
/// the entry `removed` and gains `added` (the key, and the values of the index columns),
/// both naming the row by its encoded primary key.
#[derive(Clone, Debug, PartialEq)]
pub struct UniqueChange {
    pub index: IndexId,
    pub removed: Option<Vec<u8>>,
    pub added: Option<(Vec<u8>, Vec<Value>)>,
    pub primary_key: Vec<u8>,
}

impl SecondaryIndex {
    /// An index on columns of `column_types` (the schema's columns, in order).
    fn new(
        id: IndexId,
        schema: IndexSchema,
        column_types: Vec<ColumnType>,
        memory: Arc<DataMemory>,
    ) -> Self {
        let entries = match schema.kind {
            IndexKind::Unique => Entries::InIndexTable,
            IndexKind::Ordered => Entries::Ordered(OrderedIndex::for_columns(memory, column_types)),
        };
        Self {
            id,
            schema,
            entries,
            built_below: None,
        }
    }

    /// Appends this index's key of a stored row to `out`; false when the row has no entry
    /// (a unique key with a NULL column: SQL lets such rows repeat). Unique keys take the
    /// form of their index table's primary key, ordered keys the order-preserving one.
    pub fn key_of_row(
        &self,
        layout: &RowLayout,
        fixed: &[u8],
        var: &[u8],
        out: &mut Vec<u8>,
    ) -> bool {
        if self.schema.kind == IndexKind::Unique {
            return layout.key_of_row(&self.schema.columns, fixed, var, out);
        }
        for &column in &self.schema.columns {
            layout.ordered_key_of_column(fixed, var, column, out);
        }
        true
    }

    /// The key made of `values` for the first `values.len()` index columns.
    pub fn key_of_values(&self, layout: &RowLayout, values: &[Value]) -> Result<Vec<u8>, RowError> {
        index_key_of_values(layout, &self.schema, values)
    }

    fn remove(&mut self, key: &[u8], anchor: RowId) {
        match &mut self.entries {
            Entries::InIndexTable => {}
            Entries::Ordered(tree) => {
                let removed = tree.remove(key, anchor);
                debug_assert!(
                    removed || self.built_below.is_some(),
                    "an ordered entry exists for each version key of a built index"
                );
            }
        }
    }
}

/// Room a key buffer starts with: keys of a few numeric or short text columns fit, so
/// building one reallocates nothing.
const KEY_BYTES_USUAL: usize = 32;

/// Per index, the key of a version (`None`: no entry); no version at all has no keys, an
/// empty list (read with [`key_at`]).
pub(super) type VersionKeys = Vec<Option<Vec<u8>>>;

/// The key `keys` have in the index at `position`.
fn key_at(keys: &[Option<Vec<u8>>], position: usize) -> Option<&Vec<u8>> {
    keys.get(position).and_then(Option::as_ref)
}

/// Per index, the key of a stored row (`None`: no entry), into `keys`, reusing its
/// buffers.
pub(super) fn keys_of_row_into(
    indexes: &[SecondaryIndex],
    layout: &RowLayout,
    fixed: &[u8],
    var: &[u8],
    keys: &mut VersionKeys,
) {
    keys.resize_with(indexes.len(), || None);
    for (index, slot) in indexes.iter().zip(keys.iter_mut()) {
        let mut key = slot
            .take()
            .unwrap_or_else(|| Vec::with_capacity(KEY_BYTES_USUAL));
        key.clear();
        if index.key_of_row(layout, fixed, var, &mut key) {
            *slot = Some(key);
        }
    }
}

/// The indexes [`add_entries`] gave an entry, to take back if the write fails: a bit each
/// for the first 64 (MySQL's most per table, so no allocation per write), a list past them.
#[derive(Default)]
pub(super) struct Added {
    first: u64,
    more: Vec<usize>,
}

impl Added {
    fn push(&mut self, position: usize) {
        match position {
            0..64 => self.first |= 1 << position,
            _ => self.more.push(position),
        }
    }

    fn positions(&self) -> impl Iterator<Item = usize> + '_ {
        (0..64)
            .filter(|&position| self.first & (1 << position) != 0)
            .chain(self.more.iter().copied())
    }
}

/// Adds `anchor`'s ordered-index entries for `keys` that it lacks; on error nothing changed.
pub(super) fn add_entries(
    partition: &mut Partition,
    anchor: RowId,
    keys: &[Option<Vec<u8>>],
) -> Result<Added, OperationError> {
    let mut added = Added::default();
    for (position, key) in keys.iter().enumerate() {
        let Some(key) = key else { continue };
        let Entries::Ordered(tree) = &mut partition.indexes[position].entries else {
            continue;
        };
        match tree.insert(key, anchor) {
            Ok(true) => added.push(position),
            Ok(false) => {}
            Err(error) => {
                remove_added(partition, anchor, keys, added);
                return Err(error.into());
            }
        }
    }
    Ok(added)
}

/// Records, for each unique index whose key of the row differs between the version the
/// transaction saw before its write (`before`) and after it (`after`), the change its index
/// table needs. The new version is in the partition's scratch row.
pub(super) fn report_unique_changes(
    partition: &mut Partition,
    anchor: RowId,
    before: &[Option<Vec<u8>>],
    after: &[Option<Vec<u8>>],
) {
    for (position, index) in partition.indexes.iter().enumerate() {
        let (removed, added) = (key_at(before, position), key_at(after, position));
        if !matches!(index.entries, Entries::InIndexTable) || removed == added {
            continue;
        }
        let added = added.cloned().map(|key| {
            let values = index
                .schema
                .columns
                .iter()
                .map(|&column| {
                    partition
                        .layout
                        .value(&partition.fixed, &partition.var, column)
                })
                .collect();
            (key, values)
        });
        let mut primary_key = Vec::new();
        let (fixed, var) = partition.rows.get(anchor);
        partition
            .layout
            .primary_key_of_row(fixed, var, &mut primary_key);
        partition.unique_changes.push(UniqueChange {
            index: index.id,
            removed: removed.cloned(),
            added,
            primary_key,
        });
    }
}

/// Takes back the entries `add_entries(partition, anchor, keys)` added.
pub(super) fn remove_added(
    partition: &mut Partition,
    anchor: RowId,
    keys: &[Option<Vec<u8>>],
    added: Added,
) {
    for position in added.positions() {
        let key = key_at(keys, position).expect("an entry was added for the key");
        partition.indexes[position].remove(key, anchor);
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
            .any(|other| key_at(other, position) == Some(key))
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
    let index = new_index(partition, id, schema)?;
    partition.indexes.push(index);
    let position = partition.indexes.len() - 1;
    if let Err(error) = enter_anchors(partition, position, RowId(0), usize::MAX) {
        partition.indexes.pop();
        return Err(error);
    }
    Ok(())
}

/// Adds an ordered index with no entry yet: [`build_slice`] fills it, while writes keep
/// the entries of the rows they change (a removal of an entry not made yet removes
/// nothing) and no scan reads through it.
pub(super) fn add_building_index(
    partition: &mut Partition,
    id: IndexId,
    schema: IndexSchema,
) -> Result<(), OperationError> {
    let mut index = new_index(partition, id, schema)?;
    if matches!(index.entries, Entries::Ordered(_)) {
        index.built_below = Some(RowId(0));
    }
    partition.indexes.push(index);
    Ok(())
}

/// Enters the entries of the next `rows_max` row slots of building index `id`; true once
/// every row has its entries (the index is then built, and scans may read it).
pub(super) fn build_slice(
    partition: &mut Partition,
    id: IndexId,
    rows_max: usize,
) -> Result<bool, OperationError> {
    let position = partition.index_position(id)?;
    let Some(first) = partition.indexes[position].built_below else {
        return Ok(true);
    };
    let next = enter_anchors(partition, position, first, rows_max)?;
    partition.indexes[position].built_below = next;
    Ok(next.is_none())
}

/// A new secondary index of `partition`, checked against its columns.
fn new_index(
    partition: &Partition,
    id: IndexId,
    schema: IndexSchema,
) -> Result<SecondaryIndex, OperationError> {
    if partition.index_position(id).is_ok() {
        return Err(partition.duplicate(&schema.name));
    }
    let column_types = (schema.columns.iter())
        .map(|&column| match partition.layout.column(column) {
            Some(found) => Ok(found.column_type),
            None => Err(OperationErrorKind::NoSuchColumn {
                table: partition.table(),
                column,
            }
            .into()),
        })
        .collect::<Result<Vec<_>, OperationError>>()?;
    let memory = partition.memory.clone();
    Ok(SecondaryIndex::new(id, schema, column_types, memory))
}

/// Enters into index `position` the keys of every version of the anchors among the
/// `rows_max` row slots from `first` on; returns the slot to go on from (`None`: the
/// last slot was reached). A unique index has no entries here: its index table's are the
/// client's to fill (`client/src/index_build.rs`).
fn enter_anchors(
    partition: &mut Partition,
    position: usize,
    first: RowId,
    rows_max: usize,
) -> Result<Option<RowId>, OperationError> {
    let index = &partition.indexes[position];
    if !matches!(index.entries, Entries::Ordered(_)) {
        return Ok(None);
    }
    let mut slots = partition.rows.row_ids_from(first);
    let mut entries = Vec::new();
    let mut next = None;
    for (visited, row) in slots.by_ref().enumerate() {
        if visited == rows_max {
            next = Some(row);
            break;
        }
        if !matches!(
            partition.state(row),
            RowState::Committed | RowState::Pending
        ) {
            continue;
        }
        let mut versions = Vec::with_capacity(2);
        if partition.committed_version(row).is_some() {
            versions.push(row);
        }
        match partition.pending.get(&row).map(|pending| pending.new) {
            Some(NewVersion::Copy(copy)) => versions.push(copy),
            Some(NewVersion::InAnchor) => versions.push(row),
            Some(NewVersion::Absent) | None => {}
        }
        for version in versions {
            let (fixed, var) = partition.rows.get(version);
            let mut key = Vec::new();
            if index.key_of_row(&partition.layout, fixed, var, &mut key) {
                entries.push((key, row));
            }
        }
    }
    let Entries::Ordered(tree) = &mut partition.indexes[position].entries else {
        return Ok(None);
    };
    for (key, anchor) in entries {
        // A write may have entered it already.
        tree.insert(&key, anchor)?;
    }
    Ok(next)
}

/// The key of index `index` of the table laid out as `layout`, made of `values` for its first
/// `values.len()` columns (a prefix is a scan bound). `index` must have passed validation
/// against the table (`IndexSchema::validate`).
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
