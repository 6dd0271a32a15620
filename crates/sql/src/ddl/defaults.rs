//! Column defaults computed per row: `DEFAULT CURRENT_TIMESTAMP[(fsp)]` (and its synonyms
//! NOW(), LOCALTIME, LOCALTIMESTAMP) of a DATETIME or TIMESTAMP column, an expression
//! default `DEFAULT (expr)` of any column, and `ON UPDATE CURRENT_TIMESTAMP[(fsp)]`,
//! which sets the column whenever an UPDATE changes another of the row's values.
//!
//! They are kept as SQL text in the table's metadata (`ColumnExtras::default_sql`,
//! `on_update_sql`), in the form SHOW CREATE TABLE prints, and bound again when a front
//! end opens the table ([`ComputedDefaults::of`]). A constant default stays in the storage
//! schema as before.

use sqlparser::ast;
use sqlparser::parser::Parser;

use kista_client::schema::TableSchema;
use kista_client::types::ColumnType;

use crate::dialect::KistaDialect;
use crate::error::{SqlError, SqlResult};
use crate::expr::{self, Binder, Expr, ScopeColumn};
use crate::table_metadata::TableExtras;

/// The names MySQL takes for the current timestamp as a column's default or ON UPDATE.
const CURRENT_TIMESTAMP_NAMES: [&str; 4] =
    ["current_timestamp", "now", "localtime", "localtimestamp"];

/// A DEFAULT that is computed per row, as SQL text (`CURRENT_TIMESTAMP(3)`, `(1 + 1)`);
/// `None` for a constant default (the caller fits it to the column).
/// A column of `fraction_digits` takes only CURRENT_TIMESTAMP of as many (MySQL's 1067).
pub(super) fn computed_default(
    expr: &ast::Expr,
    column: &str,
    (column_type, fraction_digits): (ColumnType, u8),
) -> SqlResult<Option<String>> {
    if let Some((now, digits)) = current_timestamp(expr)? {
        if !is_timestamp(column_type) || digits != fraction_digits {
            return Err(invalid_default(column));
        }
        return Ok(Some(now));
    }
    let ast::Expr::Nested(inner) = expr else {
        return Ok(None);
    };
    // Bound for its errors once the table's columns are known (`check_computed`).
    Ok(Some(format!("({inner})")))
}

/// Binds every computed default of a table being declared or altered (`schema`,
/// `extras`), for the errors MySQL gives (an unknown function 1305, a column the table
/// lacks 1054): a definition kept must bind whenever a front end opens the table.
pub(super) fn check_computed(schema: &TableSchema, extras: &TableExtras) -> SqlResult<()> {
    ComputedDefaults::of(schema, extras).map(drop)
}

/// `ON UPDATE CURRENT_TIMESTAMP[(fsp)]` as SQL text; error 1294 for anything else, a
/// column of another type or of other fractional digits.
pub(super) fn on_update(
    expr: &ast::Expr,
    column: &str,
    (column_type, fraction_digits): (ColumnType, u8),
) -> SqlResult<String> {
    match current_timestamp(expr)? {
        Some((now, digits)) if is_timestamp(column_type) && digits == fraction_digits => Ok(now),
        _ => Err(SqlError::new(
            1294,
            "HY000",
            format!("Invalid ON UPDATE clause for '{column}' column"),
        )),
    }
}

/// `CURRENT_TIMESTAMP[(fsp)]` (or a synonym) in its canonical text, and its digits of a
/// second; `None` for another expression.
fn current_timestamp(expr: &ast::Expr) -> SqlResult<Option<(String, u8)>> {
    let ast::Expr::Function(function) = expr else {
        return Ok(None);
    };
    let name = function.name.to_string().to_lowercase();
    if !CURRENT_TIMESTAMP_NAMES.contains(&name.as_str()) {
        return Ok(None);
    }
    let digits = match &function.args {
        ast::FunctionArguments::None => None,
        ast::FunctionArguments::List(list) => match list.args.as_slice() {
            [] => None,
            [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(digits))] => {
                Some(digits.to_string())
            }
            _ => return Err(SqlError::not_supported(format!("DEFAULT {expr}"))),
        },
        ast::FunctionArguments::Subquery(_) => {
            return Err(SqlError::not_supported(format!("DEFAULT {expr}")))
        }
    };
    Ok(Some(match digits {
        Some(text) if text.parse::<u8>().is_ok_and(|d| d <= 6) => {
            let digits = text.parse::<u8>().unwrap_or_default();
            (format!("CURRENT_TIMESTAMP({digits})"), digits)
        }
        Some(digits) => {
            return Err(SqlError::new(
                1426,
                "42000",
                format!("Too big precision {digits} specified for 'now'. Maximum is 6."),
            ))
        }
        None => ("CURRENT_TIMESTAMP".to_string(), 0),
    }))
}

fn is_timestamp(column_type: ColumnType) -> bool {
    matches!(column_type, ColumnType::DateTime | ColumnType::Timestamp)
}

fn invalid_default(column: &str) -> SqlError {
    SqlError::new(
        1067,
        "42000",
        format!("Invalid default value for '{column}'"),
    )
}

/// A computed default's or ON UPDATE's SQL text bound as an expression over a row of
/// `schema` (an expression default may read the row's other columns, as in MySQL).
pub(super) fn bind(sql: &str, schema: &TableSchema) -> SqlResult<Expr> {
    bind_over_row(sql, schema, "DEFAULT")
}

/// An expression kept as SQL text in a table's definition (a default, a CHECK) bound over
/// a row of `schema`; `place` names the clause in errors.
pub(super) fn bind_over_row(
    sql: &str,
    schema: &TableSchema,
    place: &'static str,
) -> SqlResult<Expr> {
    let parsed = Parser::new(&KistaDialect)
        .try_with_sql(sql)
        .and_then(|mut parser| parser.parse_expr())
        .map_err(|error| SqlError::not_supported(format!("{place} {sql}: {error}")))?;
    let columns: Vec<ScopeColumn> = (schema.columns.iter())
        .map(|column| ScopeColumn::of("", column))
        .collect();
    let mut binder = Binder::over(&columns, &[], place);
    expr::bind(&mut binder, &parsed)
}

/// Whether a bound default reads a column of its row.
pub(super) fn reads_columns(bound: &Expr) -> bool {
    let mut reads = false;
    bound.visit(&mut |e| reads |= matches!(e, Expr::Column(_)));
    reads
}

/// A table's computed defaults and ON UPDATE columns, bound, by column position.
#[derive(Clone, Debug, Default)]
pub struct ComputedDefaults {
    pub defaults: Vec<(usize, Expr)>,
    pub on_update: Vec<(usize, Expr)>,
}

impl ComputedDefaults {
    /// Those of a table of `schema` with `extras`.
    pub fn of(schema: &TableSchema, extras: &TableExtras) -> SqlResult<Self> {
        let mut computed = ComputedDefaults::default();
        for (position, column) in extras.columns.iter().enumerate().take(schema.columns.len()) {
            if !column.default_sql.is_empty() {
                computed
                    .defaults
                    .push((position, bind(&column.default_sql, schema)?));
            }
            if !column.on_update_sql.is_empty() {
                computed
                    .on_update
                    .push((position, bind(&column.on_update_sql, schema)?));
            }
        }
        Ok(computed)
    }

    /// Column `column`'s computed default, if it has one.
    pub fn default_of(&self, column: usize) -> Option<&Expr> {
        (self.defaults.iter())
            .find(|(c, _)| *c == column)
            .map(|(_, e)| e)
    }
}
