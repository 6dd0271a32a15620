//! MySQL's collations of `utf8mb4` text: how two strings compare, the *weight key* whose
//! bytes order as the strings do (what ordered and hash indexes store, so a range scan
//! stays a byte comparison and 'a' and 'A' meet under a case-insensitive unique key), and
//! LIKE under a collation. The storage layer, the client and the SQL front end all compare
//! through this crate, so a pushed-down filter, an index and the front end never disagree.
//!
//! | collation            | compares                                         | trailing spaces |
//! |----------------------|--------------------------------------------------|-----------------|
//! | `utf8mb4_0900_ai_ci` | UCA 9.0.0 primary weights (no case, no accents)  | count (NO PAD)  |
//! | `utf8mb4_0900_bin`   | code points (= the UTF-8 bytes)                  | count           |
//! | `utf8mb4_general_ci` | one weight per character, upper case, no accents | ignored (PAD)   |
//! | `utf8mb4_bin`        | code points                                      | ignored         |
//! | `binary`             | bytes                                            | count           |
//!
//! `utf8mb4_0900_ai_ci` is MySQL 8's default and conforms to UCA 9.0.0's DUCET at the
//! primary level without tailoring, as MySQL's does (see `ducet.rs` for the one
//! simplification: contiguous contractions only). A PAD SPACE collation here ignores
//! trailing spaces, where MySQL pads the shorter string: the two differ only for strings
//! ending in characters that sort below the space (control characters).

mod ducet;
mod general;
mod like;
mod utf8;

use std::cmp::Ordering;

/// A collation of MySQL's, by the name MySQL gives it.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Collation {
    utf8mb4_0900_ai_ci,
    utf8mb4_0900_bin,
    utf8mb4_general_ci,
    utf8mb4_bin,
    binary,
}

/// What MySQL says of a collation (`SHOW COLLATION`, the wire protocol's ids).
pub struct CollationDef {
    pub collation: Collation,
    pub name: &'static str,
    /// MySQL's id: what a column definition and the handshake carry.
    pub id: u16,
    pub charset: &'static str,
    /// The character set's default collation.
    pub is_default: bool,
    pub pad_space: bool,
}

/// Every collation, in MySQL's `SHOW COLLATION` order of ids.
pub const COLLATIONS: [CollationDef; 5] = [
    def(
        Collation::utf8mb4_general_ci,
        "utf8mb4_general_ci",
        45,
        false,
        true,
    ),
    def(Collation::utf8mb4_bin, "utf8mb4_bin", 46, false, true),
    def(Collation::binary, "binary", 63, true, false),
    def(
        Collation::utf8mb4_0900_ai_ci,
        "utf8mb4_0900_ai_ci",
        255,
        true,
        false,
    ),
    def(
        Collation::utf8mb4_0900_bin,
        "utf8mb4_0900_bin",
        309,
        false,
        false,
    ),
];

const fn def(
    collation: Collation,
    name: &'static str,
    id: u16,
    is_default: bool,
    pad_space: bool,
) -> CollationDef {
    let charset = if id == 63 { "binary" } else { "utf8mb4" };
    CollationDef {
        collation,
        name,
        id,
        charset,
        is_default,
        pad_space,
    }
}

impl Default for Collation {
    /// MySQL 8's default for `utf8mb4`.
    fn default() -> Self {
        Collation::utf8mb4_0900_ai_ci
    }
}

impl Collation {
    pub fn def(self) -> &'static CollationDef {
        COLLATIONS
            .iter()
            .find(|def| def.collation == self)
            .expect("every collation is in COLLATIONS")
    }

    pub fn name(self) -> &'static str {
        self.def().name
    }

    pub fn id(self) -> u16 {
        self.def().id
    }

    /// The collation MySQL names `name` (any case); `None` if there is none here.
    pub fn named(name: &str) -> Option<Collation> {
        let found = COLLATIONS
            .iter()
            .find(|def| def.name.eq_ignore_ascii_case(name));
        found.map(|def| def.collation)
    }

    /// The collation a name stands for here: one of ours, or a collation of MySQL's that
    /// Kista stores as utf8mb4 (`utf8mb3_bin` is `utf8mb4_bin`; `utf8mb4_unicode_ci`,
    /// UCA 4.0.0, is `utf8mb4_0900_ai_ci`; `latin1_swedish_ci` is `utf8mb4_general_ci`).
    pub fn resolve(name: &str) -> Option<Collation> {
        let name = name.to_ascii_lowercase();
        if let Some(ours) = Collation::named(&name) {
            return Some(ours);
        }
        let (charset, rule) = name.split_once('_')?;
        if !["utf8", "utf8mb3", "utf8mb4", "latin1", "ascii"].contains(&charset) {
            return None;
        }
        match rule {
            "bin" => Some(Collation::utf8mb4_bin),
            "general_ci" | "swedish_ci" => Some(Collation::utf8mb4_general_ci),
            "unicode_ci" | "unicode_520_ci" | "0900_ai_ci" => Some(Collation::utf8mb4_0900_ai_ci),
            _ => None,
        }
    }

    /// The default collation of a character set (`utf8mb4` for the ones Kista stores as
    /// utf8mb4); `None` for one it does not know.
    pub fn default_of_charset(charset: &str) -> Option<Collation> {
        match charset.to_ascii_lowercase().as_str() {
            "utf8mb4" | "utf8" | "utf8mb3" | "latin1" | "ascii" => Some(Collation::default()),
            "binary" => Some(Collation::binary),
            _ => None,
        }
    }

    pub fn with_id(id: u16) -> Option<Collation> {
        COLLATIONS
            .iter()
            .find(|def| def.id == id)
            .map(|def| def.collation)
    }

    /// Whether equal strings are equal bytes (no weights to compute).
    pub fn is_bytewise(self) -> bool {
        matches!(self, Collation::utf8mb4_0900_bin | Collation::binary)
    }

    /// The order of two strings.
    pub fn compare(self, a: &[u8], b: &[u8]) -> Ordering {
        if a == b {
            return Ordering::Equal;
        }
        match self {
            Collation::utf8mb4_0900_bin | Collation::binary => a.cmp(b),
            Collation::utf8mb4_bin => trim_spaces(a).cmp(trim_spaces(b)),
            Collation::utf8mb4_0900_ai_ci => ducet::compare(a, b),
            Collation::utf8mb4_general_ci => {
                let weights = |text| utf8::chars(trim_spaces(text)).map(general::weight);
                weights(a).cmp(weights(b))
            }
        }
    }

    /// Appends the bytes whose order is the text's order under the collation: two texts
    /// compare equal exactly when their weight keys are equal bytes.
    pub fn weight_key(self, text: &[u8], out: &mut Vec<u8>) {
        match self {
            Collation::utf8mb4_0900_bin | Collation::binary => out.extend_from_slice(text),
            Collation::utf8mb4_bin => out.extend_from_slice(trim_spaces(text)),
            Collation::utf8mb4_general_ci => {
                for code_point in utf8::chars(trim_spaces(text)) {
                    out.extend_from_slice(&general::weight(code_point).to_be_bytes());
                }
            }
            Collation::utf8mb4_0900_ai_ci => ducet::ducet().push_weight_key(text, out),
        }
    }

    /// Appends the weight key's length (u32, little-endian) and then the weight key: a
    /// self-delimiting part of a key of several values.
    pub fn length_prefixed_weight_key(self, text: &[u8], out: &mut Vec<u8>) {
        let length_at = out.len();
        out.extend_from_slice(&[0; 4]);
        self.weight_key(text, out);
        let length = (out.len() - length_at - 4) as u32;
        out[length_at..length_at + 4].copy_from_slice(&length.to_le_bytes());
    }

    /// SQL's `text LIKE pattern`: `%` matches any run of characters, `_` one character,
    /// `\` makes the next pattern character literal; other characters match the ones the
    /// collation finds equal, one character to one (so under `utf8mb4_0900_ai_ci` 'ß' LIKE
    /// 'ss' is false, as in MySQL). Trailing spaces count, whatever the collation.
    pub fn like(self, text: &[u8], pattern: &[u8]) -> bool {
        like::matches(text, pattern, |a, b| self.same_character(a, b))
    }

    fn same_character(self, a: u32, b: u32) -> bool {
        if a == b {
            return true;
        }
        match self {
            Collation::utf8mb4_0900_bin | Collation::utf8mb4_bin | Collation::binary => false,
            Collation::utf8mb4_general_ci => general::weight(a) == general::weight(b),
            Collation::utf8mb4_0900_ai_ci => {
                let ((x, x_len), (y, y_len)) = (ducet::char_weights(a), ducet::char_weights(b));
                x[..x_len] == y[..y_len]
            }
        }
    }
}

/// `text` without its trailing spaces: how a PAD SPACE collation, and a CHAR column when
/// read, see it.
pub fn trim_spaces(text: &[u8]) -> &[u8] {
    let end = text
        .iter()
        .rposition(|&b| b != b' ')
        .map_or(0, |last| last + 1);
    &text[..end]
}

#[cfg(test)]
mod tests;
