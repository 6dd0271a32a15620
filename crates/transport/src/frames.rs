//! Cutting a byte stream into signals.

use std::io::{ErrorKind, Read};

use kista_signal::wire::{self, WireError, HEADER_BYTES};
use kista_signal::Signal;

use crate::READ_CHUNK_BYTES;

/// Collects bytes as they arrive and yields whole signals. Errors are final: a stream that
/// broke the format cannot be resynchronised.
#[derive(Default)]
pub struct FrameReader {
    buffer: Vec<u8>,
    /// Bytes of `buffer` already consumed.
    start: usize,
}

impl FrameReader {
    /// Reads what `stream` has ready (one `read`, retried when interrupted); `Ok(0)` is the
    /// end of the stream.
    pub fn read_from(&mut self, stream: &mut impl Read) -> std::io::Result<usize> {
        loop {
            let spare = self.spare(READ_CHUNK_BYTES);
            let result = stream.read(spare);
            self.filled(READ_CHUNK_BYTES, *result.as_ref().unwrap_or(&0));
            match result {
                Err(error) if error.kind() == ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }

    /// Space to read into: the caller fills some prefix of it and reports how much with
    /// [`FrameReader::filled`].
    fn spare(&mut self, bytes: usize) -> &mut [u8] {
        if self.start > 0 && self.start == self.buffer.len() {
            self.buffer.clear();
            self.start = 0;
        } else if self.start > self.buffer.len() / 2 {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        let filled = self.buffer.len();
        self.buffer.resize(filled + bytes, 0);
        &mut self.buffer[filled..]
    }

    /// After reading into [`FrameReader::spare`]: keeps `read` of the offered bytes.
    fn filled(&mut self, offered: usize, read: usize) {
        debug_assert!(read <= offered);
        self.buffer.truncate(self.buffer.len() - offered + read);
    }

    /// The next whole signal and its section's bytes, `None` until more bytes arrive.
    pub fn next_signal(&mut self) -> Result<Option<(Signal, &[u8])>, WireError> {
        let available = &self.buffer[self.start..];
        if available.len() < HEADER_BYTES {
            return Ok(None);
        }
        match wire::decode(available) {
            Ok(decoded) => {
                self.start += decoded.frame_len;
                Ok(Some((decoded.signal, decoded.section)))
            }
            Err(WireError::Truncated { .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Bytes of a signal that has begun but not ended.
    pub fn partial_bytes(&self) -> usize {
        self.buffer.len() - self.start
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kista_signal::{BlockAddress, BlockId, NodeId, SignalNumber};
    use proptest::prelude::*;

    fn signal(word: u32) -> Signal {
        let to = BlockAddress::new(NodeId(1), BlockId(11), 0);
        let from = BlockAddress::new(NodeId(64), BlockId(1), 0);
        Signal::with_words(SignalNumber(5), to, from, &[word])
    }

    fn feed(reader: &mut FrameReader, bytes: &[u8]) {
        let spare = reader.spare(bytes.len());
        spare.copy_from_slice(bytes);
        reader.filled(bytes.len(), bytes.len());
    }

    proptest! {
        #[test]
        fn signals_come_out_whole_however_the_stream_is_cut(cuts in proptest::collection::vec(1usize..40, 1..50)) {
            let mut stream = Vec::new();
            for word in 0..20u32 {
                let section = vec![word as u8; (word % 4) as usize * 3];
                wire::encode(&signal(word), &section, &mut stream).unwrap();
            }
            let mut reader = FrameReader::default();
            let mut seen = Vec::new();
            let mut offset = 0;
            for cut in cuts.iter().cycle() {
                if offset >= stream.len() {
                    break;
                }
                let end = (offset + cut).min(stream.len());
                feed(&mut reader, &stream[offset..end]);
                offset = end;
                while let Some((signal, section)) = reader.next_signal().unwrap() {
                    seen.push((signal.words()[0], section.len()));
                }
            }
            let expected: Vec<_> = (0..20u32).map(|w| (w, (w % 4) as usize * 3)).collect();
            prop_assert_eq!(seen, expected);
            prop_assert_eq!(reader.partial_bytes(), 0);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut reader = FrameReader::default();
            feed(&mut reader, &bytes);
            while let Ok(Some(_)) = reader.next_signal() {}
        }
    }

    #[test]
    fn a_bad_format_version_is_an_error_not_a_wait() {
        let mut reader = FrameReader::default();
        let mut bytes = Vec::new();
        wire::encode(&signal(1), &[], &mut bytes).unwrap();
        bytes[0] = 99;
        feed(&mut reader, &bytes);
        assert_eq!(
            reader.next_signal().err(),
            Some(WireError::UnsupportedVersion(99))
        );
    }
}
