//! The primary weights of UCA 9.0.0's Default Unicode Collation Element Table (DUCET), which
//! `utf8mb4_0900_ai_ci` compares by: a character's primary weights say which letter it is,
//! whatever its accents (secondary level) and case (tertiary level).
//!
//! The table (`data/uca-9.0.0-primary.txt`, Unicode's `allkeys-9.0.0.txt` reduced to code
//! points and non-zero primaries by `data/strip_allkeys.py`) is parsed once, on first use,
//! into 256-code-point pages. What it leaves out gets UCA's computed weights: Hangul
//! syllables decompose into their jamo, ideographs and unassigned code points get *implicit*
//! weights (UTS #10 section 10.1). Contractions (several characters with one weight, such as
//! Catalan's `L·`) are matched when their characters are contiguous; UCA's discontiguous
//! matching across combining marks is not done (text in composed form, as applications
//! send it, never needs it).

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::utf8::next_char;

const TABLE_TEXT: &str = include_str!("../data/uca-9.0.0-primary.txt");

/// Most weights one entry of the table has (DUCET 9.0.0's longest expansion has 18
/// collation elements).
const ENTRY_WEIGHTS_MAX: usize = 18;

const PAGE_SIZE: usize = 256;
const NO_PAGE: u32 = u32::MAX;
const CODE_POINTS: usize = 0x11_0000;

/// An entry of a page: where its weights start in `weights`, how many, and whether the
/// character begins a contraction. `ABSENT` entries get computed weights.
#[derive(Clone, Copy)]
struct Entry(u32);

impl Entry {
    const ABSENT_LENGTH: u32 = 0x3F;
    const ABSENT: Entry = Entry(Self::ABSENT_LENGTH);
    const CONTRACTION: u32 = 0x40;

    fn new(start: usize, length: usize) -> Entry {
        assert!(length < Self::ABSENT_LENGTH as usize && start < (1 << 25));
        Entry(((start as u32) << 7) | length as u32)
    }

    fn is_absent(self) -> bool {
        self.0 & Self::ABSENT_LENGTH == Self::ABSENT_LENGTH
    }

    fn starts_contraction(self) -> bool {
        self.0 & Self::CONTRACTION != 0
    }

    fn range(self) -> std::ops::Range<usize> {
        let start = (self.0 >> 7) as usize;
        start..start + (self.0 & Self::ABSENT_LENGTH) as usize
    }
}

/// A contraction: the characters after its first, and its weights.
struct Contraction {
    rest: Box<[u32]>,
    weights: std::ops::Range<usize>,
}

pub(crate) struct Ducet {
    /// For each page of 256 code points, its first entry in `entries`, or `NO_PAGE`.
    pages: Box<[u32]>,
    entries: Vec<Entry>,
    weights: Vec<u16>,
    /// By first character, longest first.
    contractions: HashMap<u32, Vec<Contraction>>,
}

/// The table, parsed on first use.
pub(crate) fn ducet() -> &'static Ducet {
    static TABLE: OnceLock<Ducet> = OnceLock::new();
    TABLE.get_or_init(|| Ducet::parse(TABLE_TEXT))
}

impl Ducet {
    fn parse(text: &str) -> Ducet {
        let mut table = Ducet {
            pages: vec![NO_PAGE; CODE_POINTS / PAGE_SIZE].into_boxed_slice(),
            entries: Vec::new(),
            weights: Vec::new(),
            contractions: HashMap::new(),
        };
        for line in text.lines().filter(|line| !line.starts_with('#')) {
            let (code_points, weights) = line.split_once(';').expect("table line has a ';'");
            let hex = |word: &str| u32::from_str_radix(word, 16).expect("table is hex");
            let code_points: Vec<u32> = code_points.split(' ').map(hex).collect();
            let start = table.weights.len();
            let weights = weights.split(' ').filter(|w| !w.is_empty());
            table.weights.extend(weights.map(|w| hex(w) as u16));
            let range = start..table.weights.len();
            assert!(
                range.len() <= ENTRY_WEIGHTS_MAX,
                "entry longer than expected"
            );
            match code_points[..] {
                [single] => *table.entry_mut(single) = Entry::new(range.start, range.len()),
                [first, ..] => {
                    table.entry_mut(first).0 |= Entry::CONTRACTION;
                    let rest = code_points[1..].into();
                    let found = table.contractions.entry(first).or_default();
                    found.push(Contraction {
                        rest,
                        weights: range,
                    });
                    found.sort_by_key(|c| std::cmp::Reverse(c.rest.len()));
                }
                [] => unreachable!("split gives at least one word"),
            }
        }
        table
    }

    fn entry_mut(&mut self, code_point: u32) -> &mut Entry {
        let page = code_point as usize / PAGE_SIZE;
        if self.pages[page] == NO_PAGE {
            self.pages[page] = self.entries.len() as u32;
            self.entries.extend([Entry::ABSENT; PAGE_SIZE]);
        }
        &mut self.entries[self.pages[page] as usize + code_point as usize % PAGE_SIZE]
    }

    fn entry(&self, code_point: u32) -> Entry {
        match self.pages.get(code_point as usize / PAGE_SIZE) {
            Some(&NO_PAGE) | None => Entry::ABSENT,
            Some(&first) => self.entries[first as usize + code_point as usize % PAGE_SIZE],
        }
    }

    /// Appends the primary weights of the character or contraction at the start of `text`
    /// to `out`; returns how many bytes it took (0 at the end).
    pub(crate) fn push_next(&self, text: &[u8], out: &mut impl FnMut(u16)) -> usize {
        let Some((first, first_bytes)) = next_char(text) else {
            return 0;
        };
        let entry = self.entry(first);
        if entry.starts_contraction() {
            let candidates = self.contractions.get(&first).into_iter().flatten();
            for contraction in candidates {
                if let Some(rest_bytes) = starts_with(&text[first_bytes..], &contraction.rest) {
                    self.weights[contraction.weights.clone()]
                        .iter()
                        .for_each(|&w| out(w));
                    return first_bytes + rest_bytes;
                }
            }
        }
        self.push_char(first, entry, out);
        first_bytes
    }

    /// Appends one character's primary weights, without looking for contractions.
    pub(crate) fn push_char_weights(&self, code_point: u32, out: &mut impl FnMut(u16)) {
        self.push_char(code_point, self.entry(code_point), out);
    }

    fn push_char(&self, code_point: u32, entry: Entry, out: &mut impl FnMut(u16)) {
        if !entry.is_absent() {
            self.weights[entry.range()].iter().for_each(|&w| out(w));
        } else if let Some(jamo) = hangul_jamo(code_point) {
            for part in jamo.into_iter().flatten() {
                self.push_char(part, self.entry(part), out);
            }
        } else {
            implicit_weights(code_point).into_iter().for_each(out);
        }
    }
}

/// How many bytes of `text` its first characters take when they are `code_points`.
fn starts_with(text: &[u8], code_points: &[u32]) -> Option<usize> {
    let mut at = 0;
    for &wanted in code_points {
        let (found, bytes) = next_char(&text[at..])?;
        if found != wanted {
            return None;
        }
        at += bytes;
    }
    Some(at)
}

/// The jamo a precomposed Hangul syllable decomposes into (UAX #15's arithmetic).
fn hangul_jamo(code_point: u32) -> Option<[Option<u32>; 3]> {
    const SYLLABLE_BASE: u32 = 0xAC00;
    const LEADING_BASE: u32 = 0x1100;
    const VOWEL_BASE: u32 = 0x1161;
    const TRAILING_BASE: u32 = 0x11A7;
    const VOWELS: u32 = 21;
    const TRAILINGS: u32 = 28;
    const SYLLABLES: u32 = 19 * VOWELS * TRAILINGS;
    let index = code_point
        .checked_sub(SYLLABLE_BASE)
        .filter(|&i| i < SYLLABLES)?;
    let trailing = index % TRAILINGS;
    Some([
        Some(LEADING_BASE + index / (VOWELS * TRAILINGS)),
        Some(VOWEL_BASE + (index % (VOWELS * TRAILINGS)) / TRAILINGS),
        (trailing != 0).then_some(TRAILING_BASE + trailing),
    ])
}

/// UCA 9.0.0's computed weights for a code point the table leaves out: Tangut, the core
/// and the other unified ideographs, then everything else, each after the one before.
fn implicit_weights(code_point: u32) -> [u16; 2] {
    const TANGUT: std::ops::RangeInclusive<u32> = 0x17000..=0x18AFF;
    if TANGUT.contains(&code_point) {
        return [0xFB00, ((code_point - 0x17000) | 0x8000) as u16];
    }
    let base = if is_core_ideograph(code_point) {
        0xFB40
    } else if is_other_ideograph(code_point) {
        0xFB80
    } else {
        0xFBC0
    };
    [
        (base + (code_point >> 15)) as u16,
        ((code_point & 0x7FFF) | 0x8000) as u16,
    ]
}

/// Unified ideographs of the CJK Unified Ideographs and Compatibility blocks (Unicode 9.0).
fn is_core_ideograph(code_point: u32) -> bool {
    const COMPATIBILITY_UNIFIED: [u32; 12] = [
        0xFA0E, 0xFA0F, 0xFA11, 0xFA13, 0xFA14, 0xFA1F, 0xFA21, 0xFA23, 0xFA24, 0xFA27, 0xFA28,
        0xFA29,
    ];
    (0x4E00..=0x9FD5).contains(&code_point) || COMPATIBILITY_UNIFIED.contains(&code_point)
}

/// Unified ideographs of the extension blocks A to E (Unicode 9.0).
fn is_other_ideograph(code_point: u32) -> bool {
    [
        0x3400..=0x4DB5,
        0x20000..=0x2A6D6,
        0x2A700..=0x2B734,
        0x2B740..=0x2B81D,
        0x2B820..=0x2CEA1,
    ]
    .iter()
    .any(|range| range.contains(&code_point))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights(text: &str) -> Vec<u16> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < text.len() {
            at += ducet().push_next(&text.as_bytes()[at..], &mut |w| out.push(w));
        }
        out
    }

    #[test]
    fn case_and_accents_share_the_letters_primary_weight() {
        assert_eq!(weights("a"), vec![0x1C47]);
        assert_eq!(weights("A"), weights("a"));
        assert_eq!(weights("á"), weights("a"));
        assert_eq!(weights("ß"), weights("ss"));
        // Combining marks and control characters are ignorable at this level.
        assert_eq!(weights("a\u{301}"), weights("a"));
        assert_eq!(weights("\u{1}"), vec![]);
        assert!(weights("a") < weights("b"));
        assert!(weights(" ") < weights("a"));
    }

    #[test]
    fn contractions_hangul_and_ideographs_get_their_weights() {
        // Catalan's L· is one letter, where a middle dot after another letter weighs.
        assert_eq!(weights("L·"), vec![0x1D77]);
        assert_eq!(weights("x·").len(), 2);
        assert_eq!(weights("한"), weights("\u{1112}\u{1161}\u{11AB}"));
        assert_eq!(weights("一"), vec![0xFB40, 0x4E00 | 0x8000]);
        assert_eq!(weights("\u{3400}"), vec![0xFB80, 0x3400 | 0x8000]);
        assert_eq!(weights("\u{E000}"), vec![0xFBC1, 0x6000 | 0x8000]);
        assert!(weights("z") < weights("一"));
    }
}
