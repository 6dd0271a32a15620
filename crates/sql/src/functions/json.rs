//! JSON functions (MySQL 8's common ones) and the path language they take: `$`, `.key`,
//! `."quoted key"`, `[n]`, `[last]`, `[last-n]` and the wildcards `.*` and `[*]` (`**` is
//! refused). A scalar is its own `[0]`, as in MySQL. Results are documents in MySQL's normal
//! form (`crate::json`); `->` is JSON_EXTRACT and `->>` JSON_UNQUOTE of it.
//!
//! A value is taken as a JSON document where MySQL knows it is one: an argument that is
//! itself a JSON function's result. A string column is a string (Kista does not carry
//! the JSON type through expressions; write `JSON_EXTRACT(c, '$')` to take one as JSON).

use kista_client::types::Value;
use serde_json::{Map, Number, Value as Json};

use super::{lazy, string_of, text, Args, FunctionDef, Returns, BIGINT, TEXT};
use crate::error::{SqlError, SqlResult};
use crate::expr::Expr;

/// Functions giving a document.
const DOCUMENT: Returns = Returns::Type(TEXT);

pub(super) const FUNCTIONS: &[FunctionDef] = &[
    lazy(&["json_extract"], 2..=usize::MAX, DOCUMENT, extract),
    lazy(&["json_unquote"], 1..=1, DOCUMENT, unquote),
    lazy(&["json_object"], 0..=usize::MAX, DOCUMENT, object),
    lazy(&["json_array"], 0..=usize::MAX, DOCUMENT, array),
    lazy(&["json_quote"], 1..=1, DOCUMENT, quote),
    lazy(&["json_valid"], 1..=1, Returns::Type(BIGINT), valid),
    lazy(&["json_type"], 1..=1, DOCUMENT, type_of),
    lazy(&["json_length"], 1..=2, Returns::Type(BIGINT), length),
    lazy(&["json_depth"], 1..=1, Returns::Type(BIGINT), depth),
    lazy(&["json_keys"], 1..=2, DOCUMENT, keys),
    lazy(&["json_contains"], 2..=3, Returns::Type(BIGINT), contains),
    lazy(
        &["json_contains_path"],
        3..=usize::MAX,
        Returns::Type(BIGINT),
        contains_path,
    ),
    lazy(&["json_set"], 3..=usize::MAX, DOCUMENT, set),
    lazy(&["json_insert"], 3..=usize::MAX, DOCUMENT, insert),
    lazy(&["json_replace"], 3..=usize::MAX, DOCUMENT, replace),
    lazy(&["json_remove"], 2..=usize::MAX, DOCUMENT, remove),
    lazy(&["json_merge_patch"], 2..=usize::MAX, DOCUMENT, merge_patch),
];

/// The functions whose result is a document (so an argument made by one is JSON).
const RETURNING_DOCUMENTS: &[&str] = &[
    "json_extract",
    "json_object",
    "json_array",
    "json_quote",
    "json_keys",
    "json_set",
    "json_insert",
    "json_replace",
    "json_remove",
    "json_merge_patch",
];

/// Argument `n` as a document (a JSON function's result, or text holding one); `None`
/// for NULL. Error 3141 names the function when the text is not JSON.
fn document(args: &Args, n: usize, function: &str) -> SqlResult<Option<Json>> {
    let value = args.get(n)?;
    if value.is_null() {
        return Ok(None);
    }
    let text = crate::value::to_text(&value);
    serde_json::from_slice(&text).map(Some).map_err(|error| {
        SqlError::new(
            3141,
            "22032",
            format!(
                "Invalid JSON text in argument {} to function {function}: \"{error}\".",
                n + 1
            ),
        )
    })
}

/// Argument `n` as a value inside a document: a document if a JSON function made it,
/// else the SQL value as JSON (numbers, strings; NULL is `null`).
fn member(args: &Args, n: usize) -> SqlResult<Json> {
    let value = args.get(n)?;
    if returns_document(args.expr(n)) && !value.is_null() {
        return serde_json::from_slice(&crate::value::to_text(&value))
            .map_err(|_| SqlError::new(3141, "22032", "Invalid JSON text in argument"));
    }
    Ok(match value {
        Value::Null => Json::Null,
        Value::Int(n) => Json::from(n),
        Value::UInt(n) => Json::from(n),
        Value::Float(x) => number(f64::from(x)),
        Value::Double(x) => number(x),
        Value::Decimal(_) => number(crate::value::to_f64(&value).unwrap_or(0.0)),
        other => Json::String(string_of(&other)),
    })
}

fn returns_document(expr: &Expr) -> bool {
    matches!(expr, Expr::Call(f, _) if RETURNING_DOCUMENTS.contains(&f.name()))
}

fn number(x: f64) -> Json {
    Number::from_f64(x).map_or(Json::Null, Json::Number)
}

fn printed(document: &Json) -> Value {
    let mut out = Vec::new();
    crate::json::write(document, &mut out);
    Value::Bytes(out)
}

/// Argument `n` as a path.
fn path_of(args: &Args, n: usize) -> SqlResult<Option<Path>> {
    let value = args.get(n)?;
    if value.is_null() {
        return Ok(None);
    }
    Path::parse(&string_of(&value)).map(Some)
}

fn extract(args: &Args) -> SqlResult<Value> {
    let Some(document) = document(args, 0, "json_extract")? else {
        return Ok(Value::Null);
    };
    let mut found = Vec::new();
    let mut wildcard = args.len() > 2;
    for n in 1..args.len() {
        let Some(path) = path_of(args, n)? else {
            return Ok(Value::Null);
        };
        wildcard |= path.has_wildcard();
        path.find(&document, &mut found);
    }
    Ok(match (found.as_slice(), wildcard) {
        ([], _) => Value::Null,
        ([one], false) => printed(one),
        (many, _) => printed(&Json::Array(many.iter().map(|&j| j.clone()).collect())),
    })
}

fn unquote(args: &Args) -> SqlResult<Value> {
    let value = args.get(0)?;
    let Value::Bytes(bytes) = &value else {
        return Ok(value);
    };
    if bytes.len() >= 2 && bytes.starts_with(b"\"") && bytes.ends_with(b"\"") {
        if let Ok(Json::String(s)) = serde_json::from_slice::<Json>(bytes) {
            return Ok(text(s));
        }
    }
    Ok(value)
}

fn object(args: &Args) -> SqlResult<Value> {
    if args.len() % 2 != 0 {
        return Err(SqlError::new(
            1582,
            "42000",
            "Incorrect parameter count in the call to native function 'json_object'",
        ));
    }
    let mut members = Map::new();
    for n in (0..args.len()).step_by(2) {
        let key = args.get(n)?;
        if key.is_null() {
            return Err(SqlError::new(
                3158,
                "22032",
                "JSON documents may not contain NULL member names.",
            ));
        }
        members.insert(string_of(&key), member(args, n + 1)?);
    }
    Ok(printed(&Json::Object(members)))
}

fn array(args: &Args) -> SqlResult<Value> {
    let items = (0..args.len())
        .map(|n| member(args, n))
        .collect::<SqlResult<_>>()?;
    Ok(printed(&Json::Array(items)))
}

fn quote(args: &Args) -> SqlResult<Value> {
    let value = args.get(0)?;
    if value.is_null() {
        return Ok(Value::Null);
    }
    Ok(printed(&Json::String(string_of(&value))))
}

fn valid(args: &Args) -> SqlResult<Value> {
    let value = args.get(0)?;
    if value.is_null() {
        return Ok(Value::Null);
    }
    let text = crate::value::to_text(&value);
    Ok(Value::Int(i64::from(
        serde_json::from_slice::<Json>(&text).is_ok(),
    )))
}

fn type_of(args: &Args) -> SqlResult<Value> {
    let Some(document) = document(args, 0, "json_type")? else {
        return Ok(Value::Null);
    };
    Ok(text(match document {
        Json::Null => "NULL",
        Json::Bool(_) => "BOOLEAN",
        Json::Number(n) if n.is_i64() => "INTEGER",
        Json::Number(n) if n.is_u64() => "UNSIGNED INTEGER",
        Json::Number(_) => "DOUBLE",
        Json::String(_) => "STRING",
        Json::Array(_) => "ARRAY",
        Json::Object(_) => "OBJECT",
    }))
}

fn length(args: &Args) -> SqlResult<Value> {
    Ok(match at_optional_path_of(args, 0, 1, "json_length")? {
        None => Value::Null,
        Some(Json::Array(items)) => Value::Int(items.len() as i64),
        Some(Json::Object(members)) => Value::Int(members.len() as i64),
        Some(_) => Value::Int(1),
    })
}

fn depth(args: &Args) -> SqlResult<Value> {
    fn of(document: &Json) -> i64 {
        match document {
            Json::Array(items) if !items.is_empty() => 1 + items.iter().map(of).max().unwrap_or(0),
            Json::Object(m) if !m.is_empty() => 1 + m.values().map(of).max().unwrap_or(0),
            _ => 1,
        }
    }
    Ok(match document(args, 0, "json_depth")? {
        None => Value::Null,
        Some(document) => Value::Int(of(&document)),
    })
}

fn keys(args: &Args) -> SqlResult<Value> {
    Ok(match at_optional_path_of(args, 0, 1, "json_keys")? {
        Some(Json::Object(members)) => {
            let keys = crate::json::keys_in_order(&members);
            printed(&Json::Array(
                keys.into_iter().map(|k| Json::String(k.clone())).collect(),
            ))
        }
        _ => Value::Null,
    })
}

fn contains(args: &Args) -> SqlResult<Value> {
    let Some(target) = at_optional_path_of(args, 0, 2, "json_contains")? else {
        return Ok(Value::Null);
    };
    let Some(candidate) = document(args, 1, "json_contains")? else {
        return Ok(Value::Null);
    };
    Ok(Value::Int(i64::from(contains_document(
        &target, &candidate,
    ))))
}

/// The document at argument `n`, at the path in argument `path_at` if given.
fn at_optional_path_of(
    args: &Args,
    n: usize,
    path_at: usize,
    function: &str,
) -> SqlResult<Option<Json>> {
    let Some(document) = document(args, n, function)? else {
        return Ok(None);
    };
    if args.len() <= path_at {
        return Ok(Some(document));
    }
    let Some(path) = path_of(args, path_at)? else {
        return Ok(None);
    };
    path.refuse_wildcards()?;
    let mut found = Vec::new();
    path.find(&document, &mut found);
    Ok(found.first().map(|&j| j.clone()))
}

/// MySQL's containment: a scalar contains an equal scalar; an array contains an array
/// whose every item it contains, and any value one of its items contains; an object
/// contains an object whose every member it has with a value containing it.
fn contains_document(target: &Json, candidate: &Json) -> bool {
    match (target, candidate) {
        (Json::Array(items), Json::Array(wanted)) => wanted
            .iter()
            .all(|w| items.iter().any(|i| contains_document(i, w))),
        (Json::Array(items), other) => items.iter().any(|i| contains_document(i, other)),
        (Json::Object(members), Json::Object(wanted)) => wanted.iter().all(|(key, w)| {
            members
                .get(key)
                .is_some_and(|value| contains_document(value, w))
        }),
        (Json::Number(a), Json::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}

fn contains_path(args: &Args) -> SqlResult<Value> {
    let Some(document) = document(args, 0, "json_contains_path")? else {
        return Ok(Value::Null);
    };
    let mode = string_of(&args.get(1)?).to_ascii_lowercase();
    let all = match mode.as_str() {
        "all" => true,
        "one" => false,
        _ => return Err(SqlError::new(
            3150,
            "42000",
            "The oneOrAll argument to json_contains_path may take these values: 'one' or 'all'.",
        )),
    };
    let mut answers = Vec::new();
    for n in 2..args.len() {
        let Some(path) = path_of(args, n)? else {
            return Ok(Value::Null);
        };
        let mut found = Vec::new();
        path.find(&document, &mut found);
        answers.push(!found.is_empty());
    }
    let answer = if all {
        answers.iter().all(|&a| a)
    } else {
        answers.iter().any(|&a| a)
    };
    Ok(Value::Int(i64::from(answer)))
}

/// What JSON_SET, JSON_INSERT and JSON_REPLACE may do at a path.
#[derive(Clone, Copy, PartialEq)]
enum Change {
    /// Replace what is there, or add it.
    Set,
    /// Add it only where nothing is.
    Insert,
    /// Replace only what is there.
    Replace,
}

fn set(args: &Args) -> SqlResult<Value> {
    change(args, Change::Set, "json_set")
}

fn insert(args: &Args) -> SqlResult<Value> {
    change(args, Change::Insert, "json_insert")
}

fn replace(args: &Args) -> SqlResult<Value> {
    change(args, Change::Replace, "json_replace")
}

fn change(args: &Args, change: Change, function: &str) -> SqlResult<Value> {
    if args.len() % 2 == 0 {
        return Err(SqlError::new(
            1582,
            "42000",
            format!("Incorrect parameter count in the call to native function '{function}'"),
        ));
    }
    let Some(mut document) = document(args, 0, function)? else {
        return Ok(Value::Null);
    };
    for n in (1..args.len()).step_by(2) {
        let Some(path) = path_of(args, n)? else {
            return Ok(Value::Null);
        };
        path.refuse_wildcards()?;
        let value = member(args, n + 1)?;
        let Some((last, parent)) = path.legs.split_last() else {
            if change != Change::Insert {
                document = value;
            }
            continue;
        };
        if let Some(parent) = find_mut(&mut document, parent) {
            put(parent, last, value, change);
        }
    }
    Ok(printed(&document))
}

fn put(parent: &mut Json, leg: &Leg, value: Json, change: Change) {
    match (parent, leg) {
        (Json::Object(members), Leg::Member(key)) => {
            let present = members.contains_key(key);
            if (present && change != Change::Insert) || (!present && change != Change::Replace) {
                members.insert(key.clone(), value);
            }
        }
        (Json::Array(items), Leg::Index(index)) => match index.resolve(items.len()) {
            Some(i) if change != Change::Insert => items[i] = value,
            None if change != Change::Replace && !index.from_last => items.push(value),
            _ => {}
        },
        // A scalar is its own [0]; past it, MySQL makes an array of the two.
        (scalar, Leg::Index(index)) if !matches!(scalar, Json::Object(_)) => {
            match index.resolve(1) {
                Some(_) if change != Change::Insert => *scalar = value,
                None if change != Change::Replace && !index.from_last => {
                    let old = std::mem::take(scalar);
                    *scalar = Json::Array(vec![old, value]);
                }
                _ => {}
            }
        }
        _ => {}
    }
}

fn remove(args: &Args) -> SqlResult<Value> {
    let Some(mut document) = document(args, 0, "json_remove")? else {
        return Ok(Value::Null);
    };
    for n in 1..args.len() {
        let Some(path) = path_of(args, n)? else {
            return Ok(Value::Null);
        };
        path.refuse_wildcards()?;
        let Some((last, parent)) = path.legs.split_last() else {
            return Err(SqlError::new(
                3153,
                "42000",
                "The path expression '$' is not allowed in this context.",
            ));
        };
        match (find_mut(&mut document, parent), last) {
            (Some(Json::Object(members)), Leg::Member(key)) => {
                members.remove(key);
            }
            (Some(Json::Array(items)), Leg::Index(index)) => {
                if let Some(i) = index.resolve(items.len()) {
                    items.remove(i);
                }
            }
            _ => {}
        }
    }
    Ok(printed(&document))
}

fn merge_patch(args: &Args) -> SqlResult<Value> {
    fn patch(target: Json, with: Json) -> Json {
        let Json::Object(changes) = with else {
            return with;
        };
        let mut members = match target {
            Json::Object(members) => members,
            _ => Map::new(),
        };
        for (key, change) in changes {
            if change.is_null() {
                members.remove(&key);
            } else {
                let old = members.remove(&key).unwrap_or(Json::Null);
                members.insert(key, patch(old, change));
            }
        }
        Json::Object(members)
    }
    let mut merged: Option<Json> = None;
    for n in 0..args.len() {
        let next = document(args, n, "json_merge_patch")?;
        merged = match (merged, next) {
            (None, next) if n == 0 => next,
            (_, None) | (None, _) => return Ok(Value::Null),
            (Some(target), Some(with)) => Some(patch(target, with)),
        };
    }
    Ok(merged.map_or(Value::Null, |m| printed(&m)))
}

/// A parsed path: `$` followed by legs.
#[derive(Debug, PartialEq)]
struct Path {
    legs: Vec<Leg>,
}

#[derive(Debug, PartialEq)]
enum Leg {
    Member(String),
    AnyMember,
    Index(ArrayIndex),
    AnyIndex,
}

/// `[n]` or `[last - n]`.
#[derive(Debug, PartialEq, Clone, Copy)]
struct ArrayIndex {
    n: usize,
    from_last: bool,
}

impl ArrayIndex {
    /// The position in an array of `len` items, if there is one.
    fn resolve(self, len: usize) -> Option<usize> {
        if self.from_last {
            len.checked_sub(1)?.checked_sub(self.n)
        } else {
            (self.n < len).then_some(self.n)
        }
    }
}

fn bad_path(position: usize) -> SqlError {
    SqlError::new(
        3143,
        "42000",
        format!("Invalid JSON path expression. The error is around character position {position}."),
    )
}

impl Path {
    fn parse(text: &str) -> SqlResult<Path> {
        let chars: Vec<char> = text.trim().chars().collect();
        if chars.first() != Some(&'$') {
            return Err(bad_path(0));
        }
        let mut legs = Vec::new();
        let mut i = 1;
        while i < chars.len() {
            match chars[i] {
                ' ' => i += 1,
                '.' => i = Self::member_leg(&chars, i + 1, &mut legs)?,
                '[' => {
                    let close = chars[i..]
                        .iter()
                        .position(|&c| c == ']')
                        .ok_or_else(|| bad_path(i))?;
                    let inside: String = chars[i + 1..i + close].iter().collect();
                    legs.push(Self::index_leg(inside.trim()).ok_or_else(|| bad_path(i))?);
                    i += close + 1;
                }
                _ => return Err(bad_path(i)),
            }
        }
        Ok(Path { legs })
    }

    /// The member leg starting at `i` (after the dot); returns where the next leg starts.
    fn member_leg(chars: &[char], i: usize, legs: &mut Vec<Leg>) -> SqlResult<usize> {
        match chars.get(i) {
            Some('*') => {
                legs.push(Leg::AnyMember);
                Ok(i + 1)
            }
            Some('"') => {
                let mut key = String::new();
                let mut j = i + 1;
                while j < chars.len() && chars[j] != '"' {
                    if chars[j] == '\\' {
                        j += 1;
                    }
                    key.extend(chars.get(j));
                    j += 1;
                }
                if j >= chars.len() {
                    return Err(bad_path(i));
                }
                legs.push(Leg::Member(key));
                Ok(j + 1)
            }
            Some(c) if c.is_alphanumeric() || *c == '_' || *c == '$' => {
                let end = chars[i..]
                    .iter()
                    .position(|c| !(c.is_alphanumeric() || *c == '_' || *c == '$'))
                    .map_or(chars.len(), |n| i + n);
                legs.push(Leg::Member(chars[i..end].iter().collect()));
                Ok(end)
            }
            _ => Err(bad_path(i)),
        }
    }

    fn index_leg(inside: &str) -> Option<Leg> {
        if inside == "*" {
            return Some(Leg::AnyIndex);
        }
        if let Some(rest) = inside.strip_prefix("last") {
            let rest = rest.trim();
            let n = match rest.strip_prefix('-') {
                Some(n) => n.trim().parse().ok()?,
                None if rest.is_empty() => 0,
                None => return None,
            };
            return Some(Leg::Index(ArrayIndex { n, from_last: true }));
        }
        let n = inside.parse().ok()?;
        Some(Leg::Index(ArrayIndex {
            n,
            from_last: false,
        }))
    }

    fn has_wildcard(&self) -> bool {
        self.legs
            .iter()
            .any(|leg| matches!(leg, Leg::AnyMember | Leg::AnyIndex))
    }

    fn refuse_wildcards(&self) -> SqlResult<()> {
        if self.has_wildcard() {
            return Err(SqlError::new(
                3149,
                "42000",
                "In this situation, path expressions may not contain the * and ** tokens.",
            ));
        }
        Ok(())
    }

    /// Every value of `document` the path reaches, in document order.
    fn find<'a>(&self, document: &'a Json, found: &mut Vec<&'a Json>) {
        find_from(document, &self.legs, found);
    }
}

fn find_from<'a>(at: &'a Json, legs: &[Leg], found: &mut Vec<&'a Json>) {
    let Some((leg, rest)) = legs.split_first() else {
        found.push(at);
        return;
    };
    match (leg, at) {
        (Leg::Member(key), Json::Object(members)) => {
            if let Some(value) = members.get(key) {
                find_from(value, rest, found);
            }
        }
        (Leg::AnyMember, Json::Object(members)) => {
            let keys = crate::json::keys_in_order(members);
            for key in keys {
                find_from(&members[key], rest, found);
            }
        }
        (Leg::Index(index), Json::Array(items)) => {
            if let Some(i) = index.resolve(items.len()) {
                find_from(&items[i], rest, found);
            }
        }
        (Leg::AnyIndex, Json::Array(items)) => {
            for item in items {
                find_from(item, rest, found);
            }
        }
        (Leg::Index(index), scalar) if index.resolve(1) == Some(0) => {
            find_from(scalar, rest, found)
        }
        _ => {}
    }
}

fn find_mut<'a>(at: &'a mut Json, legs: &[Leg]) -> Option<&'a mut Json> {
    let Some((leg, rest)) = legs.split_first() else {
        return Some(at);
    };
    let next = match (leg, at) {
        (Leg::Member(key), Json::Object(members)) => members.get_mut(key)?,
        (Leg::Index(index), Json::Array(items)) => {
            let i = index.resolve(items.len())?;
            &mut items[i]
        }
        (Leg::Index(index), scalar) if index.resolve(1) == Some(0) => scalar,
        _ => return None,
    };
    find_mut(next, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(document: &str, path: &str) -> Vec<String> {
        let document: Json = serde_json::from_str(document).unwrap();
        let mut found = Vec::new();
        Path::parse(path).unwrap().find(&document, &mut found);
        found.iter().map(|j| j.to_string()).collect()
    }

    #[test]
    fn paths_reach_members_items_and_wildcards() {
        let doc = r#"{"a": {"b": [10, 20, 30]}, "key with space": 1, "c": 2}"#;
        assert_eq!(found(doc, "$.a.b[1]"), ["20"]);
        assert_eq!(found(doc, "$.a.b[last]"), ["30"]);
        assert_eq!(found(doc, "$.a.b[last - 2]"), ["10"]);
        assert_eq!(found(doc, "$.a.b[*]"), ["10", "20", "30"]);
        assert_eq!(found(doc, r#"$."key with space""#), ["1"]);
        assert_eq!(found(doc, "$.*").len(), 3);
        assert_eq!(found(doc, "$.c[0]"), ["2"], "a scalar is its own [0]");
        assert!(found(doc, "$.missing").is_empty());
        assert!(found(doc, "$.a.b[3]").is_empty());
    }

    #[test]
    fn malformed_paths_get_error_3143() {
        for bad in ["", "a", "$.", "$[", "$[x]", "$.a[1", "$..a", "$**"] {
            assert_eq!(Path::parse(bad).unwrap_err().code, 3143, "{bad}");
        }
    }

    #[test]
    fn containment_follows_mysqls_rules() {
        let json = |s: &str| serde_json::from_str::<Json>(s).unwrap();
        assert!(contains_document(&json("[1, [2, 3]]"), &json("[3, 1]")));
        assert!(contains_document(
            &json(r#"{"a": 1, "b": [2]}"#),
            &json(r#"{"b": 2}"#)
        ));
        assert!(!contains_document(&json(r#"{"a": 1}"#), &json("1")));
        assert!(contains_document(&json("1.0"), &json("1")));
    }
}
