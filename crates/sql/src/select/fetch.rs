//! Fetching a query's rows: key reads, range and full scans with pushed filters, joins,
//! `information_schema` tables; the WHERE checked on every row.

use std::cmp::Ordering;
use std::ops::ControlFlow;
use std::sync::Arc;

use kista_client::filter::Filter;
use kista_client::types::Value;
use kista_client::{IndexBound, LockKind, ScanSpec};

use super::finish::encode_group_key;
use super::pushdown::pushed_filter;
use super::{constant, key_values, FrontTable, SelectPlan};
use crate::catalog::SqlTable;
use crate::error::SqlResult;
use crate::expr::{eval, EvalContext, Expr};
use crate::join::{self, JoinedTable};
use crate::plan::Access;
use crate::processes::ROWS_PER_KILL_CHECK;
use crate::row_budget::BoundedRows;
use crate::session::{Session, Tx};
use crate::value::{compare_in, fit_exactly};

/// The joined rows that pass the WHERE.
pub(super) fn fetch_joined(
    tx: &mut Tx,
    session: &Session,
    plan: &SelectPlan,
    params: &[Value],
) -> SqlResult<Vec<Vec<Value>>> {
    let mut rows = join::joined_rows(session);
    join_each(tx, session, plan, params, &mut rows)?;
    Ok(rows.rows)
}

/// Hands `each` the rows of `plan` that pass the WHERE as they are read, until it breaks:
/// a join's as its last table makes them ([`join_each`]), one table's as its scan or range
/// delivers them ([`scan_each`]). `false`, having read nothing, when the one table's rows
/// are read under a lock or by key (the caller reads them otherwise).
pub(super) fn each_row(
    tx: &mut Tx,
    session: &Session,
    plan: &SelectPlan,
    params: &[Value],
    mut each: impl FnMut(Vec<Value>) -> SqlResult<ControlFlow<()>>,
) -> SqlResult<bool> {
    match (&plan.joins, &plan.table) {
        (Some(_), _) => {
            join_each(tx, session, plan, params, &mut each)?;
            Ok(true)
        }
        (None, Some(table)) => scan_each(tx, session, plan, table, params, each),
        (None, None) => Ok(false),
    }
}

/// Hands `out` the joined rows that pass the WHERE as the last table makes them, until it
/// breaks; the tables before are joined whole. The WHERE goes with the last table: each
/// joined row is tested as it is made. A join that ends with a nest in parentheses is
/// joined whole, then tested.
pub(super) fn join_each(
    tx: &mut Tx,
    session: &Session,
    plan: &SelectPlan,
    params: &[Value],
    out: &mut dyn join::JoinOutput,
) -> SqlResult<()> {
    let Some((first, joined)) = &plan.joins else {
        panic!("join_each runs a plan with joins");
    };
    let rows = match (&first.table, &first.system) {
        (Some(first_table), _) => fetch(tx, session, first, first_table, params, false)?,
        (None, Some((front, _))) => system_rows(session, first, front, params)?,
        (None, None) => return Ok(()),
    };
    let last = last_step(joined);
    if joined[last].nest.is_none() {
        let rows = join_steps(tx, session, rows, &joined[..last], params)?;
        let (last, filter) = (&joined[last], step_filter(session, &joined[last], params));
        let step = (last, plan.filter.as_ref());
        return join::extend_into(tx, session, &rows, step, params, filter, out);
    }
    let rows = join_steps(tx, session, rows, joined, params)?;
    for row in passing(session, rows, plan.filter.as_ref(), params)? {
        if out.take(row)?.is_break() {
            break;
        }
    }
    Ok(())
}

/// The rows `condition` holds for (all of them without one).
fn passing(
    session: &Session,
    rows: Vec<Vec<Value>>,
    condition: Option<&Expr>,
    params: &[Value],
) -> SqlResult<Vec<Vec<Value>>> {
    let Some(condition) = condition else {
        return Ok(rows);
    };
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(params, &[], &variable);
    let mut kept = Vec::with_capacity(rows.len());
    for row in rows {
        if crate::value::truth(&eval(condition, &row, &ctx)?) == Some(true) {
            kept.push(row);
        }
    }
    Ok(kept)
}

/// Where the last of the join's steps begins: its last table, or the nest that ends it.
fn last_step(joined: &[JoinedTable]) -> usize {
    let mut at = 0;
    loop {
        let tables = joined[at].nest.as_ref().map_or(1, |nest| nest.tables);
        if at + tables >= joined.len() {
            return at;
        }
        at += tables;
    }
}

/// `rows` joined with each of `steps` in turn, a nest as one step.
fn join_steps(
    tx: &mut Tx,
    session: &Session,
    mut rows: Vec<Vec<Value>>,
    steps: &[JoinedTable],
    params: &[Value],
) -> SqlResult<Vec<Vec<Value>>> {
    let mut at = 0;
    while at < steps.len() {
        let step = &steps[at];
        let Some(nest) = &step.nest else {
            let filter = step_filter(session, step, params);
            rows = join::extend(tx, session, &rows, (step, None), params, filter)?;
            at += 1;
            continue;
        };
        rows = join_nest(tx, session, rows, &steps[at..at + nest.tables], params)?;
        at += nest.tables;
    }
    Ok(rows)
}

/// `before` joined with a nest (`members`, the first holding the [`join::JoinNest`]): its
/// tables paired, its ON tested, and under a LEFT JOIN the rows with no pair kept with
/// NULLs.
fn join_nest(
    tx: &mut Tx,
    session: &Session,
    before: Vec<Vec<Value>>,
    members: &[JoinedTable],
    params: &[Value],
) -> SqlResult<Vec<Vec<Value>>> {
    let (head, rest) = members.split_first().expect("a nest holds tables");
    let nest = head.nest.as_ref().expect("a nest's first table holds it");
    let filter = step_filter(session, head, params);
    let rows = join::extend(tx, session, &before, (head, None), params, filter)?;
    let rows = join_steps(tx, session, rows, rest, params)?;
    let rows = passing(session, rows, nest.on.as_ref(), params)?;
    if !nest.left {
        return Ok(rows);
    }
    let width = members.iter().map(|m| m.table.schema().columns.len()).sum();
    Ok(join::with_unmatched(before, rows, width))
}

/// The data nodes' filter of the conditions a joined table's scan is given.
fn step_filter<'a>(
    session: &'a Session,
    step: &'a JoinedTable,
    params: &'a [Value],
) -> impl Fn(&[Expr]) -> Option<Filter> + 'a {
    move |conditions| pushed_filter(session, step.table.cluster()?, conditions, params)
}

/// An `information_schema` table's rows that pass the WHERE.
pub(super) fn system_rows(
    session: &Session,
    plan: &SelectPlan,
    system: &FrontTable,
    params: &[Value],
) -> SqlResult<Vec<Vec<Value>>> {
    let rows = match system {
        FrontTable::System(system) => system.rows(session)?,
        FrontTable::Derived(rows) => rows.as_ref().clone(),
    };
    passing(session, rows, plan.filter.as_ref(), params)
}

/// The rows the access path finds (full width: columns not read are NULL), already
/// checked against the WHERE. Key reads go in `tx`; `last`: the statement sends nothing
/// after them (so an autocommit statement commits with them).
pub(crate) fn fetch(
    tx: &mut Tx,
    session: &Session,
    plan: &SelectPlan,
    table: &Arc<SqlTable>,
    params: &[Value],
    last: bool,
) -> SqlResult<Vec<Vec<Value>>> {
    let lock = tx.read_lock(table.table.id, plan.lock);
    let read = Read::new((session, params), plan, table, lock, last);
    let columns = &read.columns;
    let found = match &plan.access {
        Access::PrimaryKey(_) | Access::PrimaryKeyIn(_) => match read.primary_keys()? {
            Some(keys) => read_keys_in(tx, table, &keys, read.lock, columns, last)?,
            None => read.scan(tx, None)?,
        },
        Access::Unique { index, key } => read.unique(tx, index, key)?,
        Access::Range { .. } => read.scan(tx, Some(&plan.access))?,
        Access::Scan => read.scan(tx, None)?,
    };
    let width = table.schema().columns.len();
    let mut rows = Vec::with_capacity(found.len());
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(params, &[], &variable);
    for values in found {
        let row = widened(values, columns, width);
        if passes(plan, &row, &ctx)? {
            rows.push(row);
        }
    }
    Ok(rows)
}

/// Calls `each` with the rows a scan of `table` finds that pass the WHERE (full width),
/// as the data nodes deliver them, until it breaks. `false`, having read nothing, when
/// the plan reads by key or under a lock (then [`fetch`] reads its rows).
pub(super) fn scan_each(
    tx: &Tx,
    session: &Session,
    plan: &SelectPlan,
    table: &Arc<SqlTable>,
    params: &[Value],
    mut each: impl FnMut(Vec<Value>) -> SqlResult<ControlFlow<()>>,
) -> SqlResult<bool> {
    let lock = tx.lock_to_read(table.table.id, plan.lock);
    let range = match &plan.access {
        Access::Scan => None,
        range @ Access::Range { .. } => Some(range),
        _ => return Ok(false),
    };
    if lock != LockKind::Committed {
        return Ok(false);
    }
    let read = Read::new((session, params), plan, table, lock, false);
    let columns = &read.columns;
    let width = table.schema().columns.len();
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(params, &[], &variable);
    read.each_scanned(range, |values| {
        let row = widened(values, columns, width);
        match passes(plan, &row, &ctx)? {
            true => each(row),
            false => Ok(ControlFlow::Continue(())),
        }
    })?;
    Ok(true)
}

/// Whether `row` passes the plan's WHERE.
fn passes(plan: &SelectPlan, row: &[Value], ctx: &EvalContext) -> SqlResult<bool> {
    Ok(match &plan.filter {
        Some(filter) => crate::value::truth(&eval(filter, row, ctx)?) == Some(true),
        None => true,
    })
}

/// A row of the values of `columns` (all, when empty) as a row of the table's `width`,
/// NULL where not read.
fn widened(values: Vec<Value>, columns: &[u16], width: usize) -> Vec<Value> {
    if columns.is_empty() {
        return values;
    }
    let mut row = vec![Value::Null; width];
    for (&c, v) in columns.iter().zip(values) {
        row[usize::from(c)] = v;
    }
    row
}

/// How one table's rows are read for a plan: its columns (none: all), under its lock.
struct Read<'a> {
    session: &'a Session<'a>,
    plan: &'a SelectPlan,
    table: &'a Arc<SqlTable>,
    params: &'a [Value],
    columns: Vec<u16>,
    lock: LockKind,
    last: bool,
}

impl<'a> Read<'a> {
    /// Reading the columns `plan` needs of `table` under `lock`; `last`: the statement
    /// sends nothing after.
    fn new(
        (session, params): (&'a Session<'a>, &'a [Value]),
        plan: &'a SelectPlan,
        table: &'a Arc<SqlTable>,
        lock: LockKind,
        last: bool,
    ) -> Self {
        Self {
            session,
            plan,
            table,
            params,
            columns: plan.needed_columns.iter().map(|&c| c as u16).collect(),
            lock,
            last,
        }
    }

    /// The primary keys a key or IN-list access names, in key order, each once (as the
    /// key's collation sees keys: under a case-insensitive key 'a' and 'A' are one row);
    /// `None` when one does not fit the key (a scan then decides, as MySQL compares).
    fn primary_keys(&self) -> SqlResult<Option<Vec<Vec<Value>>>> {
        let key_columns = &self.table.schema().primary_key;
        let key =
            |exprs: &[Expr]| key_values(self.session, self.table, key_columns, exprs, self.params);
        let mut keys = match &self.plan.access {
            Access::PrimaryKey(exprs) => return Ok(key(exprs)?.map(|key| vec![key])),
            Access::PrimaryKeyIn(exprs) => Vec::with_capacity(exprs.len()),
            _ => return Ok(None),
        };
        if let Access::PrimaryKeyIn(exprs) = &self.plan.access {
            for expr in exprs {
                match key(std::slice::from_ref(expr))? {
                    Some(found) => keys.push(found),
                    None => return Ok(None),
                }
            }
        }
        let collation = self.table.key_collations()[0];
        let order = |a: &Vec<Value>, b: &Vec<Value>| compare_in(collation, &a[0], &b[0]);
        keys.sort_by(|a, b| order(a, b).unwrap_or(Ordering::Equal));
        keys.dedup_by(|a, b| order(a, b) == Some(Ordering::Equal));
        Ok(Some(keys))
    }

    /// The row a unique index's key names (a scan when the key does not fit).
    fn unique(&self, tx: &mut Tx, index: &str, key: &[Expr]) -> SqlResult<Vec<Vec<Value>>> {
        let index_columns = self.table.table.index(index)?.1.columns.clone();
        let Some(key) = key_values(self.session, self.table, &index_columns, key, self.params)?
        else {
            return self.scan(tx, None);
        };
        let op = (tx.transaction).read_unique(
            &self.table.table,
            index,
            &key,
            self.lock,
            self.columns.to_vec(),
        )?;
        let done = tx.execute(self.last)?;
        Ok(done.row(op).map(|r| r.to_vec()).into_iter().collect())
    }
}

/// Reads rows by primary key in `tx`, a full batch per round trip (one for a few keys);
/// the last batch ends the statement's work when `last`.
pub fn read_keys_in(
    tx: &mut Tx,
    table: &SqlTable,
    keys: &[Vec<Value>],
    lock: LockKind,
    columns: &[u16],
    last: bool,
) -> SqlResult<Vec<Vec<Value>>> {
    let mut rows = Vec::new();
    let add = |tx: &mut Tx, key: &Vec<Value>| {
        Ok(if columns.is_empty() {
            tx.transaction.read(&table.table, key, lock)?
        } else {
            (tx.transaction).read_columns(&table.table, key, lock, columns.to_vec())?
        })
    };
    tx.in_batches(keys, last, add, |_, _, op, done| {
        rows.extend(done.row(op).map(<[Value]>::to_vec));
        Ok(())
    })?;
    Ok(rows)
}

impl Read<'_> {
    /// Scans (`range` of an index, or everything) with the WHERE's pushable conjuncts as a
    /// filter in the data nodes. Locking reads scan for the keys, then read the rows by
    /// key under the lock in the session's transaction. Error 1104 past the front end's
    /// limits (`row_budget`).
    fn scan(&self, tx: &mut Tx, range: Option<&Access>) -> SqlResult<Vec<Vec<Value>>> {
        let bytes_max = self.session.catalog.result_bytes_max;
        let mut scanned = BoundedRows::new(bytes_max, "The SELECT would examine");
        self.each_scanned(range, |row| {
            scanned.push(row)?;
            Ok(ControlFlow::Continue(()))
        })?;
        let mut rows = scanned.rows;
        if self.lock != LockKind::Committed {
            add_written_keys(tx, self.table, &mut rows);
            return read_keys_in(tx, self.table, &rows, self.lock, &self.columns, self.last);
        }
        Ok(rows)
    }

    /// Calls `each` with the rows the scans find (only the key under a lock), each once,
    /// as they arrive, until it breaks (the scans are closed then); KILL checked as they
    /// come.
    fn each_scanned(
        &self,
        range: Option<&Access>,
        mut each: impl FnMut(Vec<Value>) -> SqlResult<ControlFlow<()>>,
    ) -> SqlResult<()> {
        let (session, table) = (self.session, self.table);
        let specs = match range {
            Some(range) => self.range_specs(range)?,
            None => vec![ScanSpec::full()],
        };
        let filter = pushed_filter(session, table, &self.plan.conjuncts, self.params);
        let locking = self.lock != LockKind::Committed;
        let key_columns = table.key_columns();
        let several = specs.len() > 1;
        // Scans are all sent before any is read: their round trips overlap.
        let mut scans = Vec::with_capacity(specs.len());
        for mut spec in specs {
            if let Some(filter) = &filter {
                spec = spec.filter(filter.clone());
            }
            if locking {
                spec = spec.columns(key_columns.clone());
            } else if !self.columns.is_empty() {
                spec = spec.columns(self.columns.to_vec());
            }
            scans.push(session.catalog.client().scan(&table.table, spec)?);
        }
        // Overlapping ranges (or a repeated IN value) find a row more than once.
        let key_positions: Option<Vec<usize>> =
            several.then(|| match (locking, self.columns.as_slice()) {
                (true, _) => (0..key_columns.len()).collect(),
                (false, []) => table.schema().primary_key.clone(),
                (false, columns) => (key_columns.iter())
                    .filter_map(|k| columns.iter().position(|c| c == k))
                    .collect(),
            });
        let key_collations = table.key_collations();
        let mut seen = super::finish::group_keys();
        let mut arrived = 0usize;
        for scan in scans {
            for row in scan {
                let row = row?;
                if arrived % ROWS_PER_KILL_CHECK == 0 {
                    if let Some(process) = &session.process {
                        process.check_killed()?;
                    }
                }
                arrived += 1;
                if let Some(positions) = &key_positions {
                    let key: Vec<Value> = positions.iter().map(|&p| row[p].clone()).collect();
                    if !seen.insert(encode_group_key(&key, &key_collations)) {
                        continue;
                    }
                }
                if each(row)?.is_break() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// One scan per range of a range access; a full scan when a bound does not fit the
    /// column exactly (MySQL would compare it as a number), the WHERE deciding.
    fn range_specs(&self, range: &Access) -> SqlResult<Vec<ScanSpec>> {
        let Access::Range {
            index,
            column,
            ranges,
        } = range
        else {
            return Ok(vec![ScanSpec::full()]);
        };
        let column_type = self.table.schema().columns[*column].column_type;
        let bound = |end: &Option<(Expr, bool)>| -> SqlResult<Option<Option<IndexBound>>> {
            let Some((expr, inclusive)) = end else {
                return Ok(Some(None));
            };
            let value = constant(self.session, expr, self.params)?;
            Ok(fit_exactly(&value, column_type).map(|v| {
                Some(IndexBound {
                    values: vec![v],
                    inclusive: *inclusive,
                })
            }))
        };
        let mut specs = Vec::with_capacity(ranges.len());
        for range in ranges {
            let (Some(lower), Some(upper)) = (bound(&range.lower)?, bound(&range.upper)?) else {
                return Ok(vec![ScanSpec::full()]);
            };
            let spec = ScanSpec::index_range(&self.table.table, index, lower, upper, false)?;
            // Several ranges are merged here, not in index order.
            specs.push(if ranges.len() > 1 {
                spec.unordered()
            } else {
                spec
            });
        }
        Ok(specs)
    }
}

/// Adds to `keys` (primary keys a scan found) the keys of the rows of `table_id` the
/// transaction inserted or changed, which a committed scan may miss (`write_set.rs`).
pub(crate) fn add_written_keys(tx: &Tx, table: &SqlTable, keys: &mut Vec<Vec<Value>>) {
    let written = tx.written_keys(table.table.id);
    if written.is_empty() {
        return;
    }
    let collations = table.key_collations();
    let mut seen: std::collections::HashSet<Vec<u8>> = (keys.iter())
        .map(|key| encode_group_key(key, &collations))
        .collect();
    for key in written {
        if seen.insert(encode_group_key(key, &collations)) {
            keys.push(key.clone());
        }
    }
}
