//! JSON values as MySQL 8 keeps and prints them: a JSON column holds its document in the
//! normal form MySQL returns (object keys sorted by length, then bytes; the last of a
//! repeated key wins; `", "` and `": "` between items), so that what a client reads back
//! is what MySQL would answer, and equal documents are equal strings.

use serde_json::Value as Json;

use crate::error::{SqlError, SqlResult};

/// How deep a document may nest (MySQL's limit).
pub const DEPTH_MAX: usize = 100;

/// Parses JSON text, for a column called `column` (named in the error).
pub fn parse(text: &[u8], column: &str) -> SqlResult<Json> {
    let document: Json = serde_json::from_slice(text).map_err(|error| {
        SqlError::new(
            3140,
            "22032",
            format!(
                "Invalid JSON text: \"{}\" at position {} in value for column '{column}'.",
                reason(&error),
                position_of(text, &error)
            ),
        )
    })?;
    if depth(&document) > DEPTH_MAX {
        return Err(SqlError::new(
            3157,
            "22032",
            format!("The JSON document exceeds the maximum depth of {DEPTH_MAX}."),
        ));
    }
    Ok(document)
}

/// `text` as the normal form of the document it holds.
pub fn normalize(text: &[u8], column: &str) -> SqlResult<Vec<u8>> {
    let document = parse(text, column)?;
    let mut out = Vec::with_capacity(text.len());
    write(&document, &mut out);
    Ok(out)
}

/// Writes `document` in MySQL's normal form.
pub fn write(document: &Json, out: &mut Vec<u8>) {
    match document {
        Json::Null => out.extend_from_slice(b"null"),
        Json::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Json::Number(n) => write_number(n, out),
        Json::String(s) => write_string(s, out),
        Json::Array(items) => write_list(out, b'[', b']', items.iter(), write),
        Json::Object(members) => {
            let keys = keys_in_order(members);
            write_list(out, b'{', b'}', keys.into_iter(), |key, out| {
                write_string(key, out);
                out.extend_from_slice(b": ");
                write(&members[key], out);
            });
        }
    }
}

/// `items` between `open` and `close`, separated by `", "`.
fn write_list<T>(
    out: &mut Vec<u8>,
    open: u8,
    close: u8,
    items: impl Iterator<Item = T>,
    mut write_item: impl FnMut(T, &mut Vec<u8>),
) {
    out.push(open);
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        write_item(item, out);
    }
    out.push(close);
}

/// An object's keys in MySQL's order: by length, then bytes.
pub fn keys_in_order(members: &serde_json::Map<String, Json>) -> Vec<&String> {
    let mut keys: Vec<&String> = members.keys().collect();
    keys.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
    keys
}

/// Integers as they are; other numbers as MySQL prints a double (`1.5`, `100.0`, `1e300`).
fn write_number(n: &serde_json::Number, out: &mut Vec<u8>) {
    if n.is_i64() || n.is_u64() {
        out.extend_from_slice(n.to_string().as_bytes());
        return;
    }
    let x = n.as_f64().unwrap_or(0.0);
    let text = if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    };
    out.extend_from_slice(text.as_bytes());
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    // serde_json escapes as JSON requires (quotes, backslashes, control characters).
    match serde_json::to_vec(s) {
        Ok(quoted) => out.extend_from_slice(&quoted),
        Err(_) => out.extend_from_slice(b"\"\""),
    }
}

fn depth(document: &Json) -> usize {
    match document {
        Json::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Json::Object(members) => 1 + members.values().map(depth).max().unwrap_or(0),
        _ => 1,
    }
}

fn reason(error: &serde_json::Error) -> &'static str {
    use serde_json::error::Category;
    match error.classify() {
        Category::Eof => "The document root must not be followed by other values.",
        Category::Syntax | Category::Data => "Invalid value.",
        Category::Io => "The document is empty.",
    }
}

/// The byte offset serde_json's line and column point at.
fn position_of(text: &[u8], error: &serde_json::Error) -> usize {
    let line_start: usize = text
        .split(|&b| b == b'\n')
        .take(error.line().saturating_sub(1))
        .map(|line| line.len() + 1)
        .sum();
    (line_start + error.column()).saturating_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normal(text: &str) -> String {
        String::from_utf8(normalize(text.as_bytes(), "t.j").unwrap()).unwrap()
    }

    #[test]
    fn documents_print_in_mysqls_normal_form() {
        assert_eq!(
            normal(r#"{"bb":1,"a" : [1,2.5,{"z":null}],"c":true}"#),
            r#"{"a": [1, 2.5, {"z": null}], "c": true, "bb": 1}"#
        );
        assert_eq!(normal(r#" "x\"y" "#), r#""x\"y""#);
        assert_eq!(normal("1e2"), "100.0");
        assert_eq!(normal(r#"{"k":1,"k":2}"#), r#"{"k": 2}"#);
    }

    #[test]
    fn invalid_text_is_refused_with_mysqls_error() {
        for bad in ["", "{", "[1,]", "nul", "1 2", "'a'"] {
            let error = normalize(bad.as_bytes(), "t.j").unwrap_err();
            assert_eq!(error.code, 3140, "{bad}: {}", error.message);
            assert!(error.message.contains("column 't.j'"), "{}", error.message);
        }
        let deep = "[".repeat(DEPTH_MAX + 1) + &"]".repeat(DEPTH_MAX + 1);
        assert_eq!(normalize(deep.as_bytes(), "t.j").unwrap_err().code, 3157);
    }
}
