//! The account statements, parsed here from their text (sqlparser knows MySQL's forms of
//! none of them): CREATE/ALTER/DROP/RENAME USER, SET PASSWORD, GRANT, REVOKE, SHOW
//! GRANTS and FLUSH PRIVILEGES.

use super::privileges::{Level, PrivilegeSet};
use crate::error::{SqlError, SqlResult};

/// `'name'@'host'` (the host defaults to `%`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountName {
    pub name: String,
    pub host: String,
}

impl AccountName {
    /// As MySQL's messages write it: `'name'@'host'`.
    pub fn quoted(&self) -> String {
        format!("'{}'@'{}'", self.name, self.host)
    }
}

/// What to grant or revoke: privileges, or every one with GRANT OPTION.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrivilegeList {
    /// `None`: ALL [PRIVILEGES].
    pub privileges: Option<PrivilegeSet>,
    pub grant_option: bool,
}

/// A level as written, before the session's database fills `*` and `t`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LevelSpec {
    Global,
    /// `db.*`, or `*` (`None`: the current database).
    Database(Option<String>),
    /// `db.t`, or `t` (`None`: the current database).
    Table(Option<String>, String),
}

impl LevelSpec {
    /// The level, with the session's `database` for what the statement leaves out (1046
    /// when there is none).
    pub fn resolve(&self, database: Option<&str>) -> SqlResult<Level> {
        let current = || {
            database
                .map(str::to_lowercase)
                .ok_or_else(SqlError::no_database)
        };
        Ok(match self {
            LevelSpec::Global => Level::Global,
            LevelSpec::Database(Some(db)) => Level::Database(db.to_lowercase()),
            LevelSpec::Database(None) => Level::Database(current()?),
            LevelSpec::Table(Some(db), table) => {
                Level::Table(db.to_lowercase(), table.to_lowercase())
            }
            LevelSpec::Table(None, table) => Level::Table(current()?, table.to_lowercase()),
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccountStatement {
    CreateUser {
        if_not_exists: bool,
        accounts: Vec<(AccountName, Option<String>)>,
    },
    /// ALTER USER ... IDENTIFIED BY, and SET PASSWORD (`None`: the session's own).
    SetPassword {
        if_exists: bool,
        account: Option<AccountName>,
        password: String,
    },
    DropUser {
        if_exists: bool,
        accounts: Vec<AccountName>,
    },
    RenameUser(Vec<(AccountName, AccountName)>),
    Grant {
        privileges: PrivilegeList,
        level: LevelSpec,
        accounts: Vec<AccountName>,
        with_grant_option: bool,
    },
    Revoke {
        privileges: PrivilegeList,
        /// `None`: REVOKE ALL PRIVILEGES, GRANT OPTION FROM ... (every level).
        level: Option<LevelSpec>,
        accounts: Vec<AccountName>,
    },
    /// `None`: the session's own.
    ShowGrants(Option<AccountName>),
    FlushPrivileges,
}

/// Whether `sql` may be an account statement: a cheap look at its first words, so that
/// other statements (every query) pay no more than that.
fn may_be_account_statement(sql: &str) -> bool {
    let mut words = sql.split_whitespace();
    let is =
        |word: Option<&str>, wanted: &str| word.is_some_and(|w| w.eq_ignore_ascii_case(wanted));
    let first = words.next();
    if is(first, "GRANT") || is(first, "REVOKE") {
        return true;
    }
    let second = words.next();
    let pairs = [
        ("CREATE", "USER"),
        ("ALTER", "USER"),
        ("DROP", "USER"),
        ("RENAME", "USER"),
        ("SET", "PASSWORD"),
        ("SHOW", "GRANTS"),
        ("FLUSH", "PRIVILEGES"),
    ];
    let second = second.map(|word| word.trim_end_matches(';'));
    pairs.iter().any(|(a, b)| is(first, a) && is(second, b))
}

/// The account statement `sql` is (`None`: it is none of them).
pub fn parse(sql: &str) -> SqlResult<Option<AccountStatement>> {
    if !may_be_account_statement(sql) {
        return Ok(None);
    }
    let tokens = tokenize(sql)?;
    let mut parser = TokenParser { tokens, at: 0 };
    let starts = |words: &[&str]| parser_starts(&parser, words);
    let statement = if starts(&["CREATE", "USER"]) {
        parser.at = 2;
        parser.create_user()?
    } else if starts(&["ALTER", "USER"]) {
        parser.at = 2;
        parser.alter_user()?
    } else if starts(&["DROP", "USER"]) {
        parser.at = 2;
        let if_exists = parser.words(&["IF", "EXISTS"]);
        let accounts = parser.list(TokenParser::account)?;
        AccountStatement::DropUser {
            if_exists,
            accounts,
        }
    } else if starts(&["RENAME", "USER"]) {
        parser.at = 2;
        AccountStatement::RenameUser(parser.list(|p| {
            let from = p.account()?;
            p.expect_word("TO")?;
            Ok((from, p.account()?))
        })?)
    } else if starts(&["SET", "PASSWORD"]) {
        parser.at = 2;
        let account = if parser.word("FOR") {
            Some(parser.account()?)
        } else {
            None
        };
        parser.expect(&Token::Equals)?;
        let password = parser.string()?;
        AccountStatement::SetPassword {
            if_exists: false,
            account,
            password,
        }
    } else if starts(&["GRANT"]) {
        parser.at = 1;
        parser.grant()?
    } else if starts(&["REVOKE"]) {
        parser.at = 1;
        parser.revoke()?
    } else if starts(&["SHOW", "GRANTS"]) {
        parser.at = 2;
        let account = if parser.word("FOR") {
            Some(parser.account()?)
        } else {
            None
        };
        AccountStatement::ShowGrants(account)
    } else if starts(&["FLUSH", "PRIVILEGES"]) {
        parser.at = 2;
        AccountStatement::FlushPrivileges
    } else {
        return Ok(None);
    };
    parser.end()?;
    Ok(Some(statement))
}

fn parser_starts(parser: &TokenParser, words: &[&str]) -> bool {
    words.iter().enumerate().all(|(position, word)| {
        matches!(parser.tokens.get(position), Some(Token::Word(w)) if w.eq_ignore_ascii_case(word))
    })
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Word(String),
    /// A quoted string or identifier (`'x'`, `"x"`, `` `x` ``).
    Quoted(String),
    At,
    Comma,
    Dot,
    Star,
    Equals,
    Open,
    Close,
}

/// The statement's tokens; comments and a final `;` are dropped.
fn tokenize(sql: &str) -> SqlResult<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut chars = sql.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            ',' => tokens.push(Token::Comma),
            '.' => tokens.push(Token::Dot),
            '*' => tokens.push(Token::Star),
            '=' => tokens.push(Token::Equals),
            '@' => tokens.push(Token::At),
            '(' => tokens.push(Token::Open),
            ')' => tokens.push(Token::Close),
            ';' if sql[start + 1..].trim().is_empty() => break,
            '\'' | '"' | '`' => {
                let mut text = String::new();
                loop {
                    match chars.next() {
                        None => return Err(SqlError::syntax("an unterminated quoted string")),
                        Some((_, '\\')) if c != '`' => match chars.next() {
                            Some((_, escaped)) => text.push(escaped),
                            None => return Err(SqlError::syntax("an unterminated quoted string")),
                        },
                        Some((_, q)) if q == c => {
                            if chars.peek().is_some_and(|&(_, next)| next == c) {
                                chars.next();
                                text.push(c);
                            } else {
                                break;
                            }
                        }
                        Some((_, other)) => text.push(other),
                    }
                }
                tokens.push(Token::Quoted(text));
            }
            c if c.is_alphanumeric() || c == '_' || c == '$' || c == '%' => {
                let mut word = c.to_string();
                while let Some(&(_, next)) = chars.peek() {
                    if next.is_alphanumeric() || next == '_' || next == '$' || next == '%' {
                        word.push(next);
                        chars.next();
                    } else {
                        break;
                    }
                }
                tokens.push(Token::Word(word));
            }
            '-' if sql[start..].starts_with("-- ") => {
                for (_, next) in chars.by_ref() {
                    if next == '\n' {
                        break;
                    }
                }
            }
            other => {
                return Err(SqlError::syntax(format!(
                    "'{other}' in an account statement"
                )))
            }
        }
    }
    Ok(tokens)
}

struct TokenParser {
    tokens: Vec<Token>,
    at: usize,
}

impl TokenParser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    /// Takes the word `word` if it comes next.
    fn word(&mut self, word: &str) -> bool {
        let found = matches!(self.peek(), Some(Token::Word(w)) if w.eq_ignore_ascii_case(word));
        self.at += usize::from(found);
        found
    }

    /// Takes `words` if they come next, all of them.
    fn words(&mut self, words: &[&str]) -> bool {
        let start = self.at;
        if words.iter().all(|word| self.word(word)) {
            return true;
        }
        self.at = start;
        false
    }

    fn expect_word(&mut self, word: &str) -> SqlResult<()> {
        if self.word(word) {
            Ok(())
        } else {
            Err(self.unexpected(word))
        }
    }

    fn expect(&mut self, token: &Token) -> SqlResult<()> {
        if self.peek() == Some(token) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.unexpected(&format!("{token:?}")))
        }
    }

    fn unexpected(&self, wanted: &str) -> SqlError {
        match self.peek() {
            Some(token) => SqlError::syntax(format!("expected {wanted}, found {token:?}")),
            None => SqlError::syntax(format!("expected {wanted} at the end")),
        }
    }

    fn end(&self) -> SqlResult<()> {
        match self.peek() {
            None => Ok(()),
            Some(token) => Err(SqlError::not_supported(format!(
                "{token:?} and what follows in an account statement"
            ))),
        }
    }

    /// A name: a word or a quoted string.
    fn name(&mut self) -> SqlResult<String> {
        match self.peek().cloned() {
            Some(Token::Word(word) | Token::Quoted(word)) => {
                self.at += 1;
                Ok(word)
            }
            _ => Err(self.unexpected("a name")),
        }
    }

    fn string(&mut self) -> SqlResult<String> {
        match self.peek().cloned() {
            Some(Token::Quoted(text)) => {
                self.at += 1;
                Ok(text)
            }
            _ => Err(self.unexpected("a quoted string")),
        }
    }

    /// `name[@host]`.
    fn account(&mut self) -> SqlResult<AccountName> {
        let name = self.name()?;
        let host = if self.peek() == Some(&Token::At) {
            self.at += 1;
            self.name()?
        } else {
            "%".into()
        };
        Ok(AccountName { name, host })
    }

    /// One or more of `item`, separated by commas.
    fn list<T>(&mut self, mut item: impl FnMut(&mut Self) -> SqlResult<T>) -> SqlResult<Vec<T>> {
        let mut items = vec![item(self)?];
        while self.peek() == Some(&Token::Comma) {
            self.at += 1;
            items.push(item(self)?);
        }
        Ok(items)
    }

    /// `IDENTIFIED [WITH plugin] BY 'password'` (`None`: no IDENTIFIED clause).
    fn identified(&mut self) -> SqlResult<Option<String>> {
        if !self.word("IDENTIFIED") {
            return Ok(None);
        }
        if self.word("WITH") {
            let plugin = self.name()?;
            let known = [
                crate::protocol::auth::NATIVE_PASSWORD,
                crate::protocol::auth::CACHING_SHA2_PASSWORD,
            ];
            if !known.iter().any(|k| k.eq_ignore_ascii_case(&plugin)) {
                return Err(SqlError::new(
                    1524,
                    "HY000",
                    format!("Plugin '{plugin}' is not loaded"),
                ));
            }
            if !self.word("BY") {
                return Ok(Some(String::new()));
            }
        } else {
            self.expect_word("BY")?;
        }
        self.string().map(Some)
    }

    fn create_user(&mut self) -> SqlResult<AccountStatement> {
        let if_not_exists = self.words(&["IF", "NOT", "EXISTS"]);
        let accounts = self.list(|p| Ok((p.account()?, p.identified()?)))?;
        Ok(AccountStatement::CreateUser {
            if_not_exists,
            accounts,
        })
    }

    fn alter_user(&mut self) -> SqlResult<AccountStatement> {
        let if_exists = self.words(&["IF", "EXISTS"]);
        let own_call = matches!(self.peek(), Some(Token::Word(w)) if w.eq_ignore_ascii_case("USER"))
            && self.tokens.get(self.at + 1) == Some(&Token::Open);
        let account = if own_call || self.word("CURRENT_USER") {
            self.at += usize::from(own_call);
            self.skip_call_parentheses();
            None
        } else {
            Some(self.account()?)
        };
        let password = self
            .identified()?
            .ok_or_else(|| SqlError::not_supported("ALTER USER other than IDENTIFIED BY"))?;
        Ok(AccountStatement::SetPassword {
            if_exists,
            account,
            password,
        })
    }

    fn skip_call_parentheses(&mut self) {
        if self.tokens.get(self.at) == Some(&Token::Open)
            && self.tokens.get(self.at + 1) == Some(&Token::Close)
        {
            self.at += 2;
        }
    }

    /// `ALL [PRIVILEGES]` or a list of privileges (GRANT OPTION among them).
    fn privileges(&mut self) -> SqlResult<PrivilegeList> {
        if self.word("ALL") {
            self.word("PRIVILEGES");
            let grant_option = self.peek() == Some(&Token::Comma) && {
                self.at += 1;
                self.words(&["GRANT", "OPTION"])
            };
            return Ok(PrivilegeList {
                privileges: None,
                grant_option,
            });
        }
        let mut set = PrivilegeSet::NONE;
        let mut grant_option = false;
        loop {
            if self.words(&["GRANT", "OPTION"]) {
                grant_option = true;
            } else {
                let mut name = self.name()?;
                // Privileges of two or three words (CREATE VIEW, SHOW DATABASES, ...).
                while let Some(Token::Word(next)) = self.peek().cloned() {
                    if ["ON", "FROM", "TO"]
                        .iter()
                        .any(|w| w.eq_ignore_ascii_case(&next))
                    {
                        break;
                    }
                    name = format!("{name} {next}");
                    self.at += 1;
                }
                if self.peek() == Some(&Token::Open) {
                    return Err(SqlError::not_supported("column privileges"));
                }
                set = set | PrivilegeSet::named(&name.to_uppercase())?;
            }
            if self.peek() != Some(&Token::Comma) {
                break;
            }
            self.at += 1;
        }
        Ok(PrivilegeList {
            privileges: Some(set),
            grant_option,
        })
    }

    /// `*.*`, `db.*`, `*`, `db.t`, `t` (`TABLE` may come first).
    fn level(&mut self) -> SqlResult<LevelSpec> {
        self.word("TABLE");
        if self.peek() == Some(&Token::Star) {
            self.at += 1;
            if self.peek() == Some(&Token::Dot) {
                self.at += 1;
                self.expect(&Token::Star)?;
                return Ok(LevelSpec::Global);
            }
            return Ok(LevelSpec::Database(None));
        }
        let first = self.name()?;
        if self.peek() != Some(&Token::Dot) {
            return Ok(LevelSpec::Table(None, first));
        }
        self.at += 1;
        if self.peek() == Some(&Token::Star) {
            self.at += 1;
            return Ok(LevelSpec::Database(Some(first)));
        }
        Ok(LevelSpec::Table(Some(first), self.name()?))
    }

    fn grant(&mut self) -> SqlResult<AccountStatement> {
        let privileges = self.privileges()?;
        if !self.word("ON") {
            return Err(SqlError::not_supported("roles"));
        }
        let level = self.level()?;
        self.expect_word("TO")?;
        let accounts = self.list(TokenParser::account)?;
        let with_grant_option = self.words(&["WITH", "GRANT", "OPTION"]);
        Ok(AccountStatement::Grant {
            privileges,
            level,
            accounts,
            with_grant_option,
        })
    }

    fn revoke(&mut self) -> SqlResult<AccountStatement> {
        let privileges = self.privileges()?;
        let level = if self.word("ON") {
            Some(self.level()?)
        } else if privileges.privileges.is_none() && privileges.grant_option {
            None
        } else {
            return Err(SqlError::not_supported("roles"));
        };
        self.expect_word("FROM")?;
        let accounts = self.list(TokenParser::account)?;
        Ok(AccountStatement::Revoke {
            privileges,
            level,
            accounts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounts::privileges::needed;

    fn account(name: &str, host: &str) -> AccountName {
        AccountName {
            name: name.into(),
            host: host.into(),
        }
    }

    #[test]
    fn account_statements_parse_as_mysql_writes_them() {
        assert_eq!(
            parse("CREATE USER IF NOT EXISTS 'app'@'%' IDENTIFIED BY 's3''cret', ops").unwrap(),
            Some(AccountStatement::CreateUser {
                if_not_exists: true,
                accounts: vec![
                    (account("app", "%"), Some("s3'cret".into())),
                    (account("ops", "%"), None)
                ],
            })
        );
        assert_eq!(
            parse("GRANT SELECT, INSERT ON shop.* TO app@localhost WITH GRANT OPTION;").unwrap(),
            Some(AccountStatement::Grant {
                privileges: PrivilegeList {
                    privileges: Some(needed::SELECT | needed::INSERT),
                    grant_option: false,
                },
                level: LevelSpec::Database(Some("shop".into())),
                accounts: vec![account("app", "localhost")],
                with_grant_option: true,
            })
        );
        assert_eq!(
            parse("revoke all privileges, grant option from `app`@`%`").unwrap(),
            Some(AccountStatement::Revoke {
                privileges: PrivilegeList {
                    privileges: None,
                    grant_option: true,
                },
                level: None,
                accounts: vec![account("app", "%")],
            })
        );
        assert_eq!(
            parse("GRANT CREATE VIEW ON t TO a").unwrap(),
            Some(AccountStatement::Grant {
                privileges: PrivilegeList {
                    privileges: Some(needed::CREATE_VIEW),
                    grant_option: false,
                },
                level: LevelSpec::Table(None, "t".into()),
                accounts: vec![account("a", "%")],
                with_grant_option: false,
            })
        );
        assert_eq!(parse("SELECT 1").unwrap(), None);
        assert_eq!(parse("GRANT FLY ON *.* TO a").unwrap_err().code, 1149);
        assert_eq!(parse("GRANT SELECT (a) ON t TO a").unwrap_err().code, 1235);
        assert_eq!(
            parse("CREATE USER a IDENTIFIED WITH nope")
                .unwrap_err()
                .code,
            1524
        );
        assert_eq!(parse("DROP USER a b").unwrap_err().code, 1235);
    }
}
