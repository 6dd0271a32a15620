//! From the parser's expressions to [`Expr`]: names to row positions, `?` to parameter
//! numbers (by position in the text), aggregate calls to slots.

use sqlparser::ast::{self, BinaryOperator, FunctionArg, FunctionArgExpr, UnaryOperator};
use sqlparser::tokenizer::Location;

use kista_client::schema::Column;
use kista_client::types::{Collation, ColumnType, Decimal, Value};

use super::{special_forms, ArithmeticOp, CompareOp, Derivation, Expr};
use crate::error::{SqlError, SqlResult};
use crate::functions;
use crate::subquery::{Correlation, Kind, Met, Subqueries};

/// A column the expression may name: `table.name` or just `name`.
#[derive(Clone, Debug)]
pub struct ScopeColumn {
    /// The table's alias, or its name (lower case).
    pub table: String,
    pub name: String,
    /// Reached only as `table.name`: the second table's column of a `USING` or `NATURAL`
    /// join, for which the first table's stands when unqualified (MySQL's coalescing).
    pub qualified_only: bool,
    /// The collation its strings compare under; `None` when it holds no strings (or
    /// nothing says what it holds).
    pub collation: Option<Collation>,
}

impl ScopeColumn {
    pub fn new(table: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            table: table.into(),
            name: name.into(),
            qualified_only: false,
            collation: None,
        }
    }

    /// A table's column, qualified by `table`.
    pub fn of(table: impl Into<String>, column: &Column) -> Self {
        Self {
            collation: Derivation::of_column(column.column_type),
            ..Self::new(table, column.name.clone())
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggregateKind {
    CountRows,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    GroupConcat,
}

/// An aggregate the query computes per group.
#[derive(Clone, Debug, PartialEq)]
pub struct Aggregate {
    pub kind: AggregateKind,
    /// Its argument, over the input row (none for `COUNT(*)`).
    pub argument: Option<Expr>,
    pub distinct: bool,
    /// GROUP_CONCAT's separator and order; `None` for every other aggregate.
    pub concat: Option<GroupConcat>,
    /// The collation its string arguments compare under (MIN, MAX, DISTINCT).
    pub collation: Collation,
}

/// How GROUP_CONCAT joins its values: in the order of its ORDER BY (expressions over the
/// input row, each ascending or not, strings compared under the collation each derives),
/// with its SEPARATOR between them (`,` by default).
#[derive(Clone, Debug, PartialEq)]
pub struct GroupConcat {
    pub separator: Vec<u8>,
    pub order_by: Vec<(Expr, bool)>,
    pub order_collations: Vec<Collation>,
}

/// One output column of a query: its name and how to compute it from a (grouped) row.
pub struct OutputColumn {
    pub name: String,
    pub expr: Expr,
}

/// What names mean while binding one statement.
pub struct Binder<'a> {
    pub columns: &'a [ScopeColumn],
    /// The select list's columns, which a name in HAVING means before any table column
    /// (MySQL's rule; empty elsewhere).
    pub select_aliases: &'a [OutputColumn],
    /// Where each `?` of the statement's text is, in order.
    pub placeholders: &'a [Location],
    /// Aggregates found so far; `None` where aggregates are not allowed.
    pub aggregates: Option<&'a mut Vec<Aggregate>>,
    /// For "Unknown column 'x' in '...'".
    pub place: &'static str,
    /// In ON DUPLICATE KEY UPDATE: `VALUES(c)` is the row that was to be inserted, whose
    /// columns follow the existing row's from this position.
    pub inserted_row_at: Option<usize>,
    /// The statement's subqueries, where they may run (`subquery.rs`); `None`: refused.
    pub subqueries: Option<&'a Subqueries>,
    /// Where correlated subqueries bind (`subquery/correlated.rs`), and the query around
    /// this one; `None`: they are refused.
    pub(crate) correlation: Option<&'a Correlation<'a>>,
    /// How deep in the expression binding is ([`EXPRESSION_DEPTH_MAX`]).
    pub(crate) depth: usize,
}

/// How deeply a bound expression may nest: every pass over an expression (binding,
/// typing, evaluation, pushdown) recurses once per level, and a connection's stack
/// (`server::CONNECTION_STACK_BYTES`) holds several times this many levels of the
/// deepest of them. A chain `a + b + c + ...` is one level per operator.
pub const EXPRESSION_DEPTH_MAX: usize = 1000;

impl<'a> Binder<'a> {
    /// The collation `left` and `right` compare under (error 1267 when they cannot).
    pub fn comparison(&self, left: &Expr, right: &Expr) -> SqlResult<Collation> {
        super::comparison(left, right, &|position| self.column_collation(position))
    }

    /// `expr` as a comparison under `collation` reads it: a column whose own collation
    /// differs is wrapped in COLLATE, so the planner never answers the comparison with the
    /// column's index or a data node's filter (which compare under the column's collation).
    pub fn under(&self, expr: Box<Expr>, collation: Collation) -> Box<Expr> {
        match *expr {
            Expr::Column(position)
                if self
                    .column_collation(position)
                    .is_some_and(|own| own != collation) =>
            {
                Box::new(Expr::Collate(expr, collation))
            }
            _ => expr,
        }
    }

    /// The collation of the row's column at `position`, if it holds strings.
    pub fn column_collation(&self, position: usize) -> Option<Collation> {
        self.columns.get(position).and_then(|c| c.collation)
    }

    /// A binder for expressions that may name no column (LIMIT, VALUES, SET, DEFAULT).
    pub fn without_columns(placeholders: &'a [Location], place: &'static str) -> Self {
        Self::over(&[], placeholders, place)
    }

    /// A binder over `columns` in `place` (a clause, for error messages): no aggregates,
    /// aliases, inserted row or subqueries unless a field says otherwise.
    pub fn over(
        columns: &'a [ScopeColumn],
        placeholders: &'a [Location],
        place: &'static str,
    ) -> Self {
        Binder {
            columns,
            select_aliases: &[],
            placeholders,
            aggregates: None,
            place,
            inserted_row_at: None,
            subqueries: None,
            correlation: None,
            depth: 0,
        }
    }

    /// What the statement knows of `query`, a subquery of `expr`.
    pub(super) fn subquery(&self, query: &ast::Query, expr: &ast::Expr) -> SqlResult<Met> {
        match self.subqueries.and_then(|subqueries| subqueries.met(query)) {
            None => Err(SqlError::not_supported(expr)),
            Some(Met::Wanted(error)) => Err(error),
            Some(met) => Ok(met),
        }
    }

    /// Binds `query`, a subquery naming columns of this scope, as a correlated one of
    /// `kind` (`error`: why it could not run alone).
    pub(super) fn correlated(
        &self,
        query: &ast::Query,
        kind: Kind,
        error: SqlError,
    ) -> SqlResult<Expr> {
        match self.correlation {
            Some(correlation) => correlation.bind(self.columns, self.placeholders, query, kind),
            None => Err(SqlError::not_supported(format!(
                "correlated subqueries in the {} ({}, perhaps a column of the query around it)",
                self.place, error.message
            ))),
        }
    }

    fn column(&self, table: Option<&str>, name: &str) -> SqlResult<Expr> {
        if table.is_none() {
            let alias = self
                .select_aliases
                .iter()
                .find(|o| o.name.eq_ignore_ascii_case(name));
            if let Some(alias) = alias {
                return Ok(alias.expr.clone());
            }
        }
        if let Some(position) = find_column(self.columns, table, name, self.place)? {
            return Ok(Expr::Column(position));
        }
        let outer = self.correlation.and_then(|c| c.outer);
        if let Some(outer_value) = outer
            .map(|outer| outer.resolve(table, name, self.place))
            .transpose()?
            .flatten()
        {
            return Ok(outer_value);
        }
        Err(SqlError::unknown_column(&shown(table, name), self.place))
    }
}

/// A column's name as an error message shows it: `table.name` or `name`.
fn shown(table: Option<&str>, name: &str) -> String {
    match table {
        Some(table) => format!("{table}.{name}"),
        None => name.to_string(),
    }
}

/// The position of `table.name` (or `name`) among `columns`; `None` when there is none,
/// error 1052 when there are several.
pub(crate) fn find_column(
    columns: &[ScopeColumn],
    table: Option<&str>,
    name: &str,
    place: &str,
) -> SqlResult<Option<usize>> {
    let mut found = columns.iter().enumerate().filter(|(_, c)| {
        c.name.eq_ignore_ascii_case(name)
            && table.map_or(!c.qualified_only, |t| c.table.eq_ignore_ascii_case(t))
            && !crate::ddl::is_hidden_column(&c.name)
    });
    match (found.next(), found.next()) {
        (Some((position, _)), None) => Ok(Some(position)),
        (Some(_), Some(_)) => Err(SqlError::new(
            1052,
            "23000",
            format!("Column '{}' in {place} is ambiguous", shown(table, name)),
        )),
        (None, _) => Ok(None),
    }
}

/// `x [NOT] IN (list)`, `x [NOT] BETWEEN low AND high` and `x [NOT] LIKE pattern`, each
/// compared under the collation its operands derive.
fn bind_list_range_or_pattern(binder: &mut Binder, expr: &ast::Expr) -> SqlResult<Expr> {
    use ast::Expr as A;
    let boxed = |binder: &mut Binder, e: &ast::Expr| bind(binder, e).map(Box::new);
    Ok(match expr {
        A::InList {
            expr: inner,
            list,
            negated,
        } => {
            let expr = boxed(binder, inner)?;
            let list: Vec<Expr> = list
                .iter()
                .map(|e| bind(binder, e))
                .collect::<SqlResult<_>>()?;
            let mut collation = derive_of(binder, &expr)?;
            for item in &list {
                collation = collation.combine(derive_of(binder, item)?)?;
            }
            let collation = collation.collation;
            Expr::InList {
                expr: binder.under(expr, collation),
                list: list
                    .into_iter()
                    .map(|e| *binder.under(Box::new(e), collation))
                    .collect(),
                negated: *negated,
                collation,
            }
        }
        A::Between {
            expr: inner,
            negated,
            low,
            high,
        } => {
            let (expr, low, high) = (
                boxed(binder, inner)?,
                boxed(binder, low)?,
                boxed(binder, high)?,
            );
            let collation = derive_of(binder, &expr)?
                .combine(derive_of(binder, &low)?)?
                .combine(derive_of(binder, &high)?)?
                .collation;
            Expr::Between {
                expr: binder.under(expr, collation),
                low: binder.under(low, collation),
                high: binder.under(high, collation),
                negated: *negated,
                collation,
            }
        }
        A::Like {
            negated,
            any: false,
            expr: inner,
            pattern,
            escape_char: None,
        } => {
            let (expr, pattern) = (boxed(binder, inner)?, boxed(binder, pattern)?);
            let collation = binder.comparison(&expr, &pattern)?;
            Expr::Like {
                expr: binder.under(expr, collation),
                pattern: binder.under(pattern, collation),
                negated: *negated,
                collation,
            }
        }
        _ => return Err(SqlError::not_supported(expr)),
    })
}

/// `expr`'s collation and its strength, over the binder's columns.
pub(super) fn derive_of(binder: &Binder, expr: &Expr) -> SqlResult<Derivation> {
    super::derive(expr, &|position| binder.column_collation(position))
}

/// `CASE [operand] WHEN ... THEN ... [ELSE ...] END` as nested `IF`s: the first WHEN that
/// holds (equals the operand, in the simple form) gives the result; none, the ELSE or NULL.
fn bind_case(
    binder: &mut Binder,
    operand: Option<&ast::Expr>,
    conditions: &[ast::CaseWhen],
    else_result: Option<&ast::Expr>,
) -> SqlResult<Expr> {
    let operand = operand.map(|o| bind(binder, o)).transpose()?;
    let mut result = match else_result {
        Some(e) => bind(binder, e)?,
        None => Expr::Literal(Value::Null),
    };
    for when in conditions.iter().rev() {
        let condition = bind(binder, &when.condition)?;
        let condition = match &operand {
            Some(operand) => {
                let collation = binder.comparison(operand, &condition)?;
                Expr::Compare(
                    CompareOp::Eq,
                    binder.under(Box::new(operand.clone()), collation),
                    binder.under(Box::new(condition), collation),
                    collation,
                )
            }
            None => condition,
        };
        let then = bind(binder, &when.result)?;
        result = Expr::Call(functions::named("if"), vec![condition, then, result]);
    }
    Ok(result)
}

/// Binds `expr` in `binder`'s scope.
pub fn bind(binder: &mut Binder, expr: &ast::Expr) -> SqlResult<Expr> {
    if binder.depth == EXPRESSION_DEPTH_MAX {
        return Err(SqlError::too_deep(EXPRESSION_DEPTH_MAX));
    }
    binder.depth += 1;
    let bound = bind_level(binder, expr);
    binder.depth -= 1;
    bound
}

fn bind_level(binder: &mut Binder, expr: &ast::Expr) -> SqlResult<Expr> {
    if let Some(columns) = super::row_values::rewritten(expr)? {
        return bind(binder, &columns);
    }
    match special_forms::bind_special_form(binder, expr) {
        Some(call) => call,
        None => bind_plain(binder, expr),
    }
}

/// A name: a column (`c`, `t.c`, `db.t.c`), a server variable (`@@x`, `@@session.x`), a
/// user variable (`@x`), or a double-quoted string that names no column.
fn bind_name(binder: &mut Binder, expr: &ast::Expr) -> SqlResult<Expr> {
    Ok(match expr {
        ast::Expr::Identifier(ident) => {
            if let Some(variable) = ident.value.strip_prefix("@@") {
                Expr::SystemVariable(variable.to_lowercase())
            } else if ident.value.starts_with('@') && ident.quote_style.is_none() {
                Expr::UserVariable(ident.value.to_lowercase())
            } else if ident.quote_style == Some('"') && binder.column(None, &ident.value).is_err() {
                // MySQL reads "text" as a string unless ANSI_QUOTES is on.
                Expr::Literal(Value::Bytes(ident.value.clone().into_bytes()))
            } else {
                binder.column(None, &ident.value)?
            }
        }
        ast::Expr::CompoundIdentifier(parts) => match parts.as_slice() {
            [scope, name] if scope.value.starts_with("@@") => {
                Expr::SystemVariable(name.value.to_lowercase())
            }
            [table, name] => binder.column(Some(&table.value), &name.value)?,
            [_database, table, name] => binder.column(Some(&table.value), &name.value)?,
            _ => return Err(SqlError::not_supported(expr)),
        },
        _ => unreachable!("bind_plain passes names alone"),
    })
}

/// Binds `expr` as its own syntax says (the special forms aside).
pub(super) fn bind_plain(binder: &mut Binder, expr: &ast::Expr) -> SqlResult<Expr> {
    use ast::Expr as A;
    let boxed = |binder: &mut Binder, e: &ast::Expr| bind(binder, e).map(Box::new);
    Ok(match expr {
        A::Identifier(_) | A::CompoundIdentifier(_) => bind_name(binder, expr)?,
        A::Value(value) => literal(binder, &value.value, value.span.start)?,
        A::Nested(inner) => bind(binder, inner)?,
        A::UnaryOp { op, expr: inner } => bind_unary(binder, expr, *op, inner)?,
        A::BinaryOp { left, op, right } => bind_binary(binder, left, op, right)?,
        A::IsNull(inner) => Expr::IsNull {
            expr: boxed(binder, inner)?,
            negated: false,
        },
        A::IsNotNull(inner) => Expr::IsNull {
            expr: boxed(binder, inner)?,
            negated: true,
        },
        A::IsTrue(inner) | A::IsNotTrue(inner) | A::IsFalse(inner) | A::IsNotFalse(inner) => {
            Expr::IsTruth {
                expr: boxed(binder, inner)?,
                truth: matches!(expr, A::IsTrue(_) | A::IsNotTrue(_)),
                negated: matches!(expr, A::IsNotTrue(_) | A::IsNotFalse(_)),
            }
        }
        A::InList { .. }
        | A::Between { .. }
        | A::Like {
            any: false,
            escape_char: None,
            ..
        } => bind_list_range_or_pattern(binder, expr)?,
        A::InSubquery { .. }
        | A::Subquery(_)
        | A::Exists { .. }
        | A::AnyOp { .. }
        | A::AllOp { .. } => super::subquery::bind_subquery(binder, expr)?,
        A::Case {
            operand,
            conditions,
            else_result,
            ..
        } => bind_case(
            binder,
            operand.as_deref(),
            conditions,
            else_result.as_deref(),
        )?,
        A::Function(function) => bind_function(binder, function)?,
        A::Prefixed { prefix, value } if prefix.value.starts_with('_') => {
            bind_introduced(binder, &prefix.value, value)?
        }
        // `BINARY 'x'` (as in `LIKE BINARY`), `DATE '2020-01-01'`, `TIMESTAMP '...'`.
        A::TypedString(typed) => {
            let text = literal(binder, &typed.value.value, typed.value.span.start)?;
            match &typed.data_type {
                // A binary string: what it is compared with compares byte by byte.
                ast::DataType::Binary(_) => Expr::Collate(Box::new(text), Collation::binary),
                data_type => Expr::Cast(Box::new(text), cast_type(data_type)?),
            }
        }
        A::Cast {
            expr: inner,
            data_type,
            ..
        } => Expr::Cast(boxed(binder, inner)?, cast_type(data_type)?),
        _ => return Err(SqlError::not_supported(expr)),
    })
}

/// `NOT x`, `-x` (a negative literal folded), `+x`.
fn bind_unary(
    binder: &mut Binder,
    expr: &ast::Expr,
    op: UnaryOperator,
    inner: &ast::Expr,
) -> SqlResult<Expr> {
    let boxed = |binder: &mut Binder, e: &ast::Expr| bind(binder, e).map(Box::new);
    Ok(match op {
        UnaryOperator::Not => Expr::Not(boxed(binder, inner)?),
        UnaryOperator::Minus => match bind(binder, inner)? {
            Expr::Literal(Value::Int(n)) => Expr::Literal(Value::Int(-n)),
            Expr::Literal(Value::UInt(n)) if n <= 1 << 63 => {
                Expr::Literal(Value::Int((n as i64).wrapping_neg()))
            }
            Expr::Literal(Value::Decimal(d)) => Expr::Literal(Value::Decimal(Decimal {
                unscaled: -d.unscaled,
                scale: d.scale,
            })),
            Expr::Literal(Value::Double(x)) => Expr::Literal(Value::Double(-x)),
            other => Expr::Negate(Box::new(other)),
        },
        UnaryOperator::Plus => bind(binder, inner)?,
        _ => return Err(SqlError::not_supported(expr)),
    })
}

/// The comparison `op` is, if it is one.
pub(super) fn compare_op(op: &BinaryOperator) -> Option<CompareOp> {
    Some(match op {
        BinaryOperator::Eq => CompareOp::Eq,
        BinaryOperator::NotEq => CompareOp::NotEq,
        BinaryOperator::Lt => CompareOp::Lt,
        BinaryOperator::LtEq => CompareOp::LtEq,
        BinaryOperator::Gt => CompareOp::Gt,
        BinaryOperator::GtEq => CompareOp::GtEq,
        BinaryOperator::Spaceship => CompareOp::NullSafeEq,
        _ => return None,
    })
}

/// A binary operator: logic, comparison, arithmetic, `@x := value`, `->` and `->>`.
fn bind_binary(
    binder: &mut Binder,
    left: &ast::Expr,
    op: &BinaryOperator,
    right: &ast::Expr,
) -> SqlResult<Expr> {
    let boxed = |binder: &mut Binder, e: &ast::Expr| bind(binder, e).map(Box::new);
    let (l, r) = (boxed(binder, left)?, boxed(binder, right)?);
    if let Some(op) = compare_op(op) {
        let collation = binder.comparison(&l, &r)?;
        let (l, r) = (binder.under(l, collation), binder.under(r, collation));
        return Ok(Expr::Compare(op, l, r, collation));
    }
    let arithmetic = match op {
        BinaryOperator::Plus => Some(ArithmeticOp::Add),
        BinaryOperator::Minus => Some(ArithmeticOp::Subtract),
        BinaryOperator::Multiply => Some(ArithmeticOp::Multiply),
        BinaryOperator::Divide => Some(ArithmeticOp::Divide),
        BinaryOperator::MyIntegerDivide => Some(ArithmeticOp::IntegerDivide),
        BinaryOperator::Modulo => Some(ArithmeticOp::Modulo),
        _ => None,
    };
    if let Some(arithmetic) = arithmetic {
        // (the operands moved, never cloned: a chain `a + b + ...` would copy its whole
        // left side once per level)
        return Ok(Expr::Arithmetic(arithmetic, l, r));
    }
    Ok(match op {
        BinaryOperator::And => Expr::And(l, r),
        BinaryOperator::Or => Expr::Or(l, r),
        // `@x := value` (MySQL's assignment inside an expression).
        BinaryOperator::Assignment => match left {
            ast::Expr::Identifier(ident)
                if ident.value.starts_with('@') && !ident.value.starts_with("@@") =>
            {
                Expr::AssignUserVariable(ident.value.to_lowercase(), r)
            }
            _ => return Err(SqlError::syntax(format!("cannot assign to {left}"))),
        },
        // `doc->path` is JSON_EXTRACT, `doc->>path` its JSON_UNQUOTE.
        BinaryOperator::Arrow | BinaryOperator::LongArrow => {
            let extract = Expr::Call(functions::named("json_extract"), vec![*l, *r]);
            match op {
                BinaryOperator::Arrow => extract,
                _ => Expr::Call(functions::named("json_unquote"), vec![extract]),
            }
        }
        _ => return Err(SqlError::not_supported(format!("operator {op}"))),
    })
}

/// MySQL's bit-value literal `b'101'`: a binary string of those bits, left-padded with
/// zeros to whole bytes.
fn bit_literal(bits: &str) -> SqlResult<Value> {
    if !bits.bytes().all(|b| b == b'0' || b == b'1') {
        return Err(SqlError::syntax(format!("bad bit-value literal b'{bits}'")));
    }
    let padded = format!("{}{bits}", "0".repeat((8 - bits.len() % 8) % 8));
    let bytes = padded
        .as_bytes()
        .chunks(8)
        .map(|byte| byte.iter().fold(0u8, |n, &bit| (n << 1) | (bit - b'0')))
        .collect();
    Ok(Value::Bytes(bytes))
}

/// A literal with a character-set introducer (`_binary'..'`, `_utf8mb4 X'..'`): a binary
/// string, or text that must be valid in that character set (1300).
fn bind_introduced(binder: &Binder, charset: &str, value: &ast::Expr) -> SqlResult<Expr> {
    let ast::Expr::Value(value) = value else {
        return Err(SqlError::syntax(format!(
            "{charset} introduces a literal, not {value}"
        )));
    };
    let bound = literal(binder, &value.value, value.span.start)?;
    match charset.to_ascii_lowercase().as_str() {
        "_binary" => Ok(Expr::Collate(Box::new(bound), Collation::binary)),
        "_utf8mb4" | "_utf8mb3" | "_utf8" => match &bound {
            Expr::Literal(Value::Bytes(bytes)) if std::str::from_utf8(bytes).is_err() => {
                let hex = crate::value::hex_digits(bytes);
                Err(SqlError::new(
                    1300,
                    "HY000",
                    format!("Invalid utf8mb4 character string: '{hex}'"),
                ))
            }
            _ => Ok(bound),
        },
        _ => Err(SqlError::new(
            1115,
            "42000",
            format!("Unknown character set: '{}'", &charset[1..]),
        )),
    }
}

fn literal(binder: &Binder, value: &ast::Value, at: Location) -> SqlResult<Expr> {
    use ast::Value as V;
    Ok(Expr::Literal(match value {
        V::Number(text, _) => number(text)?,
        V::SingleQuotedString(text) | V::DoubleQuotedString(text) => {
            Value::Bytes(text.clone().into_bytes())
        }
        V::HexStringLiteral(hex) => Value::Bytes(
            (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16))
                .collect::<Result<_, _>>()
                .map_err(|_| SqlError::syntax(format!("bad hex literal X'{hex}'")))?,
        ),
        V::SingleQuotedByteStringLiteral(bits) => bit_literal(bits)?,
        V::Boolean(b) => Value::Int(i64::from(*b)),
        V::Null => Value::Null,
        V::Placeholder(text) if text == "?" => {
            let index = binder
                .placeholders
                .binary_search(&at)
                .map_err(|_| SqlError::syntax("a '?' parameter outside a prepared statement"))?;
            return Ok(Expr::Param(index));
        }
        other => return Err(SqlError::not_supported(other)),
    }))
}

/// A numeric literal: an integer if it is one (unsigned above i64), a DECIMAL with a
/// point, a DOUBLE with an exponent (MySQL's rules).
pub fn number(text: &str) -> SqlResult<Value> {
    if let Ok(n) = text.parse::<i64>() {
        return Ok(Value::Int(n));
    }
    if let Ok(n) = text.parse::<u64>() {
        return Ok(Value::UInt(n));
    }
    if !text.contains(['e', 'E']) {
        let scale = text.split_once('.').map_or(0, |(_, f)| f.len());
        if scale <= 38 {
            if let Some(decimal) = crate::value::parse_decimal(text, scale as u8) {
                return Ok(Value::Decimal(decimal));
            }
        }
    }
    text.parse::<f64>()
        .map(Value::Double)
        .map_err(|_| SqlError::syntax(format!("bad number {text}")))
}

fn bind_function(binder: &mut Binder, function: &ast::Function) -> SqlResult<Expr> {
    let name = function.name.to_string().to_lowercase();
    let (args, distinct) = match &function.args {
        ast::FunctionArguments::None => (Vec::new(), false),
        ast::FunctionArguments::List(list) => (
            list.args.iter().collect::<Vec<_>>(),
            list.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct),
        ),
        ast::FunctionArguments::Subquery(_) => return Err(SqlError::not_supported(function)),
    };
    if name == "values" {
        if let (
            Some(offset),
            [FunctionArg::Unnamed(FunctionArgExpr::Expr(ast::Expr::Identifier(column)))],
        ) = (binder.inserted_row_at, args.as_slice())
        {
            return match binder.column(None, &column.value)? {
                Expr::Column(position) => Ok(Expr::Column(offset + position)),
                _ => Err(SqlError::wrong_arguments("VALUES")),
            };
        }
    }
    let aggregate = match name.as_str() {
        "count" => Some(AggregateKind::Count),
        "sum" => Some(AggregateKind::Sum),
        "avg" => Some(AggregateKind::Avg),
        "min" => Some(AggregateKind::Min),
        "max" => Some(AggregateKind::Max),
        "group_concat" => Some(AggregateKind::GroupConcat),
        _ => None,
    };
    if let Some(kind) = aggregate {
        return bind_aggregate(binder, kind, function, &args, distinct);
    }
    let mut arguments = Vec::with_capacity(args.len() + 1);
    for (position, arg) in args.iter().enumerate() {
        let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = arg else {
            return Err(SqlError::wrong_arguments(&name));
        };
        match e {
            // DATE_ADD(d, INTERVAL n unit): the amount and the unit's name.
            ast::Expr::Interval(interval) => {
                arguments.extend(special_forms::interval_args(binder, interval)?)
            }
            // TIMESTAMPDIFF(unit, a, b): the unit's name.
            ast::Expr::Identifier(unit)
                if position == 0
                    && name == "timestampdiff"
                    && functions::interval_unit(&unit.value).is_some() =>
            {
                arguments.push(Expr::Literal(Value::Bytes(unit.value.clone().into_bytes())))
            }
            _ => arguments.push(bind(binder, e)?),
        }
    }
    let function = functions::lookup(&name, arguments.len())?;
    call_on(binder, function, arguments)
}

/// `function` called on `args`: as it runs on a binary string where an argument derives
/// the binary collation (`functions::OnBinary`).
pub(super) fn call_on(
    binder: &Binder,
    function: functions::Function,
    args: Vec<Expr>,
) -> SqlResult<Expr> {
    for arg in &args {
        if derive_of(binder, arg)?.collation == Collation::binary {
            return Ok(Expr::Call(function.on_binary(), args));
        }
    }
    Ok(Expr::Call(function, args))
}

/// An aggregate call: its argument bound where aggregates may not nest, and noted in the
/// binder's list (error 1111 where aggregates are not allowed at all).
fn bind_aggregate(
    binder: &mut Binder,
    mut kind: AggregateKind,
    function: &ast::Function,
    args: &[&FunctionArg],
    distinct: bool,
) -> SqlResult<Expr> {
    let name = function.name.to_string().to_lowercase();
    let mut inner = Binder {
        subqueries: binder.subqueries,
        correlation: binder.correlation,
        ..Binder::over(binder.columns, binder.placeholders, binder.place)
    };
    let exprs: Vec<&ast::Expr> = args
        .iter()
        .filter_map(|arg| match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
            _ => None,
        })
        .collect();
    let argument = match (kind, args, exprs.as_slice()) {
        (AggregateKind::Count, [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)], _) => {
            kind = AggregateKind::CountRows;
            None
        }
        (_, _, [e]) if exprs.len() == args.len() => Some(bind(&mut inner, e)?),
        // GROUP_CONCAT(a, b): the concatenation of each row's values.
        (AggregateKind::GroupConcat, _, [_, _, ..]) if exprs.len() == args.len() => {
            let parts = exprs
                .iter()
                .map(|e| bind(&mut inner, e))
                .collect::<SqlResult<Vec<_>>>()?;
            Some(Expr::Call(functions::lookup("concat", parts.len())?, parts))
        }
        _ => return Err(SqlError::wrong_arguments(&name)),
    };
    let concat = match kind {
        AggregateKind::GroupConcat => Some(group_concat(&mut inner, function)?),
        _ => None,
    };
    let Some(aggregates) = binder.aggregates.as_deref_mut() else {
        return Err(SqlError::new(
            1111,
            "HY000",
            "Invalid use of group function",
        ));
    };
    let collation = match &argument {
        Some(argument) => derive_of(&inner, argument)?.collation,
        None => Collation::default(),
    };
    aggregates.push(Aggregate {
        kind,
        argument,
        distinct,
        concat,
        collation,
    });
    Ok(Expr::Aggregate(aggregates.len() - 1))
}

/// GROUP_CONCAT's `ORDER BY` and `SEPARATOR`.
fn group_concat(binder: &mut Binder, function: &ast::Function) -> SqlResult<GroupConcat> {
    let mut concat = GroupConcat {
        separator: b",".to_vec(),
        order_by: Vec::new(),
        order_collations: Vec::new(),
    };
    let ast::FunctionArguments::List(list) = &function.args else {
        return Ok(concat);
    };
    for clause in &list.clauses {
        match clause {
            ast::FunctionArgumentClause::OrderBy(order) => {
                for item in order {
                    let ascending = item.options.asc != Some(false);
                    let key = bind(binder, &item.expr)?;
                    concat
                        .order_collations
                        .push(derive_of(binder, &key)?.collation);
                    concat.order_by.push((key, ascending));
                }
            }
            ast::FunctionArgumentClause::Separator(value) => {
                concat.separator = match value {
                    ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => {
                        s.clone().into_bytes()
                    }
                    other => return Err(SqlError::syntax(format!("SEPARATOR {other}"))),
                };
            }
            other => return Err(SqlError::not_supported(other)),
        }
    }
    Ok(concat)
}

fn cast_type(data_type: &ast::DataType) -> SqlResult<ColumnType> {
    use ast::DataType as D;
    Ok(match data_type {
        D::Signed | D::SignedInteger | D::Int(_) | D::Integer(_) | D::BigInt(_) => {
            ColumnType::Int {
                bytes: 8,
                signed: true,
            }
        }
        D::Unsigned | D::UnsignedInteger | D::IntUnsigned(_) | D::BigIntUnsigned(_) => {
            ColumnType::Int {
                bytes: 8,
                signed: false,
            }
        }
        D::Char(_) | D::Varchar(_) | D::Text | D::String(_) => crate::sql_type::DEFAULT_TEXT,
        D::Binary(_) => ColumnType::Blob,
        D::Date => ColumnType::Date,
        D::Datetime(_) => ColumnType::DateTime,
        D::Time(_, _) => ColumnType::Time,
        D::Double(_) | D::Float(_) | D::Real => ColumnType::Double,
        D::Decimal(info) | D::Numeric(info) => {
            let (precision, scale) = match info {
                ast::ExactNumberInfo::None => (10, 0),
                ast::ExactNumberInfo::Precision(p) => (*p, 0),
                ast::ExactNumberInfo::PrecisionAndScale(p, s) => (*p, *s as u64),
            };
            ColumnType::Decimal {
                precision: precision.min(38) as u8,
                scale: scale.min(38) as u8,
            }
        }
        other => return Err(SqlError::not_supported(format!("CAST AS {other}"))),
    })
}
