//! `CREATE DATABASE`'s options, which sqlparser does not parse, cut from the statement's
//! tokens: `[DEFAULT] CHARACTER SET|CHARSET [=] name`, `[DEFAULT] COLLATE [=] name` and
//! `[DEFAULT] ENCRYPTION [=] 'N'` (mysqldump writes all three). The collation they give
//! (the COLLATE, else the character set's default) is the database's default, which its
//! tables take when they name none: names as a table's options take them (every text is
//! stored as utf8mb4: `latin1_swedish_ci` is `utf8mb4_general_ci`). An unknown character
//! set is 1115, an unknown collation 1273, encryption 1235.

use sqlparser::ast;
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

use kista_client::types::Collation;

use super::rewrite::{is_word, word_positions};
use crate::ddl::charset_default;
use crate::error::{SqlError, SqlResult};
use crate::expr::collation_named;

/// Cuts the options of a `CREATE DATABASE|SCHEMA [IF NOT EXISTS] name ...`: the default
/// collation they give, if any. Other statements are left alone without a look past their
/// second word.
pub fn take_create_database_options(tokens: &mut [TokenWithSpan]) -> SqlResult<Option<Collation>> {
    let word_is = |tokens: &[TokenWithSpan], i: usize, word: &str| is_word(&tokens[i].token, word);
    let first_two = {
        let mut words = word_positions(tokens);
        [words.next(), words.next()]
    };
    let [Some(create), Some(what)] = first_two else {
        return Ok(None);
    };
    let creates_database = word_is(tokens, create, "CREATE")
        && (word_is(tokens, what, "DATABASE") || word_is(tokens, what, "SCHEMA"));
    if !creates_database {
        return Ok(None);
    }
    let (mut charset, mut collation) = (None, None);
    let words: Vec<usize> = word_positions(tokens).collect();
    let if_not_exists = words.len() > 4
        && ["IF", "NOT", "EXISTS"]
            .iter()
            .zip(&words[2..5])
            .all(|(word, &i)| word_is(tokens, i, word));
    let mut at = if if_not_exists { 6 } else { 3 };
    while at < words.len() {
        if word_is(tokens, words[at], "DEFAULT") {
            blank(tokens, words[at]);
            at += 1;
            continue;
        }
        let option_words = match () {
            _ if word_is(tokens, words[at], "CHARACTER") => 2,
            _ if ["CHARSET", "COLLATE", "ENCRYPTION"]
                .iter()
                .any(|word| word_is(tokens, words[at], word)) =>
            {
                1
            }
            _ => break, // not an option: the parser says what is wrong
        };
        let option = tokens[words[at]].token.to_string().to_uppercase();
        for &i in words.iter().skip(at).take(option_words) {
            blank(tokens, i);
        }
        at += option_words;
        if words.get(at).is_some_and(|&i| tokens[i].token == Token::Eq) {
            blank(tokens, words[at]);
            at += 1;
        }
        let Some(&value_at) = words.get(at) else {
            return Err(SqlError::syntax(format!("{option} needs a value")));
        };
        let value = match &tokens[value_at].token {
            Token::Word(word) => word.value.to_lowercase(),
            Token::SingleQuotedString(text) => text.to_lowercase(),
            other => return Err(SqlError::syntax(format!("{option} {other}"))),
        };
        match option.as_str() {
            "CHARACTER" | "CHARSET" => charset = Some(charset_default(&value)?),
            "COLLATE" => collation = Some(collation_named(&value)?),
            _ if value == "n" => {}
            _ => return Err(SqlError::not_supported("database encryption")),
        }
        blank(tokens, value_at);
        at += 1;
    }
    Ok(collation.or(charset))
}

/// Puts a database's default `collation` where sqlparser keeps one (CREATE DATABASE's
/// `default_ddl_collation`, CREATE SCHEMA's `default_collate_spec`): what
/// [`database_collation`] reads back when the statement runs.
pub fn give_database_collation(statement: &mut ast::Statement, collation: Collation) {
    let name = collation.name().to_string();
    match statement {
        ast::Statement::CreateDatabase {
            default_ddl_collation,
            ..
        } => *default_ddl_collation = Some(name),
        ast::Statement::CreateSchema {
            default_collate_spec,
            ..
        } => {
            let value = ast::Value::SingleQuotedString(name);
            *default_collate_spec = Some(ast::Expr::value(value));
        }
        _ => {}
    }
}

/// The default collation a CREATE DATABASE or SCHEMA gives its database (`None`: it names
/// none, or `statement` is neither).
pub fn database_collation(statement: &ast::Statement) -> Option<Collation> {
    let name = match statement {
        ast::Statement::CreateDatabase {
            default_ddl_collation: Some(name),
            ..
        } => name.clone(),
        ast::Statement::CreateSchema {
            default_collate_spec: Some(ast::Expr::Value(value)),
            ..
        } => match &value.value {
            ast::Value::SingleQuotedString(name) => name.clone(),
            _ => return None,
        },
        _ => return None,
    };
    Collation::named(&name)
}

fn blank(tokens: &mut [TokenWithSpan], i: usize) {
    tokens[i].token = Token::Whitespace(Whitespace::Space);
}

#[cfg(test)]
mod tests {
    use crate::error::SqlResult;

    fn parsed(sql: &str) -> SqlResult<String> {
        crate::session::parse(sql).map(|parsed| parsed.statement.to_string())
    }

    /// The default collation `sql` gives its database (`None`: none named).
    fn collation_of(sql: &str) -> SqlResult<Option<&'static str>> {
        crate::session::parse(sql)
            .map(|parsed| super::database_collation(&parsed.statement).map(|c| c.name()))
    }

    #[test]
    fn a_database_takes_the_collation_its_options_name() {
        let cases = [
            ("CREATE DATABASE s", None),
            ("CREATE DATABASE s COLLATE utf8mb4_bin", Some("utf8mb4_bin")),
            // MariaDB's dumps, and MySQL 5.7's.
            (
                "CREATE DATABASE s DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci",
                Some("utf8mb4_general_ci"),
            ),
            (
                "CREATE DATABASE s CHARACTER SET latin1",
                Some("utf8mb4_0900_ai_ci"),
            ),
            (
                "CREATE DATABASE s COLLATE = latin1_swedish_ci",
                Some("utf8mb4_general_ci"),
            ),
        ];
        for (sql, expected) in cases {
            assert_eq!(collation_of(sql).unwrap(), expected, "{sql}");
        }
        for (sql, code) in [
            ("CREATE DATABASE s CHARACTER SET klingon", 1115),
            ("CREATE DATABASE s COLLATE nope_ci", 1273),
            ("CREATE DATABASE s ENCRYPTION 'Y'", 1235),
        ] {
            assert_eq!(parsed(sql).unwrap_err().code, code, "{sql}");
        }
    }

    #[test]
    fn the_options_mysqldump_writes_are_taken_and_others_refused() {
        let dumped = "CREATE DATABASE /*!32312 IF NOT EXISTS*/ `shop` DEFAULT CHARACTER SET \
                      utf8mb4 COLLATE utf8mb4_0900_ai_ci DEFAULT ENCRYPTION='N'";
        let dumped = dumped.replace("/*!32312 IF NOT EXISTS*/", "IF NOT EXISTS");
        assert_eq!(collation_of(&dumped).unwrap(), Some("utf8mb4_0900_ai_ci"));
        assert_eq!(
            collation_of("create schema s charset = utf8").unwrap(),
            Some("utf8mb4_0900_ai_ci")
        );
    }
}
