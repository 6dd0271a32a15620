//! One partition replica: rows, primary key, secondary indexes, row versions and row locks.
//!
//! **Versions.** Every key has an *anchor* row, found through the primary key. The anchor
//! holds the committed version when there is one. A transaction's uncommitted change lives
//! beside it until commit or abort ([`Pending`]): an insert writes the anchor itself (readers
//! see no committed version), an update writes a *copy* row, a delete only marks the anchor.
//! Committed reads take no lock and read the anchor; commit moves the copy into the anchor.
//!
//! **Locks.** Writes take an exclusive lock on the anchor, locked reads a shared or exclusive
//! one; all are held until the transaction commits or aborts. An operation that must wait
//! gets [`Outcome::Waiting`]; the caller parks it and runs it again when a commit, abort or
//! [`Partition::cancel_wait`] reports it in the returned [`Granted`] list. An anchor outlives
//! its last version while anyone still holds or waits for its lock, so a waiter never wakes
//! on a slot reused by another key.
//!
//! **Ordered indexes** hold entries for the committed version *and* for pending versions;
//! scans check each entry against the version they read and skip entries that belong to
//! another version. **Unique indexes** keep their entries in a table of their own; a write
//! reports how it changed the row's unique keys ([`Partition::take_unique_changes`]).

mod changes;
mod indexes;
mod scan;
#[cfg(test)]
mod tests;
mod watched;

use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::Arc;

use crate::hash_index::{HashIndex, Probe};
use crate::locks::{LockError, LockMode, LockOutcome, LockTable, TransactionId};
use crate::memory::{DataMemory, DataMemoryExhausted};
use crate::row::{RowError, RowLayout};
use crate::row_store::{NearbyRows, RowId, RowStore};
use crate::schema::{IndexSchema, SchemaError};
use crate::types::Value;

pub use indexes::{index_key_of_values, IndexId, UniqueChange};
pub use scan::{IndexBound, ScanPosition, ScanRange, ScanVersions};
pub use watched::{KeyChange, WatchSide, WatchedKey};

use indexes::SecondaryIndex;

/// A stored version of a row: its fixed part and its variable part.
pub type StoredRow<'a> = (&'a [u8], &'a [u8]);

/// What an operation did, or that it waits for a row lock held by another transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome<T> {
    Done(T),
    /// Parked on the lock of this anchor row; run the operation again once granted.
    Waiting(RowId),
}

/// A parked operation of `transaction` on `row` may run again: it holds the lock now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Granted {
    pub transaction: TransactionId,
    pub row: RowId,
}

/// A change a commit made, as the REDO log records it: row bytes as the partition stores
/// them (the fixed part and the variable part).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommittedChange<'a> {
    /// The row's new committed version.
    Written { fixed: &'a [u8], var: &'a [u8] },
    /// The row is gone; these are its last bytes, which hold its primary key.
    Deleted { fixed: &'a [u8], var: &'a [u8] },
}

/// Why an operation on a partition failed: its [`OperationErrorKind`] behind one pointer.
/// The write path returns `Result`s of it at every call; with the 80-byte kind inline they
/// came back through memory, copied at each return and read back across the callee's
/// narrower stores (a stall each: half of `put_encoded`'s samples in a load).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(transparent)]
pub struct OperationError(Box<OperationErrorKind>);

impl OperationError {
    pub fn kind(&self) -> &OperationErrorKind {
        &self.0
    }
}

impl From<OperationErrorKind> for OperationError {
    fn from(kind: OperationErrorKind) -> Self {
        Self(Box::new(kind))
    }
}

/// The errors of the storage parts an operation uses, as its own.
macro_rules! operation_error_from {
    ($($source:ty),*) => {$(
        impl From<$source> for OperationError {
            fn from(error: $source) -> Self {
                OperationErrorKind::from(error).into()
            }
        }
    )*};
}

operation_error_from!(RowError, SchemaError, DataMemoryExhausted, LockError);

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OperationErrorKind {
    #[error("no row with this key in table `{table}`")]
    NotFound { table: String },
    #[error("duplicate key in index `{index}` of table `{table}`")]
    Duplicate { table: String, index: String },
    #[error("primary key column `{column}` of table `{table}` cannot be updated")]
    PrimaryKeyUpdate { table: String, column: String },
    #[error("table `{table}` has no index {index:?}")]
    NoSuchIndex { table: String, index: IndexId },
    #[error("index `{index}` of table `{table}` is not an ordered index")]
    NotOrdered { table: String, index: String },
    #[error(
        "a scan of every version of table `{table}`'s rows takes an index range and no filter"
    )]
    AnyVersionScan { table: String },
    #[error("index `{index}` of table `{table}` is being built: nothing reads through it yet")]
    IndexBuilding { table: String, index: String },
    #[error("table `{table}` has no column {column}")]
    NoSuchColumn { table: String, column: usize },
    #[error(transparent)]
    Row(#[from] RowError),
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error(transparent)]
    Memory(#[from] DataMemoryExhausted),
    #[error(transparent)]
    Locks(#[from] LockError),
}

/// Per anchor row: which versions exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RowState {
    /// Not a row of this partition (a free slot).
    Unused,
    /// The anchor holds the committed version; no transaction changes it.
    Committed,
    /// A transaction changes the row: see `Partition::pending`.
    Pending,
    /// No version at all, kept only because its lock is still held or waited for.
    Empty,
    /// A pending version of some other anchor.
    Copy,
}

/// A transaction's uncommitted change to one anchor.
#[derive(Clone, Copy, Debug)]
struct Pending {
    transaction: TransactionId,
    /// Whether the anchor holds a committed version (it does unless the row is new).
    committed: bool,
    new: NewVersion,
    /// Whether the transaction's exclusive lock on the anchor is implied by this change,
    /// with no entry in the lock table: a new row's insert (InnoDB's implicit lock). The
    /// lock table is a hash map that every row of a load would otherwise enter and leave,
    /// a cache miss each way; another transaction asking for the row puts the lock there
    /// first ([`Partition::lock`]).
    lock_implied: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NewVersion {
    /// The transaction deleted the row (or inserted and then deleted it).
    Absent,
    /// The anchor itself holds the new version (a row with no committed version).
    InAnchor,
    /// This copy row holds the new version.
    Copy(RowId),
}

/// Limits of one partition.
#[derive(Clone, Copy, Debug)]
pub struct PartitionLimits {
    /// Row locks held or waited for at once (NDB: MaxNoOfConcurrentOperations).
    pub locks_max: usize,
    /// Bytes of deleted keys kept for restarting replicas (see `changes`).
    pub deleted_keys_bytes_max: usize,
}

impl Default for PartitionLimits {
    fn default() -> Self {
        Self {
            locks_max: 100_000,
            deleted_keys_bytes_max: 1 << 20,
        }
    }
}

pub struct Partition {
    layout: Arc<RowLayout>,
    memory: Arc<DataMemory>,
    rows: RowStore,
    primary: HashIndex,
    indexes: Vec<SecondaryIndex>,
    locks: LockTable<RowId>,
    /// By row id, parallel to the row store's slots.
    states: Vec<RowState>,
    /// By anchor row id: the GCI that wrote its committed version.
    gcis: Vec<u64>,
    deleted: changes::DeletedKeys,
    /// Uncommitted changes by anchor. Hashed so that neighbouring rows are neighbours here:
    /// a transaction's new rows take consecutive ids and its commit visits them in order.
    pending: HashMap<RowId, Pending, NearbyRows>,
    /// Anchors each open transaction has locked here (possibly repeated).
    transactions: FxHashMap<TransactionId, Vec<RowId>>,
    /// Scratch space for encoding rows, so writes do not allocate per operation.
    fixed: Vec<u8>,
    var: Vec<u8>,
    /// Scratch space for a deleted row's primary key.
    key: Vec<u8>,
    /// Scratch space for the versions' index keys of a write, a commit or an abort
    /// ([`Partition::with_scratch_keys`]).
    scratch_keys: [indexes::VersionKeys; 3],
    /// Unique-key changes of the writes since the caller last took them.
    unique_changes: Vec<UniqueChange>,
    /// Keys the table's foreign keys watch, and their changes since the caller last took
    /// them.
    watched: Vec<WatchedKey>,
    key_changes: Vec<KeyChange>,
}

impl Partition {
    pub fn new(layout: Arc<RowLayout>, memory: Arc<DataMemory>, limits: PartitionLimits) -> Self {
        Self {
            rows: RowStore::new(memory.clone(), layout.fixed_bytes()),
            primary: HashIndex::new(memory.clone()),
            indexes: Vec::new(),
            locks: LockTable::new(limits.locks_max),
            states: Vec::new(),
            gcis: Vec::new(),
            deleted: changes::DeletedKeys::new(limits.deleted_keys_bytes_max),
            pending: HashMap::default(),
            transactions: FxHashMap::default(),
            fixed: vec![0; layout.fixed_bytes()],
            var: Vec::new(),
            key: Vec::new(),
            scratch_keys: Default::default(),
            unique_changes: Vec::new(),
            watched: Vec::new(),
            key_changes: Vec::new(),
            layout,
            memory,
        }
    }

    /// A partition like this one (layout, memory, indexes) without a row: what a restore
    /// that must start over from another checkpoint begins with again.
    ///
    /// # Panics
    ///
    /// If a transaction has changes here (a restore runs before any transaction).
    pub fn emptied(&self, limits: PartitionLimits) -> Result<Self, OperationError> {
        assert!(
            self.transactions.is_empty(),
            "a partition is emptied only while no transaction uses it"
        );
        let mut empty = Partition::new(self.layout.clone(), self.memory.clone(), limits);
        for index in &self.indexes {
            empty.add_index(index.id, index.schema.clone())?;
        }
        empty.watched = self.watched.clone();
        Ok(empty)
    }

    /// Takes the layout of the table's definition changed in place: every row stored here,
    /// committed or pending, stays valid and reads alike under it.
    pub fn change_layout(&mut self, layout: Arc<RowLayout>) {
        assert!(
            layout.reads_rows_of(&self.layout),
            "table `{}` changed in a way its stored rows cannot follow",
            self.layout.table()
        );
        self.layout = layout;
    }

    pub fn layout(&self) -> &Arc<RowLayout> {
        &self.layout
    }

    /// Bytes of `DataMemory` the partition holds: its rows (pending versions too), its
    /// primary key's index and its ordered indexes.
    pub fn held_bytes(&self) -> u64 {
        let ordered = self.indexes.iter().map(|index| match &index.entries {
            indexes::Entries::Ordered(entries) => entries.held_bytes(),
            indexes::Entries::InIndexTable => 0,
        });
        self.rows.held_bytes() + self.primary.held_bytes() + ordered.sum::<u64>()
    }

    /// Committed rows (rows only a transaction has inserted are not counted).
    pub fn committed_rows(&self) -> usize {
        let visible = |(row, state): (usize, &RowState)| match state {
            RowState::Committed => true,
            RowState::Pending => self.pending[&RowId(row as u32)].committed,
            _ => false,
        };
        self.states
            .iter()
            .enumerate()
            .filter(|&s| visible(s))
            .count()
    }

    /// Transactions with locks or changes here.
    /// Every row lock held or waited for here: `(row, transaction, mode, granted)`.
    pub fn each_lock(&self, mut visit: impl FnMut(RowId, TransactionId, LockMode, bool)) {
        self.locks.each(&mut visit);
        for (&anchor, pending) in &self.pending {
            if pending.lock_implied {
                visit(anchor, pending.transaction, LockMode::Exclusive, true);
            }
        }
    }

    pub fn open_transactions(&self) -> usize {
        self.transactions.len()
    }

    // ----- committed reads: no locks, `&self`, safe beside a writer under a read lock -----

    /// The committed version of the row with primary key `key` ([`RowLayout::primary_key_of_values`]),
    /// as (fixed part, variable part).
    pub fn read_committed(&self, key: &[u8]) -> Option<StoredRow<'_>> {
        // A committed version lives in its anchor: the row the probe compared is the answer.
        let (Probe::Found(anchor), compared) = self.probe_primary(key) else {
            return None;
        };
        let version = self.committed_version(anchor)?;
        assert_eq!(version, anchor, "a committed version is in its anchor");
        compared
    }

    /// The anchor of the row with primary key `key`.
    fn anchor_of(&self, key: &[u8]) -> Option<RowId> {
        match self.probe_primary(key).0 {
            Probe::Found(anchor) => Some(anchor),
            Probe::Absent(_) => None,
        }
    }

    /// Hints the CPU to load the primary index bucket of `key`, for an operation on it
    /// soon after: a batch's writes load theirs ahead, instead of each waiting in turn.
    pub fn prefetch_key(&self, key: &[u8]) {
        self.primary.prefetch(self.primary.hash(key));
    }

    /// The primary hash index keeps no keys: a candidate anchor's row is compared. Returns
    /// what the probe found and the last row it compared (the found anchor's, if found).
    fn probe_primary(&self, key: &[u8]) -> (Probe, Option<StoredRow<'_>>) {
        let (rows, layout) = (&self.rows, &self.layout);
        let mut compared = None;
        let found = self.primary.probe(key, |anchor| {
            let (fixed, var) = rows.get(anchor);
            compared = Some((fixed, var));
            layout.row_has_primary_key(fixed, var, key)
        });
        (found, compared)
    }

    /// The row holding a version, for reading what [`Partition::read_locked`] returned.
    pub fn version(&self, version: RowId) -> (&[u8], &[u8]) {
        self.rows.get(version)
    }

    // ----- operations of transactions -----

    /// Reads under a lock held until the transaction ends; returns the version the
    /// transaction sees (its own change, else the committed version), if any.
    pub fn read_locked(
        &mut self,
        transaction: TransactionId,
        key: &[u8],
        mode: LockMode,
    ) -> Result<Outcome<Option<RowId>>, OperationError> {
        let Some(anchor) = self.anchor_of(key) else {
            return Ok(Outcome::Done(None));
        };
        if let LockOutcome::Waiting = self.lock(transaction, anchor, mode)? {
            return Ok(Outcome::Waiting(anchor));
        }
        Ok(Outcome::Done(self.version_for(transaction, anchor)))
    }

    /// Inserts a row (every column given). A visible row with the same key is a duplicate.
    pub fn insert(
        &mut self,
        transaction: TransactionId,
        values: &[Value],
    ) -> Result<Outcome<()>, OperationError> {
        self.put(transaction, values, false)
    }

    /// Inserts the row, or replaces every column of the row with its key (upsert).
    pub fn write(
        &mut self,
        transaction: TransactionId,
        values: &[Value],
    ) -> Result<Outcome<()>, OperationError> {
        self.put(transaction, values, true)
    }

    fn put(
        &mut self,
        transaction: TransactionId,
        values: &[Value],
        replace: bool,
    ) -> Result<Outcome<()>, OperationError> {
        self.encode(values)?;
        self.put_encoded(transaction, replace)
    }

    /// [`Self::insert`] of the values `encoded` holds as a client encoded them
    /// (`codec::write_values`), written into the row without a `Value` in between.
    pub fn insert_from_wire(
        &mut self,
        transaction: TransactionId,
        encoded: &[u8],
    ) -> Result<Outcome<()>, OperationError> {
        self.put_from_wire(transaction, encoded, false)
    }

    /// [`Self::write`] of the values `encoded` holds, as [`Self::insert_from_wire`].
    pub fn write_from_wire(
        &mut self,
        transaction: TransactionId,
        encoded: &[u8],
    ) -> Result<Outcome<()>, OperationError> {
        self.put_from_wire(transaction, encoded, true)
    }

    fn put_from_wire(
        &mut self,
        transaction: TransactionId,
        encoded: &[u8],
        replace: bool,
    ) -> Result<Outcome<()>, OperationError> {
        (self.layout).encode_from_wire(encoded, &mut self.fixed, &mut self.var)?;
        self.put_encoded(transaction, replace)
    }

    /// Puts the row encoded in the scratch buffers.
    fn put_encoded(
        &mut self,
        transaction: TransactionId,
        replace: bool,
    ) -> Result<Outcome<()>, OperationError> {
        // The key goes in the scratch buffer (given back below), so a write allocates
        // nothing for it.
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        self.layout
            .primary_key_of_row(&self.fixed, &self.var, &mut key);
        let outcome = self.put_keyed(transaction, &key, replace);
        self.key = key;
        outcome
    }

    fn put_keyed(
        &mut self,
        transaction: TransactionId,
        key: &[u8],
        replace: bool,
    ) -> Result<Outcome<()>, OperationError> {
        let anchor = match self.probe_primary(key).0 {
            Probe::Found(anchor) => anchor,
            Probe::Absent(hash) => {
                let new_anchor = self.rows.insert(&self.fixed, &self.var)?;
                if let Err(exhausted) = self.primary.add(hash, new_anchor) {
                    self.rows.delete(new_anchor);
                    return Err(exhausted.into());
                }
                return self
                    .fill_new_anchor(transaction, key, new_anchor)
                    .map(Outcome::Done);
            }
        };
        if let LockOutcome::Waiting = self.lock(transaction, anchor, LockMode::Exclusive)? {
            return Ok(Outcome::Waiting(anchor));
        }
        if !replace && self.version_for(transaction, anchor).is_some() {
            return Err(self.duplicate("PRIMARY"));
        }
        self.stage(transaction, anchor, true)?;
        Ok(Outcome::Done(()))
    }

    /// Changes the given columns of an existing row. Primary key columns cannot change.
    pub fn update(
        &mut self,
        transaction: TransactionId,
        key: &[u8],
        changes: &[(usize, Value)],
    ) -> Result<Outcome<()>, OperationError> {
        for (column, value) in changes {
            let Some(found) = self.layout.column(*column) else {
                return Err(OperationErrorKind::NoSuchColumn {
                    table: self.table(),
                    column: *column,
                }
                .into());
            };
            if self.layout.primary_key().contains(column) {
                return Err(OperationErrorKind::PrimaryKeyUpdate {
                    table: self.table(),
                    column: found.name.clone(),
                }
                .into());
            }
            crate::row::check_value(found, value)?;
        }
        let Some(anchor) = self.anchor_of(key) else {
            return Err(self.not_found());
        };
        if let LockOutcome::Waiting = self.lock(transaction, anchor, LockMode::Exclusive)? {
            return Ok(Outcome::Waiting(anchor));
        }
        let Some(version) = self.version_for(transaction, anchor) else {
            return Err(self.not_found());
        };
        let (fixed, var) = self.rows.get(version);
        let mut values = self.layout.values(fixed, var);
        for (column, value) in changes {
            values[*column] = value.clone();
        }
        self.encode(&values)?;
        self.stage(transaction, anchor, true)?;
        Ok(Outcome::Done(()))
    }

    /// Bytes of the row image (fixed and variable parts) the last `insert`, `write` or
    /// `update` encoded: what the REDO log records for it at commit. Asked right after the
    /// write, before anything else encodes a row here.
    pub fn staged_image_bytes(&self) -> usize {
        self.fixed.len() + self.var.len()
    }

    /// Deletes an existing row.
    pub fn delete(
        &mut self,
        transaction: TransactionId,
        key: &[u8],
    ) -> Result<Outcome<()>, OperationError> {
        let Some(anchor) = self.anchor_of(key) else {
            return Err(self.not_found());
        };
        if let LockOutcome::Waiting = self.lock(transaction, anchor, LockMode::Exclusive)? {
            return Ok(Outcome::Waiting(anchor));
        }
        if self.version_for(transaction, anchor).is_none() {
            return Err(self.not_found());
        }
        self.stage(transaction, anchor, false)?;
        Ok(Outcome::Done(()))
    }

    /// The unique-key changes of the writes since the last call, for the coordinator to
    /// apply to the index tables (see [`UniqueChange`]). Empty for tables without unique
    /// indexes.
    pub fn take_unique_changes(&mut self) -> Vec<UniqueChange> {
        std::mem::take(&mut self.unique_changes)
    }

    /// Makes the transaction's changes the committed versions, written in global
    /// checkpoint `gci`, and frees its locks.
    pub fn commit(&mut self, transaction: TransactionId, gci: u64) -> Vec<Granted> {
        self.finish(transaction, Some(gci), &mut |_| {})
    }

    /// Commits as [`Partition::commit`] does, showing `log` each row the transaction
    /// changed, once, as committed (rows it only read or locked are not shown).
    pub fn commit_logged(
        &mut self,
        transaction: TransactionId,
        gci: u64,
        log: &mut dyn FnMut(CommittedChange<'_>),
    ) -> Vec<Granted> {
        self.finish(transaction, Some(gci), log)
    }

    /// Drops the transaction's changes (the committed versions stay) and frees its locks.
    pub fn abort(&mut self, transaction: TransactionId) -> Vec<Granted> {
        self.finish(transaction, None, &mut |_| {})
    }

    /// Adds to `blockers` who `transaction`, waiting for `anchor`'s lock, waits for (see
    /// [`LockTable::blockers`]).
    pub fn lock_blockers(
        &self,
        transaction: TransactionId,
        anchor: RowId,
        blockers: &mut Vec<TransactionId>,
    ) {
        self.locks.blockers(anchor, transaction, blockers);
    }

    /// Withdraws a waiting request (its lock-wait timeout expired or it was chosen to break
    /// a deadlock); the transaction keeps what it holds until it aborts.
    pub fn cancel_wait(&mut self, transaction: TransactionId, anchor: RowId) -> Vec<Granted> {
        let granted = self.locks.cancel(anchor, transaction);
        if !self.locks.holds(anchor, transaction) {
            // The anchor may be freed and its slot reused before the transaction ends.
            if let Some(anchors) = self.transactions.get_mut(&transaction) {
                anchors.retain(|&locked| locked != anchor);
            }
        }
        let granted = granted.into_iter().map(|(transaction, _)| Granted {
            transaction,
            row: anchor,
        });
        let granted = granted.collect();
        self.free_if_unused(anchor);
        granted
    }

    // ----- indexes -----

    /// Adds a secondary index and fills it from every version present. On error (a
    /// duplicate unique key, memory) the partition is unchanged.
    pub fn add_index(&mut self, id: IndexId, schema: IndexSchema) -> Result<(), OperationError> {
        indexes::add_index(self, id, schema)
    }

    /// Adds an ordered index whose entries [`Partition::build_index_slice`] then fills a
    /// slice at a time, so no single step holds the partition for the whole table; writes
    /// keep the entries of the rows they change meanwhile, and scans refuse it until it is
    /// built. (A unique index has no entries here: this is `add_index`.)
    /// Frees up to `entries` rows and index entries of a partition whose table was
    /// dropped (nothing reads or writes it any more): whether all are freed. Freed in
    /// slices, a dropped table of a million rows does not hold its thread for seconds.
    pub fn release_some(&mut self, entries: usize) -> bool {
        let mut budget = entries;
        for index in &mut self.indexes {
            if let indexes::Entries::Ordered(tree) = &mut index.entries {
                budget -= tree.release_some(budget);
            }
        }
        budget -= self.primary.release_some(budget);
        self.rows.release_some(budget);
        let ordered_left = (self.indexes.iter()).any(
            |index| matches!(&index.entries, indexes::Entries::Ordered(tree) if !tree.is_empty()),
        );
        !ordered_left && self.primary.is_empty() && self.rows.is_released()
    }

    pub fn add_index_building(
        &mut self,
        id: IndexId,
        schema: IndexSchema,
    ) -> Result<(), OperationError> {
        indexes::add_building_index(self, id, schema)
    }

    /// Enters the entries of the next `rows_max` rows of building index `id`; true once
    /// the index is built.
    pub fn build_index_slice(
        &mut self,
        id: IndexId,
        rows_max: usize,
    ) -> Result<bool, OperationError> {
        indexes::build_slice(self, id, rows_max)
    }

    pub fn has_index(&self, id: IndexId) -> bool {
        self.index_position(id).is_ok()
    }

    pub fn index_ids(&self) -> Vec<IndexId> {
        self.indexes.iter().map(|index| index.id).collect()
    }

    pub fn drop_index(&mut self, id: IndexId) -> Result<(), OperationError> {
        let position = self.index_position(id)?;
        self.indexes.remove(position);
        Ok(())
    }

    /// The key of an ordered index made of `values` (one per index column, or a prefix),
    /// for scan bounds.
    pub fn index_key_of_values(
        &self,
        id: IndexId,
        values: &[Value],
    ) -> Result<Vec<u8>, OperationError> {
        let index = &self.indexes[self.index_position(id)?];
        Ok(index.key_of_values(&self.layout, values)?)
    }

    // ----- internals -----

    fn table(&self) -> String {
        self.layout.table().to_string()
    }

    fn not_found(&self) -> OperationError {
        OperationErrorKind::NotFound {
            table: self.table(),
        }
        .into()
    }

    fn duplicate(&self, index: &str) -> OperationError {
        OperationErrorKind::Duplicate {
            table: self.table(),
            index: index.to_string(),
        }
        .into()
    }

    fn index_position(&self, id: IndexId) -> Result<usize, OperationError> {
        self.indexes
            .iter()
            .position(|index| index.id == id)
            .ok_or_else(|| {
                OperationErrorKind::NoSuchIndex {
                    table: self.table(),
                    index: id,
                }
                .into()
            })
    }

    /// Encodes a whole row into the scratch buffers.
    fn encode(&mut self, values: &[Value]) -> Result<(), OperationError> {
        self.layout.encode(values, &mut self.fixed, &mut self.var)?;
        Ok(())
    }

    fn state(&self, row: RowId) -> RowState {
        self.states
            .get(row.0 as usize)
            .copied()
            .unwrap_or(RowState::Unused)
    }

    fn set_state(&mut self, row: RowId, state: RowState) {
        let index = row.0 as usize;
        if index >= self.states.len() {
            self.states.resize(index + 1, RowState::Unused);
        }
        self.states[index] = state;
    }

    fn committed_version(&self, anchor: RowId) -> Option<RowId> {
        match self.state(anchor) {
            RowState::Committed => Some(anchor),
            RowState::Pending => self.pending[&anchor].committed.then_some(anchor),
            RowState::Unused | RowState::Empty | RowState::Copy => None,
        }
    }

    /// The version `transaction` sees: its own pending one, else the committed one.
    fn version_for(&self, transaction: TransactionId, anchor: RowId) -> Option<RowId> {
        match self.pending.get(&anchor) {
            Some(pending) if pending.transaction == transaction => match pending.new {
                NewVersion::Absent => None,
                NewVersion::InAnchor => Some(anchor),
                NewVersion::Copy(copy) => Some(copy),
            },
            _ => self.committed_version(anchor),
        }
    }

    fn lock(
        &mut self,
        transaction: TransactionId,
        anchor: RowId,
        mode: LockMode,
    ) -> Result<LockOutcome, OperationError> {
        if let Some(holder) = self.implied_lock_holder(anchor) {
            if holder == transaction {
                return Ok(LockOutcome::Granted); // exclusive: anything it asks for
            }
            self.enter_implied_lock(anchor, holder)?;
        }
        let outcome = self.locks.acquire(anchor, transaction, mode)?;
        self.remember_anchor(transaction, anchor);
        Ok(outcome)
    }

    /// The transaction whose lock on `anchor` is implied by its pending change, if any.
    fn implied_lock_holder(&self, anchor: RowId) -> Option<TransactionId> {
        if self.state(anchor) != RowState::Pending {
            return None; // no pending change: asked without a look into the map
        }
        let pending = self.pending.get(&anchor)?;
        pending.lock_implied.then_some(pending.transaction)
    }

    /// Puts `holder`'s implied exclusive lock on `anchor` in the lock table, where another
    /// transaction can queue behind it. On error (a full table) it stays implied.
    fn enter_implied_lock(
        &mut self,
        anchor: RowId,
        holder: TransactionId,
    ) -> Result<(), OperationError> {
        let outcome = self.locks.acquire(anchor, holder, LockMode::Exclusive)?;
        assert_eq!(
            outcome,
            LockOutcome::Granted,
            "no one else locks a row whose lock is implied"
        );
        if let Some(pending) = self.pending.get_mut(&anchor) {
            pending.lock_implied = false;
        }
        Ok(())
    }

    /// Notes that `transaction` locked `anchor`, for its commit or abort to release.
    fn remember_anchor(&mut self, transaction: TransactionId, anchor: RowId) {
        self.transactions
            .entry(transaction)
            .or_default()
            .push(anchor);
    }

    /// A new key, whose anchor (holding the encoded row) and primary key entry are in:
    /// the row's index entries and its pending state, as the transaction's insert.
    fn fill_new_anchor(
        &mut self,
        transaction: TransactionId,
        key: &[u8],
        anchor: RowId,
    ) -> Result<(), OperationError> {
        // The keys go in a scratch list: a new row allocates none.
        self.with_scratch_keys(|this, [_, _, new_keys]| {
            let (layout, fixed, var) = (&this.layout, &this.fixed, &this.var);
            indexes::keys_of_row_into(&this.indexes, layout, fixed, var, new_keys);
            this.add_new_anchor(transaction, key, anchor, new_keys)
        })
    }

    /// [`Self::fill_new_anchor`] once the keys are made: the row's index entries and its
    /// pending state (which implies its lock); on error the row is gone again.
    fn add_new_anchor(
        &mut self,
        transaction: TransactionId,
        key: &[u8],
        anchor: RowId,
        new_keys: &[Option<Vec<u8>>],
    ) -> Result<(), OperationError> {
        if let Err(error) = indexes::add_entries(self, anchor, new_keys) {
            self.primary.remove(key, anchor);
            self.rows.delete(anchor);
            return Err(error);
        }
        // A new anchor: no one has locked it (a slot is freed only once unlocked), and
        // its pending insert implies the transaction's exclusive lock.
        assert!(!self.locks.is_locked(anchor), "a new anchor is unlocked");
        self.remember_anchor(transaction, anchor);
        self.set_state(anchor, RowState::Pending);
        self.pending.insert(
            anchor,
            Pending {
                transaction,
                committed: false,
                new: NewVersion::InAnchor,
                lock_implied: true,
            },
        );
        indexes::report_unique_changes(self, anchor, &[], new_keys);
        if !self.watched.is_empty() {
            let after = self.watched_keys_of_scratch();
            self.report_key_changes(anchor, self.watched_keys_of_version(None), after);
        }
        Ok(())
    }

    /// Makes the scratch row (`present`) or nothing (`!present`) the transaction's new
    /// version of an anchor it holds exclusively. On error nothing changed.
    fn stage(
        &mut self,
        transaction: TransactionId,
        anchor: RowId,
        present: bool,
    ) -> Result<(), OperationError> {
        self.with_scratch_keys(|this, keys| this.stage_with(transaction, anchor, present, keys))
    }

    /// Runs `f` with the scratch lists for versions' keys, taken from the partition and
    /// given back after, so writes, commits and aborts allocate none.
    fn with_scratch_keys<R>(
        &mut self,
        f: impl FnOnce(&mut Self, &mut [indexes::VersionKeys; 3]) -> R,
    ) -> R {
        let mut keys = std::mem::take(&mut self.scratch_keys);
        let result = f(self, &mut keys);
        self.scratch_keys = keys;
        result
    }

    fn stage_with(
        &mut self,
        transaction: TransactionId,
        anchor: RowId,
        present: bool,
        [committed_keys, old_keys, new_keys]: &mut [indexes::VersionKeys; 3],
    ) -> Result<(), OperationError> {
        let mut pending = match self.pending.get(&anchor) {
            Some(&pending) => {
                debug_assert_eq!(pending.transaction, transaction, "held exclusively");
                pending
            }
            None => Pending {
                transaction,
                committed: self.state(anchor) == RowState::Committed,
                new: NewVersion::Absent,
                lock_implied: false, // the transaction locked the row to write it
            },
        };
        let committed = pending.committed.then_some(anchor);
        let old = match pending.new {
            NewVersion::Absent => None,
            NewVersion::InAnchor => Some(anchor),
            NewVersion::Copy(copy) => Some(copy),
        };
        let committed_keys = self.version_keys(committed, committed_keys);
        let old_keys = self.version_keys(old, old_keys);
        // The version the transaction saw before this write: its own change, if it made one.
        let changed_before = self.pending.contains_key(&anchor);
        // Read before the write, which may overwrite the transaction's own version.
        let watched_before =
            self.watched_keys_of_version(if changed_before { old } else { committed });
        let watched_after = match present {
            true if !self.watched.is_empty() => self.watched_keys_of_scratch(),
            _ => vec![None; self.watched.len()],
        };
        let new_keys: &[Option<Vec<u8>>] = if present {
            // Add index entries first (they may need memory), then write.
            let (layout, fixed, var) = (&self.layout, &self.fixed, &self.var);
            indexes::keys_of_row_into(&self.indexes, layout, fixed, var, new_keys);
            let new_keys = &new_keys[..];
            let added = indexes::add_entries(self, anchor, new_keys)?;
            let written = match (committed, pending.new) {
                (_, NewVersion::Copy(copy)) => self
                    .rows
                    .update(copy, &self.fixed, &self.var)
                    .map(|()| NewVersion::Copy(copy)),
                (Some(_), _) => self
                    .rows
                    .insert(&self.fixed, &self.var)
                    .map(NewVersion::Copy),
                (None, _) => self
                    .rows
                    .update(anchor, &self.fixed, &self.var)
                    .map(|()| NewVersion::InAnchor),
            };
            let new = match written {
                Ok(new) => new,
                Err(error) => {
                    indexes::remove_added(self, anchor, new_keys, added);
                    return Err(error.into());
                }
            };
            if let NewVersion::Copy(copy) = new {
                self.set_state(copy, RowState::Copy);
            }
            indexes::remove_entries(self, anchor, old_keys, &[committed_keys, new_keys]);
            pending.new = new;
            new_keys
        } else {
            indexes::remove_entries(self, anchor, old_keys, &[committed_keys]);
            if let NewVersion::Copy(copy) = pending.new {
                self.rows.delete(copy);
                self.set_state(copy, RowState::Unused);
            }
            pending.new = NewVersion::Absent;
            &[]
        };
        self.pending.insert(anchor, pending);
        self.set_state(anchor, RowState::Pending);
        let before = if changed_before {
            old_keys
        } else {
            committed_keys
        };
        indexes::report_unique_changes(self, anchor, before, new_keys);
        self.report_key_changes(anchor, watched_before, watched_after);
        Ok(())
    }

    /// Per secondary index, the key of a version, made in `keys` (no version: no keys).
    fn version_keys<'k>(
        &self,
        version: Option<RowId>,
        keys: &'k mut indexes::VersionKeys,
    ) -> &'k [Option<Vec<u8>>] {
        let Some(version) = version else {
            return &[];
        };
        let (fixed, var) = self.rows.get(version);
        indexes::keys_of_row_into(&self.indexes, &self.layout, fixed, var, keys);
        keys
    }

    /// Ends a transaction here: commits it in GCI `commit`, or aborts it (`None`).
    fn finish(
        &mut self,
        transaction: TransactionId,
        commit: Option<u64>,
        log: &mut dyn FnMut(CommittedChange<'_>),
    ) -> Vec<Granted> {
        let Some(mut anchors) = self.transactions.remove(&transaction) else {
            return Vec::new();
        };
        anchors.sort_unstable();
        anchors.dedup();
        self.with_scratch_keys(|this, keys| {
            this.finish_rows(transaction, commit, log, anchors, keys)
        })
    }

    /// [`Partition::finish`] of the rows the transaction used.
    fn finish_rows(
        &mut self,
        transaction: TransactionId,
        commit: Option<u64>,
        log: &mut dyn FnMut(CommittedChange<'_>),
        anchors: Vec<RowId>,
        keys: &mut [indexes::VersionKeys; 3],
    ) -> Vec<Granted> {
        let mut granted = Vec::new();
        for anchor in anchors {
            let mine = match self.pending.entry(anchor) {
                Entry::Occupied(entry) if entry.get().transaction == transaction => {
                    Some(entry.remove())
                }
                _ => None,
            };
            match (mine, commit) {
                (Some(pending), Some(gci)) => {
                    self.commit_version(anchor, pending, keys);
                    self.committed_at(anchor, gci);
                    // The anchor holds the committed version now, or, deleted, its last
                    // bytes until it is freed below.
                    let (fixed, var) = self.rows.get(anchor);
                    log(match self.state(anchor) {
                        RowState::Committed => CommittedChange::Written { fixed, var },
                        _ => CommittedChange::Deleted { fixed, var },
                    });
                }
                (Some(pending), None) => self.abort_version(anchor, pending, keys),
                (None, _) => {}
            }
            // An implied lock has nothing in the lock table: no one else asked for the row.
            if !mine.is_some_and(|pending| pending.lock_implied) {
                let released = self.locks.release(anchor, transaction);
                granted.extend(released.into_iter().map(|(transaction, _)| Granted {
                    transaction,
                    row: anchor,
                }));
            }
            self.free_if_unused(anchor);
        }
        granted
    }

    fn commit_version(
        &mut self,
        anchor: RowId,
        pending: Pending,
        [committed_keys, new_keys, _]: &mut [indexes::VersionKeys; 3],
    ) {
        // A new version in the anchor keeps its entries and replaced no committed one.
        let committed = pending.committed.then_some(anchor);
        let state = match pending.new {
            NewVersion::Copy(copy) => {
                let committed_keys = self.version_keys(committed, committed_keys);
                let new_keys = self.version_keys(Some(copy), new_keys);
                indexes::remove_entries(self, anchor, committed_keys, &[new_keys]);
                self.rows.replace_with(anchor, copy);
                self.set_state(copy, RowState::Unused);
                RowState::Committed
            }
            NewVersion::InAnchor => RowState::Committed,
            NewVersion::Absent => {
                let committed_keys = self.version_keys(committed, committed_keys);
                indexes::remove_entries(self, anchor, committed_keys, &[]);
                RowState::Empty
            }
        };
        self.set_state(anchor, state);
    }

    fn abort_version(
        &mut self,
        anchor: RowId,
        pending: Pending,
        [committed_keys, new_keys, _]: &mut [indexes::VersionKeys; 3],
    ) {
        let committed = pending.committed.then_some(anchor);
        let committed_keys = self.version_keys(committed, committed_keys);
        match pending.new {
            NewVersion::Copy(copy) => {
                let new_keys = self.version_keys(Some(copy), new_keys);
                indexes::remove_entries(self, anchor, new_keys, &[committed_keys]);
                self.rows.delete(copy);
                self.set_state(copy, RowState::Unused);
            }
            NewVersion::InAnchor => {
                let new_keys = self.version_keys(Some(anchor), new_keys);
                indexes::remove_entries(self, anchor, new_keys, &[]);
            }
            NewVersion::Absent => {}
        }
        let state = if pending.committed {
            RowState::Committed
        } else {
            RowState::Empty
        };
        self.set_state(anchor, state);
    }

    /// The primary key of the row at `anchor`, in the scratch buffer (taken: give it back
    /// to `self.key` when done, so deletes allocate nothing for it).
    fn primary_key_of(&mut self, anchor: RowId) -> Vec<u8> {
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        let (fixed, var) = self.rows.get(anchor);
        self.layout.primary_key_of_row(fixed, var, &mut key);
        key
    }

    /// Frees an anchor with no version once nobody holds or waits for its lock.
    fn free_if_unused(&mut self, anchor: RowId) {
        if self.state(anchor) != RowState::Empty || self.locks.is_locked(anchor) {
            return;
        }
        let key = self.primary_key_of(anchor);
        let removed = self.primary.remove(&key, anchor);
        self.key = key;
        assert!(removed, "the primary key leads to its anchor");
        self.rows.delete(anchor);
        self.set_state(anchor, RowState::Unused);
    }
}

impl std::fmt::Debug for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partition")
            .field("table", &self.layout.table())
            .field("rows", &self.rows.live_rows())
            .field("pending", &self.pending.len())
            .field("memory_used_bytes", &self.memory.used_bytes())
            .finish()
    }
}
