//! The local checkpoint file's format.
//!
//! A local checkpoint of one `ldm` instance is every committed row of its partitions, as
//! REDO [`Record::WriteRow`] records stamped with the GCI that last wrote the row, closed by a [`Record::CheckpointDone`] that names the
//! checkpoint, counts its rows and says from which LSN the REDO log must be replayed over
//! it. The file is a one-file log ([`ring`]) written with a [`LogWriter`] and read with a
//! [`LogScan`], so every record carries its checksum and its position.
//!
//! Each checkpoint's records sit at LSNs of its own lap of that one-file ring
//! ([`first_lsn`]). An `ldm`'s checkpoints rotate through [`CHECKPOINT_FILES`] files
//! ([`file_slot`]), so a checkpoint is written over the file of an older one, and a crash
//! may leave that older checkpoint's records behind the new one's end: they read as an
//! earlier lap and end the scan, so an unfinished checkpoint never borrows an old one's
//! rows or its end.

use crate::redo::{
    LogEnd, LogRing, LogScan, LogWriter, Record, RowPlace, ScanStep, RECORD_HEADER_BYTES,
};

/// Largest checkpoint file: the lap of LSNs one checkpoint may use.
pub const CHECKPOINT_FILE_BYTES_MAX: u64 = 1 << 38;
/// Checkpoint ids map to laps modulo this (2^24 laps of 2^38 bytes fill the LSN space).
const LAPS: u64 = 1 << 24;
/// Files an `ldm`'s checkpoints rotate through: while one is written, the two latest
/// complete checkpoints stay whole, so a restore whose newest is damaged or lost falls
/// back to the one before.
pub const CHECKPOINT_FILES: u32 = 3;

/// The file (of [`CHECKPOINT_FILES`]) checkpoint `id` is written to.
pub fn file_slot(id: u64) -> u32 {
    (id % u64::from(CHECKPOINT_FILES)) as u32
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

/// The lap (checkpoint id modulo the laps) of a checkpoint whose first record is at `lsn`.
pub fn lap_of(lsn: u64) -> u64 {
    lsn / CHECKPOINT_FILE_BYTES_MAX % LAPS
}

/// Whether lap `a` is of a later checkpoint than lap `b`, for two checkpoints less than
/// half the laps apart (laps wrap).
pub fn is_later_lap(a: u64, b: u64) -> bool {
    a != b && a.wrapping_sub(b) % LAPS < LAPS / 2
}

/// Orders laps from the earliest checkpoint's to the latest's, for checkpoints less than
/// half the laps apart.
pub fn lap_order(a: u64, b: u64) -> std::cmp::Ordering {
    if a == b {
        std::cmp::Ordering::Equal
    } else if is_later_lap(a, b) {
        std::cmp::Ordering::Greater
    } else {
        std::cmp::Ordering::Less
    }
}

/// A writer for checkpoint `id`'s file; nothing it wrote is needed once handed out.
pub fn writer(id: u64, life: u32) -> LogWriter {
    LogWriter::new(ring(), life, first_lsn(id), first_lsn(id))
}

/// What a complete checkpoint file says of itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointSummary {
    pub id: u64,
    /// The highest GCI any of its rows can carry: the checkpoint is usable only to restore
    /// a GCI at least this high.
    pub max_gci: u64,
    /// Where the REDO log's replay over it starts.
    pub redo_lsn: u64,
    pub rows: u64,
    /// The latest GCI marked done in the log before `redo_lsn`: a restore to a later GCI
    /// must find that GCI's mark in the replay (else the log lost records it needs).
    pub marked_gci: u64,
}

/// Why a checkpoint file cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error("the file holds no checkpoint record at its start")]
    NoStart,
    #[error("the checkpoint ends before its last record ({0})")]
    Unfinished(LogEnd),
    #[error("the checkpoint's end names checkpoint {found}, not the one its records are of")]
    WrongId { found: u64 },
    #[error("the checkpoint counts {counted} rows but holds {found}")]
    RowCount { counted: u64, found: u64 },
    #[error("the checkpoint holds a record that is not a row")]
    NotARow,
}

/// What a [`CheckpointScan`] found next.
#[derive(Debug, PartialEq, Eq)]
pub enum CheckpointStep<'a> {
    /// A row, with the GCI that last wrote it.
    Row {
        place: RowPlace,
        fixed: &'a [u8],
        var: &'a [u8],
        gci: u64,
    },
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
    /// Known once the first record's header was read.
    scan: Option<LogScan>,
    rows: u64,
}

impl CheckpointScan {
    pub fn new() -> Self {
        Self::default()
    }

    /// The next row or outcome from `chunk`: the file's bytes from `offset` on.
    pub fn next<'a>(&mut self, chunk: &'a [u8], offset: u64) -> CheckpointStep<'a> {
        let scan = match &mut self.scan {
            Some(scan) => scan,
            None => {
                let Some(lsn) = chunk.get(8..16).filter(|_| offset == 0) else {
                    return match offset {
                        0 if chunk.len() < RECORD_HEADER_BYTES => {
                            CheckpointStep::Broken(CheckpointError::NoStart)
                        }
                        _ => CheckpointStep::Read(0),
                    };
                };
                let lsn = u64::from_le_bytes(lsn.try_into().expect("8 bytes"));
                if ring().offset_of(lsn) != 0 {
                    return CheckpointStep::Broken(CheckpointError::NoStart);
                }
                self.scan.insert(LogScan::new(ring(), lsn, 0))
            }
        };
        let lap_start = scan.next_lsn() - ring().offset_of(scan.next_lsn());
        match scan.next(chunk, lap_start + offset) {
            ScanStep::Record(decoded) => match decoded.record {
                Record::WriteRow { place, fixed, var } => {
                    self.rows += 1;
                    let gci = decoded.stamp.gci;
                    CheckpointStep::Row {
                        place,
                        fixed,
                        var,
                        gci,
                    }
                }
                Record::CheckpointDone {
                    id,
                    redo_lsn,
                    rows,
                    marked_gci,
                } => {
                    let outcome = if first_lsn(id) != lap_start {
                        Err(CheckpointError::WrongId { found: id })
                    } else if rows != self.rows {
                        Err(CheckpointError::RowCount {
                            counted: rows,
                            found: self.rows,
                        })
                    } else {
                        Ok(CheckpointSummary {
                            id,
                            max_gci: decoded.stamp.gci,
                            redo_lsn,
                            rows,
                            marked_gci,
                        })
                    };
                    outcome.map_or_else(CheckpointStep::Broken, CheckpointStep::Done)
                }
                _ => CheckpointStep::Broken(CheckpointError::NotARow),
            },
            ScanStep::Read(lsn) => CheckpointStep::Read(ring().offset_of(lsn)),
            ScanStep::End(end) => CheckpointStep::Broken(CheckpointError::Unfinished(end)),
        }
    }
}

/// Reads a whole checkpoint file held in memory, giving each row to `row`.
pub fn read_file(
    file: &[u8],
    mut row: impl FnMut(RowPlace, &[u8], &[u8]),
) -> Result<CheckpointSummary, CheckpointError> {
    let mut scan = CheckpointScan::new();
    let mut offset = 0u64;
    loop {
        let chunk = file.get(offset as usize..).unwrap_or(&[]);
        match scan.next(chunk, offset) {
            CheckpointStep::Row {
                place, fixed, var, ..
            } => row(place, fixed, var),
            CheckpointStep::Read(at) if at != offset => offset = at,
            CheckpointStep::Read(_) => {
                return Err(CheckpointError::Unfinished(LogEnd::Truncated));
            }
            CheckpointStep::Done(summary) => return Ok(summary),
            CheckpointStep::Broken(error) => return Err(error),
        }
    }
}

#[cfg(test)]
mod tests;
