//! The local checkpoint file's format, and which rows a checkpoint writes.
//!
//! Local checkpoints are *partial* (as NDB 7.6's): a checkpoint writes, for each partition,
//! the rows written and the keys deleted since the checkpoint before it, and every row of
//! a rotating share of the partition (the rows whose anchor is in
//! [`in_rotating_share`]), so that in any [`ROTATION_CHECKPOINTS`] checkpoints in a row
//! every row is written at least once. A partition whose changes cannot be told (its
//! deletes are not known far enough back) and every partition of a node's first
//! checkpoint of a life are written *whole*: every row.
//!
//! A restore therefore reads a *chain*: the files of checkpoints `chain_start` to the one
//! restored, oldest first, emptying a partition where its whole section begins, deleting
//! the keys deleted and writing the rows written. For a row nobody touched after the last
//! checkpoint began, the result is its state then: if it changed since a checkpoint of the
//! chain began, a later file has its change (a delete's GCI and a write's are after that
//! checkpoint's `marked_gci`, the GCI marked done in the log before its start); if not, the
//! file where its share was written whole has it. A row touched later is set by the REDO
//! log's replay from the last checkpoint's start.
//!
//! ```text
//! checkpoint start     id, chain start
//! per partition:       checkpoint partition (place, whole)
//!                      delete row*   (keys deleted since the checkpoint before; none when whole)
//!                      write row*    (stamped with the GCI that last wrote the row)
//! checkpoint done      id, REDO LSN, rows, marked GCI (stamped with the highest GCI of a row)
//! ```
//!
//! The file is a one-file log ([`ring`]) written with a [`LogWriter`] and read with a
//! [`LogScan`], so every record carries its checksum and its position. Each checkpoint's
//! records sit at LSNs of its own lap of that one-file ring ([`first_lsn`]). An `ldm`'s
//! checkpoints rotate through [`CHECKPOINT_FILES`] files ([`file_slot`]), so a checkpoint
//! is written over the file of an older one, and a crash may leave that older checkpoint's
//! records behind the new one's end: they read as an earlier lap and end the scan, so an
//! unfinished checkpoint never borrows an old one's rows or its end.

use crate::redo::{
    decode, LogEnd, LogRing, LogScan, LogWriter, Record, RowPlace, ScanStep, RECORD_BYTES_MAX,
    RECORD_HEADER_BYTES,
};

mod packed;

pub use packed::{PackedRows, PACKED_ROWS_BYTES_MAX};

/// Largest checkpoint file: the lap of LSNs one checkpoint may use.
pub const CHECKPOINT_FILE_BYTES_MAX: u64 = 1 << 38;
/// Checkpoint ids map to laps modulo this (2^24 laps of 2^38 bytes fill the LSN space).
const LAPS: u64 = 1 << 24;
/// In this many checkpoints in a row, every row of a partition is written at least once:
/// each checkpoint writes the share of the rows whose anchor is its id modulo this. More
/// makes each checkpoint smaller and a restore's chain longer.
pub const ROTATION_CHECKPOINTS: u64 = 4;
/// Files an `ldm`'s checkpoints rotate through: the chain of the newest usable checkpoint
/// ([`ROTATION_CHECKPOINTS`] files at most), the file before it (the chain of the
/// checkpoint before, which a restore falls back to when the newest is damaged or lost),
/// and the one being written.
pub const CHECKPOINT_FILES: u32 = ROTATION_CHECKPOINTS as u32 + 2;
/// Bytes of a checkpoint file's first record, which names the checkpoint and its chain.
pub const START_RECORD_BYTES: usize = RECORD_HEADER_BYTES + 16;

/// The file (of [`CHECKPOINT_FILES`]) checkpoint `id` is written to.
pub fn file_slot(id: u64) -> u32 {
    (id % u64::from(CHECKPOINT_FILES)) as u32
}

/// Whether checkpoint `id` writes the row at `anchor` even if it did not change.
pub fn in_rotating_share(id: u64, anchor: u32) -> bool {
    u64::from(anchor) % ROTATION_CHECKPOINTS == id % ROTATION_CHECKPOINTS
}

/// The oldest checkpoint whose file a restore of checkpoint `id` reads: `id` itself when
/// it writes every partition whole (`previous_chain_start` is `None`), else the oldest
/// of the last [`ROTATION_CHECKPOINTS`] (which together wrote every share), unless the
/// chain of the one before began later.
pub fn chain_start(id: u64, previous_chain_start: Option<u64>) -> u64 {
    match previous_chain_start {
        None => id,
        Some(previous) => previous.max((id + 1).saturating_sub(ROTATION_CHECKPOINTS)),
    }
}

/// The one-file ring a checkpoint file is.
pub fn ring() -> LogRing {
    LogRing {
        file_bytes: CHECKPOINT_FILE_BYTES_MAX,
        files: 1,
    }
}

/// The LSN of checkpoint `id`'s first record (at the file's start).
pub fn first_lsn(id: u64) -> u64 {
    (id % LAPS) * CHECKPOINT_FILE_BYTES_MAX
}

/// A writer for checkpoint `id`'s file, its start record appended; nothing it wrote is
/// needed once handed out.
pub fn writer(id: u64, chain_start: u64, life: u32) -> LogWriter {
    let mut writer = LogWriter::new(ring(), life, first_lsn(id), first_lsn(id));
    let start = Record::CheckpointStart { id, chain_start };
    writer
        .append(0, &start)
        .expect("a new checkpoint file has room for its start");
    writer
}

/// What a checkpoint file's first record says: which checkpoint it is and where its
/// chain starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointStart {
    pub id: u64,
    pub chain_start: u64,
}

/// Reads the start record of a checkpoint file from its first bytes (at least
/// [`START_RECORD_BYTES`] of them).
pub fn read_start(first_bytes: &[u8]) -> Result<CheckpointStart, CheckpointError> {
    let lsn = first_bytes
        .get(8..16)
        .map(|lsn| u64::from_le_bytes(lsn.try_into().expect("8 bytes")))
        .ok_or(CheckpointError::NoStart)?;
    match decode(first_bytes, lsn, 0).map(|decoded| decoded.record) {
        Ok(Record::CheckpointStart { id, chain_start })
            if first_lsn(id) == lsn && chain_start <= id =>
        {
            Ok(CheckpointStart { id, chain_start })
        }
        _ => Err(CheckpointError::NoStart),
    }
}

/// What a complete checkpoint file says of itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointSummary {
    pub id: u64,
    /// The oldest checkpoint whose file its restore reads.
    pub chain_start: u64,
    /// The highest GCI any of its rows can carry: the checkpoint is usable only to restore
    /// a GCI at least this high.
    pub max_gci: u64,
    /// Where the REDO log's replay over it starts.
    pub redo_lsn: u64,
    /// Its row records (deleted keys not counted).
    pub rows: u64,
    /// The latest GCI marked done in the log before `redo_lsn`: a restore to a later GCI
    /// must find that GCI's mark in the replay, and the next checkpoint writes the changes
    /// of the GCIs after it.
    pub marked_gci: u64,
}

/// Why a checkpoint file cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error("the file holds no checkpoint start record at its start")]
    NoStart,
    #[error("the checkpoint ends before its last record ({0})")]
    Unfinished(LogEnd),
    #[error("the checkpoint's end names checkpoint {found}, not the one its records are of")]
    WrongId { found: u64 },
    #[error("the checkpoint counts {counted} rows but holds {found}")]
    RowCount { counted: u64, found: u64 },
    #[error("the checkpoint holds a record out of place")]
    OutOfPlace,
    #[error("the checkpoint holds a record of packed rows that does not hold what it counts")]
    MalformedRows,
}

/// One thing a checkpoint file holds, in the order a restore applies them.
#[derive(Debug, PartialEq, Eq)]
pub enum CheckpointEntry<'a> {
    /// The deletes and rows of `place` follow; when `whole`, its rows are all it holds
    /// (a restore empties it first).
    Partition { place: RowPlace, whole: bool },
    /// The key was deleted in GCI `gci`, after the checkpoint before this one began.
    Delete {
        place: RowPlace,
        key: &'a [u8],
        gci: u64,
    },
    /// A row, with the GCI that last wrote it.
    Row {
        place: RowPlace,
        fixed: &'a [u8],
        var: &'a [u8],
        gci: u64,
    },
}

/// What a [`CheckpointScan`] found next.
#[derive(Debug, PartialEq, Eq)]
pub enum CheckpointStep<'a> {
    Entry(CheckpointEntry<'a>),
    /// Read the file from this offset (at least `RECORD_BYTES_MAX` bytes, or to its end)
    /// and call again.
    Read(u64),
    /// The checkpoint is complete.
    Done(CheckpointSummary),
    Broken(CheckpointError),
}

/// A walk over one checkpoint file, fed with the bytes it asks for.
#[derive(Debug, Default)]
pub struct CheckpointScan {
    /// Known once the start record was read.
    start: Option<(LogScan, CheckpointStart)>,
    /// The partition whose section is being read.
    section: Option<RowPlace>,
    /// The `WriteRows` record whose rows are being given out.
    packed: Option<PackedCursor>,
    rows: u64,
}

/// Where the rows of a `WriteRows` record not yet given out are: in the chunk the caller
/// gives again until the scan asks it to read on (the record lies in it whole).
#[derive(Clone, Copy, Debug)]
struct PackedCursor {
    place: RowPlace,
    at: usize,
    end: usize,
    left: u32,
}

impl CheckpointScan {
    pub fn new() -> Self {
        Self::default()
    }

    /// The next entry or outcome from `chunk`: the file's bytes from `offset` on.
    pub fn next<'a>(&mut self, chunk: &'a [u8], offset: u64) -> CheckpointStep<'a> {
        if let Some(cursor) = self.packed.take() {
            return self.next_packed(chunk, cursor);
        }
        let (scan, start) = match &mut self.start {
            Some((scan, start)) => (scan, *start),
            None if offset != 0 => return CheckpointStep::Read(0),
            None if chunk.len() < START_RECORD_BYTES => {
                return CheckpointStep::Broken(CheckpointError::NoStart)
            }
            None => {
                let start = match read_start(chunk) {
                    Ok(start) => start,
                    Err(error) => return CheckpointStep::Broken(error),
                };
                let mut scan = LogScan::new(ring(), first_lsn(start.id), 0);
                // Past the start record (decoded just now, the same way).
                let ScanStep::Record(_) = scan.next(chunk, first_lsn(start.id)) else {
                    return CheckpointStep::Broken(CheckpointError::NoStart);
                };
                let (scan, start) = self.start.insert((scan, start));
                (scan, *start)
            }
        };
        let lap_start = first_lsn(start.id);
        let decoded = match scan.next(chunk, lap_start + offset) {
            ScanStep::Record(decoded) => decoded,
            ScanStep::Read(lsn) => return CheckpointStep::Read(ring().offset_of(lsn)),
            ScanStep::End(end) => return CheckpointStep::Broken(CheckpointError::Unfinished(end)),
        };
        let gci = decoded.stamp.gci;
        let entry = match decoded.record {
            Record::CheckpointPartition { place, whole } => {
                self.section = Some(place);
                CheckpointEntry::Partition { place, whole }
            }
            Record::DeleteRow { place, key } if self.section == Some(place) => {
                CheckpointEntry::Delete { place, key, gci }
            }
            Record::WriteRow { place, fixed, var } if self.section == Some(place) => {
                self.rows += 1;
                CheckpointEntry::Row {
                    place,
                    fixed,
                    var,
                    gci,
                }
            }
            Record::WriteRows {
                place,
                rows,
                packed,
            } if self.section == Some(place) && rows > 0 => {
                // A slice of `chunk`, decoded in place.
                let at = packed.as_ptr() as usize - chunk.as_ptr() as usize;
                let end = at + packed.len();
                let cursor = PackedCursor {
                    place,
                    at,
                    end,
                    left: rows,
                };
                return self.next_packed(chunk, cursor);
            }
            Record::CheckpointDone {
                id,
                redo_lsn,
                rows,
                marked_gci,
            } => return self.done(start, id, redo_lsn, rows, marked_gci, gci),
            _ => return CheckpointStep::Broken(CheckpointError::OutOfPlace),
        };
        CheckpointStep::Entry(entry)
    }

    /// The next row of a `WriteRows` record, whose rest `cursor` says where to find.
    fn next_packed<'a>(&mut self, chunk: &'a [u8], mut cursor: PackedCursor) -> CheckpointStep<'a> {
        let Some(((gci, fixed, var), taken)) = chunk
            .get(cursor.at..cursor.end)
            .and_then(packed::unpack_row)
        else {
            return CheckpointStep::Broken(CheckpointError::MalformedRows);
        };
        cursor.at += taken;
        cursor.left -= 1;
        match (cursor.left, cursor.at == cursor.end) {
            (0, true) => {}
            (0, false) | (_, true) => {
                return CheckpointStep::Broken(CheckpointError::MalformedRows)
            }
            _ => self.packed = Some(cursor),
        }
        self.rows += 1;
        CheckpointStep::Entry(CheckpointEntry::Row {
            place: cursor.place,
            fixed,
            var,
            gci,
        })
    }

    fn done(
        &self,
        start: CheckpointStart,
        id: u64,
        redo_lsn: u64,
        rows: u64,
        marked_gci: u64,
        max_gci: u64,
    ) -> CheckpointStep<'static> {
        let outcome = if id != start.id {
            Err(CheckpointError::WrongId { found: id })
        } else if rows != self.rows {
            Err(CheckpointError::RowCount {
                counted: rows,
                found: self.rows,
            })
        } else {
            Ok(CheckpointSummary {
                id,
                chain_start: start.chain_start,
                max_gci,
                redo_lsn,
                rows,
                marked_gci,
            })
        };
        outcome.map_or_else(CheckpointStep::Broken, CheckpointStep::Done)
    }
}

/// Reads a whole checkpoint file held in memory, giving each entry to `entry`.
pub fn read_file(
    file: &[u8],
    entry: impl FnMut(CheckpointEntry<'_>),
) -> Result<CheckpointSummary, CheckpointError> {
    read_stream(&mut std::io::Cursor::new(file), file.len(), entry).map_err(|error| {
        error
            .into_inner()
            .expect("reading memory fails only as a checkpoint")
    })
}

/// Reads a checkpoint file from `file` a chunk of `chunk_bytes` (at least
/// [`RECORD_BYTES_MAX`]) at a time, giving each entry to `entry`: a file of any size in
/// bounded memory (`kista restore`).
pub fn read_stream(
    file: &mut (impl std::io::Read + std::io::Seek),
    chunk_bytes: usize,
    mut entry: impl FnMut(CheckpointEntry<'_>),
) -> Result<CheckpointSummary, ReadError> {
    let mut scan = CheckpointScan::new();
    let mut chunk = Vec::new();
    let mut offset = 0u64;
    read_chunk(file, offset, chunk_bytes.max(RECORD_BYTES_MAX), &mut chunk)?;
    loop {
        match scan.next(&chunk, offset) {
            CheckpointStep::Entry(found) => entry(found),
            CheckpointStep::Read(at) if at != offset => {
                offset = at;
                read_chunk(file, offset, chunk_bytes.max(RECORD_BYTES_MAX), &mut chunk)?;
            }
            CheckpointStep::Read(_) => {
                return Err(CheckpointError::Unfinished(LogEnd::Truncated).into());
            }
            CheckpointStep::Done(summary) => return Ok(summary),
            CheckpointStep::Broken(error) => return Err(error.into()),
        }
    }
}

/// Why [`read_stream`] stopped: the file could not be read, or holds no usable checkpoint.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Checkpoint(#[from] CheckpointError),
}

impl ReadError {
    /// The checkpoint's error, if that is why.
    pub fn into_inner(self) -> Option<CheckpointError> {
        match self {
            ReadError::Checkpoint(error) => Some(error),
            ReadError::Io(_) => None,
        }
    }
}

/// Replaces `chunk` with up to `bytes` of `file` from `offset` (fewer at its end).
pub fn read_chunk(
    file: &mut (impl std::io::Read + std::io::Seek),
    offset: u64,
    bytes: usize,
    chunk: &mut Vec<u8>,
) -> std::io::Result<()> {
    use std::io::Read;
    file.seek(std::io::SeekFrom::Start(offset))?;
    chunk.clear();
    file.by_ref().take(bytes as u64).read_to_end(chunk)?;
    Ok(())
}

#[cfg(test)]
mod tests;
