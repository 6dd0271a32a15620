//! Results sent as they are read. A query whose result rows each come from one row read,
//! in the order read (no grouping, DISTINCT or ORDER BY), goes to the client while the
//! rows are read: a scan's as the data nodes deliver them, a join's as its last table
//! makes them (the tables before it are joined whole). The front end holds a screenful
//! of result rows at most, however many there are, and a LIMIT stops the reading once
//! it is met.
//!
//! The first rows are held until there are [`ROWS_HELD_BEFORE_SENDING`] of them (or
//! [`BYTES_HELD_BEFORE_SENDING`]): a result smaller than that is answered whole, as any
//! other, and a longer one's column types come from the rows held (a computed column
//! NULL in all of them gets its likely type, where a whole result would look further).

use std::ops::ControlFlow;

use kista_client::types::Value;

use super::finish::{output_row, result_columns};
use super::{fetch, row_count, SelectPlan};
use crate::error::SqlResult;
use crate::expr::EvalContext;
use crate::plan::Access;
use crate::protocol::results::ColumnDefinition;
use crate::row_budget::row_bytes;
use crate::session::{Outcome, Session};

/// Result rows held before the first is sent.
pub const ROWS_HELD_BEFORE_SENDING: usize = 1_000;
/// Bytes of result rows held before the first is sent.
pub const BYTES_HELD_BEFORE_SENDING: usize = 1 << 20;

/// Where a result goes as it is made: the client's connection.
pub trait RowSink {
    /// Sends the result's column definitions: once, before any row.
    fn columns(&mut self, columns: Vec<ColumnDefinition>) -> SqlResult<()>;
    /// Sends one result row.
    fn row(&mut self, row: &[Value]) -> SqlResult<()>;
    /// Whether anything was sent (a statement that sent rows is not run again).
    fn started(&self) -> bool;
}

/// Whether `plan`'s result rows can go out as its rows are read: each made from one row
/// of a join, or of a table's scan (a key read finds a row or a few: nothing to stream),
/// in the order read.
pub(super) fn streams(plan: &SelectPlan) -> bool {
    let scans = plan.table.is_some() && matches!(plan.access, Access::Scan | Access::Range { .. });
    (scans || plan.joins.is_some())
        && plan.system.is_none()
        && plan.correlated.is_empty()
        && !plan.grouped
        && plan.having.is_none()
        && !plan.distinct
        && plan.order_by.is_empty()
}

/// Runs `plan`, sending its rows to `sink` as they are read once more than a few are
/// held (`Outcome::Streamed`; a short result comes back whole). `None`, having read
/// nothing, when one table's rows are read under a lock (FOR UPDATE, or a table the
/// transaction wrote: they are read by key, by the caller).
pub(super) fn execute(
    session: &mut Session,
    plan: &SelectPlan,
    params: &[Value],
    sink: &mut dyn RowSink,
) -> SqlResult<Option<Outcome>> {
    let offset = row_count(session, plan.offset.as_ref(), params)?.unwrap_or(0);
    let limit = row_count(session, plan.limit.as_ref(), params)?.unwrap_or(usize::MAX);
    session.transactional(|tx, session| {
        let variable = |name: &str| session.variable(name);
        let ctx = session.eval_context(params, &[], &variable);
        let mut result = Streaming::new(plan, offset, limit);
        let push = |row: Vec<Value>| result.push(&row, &ctx, sink);
        let read = fetch::each_row(tx, session, plan, params, push)?;
        session.rows_before_limit.set(result.passed as u64);
        Ok(read.then(|| result.end()))
    })
}

/// A result on its way: rows held until enough to describe its columns, then sent.
struct Streaming<'p> {
    plan: &'p SelectPlan,
    offset: usize,
    limit: usize,
    /// Rows read that passed the WHERE.
    passed: usize,
    /// Result rows made (held or sent).
    made: usize,
    held: Vec<Vec<Value>>,
    held_bytes: usize,
    sending: bool,
}

impl<'p> Streaming<'p> {
    fn new(plan: &'p SelectPlan, offset: usize, limit: usize) -> Self {
        Self {
            plan,
            offset,
            limit,
            passed: 0,
            made: 0,
            held: Vec::new(),
            held_bytes: 0,
            sending: false,
        }
    }

    /// Takes one row that passed the WHERE; breaks once the LIMIT is met.
    fn push(
        &mut self,
        row: &[Value],
        ctx: &EvalContext,
        sink: &mut dyn RowSink,
    ) -> SqlResult<ControlFlow<()>> {
        if self.made >= self.limit {
            return Ok(ControlFlow::Break(()));
        }
        self.passed += 1;
        if self.passed <= self.offset {
            return Ok(ControlFlow::Continue(()));
        }
        let output = output_row(self.plan, row, ctx)?;
        self.made += 1;
        if self.sending {
            sink.row(&output)?;
        } else {
            self.held_bytes += row_bytes(&output);
            self.held.push(output);
            if self.held.len() >= ROWS_HELD_BEFORE_SENDING
                || self.held_bytes >= BYTES_HELD_BEFORE_SENDING
            {
                self.start_sending(sink)?;
            }
        }
        Ok(match self.made >= self.limit {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        })
    }

    /// Describes the columns by the rows held, and sends them and the rows.
    fn start_sending(&mut self, sink: &mut dyn RowSink) -> SqlResult<()> {
        sink.columns(result_columns(self.plan, &self.held))?;
        for row in self.held.drain(..) {
            sink.row(&row)?;
        }
        self.held_bytes = 0;
        self.sending = true;
        Ok(())
    }

    fn end(self) -> Outcome {
        match self.sending {
            true => Outcome::Streamed {
                rows: self.made as u64,
            },
            false => Outcome::Rows {
                columns: result_columns(self.plan, &self.held),
                rows: self.held,
            },
        }
    }
}
