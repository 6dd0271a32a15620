//! Binding a SELECT: FROM (one table, joins, or an `information_schema` table), the
//! select list, WHERE, GROUP BY, HAVING, ORDER BY and LIMIT, each name resolved to a row
//! position once.

use std::collections::HashSet;

use sqlparser::ast::{self, GroupByExpr, LimitClause, OrderByKind, SelectItem, SetExpr};
use sqlparser::tokenizer::Location;

use kista_client::LockKind;

use super::from::{bind_from, FromItem};
use super::{split_correlated, OutputColumn, SelectPlan};
use crate::catalog::BindCatalog;
use crate::error::{SqlError, SqlResult};
use crate::expr::{bind, Aggregate, Binder, Expr, ScopeColumn};
use crate::join::{self, JoinNest, JoinSource, JoinedTable};
use crate::plan::{choose_access, Access};
use crate::subquery::{Correlation, Outer};

/// `*` (or `table.*`): every column of the scope (of that table) SQL sees, in order.
fn wildcard(scope: &[ScopeColumn], table: Option<&str>) -> SqlResult<Vec<OutputColumn>> {
    if scope.is_empty() {
        return Err(SqlError::new(1096, "HY000", "No tables used"));
    }
    let columns: Vec<OutputColumn> = scope
        .iter()
        .enumerate()
        .filter(|(_, c)| table.is_none_or(|t| c.table.eq_ignore_ascii_case(t)))
        .filter(|(_, c)| !crate::ddl::is_hidden_column(&c.name))
        .map(|(position, c)| OutputColumn {
            name: c.name.clone(),
            expr: Expr::Column(position),
        })
        .collect();
    match table {
        Some(table) if columns.is_empty() => Err(SqlError::new(
            1051,
            "42S02",
            format!("Unknown table '{table}'"),
        )),
        _ => Ok(columns),
    }
}

/// Binds a SELECT (a set operation is `union.rs`'s): FROM, the select list, WHERE,
/// GROUP BY, HAVING, ORDER BY and LIMIT, then the access path and the columns to read.
pub fn bind_query(
    session: &dyn BindCatalog,
    query: &ast::Query,
    placeholders: &[Location],
) -> SqlResult<SelectPlan> {
    bind_query_within(session, query, placeholders, None)
}

/// Binds a SELECT that may be a correlated subquery of the query `outer` describes.
pub(crate) fn bind_query_within(
    session: &dyn BindCatalog,
    query: &ast::Query,
    placeholders: &[Location],
    outer: Option<&Outer>,
) -> SqlResult<SelectPlan> {
    if query.with.is_some() {
        return Err(SqlError::not_supported("WITH"));
    }
    let SetExpr::Select(select) = query.body.as_ref() else {
        return Err(SqlError::not_supported("UNION and other set operations"));
    };
    let from = bind_from(session, &select.from)?;
    let scope = from.scope();
    let correlation = Correlation::new(session, outer, scope.len());
    let clause = |place| Binder {
        subqueries: Some(session.subqueries()),
        correlation: Some(&correlation),
        ..Binder::over(&scope, placeholders, place)
    };
    let mut aggregates = Vec::new();
    let star = from.star();
    let outputs = bind_select_list(select, (&scope, star.as_deref()), &clause, &mut aggregates)?;
    let filter = (select.selection.as_ref())
        .map(|e| bind(&mut clause("where clause"), e))
        .transpose()?;
    let group_by = bind_group_by(select, &outputs, &clause)?;
    let having = bind_having(select, &outputs, &clause, &mut aggregates)?;
    let order_by = bind_order_by(query, &outputs, &clause, &mut aggregates)?;
    let (limit, offset) = bind_limit(query, placeholders)?;
    let lock = lock_of(query);
    // Conditions on correlated subqueries' values hold once those are known (after the
    // rows are read); the access path and the joins see the others.
    let (mut correlated_filter, conjuncts) = split_correlated(filter, scope.len());
    let joins = match from.items.is_empty() {
        true => None,
        false => {
            let (joins, on) = bind_joins(&from.items, &scope, &conjuncts, &clause, lock)?;
            correlated_filter = Expr::all(correlated_filter.into_iter().chain(on));
            Some(joins)
        }
    };
    let access = match &from.table {
        Some((table, _)) if joins.is_none() => choose_access(table, &conjuncts),
        _ => Access::Scan,
    };
    let mut plan = SelectPlan {
        table: from.table.map(|(t, _)| t),
        system: from.system.map(|(kind, schema, _)| (kind, schema)),
        joins,
        access,
        filter: Expr::all(conjuncts.iter().cloned()),
        conjuncts,
        outputs,
        grouped: !group_by.is_empty() || !aggregates.is_empty(),
        aggregates,
        group_by,
        having,
        distinct: select.distinct.is_some(),
        order_by,
        limit,
        offset,
        lock,
        needed_columns: Vec::new(),
        correlated: correlation.into_found(),
        correlated_filter,
        row_width: scope.len(),
    };
    plan.needed_columns = needed_columns(&plan, scope.len());
    Ok(plan)
}

/// The lock a query's rows are read under: none (committed reads), or `FOR SHARE` /
/// `LOCK IN SHARE MODE`'s, or `FOR UPDATE`'s.
fn lock_of(query: &ast::Query) -> LockKind {
    match query.locks.first().map(|l| &l.lock_type) {
        None => LockKind::Committed,
        Some(ast::LockType::Share) => LockKind::Shared,
        Some(ast::LockType::Update) => LockKind::Exclusive,
    }
}

/// GROUP BY's expressions (a select-list column by name or position, or an expression).
fn bind_group_by<'a>(
    select: &ast::Select,
    outputs: &[OutputColumn],
    clause: &dyn Fn(&'static str) -> Binder<'a>,
) -> SqlResult<Vec<Expr>> {
    match &select.group_by {
        GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => (exprs.iter())
            .map(|e| bind_output_reference(e, outputs, clause("group statement")))
            .collect(),
        _ => Err(SqlError::not_supported("GROUP BY ALL / WITH ROLLUP")),
    }
}

/// HAVING, where a name means a select-list column first (MySQL's rule), and aggregates
/// may appear.
fn bind_having<'a>(
    select: &ast::Select,
    outputs: &[OutputColumn],
    clause: &dyn Fn(&'static str) -> Binder<'a>,
    aggregates: &mut Vec<Aggregate>,
) -> SqlResult<Option<Expr>> {
    let mut binder = Binder {
        select_aliases: outputs,
        aggregates: Some(aggregates),
        ..clause("having clause")
    };
    (select.having.as_ref())
        .map(|e| bind(&mut binder, e))
        .transpose()
}

/// The select list: `*`, `t.*` and expressions, each named by its alias, its column's
/// name or its text.
fn bind_select_list<'a>(
    select: &ast::Select,
    (scope, star): (&[ScopeColumn], Option<&[usize]>),
    clause: &dyn Fn(&'static str) -> Binder<'a>,
    aggregates: &mut Vec<Aggregate>,
) -> SqlResult<Vec<OutputColumn>> {
    let mut outputs = Vec::new();
    for item in &select.projection {
        match item {
            SelectItem::Wildcard(_) => outputs.extend(match star {
                Some(positions) => positions
                    .iter()
                    .map(|&position| OutputColumn {
                        name: scope[position].name.clone(),
                        expr: Expr::Column(position),
                    })
                    .collect(),
                None => wildcard(scope, None)?,
            }),
            SelectItem::QualifiedWildcard(kind, _) => {
                let qualifier = match kind {
                    ast::SelectItemQualifiedWildcardKind::ObjectName(name) => name
                        .0
                        .last()
                        .and_then(|part| part.as_ident())
                        .map(|ident| ident.value.clone()),
                    ast::SelectItemQualifiedWildcardKind::Expr(_) => None,
                };
                let qualifier = qualifier.ok_or_else(|| SqlError::not_supported(kind))?;
                outputs.extend(wildcard(scope, Some(&qualifier))?);
            }
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                let mut binder = Binder {
                    aggregates: Some(aggregates),
                    ..clause("field list")
                };
                let expr = bind(&mut binder, e)?;
                let name = match item {
                    SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
                    _ => match e {
                        ast::Expr::Identifier(ident) => ident.value.clone(),
                        ast::Expr::CompoundIdentifier(parts) => {
                            parts.last().map(|p| p.value.clone()).unwrap_or_default()
                        }
                        other => other.to_string(),
                    },
                };
                outputs.push(OutputColumn { name, expr });
            }
        }
    }
    Ok(outputs)
}

/// ORDER BY: each key (a select-list column by name or position, or an expression) and
/// whether it ascends.
fn bind_order_by<'a>(
    query: &ast::Query,
    outputs: &[OutputColumn],
    clause: &dyn Fn(&'static str) -> Binder<'a>,
    aggregates: &mut Vec<Aggregate>,
) -> SqlResult<Vec<(Expr, bool)>> {
    let Some(order) = &query.order_by else {
        return Ok(Vec::new());
    };
    let OrderByKind::Expressions(exprs) = &order.kind else {
        return Err(SqlError::not_supported("ORDER BY ALL"));
    };
    exprs
        .iter()
        .map(|item| {
            let binder = Binder {
                aggregates: Some(&mut *aggregates),
                ..clause("order clause")
            };
            let expr = bind_output_reference(&item.expr, outputs, binder)?;
            Ok((expr, item.options.asc != Some(false)))
        })
        .collect()
}

/// The table columns a plan reads (empty: all of them): those any of its expressions
/// name; the primary key too for several ranges (their rows are merged by it); one
/// column for COUNT(*), which only needs the rows to exist.
fn needed_columns(plan: &SelectPlan, scope_width: usize) -> Vec<usize> {
    let mut needed = HashSet::new();
    let mut note = |e: &Expr| {
        e.visit(&mut |node| {
            if let Expr::Column(c) = node {
                needed.insert(*c);
            }
        })
    };
    plan.outputs.iter().for_each(|o| note(&o.expr));
    plan.filter.iter().for_each(&mut note);
    plan.group_by.iter().for_each(&mut note);
    plan.having.iter().for_each(&mut note);
    plan.order_by.iter().for_each(|(e, _)| note(e));
    for correlated in &plan.correlated {
        correlated.visit_outer(&mut note);
    }
    for aggregate in &plan.aggregates {
        aggregate.argument.iter().for_each(&mut note);
        if let Some(concat) = &aggregate.concat {
            concat.order_by.iter().for_each(|(e, _)| note(e));
        }
    }
    if let (Access::Range { ranges, .. }, Some(table)) = (&plan.access, &plan.table) {
        if ranges.len() > 1 {
            needed.extend(table.schema().primary_key.iter().copied());
        }
    }
    // Positions past the row's are correlated subqueries' values, computed, not read.
    let mut needed_columns: Vec<usize> =
        (needed.into_iter()).filter(|c| *c < scope_width).collect();
    needed_columns.sort_unstable();
    if needed_columns.len() == scope_width || plan.joins.is_some() {
        needed_columns.clear();
    } else if needed_columns.is_empty() && scope_width > 0 {
        // COUNT(*): any one column shows the row exists.
        needed_columns.push(plan.table.as_ref().map_or(0, |t| t.schema().primary_key[0]));
    }
    needed_columns
}

/// A query's LIMIT and OFFSET, each a constant.
pub(super) fn bind_limit(
    query: &ast::Query,
    placeholders: &[Location],
) -> SqlResult<(Option<Expr>, Option<Expr>)> {
    let mut limit_binder = Binder::without_columns(placeholders, "limit");
    Ok(match &query.limit_clause {
        None => (None, None),
        Some(LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) if limit_by.is_empty() => (
            limit
                .as_ref()
                .map(|e| bind(&mut limit_binder, e))
                .transpose()?,
            offset
                .as_ref()
                .map(|o| bind(&mut limit_binder, &o.value))
                .transpose()?,
        ),
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => (
            Some(bind(&mut limit_binder, limit)?),
            Some(bind(&mut limit_binder, offset)?),
        ),
        Some(_) => return Err(SqlError::not_supported("LIMIT BY")),
    })
}

/// How FROM's tables join (the first one's plan, then the others in order), and the
/// conditions of inner joins' ON on correlated subqueries (checked with the WHERE's).
type Joins = ((Box<SelectPlan>, Vec<JoinedTable>), Option<Expr>);

/// The joins of FROM: the first table's own plan (the WHERE's conditions on it alone), and
/// for each next table how its rows are found.
pub(super) fn bind_joins<'a>(
    from: &[FromItem],
    scope: &[ScopeColumn],
    conjuncts: &[Expr],
    clause: &dyn Fn(&'static str) -> Binder<'a>,
    lock: LockKind,
) -> SqlResult<Joins> {
    let first_plan = first_table_plan(&from[0].table, conjuncts, lock);
    let mut on_correlated = Vec::new();
    let mut joined = Vec::new();
    let mut offset = from[0].table.schema().columns.len();
    // The nests the item is in: where each ends (an item index) and its ON's conditions.
    let mut nests: Vec<(usize, Vec<Expr>)> = Vec::new();
    for (index, item) in from.iter().enumerate().skip(1) {
        nests.retain(|(end, _)| index < *end);
        let mut bind_condition = |on: Option<&ast::Expr>, left: bool| -> SqlResult<Option<Expr>> {
            let Some(on) = on else { return Ok(None) };
            let (correlated, plain) = bind_on(on, left, scope.len(), clause)?;
            on_correlated.extend(correlated);
            Ok(plain)
        };
        let on = bind_condition(item.on.as_deref(), item.left)?;
        let nest = match &item.nest {
            Some(nest) => {
                let on = bind_condition(nest.on, nest.left)?;
                let conditions = on.clone().map(Expr::conjuncts).unwrap_or_default();
                nests.push((index + nest.tables, conditions));
                let (tables, left) = (nest.tables, nest.left);
                Some(Box::new(JoinNest { tables, left, on }))
            }
            None => None,
        };
        let nest_conditions = nests.iter().flat_map(|(_, conditions)| conditions);
        let mut table = joined_table(item, (offset, scope), on, conjuncts, nest_conditions);
        table.nest = nest;
        joined.push(table);
        offset += item.table.schema().columns.len();
    }
    Ok(((Box::new(first_plan), joined), Expr::all(on_correlated)))
}

/// Whether `e` reads row positions, all of them in `low..high`.
fn within(e: &Expr, low: usize, high: usize) -> bool {
    e.column_span().is_some_and(|(a, b)| a >= low && b < high)
}

/// The first table's own plan: the WHERE's conditions on it alone, every column.
fn first_table_plan(first: &JoinSource, conjuncts: &[Expr], lock: LockKind) -> SelectPlan {
    let width = first.schema().columns.len();
    let own: Vec<Expr> = (conjuncts.iter())
        .filter(|c| within(c, 0, width))
        .cloned()
        .collect();
    let mut plan = match first {
        JoinSource::Cluster(first) => SelectPlan::for_write_bound(first, own, None, lock),
        JoinSource::Front(front, schema) => {
            SelectPlan::of_front_rows(front.clone(), schema.clone(), own)
        }
    };
    plan.needed_columns.clear();
    plan
}

/// A JOIN's ON, bound over the joined row (`row_width` wide): its conditions on correlated
/// subqueries (an inner join's only: they hold as its WHERE's would, once every table is
/// joined) and the others.
fn bind_on<'a>(
    on: &ast::Expr,
    left: bool,
    row_width: usize,
    clause: &dyn Fn(&'static str) -> Binder<'a>,
) -> SqlResult<(Option<Expr>, Option<Expr>)> {
    let mut binder = clause("on clause");
    if left {
        // A LEFT JOIN's ON decides which rows get NULLs: it must hold as each pair forms.
        binder.correlation = None;
    }
    let (correlated, plain) = split_correlated(Some(bind(&mut binder, on)?), row_width);
    Ok((correlated, Expr::all(plain)))
}

/// How a joined table at `offset` of the row finds its rows: its key looked up where ON
/// (or an inner join's WHERE, or the ON of a nest it is in) equates it with earlier
/// columns, else one scan; conditions on it alone go to the data nodes. An inner join's
/// WHERE conditions are checked once every table is joined; its ON as each pair is
/// formed; a nest's ON once the nest's last table is joined.
fn joined_table<'e>(
    item: &FromItem,
    (offset, scope): (usize, &[ScopeColumn]),
    on: Option<Expr>,
    conjuncts: &[Expr],
    nest_conditions: impl Iterator<Item = &'e Expr>,
) -> JoinedTable {
    let width = item.table.schema().columns.len();
    let mut usable: Vec<Expr> = on.clone().map(Expr::conjuncts).unwrap_or_default();
    usable.extend(nest_conditions.cloned());
    if !item.left && !item.in_outer_nest {
        usable.extend(conjuncts.iter().cloned());
    }
    let lookup = match &item.table {
        JoinSource::Cluster(table) => {
            let collation = |position: usize| scope.get(position)?.collation;
            join::choose_lookup(table, (offset, &collation), &usable)
        }
        JoinSource::Front(..) => join::Lookup::Scan,
    };
    let pushed = (usable.iter())
        .filter(|c| within(c, offset, offset + width))
        .map(|c| c.rebased(offset))
        .collect();
    JoinedTable {
        table: item.table.clone(),
        offset,
        left: item.left,
        on,
        lookup,
        pushed,
        nest: None,
        in_outer_nest: item.in_outer_nest,
    }
}

/// ORDER BY / GROUP BY / HAVING may name an output column by alias or position; anything
/// else binds in `binder`.
pub(super) fn bind_output_reference(
    e: &ast::Expr,
    outputs: &[OutputColumn],
    mut binder: Binder,
) -> SqlResult<Expr> {
    let place = binder.place;
    if let ast::Expr::Value(v) = e {
        if let ast::Value::Number(n, _) = &v.value {
            let position: usize = n.parse().map_err(|_| SqlError::unknown_column(n, place))?;
            return outputs
                .get(position.wrapping_sub(1))
                .map(|o| o.expr.clone())
                .ok_or_else(|| SqlError::unknown_column(n, place));
        }
    }
    if let ast::Expr::Identifier(ident) = e {
        let in_scope = (binder.columns.iter()).any(|c| c.name.eq_ignore_ascii_case(&ident.value));
        if !in_scope {
            if let Some(output) = outputs
                .iter()
                .find(|o| o.name.eq_ignore_ascii_case(&ident.value))
            {
                return Ok(output.expr.clone());
            }
        }
    }
    bind(&mut binder, e)
}
