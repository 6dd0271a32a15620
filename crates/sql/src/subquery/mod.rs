//! Subqueries that name no column of the query around them (uncorrelated), in a query's
//! select list, WHERE, HAVING and ON: each runs once, before the query around it is
//! bound, and the binder takes its answer as literals. `x IN (SELECT ...)` becomes an IN
//! list (so a key or an index still finds the rows, as for a list written out), a scalar
//! subquery its value, `EXISTS` 1 or 0.
//!
//! How: [`bind_answering`] binds the query; the binder, meeting a subquery with no answer
//! yet, notes it and stops ([`Subqueries::wanted`]); the subquery runs (its own
//! subqueries first, the same way) and the query is bound again, until every subquery has
//! its answer. Answers are keyed by where the subquery stands in the statement's text and
//! by its text (unique within a statement, views' queries included), and forgotten when
//! the next statement begins.
//!
//! A derived table (`FROM (SELECT ...) AS t`) runs the same way; its rows are the table's.
//!
//! UPDATE and DELETE run theirs the same way (in WHERE and SET; MySQL's 1093 when one
//! reads the table being changed).
//!
//! A subquery that cannot run alone because it names a column it cannot find (most
//! likely one of the query around it) is marked correlated, and the binder binds it with
//! the query around it as its outer scope (`correlated.rs`): it then runs once for each
//! row of that query. Prepared statements' definitions refuse subqueries (1235).

mod correlated;

#[cfg(test)]
pub(crate) use correlated::quantified;
pub(crate) use correlated::{apply, exists, scalar, Correlated, Correlation, Kind, Outer};

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;

use sqlparser::ast::{self, Spanned};
use sqlparser::tokenizer::Location;

use kista_client::types::{ColumnType, Value};

use crate::error::{SqlError, SqlResult};
use crate::protocol::column_type as code;
use crate::protocol::results::ColumnDefinition;
use crate::select::{self, SelectPlan};
use crate::session::{Outcome, Session};

/// Subqueries one statement may run (each nested one counts): a bound on the binds of
/// the statement, each of which runs until the next unanswered subquery.
pub const SUBQUERIES_MAX: usize = 64;

/// Where a subquery stands in the text it was parsed from (its first and last
/// character), its text, and the database a view's query runs in: a view's query, parsed
/// from its own text, may stand where one of the statement's subqueries does.
type Place = (u64, u64, u64, u64, String, Option<String>);

/// A subquery to run before the query around it is bound again; a view's query runs in
/// the view's database.
struct Wanted {
    query: ast::Query,
    database: Option<String>,
}

/// A subquery's rows, and its columns' names and types (where its result said one).
struct Answer {
    names: Vec<String>,
    types: Vec<Option<ColumnType>>,
    rows: Arc<Vec<Vec<Value>>>,
}

/// The subqueries of the statement being run: their answers, and the one the binder met
/// without an answer.
#[derive(Default)]
pub struct Subqueries {
    /// Whether the query being bound may have its subqueries run ([`bind_answering`]).
    answering: Cell<bool>,
    answers: RefCell<HashMap<Place, Answer>>,
    /// Subqueries that could not run alone, with the error that stopped them (an unknown
    /// column): the binder binds them as correlated ones.
    correlated: RefCell<HashMap<Place, SqlError>>,
    wanted: RefCell<Option<Wanted>>,
}

/// What the binder does with a subquery.
pub(crate) enum Met {
    /// Its rows are known: bind it as literals (or as a derived table's rows).
    Rows {
        names: Vec<String>,
        types: Vec<Option<ColumnType>>,
        rows: Arc<Vec<Vec<Value>>>,
    },
    /// The binder must stop here: the subquery runs first.
    Wanted(SqlError),
    /// It names a column it could not find alone (the error says which): bind it as a
    /// correlated subquery, in the scope of the query around it.
    Correlated(SqlError),
}

impl Subqueries {
    /// A new statement begins: the last one's answers are gone.
    pub(crate) fn clear(&self) {
        self.answers.borrow_mut().clear();
        self.correlated.borrow_mut().clear();
        self.wanted.borrow_mut().take();
    }

    /// The binder met `query`; `None` where subqueries cannot be run (the statement is not
    /// bound by [`bind_answering`]).
    pub(crate) fn met(&self, query: &ast::Query) -> Option<Met> {
        self.met_in(query, None)
    }

    /// The binder met `query`, a view's, which runs in `database` (`None`: the session's).
    pub(crate) fn met_in(&self, query: &ast::Query, database: Option<&str>) -> Option<Met> {
        if !self.answering.get() {
            return None;
        }
        let place = place_of(query, database);
        if let Some(answer) = self.answers.borrow().get(&place) {
            return Some(Met::Rows {
                names: answer.names.clone(),
                types: answer.types.clone(),
                rows: answer.rows.clone(),
            });
        }
        if let Some(error) = self.correlated.borrow().get(&place) {
            return Some(Met::Correlated(error.clone()));
        }
        *self.wanted.borrow_mut() = Some(Wanted {
            query: query.clone(),
            database: database.map(str::to_string),
        });
        Some(Met::Wanted(SqlError::new(
            1235,
            "42000",
            "a subquery must run before the query around it is bound",
        )))
    }
}

fn place_of(query: &ast::Query, database: Option<&str>) -> Place {
    let span = query.span();
    let at = |l: Location| (l.line, l.column);
    let ((start_line, start_column), (end_line, end_column)) = (at(span.start), at(span.end));
    let text = query.to_string();
    let database = database.map(str::to_string);
    (
        start_line,
        start_column,
        end_line,
        end_column,
        text,
        database,
    )
}

/// Binds `query`, first running every uncorrelated subquery it holds. Returns the plan
/// and whether any subquery ran (its answers are then part of the plan, which must not
/// be kept for another execution; a correlated subquery's plan may be kept).
pub fn bind_answering(
    session: &mut Session,
    query: &ast::Query,
    placeholders: &[Location],
    params: &[Value],
) -> SqlResult<(SelectPlan, bool)> {
    answering(session, placeholders, params, |session| {
        select::bind_query(session, query, placeholders)
    })
}

/// Binds a statement with `bind` (a query's, an UPDATE's or a DELETE's binding), first
/// running every uncorrelated subquery it holds, as [`bind_answering`] does for a query.
pub fn answering<T>(
    session: &mut Session,
    placeholders: &[Location],
    params: &[Value],
    bind: impl Fn(&Session) -> SqlResult<T>,
) -> SqlResult<(T, bool)> {
    let mut ran = false;
    for _ in 0..=SUBQUERIES_MAX {
        let outer = session.subqueries.answering.replace(true);
        let bound = bind(session);
        session.subqueries.answering.set(outer);
        let wanted = session.subqueries.wanted.borrow_mut().take();
        match (bound, wanted) {
            (
                Err(_),
                Some(Wanted {
                    query: subquery,
                    database,
                }),
            ) => {
                let session_database = session.database.clone();
                if database.is_some() {
                    session.database.clone_from(&database);
                }
                let answer = run(session, &subquery, placeholders, params);
                session.database = session_database;
                let place = place_of(&subquery, database.as_deref());
                let subqueries = &session.subqueries;
                match answer {
                    Ok(answer) => {
                        subqueries.answers.borrow_mut().insert(place, answer);
                        ran = true;
                    }
                    Err(e) if e.code == UNKNOWN_COLUMN => {
                        subqueries.correlated.borrow_mut().insert(place, e);
                    }
                    Err(e) => return Err(e),
                }
            }
            (bound, _) => return bound.map(|plan| (plan, ran)),
        }
    }
    Err(SqlError::new(
        1235,
        "42000",
        format!("a statement may run at most {SUBQUERIES_MAX} subqueries"),
    ))
}

/// Binds `query` as [`bind_answering`] does, but runs no subquery (there is no cluster):
/// a subquery that binds alone is refused (1235), one that stops on an unknown column is
/// marked correlated and bound as one. For binding and planning tests.
#[cfg(test)]
pub(crate) fn bind_without_running(
    catalog: &dyn crate::catalog::BindCatalog,
    query: &ast::Query,
    placeholders: &[Location],
) -> SqlResult<SelectPlan> {
    let subqueries = catalog.subqueries();
    for _ in 0..=SUBQUERIES_MAX {
        let outer = subqueries.answering.replace(true);
        let bound = select::bind_query(catalog, query, placeholders);
        subqueries.answering.set(outer);
        let Some(wanted) = subqueries.wanted.borrow_mut().take() else {
            return bound;
        };
        match bind_without_running(catalog, &wanted.query, placeholders) {
            Err(e) if e.code == UNKNOWN_COLUMN => {
                let place = place_of(&wanted.query, wanted.database.as_deref());
                subqueries.correlated.borrow_mut().insert(place, e);
            }
            Err(e) => return Err(e),
            Ok(_) => {
                return Err(SqlError::not_supported(
                    "running a subquery without a cluster",
                ))
            }
        }
    }
    Err(SqlError::not_supported("this many subqueries"))
}

/// MySQL's "Unknown column": a subquery that stops on it alone is correlated.
const UNKNOWN_COLUMN: u16 = 1054;

/// Runs a subquery alone (an error [`UNKNOWN_COLUMN`] if it names a column of the query
/// around it).
fn run(
    session: &mut Session,
    subquery: &ast::Query,
    placeholders: &[Location],
    params: &[Value],
) -> SqlResult<Answer> {
    match select::union::execute(session, subquery, placeholders, params)? {
        Outcome::Rows { columns, rows } => Ok(Answer {
            types: columns.iter().map(type_of_column).collect(),
            names: columns.into_iter().map(|c| c.name).collect(),
            rows: Arc::new(rows),
        }),
        _ => Err(SqlError::not_supported(
            "a subquery that answers without rows",
        )),
    }
}

/// The kind of value a result column's definition announces (for a derived table of no
/// row, whose columns no value types).
fn type_of_column(column: &ColumnDefinition) -> Option<ColumnType> {
    Some(match column.type_code {
        code::TINY | code::SHORT | code::LONG | code::INT24 | code::LONGLONG | code::YEAR => {
            ColumnType::Int {
                bytes: 8,
                signed: true,
            }
        }
        code::FLOAT => ColumnType::Float,
        code::DOUBLE => ColumnType::Double,
        code::DECIMAL | code::NEWDECIMAL => ColumnType::Decimal {
            precision: 65,
            scale: column.decimals.min(30),
        },
        code::DATE => ColumnType::Date,
        code::TIME => ColumnType::Time,
        code::DATETIME => ColumnType::DateTime,
        code::TIMESTAMP => ColumnType::Timestamp,
        code::NULL => return None,
        _ => crate::sql_type::default_varchar(16_383),
    })
}
