//! Choosing how to reach a table's rows from a WHERE clause (the *access path*):
//!
//! 1. equality on every primary-key column → one key read;
//! 2. `pk IN (...)` (one-column key) → all keys read in one batch, one round trip;
//! 3. equality on every column of a unique index → a unique-index read;
//! 4. a range (`=`, `<`, `<=`, `>`, `>=`, `BETWEEN`) on the first column of the primary
//!    key or an ordered index → an ordered range scan;
//! 5. an IN list or an OR of ranges on such a column → one range scan per range, all in
//!    flight at once (at most [`RANGES_MAX`]);
//! 6. otherwise a scan of every partition in parallel.
//!
//! Scans carry every conjunct of the form `column op constant` (and IS NULL, LIKE) to the
//! data nodes as a filter. The front end still checks the whole WHERE on every row it
//! gets, so a pushed filter only ever saves work and never decides an answer alone.

use kista_client::schema::IndexKind;

use crate::catalog::SqlTable;
use crate::ddl::PRIMARY_INDEX;
use crate::expr::{CompareOp, Expr};

/// Range scans one statement runs at once; a longer IN list or OR scans the table.
pub const RANGES_MAX: usize = 64;

/// One range of an index's first column: each end a constant and whether it is included
/// (`None`: open).
#[derive(Clone, Debug, PartialEq)]
pub struct Bounds {
    pub lower: Option<(Expr, bool)>,
    pub upper: Option<(Expr, bool)>,
}

impl Bounds {
    fn point(value: &Expr) -> Self {
        Bounds {
            lower: Some((value.clone(), true)),
            upper: Some((value.clone(), true)),
        }
    }
}

/// How to reach the rows; key and bound expressions are constants (literals or
/// parameters), evaluated when the statement runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Access {
    PrimaryKey(Vec<Expr>),
    PrimaryKeyIn(Vec<Expr>),
    Unique {
        index: String,
        key: Vec<Expr>,
    },
    /// Scans of these ranges of the index's first column (one, or several in parallel).
    Range {
        index: String,
        column: usize,
        ranges: Vec<Bounds>,
    },
    Scan,
}

impl Access {
    /// What EXPLAIN says.
    pub fn describe(&self) -> String {
        match self {
            Access::PrimaryKey(_) => "primary key read".into(),
            Access::PrimaryKeyIn(keys) => format!(
                "batched primary key read of {} keys in one round trip",
                keys.len()
            ),
            Access::Unique { index, .. } => format!("unique index read on `{index}`"),
            Access::Range { index, ranges, .. } if ranges.len() == 1 => {
                format!("ordered range scan of index `{index}`")
            }
            Access::Range { index, ranges, .. } => {
                format!(
                    "{} range scans of index `{index}` in parallel",
                    ranges.len()
                )
            }
            Access::Scan => "scan of all partitions in parallel".into(),
        }
    }
}

/// `column op constant` (either way round), with `op` as seen from the column.
fn column_compare(conjunct: &Expr) -> Option<(usize, CompareOp, &Expr)> {
    let Expr::Compare(op, left, right, _) = conjunct else {
        return None;
    };
    match (left.as_ref(), right.as_ref()) {
        (Expr::Column(c), constant) if constant.is_constant() => Some((*c, *op, constant)),
        (constant, Expr::Column(c)) if constant.is_constant() => {
            let flipped = op.flipped();
            Some((*c, flipped, constant))
        }
        _ => None,
    }
}

fn equality_on(conjuncts: &[Expr], column: usize) -> Option<Expr> {
    conjuncts.iter().find_map(|c| match column_compare(c) {
        Some((col, CompareOp::Eq, constant)) if col == column => Some(constant.clone()),
        _ => None,
    })
}

/// The access path for `table` under the WHERE's conjuncts (bound over the table's row):
/// the whole primary key by equality, an IN list on a one-column key, a unique index's
/// whole key, ranges of an ordered index, else a scan.
pub fn choose_access(table: &SqlTable, conjuncts: &[Expr]) -> Access {
    let schema = table.schema();
    let key: Option<Vec<Expr>> = (schema.primary_key.iter())
        .map(|&c| equality_on(conjuncts, c))
        .collect();
    if let Some(key) = key {
        return Access::PrimaryKey(key);
    }
    if let Some(keys) = key_in_list(&schema.primary_key, conjuncts) {
        return Access::PrimaryKeyIn(keys);
    }
    for (_, index) in table.table.indexes() {
        if index.kind != IndexKind::Unique {
            continue;
        }
        let key: Option<Vec<Expr>> = (index.columns.iter())
            .map(|&c| equality_on(conjuncts, c))
            .collect();
        if let Some(key) = key {
            let index = index.name.clone();
            return Access::Unique { index, key };
        }
    }
    index_ranges(table, conjuncts).unwrap_or(Access::Scan)
}

/// `key IN (constants)` for a one-column primary key: the listed keys.
fn key_in_list(primary_key: &[usize], conjuncts: &[Expr]) -> Option<Vec<Expr>> {
    let [key_column] = primary_key else {
        return None;
    };
    conjuncts.iter().find_map(|conjunct| match conjunct {
        Expr::InList {
            expr,
            list,
            negated: false,
            ..
        } if **expr == Expr::Column(*key_column) && list.iter().all(Expr::is_constant) => {
            Some(list.clone())
        }
        _ => None,
    })
}

/// Ranges of an ordered index's first column: one range that every conjunct bounding the
/// column narrows, else several from one conjunct (an IN list or an OR of ranges).
fn index_ranges(table: &SqlTable, conjuncts: &[Expr]) -> Option<Access> {
    let ordered = (table.table.indexes()).filter(|(_, i)| i.kind == IndexKind::Ordered);
    // The primary key's index first: its ranges are the common case (sysbench's).
    let mut candidates: Vec<(String, usize)> = ordered
        .map(|(_, i)| (i.name.clone(), i.columns[0]))
        .collect();
    candidates.sort_by_key(|(name, _)| name != PRIMARY_INDEX);
    let range_access = |(index, column): &(String, usize), ranges| Access::Range {
        index: index.clone(),
        column: *column,
        ranges,
    };
    for candidate in &candidates {
        let mut range = Bounds {
            lower: None,
            upper: None,
        };
        for conjunct in conjuncts {
            if let Some([one]) = ranges_of(conjunct, candidate.1).as_deref() {
                range.lower = one.lower.clone().or(range.lower);
                range.upper = one.upper.clone().or(range.upper);
            }
        }
        if range.lower.is_some() || range.upper.is_some() {
            return Some(range_access(candidate, vec![range]));
        }
    }
    for candidate in &candidates {
        for conjunct in conjuncts {
            if let Some(ranges) = ranges_of(conjunct, candidate.1).filter(|r| r.len() <= RANGES_MAX)
            {
                return Some(range_access(candidate, ranges));
            }
        }
    }
    None
}

/// The ranges of `column` a condition accepts, when it is an IN list, a range, or an OR of
/// those, all on `column` with constant ends.
fn ranges_of(condition: &Expr, column: usize) -> Option<Vec<Bounds>> {
    match condition {
        Expr::InList {
            expr,
            list,
            negated: false,
            ..
        } if **expr == Expr::Column(column) => list
            .iter()
            .all(Expr::is_constant)
            .then(|| list.iter().map(Bounds::point).collect()),
        Expr::Between {
            expr,
            low,
            high,
            negated: false,
            ..
        } if **expr == Expr::Column(column) => {
            (low.is_constant() && high.is_constant()).then(|| {
                vec![Bounds {
                    lower: Some(((**low).clone(), true)),
                    upper: Some(((**high).clone(), true)),
                }]
            })
        }
        Expr::Or(a, b) => {
            let mut ranges = ranges_of(a, column)?;
            ranges.extend(ranges_of(b, column)?);
            Some(ranges)
        }
        other => match column_compare(other) {
            Some((c, op, value)) if c == column => Some(vec![match op {
                CompareOp::Eq => Bounds::point(value),
                CompareOp::Gt => Bounds {
                    lower: Some((value.clone(), false)),
                    upper: None,
                },
                CompareOp::GtEq => Bounds {
                    lower: Some((value.clone(), true)),
                    upper: None,
                },
                CompareOp::Lt => Bounds {
                    lower: None,
                    upper: Some((value.clone(), false)),
                },
                CompareOp::LtEq => Bounds {
                    lower: None,
                    upper: Some((value.clone(), true)),
                },
                _ => return None,
            }]),
            _ => None,
        },
    }
}

/// The conjuncts a data node can evaluate, once their constants are known: comparisons of
/// a column with a constant, IS [NOT] NULL, LIKE with a constant pattern, and AND/OR/NOT
/// of those.
pub fn pushable(conjunct: &Expr) -> bool {
    match conjunct {
        Expr::Compare(op, _, _, _) => {
            *op != CompareOp::NullSafeEq && column_compare(conjunct).is_some()
        }
        Expr::IsNull { expr, .. } => matches!(**expr, Expr::Column(_)),
        Expr::Like { expr, pattern, .. } => {
            matches!(**expr, Expr::Column(_)) && pattern.is_constant()
        }
        Expr::Between {
            expr, low, high, ..
        } => matches!(**expr, Expr::Column(_)) && low.is_constant() && high.is_constant(),
        Expr::InList { expr, list, .. } => {
            matches!(**expr, Expr::Column(_))
                && list.iter().all(Expr::is_constant)
                && list.len() <= 256
        }
        Expr::And(a, b) | Expr::Or(a, b) => pushable(a) && pushable(b),
        Expr::Not(e) => pushable(e),
        _ => false,
    }
}
