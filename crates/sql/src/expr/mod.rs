//! Expressions bound to a row: column references resolved to positions, parameters to
//! their numbers, aggregates to slots. Binding (`bind.rs`) happens once per statement
//! (once per prepare for prepared statements); evaluation (`eval.rs`) once per row.

mod bind;
mod collation;
mod eval;
mod result_type;
mod row_values;
mod special_forms;
mod subquery;

pub use crate::functions::Function;

pub(crate) use bind::find_column;
#[cfg(test)]
pub(crate) use bind::EXPRESSION_DEPTH_MAX;
pub use bind::{
    bind, number, Aggregate, AggregateKind, Binder, GroupConcat, OutputColumn, ScopeColumn,
};
pub use collation::{comparison, derive, Derivation};
pub(crate) use eval::overflow;
pub use eval::{arithmetic, compare_values, eval, EvalContext};
pub use result_type::{result_type, DECIMAL_RESULT};
pub(crate) use special_forms::collation_named;

/// Adds two values under SQL's rules (SUM's running total); NULL on overflow.
pub fn eval_arithmetic_add(a: &Value, b: &Value) -> Value {
    arithmetic(ArithmeticOp::Add, a, b).unwrap_or(Value::Null)
}

use kista_client::types::{Collation, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    /// `<=>`: equal, NULL-safe.
    NullSafeEq,
}

impl CompareOp {
    /// The same comparison with its sides swapped (`a < b` is `b > a`).
    pub fn flipped(self) -> Self {
        match self {
            CompareOp::Lt => CompareOp::Gt,
            CompareOp::LtEq => CompareOp::GtEq,
            CompareOp::Gt => CompareOp::Lt,
            CompareOp::GtEq => CompareOp::LtEq,
            other => other,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithmeticOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    IntegerDivide,
    Modulo,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Literal(Value),
    /// The statement's n-th `?`.
    Param(usize),
    /// The input row's n-th value.
    Column(usize),
    /// The n-th aggregate of the group being output.
    Aggregate(usize),
    /// `@@name`, a server or session variable.
    SystemVariable(String),
    /// `@name`, a user variable (its name with the `@`, lower case); NULL until set.
    UserVariable(String),
    /// `@x := value`: the value, which the session's variable `@x` takes as it is computed
    /// (row by row).
    AssignUserVariable(String, Box<Expr>),
    Not(Box<Expr>),
    Negate(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    /// A comparison, of strings under the collation its operands derive.
    Compare(CompareOp, Box<Expr>, Box<Expr>, Collation),
    /// `x COLLATE name`: the value of `x`, compared under `name` (explicit).
    Collate(Box<Expr>, Collation),
    Arithmetic(ArithmeticOp, Box<Expr>, Box<Expr>),
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    /// `x IS [NOT] TRUE` / `x IS [NOT] FALSE`: 1 or 0, never NULL (NULL is neither).
    IsTruth {
        expr: Box<Expr>,
        truth: bool,
        negated: bool,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
        collation: Collation,
    },
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
        collation: Collation,
    },
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        negated: bool,
        collation: Collation,
    },
    Call(Function, Vec<Expr>),
    /// `CAST(x AS SIGNED|UNSIGNED|CHAR|DECIMAL|DATE|...)`.
    Cast(Box<Expr>, kista_client::types::ColumnType),
}

impl Expr {
    /// `conjuncts` joined by AND (`None`: there are none).
    pub fn all(conjuncts: impl IntoIterator<Item = Expr>) -> Option<Expr> {
        (conjuncts.into_iter()).reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
    }

    /// The conjuncts of an AND tree.
    pub fn conjuncts(self) -> Vec<Expr> {
        match self {
            Expr::And(left, right) => {
                let mut all = left.conjuncts();
                all.extend(right.conjuncts());
                all
            }
            other => vec![other],
        }
    }

    /// Whether the value depends on no row: literals, parameters, variables.
    pub fn is_constant(&self) -> bool {
        match self {
            Expr::Literal(_) | Expr::Param(_) | Expr::SystemVariable(_) | Expr::UserVariable(_) => {
                true
            }
            // An assignment changes the session each time it runs.
            Expr::Column(_) | Expr::Aggregate(_) | Expr::AssignUserVariable(..) => false,
            Expr::Call(function, _) if function.def().volatile => false,
            Expr::Not(e) | Expr::Negate(e) | Expr::Cast(e, _) | Expr::Collate(e, _) => {
                e.is_constant()
            }
            Expr::IsNull { expr, .. } | Expr::IsTruth { expr, .. } => expr.is_constant(),
            Expr::And(a, b)
            | Expr::Or(a, b)
            | Expr::Compare(_, a, b, _)
            | Expr::Arithmetic(_, a, b) => a.is_constant() && b.is_constant(),
            Expr::InList { expr, list, .. } => {
                expr.is_constant() && list.iter().all(Expr::is_constant)
            }
            Expr::Between {
                expr, low, high, ..
            } => expr.is_constant() && low.is_constant() && high.is_constant(),
            Expr::Like { expr, pattern, .. } => expr.is_constant() && pattern.is_constant(),
            Expr::Call(_, args) => args.iter().all(Expr::is_constant),
        }
    }

    /// Whether any aggregate appears.
    pub fn has_aggregate(&self) -> bool {
        let mut found = false;
        self.visit(&mut |e| found |= matches!(e, Expr::Aggregate(_)));
        found
    }

    /// Calls `f` on this node and every node below it.
    pub fn visit(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Not(e)
            | Expr::Negate(e)
            | Expr::Cast(e, _)
            | Expr::Collate(e, _)
            | Expr::AssignUserVariable(_, e) => e.visit(f),
            Expr::IsNull { expr, .. } | Expr::IsTruth { expr, .. } => expr.visit(f),
            Expr::And(a, b)
            | Expr::Or(a, b)
            | Expr::Compare(_, a, b, _)
            | Expr::Arithmetic(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Expr::InList { expr, list, .. } => {
                expr.visit(f);
                list.iter().for_each(|e| e.visit(f));
            }
            Expr::Between {
                expr, low, high, ..
            } => {
                expr.visit(f);
                low.visit(f);
                high.visit(f);
            }
            Expr::Like { expr, pattern, .. } => {
                expr.visit(f);
                pattern.visit(f);
            }
            Expr::Call(_, args) => args.iter().for_each(|e| e.visit(f)),
            Expr::Literal(_)
            | Expr::Param(_)
            | Expr::Column(_)
            | Expr::Aggregate(_)
            | Expr::SystemVariable(_)
            | Expr::UserVariable(_) => {}
        }
    }

    /// The lowest and highest row position the expression reads (`None`: no column).
    pub fn column_span(&self) -> Option<(usize, usize)> {
        let mut span: Option<(usize, usize)> = None;
        self.visit(&mut |e| {
            if let Expr::Column(c) = e {
                span = Some(span.map_or((*c, *c), |(low, high)| (low.min(*c), high.max(*c))));
            }
        });
        span
    }

    /// The expression with every column position moved down by `offset` (it reads only
    /// positions at or above `offset`): a join's conjunct on one table, for that table's
    /// own row.
    pub fn rebased(&self, offset: usize) -> Expr {
        let mut copy = self.clone();
        copy.visit_mut(&mut |e| {
            if let Expr::Column(c) = e {
                *c -= offset;
            }
        });
        copy
    }

    fn visit_mut(&mut self, f: &mut impl FnMut(&mut Expr)) {
        f(self);
        match self {
            Expr::Not(e)
            | Expr::Negate(e)
            | Expr::Cast(e, _)
            | Expr::Collate(e, _)
            | Expr::AssignUserVariable(_, e) => e.visit_mut(f),
            Expr::IsNull { expr, .. } | Expr::IsTruth { expr, .. } => expr.visit_mut(f),
            Expr::And(a, b)
            | Expr::Or(a, b)
            | Expr::Compare(_, a, b, _)
            | Expr::Arithmetic(_, a, b) => {
                a.visit_mut(f);
                b.visit_mut(f);
            }
            Expr::InList { expr, list, .. } => {
                expr.visit_mut(f);
                list.iter_mut().for_each(|e| e.visit_mut(f));
            }
            Expr::Between {
                expr, low, high, ..
            } => {
                expr.visit_mut(f);
                low.visit_mut(f);
                high.visit_mut(f);
            }
            Expr::Like { expr, pattern, .. } => {
                expr.visit_mut(f);
                pattern.visit_mut(f);
            }
            Expr::Call(_, args) => args.iter_mut().for_each(|e| e.visit_mut(f)),
            Expr::Literal(_)
            | Expr::Param(_)
            | Expr::Column(_)
            | Expr::Aggregate(_)
            | Expr::SystemVariable(_)
            | Expr::UserVariable(_) => {}
        }
    }

    /// The number of `?` parameters the expression uses (the highest index + 1).
    pub fn parameter_count(&self) -> usize {
        let mut count = 0;
        self.visit(&mut |e| {
            if let Expr::Param(n) = e {
                count = count.max(n + 1);
            }
        });
        count
    }
}
