//! Fetching a query's rows: key reads, range and full scans with pushed filters, joins,
//! `information_schema` tables; the WHERE checked on every row.

use std::cmp::Ordering;
use std::sync::Arc;

use kista_client::filter::{CompareOp as FilterOp, Filter};
use kista_client::types::{ColumnType, Value};
use kista_client::{IndexBound, LockKind, ScanSpec};

use super::finish::encode_group_key;
use super::{constant, key_values, FrontTable, SelectPlan};
use crate::catalog::SqlTable;
use crate::error::{SqlError, SqlResult};
use crate::expr::{eval, CompareOp, Expr};
use crate::join::{self, JoinedTable};
use crate::plan::{pushable, Access};
use crate::processes::ROWS_PER_KILL_CHECK;
use crate::session::{Session, Tx, RESULT_ROWS_MAX};
use crate::value::{compare_in, fit_exactly};

/// The joined rows (before the WHERE is checked on them).
pub(super) fn fetch_joined(
    tx: &mut Tx,
    session: &Session,
    plan: &SelectPlan,
    first: &SelectPlan,
    joined: &[JoinedTable],
    params: &[Value],
) -> SqlResult<Vec<Vec<Value>>> {
    let mut rows = match (&first.table, &first.system) {
        (Some(first_table), _) => fetch(tx, session, first, first_table, params, false)?,
        (None, Some((front, _))) => system_rows(session, first, front, params)?,
        (None, None) => return Ok(Vec::new()),
    };
    for step in joined {
        let pushed_filter = |conditions: &[Expr]| -> Option<Filter> {
            let filters: Vec<Filter> = conditions
                .iter()
                .filter(|c| pushable(c))
                .filter_map(|c| to_filter(session, step.table.cluster()?, c, params))
                .collect();
            match filters.len() {
                0 => None,
                1 => filters.into_iter().next(),
                _ => Some(Filter::And(filters)),
            }
        };
        rows = join::extend(tx, session, rows, step, params, pushed_filter)?;
    }
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(params, &[], &variable);
    let mut kept = Vec::with_capacity(rows.len());
    for row in rows {
        let passes = match &plan.filter {
            Some(filter) => crate::value::truth(&eval(filter, &row, &ctx)?) == Some(true),
            None => true,
        };
        if passes {
            kept.push(row);
        }
    }
    Ok(kept)
}

/// An `information_schema` table's rows that pass the WHERE.
pub(super) fn system_rows(
    session: &Session,
    plan: &SelectPlan,
    system: &FrontTable,
    params: &[Value],
) -> SqlResult<Vec<Vec<Value>>> {
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(params, &[], &variable);
    let mut rows = match system {
        FrontTable::System(system) => system.rows(session.catalog)?,
        FrontTable::Derived(rows) => rows.as_ref().clone(),
    };
    if let Some(filter) = &plan.filter {
        let mut kept = Vec::with_capacity(rows.len());
        for row in rows {
            if crate::value::truth(&eval(filter, &row, &ctx)?) == Some(true) {
                kept.push(row);
            }
        }
        rows = kept;
    }
    Ok(rows)
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
    let schema = table.schema();
    let width = schema.columns.len();
    let columns: Vec<u16> = plan.needed_columns.iter().map(|&c| c as u16).collect();
    let widen = |values: Vec<Value>| -> Vec<Value> {
        if columns.is_empty() {
            return values;
        }
        let mut row = vec![Value::Null; width];
        for (&c, v) in columns.iter().zip(values) {
            row[usize::from(c)] = v;
        }
        row
    };
    let lock = tx.read_lock(table.table.id, plan.lock);
    let mut access = plan.access.clone();
    let keys: Vec<Vec<Value>> = match &plan.access {
        Access::PrimaryKey(exprs) => {
            match key_values(session, table, &schema.primary_key, exprs, params)? {
                Some(key) => vec![key],
                None => {
                    access = Access::Scan;
                    Vec::new()
                }
            }
        }
        Access::PrimaryKeyIn(exprs) => {
            let mut keys = Vec::with_capacity(exprs.len());
            for expr in exprs {
                match key_values(
                    session,
                    table,
                    &schema.primary_key,
                    std::slice::from_ref(expr),
                    params,
                )? {
                    Some(key) => keys.push(key),
                    None => {
                        access = Access::Scan;
                        break;
                    }
                }
            }
            // In key order, each key once (as its column's collation sees keys: under a
            // case-insensitive key 'a' and 'A' are one row).
            let collation = table.key_collations()[0];
            let order = |a: &Vec<Value>, b: &Vec<Value>| compare_in(collation, &a[0], &b[0]);
            keys.sort_by(|a, b| order(a, b).unwrap_or(Ordering::Equal));
            keys.dedup_by(|a, b| order(a, b) == Some(Ordering::Equal));
            keys
        }
        _ => Vec::new(),
    };
    let found: Vec<Vec<Value>> = match &access {
        Access::PrimaryKey(_) | Access::PrimaryKeyIn(_) => {
            read_keys_in(tx, table, &keys, lock, &columns, last)?
        }
        Access::Unique { index, key } => {
            let index_columns = table.table.index(index)?.1.columns.clone();
            match key_values(session, table, &index_columns, key, params)? {
                Some(key) => {
                    let op = tx.transaction.read_unique(
                        &table.table,
                        index,
                        &key,
                        lock,
                        columns.clone(),
                    )?;
                    let done = tx.execute(last)?;
                    done.row(op).map(|r| r.to_vec()).into_iter().collect()
                }
                None => scan(tx, session, plan, lock, table, None, &columns, params, last)?,
            }
        }
        Access::Range { .. } => scan(
            tx,
            session,
            plan,
            lock,
            table,
            Some(&access),
            &columns,
            params,
            last,
        )?,
        Access::Scan => scan(tx, session, plan, lock, table, None, &columns, params, last)?,
    };
    let mut rows = Vec::with_capacity(found.len());
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(params, &[], &variable);
    for values in found {
        let row = widen(values);
        if let Some(filter) = &plan.filter {
            if crate::value::truth(&eval(filter, &row, &ctx)?) != Some(true) {
                continue;
            }
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Reads rows by primary key in one batch (one round trip) in `tx`.
pub fn read_keys_in(
    tx: &mut Tx,
    table: &SqlTable,
    keys: &[Vec<Value>],
    lock: LockKind,
    columns: &[u16],
    last: bool,
) -> SqlResult<Vec<Vec<Value>>> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let mut ops = Vec::with_capacity(keys.len());
    for key in keys {
        ops.push(if columns.is_empty() {
            tx.transaction.read(&table.table, key, lock)?
        } else {
            tx.transaction
                .read_columns(&table.table, key, lock, columns.to_vec())?
        });
    }
    let done = tx.execute(last)?;
    Ok(ops
        .into_iter()
        .filter_map(|op| done.row(op).map(<[Value]>::to_vec))
        .collect())
}

/// Scans (a range of an index, or everything) with the WHERE's pushable conjuncts as a
/// filter in the data nodes. Locking reads scan for the keys, then read the rows by key
/// under the lock in the session's transaction.
#[allow(clippy::too_many_arguments)]
pub(super) fn scan(
    tx: &mut Tx,
    session: &Session,
    plan: &SelectPlan,
    lock: LockKind,
    table: &Arc<SqlTable>,
    range: Option<&Access>,
    columns: &[u16],
    params: &[Value],
    last: bool,
) -> SqlResult<Vec<Vec<Value>>> {
    // One spec per range; any bound that does not fit the column exactly (MySQL would
    // compare it as a number) makes it a full scan, the WHERE deciding.
    let mut specs = vec![ScanSpec::full()];
    if let Some(Access::Range {
        index,
        column,
        ranges,
    }) = range
    {
        let column_type = table.schema().columns[*column].column_type;
        let bound = |end: &Option<(Expr, bool)>| -> SqlResult<Option<Option<IndexBound>>> {
            let Some((expr, inclusive)) = end else {
                return Ok(Some(None));
            };
            let value = constant(session, expr, params)?;
            Ok(fit_exactly(&value, column_type).map(|v| {
                Some(IndexBound {
                    values: vec![v],
                    inclusive: *inclusive,
                })
            }))
        };
        let mut ranged = Vec::with_capacity(ranges.len());
        for range in ranges {
            match (bound(&range.lower)?, bound(&range.upper)?) {
                (Some(lower), Some(upper)) => {
                    let spec = ScanSpec::index_range(&table.table, index, lower, upper, false)?;
                    // Several ranges are merged here, not in index order.
                    ranged.push(if ranges.len() > 1 {
                        spec.unordered()
                    } else {
                        spec
                    });
                }
                _ => {
                    ranged.clear();
                    break;
                }
            }
        }
        if !ranged.is_empty() {
            specs = ranged;
        }
    }
    let pushed: Vec<Filter> = plan
        .conjuncts
        .iter()
        .filter(|c| pushable(c))
        .filter_map(|c| to_filter(session, table, c, params))
        .collect();
    let filter = match pushed.len() {
        0 => None,
        1 => pushed.into_iter().next(),
        _ => Some(Filter::And(pushed)),
    };
    let locking = lock != LockKind::Committed;
    let key_columns = table.key_columns();
    let key_collations = table.key_collations();
    let several = specs.len() > 1;
    // Scans are all sent before any is read: their round trips overlap.
    let mut scans = Vec::with_capacity(specs.len());
    for mut spec in specs {
        if let Some(filter) = &filter {
            spec = spec.filter(filter.clone());
        }
        if locking {
            spec = spec.columns(key_columns.clone());
        } else if !columns.is_empty() {
            spec = spec.columns(columns.to_vec());
        }
        scans.push(session.catalog.client().scan(&table.table, spec)?);
    }
    let mut rows = Vec::new();
    // Overlapping ranges (or a repeated IN value) find a row more than once.
    let mut seen = super::finish::group_keys();
    let key_positions: Vec<usize> = if locking {
        (0..key_columns.len()).collect()
    } else if columns.is_empty() {
        table.schema().primary_key.clone()
    } else {
        key_columns
            .iter()
            .filter_map(|k| columns.iter().position(|c| c == k))
            .collect()
    };
    for scan in scans {
        for row in scan {
            let row = row?;
            if rows.len() % ROWS_PER_KILL_CHECK == 0 {
                if let Some(process) = &session.process {
                    process.check_killed()?;
                }
            }
            if several {
                let key: Vec<Value> = key_positions.iter().map(|&p| row[p].clone()).collect();
                if !seen.insert(encode_group_key(&key, &key_collations)) {
                    continue;
                }
            }
            rows.push(row);
            if rows.len() > RESULT_ROWS_MAX {
                return Err(SqlError::new(1104, "42000", format!("The SELECT would examine more than {RESULT_ROWS_MAX} rows, the front end's limit")));
            }
        }
    }
    if locking {
        add_written_keys(tx, table, &mut rows);
        return read_keys_in(tx, table, &rows, lock, columns, last);
    }
    Ok(rows)
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

/// A WHERE conjunct as a data-node filter, its constants evaluated and made to fit the
/// column; `None` when it cannot be carried exactly.
pub(super) fn to_filter(
    session: &Session,
    table: &SqlTable,
    expr: &Expr,
    params: &[Value],
) -> Option<Filter> {
    let column_value = |column: usize, e: &Expr| -> Option<Value> {
        let value = constant(session, e, params).ok()?;
        fit_exactly(&value, table.schema().columns[column].column_type)
    };
    let compare_filter = |column: usize, op: CompareOp, e: &Expr| -> Option<Filter> {
        let op = match op {
            CompareOp::Eq => FilterOp::Eq,
            CompareOp::NotEq => FilterOp::Ne,
            CompareOp::Lt => FilterOp::Lt,
            CompareOp::LtEq => FilterOp::Le,
            CompareOp::Gt => FilterOp::Gt,
            CompareOp::GtEq => FilterOp::Ge,
            CompareOp::NullSafeEq => return None,
        };
        Some(Filter::Compare {
            column,
            op,
            value: column_value(column, e)?,
        })
    };
    match expr {
        Expr::Compare(op, left, right, _) => match (left.as_ref(), right.as_ref()) {
            (Expr::Column(c), e) => compare_filter(*c, *op, e),
            (e, Expr::Column(c)) => {
                let flipped = op.flipped();
                compare_filter(*c, flipped, e)
            }
            _ => None,
        },
        Expr::IsNull { expr, negated } => match expr.as_ref() {
            Expr::Column(c) => {
                let is_null = Filter::IsNull(*c);
                Some(if *negated {
                    Filter::Not(Box::new(is_null))
                } else {
                    is_null
                })
            }
            _ => None,
        },
        Expr::Like {
            expr,
            pattern,
            negated,
            ..
        } => {
            let Expr::Column(c) = expr.as_ref() else {
                return None;
            };
            let col = &table.schema().columns[*c];
            if !matches!(
                col.column_type,
                ColumnType::Char { .. }
                    | ColumnType::VarChar { .. }
                    | ColumnType::Text { .. }
                    | ColumnType::Binary { .. }
                    | ColumnType::VarBinary { .. }
                    | ColumnType::Blob
            ) {
                return None;
            }
            let Value::Bytes(pattern) = constant(session, pattern, params).ok()? else {
                return None;
            };
            let like = Filter::Like {
                column: *c,
                pattern,
            };
            Some(if *negated {
                Filter::Not(Box::new(like))
            } else {
                like
            })
        }
        Expr::Between {
            expr,
            low,
            high,
            negated,
            ..
        } => {
            let Expr::Column(c) = expr.as_ref() else {
                return None;
            };
            let inside = Filter::And(vec![
                compare_filter(*c, CompareOp::GtEq, low)?,
                compare_filter(*c, CompareOp::LtEq, high)?,
            ]);
            Some(if *negated {
                Filter::Not(Box::new(inside))
            } else {
                inside
            })
        }
        Expr::InList {
            expr,
            list,
            negated,
            ..
        } => {
            let Expr::Column(c) = expr.as_ref() else {
                return None;
            };
            let any = Filter::Or(
                list.iter()
                    .map(|e| compare_filter(*c, CompareOp::Eq, e))
                    .collect::<Option<_>>()?,
            );
            Some(if *negated {
                Filter::Not(Box::new(any))
            } else {
                any
            })
        }
        Expr::And(a, b) => Some(Filter::And(vec![
            to_filter(session, table, a, params)?,
            to_filter(session, table, b, params)?,
        ])),
        Expr::Or(a, b) => Some(Filter::Or(vec![
            to_filter(session, table, a, params)?,
            to_filter(session, table, b, params)?,
        ])),
        Expr::Not(e) => Some(Filter::Not(Box::new(to_filter(session, table, e, params)?))),
        _ => None,
    }
}
