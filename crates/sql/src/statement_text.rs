//! The bytes of a statement as the text the parser reads.
//!
//! MySQL takes any bytes inside a quoted string literal, and clients send binary data that
//! way: mysql-connector-python and mysqlclient put a `bytes` argument's raw bytes between
//! quotes, PyMySQL after `_binary`. The parser reads UTF-8 text. A statement that is valid
//! UTF-8 is used as it is, uncopied (every statement passes here). In any other, each
//! string literal whose bytes are not UTF-8 is rewritten as the hex literal of the bytes it
//! stands for (`'\xFF\0'` becomes `X'FF00'`), which binds to the same binary string; a
//! column of a character set then refuses it (1366) as MySQL does. Bytes that are not
//! UTF-8 anywhere else are a syntax error: nothing is ever replaced silently.
//!
//! A versioned comment is code to a server of that version or later: `/*!40101 SET NAMES
//! utf8mb4 */` runs on Kista (MySQL [`VERSION_NUMBER`]) as `SET NAMES utf8mb4`, and
//! `/*! .. */` on any server; one of a later version (or MariaDB's `/*M! .. */`) is a
//! comment. mysqldump writes its settings so, many a whole statement.

use std::borrow::Cow;

use crate::error::{SqlError, SqlResult};

/// The MySQL version Kista answers as (`session::SERVER_VERSION`), as a versioned comment
/// writes it.
pub(crate) const VERSION_NUMBER: u32 = 80036;

/// `body` as statement text (see the module's comment).
pub(crate) fn statement_text(body: &[u8]) -> SqlResult<Cow<'_, str>> {
    match std::str::from_utf8(body) {
        Ok(text) if !has_versioned_comment(body) => Ok(Cow::Borrowed(text)),
        _ => rewrite(body).map(Cow::Owned),
    }
}

/// Whether `body` may hold a versioned comment (`/*!`; perhaps inside a literal, which the
/// rewrite tells apart). `contains` is a memchr: most statements hold no `/` at all.
fn has_versioned_comment(body: &[u8]) -> bool {
    body.contains(&b'/') && body.windows(3).any(|three| three == b"/*!")
}

/// `body` with every string literal that is not UTF-8 as a hex literal, and the versioned
/// comments for this version as their code.
fn rewrite(body: &[u8]) -> SqlResult<String> {
    let mut text = String::with_capacity(body.len() * 2);
    let mut copied = 0;
    let mut at = 0;
    // Inside a versioned comment that runs: its `*/` closes it.
    let mut in_versioned = false;
    while at < body.len() {
        let next = body.get(at + 1).copied();
        at = match body[at] {
            quote @ (b'\'' | b'"') => {
                let (end, bytes) = string_literal(body, at, quote)?;
                if std::str::from_utf8(&body[at..end]).is_err() {
                    copy_text(&mut text, body, copied, at)?;
                    push_hex_literal(&mut text, &bytes);
                    copied = end;
                }
                end
            }
            b'`' => identifier_end(body, at)?,
            b'#' => line_end(body, at),
            b'-' if next == Some(b'-') && body.get(at + 2).is_none_or(u8::is_ascii_whitespace) => {
                line_end(body, at)
            }
            b'/' if next == Some(b'*') && body.get(at + 2) == Some(&b'!') => {
                copy_text(&mut text, body, copied, at)?;
                text.push(' ');
                let (code_start, runs) = versioned_comment(body, at);
                copied = if runs {
                    code_start
                } else {
                    comment_end(body, at)?
                };
                in_versioned = runs;
                copied
            }
            b'/' if next == Some(b'*') => comment_end(body, at)?,
            b'*' if in_versioned && next == Some(b'/') => {
                copy_text(&mut text, body, copied, at)?;
                text.push(' ');
                in_versioned = false;
                copied = at + 2;
                copied
            }
            _ => at + 1,
        };
    }
    copy_text(&mut text, body, copied, body.len())?;
    Ok(text)
}

/// Copies `body[from..to]`, which lies outside any rewritten literal, onto `text`.
fn copy_text(text: &mut String, body: &[u8], from: usize, to: usize) -> SqlResult<()> {
    match std::str::from_utf8(&body[from..to]) {
        Ok(part) => {
            text.push_str(part);
            Ok(())
        }
        Err(error) => Err(SqlError::syntax(format!(
            "the statement holds bytes that are not UTF-8 outside a string literal, at \
             byte {}",
            from + error.valid_up_to()
        ))),
    }
}

/// ` X'..'` of `bytes` (the space keeps an introducer before it a word of its own:
/// `_binary'..'` becomes `_binary X'..'`).
fn push_hex_literal(text: &mut String, bytes: &[u8]) {
    if text
        .bytes()
        .last()
        .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        text.push(' ');
    }
    text.push_str("X'");
    text.push_str(&crate::value::hex_digits(bytes));
    text.push('\'');
}

/// The end (past its closing quote) of the string literal opened at `at`, and the bytes
/// it stands for: MySQL's backslash escapes (`\%` and `\_` keep their backslash, for
/// LIKE) and a doubled quote taken as one.
fn string_literal(body: &[u8], at: usize, quote: u8) -> SqlResult<(usize, Vec<u8>)> {
    let mut bytes = Vec::new();
    let mut i = at + 1;
    while let Some(&byte) = body.get(i) {
        match byte {
            b'\\' => {
                let Some(&escaped) = body.get(i + 1) else {
                    break;
                };
                match escaped {
                    b'%' | b'_' => bytes.extend_from_slice(&[b'\\', escaped]),
                    other => bytes.push(unescaped(other)),
                }
                i += 2;
            }
            _ if byte == quote && body.get(i + 1) == Some(&quote) => {
                bytes.push(quote);
                i += 2;
            }
            _ if byte == quote => return Ok((i + 1, bytes)),
            _ => {
                bytes.push(byte);
                i += 1;
            }
        }
    }
    Err(SqlError::syntax(format!(
        "a string literal opened at byte {at} is not closed"
    )))
}

/// What `\c` stands for in a string literal (and a LOAD DATA field): `\n` a line feed, an
/// unknown one `c` itself.
pub(crate) fn unescaped(c: u8) -> u8 {
    match c {
        b'0' => 0,
        b'b' => 8,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'Z' => 26,
        other => other,
    }
}

/// The end of the backquoted identifier opened at `at` (a doubled backquote is one).
fn identifier_end(body: &[u8], at: usize) -> SqlResult<usize> {
    let mut i = at + 1;
    while let Some(&byte) = body.get(i) {
        if byte == b'`' {
            if body.get(i + 1) != Some(&b'`') {
                return Ok(i + 1);
            }
            i += 1;
        }
        i += 1;
    }
    Err(SqlError::syntax(format!(
        "an identifier opened at byte {at} is not closed"
    )))
}

/// The end of the comment running from `at` to the end of its line.
fn line_end(body: &[u8], at: usize) -> usize {
    body[at..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(body.len(), |newline| at + newline + 1)
}

/// Where the code of the versioned comment opened at `at` starts (past `/*!` and its
/// version), and whether it runs on this version: with no version, or one of 5 or 6
/// digits up to [`VERSION_NUMBER`] (MySQL reads 5 digits, 6 where there are 6).
fn versioned_comment(body: &[u8], at: usize) -> (usize, bool) {
    let start = at + 3;
    let digits = body[start..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let version_digits = match digits {
        0 => return (start, true),
        6 => 6,
        _ => digits.min(5),
    };
    let version = &body[start..start + version_digits];
    let version: u32 = (version.iter()).fold(0, |n, &d| n * 10 + u32::from(d - b'0'));
    (start + version_digits, version <= VERSION_NUMBER)
}

/// The end of the `/* .. */` comment opened at `at`.
fn comment_end(body: &[u8], at: usize) -> SqlResult<usize> {
    let close = body[at + 2..].windows(2).position(|pair| pair == b"*/");
    close
        .map(|close| at + 2 + close + 2)
        .ok_or_else(|| SqlError::syntax(format!("a comment opened at byte {at} is not closed")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(body: &[u8]) -> String {
        statement_text(body).expect("statement text").into_owned()
    }

    #[test]
    fn a_utf8_statement_is_the_text_itself_uncopied() {
        let body = "INSERT INTO t VALUES ('é', X'FF')".as_bytes();
        let Cow::Borrowed(text) = statement_text(body).unwrap() else {
            panic!("copied");
        };
        assert_eq!(text.as_ptr(), body.as_ptr());
    }

    #[test]
    fn a_literal_of_bytes_that_are_not_utf8_becomes_the_hex_literal_of_those_bytes() {
        let body = b"INSERT INTO t VALUES ('\x00\xFF\x10\x80\xC3', 'ok', \"\xFE\")";
        assert_eq!(
            text_of(body),
            "INSERT INTO t VALUES (X'00FF1080C3', 'ok', X'FE')"
        );
    }

    #[test]
    fn escapes_and_doubled_quotes_give_the_bytes_they_stand_for() {
        assert_eq!(text_of(b"SELECT 'a\\'\xFF\\\\\\0'"), "SELECT X'6127FF5C00'");
        assert_eq!(text_of(b"SELECT 'it''s \xFF'"), "SELECT X'6974277320FF'");
        assert_eq!(
            text_of(b"SELECT '\\n\\r\\t\\b\\Z\\q\xFF'"),
            "SELECT X'0A0D09081A71FF'"
        );
        // LIKE's escapes keep their backslash, as MySQL keeps them.
        assert_eq!(text_of(b"SELECT '\\%\\_\xFF'"), "SELECT X'5C255C5FFF'");
    }

    #[test]
    fn an_introducer_stays_a_word_of_its_own() {
        assert_eq!(text_of(b"SELECT _binary'\xFF'"), "SELECT _binary X'FF'");
        assert_eq!(text_of(b"SELECT _binary '\xFF'"), "SELECT _binary X'FF'");
    }

    #[test]
    fn quotes_in_identifiers_and_comments_open_no_literal() {
        assert_eq!(
            text_of(b"SELECT `it's` -- it's\n, '\xFF' # it's\n/* it's */"),
            "SELECT `it's` -- it's\n, X'FF' # it's\n/* it's */"
        );
    }

    #[test]
    fn the_version_versioned_comments_compare_with_is_the_one_kista_answers_as() {
        let version = crate::session::SERVER_VERSION.split('-').next().unwrap();
        let parts: Vec<u32> = version.split('.').map(|p| p.parse().unwrap()).collect();
        assert_eq!(
            VERSION_NUMBER,
            parts[0] * 10_000 + parts[1] * 100 + parts[2]
        );
    }

    #[test]
    fn a_versioned_comment_is_code_up_to_this_version_and_a_comment_after() {
        // Whitespace aside (a comment's place keeps a space).
        let words = |body: &[u8]| {
            text_of(body)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        let cases: [(&[u8], &str); 8] = [
            (b"/*!40100 SET @@SQL_MODE='' */", "SET @@SQL_MODE=''"),
            (b"/*!80036 SELECT 1 */", "SELECT 1"),
            (b"/*!80037 SET x = 1 */ SELECT 1", "SELECT 1"),
            (b"/*!999999 SET x = 1 */", ""),
            (b"/*! SELECT '*/' */", "SELECT '*/'"),
            (b"SELECT 1 /*M!100100 , 2 */", "SELECT 1 /*M!100100 , 2 */"),
            (b"SELECT '/*!40100 x */'", "SELECT '/*!40100 x */'"),
            (b"SELECT 1/*!,2*/", "SELECT 1 ,2"),
        ];
        for (body, text) in cases {
            assert_eq!(words(body), text, "{}", String::from_utf8_lossy(body));
        }
        assert_eq!(words(b"/*!40101 SET s = '\xFF' */"), "SET s = X'FF'");
    }

    #[test]
    fn bytes_that_are_not_utf8_outside_a_literal_are_a_syntax_error() {
        for body in [
            &b"SELECT \xFF"[..],
            b"SELECT `\xFF`",
            b"SELECT 1 /* \xFF */",
            b"SELECT '\xFF",
        ] {
            let error = statement_text(body).unwrap_err();
            assert_eq!(error.code, 1064, "{body:?}: {error:?}");
        }
    }
}
