//! The REDO log's format: records, where they sit in the ring of log files, and the scan
//! that finds where a log ends.
//!
//! Each `ldm` instance writes one log: committed changes as idempotent after-images (a row
//! written whole, a key deleted), each stamped with the global checkpoint id (GCI) of its
//! transaction. The log is endless in *log sequence numbers* (LSNs: byte positions), and
//! lives in a ring of preallocated files of equal size, so an LSN names its file and offset
//! ([`LogRing`]). A record never spans two files: one that does not fit goes to the next
//! file, after a [`Record::FileEnd`] when the rest of the file has room for a header.
//!
//! ```text
//! header (32 bytes, little-endian)
//!   0  magic u16 "KR"     2  kind u8     3  zero u8     4  body length u32
//!   8  lsn u64            16 gci u64     24 life u32    28 CRC-32C of bytes 0..28 and the body
//! body
//!   write row   table id u32, table version u32, partition u32,
//!               fixed length u32, variable length u32, fixed part, variable part
//!   delete row  table id u32, table version u32, partition u32, key length u32, key
//!   gci done, file end: empty
//!   checkpoint done  checkpoint id u64, REDO LSN u64, rows u64, marked GCI u64
//!   checkpoint start checkpoint id u64, chain start u64
//!   checkpoint partition  table id u32, table version u32, partition u32, whole u32 (0 or 1)
//! ```
//!
//! A local checkpoint file (`crate::checkpoint`) is written in the same records.
//!
//! Nothing read back is trusted: a scan ([`LogScan`]) stops at the first record that is cut
//! short, fails its checksum, carries another LSN than its position (a record of an earlier
//! lap of the ring), or an older *life* than the record before it. The life is the node's
//! start count: a crash may leave records of one life beyond the point where the next life
//! went on writing, and those must never be mistaken for the next life's.

mod writer;

pub use writer::{LogFull, LogWriter};

use crate::partition::CommittedChange;
use crate::row::RowLayout;

/// Bytes of a record's header.
pub const RECORD_HEADER_BYTES: usize = 32;
/// Largest record, header included: a row is far smaller, and a scan reads a record whole.
pub const RECORD_BYTES_MAX: usize = 256 << 10;

const MAGIC: [u8; 2] = *b"KR";
const CHECKSUM_AT: usize = 28;
const PLACE_BYTES: usize = 12;

/// The kinds of record, by their byte in the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    WriteRow = 1,
    DeleteRow = 2,
    GciDone = 3,
    FileEnd = 4,
    CheckpointDone = 5,
    CheckpointStart = 6,
    CheckpointPartition = 7,
    WriteRows = 8,
}

impl Kind {
    fn from_byte(byte: u8) -> Option<Self> {
        [
            Kind::WriteRow,
            Kind::DeleteRow,
            Kind::GciDone,
            Kind::FileEnd,
            Kind::CheckpointDone,
            Kind::CheckpointStart,
            Kind::CheckpointPartition,
            Kind::WriteRows,
        ]
        .into_iter()
        .find(|kind| *kind as u8 == byte)
    }
}

/// The partition a row record belongs to, and the table definition its bytes follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowPlace {
    pub table_id: u32,
    pub table_version: u32,
    pub partition: u32,
}

/// One change the log holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record<'a> {
    /// The row's committed version, whole: its fixed and variable parts as the partition
    /// stores them.
    WriteRow {
        place: RowPlace,
        fixed: &'a [u8],
        var: &'a [u8],
    },
    /// The row with this encoded primary key is gone.
    DeleteRow { place: RowPlace, key: &'a [u8] },
    /// Every record of this log whose GCI is at most the header's comes before this one.
    GciDone,
    /// The rest of this file is unused: the next record starts the next file.
    FileEnd,
    /// Ends a local checkpoint file: checkpoint `id` holds `rows` rows (the records
    /// before it), and restoring it needs the REDO log from `redo_lsn` on. Its GCI is
    /// the highest any of those rows can carry; `marked_gci`, the latest GCI marked done
    /// in the log before `redo_lsn` (a restore to a later one must find its mark).
    CheckpointDone {
        id: u64,
        redo_lsn: u64,
        rows: u64,
        marked_gci: u64,
    },
    /// Opens a local checkpoint file: checkpoint `id`, whose restore reads the files of
    /// checkpoints `chain_start` to `id` in turn.
    CheckpointStart { id: u64, chain_start: u64 },
    /// Opens a partition's part of a local checkpoint file: the rows and deleted keys that
    /// follow are of `place`, and, when `whole`, its rows are every row it holds.
    CheckpointPartition { place: RowPlace, whole: bool },
    /// `rows` rows of a local checkpoint, each with the GCI that last wrote it, packed
    /// (`checkpoint::PackedRows`): one header and checksum for many rows, where a
    /// `WriteRow` each took 52 bytes and a checksum of their own.
    WriteRows {
        place: RowPlace,
        rows: u32,
        packed: &'a [u8],
    },
}

impl<'a> Record<'a> {
    /// The record of a change a commit made to the partition at `place`: the row written
    /// whole, or the deleted row's primary key (encoded into `key`, a buffer kept for it).
    pub fn of_change(
        place: RowPlace,
        layout: &RowLayout,
        change: CommittedChange<'a>,
        key: &'a mut Vec<u8>,
    ) -> Self {
        match change {
            CommittedChange::Written { fixed, var } => Record::WriteRow { place, fixed, var },
            CommittedChange::Deleted { fixed, var } => {
                key.clear();
                layout.primary_key_of_row(fixed, var, key);
                Record::DeleteRow { place, key }
            }
        }
    }
}

impl Record<'_> {
    fn kind(&self) -> Kind {
        match self {
            Record::WriteRow { .. } => Kind::WriteRow,
            Record::DeleteRow { .. } => Kind::DeleteRow,
            Record::GciDone => Kind::GciDone,
            Record::FileEnd => Kind::FileEnd,
            Record::CheckpointDone { .. } => Kind::CheckpointDone,
            Record::CheckpointStart { .. } => Kind::CheckpointStart,
            Record::CheckpointPartition { .. } => Kind::CheckpointPartition,
            Record::WriteRows { .. } => Kind::WriteRows,
        }
    }

    /// Bytes the record takes in the log, header included.
    pub fn encoded_bytes(&self) -> usize {
        RECORD_HEADER_BYTES
            + match self {
                Record::WriteRow { fixed, var, .. } => {
                    return write_row_record_bytes(fixed.len() + var.len())
                }
                Record::DeleteRow { key, .. } => return delete_row_record_bytes(key.len()),
                Record::GciDone | Record::FileEnd => 0,
                Record::CheckpointDone { .. } => 32,
                Record::CheckpointStart { .. } => 16,
                Record::CheckpointPartition { .. } => PLACE_BYTES + 4,
                Record::WriteRows { packed, .. } => PLACE_BYTES + 4 + packed.len(),
            }
    }
}

/// Bytes a `WriteRow` record of a row image of `image_bytes` (fixed and variable parts)
/// takes in the log: what a prepared write reserves for its commit.
pub fn write_row_record_bytes(image_bytes: usize) -> usize {
    RECORD_HEADER_BYTES + PLACE_BYTES + 8 + image_bytes
}

/// Bytes a `DeleteRow` record of a key of `key_bytes` takes in the log.
pub fn delete_row_record_bytes(key_bytes: usize) -> usize {
    RECORD_HEADER_BYTES + PLACE_BYTES + 4 + key_bytes
}

/// What every record's header says besides its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// Where the record starts in the endless log.
    pub lsn: u64,
    /// The global checkpoint its change belongs to.
    pub gci: u64,
    /// The node's start count when it was written.
    pub life: u32,
}

/// Appends `record` with `stamp` to `out`; returns the bytes it took. Allocates only when
/// `out` must grow.
///
/// # Panics
/// When the record is larger than [`RECORD_BYTES_MAX`]: the caller checks rows against it
/// before they are committed.
pub fn encode(stamp: Stamp, record: &Record<'_>, out: &mut Vec<u8>) -> usize {
    let bytes = record.encoded_bytes();
    assert!(bytes <= RECORD_BYTES_MAX, "a {bytes}-byte REDO record");
    let start = out.len();
    // Sized once and filled in place: a record is encoded for every committed change
    // and every row a checkpoint writes, and growing the vector field by field cost
    // twice the copy itself.
    out.resize(start + bytes, 0);
    let mut put = Put {
        bytes: &mut out[start..],
        at: 0,
    };
    put.bytes(&MAGIC);
    put.bytes(&[record.kind() as u8, 0]);
    put.word((bytes - RECORD_HEADER_BYTES) as u32);
    put.long(stamp.lsn);
    put.long(stamp.gci);
    put.word(stamp.life);
    put.at = RECORD_HEADER_BYTES; // the checksum goes last
    match record {
        Record::WriteRow { place, fixed, var } => {
            put.place(place);
            put.word(fixed.len() as u32);
            put.word(var.len() as u32);
            put.bytes(fixed);
            put.bytes(var);
        }
        Record::DeleteRow { place, key } => {
            put.place(place);
            put.word(key.len() as u32);
            put.bytes(key);
        }
        Record::GciDone | Record::FileEnd => {}
        Record::CheckpointDone {
            id,
            redo_lsn,
            rows,
            marked_gci,
        } => {
            for word in [id, redo_lsn, rows, marked_gci] {
                put.long(*word);
            }
        }
        Record::CheckpointStart { id, chain_start } => {
            put.long(*id);
            put.long(*chain_start);
        }
        Record::CheckpointPartition { place, whole } => {
            put.place(place);
            put.word(u32::from(*whole));
        }
        Record::WriteRows {
            place,
            rows,
            packed,
        } => {
            put.place(place);
            put.word(*rows);
            put.bytes(packed);
        }
    }
    assert_eq!(put.at, bytes, "encoded_bytes matches what encode writes");
    let checksum = checksum_of(put.bytes);
    put.at = CHECKSUM_AT;
    put.word(checksum);
    bytes
}

/// Fills a record's bytes, sized beforehand, from the front.
struct Put<'a> {
    bytes: &'a mut [u8],
    at: usize,
}

impl Put<'_> {
    fn bytes(&mut self, bytes: &[u8]) {
        self.bytes[self.at..self.at + bytes.len()].copy_from_slice(bytes);
        self.at += bytes.len();
    }

    fn word(&mut self, word: u32) {
        self.bytes(&word.to_le_bytes());
    }

    fn long(&mut self, long: u64) {
        self.bytes(&long.to_le_bytes());
    }

    fn place(&mut self, place: &RowPlace) {
        for word in [place.table_id, place.table_version, place.partition] {
            self.word(word);
        }
    }
}

/// CRC-32C (Castagnoli), which x86-64 computes in hardware (SSE 4.2): a log and a
/// checkpoint checksum every record they write, so its cost is part of every commit's.
fn checksum_of(record: &[u8]) -> u32 {
    let (header, body) = (&record[..CHECKSUM_AT], &record[RECORD_HEADER_BYTES..]);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2, checked just above: all the function requires.
        return unsafe { crc32c_sse42(crc32c_sse42(0, header), body) };
    }
    crc32c::crc32c_append(crc32c::crc32c(header), body)
}

/// `crc32c::crc32c_append` for a record's few hundred bytes: the crate's hardware path
/// is made for long buffers and spends four times as many instructions on a record (it
/// splits the input in three streams and combines them). Equal to it for every input:
/// `redo::tests::the_hardware_checksum_is_crc32c`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn crc32c_sse42(crc: u32, bytes: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u16, _mm_crc32_u32, _mm_crc32_u64, _mm_crc32_u8};
    let mut words = bytes.chunks_exact(8);
    let mut crc = u64::from(!crc);
    for word in &mut words {
        crc = _mm_crc32_u64(crc, u64::from_le_bytes(word.try_into().expect("8 bytes")));
    }
    // The last 0-7 bytes in at most three steps (a record's header leaves four), where a
    // byte at a time took up to seven: each instruction takes its bytes lowest first, as
    // the bytewise one would.
    let mut crc = crc as u32;
    let mut rest = words.remainder();
    if let Some((four, tail)) = rest.split_first_chunk::<4>() {
        crc = _mm_crc32_u32(crc, u32::from_le_bytes(*four));
        rest = tail;
    }
    if let Some((two, tail)) = rest.split_first_chunk::<2>() {
        crc = _mm_crc32_u16(crc, u16::from_le_bytes(*two));
        rest = tail;
    }
    if let Some(&byte) = rest.first() {
        crc = _mm_crc32_u8(crc, byte);
    }
    !crc
}

/// Why the log ends where a scan stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LogEnd {
    #[error("the record there is cut short")]
    Truncated,
    #[error("no record starts there")]
    NoRecord,
    #[error("the record there fails its checksum")]
    Checksum,
    #[error("the record there was written for LSN {found}, an earlier lap of the ring")]
    EarlierLap { found: u64 },
    #[error("the record there is of life {found}, older than the records before it ({life})")]
    EarlierLife { found: u32, life: u32 },
    #[error("the record there has a body that does not match its kind")]
    Malformed,
}

/// A record read back, with its stamp and the bytes it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded<'a> {
    pub stamp: Stamp,
    pub record: Record<'a>,
    pub bytes: usize,
}

/// Reads the record at the start of `bytes`, which should be the one at `lsn` and of life
/// `life_at_least` or later. `Truncated` may only mean `bytes` stops early.
pub fn decode(bytes: &[u8], lsn: u64, life_at_least: u32) -> Result<Decoded<'_>, LogEnd> {
    let header = bytes.get(..RECORD_HEADER_BYTES).ok_or(LogEnd::Truncated)?;
    let word = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().expect("4 bytes"));
    let long = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().expect("8 bytes"));
    if header[..2] != MAGIC || header[3] != 0 {
        return Err(LogEnd::NoRecord);
    }
    let kind = Kind::from_byte(header[2]).ok_or(LogEnd::NoRecord)?;
    let total = RECORD_HEADER_BYTES.saturating_add(word(4) as usize);
    if total > RECORD_BYTES_MAX {
        return Err(LogEnd::NoRecord);
    }
    let record = bytes.get(..total).ok_or(LogEnd::Truncated)?;
    if checksum_of(record) != word(CHECKSUM_AT) {
        return Err(LogEnd::Checksum);
    }
    let stamp = Stamp {
        lsn: long(8),
        gci: long(16),
        life: word(24),
    };
    if stamp.lsn != lsn {
        return Err(LogEnd::EarlierLap { found: stamp.lsn });
    }
    if stamp.life < life_at_least {
        return Err(LogEnd::EarlierLife {
            found: stamp.life,
            life: life_at_least,
        });
    }
    let record = decode_body(kind, &record[RECORD_HEADER_BYTES..]).ok_or(LogEnd::Malformed)?;
    Ok(Decoded {
        stamp,
        record,
        bytes: total,
    })
}

fn decode_body(kind: Kind, body: &[u8]) -> Option<Record<'_>> {
    let mut input = Body(body);
    let record = match kind {
        Kind::WriteRow => {
            let place = input.place()?;
            let (fixed_len, var_len) = (input.length()?, input.length()?);
            Record::WriteRow {
                place,
                fixed: input.take(fixed_len)?,
                var: input.take(var_len)?,
            }
        }
        Kind::DeleteRow => {
            let place = input.place()?;
            let key_len = input.length()?;
            Record::DeleteRow {
                place,
                key: input.take(key_len)?,
            }
        }
        Kind::GciDone => Record::GciDone,
        Kind::FileEnd => Record::FileEnd,
        Kind::CheckpointDone => Record::CheckpointDone {
            id: input.long()?,
            redo_lsn: input.long()?,
            rows: input.long()?,
            marked_gci: input.long()?,
        },
        Kind::CheckpointStart => Record::CheckpointStart {
            id: input.long()?,
            chain_start: input.long()?,
        },
        Kind::CheckpointPartition => Record::CheckpointPartition {
            place: input.place()?,
            whole: match input.length()? {
                0 => false,
                1 => true,
                _ => return None,
            },
        },
        Kind::WriteRows => Record::WriteRows {
            place: input.place()?,
            rows: input.length()? as u32,
            packed: input.take(input.0.len())?,
        },
    };
    input.0.is_empty().then_some(record)
}

/// A body being read, front first.
struct Body<'a>(&'a [u8]);

impl<'a> Body<'a> {
    fn take(&mut self, count: usize) -> Option<&'a [u8]> {
        let (taken, rest) = self.0.split_at_checked(count)?;
        self.0 = rest;
        Some(taken)
    }

    fn length(&mut self) -> Option<usize> {
        let bytes = self.take(4)?;
        Some(u32::from_le_bytes(bytes.try_into().ok()?) as usize)
    }

    fn long(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn place(&mut self) -> Option<RowPlace> {
        Some(RowPlace {
            table_id: self.length()? as u32,
            table_version: self.length()? as u32,
            partition: self.length()? as u32,
        })
    }
}

/// The ring of equally sized files one log lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogRing {
    pub file_bytes: u64,
    pub files: u32,
}

impl LogRing {
    /// Bytes of the whole ring: how far the log's head may run ahead of its oldest needed
    /// record.
    pub fn ring_bytes(&self) -> u64 {
        self.file_bytes * u64::from(self.files)
    }

    /// The file `lsn` falls in.
    pub fn file_of(&self, lsn: u64) -> u32 {
        ((lsn / self.file_bytes) % u64::from(self.files)) as u32
    }

    /// Where in its file `lsn` falls.
    pub fn offset_of(&self, lsn: u64) -> u64 {
        lsn % self.file_bytes
    }

    /// The LSN that starts the file after `lsn`'s.
    pub fn next_file_start(&self, lsn: u64) -> u64 {
        (lsn / self.file_bytes + 1) * self.file_bytes
    }

    /// Where a record of `bytes` goes when the log's head is at `lsn`: at `lsn` when the
    /// file has room for it, else at the start of the next file. `Skip` says whether a
    /// [`Record::FileEnd`] must mark the rest of the file first (no mark fits in less
    /// than a header, and a scan skips such a rest by itself).
    pub fn place(&self, lsn: u64, bytes: usize) -> Placement {
        let room = self.file_bytes - self.offset_of(lsn);
        if bytes as u64 <= room {
            return Placement {
                at: lsn,
                skip: None,
            };
        }
        let skip = (room >= RECORD_HEADER_BYTES as u64).then_some(lsn);
        Placement {
            at: self.next_file_start(lsn),
            skip,
        }
    }
}

/// Where a record goes; see [`LogRing::place`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub at: u64,
    /// Where a [`Record::FileEnd`] must be written first, if one must.
    pub skip: Option<u64>,
}

/// A walk over a log from a known record onwards, fed with the bytes it asks for.
#[derive(Clone, Debug)]
pub struct LogScan {
    ring: LogRing,
    next_lsn: u64,
    life: u32,
}

/// What a scan found next.
#[derive(Debug, PartialEq, Eq)]
pub enum ScanStep<'a> {
    /// The next record (never a [`Record::FileEnd`]: the scan steps over those itself).
    Record(Decoded<'a>),
    /// The bytes given do not hold the next record whole: read its file from this LSN
    /// (at least [`RECORD_BYTES_MAX`] bytes, or to the file's end) and call again.
    Read(u64),
    /// The log ends at [`LogScan::next_lsn`], for this reason.
    End(LogEnd),
}

impl LogScan {
    /// A scan from the record at `lsn`, which must be of life `life_at_least` or later.
    pub fn new(ring: LogRing, lsn: u64, life_at_least: u32) -> Self {
        Self {
            ring,
            next_lsn: lsn,
            life: life_at_least,
        }
    }

    /// Where the next record would start: after a scan's end, where the log goes on.
    pub fn next_lsn(&self) -> u64 {
        self.next_lsn
    }

    /// The life of the last record read (or the one the scan began with).
    pub fn life(&self) -> u32 {
        self.life
    }

    /// The next record, from `chunk`: the bytes of the next record's file from `chunk_lsn`
    /// on (as far as they were read).
    pub fn next<'a>(&mut self, chunk: &'a [u8], chunk_lsn: u64) -> ScanStep<'a> {
        loop {
            let room = self.ring.file_bytes - self.ring.offset_of(self.next_lsn);
            if room < RECORD_HEADER_BYTES as u64 {
                self.next_lsn = self.ring.next_file_start(self.next_lsn);
                continue;
            }
            let same_file = self.ring.file_of(chunk_lsn) == self.ring.file_of(self.next_lsn)
                && chunk_lsn / self.ring.file_bytes == self.next_lsn / self.ring.file_bytes;
            let start = self.next_lsn.wrapping_sub(chunk_lsn);
            if !same_file || self.next_lsn < chunk_lsn || start > chunk.len() as u64 {
                return ScanStep::Read(self.next_lsn);
            }
            match decode(&chunk[start as usize..], self.next_lsn, self.life) {
                Ok(decoded) if decoded.record == Record::FileEnd => {
                    self.next_lsn = self.ring.next_file_start(self.next_lsn);
                }
                Ok(decoded) => {
                    self.next_lsn += decoded.bytes as u64;
                    self.life = decoded.stamp.life;
                    return ScanStep::Record(decoded);
                }
                // Read again from the record itself, unless that is what was given.
                Err(LogEnd::Truncated) if start > 0 => return ScanStep::Read(self.next_lsn),
                Err(end) => return ScanStep::End(end),
            }
        }
    }
}

#[cfg(test)]
mod tests;
