//! Filters pushed down to the data node: a small program evaluated on each row a scan visits,
//! so only matching rows travel back.
//!
//! Logic is SQL's three-valued one: a comparison with NULL is unknown, `NOT unknown` is
//! unknown, and a row passes only when the program is true. Comparisons follow
//! [`crate::compare`] under the column's collation, and so does LIKE (`%` any run, `_` one
//! character, `\` makes the next pattern character literal).

use std::cmp::Ordering;

use crate::compare::{compare, compare_in};
use crate::row::RowLayout;
use crate::types::{ColumnType, Value};

/// Nodes a filter may have: bounds the work one row can cost the data node.
pub const FILTER_NODES_MAX: usize = 1024;
/// Nesting a filter may have: bounds the evaluator's recursion.
pub const FILTER_DEPTH_MAX: usize = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CompareOp {
    fn holds(self, order: Ordering) -> bool {
        match self {
            CompareOp::Eq => order.is_eq(),
            CompareOp::Ne => order.is_ne(),
            CompareOp::Lt => order.is_lt(),
            CompareOp::Le => order.is_le(),
            CompareOp::Gt => order.is_gt(),
            CompareOp::Ge => order.is_ge(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    /// `column op constant`.
    Compare {
        column: usize,
        op: CompareOp,
        value: Value,
    },
    /// `left op right`, two columns of the row.
    CompareColumns {
        left: usize,
        op: CompareOp,
        right: usize,
    },
    IsNull(usize),
    Like {
        column: usize,
        pattern: Vec<u8>,
    },
    And(Vec<Filter>),
    Or(Vec<Filter>),
    Not(Box<Filter>),
}

impl Filter {
    /// Whether it is within what a data node accepts ([`FILTER_NODES_MAX`] nodes,
    /// [`FILTER_DEPTH_MAX`] levels): a sender checks before sending, for a filter out of
    /// bounds fails the whole scan.
    pub fn within_bounds(&self) -> bool {
        let mut nodes = 0;
        self.within(1, &mut nodes)
    }

    /// Whether it stays within bounds as a part `depth` levels down a filter that has
    /// `nodes` nodes so far (which it then adds its own to).
    pub fn within(&self, depth: usize, nodes: &mut usize) -> bool {
        *nodes += 1;
        if *nodes > FILTER_NODES_MAX || depth > FILTER_DEPTH_MAX {
            return false;
        }
        match self {
            Filter::And(filters) | Filter::Or(filters) => {
                filters.iter().all(|filter| filter.within(depth + 1, nodes))
            }
            Filter::Not(filter) => filter.within(depth + 1, nodes),
            _ => true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FilterError {
    #[error("filter names column {column}, but table `{table}` has {columns} columns")]
    NoSuchColumn {
        table: String,
        column: usize,
        columns: usize,
    },
    #[error("filter compares column `{column}` ({column_type}) with a {value} value")]
    Incomparable {
        column: String,
        column_type: ColumnType,
        value: &'static str,
    },
    #[error("filter compares column `{left}` with column `{right}` of another kind or collation")]
    IncomparableColumns { left: String, right: String },
    #[error("LIKE needs a string or binary column; `{column}` is {column_type}")]
    LikeOnNonString {
        column: String,
        column_type: ColumnType,
    },
    #[error("filter has more than {FILTER_NODES_MAX} nodes")]
    TooManyNodes,
    #[error("filter nests deeper than {FILTER_DEPTH_MAX} levels")]
    TooDeep,
}

/// The outcome of a condition under SQL's three-valued logic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Truth {
    True,
    False,
    Unknown,
}

impl Truth {
    fn from_bool(value: bool) -> Self {
        if value {
            Truth::True
        } else {
            Truth::False
        }
    }
}

/// A filter checked against a table's layout, ready to run on its rows.
#[derive(Clone, Debug)]
pub struct FilterProgram {
    filter: Filter,
}

impl FilterProgram {
    /// Checks `filter` against `layout`: columns exist, constants compare with their
    /// columns, LIKE applies to strings, size and depth within bounds.
    pub fn new(filter: Filter, layout: &RowLayout) -> Result<Self, FilterError> {
        let mut nodes = 0;
        check(&filter, layout, 1, &mut nodes)?;
        Ok(Self { filter })
    }

    /// Whether the stored row passes.
    pub fn matches(&self, layout: &RowLayout, fixed: &[u8], var: &[u8]) -> bool {
        evaluate(&self.filter, layout, fixed, var) == Truth::True
    }

    /// The program's value on the row.
    pub fn evaluate(&self, layout: &RowLayout, fixed: &[u8], var: &[u8]) -> Truth {
        evaluate(&self.filter, layout, fixed, var)
    }
}

fn check(
    filter: &Filter,
    layout: &RowLayout,
    depth: usize,
    nodes: &mut usize,
) -> Result<(), FilterError> {
    *nodes += 1;
    if *nodes > FILTER_NODES_MAX {
        return Err(FilterError::TooManyNodes);
    }
    if depth > FILTER_DEPTH_MAX {
        return Err(FilterError::TooDeep);
    }
    let column_of = |column: usize| {
        layout
            .column(column)
            .ok_or_else(|| FilterError::NoSuchColumn {
                table: layout.table().to_string(),
                column,
                columns: layout.column_count(),
            })
    };
    match filter {
        Filter::Compare { column, value, .. } => {
            let c = column_of(*column)?;
            if !value.is_null() && compare(&sample(c.column_type), value).is_none() {
                return Err(FilterError::Incomparable {
                    column: c.name.clone(),
                    column_type: c.column_type,
                    value: value.kind(),
                });
            }
        }
        Filter::CompareColumns { left, right, .. } => {
            let (l, r) = (column_of(*left)?, column_of(*right)?);
            let comparable = compare(&sample(l.column_type), &sample(r.column_type)).is_some();
            if !comparable || l.column_type.collation() != r.column_type.collation() {
                return Err(FilterError::IncomparableColumns {
                    left: l.name.clone(),
                    right: r.name.clone(),
                });
            }
        }
        Filter::IsNull(column) => {
            column_of(*column)?;
        }
        Filter::Like { column, .. } => {
            let c = column_of(*column)?;
            if !matches!(sample(c.column_type), Value::Bytes(_)) {
                return Err(FilterError::LikeOnNonString {
                    column: c.name.clone(),
                    column_type: c.column_type,
                });
            }
        }
        Filter::And(parts) | Filter::Or(parts) => {
            for part in parts {
                check(part, layout, depth + 1, nodes)?;
            }
        }
        Filter::Not(inner) => check(inner, layout, depth + 1, nodes)?,
    }
    Ok(())
}

/// A value of the kind a column type holds, to ask whether two kinds compare.
fn sample(column_type: ColumnType) -> Value {
    use crate::types::{Date, DateTime, Decimal};
    let epoch = Date::new(1970, 1, 1).expect("a valid date");
    match column_type {
        ColumnType::Int { .. } => Value::Int(0),
        ColumnType::Float => Value::Float(0.0),
        ColumnType::Double => Value::Double(0.0),
        ColumnType::Decimal { scale, .. } => Value::Decimal(Decimal { unscaled: 0, scale }),
        ColumnType::Char { .. }
        | ColumnType::Binary { .. }
        | ColumnType::VarChar { .. }
        | ColumnType::VarBinary { .. }
        | ColumnType::Text { .. }
        | ColumnType::Blob => Value::Bytes(Vec::new()),
        ColumnType::Date => Value::Date(epoch),
        ColumnType::Time => Value::Time(0),
        ColumnType::DateTime => {
            Value::DateTime(DateTime::new(epoch, 0).expect("a valid date and time"))
        }
        ColumnType::Timestamp => Value::Timestamp(0),
    }
}

fn evaluate(filter: &Filter, layout: &RowLayout, fixed: &[u8], var: &[u8]) -> Truth {
    // A column's collation decides how it compares (check made both sides agree).
    let collation = |column: usize| layout.column_type(column).collation();
    let compared =
        |column, a: &Value, op: CompareOp, b: &Value| match compare_in(collation(column), a, b) {
            Some(order) => Truth::from_bool(op.holds(order)),
            None => Truth::Unknown,
        };
    match filter {
        Filter::Compare { column, op, value } => {
            compared(*column, &layout.value(fixed, var, *column), *op, value)
        }
        Filter::CompareColumns { left, op, right } => compared(
            *left,
            &layout.value(fixed, var, *left),
            *op,
            &layout.value(fixed, var, *right),
        ),
        Filter::IsNull(column) => Truth::from_bool(layout.is_null(fixed, var, *column)),
        Filter::Like { column, pattern } => match layout.value(fixed, var, *column) {
            Value::Bytes(text) => Truth::from_bool(collation(*column).like(&text, pattern)),
            _ => Truth::Unknown,
        },
        Filter::And(parts) => {
            let mut result = Truth::True;
            for part in parts {
                match evaluate(part, layout, fixed, var) {
                    Truth::False => return Truth::False,
                    Truth::Unknown => result = Truth::Unknown,
                    Truth::True => {}
                }
            }
            result
        }
        Filter::Or(parts) => {
            let mut result = Truth::False;
            for part in parts {
                match evaluate(part, layout, fixed, var) {
                    Truth::True => return Truth::True,
                    Truth::Unknown => result = Truth::Unknown,
                    Truth::False => {}
                }
            }
            result
        }
        Filter::Not(inner) => match evaluate(inner, layout, fixed, var) {
            Truth::True => Truth::False,
            Truth::False => Truth::True,
            Truth::Unknown => Truth::Unknown,
        },
    }
}

#[cfg(test)]
mod tests;
