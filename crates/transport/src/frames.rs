//! Cutting a byte stream into signals.

use std::io::{ErrorKind, Read};

use kista_signal::wire::{self, WireError, HEADER_BYTES};
use kista_signal::Signal;

use crate::READ_CHUNK_BYTES;

/// Collects bytes as they arrive and yields whole signals. Errors are final: a stream that
/// broke the format cannot be resynchronised.
///
/// The buffer is zeroed once when it grows, never per read: reads of a few hundred bytes
/// into a 256 KiB buffer must not pay for clearing it (they did, and it was 70% of the data
/// node's instructions per key read).
#[derive(Default)]
pub struct FrameReader {
    buffer: Vec<u8>,
    /// Bytes of `buffer` already consumed.
    start: usize,
    /// Bytes of `buffer` filled by reads.
    end: usize,
}

/// Free space a read is offered at least; below it the reader compacts or grows.
const READ_SPACE_MIN: usize = READ_CHUNK_BYTES / 4;

impl FrameReader {
    /// Reads what `stream` has ready (one `read`, retried when interrupted); `Ok(0)` is the
    /// end of the stream.
    pub fn read_from(&mut self, stream: &mut impl Read) -> std::io::Result<usize> {
        loop {
            match stream.read(self.spare()) {
                Ok(read) => {
                    self.filled(read);
                    return Ok(read);
                }
                Err(error) if error.kind() == ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            }
        }
    }

    /// Space to read into (at least [`READ_SPACE_MIN`] bytes): the caller fills a prefix of
    /// it and reports how much with [`FrameReader::filled`].
    fn spare(&mut self) -> &mut [u8] {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            // A connection that once carried a huge frame gives the memory back.
            if self.buffer.len() > 2 * READ_CHUNK_BYTES {
                self.buffer.truncate(READ_CHUNK_BYTES);
                self.buffer.shrink_to_fit();
            }
        }
        if self.buffer.len() - self.end < READ_SPACE_MIN && self.start > 0 {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buffer.len() - self.end < READ_SPACE_MIN {
            // Grows only while one frame is larger than the buffer.
            self.buffer.resize(self.end + READ_CHUNK_BYTES, 0);
        }
        &mut self.buffer[self.end..]
    }

    /// After reading into [`FrameReader::spare`]: keeps the first `read` bytes.
    fn filled(&mut self, read: usize) {
        debug_assert!(self.end + read <= self.buffer.len());
        self.end += read;
    }

    /// The next whole signal and its section's bytes, `None` until more bytes arrive.
    pub fn next_signal(&mut self) -> Result<Option<(Signal, &[u8])>, WireError> {
        let available = &self.buffer[self.start..self.end];
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
        self.end - self.start
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

    fn feed(reader: &mut FrameReader, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let spare = reader.spare();
            let read = spare.len().min(bytes.len());
            spare[..read].copy_from_slice(&bytes[..read]);
            reader.filled(read);
            bytes = &bytes[read..];
        }
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
    fn a_frame_larger_than_the_buffer_grows_it_and_the_memory_comes_back_after() {
        let mut stream = Vec::new();
        let big = vec![7u8; 3 * READ_CHUNK_BYTES];
        wire::encode(&signal(1), &big, &mut stream).unwrap();
        wire::encode(&signal(2), &[1, 2, 3], &mut stream).unwrap();
        let mut reader = FrameReader::default();
        let mut seen = Vec::new();
        for piece in stream.chunks(READ_CHUNK_BYTES / 3) {
            feed(&mut reader, piece);
            while let Some((signal, section)) = reader.next_signal().unwrap() {
                seen.push((signal.words()[0], section.len()));
            }
        }
        assert_eq!(seen, vec![(1, big.len()), (2, 3)]);
        assert_eq!(reader.partial_bytes(), 0);
        assert!(reader.buffer.len() > 3 * READ_CHUNK_BYTES);
        reader.spare();
        assert_eq!(reader.buffer.len(), READ_CHUNK_BYTES);
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
