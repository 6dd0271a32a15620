//! SELECT: bind the query against its table, choose the access path (`plan.rs`), fetch
//! the rows, then finish in the front end: WHERE, GROUP BY with aggregates, HAVING, the
//! select list, DISTINCT, ORDER BY, LIMIT/OFFSET.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use sqlparser::ast::{
    self, GroupByExpr, LimitClause, OrderByKind, SelectItem, SetExpr, TableFactor,
};
use sqlparser::tokenizer::Location;

use kista_client::filter::{CompareOp as FilterOp, Filter};
use kista_client::schema::TableSchema;
use kista_client::types::{ColumnType, Value};
use kista_client::{IndexBound, LockKind, ScanSpec};

use crate::catalog::SqlTable;
use crate::error::{SqlError, SqlResult};
use crate::expr::{bind, eval, Aggregate, AggregateKind, Binder, CompareOp, Expr, ScopeColumn};
use crate::information_schema::{self, SystemTable};
use crate::join::{self, JoinedTable};
use crate::output::{self, Origin};
use crate::plan::{choose_access, pushable, Access};
use crate::session::{Outcome, Session, Tx, RESULT_ROWS_MAX};
use crate::value::{compare, fit_exactly, to_i64};

/// One output column: its name and how to compute it from a (grouped) row.
struct OutputColumn {
    name: String,
    expr: Expr,
}

/// A bound single-table (or table-less) SELECT.
pub struct SelectPlan {
    table: Option<Arc<SqlTable>>,
    /// An `information_schema` table instead (its rows are built when the query runs).
    system: Option<(SystemTable, TableSchema)>,
    /// With joins: how `table` (the first) is read, and the tables joined to it in order.
    joins: Option<(Box<SelectPlan>, Vec<JoinedTable>)>,
    access: Access,
    filter: Option<Expr>,
    conjuncts: Vec<Expr>,
    outputs: Vec<OutputColumn>,
    aggregates: Vec<Aggregate>,
    group_by: Vec<Expr>,
    grouped: bool,
    having: Option<Expr>,
    distinct: bool,
    order_by: Vec<(Expr, bool)>,
    limit: Option<Expr>,
    offset: Option<Expr>,
    lock: LockKind,
    /// The table columns any expression reads (empty: none or all).
    needed_columns: Vec<usize>,
}

/// Binds a query (SELECT only; no joins, subqueries or set operations yet).
pub fn bind_query(
    session: &Session,
    query: &ast::Query,
    placeholders: &[Location],
) -> SqlResult<SelectPlan> {
    if query.with.is_some() {
        return Err(SqlError::not_supported("WITH"));
    }
    let SetExpr::Select(select) = query.body.as_ref() else {
        return Err(SqlError::not_supported("UNION and other set operations"));
    };
    let mut system = None;
    // Every table in FROM order, whether a LEFT JOIN brought it, and its ON condition.
    let mut from: Vec<FromItem> = Vec::new();
    let table = match select.from.as_slice() {
        [] => None,
        [only] if only.joins.is_empty() => match system_table_of(session, &only.relation)? {
            Some(found) => {
                system = Some(found);
                None
            }
            None => Some(table_of(session, &only.relation)?),
        },
        items => {
            for item in items {
                let (table, alias) = table_of(session, &item.relation)?;
                from.push(FromItem {
                    table,
                    alias,
                    left: false,
                    on: None,
                });
                for join in &item.joins {
                    use ast::{JoinConstraint, JoinOperator};
                    let (left, constraint) = match &join.join_operator {
                        JoinOperator::Join(c)
                        | JoinOperator::Inner(c)
                        | JoinOperator::CrossJoin(c) => (false, c),
                        JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (true, c),
                        other => {
                            return Err(SqlError::not_supported(
                                format!("{other:?}")
                                    .split('(')
                                    .next()
                                    .unwrap_or("join")
                                    .to_uppercase()
                                    + " JOIN",
                            ))
                        }
                    };
                    let on = match constraint {
                        JoinConstraint::On(on) => Some(on),
                        JoinConstraint::None => None,
                        _ => return Err(SqlError::not_supported("JOIN ... USING / NATURAL JOIN")),
                    };
                    let (table, alias) = table_of(session, &join.relation)?;
                    from.push(FromItem {
                        table,
                        alias,
                        left,
                        on,
                    });
                }
            }
            Some((from[0].table.clone(), from[0].alias.clone()))
        }
    };
    let scope_of = |schema: &TableSchema, alias: &str| -> Vec<ScopeColumn> {
        schema
            .columns
            .iter()
            .map(|c| ScopeColumn {
                table: alias.to_string(),
                name: c.name.clone(),
            })
            .collect()
    };
    let scope: Vec<ScopeColumn> = match (&table, &system) {
        _ if !from.is_empty() => from
            .iter()
            .flat_map(|item| scope_of(item.table.schema(), &item.alias))
            .collect(),
        (Some((table, alias)), _) => scope_of(table.schema(), alias),
        (None, Some((_, schema, alias))) => scope_of(schema, alias),
        (None, None) => Vec::new(),
    };
    let mut aggregates = Vec::new();
    let mut outputs = Vec::new();
    for item in &select.projection {
        match item {
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                if scope.is_empty() {
                    return Err(SqlError::new(1096, "HY000", "No tables used"));
                }
                for (position, column) in scope.iter().enumerate() {
                    outputs.push(OutputColumn {
                        name: column.name.clone(),
                        expr: Expr::Column(position),
                    });
                }
            }
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                let mut binder = Binder {
                    columns: &scope,
                    placeholders,
                    aggregates: Some(&mut aggregates),
                    place: "field list",
                    inserted_row_at: None,
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
    let mut where_binder = Binder {
        columns: &scope,
        placeholders,
        aggregates: None,
        place: "where clause",
        inserted_row_at: None,
    };
    let filter = select
        .selection
        .as_ref()
        .map(|e| bind(&mut where_binder, e))
        .transpose()?;
    let group_by = match &select.group_by {
        GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => exprs
            .iter()
            .map(|e| {
                bind_output_reference(e, &outputs, &scope, placeholders, "group statement", None)
            })
            .collect::<SqlResult<Vec<_>>>()?,
        _ => return Err(SqlError::not_supported("GROUP BY ALL / WITH ROLLUP")),
    };
    let having = select
        .having
        .as_ref()
        .map(|e| {
            bind_output_reference(
                e,
                &outputs,
                &scope,
                placeholders,
                "having clause",
                Some(&mut aggregates),
            )
        })
        .transpose()?;
    let mut order_by = Vec::new();
    if let Some(order) = &query.order_by {
        let OrderByKind::Expressions(exprs) = &order.kind else {
            return Err(SqlError::not_supported("ORDER BY ALL"));
        };
        for item in exprs {
            let expr = bind_output_reference(
                &item.expr,
                &outputs,
                &scope,
                placeholders,
                "order clause",
                Some(&mut aggregates),
            )?;
            order_by.push((expr, item.options.asc != Some(false)));
        }
    }
    let (limit, offset) = match &query.limit_clause {
        None => (None, None),
        Some(LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) if limit_by.is_empty() => {
            let mut binder = Binder {
                columns: &[],
                placeholders,
                aggregates: None,
                place: "limit",
                inserted_row_at: None,
            };
            (
                limit.as_ref().map(|e| bind(&mut binder, e)).transpose()?,
                offset
                    .as_ref()
                    .map(|o| bind(&mut binder, &o.value))
                    .transpose()?,
            )
        }
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => {
            let mut binder = Binder {
                columns: &[],
                placeholders,
                aggregates: None,
                place: "limit",
                inserted_row_at: None,
            };
            (
                Some(bind(&mut binder, limit)?),
                Some(bind(&mut binder, offset)?),
            )
        }
        Some(_) => return Err(SqlError::not_supported("LIMIT BY")),
    };
    let lock = match query.locks.first().map(|l| &l.lock_type) {
        None => LockKind::Committed,
        Some(ast::LockType::Share) => LockKind::Shared,
        Some(ast::LockType::Update) => LockKind::Exclusive,
    };
    let grouped = !group_by.is_empty() || !aggregates.is_empty();
    let conjuncts = filter.clone().map(Expr::conjuncts).unwrap_or_default();
    let joins = if from.is_empty() {
        None
    } else {
        Some(bind_joins(&from, &scope, &conjuncts, placeholders, lock)?)
    };
    let access = match &table {
        Some((table, _)) if joins.is_none() => choose_access(table, &conjuncts),
        _ => Access::Scan,
    };
    let mut needed = HashSet::new();
    let mut note = |e: &Expr| {
        e.visit(&mut |node| {
            if let Expr::Column(c) = node {
                needed.insert(*c);
            }
        })
    };
    outputs.iter().for_each(|o| note(&o.expr));
    filter.iter().for_each(&mut note);
    group_by.iter().for_each(&mut note);
    having.iter().for_each(&mut note);
    order_by.iter().for_each(|(e, _)| note(e));
    aggregates
        .iter()
        .filter_map(|a| a.argument.as_ref())
        .for_each(&mut note);
    if let (Access::Range { ranges, .. }, Some((table, _))) = (&access, &table) {
        if ranges.len() > 1 {
            needed.extend(table.schema().primary_key.iter().copied());
        }
    }
    let mut needed_columns: Vec<usize> = needed.into_iter().collect();
    needed_columns.sort_unstable();
    if needed_columns.len() == scope.len() || joins.is_some() {
        needed_columns.clear();
    } else if needed_columns.is_empty() && !scope.is_empty() {
        // COUNT(*): any one column shows the row exists.
        needed_columns.push(table.as_ref().map_or(0, |(t, _)| t.schema().primary_key[0]));
    }
    Ok(SelectPlan {
        table: table.map(|(t, _)| t),
        system: system.map(|(kind, schema, _)| (kind, schema)),
        joins,
        access,
        filter,
        conjuncts,
        outputs,
        aggregates,
        group_by,
        grouped,
        having,
        distinct: select.distinct.is_some(),
        order_by,
        limit,
        offset,
        lock,
        needed_columns,
    })
}

impl SelectPlan {
    /// A plan reading `table`'s rows that pass `conjuncts` (bound over its row), every
    /// column, under `lock`.
    fn for_write_bound(
        table: &Arc<SqlTable>,
        conjuncts: Vec<Expr>,
        limit: Option<Expr>,
        lock: LockKind,
    ) -> Self {
        let filter = conjuncts
            .iter()
            .cloned()
            .reduce(|a, b| Expr::And(Box::new(a), Box::new(b)));
        Self {
            access: choose_access(table, &conjuncts),
            table: Some(table.clone()),
            system: None,
            joins: None,
            filter,
            conjuncts,
            outputs: Vec::new(),
            aggregates: Vec::new(),
            group_by: Vec::new(),
            grouped: false,
            having: None,
            distinct: false,
            order_by: Vec::new(),
            limit,
            offset: None,
            lock,
            needed_columns: Vec::new(),
        }
    }

    /// The rows an UPDATE or DELETE changes: every column, under an exclusive lock.
    pub fn for_write(
        table: &Arc<SqlTable>,
        selection: Option<&ast::Expr>,
        limit: Option<&ast::Expr>,
        placeholders: &[Location],
    ) -> SqlResult<Self> {
        let scope: Vec<ScopeColumn> = table
            .schema()
            .columns
            .iter()
            .map(|c| ScopeColumn {
                table: table.name.clone(),
                name: c.name.clone(),
            })
            .collect();
        let mut binder = Binder {
            columns: &scope,
            placeholders,
            aggregates: None,
            place: "where clause",
            inserted_row_at: None,
        };
        let filter = selection.map(|e| bind(&mut binder, e)).transpose()?;
        let mut limit_binder = Binder {
            columns: &[],
            placeholders,
            aggregates: None,
            place: "limit",
            inserted_row_at: None,
        };
        let limit = limit.map(|e| bind(&mut limit_binder, e)).transpose()?;
        let conjuncts = filter.map(Expr::conjuncts).unwrap_or_default();
        Ok(Self::for_write_bound(
            table,
            conjuncts,
            limit,
            LockKind::Exclusive,
        ))
    }

    /// The plan as a point read (`point_read.rs`): one table, by its whole primary key
    /// and nothing else, columns only, no lock, grouping or limit.
    pub fn as_point_read(&self) -> Option<crate::point_read::PointRead> {
        let table = self.table.as_ref()?;
        let Access::PrimaryKey(key) = &self.access else {
            return None;
        };
        let simple = self.joins.is_none()
            && self.system.is_none()
            && !self.grouped
            && self.having.is_none()
            && self.limit.is_none()
            && self.offset.is_none()
            && self.lock == LockKind::Committed
            && self.conjuncts.len() == table.schema().primary_key.len();
        let output_columns: Vec<usize> = self
            .outputs
            .iter()
            .map(|o| match o.expr {
                Expr::Column(c) => Some(c),
                _ => None,
            })
            .collect::<Option<_>>()?;
        if !simple || output_columns.is_empty() {
            return None;
        }
        let columns = self
            .outputs
            .iter()
            .map(|o| {
                let (column_type, origin) = static_type(self, &o.expr);
                output::definition(&o.name, column_type, origin, std::iter::empty())
            })
            .collect();
        crate::point_read::PointRead::new(table.clone(), key.clone(), &output_columns, columns)
    }

    /// `rows` cut to the plan's LIMIT.
    pub fn limited(
        &self,
        session: &Session,
        mut rows: Vec<Vec<Value>>,
        params: &[Value],
    ) -> SqlResult<Vec<Vec<Value>>> {
        if let Some(limit) = &self.limit {
            let n = to_i64(&constant(session, limit, params)?)
                .filter(|n| *n >= 0)
                .ok_or_else(|| SqlError::wrong_arguments("LIMIT"))?;
            rows.truncate(n as usize);
        }
        Ok(rows)
    }
}

/// A table of FROM: its name in the query, whether a LEFT JOIN brought it, its ON.
struct FromItem<'q> {
    table: Arc<SqlTable>,
    alias: String,
    left: bool,
    on: Option<&'q ast::Expr>,
}

/// The joins of FROM: the first table's own plan (the WHERE's conditions on it alone), and
/// for each next table how its rows are found.
fn bind_joins(
    from: &[FromItem],
    scope: &[ScopeColumn],
    conjuncts: &[Expr],
    placeholders: &[Location],
    lock: LockKind,
) -> SqlResult<(Box<SelectPlan>, Vec<JoinedTable>)> {
    let within = |e: &Expr, low: usize, high: usize| {
        e.column_span().is_some_and(|(a, b)| a >= low && b < high)
    };
    let first = &from[0].table;
    let first_width = first.schema().columns.len();
    let first_conjuncts: Vec<Expr> = conjuncts
        .iter()
        .filter(|c| within(c, 0, first_width))
        .cloned()
        .collect();
    let mut first_plan = SelectPlan::for_write_bound(first, first_conjuncts, None, lock);
    first_plan.needed_columns.clear();
    let mut joined = Vec::new();
    let mut offset = first_width;
    for FromItem {
        table, left, on, ..
    } in &from[1..]
    {
        let width = table.schema().columns.len();
        let on = match on {
            Some(on) => {
                let mut binder = Binder {
                    columns: scope,
                    placeholders,
                    aggregates: None,
                    place: "on clause",
                    inserted_row_at: None,
                };
                Some(bind(&mut binder, on)?)
            }
            None => None,
        };
        let mut usable: Vec<Expr> = on.clone().map(Expr::conjuncts).unwrap_or_default();
        if !left {
            usable.extend(conjuncts.iter().cloned());
        }
        let lookup = join::choose_lookup(table, offset, &usable);
        let pushed = usable
            .iter()
            .filter(|c| within(c, offset, offset + width))
            .map(|c| c.rebased(offset))
            .collect();
        // An inner join's WHERE conditions are checked once every table is joined; its ON
        // is checked as each pair is formed.
        joined.push(JoinedTable {
            table: table.clone(),
            offset,
            left: *left,
            on,
            lookup,
            pushed,
        });
        offset += width;
    }
    Ok((Box::new(first_plan), joined))
}

/// The joined rows (before the WHERE is checked on them).
fn fetch_joined(
    tx: &mut Tx,
    session: &Session,
    plan: &SelectPlan,
    first: &SelectPlan,
    joined: &[JoinedTable],
    params: &[Value],
) -> SqlResult<Vec<Vec<Value>>> {
    let Some(first_table) = &first.table else {
        return Ok(Vec::new());
    };
    let mut rows = fetch(tx, session, first, first_table, params, false)?;
    for step in joined {
        let pushed_filter = |conditions: &[Expr]| -> Option<Filter> {
            let filters: Vec<Filter> = conditions
                .iter()
                .filter(|c| pushable(c))
                .filter_map(|c| to_filter(session, &step.table, c, params))
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
fn system_rows(
    session: &Session,
    plan: &SelectPlan,
    system: SystemTable,
    params: &[Value],
) -> SqlResult<Vec<Vec<Value>>> {
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(params, &[], &variable);
    let mut rows = system.rows(session.catalog)?;
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

/// The `information_schema` table a FROM item names, its schema and alias; `None` for any
/// other table.
fn system_table_of(
    session: &Session,
    relation: &TableFactor,
) -> SqlResult<Option<(SystemTable, TableSchema, String)>> {
    let TableFactor::Table { name, alias, .. } = relation else {
        return Ok(None);
    };
    let parts: Vec<&str> = name
        .0
        .iter()
        .filter_map(|p| p.as_ident())
        .map(|i| i.value.as_str())
        .collect();
    let table = match parts.as_slice() {
        [database, table] if database.eq_ignore_ascii_case(information_schema::DATABASE) => *table,
        [table] if session.database.as_deref() == Some(information_schema::DATABASE) => *table,
        _ => return Ok(None),
    };
    let system = SystemTable::named(table)?;
    let alias = alias
        .as_ref()
        .map_or_else(|| table.to_string(), |a| a.name.value.clone());
    Ok(Some((system, system.schema(), alias)))
}

/// The table a FROM item names, and the name its columns are qualified with.
pub fn table_of(session: &Session, relation: &TableFactor) -> SqlResult<(Arc<SqlTable>, String)> {
    let TableFactor::Table {
        name,
        alias,
        args: None,
        ..
    } = relation
    else {
        return Err(SqlError::not_supported(relation));
    };
    let (database, table) = split_name(session, name)?;
    let table = session.catalog.table(&database, &table)?;
    let alias = alias
        .as_ref()
        .map_or_else(|| table.name.clone(), |a| a.name.value.clone());
    Ok((table, alias))
}

/// `db.table` or `table` (in the current database).
pub fn split_name(session: &Session, name: &ast::ObjectName) -> SqlResult<(String, String)> {
    let parts: Vec<String> = name
        .0
        .iter()
        .filter_map(|p| p.as_ident())
        .map(|i| i.value.clone())
        .collect();
    match parts.as_slice() {
        [table] => Ok((session.current_database()?.to_string(), table.clone())),
        [database, table] => Ok((database.clone(), table.clone())),
        _ => Err(SqlError::syntax(format!("bad table name {name}"))),
    }
}

/// ORDER BY / GROUP BY / HAVING may name an output column by alias or position.
fn bind_output_reference(
    e: &ast::Expr,
    outputs: &[OutputColumn],
    scope: &[ScopeColumn],
    placeholders: &[Location],
    place: &'static str,
    aggregates: Option<&mut Vec<Aggregate>>,
) -> SqlResult<Expr> {
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
        let in_scope = scope
            .iter()
            .any(|c| c.name.eq_ignore_ascii_case(&ident.value));
        if !in_scope {
            if let Some(output) = outputs
                .iter()
                .find(|o| o.name.eq_ignore_ascii_case(&ident.value))
            {
                return Ok(output.expr.clone());
            }
        }
    }
    let mut binder = Binder {
        columns: scope,
        placeholders,
        aggregates,
        place,
        inserted_row_at: None,
    };
    bind(&mut binder, e)
}

/// Evaluates a constant expression (a key, a bound, a LIMIT).
fn constant(session: &Session, expr: &Expr, params: &[Value]) -> SqlResult<Value> {
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(params, &[], &variable);
    eval(expr, &[], &ctx)
}

/// A key's values made to fit the key's columns; `None` when one cannot (the access path
/// then falls back to a scan, which evaluates the comparison as MySQL would).
fn key_values(
    session: &Session,
    table: &SqlTable,
    columns: &[usize],
    exprs: &[Expr],
    params: &[Value],
) -> SqlResult<Option<Vec<Value>>> {
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(params, &[], &variable);
    join::key_of(table, columns, exprs, &[], &ctx)
}

pub fn execute(session: &mut Session, plan: &SelectPlan, params: &[Value]) -> SqlResult<Outcome> {
    if let Some((system, _)) = &plan.system {
        let rows = system_rows(session, plan, *system, params)?;
        return finish(session, plan, rows, params);
    }
    if let Some((first, joined)) = &plan.joins {
        let rows = session
            .transactional(|tx, session| fetch_joined(tx, session, plan, first, joined, params))?;
        return finish(session, plan, rows, params);
    }
    let rows = match &plan.table {
        None => vec![Vec::new()],
        Some(table) => {
            session.transactional(|tx, session| fetch(tx, session, plan, table, params, true))?
        }
    };
    finish(session, plan, rows, params)
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
            keys.sort_by(|a, b| compare(&a[0], &b[0]).unwrap_or(Ordering::Equal));
            keys.dedup();
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
fn scan(
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
    let key_columns: Vec<u16> = table
        .schema()
        .primary_key
        .iter()
        .map(|&c| c as u16)
        .collect();
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
    let mut seen = std::collections::HashSet::new();
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
            if several {
                let key: Vec<Value> = key_positions.iter().map(|&p| row[p].clone()).collect();
                if !seen.insert(encode_group_key(&key)) {
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
        return read_keys_in(tx, table, &rows, lock, columns, last);
    }
    Ok(rows)
}

/// A WHERE conjunct as a data-node filter, its constants evaluated and made to fit the
/// column; `None` when it cannot be carried exactly.
fn to_filter(session: &Session, table: &SqlTable, expr: &Expr, params: &[Value]) -> Option<Filter> {
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
        Expr::Compare(op, left, right) => match (left.as_ref(), right.as_ref()) {
            (Expr::Column(c), e) => compare_filter(*c, *op, e),
            (e, Expr::Column(c)) => {
                let flipped = match op {
                    CompareOp::Lt => CompareOp::Gt,
                    CompareOp::LtEq => CompareOp::GtEq,
                    CompareOp::Gt => CompareOp::Lt,
                    CompareOp::GtEq => CompareOp::LtEq,
                    other => *other,
                };
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
        } => {
            let Expr::Column(c) = expr.as_ref() else {
                return None;
            };
            let col = &table.schema().columns[*c];
            if !matches!(
                col.column_type,
                ColumnType::Char { .. }
                    | ColumnType::VarChar { .. }
                    | ColumnType::Text
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

/// Groups and aggregates, HAVING, outputs, DISTINCT, ORDER BY, LIMIT.
fn finish(
    session: &Session,
    plan: &SelectPlan,
    rows: Vec<Vec<Value>>,
    params: &[Value],
) -> SqlResult<Outcome> {
    let variable = |name: &str| session.variable(name);
    // (the row the outputs read, its aggregates)
    let groups: Vec<(Vec<Value>, Vec<Value>)> = if plan.grouped {
        group(session, plan, rows, params, &variable)?
    } else {
        rows.into_iter().map(|r| (r, Vec::new())).collect()
    };
    let mut results: Vec<(Vec<Value>, Vec<Value>)> = Vec::with_capacity(groups.len());
    for (row, aggregates) in &groups {
        let ctx = session.eval_context(params, aggregates, &variable);
        if let Some(having) = &plan.having {
            if crate::value::truth(&eval(having, row, &ctx)?) != Some(true) {
                continue;
            }
        }
        let output: Vec<Value> = plan
            .outputs
            .iter()
            .map(|o| eval(&o.expr, row, &ctx))
            .collect::<SqlResult<_>>()?;
        let keys: Vec<Value> = plan
            .order_by
            .iter()
            .map(|(e, _)| eval(e, row, &ctx))
            .collect::<SqlResult<_>>()?;
        results.push((keys, output));
    }
    if plan.distinct {
        let mut seen: Vec<Vec<Value>> = Vec::new();
        results.retain(|(_, output)| {
            if seen.iter().any(|s| rows_equal(s, output)) {
                false
            } else {
                seen.push(output.clone());
                true
            }
        });
    }
    if !plan.order_by.is_empty() {
        results.sort_by(|(a, _), (b, _)| {
            for (position, (_, ascending)) in plan.order_by.iter().enumerate() {
                // NULLs first ascending, as MySQL.
                let order = match (a[position].is_null(), b[position].is_null()) {
                    (true, true) => Ordering::Equal,
                    (true, false) => Ordering::Less,
                    (false, true) => Ordering::Greater,
                    _ => compare(&a[position], &b[position]).unwrap_or(Ordering::Equal),
                };
                let order = if *ascending { order } else { order.reverse() };
                if order != Ordering::Equal {
                    return order;
                }
            }
            Ordering::Equal
        });
    }
    let count = |e: &Option<Expr>| -> SqlResult<Option<usize>> {
        e.as_ref()
            .map(|e| {
                let v = constant(session, e, params)?;
                to_i64(&v)
                    .filter(|n| *n >= 0)
                    .map(|n| n as usize)
                    .ok_or_else(|| SqlError::wrong_arguments("LIMIT"))
            })
            .transpose()
    };
    let offset = count(&plan.offset)?.unwrap_or(0);
    let limit = count(&plan.limit)?.unwrap_or(usize::MAX);
    let rows: Vec<Vec<Value>> = results
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|(_, o)| o)
        .collect();
    let columns = plan
        .outputs
        .iter()
        .enumerate()
        .map(|(position, o)| {
            let (column_type, origin) = static_type(plan, &o.expr);
            output::definition(
                &o.name,
                column_type,
                origin,
                rows.iter().map(|r| r[position].clone()),
            )
        })
        .collect();
    Ok(Outcome::Rows { columns, rows })
}

fn rows_equal(a: &[Value], b: &[Value]) -> bool {
    a.iter()
        .zip(b)
        .all(|(x, y)| match (x.is_null(), y.is_null()) {
            (true, true) => true,
            (false, false) => compare(x, y) == Some(Ordering::Equal),
            _ => false,
        })
}

/// A column's type (and origin) when the expression is a table column or an aggregate of
/// known type.
fn static_type<'p>(plan: &'p SelectPlan, expr: &Expr) -> (Option<ColumnType>, Option<Origin<'p>>) {
    match expr {
        Expr::Column(c) if plan.joins.is_some() => {
            let Some((first, joined)) = &plan.joins else {
                unreachable!("just checked")
            };
            let mut tables: Vec<(&Arc<SqlTable>, usize)> =
                first.table.iter().map(|t| (t, 0)).collect();
            tables.extend(joined.iter().map(|j| (&j.table, j.offset)));
            let Some(&(table, offset)) = tables.iter().rev().find(|(_, offset)| *offset <= *c)
            else {
                return (None, None);
            };
            let column = &table.schema().columns[*c - offset];
            let nullable = column.nullable || joined.iter().any(|j| j.left && j.offset == offset);
            let origin = Origin {
                schema: &table.database,
                table: &table.name,
                column: &column.name,
                nullable,
            };
            (Some(column.column_type), Some(origin))
        }
        Expr::Column(c) => match &plan.table {
            None if plan.system.is_some() => {
                let Some((system, schema)) = &plan.system else {
                    unreachable!("just checked")
                };
                let column = &schema.columns[*c];
                let origin = Origin {
                    schema: information_schema::DATABASE,
                    table: system.name(),
                    column: &column.name,
                    nullable: column.nullable,
                };
                (Some(column.column_type), Some(origin))
            }
            Some(table) => {
                let column = &table.schema().columns[*c];
                let origin = Origin {
                    schema: &table.database,
                    table: &table.name,
                    column: &column.name,
                    nullable: column.nullable,
                };
                (Some(column.column_type), Some(origin))
            }
            None => (None, None),
        },
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

/// Rows into groups (by the GROUP BY values; one group for aggregates alone, even of no
/// rows), each with its aggregates computed.
fn group(
    session: &Session,
    plan: &SelectPlan,
    rows: Vec<Vec<Value>>,
    params: &[Value],
    variable: &dyn Fn(&str) -> Option<Value>,
) -> SqlResult<Vec<(Vec<Value>, Vec<Value>)>> {
    let ctx = session.eval_context(params, &[], variable);
    // (group key, first row, accumulators)
    let mut groups: Vec<(Vec<Value>, Vec<Value>, Vec<Accumulator>)> = Vec::new();
    let mut index: std::collections::HashMap<Vec<u8>, usize> = std::collections::HashMap::new();
    for row in rows {
        let key: Vec<Value> = plan
            .group_by
            .iter()
            .map(|e| eval(e, &row, &ctx))
            .collect::<SqlResult<_>>()?;
        let encoded = encode_group_key(&key);
        let position = match index.get(&encoded) {
            Some(&p) => p,
            None => {
                groups.push((
                    key,
                    row.clone(),
                    plan.aggregates
                        .iter()
                        .map(|_| Accumulator::default())
                        .collect(),
                ));
                index.insert(encoded, groups.len() - 1);
                groups.len() - 1
            }
        };
        let accumulators = &mut groups[position].2;
        for (aggregate, accumulator) in plan.aggregates.iter().zip(accumulators.iter_mut()) {
            let value = match &aggregate.argument {
                Some(arg) => Some(eval(arg, &row, &ctx)?),
                None => None,
            };
            accumulator.add(aggregate, value);
        }
    }
    if groups.is_empty() && plan.group_by.is_empty() {
        let width = match (&plan.table, &plan.system) {
            _ if plan.joins.is_some() => plan.joins.as_ref().map_or(0, |(_, joined)| {
                joined
                    .last()
                    .map_or(0, |j| j.offset + j.table.schema().columns.len())
            }),
            (Some(table), _) => table.schema().columns.len(),
            (None, Some((_, schema))) => schema.columns.len(),
            (None, None) => 0,
        };
        groups.push((
            Vec::new(),
            vec![Value::Null; width],
            plan.aggregates
                .iter()
                .map(|_| Accumulator::default())
                .collect(),
        ));
    }
    Ok(groups
        .into_iter()
        .map(|(_, row, accumulators)| {
            let values = plan
                .aggregates
                .iter()
                .zip(accumulators)
                .map(|(a, acc)| acc.result(a))
                .collect();
            (row, values)
        })
        .collect())
}

/// Group keys compare as values: the text of each, with a kind tag (so 1 and '1' group
/// apart, as MySQL's own grouping by type does).
fn encode_group_key(key: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for value in key {
        match value {
            Value::Null => out.push(0),
            Value::Bytes(b) => {
                out.push(1);
                out.extend_from_slice(&(b.len() as u32).to_le_bytes());
                out.extend_from_slice(b);
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

#[derive(Default)]
struct Accumulator {
    count: i64,
    sum: Option<Value>,
    best: Option<Value>,
    seen: Vec<Value>,
}

impl Accumulator {
    fn add(&mut self, aggregate: &Aggregate, value: Option<Value>) {
        let Some(value) = value else {
            self.count += 1;
            return;
        };
        if value.is_null() {
            return;
        }
        if aggregate.distinct {
            if self
                .seen
                .iter()
                .any(|s| compare(s, &value) == Some(Ordering::Equal))
            {
                return;
            }
            self.seen.push(value.clone());
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
                        let order = compare(&value, best);
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
            AggregateKind::Count | AggregateKind::CountRows => {}
        }
    }

    fn result(self, aggregate: &Aggregate) -> Value {
        match aggregate.kind {
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
        }
    }
}

/// The result columns a prepared statement announces: for a query, its outputs' types
/// where known (the execute answer describes the actual values again); none otherwise.
pub fn prepared_columns(
    session: &Session,
    parsed: &crate::session::Parsed,
) -> SqlResult<Vec<crate::protocol::results::ColumnDefinition>> {
    let sqlparser::ast::Statement::Query(query) = &parsed.statement else {
        return Ok(Vec::new());
    };
    let plan = bind_query(session, query, &parsed.placeholders)?;
    Ok(plan
        .outputs
        .iter()
        .map(|o| {
            let (column_type, origin) = static_type(&plan, &o.expr);
            let column_type = column_type.or(Some(ColumnType::VarChar { max_length: 16_383 }));
            output::definition(&o.name, column_type, origin, std::iter::empty())
        })
        .collect())
}

/// The plan, for EXPLAIN.
pub fn explain(plan: &SelectPlan) -> String {
    if let Some((first, joined)) = &plan.joins {
        let mut steps = vec![explain(first)];
        steps.extend(joined.iter().map(JoinedTable::describe));
        return steps.join("; then ");
    }
    match &plan.table {
        Some(table) => format!(
            "{}.{}: {}",
            table.database,
            table.name,
            plan.access.describe()
        ),
        None => match &plan.system {
            Some((system, _)) => format!(
                "information_schema.{}: built by the front end from the catalog",
                system.name()
            ),
            None => "no table".into(),
        },
    }
}

/// For callers that hold an already-bound plan: its access path.
pub fn access_of(plan: &SelectPlan) -> &Access {
    &plan.access
}
