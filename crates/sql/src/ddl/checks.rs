//! CHECK constraints, enforced as MySQL 8 enforces them: a row an INSERT, REPLACE, UPDATE
//! or ON DUPLICATE KEY UPDATE writes (after its BEFORE triggers) must not make an enforced
//! constraint's expression FALSE (TRUE and NULL pass), else the statement fails with
//! 3819. Column-level checks (`a INT CHECK (a > 0)`) are table constraints too. Unnamed
//! ones are called `<table>_chk_<n>`.
//!
//! Kept as SQL text in the table's metadata (`TableExtras::checks`) and bound when a front
//! end opens the table (`SqlTable::checks`), like computed defaults.

use serde::{Deserialize, Serialize};
use sqlparser::ast;

use kista_client::schema::TableSchema;
use kista_client::types::Value;

use crate::error::{SqlError, SqlResult};
use crate::expr::{eval, EvalContext, Expr};
use crate::table_metadata::TableExtras;

/// A CHECK constraint as the table's definition keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckDef {
    pub name: String,
    /// The expression, as SHOW CREATE TABLE prints it.
    pub sql: String,
    /// `NOT ENFORCED` constraints are kept and shown, never evaluated.
    pub enforced: bool,
}

/// The longest constraint name (MySQL's identifier limit).
const CHECK_NAME_CHARS_MAX: usize = 64;

/// A declared `[CONSTRAINT name] CHECK (expr) [[NOT] ENFORCED]` of a table of `schema`,
/// named `<table>_chk_<n>` when unnamed (the first n no check of `existing` has). Its
/// expression must bind over the table's columns.
pub(super) fn declared(
    name: Option<&ast::Ident>,
    expr: &ast::Expr,
    enforced: Option<bool>,
    (schema, table_name): (&TableSchema, &str),
    existing: &[CheckDef],
) -> SqlResult<CheckDef> {
    let name = match name {
        Some(name) => name.value.clone(),
        None => (1..)
            .map(|n| format!("{table_name}_chk_{n}"))
            .find(|candidate| {
                !existing
                    .iter()
                    .any(|c| c.name.eq_ignore_ascii_case(candidate))
            })
            .unwrap_or_default(),
    };
    if existing.iter().any(|c| c.name.eq_ignore_ascii_case(&name)) {
        return Err(SqlError::new(
            3822,
            "HY000",
            format!("Duplicate check constraint name '{name}'."),
        ));
    }
    if name.chars().count() > CHECK_NAME_CHARS_MAX {
        return Err(SqlError::new(
            1059,
            "42000",
            format!("Identifier name '{name}' is too long"),
        ));
    }
    let sql = expr.to_string();
    bind(&sql, schema, &name)?;
    Ok(CheckDef {
        name,
        sql,
        enforced: enforced.unwrap_or(true),
    })
}

/// A check's expression bound over a row of `schema` (an unknown column: 3820).
fn bind(sql: &str, schema: &TableSchema, name: &str) -> SqlResult<Expr> {
    super::defaults::bind_over_row(sql, schema, "CHECK").map_err(|error| match error.code {
        1054 => SqlError::new(
            3820,
            "HY000",
            format!(
                "Check constraint '{name}' refers to non-existing column: {}",
                error.message
            ),
        ),
        _ => error,
    })
}

/// A table's enforced checks, bound.
#[derive(Clone, Debug, Default)]
pub struct BoundChecks(Vec<(String, Expr)>);

impl BoundChecks {
    /// Those of a table of `schema` with `extras`.
    pub fn of(schema: &TableSchema, extras: &TableExtras) -> SqlResult<Self> {
        (extras.checks.iter())
            .filter(|check| check.enforced)
            .map(|check| Ok((check.name.clone(), bind(&check.sql, schema, &check.name)?)))
            .collect::<SqlResult<_>>()
            .map(BoundChecks)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Error 3819 unless every check holds for `row` (a whole row of the table).
    pub fn verify(&self, row: &[Value], ctx: &EvalContext) -> SqlResult<()> {
        for (name, check) in &self.0 {
            if crate::value::truth(&eval(check, row, ctx)?) == Some(false) {
                return Err(SqlError::new(
                    3819,
                    "HY000",
                    format!("Check constraint '{name}' is violated."),
                ));
            }
        }
        Ok(())
    }
}
