//! Keys that foreign keys watch. A write that gives a row a new *referencing* key (a
//! child's foreign-key columns) needs its parent to exist; a write that takes a
//! *referenced* key away (a parent's key, by delete or update) must not leave children
//! behind. The partition reports both kinds of change, with the key in the form of primary
//! keys and its column values, as it reports unique-key changes; what follows from them
//! (reading the parent, finding the children) is the coordinator's business.

use super::Partition;
use crate::row::RowLayout;
use crate::row_store::RowId;
use crate::types::Value;

/// Which end of a foreign key a watched key is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WatchSide {
    /// A child's columns: report keys a write gives a row.
    Referencing,
    /// A parent's key: report keys a write takes from a row.
    Referenced,
}

/// One key a partition watches: the columns (in key order) and the side. `id` names it
/// for whoever reads the changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchedKey {
    pub id: u64,
    pub side: WatchSide,
    pub columns: Vec<usize>,
}

/// A write gave the row with `primary_key` the referencing key `key`, or took the
/// referenced key `key` from it. A key with a NULL column is never reported (SQL checks no
/// such reference).
#[derive(Clone, Debug, PartialEq)]
pub struct KeyChange {
    pub id: u64,
    pub side: WatchSide,
    pub key: Vec<u8>,
    pub values: Vec<Value>,
    pub primary_key: Vec<u8>,
    /// A referenced key an update took: the values the row has in its place (NULLs
    /// included), which ON UPDATE CASCADE gives the children. `None` for a delete and for
    /// a referencing key.
    pub new_values: Option<Vec<Value>>,
}

/// A version's watched key: the values it is made of, and its key (`None` when a column
/// is NULL: such a key references nothing and is referenced by nothing).
#[derive(Clone, Debug)]
pub(super) struct VersionKey {
    key: Option<Vec<u8>>,
    values: Vec<Value>,
}

/// Per watched key, a version's (`None`: no version).
pub(super) type VersionKeys = Vec<Option<VersionKey>>;

impl Partition {
    /// Keys the partition reports changes of from now on (the table's foreign keys).
    pub fn watch_keys(&mut self, keys: Vec<WatchedKey>) {
        self.watched = keys;
    }

    /// The watched-key changes of the writes since the last call.
    pub fn take_key_changes(&mut self) -> Vec<KeyChange> {
        std::mem::take(&mut self.key_changes)
    }

    /// The watched keys of stored version `version` (nothing to compute when nothing is
    /// watched: this runs on every write).
    pub(super) fn watched_keys_of_version(&self, version: Option<RowId>) -> VersionKeys {
        match version {
            _ if self.watched.is_empty() => Vec::new(),
            Some(version) => {
                let (fixed, var) = self.rows.get(version);
                watched_keys_of(&self.watched, &self.layout, fixed, var)
            }
            None => vec![None; self.watched.len()],
        }
    }

    /// The watched keys of the scratch row (the version a write is making).
    pub(super) fn watched_keys_of_scratch(&self) -> VersionKeys {
        watched_keys_of(&self.watched, &self.layout, &self.fixed, &self.var)
    }

    /// Reports what a write to `anchor` changed, from the keys of the version before it and
    /// after it.
    pub(super) fn report_key_changes(
        &mut self,
        anchor: RowId,
        before: VersionKeys,
        after: VersionKeys,
    ) {
        for ((watched, before), after) in self.watched.iter().zip(before).zip(after) {
            let changed = key_of(&before) != key_of(&after);
            let reported = match watched.side {
                WatchSide::Referencing => after
                    .filter(|after| after.key.is_some() && changed)
                    .map(|after| (after, None)),
                WatchSide::Referenced => before
                    .filter(|before| before.key.is_some() && changed)
                    .map(|before| (before, after.map(|after| after.values))),
            };
            if let Some((
                VersionKey {
                    key: Some(key),
                    values,
                },
                new_values,
            )) = reported
            {
                let mut primary_key = Vec::new();
                let (fixed, var) = self.rows.get(anchor);
                (self.layout).primary_key_of_row(fixed, var, &mut primary_key);
                self.key_changes.push(KeyChange {
                    id: watched.id,
                    side: watched.side,
                    key,
                    values,
                    primary_key,
                    new_values,
                });
            }
        }
    }
}

/// A version's watched key (`None`: no version, or a NULL column).
fn key_of(version: &Option<VersionKey>) -> Option<&[u8]> {
    version.as_ref()?.key.as_deref()
}

fn watched_keys_of(
    watched: &[WatchedKey],
    layout: &RowLayout,
    fixed: &[u8],
    var: &[u8],
) -> VersionKeys {
    watched
        .iter()
        .map(|watched| {
            let mut key = Vec::new();
            let key = (layout.key_of_row(&watched.columns, fixed, var, &mut key)).then_some(key);
            let values = (watched.columns.iter())
                .map(|&column| layout.value(fixed, var, column))
                .collect();
            Some(VersionKey { key, values })
        })
        .collect()
}
