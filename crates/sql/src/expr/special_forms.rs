//! Functions sqlparser parses as syntax of their own, bound to calls of the function
//! registry: `d + INTERVAL n unit` and `d - INTERVAL ...` (DATE_ADD, DATE_SUB), `EXTRACT(unit
//! FROM d)`, `TRIM([BOTH|LEADING|TRAILING] [x] FROM s)`, `POSITION(a IN b)`, `SUBSTRING(s
//! FROM n FOR m)`, `FLOOR(x)` and `CEIL(x)`.
//! And `x COLLATE name`, the value of `x` with an explicit collation.

use kista_client::types::{Collation, Value};
use sqlparser::ast::{self, BinaryOperator, CeilFloorKind, DateTimeField, TrimWhereField};

use super::{bind, Binder, Expr};
use crate::error::{SqlError, SqlResult};
use crate::functions::{self, interval_unit};

/// `expr` bound as a function call if it is one of these forms (`None`: it is not).
pub(super) fn bind_special_form(binder: &mut Binder, expr: &ast::Expr) -> Option<SqlResult<Expr>> {
    use ast::Expr as A;
    let no_scale = |field: &CeilFloorKind| {
        matches!(
            field,
            CeilFloorKind::DateTimeField(DateTimeField::NoDateTime)
        )
    };
    Some(match expr {
        A::Collate { expr, collation } => {
            let collation = collation_named(&collation.to_string());
            let bound = collation.and_then(|c| Ok(Expr::Collate(Box::new(bind(binder, expr)?), c)));
            return Some(bound);
        }
        A::CompoundFieldAccess { root, access_chain } => {
            let collated = qualified_collate(root, access_chain)?;
            return Some(bind(binder, &collated));
        }
        A::BinaryOp { left, op, right } => {
            let subtract = match op {
                BinaryOperator::Plus => false,
                BinaryOperator::Minus => true,
                _ => return None,
            };
            match (left.as_ref(), right.as_ref()) {
                (date, A::Interval(interval)) => date_shift(binder, date, interval, subtract),
                (A::Interval(interval), date) if !subtract => {
                    date_shift(binder, date, interval, false)
                }
                _ => return None,
            }
        }
        A::Extract { field, expr, .. } => extract(binder, field, expr),
        A::Trim {
            expr,
            trim_where,
            trim_what,
            trim_characters: None,
        } => trim(binder, expr, trim_where.as_ref(), trim_what.as_deref()),
        A::Position { expr, r#in } => call(binder, "locate", &[expr, r#in]),
        A::Substring {
            expr,
            substring_from: Some(from),
            substring_for,
            ..
        } => match substring_for {
            Some(length) => call(binder, "substring", &[expr, from, length]),
            None => call(binder, "substring", &[expr, from]),
        },
        A::Floor { expr, field } if no_scale(field) => call(binder, "floor", &[expr]),
        A::Ceil { expr, field } if no_scale(field) => call(binder, "ceil", &[expr]),
        _ => return None,
    })
}

/// The collation COLLATE or a column definition names: error 1273 for one Kista lacks.
pub(crate) fn collation_named(name: &str) -> SqlResult<Collation> {
    let name = name.trim_matches(['`', '\'', '"']);
    Collation::resolve(name)
        .ok_or_else(|| SqlError::new(1273, "HY000", format!("Unknown collation: '{name}'")))
}

/// `t.c COLLATE x` as written, where the parser read `t.(c COLLATE x)` (a field access
/// whose last step is a COLLATE of a name); `None` for any other field access.
fn qualified_collate(root: &ast::Expr, access_chain: &[ast::AccessExpr]) -> Option<ast::Expr> {
    let ast::Expr::Identifier(first) = root else {
        return None;
    };
    let (ast::AccessExpr::Dot(ast::Expr::Collate { expr, collation }), steps) =
        access_chain.split_last()?
    else {
        return None;
    };
    let ast::Expr::Identifier(last) = expr.as_ref() else {
        return None;
    };
    let mut parts = vec![first.clone()];
    for step in steps {
        match step {
            ast::AccessExpr::Dot(ast::Expr::Identifier(part)) => parts.push(part.clone()),
            _ => return None,
        }
    }
    parts.push(last.clone());
    Some(ast::Expr::Collate {
        expr: Box::new(ast::Expr::CompoundIdentifier(parts)),
        collation: collation.clone(),
    })
}

/// A call of the registry's function `name` on `args`.
fn call(binder: &mut Binder, name: &str, args: &[&ast::Expr]) -> SqlResult<Expr> {
    let function = functions::lookup(name, args.len())?;
    let args = args
        .iter()
        .map(|arg| bind(binder, arg))
        .collect::<SqlResult<Vec<_>>>()?;
    super::bind::call_on(binder, function, args)
}

/// `date ± INTERVAL amount unit`: DATE_ADD or DATE_SUB of the date, the amount and the
/// unit's name.
fn date_shift(
    binder: &mut Binder,
    date: &ast::Expr,
    interval: &ast::Interval,
    subtract: bool,
) -> SqlResult<Expr> {
    let name = if subtract {
        functions::DATE_SUB
    } else {
        functions::DATE_ADD
    };
    let mut args = vec![bind(binder, date)?];
    args.extend(interval_args(binder, interval)?);
    Ok(Expr::Call(functions::lookup(name, args.len())?, args))
}

/// An INTERVAL as two arguments: its amount and its unit's name.
pub(super) fn interval_args(binder: &mut Binder, interval: &ast::Interval) -> SqlResult<[Expr; 2]> {
    // `HOUR TO MINUTE` is MySQL's HOUR_MINUTE (see dialect::rewrite_interval_units).
    let leading = interval.leading_field.as_ref().and_then(unit_name);
    let unit = match (leading, interval.last_field.as_ref().map(unit_name)) {
        (Some(leading), None) => Some(leading),
        (Some(leading), Some(Some(last))) => Some(format!("{leading}_{last}")),
        _ => None,
    };
    let unit = unit
        .filter(|name| interval_unit(name).is_some())
        .ok_or_else(|| SqlError::not_supported(format!("INTERVAL {interval}")))?;
    Ok([
        bind(binder, &interval.value)?,
        Expr::Literal(Value::Bytes(unit.into_bytes())),
    ])
}

/// The MySQL name of a unit as sqlparser holds it (`HOUR_MINUTE` comes as a custom name).
pub(super) fn unit_name(field: &DateTimeField) -> Option<String> {
    use DateTimeField as F;
    Some(
        match field {
            F::Year | F::Years => "YEAR",
            F::Quarter => "QUARTER",
            F::Month | F::Months => "MONTH",
            F::Week(None) | F::Weeks => "WEEK",
            F::Day | F::Days => "DAY",
            F::Hour | F::Hours => "HOUR",
            F::Minute | F::Minutes => "MINUTE",
            F::Second | F::Seconds => "SECOND",
            F::Microsecond | F::Microseconds => "MICROSECOND",
            F::Custom(name) => return Some(name.value.to_ascii_uppercase()),
            _ => return None,
        }
        .to_string(),
    )
}

/// EXTRACT(unit FROM d): the function of that part (YEAR(d), ...); compound units are
/// refused.
fn extract(binder: &mut Binder, field: &DateTimeField, date: &ast::Expr) -> SqlResult<Expr> {
    let name = unit_name(field)
        .filter(|name| !name.contains('_') && name != "WEEK")
        .ok_or_else(|| SqlError::not_supported(format!("EXTRACT({field} FROM ...)")))?;
    call(binder, &name, &[date])
}

/// TRIM's forms: spaces or `what`, off both ends, the leading or the trailing one.
fn trim(
    binder: &mut Binder,
    s: &ast::Expr,
    side: Option<&TrimWhereField>,
    what: Option<&ast::Expr>,
) -> SqlResult<Expr> {
    let name = match side {
        None | Some(TrimWhereField::Both) => "trim",
        Some(TrimWhereField::Leading) => functions::TRIM_LEADING,
        Some(TrimWhereField::Trailing) => functions::TRIM_TRAILING,
    };
    // (sqlparser takes LEADING and TRAILING only with a string to remove.)
    match what {
        Some(what) => call(binder, name, &[s, what]),
        None => call(binder, name, &[s]),
    }
}
