//! The SQL dialect Kista parses: sqlparser's MySQL dialect, but with `DIV` binding as
//! tightly as `*` and `/` (MySQL's precedence: `7 DIV 2 + 1` is 4). sqlparser's own
//! dialect parses everything right of a `DIV` as its divisor (giving 2), and panics where
//! none follows (`SELECT 7 DIV`), which would end the connection; here that is a syntax
//! error.
//!
//! MySQL 8's CREATE TABLE syntax sqlparser lacks is parsed here too: a column's `KEY`
//! (short for PRIMARY KEY) and `UNIQUE KEY`, the table options `SECONDARY_ENGINE` and
//! `TABLE_CHECKSUM` (kept with the other options, which Kista ignores), and type names of
//! several words (`NATIONAL VARCHAR`, `LONG VARBINARY`, ...), which
//! [`rewrite_type_names`] turns into the one word sqlparser knows before parsing.
//!
//! Everything else is the MySQL dialect's: every choice it makes is passed on, and the
//! parser's own checks for the MySQL dialect see it (`dialect()`).

use std::any::TypeId;

use sqlparser::ast::{
    BinaryOperator, ColumnOption, CreateTableOptions, Expr, Ident, SqlOption, Statement,
};
use sqlparser::dialect::{Dialect, MySqlDialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

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

    fn parse_statement(&self, parser: &mut Parser) -> Option<Result<Statement, ParserError>> {
        if starts_create_table(parser) {
            return Some(parse_create_table(parser));
        }
        MYSQL.parse_statement(parser)
    }

    fn parse_column_option(
        &self,
        parser: &mut Parser,
    ) -> Result<Option<Result<Option<ColumnOption>, ParserError>>, ParserError> {
        let is_primary = if parser.parse_keyword(Keyword::KEY) {
            true
        } else if parser.parse_keywords(&[Keyword::UNIQUE, Keyword::KEY]) {
            false
        } else {
            return Ok(None);
        };
        let unique = ColumnOption::Unique {
            is_primary,
            characteristics: None,
        };
        Ok(Some(Ok(Some(unique))))
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

/// MySQL's type names of several words, and the one word sqlparser knows for each.
const TYPE_NAMES: [(&[&str], &str); 8] = [
    (&["NATIONAL", "CHARACTER", "VARYING"], "NVARCHAR"),
    (&["NATIONAL", "CHAR", "VARYING"], "NVARCHAR"),
    (&["NATIONAL", "VARCHAR"], "NVARCHAR"),
    (&["NCHAR", "VARYING"], "NVARCHAR"),
    (&["NATIONAL", "CHARACTER"], "NCHAR"),
    (&["NATIONAL", "CHAR"], "NCHAR"),
    (&["LONG", "VARCHAR"], "MEDIUMTEXT"),
    (&["LONG", "VARBINARY"], "MEDIUMBLOB"),
];

/// Rewrites MySQL's type names of several words ([`TYPE_NAMES`]) in a CREATE or ALTER
/// statement's tokens to the one word sqlparser parses: the first word takes the new
/// name, the others become spaces (which the parser skips). Other statements are left
/// alone without a look past their first word.
pub fn rewrite_type_names(tokens: &mut [TokenWithSpan]) {
    let first_word = tokens
        .iter()
        .find(|t| !matches!(t.token, Token::Whitespace(_)));
    let starts_ddl = matches!(first_word.map(|t| &t.token),
        Some(Token::Word(w)) if matches!(w.keyword, Keyword::CREATE | Keyword::ALTER));
    if !starts_ddl {
        return;
    }
    let words: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect();
    let word_at = |tokens: &[TokenWithSpan], i: usize| match &tokens[i].token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    };
    for start in 0..words.len() {
        for (names, one_word) in TYPE_NAMES {
            let Some(positions) = words.get(start..start + names.len()) else {
                continue;
            };
            let matches = positions
                .iter()
                .zip(names)
                .all(|(&i, name)| word_at(tokens, i).as_deref() == Some(*name));
            if matches {
                tokens[positions[0]].token = Token::make_word(one_word, None);
                for &i in &positions[1..] {
                    tokens[i].token = Token::Whitespace(Whitespace::Space);
                }
                break;
            }
        }
    }
}

/// Rewrites MySQL's compound interval units (`INTERVAL '1:30' HOUR_MINUTE`) to the SQL
/// standard's form sqlparser parses (`HOUR TO MINUTE`), where one follows `INTERVAL` and
/// a value. Statements without `INTERVAL` cost one look at each token.
pub fn rewrite_interval_units(tokens: &mut Vec<TokenWithSpan>) {
    let is_interval =
        |t: &TokenWithSpan| matches!(&t.token, Token::Word(w) if w.keyword == Keyword::INTERVAL);
    let mut at = 0;
    while let Some(found) = tokens[at..].iter().position(is_interval) {
        at += found + 1;
        let mut meaningful =
            (at..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)));
        let (Some(_value), Some(unit_at)) = (meaningful.next(), meaningful.next()) else {
            return;
        };
        let Token::Word(word) = &tokens[unit_at].token else {
            continue;
        };
        let Some((leading, last)) = word.value.split_once('_') else {
            continue;
        };
        let is_unit = |name: &str| {
            [
                "MICROSECOND",
                "SECOND",
                "MINUTE",
                "HOUR",
                "DAY",
                "YEAR",
                "MONTH",
            ]
            .iter()
            .any(|unit| unit.eq_ignore_ascii_case(name))
        };
        if word.quote_style.is_some() || !is_unit(leading) || !is_unit(last) {
            continue;
        }
        let span = tokens[unit_at].span;
        let (leading, last) = (leading.to_ascii_uppercase(), last.to_ascii_uppercase());
        let word = |name: &str| TokenWithSpan::new(Token::make_word(name, None), span);
        let space = || TokenWithSpan::new(Token::Whitespace(Whitespace::Space), span);
        tokens.splice(
            unit_at..=unit_at,
            [word(&leading), space(), word("TO"), space(), word(&last)],
        );
    }
}

fn starts_create_table(parser: &Parser) -> bool {
    let is = |token: &Token, keyword| matches!(token, Token::Word(w) if w.keyword == keyword);
    let [first, second, third] = parser.peek_tokens::<3>();
    is(&first, Keyword::CREATE)
        && (is(&second, Keyword::TABLE)
            || is(&second, Keyword::TEMPORARY) && is(&third, Keyword::TABLE))
}

/// `CREATE [TEMPORARY] TABLE ...` as sqlparser parses it, then the table options it
/// stops at: MySQL 8's options it lacks, and any of its own after them.
fn parse_create_table(parser: &mut Parser) -> Result<Statement, ParserError> {
    parser.expect_keyword_is(Keyword::CREATE)?;
    let temporary = parser.parse_keyword(Keyword::TEMPORARY);
    parser.expect_keyword_is(Keyword::TABLE)?;
    let mut statement = parser.parse_create_table(false, temporary, None, false)?;
    let Statement::CreateTable(create) = &mut statement else {
        return Ok(statement);
    };
    while let Some(option) = parse_missing_table_option(parser)? {
        let mut options =
            match std::mem::replace(&mut create.table_options, CreateTableOptions::None) {
                CreateTableOptions::Plain(options) => options,
                CreateTableOptions::None => Vec::new(),
                other => {
                    create.table_options = other;
                    return parser.expected("a table option", parser.peek_token());
                }
            };
        options.push(option);
        options.extend(parser.parse_plain_options()?);
        create.table_options = CreateTableOptions::Plain(options);
    }
    Ok(statement)
}

/// Table options of MySQL 8 that sqlparser does not know (`None`: the next token starts
/// none of them).
fn parse_missing_table_option(parser: &mut Parser) -> Result<Option<SqlOption>, ParserError> {
    const MISSING: [&str; 2] = ["SECONDARY_ENGINE", "TABLE_CHECKSUM"];
    let Token::Word(word) = parser.peek_token().token else {
        return Ok(None);
    };
    let Some(name) = MISSING
        .into_iter()
        .find(|name| word.value.eq_ignore_ascii_case(name))
    else {
        return Ok(None);
    };
    parser.next_token();
    let _ = parser.consume_token(&Token::Eq);
    let value = match parser.maybe_parse(|parser| parser.parse_value())? {
        Some(value) => Expr::Value(value),
        None => Expr::Identifier(parser.parse_identifier()?),
    };
    // Options may be separated by commas, as sqlparser's own.
    let _ = parser.consume_token(&Token::Comma);
    Ok(Some(SqlOption::KeyValue {
        key: Ident::new(name),
        value,
    }))
}

#[cfg(test)]
mod tests {
    use sqlparser::parser::Parser;

    use super::*;

    fn parsed(sql: &str) -> Result<String, ParserError> {
        let statements = Parser::parse_sql(&KistaDialect, sql)?;
        Ok(statements[0].to_string())
    }

    fn rewritten(sql: &str) -> String {
        let mut tokens = sqlparser::tokenizer::Tokenizer::new(&KistaDialect, sql)
            .tokenize_with_location()
            .unwrap();
        rewrite_type_names(&mut tokens);
        let statements = Parser::new(&KistaDialect)
            .with_tokens_with_locations(tokens)
            .parse_statements()
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        statements[0].to_string()
    }

    #[test]
    fn type_names_of_several_words_become_the_one_word_sqlparser_knows() {
        let create = rewritten(
            "CREATE TABLE t (a NATIONAL VARCHAR(5), b NCHAR VARYING (6), \
             c national character varying(7), d NATIONAL CHAR(8), e LONG VARBINARY)",
        );
        assert_eq!(
            create,
            "CREATE TABLE t (a NVARCHAR(5), b NVARCHAR(6), c NVARCHAR(7), d NCHAR(8), \
             e MEDIUMBLOB)"
        );
        // Only in DDL, and never a quoted name or a string.
        let select = rewritten("SELECT `long` varchar, 'NATIONAL VARCHAR' FROM t");
        assert_eq!(
            select,
            "SELECT `long` AS varchar, 'NATIONAL VARCHAR' FROM t"
        );
    }

    #[test]
    fn div_binds_as_tightly_as_multiplication() {
        let plus = parsed("SELECT 7 DIV 2 + 1").unwrap();
        assert_eq!(plus, "SELECT 7 DIV 2 + 1");
        let statements = Parser::parse_sql(&KistaDialect, "SELECT 7 DIV 2 + 1").unwrap();
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
        assert_eq!(*op, BinaryOperator::Plus, "(7 DIV 2) + 1");
        assert!(matches!(
            left.as_ref(),
            Expr::BinaryOp {
                op: BinaryOperator::MyIntegerDivide,
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
    fn mysql_8_create_table_syntax_parses() {
        let key = parsed("CREATE TABLE t (a INT KEY, b INT UNIQUE KEY)").unwrap();
        assert_eq!(key, "CREATE TABLE t (a INT PRIMARY KEY, b INT UNIQUE)");
        for options in [
            "SECONDARY_ENGINE = NULL",
            "SECONDARY_ENGINE `c3`",
            "TABLE_CHECKSUM 4.2 ROW_FORMAT COMPACT",
            "ROW_FORMAT COMPACT SECONDARY_ENGINE 'x' TABLE_CHECKSUM = 1 COMMENT 'y'",
        ] {
            let sql = format!("CREATE TEMPORARY TABLE t (a INT) {options}");
            let create = parsed(&sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
            assert!(create.contains("a INT"), "{create}");
        }
        assert!(parsed("CREATE TABLE t (a INT) SECONDARY_ENGINE").is_err());
        assert!(parsed("CREATE TABLE t (a INT) NO_SUCH_OPTION 1").is_err());
    }

    #[test]
    fn compound_interval_units_become_the_standard_form() {
        let mut tokens = sqlparser::tokenizer::Tokenizer::new(
            &KistaDialect,
            "SELECT d + INTERVAL '1:30' hour_minute, INTERVAL 2 DAY, hour_minute FROM t",
        )
        .tokenize_with_location()
        .unwrap();
        rewrite_interval_units(&mut tokens);
        let statements = Parser::new(&KistaDialect)
            .with_tokens_with_locations(tokens)
            .parse_statements()
            .unwrap();
        assert_eq!(
            statements[0].to_string(),
            "SELECT d + INTERVAL '1:30' HOUR TO MINUTE, INTERVAL 2 DAY, hour_minute FROM t"
        );
    }

    #[test]
    fn the_rest_is_mysql() {
        assert!(parsed("SELECT `a b` FROM t LIMIT 1, 2").is_ok());
        assert!(parsed("LOCK TABLES t READ").is_ok());
        // A backslash escapes, as in MySQL: the literal is `it's`.
        assert_eq!(parsed("SELECT 'it\\'s'").unwrap(), "SELECT 'it''s'");
    }
}
