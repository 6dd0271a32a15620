//! SELECT: bind the query against its tables (`bind.rs`), fetch the rows through the
//! access path or the joins (`fetch.rs`), then finish in the front end (`finish.rs`):
//! GROUP BY with aggregates, HAVING, the select list, DISTINCT, ORDER BY, LIMIT/OFFSET.

mod bind;
mod fetch;
mod finish;
mod from;
mod grouping;
mod pushdown;
mod stream;
pub mod union;

#[cfg(test)]
mod tests;

pub use bind::bind_query;
pub(crate) use bind::bind_query_within;
pub(crate) use fetch::{add_written_keys, fetch, read_keys_in};
pub(crate) use finish::encode_group_key;
pub use from::{split_name, table_of};
pub(crate) use stream::RowSink;

use std::sync::Arc;

use sqlparser::ast;
use sqlparser::tokenizer::Location;

use kista_client::schema::TableSchema;
use kista_client::types::{Collation, Value};
use kista_client::LockKind;

use crate::catalog::SqlTable;
use crate::error::{SqlError, SqlResult};
use crate::expr::OutputColumn;
use crate::expr::{bind, derive, eval, Aggregate, Binder, Derivation, Expr};
use crate::information_schema::SystemTable;
use crate::join::{self, JoinedTable};
use crate::output;
use crate::plan::{choose_access, Access};
use crate::session::{Outcome, Session, Tx};
use crate::subquery::{self, Correlated, Correlation};
use crate::value::to_i64;
use fetch::{fetch_joined, system_rows};
use finish::{finish, static_type};

/// A table whose rows the front end builds or holds: an `information_schema` table (its
/// rows built from the catalog when the query runs), or a derived table (`FROM (SELECT
/// ...) AS t`), whose query ran before this one was bound (`subquery.rs`). The table's
/// schema beside it names it.
#[derive(Clone, Debug)]
pub(crate) enum FrontTable {
    System(SystemTable),
    Derived(Arc<Vec<Vec<Value>>>),
}

/// A bound single-table (or table-less) SELECT.
pub struct SelectPlan {
    table: Option<Arc<SqlTable>>,
    /// A table whose rows the front end has instead: `information_schema` or derived.
    system: Option<(FrontTable, TableSchema)>,
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
    /// The correlated subqueries, whose values follow the row's columns from position
    /// `row_width` (`subquery/correlated.rs`), and the WHERE's conditions that read them
    /// (kept out of `filter` and `conjuncts`, which see only the row read).
    correlated: Vec<Correlated>,
    correlated_filter: Option<Expr>,
    row_width: usize,
}

impl SelectPlan {
    /// The collation of the string column at `position` of the rows the plan reads
    /// (`None`: not a string column).
    fn row_collation(&self, position: usize) -> Option<Collation> {
        if let Some(correlated) = self.correlated_at(position) {
            return correlated.collation();
        }
        let column = match (&self.joins, &self.table, &self.system) {
            (Some((first, joined)), _, _) => {
                match joined.iter().rev().find(|j| j.offset <= position) {
                    Some(j) => j.table.schema().columns.get(position - j.offset),
                    None => return first.row_collation(position),
                }
            }
            (None, Some(table), _) => table.schema().columns.get(position),
            (None, None, Some((_, schema))) => schema.columns.get(position),
            (None, None, None) => None,
        }?;
        Derivation::of_column(column.column_type)
    }

    /// The correlated subquery whose value is at row position `position`, if one is.
    fn correlated_at(&self, position: usize) -> Option<&Correlated> {
        self.correlated.get(position.checked_sub(self.row_width)?)
    }

    /// The result columns, as expressions over the (grouped) row.
    pub(crate) fn outputs(&self) -> &[OutputColumn] {
        &self.outputs
    }

    /// The type of result column `n`, where known before the query runs.
    pub(crate) fn output_type(&self, n: usize) -> Option<kista_client::types::ColumnType> {
        static_type(self, &self.outputs.get(n)?.expr).0
    }

    /// The collation of result column `n`, if it holds strings.
    pub(crate) fn output_collation(&self, n: usize) -> Option<Collation> {
        let expr = &self.outputs.get(n)?.expr;
        derive(expr, &|position| self.row_collation(position))
            .ok()
            .filter(|d| d.coercibility != Derivation::NONE.coercibility)
            .map(|d| d.collation)
    }

    /// The collation strings of `expr` (over the plan's row) sort and group under.
    fn collation_of(&self, expr: &Expr) -> Collation {
        collation_over(expr, &|position| self.row_collation(position))
    }

    /// A plan reading `table`'s rows that pass `conjuncts` (bound over its row), every
    /// column, under `lock`.
    fn for_write_bound(
        table: &Arc<SqlTable>,
        conjuncts: Vec<Expr>,
        limit: Option<Expr>,
        lock: LockKind,
    ) -> Self {
        Self {
            access: choose_access(table, &conjuncts),
            table: Some(table.clone()),
            limit,
            lock,
            ..Self::passing(conjuncts)
        }
    }

    /// A plan taking the rows of a table the front end holds that pass `conjuncts`: the
    /// first table of a join (`fetch_joined`).
    fn of_front_rows(front: FrontTable, schema: TableSchema, conjuncts: Vec<Expr>) -> Self {
        Self {
            system: Some((front, schema)),
            ..Self::passing(conjuncts)
        }
    }

    /// Every column of the rows that pass `conjuncts`, of no table yet, by a scan.
    fn passing(conjuncts: Vec<Expr>) -> Self {
        let filter = Expr::all(conjuncts.iter().cloned());
        Self {
            access: Access::Scan,
            table: None,
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
            limit: None,
            offset: None,
            lock: LockKind::Committed,
            needed_columns: Vec::new(),
            correlated: Vec::new(),
            correlated_filter: None,
            row_width: 0,
        }
    }

    /// The rows an UPDATE or DELETE changes: every column, under an exclusive lock.
    /// `subqueries`: where the statement's uncorrelated subqueries may run
    /// (`subquery::answering`); `None` refuses them.
    pub(crate) fn for_write(
        table: &Arc<SqlTable>,
        selection: Option<&ast::Expr>,
        (order_by, limit): (&[ast::OrderByExpr], Option<&ast::Expr>),
        placeholders: &[Location],
        (subqueries, correlation): (Option<&subquery::Subqueries>, Option<&Correlation>),
    ) -> SqlResult<Self> {
        let scope = table.scope(&table.name);
        let mut binder = Binder {
            subqueries,
            correlation,
            ..Binder::over(&scope, placeholders, "where clause")
        };
        let filter = selection.map(|e| bind(&mut binder, e)).transpose()?;
        binder.place = "order clause";
        let order_by = order_by
            .iter()
            .map(|item| {
                Ok((
                    bind(&mut binder, &item.expr)?,
                    item.options.asc != Some(false),
                ))
            })
            .collect::<SqlResult<Vec<_>>>()?;
        let mut limit_binder = Binder::without_columns(placeholders, "limit");
        let limit = limit.map(|e| bind(&mut limit_binder, e)).transpose()?;
        let (correlated_conjuncts, conjuncts) = split_correlated(filter, scope.len());
        Ok(Self {
            order_by,
            correlated_filter: correlated_conjuncts,
            row_width: scope.len(),
            ..Self::for_write_bound(table, conjuncts, limit, LockKind::Exclusive)
        })
    }

    /// The plan with its correlated subqueries, bound in its statement's other clauses
    /// too (an UPDATE's SET).
    pub(crate) fn with_correlated(self, correlated: Vec<Correlated>) -> Self {
        Self { correlated, ..self }
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
            && self.correlated.is_empty()
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
                output::definition(&o.name, column_type, origin, std::iter::empty(), None)
            })
            .collect();
        crate::point_read::PointRead::new(table.clone(), key.clone(), &output_columns, columns)
    }

    /// `rows` in the plan's ORDER BY (UPDATE and DELETE), cut to its LIMIT.
    pub fn limited(
        &self,
        session: &Session,
        mut rows: Vec<Vec<Value>>,
        params: &[Value],
    ) -> SqlResult<Vec<Vec<Value>>> {
        if !self.order_by.is_empty() {
            let column = |position| self.row_collation(position);
            rows = sorted_by(session, (&self.order_by, &column), rows, params)?;
        }
        if let Some(n) = row_count(session, self.limit.as_ref(), params)? {
            rows.truncate(n);
        }
        Ok(rows)
    }
}

/// A WHERE's conjuncts on correlated subqueries' values (positions from `row_width`),
/// joined by AND, and the others, which hold on the row as read.
pub(super) fn split_correlated(
    filter: Option<Expr>,
    row_width: usize,
) -> (Option<Expr>, Vec<Expr>) {
    let (correlated, plain): (Vec<Expr>, Vec<Expr>) =
        (filter.map(Expr::conjuncts).unwrap_or_default().into_iter())
            .partition(|c| c.column_span().is_some_and(|(_, high)| high >= row_width));
    (Expr::all(correlated), plain)
}

/// The collation of the string column at a row position (`None`: it holds no strings).
type ColumnCollations<'a> = &'a dyn Fn(usize) -> Option<Collation>;

/// `rows` in the order of `order_by`, each key evaluated over the row and its strings
/// compared under the collation it derives from the rows' columns' (`column`) (ORDER BY
/// of UPDATE, DELETE and a union).
pub(super) fn sorted_by(
    session: &Session,
    (order_by, column): (&[(Expr, bool)], ColumnCollations),
    rows: Vec<Vec<Value>>,
    params: &[Value],
) -> SqlResult<Vec<Vec<Value>>> {
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(params, &[], &variable);
    let collations: Vec<Collation> = (order_by.iter())
        .map(|(e, _)| collation_over(e, column))
        .collect();
    let mut keyed = Vec::with_capacity(rows.len());
    for row in rows {
        let keys = (order_by.iter())
            .map(|(e, _)| eval(e, &row, &ctx))
            .collect::<SqlResult<Vec<_>>>()?;
        keyed.push((keys, row));
    }
    finish::sort_heeding_kill(
        || session.check_killed(),
        &mut keyed,
        |(a, _), (b, _)| finish::compare_sort_keys(order_by, &collations, a, b),
    )?;
    Ok(keyed.into_iter().map(|(_, row)| row).collect())
}

/// The collation strings of `expr` sort and group under, given the collations of the
/// row's columns: what the expression derives (MySQL's default for a string of no column).
fn collation_over(expr: &Expr, column: &dyn Fn(usize) -> Option<Collation>) -> Collation {
    derive(expr, column).map_or(Collation::default(), |d| d.collation)
}

/// The rows a LIMIT or OFFSET counts (`None`: not given); error 1210 unless a count.
pub(super) fn row_count(
    session: &Session,
    count: Option<&Expr>,
    params: &[Value],
) -> SqlResult<Option<usize>> {
    count
        .map(|e| {
            to_i64(&constant(session, e, params)?)
                .filter(|n| *n >= 0)
                .map(|n| n as usize)
                .ok_or_else(|| SqlError::wrong_arguments("LIMIT"))
        })
        .transpose()
}

/// Evaluates a constant expression (a key, a bound, a LIMIT).
pub(super) fn constant(session: &Session, expr: &Expr, params: &[Value]) -> SqlResult<Value> {
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(params, &[], &variable);
    eval(expr, &[], &ctx)
}

/// A key's values made to fit the key's columns; `None` when one cannot (the access path
/// then falls back to a scan, which evaluates the comparison as MySQL would).
pub(super) fn key_values(
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

/// Runs the query; with a `sink`, a long result goes to it as its rows are read
/// (`stream.rs`).
pub fn execute(
    session: &mut Session,
    plan: &SelectPlan,
    params: &[Value],
    sink: Option<&mut dyn RowSink>,
) -> SqlResult<Outcome> {
    if grouping::groups_as_read(plan) {
        if let Some(outcome) = grouping::execute(session, plan, params)? {
            return Ok(outcome);
        }
    }
    if let Some(sink) = sink.filter(|_| stream::streams(plan)) {
        if let Some(outcome) = stream::execute(session, plan, params, sink)? {
            return Ok(outcome);
        }
    }
    let rows = read(session, plan, params)?;
    finish(session, plan, rows, params)
}

/// The query's result rows in `tx`, without their columns' definitions (a correlated
/// subquery's answer).
pub(crate) fn rows_in(
    tx: &mut Tx,
    session: &Session,
    plan: &SelectPlan,
    params: &[Value],
) -> SqlResult<Vec<Vec<Value>>> {
    let rows = read_in(tx, session, plan, params, false)?;
    finish::finished_rows(session, plan, rows, params)
}

/// The rows the query reads that pass its WHERE, each with its correlated subqueries'
/// values after its columns (they run in the same transaction).
fn read(session: &mut Session, plan: &SelectPlan, params: &[Value]) -> SqlResult<Vec<Vec<Value>>> {
    let reads_the_cluster =
        plan.table.is_some() || plan.joins.is_some() || !plan.correlated.is_empty();
    if !reads_the_cluster {
        // information_schema, a derived table's rows, or no table: no transaction.
        return match &plan.system {
            Some((system, _)) => system_rows(session, plan, system, params),
            None => Ok(vec![Vec::new()]),
        };
    }
    session.transactional(|tx, session| read_in(tx, session, plan, params, true))
}

/// [`read`] in `tx`; `last`: the statement reads nothing after these rows.
pub(crate) fn read_in(
    tx: &mut Tx,
    session: &Session,
    plan: &SelectPlan,
    params: &[Value],
    last: bool,
) -> SqlResult<Vec<Vec<Value>>> {
    let rows = match (&plan.system, &plan.table, &plan.joins) {
        (Some((system, _)), _, _) => system_rows(session, plan, system, params)?,
        (None, _, Some(_)) => fetch_joined(tx, session, plan, params)?,
        (None, Some(table), None) => {
            let last = last && plan.correlated.is_empty();
            fetch(tx, session, plan, table, params, last)?
        }
        (None, None, None) => vec![Vec::new()],
    };
    let filter = plan.correlated_filter.as_ref();
    subquery::apply(tx, session, &plan.correlated, filter, rows, params)
}

/// The result columns a prepared statement announces: for a query, its outputs' types
/// where known (the execute answer describes the actual values again); none otherwise.
/// Its subqueries run with every parameter NULL, for their columns' sake.
pub fn prepared_columns(
    session: &mut Session,
    parsed: &crate::session::Parsed,
) -> SqlResult<Vec<crate::protocol::results::ColumnDefinition>> {
    let sqlparser::ast::Statement::Query(query) = &parsed.statement else {
        return Ok(Vec::new());
    };
    if union::is_set_operation(query) {
        return Ok(Vec::new()); // the execute answer describes its columns
    }
    session.subqueries.clear();
    let nulls = vec![Value::Null; parsed.placeholders.len()];
    let (plan, _) = crate::subquery::bind_answering(session, query, &parsed.placeholders, &nulls)?;
    Ok(plan
        .outputs
        .iter()
        .map(|o| {
            let (column_type, origin) = static_type(&plan, &o.expr);
            let column_type = column_type.or(Some(crate::sql_type::default_varchar(16_383)));
            output::definition(&o.name, column_type, origin, std::iter::empty(), None)
        })
        .collect())
}

/// The plan, for EXPLAIN.
pub fn explain(plan: &SelectPlan) -> String {
    let mut steps = vec![explain_read(plan)];
    steps.extend(plan.correlated.iter().map(Correlated::describe));
    steps.join("; then ")
}

/// How the plan reads its rows, for EXPLAIN.
fn explain_read(plan: &SelectPlan) -> String {
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
            Some((FrontTable::System(system), _)) => format!(
                "information_schema.{}: built by the front end from the catalog",
                system.name()
            ),
            Some((FrontTable::Derived(rows), schema)) => format!(
                "derived table {}: its query ran first ({} rows, held by the front end)",
                schema.name,
                rows.len()
            ),
            None => "no table".into(),
        },
    }
}
