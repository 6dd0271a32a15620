//! Correlated subqueries: a subquery naming a column of the query around it runs once
//! for each row of that query, after the row is read and before the WHERE's conditions
//! on subqueries, grouping and the select list see it. Its value joins the row as one
//! more column after the row's own (the query's expressions read it there), so the
//! access paths, joins, grouping and sorting need not know about it.
//!
//! Binding: the subquery binds with the query around it as its [`Outer`] scope; a name
//! its own tables lack is looked up there (and, for a subquery inside a subquery, further
//! out) and becomes a parameter numbered after the statement's `?`s, while the outer
//! expression giving its value is kept. Running the subquery, its parameters are the
//! statement's followed by those values, so a key lookup or a data node's filter takes an
//! outer column as it takes a `?`: `EXISTS (SELECT 1 FROM b WHERE b.id = a.b_id)` reads
//! `b` by key once per row of `a`.
//!
//! Answers are remembered per distinct outer values (up to [`REMEMBERED_ROWS_MAX`] rows),
//! so a subquery over a column with few distinct values runs few times.
//!
//! Not yet: a correlated subquery in a LEFT JOIN's ON, or naming an aggregate of the
//! query around it; a correlated UNION (error 1235 for each).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use sqlparser::ast;
use sqlparser::tokenizer::Location;

use kista_client::types::{Collation, ColumnType, Value};

use crate::catalog::BindCatalog;
use crate::error::{SqlError, SqlResult};
use crate::expr::{eval, find_column, CompareOp, EvalContext, Expr, ScopeColumn};
use crate::select::{self, SelectPlan};
use crate::session::{Session, Tx};

/// Rows of a statement's correlated subqueries' answers remembered at once; past it the
/// remembered answers are forgotten (and run again when asked for).
pub const REMEMBERED_ROWS_MAX: usize = 100_000;

/// The query around a correlated subquery, as the subquery's binder sees it.
pub(crate) struct Outer<'a> {
    /// The columns of that query's row.
    columns: &'a [ScopeColumn],
    /// The query around that one, when it is a correlated subquery itself.
    parent: Option<&'a Outer<'a>>,
    /// The number of the first parameter that is an outer value (after the `?`s).
    first_param: usize,
    /// The outer values the subquery reads, as expressions over that query's row.
    values: RefCell<Vec<Expr>>,
}

impl Outer<'_> {
    /// `table.name` (or `name`) of the query around, as the subquery reads it: a
    /// parameter holding its value; `None` where no query around has such a column.
    pub(crate) fn resolve(
        &self,
        table: Option<&str>,
        name: &str,
        place: &'static str,
    ) -> SqlResult<Option<Expr>> {
        let around = match find_column(self.columns, table, name, place)? {
            Some(position) => Expr::Column(position),
            None => match self.parent {
                Some(parent) => match parent.resolve(table, name, place)? {
                    Some(expr) => expr,
                    None => return Ok(None),
                },
                None => return Ok(None),
            },
        };
        let mut values = self.values.borrow_mut();
        let index = match values.iter().position(|v| *v == around) {
            Some(index) => index,
            None => {
                values.push(around);
                values.len() - 1
            }
        };
        Ok(Some(Expr::Param(self.first_param + index)))
    }
}

/// What a query's binders need for correlated subqueries: the query around it (if it
/// is one), and where its own correlated subqueries are kept.
pub(crate) struct Correlation<'a> {
    session: &'a dyn BindCatalog,
    /// The query around this one, whose columns names may also mean.
    pub(crate) outer: Option<&'a Outer<'a>>,
    /// The width of this query's row: its correlated subqueries' values follow.
    width: usize,
    found: RefCell<Vec<Correlated>>,
}

impl<'a> Correlation<'a> {
    pub(crate) fn new(
        session: &'a dyn BindCatalog,
        outer: Option<&'a Outer<'a>>,
        width: usize,
    ) -> Self {
        Self {
            session,
            outer,
            width,
            found: RefCell::default(),
        }
    }

    /// The correlated subqueries bound so far, in the order their values follow the row.
    pub(crate) fn into_found(self) -> Vec<Correlated> {
        self.found.into_inner()
    }

    /// Binds `query`, a subquery that names columns of this query's row (`columns`), and
    /// returns the row position its value will have.
    pub(crate) fn bind(
        &self,
        columns: &[ScopeColumn],
        placeholders: &[Location],
        query: &ast::Query,
        kind: Kind,
    ) -> SqlResult<Expr> {
        let outer = Outer {
            columns,
            parent: self.outer,
            first_param: placeholders.len(),
            values: RefCell::default(),
        };
        let plan = select::bind_query_within(self.session, query, placeholders, Some(&outer))?;
        kind.check_columns(plan.outputs().len())?;
        let mut found = self.found.borrow_mut();
        found.push(Correlated {
            kind,
            plan,
            outer_values: outer.values.into_inner(),
            first_param: placeholders.len(),
        });
        Ok(Expr::Column(self.width + found.len() - 1))
    }
}

/// What a correlated subquery's value is.
#[derive(Debug)]
pub(crate) enum Kind {
    /// `(SELECT x ...)`: its one value (NULL for no row; error 1242 for several).
    Scalar,
    /// `[NOT] EXISTS (SELECT ...)`: 1 or 0.
    Exists { negated: bool },
    /// `left op ANY|ALL (SELECT x ...)` (`IN` is `= ANY`): 1, 0 or NULL, as SQL's
    /// three-valued logic says for the comparisons of `left` (over the outer row) with
    /// every value.
    Quantified {
        left: Expr,
        op: CompareOp,
        all: bool,
        collation: Collation,
    },
}

impl Kind {
    /// Error 1241 unless a subquery of `columns` columns can give this kind of value.
    pub(crate) fn check_columns(&self, columns: usize) -> SqlResult<()> {
        match self {
            Kind::Exists { .. } => Ok(()),
            _ if columns == 1 => Ok(()),
            _ => Err(SqlError::operand_columns()),
        }
    }
}

/// A scalar subquery's value from its `rows`: NULL for none, error 1242 for several.
pub(crate) fn scalar(rows: &[Vec<Value>]) -> SqlResult<Value> {
    match rows {
        [] => Ok(Value::Null),
        [only] => Ok(only.first().cloned().unwrap_or(Value::Null)),
        _ => Err(SqlError::subquery_rows()),
    }
}

/// `[NOT] EXISTS` of a subquery's `rows`: 1 or 0.
pub(crate) fn exists(rows: &[Vec<Value>], negated: bool) -> Value {
    Value::Int(i64::from(rows.is_empty() == negated))
}

/// A correlated subquery, bound.
pub struct Correlated {
    kind: Kind,
    plan: SelectPlan,
    /// The outer values it reads (its parameters after the statement's), as expressions
    /// over the outer row.
    outer_values: Vec<Expr>,
    first_param: usize,
}

impl Correlated {
    /// Calls `f` on every expression over the outer row (for the columns it must read).
    pub(crate) fn visit_outer(&self, f: &mut impl FnMut(&Expr)) {
        for value in &self.outer_values {
            value.visit(f);
        }
        if let Kind::Quantified { left, .. } = &self.kind {
            left.visit(f);
        }
    }

    /// The outer values it reads, as expressions over the outer row.
    #[cfg(test)]
    pub(crate) fn outer_values(&self) -> &[Expr] {
        &self.outer_values
    }

    /// The type of its value, where known.
    pub(crate) fn value_type(&self) -> Option<ColumnType> {
        match &self.kind {
            Kind::Scalar => self.plan.output_type(0),
            Kind::Exists { .. } | Kind::Quantified { .. } => Some(ColumnType::Int {
                bytes: 8,
                signed: true,
            }),
        }
    }

    /// The collation of its value, if a string.
    pub(crate) fn collation(&self) -> Option<Collation> {
        match &self.kind {
            Kind::Scalar => self.plan.output_collation(0),
            Kind::Exists { .. } | Kind::Quantified { .. } => None,
        }
    }

    /// How it runs, for EXPLAIN.
    pub(crate) fn describe(&self) -> String {
        format!(
            "for each row, a correlated subquery: {}",
            select::explain(&self.plan)
        )
    }

    /// Its value for `row`, a row of the query around it (`ctx` evaluates over that row).
    fn value(
        &self,
        (tx, session): (&mut Tx, &Session),
        row: &[Value],
        ctx: &EvalContext,
        remembered: &mut Remembered,
    ) -> SqlResult<Value> {
        let mut inner_params: Vec<Value> =
            ctx.params.iter().take(self.first_param).cloned().collect();
        inner_params.resize(self.first_param, Value::Null);
        for value in &self.outer_values {
            inner_params.push(eval(value, row, ctx)?);
        }
        let left = match &self.kind {
            Kind::Quantified { left, .. } => eval(left, row, ctx)?,
            _ => Value::Null,
        };
        let rows = remembered.rows((tx, session), &self.plan, inner_params)?;
        Ok(match &self.kind {
            Kind::Scalar => scalar(&rows)?,
            Kind::Exists { negated } => exists(&rows, *negated),
            Kind::Quantified {
                op, all, collation, ..
            } => {
                let values = rows.iter().filter_map(|r| r.first());
                quantified(&left, *op, *all, *collation, values)
            }
        })
    }
}

/// `left op ANY (values)` or `left op ALL (values)` under SQL's three-valued logic: ANY
/// holds when one comparison holds, ALL unless one fails; otherwise a NULL comparison
/// makes the answer NULL. ANY of no values is false, ALL of none true.
pub(crate) fn quantified<'v>(
    left: &Value,
    op: CompareOp,
    all: bool,
    collation: Collation,
    values: impl Iterator<Item = &'v Value>,
) -> Value {
    let mut unknown = false;
    for value in values {
        match crate::expr::compare_values(op, left, value, collation) {
            Some(holds) if holds != all => return Value::Int(i64::from(holds)),
            Some(_) => {}
            None => unknown = true,
        }
    }
    if unknown {
        Value::Null
    } else {
        Value::Int(i64::from(all))
    }
}

/// The answers of one correlated subquery, by the values it was run with.
struct Remembered {
    answers: HashMap<Vec<u8>, Arc<Vec<Vec<Value>>>>,
    rows: usize,
    /// A collation for each parameter, for their byte-exact key ('a' and 'A' may give
    /// different answers).
    binary: Vec<Collation>,
}

impl Remembered {
    /// The subquery's rows for `params` (the statement's, then the outer values), run
    /// unless remembered.
    fn rows(
        &mut self,
        (tx, session): (&mut Tx, &Session),
        plan: &SelectPlan,
        params: Vec<Value>,
    ) -> SqlResult<Arc<Vec<Vec<Value>>>> {
        let key = select::encode_group_key(&params, &self.binary);
        if let Some(rows) = self.answers.get(&key) {
            return Ok(rows.clone());
        }
        let rows = Arc::new(select::rows_in(tx, session, plan, &params)?);
        if self.rows + rows.len() > REMEMBERED_ROWS_MAX {
            self.answers.clear();
            self.rows = 0;
        }
        self.rows += rows.len();
        self.answers.insert(key, rows.clone());
        Ok(rows)
    }
}

/// `rows` of a query, each with its correlated subqueries' values after its columns,
/// those failing `filter` (the WHERE's conditions on the subqueries) left out.
pub(crate) fn apply(
    tx: &mut Tx,
    session: &Session,
    correlated: &[Correlated],
    filter: Option<&Expr>,
    rows: Vec<Vec<Value>>,
    params: &[Value],
) -> SqlResult<Vec<Vec<Value>>> {
    if correlated.is_empty() {
        return Ok(rows);
    }
    let mut remembered: Vec<Remembered> = (correlated.iter())
        .map(|subquery| Remembered {
            answers: HashMap::new(),
            rows: 0,
            binary: vec![Collation::binary; subquery.first_param + subquery.outer_values.len()],
        })
        .collect();
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(params, &[], &variable);
    let mut kept = Vec::with_capacity(rows.len());
    for mut row in rows {
        for (subquery, remembered) in correlated.iter().zip(&mut remembered) {
            let value = subquery.value((&mut *tx, session), &row, &ctx, remembered)?;
            row.push(value);
        }
        let passes = match filter {
            Some(filter) => crate::value::truth(&eval(filter, &row, &ctx)?) == Some(true),
            None => true,
        };
        if passes {
            kept.push(row);
        }
    }
    Ok(kept)
}
