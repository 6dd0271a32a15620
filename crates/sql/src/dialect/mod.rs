//! The SQL dialect Kista parses: sqlparser's MySQL dialect, but with `DIV` binding as
//! tightly as `*` and `/` (MySQL's precedence: `7 DIV 2 + 1` is 4). sqlparser's own
//! dialect parses everything right of a `DIV` as its divisor (giving 2), and panics where
//! none follows (`SELECT 7 DIV`), which would end the connection; here that is a syntax
//! error.
//!
//! MySQL syntax sqlparser lacks is parsed here too: MySQL 8's CREATE TABLE
//! (`create_table.rs`), CREATE TRIGGER with a one-statement body or a DEFINER
//! (`create_trigger.rs`), SET's lists of variables, NAMES and CHARACTER SET (`set.rs`),
//! the SHOW statements that are views of `information_schema`, as their queries
//! (`show.rs`), and, before parsing, rewritten in the statement's tokens into
//! forms sqlparser knows (`rewrite.rs`: type names of several words, compound interval
//! units, DISABLE/ENABLE KEYS, SELECT's modifiers), or cut from them (CREATE DATABASE's
//! options, `create_database.rs`). Before all that, a statement whose operators string
//! together too long a chain for the passes over its tree is refused (`operator_runs.rs`).
//!
//! Everything else is the MySQL dialect's: every choice it makes is passed on, and the
//! parser's own checks for the MySQL dialect see it (`dialect()`).

use std::any::TypeId;

mod create_database;
mod create_table;
mod create_trigger;
mod operator_runs;
mod rewrite;
mod set;
mod show;

pub use create_database::{
    database_collation, give_database_collation, take_create_database_options,
};
pub use operator_runs::check_operator_runs;
pub use rewrite::{
    keep_show_warnings_limit, rewrite_alter_keys, rewrite_consistent_snapshot,
    rewrite_interval_units, rewrite_type_names, take_select_modifiers,
};

use sqlparser::ast::{BinaryOperator, ColumnOption, Expr, Statement};
use sqlparser::dialect::{Dialect, MySqlDialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// MySQL as sqlparser knows it, with MySQL's `DIV`.
#[derive(Debug, Default)]
pub struct KistaDialect;

const MYSQL: MySqlDialect = MySqlDialect {};

impl Dialect for KistaDialect {
    fn dialect(&self) -> TypeId {
        TypeId::of::<MySqlDialect>()
    }

    fn parse_infix(
        &self,
        parser: &mut Parser,
        expr: &Expr,
        precedence: u8,
    ) -> Option<Result<Expr, ParserError>> {
        if !parser.parse_keyword(Keyword::DIV) {
            return None;
        }
        // `precedence` is DIV's own (that of `*`): the divisor is what binds tighter.
        Some(
            parser
                .parse_subexpr(precedence)
                .map(|divisor| Expr::BinaryOp {
                    left: Box::new(expr.clone()),
                    op: BinaryOperator::MyIntegerDivide,
                    right: Box::new(divisor),
                }),
        )
    }

    /// MySQL's JSON operators `->` and `->>` bind tighter than any other (sqlparser gives
    /// them PostgreSQL's precedence, below `=`, so `doc->'$.a' = 1` would extract `'$.a' = 1`).
    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        match parser.peek_token_ref().token {
            Token::Arrow | Token::LongArrow => Some(Ok(
                self.prec_value(sqlparser::dialect::Precedence::DoubleColon)
            )),
            _ => None,
        }
    }

    fn parse_statement(&self, parser: &mut Parser) -> Option<Result<Statement, ParserError>> {
        if create_table::starts_create_table(parser) {
            return Some(create_table::parse_create_table(parser));
        }
        if create_trigger::starts_create_trigger(parser) {
            return Some(create_trigger::parse_create_trigger(parser));
        }
        if set::starts_set_variables(parser) {
            return Some(set::parse_set_variables(parser));
        }
        if show::starts_show_view(parser) {
            return Some(show::parse_show_view(parser));
        }
        if show::starts_show_create_database(parser) {
            return Some(show::parse_show_create_database(parser));
        }
        MYSQL.parse_statement(parser)
    }

    fn parse_column_option(
        &self,
        parser: &mut Parser,
    ) -> Result<Option<Result<Option<ColumnOption>, ParserError>>, ParserError> {
        create_table::parse_column_key(parser)
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        MYSQL.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        MYSQL.is_identifier_part(ch)
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        MYSQL.is_delimited_identifier_start(ch)
    }

    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        MYSQL.identifier_quote_style(identifier)
    }

    fn supports_string_literal_backslash_escape(&self) -> bool {
        MYSQL.supports_string_literal_backslash_escape()
    }

    fn supports_string_literal_concatenation(&self) -> bool {
        MYSQL.supports_string_literal_concatenation()
    }

    fn ignores_wildcard_escapes(&self) -> bool {
        MYSQL.ignores_wildcard_escapes()
    }

    fn supports_numeric_prefix(&self) -> bool {
        MYSQL.supports_numeric_prefix()
    }

    fn require_interval_qualifier(&self) -> bool {
        MYSQL.require_interval_qualifier()
    }

    fn supports_limit_comma(&self) -> bool {
        MYSQL.supports_limit_comma()
    }

    fn supports_create_table_select(&self) -> bool {
        MYSQL.supports_create_table_select()
    }

    fn supports_insert_set(&self) -> bool {
        MYSQL.supports_insert_set()
    }

    fn supports_user_host_grantee(&self) -> bool {
        MYSQL.supports_user_host_grantee()
    }

    fn is_table_factor_alias(&self, explicit: bool, kw: &Keyword, parser: &mut Parser) -> bool {
        MYSQL.is_table_factor_alias(explicit, kw, parser)
    }

    fn supports_table_hints(&self) -> bool {
        MYSQL.supports_table_hints()
    }

    fn requires_single_line_comment_whitespace(&self) -> bool {
        MYSQL.requires_single_line_comment_whitespace()
    }

    fn supports_match_against(&self) -> bool {
        MYSQL.supports_match_against()
    }

    fn supports_set_names(&self) -> bool {
        MYSQL.supports_set_names()
    }

    fn supports_comma_separated_set_assignments(&self) -> bool {
        MYSQL.supports_comma_separated_set_assignments()
    }

    fn supports_data_type_signed_suffix(&self) -> bool {
        MYSQL.supports_data_type_signed_suffix()
    }

    fn supports_cross_join_constraint(&self) -> bool {
        MYSQL.supports_cross_join_constraint()
    }
}

#[cfg(test)]
mod tests {
    use sqlparser::parser::Parser;

    use super::*;

    pub(super) fn parsed(sql: &str) -> Result<String, ParserError> {
        let statements = Parser::parse_sql(&KistaDialect, sql)?;
        Ok(statements[0].to_string())
    }

    /// The outermost operation of the first item of a SELECT: its left side, its operator.
    fn first_operation(sql: &str) -> (Expr, BinaryOperator) {
        let statements = Parser::parse_sql(&KistaDialect, sql).unwrap();
        let Statement::Query(query) = &statements[0] else {
            panic!("a query")
        };
        let sqlparser::ast::SetExpr::Select(select) = query.body.as_ref() else {
            panic!("a select")
        };
        let sqlparser::ast::SelectItem::UnnamedExpr(Expr::BinaryOp { left, op, .. }) =
            &select.projection[0]
        else {
            panic!("a binary operation")
        };
        (left.as_ref().clone(), op.clone())
    }

    #[test]
    fn div_binds_as_tightly_as_multiplication() {
        let plus = parsed("SELECT 7 DIV 2 + 1").unwrap();
        assert_eq!(plus, "SELECT 7 DIV 2 + 1");
        let (left, op) = first_operation("SELECT 7 DIV 2 + 1");
        assert_eq!(op, BinaryOperator::Plus, "(7 DIV 2) + 1");
        assert!(matches!(
            left,
            Expr::BinaryOp {
                op: BinaryOperator::MyIntegerDivide,
                ..
            }
        ));
    }

    #[test]
    fn json_arrows_bind_tighter_than_comparison() {
        let (left, op) = first_operation("SELECT d->>'$.a' = '1'");
        assert_eq!(op, BinaryOperator::Eq, "(d->>'$.a') = '1'");
        assert!(matches!(
            left,
            Expr::BinaryOp {
                op: BinaryOperator::LongArrow,
                ..
            }
        ));
    }

    #[test]
    fn a_div_without_a_divisor_is_a_syntax_error_not_a_panic() {
        assert!(parsed("SELECT 7 DIV").is_err());
        assert!(parsed("SELECT 7 DIV )").is_err());
    }

    #[test]
    fn the_rest_is_mysql() {
        assert!(parsed("SELECT `a b` FROM t LIMIT 1, 2").is_ok());
        assert!(parsed("LOCK TABLES t READ").is_ok());
        // A backslash escapes, as in MySQL: the literal is `it's`.
        assert_eq!(parsed("SELECT 'it\\'s'").unwrap(), "SELECT 'it''s'");
    }
}
