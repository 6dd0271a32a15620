//! A local checkpoint's rows packed many to a record (`Record::WriteRows`).
//!
//! A checkpoint writes every row of a partition's share, and every row changed since the
//! checkpoint before: under a load, as many rows as the load writes. As a `WriteRow`
//! record each, a row took a 32-byte header, its place and lengths (52 bytes besides its
//! own) and a checksum of its own, about 450 instructions of a data node's `ldm` thread.
//! Packed, a row takes its GCI and its parts' lengths (16 bytes), and a record's header
//! and checksum serve up to [`PACKED_ROWS_BYTES_MAX`] of rows.
//!
//! ```text
//! per row:   gci u64, fixed part's length u32, variable part's length u32,
//!            fixed part, variable part
//! ```

use crate::redo::{LogFull, LogWriter, Record, RowPlace};

/// Bytes of packed rows a record holds at most (a row longer than this alone is written
/// as a `WriteRow` of its own): a scan batch's rows usually fit one record.
pub const PACKED_ROWS_BYTES_MAX: usize = 32 << 10;

/// A row as a checkpoint writes it: the GCI that last wrote it, its fixed part and its
/// variable part.
pub type CheckpointRow<'a> = (u64, &'a [u8], &'a [u8]);

/// Bytes a packed row takes besides its parts.
const ROW_HEADER_BYTES: usize = 16;

/// Rows of one partition gathered for one `WriteRows` record.
#[derive(Debug, Default)]
pub struct PackedRows {
    bytes: Vec<u8>,
    rows: u32,
    /// The highest GCI of the rows: the record's stamp.
    max_gci: u64,
}

impl PackedRows {
    /// Adds a row, first appending the rows gathered to `writer` if it would not fit with
    /// them; a row too long to pack is appended alone as a `WriteRow`.
    pub fn push(
        &mut self,
        writer: &mut LogWriter,
        place: RowPlace,
        (gci, fixed, var): CheckpointRow<'_>,
    ) -> Result<(), LogFull> {
        let row_bytes = ROW_HEADER_BYTES + fixed.len() + var.len();
        if row_bytes > PACKED_ROWS_BYTES_MAX {
            self.append_to(writer, place)?;
            return writer
                .append(gci, &Record::WriteRow { place, fixed, var })
                .map(drop);
        }
        if self.bytes.len() + row_bytes > PACKED_ROWS_BYTES_MAX {
            self.append_to(writer, place)?;
        }
        self.bytes.extend_from_slice(&gci.to_le_bytes());
        self.bytes
            .extend_from_slice(&(fixed.len() as u32).to_le_bytes());
        self.bytes
            .extend_from_slice(&(var.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(fixed);
        self.bytes.extend_from_slice(var);
        self.rows += 1;
        self.max_gci = self.max_gci.max(gci);
        Ok(())
    }

    /// Appends the rows gathered (if any) to `writer` as one record, and starts afresh.
    pub fn append_to(&mut self, writer: &mut LogWriter, place: RowPlace) -> Result<(), LogFull> {
        if self.rows == 0 {
            return Ok(());
        }
        let record = Record::WriteRows {
            place,
            rows: self.rows,
            packed: &self.bytes,
        };
        writer.append(self.max_gci, &record)?;
        self.bytes.clear();
        self.rows = 0;
        self.max_gci = 0;
        Ok(())
    }
}

/// The first row of `packed` (its GCI, fixed and variable parts) and the bytes it took;
/// `None` if the bytes do not hold a whole row.
pub fn unpack_row(packed: &[u8]) -> Option<(CheckpointRow<'_>, usize)> {
    let (gci, rest) = packed.split_first_chunk::<8>()?;
    let (fixed_len, rest) = rest.split_first_chunk::<4>()?;
    let (var_len, rest) = rest.split_first_chunk::<4>()?;
    let fixed_len = u32::from_le_bytes(*fixed_len) as usize;
    let var_len = u32::from_le_bytes(*var_len) as usize;
    let fixed = rest.get(..fixed_len)?;
    let var = rest.get(fixed_len..fixed_len.checked_add(var_len)?)?;
    let taken = ROW_HEADER_BYTES + fixed_len + var_len;
    Some(((u64::from_le_bytes(*gci), fixed, var), taken))
}
