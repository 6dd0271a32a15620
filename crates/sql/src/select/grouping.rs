//! Groups and their aggregates, made one row at a time (each aggregate's state an
//! [`Accumulator`]): from rows already read, or from a table's rows as a scan reads them.
//!
//! A query with aggregates over a scan of one table needs its groups, not its rows:
//! `SELECT COUNT(*) FROM t` read all of `t` into the front end first (368 MB for a million
//! rows of the import benchmark's table) and failed with 1104 past a million rows. Made as
//! the rows arrive, the front end holds each group's first row and its aggregates' state.
//! What those hold counts against the statement's limits as rows read would: each group's
//! first row, each value a DISTINCT aggregate has seen, each value GROUP_CONCAT keeps.

use std::cmp::Ordering;
use std::ops::ControlFlow;

use kista_client::types::{Collation, Value};

use super::finish::{self, concatenated, encode_group_key};
use super::{fetch, SelectPlan};
use crate::error::SqlResult;
use crate::expr::{eval, Aggregate, AggregateKind, EvalContext};
use crate::plan::Access;
use crate::row_budget::RowBudget;
use crate::session::{Outcome, Session};
use crate::value::compare_in;

/// A group: the first of its rows (the row its outputs read) and its aggregates' values.
pub(super) type Group = (Vec<Value>, Vec<Value>);

/// Rows grouped between two looks at whether the statement was killed.
const KILL_CHECK_ROWS: usize = 4096;

/// Groups being made: each group's first row and one accumulator per aggregate.
struct Grouping<'p> {
    plan: &'p SelectPlan,
    groups: Vec<(Vec<Value>, Vec<Accumulator>)>,
    /// Each group's position by its encoded key.
    index: std::collections::HashMap<Vec<u8>, usize, foldhash::fast::RandomState>,
    collations: Vec<Collation>,
    /// What the groups' first rows take: the statement's limits, as rows read have.
    budget: RowBudget,
    rows: usize,
}

impl<'p> Grouping<'p> {
    fn new(session: &Session, plan: &'p SelectPlan) -> Self {
        Self {
            plan,
            groups: Vec::new(),
            index: std::collections::HashMap::default(),
            collations: plan.group_by.iter().map(|e| plan.collation_of(e)).collect(),
            budget: RowBudget::new(session.catalog.result_bytes_max, "The SELECT would group"),
            rows: 0,
        }
    }

    /// Adds `row` to its group (by the GROUP BY values), the first of a new group kept.
    fn add(&mut self, session: &Session, row: Vec<Value>, ctx: &EvalContext) -> SqlResult<()> {
        self.rows += 1;
        if self.rows % KILL_CHECK_ROWS == 0 {
            session.check_killed()?;
        }
        let key: Vec<Value> = (self.plan.group_by.iter())
            .map(|e| eval(e, &row, ctx))
            .collect::<SqlResult<_>>()?;
        let encoded = encode_group_key(&key, &self.collations);
        if let Some(&position) = self.index.get(&encoded) {
            let accumulators = &mut self.groups[position].1;
            return accumulate(self.plan, accumulators, &row, ctx, &mut self.budget);
        }
        // A new group: its first row kept (moved, once its aggregates have read it).
        self.budget.count(&row)?;
        let mut accumulators = new_accumulators(self.plan);
        accumulate(self.plan, &mut accumulators, &row, ctx, &mut self.budget)?;
        self.index.insert(encoded, self.groups.len());
        self.groups.push((row, accumulators));
        Ok(())
    }

    /// The groups with their aggregates' values; aggregates alone over no rows make one
    /// group, its row all NULL.
    fn finish(
        mut self,
        session: &Session,
        variable: &dyn Fn(&str) -> Option<Value>,
    ) -> SqlResult<Vec<Group>> {
        let plan = self.plan;
        if self.groups.is_empty() && plan.group_by.is_empty() {
            let nulls = vec![Value::Null; plan.row_width];
            self.groups.push((nulls, new_accumulators(plan)));
        }
        let concat_bytes_max = variable("group_concat_max_len")
            .and_then(|v| crate::value::to_i64(&v))
            .map_or(GROUP_CONCAT_BYTES_DEFAULT, |n| n.max(4) as usize);
        let killed = || session.check_killed();
        (self.groups.into_iter())
            .map(|(row, accumulators)| {
                let values = (plan.aggregates.iter().zip(accumulators))
                    .map(|(a, acc)| acc.result(a, concat_bytes_max, &killed))
                    .collect::<SqlResult<_>>()?;
                Ok((row, values))
            })
            .collect()
    }
}

/// One fresh accumulator for each of `plan`'s aggregates.
fn new_accumulators(plan: &SelectPlan) -> Vec<Accumulator> {
    plan.aggregates
        .iter()
        .map(|_| Accumulator::default())
        .collect()
}

/// Rows into groups (by the GROUP BY values; one group for aggregates alone, even of no
/// rows), each with its aggregates computed.
pub(super) fn group(
    session: &Session,
    plan: &SelectPlan,
    rows: Vec<Vec<Value>>,
    params: &[Value],
) -> SqlResult<Vec<Group>> {
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(params, &[], &variable);
    let mut grouping = Grouping::new(session, plan);
    for row in rows {
        grouping.add(session, row, &ctx)?;
    }
    grouping.finish(session, &variable)
}

/// Adds `row` to its group's `accumulators`, one per aggregate of the plan; what they
/// keep of it counted in `budget`.
fn accumulate(
    plan: &SelectPlan,
    accumulators: &mut [Accumulator],
    row: &[Value],
    ctx: &EvalContext,
    budget: &mut RowBudget,
) -> SqlResult<()> {
    for (aggregate, accumulator) in plan.aggregates.iter().zip(accumulators) {
        let value = (aggregate.argument.as_ref())
            .map(|arg| eval(arg, row, ctx))
            .transpose()?;
        let order_keys = match &aggregate.concat {
            Some(concat) => (concat.order_by.iter())
                .map(|(e, _)| eval(e, row, ctx))
                .collect::<SqlResult<_>>()?,
            None => Vec::new(),
        };
        accumulator.add(aggregate, value, order_keys, budget)?;
    }
    Ok(())
}

/// GROUP_CONCAT's result is cut to `group_concat_max_len` bytes (MySQL's default).
const GROUP_CONCAT_BYTES_DEFAULT: usize = 1024;

#[derive(Default)]
struct Accumulator {
    count: i64,
    sum: Option<Value>,
    best: Option<Value>,
    /// DISTINCT's values so far, as group keys (equal under the aggregate's collation,
    /// equal keys): a hash set, where a list searched per row took minutes for a
    /// million rows.
    seen: std::collections::HashSet<Vec<u8>, foldhash::fast::RandomState>,
    /// GROUP_CONCAT's values, each with its ORDER BY keys.
    pieces: Vec<(Vec<Value>, Value)>,
}

impl Accumulator {
    /// Adds `value` (`None`: COUNT(*)'s row), what it keeps counted in `budget`.
    fn add(
        &mut self,
        aggregate: &Aggregate,
        value: Option<Value>,
        order_keys: Vec<Value>,
        budget: &mut RowBudget,
    ) -> SqlResult<()> {
        let Some(value) = value else {
            self.count += 1;
            return Ok(());
        };
        if value.is_null() {
            return Ok(());
        }
        if aggregate.distinct {
            let key = encode_group_key(std::slice::from_ref(&value), &[aggregate.collation]);
            if !self.seen.insert(key) {
                return Ok(());
            }
            budget.count(std::slice::from_ref(&value))?;
        }
        self.count += 1;
        match aggregate.kind {
            AggregateKind::Sum | AggregateKind::Avg => {
                let value = match value {
                    Value::Int(n) => Value::Decimal(kista_client::types::Decimal {
                        unscaled: i128::from(n),
                        scale: 0,
                    }),
                    Value::UInt(n) => Value::Decimal(kista_client::types::Decimal {
                        unscaled: i128::from(n),
                        scale: 0,
                    }),
                    Value::Bytes(_) => Value::Double(crate::value::to_f64(&value).unwrap_or(0.0)),
                    other => other,
                };
                self.sum = Some(match self.sum.take() {
                    None => value,
                    Some(sum) => crate::expr::eval_arithmetic_add(&sum, &value),
                });
            }
            AggregateKind::Min | AggregateKind::Max => {
                let better = match &self.best {
                    None => true,
                    Some(best) => {
                        let order = compare_in(aggregate.collation, &value, best);
                        if aggregate.kind == AggregateKind::Min {
                            order == Some(Ordering::Less)
                        } else {
                            order == Some(Ordering::Greater)
                        }
                    }
                };
                if better {
                    self.best = Some(value);
                }
            }
            AggregateKind::GroupConcat => {
                if !aggregate.distinct {
                    budget.count_parts(&[&order_keys, std::slice::from_ref(&value)])?;
                }
                self.pieces.push((order_keys, value));
            }
            AggregateKind::Count | AggregateKind::CountRows => {}
        }
        Ok(())
    }

    /// The aggregate's value; GROUP_CONCAT's ORDER BY sort looks at `killed` between
    /// chunks.
    fn result(
        self,
        aggregate: &Aggregate,
        concat_bytes_max: usize,
        killed: &dyn Fn() -> SqlResult<()>,
    ) -> SqlResult<Value> {
        Ok(match aggregate.kind {
            AggregateKind::Count | AggregateKind::CountRows => Value::Int(self.count),
            AggregateKind::Sum => self.sum.unwrap_or(Value::Null),
            AggregateKind::Avg => match self.sum {
                None => Value::Null,
                Some(Value::Decimal(d)) => {
                    // Four more digits than the values have, as MySQL.
                    let scale = (d.scale + 4).min(38);
                    let widened = d.unscaled * 10i128.pow(u32::from(scale - d.scale));
                    let count = i128::from(self.count.max(1));
                    let rounded = (widened + widened.signum() * count / 2) / count;
                    Value::Decimal(kista_client::types::Decimal {
                        unscaled: rounded,
                        scale,
                    })
                }
                Some(other) => Value::Double(
                    crate::value::to_f64(&other).unwrap_or(0.0) / self.count.max(1) as f64,
                ),
            },
            AggregateKind::Min | AggregateKind::Max => self.best.unwrap_or(Value::Null),
            AggregateKind::GroupConcat => match &aggregate.concat {
                Some(concat) if !self.pieces.is_empty() => {
                    concatenated(self.pieces, concat, concat_bytes_max, killed)?
                }
                _ => Value::Null,
            },
        })
    }
}

/// Whether `plan`'s groups can be made as its rows are read: a table's scan's as the data
/// nodes deliver them, a join's as its last table makes them (as a streamed result's,
/// `stream.rs`); no correlated subqueries (which run over the rows read).
pub(super) fn groups_as_read(plan: &SelectPlan) -> bool {
    let scans = plan.table.is_some() && matches!(plan.access, Access::Scan | Access::Range { .. });
    plan.grouped
        && (scans || plan.joins.is_some())
        && plan.system.is_none()
        && plan.correlated.is_empty()
        && plan.correlated_filter.is_none()
}

/// Runs a query [`groups_as_read`] allows, its groups made as its rows are read. `None`,
/// having read nothing, when one table's rows are read under a lock (the caller reads
/// them by key).
pub(super) fn execute(
    session: &mut Session,
    plan: &SelectPlan,
    params: &[Value],
) -> SqlResult<Option<Outcome>> {
    let groups = session.transactional(|tx, session| {
        let variable = |name: &str| session.variable(name);
        let ctx = session.eval_context(params, &[], &variable);
        let mut grouping = Grouping::new(session, plan);
        let add = |row| {
            grouping.add(session, row, &ctx)?;
            Ok(ControlFlow::Continue(()))
        };
        match fetch::each_row(tx, session, plan, params, add)? {
            true => grouping.finish(session, &variable).map(Some),
            false => Ok(None),
        }
    })?;
    let Some(groups) = groups else {
        return Ok(None);
    };
    let rows = finish::finished_groups(session, plan, groups, params)?;
    let columns = finish::result_columns(plan, &rows);
    Ok(Some(Outcome::Rows { columns, rows }))
}
