//! The fixed-layout signal: a 16-byte header and up to 28 payload words.

use crate::address::BlockAddress;

/// Payload words a signal carries inline. Header plus payload fill exactly 128 bytes (two cache
/// lines), the size of one job-buffer slot.
pub const PAYLOAD_WORDS_MAX: usize = 28;

/// Which signal this is; each block interprets the numbers addressed to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SignalNumber(pub u16);

/// The most section bytes a signal can carry in its own payload words (with none used).
pub const INLINE_SECTION_BYTES_MAX: usize = 4 * PAYLOAD_WORDS_MAX;

/// A signal's section (bulk bytes): none, a buffer in the runtime's section pool, or bytes
/// carried inline in the signal's unused payload words. Only the holder of the signal that
/// carries a pooled section may read or release it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SectionHandle(pub u32);

impl SectionHandle {
    pub const NONE: SectionHandle = SectionHandle(u32::MAX);

    /// Marks an inline section; the low bits hold its length. Pool indexes stay below it.
    const INLINE: u32 = 1 << 30;

    pub const fn is_none(self) -> bool {
        self.0 == u32::MAX
    }

    /// `bytes` section bytes carried inline (see [`Signal::set_inline_section`]).
    pub const fn inline(bytes: usize) -> Self {
        assert!(bytes <= INLINE_SECTION_BYTES_MAX);
        Self(Self::INLINE | bytes as u32)
    }

    /// Whether the section's bytes are in the signal itself rather than in the pool.
    pub const fn is_inline(self) -> bool {
        self.0 & !(Self::INLINE - 1) == Self::INLINE
    }

    /// The length of an inline section (0 for any other handle).
    pub const fn inline_len(self) -> usize {
        if self.is_inline() {
            (self.0 & (Self::INLINE - 1)) as usize
        } else {
            0
        }
    }

    /// Whether the handle names a buffer in the section pool.
    pub const fn is_pooled(self) -> bool {
        self.0 < Self::INLINE
    }
}

/// The signal header, laid out exactly as the first 16 bytes of the wire form (see
/// [`crate::wire`]) on a little-endian machine, except `section`: in memory it names a pooled
/// buffer, on the wire it is the length of the bytes that follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct SignalHeader {
    /// Wire format version this signal was built for ([`crate::wire::FORMAT_VERSION`]).
    pub format_version: u8,
    /// How many payload words are meaningful (0..=[`PAYLOAD_WORDS_MAX`]).
    pub payload_words: u8,
    pub number: SignalNumber,
    /// At byte offset 4.
    pub receiver: BlockAddress,
    pub sender: BlockAddress,
    pub section: SectionHandle,
}

/// One signal: header plus inline payload. `Copy`, 128 bytes, no heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct Signal {
    pub header: SignalHeader,
    pub payload: [u32; PAYLOAD_WORDS_MAX],
}

const _: () = assert!(std::mem::size_of::<SignalHeader>() == 16);
const _: () = assert!(std::mem::size_of::<Signal>() == 128);

impl Signal {
    /// A signal with an empty payload and no section.
    #[inline]
    pub fn new(number: SignalNumber, receiver: BlockAddress, sender: BlockAddress) -> Self {
        Self {
            header: SignalHeader {
                format_version: crate::wire::FORMAT_VERSION,
                payload_words: 0,
                number,
                receiver,
                sender,
                section: SectionHandle::NONE,
            },
            payload: [0; PAYLOAD_WORDS_MAX],
        }
    }

    /// A signal carrying `words` as its payload.
    ///
    /// # Panics
    /// If `words` is longer than [`PAYLOAD_WORDS_MAX`]: signal layouts are fixed by the code
    /// that defines them, so an oversized one is a bug, not an input error.
    #[inline]
    pub fn with_words(
        number: SignalNumber,
        receiver: BlockAddress,
        sender: BlockAddress,
        words: &[u32],
    ) -> Self {
        assert!(
            words.len() <= PAYLOAD_WORDS_MAX,
            "signal {number:?} payload of {} words exceeds {PAYLOAD_WORDS_MAX}",
            words.len()
        );
        let mut signal = Self::new(number, receiver, sender);
        signal.payload[..words.len()].copy_from_slice(words);
        signal.header.payload_words = words.len() as u8;
        signal
    }

    #[inline]
    pub fn number(&self) -> SignalNumber {
        self.header.number
    }

    #[inline]
    pub fn receiver(&self) -> BlockAddress {
        self.header.receiver
    }

    #[inline]
    pub fn sender(&self) -> BlockAddress {
        self.header.sender
    }

    #[inline]
    pub fn section(&self) -> SectionHandle {
        self.header.section
    }

    /// Carries `bytes` as the signal's section in the payload words after the used ones,
    /// so that small sections (a key, a short message) need no pooled buffer. `false`, with
    /// the signal unchanged, when they do not fit or are empty.
    #[inline]
    pub fn set_inline_section(&mut self, bytes: &[u8]) -> bool {
        let start = 4 * usize::from(self.header.payload_words);
        let Some(room) = self.payload_bytes_mut().get_mut(start..start + bytes.len()) else {
            return false;
        };
        if bytes.is_empty() {
            return false;
        }
        room.copy_from_slice(bytes);
        self.header.section = SectionHandle::inline(bytes.len());
        true
    }

    /// Sets the payload to the words `bytes` holds in little-endian order (the wire's), as
    /// many as it holds whole.
    ///
    /// # Panics
    /// When `bytes` holds more than [`PAYLOAD_WORDS_MAX`] words: the wire decoder checks the
    /// count first.
    #[inline]
    pub fn set_payload_from_le_bytes(&mut self, bytes: &[u8]) {
        let words = bytes.len() / 4;
        assert!(words <= PAYLOAD_WORDS_MAX, "payload of {words} words");
        if cfg!(target_endian = "little") {
            // One copy instead of a word at a time: this runs for every signal received.
            self.payload_bytes_mut()[..4 * words].copy_from_slice(&bytes[..4 * words]);
        } else {
            for (word, chunk) in self.payload.iter_mut().zip(bytes.chunks_exact(4)) {
                *word = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            }
        }
        self.header.payload_words = words as u8;
    }

    /// The bytes of the section the signal carries inline; empty when it has none.
    #[inline]
    pub fn inline_section(&self) -> &[u8] {
        let length = self.header.section.inline_len();
        let start = 4 * usize::from(self.header.payload_words);
        self.payload_bytes()
            .get(start..start + length)
            .unwrap_or(&[])
    }

    /// The payload's memory as bytes, for inline sections: they are written and read only
    /// through this view, never as words, so the machine's byte order does not matter.
    #[inline]
    fn payload_bytes(&self) -> &[u8] {
        // SAFETY: the pointer and length cover exactly the payload array, which is
        // initialised; every bit pattern is a valid `u8` and `u8` needs no alignment; the
        // slice borrows `self`, so the array outlives it and is not written meanwhile.
        unsafe {
            std::slice::from_raw_parts(self.payload.as_ptr().cast::<u8>(), 4 * PAYLOAD_WORDS_MAX)
        }
    }

    #[inline]
    fn payload_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `payload_bytes`; the slice borrows `self` mutably, so it is the only
        // access to the array while it lives, and any bytes written make valid `u32`s.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.payload.as_mut_ptr().cast::<u8>(),
                4 * PAYLOAD_WORDS_MAX,
            )
        }
    }

    /// The meaningful payload words.
    #[inline]
    pub fn words(&self) -> &[u32] {
        let used = usize::from(self.header.payload_words).min(PAYLOAD_WORDS_MAX);
        &self.payload[..used]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::{BlockId, NodeId};

    fn signal_with_words(words: usize) -> Signal {
        let here = BlockAddress::new(NodeId(1), BlockId(2), 0);
        Signal::with_words(SignalNumber(9), here, here, &vec![7; words])
    }

    #[test]
    fn inline_sections_round_trip_in_the_unused_payload_words() {
        for used_words in [0, 11, PAYLOAD_WORDS_MAX - 1] {
            let room = 4 * (PAYLOAD_WORDS_MAX - used_words);
            for length in [1, 3, 4, 5, room].into_iter().filter(|&l| l <= room) {
                let bytes: Vec<u8> = (0..length as u8).collect();
                let mut signal = signal_with_words(used_words);
                assert!(signal.set_inline_section(&bytes));
                assert!(signal.section().is_inline() && !signal.section().is_pooled());
                assert_eq!(
                    signal.words(),
                    &vec![7; used_words][..],
                    "payload untouched"
                );
                assert_eq!(signal.inline_section(), &bytes[..]);
            }
        }
    }

    #[test]
    fn sections_that_do_not_fit_stay_out_of_the_signal() {
        let mut signal = signal_with_words(20);
        assert!(!signal.set_inline_section(&[1; 33]));
        assert!(!signal.set_inline_section(&[]));
        assert!(signal.section().is_none());
        assert_eq!(signal.inline_section(), &[] as &[u8]);
        let mut full = signal_with_words(PAYLOAD_WORDS_MAX);
        assert!(!full.set_inline_section(&[1]));
    }

    #[test]
    fn handles_say_which_kind_of_section_they_name() {
        assert!(SectionHandle(0).is_pooled() && !SectionHandle(0).is_inline());
        assert!(!SectionHandle::NONE.is_pooled() && !SectionHandle::NONE.is_inline());
        let inline = SectionHandle::inline(INLINE_SECTION_BYTES_MAX);
        assert!(inline.is_inline() && !inline.is_none() && !inline.is_pooled());
    }
}
