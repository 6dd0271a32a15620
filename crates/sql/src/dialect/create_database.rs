//! `CREATE DATABASE`'s options, which sqlparser does not parse, cut from the statement's
//! tokens: `[DEFAULT] CHARACTER SET|CHARSET [=] name`, `[DEFAULT] COLLATE [=] name` and
//! `[DEFAULT] ENCRYPTION [=] 'N'` (mysqldump writes all three). Kista's databases keep no
//! defaults of their own: a table's text is utf8mb4 in MySQL 8's default collation unless
//! the table says otherwise. So options asking for those are taken, and any other refused
//! (1235) rather than leave the database's tables in another collation than asked.

use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

use super::rewrite::{is_word, word_positions};
use crate::error::{SqlError, SqlResult};
use crate::information_schema::COLLATION;

/// The character sets a database may ask for: utf8mb4, by any of its names.
const CHARSETS: [&str; 3] = ["utf8mb4", "utf8mb3", "utf8"];

/// Cuts the options of a `CREATE DATABASE|SCHEMA [IF NOT EXISTS] name ...`; other
/// statements are left alone without a look past their second word.
pub fn take_create_database_options(tokens: &mut [TokenWithSpan]) -> SqlResult<()> {
    let word_is = |tokens: &[TokenWithSpan], i: usize, word: &str| is_word(&tokens[i].token, word);
    let first_two = {
        let mut words = word_positions(tokens);
        [words.next(), words.next()]
    };
    let [Some(create), Some(what)] = first_two else {
        return Ok(());
    };
    let creates_database = word_is(tokens, create, "CREATE")
        && (word_is(tokens, what, "DATABASE") || word_is(tokens, what, "SCHEMA"));
    if !creates_database {
        return Ok(());
    }
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
            _ => return Ok(()), // not an option: the parser says what is wrong
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
        check(&option, &value)?;
        blank(tokens, value_at);
        at += 1;
    }
    Ok(())
}

/// Whether Kista's databases hold what `option` asks (see the module's comment).
fn check(option: &str, value: &str) -> SqlResult<()> {
    let holds = match option {
        "CHARACTER" | "CHARSET" => CHARSETS.contains(&value),
        "COLLATE" => value == COLLATION,
        _ => value == "n",
    };
    if holds {
        return Ok(());
    }
    Err(SqlError::not_supported(format!(
        "a database default {option} {value} (a database's tables are utf8mb4, \
         {COLLATION} unless they say otherwise)"
    )))
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

    #[test]
    fn the_options_mysqldump_writes_are_taken_and_others_refused() {
        let dumped = "CREATE DATABASE /*!32312 IF NOT EXISTS*/ `shop` DEFAULT CHARACTER SET \
                      utf8mb4 COLLATE utf8mb4_0900_ai_ci DEFAULT ENCRYPTION='N'";
        let dumped = dumped.replace("/*!32312 IF NOT EXISTS*/", "IF NOT EXISTS");
        assert_eq!(
            parsed(&dumped).unwrap(),
            "CREATE DATABASE IF NOT EXISTS `shop`"
        );
        assert_eq!(
            parsed("create schema s charset = utf8").unwrap(),
            "CREATE SCHEMA s"
        );
        for refused in [
            "CREATE DATABASE s COLLATE utf8mb4_bin",
            "CREATE DATABASE s CHARACTER SET latin1",
            "CREATE DATABASE s ENCRYPTION 'Y'",
        ] {
            assert_eq!(parsed(refused).unwrap_err().code, 1235, "{refused}");
        }
    }
}
