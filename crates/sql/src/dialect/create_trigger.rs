//! MySQL's CREATE TRIGGER, which sqlparser parses only with a `BEGIN ... END` body and
//! without `DEFINER`:
//!
//! ```text
//! CREATE [DEFINER = user] TRIGGER [IF NOT EXISTS] name {BEFORE | AFTER}
//!     {INSERT | UPDATE | DELETE} ON table FOR EACH ROW
//!     [{FOLLOWS | PRECEDES} other]  statement | BEGIN [statement; ...] END
//! ```
//!
//! The result is sqlparser's `CreateTrigger`, its body a sequence of statements
//! (`FOLLOWS`/`PRECEDES` is kept as the trigger's condition-free `referenced_table_name`,
//! which Kista refuses).

use sqlparser::ast::{
    BeginEndStatements, ConditionalStatements, CreateTrigger, Statement, TriggerEvent,
    TriggerObject, TriggerPeriod,
};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan};

pub(super) fn starts_create_trigger(parser: &Parser) -> bool {
    let is = |token: &Token, keyword| matches!(token, Token::Word(w) if w.keyword == keyword);
    let [first, second] = parser.peek_tokens::<2>();
    is(&first, Keyword::CREATE) && (is(&second, Keyword::TRIGGER) || is(&second, Keyword::DEFINER))
}

pub(super) fn parse_create_trigger(parser: &mut Parser) -> Result<Statement, ParserError> {
    parser.expect_keyword_is(Keyword::CREATE)?;
    if parser.parse_keyword(Keyword::DEFINER) {
        skip_definer(parser)?;
    }
    parser.expect_keyword_is(Keyword::TRIGGER)?;
    // IF NOT EXISTS is MySQL 8.0.29's; the name follows either way.
    let _ = parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = parser.parse_object_name(false)?;
    let period = match parser.expect_one_of_keywords(&[Keyword::BEFORE, Keyword::AFTER])? {
        Keyword::BEFORE => TriggerPeriod::Before,
        _ => TriggerPeriod::After,
    };
    let event = match parser.expect_one_of_keywords(&[
        Keyword::INSERT,
        Keyword::UPDATE,
        Keyword::DELETE,
    ])? {
        Keyword::INSERT => TriggerEvent::Insert,
        Keyword::UPDATE => TriggerEvent::Update(Vec::new()),
        _ => TriggerEvent::Delete,
    };
    parser.expect_keyword_is(Keyword::ON)?;
    let table_name = parser.parse_object_name(false)?;
    parser.expect_keywords(&[Keyword::FOR, Keyword::EACH, Keyword::ROW])?;
    let ordered_after = if is_word(parser, "FOLLOWS") || parser.parse_keyword(Keyword::PRECEDES) {
        Some(parser.parse_object_name(false)?)
    } else {
        None
    };
    let statements = parse_body(parser)?;
    Ok(Statement::CreateTrigger(CreateTrigger {
        or_alter: false,
        or_replace: false,
        is_constraint: false,
        name,
        period,
        period_before_table: true,
        events: vec![event],
        table_name,
        referenced_table_name: ordered_after,
        referencing: Vec::new(),
        trigger_object: TriggerObject::Row,
        include_each: true,
        condition: None,
        exec_body: None,
        statements_as: false,
        statements: Some(statements),
        characteristics: None,
    }))
}

/// Takes the next token if it is the word `word` (one sqlparser has no keyword for).
fn is_word(parser: &mut Parser, word: &str) -> bool {
    let found = matches!(&parser.peek_token_ref().token,
        Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word));
    if found {
        parser.next_token();
    }
    found
}

/// `DEFINER = user[@host]` or `= CURRENT_USER[()]`: skipped (triggers run with the
/// privileges of the statement that fires them).
fn skip_definer(parser: &mut Parser) -> Result<(), ParserError> {
    parser.expect_token(&Token::Eq)?;
    let _user: TokenWithSpan = parser.next_token();
    if parser.consume_token(&Token::LParen) {
        parser.expect_token(&Token::RParen)?;
    }
    // `@host` arrives as an `@` and a name, or as one word starting with `@`.
    while let Token::AtSign = parser.peek_token_ref().token {
        parser.next_token();
        parser.next_token();
    }
    if let Token::Word(w) = &parser.peek_token_ref().token {
        if w.value.starts_with('@') {
            parser.next_token();
        }
    }
    Ok(())
}

/// One statement, or `BEGIN` statements each ended by `;` `END`.
fn parse_body(parser: &mut Parser) -> Result<ConditionalStatements, ParserError> {
    if !parser.parse_keyword(Keyword::BEGIN) {
        let statement = parser.parse_statement()?;
        return Ok(ConditionalStatements::Sequence {
            statements: vec![statement],
        });
    }
    let begin_token = parser.get_current_token().clone();
    let mut statements = Vec::new();
    loop {
        while parser.consume_token(&Token::SemiColon) {}
        if parser.parse_keyword(Keyword::END) {
            break;
        }
        statements.push(parser.parse_statement()?);
        if !parser.consume_token(&Token::SemiColon) {
            parser.expect_keyword_is(Keyword::END)?;
            break;
        }
    }
    let end_token = parser.get_current_token().clone();
    Ok(ConditionalStatements::BeginEnd(BeginEndStatements {
        begin_token: begin_token.into(),
        statements,
        end_token: end_token.into(),
    }))
}
