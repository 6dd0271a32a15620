//! Scans of committed rows: the whole partition in row order, or an ordered index's range in
//! either direction, with a filter program, in batches that resume where the last one ended.
//!
//! A batch ends after `rows_max` matching rows or [`ROWS_EXAMINED_PER_BATCH_MAX`] examined
//! ones, so a selective filter cannot hold the partition for long. The position it returns
//! stays valid whatever changes in between; rows changed meanwhile are seen in their state
//! at the time the scan reaches them (read-committed).

use super::indexes::Entries;
use super::{IndexId, OperationError, OperationErrorKind, Partition};
use crate::filter::FilterProgram;
use crate::ordered_index::RangeBound;
use crate::row_store::RowId;
use crate::types::Value;

/// Rows one batch examines at most, matching or not.
pub const ROWS_EXAMINED_PER_BATCH_MAX: usize = 8192;

/// One end of an index range: values for a prefix of the index columns.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexBound {
    pub values: Vec<Value>,
    pub inclusive: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ScanRange {
    /// Every row, in storage order.
    Full,
    /// The rows of an ordered index between two bounds (`None`: unbounded).
    Index {
        index: IndexId,
        lower: Option<IndexBound>,
        upper: Option<IndexBound>,
        descending: bool,
    },
}

/// Which rows a scan visits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ScanVersions {
    /// Committed rows as they are when the scan reaches them.
    #[default]
    Committed,
    /// Every row with an index entry in the range, for *any* of its versions, committed or
    /// pending, visited as its anchor (which holds its primary key): the candidates a
    /// locking read must then look at. A foreign key's search for children uses it, so it
    /// also finds rows an open transaction is writing. Index ranges only, without filter.
    AnyVersion,
}

/// Where a scan stopped: the next batch starts after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScanPosition {
    Row(RowId),
    Entry(Vec<u8>, RowId),
}

impl Partition {
    /// Visits the committed rows of `range` that pass `filter` as (fixed part, variable
    /// part), at most `rows_max` of them; `visit` returns whether the batch has room for
    /// more (the row it was given is taken either way). Returns where to resume, or `None`
    /// when the range is exhausted.
    pub fn scan_committed(
        &self,
        range: &ScanRange,
        filter: Option<&FilterProgram>,
        resume_after: Option<&ScanPosition>,
        rows_max: usize,
        visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<Option<ScanPosition>, OperationError> {
        let versions = ScanVersions::Committed;
        self.scan(range, versions, filter, resume_after, rows_max, visit)
    }

    /// [`Partition::scan_committed`], or with [`ScanVersions::AnyVersion`] the anchors of
    /// every version in an index range.
    pub fn scan(
        &self,
        range: &ScanRange,
        versions: ScanVersions,
        filter: Option<&FilterProgram>,
        resume_after: Option<&ScanPosition>,
        rows_max: usize,
        mut visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<Option<ScanPosition>, OperationError> {
        if versions == ScanVersions::AnyVersion
            && (filter.is_some() || matches!(range, ScanRange::Full))
        {
            return Err(OperationErrorKind::AnyVersionScan {
                table: self.table(),
            }
            .into());
        }
        let mut returned = 0;
        let mut examined = 0;
        let mut full = false;
        let mut examine = |row: RowId,
                           position: &mut Option<ScanPosition>,
                           entry_key: Option<&[u8]>| {
            examined += 1;
            let version = match versions {
                ScanVersions::Committed => self.committed_version(row),
                ScanVersions::AnyVersion => Some(row),
            };
            if let Some(version) = version {
                let (fixed, var) = self.rows.get(version);
                let current = versions == ScanVersions::AnyVersion
                    || entry_key.is_none_or(|key| self.entry_is_current(range, key, fixed, var));
                if current && filter.is_none_or(|f| f.matches(&self.layout, fixed, var)) {
                    full = !visit(fixed, var);
                    returned += 1;
                }
            }
            *position = Some(match entry_key {
                Some(key) => ScanPosition::Entry(key.to_vec(), row),
                None => ScanPosition::Row(row),
            });
            !full && returned < rows_max && examined < ROWS_EXAMINED_PER_BATCH_MAX
        };
        let mut position = None;
        let mut stopped = false;
        match range {
            ScanRange::Full => {
                let first = match resume_after {
                    Some(ScanPosition::Row(row)) => RowId(row.0 + 1),
                    _ => RowId(0),
                };
                if rows_max > 0 {
                    for row in self.rows.row_ids_from(first) {
                        if !examine(row, &mut position, None) {
                            stopped = true;
                            break;
                        }
                    }
                }
            }
            ScanRange::Index {
                index,
                lower,
                upper,
                descending,
            } => {
                let found = &self.indexes[self.index_position(*index)?];
                if found.built_below.is_some() {
                    return Err(OperationErrorKind::IndexBuilding {
                        table: self.table(),
                        index: found.schema.name.clone(),
                    }
                    .into());
                }
                let Entries::Ordered(tree) = &found.entries else {
                    return Err(OperationErrorKind::NotOrdered {
                        table: self.table(),
                        index: found.schema.name.clone(),
                    }
                    .into());
                };
                let bound = |bound: &Option<IndexBound>| -> Result<_, OperationError> {
                    bound
                        .as_ref()
                        .map(|b| {
                            Ok(RangeBound {
                                prefix: found.key_of_values(&self.layout, &b.values)?,
                                inclusive: b.inclusive,
                            })
                        })
                        .transpose()
                };
                let (lower, upper) = (bound(lower)?, bound(upper)?);
                let resume = match resume_after {
                    Some(ScanPosition::Entry(key, row)) => Some((&key[..], *row)),
                    _ => None,
                };
                if rows_max > 0 {
                    tree.scan(
                        lower.as_ref(),
                        upper.as_ref(),
                        *descending,
                        resume,
                        |key, row| {
                            let more = examine(row, &mut position, Some(key));
                            stopped = !more;
                            more
                        },
                    );
                }
            }
        }
        Ok(if stopped { position } else { None })
    }

    /// Whether an ordered-index entry belongs to this (committed) version of its row, rather
    /// than to a pending one.
    fn entry_is_current(
        &self,
        range: &ScanRange,
        entry_key: &[u8],
        fixed: &[u8],
        var: &[u8],
    ) -> bool {
        let ScanRange::Index { index, .. } = range else {
            return true;
        };
        let Ok(position) = self.index_position(*index) else {
            return false;
        };
        let mut key = Vec::with_capacity(entry_key.len());
        self.indexes[position].key_of_row(&self.layout, fixed, var, &mut key) && key == entry_key
    }
}
