//! WHERE conditions the data nodes check: a conjunct the front end can state exactly as a
//! [`Filter`] (its constants evaluated and made to fit the column) goes with the scan, so
//! rows that fail it never leave the data node. One that cannot stays with the front end,
//! which checks the whole WHERE on every row it receives anyway.

use kista_client::filter::{CompareOp as FilterOp, Filter};
use kista_client::types::Value;

use super::constant;
use crate::catalog::SqlTable;
use crate::expr::{CompareOp, Expr};
use crate::plan::pushable;
use crate::session::Session;
use crate::value::fit_exactly;

/// The AND of the `conjuncts` a data node holding `table` can check (`None`: none).
pub(super) fn pushed_filter(
    session: &Session,
    table: &SqlTable,
    conjuncts: &[Expr],
    params: &[Value],
) -> Option<Filter> {
    let pushdown = Pushdown {
        session,
        table,
        params,
    };
    let mut filters: Vec<Filter> = Vec::new();
    // The AND's own node; its parts are one level down.
    let mut nodes = 1;
    for conjunct in conjuncts.iter().filter(|c| pushable(c)) {
        let Some(filter) = pushdown.filter(conjunct) else {
            continue;
        };
        // A data node refuses a filter past its bounds (and fails the scan): what would
        // not fit stays with the front end, which checks every conjunct anyway.
        let mut with_it = nodes;
        if filter.within(2, &mut with_it) {
            nodes = with_it;
            filters.push(filter);
        }
    }
    match filters.len() {
        0 => None,
        1 => filters.pop(),
        _ => Some(Filter::And(filters)),
    }
}

/// `a AND (b AND c)` as one AND of three (`and`; else so for OR): a chain of a hundred
/// ORs is two levels deep for the data node, not a hundred.
fn flattened(and: bool, parts: [Filter; 2]) -> Filter {
    let mut all = Vec::new();
    for part in parts {
        match part {
            Filter::And(inner) if and => all.extend(inner),
            Filter::Or(inner) if !and => all.extend(inner),
            part => all.push(part),
        }
    }
    if and {
        Filter::And(all)
    } else {
        Filter::Or(all)
    }
}

/// What a conjunct's constants are evaluated with, and the table whose columns it names.
struct Pushdown<'a> {
    session: &'a Session<'a>,
    table: &'a SqlTable,
    params: &'a [Value],
}

impl Pushdown<'_> {
    /// `expr` as a filter; `None` when it cannot be carried exactly.
    fn filter(&self, expr: &Expr) -> Option<Filter> {
        match expr {
            Expr::Compare(op, left, right, _) => match (left.as_ref(), right.as_ref()) {
                (Expr::Column(c), e) => self.compare(*c, *op, e),
                (e, Expr::Column(c)) => self.compare(*c, op.flipped(), e),
                _ => None,
            },
            Expr::IsNull { expr, negated } => match expr.as_ref() {
                Expr::Column(c) => Some(negated_if(Filter::IsNull(*c), *negated)),
                _ => None,
            },
            Expr::Like {
                expr,
                pattern,
                negated,
                ..
            } => Some(negated_if(self.like(column_of(expr)?, pattern)?, *negated)),
            Expr::Between {
                expr,
                low,
                high,
                negated,
                ..
            } => {
                let c = column_of(expr)?;
                let inside = Filter::And(vec![
                    self.compare(c, CompareOp::GtEq, low)?,
                    self.compare(c, CompareOp::LtEq, high)?,
                ]);
                Some(negated_if(inside, *negated))
            }
            Expr::InList {
                expr,
                list,
                negated,
                ..
            } => {
                let c = column_of(expr)?;
                let equal_to = |e| self.compare(c, CompareOp::Eq, e);
                let any = Filter::Or(list.iter().map(equal_to).collect::<Option<_>>()?);
                Some(negated_if(any, *negated))
            }
            Expr::And(a, b) => Some(flattened(true, [self.filter(a)?, self.filter(b)?])),
            Expr::Or(a, b) => Some(flattened(false, [self.filter(a)?, self.filter(b)?])),
            Expr::Not(e) => Some(Filter::Not(Box::new(self.filter(e)?))),
            _ => None,
        }
    }

    /// `column op e`, `e` a constant that fits the column exactly.
    fn compare(&self, column: usize, op: CompareOp, e: &Expr) -> Option<Filter> {
        let op = match op {
            CompareOp::Eq => FilterOp::Eq,
            CompareOp::NotEq => FilterOp::Ne,
            CompareOp::Lt => FilterOp::Lt,
            CompareOp::LtEq => FilterOp::Le,
            CompareOp::Gt => FilterOp::Gt,
            CompareOp::GtEq => FilterOp::Ge,
            CompareOp::NullSafeEq => return None,
        };
        let value = constant(self.session, e, self.params).ok()?;
        let value = fit_exactly(&value, self.table.schema().columns[column].column_type)?;
        Some(Filter::Compare { column, op, value })
    }

    /// `column LIKE pattern` of a column holding strings, the pattern a constant string.
    fn like(&self, column: usize, pattern: &Expr) -> Option<Filter> {
        let holds_strings = self.table.schema().columns[column]
            .column_type
            .holds_strings();
        let Value::Bytes(pattern) = constant(self.session, pattern, self.params).ok()? else {
            return None;
        };
        holds_strings.then_some(Filter::Like { column, pattern })
    }
}

/// The column `expr` is, if it is one.
fn column_of(expr: &Expr) -> Option<usize> {
    match expr {
        Expr::Column(c) => Some(*c),
        _ => None,
    }
}

fn negated_if(filter: Filter, negated: bool) -> Filter {
    if negated {
        Filter::Not(Box::new(filter))
    } else {
        filter
    }
}
