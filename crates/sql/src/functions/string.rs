//! String functions. Positions and lengths count characters (UTF-8), as MySQL's do for
//! utf8mb4 strings, except LENGTH, which counts bytes; on a binary string they count bytes
//! and UPPER and LOWER change nothing (`OnBinary`).

use kista_client::types::Value;

use super::{
    binary, lazy, strict, string_of, text, Args, FunctionDef, OnBinary, Returns, BIGINT, TEXT,
};
use crate::error::SqlResult;
use crate::value::{self, to_i64, to_text};

/// Longest string REPEAT, LPAD, RPAD and SPACE make (MySQL's `max_allowed_packet` bound:
/// longer gives NULL).
const RESULT_BYTES_MAX: usize = 64 << 20;

/// `TRIM(LEADING x FROM s)` and `TRIM(TRAILING x FROM s)`.
pub const TRIM_LEADING: &str = "trim leading";
pub const TRIM_TRAILING: &str = "trim trailing";

/// Functions giving text, and functions giving a count or a position.
const TEXT_RESULT: Returns = Returns::Type(TEXT);
const COUNT_RESULT: Returns = Returns::Type(BIGINT);

pub(super) const FUNCTIONS: &[FunctionDef] = &[
    strict(&["concat"], 1..=usize::MAX, TEXT_RESULT, |v, _| {
        Ok(Value::Bytes(v.iter().flat_map(to_text).collect()))
    }),
    lazy(
        &["concat_ws"],
        2..=usize::MAX,
        Returns::Type(TEXT),
        concat_ws,
    ),
    strict(&["length", "octet_length"], 1..=1, COUNT_RESULT, |v, _| {
        Ok(Value::Int(to_text(&v[0]).len() as i64))
    }),
    binary(
        OnBinary::CountsBytes,
        strict(
            &["char_length", "character_length"],
            1..=1,
            COUNT_RESULT,
            |v, _| Ok(Value::Int(string_of(&v[0]).chars().count() as i64)),
        ),
    ),
    binary(
        OnBinary::Unchanged,
        strict(&["upper", "ucase"], 1..=1, TEXT_RESULT, |v, _| {
            Ok(text(string_of(&v[0]).to_uppercase()))
        }),
    ),
    binary(
        OnBinary::Unchanged,
        strict(&["lower", "lcase"], 1..=1, TEXT_RESULT, |v, _| {
            Ok(text(string_of(&v[0]).to_lowercase()))
        }),
    ),
    binary(
        OnBinary::CountsBytes,
        strict(
            &["substring", "substr", "mid"],
            2..=3,
            TEXT_RESULT,
            substring,
        ),
    ),
    binary(
        OnBinary::CountsBytes,
        strict(&["left"], 2..=2, TEXT_RESULT, |v, _| {
            let n = to_i64(&v[1]).unwrap_or(0).max(0) as usize;
            Ok(text(string_of(&v[0]).chars().take(n).collect::<String>()))
        }),
    ),
    binary(
        OnBinary::CountsBytes,
        strict(&["right"], 2..=2, TEXT_RESULT, |v, _| {
            let chars: Vec<char> = string_of(&v[0]).chars().collect();
            let n = (to_i64(&v[1]).unwrap_or(0).max(0) as usize).min(chars.len());
            Ok(text(chars[chars.len() - n..].iter().collect::<String>()))
        }),
    ),
    // TRIM([BOTH|LEADING|TRAILING] [x] FROM s) binds to "trim" and to the names with a
    // space, which SQL cannot call (expr/special_forms.rs): MySQL's LTRIM and RTRIM take
    // no string to remove.
    binary(
        OnBinary::CountsBytes,
        strict(&["trim"], 1..=2, TEXT_RESULT, |v, _| {
            Ok(trimmed(v, true, true))
        }),
    ),
    binary(
        OnBinary::CountsBytes,
        strict(&["ltrim"], 1..=1, TEXT_RESULT, |v, _| {
            Ok(trimmed(v, true, false))
        }),
    ),
    binary(
        OnBinary::CountsBytes,
        strict(&["rtrim"], 1..=1, TEXT_RESULT, |v, _| {
            Ok(trimmed(v, false, true))
        }),
    ),
    binary(
        OnBinary::CountsBytes,
        strict(&[TRIM_LEADING], 2..=2, TEXT_RESULT, |v, _| {
            Ok(trimmed(v, true, false))
        }),
    ),
    binary(
        OnBinary::CountsBytes,
        strict(&[TRIM_TRAILING], 2..=2, TEXT_RESULT, |v, _| {
            Ok(trimmed(v, false, true))
        }),
    ),
    binary(
        OnBinary::CountsBytes,
        strict(&["replace"], 3..=3, TEXT_RESULT, |v, _| {
            let (s, from, to) = (string_of(&v[0]), string_of(&v[1]), string_of(&v[2]));
            Ok(text(if from.is_empty() {
                s
            } else {
                s.replace(&from, &to)
            }))
        }),
    ),
    strict(&["repeat"], 2..=2, TEXT_RESULT, |v, _| {
        let s = to_text(&v[0]);
        let times = to_i64(&v[1]).unwrap_or(0).max(0) as usize;
        Ok(bounded(|| s.repeat(times), s.len().saturating_mul(times)))
    }),
    strict(&["space"], 1..=1, TEXT_RESULT, |v, _| {
        let n = to_i64(&v[0]).unwrap_or(0).max(0) as usize;
        Ok(bounded(|| vec![b' '; n], n))
    }),
    binary(
        OnBinary::CountsBytes,
        strict(&["reverse"], 1..=1, TEXT_RESULT, |v, _| {
            Ok(text(string_of(&v[0]).chars().rev().collect::<String>()))
        }),
    ),
    binary(
        OnBinary::CountsBytes,
        strict(&["lpad"], 3..=3, TEXT_RESULT, |v, _| Ok(padded(v, true))),
    ),
    binary(
        OnBinary::CountsBytes,
        strict(&["rpad"], 3..=3, TEXT_RESULT, |v, _| Ok(padded(v, false))),
    ),
    binary(
        OnBinary::CountsBytes,
        strict(&["substring_index"], 3..=3, TEXT_RESULT, substring_index),
    ),
    binary(
        OnBinary::CountsBytes,
        strict(&["locate"], 2..=3, COUNT_RESULT, |v, _| {
            let start = v.get(2).map_or(Some(1), to_i64).unwrap_or(1);
            Ok(Value::Int(position_of(
                &string_of(&v[0]),
                &string_of(&v[1]),
                start,
            )))
        }),
    ),
    binary(
        OnBinary::CountsBytes,
        strict(&["instr"], 2..=2, COUNT_RESULT, |v, _| {
            Ok(Value::Int(position_of(
                &string_of(&v[1]),
                &string_of(&v[0]),
                1,
            )))
        }),
    ),
    strict(&["ascii"], 1..=1, COUNT_RESULT, |v, _| {
        Ok(Value::Int(
            to_text(&v[0]).first().map_or(0, |&b| i64::from(b)),
        ))
    }),
    strict(&["strcmp"], 2..=2, COUNT_RESULT, |v, _| {
        Ok(Value::Int(match value::compare(&v[0], &v[1]) {
            Some(std::cmp::Ordering::Less) => -1,
            Some(std::cmp::Ordering::Greater) => 1,
            _ => 0,
        }))
    }),
    strict(&["hex"], 1..=1, TEXT_RESULT, |v, _| {
        Ok(text(match &v[0] {
            Value::Bytes(bytes) => crate::value::hex_digits(bytes),
            number => format!("{:X}", to_i64(number).unwrap_or(0)),
        }))
    }),
];

/// CONCAT_WS(separator, ...): NULL only for a NULL separator; NULL arguments are skipped.
fn concat_ws(args: &Args) -> SqlResult<Value> {
    let separator = args.get(0)?;
    if separator.is_null() {
        return Ok(Value::Null);
    }
    let separator = to_text(&separator);
    let mut out = Vec::new();
    let mut first = true;
    for n in 1..args.len() {
        let value = args.get(n)?;
        if value.is_null() {
            continue;
        }
        if !first {
            out.extend_from_slice(&separator);
        }
        first = false;
        out.extend_from_slice(&to_text(&value));
    }
    Ok(Value::Bytes(out))
}

/// SUBSTRING(s, start[, length]): `start` counts from 1, or from the end when negative;
/// 0 gives the empty string.
fn substring(v: &[Value], _: &super::EvalContext) -> SqlResult<Value> {
    let chars: Vec<char> = string_of(&v[0]).chars().collect();
    let start = to_i64(&v[1]).unwrap_or(0);
    let length = v.get(2).map_or(Some(i64::MAX), to_i64).unwrap_or(0);
    let count = chars.len() as i64;
    let first = if start > 0 { start - 1 } else { count + start };
    if start == 0 || first < 0 || first >= count || length <= 0 {
        return Ok(text(""));
    }
    let end = first.saturating_add(length).min(count);
    Ok(text(
        chars[first as usize..end as usize]
            .iter()
            .collect::<String>(),
    ))
}

/// SUBSTRING_INDEX(s, delimiter, n): `s` up to the n-th delimiter (from the end when `n`
/// is negative).
fn substring_index(v: &[Value], _: &super::EvalContext) -> SqlResult<Value> {
    let (s, delimiter) = (string_of(&v[0]), string_of(&v[1]));
    let n = to_i64(&v[2]).unwrap_or(0);
    if delimiter.is_empty() || n == 0 {
        return Ok(text(""));
    }
    let parts: Vec<&str> = s.split(delimiter.as_str()).collect();
    let keep = n.unsigned_abs().min(parts.len() as u64) as usize;
    let kept = if n > 0 {
        parts[..keep].join(&delimiter)
    } else {
        parts[parts.len() - keep..].join(&delimiter)
    };
    Ok(text(kept))
}

/// The 1-based character position of `needle` in `haystack` at or after `start` (0: none).
fn position_of(needle: &str, haystack: &str, start: i64) -> i64 {
    if start < 1 {
        return 0;
    }
    let Some((offset, _)) = haystack.char_indices().nth(start as usize - 1) else {
        return i64::from(needle.is_empty() && start as usize == haystack.chars().count() + 1);
    };
    match haystack[offset..].find(needle) {
        Some(found) => start + haystack[offset..offset + found].chars().count() as i64,
        None => 0,
    }
}

/// TRIM, LTRIM, RTRIM: spaces, or every repetition of the second argument, off the
/// chosen ends.
fn trimmed(v: &[Value], leading: bool, trailing: bool) -> Value {
    let mut s = string_of(&v[0]);
    let what = v.get(1).map_or_else(|| " ".to_string(), string_of);
    if what.is_empty() {
        return text(s);
    }
    if leading {
        while let Some(rest) = s.strip_prefix(what.as_str()) {
            s = rest.to_string();
        }
    }
    if trailing {
        while let Some(rest) = s.strip_suffix(what.as_str()) {
            s = rest.to_string();
        }
    }
    text(s)
}

/// LPAD and RPAD: `s` padded (or cut) to `length` characters.
fn padded(v: &[Value], left: bool) -> Value {
    let chars: Vec<char> = string_of(&v[0]).chars().collect();
    let Some(length) = to_i64(&v[1]).filter(|&n| n >= 0) else {
        return Value::Null;
    };
    let length = length as usize;
    let pad: Vec<char> = string_of(&v[2]).chars().collect();
    if length <= chars.len() {
        return text(chars[..length].iter().collect::<String>());
    }
    if pad.is_empty() || length.saturating_mul(4) > RESULT_BYTES_MAX {
        return Value::Null;
    }
    let filler: String = pad.iter().cycle().take(length - chars.len()).collect();
    let s: String = chars.iter().collect();
    text(if left { filler + &s } else { s + &filler })
}

/// A result made only if it stays under [`RESULT_BYTES_MAX`]; NULL otherwise.
fn bounded(make: impl FnOnce() -> Vec<u8>, bytes: usize) -> Value {
    if bytes > RESULT_BYTES_MAX {
        Value::Null
    } else {
        Value::Bytes(make())
    }
}
