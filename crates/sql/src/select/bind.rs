//! Binding a SELECT: FROM (one table, joins, or an `information_schema` table), the
//! select list, WHERE, GROUP BY, HAVING, ORDER BY and LIMIT, each name resolved to a row
//! position once.

use std::collections::HashSet;
use std::sync::Arc;

use sqlparser::ast::{
    self, GroupByExpr, LimitClause, OrderByKind, SelectItem, SetExpr, TableFactor,
};
use sqlparser::tokenizer::Location;

use kista_client::schema::{Column, TableSchema};
use kista_client::types::ColumnType;
use kista_client::LockKind;

use super::{FrontTable, OutputColumn, SelectPlan};
use crate::catalog::SqlTable;
use crate::error::{SqlError, SqlResult};
use crate::expr::{bind, Aggregate, Binder, Expr, ScopeColumn};
use crate::information_schema::{self, SystemTable};
use crate::join::{self, JoinedTable};
use crate::output::type_of_value;
use crate::plan::{choose_access, Access};
use crate::session::Session;
use crate::subquery::Met;

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
    let from = bind_from(session, &select.from)?;
    let scope = from.scope();
    let mut aggregates = Vec::new();
    let outputs = bind_select_list(session, select, &scope, placeholders, &mut aggregates)?;
    let mut where_binder = Binder {
        subqueries: Some(&session.subqueries),
        ..Binder::over(&scope, placeholders, "where clause")
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
    // A name in HAVING means a select-list column first (MySQL's rule).
    let mut having_binder = Binder {
        select_aliases: &outputs,
        aggregates: Some(&mut aggregates),
        subqueries: Some(&session.subqueries),
        ..Binder::over(&scope, placeholders, "having clause")
    };
    let having = select
        .having
        .as_ref()
        .map(|e| bind(&mut having_binder, e))
        .transpose()?;
    let order_by = bind_order_by(query, &outputs, &scope, placeholders, &mut aggregates)?;
    let (limit, offset) = bind_limit(query, placeholders)?;
    let lock = match query.locks.first().map(|l| &l.lock_type) {
        None => LockKind::Committed,
        Some(ast::LockType::Share) => LockKind::Shared,
        Some(ast::LockType::Update) => LockKind::Exclusive,
    };
    let grouped = !group_by.is_empty() || !aggregates.is_empty();
    let conjuncts = filter.clone().map(Expr::conjuncts).unwrap_or_default();
    let joins = if from.items.is_empty() {
        None
    } else {
        Some(bind_joins(
            &from.items,
            &scope,
            &conjuncts,
            placeholders,
            lock,
        )?)
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
        needed_columns: Vec::new(),
    };
    plan.needed_columns = needed_columns(&plan, scope.len());
    Ok(plan)
}

/// What a query's FROM names: nothing, one table (of the cluster, or one the front end
/// holds), or tables joined (`items`, in FROM order; `table` is then the first).
struct BoundFrom<'q> {
    table: Option<(Arc<SqlTable>, String)>,
    system: Option<(FrontTable, TableSchema, String)>,
    items: Vec<FromItem<'q>>,
}

impl BoundFrom<'_> {
    /// The columns names may reach, every table's in order, qualified by its alias.
    fn scope(&self) -> Vec<ScopeColumn> {
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
        match (&self.table, &self.system) {
            _ if !self.items.is_empty() => self
                .items
                .iter()
                .flat_map(|item| scope_of(item.table.schema(), &item.alias))
                .collect(),
            (Some((table, alias)), _) => scope_of(table.schema(), alias),
            (None, Some((_, schema, alias))) => scope_of(schema, alias),
            (None, None) => Vec::new(),
        }
    }
}

fn bind_from<'q>(session: &Session, from: &'q [ast::TableWithJoins]) -> SqlResult<BoundFrom<'q>> {
    let mut bound = BoundFrom {
        table: None,
        system: None,
        items: Vec::new(),
    };
    match from {
        [] => {}
        [only] if only.joins.is_empty() && is_dual(&only.relation) => {}
        [only] if only.joins.is_empty() => match only_table_of(session, &only.relation)? {
            OnlyTable::Front(found) => bound.system = Some(found),
            OnlyTable::Cluster(table) => bound.table = Some(table),
        },
        items => {
            for item in items {
                let (table, alias) = table_of(session, &item.relation)?;
                bound.items.push(FromItem {
                    table,
                    alias,
                    left: false,
                    on: None,
                });
                for join in &item.joins {
                    bound.items.push(joined_item(session, join)?);
                }
            }
            let first = &bound.items[0];
            bound.table = Some((first.table.clone(), first.alias.clone()));
        }
    }
    Ok(bound)
}

/// One `JOIN` of FROM: its table, whether it is a LEFT JOIN, and its ON condition.
fn joined_item<'q>(session: &Session, join: &'q ast::Join) -> SqlResult<FromItem<'q>> {
    use ast::{JoinConstraint, JoinOperator};
    let (left, constraint) = match &join.join_operator {
        JoinOperator::Join(c) | JoinOperator::Inner(c) | JoinOperator::CrossJoin(c) => (false, c),
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
    Ok(FromItem {
        table,
        alias,
        left,
        on,
    })
}

/// The select list: `*`, `t.*` and expressions, each named by its alias, its column's
/// name or its text.
fn bind_select_list(
    session: &Session,
    select: &ast::Select,
    scope: &[ScopeColumn],
    placeholders: &[Location],
    aggregates: &mut Vec<Aggregate>,
) -> SqlResult<Vec<OutputColumn>> {
    let mut outputs = Vec::new();
    for item in &select.projection {
        match item {
            SelectItem::Wildcard(_) => outputs.extend(wildcard(scope, None)?),
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
                    subqueries: Some(&session.subqueries),
                    ..Binder::over(scope, placeholders, "field list")
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
fn bind_order_by(
    query: &ast::Query,
    outputs: &[OutputColumn],
    scope: &[ScopeColumn],
    placeholders: &[Location],
    aggregates: &mut Vec<Aggregate>,
) -> SqlResult<Vec<(Expr, bool)>> {
    let Some(order) = &query.order_by else {
        return Ok(Vec::new());
    };
    let OrderByKind::Expressions(exprs) = &order.kind else {
        return Err(SqlError::not_supported("ORDER BY ALL"));
    };
    let place = "order clause";
    exprs
        .iter()
        .map(|item| {
            let expr = bind_output_reference(
                &item.expr,
                outputs,
                scope,
                placeholders,
                place,
                Some(aggregates),
            )?;
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
    let mut needed_columns: Vec<usize> = needed.into_iter().collect();
    needed_columns.sort_unstable();
    if needed_columns.len() == scope_width || plan.joins.is_some() {
        needed_columns.clear();
    } else if needed_columns.is_empty() && scope_width > 0 {
        // COUNT(*): any one column shows the row exists.
        needed_columns.push(plan.table.as_ref().map_or(0, |t| t.schema().primary_key[0]));
    }
    needed_columns
}

/// A table of FROM: its name in the query, whether a LEFT JOIN brought it, its ON.
pub(super) struct FromItem<'q> {
    table: Arc<SqlTable>,
    alias: String,
    left: bool,
    on: Option<&'q ast::Expr>,
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

/// The joins of FROM: the first table's own plan (the WHERE's conditions on it alone), and
/// for each next table how its rows are found.
pub(super) fn bind_joins(
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
                let mut binder = Binder::over(scope, placeholders, "on clause");
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

/// The one table a FROM names: a table of the cluster, or one whose rows the front end
/// has (its schema and alias beside it).
enum OnlyTable {
    Cluster((Arc<SqlTable>, String)),
    Front((FrontTable, TableSchema, String)),
}

/// A FROM item standing alone: derived, `information_schema`, a table of the cluster or
/// else a view (looked up only when no table has the name).
/// `FROM DUAL`: MySQL's name for no table.
fn is_dual(relation: &TableFactor) -> bool {
    matches!(relation, TableFactor::Table { name, alias: None, .. }
        if name.0.len() == 1 && name.to_string().eq_ignore_ascii_case("dual"))
}

fn only_table_of(session: &Session, relation: &TableFactor) -> SqlResult<OnlyTable> {
    if let TableFactor::Derived {
        subquery, alias, ..
    } = relation
    {
        let alias = alias.as_ref().map(|a| a.name.value.as_str());
        return derived_table_of(session, subquery, alias, None).map(OnlyTable::Front);
    }
    if let Some((system, schema, alias)) = system_table_of(session, relation)? {
        return Ok(OnlyTable::Front((
            FrontTable::System(system),
            schema,
            alias,
        )));
    }
    match table_of(session, relation) {
        Ok(table) => Ok(OnlyTable::Cluster(table)),
        Err(missing) if missing.code == 1146 => {
            view_of(session, relation, missing).map(OnlyTable::Front)
        }
        Err(error) => Err(error),
    }
}

/// The view a FROM item names, run as a derived table named by its alias or its own
/// name; `missing` (no table has the name) where no view does either.
fn view_of(
    session: &Session,
    relation: &TableFactor,
    missing: SqlError,
) -> SqlResult<(FrontTable, TableSchema, String)> {
    let TableFactor::Table { name, alias, .. } = relation else {
        return Err(missing);
    };
    let (database, view) = split_name(session, name)?;
    let Some(definition) = session.catalog.view(&database, &view)? else {
        return Err(missing);
    };
    let parsed = crate::session::parse(&definition)?;
    let ast::Statement::Query(query) = &parsed.statement else {
        return Err(SqlError::new(
            1356,
            "HY000",
            format!("View '{database}.{view}' is broken"),
        ));
    };
    let alias = alias
        .as_ref()
        .map_or(view.as_str(), |a| a.name.value.as_str());
    // The view's query names tables of the view's database.
    derived_table_of(session, query, Some(alias), Some(&database))
}

/// A derived table's rows (its query runs first, in `database` for a view's: `subquery.rs`),
/// its schema and alias.
/// Its columns are named by the query's and typed by their first value that is not NULL,
/// else by the query's result.
fn derived_table_of(
    session: &Session,
    subquery: &ast::Query,
    alias: Option<&str>,
    database: Option<&str>,
) -> SqlResult<(FrontTable, TableSchema, String)> {
    let Some(alias) = alias else {
        return Err(SqlError::new(
            1248,
            "42000",
            "Every derived table must have its own alias",
        ));
    };
    let (names, types, rows) = match session.subqueries.met_in(subquery, database) {
        None => return Err(SqlError::not_supported("derived tables here")),
        Some(Met::Wanted(error)) => return Err(error),
        Some(Met::Rows { names, types, rows }) => (names, types, rows),
    };
    let columns = names.iter().zip(types).enumerate();
    let columns = columns.map(|(position, (name, announced))| {
        let first = rows.iter().find_map(|row| type_of_value(&row[position]));
        let column_type = first.or(announced);
        Column::new(
            name,
            column_type.unwrap_or(ColumnType::VarChar { max_length: 16_383 }),
        )
        .nullable()
    });
    let schema = TableSchema {
        extra_metadata: Vec::new(),
        name: alias.to_string(),
        columns: columns.collect(),
        primary_key: Vec::new(),
    };
    Ok((FrontTable::Derived(rows), schema, alias.to_string()))
}

/// The `information_schema` table a FROM item names, its schema and alias; `None` for any
/// other table.
pub(super) fn system_table_of(
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
pub(super) fn bind_output_reference(
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
        aggregates,
        ..Binder::over(scope, placeholders, place)
    };
    bind(&mut binder, e)
}
