//! Text INSERTs parsed once per shape.
//!
//! Applications, loaders and sysbench's `oltp_insert` send INSERTs as text, the same
//! statement again and again with other values. Parsing each with sqlparser took a fifth of
//! the SQL front end's CPU. Here the literals of an `INSERT`/`REPLACE ... VALUES` are cut
//! out (its *shape*: `INSERT INTO t (a, b) VALUES (?, ?)`, and the values), the shape is
//! parsed once per connection and kept, and each statement runs as the shape with its
//! values as parameters, as a prepared statement would.
//!
//! The cut is conservative, since a parameter is not a literal everywhere (`ORDER BY 1`
//! names a column, `DECIMAL(10,2)` is no value). Only unsigned integers and plain
//! single-quoted strings without escapes are cut; a statement with a `?`, a comment, a
//! double-quoted string, an escape (`\\`, `''`) or a literal with a prefix (`N'..'`, `0x..`,
//! `1.5`) is parsed whole;
//! and a shape is kept only if every `?` in it stands alone as a value of a VALUES row,
//! where a parameter and the literal it replaced give the same value. Any other shape is
//! remembered as one to parse whole.

use std::collections::HashMap;
use std::rc::Rc;

use sqlparser::ast::{self, SetExpr, Statement};

use kista_client::types::Value;

use crate::error::SqlResult;
use crate::expr::number;
use crate::session::{parse, Parsed};

/// Shapes one connection keeps; when full, it starts over.
pub const SHAPES_MAX: usize = 64;
/// A longer statement is parsed whole: a bulk INSERT's shape (its row count) rarely
/// comes back.
pub const SHAPE_BYTES_MAX: usize = 4096;

/// One connection's parsed shapes.
#[derive(Default)]
pub struct TextStatements {
    /// Shape → its parse, or `None`: parse statements of this shape whole.
    shapes: HashMap<String, Option<Rc<Parsed>>>,
    /// The shape being cut, kept for its buffer.
    shape: String,
}

impl TextStatements {
    /// `sql` parsed, and the values of its `?`s (none when parsed whole).
    pub fn parse(&mut self, sql: &str) -> SqlResult<(Rc<Parsed>, Vec<Value>)> {
        let mut values = Vec::new();
        if !cut_literals(sql, &mut self.shape, &mut values) {
            return Ok((Rc::new(parse(sql)?), Vec::new()));
        }
        let cached = match self.shapes.get(self.shape.as_str()) {
            Some(cached) => cached.clone(),
            None => self.parse_shape(values.len()),
        };
        match cached {
            Some(parsed) => Ok((parsed, values)),
            None => Ok((Rc::new(parse(sql)?), Vec::new())),
        }
    }

    /// Parses the current shape and keeps it (or that it is to be parsed whole).
    fn parse_shape(&mut self, literals: usize) -> Option<Rc<Parsed>> {
        let parsed = parse(&self.shape)
            .ok()
            .filter(|parsed| every_parameter_is_a_row_value(parsed, literals))
            .map(Rc::new);
        if self.shapes.len() >= SHAPES_MAX {
            self.shapes.clear();
        }
        self.shapes.insert(self.shape.clone(), parsed.clone());
        parsed
    }
}

/// Cuts the literals out of an INSERT or REPLACE into `shape` (each a `?`) and `values`;
/// false when `sql` is not one, or has anything the cut does not handle.
fn cut_literals(sql: &str, shape: &mut String, values: &mut Vec<Value>) -> bool {
    shape.clear();
    values.clear();
    let bytes = sql.as_bytes();
    if bytes.len() > SHAPE_BYTES_MAX || !starts_an_insert(sql) {
        return false;
    }
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        let (end, value) = match byte {
            b'?' | b'"' | b'#' => return false,
            b'-' if bytes.get(at + 1) == Some(&b'-') => return false,
            b'/' if bytes.get(at + 1) == Some(&b'*') => return false,
            b'`' => match quoted_end(bytes, at, b'`') {
                Some(end) => (end, None),
                None => return false,
            },
            b'\'' => match quoted_end(bytes, at, b'\'') {
                Some(end) => (end, Some(Value::Bytes(bytes[at + 1..end - 1].to_vec()))),
                None => return false,
            },
            b'0'..=b'9' if at > 0 && bytes[at - 1] == b'.' => return false,
            b'0'..=b'9' => {
                let end = word_end(bytes, at);
                let digits = &sql[at..end];
                let followed_by_point = bytes.get(end) == Some(&b'.');
                if followed_by_point || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return false;
                }
                match number(digits) {
                    Ok(value) => (end, Some(value)),
                    Err(_) => return false,
                }
            }
            _ if is_word_byte(byte) => (word_end(bytes, at), None),
            _ => (at + 1, None),
        };
        if let Some(value) = value {
            shape.push_str(&sql[copied..at]);
            shape.push('?');
            values.push(value);
            copied = end;
        }
        at = end;
    }
    shape.push_str(&sql[copied..]);
    !values.is_empty()
}

fn starts_an_insert(sql: &str) -> bool {
    let text = sql.trim_start();
    let first = &text[..word_end(text.as_bytes(), 0)];
    first.eq_ignore_ascii_case("INSERT") || first.eq_ignore_ascii_case("REPLACE")
}

/// Where the word starting at `at` ends: letters, digits, `_`, `$` and any byte of a
/// multi-byte character (MySQL's unquoted identifiers), so a digit inside `t1` or `é1`
/// is never taken for a number.
fn word_end(bytes: &[u8], at: usize) -> usize {
    let length = bytes[at..].iter().take_while(|&&b| is_word_byte(b)).count();
    at + length
}

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$' || !byte.is_ascii()
}

/// The end (past the closing quote) of the quoted text starting at `at`; `None` when it
/// is not closed, holds an escape (`'it''s'`, `'a\\b'`: the text is not the bytes, which
/// the cut leaves to the parser), or when a word runs into it (`N'..'`, `X'..'`,
/// `_utf8mb4'..'`).
fn quoted_end(bytes: &[u8], at: usize, quote: u8) -> Option<usize> {
    if at > 0 && is_word_byte(bytes[at - 1]) {
        return None;
    }
    let close = at + 1 + bytes[at + 1..].iter().position(|&b| b == quote)?;
    if bytes[at + 1..close].contains(&b'\\') {
        return None;
    }
    let end = close + 1;
    let doubled = bytes.get(end) == Some(&quote);
    let word_follows = bytes.get(end).is_some_and(|&b| is_word_byte(b));
    (!doubled && !word_follows).then_some(end)
}

/// Whether `parsed` is an INSERT/REPLACE whose `?`s (`literals` of them) all stand alone
/// as values of its VALUES rows.
fn every_parameter_is_a_row_value(parsed: &Parsed, literals: usize) -> bool {
    let Statement::Insert(insert) = &parsed.statement else {
        return false;
    };
    let Some(source) = &insert.source else {
        return false;
    };
    let SetExpr::Values(values) = source.body.as_ref() else {
        return false;
    };
    let is_parameter = |expr: &ast::Expr| matches!(expr, ast::Expr::Value(v) if matches!(&v.value, ast::Value::Placeholder(p) if p == "?"));
    let row_values = values.rows.iter().flatten().filter(|e| is_parameter(e));
    parsed.placeholders.len() == literals && row_values.count() == literals
}

#[cfg(test)]
mod tests;
