//! MySQL syntax rewritten in a statement's tokens, before parsing, into forms sqlparser
//! parses: type names of several words (`NATIONAL VARCHAR` is NVARCHAR) and compound
//! interval units (`INTERVAL '1:30' HOUR_MINUTE` is the standard `HOUR TO MINUTE`); and
//! SELECT's modifiers, cut out (`SQL_CALC_FOUND_ROWS` noted).

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

/// Whether `token` is the unquoted word `word`, in any case.
pub(super) fn is_word(token: &Token, word: &str) -> bool {
    matches!(token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

/// The positions of the tokens that are neither whitespace nor `;`, in order.
pub(super) fn word_positions(tokens: &[TokenWithSpan]) -> impl Iterator<Item = usize> + '_ {
    (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_) | Token::SemiColon))
}

/// Keeps the numbers of `SHOW WARNINGS LIMIT [offset,] count`: sqlparser reads SHOW's
/// words as identifiers and drops the numbers (and the comma), so they become words.
pub fn keep_show_warnings_limit(tokens: &mut Vec<TokenWithSpan>) {
    let words: Vec<usize> = word_positions(tokens).take(3).collect();
    let starts = |at: usize, word: &str| {
        words
            .get(at)
            .is_some_and(|&i| is_word(&tokens[i].token, word))
    };
    let listed = starts(1, "WARNINGS") || starts(1, "ERRORS");
    if !(starts(0, "SHOW") && listed && starts(2, "LIMIT")) {
        return;
    }
    tokens.retain(|t| t.token != Token::Comma);
    for token in tokens.iter_mut() {
        if let Token::Number(number, _) = &token.token {
            token.token = Token::make_word(number, None);
        }
    }
}

/// `ALTER TABLE t DISABLE KEYS` / `ENABLE KEYS` (mysqldump wraps each table's rows in
/// them) become `ALTER TABLE t ALGORITHM = DEFAULT`, which changes nothing: Kista's
/// indexes are kept as rows are written, as InnoDB's are (MySQL ignores them there too).
pub fn rewrite_alter_keys(tokens: &mut Vec<TokenWithSpan>) {
    let first = tokens
        .iter()
        .find(|t| !matches!(t.token, Token::Whitespace(_)));
    if !matches!(first.map(|t| &t.token), Some(Token::Word(w)) if w.keyword == Keyword::ALTER) {
        return;
    }
    let words: Vec<usize> = word_positions(tokens).collect();
    let &[alter, table, .., toggle, keys] = words.as_slice() else {
        return;
    };
    let is = |i: usize, word: &str| is_word(&tokens[i].token, word);
    let toggles = is(toggle, "DISABLE") || is(toggle, "ENABLE");
    if !(is(alter, "ALTER") && is(table, "TABLE") && toggles && is(keys, "KEYS")) {
        return;
    }
    tokens[toggle].token = Token::make_keyword("ALGORITHM");
    tokens[keys].token = Token::make_keyword("DEFAULT");
    tokens.insert(keys, TokenWithSpan::wrap(Token::Eq));
}

/// `START TRANSACTION WITH CONSISTENT SNAPSHOT` (mysqldump `--single-transaction`)
/// becomes `START TRANSACTION ISOLATION LEVEL SNAPSHOT`, which sqlparser parses and the
/// session answers (`admin::transaction_statement`: Kista reads committed rows, as NDB).
pub fn rewrite_consistent_snapshot(tokens: &mut [TokenWithSpan]) {
    let first_five = {
        let mut words = word_positions(tokens);
        [(); 5].map(|()| words.next())
    };
    let [Some(start), Some(transaction), Some(with), Some(consistent), Some(snapshot)] = first_five
    else {
        return;
    };
    let is = |i: usize, word: &str| is_word(&tokens[i].token, word);
    let asked = is(start, "START")
        && is(transaction, "TRANSACTION")
        && is(with, "WITH")
        && is(consistent, "CONSISTENT")
        && is(snapshot, "SNAPSHOT");
    if asked {
        tokens[with].token = Token::make_keyword("ISOLATION");
        tokens[consistent].token = Token::make_keyword("LEVEL");
    }
}

/// SELECT's modifiers that change nothing in Kista: the query cache's (MySQL 8 has none
/// either, and mysqldump still writes `SQL_NO_CACHE`), result buffering and size hints,
/// and priority (there are no table locks to jump).
const IGNORED_SELECT_MODIFIERS: [&str; 6] = [
    "SQL_NO_CACHE",
    "SQL_CACHE",
    "SQL_BUFFER_RESULT",
    "SQL_SMALL_RESULT",
    "SQL_BIG_RESULT",
    "HIGH_PRIORITY",
];

/// Cuts the modifiers after the statement's own SELECT (its first word), in any order
/// and among `ALL`/`DISTINCT`: `SQL_CALC_FOUND_ROWS`, noted, and the
/// [`IGNORED_SELECT_MODIFIERS`]; whether `SQL_CALC_FOUND_ROWS` was there.
pub fn take_select_modifiers(tokens: &mut [TokenWithSpan]) -> bool {
    let mut words = tokens
        .iter_mut()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)));
    let starts_select = matches!(words.next().map(|t| &t.token),
        Some(Token::Word(w)) if w.keyword == Keyword::SELECT);
    if !starts_select {
        return false;
    }
    let mut calc_found_rows = false;
    for token in words {
        let Token::Word(word) = &token.token else {
            break;
        };
        let is = |name: &str| word.quote_style.is_none() && word.value.eq_ignore_ascii_case(name);
        if is("SQL_CALC_FOUND_ROWS") {
            calc_found_rows = true;
        } else if !IGNORED_SELECT_MODIFIERS.iter().any(|&name| is(name)) {
            if matches!(word.keyword, Keyword::ALL | Keyword::DISTINCT) {
                continue;
            }
            break;
        }
        token.token = Token::Whitespace(Whitespace::Space);
    }
    calc_found_rows
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

#[cfg(test)]
mod tests {
    use sqlparser::parser::Parser;

    use super::super::KistaDialect;
    use super::*;

    /// `sql` parsed after `rewrite` of its tokens, and what `rewrite` answered.
    fn rewritten_by<T>(
        sql: &str,
        rewrite: impl FnOnce(&mut Vec<TokenWithSpan>) -> T,
    ) -> (String, T) {
        let mut tokens = sqlparser::tokenizer::Tokenizer::new(&KistaDialect, sql)
            .tokenize_with_location()
            .unwrap();
        let answer = rewrite(&mut tokens);
        let statements = Parser::new(&KistaDialect)
            .with_tokens_with_locations(tokens)
            .parse_statements()
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        (statements[0].to_string(), answer)
    }

    fn rewritten(sql: &str) -> String {
        rewritten_by(sql, |tokens| rewrite_type_names(tokens)).0
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
    fn select_modifiers_are_cut_and_sql_calc_found_rows_noted() {
        let modified = |sql: &str| rewritten_by(sql, |tokens| take_select_modifiers(tokens));
        assert_eq!(
            modified("SELECT  SQL_NO_CACHE `id` FROM `t`"),
            ("SELECT `id` FROM `t`".into(), false)
        );
        assert_eq!(
            modified("select distinct sql_calc_found_rows high_priority a from t"),
            ("SELECT DISTINCT a FROM t".into(), true)
        );
        // Only right after the statement's own SELECT: a column of that name stays.
        assert_eq!(
            modified("SELECT a, sql_cache FROM t"),
            ("SELECT a, sql_cache FROM t".into(), false)
        );
    }

    #[test]
    fn disable_and_enable_keys_become_an_alter_that_changes_nothing() {
        let altered = |sql: &str| rewritten_by(sql, rewrite_alter_keys).0;
        assert_eq!(
            altered("ALTER TABLE `db`.`t` DISABLE KEYS"),
            "ALTER TABLE `db`.`t` ALGORITHM = DEFAULT"
        );
        assert_eq!(
            altered(" alter table t enable keys ;"),
            "ALTER TABLE t ALGORITHM = DEFAULT"
        );
        assert_eq!(altered("SELECT keys FROM t"), "SELECT keys FROM t");
    }

    #[test]
    fn a_consistent_snapshot_becomes_the_snapshot_isolation_level() {
        let sql = "START TRANSACTION  WITH CONSISTENT SNAPSHOT";
        let (started, ()) = rewritten_by(sql, |tokens| rewrite_consistent_snapshot(tokens));
        assert_eq!(started, "START TRANSACTION ISOLATION LEVEL SNAPSHOT");
    }

    #[test]
    fn compound_interval_units_become_the_standard_form() {
        let sql = "SELECT d + INTERVAL '1:30' hour_minute, INTERVAL 2 DAY, hour_minute FROM t";
        let (select, ()) = rewritten_by(sql, rewrite_interval_units);
        assert_eq!(
            select,
            "SELECT d + INTERVAL '1:30' HOUR TO MINUTE, INTERVAL 2 DAY, hour_minute FROM t"
        );
    }
}
