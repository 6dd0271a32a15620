//! A bound on operators strung together, checked on the tokens before parsing.
//!
//! The parser's recursion limit bounds nesting by parentheses, prefixes and subqueries,
//! but it builds a chain `a + b + c + ...` in a loop: the tree it makes is as deep as the
//! chain is long, with no limit. Binding refuses an expression deeper than
//! `expr::EXPRESSION_DEPTH_MAX`, but what runs before binding (dropping the tree,
//! printing it, walking it for the tables it names) recurses over the whole depth, and a
//! chain of a million terms (2 MB of text) would overflow the connection's stack and end
//! the process. So the operators of one run (the tokens at one level of parentheses
//! between commas) are counted here first: a chain is never deeper than its run has
//! operators.

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::error::{SqlError, SqlResult};

/// Operators one run of tokens may hold: well above any expression binding accepts, and
/// well below the depth the passes before binding survive (over 100,000 in a
/// connection's stack).
pub const OPERATORS_PER_RUN_MAX: usize = 20_000;

/// Error 1064 when some run of `tokens` holds more than [`OPERATORS_PER_RUN_MAX`]
/// operators.
pub fn check_operator_runs(tokens: &[TokenWithSpan]) -> SqlResult<()> {
    // Operators counted in the open run of each level of parentheses, outermost first.
    let mut runs: Vec<usize> = vec![0];
    for token in tokens {
        match &token.token {
            Token::LParen => runs.push(0),
            Token::RParen if runs.len() > 1 => {
                runs.pop();
            }
            Token::Comma | Token::SemiColon => {
                if let Some(run) = runs.last_mut() {
                    *run = 0;
                }
            }
            token if is_operator(token) => {
                let Some(run) = runs.last_mut() else {
                    continue;
                };
                *run += 1;
                if *run > OPERATORS_PER_RUN_MAX {
                    return Err(SqlError::syntax(format!(
                        "more than {OPERATORS_PER_RUN_MAX} operators in a row without \
                         parentheses or commas"
                    )));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether `token` may join two operands into a deeper tree: a symbol, or a word such as
/// AND, OR, LIKE or IS.
fn is_operator(token: &Token) -> bool {
    match token {
        Token::Word(word) => matches!(
            word.keyword,
            Keyword::AND
                | Keyword::OR
                | Keyword::XOR
                | Keyword::IS
                | Keyword::NOT
                | Keyword::LIKE
                | Keyword::RLIKE
                | Keyword::REGEXP
                | Keyword::DIV
                | Keyword::MOD
                | Keyword::COLLATE
                | Keyword::BETWEEN
                | Keyword::IN
                | Keyword::ESCAPE
                | Keyword::MEMBER
        ),
        Token::Whitespace(_)
        | Token::Number(..)
        | Token::SingleQuotedString(_)
        | Token::DoubleQuotedString(_)
        | Token::NationalStringLiteral(_)
        | Token::HexStringLiteral(_)
        | Token::Placeholder(_)
        | Token::Char(_)
        | Token::EOF => false,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::tokenizer::Tokenizer;

    fn check(sql: &str) -> SqlResult<()> {
        let tokens = Tokenizer::new(&super::super::KistaDialect, sql)
            .tokenize_with_location()
            .unwrap();
        check_operator_runs(&tokens)
    }

    #[test]
    fn a_chain_longer_than_the_bound_is_refused_before_it_is_parsed() {
        let terms = |n: usize| vec!["1"; n].join(" + ");
        check(&format!("SELECT {}", terms(OPERATORS_PER_RUN_MAX + 1))).unwrap();
        let refused = check(&format!("SELECT {}", terms(OPERATORS_PER_RUN_MAX + 2)));
        assert_eq!(refused.unwrap_err().code, 1064);
        let ors = vec!["a = 1"; OPERATORS_PER_RUN_MAX].join(" OR ");
        let refused = check(&format!("SELECT * FROM t WHERE {ors}"));
        assert_eq!(refused.unwrap_err().code, 1064, "words count too");
    }

    #[test]
    fn commas_and_parentheses_start_new_runs() {
        let row = format!("({})", vec!["1 + 1"; 100].join(", "));
        let rows = vec![row.as_str(); OPERATORS_PER_RUN_MAX / 50].join(", ");
        check(&format!("INSERT INTO t VALUES {rows}")).unwrap();
        let nested = vec!["(1 + 1)"; OPERATORS_PER_RUN_MAX / 2].join(" * ");
        check(&format!("SELECT {nested}")).unwrap();
    }
}
