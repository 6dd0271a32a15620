//! The wire form of a signal: versioned, little-endian, length-checked.
//!
//! ```text
//! offset  size  field
//!      0     1  format version (FORMAT_VERSION)
//!      1     1  payload words n (0..=28)
//!      2     2  signal number
//!      4     4  receiver address word   <- a receive thread routes on this alone
//!      8     4  sender address word
//!     12     4  section length in bytes (0 = no section)
//!     16    4n  payload words
//!  16+4n     s  section bytes
//! ```
//!
//! The first 16 bytes are the in-memory [`SignalHeader`](crate::SignalHeader) byte for byte on
//! a little-endian machine, except the last word: in memory it names a pooled section, on the
//! wire it counts the section bytes that follow. A section of zero bytes is sent as "no
//! section".

use crate::address::BlockAddress;
use crate::signal::{SectionHandle, Signal, SignalNumber, PAYLOAD_WORDS_MAX};

/// The only format this build writes and reads. A reader rejects any other version rather
/// than guess at its layout.
pub const FORMAT_VERSION: u8 = 1;

/// Bytes before the payload.
pub const HEADER_BYTES: usize = 16;

/// The largest section one signal may carry. Larger data is split by the sending protocol.
pub const SECTION_BYTES_MAX: usize = 1 << 20;

/// The largest encoded signal.
pub const FRAME_BYTES_MAX: usize = HEADER_BYTES + 4 * PAYLOAD_WORDS_MAX + SECTION_BYTES_MAX;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("truncated signal: need {needed} bytes, have {available}")]
    Truncated { needed: usize, available: usize },
    #[error("unsupported signal format version {0} (this build reads version {FORMAT_VERSION})")]
    UnsupportedVersion(u8),
    #[error("signal declares {0} payload words, at most {PAYLOAD_WORDS_MAX} are allowed")]
    PayloadTooLong(u8),
    #[error("signal declares a section of {0} bytes, at most {SECTION_BYTES_MAX} are allowed")]
    SectionTooLong(usize),
}

/// A signal read from the wire. Its header's section handle is [`SectionHandle::NONE`]; the
/// section bytes are borrowed from the input.
#[derive(Debug, PartialEq, Eq)]
pub struct Decoded<'a> {
    pub signal: Signal,
    pub section: &'a [u8],
    /// How many input bytes this signal occupied; the next one starts there.
    pub frame_len: usize,
}

/// Bytes `signal` with a section of `section_len` bytes occupies on the wire.
pub fn encoded_len(signal: &Signal, section_len: usize) -> usize {
    HEADER_BYTES + 4 * signal.words().len() + section_len
}

/// Appends the wire form of `signal` and its `section` (may be empty) to `out`.
#[inline]
pub fn encode(signal: &Signal, section: &[u8], out: &mut Vec<u8>) -> Result<(), WireError> {
    if section.len() > SECTION_BYTES_MAX {
        return Err(WireError::SectionTooLong(section.len()));
    }
    // Header and payload are built in one stack buffer and appended with one copy: this
    // runs for every signal a node sends to a client or another node.
    let words = signal.words();
    let mut head = [0u8; HEADER_BYTES + 4 * PAYLOAD_WORDS_MAX];
    head[0] = FORMAT_VERSION;
    head[1] = words.len() as u8;
    head[2..4].copy_from_slice(&signal.header.number.0.to_le_bytes());
    head[4..8].copy_from_slice(&signal.header.receiver.to_word().to_le_bytes());
    head[8..12].copy_from_slice(&signal.header.sender.to_word().to_le_bytes());
    head[12..16].copy_from_slice(&(section.len() as u32).to_le_bytes());
    for (bytes, word) in head[HEADER_BYTES..].chunks_exact_mut(4).zip(words) {
        bytes.copy_from_slice(&word.to_le_bytes());
    }
    let head_len = HEADER_BYTES + 4 * words.len();
    out.reserve(head_len + section.len());
    out.extend_from_slice(&head[..head_len]);
    out.extend_from_slice(section);
    Ok(())
}

/// The receiver of the signal at the start of `bytes`, read without decoding the rest.
pub fn peek_receiver(bytes: &[u8]) -> Result<BlockAddress, WireError> {
    check_header(bytes)?;
    Ok(BlockAddress::from_word(le_u32(bytes, 4)))
}

/// Reads one signal from the start of `bytes`, checking every length against the input and
/// the format's limits.
#[inline]
pub fn decode(bytes: &[u8]) -> Result<Decoded<'_>, WireError> {
    let payload_words = check_header(bytes)?;
    let section_len = le_u32(bytes, 12) as usize;
    if section_len > SECTION_BYTES_MAX {
        return Err(WireError::SectionTooLong(section_len));
    }
    let section_start = HEADER_BYTES + 4 * payload_words;
    let frame_len = section_start + section_len;
    if bytes.len() < frame_len {
        return Err(WireError::Truncated {
            needed: frame_len,
            available: bytes.len(),
        });
    }
    let mut signal = Signal::new(
        SignalNumber(u16::from_le_bytes([bytes[2], bytes[3]])),
        BlockAddress::from_word(le_u32(bytes, 4)),
        BlockAddress::from_word(le_u32(bytes, 8)),
    );
    let payload_bytes = &bytes[HEADER_BYTES..section_start];
    signal.set_payload_from_le_bytes(payload_bytes);
    signal.header.section = SectionHandle::NONE;
    Ok(Decoded {
        signal,
        section: &bytes[section_start..frame_len],
        frame_len,
    })
}

/// Validates the fixed header and returns the payload word count.
fn check_header(bytes: &[u8]) -> Result<usize, WireError> {
    if bytes.len() < HEADER_BYTES {
        return Err(WireError::Truncated {
            needed: HEADER_BYTES,
            available: bytes.len(),
        });
    }
    if bytes[0] != FORMAT_VERSION {
        return Err(WireError::UnsupportedVersion(bytes[0]));
    }
    let payload_words = bytes[1];
    if usize::from(payload_words) > PAYLOAD_WORDS_MAX {
        return Err(WireError::PayloadTooLong(payload_words));
    }
    Ok(usize::from(payload_words))
}

/// Caller has checked `bytes.len() >= offset + 4`.
fn le_u32(bytes: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes([
        bytes[offset],
        bytes[offset + 1],
        bytes[offset + 2],
        bytes[offset + 3],
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::{BlockId, NodeId};
    use proptest::prelude::*;

    fn signal_with(words: &[u32]) -> Signal {
        Signal::with_words(
            SignalNumber(0xBEEF),
            BlockAddress::new(NodeId(2), BlockId(3), 400),
            BlockAddress::new(NodeId(1), BlockId(9), 1),
            words,
        )
    }

    #[test]
    fn header_bytes_are_little_endian_at_fixed_offsets() {
        let mut bytes = Vec::new();
        encode(&signal_with(&[0x0102_0304]), b"xy", &mut bytes).unwrap();
        assert_eq!(
            bytes,
            [
                1, 1, 0xEF, 0xBE, // version, words, number
                0x90, 0x01, 3, 2, // receiver: instance 400, block 3, node 2
                1, 0, 9, 1, // sender
                2, 0, 0, 0, // section length
                4, 3, 2, 1, // payload word
                b'x', b'y',
            ]
        );
        assert_eq!(
            peek_receiver(&bytes).unwrap(),
            BlockAddress::new(NodeId(2), BlockId(3), 400)
        );
    }

    #[test]
    fn in_memory_header_matches_wire_header_on_little_endian_machines() {
        let signal = signal_with(&[7]);
        let mut wire = Vec::new();
        encode(&signal, &[], &mut wire).unwrap();
        let header = signal.header;
        let mut memory = vec![header.format_version, header.payload_words];
        memory.extend_from_slice(&header.number.0.to_le_bytes());
        memory.extend_from_slice(&header.receiver.to_word().to_le_bytes());
        memory.extend_from_slice(&header.sender.to_word().to_le_bytes());
        assert_eq!(&wire[..12], &memory[..]);
    }

    #[test]
    fn truncated_input_is_reported_with_the_needed_length() {
        let mut bytes = Vec::new();
        encode(&signal_with(&[1, 2, 3]), b"abc", &mut bytes).unwrap();
        for cut in 0..bytes.len() {
            assert!(
                matches!(decode(&bytes[..cut]), Err(WireError::Truncated { .. })),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn unknown_version_oversized_payload_and_section_are_rejected() {
        let mut bytes = Vec::new();
        encode(&signal_with(&[]), &[], &mut bytes).unwrap();
        let mut bad = bytes.clone();
        bad[0] = 2;
        assert_eq!(decode(&bad), Err(WireError::UnsupportedVersion(2)));
        let mut bad = bytes.clone();
        bad[1] = 29;
        assert_eq!(decode(&bad), Err(WireError::PayloadTooLong(29)));
        let mut bad = bytes;
        bad[12..16].copy_from_slice(&(SECTION_BYTES_MAX as u32 + 1).to_le_bytes());
        assert!(matches!(decode(&bad), Err(WireError::SectionTooLong(_))));
        let huge = vec![0u8; SECTION_BYTES_MAX + 1];
        assert!(encode(&signal_with(&[]), &huge, &mut Vec::new()).is_err());
    }

    proptest! {
        #[test]
        fn any_signal_round_trips(
            number: u16, receiver: u32, sender: u32,
            words in proptest::collection::vec(any::<u32>(), 0..=PAYLOAD_WORDS_MAX),
            section in proptest::collection::vec(any::<u8>(), 0..300),
            trailing in proptest::collection::vec(any::<u8>(), 0..20),
        ) {
            let signal = Signal::with_words(
                SignalNumber(number),
                BlockAddress::from_word(receiver),
                BlockAddress::from_word(sender),
                &words,
            );
            let mut bytes = Vec::new();
            encode(&signal, &section, &mut bytes).unwrap();
            prop_assert_eq!(bytes.len(), encoded_len(&signal, section.len()));
            bytes.extend_from_slice(&trailing);
            let decoded = decode(&bytes).unwrap();
            prop_assert_eq!(decoded.signal, signal);
            prop_assert_eq!(decoded.section, &section[..]);
            prop_assert_eq!(decoded.frame_len, bytes.len() - trailing.len());
        }

        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(decoded) = decode(&bytes) {
                prop_assert!(decoded.frame_len <= bytes.len());
            }
        }
    }
}
