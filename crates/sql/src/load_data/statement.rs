//! `LOAD DATA [LOCAL] INFILE`, parsed here (sqlparser knows only Hive's LOAD DATA):
//!
//! ```text
//! LOAD DATA [LOW_PRIORITY | CONCURRENT] [LOCAL] INFILE 'file' [REPLACE | IGNORE]
//!   INTO TABLE t [CHARACTER SET name]
//!   [{FIELDS | COLUMNS} [TERMINATED BY 's'] [[OPTIONALLY] ENCLOSED BY 'c'] [ESCAPED BY 'c']]
//!   [LINES [STARTING BY 's'] [TERMINATED BY 's']]
//!   [IGNORE n {LINES | ROWS}] [(column, ...)]
//! ```
//!
//! followed by `[SET column = expr, ...]`, whose expressions may read `@variable` targets
//! of the column list (and the columns given). The tokens are sqlparser's (MySQL's string
//! escapes, `'\t'`, are its), and so is the SET list's parse.

use sqlparser::ast::Assignment;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer};

use super::fields::FieldFormat;
use super::OnDuplicate;
use crate::dialect::KistaDialect;
use crate::error::{SqlError, SqlResult};

/// A LOAD DATA statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadData {
    /// The file is the client's (sent over the connection), not the server's.
    pub local: bool,
    pub file: String,
    pub on_duplicate: OnDuplicate,
    pub database: Option<String>,
    pub table: String,
    pub format: FieldFormat,
    pub ignore_lines: u64,
    /// What the fields go to, in order: columns, or user variables (`@name`); `None`:
    /// every column of the table.
    pub columns: Option<Vec<String>>,
    /// `SET column = expr`: computed for each record, after its fields are taken.
    pub set: Vec<Assignment>,
}

/// The assignments of a SET clause given alone (`kista import --set`): `text` as LOAD
/// DATA's SET would read it, e.g. `name = UPPER(@raw), n = 2`.
pub fn parse_assignments(text: &str) -> SqlResult<Vec<Assignment>> {
    let statement = format!("LOAD DATA INFILE '' INTO TABLE t SET {text}");
    let load = parse(&statement)?.expect("a LOAD DATA statement");
    Ok(load.set)
}

/// The LOAD DATA statement `sql` is (`None`: it is another statement).
pub fn parse(sql: &str) -> SqlResult<Option<LoadData>> {
    let mut words = sql.split_whitespace();
    let first_two = (words.next(), words.next());
    let is_load_data = matches!(first_two, (Some(a), Some(b))
        if a.eq_ignore_ascii_case("LOAD") && b.eq_ignore_ascii_case("DATA"));
    if !is_load_data {
        return Ok(None);
    }
    let tokens = Tokenizer::new(&KistaDialect, sql)
        .tokenize()
        .map_err(SqlError::syntax)?
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon | Token::EOF))
        .collect();
    let mut parser = Clauses { tokens, at: 2 };
    parser.statement().map(Some)
}

struct Clauses {
    tokens: Vec<Token>,
    at: usize,
}

impl Clauses {
    fn statement(&mut self) -> SqlResult<LoadData> {
        let _priority = self.word("LOW_PRIORITY") || self.word("CONCURRENT");
        let local = self.word("LOCAL");
        self.expect_word("INFILE")?;
        let file = self.string()?;
        let on_duplicate = if self.word("REPLACE") {
            OnDuplicate::Replace
        } else if self.word("IGNORE") {
            OnDuplicate::Ignore
        } else {
            OnDuplicate::Error
        };
        self.expect_word("INTO")?;
        self.expect_word("TABLE")?;
        let (database, table) = self.table_name()?;
        if self.word("CHARACTER") {
            self.expect_word("SET")?;
            self.name()?;
        }
        let mut format = FieldFormat::tab_separated();
        self.fields_clause(&mut format)?;
        self.lines_clause(&mut format)?;
        format
            .check()
            .map_err(|e| SqlError::wrong_arguments(&e.to_string()))?;
        let mut ignore_lines = 0;
        if self.word("IGNORE") {
            ignore_lines = self.number()?;
            if !(self.word("LINES") || self.word("ROWS")) {
                return Err(self.unexpected("LINES or ROWS"));
            }
        }
        let columns = self.column_list()?;
        let set = if self.word("SET") {
            self.assignments()?
        } else {
            Vec::new()
        };
        if let Some(token) = self.tokens.get(self.at) {
            return Err(SqlError::syntax(format!("unexpected {token} at the end")));
        }
        Ok(LoadData {
            local,
            file,
            on_duplicate,
            database,
            table,
            format,
            ignore_lines,
            columns,
            set,
        })
    }

    /// The rest of the statement as `column = expr, ...` (sqlparser's parse).
    fn assignments(&mut self) -> SqlResult<Vec<Assignment>> {
        let rest = self.tokens[self.at..].to_vec();
        self.at = self.tokens.len();
        let mut parser = Parser::new(&KistaDialect).with_tokens(rest);
        let assignments = parser
            .parse_comma_separated(Parser::parse_assignment)
            .map_err(SqlError::syntax)?;
        if parser.peek_token().token != Token::EOF {
            return Err(SqlError::syntax(format!(
                "LOAD DATA: unexpected {} after SET",
                parser.peek_token().token
            )));
        }
        Ok(assignments)
    }

    fn fields_clause(&mut self, format: &mut FieldFormat) -> SqlResult<()> {
        if !(self.word("FIELDS") || self.word("COLUMNS")) {
            return Ok(());
        }
        loop {
            if self.words(&["TERMINATED", "BY"]) {
                format.fields_terminated_by = self.string()?.into_bytes();
            } else if self.word("OPTIONALLY") {
                self.expect_word("ENCLOSED")?;
                self.expect_word("BY")?;
                format.enclosed_by = self.one_character("ENCLOSED BY")?;
            } else if self.words(&["ENCLOSED", "BY"]) {
                format.enclosed_by = self.one_character("ENCLOSED BY")?;
            } else if self.words(&["ESCAPED", "BY"]) {
                format.escaped_by = self.one_character("ESCAPED BY")?;
            } else {
                return Ok(());
            }
        }
    }

    fn lines_clause(&mut self, format: &mut FieldFormat) -> SqlResult<()> {
        if !self.word("LINES") {
            return Ok(());
        }
        loop {
            if self.words(&["STARTING", "BY"]) {
                format.lines_starting_by = self.string()?.into_bytes();
            } else if self.words(&["TERMINATED", "BY"]) {
                format.lines_terminated_by = self.string()?.into_bytes();
            } else {
                return Ok(());
            }
        }
    }

    /// `(a, b, ...)`, or nothing.
    fn column_list(&mut self) -> SqlResult<Option<Vec<String>>> {
        if self.tokens.get(self.at) != Some(&Token::LParen) {
            return Ok(None);
        }
        self.at += 1;
        let mut columns = Vec::new();
        loop {
            columns.push(self.name()?);
            match self.tokens.get(self.at) {
                Some(Token::Comma) => self.at += 1,
                Some(Token::RParen) => {
                    self.at += 1;
                    return Ok(Some(columns));
                }
                _ => return Err(self.unexpected("',' or ')'")),
            }
        }
    }

    /// A one-byte string, or an empty one (none).
    fn one_character(&mut self, clause: &str) -> SqlResult<Option<u8>> {
        match self.string()?.as_bytes() {
            [] => Ok(None),
            [byte] => Ok(Some(*byte)),
            _ => Err(SqlError::wrong_arguments(&format!(
                "{clause}: it takes one character"
            ))),
        }
    }

    fn table_name(&mut self) -> SqlResult<(Option<String>, String)> {
        let first = self.name()?;
        if self.tokens.get(self.at) == Some(&Token::Period) {
            self.at += 1;
            return Ok((Some(first), self.name()?));
        }
        Ok((None, first))
    }

    fn name(&mut self) -> SqlResult<String> {
        match self.tokens.get(self.at) {
            Some(Token::Word(word)) => {
                self.at += 1;
                Ok(word.value.clone())
            }
            _ => Err(self.unexpected("a name")),
        }
    }

    fn string(&mut self) -> SqlResult<String> {
        match self.tokens.get(self.at) {
            Some(Token::SingleQuotedString(s) | Token::DoubleQuotedString(s)) => {
                self.at += 1;
                Ok(s.clone())
            }
            _ => Err(self.unexpected("a quoted string")),
        }
    }

    fn number(&mut self) -> SqlResult<u64> {
        match self.tokens.get(self.at) {
            Some(Token::Number(digits, _)) => {
                let number = digits.parse().map_err(|_| self.unexpected("a count"))?;
                self.at += 1;
                Ok(number)
            }
            _ => Err(self.unexpected("a count")),
        }
    }

    fn word(&mut self, wanted: &str) -> bool {
        let found = matches!(self.tokens.get(self.at),
            Some(Token::Word(word)) if word.quote_style.is_none() && word.value.eq_ignore_ascii_case(wanted));
        self.at += usize::from(found);
        found
    }

    fn words(&mut self, wanted: &[&str]) -> bool {
        let start = self.at;
        if wanted.iter().all(|word| self.word(word)) {
            return true;
        }
        self.at = start;
        false
    }

    fn expect_word(&mut self, wanted: &str) -> SqlResult<()> {
        if self.word(wanted) {
            Ok(())
        } else {
            Err(self.unexpected(wanted))
        }
    }

    fn unexpected(&self, wanted: &str) -> SqlError {
        let found = self
            .tokens
            .get(self.at)
            .map_or("the end".to_string(), |t| format!("'{t}'"));
        SqlError::syntax(format!("LOAD DATA: expected {wanted}, found {found}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_clause_is_read() {
        let sql = "LOAD DATA LOCAL INFILE '/tmp/x.csv' REPLACE INTO TABLE d.t \
                   CHARACTER SET utf8mb4 FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' \
                   ESCAPED BY '\\\\' LINES STARTING BY '>' TERMINATED BY '\\r\\n' \
                   IGNORE 1 LINES (a, b)";
        let load = parse(sql).unwrap().unwrap();
        assert_eq!(
            load,
            LoadData {
                local: true,
                file: "/tmp/x.csv".into(),
                on_duplicate: OnDuplicate::Replace,
                database: Some("d".into()),
                table: "t".into(),
                format: FieldFormat {
                    fields_terminated_by: b",".to_vec(),
                    enclosed_by: Some(b'"'),
                    escaped_by: Some(b'\\'),
                    lines_starting_by: b">".to_vec(),
                    lines_terminated_by: b"\r\n".to_vec(),
                },
                ignore_lines: 1,
                columns: Some(vec!["a".into(), "b".into()]),
                set: Vec::new(),
            }
        );
    }

    #[test]
    fn variables_and_set_assignments_are_read() {
        let sql = "LOAD DATA INFILE 'f' INTO TABLE t (id, @raw) SET name = UPPER(@raw), n = 2";
        let load = parse(sql).unwrap().unwrap();
        assert_eq!(load.columns, Some(vec!["id".into(), "@raw".into()]));
        assert_eq!(load.set.len(), 2);
        assert_eq!(load.set[0].to_string(), "name = UPPER(@raw)");
    }

    #[test]
    fn a_set_clause_alone_is_read_as_load_data_reads_it() {
        let set = parse_assignments("name = UPPER(@raw), n = 2").unwrap();
        assert_eq!(set.len(), 2);
        assert_eq!(set[1].to_string(), "n = 2");
        assert!(parse_assignments("name UPPER(@raw)").is_err());
        assert!(parse_assignments("n = 2 IGNORE 1 LINES").is_err());
    }

    #[test]
    fn the_defaults_are_mysqls() {
        let load = parse("load data infile 'f' into table t").unwrap().unwrap();
        assert_eq!(load.format, FieldFormat::tab_separated());
        assert_eq!((load.local, load.on_duplicate), (false, OnDuplicate::Error));
        assert_eq!((load.database, load.columns), (None, None));
        assert!(parse("SELECT 1").unwrap().is_none());
    }

    #[test]
    fn what_is_not_supported_or_malformed_is_refused_with_a_reason() {
        let refused = |sql: &str| parse(sql).unwrap_err().code;
        assert_eq!(refused("LOAD DATA INFILE 'f' INTO TABLE t SET a = "), 1064);
        assert_eq!(
            refused("LOAD DATA INFILE 'f' INTO TABLE t SET a = 1 b"),
            1064
        );
        assert_eq!(refused("LOAD DATA INFILE f INTO TABLE t"), 1064);
        assert_eq!(
            refused("LOAD DATA INFILE 'f' INTO TABLE t FIELDS ENCLOSED BY 'ab'"),
            1210
        );
        assert_eq!(
            refused("LOAD DATA INFILE 'f' INTO TABLE t LINES TERMINATED BY ''"),
            1210
        );
        assert_eq!(
            refused("LOAD DATA INFILE 'f' INTO TABLE t IGNORE x LINES"),
            1064
        );
    }
}
