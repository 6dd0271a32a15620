//! Finishing a query in the front end: groups and aggregates, HAVING, the select list,
//! DISTINCT, ORDER BY and LIMIT; and the types its result columns announce.

use std::cmp::Ordering;
use std::sync::Arc;

use kista_client::types::{Collation, ColumnType, Value};

use super::grouping::{self, Group};
use super::{row_count, FrontTable, SelectPlan};
use crate::catalog::SqlTable;
use crate::error::SqlResult;
use crate::expr::{
    eval, result_type, AggregateKind, EvalContext, Expr, GroupConcat, DECIMAL_RESULT,
};
use crate::output::{self, Origin};
use crate::protocol::results::ColumnDefinition;
use crate::row_budget::RowBudget;
use crate::session::{Outcome, Session};
use crate::value::compare_in;

/// Groups and aggregates, HAVING, outputs, DISTINCT, ORDER BY, LIMIT; and the result
/// columns' definitions.
pub(super) fn finish(
    session: &Session,
    plan: &SelectPlan,
    rows: Vec<Vec<Value>>,
    params: &[Value],
) -> SqlResult<Outcome> {
    let rows = finished_rows(session, plan, rows, params)?;
    let columns = result_columns(plan, &rows);
    Ok(Outcome::Rows { columns, rows })
}

/// The definitions of the result's columns: a column's type where the plan knows it,
/// else the kind of its first non-NULL value in `rows`, else its likely type.
pub(super) fn result_columns(plan: &SelectPlan, rows: &[Vec<Value>]) -> Vec<ColumnDefinition> {
    (plan.outputs.iter().enumerate())
        .map(|(position, o)| {
            let (column_type, origin) = static_type(plan, &o.expr);
            output::definition(
                &o.name,
                column_type,
                origin,
                rows.iter().map(|r| r[position].clone()),
                likely_type(plan, &o.expr),
            )
        })
        .collect()
}

/// The select list's values over `row` (`ctx` carries its group's aggregates).
pub(super) fn output_row(
    plan: &SelectPlan,
    row: &[Value],
    ctx: &EvalContext,
) -> SqlResult<Vec<Value>> {
    (plan.outputs.iter())
        .map(|o| eval(&o.expr, row, ctx))
        .collect()
}

/// Groups and aggregates, HAVING, outputs, DISTINCT, ORDER BY, LIMIT: the result rows.
pub(super) fn finished_rows(
    session: &Session,
    plan: &SelectPlan,
    rows: Vec<Vec<Value>>,
    params: &[Value],
) -> SqlResult<Vec<Vec<Value>>> {
    let groups: Vec<Group> = if plan.grouped {
        grouping::group(session, plan, rows, params)?
    } else {
        rows.into_iter().map(|r| (r, Vec::new())).collect()
    };
    finished_groups(session, plan, groups, params)
}

/// HAVING, outputs, DISTINCT, ORDER BY, LIMIT over the groups (each row its own group
/// when the query has none): the result rows.
pub(super) fn finished_groups(
    session: &Session,
    plan: &SelectPlan,
    groups: Vec<Group>,
    params: &[Value],
) -> SqlResult<Vec<Vec<Value>>> {
    let variable = |name: &str| session.variable(name);
    let sort_collations: Vec<Collation> = (plan.order_by.iter())
        .map(|(e, _)| plan.collation_of(e))
        .collect();
    let mut results: Vec<(Vec<Value>, Vec<Value>)> = Vec::with_capacity(groups.len());
    // Computed values can be far larger than the rows read (REPEAT, GROUP_CONCAT).
    let bytes_max = session.catalog.result_bytes_max;
    let mut budget = RowBudget::new(bytes_max, "The SELECT would return");
    for (row, aggregates) in &groups {
        let ctx = session.eval_context(params, aggregates, &variable);
        if let Some(having) = &plan.having {
            if crate::value::truth(&eval(having, row, &ctx)?) != Some(true) {
                continue;
            }
        }
        let output = output_row(plan, row, &ctx)?;
        let keys: Vec<Value> = plan
            .order_by
            .iter()
            .map(|(e, _)| eval(e, row, &ctx))
            .collect::<SqlResult<_>>()?;
        budget.count(&output)?;
        results.push((keys, output));
    }
    if plan.distinct {
        let collations: Vec<Collation> = (plan.outputs.iter())
            .map(|o| plan.collation_of(&o.expr))
            .collect();
        let mut seen = group_keys();
        results.retain(|(_, output)| seen.insert(encode_group_key(output, &collations)));
    }
    if !plan.order_by.is_empty() {
        let collations = &sort_collations;
        sort_heeding_kill(
            || session.check_killed(),
            &mut results,
            |(a, _), (b, _)| compare_sort_keys(&plan.order_by, collations, a, b),
        )?;
    }
    let offset = row_count(session, plan.offset.as_ref(), params)?.unwrap_or(0);
    let limit = row_count(session, plan.limit.as_ref(), params)?.unwrap_or(usize::MAX);
    session.rows_before_limit.set(results.len() as u64);
    Ok(results
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|(_, o)| o)
        .collect())
}

/// A result column's type when no value shows it (`expr/result_type.rs`): SUM and AVG
/// give DECIMALs, MIN and MAX their argument's type.
fn likely_type(plan: &SelectPlan, expr: &Expr) -> Option<ColumnType> {
    result_type(expr, &|leaf| {
        let Expr::Aggregate(n) = leaf else {
            return static_type(plan, leaf).0;
        };
        let aggregate = &plan.aggregates[*n];
        match (aggregate.kind, &aggregate.argument) {
            (AggregateKind::Sum | AggregateKind::Avg, _) => Some(DECIMAL_RESULT),
            (AggregateKind::GroupConcat, _) => Some(crate::sql_type::DEFAULT_TEXT),
            (AggregateKind::Min | AggregateKind::Max, Some(argument)) => {
                likely_type(plan, argument)
            }
            _ => static_type(plan, leaf).0,
        }
    })
}

/// A column's type (and origin) when the expression is a table column or an aggregate of
/// known type.
pub(super) fn static_type<'p>(
    plan: &'p SelectPlan,
    expr: &Expr,
) -> (Option<ColumnType>, Option<Origin<'p>>) {
    match expr {
        Expr::Column(c) => column_type_and_origin(plan, *c),
        Expr::Aggregate(n) => {
            let aggregate = &plan.aggregates[*n];
            match aggregate.kind {
                AggregateKind::Count | AggregateKind::CountRows => (
                    Some(ColumnType::Int {
                        bytes: 8,
                        signed: true,
                    }),
                    None,
                ),
                AggregateKind::Min | AggregateKind::Max => match &aggregate.argument {
                    Some(arg) => (static_type(plan, arg).0, None),
                    None => (None, None),
                },
                _ => (None, None),
            }
        }
        _ => (None, None),
    }
}

/// Row position `c`'s column: its type and where it comes from.
fn column_type_and_origin(plan: &SelectPlan, c: usize) -> (Option<ColumnType>, Option<Origin<'_>>) {
    if let Some(correlated) = plan.correlated_at(c) {
        return (correlated.value_type(), None);
    }
    // The table holding position `c`, the column's position in it, and whether a LEFT
    // JOIN may make its columns NULL.
    let found: Option<(Origin, ColumnType)> = match (&plan.joins, &plan.table, &plan.system) {
        (Some((first, joined)), _, _) => {
            // Tables the front end holds have no origin (nor a column type to tell).
            let mut tables: Vec<(Option<&Arc<SqlTable>>, usize, bool)> =
                vec![(first.table.as_ref(), 0, false)];
            tables.extend(
                joined
                    .iter()
                    .map(|j| (j.table.cluster(), j.offset, j.nullable())),
            );
            match tables.into_iter().rev().find(|(_, offset, _)| *offset <= c) {
                Some((Some(table), offset, left)) => {
                    let column_type = table.schema().columns[c - offset].column_type;
                    Some((in_table(table, c - offset, left), column_type))
                }
                _ => None,
            }
        }
        (None, Some(table), _) => Some((
            in_table(table, c, false),
            table.schema().columns[c].column_type,
        )),
        (None, None, Some((system, schema))) => {
            let column = &schema.columns[c];
            let origin = Origin {
                schema: match system {
                    FrontTable::System(system) => system.database(),
                    FrontTable::Derived(_) => "",
                },
                table: schema.name.as_str(),
                column: &column.name,
                nullable: column.nullable,
                sql_type: None,
                fraction_digits: None,
            };
            Some((origin, column.column_type))
        }
        (None, None, None) => None,
    };
    match found {
        Some((origin, column_type)) => (Some(column_type), Some(origin)),
        None => (None, None),
    }
}

fn in_table(table: &SqlTable, column: usize, left_joined: bool) -> Origin<'_> {
    let definition = &table.schema().columns[column];
    Origin {
        schema: table.database.as_str(),
        table: table.name.as_str(),
        column: &definition.name,
        nullable: definition.nullable || left_joined,
        sql_type: table.sql_type(column),
        fraction_digits: Some(table.extras.columns[column].fraction_digits),
    }
}

/// An empty set of encoded group keys ([`encode_group_key`]), hashed by foldhash (seeded
/// per set: the keys are user data) rather than SipHash, which costs several times more
/// per byte of these long keys.
pub(super) fn group_keys() -> std::collections::HashSet<Vec<u8>, foldhash::fast::RandomState> {
    std::collections::HashSet::default()
}

/// Group keys compare as values: the text of each, with a kind tag (so 1 and '1' group
/// apart, as MySQL's own grouping by type does); a string by its weight key under its
/// collation (`collations[i]` for `key[i]`), so 'a' and 'A' group together where the
/// collation finds them equal.
pub(crate) fn encode_group_key(key: &[Value], collations: &[Collation]) -> Vec<u8> {
    assert_eq!(
        key.len(),
        collations.len(),
        "a collation for every key value"
    );
    let mut out = Vec::new();
    for (value, collation) in key.iter().zip(collations) {
        match value {
            Value::Null => out.push(0),
            Value::Bytes(b) => {
                out.push(1);
                collation.length_prefixed_weight_key(b, &mut out);
            }
            other => {
                out.push(2);
                let text = crate::value::to_text(other);
                out.extend_from_slice(&(text.len() as u32).to_le_bytes());
                out.extend_from_slice(&text);
            }
        }
    }
    out
}

/// Rows a sort orders between two looks for KILL (a statement's timeout too).
const SORT_CHUNK_ROWS: usize = 1 << 16;

/// `rows` sorted stably by `compare`, a chunk of [`SORT_CHUNK_ROWS`] at a time with a look
/// for KILL (`killed`: the session's `check_killed`) before each, then whole: the whole
/// sort finds the chunks' sorted runs and only merges them (about a fifth of a million-row
/// sort's comparisons, where KILL went unseen through all of it). The order is one stable
/// sort's: chunks keep their rows' order.
pub(crate) fn sort_heeding_kill<T>(
    killed: impl Fn() -> SqlResult<()>,
    rows: &mut [T],
    compare: impl Fn(&T, &T) -> std::cmp::Ordering,
) -> SqlResult<()> {
    if rows.len() > SORT_CHUNK_ROWS {
        for chunk in rows.chunks_mut(SORT_CHUNK_ROWS) {
            killed()?;
            chunk.sort_by(&compare);
        }
        killed()?;
    }
    rows.sort_by(compare);
    Ok(())
}

/// GROUP_CONCAT's result: the values in their order, with the separator between, cut to
/// `bytes_max` (at a character boundary).
pub(super) fn concatenated(
    mut pieces: Vec<(Vec<Value>, Value)>,
    concat: &GroupConcat,
    bytes_max: usize,
    killed: &dyn Fn() -> SqlResult<()>,
) -> SqlResult<Value> {
    let collations = &concat.order_collations;
    sort_heeding_kill(killed, &mut pieces, |(a, _), (b, _)| {
        compare_sort_keys(&concat.order_by, collations, a, b)
    })?;
    let mut out = Vec::new();
    for (n, (_, value)) in pieces.iter().enumerate() {
        if n > 0 {
            out.extend_from_slice(&concat.separator);
        }
        out.extend_from_slice(&crate::value::to_text(value));
        if out.len() >= bytes_max {
            break;
        }
    }
    if out.len() > bytes_max {
        let mut cut = bytes_max;
        while cut > 0 && (out[cut] & 0xC0) == 0x80 {
            cut -= 1;
        }
        out.truncate(cut);
    }
    Ok(Value::Bytes(out))
}

/// The order of two rows' ORDER BY keys (`a[i]` is the value of `order_by[i]`, its strings
/// compared under `collations[i]`, MySQL's default where none is given): NULLs first
/// ascending, as MySQL.
pub(super) fn compare_sort_keys(
    order_by: &[(Expr, bool)],
    collations: &[Collation],
    a: &[Value],
    b: &[Value],
) -> Ordering {
    for (position, (_, ascending)) in order_by.iter().enumerate() {
        let collation = collations.get(position).copied().unwrap_or_default();
        let order = match (a[position].is_null(), b[position].is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            _ => compare_in(collation, &a[position], &b[position]).unwrap_or(Ordering::Equal),
        };
        let order = if *ascending { order } else { order.reverse() };
        if order != Ordering::Equal {
            return order;
        }
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    /// `rows` pairs (key, position) in a scrambled order, the keys repeating.
    fn scrambled(rows: usize) -> Vec<(u32, usize)> {
        (0..rows)
            .map(|i| (i * 7919) % rows)
            .map(|position| ((position % 7) as u32, position))
            .collect()
    }

    #[test]
    fn a_sort_in_chunks_orders_as_one_stable_sort() {
        let rows = scrambled(4 * SORT_CHUNK_ROWS + 123);
        let mut expected = rows.clone();
        expected.sort_by_key(|&(key, _)| key);
        let mut sorted = rows;
        let checks = Cell::new(0);
        let killed = || {
            checks.set(checks.get() + 1);
            Ok(())
        };
        sort_heeding_kill(killed, &mut sorted, |a, b| a.0.cmp(&b.0)).unwrap();
        assert_eq!(sorted, expected, "equal keys keep their order");
        assert_eq!(
            checks.get(),
            6,
            "a look before each of 5 chunks and before the merge"
        );
    }

    #[test]
    fn a_killed_statement_stops_a_long_group_concat_sort() {
        let concat = GroupConcat {
            separator: b",".to_vec(),
            order_by: vec![(Expr::Column(0), true)],
            order_collations: vec![Collation::utf8mb4_0900_ai_ci],
        };
        let pieces: Vec<(Vec<Value>, Value)> = scrambled(2 * SORT_CHUNK_ROWS)
            .into_iter()
            .map(|(key, _)| (vec![Value::Int(key as i64)], Value::Int(key as i64)))
            .collect();
        let interrupted = || Err(crate::error::SqlError::query_interrupted());
        let outcome = concatenated(pieces.clone(), &concat, 1024, &interrupted);
        assert_eq!(outcome.map_err(|e| e.code), Err(1317));
        let few = pieces[..3].to_vec();
        let mut keys: Vec<i64> = few
            .iter()
            .map(|(_, v)| crate::value::to_i64(v).unwrap())
            .collect();
        keys.sort_unstable();
        let expected = keys
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let done = concatenated(few, &concat, 1024, &interrupted).unwrap();
        assert_eq!(
            done,
            Value::Bytes(expected.into_bytes()),
            "a short sort looks at nothing"
        );
    }

    #[test]
    fn a_killed_statement_stops_its_sort_between_chunks() {
        let mut rows = scrambled(3 * SORT_CHUNK_ROWS);
        let checks = Cell::new(0);
        let killed = || {
            checks.set(checks.get() + 1);
            match checks.get() {
                1 => Ok(()),
                _ => Err(crate::error::SqlError::query_interrupted()),
            }
        };
        let outcome = sort_heeding_kill(killed, &mut rows, |a, b| a.0.cmp(&b.0));
        assert_eq!(outcome.map_err(|e| e.code), Err(1317));
        assert_eq!(checks.get(), 2, "it stopped at the second chunk");
    }
}
