//! `utf8mb4_general_ci`, MySQL's older case-insensitive collation: every character of the
//! Basic Multilingual Plane weighs one 16-bit value, its upper case with Latin accents
//! removed (`á` and `Á` weigh `A`, `ß` weighs `S`); every character beyond it weighs the
//! same (U+FFFD), as in MySQL. The accent folding comes from the DUCET: a Latin character
//! below U+0250 whose primary weight is a single ASCII letter's is that letter.

use std::sync::OnceLock;

use crate::ducet::char_weights;

const PLANE: usize = 0x1_0000;
/// What every character beyond the Basic Multilingual Plane weighs.
const BEYOND_PLANE: u16 = 0xFFFD;
/// Latin characters whose accents fold away lie below this.
const LATIN_END: u32 = 0x250;

/// The weight of a character.
pub(crate) fn weight(code_point: u32) -> u16 {
    static TABLE: OnceLock<Box<[u16]>> = OnceLock::new();
    let table = TABLE.get_or_init(|| (0..PLANE as u32).map(fold).collect());
    table
        .get(code_point as usize)
        .copied()
        .unwrap_or(BEYOND_PLANE)
}

fn fold(code_point: u32) -> u16 {
    if code_point == u32::from('ß') {
        return u16::from(b'S');
    }
    if code_point < LATIN_END {
        if let Some(letter) = ascii_letter_weighing_as(code_point) {
            return u16::from(letter.to_ascii_uppercase());
        }
    }
    let Some(character) = char::from_u32(code_point) else {
        return code_point as u16;
    };
    let mut upper = character.to_uppercase();
    match (upper.next(), upper.next()) {
        (Some(single), None) if (single as u32) < PLANE as u32 => single as u16,
        _ => code_point as u16,
    }
}

/// The ASCII letter whose DUCET primary weights equal the character's, if one does.
fn ascii_letter_weighing_as(code_point: u32) -> Option<u8> {
    let primaries = |c: u32| {
        let (weights, len) = char_weights(c);
        weights[..len].to_vec()
    };
    let own = primaries(code_point);
    (b'a'..=b'z').find(|&letter| primaries(u32::from(letter)) == own)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_case_and_latin_accents_but_keeps_other_letters() {
        let w = |c: char| weight(u32::from(c));
        assert_eq!(w('a'), u16::from(b'A'));
        assert_eq!(w('Á'), u16::from(b'A'));
        assert_eq!(w('ç'), u16::from(b'C'));
        assert_eq!(w('ß'), u16::from(b'S'));
        assert_eq!(w('æ'), w('Æ'));
        assert_ne!(w('æ'), w('a'));
        assert_eq!(w('я'), w('Я'));
        assert_eq!(w('😀'), w('🙂'));
    }
}
