//! Typed signals: structs that know their signal number and how to lay themselves out in
//! payload words, so blocks never index raw words by hand.

use crate::address::BlockAddress;
use crate::signal::{Signal, SignalNumber, PAYLOAD_WORDS_MAX};

/// Why a payload could not be read as the expected typed signal. Payloads can come from the
/// network, so a short or mismatched one is an error value, never a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    #[error("expected signal {expected:?}, got {actual:?}")]
    WrongNumber {
        expected: SignalNumber,
        actual: SignalNumber,
    },
    #[error(
        "signal {number:?} payload is too short: {available} words left where more are needed"
    )]
    TooShort {
        number: SignalNumber,
        available: usize,
    },
    #[error("signal {number:?} carries {value}, which is not a valid {field}")]
    BadValue {
        number: SignalNumber,
        field: &'static str,
        value: u32,
    },
}

/// A signal with a fixed number and a payload layout.
///
/// ```
/// use kista_signal::*;
/// struct Ping { sequence: u64 }
/// impl TypedSignal for Ping {
///     const NUMBER: SignalNumber = SignalNumber(1);
///     fn write(&self, payload: &mut PayloadWriter<'_>) { payload.put_u64(self.sequence); }
///     fn read(payload: &mut PayloadReader<'_>) -> Result<Self, PayloadError> {
///         Ok(Ping { sequence: payload.u64()? })
///     }
/// }
/// let here = BlockAddress::default();
/// let signal = Ping { sequence: 42 }.to_signal(here, here);
/// assert_eq!(Ping::from_signal(&signal).unwrap().sequence, 42);
/// ```
pub trait TypedSignal: Sized {
    const NUMBER: SignalNumber;

    fn write(&self, payload: &mut PayloadWriter<'_>);

    fn read(payload: &mut PayloadReader<'_>) -> Result<Self, PayloadError>;

    /// Builds the signal that carries `self`.
    #[inline]
    fn to_signal(&self, receiver: BlockAddress, sender: BlockAddress) -> Signal {
        let mut signal = Signal::new(Self::NUMBER, receiver, sender);
        let mut writer = PayloadWriter {
            words: &mut signal.payload,
            used: 0,
        };
        self.write(&mut writer);
        signal.header.payload_words = writer.used as u8;
        signal
    }

    /// Reads `signal` as this type, checking its number and length.
    #[inline]
    fn from_signal(signal: &Signal) -> Result<Self, PayloadError> {
        if signal.number() != Self::NUMBER {
            return Err(PayloadError::WrongNumber {
                expected: Self::NUMBER,
                actual: signal.number(),
            });
        }
        let mut reader = PayloadReader {
            number: signal.number(),
            words: signal.words(),
        };
        Self::read(&mut reader)
    }
}

/// Appends words to a signal's payload.
pub struct PayloadWriter<'a> {
    words: &'a mut [u32; PAYLOAD_WORDS_MAX],
    used: usize,
}

impl PayloadWriter<'_> {
    /// # Panics
    /// When the payload is full: a typed signal's layout is fixed at compile time, so
    /// overflowing it is a bug in its `write`.
    #[inline]
    pub fn put_u32(&mut self, value: u32) {
        assert!(
            self.used < PAYLOAD_WORDS_MAX,
            "typed signal payload overflow"
        );
        self.words[self.used] = value;
        self.used += 1;
    }

    /// The next `N` payload words, filled in place: a fixed layout checks its room once.
    ///
    /// # Panics
    /// When fewer than `N` words are left, as [`PayloadWriter::put_u32`].
    #[inline]
    pub fn next_words<const N: usize>(&mut self) -> &mut [u32; N] {
        let words = self.words[self.used..]
            .first_chunk_mut::<N>()
            .expect("typed signal payload overflow");
        self.used += N;
        words
    }

    #[inline]
    pub fn put_u64(&mut self, value: u64) {
        self.put_u32(value as u32);
        self.put_u32((value >> 32) as u32);
    }

    #[inline]
    pub fn put_address(&mut self, address: BlockAddress) {
        self.put_u32(address.to_word());
    }
}

/// Reads words from a signal's payload in order.
pub struct PayloadReader<'a> {
    number: SignalNumber,
    words: &'a [u32],
}

impl<'a> PayloadReader<'a> {
    /// The next `N` words: a fixed layout checks the payload's length once.
    #[inline]
    pub fn next_words<const N: usize>(&mut self) -> Result<&'a [u32; N], PayloadError> {
        match self.words.split_first_chunk::<N>() {
            Some((first, rest)) => {
                self.words = rest;
                Ok(first)
            }
            None => Err(self.too_short()),
        }
    }

    #[inline]
    pub fn u32(&mut self) -> Result<u32, PayloadError> {
        match self.words.split_first() {
            Some((&first, rest)) => {
                self.words = rest;
                Ok(first)
            }
            None => Err(self.too_short()),
        }
    }

    #[cold]
    #[inline(never)]
    fn too_short(&self) -> PayloadError {
        PayloadError::TooShort {
            number: self.number,
            available: self.words.len(),
        }
    }

    #[inline]
    pub fn u64(&mut self) -> Result<u64, PayloadError> {
        let low = self.u32()?;
        let high = self.u32()?;
        Ok(u64::from(high) << 32 | u64::from(low))
    }

    /// The error for a word that is not a valid `field`.
    #[cold]
    #[inline(never)]
    pub fn bad_value(&self, field: &'static str, value: u32) -> PayloadError {
        PayloadError::BadValue {
            number: self.number,
            field,
            value,
        }
    }

    #[inline]
    pub fn address(&mut self) -> Result<BlockAddress, PayloadError> {
        self.u32().map(BlockAddress::from_word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::{BlockId, NodeId};

    #[derive(Debug, PartialEq)]
    struct Transfer {
        from: BlockAddress,
        amount: u64,
        flags: u32,
    }

    impl TypedSignal for Transfer {
        const NUMBER: SignalNumber = SignalNumber(77);
        fn write(&self, payload: &mut PayloadWriter<'_>) {
            payload.put_address(self.from);
            payload.put_u64(self.amount);
            payload.put_u32(self.flags);
        }
        fn read(payload: &mut PayloadReader<'_>) -> Result<Self, PayloadError> {
            Ok(Transfer {
                from: payload.address()?,
                amount: payload.u64()?,
                flags: payload.u32()?,
            })
        }
    }

    fn somewhere() -> BlockAddress {
        BlockAddress::new(NodeId(3), BlockId(4), 5)
    }

    #[test]
    fn typed_signal_round_trips_through_payload_words() {
        let original = Transfer {
            from: somewhere(),
            amount: u64::MAX - 1,
            flags: 9,
        };
        let signal = original.to_signal(somewhere(), somewhere());
        assert_eq!(signal.words().len(), 4);
        assert_eq!(Transfer::from_signal(&signal), Ok(original));
    }

    #[test]
    fn reading_a_different_signal_number_is_an_error() {
        let signal = Signal::new(SignalNumber(1), somewhere(), somewhere());
        assert!(matches!(
            Transfer::from_signal(&signal),
            Err(PayloadError::WrongNumber { .. })
        ));
    }

    #[test]
    fn reading_a_short_payload_is_an_error_not_a_panic() {
        let signal = Signal::with_words(Transfer::NUMBER, somewhere(), somewhere(), &[1, 2]);
        assert!(matches!(
            Transfer::from_signal(&signal),
            Err(PayloadError::TooShort { .. })
        ));
    }
}
