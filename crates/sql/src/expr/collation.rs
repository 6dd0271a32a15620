//! Which collation a comparison, a sort or a grouping uses: MySQL's *coercibility* rules.
//! Every string operand derives a collation and a strength; the stronger side decides:
//!
//! 0. `x COLLATE c` (explicit);
//! 2. a column, or a function of columns (implicit): its column's collation;
//! 4. a string literal or parameter (coercible): the default, `utf8mb4_0900_ai_ci`;
//! 5. numbers, dates, NULL: no collation of their own (ignorable).
//!
//! Between two sides of the same strength a binary string wins over text; two different
//! text collations both explicit or both implicit are MySQL's error 1267.

use kista_client::types::{Collation, ColumnType, Value};

use super::{Expr, Function};
use crate::error::{SqlError, SqlResult};
use crate::functions::Returns;

/// A string operand's collation and how strongly it holds it (lower is stronger).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Derivation {
    pub collation: Collation,
    pub coercibility: u8,
}

impl Derivation {
    pub const EXPLICIT: u8 = 0;
    pub const IMPLICIT: u8 = 2;
    pub const COERCIBLE: u8 = 4;
    pub const IGNORABLE: u8 = 5;

    /// What a number, a date or NULL derives: nothing to hold to.
    pub const NONE: Derivation = Derivation {
        collation: Collation::utf8mb4_0900_ai_ci,
        coercibility: Self::IGNORABLE,
    };

    /// A string literal's or parameter's.
    pub const LITERAL: Derivation = Derivation {
        collation: Collation::utf8mb4_0900_ai_ci,
        coercibility: Self::COERCIBLE,
    };

    /// A column's, by its type (`None` for a type that is not a string).
    pub fn of_column(column_type: ColumnType) -> Option<Collation> {
        match column_type {
            ColumnType::Char { .. } | ColumnType::VarChar { .. } | ColumnType::Text { .. } => {
                Some(column_type.collation())
            }
            ColumnType::Binary { .. } | ColumnType::VarBinary { .. } | ColumnType::Blob => {
                Some(Collation::binary)
            }
            _ => None,
        }
    }

    fn implicit(collation: Collation) -> Derivation {
        Derivation {
            collation,
            coercibility: Self::IMPLICIT,
        }
    }

    /// The derivation of two operands together (for a comparison, or a function's result).
    pub fn combine(self, other: Derivation) -> SqlResult<Derivation> {
        use std::cmp::Ordering::*;
        Ok(match self.coercibility.cmp(&other.coercibility) {
            Less => self,
            Greater => other,
            Equal if self.collation == other.collation => self,
            Equal if self.collation == Collation::binary => self,
            Equal if other.collation == Collation::binary => other,
            Equal if self.coercibility > Self::IMPLICIT => Derivation::LITERAL,
            Equal => return Err(illegal_mix(self, other)),
        })
    }
}

fn illegal_mix(a: Derivation, b: Derivation) -> SqlError {
    let kind = |d: Derivation| match d.coercibility {
        Derivation::EXPLICIT => "EXPLICIT",
        _ => "IMPLICIT",
    };
    SqlError::new(
        1267,
        "HY000",
        format!(
            "Illegal mix of collations ({},{}) and ({},{}) for operation 'comparison'",
            a.collation.name(),
            kind(a),
            b.collation.name(),
            kind(b)
        ),
    )
}

/// `expr`'s derivation; `column` answers for the row's columns (`None`: not a string).
pub fn derive(expr: &Expr, column: &dyn Fn(usize) -> Option<Collation>) -> SqlResult<Derivation> {
    let of = |e: &Expr| derive(e, column);
    Ok(match expr {
        Expr::Collate(_, collation) => Derivation {
            collation: *collation,
            coercibility: Derivation::EXPLICIT,
        },
        Expr::Column(position) => column(*position).map_or(Derivation::NONE, Derivation::implicit),
        Expr::Literal(Value::Bytes(_)) | Expr::Param(_) | Expr::UserVariable(_) => {
            Derivation::LITERAL
        }
        Expr::SystemVariable(_) => Derivation {
            coercibility: 3,
            ..Derivation::LITERAL
        },
        Expr::AssignUserVariable(_, value) => of(value)?,
        Expr::Cast(inner, target) => match Derivation::of_column(*target) {
            Some(Collation::binary) => Derivation::implicit(Collation::binary),
            Some(_) => of(inner)?.combine(Derivation::LITERAL)?,
            None => Derivation::NONE,
        },
        Expr::Call(function, args) => call(*function, args, &of)?,
        _ => Derivation::NONE,
    })
}

/// A function returning a string holds its string arguments' collation (CONCAT of a
/// column is the column's); one returning anything else holds none.
fn call(
    function: Function,
    args: &[Expr],
    of: &dyn Fn(&Expr) -> SqlResult<Derivation>,
) -> SqlResult<Derivation> {
    let returns_string = match function.def().returns {
        Returns::Type(column_type) => Derivation::of_column(column_type).is_some(),
        Returns::ArgumentFrom(_) => true,
    };
    if !returns_string {
        return Ok(Derivation::NONE);
    }
    let mut derived = Derivation::NONE;
    for arg in args {
        derived = derived.combine(of(arg)?)?;
    }
    Ok(match derived.coercibility {
        Derivation::IGNORABLE => Derivation::LITERAL,
        _ => derived,
    })
}

/// The collation two operands compare under.
pub fn comparison(
    left: &Expr,
    right: &Expr,
    column: &dyn Fn(usize) -> Option<Collation>,
) -> SqlResult<Collation> {
    Ok(derive(left, column)?
        .combine(derive(right, column)?)?
        .collation)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Collation::*;

    /// Column 0 is `utf8mb4_0900_ai_ci` text, 1 `utf8mb4_bin` text, 2 binary, 3 a number.
    fn column(position: usize) -> Option<Collation> {
        [
            Some(utf8mb4_0900_ai_ci),
            Some(utf8mb4_bin),
            Some(binary),
            None,
        ][position]
    }

    fn compared(left: Expr, right: Expr) -> SqlResult<Collation> {
        comparison(&left, &right, &column)
    }

    fn text(s: &str) -> Expr {
        Expr::Literal(Value::Bytes(s.as_bytes().to_vec()))
    }

    #[test]
    fn the_stronger_side_decides_and_a_literal_takes_the_columns() {
        assert_eq!(compared(Expr::Column(1), text("a")).unwrap(), utf8mb4_bin);
        assert_eq!(compared(text("a"), text("b")).unwrap(), utf8mb4_0900_ai_ci);
        assert_eq!(
            compared(Expr::Column(3), text("1")).unwrap(),
            utf8mb4_0900_ai_ci
        );
        let explicit = Expr::Collate(Box::new(Expr::Column(0)), utf8mb4_general_ci);
        assert_eq!(
            compared(Expr::Column(1), explicit).unwrap(),
            utf8mb4_general_ci
        );
        let upper = Expr::Call(crate::functions::named("upper"), vec![Expr::Column(1)]);
        assert_eq!(compared(upper, text("A")).unwrap(), utf8mb4_bin);
    }

    #[test]
    fn binary_wins_a_tie_and_two_implicit_text_collations_are_error_1267() {
        assert_eq!(compared(Expr::Column(0), Expr::Column(2)).unwrap(), binary);
        let mixed = compared(Expr::Column(0), Expr::Column(1)).unwrap_err();
        assert_eq!(mixed.code, 1267);
        let both_explicit = compared(
            Expr::Collate(Box::new(text("a")), utf8mb4_bin),
            Expr::Collate(Box::new(text("a")), utf8mb4_general_ci),
        );
        assert_eq!(both_explicit.unwrap_err().code, 1267);
    }
}
