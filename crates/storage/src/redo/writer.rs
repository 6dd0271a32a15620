//! The writing end of one log: places records in the ring and keeps the bytes not yet
//! handed to the disk, in pieces that each fall within one file.

use std::collections::VecDeque;

use super::{encode, LogRing, Record, Stamp, RECORD_BYTES_MAX};

/// The log has no room for a record until a local checkpoint frees some.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the REDO log is full: {free_bytes} bytes free, {needed_bytes} needed")]
pub struct LogFull {
    pub free_bytes: u64,
    pub needed_bytes: u64,
}

/// Buffers kept for reuse at most: a writer has one or two pieces in flight.
const SPARE_BUFFERS_MAX: usize = 4;

/// Bytes for one stretch of a file, starting at `lsn`.
#[derive(Debug)]
struct Piece {
    lsn: u64,
    bytes: Vec<u8>,
}

/// Appends records and hands out what the disk should get, in order.
#[derive(Debug)]
pub struct LogWriter {
    ring: LogRing,
    life: u32,
    /// Where the next record goes (before placing it).
    head_lsn: u64,
    /// The oldest record still needed (by a restart from the latest local checkpoints):
    /// the head may not run a whole ring past it.
    tail_lsn: u64,
    /// What was appended and not yet handed out, oldest first.
    pieces: VecDeque<Piece>,
    /// Emptied buffers, reused so appending allocates only as the log grows.
    spare: Vec<Vec<u8>>,
    /// The length of the last write taken: a new piece is made that large at once, so it
    /// does not grow by copies to the size the disk takes.
    write_bytes: usize,
}

impl LogWriter {
    /// A log that goes on at `head_lsn` (where a scan found its end; 0 for a new log),
    /// written by life `life`, every record from `tail_lsn` on still needed.
    pub fn new(ring: LogRing, life: u32, head_lsn: u64, tail_lsn: u64) -> Self {
        assert!(
            tail_lsn <= head_lsn && head_lsn - tail_lsn <= ring.ring_bytes(),
            "the needed records ({tail_lsn}..{head_lsn}) fit in the ring"
        );
        assert!(
            ring.file_bytes >= 2 * RECORD_BYTES_MAX as u64,
            "log files hold the largest record"
        );
        Self {
            ring,
            life,
            head_lsn,
            tail_lsn,
            pieces: VecDeque::new(),
            spare: Vec::new(),
            write_bytes: 0,
        }
    }

    pub fn ring(&self) -> LogRing {
        self.ring
    }

    /// The node start count its records carry.
    pub fn life(&self) -> u32 {
        self.life
    }

    /// Where the next record goes: every record appended so far lies before it.
    pub fn head_lsn(&self) -> u64 {
        self.head_lsn
    }

    pub fn tail_lsn(&self) -> u64 {
        self.tail_lsn
    }

    /// Bytes appended and not yet handed out.
    pub fn unwritten_bytes(&self) -> u64 {
        self.pieces
            .front()
            .map_or(0, |piece| self.head_lsn - piece.lsn)
    }

    /// Bytes the ring has left before the head would overwrite a needed record.
    pub fn free_bytes(&self) -> u64 {
        self.ring.ring_bytes() - (self.head_lsn - self.tail_lsn)
    }

    /// Appends `record` of GCI `gci`; returns its LSN.
    pub fn append(&mut self, gci: u64, record: &Record<'_>) -> Result<u64, LogFull> {
        let bytes = record.encoded_bytes();
        let placement = self.ring.place(self.head_lsn, bytes);
        let needed_bytes = placement.at + bytes as u64 - self.head_lsn;
        if needed_bytes > self.free_bytes() {
            return Err(LogFull {
                free_bytes: self.free_bytes(),
                needed_bytes,
            });
        }
        if let Some(lsn) = placement.skip {
            self.put(lsn, gci, &Record::FileEnd);
        }
        self.head_lsn = placement.at;
        self.put(placement.at, gci, record);
        Ok(placement.at)
    }

    fn put(&mut self, lsn: u64, gci: u64, record: &Record<'_>) {
        let continues = self
            .pieces
            .back()
            .is_some_and(|piece| piece.lsn + piece.bytes.len() as u64 == lsn);
        if !continues {
            let mut bytes = self.spare.pop().unwrap_or_default();
            bytes.reserve(self.write_bytes);
            self.pieces.push_back(Piece { lsn, bytes });
        }
        let piece = self.pieces.back_mut().expect("a piece to append to");
        let stamp = Stamp {
            lsn,
            gci,
            life: self.life,
        };
        self.head_lsn = lsn + encode(stamp, record, &mut piece.bytes) as u64;
    }

    /// Where the oldest bytes not yet handed out start, if any.
    pub fn unwritten_lsn(&self) -> Option<u64> {
        self.pieces.front().map(|piece| piece.lsn)
    }

    /// Takes the oldest bytes not yet handed out, at most `bytes_max` of them, all in one
    /// file: their LSN and the bytes, the writer's own buffer (no copy: the disk gets it).
    /// Hand a buffer back with [`LogWriter::reuse`] once written.
    pub fn take_write(&mut self, bytes_max: usize) -> Option<(u64, Vec<u8>)> {
        let piece = self.pieces.front_mut()?;
        let in_file = self.ring.file_bytes - self.ring.offset_of(piece.lsn);
        let length = piece.bytes.len().min(bytes_max).min(in_file as usize);
        let lsn = piece.lsn;
        self.write_bytes = length;
        if length < piece.bytes.len() {
            // The rest stays: it goes in its own buffer (the smaller part is copied).
            let rest = piece.bytes.split_off(length);
            piece.lsn += length as u64;
            return Some((lsn, std::mem::replace(&mut piece.bytes, rest)));
        }
        let piece = self.pieces.pop_front().expect("checked above");
        Some((lsn, piece.bytes))
    }

    /// A buffer to append into again (a written one, or another of the same use).
    pub fn reuse(&mut self, mut buffer: Vec<u8>) {
        buffer.clear();
        if self.spare.len() < SPARE_BUFFERS_MAX {
            self.spare.push(buffer);
        }
    }

    /// Records before `tail_lsn` are needed no more (a local checkpoint holds their
    /// changes): their space may be written again.
    pub fn release_until(&mut self, tail_lsn: u64) {
        assert!(tail_lsn <= self.head_lsn, "released beyond the log's head");
        self.tail_lsn = self.tail_lsn.max(tail_lsn);
    }
}
