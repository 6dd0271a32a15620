//! A LOAD DATA's batches in flight together (into a plain table, outside a transaction).
//! One batch at a time, each awaited before the next was sent, left the data nodes
//! waiting for the front end and the front end for them. The connection's thread now
//! keeps up to [`LOAD_BATCHES_EXECUTING`] batches executing, each in a transaction of its
//! own, while it reads and encodes the next. A batch's commit is sent once it and every
//! batch before it executed: an error of a batch's rows (a taken key, a missing parent
//! row, a full data memory) still leaves exactly the batches before it committed
//! (`mod.rs`), and the later ones, executed but not committed, are rolled back. Only a
//! commit the cluster fails after its batch executed (a node failing mid-commit, an
//! outcome the client cannot know either way) may leave a later batch committed as well.
//!
//! A load that skips rows whose key is taken (IGNORE, LOCAL) sends a batch the cluster
//! refuses for a taken key again the general way, which skips them ([`Loader::insert`]),
//! and the batches after it one at a time; while batches skip rows, the next goes the
//! general way at once.
//!
//! Two batches in flight may hold the same key. The later one waits for the earlier
//! one's commit and then fails with 1062, as one at a time; or, having locked the key
//! first, it makes the earlier one wait for a lock that is freed only after that earlier
//! one commits: a lock wait timeout. A batch that fails for a reason that passes (a lock
//! wait timeout, a deadlock, a temporary error of the cluster) goes again with every
//! batch after it, one at a time, as without the pipeline.

use std::collections::VecDeque;

use kista_client::{ClientError, ExecuteMode, Executed, Pending, Transaction};

use super::{DirectLoader, EncodedRows, Loader};
use crate::error::{SqlError, SqlResult};
use crate::session::Session;

/// Batches a LOAD DATA keeps executing, not yet committed, while the front end encodes
/// the next. Each holds its rows' locks until it commits. 2, 8 and 16 (with as many
/// commits in flight) load the import benchmark's file within the spread of 4.
pub(super) const LOAD_BATCHES_EXECUTING: usize = 4;

/// Commits a LOAD DATA keeps in flight: a batch's commit is sent as soon as it and every
/// batch before it executed, without waiting for the one before to be confirmed. Awaiting
/// each commit before sending the next, the import benchmark's million rows took 1.8-2.2
/// s (a commit's round trip a batch, one after another); with 4 in flight, 1.3-1.8 s.
pub(super) const LOAD_COMMITS_IN_FLIGHT: usize = 4;

/// A LOAD DATA's batches on their way, oldest first.
pub(super) struct Pipeline<'c> {
    direct: DirectLoader,
    /// Batches sent without their commit.
    executing: VecDeque<Executing<'c>>,
    /// Commits sent, with the rows of their batches.
    committing: VecDeque<(Pending<Executed>, u64)>,
    /// Buffers of batches committing, for the next ones' rows.
    spare: Vec<EncodedRows>,
    /// The last batch sent alone skipped rows whose key was taken: the next one goes the
    /// general way too, after the batches in flight. (A reload of rows the table holds
    /// would otherwise send each batch twice, straight and refused, then the general way.)
    skipping: bool,
}

/// A batch sent without its commit.
struct Executing<'c> {
    transaction: Transaction<'c>,
    executed: Pending<Executed>,
    rows: EncodedRows,
}

impl<'c> Pipeline<'c> {
    pub fn new(direct: DirectLoader) -> Self {
        Pipeline {
            direct,
            executing: VecDeque::with_capacity(LOAD_BATCHES_EXECUTING + 1),
            committing: VecDeque::with_capacity(LOAD_COMMITS_IN_FLIGHT + 1),
            spare: Vec::new(),
            skipping: false,
        }
    }

    pub fn direct(&self) -> &DirectLoader {
        &self.direct
    }

    /// An empty buffer for the next batch's rows.
    pub fn buffer(&mut self) -> EncodedRows {
        self.spare.pop().unwrap_or_default()
    }

    /// Sends `rows` as a batch of their own, first committing the oldest batch when
    /// [`LOAD_BATCHES_EXECUTING`] are executing and awaiting the oldest commit when
    /// [`LOAD_COMMITS_IN_FLIGHT`] are: the rows committed meanwhile. After an error
    /// nothing is in flight (the later batches rolled back). Counts as [`Loader::insert`]'s.
    pub fn send(
        &mut self,
        session: &mut Session<'c>,
        loader: &Loader,
        rows: EncodedRows,
    ) -> SqlResult<(u64, u64)> {
        if self.skipping {
            let (affected, skipped) = self.finish(session, loader)?;
            let alone = self.insert_alone(session, loader, &rows)?;
            self.recycle(rows);
            return Ok((affected + alone.0, skipped + alone.1));
        }
        let mut committed = (0, 0);
        if self.executing.len() >= LOAD_BATCHES_EXECUTING {
            committed = self.commit_oldest(session, loader)?;
        }
        if self.committing.len() >= LOAD_COMMITS_IN_FLIGHT {
            committed.0 += self.await_oldest_commit()?;
        }
        if let Err(error) = session.check_killed() {
            self.abandon()?;
            return Err(error);
        }
        match self.execute(session, &rows) {
            Ok((transaction, executed)) => {
                (self.executing).push_back(Executing {
                    transaction,
                    executed,
                    rows,
                });
                Ok(committed)
            }
            Err(error) => {
                self.abandon()?;
                Err(self.direct.refused(error.into(), &rows))
            }
        }
    }

    /// Commits every batch in flight, oldest first: counts as [`Loader::insert`]'s.
    pub fn finish(&mut self, session: &mut Session<'c>, loader: &Loader) -> SqlResult<(u64, u64)> {
        let mut committed = (0, 0);
        while !self.executing.is_empty() {
            let (affected, skipped) = self.commit_oldest(session, loader)?;
            committed = (committed.0 + affected, committed.1 + skipped);
        }
        while !self.committing.is_empty() {
            committed.0 += self.await_oldest_commit()?;
        }
        Ok(committed)
    }

    /// `rows` inserted in a transaction of their own, executed without its commit.
    fn execute(
        &self,
        session: &Session<'c>,
        rows: &EncodedRows,
    ) -> Result<(Transaction<'c>, Pending<Executed>), ClientError> {
        let mut transaction = session.catalog.client().transaction();
        transaction.set_foreign_key_checks(session.foreign_key_checks);
        let executed = self
            .direct
            .add_inserts(&mut transaction, rows)
            .and_then(|()| transaction.execute(ExecuteMode::NoCommit));
        match executed {
            Ok(executed) => Ok((transaction, executed)),
            Err(error) => {
                roll_back(transaction);
                Err(error)
            }
        }
    }

    /// Waits for the oldest batch's execution, then sends its commit: the rows committed
    /// meanwhile (a batch that failed for a reason that passes, or for a taken key the
    /// load skips, goes again with the later ones, one at a time).
    fn commit_oldest(
        &mut self,
        session: &mut Session<'c>,
        loader: &Loader,
    ) -> SqlResult<(u64, u64)> {
        let Some(oldest) = self.executing.pop_front() else {
            return Ok((0, 0));
        };
        let Executing {
            mut transaction,
            executed,
            rows,
        } = oldest;
        let committing = executed
            .wait()
            .and_then(|_| transaction.execute(session.commit_mode()));
        match committing.map_err(SqlError::from) {
            Ok(commit) => {
                self.committing.push_back((commit, rows.len() as u64));
                self.recycle(rows);
                Ok((0, 0))
            }
            Err(error) if error.is_temporary() || skipped(&error, loader) => {
                self.one_at_a_time(session, loader, rows)
            }
            Err(error) => {
                self.abandon()?;
                Err(self.direct.refused(error, &rows))
            }
        }
    }

    /// Waits for the oldest commit in flight: its batch's rows.
    fn await_oldest_commit(&mut self) -> SqlResult<u64> {
        let Some((commit, rows)) = self.committing.pop_front() else {
            return Ok(0);
        };
        match commit.wait() {
            Ok(_) => Ok(rows),
            Err(error) => {
                self.abandon()?;
                Err(error.into())
            }
        }
    }

    /// `first` and the batches executing after it (rolled back first), each inserted and
    /// committed before the next is sent: counts as [`Loader::insert`]'s.
    fn one_at_a_time(
        &mut self,
        session: &mut Session<'c>,
        loader: &Loader,
        first: EncodedRows,
    ) -> SqlResult<(u64, u64)> {
        let (later, committed) = self.abandon()?;
        let mut counts = (committed, 0);
        for rows in std::iter::once(first).chain(later) {
            let (affected, skipped) = self.insert_alone(session, loader, &rows)?;
            counts = (counts.0 + affected, counts.1 + skipped);
            self.recycle(rows);
        }
        Ok(counts)
    }

    /// `rows` inserted and committed, nothing else in flight: straight, or the general way
    /// when they hold a taken key the load skips. Counts as [`Loader::insert`]'s.
    fn insert_alone(
        &mut self,
        session: &mut Session<'c>,
        loader: &Loader,
        rows: &EncodedRows,
    ) -> SqlResult<(u64, u64)> {
        if !self.skipping {
            match self.commit_alone(session, rows) {
                Err(error) if skipped(&error, loader) => {}
                committed => return committed.map(|affected| (affected, 0)),
            }
        }
        let (affected, skipped) = loader.insert(session, self.direct.given_rows(rows))?;
        self.skipping = skipped > 0;
        Ok((affected, skipped))
    }

    /// `rows` inserted and committed, nothing else in flight: their count.
    fn commit_alone(&self, session: &Session<'c>, rows: &EncodedRows) -> SqlResult<u64> {
        let (mut transaction, executed) = self
            .execute(session, rows)
            .map_err(|error| self.direct.refused(error.into(), rows))?;
        let committed = executed
            .wait()
            .and_then(|_| transaction.execute(session.commit_mode())?.wait());
        match committed {
            Ok(_) => Ok(rows.len() as u64),
            Err(error) => Err(self.direct.refused(error.into(), rows)),
        }
    }

    /// Rolls back every batch executing and waits for the commits in flight (of batches
    /// before them): the rows of the batches rolled back, and of those committed; or the
    /// first commit that failed.
    fn abandon(&mut self) -> SqlResult<(Vec<EncodedRows>, u64)> {
        let abandoned = (self.executing.drain(..))
            .map(|executing| {
                // A batch still executing is waited for (a lock wait ends within the
                // cluster's timeout); one the cluster refused is rolled back already.
                if executing.executed.wait().is_ok() {
                    roll_back(executing.transaction);
                }
                executing.rows
            })
            .collect();
        let mut committed = 0;
        let mut failed = None;
        for (commit, rows) in self.committing.drain(..) {
            match commit.wait() {
                Ok(_) => committed += rows,
                Err(error) => failed = failed.or(Some(error)),
            }
        }
        match failed {
            Some(error) => Err(error.into()),
            None => Ok((abandoned, committed)),
        }
    }

    fn recycle(&mut self, mut rows: EncodedRows) {
        rows.clear();
        if self.spare.len() < LOAD_BATCHES_EXECUTING {
            self.spare.push(rows);
        }
    }
}

impl Drop for Pipeline<'_> {
    /// A LOAD DATA that ends early (a panic) leaves no transaction holding locks until the
    /// cluster's inactivity timeout.
    fn drop(&mut self) {
        let _ = self.abandon();
    }
}

/// Whether `error` refused a batch for a taken key that `loader` skips.
fn skipped(error: &SqlError, loader: &Loader) -> bool {
    error.code == 1062 && loader.skips_taken_keys()
}

/// Ends `transaction` (one that sent a batch) without its changes.
fn roll_back(mut transaction: Transaction<'_>) {
    if transaction.has_sent() {
        // Its outcome cannot change what the caller reports: the cluster ends a
        // transaction it cannot reach the client of.
        let _ = (transaction.execute(ExecuteMode::Rollback)).map(|pending| pending.wait());
    }
}
