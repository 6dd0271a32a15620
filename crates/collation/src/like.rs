//! SQL LIKE over characters, with the character equality of a collation.

use crate::utf8::next_char;

/// Whether `text` matches `pattern`: `%` any run of characters, `_` one, `\x` the
/// character `x`; `same` decides whether a text character matches a pattern character.
pub(crate) fn matches(text: &[u8], pattern: &[u8], same: impl Fn(u32, u32) -> bool) -> bool {
    let (mut t, mut p) = (0, 0);
    // Where to resume after the last `%`: (pattern after it, text it has eaten up to).
    let mut backtrack: Option<(usize, usize)> = None;
    while let Some((character, text_bytes)) = next_char(&text[t..]) {
        let step = match next_char(&pattern[p..]) {
            Some((0x25, _)) => {
                // '%'
                backtrack = Some((p + 1, t));
                p += 1;
                continue;
            }
            Some((0x5F, _)) => Some(1), // '_'
            Some((0x5C, _)) if p + 1 < pattern.len() => {
                // '\' and the character it makes literal.
                next_char(&pattern[p + 1..])
                    .filter(|&(wanted, _)| same(character, wanted))
                    .map(|(_, bytes)| 1 + bytes)
            }
            Some((wanted, bytes)) => same(character, wanted).then_some(bytes),
            None => None,
        };
        match (step, backtrack) {
            (Some(pattern_bytes), _) => {
                t += text_bytes;
                p += pattern_bytes;
            }
            (None, Some((after_percent, eaten))) => {
                // Let the last `%` eat one more character and try again from there.
                let (_, eaten_bytes) = next_char(&text[eaten..]).expect("eaten is inside text");
                backtrack = Some((after_percent, eaten + eaten_bytes));
                t = eaten + eaten_bytes;
                p = after_percent;
            }
            (None, None) => return false,
        }
    }
    pattern[p..].iter().all(|&byte| byte == b'%')
}
