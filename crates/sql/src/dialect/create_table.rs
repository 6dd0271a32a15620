//! MySQL 8's CREATE TABLE syntax sqlparser lacks: a column's `KEY` (short for PRIMARY KEY)
//! and `UNIQUE KEY`, and the table options `SECONDARY_ENGINE` and `TABLE_CHECKSUM` (kept
//! with the other options, which Kista ignores).

use sqlparser::ast::{ColumnOption, CreateTableOptions, Expr, Ident, SqlOption, Statement};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// A column's `KEY` or `UNIQUE KEY` (`None`: neither comes next).
pub(super) fn parse_column_key(
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

pub(super) fn starts_create_table(parser: &Parser) -> bool {
    let is = |token: &Token, keyword| matches!(token, Token::Word(w) if w.keyword == keyword);
    let [first, second, third] = parser.peek_tokens::<3>();
    is(&first, Keyword::CREATE)
        && (is(&second, Keyword::TABLE)
            || is(&second, Keyword::TEMPORARY) && is(&third, Keyword::TABLE))
}

/// `CREATE [TEMPORARY] TABLE ...` as sqlparser parses it, then the table options it
/// stops at: MySQL 8's options it lacks, and any of its own after them.
pub(super) fn parse_create_table(parser: &mut Parser) -> Result<Statement, ParserError> {
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
    use super::super::tests::parsed;

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
}
