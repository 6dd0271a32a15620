//! Savepoints: `SAVEPOINT name`, `ROLLBACK TO [SAVEPOINT] name`, `RELEASE SAVEPOINT name`.
//!
//! The cluster's transactions cannot roll back part of their operations (NDB never
//! could: WL#1355), so the front end undoes them itself. While a savepoint is set, every
//! write of the transaction first records how to undo it: an insert by deleting the row,
//! an update or a delete by writing back the row as it was (which the write's locked
//! read had found; REPLACE reads it first). `ROLLBACK TO` sends the undo records made
//! since the savepoint, newest first, in the same transaction; the savepoint stays, later
//! ones go. Locks taken since the savepoint are kept, as in InnoDB. Nothing is recorded
//! while no savepoint is set, so transactions without one pay nothing.
//!
//! An error that aborts the transaction (Kista's rule: the cluster rolls the whole
//! transaction back) ends its savepoints with it.

use kista_client::types::Value;
use kista_client::Table;

use crate::error::{SqlError, SqlResult};

/// Savepoints one transaction may hold (MySQL sets no limit; this bounds the names kept).
pub const SAVEPOINTS_MAX: usize = 1024;
/// Row writes one transaction may record for undo while a savepoint is set.
pub const UNDO_RECORDS_MAX: usize = 1_000_000;

/// How to undo one write.
pub enum Undo {
    /// The write inserted this row: delete it.
    Delete { table: Table, key: Vec<Value> },
    /// The write changed or deleted this row: write it back as it was.
    Restore { table: Table, row: Vec<Value> },
}

/// The open transaction's savepoints and how to undo what was written since the first
/// (`U`: the undo record; generic so the bookkeeping is tested without a cluster).
pub struct Savepoints<U = Undo> {
    /// Each savepoint's name and how many undo records existed when it was set.
    marks: Vec<(String, usize)>,
    undo: Vec<U>,
}

impl<U> Default for Savepoints<U> {
    fn default() -> Self {
        Self {
            marks: Vec::new(),
            undo: Vec::new(),
        }
    }
}

impl<U> Savepoints<U> {
    /// Whether writes must record how to undo them.
    pub fn recording(&self) -> bool {
        !self.marks.is_empty()
    }

    /// Records how to undo a write (nothing while no savepoint is set).
    pub fn record(&mut self, undo: impl FnOnce() -> U) -> SqlResult<()> {
        if !self.recording() {
            return Ok(());
        }
        if self.undo.len() >= UNDO_RECORDS_MAX {
            return Err(SqlError::new(
                1197,
                "HY000",
                format!(
                    "A transaction may write at most {UNDO_RECORDS_MAX} rows while a \
                     savepoint is set; release the savepoint or commit"
                ),
            ));
        }
        self.undo.push(undo());
        Ok(())
    }

    /// SAVEPOINT: sets `name` here (one already set by that name moves here).
    pub fn set(&mut self, name: &str) -> SqlResult<()> {
        self.marks
            .retain(|(mark, _)| !mark.eq_ignore_ascii_case(name));
        if self.marks.len() >= SAVEPOINTS_MAX {
            return Err(SqlError::new(
                1235,
                "42000",
                format!("more than {SAVEPOINTS_MAX} savepoints in one transaction"),
            ));
        }
        self.marks.push((name.to_string(), self.undo.len()));
        Ok(())
    }

    /// RELEASE SAVEPOINT: forgets `name` and the savepoints set after it.
    pub fn release(&mut self, name: &str) -> SqlResult<()> {
        let at = self.position(name)?;
        self.marks.truncate(at);
        if self.marks.is_empty() {
            self.undo.clear();
        }
        Ok(())
    }

    /// ROLLBACK TO: the undo records made since `name` was set, newest first; `name`
    /// stays set, the savepoints after it are forgotten.
    pub fn rollback_to(&mut self, name: &str) -> SqlResult<Vec<U>> {
        let at = self.position(name)?;
        let since = self.marks[at].1;
        self.marks.truncate(at + 1);
        let mut undo = self.undo.split_off(since);
        undo.reverse();
        Ok(undo)
    }

    /// The transaction ended: every savepoint goes.
    pub fn clear(&mut self) {
        self.marks.clear();
        self.undo.clear();
    }

    fn position(&self, name: &str) -> SqlResult<usize> {
        self.marks
            .iter()
            .position(|(mark, _)| mark.eq_ignore_ascii_case(name))
            .ok_or_else(|| SqlError::new(1305, "42000", format!("SAVEPOINT {name} does not exist")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollback_to_undoes_the_writes_since_its_savepoint_newest_first() {
        let mut savepoints = Savepoints::<i32>::default();
        savepoints
            .record(|| unreachable!("nothing is recorded without a savepoint"))
            .unwrap();
        savepoints.set("a").unwrap();
        savepoints.record(|| 1).unwrap();
        savepoints.set("b").unwrap();
        savepoints.record(|| 2).unwrap();
        savepoints.record(|| 3).unwrap();
        assert_eq!(savepoints.rollback_to("B").unwrap(), [3, 2]);
        // b stays set; rolling back to it again undoes nothing more.
        assert!(savepoints.rollback_to("b").unwrap().is_empty());
        savepoints.record(|| 4).unwrap();
        assert_eq!(savepoints.rollback_to("a").unwrap(), [4, 1]);
        assert_eq!(savepoints.rollback_to("b").unwrap_err().code, 1305);
    }

    #[test]
    fn release_forgets_later_savepoints_and_the_last_one_stops_recording() {
        let mut savepoints = Savepoints::<i32>::default();
        savepoints.set("a").unwrap();
        savepoints.set("b").unwrap();
        savepoints.set("a").unwrap();
        savepoints.release("b").unwrap();
        assert!(!savepoints.recording(), "a was set again after b");
        assert_eq!(savepoints.release("a").unwrap_err().code, 1305);
    }
}
