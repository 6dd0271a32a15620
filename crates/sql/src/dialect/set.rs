//! MySQL's SET of variables, which sqlparser parses only in part: a list of any mix of
//! `[GLOBAL|SESSION|LOCAL] name = value`, `@@[scope.]name = value`, `@user = value`,
//! `NAMES charset [COLLATE collation]` and `CHARACTER SET charset` (`=` or `:=`).
//! Drivers send such lists at connect (`SET autocommit=1, NAMES utf8mb4`). NAMES and
//! CHARACTER SET become the assignments of the variables they set, as in MySQL.
//! SET TRANSACTION, SET PASSWORD and SET ROLE are left to sqlparser.

use sqlparser::ast::{ContextModifier, Expr, Ident, ObjectName, Set, SetAssignment, Statement};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// Whether the statement is a SET of variables.
pub(super) fn starts_set_variables(parser: &Parser) -> bool {
    let [first, second, third] = parser.peek_tokens::<3>();
    let keyword = |token: &Token| match token {
        Token::Word(w) => w.keyword,
        _ => Keyword::NoKeyword,
    };
    let others = [
        Keyword::TRANSACTION,
        Keyword::PASSWORD,
        Keyword::ROLE,
        Keyword::DEFAULT,
    ];
    keyword(&first) == Keyword::SET
        && !others.contains(&keyword(&second))
        && keyword(&third) != Keyword::TRANSACTION
}

pub(super) fn parse_set_variables(parser: &mut Parser) -> Result<Statement, ParserError> {
    parser.expect_keyword_is(Keyword::SET)?;
    let mut assignments = Vec::new();
    loop {
        parse_item(parser, &mut assignments)?;
        if !parser.consume_token(&Token::Comma) {
            break;
        }
    }
    Ok(Statement::Set(Set::MultipleAssignments { assignments }))
}

fn parse_item(
    parser: &mut Parser,
    assignments: &mut Vec<SetAssignment>,
) -> Result<(), ParserError> {
    let sets = |names: &[&str], value: &str, assignments: &mut Vec<SetAssignment>| {
        for name in names {
            assignments.push(assignment(None, name, Expr::Identifier(Ident::new(value))));
        }
    };
    if parser.parse_keyword(Keyword::NAMES) {
        let charset = parse_name(parser)?;
        let names = [
            "character_set_client",
            "character_set_connection",
            "character_set_results",
        ];
        sets(&names, &charset, assignments);
        if parser.parse_keyword(Keyword::COLLATE) {
            let collation = parse_name(parser)?;
            sets(&["collation_connection"], &collation, assignments);
        }
        return Ok(());
    }
    if parser.parse_keywords(&[Keyword::CHARACTER, Keyword::SET])
        || parser.parse_keyword(Keyword::CHARSET)
    {
        let charset = parse_name(parser)?;
        sets(
            &["character_set_client", "character_set_results"],
            &charset,
            assignments,
        );
        return Ok(());
    }
    let scope = parse_scope(parser);
    let name = parser.parse_object_name(false)?;
    if !parser.consume_token(&Token::Eq) && !parser.consume_token(&Token::Assignment) {
        return parser.expected("= or :=", parser.peek_token());
    }
    let value = match parser.maybe_parse(|parser| parser.parse_expr())? {
        Some(value) => value,
        // `ON`, `ALL` and other keywords stand for themselves.
        None => Expr::Identifier(parser.parse_identifier()?),
    };
    assignments.push(SetAssignment { scope, name, value });
    Ok(())
}

/// `GLOBAL`, `SESSION` or `LOCAL` before a name (`PERSIST` is taken for GLOBAL).
fn parse_scope(parser: &mut Parser) -> Option<ContextModifier> {
    let [word, next] = parser.peek_tokens::<2>();
    let Token::Word(word) = word else {
        return None;
    };
    // `SET session = 1` names a variable called session.
    if matches!(next, Token::Eq | Token::Assignment | Token::Period) {
        return None;
    }
    let scope = match word.keyword {
        Keyword::GLOBAL => ContextModifier::Global,
        Keyword::SESSION => ContextModifier::Session,
        Keyword::LOCAL => ContextModifier::Local,
        _ if ["PERSIST", "PERSIST_ONLY"]
            .iter()
            .any(|persist| word.value.eq_ignore_ascii_case(persist)) =>
        {
            ContextModifier::Global
        }
        _ => return None,
    };
    parser.next_token();
    Some(scope)
}

/// A character set or collation name: a word, a string or DEFAULT.
fn parse_name(parser: &mut Parser) -> Result<String, ParserError> {
    let token = parser.next_token();
    match token.token {
        Token::Word(word) => Ok(word.value),
        Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => Ok(s),
        _ => parser.expected("a character set or collation name", token),
    }
}

fn assignment(scope: Option<ContextModifier>, name: &str, value: Expr) -> SetAssignment {
    SetAssignment {
        scope,
        name: ObjectName::from(vec![Ident::new(name)]),
        value,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::parsed;

    #[test]
    fn lists_mix_names_variables_and_user_variables() {
        let set = parsed("SET autocommit=1, NAMES utf8mb4 COLLATE utf8mb4_bin, @x := 2").unwrap();
        assert_eq!(
            set,
            "SET autocommit = 1, character_set_client = utf8mb4, \
             character_set_connection = utf8mb4, character_set_results = utf8mb4, \
             collation_connection = utf8mb4_bin, @x = 2"
        );
        let scoped = parsed("SET SESSION sql_mode = 'x', @@global.wait_timeout = 5").unwrap();
        assert_eq!(
            scoped,
            "SET SESSION sql_mode = 'x', @@global.wait_timeout = 5"
        );
        let subquery = parsed("SET sql_mode = (SELECT CONCAT(@@sql_mode, ',X'))").unwrap();
        assert!(subquery.contains("(SELECT CONCAT"), "{subquery}");
        assert_eq!(
            parsed("SET sql_safe_updates = ON").unwrap(),
            "SET sql_safe_updates = ON"
        );
        assert_eq!(
            parsed("SET CHARACTER SET 'latin1'").unwrap(),
            "SET character_set_client = latin1, character_set_results = latin1"
        );
    }

    #[test]
    fn transactions_and_malformed_lists_are_not_taken() {
        assert!(parsed("SET TRANSACTION ISOLATION LEVEL READ COMMITTED").is_ok());
        assert!(parsed("SET SESSION TRANSACTION READ ONLY").is_ok());
        assert!(parsed("SET autocommit 1").is_err());
        assert!(parsed("SET autocommit = 1,").is_err());
    }
}
