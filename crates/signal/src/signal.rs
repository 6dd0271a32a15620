//! The fixed-layout signal: a 16-byte header and up to 28 payload words.

use crate::address::BlockAddress;

/// Payload words a signal carries inline. Header plus payload fill exactly 128 bytes (two cache
/// lines), the size of one job-buffer slot.
pub const PAYLOAD_WORDS_MAX: usize = 28;

/// Which signal this is; each block interprets the numbers addressed to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SignalNumber(pub u16);

/// A reference to a section (bulk bytes) held in the runtime's section pool. Only the holder
/// of the signal that carries it may read or release it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SectionHandle(pub u32);

impl SectionHandle {
    pub const NONE: SectionHandle = SectionHandle(u32::MAX);

    pub const fn is_none(self) -> bool {
        self.0 == u32::MAX
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

    /// The meaningful payload words.
    #[inline]
    pub fn words(&self) -> &[u32] {
        let used = usize::from(self.header.payload_words).min(PAYLOAD_WORDS_MAX);
        &self.payload[..used]
    }
}
