//! What MySQL 8 answers, collation by collation.

use std::cmp::Ordering::{Equal, Greater, Less};

use super::Collation::{self, *};

fn cmp(collation: Collation, a: &str, b: &str) -> std::cmp::Ordering {
    collation.compare(a.as_bytes(), b.as_bytes())
}

fn key(collation: Collation, text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    collation.weight_key(text.as_bytes(), &mut out);
    out
}

#[test]
fn the_default_ignores_case_and_accents_but_counts_trailing_spaces() {
    assert_eq!(Collation::default(), utf8mb4_0900_ai_ci);
    assert_eq!(cmp(utf8mb4_0900_ai_ci, "abc", "ABC"), Equal);
    assert_eq!(cmp(utf8mb4_0900_ai_ci, "résumé", "RESUME"), Equal);
    assert_eq!(cmp(utf8mb4_0900_ai_ci, "Straße", "strasse"), Equal);
    assert_eq!(cmp(utf8mb4_0900_ai_ci, "a", "a "), Less);
    assert_eq!(cmp(utf8mb4_0900_ai_ci, "Banana", "apple"), Greater);
    assert_eq!(cmp(utf8mb4_0900_ai_ci, "a", "B"), Less);
}

#[test]
fn general_ci_folds_one_character_at_a_time_and_pads() {
    assert_eq!(cmp(utf8mb4_general_ci, "abc", "ABC "), Equal);
    assert_eq!(cmp(utf8mb4_general_ci, "Ä", "a"), Equal);
    assert_eq!(cmp(utf8mb4_general_ci, "ß", "s"), Equal);
    assert_eq!(cmp(utf8mb4_general_ci, "ß", "ss"), Less);
    assert_eq!(cmp(utf8mb4_general_ci, "😀", "🙂"), Equal);
}

#[test]
fn bin_collations_compare_code_points_and_differ_on_trailing_spaces() {
    assert_eq!(cmp(utf8mb4_bin, "a", "A"), Greater);
    assert_eq!(cmp(utf8mb4_bin, "a", "a  "), Equal);
    assert_eq!(cmp(utf8mb4_0900_bin, "a", "a "), Less);
    assert_eq!(cmp(binary, "a", "A"), Greater);
    assert!(utf8mb4_0900_bin.is_bytewise() && !utf8mb4_bin.is_bytewise());
}

#[test]
fn weight_keys_order_as_the_collation_compares() {
    let words = [
        "", " ", "a", "A", "á", "a ", "ab", "Ab", "b", "ß", "ss", "st", "z", "Ä", "é", "E", "一",
        "한", "L·", "L", "\u{1}", "😀", "\u{FFFF}", "Ø", "o",
    ];
    for collation in [
        utf8mb4_0900_ai_ci,
        utf8mb4_general_ci,
        utf8mb4_bin,
        utf8mb4_0900_bin,
    ] {
        for a in words {
            for b in words {
                assert_eq!(
                    key(collation, a).cmp(&key(collation, b)),
                    cmp(collation, a, b),
                    "{collation:?}: {a:?} and {b:?}"
                );
            }
        }
    }
}

#[test]
fn like_matches_character_by_character_under_the_collation() {
    let like =
        |c: Collation, text: &str, pattern: &str| c.like(text.as_bytes(), pattern.as_bytes());
    assert!(like(utf8mb4_0900_ai_ci, "Banana", "b%"));
    assert!(like(utf8mb4_0900_ai_ci, "Crème", "creme"));
    assert!(!like(utf8mb4_0900_ai_ci, "ß", "ss"));
    assert!(like(utf8mb4_0900_ai_ci, "é", "_"));
    assert!(!like(utf8mb4_0900_ai_ci, "a ", "a"));
    assert!(like(utf8mb4_general_ci, "ÄBC", "a_c"));
    assert!(!like(utf8mb4_bin, "Banana", "b%"));
    assert!(like(utf8mb4_bin, "50%", "50\\%"));
    assert!(!like(utf8mb4_bin, "500", "50\\%"));
    assert!(like(binary, "abcabc", "%bc"));
    assert!(like(binary, "", "%%"));
    assert!(!like(binary, "hello", "h_o"));
}

#[test]
fn names_and_ids_are_mysqls() {
    for def in &super::COLLATIONS {
        assert_eq!(Collation::named(def.name), Some(def.collation));
        assert_eq!(Collation::with_id(def.id), Some(def.collation));
    }
    assert_eq!(Collation::named("UTF8MB4_BIN"), Some(utf8mb4_bin));
    assert_eq!(utf8mb4_0900_ai_ci.id(), 255);
    assert_eq!(Collation::named("latin1_swedish_ci"), None);
    assert_eq!(
        Collation::resolve("latin1_swedish_ci"),
        Some(utf8mb4_general_ci)
    );
    assert_eq!(Collation::resolve("utf8mb3_bin"), Some(utf8mb4_bin));
    assert_eq!(
        Collation::resolve("utf8mb4_unicode_ci"),
        Some(utf8mb4_0900_ai_ci)
    );
    assert_eq!(Collation::resolve("utf8mb4_sv_0900_ai_ci"), None);
    assert_eq!(
        Collation::default_of_charset("UTF8MB4"),
        Some(utf8mb4_0900_ai_ci)
    );
}

#[test]
fn bad_utf8_compares_without_panicking() {
    let bad = [0xFF, b'a', 0xC3];
    for collation in [utf8mb4_0900_ai_ci, utf8mb4_general_ci, utf8mb4_bin] {
        let _ = collation.compare(&bad, b"a");
        assert!(collation.like(&bad, b"%a%"));
    }
}

fn like_bytes(text: &[u8], pattern: &[u8]) -> bool {
    binary.like(text, pattern)
}

#[test]
fn like_matches_percent_underscore_and_escapes() {
    assert!(like_bytes(b"hello", b"h%o"));
    assert!(like_bytes(b"hello", b"%"));
    assert!(like_bytes(b"", b"%"));
    assert!(!like_bytes(b"", b"_"));
    assert!(like_bytes(b"hello", b"h_llo"));
    assert!(!like_bytes(b"hello", b"h_lo"));
    assert!(like_bytes(b"abcabd", b"%abd"));
    assert!(like_bytes(b"aaa", b"%a%a%a%"));
    assert!(!like_bytes(b"aa", b"%a%a%a%"));
    assert!(like_bytes(b"50%", b"50\\%"));
    assert!(!like_bytes(b"500", b"50\\%"));
    assert!(like_bytes(b"a_c", b"a\\_c"));
    assert!(!like_bytes(b"abc", b"a\\_c"));
    assert!(
        like_bytes("é!".as_bytes(), b"_!"),
        "one character, two bytes"
    );
    assert!(
        !like_bytes(b"Hello", b"hello"),
        "binary comparison: case matters"
    );
}

#[test]
fn like_agrees_with_a_naive_matcher_on_short_inputs() {
    // Exhaustive over a small alphabet: the backtracking matcher against plain recursion.
    fn naive(text: &[u8], pattern: &[u8]) -> bool {
        match pattern.split_first() {
            None => text.is_empty(),
            Some((b'%', rest)) => (0..=text.len()).any(|skip| naive(&text[skip..], rest)),
            Some((b'_', rest)) => !text.is_empty() && naive(&text[1..], rest),
            Some((&byte, rest)) => text.first() == Some(&byte) && naive(&text[1..], rest),
        }
    }
    /// Every word over `alphabet` of at most `length` letters.
    fn all(alphabet: &[u8], length: usize) -> Vec<Vec<u8>> {
        let mut words = vec![Vec::new()];
        let mut last = vec![Vec::new()];
        for _ in 0..length {
            last = last
                .iter()
                .flat_map(|w: &Vec<u8>| alphabet.iter().map(move |&c| [&w[..], &[c]].concat()))
                .collect();
            words.extend(last.iter().cloned());
        }
        words
    }
    let texts = all(b"ab", 4);
    let patterns = all(b"ab%_", 4);
    assert_eq!(texts.len(), 31);
    for text in &texts {
        for pattern in &patterns {
            assert_eq!(
                like_bytes(text, pattern),
                naive(text, pattern),
                "{text:?} LIKE {pattern:?}"
            );
        }
    }
}
