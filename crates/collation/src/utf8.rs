//! Decoding UTF-8 one character at a time, tolerating bad input: stored text is checked
//! when written, but a comparison must never panic on whatever bytes it is given.

/// What a byte that starts no valid character decodes to (one byte at a time).
pub(crate) const REPLACEMENT: u32 = 0xFFFD;

/// The code point at the start of `bytes` and its length in bytes; `None` when empty.
pub(crate) fn next_char(bytes: &[u8]) -> Option<(u32, usize)> {
    let &lead = bytes.first()?;
    let (length, initial) = match lead {
        0x00..=0x7F => return Some((u32::from(lead), 1)),
        0xC2..=0xDF => (2, u32::from(lead & 0x1F)),
        0xE0..=0xEF => (3, u32::from(lead & 0x0F)),
        0xF0..=0xF4 => (4, u32::from(lead & 0x07)),
        _ => return Some((REPLACEMENT, 1)),
    };
    let Some(tail) = bytes.get(1..length) else {
        return Some((REPLACEMENT, 1));
    };
    let mut code_point = initial;
    for &byte in tail {
        if byte & 0xC0 != 0x80 {
            return Some((REPLACEMENT, 1));
        }
        code_point = (code_point << 6) | u32::from(byte & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not characters.
    let shortest = match code_point {
        0..=0x7F => 1,
        0x80..=0x7FF => 2,
        0x800..=0xFFFF => 3,
        _ => 4,
    };
    if shortest != length || (0xD800..=0xDFFF).contains(&code_point) || code_point > 0x10FFFF {
        return Some((REPLACEMENT, 1));
    }
    Some((code_point, length))
}

/// The code points of `bytes`, in order.
pub(crate) fn chars(mut bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    std::iter::from_fn(move || {
        let (code_point, length) = next_char(bytes)?;
        bytes = &bytes[length..];
        Some(code_point)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_every_length_and_replaces_what_is_not_a_character() {
        let decoded: Vec<u32> = chars("aé€😀".as_bytes()).collect();
        assert_eq!(decoded, vec![0x61, 0xE9, 0x20AC, 0x1F600]);
        let bad: Vec<u32> = chars(&[0xC3, b'a', 0xFF, 0xE2, 0x82]).collect();
        assert_eq!(
            bad,
            vec![REPLACEMENT, 0x61, REPLACEMENT, REPLACEMENT, REPLACEMENT]
        );
        // An overlong '/' and an encoded surrogate.
        assert_eq!(next_char(&[0xC0, 0xAF]), Some((REPLACEMENT, 1)));
        assert_eq!(next_char(&[0xED, 0xA0, 0x80]), Some((REPLACEMENT, 1)));
    }
}
