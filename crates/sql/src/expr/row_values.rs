//! Row values compared whole, as ORMs' reflection queries write them: `(a, b) = (x, y)`,
//! `(a, b) <> (x, y)`, `(a, b) <=> (x, y)` and `(a, b) [NOT] IN ((x, y), ...)`, rewritten
//! into the column comparisons they mean (`a = x AND b = y`, ORed over the list) before
//! binding, so NULLs give SQL's three-valued answer as MySQL's row comparisons do.

use sqlparser::ast::{self, BinaryOperator, UnaryOperator};

use crate::error::{SqlError, SqlResult};

/// The comparisons `expr` means when it compares row values (`None`: it does not).
pub(super) fn rewritten(expr: &ast::Expr) -> SqlResult<Option<ast::Expr>> {
    use ast::Expr as A;
    Ok(Some(match expr {
        A::BinaryOp { left, op, right } => {
            let (A::Tuple(left), A::Tuple(right)) = (&**left, &**right) else {
                return Ok(None);
            };
            match op {
                BinaryOperator::Eq => equal(left, right, BinaryOperator::Eq)?,
                BinaryOperator::Spaceship => equal(left, right, BinaryOperator::Spaceship)?,
                BinaryOperator::NotEq => not(equal(left, right, BinaryOperator::Eq)?),
                _ => return Err(SqlError::not_supported(format!("row comparison {op}"))),
            }
        }
        A::InList {
            expr: inner,
            list,
            negated,
        } => {
            let A::Tuple(row) = &**inner else {
                return Ok(None);
            };
            let mut any: Option<ast::Expr> = None;
            for item in list {
                let A::Tuple(candidate) = item else {
                    return Err(operand_columns(row.len()));
                };
                let equal = equal(row, candidate, BinaryOperator::Eq)?;
                any = Some(match any {
                    None => equal,
                    Some(before) => binary(before, BinaryOperator::Or, equal),
                });
            }
            let any = any.ok_or_else(|| SqlError::syntax("IN ()"))?;
            if *negated {
                not(any)
            } else {
                any
            }
        }
        _ => return Ok(None),
    }))
}

/// `l1 op r1 AND l2 op r2 ...`; error 1241 when the rows differ in length.
fn equal(left: &[ast::Expr], right: &[ast::Expr], op: BinaryOperator) -> SqlResult<ast::Expr> {
    if left.len() != right.len() || left.is_empty() {
        return Err(operand_columns(left.len()));
    }
    let mut pairs = left.iter().zip(right).map(|(l, r)| {
        let compared = binary(l.clone(), op.clone(), r.clone());
        ast::Expr::Nested(Box::new(compared))
    });
    let first = pairs.next().expect("rows are not empty");
    Ok(ast::Expr::Nested(Box::new(
        pairs.fold(first, |all, next| binary(all, BinaryOperator::And, next)),
    )))
}

fn binary(left: ast::Expr, op: BinaryOperator, right: ast::Expr) -> ast::Expr {
    ast::Expr::BinaryOp {
        left: Box::new(left),
        op,
        right: Box::new(right),
    }
}

fn not(expr: ast::Expr) -> ast::Expr {
    ast::Expr::UnaryOp {
        op: UnaryOperator::Not,
        expr: Box::new(ast::Expr::Nested(Box::new(expr))),
    }
}

fn operand_columns(columns: usize) -> SqlError {
    SqlError::new(
        1241,
        "21000",
        format!("Operand should contain {columns} column(s)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(sql: &str) -> String {
        let parsed = crate::session::parse(&format!("SELECT {sql}")).unwrap();
        let ast::Statement::Query(query) = &parsed.statement else {
            panic!("a query")
        };
        let ast::SetExpr::Select(select) = query.body.as_ref() else {
            panic!("a select")
        };
        let ast::SelectItem::UnnamedExpr(expr) = &select.projection[0] else {
            panic!("an expression")
        };
        rewritten(expr)
            .unwrap()
            .map_or("none".into(), |e| e.to_string())
    }

    #[test]
    fn row_values_become_the_column_comparisons_they_mean() {
        assert_eq!(rewrite("(a, b) = (1, 2)"), "((a = 1) AND (b = 2))");
        assert_eq!(rewrite("(a, b) <> (1, 2)"), "NOT (((a = 1) AND (b = 2)))");
        assert_eq!(
            rewrite("(a, b) IN ((1, 2), (3, 4))"),
            "((a = 1) AND (b = 2)) OR ((a = 3) AND (b = 4))"
        );
        assert_eq!(rewrite("a IN (1, 2)"), "none");
        let parsed = crate::session::parse("SELECT (a, b) = (1, 2, 3)").unwrap();
        let ast::Statement::Query(query) = &parsed.statement else {
            panic!()
        };
        let ast::SetExpr::Select(select) = query.body.as_ref() else {
            panic!()
        };
        let ast::SelectItem::UnnamedExpr(expr) = &select.projection[0] else {
            panic!()
        };
        assert_eq!(rewritten(expr).unwrap_err().code, 1241);
    }
}
