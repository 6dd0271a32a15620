//! Subqueries in expressions: `x [NOT] IN (SELECT ...)`, `x op ANY|SOME|ALL (SELECT
//! ...)`, a scalar `(SELECT ...)` and `[NOT] EXISTS (SELECT ...)`. One that ran alone
//! (`subquery/mod.rs`) binds as its answer: an IN list, comparisons with its values, a
//! value, 1 or 0. A correlated one binds as the row position its value will take
//! (`subquery/correlated.rs`).

use sqlparser::ast;

use kista_client::types::{Collation, Value};

use super::bind::{bind, compare_op, derive_of, Binder};
use super::{CompareOp, Derivation, Expr};
use crate::error::{SqlError, SqlResult};
use crate::subquery::{exists, scalar, Kind, Met};

/// Binds a subquery form of `bind_plain`.
pub(super) fn bind_subquery(binder: &mut Binder, expr: &ast::Expr) -> SqlResult<Expr> {
    use ast::Expr as A;
    // (the subquery, what its value is, whether the answer is negated: NOT IN)
    let (query, kind, negated) = match expr {
        A::Subquery(query) => (query, Kind::Scalar, false),
        A::Exists { subquery, negated } => (subquery, Kind::Exists { negated: *negated }, false),
        A::InSubquery {
            expr: left,
            subquery,
            negated,
        } => (
            subquery,
            quantified(binder, left, CompareOp::Eq, false)?,
            *negated,
        ),
        A::AnyOp {
            left,
            compare_op: op,
            right,
            ..
        }
        | A::AllOp {
            left,
            compare_op: op,
            right,
        } => {
            let (A::Subquery(query), Some(op)) = (right.as_ref(), compare_op(op)) else {
                return Err(SqlError::not_supported(expr));
            };
            let all = matches!(expr, A::AllOp { .. });
            (query, quantified(binder, left, op, all)?, false)
        }
        _ => unreachable!("bind_plain passes subqueries alone"),
    };
    let bound = match binder.subquery(query, expr)? {
        Met::Rows { names, rows, .. } => answered(kind, names.len(), &rows)?,
        Met::Correlated(error) => binder.correlated(query, kind, error)?,
        Met::Wanted(error) => return Err(error),
    };
    Ok(if negated {
        Expr::Not(Box::new(bound))
    } else {
        bound
    })
}

/// `left op ANY|ALL (...)`: `left` bound, and the collation its comparisons take (the
/// subquery's values count as literals).
fn quantified(binder: &mut Binder, left: &ast::Expr, op: CompareOp, all: bool) -> SqlResult<Kind> {
    let left = Box::new(bind(binder, left)?);
    let collation = derive_of(binder, &left)?
        .combine(Derivation::LITERAL)?
        .collation;
    Ok(Kind::Quantified {
        left: *binder.under(left, collation),
        op,
        all,
        collation,
    })
}

/// A subquery that ran alone, by its answer: `rows` of `columns` columns.
fn answered(kind: Kind, columns: usize, rows: &[Vec<Value>]) -> SqlResult<Expr> {
    kind.check_columns(columns)?;
    Ok(match kind {
        Kind::Scalar => Expr::Literal(scalar(rows)?),
        Kind::Exists { negated } => Expr::Literal(exists(rows, negated)),
        Kind::Quantified {
            left,
            op,
            all,
            collation,
        } => {
            let values = rows.iter().filter_map(|row| row.first().cloned()).collect();
            compared_with_each(left, op, all, collation, values)
        }
    })
}

/// `left op ANY|ALL (values)` over known values: `= ANY` an IN list (which a key or an
/// index can answer), `<> ALL` a NOT IN list; other comparisons one each, joined by OR
/// (ANY) or AND (ALL) in a balanced tree (so thousands of values do not nest deeply).
fn compared_with_each(
    left: Expr,
    op: CompareOp,
    all: bool,
    collation: Collation,
    values: Vec<Value>,
) -> Expr {
    if values.is_empty() {
        // Nothing is IN an empty set, not even NULL; everything is ALL of it.
        return Expr::Literal(Value::Int(i64::from(all)));
    }
    match (op, all) {
        (CompareOp::Eq, false) | (CompareOp::NotEq, true) => {
            return Expr::InList {
                expr: Box::new(left),
                list: values.into_iter().map(Expr::Literal).collect(),
                negated: all,
                collation,
            }
        }
        _ => {}
    }
    let comparisons: Vec<Expr> = values
        .into_iter()
        .map(|v| {
            let right = Box::new(Expr::Literal(v));
            Expr::Compare(op, Box::new(left.clone()), right, collation)
        })
        .collect();
    balanced(comparisons, &|a, b| {
        let (a, b) = (Box::new(a), Box::new(b));
        if all {
            Expr::And(a, b)
        } else {
            Expr::Or(a, b)
        }
    })
}

/// `exprs` joined by `join` into a tree of depth log2 of their count.
fn balanced(mut exprs: Vec<Expr>, join: &dyn Fn(Expr, Expr) -> Expr) -> Expr {
    if exprs.len() == 1 {
        return exprs.remove(0);
    }
    let right = exprs.split_off(exprs.len() / 2);
    join(balanced(exprs, join), balanced(right, join))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{eval, EvalContext};
    use crate::subquery::quantified;

    const OPS: [CompareOp; 7] = [
        CompareOp::Eq,
        CompareOp::NotEq,
        CompareOp::Lt,
        CompareOp::LtEq,
        CompareOp::Gt,
        CompareOp::GtEq,
        CompareOp::NullSafeEq,
    ];

    fn int(n: i64) -> Value {
        Value::Int(n)
    }

    #[test]
    fn any_and_all_follow_three_valued_logic() {
        let c = Collation::default();
        let (eq, lt) = (CompareOp::Eq, CompareOp::Lt);
        let none: [Value; 0] = [];
        // Of no values: ANY is false, ALL true, whatever the left side (NULL too).
        assert_eq!(quantified(&Value::Null, eq, false, c, none.iter()), int(0));
        assert_eq!(quantified(&Value::Null, eq, true, c, none.iter()), int(1));
        // A NULL among the values: a miss is unknown, a hit still holds.
        let with_null = [int(1), Value::Null];
        assert_eq!(quantified(&int(1), eq, false, c, with_null.iter()), int(1));
        assert_eq!(
            quantified(&int(2), eq, false, c, with_null.iter()),
            Value::Null
        );
        // ALL fails on one failing comparison even beside a NULL.
        assert_eq!(quantified(&int(5), lt, true, c, with_null.iter()), int(0));
        assert_eq!(
            quantified(&int(0), lt, true, c, with_null.iter()),
            Value::Null
        );
        assert_eq!(quantified(&int(0), lt, true, c, [int(1)].iter()), int(1));
    }

    /// The literals an uncorrelated ANY/ALL binds to answer as the correlated evaluation
    /// does, for every comparison, left side and set of values from {1, 2, 3, NULL}.
    #[test]
    fn answered_any_and_all_agree_with_the_per_row_evaluation() {
        let ctx = EvalContext {
            params: &[],
            aggregates: &[],
            database: None,
            user: "",
            connection_id: 0,
            last_insert_id: 0,
            found_rows: 0,
            variable: &|_| None,
            user_variables: None,
            process: None,
        };
        let candidates = [int(1), int(2), int(3), Value::Null];
        let collation = Collation::default();
        for op in OPS {
            for all in [false, true] {
                for left in &candidates {
                    for subset in 0..16u32 {
                        let values: Vec<Value> = (candidates.iter().enumerate())
                            .filter(|(i, _)| subset & (1 << i) != 0)
                            .map(|(_, v)| v.clone())
                            .collect();
                        let expected = quantified(left, op, all, collation, values.iter());
                        let bound = compared_with_each(
                            Expr::Literal(left.clone()),
                            op,
                            all,
                            collation,
                            values.clone(),
                        );
                        let got = eval(&bound, &[], &ctx).expect("evaluates");
                        assert_eq!(got, expected, "{left:?} {op:?} all={all} {values:?}");
                    }
                }
            }
        }
    }
}
