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
const NOT_SIMPLE: u32 = u32::MAX;
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

/// Room for the weights of one character or contraction: the longest entry, and more than
/// a Hangul syllable's jamo or an implicit weight need.
const QUEUE_WEIGHTS: usize = 32;

/// The primary weights of a text, one at a time: comparing two texts stops at the first
/// weight that differs, where a weight key would weigh every character of both. (A whole
/// weight key is written by `Ducet::push_weight_key`, which writes runs of ASCII straight
/// into the buffer: through this iterator, DISTINCT on sysbench's `c` cost 13% more.)
pub(crate) struct Weights<'a> {
    table: &'static Ducet,
    rest: &'a [u8],
    queue: [u16; QUEUE_WEIGHTS],
    head: usize,
    len: usize,
}

impl<'a> Weights<'a> {
    pub(crate) fn new(text: &'a [u8]) -> Self {
        Weights {
            table: ducet(),
            rest: text,
            queue: [0; QUEUE_WEIGHTS],
            head: 0,
            len: 0,
        }
    }
}

impl Iterator for Weights<'_> {
    type Item = u16;

    fn next(&mut self) -> Option<u16> {
        loop {
            if self.head < self.len {
                self.head += 1;
                return Some(self.queue[self.head - 1]);
            }
            let (&byte, tail) = self.rest.split_first()?;
            match self.table.ascii.get(usize::from(byte)).copied() {
                Some(0) => self.rest = tail,
                Some(weight) if weight != NOT_SIMPLE => {
                    self.rest = tail;
                    return Some(weight as u16);
                }
                _ => {
                    let (queue, len) = (&mut self.queue, &mut self.len);
                    (self.head, *len) = (0, 0);
                    let taken = self.table.push_next(self.rest, &mut |w| {
                        assert!(*len < QUEUE_WEIGHTS, "one character has at most 32 weights");
                        queue[*len] = w;
                        *len += 1;
                    });
                    self.rest = &self.rest[taken..];
                }
            }
        }
    }
}

/// One character's primary weights, alone (no contraction with what follows it): the
/// first `.1` of `.0`.
pub(crate) fn char_weights(code_point: u32) -> ([u16; QUEUE_WEIGHTS], usize) {
    let table = ducet();
    let (mut weights, mut len) = ([0; QUEUE_WEIGHTS], 0);
    table.push_char(code_point, table.entry(code_point), &mut |w| {
        weights[len] = w;
        len += 1;
    });
    (weights, len)
}

/// The order of two texts' primary weights. Their common start of simple ASCII characters
/// (one weight each, no contraction) weighs the same in both and is skipped.
pub(crate) fn compare(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let table = ducet();
    let common = a
        .iter()
        .zip(b)
        .take_while(|&(x, y)| {
            x == y
                && table
                    .ascii
                    .get(usize::from(*x))
                    .is_some_and(|&w| w != NOT_SIMPLE)
        })
        .count();
    Weights::new(&a[common..]).cmp(Weights::new(&b[common..]))
}

/// A contraction: the characters after its first, and its weights.
struct Contraction {
    rest: Box<[u32]>,
    weights: std::ops::Range<usize>,
}

pub(crate) struct Ducet {
    /// The weight of each ASCII character that has at most one and begins no contraction
    /// (0: ignorable), `NOT_SIMPLE` for the others: most text is ASCII, and this is its
    /// whole lookup.
    ascii: [u32; 128],
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
            ascii: [NOT_SIMPLE; 128],
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
        for byte in 0..128u32 {
            let entry = table.entry(byte);
            let simple = !entry.is_absent() && !entry.starts_contraction();
            table.ascii[byte as usize] = match &table.weights[entry.range()] {
                [] if simple => 0,
                [weight] if simple => u32::from(*weight),
                _ => NOT_SIMPLE,
            };
        }
        table
    }

    /// Appends the primary weights of all of `text` to `out`, each as two big-endian bytes.
    pub(crate) fn push_weight_key(&self, text: &[u8], out: &mut Vec<u8>) {
        let mut rest = text;
        while !rest.is_empty() {
            rest = &rest[self.push_simple_run(rest, out)..];
            if !rest.is_empty() {
                let taken = self.push_next(rest, &mut |w| out.extend_from_slice(&w.to_be_bytes()));
                rest = &rest[taken..];
            }
        }
    }

    /// Appends the weights of the run of simple ASCII characters `text` begins with (the
    /// common case, written straight into the buffer); returns the bytes it took.
    fn push_simple_run(&self, text: &[u8], out: &mut Vec<u8>) -> usize {
        let start = out.len();
        out.resize(start + 2 * text.len(), 0);
        let buffer = &mut out[start..];
        let (mut taken, mut written) = (0, 0);
        for &byte in text {
            let weight = self
                .ascii
                .get(usize::from(byte))
                .copied()
                .unwrap_or(NOT_SIMPLE);
            if weight == NOT_SIMPLE {
                break;
            }
            if weight != 0 {
                buffer[written..written + 2].copy_from_slice(&(weight as u16).to_be_bytes());
                written += 2;
            }
            taken += 1;
        }
        out.truncate(start + written);
        taken
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
