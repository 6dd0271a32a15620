//! `UNION [ALL | DISTINCT]`: each SELECT runs on its own and its rows follow those of the
//! ones before it. A DISTINCT union (the default) removes repeated rows from everything
//! to its left, as MySQL does; then the ORDER BY and LIMIT of the whole apply, ORDER BY
//! naming result columns by name or position.
//!
//! The result columns are named by the first SELECT; a column's type is that of the first
//! SELECT that gives it one.

use sqlparser::ast::{self, OrderByKind, SetExpr, SetOperator, SetQuantifier};
use sqlparser::tokenizer::Location;

use kista_client::types::{Collation, Value};

use super::bind::{bind_limit, bind_output_reference};
use super::finish::encode_group_key;
use super::{row_count, sorted_by, OutputColumn};
use crate::error::{SqlError, SqlResult};
use crate::expr::{Binder, Expr, ScopeColumn};
use crate::protocol::column_type as code;
use crate::protocol::results::ColumnDefinition;
use crate::session::{Outcome, Session};
use crate::subquery;

/// The collation a union column's strings compare under: the one its definition announces
/// (the first SELECT's that typed the column; MySQL derives it from every part, which
/// agree in the common case).
fn collation_of(column: &ColumnDefinition) -> Collation {
    Collation::with_id(column.collation).unwrap_or_default()
}

/// Whether `query` is a set operation (run by [`execute`], not bound as one SELECT).
pub fn is_set_operation(query: &ast::Query) -> bool {
    matches!(query.body.as_ref(), SetExpr::SetOperation { .. })
}

/// Runs any query: a set operation here, a SELECT bound (its subqueries first) and run.
pub fn execute(
    session: &mut Session,
    query: &ast::Query,
    placeholders: &[Location],
    params: &[Value],
) -> SqlResult<Outcome> {
    if !is_set_operation(query) {
        let (plan, _) = subquery::bind_answering(session, query, placeholders, params)?;
        return super::execute(session, &plan, params, None);
    }
    if query.with.is_some() {
        return Err(SqlError::not_supported("WITH"));
    }
    let (columns, rows) = rows_of(session, query, &query.body, placeholders, params)?;
    let rows = ordered_and_limited(session, query, &columns, rows, placeholders, params)?;
    Ok(Outcome::Rows { columns, rows })
}

type Rows = (Vec<ColumnDefinition>, Vec<Vec<Value>>);

/// The rows of one part of `outer`'s body.
fn rows_of(
    session: &mut Session,
    outer: &ast::Query,
    body: &SetExpr,
    placeholders: &[Location],
    params: &[Value],
) -> SqlResult<Rows> {
    match body {
        SetExpr::SetOperation {
            op: SetOperator::Union,
            set_quantifier,
            left,
            right,
        } => {
            let (mut columns, mut rows) = rows_of(session, outer, left, placeholders, params)?;
            let (more_columns, more_rows) = rows_of(session, outer, right, placeholders, params)?;
            if more_columns.len() != columns.len() {
                return Err(SqlError::new(
                    1222,
                    "21000",
                    "The used SELECT statements have a different number of columns",
                ));
            }
            for (column, more) in columns.iter_mut().zip(more_columns) {
                if column.type_code == code::NULL {
                    column.type_code = more.type_code;
                    column.length = more.length;
                    column.decimals = more.decimals;
                    column.collation = more.collation;
                }
            }
            rows.extend(more_rows);
            if !matches!(set_quantifier, SetQuantifier::All) {
                let collations: Vec<Collation> = columns.iter().map(collation_of).collect();
                let mut seen = super::finish::group_keys();
                rows.retain(|row| seen.insert(encode_group_key(row, &collations)));
            }
            Ok((columns, rows))
        }
        SetExpr::SetOperation { op, .. } => Err(SqlError::not_supported(op)),
        SetExpr::Query(inner) => match execute(session, inner, placeholders, params)? {
            Outcome::Rows { columns, rows } => Ok((columns, rows)),
            _ => Err(SqlError::not_supported(
                "a query part that answers without rows",
            )),
        },
        _ => {
            // One SELECT: the union's ORDER BY and LIMIT are not its own.
            let mut part = outer.clone();
            *part.body = body.clone();
            part.order_by = None;
            part.limit_clause = None;
            let (plan, _) = subquery::bind_answering(session, &part, placeholders, params)?;
            match super::execute(session, &plan, params, None)? {
                Outcome::Rows { columns, rows } => Ok((columns, rows)),
                _ => Err(SqlError::not_supported(
                    "a query part that answers without rows",
                )),
            }
        }
    }
}

/// `rows` in the union's ORDER BY (over its result columns), cut to its LIMIT and OFFSET.
fn ordered_and_limited(
    session: &Session,
    query: &ast::Query,
    columns: &[ColumnDefinition],
    mut rows: Vec<Vec<Value>>,
    placeholders: &[Location],
    params: &[Value],
) -> SqlResult<Vec<Vec<Value>>> {
    if let Some(order) = &query.order_by {
        let OrderByKind::Expressions(items) = &order.kind else {
            return Err(SqlError::not_supported("ORDER BY ALL"));
        };
        let scope: Vec<ScopeColumn> = (columns.iter())
            .map(|c| ScopeColumn {
                collation: Some(collation_of(c)),
                ..ScopeColumn::new(String::new(), c.name.clone())
            })
            .collect();
        let outputs: Vec<OutputColumn> = (columns.iter().enumerate())
            .map(|(position, c)| OutputColumn {
                name: c.name.clone(),
                expr: Expr::Column(position),
            })
            .collect();
        let mut order_by = Vec::with_capacity(items.len());
        for item in items {
            let binder = Binder::over(&scope, placeholders, "order clause");
            let expr = bind_output_reference(&item.expr, &outputs, binder)?;
            order_by.push((expr, item.options.asc != Some(false)));
        }
        let column = |position: usize| scope.get(position).and_then(|c| c.collation);
        rows = sorted_by(session, (&order_by, &column), rows, params)?;
    }
    let (limit, offset) = bind_limit(query, placeholders)?;
    let offset = row_count(session, offset.as_ref(), params)?.unwrap_or(0);
    let limit = row_count(session, limit.as_ref(), params)?.unwrap_or(usize::MAX);
    session.rows_before_limit.set(rows.len() as u64);
    Ok(rows.into_iter().skip(offset).take(limit).collect())
}
